package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// runSource is a Source written for the tests: sync runs as each test needs, has says which
// communities have data (nil: every one).
type runSource struct {
	typ   string
	has   func(*config.Community) bool
	sync  func(ctx context.Context, c *config.Community, opts RunOptions) (Result, error)
	calls atomic.Int32
}

func (s *runSource) Type() string { return s.typ }

func (s *runSource) Has(c *config.Community) bool { return s.has == nil || s.has(c) }

func (s *runSource) Sync(ctx context.Context, c *config.Community, opts RunOptions, progress func(Progress)) (Result, error) {
	s.calls.Add(1)
	if s.sync == nil {
		return Result{}, nil
	}
	return s.sync(ctx, c, opts)
}

// publishCounter is the real knowledge store, counting publishes.
type publishCounter struct {
	*knowledge.Store
	publishes atomic.Int32
}

func (c *publishCounter) Publish(ctx context.Context, id string) error {
	c.publishes.Add(1)
	return c.Store.Publish(ctx, id)
}

func newRunStore(t *testing.T) (*publishCounter, string) {
	t.Helper()
	dir := t.TempDir()
	st, err := knowledge.OpenStore(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return &publishCounter{Store: st}, dir
}

// issueWriter is a source that writes n issues of repo per run through the Tx API.
func issueWriter(st *knowledge.Store, repo string, n int) func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
	return func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		var items []knowledge.GitHubItem
		for i := 1; i <= n; i++ {
			items = append(items, knowledge.GitHubItem{Repo: repo, Type: "issue", Number: i, Title: fmt.Sprintf("Issue %d", i),
				Status: "open", URL: fmt.Sprintf("https://github.com/%s/issues/%d", repo, i), CreatedAt: "2025-06-01T12:00:00Z"})
		}
		var wrote int
		err := st.Update(ctx, c.ID, func(ctx context.Context, tx *knowledge.Tx) error {
			var err error
			wrote, err = tx.UpsertGitHubItems(items)
			return err
		})
		return Result{Items: wrote}, err
	}
}

// runLog is a slog handler keeping every record, and sending each on Records when set.
type runLog struct {
	mu      sync.Mutex
	records []slog.Record
	Records chan slog.Record
}

func (h *runLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *runLog) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	h.records = append(h.records, r.Clone())
	h.mu.Unlock()
	if h.Records != nil {
		h.Records <- r.Clone()
	}
	return nil
}
func (h *runLog) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *runLog) WithGroup(string) slog.Handler      { return h }

// messages returns the messages of the records at level or above.
func (h *runLog) messages(level slog.Level) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range h.records {
		if r.Level >= level {
			out = append(out, r.Message)
		}
	}
	return out
}

func runCommunity(id string) *config.Community {
	return &config.Community{ID: id, Name: strings.ToUpper(id), GitHub: &config.GitHub{Repos: []string{"org/" + id}}}
}

