package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/routers"
	"github.com/osc-assistant/assistant/sandbox"
	"github.com/osc-assistant/assistant/store"
)

// The syncs (knowledge.md §6): the sources built from the environment, the runner, the
// scheduler and the trigger's jobs for assistant serve, and the assistant sync command.

// syncSettings are the sync settings of assistant serve.
type syncSettings struct {
	// enabled runs the scheduler (ASSISTANT_SYNC_ENABLED, alias SYNC_ENABLED; default true).
	enabled bool
}

// addSyncFlags adds serve's sync flags.
func addSyncFlags(fs *flag.FlagSet, s *syncSettings, getenv func(string) string) {
	def := true
	if v := firstEnv(getenv, "ASSISTANT_SYNC_ENABLED", "SYNC_ENABLED"); v != "" {
		if b, err := strconv.ParseBool(v); err == nil {
			def = b
		}
	}
	fs.BoolVar(&s.enabled, "sync", def, "run each community's sync.<type>.cron schedules and seed empty sources at start (ASSISTANT_SYNC_ENABLED, alias SYNC_ENABLED)")
}

// syncEnv are the sources' base URLs and credentials, from the environment (tests point the
// URLs at local servers).
type syncEnv struct {
	githubAPI, githubRaw                    string
	openAlex, semanticScholar, pubMed       string
	githubToken, openAlexEmail, openAlexKey string
	semanticScholarKey, pubMedKey, orKey    string
	orBase                                  string
}

func readSyncEnv(getenv func(string) string) syncEnv {
	e := func(n string) string { return strings.TrimSpace(getenv(n)) }
	return syncEnv{
		githubAPI: e("ASSISTANT_GITHUB_API_URL"), githubRaw: e("ASSISTANT_GITHUB_RAW_URL"),
		openAlex: e("ASSISTANT_OPENALEX_URL"), semanticScholar: e("ASSISTANT_SEMANTIC_SCHOLAR_URL"), pubMed: e("ASSISTANT_PUBMED_URL"),
		githubToken: e("GITHUB_TOKEN"), openAlexEmail: e("OPENALEX_EMAIL"), openAlexKey: e("OPENALEX_API_KEY"),
		semanticScholarKey: e("SEMANTIC_SCHOLAR_API_KEY"), pubMedKey: e("PUBMED_API_KEY"),
		orKey: e("OPENROUTER_API_KEY"), orBase: e("OPENROUTER_BASE_URL"),
	}
}

// sourceDeps are what the sources are built from.
type sourceDeps struct {
	store   *knowledge.Store
	dataDir string
	env     syncEnv
	// guard is the address guard's options for the URLs of community configs.
	guard knowledge.GuardOptions
	// python runs the docstring extractor (nil: Python files fail, MATLAB still syncs).
	python ingest.PythonRunner
	// prices price the FAQ models' calls; spend records them against the budget (nil: not
	// recorded).
	prices map[string]chat.Price
	spend  func(ctx context.Context, community string, u ingest.Usage) error
	// refresh is the documentation store's refresh, for the "docs" type (nil: none).
	refresh func(ctx context.Context, community string) error
	log     *slog.Logger
}

// buildSources builds every sync type's source.
func buildSources(d sourceDeps) (map[string]ingest.Source, error) {
	guarded := knowledge.NewGuardedClient(d.guard)
	gh, err := ingest.NewGitHub(ingest.GitHubOptions{Store: d.store, BaseURL: d.env.githubAPI, Token: d.env.githubToken, Logger: d.log})
	if err != nil {
		return nil, err
	}
	disc, err := ingest.NewDiscourse(ingest.DiscourseOptions{Store: d.store, Client: guarded, Logger: d.log})
	if err != nil {
		return nil, err
	}
	mm, err := ingest.NewMailman(ingest.MailmanOptions{Store: d.store, Client: guarded, CacheDir: filepath.Join(d.dataDir, "mailman"), Logger: d.log})
	if err != nil {
		return nil, err
	}
	papers := ingest.NewPapers(ingest.PapersOptions{Store: d.store, OpenAlexURL: d.env.openAlex, SemanticScholarURL: d.env.semanticScholar,
		PubMedURL: d.env.pubMed, OpenAlexEmail: d.env.openAlexEmail, OpenAlexKey: d.env.openAlexKey,
		SemanticScholarKey: d.env.semanticScholarKey, PubMedKey: d.env.pubMedKey, Logger: d.log})
	do := ingest.DocstringsOptions{Store: d.store, APIURL: d.env.githubAPI, RawURL: d.env.githubRaw, Token: d.env.githubToken,
		CacheDir: filepath.Join(d.dataDir, "docstrings"), Logger: d.log}
	if d.python != nil {
		do.Python = ingest.NewPythonExtractor(d.python, d.log)
	}
	faq := ingest.NewFAQ(ingest.FAQOptions{Store: d.store,
		Model: &openRouterModel{key: d.env.orKey, base: d.env.orBase, prices: d.prices, client: faqHTTPClient, log: d.log},
		Spend: d.spend, Logger: d.log})
	out := map[string]ingest.Source{}
	for _, s := range []ingest.Source{gh, papers, ingest.NewDocstrings(do), mm, faq, disc} {
		out[s.Type()] = s
	}
	if d.refresh != nil {
		out[ingest.TypeDocs] = ingest.DocsSource{Refresh: d.refresh}
	}
	return out, nil
}

