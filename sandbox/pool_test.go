package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// The pool tests start real worker processes of the real assistant binary, built once per test
// run (go build ./cmd/assistant into a temporary directory), with the real engine; like the
// engine tests they skip when the engine is not built, and fail under CI=true.

var poolShared struct {
	binOnce sync.Once
	binDir  string
	bin     string
	binErr  error

	fastOnce sync.Once
	fast     *Engine
	fastErr  error
}

// cleanupPoolTests is called by TestMain.
func cleanupPoolTests() {
	if poolShared.fast != nil {
		_ = poolShared.fast.Close(context.Background())
	}
	if poolShared.binDir != "" {
		_ = os.RemoveAll(poolShared.binDir)
	}
}

// workerBinary returns the path of a freshly built assistant binary.
func workerBinary(tb testing.TB) string {
	tb.Helper()
	testEngine(tb) // skips without an engine
	poolShared.binOnce.Do(func() {
		dir, err := os.MkdirTemp("", "assistant-pool-test-")
		if err != nil {
			poolShared.binErr = err
			return
		}
		poolShared.binDir = dir
		bin := filepath.Join(dir, "assistant")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/assistant")
		cmd.Dir = ".."
		if out, err := cmd.CombinedOutput(); err != nil {
			poolShared.binErr = fmt.Errorf("go build ./cmd/assistant: %v\n%s", err, out)
			return
		}
		poolShared.bin = bin
	})
	if poolShared.binErr != nil {
		tb.Fatal(poolShared.binErr)
	}
	return poolShared.bin
}

// fastEngine returns a shared in-process Engine in fast mode.
func fastEngine(tb testing.TB) *Engine {
	tb.Helper()
	strict := testEngine(tb)
	poolShared.fastOnce.Do(func() {
		poolShared.fast, poolShared.fastErr = New(context.Background(), Options{
			Dir:              strict.dir,
			CacheDir:         testCacheDir(),
			MemoryLimitPages: 1024 << 20 / PageSize,
			Mode:             ModeFast,
		})
	})
	if poolShared.fastErr != nil {
		tb.Fatal(poolShared.fastErr)
	}
	return poolShared.fast
}

// syncBuffer collects the workers' logs; the test prints them if it fails.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// newTestPool starts a pool of real workers, closed when the test ends.
func newTestPool(tb testing.TB, opts PoolOptions) *Pool {
	tb.Helper()
	p, _ := newTestPoolLogs(tb, opts)
	return p
}

// newTestPoolLogs is newTestPool that also returns what the pool and its workers logged.
func newTestPoolLogs(tb testing.TB, opts PoolOptions) (*Pool, *syncBuffer) {
	tb.Helper()
	bin := workerBinary(tb)
	e := testEngine(tb)
	logs := new(syncBuffer)
	tb.Cleanup(func() {
		if tb.Failed() {
			tb.Logf("pool and worker logs:\n%s", logs)
		}
	})
	opts.Binary = bin
	opts.Args = append([]string{"sandbox-worker", "--engine-dir", e.dir, "--engine-cache", testCacheDir(),
		"--memory-mb", "1024", "--log-format", "text"}, opts.Args...) // the test's own flags last
	opts.Stderr = logs
	opts.Logger = slog.New(slog.NewTextHandler(logs, nil))
	start := time.Now()
	p, err := NewPool(context.Background(), opts)
	if err != nil {
		tb.Fatalf("NewPool: %v\n%s", err, logs)
	}
	tb.Logf("NewPool: %d workers ready in %s", p.Stats().Workers, time.Since(start).Round(time.Millisecond))
	tb.Cleanup(func() { _ = p.Close() })
	return p, logs
}

// pids returns the pool's live worker processes.
func (p *Pool) pids() []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var ids []int
	for w := range p.live {
		ids = append(ids, w.pid)
	}
	slices.Sort(ids)
	return ids
}

