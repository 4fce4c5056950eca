// Package ingesttest holds local servers that play the outside APIs the ingest package syncs
// from, speaking their real wire formats with payloads written from each API's documentation:
// the GitHub REST API (issues listing, Link pagination, ETags, rate-limit headers), a
// Discourse forum's JSON API and a Mailman 2 pipermail archive, among others. Each counts the
// requests it answers and lets a test change an item between two syncs.
package ingesttest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Issue is one issue or pull request of a fake repository.
type Issue struct {
	Number int
	Title  string
	Body   string
	// State is "open" or "closed".
	State string
	// PR makes it a pull request; Merged sets its pull_request.merged_at.
	PR, Merged bool
	User       string
	Labels     []string
	// CreatedAt and UpdatedAt default to the server's clock when the issue is added.
	CreatedAt, UpdatedAt time.Time
}

// GitHubRequest is one request the fake answered.
type GitHubRequest struct {
	Path, Query string
	Status      int
	// IfNoneMatch is the conditional request's ETag, Auth the Authorization header.
	IfNoneMatch, Auth  string
	Accept, APIVersion string
}

// GitHubReply is a queued answer: the next request to a listing gets it instead.
type GitHubReply struct {
	Status int
	Header map[string]string
	Body   string
}

// GitHub is a fake GitHub REST API (v3) serving GET /repos/{owner}/{repo}/issues and, as the
// real one links to, GET /repositories/{id}/issues: state, sort (created, updated), direction,
// since, per_page (at most 100) and page; Link headers with next, last, first and prev;
// weak ETags digesting the answer and If-None-Match answered 304 without using the rate
// limit; X-RateLimit-* headers and a 403 once the limit is used up, reset an hour later.
type GitHub struct {
	// URL is the API's base URL.
	URL string
	// Fallback, when set before requests arrive, answers the paths this fake does not serve
	// (the git trees API of another fake, say), so one API URL plays both.
	Fallback http.Handler
	srv      *httptest.Server

	mu        sync.Mutex
	now       func() time.Time
	token     string
	repos     map[string]*ghRepo // by lower-cased owner/name
	byID      map[int64]*ghRepo
	limit     int
	remaining int
	reset     time.Time
	requests  []GitHubRequest
	queued    []GitHubReply
}

type ghRepo struct {
	id     int64
	name   string
	issues map[int]*Issue
}

// NewGitHub starts a fake GitHub API, closed when the test ends. Its clock is time.Now, its
// rate limit 5,000 requests an hour.
func NewGitHub(tb testing.TB) *GitHub {
	g := &GitHub{now: time.Now, repos: map[string]*ghRepo{}, byID: map[int64]*ghRepo{}, limit: 5000, remaining: 5000}
	g.srv = httptest.NewServer(http.HandlerFunc(g.serve))
	g.URL = g.srv.URL
	tb.Cleanup(g.srv.Close)
	return g
}

// SetClock makes now the server's clock (issue times, since, the rate limit's reset).
func (g *GitHub) SetClock(now func() time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.now = now
	g.reset = time.Time{}
}

// SetToken makes the server require "Authorization: Bearer {token}" (401 otherwise).
func (g *GitHub) SetToken(token string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.token = token
}

// SetRateLimit sets the limit, what is left of it and when it resets.
func (g *GitHub) SetRateLimit(limit, remaining int, reset time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.limit, g.remaining, g.reset = limit, remaining, reset
}

// Queue makes the next listing requests get these answers, in order, before any other check.
func (g *GitHub) Queue(replies ...GitHubReply) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.queued = append(g.queued, replies...)
}

// Add adds issues to repo ("owner/name", created if new). Zero times become the clock's now.
func (g *GitHub) Add(repo string, issues ...Issue) {
	g.mu.Lock()
	defer g.mu.Unlock()
	r := g.repo(repo)
	now := g.now().UTC().Truncate(time.Second)
	for _, is := range issues {
		is := is
		if is.CreatedAt.IsZero() {
			is.CreatedAt = now
		}
		if is.UpdatedAt.IsZero() {
			is.UpdatedAt = is.CreatedAt
		}
		if is.State == "" {
			is.State = "open"
		}
		if is.User == "" {
			is.User = "octocat"
		}
		r.issues[is.Number] = &is
	}
}