func TestRunnerRunPublishesOnce(t *testing.T) {
	st, dir := newRunStore(t)
	src := &runSource{typ: TypeGitHub}
	src.sync = issueWriter(st.Store, "org/hed", 3)
	r, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: src}, Store: st, Leases: &FileLeaser{Dir: dir + "/knowledge"}})
	if err != nil {
		t.Fatal(err)
	}
	c := runCommunity("hed")
	if _, ok := st.Info("hed"); ok {
		t.Fatal("a database is published before any run")
	}
	res, err := r.Run(context.Background(), c, TypeGitHub, false, nil)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Items != 3 {
		t.Errorf("Result.Items = %d, want 3", res.Items)
	}
	if n := st.publishes.Load(); n != 1 {
		t.Errorf("%d publishes, want 1", n)
	}
	if _, ok := st.Info("hed"); !ok {
		t.Error("no published database after the run")
	}
	// The published file holds the rows: a copy of it, opened as a working copy, is populated.
	other, err := knowledge.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	data, err := os.ReadFile(st.Path("hed"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other.Path("hed"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	if ok, err := StorePopulated(other)(context.Background(), "hed", TypeGitHub); err != nil || !ok {
		t.Errorf("the published file's github_items: populated = %v, %v; want rows", ok, err)
	}
	st0, _ := r.State(JobID(TypeGitHub, "hed"))
	if st0.LastSuccess.IsZero() || st0.ConsecutiveFailures != 0 || st0.LastItems != 3 || st0.Running {
		t.Errorf("state after a success = %+v", st0)
	}
	if got := testutil.ToFloat64(r.metrics.items.WithLabelValues("hed", TypeGitHub)); got != 3 {
		t.Errorf("assistant_sync_items_total = %v, want 3", got)
	}
	if got := testutil.ToFloat64(r.metrics.lastSuccess.WithLabelValues("hed", TypeGitHub)); got != float64(st0.LastSuccess.Unix()) {
		t.Errorf("assistant_sync_last_success_timestamp_seconds = %v, want %d", got, st0.LastSuccess.Unix())
	}
	if got := testutil.CollectAndCount(r.metrics.duration); got != 1 {
		t.Errorf("duration series = %d, want 1", got)
	}
}

// TestRunnerFailureCounters: +1 per failed run, the error text from the third on, reset by a
// success; a source's partial failure counts; what it stored before failing is published.
func TestRunnerFailureCounters(t *testing.T) {
	st, dir := newRunStore(t)
	fail := true
	write := issueWriter(st.Store, "org/hed", 1)
	src := &runSource{typ: TypeGitHub, sync: func(ctx context.Context, c *config.Community, o RunOptions) (Result, error) {
		res, err := write(ctx, c, o)
		if err != nil || !fail {
			return res, err
		}
		res.Failed = []SourceError{{Source: "org/hed", Err: errors.New("HTTP 503 from api.github.com")}}
		return res, nil
	}}
	logs := &runLog{}
	r, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: src}, Store: st, Leases: &FileLeaser{Dir: dir + "/knowledge"},
		Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	c := runCommunity("hed")
	job := JobID(TypeGitHub, "hed")
	for i := 1; i <= 4; i++ {
		_, err := r.Run(context.Background(), c, TypeGitHub, false, nil)
		var fe *FailedError
		if !errors.As(err, &fe) || len(fe.Failed) != 1 {
			t.Fatalf("run %d: err = %v, want a FailedError naming the source", i, err)
		}
		s, _ := r.State(job)
		if s.ConsecutiveFailures != i || s.LastError != "org/hed: HTTP 503 from api.github.com" {
			t.Errorf("run %d: state %+v", i, s)
		}
	}
	if _, ok := st.Info("hed"); !ok {
		t.Error("a failed run's stored rows were not published")
	}
	errs := logs.messages(slog.LevelError)
	want := []string{
		"github sync for hed has failed 3 times consecutively. Manual intervention required.",
		"github sync for hed has failed 4 times consecutively. Manual intervention required.",
	}
	if fmt.Sprint(errs) != fmt.Sprint(want) {
		t.Errorf("error logs %q, want %q", errs, want)
	}
	if warns := logs.messages(slog.LevelWarn); len(warns) != 4 {
		t.Errorf("%d warning-or-error lines for 4 failed runs, want one per run: %q", len(warns), warns)
	}
	if got := testutil.ToFloat64(r.metrics.failures.WithLabelValues("hed", TypeGitHub)); got != 4 {
		t.Errorf("assistant_sync_failures_total = %v, want 4", got)
	}
	fail = false
	if _, err := r.Run(context.Background(), c, TypeGitHub, false, nil); err != nil {
		t.Fatal(err)
	}
	if s, _ := r.State(job); s.ConsecutiveFailures != 0 || s.LastError != "" {
		t.Errorf("after a success: state %+v, want the counter reset", s)
	}
	if got := testutil.ToFloat64(r.metrics.consecutive.WithLabelValues("hed", TypeGitHub)); got != 0 {
		t.Errorf("assistant_sync_consecutive_failures = %v after a success", got)
	}
}

func TestRunnerRefuses(t *testing.T) {
	st, dir := newRunStore(t)
	src := &runSource{typ: TypeGitHub, has: func(c *config.Community) bool { return c.GitHub != nil }}
	r, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: src}, Store: st, Leases: &FileLeaser{Dir: dir}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := r.Run(ctx, runCommunity("hed"), TypePapers, false, nil); !errors.Is(err, ErrNoSource) {
		t.Errorf("a type without a source: %v", err)
	}
	if _, err := r.Run(ctx, &config.Community{ID: "bare"}, TypeGitHub, false, nil); !errors.Is(err, ErrNoData) {
		t.Errorf("a community without data: %v", err)
	}
	if _, err := r.Run(ctx, runCommunity("../x"), TypeGitHub, false, nil); !errors.Is(err, knowledge.ErrInvalidID) {
		t.Errorf("a bad id: %v", err)
	}
	if src.calls.Load() != 0 {
		t.Errorf("the source ran %d times", src.calls.Load())
	}
	if _, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypePapers: src}, Store: st, Leases: &FileLeaser{Dir: dir}}); err == nil {
		t.Error("a source under another type's key: want an error")
	}
}