// liveSearch is search_{id}_papers_live over the papers source's live OpenAlex search (nil
// without one).
func (s *syncService) liveSearch() liveSearch {
	if s == nil || s.papers == nil {
		return nil
	}
	return func(ctx context.Context, community, query string, limit int) (string, error) {
		papers, err := s.papers.LiveSearch(ctx, query, limit)
		if err == nil && len(papers) > 0 {
			s.saveLive(community, papers)
		}
		return ingest.LiveText(query, papers, err), err
	}
}

// liveSaveTimeout bounds the background save of one live search's papers (it waits for the
// community's writer lock, which a sync's page may hold a while).
const liveSaveTimeout = 30 * time.Second

// saveLive stores a live search's papers in the background (§6.6: searchable after the next
// publish), never before the reply. One save at a time per community: a search while one runs
// is not saved, so a burst of searches costs one writer, not one goroutine each.
func (s *syncService) saveLive(community string, papers []ingest.LivePaper) {
	s.saveMu.Lock()
	defer s.saveMu.Unlock()
	if s.savesClosed || s.saving[community] {
		return // closing (the store may be closed under a save), or one is running
	}
	if s.saving == nil {
		s.saving = map[string]bool{}
	}
	s.saving[community] = true
	s.saves.Add(1)
	go func() {
		defer s.saves.Done()
		defer func() {
			s.saveMu.Lock()
			delete(s.saving, community)
			s.saveMu.Unlock()
		}()
		ctx, cancel := context.WithTimeout(context.Background(), liveSaveTimeout)
		defer cancel()
		if err := s.papers.SaveLive(ctx, community, papers); err != nil {
			s.log.Warn("knowledge: saving a live search's papers failed", slog.String("community", community), slog.Any("error", err))
		}
	}()
}

// engineRunner runs the docstring extractor in the server's Python engine: the files it parses
// are mounted as data and never run (ingest.PythonRunner).
type engineRunner struct{ eng *sandbox.Engine }

func (r engineRunner) Run(ctx context.Context, source string, data map[string][]byte) (string, error) {
	res, err := r.eng.Run(ctx, sandbox.Request{Source: source, Data: data, Timeout: 60 * time.Second,
		MemoryBytes: 512 << 20, StdoutChars: ingest.ExtractorOutputChars + 1024})
	if err != nil {
		return "", err
	}
	if res.Status != sandbox.StatusOK || res.StdoutTruncated {
		return "", fmt.Errorf("the docstring extractor's run ended %s (%s)", res.Status, res.Exception)
	}
	return res.Stdout, nil
}

// openRouterModel is the FAQ generation's model (ingest.Model): the agent's model through
// OpenRouter with the platform key (knowledge.md §6.10), priced from the price table.
// chat's provider requests carry no temperature, provider routing or caching flag, so the
// agent's temperature, provider and enable_caching are not sent.
type openRouterModel struct {
	key, base string
	prices    map[string]chat.Price
	client    *http.Client
	log       *slog.Logger
	// unpriced holds the models already warned of as missing from the price table.
	unpriced sync.Map
}

// faqHTTPClient is the FAQ models' HTTP client: a provider that accepts the connection and
// never answers fails at the headers, beside the per-call timeout the FAQ source sets.
var faqHTTPClient = func() *http.Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.ResponseHeaderTimeout = 90 * time.Second
	return &http.Client{Transport: t}
}()