// Change applies fn to an issue and marks it updated now, as an edit on GitHub does.
func (g *GitHub) Change(repo string, number int, fn func(*Issue)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	is := g.repo(repo).issues[number]
	if is == nil {
		panic(fmt.Sprintf("ingesttest: %s has no issue %d", repo, number))
	}
	fn(is)
	is.UpdatedAt = g.now().UTC().Truncate(time.Second)
}

// Remove deletes an issue (GitHub deletes or transfers them): listings no longer have it.
func (g *GitHub) Remove(repo string, number int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.repo(repo).issues, number)
}

// Requests returns the requests answered so far.
func (g *GitHub) Requests() []GitHubRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.requests)
}

// Count returns how many requests were answered with status (0: all of them).
func (g *GitHub) Count(status int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := 0
	for _, r := range g.requests {
		if status == 0 || r.Status == status {
			n++
		}
	}
	return n
}

// ResetRequests forgets the requests answered so far.
func (g *GitHub) ResetRequests() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.requests = nil
}

func (g *GitHub) repo(name string) *ghRepo {
	key := strings.ToLower(name)
	r := g.repos[key]
	if r == nil {
		r = &ghRepo{id: int64(1296269 + len(g.repos)), name: name, issues: map[int]*Issue{}}
		g.repos[key] = r
		g.byID[r.id] = r
	}
	return r
}

// origin is the scheme and host the request reached, so the links the fake writes point
// back at it however it is mounted.
func origin(req *http.Request) string {
	if req.TLS != nil {
		return "https://" + req.Host
	}
	return "http://" + req.Host
}

// ServeHTTP answers as the fake API, so a test can mount it in a server of its own (beside
// another fake's routes under one API URL).
func (g *GitHub) ServeHTTP(w http.ResponseWriter, req *http.Request) { g.serve(w, req) }

func (g *GitHub) serve(w http.ResponseWriter, req *http.Request) {
	g.mu.Lock()
	fallback := g.Fallback
	if _, ok := g.route(req.URL.Path); !ok && fallback != nil {
		g.mu.Unlock()
		fallback.ServeHTTP(w, req)
		return
	}
	defer g.mu.Unlock()
	rec := GitHubRequest{
		Path: req.URL.Path, Query: req.URL.RawQuery,
		IfNoneMatch: req.Header.Get("If-None-Match"), Auth: req.Header.Get("Authorization"),
		Accept: req.Header.Get("Accept"), APIVersion: req.Header.Get("X-GitHub-Api-Version"),
	}
	status := g.answer(w, req)
	rec.Status = status
	g.requests = append(g.requests, rec)
}