// waitFor polls cond until it holds or the time is up.
func waitFor(t *testing.T, what string, within time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	for !cond() {
		if time.Since(start) > within {
			t.Fatalf("waited %s for %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Since(start)
}

func TestFastModeStopsPythonLoops(t *testing.T) {
	e := fastEngine(t)
	if e.Mode() != ModeFast {
		t.Fatalf("Mode() = %v", e.Mode())
	}
	const timeout = time.Second
	for _, tc := range []struct{ name, src, stdout string }{
		{"while", "print('before')\nwhile True: pass", "before\n"},
		{"function calls", "def f(n):\n    return n + 1\nn = 0\nwhile True:\n    n = f(n)", ""},
		{"generator", "sum(i * i for i in iter(int, 1))", ""},
		{"sleep", "import time\ntime.sleep(30)", ""},
		{"printing", "while True:\n    print('x' * 100)", ""},
		{"exception loop", "while True:\n    try:\n        1/0\n    except ZeroDivisionError:\n        pass", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			res, err := e.Run(context.Background(), Request{Source: tc.src, Timeout: timeout})
			wall := time.Since(start)
			if err != nil {
				t.Fatal(err)
			}
			if res.Status != StatusTimeout {
				t.Fatalf("status %q, want timeout; stderr:\n%s", res.Status, res.Stderr)
			}
			if wall > timeout+300*time.Millisecond {
				t.Errorf("stopped after %s, want about %s", wall, timeout)
			}
			if tc.stdout != "" && res.Stdout != tc.stdout {
				t.Errorf("stdout %q, want %q (output before the deadline is kept)", res.Stdout, tc.stdout)
			}
			t.Logf("stopped after %s", wall.Round(time.Millisecond))
		})
	}

	// The hooks change nothing for runs that end on their own.
	res, err := e.Run(context.Background(), Request{Source: "import time\ntime.sleep(0.05)\nprint(sum(range(10)))\n1/0", Timeout: 10 * time.Second})
	if err != nil || res.Status != StatusError || res.Stdout != "45\n" || !strings.Contains(res.Stderr, "ZeroDivisionError") {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	// And the caller's context is still the caller's.
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := e.Run(ctx, Request{Source: "while True: pass", Timeout: 10 * time.Second}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run past the caller's deadline: err = %v", err)
	}
}

func TestFastModeNeedsTheYieldPatch(t *testing.T) {
	e := testEngine(t)
	if yieldInterval(filepath.Join(e.dir, "BUILDINFO")) <= 0 {
		t.Fatal("the engine has no periodic_yield in BUILDINFO: scripts/build_python_wasi.sh should build it with the yield patch")
	}
	dir := t.TempDir()
	for _, name := range []string{"python.wasm", "SHA256SUMS", "lib"} {
		if err := os.Symlink(filepath.Join(e.dir, name), filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "BUILDINFO"), []byte("python=3.13.5\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{Dir: dir, Mode: ModeFast})
	if err == nil || !strings.Contains(err.Error(), "periodic yield") {
		t.Fatalf("New(fast) without the yield patch: err = %v", err)
	}
	if m, err := ParseMode("fast"); m != ModeFast || err != nil {
		t.Errorf("ParseMode(fast) = %v, %v", m, err)
	}
	if _, err := ParseMode("quick"); err == nil {
		t.Error("ParseMode(quick) succeeded")
	}
}

// TestPoolRunaways: runaways of every kind end as timeout within the deadline plus the grace,
// while the other worker keeps serving.
func TestPoolRunaways(t *testing.T) {
	const timeout, grace, margin = 2 * time.Second, time.Second, 750 * time.Millisecond
	p := newTestPool(t, PoolOptions{Workers: 2, Grace: grace})
	for _, tc := range []struct {
		name   string
		src    string
		killed bool // ends only by killing the worker (a loop inside C)
	}{
		{"python loop", "while True: pass", false},
		{"C loop", "sum(range(10**13))", true},
		{"catastrophic regex", "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := p.Stats()
			start := time.Now()
			type outcome struct {
				res  Result
				err  error
				wall time.Duration
			}
			done := make(chan outcome, 1)
			go func() {
				res, err := p.Run(context.Background(), Request{Source: tc.src, Timeout: timeout})
				done <- outcome{res, err, time.Since(start)}
			}()
			// Meanwhile the other worker serves others.
			var others int
			var o outcome
		loop:
			for {
				select {
				case o = <-done:
					break loop
				default:
				}
				res, err := p.Run(context.Background(), Request{Source: "print(sum(range(100)))", Timeout: 10 * time.Second})
				if err != nil || res.Status != StatusOK || res.Stdout != "4950\n" {
					t.Fatalf("a run beside the runaway: %+v, %v", res, err)
				}
				others++
				time.Sleep(20 * time.Millisecond)
			}
			if o.err != nil {
				t.Fatal(o.err)
			}
			if o.res.Status != StatusTimeout || o.res.Timeout != timeout || !strings.HasPrefix(o.res.Python, "3.13.") {
				t.Fatalf("status %q, want timeout, with the deadline and the Python version (%+v)", o.res.Status, o.res)
			}
			if o.wall > timeout+grace+margin {
				t.Errorf("ended after %s, want at most %s + %s + %s", o.wall, timeout, grace, margin)
			}
			if others < 10 {
				t.Errorf("only %d other runs completed beside the runaway", others)
			}
			after := p.Stats()
			if got := after.Killed - before.Killed; got != map[bool]int64{false: 0, true: 1}[tc.killed] {
				t.Errorf("%d workers killed, want killed=%v", got, tc.killed)
			}
			replaced := waitFor(t, "the pool to be back to 2 idle workers", 30*time.Second, func() bool {
				s := p.Stats()
				return s.Live == 2 && s.Idle == 2
			})
			t.Logf("timeout after %s (deadline %s, grace %s); %d other runs completed meanwhile; pool whole again %s later",
				o.wall.Round(time.Millisecond), timeout, grace, others, replaced.Round(time.Millisecond))
		})
	}
	if s := p.Stats(); s.Crashed != 0 || s.Started != 4 {
		t.Errorf("stats %+v: want 4 workers started (2 + 2 replacements), none crashed", s)
	}
}

func TestPoolReplacesKilledWorker(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 1})
	kill := func() int { return killOnlyWorker(t, p) }
	ok := func() {
		t.Helper()
		res, err := p.Run(context.Background(), Request{Source: "print(1)", Timeout: 10 * time.Second})
		if err != nil || res.Status != StatusOK || res.Stdout != "1\n" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
	}

	// Killed while idle: the very next run works (it waits for the replacement).
	old := kill()
	start := time.Now()
	ok()
	t.Logf("first run after kill -9 of the idle worker: %s", time.Since(start).Round(time.Millisecond))
	if pids := p.pids(); len(pids) != 1 || pids[0] == old {
		t.Fatalf("workers %v after killing %d", pids, old)
	}

	// Killed during a run: that run fails at once, the next one works.
	errc := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), Request{Source: "import time\ntime.sleep(30)", Timeout: time.Minute})
		errc <- err
	}()
	waitFor(t, "the run to start", 10*time.Second, func() bool { return p.Stats().Idle == 0 })
	time.Sleep(100 * time.Millisecond)
	kill()
	select {
	case err := <-errc:
		if !errors.As(err, new(*WorkerLostError)) {
			t.Fatalf("the killed run: err = %v, want *WorkerLostError", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the run of a killed worker did not return")
	}
	ok()
	if s := p.Stats(); s.Crashed != 2 || s.Started != 3 || s.Live != 1 {
		t.Errorf("stats %+v: want 2 crashed, 3 started, 1 live", s)
	}
}

// TestPoolWorkerLostMidRun: a worker killed while it runs a program gives *WorkerLostError,
// whose text says the run was stopped and names no process or signal; the server log has the
// process id.
func TestPoolWorkerLostMidRun(t *testing.T) {
	p, logs := newTestPoolLogs(t, PoolOptions{Workers: 1})
	url, arrived, _ := blockingServer(t)
	errc := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), waitingRequest(url))
		errc <- err
	}()
	<-arrived                   // the program is running: it waits in its fetch
	pid := killOnlyWorker(t, p) // as the kernel's OOM killer would
	err := <-errc
	var lost *WorkerLostError
	if !errors.As(err, &lost) {
		t.Fatalf("the killed run: err = %v (%T), want *WorkerLostError", err, err)
	}
	text := err.Error()
	if !strings.Contains(text, "the run was stopped") {
		t.Errorf("error %q does not say the run was stopped", text)
	}
	if strings.ContainsAny(text, "0123456789") || strings.Contains(strings.ToLower(text), "signal") ||
		strings.Contains(text, "killed") || strings.Contains(text, "/") {
		t.Errorf("error %q names host details (worker %d)", text, pid)
	}
	want := fmt.Sprintf("pid=%d", pid)
	waitFor(t, "the pool to log the lost worker", 10*time.Second, func() bool {
		return strings.Contains(logs.String(), "python worker ended during a run") && strings.Contains(logs.String(), want)
	})
}

