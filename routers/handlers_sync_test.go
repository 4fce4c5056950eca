package routers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/tests/golden"
)

// syncNow is the fixture's clock: ages and the scheduler's next fires are computed from it.
var syncNow = time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC)

// stillClock is a scheduler clock that stays at syncNow and never fires, so next fires are
// fixed.
type stillClock struct{}

func (stillClock) Now() time.Time                       { return syncNow }
func (stillClock) After(time.Duration) <-chan time.Time { return nil }

const syncHED = `id: hed
name: HED
description: d
anthropic_api_key_env_var: ANTHROPIC_API_KEY_HED
documentation:
  - title: Guide
    url: https://example.org/guide
github:
  repos: [hed-standard/hed-specification]
citations:
  queries: [HED annotation]
  dois: [10.1016/j.neuroimage.2021.118766, 10.5281/zenodo.1]
  paper_labels: {"10.1016/j.neuroimage.2021.118766": HED paper}
mailman:
  - list_name: hed-users
    base_url: https://lists.example.org/pipermail/hed-users/
faq_generation:
  evaluation_agent: {model: openai/gpt-4o-mini}
  summary_agent: {model: openai/gpt-4o-mini}
public_feeds: {faq: true, citations: true}
sync:
  github: {cron: "0 3 * * *"}
  papers: {cron: "0 4 * * 0"}
`

const syncBIDS = "id: bids\nname: BIDS\ndescription: d\ngithub:\n  repos: [bids-standard/bids-specification]\n"

// syncFixture is a server with the sync routes on a real knowledge store, runner, scheduler
// and jobs, served on loopback.
type syncFixture struct {
	ts     *httptest.Server
	st     *knowledge.Store
	runner *ingest.Runner
	jobs   *ingest.Jobs
	// fail makes the papers source fail with that error.
	fail atomic.Pointer[error]
}

// rowsSource writes one GitHub issue per run through the knowledge Tx API.
type rowsSource struct {
	typ string
	st  *knowledge.Store
	n   atomic.Int32
	err func() error
}

func (r *rowsSource) Type() string { return r.typ }
func (r *rowsSource) Has(c *config.Community) bool {
	if r.typ == ingest.TypePapers {
		return c.Citations != nil
	}
	return c.GitHub != nil
}
func (r *rowsSource) Sync(ctx context.Context, c *config.Community, _ ingest.RunOptions, _ func(ingest.Progress)) (ingest.Result, error) {
	if r.err != nil {
		if err := r.err(); err != nil {
			return ingest.Result{}, err
		}
	}
	n := int(r.n.Add(1))
	var wrote int
	err := r.st.Update(ctx, c.ID, func(ctx context.Context, tx *knowledge.Tx) error {
		var err error
		wrote, err = tx.UpsertGitHubItems([]knowledge.GitHubItem{{Repo: "org/synced", Type: "issue", Number: 1000 + n, Title: "synced",
			Status: "open", URL: "https://github.com/org/synced/issues/1", CreatedAt: "2025-06-01T00:00:00Z"}})
		return err
	})
	return ingest.Result{Items: wrote}, err
}