// TestRunnerOneRunAtATime: a second run of a running job is skipped (in this process, and by
// the file lease for a second runner on the same data directory); another type runs.
func TestRunnerOneRunAtATime(t *testing.T) {
	st, dir := newRunStore(t)
	entered, release := make(chan struct{}), make(chan struct{})
	var block atomic.Bool
	block.Store(true)
	slow := &runSource{typ: TypeGitHub, sync: func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		if block.Load() {
			entered <- struct{}{}
			<-release
		}
		return Result{Items: 1}, nil
	}}
	other := &runSource{typ: TypePapers}
	leases := &FileLeaser{Dir: dir + "/knowledge"}
	r1, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: slow, TypePapers: other}, Store: st, Leases: leases})
	r2, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: slow}, Store: st, Leases: leases})
	c := runCommunity("hed")
	done := make(chan error)
	go func() {
		_, err := r1.Run(context.Background(), c, TypeGitHub, false, nil)
		done <- err
	}()
	<-entered
	if _, err := r1.Run(context.Background(), c, TypeGitHub, false, nil); !errors.Is(err, ErrRunning) {
		t.Errorf("second run in the same runner: %v, want ErrRunning", err)
	}
	if _, err := r2.Run(context.Background(), c, TypeGitHub, false, nil); !errors.Is(err, ErrRunning) {
		t.Errorf("second run by another runner on the same data directory: %v, want ErrRunning", err)
	}
	if _, err := r1.Run(context.Background(), c, TypePapers, false, nil); err != nil {
		t.Errorf("another type while github runs: %v", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := slow.calls.Load(); n != 1 {
		t.Errorf("the github source ran %d times, want 1", n)
	}
	if got := testutil.ToFloat64(r1.metrics.runs.WithLabelValues("hed", TypeGitHub, "skipped")); got != 1 {
		t.Errorf("skipped runs = %v, want 1", got)
	}
	// Free again, it runs (the lock file stays; the lock does not).
	block.Store(false)
	if _, err := r2.Run(context.Background(), c, TypeGitHub, false, nil); err != nil {
		t.Errorf("a run after the first finished: %v", err)
	}
}

func TestFileLeaser(t *testing.T) {
	dir := t.TempDir()
	l := &FileLeaser{Dir: dir}
	ctx := context.Background()
	a, err := l.Acquire(ctx, "hed", "github")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir + "/hed.github.lock"); err != nil {
		t.Errorf("lock file: %v", err)
	}
	if _, err := l.Acquire(ctx, "hed", "github"); !errors.Is(err, ErrLeaseHeld) {
		t.Errorf("second Acquire: %v, want ErrLeaseHeld", err)
	}
	b, err := l.Acquire(ctx, "hed", "papers")
	if err != nil {
		t.Errorf("another type: %v", err)
	} else {
		b.Release(ctx)
	}
	if err := a.Renew(ctx); err != nil {
		t.Errorf("Renew: %v", err)
	}
	a.Release(ctx)
	c, err := l.Acquire(ctx, "hed", "github")
	if err != nil {
		t.Errorf("Acquire after Release: %v", err)
	} else {
		c.Release(ctx)
	}
	if _, err := l.Acquire(ctx, "../etc", "github"); !errors.Is(err, knowledge.ErrInvalidID) {
		t.Errorf("a bad id: %v", err)
	}
}

