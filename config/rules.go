package config

import (
	"fmt"
	"net/netip"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/runtimelock"
)

// checker collects the per-file rule failures of phase 3, each located through the path index
// built in phase 2.
type checker struct {
	file   string
	index  map[string]pos
	blocks map[string]block
	errs   ErrorList
	// lockfileReadable is set in phase 4 once the lockfile was found inside the folder.
	lockfileReadable bool
}

func (k *checker) add(p, format string, args ...any) {
	at := k.lookup(p)
	k.errs = append(k.errs, Error{File: k.file, Line: at.line, Column: at.col, Path: p, Msg: fmt.Sprintf(format, args...)})
}

// lookup finds the position of path, or of its nearest parent that exists: a missing field is
// reported where its parent is.
func (k *checker) lookup(p string) pos {
	for {
		if at, ok := k.index[p]; ok {
			return at
		}
		i := strings.LastIndexAny(p, ".[")
		if i < 0 {
			return k.index[""]
		}
		p = p[:i]
	}
}

var (
	idRE            = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	corsOriginRE    = regexp.MustCompile(`^https?://(\*\.)?[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9\-]*[a-zA-Z0-9])?)*(:\d{1,5})?$`)
	anthropicEnvRE  = regexp.MustCompile(`^ANTHROPIC_API_KEY_[A-Z0-9_]+$`)
	openrouterEnvRE = regexp.MustCompile(`^OPENROUTER_API_KEY_[A-Z0-9_]+$`)
	modelRE         = regexp.MustCompile(`^[a-zA-Z0-9_.-]+(/[a-zA-Z0-9._-]+)?(:[a-zA-Z0-9._-]+)*$`)
	githubUserRE    = regexp.MustCompile(`^[a-zA-Z0-9]([a-zA-Z0-9-]{0,37}[a-zA-Z0-9])?$`)
	repoRE          = regexp.MustCompile(`^[a-zA-Z0-9_.-]+/[a-zA-Z0-9_.-]+$`)
	doiPrefixRE     = regexp.MustCompile(`^(https?://)?(dx\.)?doi\.org/`)
	doiRE           = regexp.MustCompile(`^10\.\d{4,}/\S+$`)
	blankRE         = regexp.MustCompile(`\{([^{}]*)\}`)
	moduleNameRE    = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$`)
	dateSuffixRE    = regexp.MustCompile(`-(\d{8}|\d{4}-\d{2}-\d{2})$`)
)

// ReservedIDs are first path segments the server uses itself; a community id is the first
// segment of every community route, so it may not be one of them.
var ReservedIDs = []string{"admin", "communities", "feedback", "health", "metrics", "pyodide", "sync", "version"}

// ReservedClientToolNames are the tool names the server binds itself (config.md §3.1).
var ReservedClientToolNames = []string{"get_full_output"}

// SealedImportRoots are the modules the browser's seal removes; importing them before the seal
// gains nothing (config.md §4.1). The list is limits'.
var SealedImportRoots = limits.SealedImportRoots

// expensiveModels may only be a community's default when the community brings its own key.
var expensiveModels = []string{"openai/o1", "openai/o1-preview", "anthropic/claude-opus-4", "anthropic/claude-3-opus"}

// NotebookPyodideVersion is the notebook site's own Pyodide pin.
const NotebookPyodideVersion = "0.29.5"

func chars(s string) int { return utf8.RuneCountInString(s) }

// stripOpt trims an optional string; a blank one becomes nil, as the reference does.
func stripOpt(p **string) {
	if *p == nil {
		return
	}
	s := strings.TrimSpace(**p)
	if s == "" {
		*p = nil
		return
	}
	*p = &s
}

// normalize trims the fields the reference trims, before any length or pattern rule runs.
func normalize(c *Community) {
	c.ID = strings.TrimSpace(c.ID)
	stripOpt(&c.AnthropicAPIKeyEnvVar)
	stripOpt(&c.OpenRouterAPIKeyEnvVar)
	stripOpt(&c.DefaultModel)
	for i := range c.Documentation {
		stripOpt(&c.Documentation[i].SourceURL)
		stripOpt(&c.Documentation[i].SourcePath)
	}
	if w := c.Widget; w != nil {
		stripOpt(&w.Title)
		stripOpt(&w.InitialMessage)
		stripOpt(&w.Placeholder)
		stripOpt(&w.LogoURL)
		stripOpt(&w.LauncherLabel)
		for i := range w.DatasetSuggestedQuestions {
			w.DatasetSuggestedQuestions[i].Text = strings.TrimSpace(w.DatasetSuggestedQuestions[i].Text)
		}
	}
	if d := c.Docstrings; d != nil {
		for i := range d.Repos {
			d.Repos[i].Branch = strings.TrimSpace(d.Repos[i].Branch)
			d.Repos[i].Repo = strings.TrimSpace(d.Repos[i].Repo)
		}
	}
	if s := c.Sync; s != nil {
		for _, sc := range []*Schedule{s.GitHub, s.Papers, s.Docstrings, s.Mailman, s.FAQ, s.BEPs, s.Discourse} {
			if sc != nil {
				sc.Cron = strings.TrimSpace(sc.Cron)
			}
		}
	}
}

// checkCommunity runs every hand-written per-file rule (phase 3). It also tidies the lists the
// reference tidies (trimmed, blanks dropped, duplicates removed), after checking them.
func (k *checker) checkCommunity(c *Community) {
	if c.ID == "" {
		k.add("id", "Community ID cannot be empty")
	} else if !idRE.MatchString(c.ID) {
		k.add("id", "Community ID must be kebab-case (lowercase, hyphens): %s", c.ID)
	} else if slices.Contains(ReservedIDs, c.ID) {
		k.add("id", "%q is reserved: /%s is a server route, so no community can be served there", c.ID, c.ID)
	}
	c.CORSOrigins = k.cleanList("cors_origins", c.CORSOrigins, func(p, o string) {
		switch {
		case chars(o) > 255:
			k.add(p, "CORS origin too long (max 255 chars): %s", o)
		case !corsOriginRE.MatchString(o):
			k.add(p, "Invalid CORS origin %q. Must be a valid origin: http(s)://host[:port], optionally with one leading \"*.\" label", o)
		}
	})
	c.Maintainers = k.cleanList("maintainers", c.Maintainers, func(p, u string) {
		if !githubUserRE.MatchString(u) {
			k.add(p, "Invalid GitHub username: %q. GitHub usernames are 1-39 letters, digits or single hyphens", u)
		}
	})
	if v := c.AnthropicAPIKeyEnvVar; v != nil && !anthropicEnvRE.MatchString(*v) {
		k.add("anthropic_api_key_env_var", "Invalid environment variable name: %q. Must match pattern: ANTHROPIC_API_KEY_[A-Z0-9_]+", *v)
	}
	if v := c.OpenRouterAPIKeyEnvVar; v != nil && !openrouterEnvRE.MatchString(*v) {
		k.add("openrouter_api_key_env_var", "Invalid environment variable name: %q. Must match pattern: OPENROUTER_API_KEY_[A-Z0-9_]+", *v)
	}
	if m := c.DefaultModel; m != nil {
		k.checkModel("default_model", *m)
		base := dateSuffixRE.ReplaceAllString(*m, "")
		if slices.Contains(expensiveModels, base) && c.AnthropicAPIKeyEnvVar == nil && c.OpenRouterAPIKeyEnvVar == nil {
			k.add("default_model", "%q is an expensive model and requires BYOK: set anthropic_api_key_env_var or openrouter_api_key_env_var so the community pays for it", *m)
		}
	}
	k.checkModelInstructions(c)
	for i := range c.Documentation {
		k.checkDocSource(fmt.Sprintf("documentation[%d]", i), &c.Documentation[i])
	}
	if g := c.GitHub; g != nil {
		g.Repos = k.cleanRepos("github.repos", g.Repos)
	}
	if ci := c.Citations; ci != nil {
		k.checkCitations(ci)
	}
	for i, d := range c.Discourse {
		k.checkHTTPURL(fmt.Sprintf("discourse[%d].url", i), d.URL)
	}
	for i, m := range c.Mailman {
		k.checkHTTPURL(fmt.Sprintf("mailman[%d].base_url", i), m.BaseURL)
	}
	if d := c.Docstrings; d != nil {
		k.checkDocstrings(d)
	}
	if f := c.FAQGeneration; f != nil {
		k.checkFAQ(f)
	}
	if s := c.Sync; s != nil {
		k.checkSync(s)
	}
	if b := c.Budget; b != nil && b.DailyLimitUSD > b.MonthlyLimitUSD {
		k.add("budget.daily_limit_usd", "daily_limit_usd (%v) cannot exceed monthly_limit_usd (%v)", b.DailyLimitUSD, b.MonthlyLimitUSD)
	}
	if l := c.Links; l != nil {
		for _, f := range []struct {
			name string
			v    *string
		}{{"homepage", l.Homepage}, {"documentation", l.Documentation}, {"repository", l.Repository}, {"demo", l.Demo}} {
			if f.v != nil {
				k.checkHTTPURL("links."+f.name, *f.v)
			}
		}
	}
	if w := c.Widget; w != nil {
		k.checkWidget(w)
	}
	if n := c.Notebook; n != nil {
		k.checkNotebook(n)
	}
	if e := c.Extensions; e != nil {
		k.checkExtensions(e)
	}
	if r := c.Runtime; r != nil && r.Python != nil {
		k.checkPython("runtime.python", r.Python)
	}
	k.checkCommunityModel(c)
}

// cleanList trims each item, drops blank ones, checks the rest with check, and removes
// duplicates keeping the first, as the reference does for its string lists.
func (k *checker) cleanList(field string, items []string, check func(path, item string)) []string {
	out := make([]string, 0, len(items))
	for i, s := range items {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		check(fmt.Sprintf("%s[%d]", field, i), s)
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (k *checker) cleanRepos(field string, repos []string) []string {
	out := make([]string, 0, len(repos))
	for i, r := range repos {
		p := fmt.Sprintf("%s[%d]", field, i)
		r = strings.TrimSpace(r)
		switch {
		case r == "":
			k.add(p, "Repository name cannot be empty")
			continue
		case !repoRE.MatchString(r):
			k.add(p, "Repository must be in 'org/repo' format, got: %s", r)
		}
		if !slices.Contains(out, r) {
			out = append(out, r)
		}
	}
	return out
}

func (k *checker) checkModel(p, m string) {
	switch {
	case strings.TrimSpace(m) == "":
		k.add(p, "Model identifier cannot be empty")
	case chars(m) > 100:
		k.add(p, "Model name too long (max 100 chars): %s...", string([]rune(m)[:40]))
	case !modelRE.MatchString(m):
		k.add(p, "Invalid model name: %q. Must match pattern: provider/model-name, such as anthropic/claude-haiku-4-5", m)
	}
}

func (k *checker) checkModelInstructions(c *Community) {
	if c.ModelInstructions == nil {
		return
	}
	cleaned := make(map[string]string, len(c.ModelInstructions))
	defer func() { c.ModelInstructions = cleaned }()
	seen := map[string]string{}
	for _, key := range sortedKeys(c.ModelInstructions) {
		p := "model_instructions[" + key + "]"
		id := strings.TrimSpace(key)
		if id == "" {
			k.add(p, "model_instructions key %q is empty; name an offered model", key)
			continue
		}
		if !modelRE.MatchString(id) {
			k.add(p, "model_instructions key %q is not a model name", key)
		}
		if other, dup := seen[id]; dup {
			k.add(p, "model_instructions names %q twice (as %q and %q)", id, other, key)
		}
		seen[id] = key
		text := strings.TrimSpace(c.ModelInstructions[key])
		cleaned[id] = text
		switch n := chars(text); {
		case n == 0:
			k.add(p, "model_instructions for %q is empty", key)
		case n > int(limits.MaxModelInstructionChars):
			k.add(p, "model_instructions for %q is too long (%d chars; max %d)", key, n, limits.MaxModelInstructionChars)
		}
	}
}

// checkHTTPURL is the reference's HttpUrl: an absolute http or https URL with a host.
func (k *checker) checkHTTPURL(p, s string) {
	u, err := url.Parse(s)
	switch {
	case err != nil:
		k.add(p, "must be an http or https URL, got %q", s)
	case u.Scheme != "http" && u.Scheme != "https":
		k.add(p, "must be an http or https URL, got %q", s)
	case u.Hostname() == "":
		k.add(p, "must be an http or https URL with a host, got %q", s)
	}
}

func (k *checker) checkDocSource(p string, d *DocSource) {
	k.checkHTTPURL(p+".url", d.URL)
	if d.SourceURL != nil {
		if msg := fetchableURL(*d.SourceURL); msg != "" {
			k.add(p+".source_url", "%s", msg)
		}
	}
	if d.SourcePath != nil {
		if msg := relPathProblem(*d.SourcePath, ".md"); msg != "" {
			k.add(p+".source_path", "source_path %q: %s", *d.SourcePath, msg)
		}
		if d.SourceURL != nil {
			k.add(p+".source_path", "DocSource %q has both source_url and source_path; give one: the document is read from one place", d.Title)
		}
	}
	if d.Preload && d.SourceURL == nil && d.SourcePath == nil {
		k.add(p+".preload", "DocSource %q has preload=True but no source_url. Preloaded documents are fetched from source_url", d.Title)
	}
}

// fetchableURL is the reference's rule for URLs the server itself fetches: http(s), a host,
// and never localhost or a loopback, link-local or private address (DNS names are not resolved).
func fetchableURL(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return fmt.Sprintf("URL does not parse: %q", s)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Sprintf("Invalid URL scheme %q. Only http:// and https:// are allowed.", u.Scheme)
	}
	host := u.Hostname()
	if host == "" {
		return fmt.Sprintf("URL must have a valid hostname: %s", s)
	}
	if host == "localhost" || host == "127.0.0.1" || host == "::1" {
		return fmt.Sprintf("Cannot fetch from localhost: %s", s)
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		switch {
		case ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast():
			return fmt.Sprintf("Cannot fetch from link-local address: %s", s)
		case ip.IsPrivate():
			return fmt.Sprintf("Cannot fetch from private IP address: %s", s)
		case ip.IsLoopback():
			return fmt.Sprintf("Cannot fetch from loopback address: %s", s)
		}
	}
	return ""
}

func normalizeDOI(s string) string {
	return doiPrefixRE.ReplaceAllString(strings.TrimSpace(s), "")
}

func (k *checker) checkCitations(ci *Citations) {
	ci.Queries = k.cleanList("citations.queries", ci.Queries, func(string, string) {})
	dois := make([]string, 0, len(ci.DOIs))
	for i, d := range ci.DOIs {
		d = normalizeDOI(d)
		if d == "" {
			continue
		}
		if !doiRE.MatchString(d) {
			k.add(fmt.Sprintf("citations.dois[%d]", i), "Invalid DOI format (expected '10.xxxx/yyyy'): %s", d)
		}
		if !slices.Contains(dois, d) {
			dois = append(dois, d)
		}
	}
	ci.DOIs = dois
	labels := map[string]string{}
	for _, key := range sortedKeys(ci.PaperLabels) {
		d := normalizeDOI(key)
		if !doiRE.MatchString(d) {
			k.add("citations.paper_labels["+key+"]", "Invalid DOI key in paper_labels (expected '10.xxxx/yyyy'): %s", key)
			continue
		}
		labels[d] = ci.PaperLabels[key]
	}
	ci.PaperLabels = labels
	aliases := map[string][]string{}
	var strays []string
	for _, key := range sortedKeys(ci.Aliases) {
		p := "citations.aliases[" + key + "]"
		primary := normalizeDOI(key)
		if !doiRE.MatchString(primary) {
			k.add(p, "Invalid DOI in aliases (expected '10.xxxx/yyyy'): %s", key)
			continue
		}
		var versions []string
		for i, v := range ci.Aliases[key] {
			v = normalizeDOI(v)
			switch {
			case v == "":
				k.add(fmt.Sprintf("%s[%d]", p, i), "Empty alias version DOI for primary %q", primary)
			case !doiRE.MatchString(v):
				k.add(fmt.Sprintf("%s[%d]", p, i), "Invalid DOI in aliases (expected '10.xxxx/yyyy'): %s", v)
			case !slices.Contains(versions, v):
				versions = append(versions, v)
			}
		}
		if !slices.Contains(ci.DOIs, primary) {
			strays = append(strays, strconv.Quote(primary))
		}
		aliases[primary] = versions
	}
	if len(strays) > 0 {
		k.add("citations.aliases", "aliases primary DOIs not present in dois: [%s]", strings.Join(strays, ", "))
	}
	ci.Aliases = aliases
}

func (k *checker) checkDocstrings(d *Docstrings) {
	var seen, dups []string
	for i := range d.Repos {
		r := &d.Repos[i]
		p := fmt.Sprintf("docstrings.repos[%d]", i)
		switch {
		case r.Repo == "":
			k.add(p+".repo", "Repository name cannot be empty")
		case !repoRE.MatchString(r.Repo):
			k.add(p+".repo", "Repository must be in 'org/repo' format, got: %s", r.Repo)
		}
		if r.Branch == "" {
			k.add(p+".branch", "Branch name cannot be empty")
		}
		if slices.Contains(seen, r.Repo) {
			dups = append(dups, r.Repo)
		}
		seen = append(seen, r.Repo)
	}
	if len(dups) > 0 {
		k.add("docstrings.repos", "Duplicate docstring repos: %s", strings.Join(dups, ", "))
	}
}

var faqSourceTypes = []string{"discourse", "github_discussions", "mailman"}

func (k *checker) checkFAQ(f *FAQGeneration) {
	for _, a := range []struct {
		name string
		a    *Agent
	}{{"evaluation_agent", f.EvaluationAgent}, {"summary_agent", f.SummaryAgent}} {
		if a.a != nil {
			k.checkModel("faq_generation."+a.name+".model", strings.TrimSpace(a.a.Model))
		}
	}
	var unknown []string
	for _, key := range sortedKeys(f.Sources) {
		p := "faq_generation.sources[" + key + "]"
		if !slices.Contains(faqSourceTypes, key) {
			unknown = append(unknown, key)
			continue
		}
		s := f.Sources[key]
		if s.MinParticipants >= 2 && s.MinMessages < 2 {
			k.add(p+".min_messages", "min_messages (%d) should be at least 2 when min_participants is %d", s.MinMessages, s.MinParticipants)
		}
	}
	if len(unknown) > 0 {
		k.add("faq_generation.sources", "Unknown source types: %s. Valid types: %s", strings.Join(unknown, ", "), strings.Join(faqSourceTypes, ", "))
	}
}

func (k *checker) checkSync(s *Sync) {
	for _, j := range []struct {
		name string
		s    *Schedule
	}{{"github", s.GitHub}, {"papers", s.Papers}, {"docstrings", s.Docstrings}, {"mailman", s.Mailman}, {"faq", s.FAQ}, {"beps", s.BEPs}, {"discourse", s.Discourse}} {
		if j.s == nil {
			continue
		}
		if _, err := ParseCron(j.s.Cron); err != nil {
			k.add("sync."+j.name+".cron", "Invalid cron expression %q: %v", j.s.Cron, err)
		}
	}
}

func (k *checker) checkWidget(w *Widget) {
	qs := make([]string, 0, len(w.SuggestedQuestions))
	for _, q := range w.SuggestedQuestions {
		if q = strings.TrimSpace(q); q != "" {
			qs = append(qs, q)
		}
	}
	w.SuggestedQuestions = qs
	if len(qs) > 10 {
		k.add("widget.suggested_questions", "Too many suggested questions (%d). Maximum is 10.", len(qs))
	}
	if n := len(w.DatasetSuggestedQuestions); n > 10 {
		k.add("widget.dataset_suggested_questions", "Too many dataset suggested questions (%d). Maximum is 10.", n)
	}
	for i, q := range w.DatasetSuggestedQuestions {
		if msg := datasetQuestionProblem(q.Text); msg != "" {
			k.add(fmt.Sprintf("widget.dataset_suggested_questions[%d].text", i), "%s", msg)
		}
	}
	if l := w.LogoURL; l != nil && !strings.HasPrefix(*l, "http://") && !strings.HasPrefix(*l, "https://") && !strings.HasPrefix(*l, "/") {
		k.add("widget.logo_url", "logo_url must use http://, https://, or be a path starting with '/'")
	}
	if l := w.LauncherLabel; l != nil && strings.ContainsAny(*l, "<>") {
		k.add("widget.launcher_label", "launcher_label must be plain text (no '<' or '>')")
	}
	if w.LauncherOpenSize != nil {
		closed, from := 56, "the bubble default"
		if w.Launcher == "capsule" {
			closed, from = 58, "the capsule default"
		}
		if w.LauncherSize != nil {
			closed, from = *w.LauncherSize, "launcher_size"
		}
		if *w.LauncherOpenSize > closed {
			k.add("widget.launcher_open_size", "launcher_open_size (%d) cannot be larger than the closed size (%d, from %s)", *w.LauncherOpenSize, closed, from)
		}
	}
}

func datasetQuestionProblem(t string) string {
	if t == "" {
		return "a dataset question's text must not be empty"
	}
	if strings.ContainsAny(t, "<>") {
		return "a dataset question must be plain text (no '<' or '>')"
	}
	var unknown []string
	for _, m := range blankRE.FindAllStringSubmatch(t, -1) {
		if !slices.Contains([]string{"dataset_id", "subject", "task"}, m[1]) {
			unknown = append(unknown, "{"+m[1]+"}")
		}
	}
	if len(unknown) > 0 {
		return fmt.Sprintf("unknown blank(s) %s in %q; a dataset question may use {dataset_id}, {subject}, {task}", strings.Join(unknown, ", "), t)
	}
	if strings.ContainsAny(blankRE.ReplaceAllString(t, ""), "{}") {
		return fmt.Sprintf("unmatched '{' or '}' in %q", t)
	}
	if !strings.Contains(t, "{dataset_id}") {
		return fmt.Sprintf("a dataset question must name its dataset with {dataset_id}: %q", t)
	}
	if n := chars(t); n > 200 {
		return fmt.Sprintf("must be at most 200 characters long, got %d", n)
	}
	return ""
}

// relPathProblem applies the reference's rules for a path relative to the community folder
// (config.md §7.2), shared with the lock-overlay loader so both judge a path alike.
func relPathProblem(p, suffix string) string { return runtimelock.PathProblem(p, suffix) }

func (k *checker) checkNotebook(n *Notebook) {
	if msg := relPathProblem(n.Starter, ".ipynb"); msg != "" {
		k.add("notebook.starter", "starter %q: %s", n.Starter, msg)
	}
	k.checkDatasetPattern(n.DatasetPattern)
	for _, f := range []struct {
		name string
		m    map[string]string
	}{{"zarr_base", n.ZarrBase}, {"dataset_page_base", n.DatasetPageBase}} {
		for _, key := range sortedKeys(f.m) {
			p := "notebook." + f.name + "[" + key + "]"
			if !slices.Contains(Deployments, Deployment(key)) {
				k.add(p, "%s names an unrecognized environment %q; must be one of (production, develop)", f.name, key)
				continue
			}
			if msg := baseURLProblem(f.m[key]); msg != "" {
				k.add(p, "%s[%q] %s", f.name, key, msg)
			}
		}
	}
}

// checkDatasetPattern checks the notebook's dataset-id pattern. Patterns are compiled with Go's
// RE2 syntax, which lacks look-around and back-references: a pattern that needs them is refused.
func (k *checker) checkDatasetPattern(pat string) {
	const p = "notebook.dataset_pattern"
	if !strings.HasPrefix(pat, "^") || !strings.HasSuffix(pat, "$") {
		k.add(p, "dataset_pattern must be anchored with ^...$: %q", pat)
		return
	}
	re, err := regexp.Compile(pat)
	if err != nil {
		k.add(p, "dataset_pattern does not compile: %v", err)
		return
	}
	var accepted []string
	for _, probe := range []string{`"`, `'`, `\`, "\n", " "} {
		if loc := re.FindStringIndex(probe); loc != nil && loc[0] == 0 {
			accepted = append(accepted, strconv.Quote(probe))
		}
	}
	if len(accepted) > 0 {
		k.add(p, "dataset_pattern %q would accept a hostile probe [%s]; a dataset id is pasted into URLs and code", pat, strings.Join(accepted, ", "))
	}
}