func TestPoolQueueAndOverload(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 1, Queue: 3})
	type outcome struct {
		res Result
		err error
	}
	results := make(chan outcome, 4)
	run := func(src string) {
		res, err := p.Run(context.Background(), Request{Source: src, Timeout: 20 * time.Second})
		results <- outcome{res, err}
	}
	go run("import time\ntime.sleep(1.5)\nprint('slow')")
	waitFor(t, "the worker to be busy", 10*time.Second, func() bool { return p.Stats().Idle == 0 })
	go run("print('queued')")
	go run("print('queued')")
	waitFor(t, "two queued runs", 10*time.Second, func() bool { return p.Stats().Queued == 2 })

	// A waiter that gives up leaves the queue.
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := p.Run(ctx, Request{Source: "print(1)"}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a queued run past its ctx: err = %v", err)
	}
	if q := p.Stats().Queued; q != 2 {
		t.Fatalf("%d queued after a waiter gave up, want 2", q)
	}
	go run("print('queued')")
	waitFor(t, "three queued runs", 10*time.Second, func() bool { return p.Stats().Queued == 3 })

	start := time.Now()
	_, err := p.Run(context.Background(), Request{Source: "print(1)"})
	took := time.Since(start)
	var oe *OverloadError
	if !errors.As(err, &oe) {
		t.Fatalf("a run past the queue: err = %v, want *OverloadError", err)
	}
	if took > 50*time.Millisecond {
		t.Errorf("the overload error took %s", took)
	}
	if oe.RetryAfter < time.Second || oe.RetryAfter%time.Second != 0 {
		t.Errorf("RetryAfter = %s, want whole seconds, at least 1", oe.RetryAfter)
	}
	t.Logf("overload in %s: %v", took, err)
	for range 4 {
		o := <-results
		if o.err != nil || o.res.Status != StatusOK {
			t.Fatalf("a queued run: %+v, %v", o.res, o.err)
		}
	}
	if s := p.Stats(); s.Overloaded != 1 || s.Queued != 0 || s.Idle != 1 || s.Started != 1 {
		t.Errorf("stats %+v", s)
	}
}

