package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// DefaultGitHubAPIURL is the GitHub REST API (ASSISTANT_GITHUB_API_URL overrides it).
const DefaultGitHubAPIURL = "https://api.github.com"

// The GitHub sync's bounds (knowledge.md §6.3).
const (
	githubPerPage = 100
	// githubMaxPages bounds one listing (500,000 items, past the largest repositories).
	githubMaxPages = 5000
	// githubMaxPageBytes bounds one page as it is read: 100 items of GitHub's largest bodies
	// (65,536 characters) fit, anything past it is not a listing.
	githubMaxPageBytes = 32 << 20
	// githubMaxItemsPerPage is what a page may hold before it is called broken (100 asked).
	githubMaxItemsPerPage = 1000
	githubSinceOverlap    = 5 * time.Minute
	githubFullEvery       = 30 * 24 * time.Hour
	githubMaxRateWait     = 15 * time.Minute
	githubLowRemaining    = 10
	// Titles are at most 256 characters on GitHub; the cap only guards the database.
	githubMaxTitle = 1000
	// A body is cleaned of HTML from at most this many characters, then capped at 5,000.
	githubMaxBodyInput = 20000
	githubMaxBody      = 5000
	githubMaxURL       = 2000
	// githubMaxTagPages bounds the ETags kept in memory over all listings.
	githubMaxTagPages = 50000
)

// Sync metadata types of the GitHub sync (§2.2).
const (
	metaGitHub     = "github"
	metaGitHubFull = "github_full"
)

// GitHubOptions are a GitHub source's dependencies.
type GitHubOptions struct {
	Store *knowledge.Store
	// Client reaches the API, a trusted host; nil is a plain client with a 30 s timeout.
	Client *http.Client
	// BaseURL is the API's root, DefaultGitHubAPIURL when empty.
	BaseURL string
	// Token is GITHUB_TOKEN, sent as a Bearer token when set.
	Token string
	// Now and Sleep are the source's clock (time.Now and a context-aware sleep when nil).
	Now    func() time.Time
	Sleep  func(ctx context.Context, d time.Duration) error
	Logger *slog.Logger
}

// GitHub syncs the issues and pull requests of a community's github.repos into github_items
// (knowledge.md §6.3 as the issue improves it): one listing per repository sorted by update,
// only what changed since the last clean listing (less 5 minutes), stored rows updated, a
// full listing (first sync, Full, or the last full one over 30 days old) deleting what it no
// longer lists, pages asked for conditionally with the ETag GitHub gave them, and the rate
// limit waited for when its reset is at most 15 minutes away.
type GitHub struct {
	store  *knowledge.Store
	client *http.Client
	base   *url.URL
	token  string
	clk    clock
	log    *slog.Logger

	mu sync.Mutex
	// tags holds, per listing (community, repo, full or not), each page's ETag from the last
	// listing that finished, so the next asks with If-None-Match.
	tags     map[string]map[int]githubPageTag
	tagPages int
}

// githubPageTag is what a page's ETag stands for: whether a next page followed it, and for
// full listings the items it listed (a 304 lists them again).
type githubPageTag struct {
	etag string
	next bool
	keys []knowledge.GitHubKey
}

// NewGitHub returns a GitHub source; an unparsable BaseURL is an error.
func NewGitHub(o GitHubOptions) (*GitHub, error) {
	if o.Store == nil {
		return nil, errors.New("ingest: NewGitHub needs a store")
	}
	raw := o.BaseURL
	if raw == "" {
		raw = DefaultGitHubAPIURL
	}
	base, err := url.Parse(strings.TrimRight(raw, "/"))
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("ingest: GitHub API URL %q: want an http or https URL", raw)
	}
	if o.Client == nil {
		o.Client = defaultClient()
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &GitHub{
		store: o.Store, client: o.Client, base: base, token: o.Token,
		clk: newClock(o.Now, o.Sleep), log: o.Logger,
		tags: map[string]map[int]githubPageTag{},
	}, nil
}

// Type is TypeGitHub.
func (g *GitHub) Type() string { return TypeGitHub }

// Has reports whether c names any repository.
func (g *GitHub) Has(c *config.Community) bool { return c.GitHub != nil && len(c.GitHub.Repos) > 0 }

