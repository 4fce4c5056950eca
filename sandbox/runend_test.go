package sandbox

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// forgeDone is what a program writes to claim that its run ended with exit code 0: the run
// driver's own message.
const forgeDone = `import os
fd = os.open("/dev/osa/call", os.O_RDWR)
os.write(fd, b'{"op":"done","code":0}\n')
print("answer", os.read(fd, 4096))
os.close(fd)
`

// TestForgedDoneDoesNotEndARun (issue 22, item 1): a program that writes the driver's "done"
// message and computes on is not reported as finished; its run ends at its deadline as a
// timeout, its interpreter is gone, and the next run starts a new one and says so. In strict
// mode (the server's in-process runs) that holds for a loop inside C too.
func TestForgedDoneDoesNotEndARun(t *testing.T) {
	engines := []struct {
		mode string
		e    func(testing.TB) *Engine
		// loops are the programs run after the forged message.
		loops []string
	}{
		{"strict", testEngine, []string{"while True: pass", "sum(range(10**13))"}},
		// In fast mode a loop inside C is stopped by killing its worker (TestPoolForgedDone).
		{"fast", fastEngine, []string{"while True: pass", "import time\nwhile True: time.sleep(0.01)"}},
	}
	for _, eng := range engines {
		for _, loop := range eng.loops {
			t.Run(eng.mode+"/"+strings.Fields(loop)[0], func(t *testing.T) {
				e := eng.e(t)
				s := e.NewSession()
				defer s.Close()
				if res := sessionRun(t, s, Request{Source: "x = 41"}); res.Status != StatusOK {
					t.Fatalf("first run: %s %s", res.Status, res.Stderr)
				}
				res := sessionRun(t, s, Request{Source: forgeDone + loop, Timeout: 1500 * time.Millisecond})
				if res.Status != StatusTimeout {
					t.Fatalf("the forged run ended %s (exit %d) after %s, want timeout\nstdout %q\nstderr %q",
						res.Status, res.ExitCode, res.Elapsed, res.Stdout, res.Stderr)
				}
				if s.Live() {
					t.Error("the interpreter of a run that timed out is still live")
				}
				res = sessionRun(t, s, Request{Source: "print('x' in globals())"})
				if res.Status != StatusOK || res.Stdout != "False\n" || !strings.HasPrefix(res.Stderr, MsgRestarted) {
					t.Errorf("the next run: %s %q, stderr %q; want a new interpreter that says so", res.Status, res.Stdout, res.Stderr)
				}
			})
		}
	}
}

// TestForgedDoneKeepsTheRunsOutput: a forged "done" changes nothing about the run it is written
// in: what the program prints after it is the run's, its exit code is the driver's, and the
// next run finds the same interpreter.
func TestForgedDoneKeepsTheRunsOutput(t *testing.T) {
	for _, eng := range []struct {
		mode string
		e    func(testing.TB) *Engine
	}{{"strict", testEngine}, {"fast", fastEngine}} {
		t.Run(eng.mode, func(t *testing.T) {
			s := eng.e(t).NewSession()
			defer s.Close()
			res := sessionRun(t, s, Request{Source: forgeDone + "import time\ntime.sleep(0.3)\nprint('after')\ny = 1\nraise SystemExit(4)"})
			if res.Status != StatusError || res.ExitCode != 4 || !strings.HasSuffix(res.Stdout, "after\n") {
				t.Errorf("forged run: %s exit %d stdout %q; want error, exit 4, with the line printed after the message", res.Status, res.ExitCode, res.Stdout)
			}
			if res := sessionRun(t, s, Request{Source: "print(y)"}); res.Status != StatusOK || res.Stdout != "1\n" || res.Stderr != "" {
				t.Errorf("the next run: %s %q %q; want the same interpreter", res.Status, res.Stdout, res.Stderr)
			}
		})
	}
}