// TestPoolCancel: a caller that gives up gets its ctx error at once; the worker stops the run
// at its next yield and serves the next run (no kill).
func TestPoolCancel(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 1})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Run(ctx, Request{Source: "while True: pass", Timeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > time.Second {
		t.Fatalf("Run = %v after %s, want the ctx's error at about 300ms", err, time.Since(start))
	}
	res, err := p.Run(context.Background(), Request{Source: "print(2)", Timeout: 10 * time.Second})
	if err != nil || res.Stdout != "2\n" {
		t.Fatalf("the next run: %+v, %v", res, err)
	}
	// Callers that give up at once, before the worker has even acknowledged the run.
	for i := range 20 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%4)*time.Millisecond+time.Microsecond)
		_, _ = p.Run(ctx, Request{Source: "while True: pass", Timeout: time.Minute})
		cancel()
		res, err := p.Run(context.Background(), Request{Source: "print(3)", Timeout: 10 * time.Second})
		if err != nil || res.Stdout != "3\n" {
			t.Fatalf("run after quick cancel %d: %+v, %v", i, res, err)
		}
	}
	if s := p.Stats(); s.Started != 1 || s.Killed != 0 || s.Crashed != 0 {
		t.Errorf("stats %+v: the worker should have been reused", s)
	}
}

// TestPoolWarmPrint: a warm run through the pool costs about what an in-process run does.
func TestPoolWarmPrint(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 2})
	var ds []time.Duration
	for i := range 23 {
		start := time.Now()
		res, err := p.Run(context.Background(), Request{Source: "print(1)", Timeout: 10 * time.Second})
		if err != nil || res.Stdout != "1\n" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		if i >= 3 {
			ds = append(ds, time.Since(start))
		}
	}
	slices.Sort(ds)
	median := ds[len(ds)/2]
	t.Logf("warm print(1) through the pool: median %s, min %s, max %s (n=%d)",
		median.Round(100*time.Microsecond), ds[0].Round(100*time.Microsecond), ds[len(ds)-1].Round(100*time.Microsecond), len(ds))
	if median > 300*time.Millisecond {
		t.Errorf("median %s, want well under 300ms", median)
	}
}

func TestPoolClose(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 1})
	errc := make(chan error, 1)
	go func() {
		_, err := p.Run(context.Background(), Request{Source: "import time\ntime.sleep(30)", Timeout: time.Minute})
		errc <- err
	}()
	waitFor(t, "the run to start", 10*time.Second, func() bool { return p.Stats().Idle == 0 })
	p.mu.Lock()
	var ws []*worker
	for w := range p.live {
		ws = append(ws, w)
	}
	p.mu.Unlock()
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrPoolClosed) {
		t.Errorf("a run in flight at Close: err = %v", err)
	}
	for _, w := range ws {
		if w.alive() {
			t.Errorf("worker %d still running after Close", w.pid)
		}
	}
	if _, err := p.Run(context.Background(), Request{Source: "print(1)"}); !errors.Is(err, ErrPoolClosed) {
		t.Errorf("Run after Close: err = %v", err)
	}
	if err := p.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