// Ready fails an FAQ run at once, before any call, when there is no OpenRouter key.
func (m *openRouterModel) Ready() error {
	if m.key == "" {
		return errNoOpenRouterKey
	}
	return nil
}

// errNoOpenRouterKey fails an FAQ run when the platform has no OpenRouter key.
var errNoOpenRouterKey = errors.New("FAQ generation needs the platform's OpenRouter key (OPENROUTER_API_KEY)")

// maxModelReply bounds the text kept of one FAQ model reply.
const maxModelReply = 64 << 10

func (m *openRouterModel) Complete(ctx context.Context, agent config.Agent, system, prompt string, maxTokens int) (string, ingest.Usage, error) {
	if m.key == "" {
		return "", ingest.Usage{}, errNoOpenRouterKey
	}
	base := m.base
	if base == "" {
		base = "https://openrouter.ai/api/v1"
	}
	p := chat.NewOpenAI(chat.OpenAIOptions{APIKey: m.key, BaseURL: base, HTTPClient: m.client})
	req := chat.Request{Model: agent.Model, System: system, MaxTokens: maxTokens,
		Messages: []chat.Message{{Role: chat.RoleUser, Content: []chat.Block{{Type: chat.BlockText, Text: prompt}}}}}
	var text strings.Builder
	var u chat.Usage
	err := p.Stream(ctx, req, func(ev chat.Event) error {
		switch ev.Kind {
		case chat.TextDelta:
			if text.Len()+len(ev.Text) > maxModelReply {
				return fmt.Errorf("the model's reply is over %d bytes", maxModelReply)
			}
			text.WriteString(ev.Text)
		case chat.Done:
			u = ev.Usage
		}
		return nil
	})
	if err != nil && u.InputTokens == 0 && (ctx.Err() != nil || text.Len() > 0) {
		// Cut short after the request went out (a timeout, a dropped stream): the provider
		// bills it, but its usage comes only in the stream's last chunk. Charge an estimate,
		// about 4 bytes a token, so a call that keeps timing out still counts on the budget.
		u.InputTokens, u.OutputTokens = (len(system)+len(prompt))/4+1, text.Len()/4
	}
	usage := ingest.Usage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens}
	priced := false
	for _, id := range []string{"openrouter/" + agent.Model, agent.Model} {
		if pr, ok := m.prices[id]; ok {
			usage.CostUSD = (float64(u.InputTokens)*pr.InputPerMTok + float64(u.OutputTokens)*pr.OutputPerMTok) / 1e6
			priced = true
			break
		}
	}
	if !priced && m.log != nil {
		if _, warned := m.unpriced.LoadOrStore(agent.Model, true); !warned {
			m.log.Warn("faq generation: the model is not in the price table, so its calls are not counted against the budget",
				slog.String("model", limitText(agent.Model, 100)))
		}
	}
	return text.String(), usage, modelError(err)
}

// modelError marks the provider's answers that say the model cannot be used now (a rate
// limit, an outage, a refused key) as ingest.ErrModelUnavailable, so the FAQ run leaves the
// thread for the next run and stops the list after a few, instead of failing every thread.
func modelError(err error) error {
	var ae *chat.APIError
	if errors.As(err, &ae) {
		switch {
		case ae.Status == http.StatusTooManyRequests, ae.Status >= 500,
			ae.Status == http.StatusUnauthorized, ae.Status == http.StatusForbidden, ae.Status == http.StatusPaymentRequired:
			return fmt.Errorf("%w: %w", ingest.ErrModelUnavailable, err)
		}
	}
	return err
}

// newBudgetSpend is the FAQ models' spend over costs (the session store's budget totals).
func newBudgetSpend(costs chat.CostStore, prices map[string]chat.Price, log *slog.Logger) *budgetSpend {
	return &budgetSpend{costs: costs, budget: &chat.Budget{Store: costs, Prices: prices, Log: log}}
}

// budgetSpend records an FAQ model call's cost against its community's budget, and stops the
// run (an error) once the budget is spent.
type budgetSpend struct {
	costs  chat.CostStore
	budget *chat.Budget
	set    atomic.Pointer[config.Set]
}

