package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/chat"
	"github.com/osc-assistant/assistant/chat/chattest"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/ingest"
	"github.com/osc-assistant/assistant/ingest/ingesttest"
	"github.com/osc-assistant/assistant/knowledge"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/store/storetest"
)

// syncCommunities writes a communities directory: hed with two repositories and a GitHub
// schedule, bids with one repository, nemar with none.
func syncCommunities(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for id, y := range map[string]string{
		"hed":   "id: hed\nname: HED\ndescription: d\ngithub:\n  repos: [hed-standard/hed-specification, hed-standard/hed-python]\nsync:\n  github: {cron: \"0 3 * * *\"}\n",
		"bids":  "id: bids\nname: BIDS\ndescription: d\ngithub:\n  repos: [bids-standard/bids-specification]\n",
		"nemar": "id: nemar\nname: NEMAR\ndescription: d\n",
	} {
		if err := os.MkdirAll(filepath.Join(dir, id), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, id, "config.yaml"), []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func runSyncCmd(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return env[k] }
	code := run(context.Background(), append([]string{"assistant", "sync"}, args...), getenv, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// TestSyncCommand: assistant sync github fills each community's database from the (fake)
// GitHub API, prints a line per repository and per run, and exits 0; a second run with one
// issue changed updates it; --community limits it to one community.
func TestSyncCommand(t *testing.T) {
	gh := ingesttest.NewGitHub(t)
	gh.Add("hed-standard/hed-specification", ingesttest.Issue{Number: 1, Title: "Onset", State: "open"},
		ingesttest.Issue{Number: 2, Title: "Offset", State: "open", PR: true})
	gh.Add("hed-standard/hed-python", ingesttest.Issue{Number: 7, Title: "Schema", State: "closed"})
	gh.Add("bids-standard/bids-specification", ingesttest.Issue{Number: 3, Title: "Sidecars", State: "open"})
	comms, data := syncCommunities(t), t.TempDir()
	env := map[string]string{"ASSISTANT_GITHUB_API_URL": gh.URL, "ASSISTANT_DATA_DIR": data}

	code, out, errOut := runSyncCmd(t, env, "--communities", comms, "github")
	if code != 0 {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	for _, want := range []string{
		"github hed hed-standard/hed-specification: 2 items, 1 page",
		"github hed hed-standard/hed-python: 1 item, 1 page",
		"github hed: 3 items in ",
		"github bids bids-standard/bids-specification: 1 item, 1 page",
		"github bids: 1 item in ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no line %q in:\n%s", want, out)
		}
	}
	if strings.Contains(out, "nemar") {
		t.Errorf("a community without repositories was synced:\n%s", out)
	}
	st, err := knowledge.OpenStore(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	status, err := st.SyncStatus(context.Background(), "hed")
	if err != nil || status.GitHubTotal != 3 || status.PRs != 1 || status.OpenItems != 2 {
		t.Errorf("hed's published database: %+v, %v", status, err)
	}

	// The issue is closed and renamed upstream; a sync of hed alone updates it.
	gh.Change("hed-standard/hed-specification", 1, func(is *ingesttest.Issue) { is.State, is.Title = "closed", "Onset (fixed)" })
	code, out, errOut = runSyncCmd(t, env, "--communities", comms, "--community", "hed", "github")
	if code != 0 {
		t.Fatalf("second run: exit %d\n%s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "bids") {
		t.Errorf("--community hed synced bids:\n%s", out)
	}
	status, err = st.SyncStatus(context.Background(), "hed")
	if err != nil || status.OpenItems != 1 || status.GitHubTotal != 3 {
		t.Errorf("after the change: %+v, %v", status, err)
	}
}

// TestSyncCommandFails: a source that cannot be reached makes the run fail, printed, and the
// command exit 1.
func TestSyncCommandFails(t *testing.T) {
	comms := syncCommunities(t)
	// A port nothing listens on: the connection is refused at once.
	env := map[string]string{"ASSISTANT_GITHUB_API_URL": "http://127.0.0.1:1", "ASSISTANT_DATA_DIR": t.TempDir()}
	code, out, _ := runSyncCmd(t, env, "--community", "bids", "--communities", comms, "github")
	if code != 1 || !strings.Contains(out, "github bids: failed after ") || !strings.Contains(out, "bids-standard/bids-specification") {
		t.Errorf("exit %d, stdout:\n%s", code, out)
	}
}

func TestSyncCommandUsage(t *testing.T) {
	comms := syncCommunities(t)
	env := map[string]string{"ASSISTANT_DATA_DIR": t.TempDir()}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "want one sync type, got 0 arguments"},
		{[]string{"github", "papers"}, "want one sync type, got 2 arguments"},
		{[]string{"beps"}, `unknown sync type "beps"`},
		{[]string{"--community", "nope", "--communities", comms, "github"}, `no community "nope"`},
		{[]string{"--bogus", "github"}, "flag provided but not defined"},
	} {
		code, _, errOut := runSyncCmd(t, env, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("%q: exit %d, stderr %q", tc.args, code, errOut)
		}
	}
	// A community with nothing of the type: said, and no failure.
	code, out, _ := runSyncCmd(t, env, "--communities", comms, "--community", "nemar", "github")
	if code != 0 || !strings.Contains(out, "github nemar: nothing to sync") {
		t.Errorf("nemar github: exit %d, %q", code, out)
	}
	// Flags after the type are read too.
	code, out, _ = runSyncCmd(t, env, "github", "--communities", comms, "--community", "nemar")
	if code != 0 || !strings.Contains(out, "github nemar: nothing to sync") {
		t.Errorf("flags after the type: exit %d, %q", code, out)
	}
}

// TestSyncInit: sync init publishes an empty database per community, so a search answers
// "no results" rather than "not initialised"; a second init leaves them.
func TestSyncInit(t *testing.T) {
	comms, data := syncCommunities(t), t.TempDir()
	env := map[string]string{"ASSISTANT_DATA_DIR": data}
	code, out, errOut := runSyncCmd(t, env, "--communities", comms, "init")
	if code != 0 {
		t.Fatalf("exit %d: %s %s", code, out, errOut)
	}
	for _, id := range []string{"hed", "bids", "nemar"} {
		if _, err := os.Stat(filepath.Join(data, "knowledge", id+".db")); err != nil {
			t.Errorf("%s: %v", id, err)
		}
		if !strings.Contains(out, id+": created ") {
			t.Errorf("no created line for %s in %q", id, out)
		}
	}
	st, err := knowledge.OpenStore(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	hits, err := st.SearchDiscussions(context.Background(), "hed", "onset", knowledge.DiscussionOptions{IncludeIssues: true, IncludePRs: true})
	if err != nil || len(hits) != 0 {
		t.Errorf("a search of the new database: %v, %v; want no rows and no error", hits, err)
	}
	_, out, _ = runSyncCmd(t, env, "--communities", comms, "--community", "hed", "init")
	if !strings.Contains(out, "hed: "+filepath.Join(data, "knowledge", "hed.db")+" exists") {
		t.Errorf("second init: %q", out)
	}
}

// TestServeSyncRoutes: assistant serve serves the sync routes from its knowledge store and
// scheduler, and ASSISTANT_SYNC_ENABLED=false turns the scheduler off.
func TestServeSyncRoutes(t *testing.T) {
	for _, tc := range []struct {
		enabled string
		want    bool
	}{{"true", true}, {"false", false}} {
		srv := startServerWith(t, map[string]string{"ASSISTANT_SYNC_ENABLED": tc.enabled, "ASSISTANT_GITHUB_API_URL": "http://127.0.0.1:1",
			"ASSISTANT_OPENALEX_URL": "http://127.0.0.1:1"}, nil)
		resp, err := srv.Client().Get(srv.URL + "/sync/status?community_id=hed")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var st struct {
			Scheduler struct {
				Enabled bool              `json:"enabled"`
				Jobs    map[string]string `json:"jobs"`
			} `json:"scheduler"`
		}
		if err := json.Unmarshal(body, &st); resp.StatusCode != http.StatusOK || err != nil {
			t.Fatalf("sync enabled %s: %d %s", tc.enabled, resp.StatusCode, body)
		}
		if st.Scheduler.Enabled != tc.want || (len(st.Scheduler.Jobs) > 0) != tc.want {
			t.Errorf("ASSISTANT_SYNC_ENABLED=%s: scheduler %+v", tc.enabled, st.Scheduler)
		}
		if tc.want {
			if _, ok := st.Scheduler.Jobs["github_hed"]; !ok {
				t.Errorf("no github_hed job: %s", body)
			}
		}
	}
}

// TestOpenRouterModel: the FAQ's model calls the agent's model at OpenRouter (here a fake
// OpenAI-compatible API) with the platform key, and prices the call from the price table.
func TestOpenRouterModel(t *testing.T) {
	fake := chattest.NewOpenAI(func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"0.", "85"}, Usage: [2]int{1000, 10}}
	})
	defer fake.Close()
	m := &openRouterModel{key: "sk-or-platform", base: fake.URL + "/v1", prices: map[string]chat.Price{"openai/gpt-4o-mini": {InputPerMTok: 0.15, OutputPerMTok: 0.6}}}
	text, u, err := m.Complete(context.Background(), config.Agent{Model: "openai/gpt-4o-mini"}, "", "Rate the value of this thread", 16)
	if err != nil || text != "0.85" {
		t.Fatalf("Complete = %q, %v", text, err)
	}
	if want := (1000*0.15 + 10*0.6) / 1e6; u.InputTokens != 1000 || u.OutputTokens != 10 || u.CostUSD != want {
		t.Errorf("usage %+v, want 1000/10 tokens and $%g", u, want)
	}
	reqs := fake.Requests()
	if len(reqs) != 1 || reqs[0].Body["model"] != "openai/gpt-4o-mini" || reqs[0].Header.Get("Authorization") != "Bearer sk-or-platform" ||
		!reqs[0].Contains("Rate the value of this thread") {
		t.Errorf("requests %+v", reqs)
	}
	if _, _, err := (&openRouterModel{}).Complete(context.Background(), config.Agent{Model: "x"}, "", "p", 16); !errors.Is(err, errNoOpenRouterKey) {
		t.Errorf("without a key: %v", err)
	}
}