// Sync lists every repository of c in turn. A repository that fails is named in
// Result.Failed and the others still run; the error then says how many failed.
func (g *GitHub) Sync(ctx context.Context, c *config.Community, opts RunOptions, progress func(Progress)) (Result, error) {
	var res Result
	if !g.Has(c) {
		return res, nil
	}
	if progress == nil {
		progress = func(Progress) {}
	}
	// A repository with no rows in the published database is listed in full even if its
	// sync_metadata says it synced: its rows were deleted when the config dropped it (or the
	// database lost them), and an incremental listing would never bring the old items back.
	present := map[string]bool{}
	if st, err := g.store.SyncStatus(ctx, c.ID); err == nil {
		for repo, rs := range st.Repos {
			present[repo] = rs.Items > 0
		}
	} else if ctx.Err() != nil {
		return res, ctx.Err()
	} else {
		present = nil // unreadable (logged by the store): rely on sync_metadata alone
	}
	for _, repo := range c.GitHub.Repos {
		// Nor are its pages asked conditionally: a 304 would say they are as stored.
		absent := present != nil && !present[repo]
		st, err := g.syncRepo(ctx, c.ID, repo, opts.Full || absent, !absent, progress)
		res.Items += st.items
		res.Deleted += st.deleted
		progress(Progress{Source: repo, Items: st.items, Pages: st.pages, RateLimit: st.rate.String(), Done: true, Err: err})
		if err != nil {
			res.Failed = append(res.Failed, SourceError{Source: repo, Err: err})
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
		}
	}
	// Rows of repositories the config no longer names go (§6.3); the config is the list.
	err := g.store.Update(ctx, c.ID, func(ctx context.Context, tx *knowledge.Tx) error {
		n, err := tx.DeleteGitHubReposExcept(c.GitHub.Repos)
		res.Deleted += n
		return err
	})
	if err != nil {
		return res, fmt.Errorf("github: %w", err)
	}
	if len(res.Failed) > 0 {
		return res, fmt.Errorf("github: %d of %d repositories failed: %s: %w", len(res.Failed), len(c.GitHub.Repos), res.Failed[0].Source, res.Failed[0].Err)
	}
	return res, nil
}

// githubRun is what one repository's sync did.
type githubRun struct {
	items, deleted, pages int
	rate                  rateState
}

// syncRepo runs one repository's listing.
func (g *GitHub) syncRepo(ctx context.Context, id, repo string, forceFull, conditional bool, progress func(Progress)) (githubRun, error) {
	var st githubRun
	owner, name, ok := strings.Cut(repo, "/")
	if !ok || owner == "" || name == "" || strings.Contains(name, "/") {
		return st, fmt.Errorf("repository %q is not owner/name", repo)
	}
	var meta, fullMeta knowledge.SyncMeta
	var have, haveFull bool
	err := g.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
		var err error
		if meta, have, err = tx.SyncMeta(metaGitHub, repo); err != nil {
			return err
		}
		fullMeta, haveFull, err = tx.SyncMeta(metaGitHubFull, repo)
		return err
	})
	if err != nil {
		return st, err
	}
	start := g.clk.now()
	full := forceFull || !have || !haveFull || start.Sub(fullMeta.LastSyncAt) > githubFullEvery
	var since time.Time
	if !full {
		since = meta.LastSyncAt.Add(-githubSinceOverlap)
	}

	mode := "inc"
	if full {
		mode = "full"
	}
	tagKey := id + "\x00" + repo + "\x00" + mode
	var old map[int]githubPageTag
	if conditional {
		old = g.pageTags(tagKey)
	}
	fresh := map[int]githubPageTag{}
	var listed []knowledge.GitHubKey
	warned := false
	next := g.listURL(owner, name, since)
	for page := 1; next != ""; page++ {
		if page > githubMaxPages {
			return st, fmt.Errorf("listing of %s has more than %d pages", repo, githubMaxPages)
		}
		report := func(waiting time.Time) {
			progress(Progress{Source: repo, Items: st.items, Pages: st.pages, RateLimit: st.rate.String(), Waiting: waiting})
		}
		pg, err := g.fetchPage(ctx, repo, next, old[page], full, &st.rate, report)
		if err != nil {
			return st, err
		}
		st.pages++
		if pg.notModified {
			// The page is what it was (GitHub's ETag is a digest of the answer): nothing to
			// store, and a full listing lists the items it held then.
			tag := old[page]
			fresh[page] = tag
			listed = append(listed, tag.keys...)
			next = ""
			if pg.next != "" {
				next = pg.next
			} else if tag.next {
				next = withPage(pg.url, page+1)
			}
		} else {
			if len(pg.items) > 0 {
				err := g.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
					n, err := tx.UpsertGitHubItems(pg.items)
					st.items += n
					return err
				})
				if err != nil {
					return st, err
				}
			}
			keys := make([]knowledge.GitHubKey, len(pg.items))
			for i, it := range pg.items {
				keys[i] = knowledge.GitHubKey{Type: it.Type, Number: it.Number}
			}
			listed = append(listed, keys...)
			if pg.etag != "" {
				tag := githubPageTag{etag: pg.etag, next: pg.next != ""}
				if full {
					tag.keys = keys
				}
				fresh[page] = tag
			}
			next = pg.next
		}
		if st.rate.known && st.rate.remaining < githubLowRemaining && !warned {
			warned = true
			g.log.Warn("github sync: rate limit nearly used", "community", id, "repo", repo, "remaining", st.rate.remaining, "limit", st.rate.limit, "reset", st.rate.reset.UTC().Format(time.RFC3339))
		}
		report(time.Time{})
		if next != "" && st.rate.known && st.rate.remaining == 0 {
			// The next request would be refused: wait for the reset, or stop and say so.
			if err := g.waitReset(ctx, st.rate.reset, report); err != nil {
				return st, err
			}
		}
	}

	err = g.store.Update(ctx, id, func(ctx context.Context, tx *knowledge.Tx) error {
		if full {
			n, err := tx.DeleteGitHubItemsExcept(repo, listed)
			if err != nil {
				return err
			}
			st.deleted = n
			if err := tx.SetSyncMeta(knowledge.SyncMeta{SourceType: metaGitHubFull, SourceName: repo, LastSyncAt: start, Items: len(listed)}); err != nil {
				return err
			}
		}
		return tx.SetSyncMeta(knowledge.SyncMeta{SourceType: metaGitHub, SourceName: repo, LastSyncAt: start, Items: st.items})
	})
	if err != nil {
		return st, err
	}
	g.setPageTags(tagKey, fresh)
	return st, nil
}