func (b *budgetSpend) spend(ctx context.Context, community string, u ingest.Usage) error {
	set := b.set.Load()
	if set == nil {
		return nil
	}
	c := set.Get(community)
	if c == nil || c.Budget == nil {
		return nil
	}
	if u.CostUSD > 0 {
		if _, _, err := b.costs.AddCost(ctx, c.ID, u.CostUSD); err != nil {
			return fmt.Errorf("recording the FAQ model's cost: %w", err)
		}
	}
	return b.budget.Refusal(ctx, c)
}

// syncService is serve's syncs: the runner of every source, the scheduler (when enabled),
// the trigger's jobs, applied to every set a load or reload gives.
type syncService struct {
	store *knowledge.Store
	// papers is the papers source, whose live search search_{id}_papers_live calls.
	papers *ingest.Papers
	runner *ingest.Runner
	sched  *ingest.Scheduler
	jobs   *ingest.Jobs
	spend  *budgetSpend
	log    *slog.Logger
	// saveMu guards saving (the communities whose live results are being saved) and
	// savesClosed (set once Close has begun: no save starts after it); saves counts the saves
	// running, which Close waits for.
	saveMu      sync.Mutex
	saving      map[string]bool
	savesClosed bool
	saves       sync.WaitGroup
}

// syncServiceOptions configure newSyncService.
type syncServiceOptions struct {
	settings syncSettings
	sources  sourceDeps
	// redis is the Redis store when one is configured: leases and jobs go there.
	redis *store.Redis
	// costs keep the budget totals (the session store).
	costs chat.CostStore
	// now is the clock of the scheduler and the routes' ages (nil: the real one).
	now func() time.Time
}

func newSyncService(o syncServiceOptions) (*syncService, error) {
	spend := newBudgetSpend(o.costs, o.sources.prices, o.sources.log)
	if o.costs != nil {
		o.sources.spend = spend.spend
	}
	sources, err := buildSources(o.sources)
	if err != nil {
		return nil, err
	}
	// The data directory's flock always, and the Redis lease too with Redis: an assistant sync
	// without --redis-url beside this server takes only the flock.
	leases := ingest.NewLeaser(filepath.Join(o.sources.dataDir, "knowledge"), nil)
	var jobStore ingest.JobStore
	if o.redis != nil {
		leases, jobStore = ingest.NewLeaser(filepath.Join(o.sources.dataDir, "knowledge"), o.redis), o.redis
	}
	runner, err := ingest.NewRunner(ingest.RunnerOptions{Sources: sources, Store: o.sources.store, Leases: leases, Logger: o.sources.log, Now: o.now})
	if err != nil {
		return nil, err
	}
	papers, _ := sources[ingest.TypePapers].(*ingest.Papers)
	s := &syncService{store: o.sources.store, papers: papers, runner: runner, spend: spend, log: o.sources.log,
		jobs: ingest.NewJobs(ingest.JobsOptions{Runner: runner, Store: jobStore, Logger: o.sources.log, Now: o.now})}
	if o.settings.enabled {
		s.sched = ingest.NewScheduler(ingest.SchedulerOptions{Runner: runner, Populated: ingest.StorePopulated(o.sources.store), Logger: o.sources.log})
	} else {
		o.sources.log.Info("syncing is switched off (ASSISTANT_SYNC_ENABLED=false): no schedules, no seeding; POST /sync/trigger still runs")
	}
	return s, nil
}

// apply gives the service the communities of a load or reload.
func (s *syncService) apply(set *config.Set) {
	s.spend.set.Store(set)
	if s.sched != nil {
		s.sched.Apply(set.Communities)
	}
}

// routes are the sync routes' dependencies.
func (s *syncService) routes() routers.SyncDeps {
	d := routers.SyncDeps{Knowledge: s.store, Runs: s.runner, Jobs: s.jobs}
	if s.sched != nil {
		d.Scheduler = s.sched
	}
	return d
}

func (s *syncService) collectors() []prometheus.Collector { return s.runner.Collectors() }

// Close stops the scheduler and the jobs, waiting for their runs.
func (s *syncService) Close() {
	if s.sched != nil {
		s.sched.Close()
	}
	s.jobs.Close()
	s.closeSaves()
}

// closeSaves lets no live search's save start any more and waits for those running.
func (s *syncService) closeSaves() {
	s.saveMu.Lock()
	s.savesClosed = true
	s.saveMu.Unlock()
	s.saves.Wait()
}