// TestBudgetSpend: the FAQ's model costs are added to the community's budget totals, and once
// the daily limit is reached the next call is refused (the run stops).
func TestBudgetSpend(t *testing.T) {
	mem := store.NewMemory(store.DefaultLimits(), nil, nil)
	b := newBudgetSpend(mem, nil, nil)
	set := &config.Set{Communities: []*config.Community{ // sorted by id, as Load makes them
		{ID: "free"},
		{ID: "hed", Budget: &config.Budget{DailyLimitUSD: 1, MonthlyLimitUSD: 10}},
	}}
	b.set.Store(set)
	ctx := context.Background()
	if err := b.spend(ctx, "hed", ingest.Usage{CostUSD: 0.6}); err != nil {
		t.Fatalf("first call: %v", err)
	}
	if day, _, _ := mem.Costs(ctx, "hed"); day != 0.6 {
		t.Errorf("recorded %v, want 0.6", day)
	}
	var ref *chat.RefusalError
	if err := b.spend(ctx, "hed", ingest.Usage{CostUSD: 0.5}); !errors.As(err, &ref) {
		t.Errorf("over the daily limit: %v, want a refusal", err)
	}
	if err := b.spend(ctx, "free", ingest.Usage{CostUSD: 5}); err != nil {
		t.Errorf("a community without a budget: %v", err)
	}
}

