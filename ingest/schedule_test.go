package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/osc-assistant/assistant/config"
)

// testCronClock is a clock the test moves: After's channels fire when Advance passes their
// time. Waiting reports how many waits are pending, so a test knows the scheduler is asleep.
type testCronClock struct {
	mu      sync.Mutex
	now     time.Time
	waits   []testCronWait
	changed *sync.Cond
}

type testCronWait struct {
	at time.Time
	ch chan time.Time
}

func newTestCronClock(now time.Time) *testCronClock {
	c := &testCronClock{now: now}
	c.changed = sync.NewCond(&c.mu)
	return c
}

func (c *testCronClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *testCronClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time, 1)
	if d <= 0 {
		ch <- c.now
		return ch
	}
	c.waits = append(c.waits, testCronWait{at: c.now.Add(d), ch: ch})
	c.changed.Broadcast()
	return ch
}

// Set moves the clock to t and fires the waits due by then.
func (c *testCronClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = t
	kept := c.waits[:0]
	for _, w := range c.waits {
		if !w.at.After(t) {
			w.ch <- t
		} else {
			kept = append(kept, w)
		}
	}
	c.waits = kept
}

// awaitSleep blocks until the scheduler waits on the clock (a pending wait exists).
func (c *testCronClock) awaitSleep() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for len(c.waits) == 0 {
		c.changed.Wait()
	}
}

// cronCommunity has a sync section with the given crons, and data for every type.
func cronCommunity(id string, crons map[string]string) *config.Community {
	c := runCommunity(id)
	c.Sync = &config.Sync{}
	for typ, cron := range crons {
		s := &config.Schedule{Cron: cron}
		switch typ {
		case TypeGitHub:
			c.Sync.GitHub = s
		case TypePapers:
			c.Sync.Papers = s
		case TypeDocstrings:
			c.Sync.Docstrings = s
		case TypeMailman:
			c.Sync.Mailman = s
		case TypeDiscourse:
			c.Sync.Discourse = s
		case TypeFAQ:
			c.Sync.FAQ = s
		case TypeBEPs:
			c.Sync.BEPs = s
		}
	}
	return c
}

// runsAt is a source that sends the clock's time on calls each time it runs, and fails when
// fail is set.
func runsAt(typ string, clk *testCronClock, calls chan<- time.Time, fail error) *runSource {
	return &runSource{typ: typ, sync: func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		calls <- clk.Now()
		return Result{}, fail
	}}
}

// TestSchedulerFiresAtItsTime: a job runs at its cron time in UTC, not before, and once per
// fire; the next fire follows.
func TestSchedulerFiresAtItsTime(t *testing.T) {
	st, dir := newRunStore(t)
	start := time.Date(2025, 6, 2, 2, 58, 0, 0, time.UTC) // a Monday
	clk := newTestCronClock(start)
	calls := make(chan time.Time, 10)
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: runsAt(TypeGitHub, clk, calls, nil)}, Store: st,
		Leases: &FileLeaser{Dir: dir}, Now: clk.Now})
	s := NewScheduler(SchedulerOptions{Runner: r, Clock: clk})
	defer s.Close()
	s.Apply([]*config.Community{cronCommunity("hed", map[string]string{TypeGitHub: "0 3 * * *"})})
	job := JobID(TypeGitHub, "hed")
	fire := time.Date(2025, 6, 2, 3, 0, 0, 0, time.UTC)
	if next, ok := s.Next(job); !ok || !next.Equal(fire) {
		t.Fatalf("Next(%s) = %v, %v; want %v", job, next, ok, fire)
	}
	if !s.Running() {
		t.Error("Running() is false after Apply")
	}
	// A second before: the scheduler wakes (its waits are at most a minute), fires nothing.
	clk.awaitSleep()
	clk.Set(fire.Add(-time.Second))
	clk.awaitSleep()
	if next, _ := s.Next(job); !next.Equal(fire) {
		t.Fatalf("a second before its time the job moved to %v", next)
	}
	clk.Set(fire)
	if at := <-calls; !at.Equal(fire) {
		t.Errorf("the job ran at %v, want %v", at, fire)
	}
	finished := func() bool { st, ok := r.State(job); return ok && !st.Running && !st.LastRun.IsZero() }
	runWaitFor(t, "the run to finish", finished)
	clk.awaitSleep()
	if next, _ := s.Next(job); !next.Equal(fire.Add(24 * time.Hour)) {
		t.Errorf("next fire after the run: %v, want the next day", next)
	}
	// Days pass while nothing wakes it (the machine slept): the missed fires are not
	// replayed, one run for the late wake-up only.
	clk.Set(fire.Add(72*time.Hour + 30*time.Minute))
	<-calls
	clk.awaitSleep()
	if next, _ := s.Next(job); !next.Equal(fire.Add(96 * time.Hour)) {
		t.Errorf("next fire after the late wake-up: %v", next)
	}
	s.Close() // waits for every run it started
	runs := 0.0
	for _, result := range []string{"succeeded", "failed", "skipped"} {
		runs += testutil.ToFloat64(r.metrics.runs.WithLabelValues("hed", TypeGitHub, result))
	}
	if runs != 2 || len(calls) != 0 {
		t.Errorf("%v runs started (%d more ran), want 2: a missed fire was replayed", runs, len(calls))
	}
}