// listURL is the repository's issues listing (§6.3), since a time unless it is zero.
func (g *GitHub) listURL(owner, name string, since time.Time) string {
	u := *g.base
	u.Path = strings.TrimRight(u.Path, "/") + "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name) + "/issues"
	u.RawPath = ""
	q := url.Values{}
	q.Set("state", "all")
	q.Set("filter", "all")
	q.Set("sort", "updated")
	q.Set("direction", "asc")
	q.Set("per_page", strconv.Itoa(githubPerPage))
	if !since.IsZero() {
		q.Set("since", since.UTC().Format("2006-01-02T15:04:05Z"))
	}
	u.RawQuery = encodeQuery(q, "state", "filter", "sort", "direction", "per_page", "since")
	return u.String()
}

// encodeQuery encodes q in the given key order (url.Values.Encode sorts), as the spec writes
// the listing's URL.
func encodeQuery(q url.Values, order ...string) string {
	var b strings.Builder
	for _, k := range order {
		for _, v := range q[k] {
			if b.Len() > 0 {
				b.WriteByte('&')
			}
			b.WriteString(url.QueryEscape(k) + "=" + url.QueryEscape(v))
		}
	}
	return b.String()
}

// withPage returns raw with its page parameter set to n.
func withPage(raw string, n int) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	q := u.Query()
	q.Set("page", strconv.Itoa(n))
	u.RawQuery = q.Encode()
	return u.String()
}

// githubPage is one page of a listing as read.
type githubPage struct {
	url         string
	notModified bool
	items       []knowledge.GitHubItem
	etag        string
	next        string
}