// TestEngineRunner: the docstring extractor runs in the real Python engine through
// engineRunner, parsing (never running) the files it is given.
func TestEngineRunner(t *testing.T) {
	dir := os.Getenv("ASSISTANT_ENGINE_DIR")
	if dir == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("ASSISTANT_ENGINE_DIR is not set under CI=true")
		}
		t.Skip("ASSISTANT_ENGINE_DIR is not set (make engine)")
	}
	eng, err := openEngine(context.Background(), dir, t.TempDir(), 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close(context.Background())
	x := ingest.NewPythonExtractor(engineRunner{eng}, nil)
	src := "\"\"\"Tools for events.\"\"\"\nimport os\nos.system('touch /tmp/never')\n\ndef onset(x):\n    \"\"\"Mark an onset.\"\"\"\n"
	files, err := x.Docstrings(context.Background(), map[string][]byte{"pkg/events.py": []byte(src)})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(files["pkg/events.py"])
	if !strings.Contains(string(got), "Mark an onset.") || !strings.Contains(string(got), "Tools for events.") {
		t.Errorf("extracted %s", got)
	}
}

// faqCommunities writes a community with a mailing list of four threads in its database
// (two authors each), FAQ generation by openai/gpt-4o-mini (priced) and a daily budget of
// $0.20; it returns the communities and data directories.
func faqCommunities(t *testing.T) (string, string) {
	t.Helper()
	dir, data := t.TempDir(), t.TempDir()
	y := "id: hed\nname: HED\ndescription: d\n" +
		"mailman:\n  - list_name: hed-list\n    base_url: https://mail.example.org/pipermail/hed-list/\n" +
		"faq_generation:\n  evaluation_agent: {model: openai/gpt-4o-mini}\n  summary_agent: {model: openai/gpt-4o-mini}\n" +
		"  quality_threshold: 0.7\n  sources:\n    mailman: {enabled: true, min_messages: 2, min_participants: 2}\n" +
		"budget: {daily_limit_usd: 0.2, monthly_limit_usd: 10}\n"
	if err := os.MkdirAll(filepath.Join(dir, "hed"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "hed", "config.yaml"), []byte(y), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := knowledge.OpenStore(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var ms []knowledge.Message
	for i := range 8 {
		id, root := fmt.Sprintf("%06d", 100+i), fmt.Sprintf("%06d", 100+i-i%2)
		ms = append(ms, knowledge.Message{List: "hed-list", MessageID: id, ThreadID: root, Subject: "Question " + root,
			Author: []string{"Alice", "Bob"}[i%2], Date: "Mon Feb 5 10:00:00 CET 2024", Body: "Body " + id,
			URL: "https://mail.example.org/pipermail/hed-list/2024/" + id + ".html", Year: 2024})
	}
	ctx := context.Background()
	if err := st.Update(ctx, "hed", func(_ context.Context, tx *knowledge.Tx) error {
		_, err := tx.UpsertMessages(ms)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := st.Publish(ctx, "hed"); err != nil {
		t.Fatal(err)
	}
	return dir, data
}

// TestSyncFAQSpendsTheBudget: assistant sync faq records its model calls' cost against the
// community's budget and stops once it is spent: in the run's own totals without Redis (the
// first call's $0.15 fits in $0.20, the second reaches it, the other two threads wait), and
// in the servers' totals in Redis, where a budget spent before the run costs not one call.
// Without a key the run fails at once, saying so, without a call.
func TestSyncFAQSpendsTheBudget(t *testing.T) {
	fake := chattest.NewOpenAI(func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"0.1"}, Usage: [2]int{1_000_000, 0}} // $0.15 with gpt-4o-mini
	})
	defer fake.Close()
	comms, data := faqCommunities(t)
	env := map[string]string{"ASSISTANT_DATA_DIR": data, "OPENROUTER_BASE_URL": fake.URL + "/v1"}

	code, out, errOut := runSyncCmd(t, env, "--communities", comms, "faq")
	if code != 1 || strings.Contains(errOut+out, "OPENROUTER_API_KEY") == false {
		t.Errorf("without a key: exit %d\n%s\n%s", code, out, errOut)
	}
	if n := len(fake.Requests()); n != 0 {
		t.Fatalf("%d model calls without a key", n)
	}

	env["OPENROUTER_API_KEY"] = "sk-or-platform"
	code, out, errOut = runSyncCmd(t, env, "--communities", comms, "faq")
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d model calls, want 2 (the budget of $0.20 reached by the second)\n%s\n%s", n, out, errOut)
	}
	if code != 1 || !strings.Contains(out, "budget") || !strings.Contains(errOut, "this run's budget alone") {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}

	url := storetest.RedisURL(t)
	prefix := fmt.Sprintf("test-%d:", time.Now().UnixNano())
	rs, err := store.NewRedis(context.Background(), store.RedisOptions{URL: url, Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	if _, _, err := rs.AddCost(context.Background(), "hed", 0.25); err != nil {
		t.Fatal(err)
	}
	before := len(fake.Requests())
	code, out, errOut = runSyncCmd(t, env, "--communities", comms, "--redis-url", url, "--redis-prefix", prefix, "faq")
	if n := len(fake.Requests()) - before; n != 0 || code != 1 || !strings.Contains(out, "budget") {
		t.Errorf("with the servers' budget spent: %d calls, exit %d\n%s\n%s", n, code, out, errOut)
	}
	if day, _, _ := rs.Costs(context.Background(), "hed"); day != 0.25 {
		t.Errorf("Redis totals %v, want 0.25 untouched", day)
	}
}

// TestOpenRouterModelFailures: the provider's answers that say the model cannot be used now
// (a rate limit, an outage, a refused key) are ingest.ErrModelUnavailable and a bad request
// is not; a provider that never answers ends with the call's context; Ready refuses a missing
// key; a model missing from the price table is warned of once, not per call.
func TestOpenRouterModelFailures(t *testing.T) {
	var status atomic.Int32
	fake := chattest.NewOpenAI(func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"0.5"}, Status: int(status.Load()), Usage: [2]int{10, 1}}
	})
	defer fake.Close()
	var logs bytes.Buffer
	m := &openRouterModel{key: "sk-or-platform", base: fake.URL + "/v1", prices: defaultPrices, log: slog.New(slog.NewTextHandler(&logs, nil))}
	ctx, agent := context.Background(), config.Agent{Model: "openai/gpt-4o-mini"}
	for code, want := range map[int]bool{429: true, 502: true, 503: true, 401: true, 402: true, 400: false, 404: false} {
		status.Store(int32(code))
		_, _, err := m.Complete(ctx, agent, "", "p", 16)
		if err == nil || errors.Is(err, ingest.ErrModelUnavailable) != want {
			t.Errorf("status %d: %v, want unavailable %v", code, err, want)
		}
	}
	status.Store(0)
	unpriced := config.Agent{Model: "vendor/unlisted-model"}
	for range 3 {
		if _, u, err := m.Complete(ctx, unpriced, "", "p", 16); err != nil || u.CostUSD != 0 {
			t.Fatalf("unpriced: %+v, %v", u, err)
		}
	}
	if n := strings.Count(logs.String(), "not in the price table"); n != 1 || !strings.Contains(logs.String(), "vendor/unlisted-model") {
		t.Errorf("%d warnings of the unpriced model:\n%s", n, logs.String())
	}
	if (&openRouterModel{}).Ready() == nil || m.Ready() != nil {
		t.Error("Ready does not tell a missing key")
	}

	done := make(chan struct{})
	stalled := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer stalled.Close()
	defer close(done) // before Close, which waits for the handler
	s := &openRouterModel{key: "k", base: stalled.URL + "/v1", client: faqHTTPClient}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, _, err := s.Complete(cctx, agent, "", "p", 16); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a provider that never answers: %v, want the call's deadline", err)
	}
}

