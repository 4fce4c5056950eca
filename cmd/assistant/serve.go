package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/fastpath"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/routers"
	"github.com/osc-assistant/assistant/runtimelock"
	"github.com/osc-assistant/assistant/store"
)

// serveSettings are the settings of assistant serve. Each has a flag and an environment
// variable; the flag wins.
type serveSettings struct {
	addr         string
	communities  string
	basePath     string
	deployment   string
	adminKey     string
	redisURL     string
	redisPrefix  string
	corsOrigins  string
	defaultModel string
	logFormat    string
	accessLog    routers.AccessLog
	// fastPath answers the precomputed routes ahead of net/http (package fastpath), with
	// fastLoops event loops (0: fastpath.DefaultLoops).
	fastPath    bool
	fastLoops   int
	rateLimits  string
	trusted     string
	prices      string
	engineDir   string
	engineCache string
	// Server-side runs (server_fallback).
	sandboxWorkers  int
	sandboxQueue    int
	sandboxMemoryMB int
	// sessionIdle ends a live server-side interpreter unused this long; 0 turns sessions off.
	sessionIdle time.Duration
	// artifactMB bounds the kept files of server-side runs (and uploads).
	artifactMB int
	// uploadBufferMB, uploadClientMB and exports bound the file routes (routers.FileSettings).
	uploadBufferMB  int
	uploadClientMB  int
	exports         int
	sandboxLoopback bool
	// knowledge is the documentation store's settings.
	knowledge   knowledgeSettings
	sync        syncSettings // the syncs (sync.go)
	docsRefresh time.Duration
	// workerBinary is the binary started as sandbox-worker; empty is this one. Tests set it.
	workerBinary string
	// now is the clock of sessions and parked calls; nil is the real one. Tests set it.
	now func() time.Time
}