// fetchPage asks for one page, with If-None-Match when a tag is known, and waits for a rate
// limit (§6.3) or a Retry-After as the answer asks.
func (g *GitHub) fetchPage(ctx context.Context, repo, u string, tag githubPageTag, full bool, rate *rateState, report func(time.Time)) (githubPage, error) {
	headers := map[string]string{
		"Accept":               "application/vnd.github+json",
		"X-GitHub-Api-Version": "2022-11-28",
	}
	if g.token != "" {
		headers["Authorization"] = "Bearer " + g.token
	}
	if tag.etag != "" {
		headers["If-None-Match"] = tag.etag
	}
	for attempt := 1; ; attempt++ {
		req, err := newGet(ctx, u, headers)
		if err != nil {
			return githubPage{}, err
		}
		resp, err := g.client.Do(req)
		if err != nil {
			return githubPage{}, fmt.Errorf("GET %s: %w", u, err)
		}
		if rs, ok := parseRate(resp.Header); ok {
			*rate = rs
		}
		switch resp.StatusCode {
		case http.StatusOK:
			defer resp.Body.Close()
			items, err := decodeGitHubItems(newCappedBody(resp.Body, githubMaxPageBytes, u), repo)
			if err != nil {
				return githubPage{}, fmt.Errorf("GET %s: %w", u, err)
			}
			next, err := g.nextLink(resp.Header)
			if err != nil {
				return githubPage{}, err
			}
			return githubPage{url: u, items: items, etag: resp.Header.Get("ETag"), next: next}, nil
		case http.StatusNotModified:
			drain(resp)
			if tag.etag == "" {
				return githubPage{}, &HTTPStatusError{URL: u, Status: resp.StatusCode, Msg: "not modified, but nothing was asked conditionally"}
			}
			next, err := g.nextLink(resp.Header)
			if err != nil {
				return githubPage{}, err
			}
			return githubPage{url: u, notModified: true, etag: tag.etag, next: next}, nil
		case http.StatusForbidden, http.StatusTooManyRequests, http.StatusServiceUnavailable:
			body, _ := readCapped(resp.Body, 64<<10, u)
			resp.Body.Close()
			now := g.clk.now()
			wait, ok := retryAfter(resp.Header, now)
			limit := maxRetryWait
			if resp.StatusCode != http.StatusServiceUnavailable {
				limit = githubMaxRateWait
				if !ok && rate.known && rate.remaining == 0 {
					wait, ok = rate.reset.Add(time.Second).Sub(now), true
				}
			}
			if !ok {
				return githubPage{}, &HTTPStatusError{URL: u, Status: resp.StatusCode, Msg: errMessage(body)}
			}
			wait = max(wait, 0)
			if wait > limit {
				return githubPage{}, &RateLimitError{Until: now.Add(wait)}
			}
			if attempt >= maxAttempts {
				return githubPage{}, &HTTPStatusError{URL: u, Status: resp.StatusCode, Msg: strings.TrimPrefix(errMessage(body)+"; ", "; ") + fmt.Sprintf("still refused after %d attempts", attempt)}
			}
			report(now.Add(wait))
			if err := g.clk.sleep(ctx, wait); err != nil {
				return githubPage{}, err
			}
		default:
			body, _ := readCapped(resp.Body, 64<<10, u)
			resp.Body.Close()
			return githubPage{}, &HTTPStatusError{URL: u, Status: resp.StatusCode, Msg: errMessage(body)}
		}
	}
}

// waitReset waits for the rate limit's reset (plus a second) when it is at most 15 minutes
// away, else fails with a RateLimitError.
func (g *GitHub) waitReset(ctx context.Context, reset time.Time, report func(time.Time)) error {
	until := reset.Add(time.Second)
	wait := until.Sub(g.clk.now())
	if wait <= 0 {
		return nil
	}
	if wait > githubMaxRateWait {
		return &RateLimitError{Until: until}
	}
	report(until)
	return g.clk.sleep(ctx, wait)
}

// nextLink returns the Link header's rel="next" target, "" when there is none; a target off
// the API's own host is an error (the token is never sent anywhere else).
func (g *GitHub) nextLink(h http.Header) (string, error) {
	for _, v := range h.Values("Link") {
		for part := range strings.SplitSeq(v, ",") {
			target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
			if !ok || !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
				continue
			}
			isNext := false
			for p := range strings.SplitSeq(params, ";") {
				k, v, _ := strings.Cut(strings.TrimSpace(p), "=")
				if strings.EqualFold(strings.TrimSpace(k), "rel") {
					for r := range strings.FieldsSeq(strings.Trim(strings.TrimSpace(v), `"`)) {
						if strings.EqualFold(r, "next") {
							isNext = true
						}
					}
				}
			}
			if !isNext {
				continue
			}
			u, err := url.Parse(target[1 : len(target)-1])
			if err != nil || u.Scheme != g.base.Scheme || !strings.EqualFold(u.Host, g.base.Host) {
				// Stopping here would pass a partial listing off as complete (and a full
				// sync delete the rest); following it would send the token elsewhere.
				return "", fmt.Errorf("the next page's link %q is not on %s", cutRunes(target, 200), g.base.Host)
			}
			return u.String(), nil
		}
	}
	return "", nil
}