// TestSessionStdinIsEmpty: in a live session a program that reads stdin reads an empty one, as
// in a fresh run, instead of waiting for the next run's request until its deadline.
func TestSessionStdinIsEmpty(t *testing.T) {
	s := testEngine(t).NewSession()
	defer s.Close()
	src := "import sys\nprint(repr(sys.stdin.read()), repr(sys.stdin.buffer.read(10)))\ntry:\n    input()\nexcept EOFError:\n    print('eof')"
	for i := range 2 {
		res := sessionRun(t, s, Request{Source: src, Timeout: 5 * time.Second})
		if res.Status != StatusOK || res.Stdout != "'' b''\neof\n" {
			t.Errorf("run %d: %s %q %q", i, res.Status, res.Stdout, res.Stderr)
		}
	}
}

// TestPoolForgedDone (issue 22, item 1, in the server's worker pool): a program that forges
// "done" and then loops inside C, where fast mode's deadline hooks do not reach, is stopped:
// its run ends as a timeout, the worker is killed and counted, and the session's next run, on
// a new worker, says that the interpreter restarted. The grace is longer than the session's
// own stop grace, so it is the worker that reports its interpreter stuck (Engine.Stuck) and
// is killed for it; with the default grace the pool's own kill comes first.
func TestPoolForgedDone(t *testing.T) {
	for _, grace := range []time.Duration{0, 2*stopGrace + time.Second} {
		t.Run(fmt.Sprint("grace=", grace), func(t *testing.T) {
			p := newTestPool(t, PoolOptions{Workers: 1, Grace: grace})
			before := p.pids()
			req := Request{Session: "s1", Source: "x = 1"}
			if res, err := p.Run(context.Background(), req); err != nil || res.Status != StatusOK {
				t.Fatalf("first run: %+v %v", res, err)
			}
			req.Source, req.Timeout = forgeDone+"sum(range(10**13))", time.Second
			res, err := p.Run(context.Background(), req)
			if err != nil || res.Status != StatusTimeout {
				t.Fatalf("forged run: %v, %s (exit %d) %q; want a timeout", err, res.Status, res.ExitCode, res.Stdout)
			}
			if st := p.Stats(); st.Killed != 1 || st.Crashed != 0 {
				t.Errorf("killed %d, crashed %d; want the worker killed once", st.Killed, st.Crashed)
			}
			waitFor(t, "a new worker", 30*time.Second, func() bool {
				now := p.pids()
				return len(now) == 1 && now[0] != before[0]
			})
			req.Source, req.Timeout = "print('x' in globals())", 0
			res, err = p.Run(context.Background(), req)
			if err != nil || res.Status != StatusOK || res.Stdout != "False\n" || !strings.HasPrefix(res.Stderr, MsgRestarted) {
				t.Errorf("the next run: %v %s %q %q", err, res.Status, res.Stdout, res.Stderr)
			}
		})
	}
}

// TestLimitedForgedDone: the server's in-process path (Limited.RunIn on a strict engine's
// Sessions, as `serve --sandbox-workers 0` runs them) ends a forged run at its deadline too.
func TestLimitedForgedDone(t *testing.T) {
	e := testEngine(t)
	lim := NewLimited(e, LimitedOptions{})
	ss := e.NewSessions(SessionsOptions{})
	defer ss.Close()
	res, err := lim.RunIn(context.Background(), ss, "k", Request{Source: forgeDone + "sum(range(10**13))", Timeout: time.Second})
	if err != nil || res.Status != StatusTimeout {
		t.Fatalf("forged run: %v %s %q", err, res.Status, res.Stdout)
	}
	if live, _ := ss.Stats(); live != 0 {
		t.Errorf("%d live interpreters after the forged run timed out", live)
	}
}

// TestSessionFetchCapsPerRun (issue 22, item 2): the fetch caps count one run's fetches, as
// in the browser: a live session's run may fetch its 500 times however many its earlier runs
// did.
func TestSessionFetchCapsPerRun(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	for _, eng := range []struct {
		mode string
		e    func(testing.TB) *Engine
	}{{"strict", testEngine}, {"fast", fastEngine}} {
		t.Run(eng.mode, func(t *testing.T) {
			s := eng.e(t).NewSession()
			defer s.Close()
			req := Request{FetchAllow: []string{srv.URL}, AllowLoopback: true, Timeout: time.Minute}
			src := fmt.Sprintf(`import osa
n = 0
for i in range(%d):
    try:
        await osa.fetch_text(%q)
        n += 1
    except osa.FetchRefused as e:
        print("refused", e.reason)
        break
print(n)
`, maxFetchesPerRun+1, srv.URL+"/x")
			for run := range 3 {
				req.Source = src
				res := sessionRun(t, s, req)
				want := fmt.Sprintf("refused %s\n%d\n", ReasonTooMany, maxFetchesPerRun)
				if res.Status != StatusOK || res.Stdout != want {
					t.Fatalf("run %d: %s %q %q; want %q", run, res.Status, res.Stdout, res.Stderr, want)
				}
			}
		})
	}
}