const serveUsage = `usage: assistant serve [flags]

Serves every community in the communities directory. Each flag can also be set through the
environment variable named after it; a flag given on the command line wins.

`

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveSettings, error) {
	var s serveSettings
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	env := func(names ...string) string { return firstEnv(getenv, names...) }
	or := func(v, def string) string {
		if v == "" {
			return def
		}
		return v
	}
	fs.StringVar(&s.addr, "addr", or(env("ASSISTANT_ADDR"), ":8080"), "listen address (ASSISTANT_ADDR)")
	fs.StringVar(&s.communities, "communities", or(env("ASSISTANT_COMMUNITIES"), "communities"), "communities directory (ASSISTANT_COMMUNITIES)")
	fs.StringVar(&s.basePath, "base-path", env("ASSISTANT_BASE_PATH", "ROOT_PATH"), "mount every route under this prefix, e.g. /osa (ASSISTANT_BASE_PATH, alias ROOT_PATH)")
	fs.StringVar(&s.deployment, "deployment", env("ASSISTANT_DEPLOYMENT", "OSA_DEPLOYMENT"), "production or develop; default: develop when the base path is /osa-dev, else production (ASSISTANT_DEPLOYMENT, alias OSA_DEPLOYMENT)")
	fs.StringVar(&s.adminKey, "admin-key", env("ASSISTANT_ADMIN_KEY"), "X-API-Key for the admin routes; empty disables them (ASSISTANT_ADMIN_KEY)")
	fs.StringVar(&s.redisURL, "redis-url", env("ASSISTANT_REDIS_URL"), "Redis URL for shared state, e.g. redis://127.0.0.1:6379/0 (ASSISTANT_REDIS_URL)")
	fs.StringVar(&s.redisPrefix, "redis-prefix", or(env("ASSISTANT_REDIS_PREFIX"), "assistant:"), "prefix of every Redis key, so several deployments can share one Redis (ASSISTANT_REDIS_PREFIX)")
	fs.StringVar(&s.corsOrigins, "cors-origins", env("ASSISTANT_CORS_ORIGINS"), "comma-separated origins allowed on every route, in addition to each community's cors_origins (ASSISTANT_CORS_ORIGINS)")
	fs.StringVar(&s.defaultModel, "default-model", or(env("ASSISTANT_DEFAULT_MODEL"), "scripted/demo"), "model for communities without default_model (ASSISTANT_DEFAULT_MODEL)")
	fs.StringVar(&s.rateLimits, "rate-limits", env("ASSISTANT_RATE_LIMITS"), "per client IP and community, e.g. chat_minute=10,chat_hour=20,resume_minute=10,resume_hour=100 (0 turns one off); default: the reference's numbers for the deployment (ASSISTANT_RATE_LIMITS)")
	fs.StringVar(&s.trusted, "trusted-proxies", env("ASSISTANT_TRUSTED_PROXIES"), "comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed (ASSISTANT_TRUSTED_PROXIES)")
	fs.StringVar(&s.prices, "prices", env("ASSISTANT_PRICES"), "JSON file of model prices in USD per million tokens, {\"anthropic/claude-haiku-4-5\": {\"input_per_mtok\": 1, \"output_per_mtok\": 5}}; default: a built-in table (ASSISTANT_PRICES)")
	fs.StringVar(&s.engineDir, "engine-dir", env("ASSISTANT_ENGINE_DIR"), "the Python engine built by scripts/build_python_wasi.sh; preludes are compile-checked with it (ASSISTANT_ENGINE_DIR)")
	fs.StringVar(&s.engineCache, "engine-cache", env("ASSISTANT_ENGINE_CACHE"), "wazero's compilation cache directory; default: the user cache directory (ASSISTANT_ENGINE_CACHE)")
	fs.IntVar(&s.sandboxWorkers, "sandbox-workers", envInt(getenv, "ASSISTANT_SANDBOX_WORKERS", -1), "Python worker processes for server-side runs; -1: one per CPU; 0: run in this process, strict mode, one run per CPU at once (ASSISTANT_SANDBOX_WORKERS)")
	fs.IntVar(&s.sandboxQueue, "sandbox-queue", envInt(getenv, "ASSISTANT_SANDBOX_QUEUE", 0), "server-side runs that may wait for a worker (or, with --sandbox-workers 0, a place in this process); beyond it a run is refused at once; 0: 4 per worker or place; -1: none (ASSISTANT_SANDBOX_QUEUE)")
	fs.IntVar(&s.artifactMB, "artifact-mb", envInt(getenv, "ASSISTANT_ARTIFACT_MB", store.DefaultArtifactBytes>>20), "the most MB of server-side runs' files kept at once: for this process without Redis, for each community with it; the oldest go first (ASSISTANT_ARTIFACT_MB)")
	fs.IntVar(&s.uploadBufferMB, "upload-buffer-mb", envInt(getenv, "ASSISTANT_UPLOAD_BUFFER_MB", routers.DefaultUploadBufferBytes>>20), "the most MB of session file bytes held in memory at once, however many requests: upload bodies (one that does not fit is refused with 503 before it is read; one client holds at most a quarter beside its first upload) and, with Redis, the file each export is writing (ASSISTANT_UPLOAD_BUFFER_MB)")
	fs.IntVar(&s.uploadClientMB, "upload-client-mb", envInt(getenv, "ASSISTANT_UPLOAD_CLIENT_MB", 0), "the most MB of attached files one client (an IPv6 one by its /64) may keep in one community; 0: a quarter of the community's storage for files, or a whole max_session_mb when that is more (ASSISTANT_UPLOAD_CLIENT_MB)")
	fs.IntVar(&s.exports, "export-concurrency", envInt(getenv, "ASSISTANT_EXPORT_CONCURRENCY", 0), "how many export.zip answers may be written at once, one per client; past it 503 with a Retry-After; 0: one per CPU (ASSISTANT_EXPORT_CONCURRENCY)")
	fs.DurationVar(&s.sessionIdle, "sandbox-session-idle", envDuration(getenv, "ASSISTANT_SANDBOX_SESSION_IDLE", 10*time.Minute), "a chat session's server runs share one live interpreter, ended after this idle time (the worker processes use 10m); 0 gives every run a fresh one (ASSISTANT_SANDBOX_SESSION_IDLE)")
	fs.IntVar(&s.sandboxMemoryMB, "sandbox-memory-mb", envInt(getenv, "ASSISTANT_SANDBOX_MEMORY_MB", 2048), "the most memory one server-side run may use, whatever a community's limits.memory_mb says (ASSISTANT_SANDBOX_MEMORY_MB)")
	fs.BoolVar(&s.sandboxLoopback, "sandbox-allow-loopback", env("ASSISTANT_SANDBOX_ALLOW_LOOPBACK") == "1", "let server-side osa.fetch reach loopback addresses, for tests (ASSISTANT_SANDBOX_ALLOW_LOOPBACK=1)")
	fs.StringVar(&s.knowledge.dataDir, "data-dir", or(env("ASSISTANT_DATA_DIR", "DATA_DIR"), defaultDataDir(getenv)), "where the knowledge databases (knowledge/<id>.db) and the documentation cache (docs/) live; default: the user data directory + /assistant (ASSISTANT_DATA_DIR, alias DATA_DIR)")
	fs.DurationVar(&s.docsRefresh, "docs-refresh", envDuration(getenv, "ASSISTANT_DOCS_REFRESH", knowledge.DefaultRefresh), "how often every community's documentation is fetched again, with conditional requests (ASSISTANT_DOCS_REFRESH)")
	fs.BoolVar(&s.knowledge.allowLoopback, "knowledge-allow-loopback", env("ASSISTANT_KNOWLEDGE_ALLOW_LOOPBACK") == "1", "let documentation fetches reach loopback addresses, for tests (ASSISTANT_KNOWLEDGE_ALLOW_LOOPBACK=1)")
	if v := env("ASSISTANT_KNOWLEDGE_RESOLVE"); v != "" {
		s.knowledge.resolve = append(s.knowledge.resolve, v)
	}
	fs.Var(&s.knowledge.resolve, "knowledge-resolve", "HOST=IP:PORT: documentation fetches of HOST go to that address over plain HTTP, as curl --resolve does, for tests; repeatable (ASSISTANT_KNOWLEDGE_RESOLVE, comma-separated)")
	fs.IntVar(&s.knowledge.preloadBudget, "preload-budget-chars", envInt(getenv, "ASSISTANT_PRELOAD_BUDGET_CHARS", int(limits.PreloadBudgetChars)), "the most characters of preloaded documents in one community's prompt; past it the rest are offered on demand (ASSISTANT_PRELOAD_BUDGET_CHARS)")
	addSyncFlags(fs, &s.sync, getenv)
	fs.StringVar(&s.logFormat, "log-format", or(env("ASSISTANT_LOG_FORMAT"), "auto"), "json, text, or auto: text on a terminal, json otherwise (ASSISTANT_LOG_FORMAT)")
	fastPath := fs.String("fast-path", or(env("ASSISTANT_FAST_PATH"), "on"), "answer GET /{c}, /communities, wheels and logos ahead of net/http with an event loop for every two CPUs (on), with N event loops (a number), or leave every request to net/http (off) (ASSISTANT_FAST_PATH)")
	accessLog := fs.String("access-log", or(env("ASSISTANT_ACCESS_LOG"), "on"), "log every request (on), none (off), or a share of them such as 0.1; errors (5xx) are always logged (ASSISTANT_ACCESS_LOG)")
	fs.Usage = func() {
		fmt.Fprint(stderr, serveUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return s, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	s.basePath = strings.TrimRight(s.basePath, "/")
	if s.basePath != "" && !strings.HasPrefix(s.basePath, "/") {
		return s, fmt.Errorf("base path %q must start with /", s.basePath)
	}
	switch s.logFormat {
	case "auto", "json", "text":
	default:
		return s, fmt.Errorf("log format %q: want json, text or auto", s.logFormat)
	}
	al, err := routers.ParseAccessLog(*accessLog)
	if err != nil {
		return s, err
	}
	s.accessLog = al
	switch v := strings.ToLower(strings.TrimSpace(*fastPath)); v {
	case "on":
		s.fastPath = true
	case "off":
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxFastLoops {
			return s, fmt.Errorf("fast path %.40q: want on, off, or 1 to %d event loops", *fastPath, maxFastLoops)
		}
		s.fastPath, s.fastLoops = true, n
	}
	if s.artifactMB < 1 || s.artifactMB > 1<<20 {
		return s, fmt.Errorf("artifact budget %d MB: want 1 to %d", s.artifactMB, 1<<20)
	}
	if s.uploadBufferMB < 1 || s.uploadBufferMB > 1<<20 {
		return s, fmt.Errorf("upload buffer %d MB: want 1 to %d", s.uploadBufferMB, 1<<20)
	}
	if s.uploadClientMB < 0 || s.uploadClientMB > 1<<20 {
		return s, fmt.Errorf("upload share of a client %d MB: want 0 to %d", s.uploadClientMB, 1<<20)
	}
	if s.exports < 0 || s.exports > 1024 {
		return s, fmt.Errorf("export concurrency %d: want 0 to 1024", s.exports)
	}
	return s, nil
}

func envDuration(getenv func(string) string, name string, def time.Duration) time.Duration {
	if d, err := time.ParseDuration(strings.TrimSpace(getenv(name))); err == nil {
		return d
	}
	return def
}

func envInt(getenv func(string) string, name string, def int) int {
	if n, err := strconv.Atoi(strings.TrimSpace(getenv(name))); err == nil {
		return n
	}
	return def
}

func newLogger(format string, w io.Writer) *slog.Logger {
	if format == "auto" {
		format = "json"
		if f, ok := w.(*os.File); ok {
			if info, err := f.Stat(); err == nil && info.Mode()&os.ModeCharDevice != 0 {
				format = "text"
			}
		}
	}
	if format == "text" {
		return slog.New(slog.NewTextHandler(w, logOptions))
	}
	return slog.New(slog.NewJSONHandler(w, logOptions))
}

// isJSON reports whether log writes JSON records.
func isJSON(log *slog.Logger) bool {
	_, ok := log.Handler().(*slog.JSONHandler)
	return ok
}

// buildServer follows the start-up order: settings, then every community (anything broken stops
// here, before listening), then the HTTP handler.
func buildServer(ctx context.Context, s serveSettings, getenv func(string) string, log *slog.Logger) (_ *routers.Server, _ func(), err error) {
	depEnv := func(k string) string {
		switch k {
		case "ASSISTANT_DEPLOYMENT":
			return s.deployment
		case "ASSISTANT_BASE_PATH":
			return s.basePath
		}
		return ""
	}
	dep, err := config.ServingDeployment(depEnv)
	if err != nil {
		return nil, nil, err
	}
	// Settings that only need parsing come first: they hold nothing to release.
	var origins []string
	for o := range strings.SplitSeq(s.corsOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	rl, err := parseRateLimits(s.rateLimits, dep)
	if err != nil {
		return nil, nil, err
	}
	trusted, err := parseCIDRs(s.trusted)
	if err != nil {
		return nil, nil, err
	}
	prices, err := loadPrices(s.prices)
	if err != nil {
		return nil, nil, err
	}

	// What is opened from here on is released in reverse order, by the caller on success and
	// here on any failure.
	var cleanups []func()
	closeAll := func() {
		for i := len(cleanups) - 1; i >= 0; i-- {
			cleanups[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()

	// The engine compiles before anything is loaded: a broken python.wasm stops the start.
	eng, err := openEngine(ctx, s.engineDir, s.engineCache, s.sandboxMemoryMB, log)
	if err != nil {
		return nil, nil, err
	}
	if eng == nil {
		log.Warn("no Python engine (--engine-dir): preludes are not compile-checked")
	} else {
		cleanups = append(cleanups, func() { _ = eng.Close(context.WithoutCancel(ctx)) })
	}
	opts := loadOptions(eng)
	opts.Locks = &runtimelock.Cache{}
	load := func(ctx context.Context) (*config.Set, error) {
		return config.Load(ctx, s.communities, opts)
	}
	set, err := load(ctx)
	var list config.ErrorList
	if errors.As(err, &list) {
		for _, e := range list {
			log.Error("config error", slog.String("error", e.Error()), slog.Bool("fails_closed", e.FailsClosed))
		}
		if fatal := list.Fatal(); len(fatal) > 0 {
			return nil, nil, fmt.Errorf("%d config %s in %s; fix them or run assistant validate", len(fatal), plural(len(fatal), "error", "errors"), s.communities)
		}
		err = nil
	} else if err != nil {
		return nil, nil, err
	}
	st, err := openStore(ctx, s.redisURL, s.redisPrefix, s.artifactMB, s.now, log)
	if err != nil {
		return nil, nil, err
	}
	cleanups = append(cleanups, func() { _ = st.Close() })
	records, _ := st.(interpreterRecords) // both stores keep them
	runner, closeRunner, err := startRunner(ctx, s, eng, set, records, log)
	if err != nil {
		return nil, nil, err
	}
	cleanups = append(cleanups, closeRunner)
	// MCP servers connect in the background: one that is down does not stop the start.
	mcps := newMCP(dep, getenv, log)
	mcps.Apply(set)
	cleanups = append(cleanups, mcps.Close)
	// Documentation is fetched and indexed in the background too: the server listens at once,
	// serving what the cache holds.
	resolve, err := parseResolve(s.knowledge.resolve)
	if err != nil {
		return nil, nil, err
	}
	lib, err := knowledge.New(knowledge.Options{DataDir: s.knowledge.dataDir, Refresh: s.docsRefresh,
		AllowLoopback: s.knowledge.allowLoopback, Resolve: resolve, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("opening the knowledge store in %s: %v", s.knowledge.dataDir, err)
	}
	cleanups = append(cleanups, func() { _ = lib.Close() })
	docs := newKnowledgeDocs(lib, s.knowledge.preloadBudget, log)
	docs.apply(set)
	syncs, err := startSyncs(s, set, st, eng, lib, prices, resolve, getenv, log)
	if err != nil {
		return nil, nil, err
	}
	cleanups = append(cleanups, syncs.Close)
	docs.src.live = syncs.liveSearch()

	models := &chat.Models{Getenv: getenv, Default: s.defaultModel}
	spent := chat.BudgetMetric()
	engine := &chat.Engine{
		Store:  st,
		Models: models,
		Budget: &chat.Budget{Store: st, Prices: prices, Log: log, Spent: spent},
		Log:    log,
		Now:    s.now,
	}
	if runner != nil { // not a typed nil in the interface
		engine.Runner = runner
	}
	engine.MCP = mcps
	engine.Knowledge = docs
	srv, err := routers.New(routers.Deps{
		Settings: routers.Settings{
			BasePath: s.basePath, Deployment: dep, CORSOrigins: origins, AdminKey: s.adminKey,
			DefaultModel: s.defaultModel, ResolveModel: models.DefaultModel, Version: version, Commit: commit,
			RateLimits: rl, TrustedProxies: trusted, AccessLog: s.accessLog, FastPath: s.fastPath,
			Files: routers.FileSettings{UploadBufferBytes: int64(s.uploadBufferMB) << 20, ClientBytes: int64(s.uploadClientMB) << 20, Exports: s.exports},
		},
		Logger: log,
		Getenv: getenv,
		Load:   load,
		// The MCP servers and the documentation follow the catalog a reload made.
		Applied: func(set *config.Set) {
			mcps.Apply(set)
			docs.apply(set)
			syncs.apply(set)
		},
		Communities: set,
		Engine:      engine,
		Artifacts:   st,
		Files:       st,
		Limiter:     st,
		Collectors:  append(append([]prometheus.Collector{spent, mcps, docs}, runner.collectors()...), syncs.collectors()...),
		Docs:        docs,
		Sync:        syncs.routes(),
		Feeds:       lib.Store(),
	})
	if err != nil {
		return nil, nil, err
	}
	return srv, closeAll, nil
}

// runServe is assistant serve.
func runServe(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	s, err := parseServe(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "assistant serve:", err)
		return 2
	}
	log := newLogger(s.logFormat, stderr)
	routeRedisLogs(log)
	srv, closeState, err := buildServer(ctx, s, getenv, log)
	if err != nil {
		log.Error("not starting", slog.Any("error", err))
		return 1
	}
	defer closeState()
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		log.Error("not starting", slog.Any("error", err))
		return 1
	}
	// Requests get a context the server can cancel at shutdown (Shutdown alone waits for them).
	requestCtx, cancelRequests := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelRequests()
	hs := &http.Server{
		Handler:           srv,
		BaseContext:       func(net.Listener) context.Context { return requestCtx },
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		// Writes are bounded per response by the router (streams extend their own deadline).
		WriteTimeout:   0,
		IdleTimeout:    120 * time.Second,
		MaxHeaderBytes: 64 << 10,
		ErrorLog:       slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for range hup {
			log.Info("SIGHUP: reloading communities")
			_ = srv.Reload(context.WithoutCancel(ctx))
		}
	}()
	front := newFront(hs, srv, s, log)
	errc := make(chan error, 1)
	go func() { errc <- front.Serve(ln) }()
	url := "http://" + displayAddr(ln.Addr()) + s.basePath + "/"
	log.Info("serving", slog.String("url", url), slog.String("communities", s.communities), slog.String("version", version))
	// The start lines on stdout: for people, or, where the logs are JSON (stdout and stderr
	// are often one stream then), JSON records too.
	if out := newLogger(s.logFormat, stdout); isJSON(out) {
		out.Info("serving", slog.String("url", url), slog.String("version", version))
		for _, id := range srv.DemoCommunities() {
			out.Info("demo page", slog.String("url", url+id+"/demo/"), slog.String("community", id))
		}
	} else {
		fmt.Fprintf(stdout, "assistant %s serving on %s\n", version, url)
		for _, id := range srv.DemoCommunities() {
			fmt.Fprintf(stdout, "demo page: %s%s/demo/\n", url, id)
		}
	}
	select {
	case err := <-errc:
		log.Error("server stopped", slog.Any("error", err))
		return 1
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 15*time.Second)
	defer cancel()
	if err := front.Shutdown(shutdownCtx); err != nil {
		// Replies still streaming after the grace period are cancelled, so their handlers
		// return and release their session locks before the store closes.
		log.Warn("shutdown: cancelling the requests still running", slog.Any("error", err))
		cancelRequests()
		lastCtx, cancelLast := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancelLast()
		if err := front.Shutdown(lastCtx); err != nil {
			log.Error("shutdown", slog.Any("error", err))
			return 1
		}
	}
	log.Info("stopped")
	return 0
}

// front is what serves the listener: net/http alone, or the fast path ahead of it.
type front interface {
	Serve(net.Listener) error
	Shutdown(context.Context) error
}

// maxFastLoops bounds --fast-path N: more loops than that is a typo, not a tuning.
const maxFastLoops = 1024

func newFront(hs *http.Server, srv *routers.Server, s serveSettings, log *slog.Logger) front {
	if !s.fastPath {
		return hs
	}
	fp := &fastpath.Server{Answer: srv.AnswerFast, Sent: srv.SentFast, HTTP: hs, Log: log, Loops: s.fastLoops}
	for _, c := range []prometheus.Collector{
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assistant_http_fast_answers_total",
			Help: "Requests the fast path answered ahead of net/http (GET /{c}, /communities, wheels, logos)."},
			func() float64 { n, _ := fp.Stats(); return float64(n) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assistant_http_fast_handoffs_total",
			Help: "Connections the fast path handed to net/http (a request it does not answer)."},
			func() float64 { _, n := fp.Stats(); return float64(n) }),
	} {
		if err := srv.Register(c); err != nil {
			log.Warn("fast path metrics", slog.Any("error", err))
		}
	}
	return fp
}

// displayAddr turns a listen address into one a person can open: the unspecified address
// becomes localhost.
func displayAddr(a net.Addr) string {
	host, port, err := net.SplitHostPort(a.String())
	if err != nil {
		return a.String()
	}
	if ip := net.ParseIP(host); ip == nil || ip.IsUnspecified() {
		host = "localhost"
	}
	return net.JoinHostPort(host, port)
}