const syncUsage = `usage: assistant sync [flags] github|papers|docstrings|discourse|mailman|faq|all
       assistant sync [flags] init

Syncs the knowledge of every community (or the one --community names) from the sources its
config names, into its database under --data-dir, and publishes it: GitHub issues and pull
requests, papers, code docstrings, Discourse forums, Mailman archives, FAQ entries made from the
archives. all runs each type in that order (faq after mailman). A line is printed per source
(items, pages, the rate limit) and per run. One run per community and type at a time: a run
that another process (a server on the same data directory, or a replica through --redis-url)
holds is skipped. init creates each community's database, empty, so the tools can answer.

The sources' URLs and keys come from the environment: ASSISTANT_GITHUB_API_URL,
ASSISTANT_GITHUB_RAW_URL, ASSISTANT_OPENALEX_URL, ASSISTANT_SEMANTIC_SCHOLAR_URL,
ASSISTANT_PUBMED_URL (default: the real APIs), GITHUB_TOKEN, OPENALEX_EMAIL, OPENALEX_API_KEY,
SEMANTIC_SCHOLAR_API_KEY, PUBMED_API_KEY, OPENROUTER_API_KEY (FAQ generation).

Exits 0 when every run succeeded (or was skipped), 1 when any failed, 2 on a usage error.

`

// syncOrder is what all runs, in order.
var syncOrder = []string{ingest.TypeGitHub, ingest.TypePapers, ingest.TypeDocstrings, ingest.TypeDiscourse, ingest.TypeMailman, ingest.TypeFAQ}

