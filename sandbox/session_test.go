package sandbox

import (
	"context"
	"strings"
	"testing"
	"time"
)

func sessionRun(t *testing.T, s *Session, req Request) Result {
	t.Helper()
	res, err := s.Run(context.Background(), req)
	if err != nil {
		t.Fatalf("Run(%q): %v", req.Source, err)
	}
	return res
}

// TestSessionKeepsState: a session's runs share names, imports, /tmp and the prelude's work;
// the prelude runs once; another session sees none of it; SystemExit ends a run, not the
// interpreter.
func TestSessionKeepsState(t *testing.T) {
	e := testEngine(t)
	prelude := "import builtins\nbuiltins.preludes = getattr(builtins, 'preludes', 0) + 1\nprint('the prelude prints nothing the reader sees')\n"
	a, b := e.NewSession(), e.NewSession()
	defer a.Close()
	defer b.Close()
	steps := []struct {
		s      *Session
		src    string
		status Status
		stdout string
	}{
		{a, "x = 41\nimport json\nopen('/tmp/note.txt', 'w').write('kept')\nprint(preludes)", StatusOK, "1\n"},
		{a, "print(x + 1, json.dumps([1]), open('/tmp/note.txt').read(), preludes)", StatusOK, "42 [1] kept 1\n"},
		{b, "import os\nprint('x' in globals(), os.path.exists('/tmp/note.txt'), preludes)", StatusOK, "False False 1\n"},
		{a, "import sys\ny = 7\nsys.exit(3)", StatusError, ""},
		{a, "print(y * x)", StatusOK, "287\n"},
		{a, "raise ValueError('boom')", StatusError, ""},
		{a, "print(x)", StatusOK, "41\n"},
	}
	for i, st := range steps {
		res := sessionRun(t, st.s, Request{Source: st.src, Prelude: prelude})
		if res.Status != st.status || res.Stdout != st.stdout {
			t.Errorf("step %d: %s %q, want %s %q\nstderr %s", i, res.Status, res.Stdout, st.status, st.stdout, res.Stderr)
		}
		if strings.Contains(res.Stderr, "restarted") {
			t.Errorf("step %d: a restart line in a live session:\n%s", i, res.Stderr)
		}
	}
	if res := sessionRun(t, a, Request{Source: "pass", Prelude: prelude}); res.ExitCode != 0 {
		t.Errorf("exit code %d", res.ExitCode)
	}
}

// TestSessionRestarts: a timeout, running out of memory, an idle expiry and an eviction each end
// the interpreter, and the next run starts a new one and says so in one line.
func TestSessionRestarts(t *testing.T) {
	e := testEngine(t)
	cases := []struct {
		name   string
		end    func(t *testing.T, s *Session)
		status Status
	}{
		{"timeout", func(t *testing.T, s *Session) {
			if res := sessionRun(t, s, Request{Source: "while True: pass", Timeout: time.Second}); res.Status != StatusTimeout {
				t.Errorf("status %s", res.Status)
			}
		}, StatusTimeout},
		{"oom", func(t *testing.T, s *Session) {
			if res := sessionRun(t, s, Request{Source: "b = bytearray(500 << 20)", MemoryBytes: 96 << 20}); res.Status != StatusOOM {
				t.Errorf("status %s: %s", res.Status, res.Stderr)
			}
		}, StatusOOM},
		{"idle", func(t *testing.T, s *Session) {
			if !s.ExpireIdle(0) {
				t.Error("ExpireIdle(0) ended nothing")
			}
		}, ""},
		{"evicted", func(t *testing.T, s *Session) { s.Evict() }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := e.NewSession()
			defer s.Close()
			mem := int64(0)
			if tc.name == "oom" {
				mem = 96 << 20
			}
			sessionRun(t, s, Request{Source: "x = 1", MemoryBytes: mem})
			if !s.Live() {
				t.Fatal("no interpreter after a run")
			}
			tc.end(t, s)
			if s.Live() {
				t.Error("the interpreter outlived its end")
			}
			res := sessionRun(t, s, Request{Source: "print('x' in globals())", MemoryBytes: mem})
			if res.Status != StatusOK || res.Stdout != "False\n" || !strings.HasPrefix(res.Stderr, MsgRestarted) {
				t.Errorf("after %s: %s %q\nstderr %q", tc.name, res.Status, res.Stdout, res.Stderr)
			}
			res = sessionRun(t, s, Request{Source: "print(1)", MemoryBytes: mem})
			if strings.Contains(res.Stderr, "restarted") {
				t.Errorf("the restart line twice: %q", res.Stderr)
			}
		})
	}
	// A failed prelude is reported, and the next run runs the prelude again.
	s := e.NewSession()
	defer s.Close()
	res := sessionRun(t, s, Request{Source: "print(1)", Prelude: "raise RuntimeError('no')"})
	if !res.PreludeFailed || res.Status != StatusError {
		t.Errorf("failed prelude: %+v", res)
	}
	res = sessionRun(t, s, Request{Source: "print(ok)", Prelude: "ok = 'again'"})
	if res.Status != StatusOK || res.Stdout != "again\n" {
		t.Errorf("after a failed prelude: %s %q %s", res.Status, res.Stdout, res.Stderr)
	}
}