// answer writes the response and returns its status.
func (g *GitHub) answer(w http.ResponseWriter, req *http.Request) int {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-GitHub-Media-Type", "github.v3; format=json")
	h.Set("X-GitHub-Request-Id", fmt.Sprintf("C0DE:%X:%X", len(g.requests), g.now().Unix()))
	if len(g.queued) > 0 {
		q := g.queued[0]
		g.queued = g.queued[1:]
		for k, v := range q.Header {
			h.Set(k, v)
		}
		w.WriteHeader(q.Status)
		w.Write([]byte(q.Body))
		return q.Status
	}
	if req.Method != http.MethodGet {
		return ghError(w, http.StatusNotFound, "Not Found")
	}
	if g.token != "" && req.Header.Get("Authorization") != "Bearer "+g.token {
		return ghError(w, http.StatusUnauthorized, "Bad credentials")
	}
	now := g.now()
	if g.reset.IsZero() || !now.Before(g.reset) {
		g.remaining = g.limit
		g.reset = now.Add(time.Hour).Truncate(time.Second)
	}
	g.rateHeaders(h)
	if g.remaining <= 0 {
		return ghError(w, http.StatusForbidden, "API rate limit exceeded for 127.0.0.1. (But here's the good news: Authenticated requests get a higher rate limit. Check out the documentation for more details.)")
	}

	r, ok := g.route(req.URL.Path)
	if !ok {
		return ghError(w, http.StatusNotFound, "Not Found")
	}
	q := req.URL.Query()
	var since time.Time
	if s := q.Get("since"); s != "" {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			return ghValidation(w, "since")
		}
		since = t
	}
	perPage := 30
	if s := q.Get("per_page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return ghValidation(w, "per_page")
		}
		perPage = min(n, 100)
	}
	page := 1
	if s := q.Get("page"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return ghValidation(w, "page")
		}
		page = n
	}
	state := q.Get("state")
	if state == "" {
		state = "open"
	}
	var list []*Issue
	for _, is := range r.issues {
		if (state == "all" || is.State == state) && !is.UpdatedAt.Before(since) {
			list = append(list, is)
		}
	}
	byUpdated := q.Get("sort") == "updated"
	asc := q.Get("direction") == "asc"
	slices.SortFunc(list, func(a, b *Issue) int {
		ta, tb := a.CreatedAt, b.CreatedAt
		if byUpdated {
			ta, tb = a.UpdatedAt, b.UpdatedAt
		}
		c := ta.Compare(tb)
		if c == 0 {
			c = a.Number - b.Number
		}
		if !asc {
			c = -c
		}
		return c
	})
	last := max((len(list)+perPage-1)/perPage, 1)
	from := min((page-1)*perPage, len(list))
	to := min(from+perPage, len(list))
	items := make([]map[string]any, 0, to-from)
	for _, is := range list[from:to] {
		items = append(items, g.issueJSON(req, r, is))
	}
	body, _ := json.Marshal(items)
	sum := sha256.Sum256(append(body, []byte("\x00"+req.Header.Get("Accept")+"\x00"+req.Header.Get("Authorization"))...))
	etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
	h.Set("ETag", etag)
	h.Set("Cache-Control", "private, max-age=60, s-maxage=60")
	h.Set("Vary", "Accept, Authorization, Cookie, X-GitHub-OTP")
	if inm := req.Header.Get("If-None-Match"); inm != "" && strings.TrimPrefix(inm, "W/") == strings.TrimPrefix(etag, "W/") {
		// A 304 does not count against the rate limit.
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	g.remaining--
	g.rateHeaders(h)
	if links := g.links(req, r, page, last); links != "" {
		h.Set("Link", links)
	}
	w.WriteHeader(http.StatusOK)
	w.Write(body)
	return http.StatusOK
}

// route finds the repository of /repos/{owner}/{repo}/issues or /repositories/{id}/issues.
func (g *GitHub) route(path string) (*ghRepo, bool) {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(parts) == 4 && parts[0] == "repos" && parts[3] == "issues":
		r, ok := g.repos[strings.ToLower(parts[1]+"/"+parts[2])]
		return r, ok
	case len(parts) == 3 && parts[0] == "repositories" && parts[2] == "issues":
		id, err := strconv.ParseInt(parts[1], 10, 64)
		if err != nil {
			return nil, false
		}
		r, ok := g.byID[id]
		return r, ok
	}
	return nil, false
}

func (g *GitHub) rateHeaders(h http.Header) {
	h.Set("X-RateLimit-Limit", strconv.Itoa(g.limit))
	h.Set("X-RateLimit-Remaining", strconv.Itoa(max(g.remaining, 0)))
	h.Set("X-RateLimit-Used", strconv.Itoa(g.limit-max(g.remaining, 0)))
	h.Set("X-RateLimit-Reset", strconv.FormatInt(g.reset.Unix(), 10))
	h.Set("X-RateLimit-Resource", "core")
}

// links writes the Link header as GitHub does: the repository by id, the request's query
// with page set.
func (g *GitHub) links(req *http.Request, r *ghRepo, page, last int) string {
	at := func(p int) string {
		q := req.URL.Query()
		q.Set("page", strconv.Itoa(p))
		return fmt.Sprintf("<%s/repositories/%d/issues?%s>", origin(req), r.id, q.Encode())
	}
	var parts []string
	if page > 1 {
		parts = append(parts, at(page-1)+`; rel="prev"`)
	}
	if page < last {
		parts = append(parts, at(page+1)+`; rel="next"`, at(last)+`; rel="last"`)
	}
	if page > 1 {
		parts = append(parts, at(1)+`; rel="first"`)
	}
	return strings.Join(parts, ", ")
}

