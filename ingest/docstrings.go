package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// DefaultGitHubRawURL is GitHub's raw-file host (ASSISTANT_GITHUB_RAW_URL overrides it); the
// API's is DefaultGitHubAPIURL.
const DefaultGitHubRawURL = "https://raw.githubusercontent.com"

const (
	// maxTreeBytes caps a recursive tree listing (GitHub truncates its own at 100,000
	// entries, some 7 MB).
	maxTreeBytes = 32 << 20
	// maxSourceFileBytes is the largest source file downloaded; a bigger one is counted as
	// failed and skipped.
	maxSourceFileBytes = 1 << 20
	// maxDocFiles bounds the files of one repository and language; past it the listing is
	// incomplete (nothing is deleted).
	maxDocFiles = 20000
	// docChunkFiles and docChunkBytes bound the files held at once: downloaded, parsed and
	// stored in one transaction, then let go.
	docChunkFiles = 64
	docChunkBytes = 8 << 20
	// rawFetches is how many raw files download at once.
	rawFetches = 4
)

// DocstringsOptions are the docstrings source's dependencies.
type DocstringsOptions struct {
	Store *knowledge.Store
	// Client reaches the GitHub API and raw hosts (trusted: no address guard); each request
	// has its own 30 s deadline.
	Client *http.Client
	// APIURL (ASSISTANT_GITHUB_API_URL) and RawURL (ASSISTANT_GITHUB_RAW_URL); "" for GitHub's.
	APIURL, RawURL string
	// Token (GITHUB_TOKEN) is sent to the API only, never to the raw host.
	Token string
	// Python parses Python files; without one, a repository's Python fails (its stored rows
	// stay).
	Python PythonParser
	// CacheDir (e.g. <data dir>/docstrings) keeps each repository's tree ETag and blob SHAs
	// between runs (docstrings_cache.go), so unchanged files are not downloaded again; ""
	// downloads every file every run.
	CacheDir string
	Now      func() time.Time
	Sleep    func(ctx context.Context, d time.Duration) error
	Logger   *slog.Logger
}

// Docstrings is the docstrings source (knowledge.md §6.7): per docstrings.repos entry, the
// branch's recursive tree from the GitHub API, then each .py and .m file of the configured
// languages from the raw host, parsed (Python by the sandboxed extractor, MATLAB here) and
// stored. Every run deletes the symbols of files that left the tree, that no longer parse
// out of their file, and of repositories no longer configured; a truncated tree deletes
// nothing.
type Docstrings struct {
	store    *knowledge.Store
	api      *apiClient
	log      *slog.Logger
	now      func() time.Time
	apiURL   string
	rawURL   string
	token    string
	python   PythonParser
	cacheDir string
}

// NewDocstrings returns the docstrings source.
func NewDocstrings(o DocstringsOptions) *Docstrings {
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	clk := newClock(o.Now, o.Sleep)
	return &Docstrings{store: o.Store, api: newAPIClient(o.Client, clk, log), log: log, now: clk.now,
		apiURL: strings.TrimRight(or(o.APIURL, DefaultGitHubAPIURL), "/"), rawURL: strings.TrimRight(or(o.RawURL, DefaultGitHubRawURL), "/"),
		token: o.Token, python: o.Python, cacheDir: o.CacheDir}
}

// Type is TypeDocstrings.
func (d *Docstrings) Type() string { return TypeDocstrings }

// Has reports whether c names docstring repositories.
func (d *Docstrings) Has(c *config.Community) bool {
	return c.Docstrings != nil && len(c.Docstrings.Repos) > 0
}

// docLanguages are the languages and their file suffixes.
var docLanguages = map[string]string{"python": ".py", "matlab": ".m"}