// TestSessionInterpreterRecord (issue 22, item 4): two Sessions of one reader session stand for
// two replicas. A run that is told the session's state is in an interpreter it does not hold
// (the last run was on the other replica) starts a new one and says so, on either side, and
// each result names the interpreter that holds the state after it; told its own interpreter,
// a run goes on in it silently. A failed prelude leaves nothing to remember.
func TestSessionInterpreterRecord(t *testing.T) {
	e := testEngine(t)
	a, b := e.NewSession(), e.NewSession()
	defer a.Close()
	defer b.Close()
	steps := []struct {
		s         *Session
		src       string
		stdout    string
		restarted bool
	}{
		{a, "x = 1\nprint('x' in globals())", "True\n", false},
		{b, "print('x' in globals())\ny = 2", "False\n", true}, // the state was a's
		{b, "print('y' in globals())", "True\n", false},
		{a, "print('x' in globals(), 'y' in globals())", "False False\n", true}, // a's names are older than the session's
		{a, "print('x' in globals())", "False\n", false},
	}
	record := ""
	for i, st := range steps {
		res := sessionRun(t, st.s, Request{Source: st.src, Interpreter: record})
		if res.Status != StatusOK || res.Stdout != st.stdout || strings.HasPrefix(res.Stderr, MsgRestarted) != st.restarted {
			t.Errorf("step %d: %s %q stderr %q; want %q, restarted %v", i, res.Status, res.Stdout, res.Stderr, st.stdout, st.restarted)
		}
		if same := res.Interpreter == record; res.Interpreter == "" || (st.restarted && same) || (!st.restarted && record != "" && !same) {
			t.Errorf("step %d: interpreter %q after %q (restarted %v)", i, res.Interpreter, record, st.restarted)
		}
		record = res.Interpreter
	}
	// b still holds an interpreter with y (step 2). A prelude that fails on a leaves nothing to
	// remember: the next run there starts clean, without the line, and b's older interpreter
	// is not reused.
	res := sessionRun(t, a, Request{Source: "pass", Prelude: "raise ValueError('no')", Interpreter: record})
	if !res.PreludeFailed || res.Interpreter != NoInterpreter {
		t.Errorf("failed prelude: %+v", res)
	}
	if res := sessionRun(t, b, Request{Source: "print('y' in globals())", Interpreter: NoInterpreter}); res.Stdout != "False\n" || res.Interpreter == NoInterpreter {
		t.Errorf("b after a's failed prelude: %q %q %q", res.Stdout, res.Stderr, res.Interpreter)
	}
	res = sessionRun(t, a, Request{Source: "print(1)", Interpreter: NoInterpreter})
	if res.Stdout != "1\n" || res.Stderr != "" {
		t.Errorf("after the failed prelude: %q %q", res.Stdout, res.Stderr)
	}
	// A run that times out names the interpreter it ended: the next run, told so, restarts.
	res = sessionRun(t, a, Request{Source: "while True: pass", Timeout: time.Second, Interpreter: res.Interpreter})
	if res.Status != StatusTimeout || res.Interpreter == "" {
		t.Fatalf("timeout: %s %q", res.Status, res.Interpreter)
	}
	res = sessionRun(t, b, Request{Source: "print(2)", Interpreter: res.Interpreter})
	if res.Stdout != "2\n" || !strings.HasPrefix(res.Stderr, MsgRestarted) {
		t.Errorf("after the other replica's timeout: %q %q", res.Stdout, res.Stderr)
	}
}