// TestLiveSearchSavesItsPapers: a live search's papers are saved in the background (§6.6)
// and are searchable after the next publish; while one save waits for the community's writer
// (a sync's transaction), another search is answered but not saved, so searches never pile up
// writers.
func TestLiveSearchSavesItsPapers(t *testing.T) {
	oa := ingesttest.NewOpenAlex(t)
	oa.Add(ingesttest.Work{ID: "W1", Title: "Event tagging study", PublicationDate: "2025-01-02"},
		ingesttest.Work{ID: "W2", Title: "Sidecar schema paper", PublicationDate: "2024-03-04"})
	st, err := knowledge.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &syncService{store: st, papers: ingest.NewPapers(ingest.PapersOptions{Store: st, OpenAlexURL: oa.URL}), log: slog.New(slog.DiscardHandler)}
	live := s.liveSearch()
	ctx := context.Background()

	// A sync holds hed's writer until release is closed.
	held, release := make(chan struct{}), make(chan struct{})
	go st.Update(ctx, "hed", func(context.Context, *knowledge.Tx) error { close(held); <-release; return nil })
	<-held
	for _, q := range []string{"event tagging", "sidecar schema"} {
		text, err := live(ctx, "hed", q, 5)
		if err != nil || !strings.Contains(text, "Most recent papers (live search)") {
			t.Fatalf("live %q: %q, %v", q, text, err)
		}
	}
	close(release)
	s.saves.Wait()
	if err := st.Publish(ctx, "hed"); err != nil {
		t.Fatal(err)
	}
	for q, want := range map[string]int{"event tagging": 1, "sidecar schema": 0} {
		got, err := st.SearchPapers(ctx, "hed", q, 5)
		if err != nil || len(got) != want {
			t.Errorf("papers for %q: %+v, %v; want %d", q, got, err, want)
		}
	}

	// With no save running, the next search is saved.
	if _, err := live(ctx, "hed", "sidecar schema", 5); err != nil {
		t.Fatal(err)
	}
	s.saves.Wait()
	if err := st.Publish(ctx, "hed"); err != nil {
		t.Fatal(err)
	}
	if got, err := st.SearchPapers(ctx, "hed", "sidecar schema", 5); err != nil || len(got) != 1 {
		t.Errorf("after a second search: %+v, %v", got, err)
	}
}