// Sync syncs every configured repository in turn, then deletes the rows of repositories no
// longer configured. A run downloads only the files whose blob changed since the last clean
// run (when the source has a CacheDir); a full one downloads every file.
func (d *Docstrings) Sync(ctx context.Context, c *config.Community, opts RunOptions, progress func(Progress)) (Result, error) {
	if progress == nil {
		progress = func(Progress) {}
	}
	var res Result
	var repos []string
	if c.Docstrings != nil {
		for _, e := range c.Docstrings.Repos {
			repos = append(repos, e.Repo)
		}
	}
	if c.Docstrings != nil {
		for _, e := range c.Docstrings.Repos {
			if err := ctx.Err(); err != nil {
				return res, err
			}
			items, deleted, failed := d.syncRepo(ctx, c.ID, e, opts.Full, progress)
			res.Items += items
			res.Deleted += deleted
			for _, f := range failed {
				res.Failed = append(res.Failed, f)
				d.log.Warn("docstrings sync: source failed", "community", c.ID, "source", f.Source, "error", f.Err)
			}
		}
	}
	n, err := updateCounted(ctx, d.store, c.ID, func(tx *knowledge.Tx) (int, error) { return tx.DeleteDocstringReposExcept(repos) })
	res.Deleted += n
	return res, err
}

// gitTree is the recursive tree listing of the GitHub API.
type gitTree struct {
	SHA  string `json:"sha"`
	Tree []struct {
		Path string `json:"path"`
		Type string `json:"type"`
		SHA  string `json:"sha"`
		Size int64  `json:"size"`
	} `json:"tree"`
	Truncated bool `json:"truncated"`

	// etag is the answer's ETag; notModified marks a 304 (the cache's tree is the same).
	etag        string
	notModified bool
}

// tree is the cached listing, for a 304.
func (c *docCache) tree() *gitTree {
	t := &gitTree{etag: c.ETag, Truncated: c.Truncated}
	paths := make([]string, 0, len(c.Files))
	for p := range c.Files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		f := c.Files[p]
		t.Tree = append(t.Tree, struct {
			Path string `json:"path"`
			Type string `json:"type"`
			SHA  string `json:"sha"`
			Size int64  `json:"size"`
		}{p, "blob", f.SHA, f.Size})
	}
	return t
}

// file is a file's cached outcome; a nil cache has none.
func (c *docCache) file(p string) (docCacheFile, bool) {
	if c == nil {
		return docCacheFile{}, false
	}
	f, ok := c.Files[p]
	return f, ok
}

// docFile is one source file of the tree.
type docFile struct {
	path string
	size int64
	sha  string
	// cached is the last clean run's outcome when the blob is the same and it parsed then:
	// the file is not downloaded again.
	cached *docCacheFile
}

// langRun is what one language of a repository did.
type langRun struct {
	lang    string
	files   []docFile
	items   int      // symbols written
	deleted int      // symbols that no longer parse out of their file
	symbols int      // symbols the files hold
	keep    []string // files whose rows stay: parsed with symbols, or failed
	failed  int      // files that failed to download or parse
	fetched int      // files downloaded
	// outcomes are the files' results, for the cache.
	outcomes map[string]docCacheFile
	err      error
}