// runSync is assistant sync.
func runSync(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("sync", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(names ...string) string { return firstEnv(getenv, names...) }
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	community := fs.String("community", "", "sync only this community")
	full := fs.Bool("full", false, "a full sync: list everything again and delete what is gone (GitHub, Discourse; mailing lists re-read every year)")
	communities := fs.String("communities", or(env("ASSISTANT_COMMUNITIES"), "communities"), "communities directory (ASSISTANT_COMMUNITIES)")
	dataDir := fs.String("data-dir", or(env("ASSISTANT_DATA_DIR", "DATA_DIR"), defaultDataDir(getenv)), "where the knowledge databases live, as assistant serve's (ASSISTANT_DATA_DIR, alias DATA_DIR)")
	redisURL := fs.String("redis-url", env("ASSISTANT_REDIS_URL"), "take the runs' leases in this Redis, as the servers sharing it do (ASSISTANT_REDIS_URL)")
	redisPrefix := fs.String("redis-prefix", or(env("ASSISTANT_REDIS_PREFIX"), store.DefaultRedisPrefix), "prefix of every Redis key (ASSISTANT_REDIS_PREFIX)")
	engineDir := fs.String("engine-dir", env("ASSISTANT_ENGINE_DIR"), "the Python engine, which parses Python docstrings; without it Python files fail (ASSISTANT_ENGINE_DIR)")
	engineCache := fs.String("engine-cache", env("ASSISTANT_ENGINE_CACHE"), "wazero's compilation cache directory (ASSISTANT_ENGINE_CACHE)")
	allowLoopback := fs.Bool("knowledge-allow-loopback", env("ASSISTANT_KNOWLEDGE_ALLOW_LOOPBACK") == "1", "let the config's URLs (forums, archives) reach loopback addresses, for tests (ASSISTANT_KNOWLEDGE_ALLOW_LOOPBACK=1)")
	var resolve multiFlag
	if v := env("ASSISTANT_KNOWLEDGE_RESOLVE"); v != "" {
		resolve = append(resolve, v)
	}
	fs.Var(&resolve, "knowledge-resolve", "HOST=IP:PORT: the config's URLs of HOST go to that address over plain HTTP, for tests; repeatable (ASSISTANT_KNOWLEDGE_RESOLVE)")
	logFormat := fs.String("log-format", or(env("ASSISTANT_LOG_FORMAT"), "text"), "json or text, for the sources' log lines on stderr (ASSISTANT_LOG_FORMAT)")
	fs.Usage = func() {
		fmt.Fprint(stderr, syncUsage)
		fs.PrintDefaults()
	}
	usageErr := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "assistant sync: "+format+"\n\n", a...)
		fs.Usage()
		return 2
	}
	// Flags may come before or after the type.
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	var positional []string
	for fs.NArg() > 0 {
		positional = append(positional, fs.Arg(0))
		if err := fs.Parse(fs.Args()[1:]); err != nil {
			return 2
		}
	}
	if len(positional) != 1 {
		return usageErr("want one sync type, got %d arguments", len(positional))
	}
	what := positional[0]
	var types []string
	switch what {
	case "all":
		types = syncOrder
	case "init":
	case ingest.TypeGitHub, ingest.TypePapers, ingest.TypeDocstrings, ingest.TypeDiscourse, ingest.TypeMailman, ingest.TypeFAQ:
		types = []string{what}
	default:
		return usageErr("unknown sync type %q", limitText(what, 40))
	}
	if *logFormat != "json" && *logFormat != "text" {
		return usageErr("log format %q: want json or text", *logFormat)
	}
	guardResolve, err := parseResolve(resolve)
	if err != nil {
		return usageErr("%v", err)
	}
	log := newLogger(*logFormat, stderr)
	routeRedisLogs(log)

	set, err := config.Load(ctx, *communities, config.Options{})
	var list config.ErrorList
	if errors.As(err, &list) && len(list.Fatal()) == 0 {
		err = nil
	}
	if err != nil {
		fmt.Fprintln(stderr, "assistant sync:", err)
		return 1
	}
	comms := set.Communities
	if *community != "" {
		c := set.Get(*community)
		if c == nil {
			return usageErr("no community %q in %s", limitText(*community, 64), *communities)
		}
		comms = []*config.Community{c}
	}
	st, err := knowledge.OpenStore(*dataDir, log)
	if err != nil {
		fmt.Fprintln(stderr, "assistant sync:", err)
		return 1
	}
	defer st.Close()
	if what == "init" {
		return syncInit(ctx, st, comms, stdout, stderr)
	}

	deps := sourceDeps{store: st, dataDir: *dataDir, env: readSyncEnv(getenv), log: log,
		guard: knowledge.GuardOptions{AllowLoopback: *allowLoopback, Resolve: guardResolve}, prices: defaultPrices}
	eng, err := openEngine(ctx, *engineDir, *engineCache, 0, log)
	if err != nil {
		fmt.Fprintln(stderr, "assistant sync:", err)
		return 1
	}
	if eng != nil {
		defer eng.Close(context.WithoutCancel(ctx))
		deps.python = engineRunner{eng}
	}
	leases := ingest.NewLeaser(filepath.Join(*dataDir, "knowledge"), nil)
	// The FAQ models' cost goes to the budget totals the servers keep in Redis; without Redis
	// a store of this run's own, so the run alone stays within each budget (what the servers
	// spent today is not known to it, which the README says).
	var costs chat.CostStore = store.NewMemory(store.DefaultLimits(), nil, log)
	if *redisURL != "" {
		rs, err := store.NewRedis(ctx, store.RedisOptions{URL: *redisURL, Prefix: *redisPrefix, Logger: log})
		if err != nil {
			fmt.Fprintln(stderr, "assistant sync:", err)
			return 1
		}
		defer rs.Close()
		leases, costs = ingest.NewLeaser(filepath.Join(*dataDir, "knowledge"), rs), rs
	} else if slices.Contains(types, ingest.TypeFAQ) && slices.ContainsFunc(comms, func(c *config.Community) bool {
		return c.Budget != nil && c.FAQGeneration != nil
	}) {
		log.Warn("without --redis-url the FAQ's cost is counted against this run's budget alone, not the servers' totals")
	}
	spend := newBudgetSpend(costs, deps.prices, log)
	spend.set.Store(set)
	deps.spend = spend.spend
	sources, err := buildSources(deps)
	if err != nil {
		fmt.Fprintln(stderr, "assistant sync:", err)
		return 1
	}
	runner, err := ingest.NewRunner(ingest.RunnerOptions{Sources: sources, Store: st, Leases: leases, Logger: log})
	if err != nil {
		fmt.Fprintln(stderr, "assistant sync:", err)
		return 1
	}
	failed, ran := false, 0
	for _, typ := range types {
		for _, c := range comms {
			if !runner.Has(c, typ) {
				if *community != "" && len(types) == 1 {
					fmt.Fprintf(stdout, "%s %s: nothing to sync (the config names no %s data)\n", typ, c.ID, typ)
				}
				continue
			}
			if ctx.Err() != nil {
				failed = true
				break
			}
			ran++
			if !syncOne(ctx, runner, c, typ, *full, stdout) {
				failed = true
			}
		}
	}
	if ran == 0 {
		fmt.Fprintln(stdout, "nothing to sync: no community names data for", what)
	}
	if failed {
		return 1
	}
	return 0
}