func TestNewPoolFailures(t *testing.T) {
	bin := workerBinary(t)
	logs := new(syncBuffer)
	for _, tc := range []struct {
		name string
		opts PoolOptions
		want string
	}{
		{"no binary", PoolOptions{}, "needs the worker binary"},
		{"missing binary", PoolOptions{Binary: filepath.Join(t.TempDir(), "nope")}, "no such file"},
		{"not a worker", PoolOptions{Binary: bin, Args: []string{"version"}}, "frame too large"},
		{"no engine", PoolOptions{Binary: bin, Args: []string{"sandbox-worker", "--engine-dir", t.TempDir()}, Env: []string{"HOME=" + t.TempDir()}}, "exit status 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.Workers = 2
			tc.opts.Stderr = logs
			p, err := NewPool(context.Background(), tc.opts)
			if err == nil {
				_ = p.Close()
				t.Fatal("NewPool succeeded")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to mention %q", err, tc.want)
			}
		})
	}
}

// BenchmarkPoolPrint measures a warm print(1) through the pool: the request frame, a fresh
// instance in the worker, the result frame.
func BenchmarkPoolPrint(b *testing.B) {
	p := newTestPool(b, PoolOptions{Workers: 2})
	req := Request{Source: "print(1)", Timeout: 10 * time.Second}
	for b.Loop() {
		res, err := p.Run(context.Background(), req)
		if err != nil || res.Status != StatusOK {
			b.Fatalf("Run = %+v, %v", res, err)
		}
	}
}

// BenchmarkModes compares the deadline modes on a CPU-bound loop (in-process engines).
func BenchmarkModes(b *testing.B) {
	req := Request{Source: "sum(i*i for i in range(10**7))", Timeout: 5 * time.Minute}
	for _, m := range []struct {
		name string
		e    func(testing.TB) *Engine
	}{
		{"strict", testEngine},
		{"fast", fastEngine},
	} {
		b.Run(m.name, func(b *testing.B) {
			e := m.e(b)
			for b.Loop() {
				res, err := e.Run(context.Background(), req)
				if err != nil || res.Status != StatusOK {
					b.Fatalf("Run = %+v, %v", res, err)
				}
			}
		})
	}
}

func TestWorkerEnv(t *testing.T) {
	got := workerEnv([]string{"PATH=/bin", "ANTHROPIC_API_KEY=secret", "HOME=/root", "ASSISTANT_ADMIN_KEY=k",
		"ASSISTANT_ENGINE_DIR=/e", "PATHX=1", "GOMAXPROCS=2"})
	want := []string{"PATH=/bin", "HOME=/root", "ASSISTANT_ENGINE_DIR=/e", "GOMAXPROCS=2"}
	if !slices.Equal(got, want) {
		t.Errorf("workerEnv = %q, want %q", got, want)
	}
}

// TestPoolSessions: a session's runs go to the worker that holds its interpreter, so they share
// names, whichever worker is free; two sessions on one worker never see each other's names;
// when the session's worker is killed, its next run starts afresh elsewhere and says so.
func TestPoolSessions(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 2})
	ctx := context.Background()
	run := func(session, src string) Result {
		t.Helper()
		res, err := p.Run(ctx, Request{Source: src, Session: session, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatalf("%s %q: %v", session, src, err)
		}
		return res
	}
	run("a", "x = 41")
	for i := range 6 { // interleaved with other sessions, which take whichever worker is free
		other := fmt.Sprint("o", i)
		if res := run(other, "print('x' in globals())"); res.Stdout != "False\n" {
			t.Errorf("session %s saw a's names: %q", other, res.Stdout)
		}
		if res := run("a", "x += 1\nprint(x)"); res.Stdout != fmt.Sprintf("%d\n", 42+i) || strings.Contains(res.Stderr, "restarted") {
			t.Errorf("a, run %d: %q %q", i, res.Stdout, res.Stderr)
		}
	}
	if st := p.Stats(); st.Sessions != 7 || st.SessionMemory <= 0 {
		t.Errorf("Stats: %d sessions, %d bytes; want 7 live interpreters", st.Sessions, st.SessionMemory)
	}
	p.mu.Lock()
	w := p.affinity["a"]
	p.mu.Unlock()
	if err := w.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the killed worker to be reaped", 10*time.Second, func() bool { return !w.alive() })
	res := run("a", "print('x' in globals())")
	if res.Stdout != "False\n" || !strings.HasPrefix(res.Stderr, MsgRestarted) {
		t.Errorf("a after its worker was killed: %q %q", res.Stdout, res.Stderr)
	}
}