// syncRepo syncs one entry: its tree, then each language. It returns the rows written and
// deleted, and the failed sources ({repo}:{language}, or the repo when its tree failed).
func (d *Docstrings) syncRepo(ctx context.Context, id string, e config.DocstringRepo, full bool, progress func(Progress)) (int, int, []SourceError) {
	branch := or(e.Branch, "main")
	var langs []string
	for _, l := range e.Languages {
		if _, ok := docLanguages[l]; ok && !slices.Contains(langs, l) {
			langs = append(langs, l)
		}
	}
	if len(e.Languages) == 0 {
		langs = []string{"matlab", "python"}
	}
	// Stored as the reference stores times (microseconds), so the cache can be matched
	// against sync_metadata.
	start := d.now().UTC().Truncate(time.Microsecond)
	var cache *docCache
	if !full {
		cache = d.loadCache(ctx, id, e.Repo, branch, langs)
	}
	etag := ""
	if cache != nil {
		etag = cache.ETag
	}
	tree, rate, err := d.tree(ctx, e.Repo, branch, etag, func(until time.Time) { progress(Progress{Source: e.Repo, Waiting: until}) })
	if err != nil {
		progress(Progress{Source: e.Repo, Done: true, Err: err, RateLimit: rate})
		return 0, 0, []SourceError{{Source: e.Repo, Err: err}}
	}
	if tree.notModified {
		tree = cache.tree()
	}
	complete := !tree.Truncated
	if tree.Truncated {
		d.log.Warn("docstrings sync: the tree listing is truncated; nothing is deleted", "community", id, "repo", e.Repo)
	}
	var runs []*langRun
	for _, lang := range langs {
		suffix := docLanguages[lang]
		r := &langRun{lang: lang, outcomes: map[string]docCacheFile{}}
		for _, t := range tree.Tree {
			if t.Type == "blob" && strings.HasSuffix(t.Path, suffix) && len(t.Path) <= 1024 {
				f := docFile{path: t.Path, size: t.Size, sha: t.SHA}
				if cf, ok := cache.file(t.Path); ok && cf.OK && cf.SHA == t.SHA && t.SHA != "" {
					f.cached = &cf
				}
				r.files = append(r.files, f)
			}
		}
		if len(r.files) > maxDocFiles {
			d.log.Warn("docstrings sync: too many files; the rest are not read and nothing is deleted", "community", id,
				"repo", e.Repo, "language", lang, "files", len(r.files), "limit", maxDocFiles)
			r.files = r.files[:maxDocFiles]
			complete = false
		}
		runs = append(runs, r)
	}
	var failed []SourceError
	items, deleted := 0, 0
	// One parser for the repository: the Python extractor's time budget is the repository's,
	// over all its chunks of files.
	py := d.python
	if s, ok := py.(pythonSessions); ok {
		py = s.session()
	}
	for _, r := range runs {
		name := e.Repo + ":" + r.lang
		r.err = d.syncLanguage(ctx, id, e.Repo, branch, py, r, func(p Progress) { p.Source = name; p.RateLimit = rate; progress(p) })
		items += r.items
		deleted += r.deleted
		if r.err != nil {
			failed = append(failed, SourceError{Source: name, Err: r.err})
			if ctx.Err() != nil {
				return items, deleted, failed
			}
		}
	}
	// One transaction: the deletions and each clean language's sync_metadata row.
	var keep []string
	for _, r := range runs {
		if r.err != nil { // a language that failed keeps all its rows
			for _, f := range r.files {
				keep = append(keep, f.path)
			}
			continue
		}
		keep = append(keep, r.keep...)
	}
	gone, err := updateCounted(ctx, d.store, id, func(tx *knowledge.Tx) (int, error) {
		n := 0
		if complete {
			var err error
			if n, err = tx.DeleteDocstringsExcept(e.Repo, keep); err != nil {
				return n, err
			}
		}
		for _, r := range runs {
			if r.err == nil {
				if err := tx.SetSyncMeta(knowledge.SyncMeta{SourceType: TypeDocstrings, SourceName: e.Repo + ":" + r.lang,
					LastSyncAt: start, Items: r.symbols}); err != nil {
					return n, err
				}
			}
		}
		return n, nil
	})
	if err != nil {
		failed = append(failed, SourceError{Source: e.Repo, Err: err})
	}
	for _, r := range runs {
		progress(Progress{Source: e.Repo + ":" + r.lang, Items: r.items, RateLimit: rate, Done: true, Err: r.err})
	}
	if len(failed) > 0 {
		d.dropCache(id, e.Repo, branch)
		return items, deleted + gone, failed
	}
	next := &docCache{Repo: e.Repo, Branch: branch, Languages: langs, ETag: tree.etag, SyncedAt: start, Truncated: tree.Truncated,
		Files: map[string]docCacheFile{}}
	for _, r := range runs {
		for p, o := range r.outcomes {
			next.Files[p] = o
		}
	}
	d.saveCache(id, next)
	return items, deleted + gone, failed
}