func baseURLProblem(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Scheme != "https":
		return fmt.Sprintf("must be an absolute https:// URL, got %q", s)
	case u.Host == "":
		return fmt.Sprintf("must name a host, got %q", s)
	case u.Path != "" || u.RawPath != "":
		return fmt.Sprintf("must have no path, not even a trailing slash, got %q", s)
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery || strings.Contains(s, "#"):
		return fmt.Sprintf("must have no query or fragment, got %q", s)
	}
	return ""
}

func (k *checker) checkExtensions(e *Extensions) {
	var seen, dups []string
	for _, pl := range e.PythonPlugins {
		if slices.Contains(seen, pl.Module) && !slices.Contains(dups, pl.Module) {
			dups = append(dups, pl.Module)
		}
		seen = append(seen, pl.Module)
	}
	if len(dups) > 0 {
		k.add("extensions.python_plugins", "Duplicate plugin modules: %s", strings.Join(dups, ", "))
	}
	seen, dups = nil, nil
	for i, s := range e.MCPServers {
		p := fmt.Sprintf("extensions.mcp_servers[%d]", i)
		if slices.Contains(seen, s.Name) && !slices.Contains(dups, s.Name) {
			dups = append(dups, s.Name)
		}
		seen = append(seen, s.Name)
		switch {
		case s.Command == nil && s.URL == nil:
			k.add(p, "McpServer must have either 'command' (local) or 'url' (remote)")
		case s.Command != nil && s.URL != nil:
			k.add(p, "McpServer cannot have both 'command' and 'url'; choose one")
		}
		if s.Command != nil {
			if len(*s.Command) == 0 {
				k.add(p+".command", "Command list cannot be empty")
			}
			for j, part := range *s.Command {
				if strings.TrimSpace(part) == "" {
					k.add(fmt.Sprintf("%s.command[%d]", p, j), "Command parts cannot be empty strings")
				}
			}
		}
		if s.URL != nil {
			s.URL.Each(func(suffix string, _ Deployment, u string) {
				k.checkHTTPURL(p+".url"+suffix, u)
			})
		}
		k.checkMCPServer(p, &s)
	}
	if len(dups) > 0 {
		k.add("extensions.mcp_servers", "Duplicate MCP server names: %s", strings.Join(dups, ", "))
	}
	k.checkToolGlobs("extensions.mcp_tools_allow", e.MCPToolsAllow)
	k.checkToolGlobs("extensions.mcp_tools_deny", e.MCPToolsDeny)
	if n := len(e.ClientTools); n > limits.MaxConfiguredClientTools {
		k.add("extensions.client_tools", "at most %d client tools may be configured (the server reserves %d of the %d a request may declare), got %d",
			limits.MaxConfiguredClientTools, limits.ReservedClientTools, limits.MaxDeclaredClientTools, n)
	}
	for i, t := range e.ClientTools {
		if slices.Contains(ReservedClientToolNames, t.Name) {
			k.add(fmt.Sprintf("extensions.client_tools[%d].name", i), "'%s' is reserved: the server binds it itself whenever a python client tool is bound, so it must not be configured.", t.Name)
		}
	}
}