// TestSchedulerFailingOfflineLogsOncePerFire: a source that always fails (the network is
// down) runs once per fire and logs one line per run, not in a loop; from the third failure
// the line is the spec's error.
func TestSchedulerFailingOfflineLogsOncePerFire(t *testing.T) {
	st, dir := newRunStore(t)
	start := time.Date(2025, 6, 2, 0, 0, 30, 0, time.UTC)
	clk := newTestCronClock(start)
	calls := make(chan time.Time, 10)
	logs := &runLog{}
	src := runsAt(TypePapers, clk, calls, errors.New("dial tcp: lookup api.openalex.org: no such host"))
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypePapers: src}, Store: st, Leases: &FileLeaser{Dir: dir},
		Now: clk.Now, Logger: slog.New(logs)})
	s := NewScheduler(SchedulerOptions{Runner: r, Clock: clk, Logger: slog.New(logs)})
	defer s.Close()
	s.Apply([]*config.Community{cronCommunity("hed", map[string]string{TypePapers: "0 * * * *"})}) // hourly
	job := JobID(TypePapers, "hed")
	for i := 1; i <= 3; i++ {
		fire := time.Date(2025, 6, 2, i, 0, 0, 0, time.UTC)
		clk.awaitSleep()
		clk.Set(fire.Add(-time.Minute))
		clk.awaitSleep()
		clk.Set(fire)
		<-calls
		runWaitFor(t, "the failed run to be recorded", func() bool {
			st, _ := r.State(job)
			return st.ConsecutiveFailures == i && !st.Running
		})
		// Half an hour later it has not been tried again.
		clk.awaitSleep()
		clk.Set(fire.Add(30 * time.Minute))
		clk.awaitSleep()
		if n := src.calls.Load(); n != int32(i) {
			t.Fatalf("after %d fires the source ran %d times", i, n)
		}
		if got := len(logs.messages(slog.LevelWarn)); got != i {
			t.Fatalf("after %d failed fires, %d warning lines: %q", i, got, logs.messages(slog.LevelWarn))
		}
	}
	errs := logs.messages(slog.LevelError)
	if want := "papers sync for hed has failed 3 times consecutively. Manual intervention required."; len(errs) != 1 || errs[0] != want {
		t.Errorf("error lines %q, want [%q]", errs, want)
	}
}