func (g *GitHub) pageTags(key string) map[int]githubPageTag {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.tags[key]
}

// setPageTags keeps a finished listing's ETags in place of the last one's, within the bound.
func (g *GitHub) setPageTags(key string, tags map[int]githubPageTag) {
	g.mu.Lock()
	defer g.mu.Unlock()
	n := g.tagPages - len(g.tags[key]) + len(tags)
	if n > githubMaxTagPages {
		n -= len(tags)
		tags = nil
	}
	if len(tags) == 0 {
		delete(g.tags, key)
	} else {
		g.tags[key] = tags
	}
	g.tagPages = n
}

// githubIssue is the part of GitHub's issue object the sync reads.
type githubIssue struct {
	Number      int             `json:"number"`
	Title       string          `json:"title"`
	Body        *string         `json:"body"`
	State       string          `json:"state"`
	HTMLURL     string          `json:"html_url"`
	CreatedAt   string          `json:"created_at"`
	PullRequest json.RawMessage `json:"pull_request"`
}

// decodeGitHubItems reads a page (a JSON array of issues) one item at a time, so only one
// item's text is held besides what is kept of the others.
func decodeGitHubItems(r io.Reader, repo string) ([]knowledge.GitHubItem, error) {
	dec := json.NewDecoder(r)
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	if d, ok := tok.(json.Delim); !ok || d != '[' {
		return nil, errors.New("the answer is not a JSON array")
	}
	var items []knowledge.GitHubItem
	for dec.More() {
		if len(items) >= githubMaxItemsPerPage {
			return nil, fmt.Errorf("a page holds more than %d items", githubMaxItemsPerPage)
		}
		var is githubIssue
		if err := dec.Decode(&is); err != nil {
			return nil, err
		}
		if is.Number <= 0 {
			continue
		}
		items = append(items, githubItem(repo, is))
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return items, nil
}

// githubItem is the row of one issue (§6.3): a pull_request key makes it a pr.
func githubItem(repo string, is githubIssue) knowledge.GitHubItem {
	it := knowledge.GitHubItem{
		Repo:      repo,
		Type:      "issue",
		Number:    is.Number,
		Title:     cutRunes(strings.TrimSpace(is.Title), githubMaxTitle),
		Status:    "closed",
		URL:       cutRunes(is.HTMLURL, githubMaxURL),
		CreatedAt: cutRunes(is.CreatedAt, 64),
	}
	if len(is.PullRequest) > 0 {
		it.Type = "pr"
	}
	if is.State == "open" {
		it.Status = "open"
	}
	if is.Body != nil {
		it.Body = githubBody(*is.Body)
	}
	return it
}

// githubBody is an issue's first message: HTML stripped (code kept) by the documentation's
// cleaner, capped at 5,000 characters.
func githubBody(s string) string {
	return cutRunes(strings.TrimSpace(knowledge.Clean(cutRunes(s, githubMaxBodyInput))), githubMaxBody)
}

// rateState is the rate limit as GitHub's last answer gave it.
type rateState struct {
	known            bool
	limit, remaining int
	reset            time.Time
}

// parseRate reads X-RateLimit-Limit, -Remaining and -Reset (Unix seconds).
func parseRate(h http.Header) (rateState, bool) {
	rem, err1 := strconv.Atoi(strings.TrimSpace(h.Get("X-RateLimit-Remaining")))
	reset, err2 := strconv.ParseInt(strings.TrimSpace(h.Get("X-RateLimit-Reset")), 10, 64)
	if err1 != nil || err2 != nil || rem < 0 {
		return rateState{}, false
	}
	limit, _ := strconv.Atoi(strings.TrimSpace(h.Get("X-RateLimit-Limit")))
	return rateState{known: true, limit: limit, remaining: rem, reset: time.Unix(reset, 0).UTC()}, true
}

// String is the progress line's rate-limit state, "4,998 of 5,000 left, resets 12:00 UTC".
func (r rateState) String() string {
	if !r.known {
		return ""
	}
	return fmt.Sprintf("%s of %s left, resets %s UTC", thousands(r.remaining), thousands(r.limit), r.reset.UTC().Format("15:04"))
}

// thousands writes n with commas between groups of three digits.
func thousands(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