func (k *checker) checkPython(p string, py *PythonRuntime) {
	if py.Lockfile != nil {
		if msg := relPathProblem(*py.Lockfile, ".json"); msg != "" {
			k.add(p+".lockfile", "lockfile %q: %s", *py.Lockfile, msg)
		}
	}
	if n := len(py.ImportBeforeSeal); n > limits.MaxImportBeforeSeal {
		k.add(p+".import_before_seal", "at most %d entries are allowed, got %d", limits.MaxImportBeforeSeal, n)
	}
	var seen []string
	for i, name := range py.ImportBeforeSeal {
		ip := fmt.Sprintf("%s.import_before_seal[%d]", p, i)
		if n := chars(name); n < 1 || n > int(limits.MaxImportNameChars) {
			k.add(ip, "must be 1 to %d characters long, got %d", limits.MaxImportNameChars, n)
			continue
		}
		if !moduleNameRE.MatchString(name) {
			k.add(ip, "import_before_seal entry %q is not a module name: dotted Python identifiers only, such as scipy.signal", name)
			continue
		}
		if slices.Contains(seen, name) {
			k.add(ip, "import_before_seal names %q twice", name)
			continue
		}
		seen = append(seen, name)
		root, _, _ := strings.Cut(name, ".")
		if slices.Contains(SealedImportRoots, root) {
			k.add(ip, "import_before_seal entry %q is a module the seal removes: it evicts it from sys.modules and refuses it by name, so importing it first gains nothing", name)
		}
	}
	if py.Prelude != nil {
		py.Prelude.Each(func(suffix string, _ Deployment, src string) {
			if n := chars(src); n > int(limits.MaxPreludeChars) {
				k.add(p+".prelude"+suffix, "must be at most %d characters long, got %d", limits.MaxPreludeChars, n)
			}
		})
	}
	py.FetchAllow.Each(func(suffix string, _ Deployment, list []string) {
		var seen []string
		for i, e := range list {
			ep := fmt.Sprintf("%s.fetch_allow%s[%d]", p, suffix, i)
			if msg := fetchAllowProblem(e); msg != "" {
				k.add(ep, "%s", msg)
			} else if slices.Contains(seen, e) {
				k.add(ep, "%q is listed twice", e)
			}
			seen = append(seen, e)
		}
	})
	for i, u := range py.IndexURLs {
		if msg := httpsURLProblem(u); msg != "" {
			k.add(fmt.Sprintf("%s.index_urls[%d]", p, i), "%s", msg)
		}
	}
	k.checkLimits(p+".limits", py.Limits)
	k.checkUploads(p+".uploads", py.Uploads)
}

func httpsURLProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Scheme != "https" || u.Host == "" {
		return fmt.Sprintf("must be an absolute https:// URL, got %q", s)
	}
	return ""
}

// fetchAllowProblem checks one fetch_allow entry. The browser silently skips entries it cannot
// use, so a typo would only show as a refused fetch in a reader's browser; here it is an error.
func fetchAllowProblem(s string) string {
	u, err := url.Parse(s)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return fmt.Sprintf("must be an absolute https:// URL, got %q", s)
	}
	host := u.Hostname()
	switch {
	case u.Scheme == "http" && (host == "localhost" || host == "127.0.0.1"):
	case u.Scheme != "https":
		return fmt.Sprintf("must be an https:// URL (http:// only for localhost and 127.0.0.1), got %q", s)
	}
	if u.User != nil {
		return fmt.Sprintf("must not carry credentials, got %q", redactUser(u))
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(s, "#") {
		return fmt.Sprintf("must have no query or fragment, got %q", s)
	}
	for seg := range strings.SplitSeq(u.EscapedPath(), "/") {
		if seg == "." || seg == ".." || strings.EqualFold(seg, "%2e") || strings.EqualFold(seg, "%2e%2e") {
			return fmt.Sprintf("must have no '.' or '..' path segments, got %q", s)
		}
	}
	return ""
}