// TestLiveSearchNotSavedAfterClose: once the service is closing, a live search is answered
// but its papers are not saved (the store may be closed under a save).
func TestLiveSearchNotSavedAfterClose(t *testing.T) {
	oa := ingesttest.NewOpenAlex(t)
	oa.Add(ingesttest.Work{ID: "W1", Title: "Event tagging study", PublicationDate: "2025-01-02"})
	st, err := knowledge.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := &syncService{store: st, papers: ingest.NewPapers(ingest.PapersOptions{Store: st, OpenAlexURL: oa.URL}), log: slog.New(slog.DiscardHandler)}
	s.closeSaves()
	ctx := context.Background()
	if text, err := s.liveSearch()(ctx, "hed", "event tagging", 5); err != nil || !strings.Contains(text, "Event tagging study") {
		t.Fatalf("live search after close: %q, %v", text, err)
	}
	s.saves.Wait()
	_ = st.Publish(ctx, "hed") // publishes what a save wrote, if one ran
	if got, _ := st.SearchPapers(ctx, "hed", "event tagging", 5); len(got) != 0 {
		t.Errorf("a live search's papers were saved after Close: %+v", got)
	}
}

// TestOpenRouterModelCutShort: a call cut short after the request went out (here a stream
// that stalls after its first chunk, ended by the call's deadline) is charged an estimate,
// since the provider bills it and its usage would only have come in the last chunk.
func TestOpenRouterModelCutShort(t *testing.T) {
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"The question is"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	defer srv.Close()
	defer close(done)
	m := &openRouterModel{key: "k", base: srv.URL + "/v1", prices: defaultPrices, client: faqHTTPClient}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	prompt := strings.Repeat("a thread's text ", 1000) // 16,000 bytes
	_, u, err := m.Complete(ctx, config.Agent{Model: "openai/gpt-4o-mini"}, "", prompt, 500)
	if err == nil || u.InputTokens < 3000 || u.CostUSD <= 0 {
		t.Errorf("cut short: %+v, %v; want an error and an estimated, priced usage", u, err)
	}
}