// syncOne runs one community's sync of one type, printing a line per source and one for the
// run; it reports whether the run succeeded or was skipped.
func syncOne(ctx context.Context, runner *ingest.Runner, c *config.Community, typ string, full bool, stdout io.Writer) bool {
	prefix := typ + " " + c.ID
	start := time.Now()
	res, err := runner.Run(ctx, c, typ, full, func(p ingest.Progress) {
		if line := progressLine(p); line != "" {
			fmt.Fprintf(stdout, "%s %s\n", prefix, line)
		}
	})
	d := time.Since(start).Round(10 * time.Millisecond)
	switch {
	case errors.Is(err, ingest.ErrRunning):
		fmt.Fprintf(stdout, "%s: skipped: another run of it is under way\n", prefix)
		return true
	case err != nil:
		fmt.Fprintf(stdout, "%s: failed after %s, %d %s: %v\n", prefix, d, res.Items, plural(res.Items, "item", "items"), err)
		return false
	}
	line := fmt.Sprintf("%s: %d %s", prefix, res.Items, plural(res.Items, "item", "items"))
	if res.Deleted > 0 {
		line += fmt.Sprintf(", %d deleted", res.Deleted)
	}
	fmt.Fprintf(stdout, "%s in %s\n", line, d)
	return true
}

// progressLine is a source's progress as one line: its final report, or a wait; "" for the
// reports in between.
func progressLine(p ingest.Progress) string {
	var parts []string
	switch {
	case p.Done:
		parts = append(parts, fmt.Sprintf("%d %s", p.Items, plural(p.Items, "item", "items")))
		if p.Pages > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.Pages, plural(p.Pages, "page", "pages")))
		}
	case !p.Waiting.IsZero():
		parts = append(parts, "waiting until "+p.Waiting.UTC().Format("15:04:05 UTC"))
	default:
		return ""
	}
	if p.RateLimit != "" {
		parts = append(parts, "rate limit: "+p.RateLimit)
	}
	line := p.Source + ": " + strings.Join(parts, ", ")
	if p.Err != nil {
		line += ": failed: " + p.Err.Error()
	}
	return line
}

// syncInit creates each community's database with every table, empty, and publishes it, so
// the tools answer "no results" rather than "not initialised"; a database that exists is left
// as it is.
func syncInit(ctx context.Context, st *knowledge.Store, comms []*config.Community, stdout, stderr io.Writer) int {
	code := 0
	for _, c := range comms {
		_, existed := st.Info(c.ID)
		// Write publishes when nothing is published yet, whatever fn changed.
		err := st.Write(ctx, c.ID, func(context.Context, *sql.Tx) (bool, error) { return false, nil })
		switch {
		case err != nil:
			fmt.Fprintf(stderr, "assistant sync init: %s: %v\n", c.ID, err)
			code = 1
		case existed:
			fmt.Fprintf(stdout, "%s: %s exists\n", c.ID, st.Path(c.ID))
		default:
			fmt.Fprintf(stdout, "%s: created %s\n", c.ID, st.Path(c.ID))
		}
	}
	return code
}

// startSyncs builds serve's syncs from its settings and applies the communities loaded at
// start: schedules, seeding in the background, the trigger's jobs. The sources reach the
// config's URLs through the documentation fetcher's guard settings, the Python engine parses
// docstrings, the FAQ models' costs go to the session store's budget totals, and with Redis
// the leases and jobs are shared by every replica.
func startSyncs(s serveSettings, set *config.Set, st store.Store, eng *sandbox.Engine, lib *knowledge.Library,
	prices map[string]chat.Price, resolve map[string]string, getenv func(string) string, log *slog.Logger) (*syncService, error) {
	deps := sourceDeps{store: lib.Store(), dataDir: s.knowledge.dataDir, env: readSyncEnv(getenv), prices: prices, refresh: lib.Refresh, log: log,
		guard: knowledge.GuardOptions{AllowLoopback: s.knowledge.allowLoopback, Resolve: resolve}}
	if eng != nil {
		deps.python = engineRunner{eng}
	}
	rs, _ := st.(*store.Redis)
	svc, err := newSyncService(syncServiceOptions{settings: s.sync, sources: deps, redis: rs, costs: st})
	if err != nil {
		return nil, fmt.Errorf("syncs: %w", err)
	}
	svc.apply(set)
	return svc, nil
}
