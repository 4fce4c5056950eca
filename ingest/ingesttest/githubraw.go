package ingesttest

import (
	"crypto/sha1"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TreeRequest is one request a GitHubTrees server answered.
type TreeRequest struct {
	// Host is "api" or "raw".
	Host   string
	Path   string
	Status int
	Auth   string
	Accept string
}

// GitHubTrees is a fake of the two GitHub hosts the docstrings source reads: the REST API's
// GET /repos/{owner}/{repo}/git/trees/{branch}?recursive=1 (blobs with their git blob SHA-1
// and size, the directories as tree entries, truncated when asked; a weak ETag digesting the
// tree and If-None-Match answered 304 without using the rate limit; 404 for an unknown repo
// or branch, 409 for an empty repository; X-RateLimit-* headers and a 403 once the limit is
// used up) at APIURL, and raw files at RawURL/{owner}/{repo}/{branch}/{path} (text/plain, 404
// "404: Not Found").
type GitHubTrees struct {
	APIURL, RawURL string
	api, raw       *httptest.Server

	mu        sync.Mutex
	repos     map[string]map[string]map[string]string // repo → branch → path → content
	truncated bool
	failRaw   map[string]int // path → status
	limit     int
	remaining int
	reset     time.Time
	requests  []TreeRequest
	queued    cannedQueue
}

// NewGitHubTrees starts the fake API and raw hosts, closed when the test ends.
func NewGitHubTrees(tb testing.TB) *GitHubTrees {
	g := &GitHubTrees{repos: map[string]map[string]map[string]string{}, failRaw: map[string]int{},
		limit: 5000, remaining: 5000, reset: time.Now().Add(time.Hour)}
	g.api = httptest.NewServer(http.HandlerFunc(g.serveAPI))
	g.raw = httptest.NewServer(http.HandlerFunc(g.serveRaw))
	g.APIURL, g.RawURL = g.api.URL, g.raw.URL
	tb.Cleanup(g.api.Close)
	tb.Cleanup(g.raw.Close)
	return g
}

// SetFile adds or changes a file of a repository's branch (creating both).
func (g *GitHubTrees) SetFile(repo, branch, file, content string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.repos[repo] == nil {
		g.repos[repo] = map[string]map[string]string{}
	}
	if g.repos[repo][branch] == nil {
		g.repos[repo][branch] = map[string]string{}
	}
	g.repos[repo][branch][file] = content
}

// EmptyRepo adds a repository without commits (its tree is a 409).
func (g *GitHubTrees) EmptyRepo(repo string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.repos[repo] = map[string]map[string]string{}
}

// RemoveFile removes a file.
func (g *GitHubTrees) RemoveFile(repo, branch, file string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.repos[repo][branch], file)
}

// SetTruncated makes tree listings say truncated: true.
func (g *GitHubTrees) SetTruncated(t bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.truncated = t
}

// FailRaw makes the raw host answer status for file (any repository); 0 serves it again.
func (g *GitHubTrees) FailRaw(file string, status int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if status == 0 {
		delete(g.failRaw, file)
		return
	}
	g.failRaw[file] = status
}

// SetRateLimit sets the API's limit, what is left of it and when it resets.
func (g *GitHubTrees) SetRateLimit(limit, remaining int, reset time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit, g.remaining, g.reset = limit, remaining, reset
}

// Queue makes the next API requests get these answers, in order.
func (g *GitHubTrees) Queue(replies ...CannedReply) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queued = append(g.queued, replies...)
}

// Requests returns the requests both hosts answered so far.
func (g *GitHubTrees) Requests() []TreeRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

// Count counts the requests answered so far by host ("api" or "raw").
func (g *GitHubTrees) Count(host string) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.requests {
		if r.Host == host {
			n++
		}
	}
	return n
}

// ResetRequests forgets the requests answered so far.
func (g *GitHubTrees) ResetRequests() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = nil
}

func ghJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func (g *GitHubTrees) serveAPI(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rec := TreeRequest{Host: "api", Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Accept: r.Header.Get("Accept")}
	defer func() { g.requests = append(g.requests, rec) }()
	if status, ok := g.queued.serveNext(w, "application/json; charset=utf-8"); ok {
		rec.Status = status
		return
	}
	h := w.Header()
	if tag := r.Header.Get("If-None-Match"); tag != "" && tag == g.treeTag(r.URL.Path) {
		// Conditional requests answered 304 do not count against the rate limit.
		g.rateHeaders(h)
		h.Set("ETag", tag)
		rec.Status = http.StatusNotModified
		w.WriteHeader(rec.Status)
		return
	}
	if g.remaining <= 0 {
		g.rateHeaders(h)
		rec.Status = http.StatusForbidden
		ghJSON(w, rec.Status, map[string]any{"message": "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)",
			"documentation_url": "https://docs.github.com/rest/overview/resources-in-the-rest-api#rate-limiting"})
		return
	}
	g.remaining--
	g.rateHeaders(h)
	notFound := map[string]any{"message": "Not Found", "documentation_url": "https://docs.github.com/rest/git/trees#get-a-tree", "status": "404"}
	rest, ok := strings.CutPrefix(r.URL.Path, "/repos/")
	parts := strings.SplitN(rest, "/", 5)
	if !ok || len(parts) < 5 || parts[2] != "git" || parts[3] != "trees" {
		rec.Status = http.StatusNotFound
		ghJSON(w, rec.Status, notFound)
		return
	}
	repo, branch := parts[0]+"/"+parts[1], parts[4]
	branches, ok := g.repos[repo]
	if ok && len(branches) == 0 {
		rec.Status = http.StatusConflict
		ghJSON(w, rec.Status, map[string]any{"message": "Git Repository is empty.", "documentation_url": "https://docs.github.com/rest/git/trees#get-a-tree", "status": "409"})
		return
	}
	files, ok := branches[branch]
	if !ok {
		rec.Status = http.StatusNotFound
		ghJSON(w, rec.Status, notFound)
		return
	}
	base := "https://api.github.com/repos/" + repo + "/git"
	var entries []map[string]any
	dirs := map[string]bool{}
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	for _, p := range paths {
		if r.URL.Query().Get("recursive") != "" {
			for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
				dirs[d] = true
				sum := sha1.Sum([]byte("tree " + d))
				entries = append(entries, map[string]any{"path": d, "mode": "040000", "type": "tree",
					"sha": hex.EncodeToString(sum[:]), "url": base + "/trees/" + hex.EncodeToString(sum[:])})
			}
		} else if strings.Contains(p, "/") {
			continue
		}
		sha := blobSHA(files[p])
		entries = append(entries, map[string]any{"path": p, "mode": "100644", "type": "blob", "sha": sha,
			"size": len(files[p]), "url": base + "/blobs/" + sha})
	}
	slices.SortStableFunc(entries, func(a, b map[string]any) int { return strings.Compare(a["path"].(string), b["path"].(string)) })
	top := g.treeSHA(files)
	h.Set("ETag", `W/"`+top+`"`)
	rec.Status = http.StatusOK
	ghJSON(w, rec.Status, map[string]any{"sha": top, "url": base + "/trees/" + top, "tree": entries, "truncated": g.truncated})
}

// treeSHA digests a branch's files (paths and contents) and the truncated flag.
func (g *GitHubTrees) treeSHA(files map[string]string) string {
	paths := make([]string, 0, len(files))
	for p := range files {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	h := sha1.New()
	for _, p := range paths {
		fmt.Fprintf(h, "%s %s\n", p, blobSHA(files[p]))
	}
	fmt.Fprintf(h, "truncated=%v", g.truncated)
	return hex.EncodeToString(h.Sum(nil))
}

// treeTag is the ETag a tree request's path would get now, or "".
func (g *GitHubTrees) treeTag(urlPath string) string {
	rest, _ := strings.CutPrefix(urlPath, "/repos/")
	parts := strings.SplitN(rest, "/", 5)
	if len(parts) < 5 {
		return ""
	}
	files, ok := g.repos[parts[0]+"/"+parts[1]][parts[4]]
	if !ok {
		return ""
	}
	return `W/"` + g.treeSHA(files) + `"`
}

// blobSHA is git's object id of a blob with that content.
func blobSHA(content string) string {
	sum := sha1.Sum([]byte("blob " + strconv.Itoa(len(content)) + "\x00" + content))
	return hex.EncodeToString(sum[:])
}

func (g *GitHubTrees) rateHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(g.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(g.remaining, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(g.limit-max(g.remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(g.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

func (g *GitHubTrees) serveRaw(w http.ResponseWriter, r *http.Request) {
	g.mu.Lock()
	defer g.mu.Unlock()
	rec := TreeRequest{Host: "raw", Path: r.URL.Path, Auth: r.Header.Get("Authorization")}
	defer func() { g.requests = append(g.requests, rec) }()
	parts := strings.SplitN(strings.TrimPrefix(r.URL.Path, "/"), "/", 4)
	content, ok := "", false
	if len(parts) == 4 {
		p := parts[3]
		if st, bad := g.failRaw[p]; bad {
			rec.Status = st
			w.WriteHeader(st)
			fmt.Fprintf(w, "%d: %s", st, http.StatusText(st))
			return
		}
		content, ok = g.repos[parts[0]+"/"+parts[1]][parts[2]][p]
	}
	if !ok {
		rec.Status = http.StatusNotFound
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.WriteHeader(rec.Status)
		fmt.Fprint(w, "404: Not Found")
		return
	}
	rec.Status = http.StatusOK
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("ETag", `"`+blobSHA(content)+`"`)
	fmt.Fprint(w, content)
}