// killOnlyWorker sends SIGKILL to the pool's one live worker and returns its pid.
func killOnlyWorker(t *testing.T, p *Pool) int {
	t.Helper()
	pids := p.pids()
	if len(pids) != 1 {
		t.Fatalf("live workers %v, want 1", pids)
	}
	proc, err := os.FindProcess(pids[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	return pids[0]
}

// TestPoolAttachedFiles: a run through a worker reads a 50 MB attached file at /data/<name>
// (more than a JSON frame can carry in base64), also in a session; files the protocol refuses
// fail the run without costing the worker.
func TestPoolAttachedFiles(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 1})
	ctx := context.Background()
	big := make([]byte, 50<<20)
	rand.NewChaCha8([32]byte{1}).Read(big)
	sum := sha256.Sum256(big)
	want := fmt.Sprintf("%d %x\n3 b'x,y'\n", len(big), sum)
	src := `import hashlib
h, n = hashlib.sha256(), 0
with open("/data/big.bin", "rb") as f:
    while b := f.read(1 << 20):
        n += len(b)
        h.update(b)
print(n, h.hexdigest())
small = open("/data/small.csv", "rb").read()
print(len(small), small)
`
	data := map[string][]byte{"big.bin": big, "small.csv": []byte("x,y")}
	for _, session := range []string{"", "s1"} {
		res, err := p.Run(ctx, Request{Source: src, Session: session, Timeout: 60 * time.Second, Data: data})
		if err != nil || res.Status != StatusOK || res.Stdout != want {
			t.Fatalf("session %q: Run = %v, %s\nstdout %q\nstderr %s\nwant %q", session, err, res.Status, res.Stdout, res.Stderr, want)
		}
	}

	pids := p.pids()
	for name, data := range map[string]map[string][]byte{
		"bad name": {"../x.csv": []byte("x")},
		"too many": func() map[string][]byte {
			m := map[string][]byte{}
			for i := range maxDataFiles + 1 {
				m[fmt.Sprint("f", i)] = nil
			}
			return m
		}(),
	} {
		res, err := p.Run(ctx, Request{Source: "print(1)", Timeout: 10 * time.Second, Data: data})
		if !errors.Is(err, errBadData) || res.Stdout != "" {
			t.Errorf("%s: Run = %+v, %v; want it refused", name, res, err)
		}
	}
	if got := p.pids(); !slices.Equal(got, pids) || p.Stats().Killed != 0 {
		t.Errorf("workers %v after the refusals, want %v untouched", got, pids)
	}
	if res, err := p.Run(ctx, Request{Source: "print(1)", Timeout: 10 * time.Second}); err != nil || res.Stdout != "1\n" {
		t.Errorf("a run after the refusals: %+v, %v", res, err)
	}
}

// TestPoolSessionIdle: a worker ends a session's interpreter after the idle time the server
// gives it (--session-idle), also while other runs keep it busy all the time, and the session's
// next run says it restarted.
func TestPoolSessionIdle(t *testing.T) {
	p := newTestPool(t, PoolOptions{Workers: 1, Args: []string{"--session-idle", "1s"}})
	ctx := context.Background()
	if res, err := p.Run(ctx, Request{Source: "x = 1", Session: "idle"}); err != nil || res.Status != StatusOK {
		t.Fatalf("%v %+v", err, res)
	}
	// Two callers keep the one worker busy without a pause (each result reports its sessions).
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _ = p.Run(ctx, Request{Source: "import time\ntime.sleep(0.3)"})
			}
		}()
	}
	waitFor(t, "the idle interpreter to be swept", 15*time.Second, func() bool { return p.Stats().Sessions == 0 })
	close(stop)
	wg.Wait()
	res, err := p.Run(ctx, Request{Source: "print('x' in globals())", Session: "idle"})
	if err != nil || res.Stdout != "False\n" || !strings.HasPrefix(res.Stderr, MsgRestarted) {
		t.Errorf("after the idle time: %v %q %q", err, res.Stdout, res.Stderr)
	}
}