// TestSessionIsolation: the sandbox's promises hold for a live interpreter too.
func TestSessionIsolation(t *testing.T) {
	e := testEngine(t)
	s := e.NewSession()
	defer s.Close()
	src := `import os, socket
out = []
for f in (lambda: open("/etc/passwd").read(), lambda: socket.socket(), lambda: os.system("ls"), lambda: open("/usr/lib/python3.13/x.py", "w"), lambda: os.listdir("/")):
    try:
        f()
        out.append("allowed")
    except Exception:
        out.append("refused")
print(" ".join(out))
`
	for i := range 2 {
		res := sessionRun(t, s, Request{Source: src})
		if res.Status != StatusOK || res.Stdout != "refused refused refused refused refused\n" {
			t.Errorf("run %d: %s %q %s", i, res.Status, res.Stdout, res.Stderr)
		}
	}
}

// TestSessionsBounds: sessions with different keys never share an interpreter, also when one
// runs right after the other; past MaxLive or MaxMemory the least recently used one is ended
// (its next run says so); idle ones are swept.
func TestSessionsBounds(t *testing.T) {
	e := testEngine(t)
	ctx := context.Background()
	run := func(ss *Sessions, key, src string) Result {
		t.Helper()
		res, err := ss.Run(ctx, key, Request{Source: src})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	ss := e.NewSessions(SessionsOptions{MaxLive: 2})
	defer ss.Close()
	run(ss, "a", "secret = 'a'")
	if res := run(ss, "b", "print('secret' in globals())"); res.Stdout != "False\n" {
		t.Errorf("b saw a's names: %q", res.Stdout)
	}
	run(ss, "a", "pass") // a is now the most recently used
	run(ss, "c", "pass") // three live: b, the least recently used, goes
	if live, _ := ss.Stats(); live != 2 {
		t.Errorf("%d live, want 2", live)
	}
	if res := run(ss, "a", "print(secret)"); res.Stdout != "a\n" || strings.Contains(res.Stderr, "restarted") {
		t.Errorf("a after c: %q %q", res.Stdout, res.Stderr)
	}
	if res := run(ss, "b", "print(1)"); !strings.HasPrefix(res.Stderr, MsgRestarted) {
		t.Errorf("b was not told it restarted: %q", res.Stderr)
	}

	mem := e.NewSessions(SessionsOptions{MaxMemory: 1}) // every other interpreter is too much
	defer mem.Close()
	run(mem, "x", "pass")
	run(mem, "y", "pass")
	if live, _ := mem.Stats(); live != 1 {
		t.Errorf("past MaxMemory: %d live, want 1", live)
	}

	idle := e.NewSessions(SessionsOptions{Idle: time.Millisecond})
	defer idle.Close()
	run(idle, "z", "pass")
	time.Sleep(5 * time.Millisecond)
	if n := idle.Sweep(); n != 1 {
		t.Errorf("Sweep ended %d, want 1", n)
	}
	idle.mu.Lock()
	n := len(idle.m)
	idle.mu.Unlock()
	if n != 0 {
		t.Errorf("%d sessions kept after a sweep ended their interpreters", n)
	}
	// Forgotten, it still knows its interpreter ended: the next run says so, once.
	if res := run(idle, "z", "print(1)"); !strings.HasPrefix(res.Stderr, MsgRestarted) {
		t.Errorf("a swept session's next run: %q", res.Stderr)
	}
	if res := run(idle, "z", "print(1)"); strings.Contains(res.Stderr, "restarted") {
		t.Errorf("the run after it: %q", res.Stderr)
	}
}