// redactUser shows a URL with its credentials masked, so a password never reaches a log.
func redactUser(u *url.URL) string {
	c := *u
	c.User = nil
	return strings.Replace(c.String(), "://", "://***@", 1)
}

func (k *checker) checkLimits(p string, l RuntimeLimits) {
	b := limits.Runtime
	for _, f := range []struct {
		name string
		v    int
		b    limits.Bound
	}{
		{"memory_mb", l.MemoryMB, b.MemoryMB},
		{"stdout_chars", l.StdoutChars, b.StdoutChars},
		{"stderr_chars", l.StderrChars, b.StderrChars},
		{"images", l.Images, b.Images},
		{"image_px", l.ImagePx, b.ImagePx},
		{"exec_seconds", l.ExecSeconds, b.ExecSeconds},
	} {
		switch {
		case f.v < f.b.Min:
			k.add(p+"."+f.name, "must be greater than or equal to %d, got %d", f.b.Min, f.v)
		case f.b.Max > 0 && f.v > f.b.Max:
			k.add(p+"."+f.name, "must be less than or equal to %d (the server's cap), got %d", f.b.Max, f.v)
		}
	}
}

// checkUploads checks runtime.python.uploads whether or not it is enabled, so a mistake shows
// when the block is written, not when someone turns it on.
func (k *checker) checkUploads(p string, u Uploads) {
	b := limits.Uploads
	inBounds := true
	for _, f := range []struct {
		name string
		v    int
		b    limits.Bound
	}{
		{"max_file_mb", u.MaxFileMB, b.MaxFileMB},
		{"max_session_mb", u.MaxSessionMB, b.MaxSessionMB},
		{"max_files", u.MaxFiles, b.MaxFiles},
	} {
		switch {
		case f.v < f.b.Min:
			k.add(p+"."+f.name, "must be greater than or equal to %d, got %d", f.b.Min, f.v)
			inBounds = false
		case f.v > f.b.Max:
			k.add(p+"."+f.name, "must be less than or equal to %d (the server's cap), got %d", f.b.Max, f.v)
			inBounds = false
		}
	}
	// Only between two numbers that are each valid: one out of bounds is already reported.
	if inBounds && u.MaxSessionMB < u.MaxFileMB {
		k.add(p+".max_session_mb", "must be at least max_file_mb (%d), or no session could hold one file of the largest size allowed; got %d", u.MaxFileMB, u.MaxSessionMB)
	}
	if len(u.Types) == 0 {
		k.add(p+".types", "must list at least one of: %s; an empty list would refuse every file (enabled: false is how uploads are turned off)", strings.Join(limits.UploadTypes, ", "))
	}
	var seen []string
	for i, t := range u.Types {
		tp := fmt.Sprintf("%s.types[%d]", p, i)
		switch {
		case !slices.Contains(limits.UploadTypes, t):
			hint := ""
			if slices.Contains(limits.UploadTypes, strings.ToLower(t)) {
				hint = " (types are written in lower case)"
			}
			k.add(tp, "must be one of: %s; got %s%s", strings.Join(limits.UploadTypes, ", "), quoteClipped(t), hint)
		case slices.Contains(seen, t):
			k.add(tp, "%q is listed twice", t)
		}
		seen = append(seen, t)
	}
}

