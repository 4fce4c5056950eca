package ingest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
)

// stepClock is a test clock: Sleep records the wait and moves the time on at once.
type stepClock struct {
	mu     sync.Mutex
	t      time.Time
	sleeps []time.Duration
}

func newStepClock() *stepClock {
	return &stepClock{t: time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)}
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sleeps = append(c.sleeps, d)
	c.t = c.t.Add(d)
	return ctx.Err()
}

func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *stepClock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}

func openTestStore(t *testing.T) *knowledge.Store {
	t.Helper()
	s, err := knowledge.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// queryRows reads the working copy of community id through the store's own writer (tests
// do not import the SQLite driver).
func queryRows(t *testing.T, s *knowledge.Store, id, query string, args ...any) [][]string {
	t.Helper()
	var out [][]string
	err := s.Write(context.Background(), id, func(ctx context.Context, tx *sql.Tx) (bool, error) {
		rows, err := tx.QueryContext(ctx, query, args...)
		if err != nil {
			return false, err
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]sql.NullString, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				return false, err
			}
			row := make([]string, len(cols))
			for i, v := range vals {
				row[i] = v.String
			}
			out = append(out, row)
		}
		return false, rows.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func syncMetaOf(t *testing.T, s *knowledge.Store, id, typ, name string) (knowledge.SyncMeta, bool) {
	t.Helper()
	var m knowledge.SyncMeta
	var ok bool
	err := s.Update(context.Background(), id, func(ctx context.Context, tx *knowledge.Tx) error {
		var err error
		m, ok, err = tx.SyncMeta(typ, name)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return m, ok
}

const ghRepoName = "hed-standard/hed-python"

func ghCommunity(repos ...string) *config.Community {
	if len(repos) == 0 {
		repos = []string{ghRepoName}
	}
	return &config.Community{ID: "hed", Name: "HED", GitHub: &config.GitHub{Repos: repos}}
}

// ghFixture is a fake API with n items (every third a pull request, every fourth closed),
// a store and a source sharing one test clock.
type ghFixture struct {
	api   *ingesttest.GitHub
	store *knowledge.Store
	src   *GitHub
	clk   *stepClock
}

func newGHFixture(t *testing.T, n int, token string) *ghFixture {
	t.Helper()
	clk := newStepClock()
	api := ingesttest.NewGitHub(t)
	api.SetClock(clk.Now)
	start := clk.Now().Add(-30 * 24 * time.Hour)
	var items []ingesttest.Issue
	for i := 1; i <= n; i++ {
		is := ingesttest.Issue{
			Number: i, Title: fmt.Sprintf("Validation of sidecar %d fails", i),
			Body:      fmt.Sprintf("Running the validator on sidecar %d gives an error.", i),
			PR:        i%3 == 0,
			CreatedAt: start.Add(time.Duration(i) * time.Minute),
		}
		if i%4 == 0 {
			is.State = "closed"
		}
		items = append(items, is)
	}
	api.Add(ghRepoName, items...)
	store := openTestStore(t)
	src, err := NewGitHub(GitHubOptions{Store: store, BaseURL: api.URL, Token: token, Now: clk.Now, Sleep: clk.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	return &ghFixture{api: api, store: store, src: src, clk: clk}
}

// sync runs the source and publishes, as the runner does after every run.
func (f *ghFixture) sync(t *testing.T, c *config.Community, full bool) (Result, error) {
	t.Helper()
	res, err := f.src.Sync(context.Background(), c, RunOptions{Full: full}, nil)
	if perr := f.store.Publish(context.Background(), c.ID); perr != nil {
		t.Fatal(perr)
	}
	return res, err
}

func TestGitHubFirstSyncFillsEveryPage(t *testing.T) {
	f := newGHFixture(t, 250, "s3cret")
	f.api.SetToken("s3cret")
	var reports []Progress
	res, err := f.src.Sync(context.Background(), ghCommunity(), RunOptions{}, func(p Progress) { reports = append(reports, p) })
	if err != nil {
		t.Fatal(err)
	}
	if res.Items != 250 || len(res.Failed) != 0 {
		t.Errorf("result %+v, want 250 items and no failures", res)
	}
	reqs := f.api.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3 pages of 100: %+v", len(reqs), reqs)
	}
	first, _ := url.ParseQuery(reqs[0].Query)
	if reqs[0].Path != "/repos/"+ghRepoName+"/issues" || first.Get("state") != "all" || first.Get("filter") != "all" ||
		first.Get("sort") != "updated" || first.Get("direction") != "asc" || first.Get("per_page") != "100" || first.Has("since") {
		t.Errorf("first request %s?%s, want the full listing of §6.3 without since", reqs[0].Path, reqs[0].Query)
	}
	for i, r := range reqs {
		if r.Accept != "application/vnd.github+json" || r.APIVersion != "2022-11-28" || r.Auth != "Bearer s3cret" {
			t.Errorf("request %d headers: Accept %q, version %q, auth %q", i, r.Accept, r.APIVersion, r.Auth)
		}
	}
	// The later pages are the Link header's, which names the repository by id.
	if !strings.HasPrefix(reqs[1].Path, "/repositories/") || !strings.Contains(reqs[2].Query, "page=3") {
		t.Errorf("pages 2 and 3 were %s?%s and %s?%s, want the Link targets", reqs[1].Path, reqs[1].Query, reqs[2].Path, reqs[2].Query)
	}

	rows := queryRows(t, f.store, "hed", `SELECT item_type, count(*), sum(status = 'open') FROM github_items WHERE repo = ? GROUP BY item_type ORDER BY item_type`, ghRepoName)
	if fmt.Sprint(rows) != "[[issue 167 125] [pr 83 63]]" {
		t.Errorf("stored (type, rows, open) = %v", rows)
	}
	row := queryRows(t, f.store, "hed", `SELECT title, first_message, status, url, created_at FROM github_items WHERE number = 12`)
	want := []string{"Validation of sidecar 12 fails", "Running the validator on sidecar 12 gives an error.", "closed",
		"https://github.com/" + ghRepoName + "/pull/12", "2026-01-31T09:12:00Z"}
	if len(row) != 1 || fmt.Sprint(row[0]) != fmt.Sprint(want) {
		t.Errorf("item 12 = %v, want %v", row, want)
	}
	start := f.clk.Now()
	for _, typ := range []string{"github", "github_full"} {
		m, ok := syncMetaOf(t, f.store, "hed", typ, ghRepoName)
		if !ok || !m.LastSyncAt.Equal(start) || m.Items != 250 {
			t.Errorf("sync_metadata (%s, repo) = %+v, %v; want %v and 250 items", typ, m, ok, start)
		}
	}
	last := reports[len(reports)-1]
	if !last.Done || last.Items != 250 || last.Pages != 3 || last.RateLimit != "4,997 of 5,000 left, resets 10:00 UTC" {
		t.Errorf("last progress %+v", last)
	}
}

func TestGitHubIncrementalSyncFetchesOnlyWhatChanged(t *testing.T) {
	f := newGHFixture(t, 250, "")
	if _, err := f.sync(t, ghCommunity(), false); err != nil {
		t.Fatal(err)
	}
	start1 := f.clk.Now()
	f.clk.Advance(time.Hour)
	f.api.Change(ghRepoName, 7, func(is *ingesttest.Issue) { is.State, is.Title = "closed", "Validation of sidecar 7 fixed" })
	f.api.ResetRequests()

	res, err := f.sync(t, ghCommunity(), false)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.api.Requests()
	if len(reqs) != 1 {
		t.Fatalf("second sync made %d requests, want 1 (only the changed item's page): %+v", len(reqs), reqs)
	}
	q, _ := url.ParseQuery(reqs[0].Query)
	if want := start1.Add(-5 * time.Minute).Format(time.RFC3339); q.Get("since") != want {
		t.Errorf("since = %q, want the last listing's start less 5 minutes, %q", q.Get("since"), want)
	}
	if res.Items != 1 || res.Deleted != 0 {
		t.Errorf("result %+v, want 1 item written, none deleted", res)
	}
	row := queryRows(t, f.store, "hed", `SELECT title, status FROM github_items WHERE number = 7`)
	if fmt.Sprint(row) != "[[Validation of sidecar 7 fixed closed]]" {
		t.Errorf("item 7 = %v, want the new title and closed", row)
	}
	if n := queryRows(t, f.store, "hed", `SELECT count(*) FROM github_items`); n[0][0] != "250" {
		t.Errorf("%s rows, want 250", n[0][0])
	}
	m, _ := syncMetaOf(t, f.store, "hed", "github", ghRepoName)
	if !m.LastSyncAt.Equal(f.clk.Now()) || m.Items != 1 {
		t.Errorf("(github, repo) = %+v, want this listing's start and 1 upsert", m)
	}
	if fm, _ := syncMetaOf(t, f.store, "hed", "github_full", ghRepoName); !fm.LastSyncAt.Equal(start1) {
		t.Errorf("(github_full, repo) moved to %v on an incremental sync", fm.LastSyncAt)
	}
}

func TestGitHubUnchangedPageIsAskedConditionally(t *testing.T) {
	f := newGHFixture(t, 30, "")
	if _, err := f.sync(t, ghCommunity(), false); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Hour)
	f.api.Change(ghRepoName, 3, func(is *ingesttest.Issue) { is.Title = "renamed" })
	if _, err := f.sync(t, ghCommunity(), false); err != nil {
		t.Fatal(err)
	}
	// The third listing overlaps the second by 5 minutes, so GitHub would send the same page:
	// asked with its ETag, it answers 304, which costs no rate limit.
	f.clk.Advance(time.Minute)
	f.api.ResetRequests()
	res, err := f.sync(t, ghCommunity(), false)
	if err != nil {
		t.Fatal(err)
	}
	reqs := f.api.Requests()
	if len(reqs) != 1 || reqs[0].Status != http.StatusNotModified || reqs[0].IfNoneMatch == "" {
		t.Fatalf("third sync's requests %+v, want one conditional request answered 304", reqs)
	}
	if res.Items != 0 {
		t.Errorf("a 304 wrote %d items", res.Items)
	}
	// A full listing's pages are asked conditionally too, and a 304 page still counts as
	// listed: nothing is deleted.
	if _, err := f.sync(t, ghCommunity(), true); err != nil {
		t.Fatal(err)
	}
	f.api.ResetRequests()
	res, err = f.sync(t, ghCommunity(), true)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := f.api.Requests(); len(reqs) != 1 || reqs[0].Status != http.StatusNotModified {
		t.Errorf("second full listing %+v, want one 304", reqs)
	}
	if res.Deleted != 0 || queryRows(t, f.store, "hed", `SELECT count(*) FROM github_items`)[0][0] != "30" {
		t.Errorf("full listing answered 304 deleted %d rows", res.Deleted)
	}
}

func TestGitHubRateLimit(t *testing.T) {
	t.Run("waits for a reset at most 15 minutes away", func(t *testing.T) {
		f := newGHFixture(t, 150, "")
		reset := f.clk.Now().Add(10 * time.Minute)
		f.api.SetRateLimit(5000, 1, reset)
		var waited []time.Time
		res, err := f.src.Sync(context.Background(), ghCommunity(), RunOptions{}, func(p Progress) {
			if !p.Waiting.IsZero() {
				waited = append(waited, p.Waiting)
			}
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Items != 150 {
			t.Errorf("%d items, want 150", res.Items)
		}
		if s := f.clk.Sleeps(); len(s) != 1 || s[0] != 10*time.Minute+time.Second {
			t.Errorf("waits %v, want one until the reset plus a second (10m1s)", s)
		}
		if len(waited) == 0 || !waited[0].Equal(reset.Add(time.Second)) {
			t.Errorf("progress said waiting until %v, want %v", waited, reset.Add(time.Second))
		}
		if n := f.api.Count(http.StatusForbidden); n != 0 {
			t.Errorf("%d requests refused: the sync asked past the limit", n)
		}
	})
	t.Run("stops when the reset is further", func(t *testing.T) {
		f := newGHFixture(t, 150, "")
		reset := f.clk.Now().Add(40 * time.Minute)
		f.api.SetRateLimit(5000, 1, reset)
		res, err := f.sync(t, ghCommunity(), false)
		var rl *RateLimitError
		if !errors.As(err, &rl) || len(res.Failed) != 1 {
			t.Fatalf("err %v, result %+v; want a RateLimitError for the repo", err, res)
		}
		if want := "rate limited until " + reset.Add(time.Second).Format(time.RFC3339); res.Failed[0].Err.Error() != want {
			t.Errorf("error %q, want %q", res.Failed[0].Err, want)
		}
		if len(f.clk.Sleeps()) != 0 {
			t.Errorf("waited %v", f.clk.Sleeps())
		}
		// The first page is kept; the listing did not finish, so the next one is full again.
		if n := queryRows(t, f.store, "hed", `SELECT count(*) FROM github_items`)[0][0]; n != "100" {
			t.Errorf("%s rows kept, want the first page's 100", n)
		}
		if _, ok := syncMetaOf(t, f.store, "hed", "github", ghRepoName); ok {
			t.Error("an unfinished listing wrote its sync_metadata row")
		}
	})
	t.Run("a 403 at zero waits for the reset", func(t *testing.T) {
		f := newGHFixture(t, 20, "")
		reset := f.clk.Now().Add(5 * time.Minute)
		f.api.SetRateLimit(60, 0, reset)
		res, err := f.sync(t, ghCommunity(), false)
		if err != nil || res.Items != 20 {
			t.Fatalf("err %v, %d items", err, res.Items)
		}
		if s := f.clk.Sleeps(); len(s) != 1 || s[0] != 5*time.Minute+time.Second {
			t.Errorf("waits %v, want 5m1s", s)
		}
		if n := f.api.Count(http.StatusForbidden); n != 1 {
			t.Errorf("%d refused requests, want the one that found the limit used", n)
		}
	})
	t.Run("Retry-After on a 429 or 403", func(t *testing.T) {
		f := newGHFixture(t, 20, "")
		f.api.Queue(
			ingesttest.GitHubReply{Status: 429, Header: map[string]string{"Retry-After": "60"}, Body: `{"message":"You have exceeded a secondary rate limit."}`},
			ingesttest.GitHubReply{Status: 403, Header: map[string]string{"Retry-After": "30"}, Body: `{"message":"You have exceeded a secondary rate limit."}`},
		)
		res, err := f.sync(t, ghCommunity(), false)
		if err != nil || res.Items != 20 {
			t.Fatalf("err %v, %d items", err, res.Items)
		}
		if s := fmt.Sprint(f.clk.Sleeps()); s != "[1m0s 30s]" {
			t.Errorf("waits %s, want [1m0s 30s]", s)
		}
		f.api.Queue(ingesttest.GitHubReply{Status: 429, Header: map[string]string{"Retry-After": "3600"}, Body: `{"message":"slow down"}`})
		before := f.clk.Now()
		_, err = f.sync(t, ghCommunity(), false)
		var rl *RateLimitError
		if !errors.As(err, &rl) || !rl.Until.Equal(before.Add(time.Hour)) {
			t.Errorf("err %v, want rate limited until an hour on", err)
		}
	})
	t.Run("a 403 that is not a rate limit fails at once", func(t *testing.T) {
		f := newGHFixture(t, 20, "")
		f.api.Queue(ingesttest.GitHubReply{Status: 403, Header: map[string]string{"X-RateLimit-Remaining": "4000", "X-RateLimit-Reset": "1"}, Body: `{"message":"Resource not accessible by personal access token"}`})
		_, err := f.sync(t, ghCommunity(), false)
		var se *HTTPStatusError
		if !errors.As(err, &se) || se.Status != 403 || !strings.Contains(err.Error(), "Resource not accessible") {
			t.Errorf("err %v, want the 403 with GitHub's message", err)
		}
		if len(f.clk.Sleeps()) != 0 {
			t.Errorf("waited %v for a plain 403", f.clk.Sleeps())
		}
	})
}

func TestGitHubFullSyncDeletes(t *testing.T) {
	f := newGHFixture(t, 40, "")
	f.api.Add("hed-standard/hed-schemas", ingesttest.Issue{Number: 1, Title: "Schema 8.3 release"})
	if _, err := f.sync(t, ghCommunity(ghRepoName, "hed-standard/hed-schemas"), false); err != nil {
		t.Fatal(err)
	}
	f.api.Remove(ghRepoName, 5)
	f.api.Remove(ghRepoName, 6)

	// An incremental sync cannot see a removal.
	f.clk.Advance(time.Hour)
	res, err := f.sync(t, ghCommunity(ghRepoName, "hed-standard/hed-schemas"), false)
	if err != nil || res.Deleted != 0 {
		t.Fatalf("incremental: err %v, %+v", err, res)
	}
	// Full: the listing's missing items go, and so does a repository no longer configured.
	res, err = f.sync(t, ghCommunity(ghRepoName), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Deleted != 3 {
		t.Errorf("deleted %d, want 2 removed items and the unconfigured repo's 1", res.Deleted)
	}
	if got := queryRows(t, f.store, "hed", `SELECT count(*), sum(number IN (5, 6)), sum(repo != ?) FROM github_items`, ghRepoName); fmt.Sprint(got) != "[[38 0 0]]" {
		t.Errorf("(rows, removed, other repo) = %v, want [[38 0 0]]", got)
	}

	// A repository the config dropped lost its rows; named again, it is listed in full
	// although its sync_metadata rows remain.
	f.clk.Advance(time.Hour)
	f.api.ResetRequests()
	res, err = f.sync(t, ghCommunity(ghRepoName, "hed-standard/hed-schemas"), false)
	if err != nil {
		t.Fatal(err)
	}
	if reqs := f.api.Requests(); len(reqs) != 2 || strings.Contains(reqs[1].Query, "since=") || !strings.Contains(reqs[0].Query, "since=") || res.Items != 1 {
		t.Errorf("re-added repo: requests %+v, %d items; want the known repo incremental and the re-added one in full", reqs, res.Items)
	}

	// Thirty days after the last full listing, a sync is full again by itself.
	f.api.Remove(ghRepoName, 7)
	f.clk.Advance(31 * 24 * time.Hour)
	f.api.ResetRequests()
	res, err = f.sync(t, ghCommunity(ghRepoName, "hed-standard/hed-schemas"), false)
	if err != nil {
		t.Fatal(err)
	}
	if q := f.api.Requests()[0].Query; strings.Contains(q, "since=") || res.Deleted != 1 {
		t.Errorf("after 31 days: query %q, deleted %d; want a full listing deleting #7", q, res.Deleted)
	}
}

func TestGitHubTextsAreCleanedAndCapped(t *testing.T) {
	f := newGHFixture(t, 0, "")
	long := strings.Repeat("é", 70000)
	f.api.Add(ghRepoName,
		ingesttest.Issue{Number: 1, Title: "Long", Body: long},
		ingesttest.Issue{Number: 2, Title: "Template", Body: "<!-- Describe the bug -->\n<details><summary>Log</summary>\n\nThe <b>schema</b> fails.\n</details>\n\n```\nif a < b:\n    pass\n```"},
		ingesttest.Issue{Number: 3, Title: strings.Repeat("t", 3000)},
	)
	if _, err := f.sync(t, ghCommunity(), false); err != nil {
		t.Fatal(err)
	}
	rows := queryRows(t, f.store, "hed", `SELECT length(first_message), first_message, length(title) FROM github_items ORDER BY number`)
	if rows[0][0] != "5000" {
		t.Errorf("a 70,000-character body is stored with %s characters, want 5,000", rows[0][0])
	}
	body := rows[1][1]
	if strings.Contains(body, "<") && !strings.Contains(body, "a < b") || strings.Contains(body, "<b>") || strings.Contains(body, "Describe the bug") || !strings.Contains(body, "The schema fails.") || !strings.Contains(body, "if a < b:") {
		t.Errorf("body %q: want tags and comments stripped, text and code kept", body)
	}
	if rows[2][2] != "1000" {
		t.Errorf("title stored with %s characters, want 1,000", rows[2][2])
	}
}

func TestGitHubRefusesBadAnswers(t *testing.T) {
	cases := []struct {
		name    string
		handler http.HandlerFunc
		want    func(error) bool
	}{
		{"a page over the cap", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte("["))
			item := `{"number":1,"title":"x","state":"open","html_url":"https://github.com/a/b/issues/1","created_at":"2026-01-01T00:00:00Z","body":"` + strings.Repeat("a", 1<<20) + `"},`
			for i := 0; i < 40; i++ {
				if _, err := w.Write([]byte(item)); err != nil {
					return
				}
			}
			w.Write([]byte(`{"number":2}]`))
		}, func(err error) bool { var e *TooLargeError; return errors.As(err, &e) }},
		{"not an array", func(w http.ResponseWriter, r *http.Request) {
			w.Write([]byte(`{"message":"Moved Permanently","url":"x"}`))
		}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "not a JSON array") }},
		{"a next link to another host", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Link", `<https://evil.example/repos/a/b/issues?page=2>; rel="next"`)
			w.Write([]byte(`[{"number":1,"title":"x","state":"open","html_url":"u","created_at":"c"}]`))
		}, func(err error) bool { return err != nil && strings.Contains(err.Error(), "is not on") }},
		{"a 404", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(404)
			w.Write([]byte(`{"message":"Not Found","documentation_url":"https://docs.github.com/rest"}`))
		}, func(err error) bool { var e *HTTPStatusError; return errors.As(err, &e) && e.Status == 404 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			store := openTestStore(t)
			src, err := NewGitHub(GitHubOptions{Store: store, BaseURL: srv.URL})
			if err != nil {
				t.Fatal(err)
			}
			res, err := src.Sync(context.Background(), ghCommunity("a/b"), RunOptions{}, nil)
			if len(res.Failed) != 1 || !tc.want(res.Failed[0].Err) || err == nil {
				t.Errorf("result %+v, err %v", res, err)
			}
			if _, ok := syncMetaOf(t, store, "hed", "github", "a/b"); ok {
				t.Error("a failed listing wrote its sync_metadata row")
			}
		})
	}
}

func TestGitHubOtherReposRunWhenOneFails(t *testing.T) {
	f := newGHFixture(t, 5, "")
	res, err := f.sync(t, ghCommunity("hed-standard/missing", ghRepoName), false)
	if err == nil || len(res.Failed) != 1 || res.Failed[0].Source != "hed-standard/missing" || res.Items != 5 {
		t.Errorf("err %v, result %+v; want the missing repo failed and the other's 5 items stored", err, res)
	}
}

// The fake API can share its URL with another fake (the trees API of the docstrings sync):
// what it does not serve goes to its Fallback.
func TestGitHubFakeFallback(t *testing.T) {
	f := newGHFixture(t, 3, "")
	f.api.Fallback = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"sha":"abc","tree":[],"truncated":false}`))
	})
	resp, err := http.Get(f.api.URL + "/repos/" + ghRepoName + "/git/trees/main?recursive=1")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || len(f.api.Requests()) != 0 {
		t.Errorf("trees request: %d, recorded %d requests; want the fallback's 200, unrecorded", resp.StatusCode, len(f.api.Requests()))
	}
	if res, err := f.sync(t, ghCommunity(), false); err != nil || res.Items != 3 {
		t.Errorf("listing beside the fallback: %+v, %v", res, err)
	}
}

func TestGitHubWarnsWhenFewRequestsAreLeft(t *testing.T) {
	for _, tc := range []struct {
		remaining int
		warn      bool
	}{{9, true}, {500, false}} {
		f := newGHFixture(t, 5, "")
		var logs strings.Builder
		f.src.log = slog.New(slog.NewTextHandler(&logs, nil))
		f.api.SetRateLimit(5000, tc.remaining+1, f.clk.Now().Add(time.Hour))
		if _, err := f.sync(t, ghCommunity(), false); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(logs.String(), "level=WARN msg=\"github sync: rate limit nearly used\"") && strings.Contains(logs.String(), fmt.Sprintf("remaining=%d", tc.remaining)); got != tc.warn {
			t.Errorf("%d left: warned %v, want %v; log %q", tc.remaining, got, tc.warn, logs.String())
		}
	}
}