func writeCommunities(t *testing.T, configs map[string]string) *config.Set {
	t.Helper()
	dir := t.TempDir()
	for id, y := range configs {
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id, "config.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := config.Load(context.Background(), dir, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// seedHED fills hed's database: GitHub items, papers of two sources, FAQ entries, citation
// counts and sync_metadata rows, published.
func seedHED(t *testing.T, st *knowledge.Store) {
	t.Helper()
	ctx := context.Background()
	err := st.Update(ctx, "hed", func(ctx context.Context, tx *knowledge.Tx) error {
		if _, err := tx.UpsertGitHubItems([]knowledge.GitHubItem{
			{Repo: "hed-standard/hed-specification", Type: "issue", Number: 1, Title: "Onset", Status: "open", URL: "https://github.com/hed-standard/hed-specification/issues/1", CreatedAt: "2024-05-01T12:00:00Z"},
			{Repo: "hed-standard/hed-specification", Type: "issue", Number: 2, Title: "Offset", Status: "closed", URL: "https://github.com/hed-standard/hed-specification/issues/2", CreatedAt: "2024-05-02T12:00:00Z"},
			{Repo: "hed-standard/hed-python", Type: "pr", Number: 3, Title: "Fix", Status: "open", URL: "https://github.com/hed-standard/hed-python/pull/3", CreatedAt: "2024-05-03T12:00:00Z"},
		}); err != nil {
			return err
		}
		if _, err := tx.UpsertPapers([]knowledge.Paper{
			{Source: "openalex", ExternalID: "W1", Title: "HED annotation", URL: "https://doi.org/10.1/a"},
			{Source: "openalex", ExternalID: "W2", Title: "HED in BIDS", URL: "https://doi.org/10.1/b"},
			{Source: "pubmed", ExternalID: "123", Title: "Event annotation", URL: "https://pubmed.ncbi.nlm.nih.gov/123/"},
		}); err != nil {
			return err
		}
		if _, err := tx.UpsertFAQ([]knowledge.FAQEntry{
			{List: "hed-users", ThreadID: "t1", ThreadURL: "https://lists.example.org/pipermail/hed-users/2024/thread.html#t1",
				Question: "How do I validate? Ask jane.doe@example.org", Answer: "Use the validator; write to help@hed.org.",
				Tags: []string{"validation", "mail:bob@example.com"}, Category: "how-to", MessageCount: 4, ParticipantCount: 2,
				FirstMessageDate: "Mon Jan 8 10:00:00 2024", Quality: 0.9, SummarizedAt: syncNow, Model: "m"},
			{List: "hed-users", ThreadID: "t2", ThreadURL: "https://lists.example.org/pipermail/hed-users/2024/thread.html#t2",
				Question: "Why does Onset need a Definition?", Answer: "Temporal scope.", Category: "reference", MessageCount: 3,
				ParticipantCount: 3, Quality: 0.75, SummarizedAt: syncNow, Model: "m"},
			{List: "hed-users", ThreadID: "t3", ThreadURL: "https://lists.example.org/pipermail/hed-users/2024/thread.html#t3",
				Question: "Schema versions and validation", Answer: "Pin the schema version.", Tags: []string{"schema"}, Category: "how-to",
				MessageCount: 2, ParticipantCount: 2, FirstMessageDate: "Tue Feb 6 09:00:00 2024", Quality: 0.8, SummarizedAt: syncNow, Model: "m"},
		}); err != nil {
			return err
		}
		if err := tx.ReplaceCitationCounts("10.1016/j.neuroimage.2021.118766", map[int]int{2022: 5, 2021: 3, 2024: 9}); err != nil {
			return err
		}
		if err := tx.ReplaceCitationCounts("10.5281/zenodo.1", map[int]int{2023: 2}); err != nil {
			return err
		}
		if err := tx.ReplaceCitationCounts("10.9999/unconfigured", map[int]int{2020: 100}); err != nil {
			return err
		}
		for _, m := range []knowledge.SyncMeta{
			{SourceType: "github", SourceName: "hed-standard/hed-specification", LastSyncAt: syncNow.Add(-12 * time.Hour), Items: 2},
			{SourceType: "github", SourceName: "hed-standard/hed-python", LastSyncAt: syncNow.Add(-13 * time.Hour), Items: 1},
			{SourceType: "papers", SourceName: "openalex:HED annotation", LastSyncAt: syncNow.Add(-400 * time.Hour), Items: 2},
			{SourceType: "papers", SourceName: "pubmed:HED annotation", LastSyncAt: syncNow.Add(-401 * time.Hour), Items: 1},
			{SourceType: "citations", SourceName: "citing_10.1016/j.neuroimage.2021.118766", LastSyncAt: syncNow.Add(-30 * time.Hour), Items: 17},
		} {
			if err := tx.SetSyncMeta(m); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Publish(ctx, "hed"); err != nil {
		t.Fatal(err)
	}
}

func newSyncFixture(t *testing.T, withScheduler bool) *syncFixture {
	t.Helper()
	dataDir := t.TempDir()
	st, err := knowledge.OpenStore(dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	seedHED(t, st)
	f := &syncFixture{st: st}
	gh := &rowsSource{typ: ingest.TypeGitHub, st: st}
	papers := &rowsSource{typ: ingest.TypePapers, st: st, err: func() error {
		if e := f.fail.Load(); e != nil {
			return *e
		}
		return nil
	}}
	f.runner, err = ingest.NewRunner(ingest.RunnerOptions{Sources: map[string]ingest.Source{ingest.TypeGitHub: gh, ingest.TypePapers: papers},
		Store: st, Leases: &ingest.FileLeaser{Dir: filepath.Join(dataDir, "knowledge")}, Now: func() time.Time { return syncNow }})
	if err != nil {
		t.Fatal(err)
	}
	f.jobs = ingest.NewJobs(ingest.JobsOptions{Runner: f.runner})
	t.Cleanup(f.jobs.Close)
	set := writeCommunities(t, map[string]string{"hed": syncHED, "bids": syncBIDS,
		"broken": "id: broken\nname: Broken\ndescription: d\npublic_feeds: {faq: true, citations: true}\n",
		"empty":  "id: empty\nname: Empty\ndescription: d\npublic_feeds: {faq: true, citations: true}\n"})
	sd := SyncDeps{Knowledge: st, Runs: f.runner, Jobs: f.jobs, Now: func() time.Time { return syncNow }}
	if withScheduler {
		sched := ingest.NewScheduler(ingest.SchedulerOptions{Runner: f.runner, Clock: stillClock{}})
		sched.Apply(set.Communities)
		t.Cleanup(sched.Close)
		sd.Scheduler = sched
	}
	// broken's database is not a database.
	if err := os.WriteFile(st.Path("broken"), bytes.Repeat([]byte("not sqlite "), 200), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := New(Deps{Settings: Settings{Deployment: config.Production, DefaultModel: "scripted/demo", AdminKey: "admin-key"},
		Getenv: func(k string) string {
			if k == "ANTHROPIC_API_KEY_HED" {
				return "sk-test"
			}
			return ""
		}, Communities: set, Sync: sd, Feeds: st})
	if err != nil {
		t.Fatal(err)
	}
	f.ts = httptest.NewServer(s)
	t.Cleanup(f.ts.Close)
	return f
}

func (f *syncFixture) call(t *testing.T, method, path, body string, headers ...string) (*http.Response, []byte) {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.ts.URL+path, r)
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// indented re-indents a JSON body for a golden file.
func indented(t *testing.T, b []byte) []byte {
	t.Helper()
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		t.Fatalf("not JSON: %v: %s", err, b)
	}
	out.WriteByte('\n')
	return out.Bytes()
}

func TestSyncStatus(t *testing.T) {
	f := newSyncFixture(t, true)
	for _, tc := range []struct{ path, golden string }{
		{"/sync/status?community_id=hed", "testdata/sync/status_hed.json"},
		{"/sync/status", "testdata/sync/status_hed.json"}, // hed by default
		{"/sync/status?community_id=bids", "testdata/sync/status_bids.json"},
	} {
		resp, body := f.call(t, http.MethodGet, tc.path, "")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", tc.path, resp.StatusCode, body)
		}
		golden.Check(t, tc.golden, indented(t, body))
	}
	resp, body := f.call(t, http.MethodGet, "/sync/status?community_id=nope", "")
	if resp.StatusCode != http.StatusNotFound || string(body) != `{"detail":"Community 'nope' not found."}`+"\n" {
		t.Errorf("unknown community: %d %s", resp.StatusCode, body)
	}
	resp, body = f.call(t, http.MethodGet, "/sync/status?community_id=broken", "")
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "Knowledge database is temporarily unavailable.") {
		t.Errorf("unreadable database: %d %s", resp.StatusCode, body)
	}
}

// TestSyncStatusSchedulerOff: with syncing switched off the scheduler is reported off and no
// next runs are given.
func TestSyncStatusSchedulerOff(t *testing.T) {
	f := newSyncFixture(t, false)
	_, body := f.call(t, http.MethodGet, "/sync/status?community_id=hed", "")
	var st struct {
		Scheduler struct {
			Enabled, Running bool
			Jobs             map[string]any
		}
		Syncs map[string]struct {
			NextRun *string `json:"next_run"`
		}
	}
	if err := json.Unmarshal(body, &st); err != nil {
		t.Fatal(err)
	}
	if st.Scheduler.Enabled || st.Scheduler.Running || len(st.Scheduler.Jobs) != 0 || st.Syncs["github"].NextRun != nil {
		t.Errorf("scheduler off: %s", body)
	}
}

func TestSyncHealth(t *testing.T) {
	f := newSyncFixture(t, true)
	resp, body := f.call(t, http.MethodGet, "/sync/health?community_id=hed", "")
	if want := `{"status":"healthy","github_items":3,"papers_items":3,"github_age_hours":12,"papers_age_hours":30}` + "\n"; resp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("healthy: %d %s, want %s", resp.StatusCode, body, want)
	}
	// GitHub 50 hours old: unhealthy, 503 with the object as its detail.
	err := f.st.Update(context.Background(), "hed", func(ctx context.Context, tx *knowledge.Tx) error {
		for _, repo := range []string{"hed-standard/hed-specification", "hed-standard/hed-python"} {
			if err := tx.SetSyncMeta(knowledge.SyncMeta{SourceType: "github", SourceName: repo, LastSyncAt: syncNow.Add(-50 * time.Hour)}); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		err = f.st.Publish(context.Background(), "hed")
	}
	if err != nil {
		t.Fatal(err)
	}
	resp, body = f.call(t, http.MethodGet, "/sync/health", "")
	if want := `{"detail":{"status":"unhealthy","github_items":3,"papers_items":3,"github_age_hours":50,"papers_age_hours":30}}` + "\n"; resp.StatusCode != http.StatusServiceUnavailable || string(body) != want {
		t.Errorf("unhealthy: %d %s, want %s", resp.StatusCode, body, want)
	}
	// Never synced is healthy.
	resp, body = f.call(t, http.MethodGet, "/sync/health?community_id=bids", "")
	if want := `{"status":"healthy","github_items":0,"papers_items":0,"github_age_hours":null,"papers_age_hours":null}` + "\n"; resp.StatusCode != http.StatusOK || string(body) != want {
		t.Errorf("bids: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.call(t, http.MethodGet, "/sync/health?community_id=nope", ""); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown community: %d", resp.StatusCode)
	}
}

// awaitSyncJob polls GET /sync/jobs/{id} (the job runs in the background) until it finished.
func (f *syncFixture) awaitSyncJob(t *testing.T, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, body := f.call(t, http.MethodGet, "/sync/jobs/"+id, "", "X-API-Key", "admin-key")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /sync/jobs/%s: %d %s", id, resp.StatusCode, body)
		}
		var job map[string]any
		if err := json.Unmarshal(body, &job); err != nil {
			t.Fatal(err)
		}
		if s := job["status"]; s == "succeeded" || s == "failed" {
			return job
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %s still %v", id, job["status"])
		}
		time.Sleep(5 * time.Millisecond) // polling the route, as a client does
	}
}

func TestSyncTrigger(t *testing.T) {
	f := newSyncFixture(t, true)
	key := []string{"X-API-Key", "admin-key"}
	for _, tc := range []struct {
		name, body string
		headers    []string
		status     int
		detail     string
	}{
		{"no key", `{}`, nil, http.StatusUnauthorized, `{"detail":"Admin API key required"}`},
		{"wrong key", `{}`, []string{"X-API-Key", "nope"}, http.StatusForbidden, `{"detail":"Invalid API key"}`},
		{"bad type", `{"sync_type": "bep"}`, key, http.StatusBadRequest,
			`{"detail":"Invalid sync_type: bep. Must be one of ('github', 'papers', 'docstrings', 'mailman', 'faq', 'beps', 'discourse', 'docs', 'all')"}`},
		{"unknown community", `{"community_id": "nope"}`, key, http.StatusNotFound, `{"detail":"Community 'nope' not found."}`},
		{"wrong types", `{"sync_type": 3, "full": "yes"}`, key, http.StatusUnprocessableEntity, ""},
		{"not JSON", `{"sync_type":`, key, http.StatusUnprocessableEntity, ""},
	} {
		resp, body := f.call(t, http.MethodPost, "/sync/trigger", tc.body, tc.headers...)
		if resp.StatusCode != tc.status || (tc.detail != "" && strings.TrimSpace(string(body)) != tc.detail) {
			t.Errorf("%s: %d %s, want %d %s", tc.name, resp.StatusCode, body, tc.status, tc.detail)
		}
	}

	// One community, one type, full.
	resp, body := f.call(t, http.MethodPost, "/sync/trigger", `{"sync_type": "github", "community_id": "hed", "full": true}`, key...)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("trigger: %d %s", resp.StatusCode, body)
	}
	var queued struct {
		Success     bool           `json:"success"`
		Message     string         `json:"message"`
		ItemsSynced map[string]int `json:"items_synced"`
		JobID       string         `json:"job_id"`
		Status      string         `json:"status"`
	}
	if err := json.Unmarshal(body, &queued); err != nil {
		t.Fatal(err)
	}
	if !queued.Success || queued.Message != "Sync queued: 1 runs" || len(queued.ItemsSynced) != 0 || queued.JobID == "" || queued.Status != "queued" {
		t.Errorf("queued body %s", body)
	}
	if loc := resp.Header.Get("Location"); loc != "/sync/jobs/"+queued.JobID {
		t.Errorf("Location %q", loc)
	}
	job := f.awaitSyncJob(t, queued.JobID)
	runs, _ := job["runs"].([]any)
	if job["status"] != "succeeded" || job["message"] != "Sync completed: 1 items synced" || job["full"] != true ||
		job["community_id"] != "hed" || job["sync_type"] != "github" || len(runs) != 1 {
		t.Errorf("finished job %v", job)
	}
	// The run published what it wrote: status counts the new issue.
	_, body = f.call(t, http.MethodGet, "/sync/status?community_id=hed", "")
	if !strings.Contains(string(body), `"org/synced":{"items":1`) {
		t.Errorf("status after the run: %s", body)
	}

	// Empty body: all types of all communities; papers fails for hed.
	boom := errors.New("HTTP 503 from api.openalex.org")
	f.fail.Store(&boom)
	resp, body = f.call(t, http.MethodPost, "/sync/trigger", "", key...)
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("trigger all: %d %s", resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, &queued); err != nil {
		t.Fatal(err)
	}
	job = f.awaitSyncJob(t, queued.JobID)
	var got []string
	for _, r := range job["runs"].([]any) {
		run := r.(map[string]any)
		got = append(got, run["community_id"].(string)+" "+run["sync_type"].(string)+" "+run["status"].(string))
	}
	// Communities in id order: bids, broken, empty, hed.
	if want := "[bids github succeeded hed github succeeded hed papers failed]"; "["+strings.Join(got, " ")+"]" != want {
		t.Errorf("runs %q, want %s", got, want)
	}
	if job["status"] != "failed" || job["message"] != "Sync failed: papers for hed: HTTP 503 from api.openalex.org" {
		t.Errorf("job %v", job)
	}
	if items, _ := json.Marshal(job["items_synced"]); string(items) != `{"github":2}` {
		t.Errorf("items_synced %s", items)
	}

	resp, body = f.call(t, http.MethodGet, "/sync/jobs/no-such-job", "", key...)
	if resp.StatusCode != http.StatusNotFound || strings.TrimSpace(string(body)) != `{"detail":"Sync job 'no-such-job' not found."}` {
		t.Errorf("unknown job: %d %s", resp.StatusCode, body)
	}
	if resp, _ := f.call(t, http.MethodGet, "/sync/jobs/"+queued.JobID, ""); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a job without the admin key: %d", resp.StatusCode)
	}
}

// TestHealthCommunitiesSyncs: /health/communities gives each scheduled type's times, failures
// and last error, a warning per failing type, and degraded from three failures in a row.
func TestHealthCommunitiesSyncs(t *testing.T) {
	f := newSyncFixture(t, true)
	health := func() map[string]any {
		t.Helper()
		resp, body := f.call(t, http.MethodGet, "/health/communities", "", "X-API-Key", "admin-key")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		var out map[string]map[string]any
		if err := json.Unmarshal(body, &out); err != nil {
			t.Fatal(err)
		}
		return out["hed"]
	}
	h := health()
	syncs, _ := json.Marshal(h["syncs"])
	want := `{"github":{"age_hours":12,"consecutive_failures":0,"last_error":null,"last_sync":"2025-06-01T12:00:00.000000+00:00","next_run":"2025-06-02T03:00:00.000000+00:00"},` +
		`"papers":{"age_hours":30,"consecutive_failures":0,"last_error":null,"last_sync":"2025-05-31T18:00:00.000000+00:00","next_run":"2025-06-08T04:00:00.000000+00:00"}}`
	if string(syncs) != want {
		t.Errorf("syncs\n%s\nwant\n%s", syncs, want)
	}
	if h["sync_age_hours"] != 12.0 || h["status"] != "healthy" {
		t.Errorf("sync_age_hours %v, status %v", h["sync_age_hours"], h["status"])
	}
	boom := errors.New("HTTP 503 from api.openalex.org")
	f.fail.Store(&boom)
	hed := writeCommunities(t, map[string]string{"hed": syncHED}).Get("hed")
	for i := 1; i <= 3; i++ {
		f.runner.Run(context.Background(), hed, ingest.TypePapers, false, nil)
		h = health()
		papers := h["syncs"].(map[string]any)["papers"].(map[string]any)
		if papers["consecutive_failures"] != float64(i) || papers["last_error"] != "HTTP 503 from api.openalex.org" {
			t.Errorf("after %d failures: %v", i, papers)
		}
		warnings, _ := json.Marshal(h["warnings"])
		if !strings.Contains(string(warnings), "papers sync has failed "+string(rune('0'+i))+" times in a row: HTTP 503 from api.openalex.org") {
			t.Errorf("after %d failures, warnings %s", i, warnings)
		}
		if want := map[bool]string{true: "degraded", false: "healthy"}[i >= 3]; h["status"] != want {
			t.Errorf("after %d failures status %v, want %s", i, h["status"], want)
		}
	}
}