// waitFor polls cond (state another goroutine changes) until it holds or a generous deadline.
func runWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestFailedErrorText: a source's error that already names its first failure is not repeated.
func TestFailedErrorText(t *testing.T) {
	first := SourceError{Source: "org/a", Err: errors.New("HTTP 500")}
	second := SourceError{Source: "org/b", Err: errors.New("HTTP 404")}
	e := &FailedError{Failed: []SourceError{first, second}, Err: fmt.Errorf("github: 2 of 2 repositories failed: org/a: %w", first.Err)}
	if got, want := e.Error(), "github: 2 of 2 repositories failed: org/a: HTTP 500; org/b: HTTP 404"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := (&FailedError{Failed: []SourceError{first, second}}).Error(), "org/a: HTTP 500; org/b: HTTP 404"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

// TestRunnerLastErrorBounded: an error of any length is kept cut (it reaches
// /health/communities).
func TestRunnerLastErrorBounded(t *testing.T) {
	st, dir := newRunStore(t)
	src := &runSource{typ: TypeGitHub, sync: func(context.Context, *config.Community, RunOptions) (Result, error) {
		return Result{}, errors.New(strings.Repeat("é", 100000))
	}}
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: src}, Store: st, Leases: &FileLeaser{Dir: dir}})
	r.Run(context.Background(), runCommunity("hed"), TypeGitHub, false, nil)
	s, _ := r.State(JobID(TypeGitHub, "hed"))
	if n := len([]rune(s.LastError)); n > maxLastError+1 || n < maxLastError {
		t.Errorf("last error of %d characters, want %d and a mark", n, maxLastError)
	}
}

// TestRunnerRecoversPanic: a source that panics (a parser's bug met on outside data) fails
// that run only: the panic becomes the run's *FailedError, logged with its stack, what the
// source committed before it is published and what it was writing is rolled back, the lease
// is released, and the next run of the job runs and writes.
func TestRunnerRecoversPanic(t *testing.T) {
	st, dir := newRunStore(t)
	write := issueWriter(st.Store, "org/hed", 1)
	var panics atomic.Bool
	panics.Store(true)
	src := &runSource{typ: TypeGitHub, sync: func(ctx context.Context, c *config.Community, o RunOptions) (Result, error) {
		res, err := write(ctx, c, o)
		if err != nil || !panics.Load() {
			return res, err
		}
		err = st.Update(ctx, c.ID, func(ctx context.Context, tx *knowledge.Tx) error {
			if _, err := tx.UpsertGitHubItems([]knowledge.GitHubItem{{Repo: "org/hed", Type: "issue", Number: 99, Title: "Half written",
				Status: "open", URL: "https://github.com/org/hed/issues/99", CreatedAt: "2025-06-01T12:00:00Z"}}); err != nil {
				return err
			}
			fields := strings.Split("a field too few", ",")
			_ = fields[3] // panics: index out of range
			return nil
		})
		return res, err
	}}
	logs := &runLog{}
	r, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: src}, Store: st, Leases: &FileLeaser{Dir: dir + "/knowledge"},
		Logger: slog.New(logs)})
	if err != nil {
		t.Fatal(err)
	}
	c := runCommunity("hed")
	_, err = r.Run(context.Background(), c, TypeGitHub, false, nil)
	var fe *FailedError
	var pe *PanicError
	if !errors.As(err, &fe) || !errors.As(err, &pe) || !strings.Contains(err.Error(), "the source panicked: runtime error: index out of range") {
		t.Fatalf("a run whose source panicked: %v, want a FailedError with the panic", err)
	}
	if s, _ := r.State(JobID(TypeGitHub, "hed")); s.ConsecutiveFailures != 1 || s.Running || !strings.Contains(s.LastError, "panicked") {
		t.Errorf("state after the panic: %+v", s)
	}
	var stack string
	logs.mu.Lock()
	for _, rec := range logs.records {
		if rec.Level == slog.LevelError && rec.Message == "sync source panicked" {
			rec.Attrs(func(a slog.Attr) bool {
				if a.Key == "stack" {
					stack = a.Value.String()
				}
				return true
			})
		}
	}
	logs.mu.Unlock()
	if !strings.Contains(stack, "runner_test.go") {
		t.Errorf("no error log with the panic's stack; stack %q", stack)
	}
	if n := st.publishes.Load(); n != 1 {
		t.Errorf("%d publishes after the failed run, want 1", n)
	}

	// The next run is not refused (lease, writer lock, working copy all free) and writes.
	panics.Store(false)
	write = issueWriter(st.Store, "org/hed", 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if res, err := r.Run(ctx, c, TypeGitHub, false, nil); err != nil || res.Items != 2 {
		t.Fatalf("the run after the panic: %+v, %v", res, err)
	}
	other, err := knowledge.OpenStore(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	data, err := os.ReadFile(st.Path("hed"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(other.Path("hed"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	status, err := other.SyncStatus(context.Background(), "hed")
	if err != nil || status.GitHubTotal != 2 {
		t.Errorf("published after the second run: %d items, %v; want 2 (the half-written one rolled back)", status.GitHubTotal, err)
	}
}