// tree fetches the branch's recursive tree, conditionally when etag is known (a 304 is
// notModified); an empty repository (409) has an empty one.
func (d *Docstrings) tree(ctx context.Context, repo, branch, etag string, waiting func(time.Time)) (*gitTree, string, error) {
	h := http.Header{}
	h.Set("Accept", "application/vnd.github+json")
	h.Set("X-GitHub-Api-Version", "2022-11-28")
	if d.token != "" {
		h.Set("Authorization", "Bearer "+d.token)
	}
	if etag != "" {
		h.Set("If-None-Match", etag)
	}
	u := d.apiURL + "/repos/" + escapePath(repo) + "/git/trees/" + escapePath(branch) + "?recursive=1"
	resp, err := d.api.get(ctx, apiCall{url: u, header: h, max: maxTreeBytes, ok: []int{http.StatusConflict, http.StatusNotModified}, waiting: waiting})
	if err != nil {
		return nil, "", err
	}
	rate := ""
	if rs, ok := parseRate(resp.header); ok {
		rate = rs.String()
		if rs.remaining < 10 {
			d.log.Warn("docstrings sync: the GitHub rate limit is nearly used up", "repo", repo, "rate_limit", rate)
		}
	}
	t := gitTree{etag: resp.header.Get("ETag")}
	switch resp.status {
	case http.StatusConflict:
		return &t, rate, nil // "Git Repository is empty."
	case http.StatusNotModified:
		if etag == "" {
			return nil, rate, fmt.Errorf("%s: 304 to a request that was not conditional", redactURL(u))
		}
		t.notModified = true
		return &t, rate, nil
	}
	if err := json.Unmarshal(resp.body, &t); err != nil {
		return nil, rate, fmt.Errorf("%s: not a git tree: %v", redactURL(u), err)
	}
	// A 200 without a tree ({} from a proxy, {"message":…}) is not an empty tree: taken as one,
	// every symbol of the repository would be deleted. json leaves Tree nil unless the answer
	// has a list there ([] is an empty, non-nil one).
	if t.SHA == "" || t.Tree == nil {
		msg := "no sha or tree"
		if m := errMessage(resp.body); m != "" {
			msg = m
		}
		return nil, rate, fmt.Errorf("%s: not a git tree: %s", redactURL(u), msg)
	}
	return &t, rate, nil
}

// escapePath escapes each segment of an owner/name, a branch or a file path, keeping "/".
func escapePath(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		parts[i] = url.PathEscape(s)
	}
	return strings.Join(parts, "/")
}

// syncLanguage downloads, parses and stores r's files chunk by chunk.
func (d *Docstrings) syncLanguage(ctx context.Context, id, repo, branch string, py PythonParser, r *langRun, progress func(Progress)) error {
	if r.lang == "python" && py == nil && len(r.files) > 0 {
		return errors.New("no Python engine to parse Python files with")
	}
	pages := 0
	for files := r.files; len(files) > 0; {
		n, size := 0, int64(0)
		for n < len(files) && n < docChunkFiles && (n == 0 || size+min(files[n].size, maxSourceFileBytes) <= docChunkBytes) {
			size += min(files[n].size, maxSourceFileBytes)
			n++
		}
		chunk := files[:n]
		files = files[n:]
		// Files whose blob is the one that parsed last time keep their rows as they are.
		chunk = slices.DeleteFunc(slices.Clone(chunk), func(f docFile) bool {
			if f.cached == nil {
				return false
			}
			if f.cached.Symbols > 0 {
				r.keep = append(r.keep, f.path)
			}
			r.symbols += f.cached.Symbols
			r.outcomes[f.path] = *f.cached
			return true
		})
		if len(chunk) == 0 {
			continue
		}
		r.fetched += len(chunk)
		contents := d.download(ctx, repo, branch, chunk)
		if err := ctx.Err(); err != nil {
			return err
		}
		parsed, err := d.parse(ctx, py, r.lang, contents)
		if err != nil {
			return err
		}
		var recs []knowledge.Docstring
		perFile := map[string][]string{}
		for _, f := range chunk {
			c := contents[f.path]
			p, ok := parsed[f.path]
			if c.err != nil || !ok || p.Failed != "" {
				why := "not parsed"
				if c.err != nil {
					why = c.err.Error()
				} else if ok {
					why = p.Failed
				}
				r.failed++
				r.keep = append(r.keep, f.path)
				r.outcomes[f.path] = docCacheFile{SHA: f.sha, Size: f.size}
				if r.failed <= 10 {
					d.log.Warn("docstrings sync: file skipped", "community", id, "repo", repo, "file", f.path, "error", why)
				}
				continue
			}
			r.outcomes[f.path] = docCacheFile{SHA: f.sha, Size: f.size, OK: true, Symbols: len(p.Symbols)}
			if len(p.Symbols) == 0 {
				continue
			}
			r.keep = append(r.keep, f.path)
			for _, s := range p.Symbols {
				perFile[f.path] = append(perFile[f.path], s.Name)
				recs = append(recs, knowledge.Docstring{Repo: repo, FilePath: f.path, Language: r.lang, Symbol: s.Name,
					SymbolType: s.Type, Docstring: s.Docstring, Line: s.Line, Branch: branch})
			}
		}
		deleted := 0
		n, err = updateCounted(ctx, d.store, id, func(tx *knowledge.Tx) (int, error) {
			deleted = 0
			n, err := tx.UpsertDocstrings(recs)
			if err != nil {
				return n, err
			}
			for file, names := range perFile {
				k, err := tx.DeleteDocstringSymbolsExcept(repo, file, names)
				if err != nil {
					return n, err
				}
				deleted += k
			}
			return n, nil
		})
		if err != nil {
			return err
		}
		r.items += n
		r.deleted += deleted
		r.symbols += len(recs)
		pages++
		progress(Progress{Items: r.items, Pages: pages})
	}
	if r.failed > 10 {
		d.log.Warn("docstrings sync: files skipped", "community", id, "repo", repo, "language", r.lang, "files", r.failed)
	}
	return nil
}