// issueJSON is the issue as the REST API writes it.
func (g *GitHub) issueJSON(req *http.Request, r *ghRepo, is *Issue) map[string]any {
	api := fmt.Sprintf("%s/repos/%s", origin(req), r.name)
	web := "https://github.com/" + r.name
	kind := "issues"
	if is.PR {
		kind = "pull"
	}
	user := map[string]any{
		"login": is.User, "id": 583231, "node_id": "MDQ6VXNlcjU4MzIzMQ==",
		"avatar_url": "https://avatars.githubusercontent.com/u/583231?v=4", "gravatar_id": "",
		"url": origin(req) + "/users/" + url.PathEscape(is.User), "html_url": "https://github.com/" + url.PathEscape(is.User),
		"type": "User", "site_admin": false,
	}
	labels := []map[string]any{}
	for i, l := range is.Labels {
		labels = append(labels, map[string]any{
			"id": 208045946 + i, "node_id": "MDU6TGFiZWwyMDgwNDU5NDY=", "url": api + "/labels/" + url.PathEscape(l),
			"name": l, "color": "d73a4a", "default": false, "description": "",
		})
	}
	var closedAt any
	stateReason := any(nil)
	if is.State == "closed" {
		closedAt = is.UpdatedAt.UTC().Format(time.RFC3339)
		stateReason = "completed"
	}
	m := map[string]any{
		"url":                fmt.Sprintf("%s/issues/%d", api, is.Number),
		"repository_url":     api,
		"labels_url":         fmt.Sprintf("%s/issues/%d/labels{/name}", api, is.Number),
		"comments_url":       fmt.Sprintf("%s/issues/%d/comments", api, is.Number),
		"events_url":         fmt.Sprintf("%s/issues/%d/events", api, is.Number),
		"html_url":           fmt.Sprintf("%s/%s/%d", web, kind, is.Number),
		"id":                 r.id*1000 + int64(is.Number),
		"node_id":            "I_kwDOABII585" + strconv.Itoa(is.Number),
		"number":             is.Number,
		"title":              is.Title,
		"user":               user,
		"labels":             labels,
		"state":              is.State,
		"locked":             false,
		"assignee":           nil,
		"assignees":          []any{},
		"milestone":          nil,
		"comments":           0,
		"created_at":         is.CreatedAt.UTC().Format(time.RFC3339),
		"updated_at":         is.UpdatedAt.UTC().Format(time.RFC3339),
		"closed_at":          closedAt,
		"author_association": "CONTRIBUTOR",
		"active_lock_reason": nil,
		"body":               ghNullable(is.Body),
		"reactions": map[string]any{
			"url": fmt.Sprintf("%s/issues/%d/reactions", api, is.Number), "total_count": 0,
			"+1": 0, "-1": 0, "laugh": 0, "hooray": 0, "confused": 0, "heart": 0, "rocket": 0, "eyes": 0,
		},
		"timeline_url":             fmt.Sprintf("%s/issues/%d/timeline", api, is.Number),
		"performed_via_github_app": nil,
		"state_reason":             stateReason,
	}
	if is.PR {
		var merged any
		if is.Merged {
			merged = is.UpdatedAt.UTC().Format(time.RFC3339)
		}
		m["draft"] = false
		m["state_reason"] = nil
		m["pull_request"] = map[string]any{
			"url":       fmt.Sprintf("%s/pulls/%d", api, is.Number),
			"html_url":  fmt.Sprintf("%s/pull/%d", web, is.Number),
			"diff_url":  fmt.Sprintf("%s/pull/%d.diff", web, is.Number),
			"patch_url": fmt.Sprintf("%s/pull/%d.patch", web, is.Number),
			"merged_at": merged,
		}
	}
	return m
}

func ghNullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func ghError(w http.ResponseWriter, status int, msg string) int {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"message":           msg,
		"documentation_url": "https://docs.github.com/rest",
		"status":            strconv.Itoa(status),
	})
	return status
}

func ghValidation(w http.ResponseWriter, field string) int {
	w.WriteHeader(http.StatusUnprocessableEntity)
	json.NewEncoder(w).Encode(map[string]any{
		"message":           "Validation Failed",
		"errors":            []map[string]any{{"resource": "Issue", "field": field, "code": "invalid"}},
		"documentation_url": "https://docs.github.com/rest/issues/issues#list-repository-issues",
		"status":            "422",
	})
	return http.StatusUnprocessableEntity
}