// TestSchedulerJobs: one job per community × type with a cron and data; a cron without data
// logs the spec's line; beps is reported as not used; a reload keeps an unchanged job's next
// fire and drops a removed one.
func TestSchedulerJobs(t *testing.T) {
	st, dir := newRunStore(t)
	clk := newTestCronClock(time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC))
	logs := &runLog{}
	hasRepos := func(c *config.Community) bool { return c.GitHub != nil }
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{
		TypeGitHub: &runSource{typ: TypeGitHub, has: hasRepos},
		TypePapers: &runSource{typ: TypePapers, has: func(*config.Community) bool { return false }},
		TypeFAQ:    &runSource{typ: TypeFAQ},
	}, Store: st, Leases: &FileLeaser{Dir: dir}})
	s := NewScheduler(SchedulerOptions{Runner: r, Clock: clk, Logger: slog.New(logs)})
	defer s.Close()
	hed := cronCommunity("hed", map[string]string{TypeGitHub: "0 3 * * *", TypePapers: "0 4 * * 0", TypeFAQ: "30 5 1 * *", TypeBEPs: "0 6 * * *", TypeDocstrings: "0 1 * * *"})
	bids := cronCommunity("bids", map[string]string{TypeGitHub: "15 2 * * 7"})
	s.Apply([]*config.Community{hed, bids, runCommunity("nosync")})
	var got []string
	for _, j := range s.Jobs() {
		got = append(got, fmt.Sprintf("%s %s %s", j.ID, j.Cron, j.Next.Format(time.RFC3339)))
	}
	want := []string{
		"faq_hed 30 5 1 * * 2025-07-01T05:30:00Z",
		"github_bids 15 2 * * 7 2025-06-08T02:15:00Z",
		"github_hed 0 3 * * * 2025-06-02T03:00:00Z",
	}
	if !slices.Equal(got, want) {
		t.Errorf("jobs\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	msgs := strings.Join(logs.messages(slog.LevelDebug), "\n")
	for _, line := range []string{
		"Community hed has sync schedule for papers but no data config, skipping",
		"sync.beps is accepted but not used",
		"no source of this sync type is available here",
	} {
		if !strings.Contains(msgs, line) {
			t.Errorf("no log line %q in:\n%s", line, msgs)
		}
	}
	// Reload: bids' cron changes, hed loses faq; hed's github keeps its next fire.
	clk.Set(time.Date(2025, 6, 2, 1, 0, 0, 0, time.UTC))
	bids2 := cronCommunity("bids", map[string]string{TypeGitHub: "0 12 * * *"})
	hed2 := cronCommunity("hed", map[string]string{TypeGitHub: "0 3 * * *"})
	s.Apply([]*config.Community{hed2, bids2})
	got = got[:0]
	for _, j := range s.Jobs() {
		got = append(got, j.ID+" "+j.Next.Format(time.RFC3339))
	}
	if want := []string{"github_bids 2025-06-02T12:00:00Z", "github_hed 2025-06-02T03:00:00Z"}; !slices.Equal(got, want) {
		t.Errorf("after the reload %q, want %q", got, want)
	}
}

// TestSchedulerSeeding: at start, in the background and one at a time, each scheduled type
// without data runs once in the order github, papers, docstrings, mailman, discourse, never
// faq, never one with data; a reload seeds again what is still empty.
func TestSchedulerSeeding(t *testing.T) {
	st, dir := newRunStore(t)
	clk := newTestCronClock(time.Date(2025, 6, 2, 0, 0, 0, 0, time.UTC))
	var mu sync.Mutex
	var order []string
	record := func(typ string) *runSource {
		return &runSource{typ: typ, sync: func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
			mu.Lock()
			order = append(order, c.ID+":"+typ)
			mu.Unlock()
			return Result{}, nil
		}}
	}
	sources := map[string]Source{}
	for _, typ := range []string{TypeGitHub, TypePapers, TypeDocstrings, TypeMailman, TypeDiscourse, TypeFAQ} {
		sources[typ] = record(typ)
	}
	r, _ := NewRunner(RunnerOptions{Sources: sources, Store: st, Leases: &FileLeaser{Dir: dir}})
	populated := map[string]bool{"hed:papers": true}
	s := NewScheduler(SchedulerOptions{Runner: r, Clock: clk, Populated: func(ctx context.Context, community, typ string) (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return populated[community+":"+typ], nil
	}})
	defer s.Close()
	all := map[string]string{TypeDiscourse: "0 3 * * *", TypeFAQ: "0 3 * * *", TypeMailman: "0 3 * * *", TypeDocstrings: "0 3 * * *",
		TypePapers: "0 3 * * *", TypeGitHub: "0 3 * * *"}
	s.Apply([]*config.Community{cronCommunity("hed", all), cronCommunity("bids", map[string]string{TypeFAQ: "0 3 * * *", TypeMailman: "0 3 * * *"})})
	want := []string{"hed:github", "hed:docstrings", "hed:mailman", "hed:discourse", "bids:mailman"}
	runWaitFor(t, "seeding", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= len(want)
	})
	mu.Lock()
	if !slices.Equal(order, want) {
		t.Errorf("seeded %q, want %q", order, want)
	}
	order = nil
	for _, k := range want[:4] {
		populated[k] = true
	}
	mu.Unlock()
	// A reload: only bids' mailing list is still empty.
	s.Apply([]*config.Community{cronCommunity("hed", all), cronCommunity("bids", map[string]string{TypeMailman: "0 3 * * *"})})
	runWaitFor(t, "the second seeding", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) >= 1
	})
	s.Close() // waits for the seeding pass to end
	if !slices.Equal(order, []string{"bids:mailman"}) {
		t.Errorf("second seeding ran %q, want [bids:mailman]", order)
	}
}