// fileContent is a downloaded file or why it could not be.
type fileContent struct {
	data []byte
	err  error
}

// download fetches the chunk's files from the raw host, rawFetches at a time.
func (d *Docstrings) download(ctx context.Context, repo, branch string, chunk []docFile) map[string]fileContent {
	out := make(map[string]fileContent, len(chunk))
	var mu sync.Mutex
	var wg sync.WaitGroup
	slots := make(chan struct{}, rawFetches)
	for _, f := range chunk {
		if f.size > maxSourceFileBytes {
			mu.Lock() // the downloads under way write to out too
			out[f.path] = fileContent{err: &TooLargeError{URL: f.path, Limit: maxSourceFileBytes}}
			mu.Unlock()
			continue
		}
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			u := d.rawURL + "/" + escapePath(repo) + "/" + escapePath(branch) + "/" + escapePath(f.path)
			resp, err := d.api.get(ctx, apiCall{url: u, max: maxSourceFileBytes})
			c := fileContent{err: err}
			if err == nil {
				c.data = resp.body
			}
			mu.Lock()
			out[f.path] = c
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// parse parses the downloaded files of one language, Python with py.
func (d *Docstrings) parse(ctx context.Context, py PythonParser, lang string, contents map[string]fileContent) (map[string]PyFile, error) {
	files := map[string][]byte{}
	for p, c := range contents {
		if c.err == nil {
			files[p] = c.data
		}
	}
	if len(files) == 0 {
		return map[string]PyFile{}, nil
	}
	if lang == "matlab" {
		out := make(map[string]PyFile, len(files))
		for p, b := range files {
			var f PyFile
			for _, s := range ParseMatlab(p, b) {
				f.Symbols = append(f.Symbols, PySymbol(s))
			}
			out[p] = f
		}
		return out, nil
	}
	parsed, err := py.Docstrings(ctx, files)
	if err != nil {
		return nil, fmt.Errorf("parsing Python: %w", err)
	}
	module := func(p string) string { return strings.TrimSuffix(path.Base(p), path.Ext(p)) }
	for p, f := range parsed {
		// The module's symbol is named after its file; same-named symbols share a row, the
		// first in the file kept.
		seen := map[string]bool{}
		syms := f.Symbols[:0:0]
		for _, s := range f.Symbols {
			if s.Type == "module" {
				s.Name = module(p)
			}
			if s.Name == "" || seen[s.Name] {
				continue
			}
			seen[s.Name] = true
			syms = append(syms, s)
		}
		f.Symbols = syms
		parsed[p] = f
	}
	return parsed, nil
}