// quoteClipped quotes s for a message, cut to 60 characters so a long value is never echoed
// whole (as describe does for shape errors).
func quoteClipped(s string) string {
	if r := []rune(s); len(r) > 60 {
		s = string(r[:57]) + "..."
	}
	return strconv.Quote(s)
}

// checkCommunityModel runs the rules that span sections (config.md §2.1 steps 5–7, §3.2).
func (k *checker) checkCommunityModel(c *Community) {
	if c.Extensions != nil && len(c.Extensions.ClientTools) > 0 {
		var names, dups []string
		for _, t := range c.Extensions.ClientTools {
			if slices.Contains(names, t.Name) {
				dups = append(dups, t.Name)
			}
			names = append(names, t.Name)
		}
		if len(dups) > 0 {
			k.add("extensions.client_tools", "Duplicate client_tools names: %s", strings.Join(dups, ", "))
		}
		if c.Runtime == nil {
			k.add("extensions.client_tools", "extensions.client_tools is set but no top-level 'runtime' section is configured. Add a 'runtime:' section describing the execution environment(s) the declared client tools run in.")
		} else if c.Runtime.Python == nil {
			for i, t := range c.Extensions.ClientTools {
				if t.Runtime == "python" {
					k.add(fmt.Sprintf("extensions.client_tools[%d].runtime", i), "client_tools entry '%s' declares runtime: python, but runtime.python is not configured.", t.Name)
				}
			}
		}
	}
	if c.Notebook != nil {
		var pinned string
		if c.Runtime != nil && c.Runtime.Python != nil {
			pinned = c.Runtime.Python.PyodideVersion
		}
		if pinned != NotebookPyodideVersion {
			shown := "not set"
			if pinned != "" {
				shown = strconv.Quote(pinned)
			}
			k.add("notebook", "notebook is configured but runtime.python.pyodide_version is %s, not %q, the notebook site's own pin. One notebook site loads one Pyodide.", shown, NotebookPyodideVersion)
		}
	}
	// Uploads are read by runs, and GET /{c} reports them inside the runtime block it shows
	// only when a client tool is offered: without a python tool they would be stored for nothing.
	if _, ok := c.TakesUploads(); ok {
		runsPython := c.Extensions != nil && slices.ContainsFunc(c.Extensions.ClientTools, func(t ClientTool) bool { return t.Runtime == "python" })
		if !runsPython {
			k.add("runtime.python.uploads.enabled", "uploads are enabled but no extensions.client_tools entry has runtime: python, so no run could read the attached files. Add a python client tool, or set enabled: false.")
		}
	}
	if c.Widget != nil && c.Widget.Launcher == "capsule" && c.Notebook == nil {
		k.add("widget.launcher", "widget.launcher is 'capsule' but no notebook section is configured. The capsule's notebook icon opens the community's starter notebook.")
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

var (
	mcpServerNameRE = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)
	envNameRE       = regexp.MustCompile(`^[A-Z_][A-Z0-9_]*$`)
	toolGlobRE      = regexp.MustCompile(`^[A-Za-z0-9_*?\[\]!^-]+$`)
)

// MaxMCPServerNameChars caps an MCP server's name, which prefixes each of its tools' bound names
// ("<server>__<tool>", at most 64 characters).
const MaxMCPServerNameChars = 32

// mcpManagedHeaders are set by the MCP client itself; headers_env must not name them.
var mcpManagedHeaders = []string{"accept", "content-length", "content-type", "host", "mcp-protocol-version", "mcp-session-id", "last-event-id", "transfer-encoding", "connection"}

// IsHTTPToken reports whether s is an RFC 9110 token (a valid header field name).
func IsHTTPToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// checkMCPServer checks what the MCP client reads of one server besides command and url.
func (k *checker) checkMCPServer(p string, s *MCPServer) {
	switch {
	case s.Name == "":
	case len(s.Name) > MaxMCPServerNameChars || !mcpServerNameRE.MatchString(s.Name):
		k.add(p+".name", "MCP server name %q must be 1-%d letters, digits, '-' or single '_' (it prefixes its tools' names as \"<server>__<tool>\")", s.Name, MaxMCPServerNameChars)
	}
	if len(s.HeadersEnv) > 0 && s.Command != nil {
		k.add(p+".headers_env", "headers_env is for url servers; a command server's environment is set with env")
	}
	seen := map[string]string{}
	for _, h := range sortedKeys(s.HeadersEnv) {
		hp := p + ".headers_env[" + h + "]"
		lower := strings.ToLower(h)
		switch {
		case !IsHTTPToken(h):
			k.add(hp, "header name %q is not an HTTP token (RFC 9110: letters, digits and !#$%%&'*+-.^_`|~)", h)
		case slices.Contains(mcpManagedHeaders, lower):
			k.add(hp, "header %q is set by the MCP client itself", h)
		case seen[lower] != "":
			k.add(hp, "header %q is named twice (as %q and %q)", h, seen[lower], h)
		}
		seen[lower] = h
		if v := s.HeadersEnv[h]; !envNameRE.MatchString(v) {
			k.add(hp, "Invalid environment variable name: %q. Must match pattern: [A-Z_][A-Z0-9_]*", v)
		}
	}
	if len(s.Env) > 0 && s.URL != nil {
		k.add(p+".env", "env is for command servers; a url server's secrets go in headers_env")
	}
	for i, v := range s.Env {
		if !envNameRE.MatchString(v) {
			k.add(fmt.Sprintf("%s.env[%d]", p, i), "Invalid environment variable name: %q. Must match pattern: [A-Z_][A-Z0-9_]*", v)
		} else if slices.Contains(s.Env[:i], v) {
			k.add(fmt.Sprintf("%s.env[%d]", p, i), "%q is named twice", v)
		}
	}
	if s.CallTimeoutSeconds < 1 || s.CallTimeoutSeconds > MCPMaxCallSeconds {
		k.add(p+".call_timeout_seconds", "must be from 1 to %d, got %d", MCPMaxCallSeconds, s.CallTimeoutSeconds)
	}
}

// checkToolGlobs checks mcp_tools_allow or mcp_tools_deny: glob patterns over bound tool names.
func (k *checker) checkToolGlobs(field string, globs []string) {
	for i, g := range globs {
		gp := fmt.Sprintf("%s[%d]", field, i)
		if _, err := path.Match(g, ""); err != nil || !toolGlobRE.MatchString(g) {
			k.add(gp, "%q is not a glob over tool names: use letters, digits, '_', '-', '*', '?' and [...] classes", g)
		}
	}
}
