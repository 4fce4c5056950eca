package sandbox

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// These tests run the real python.wasm under wazero. The engine is found through
// ASSISTANT_ENGINE_DIR or scripts/build_python_wasi.sh --print-dir; when it has not been built
// they skip, except under CI=true, where they fail. They share one Engine and an on-disk
// compilation cache, so only the first run on a machine pays the ~3.5 s compile.

var shared struct {
	once sync.Once
	e    *Engine
	skip string
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.e != nil {
		_ = shared.e.Close(context.Background())
	}
	cleanupPoolTests() // pool_test.go: the fast engine and the worker binary
	os.Exit(code)
}

// engineDir locates the engine directory, or says why it cannot.
func engineDir() (dir, why string) {
	if d := os.Getenv("ASSISTANT_ENGINE_DIR"); d != "" {
		return d, ""
	}
	out, err := exec.Command("../scripts/build_python_wasi.sh", "--print-dir").Output()
	if err != nil {
		return "", "the Python engine is not built (run scripts/build_python_wasi.sh, or set ASSISTANT_ENGINE_DIR)"
	}
	return strings.TrimSpace(string(out)), ""
}

func testCacheDir() string {
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "assistant", "wazero-test-cache")
	}
	return filepath.Join(os.TempDir(), "assistant-wazero-test-cache")
}

// testEngine returns the package's shared Engine, skipping (or failing under CI=true) when
// the engine has not been built.
func testEngine(tb testing.TB) *Engine {
	tb.Helper()
	if testing.Short() {
		tb.Skip("-short: skipping tests that run python.wasm")
	}
	shared.once.Do(func() {
		dir, why := engineDir()
		if why != "" {
			shared.skip = why
			return
		}
		shared.e, shared.err = New(context.Background(), Options{
			Dir:              dir,
			CacheDir:         testCacheDir(),
			MemoryLimitPages: 1024 << 20 / PageSize,
			Logger:           slog.New(slog.DiscardHandler),
		})
	})
	if shared.skip != "" {
		if os.Getenv("CI") == "true" {
			tb.Fatal(shared.skip)
		}
		tb.Skip(shared.skip)
	}
	if shared.err != nil {
		tb.Fatal(shared.err)
	}
	return shared.e
}

func TestNewRefusesTamperedEngine(t *testing.T) {
	e := testEngine(t)
	dir := t.TempDir()
	wasm, err := os.ReadFile(filepath.Join(e.dir, "python.wasm"))
	if err != nil {
		t.Fatal(err)
	}
	wasm[len(wasm)-1] ^= 1
	if err := os.WriteFile(filepath.Join(dir, "python.wasm"), wasm, 0o644); err != nil {
		t.Fatal(err)
	}
	sums, err := os.ReadFile(filepath.Join(e.dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SHA256SUMS"), sums, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = New(context.Background(), Options{Dir: dir})
	if err == nil || !strings.Contains(err.Error(), "SHA256SUMS records") {
		t.Fatalf("New with a modified python.wasm: err = %v, want a checksum mismatch", err)
	}
	if _, err := New(context.Background(), Options{Dir: t.TempDir()}); err == nil {
		t.Fatal("New with an empty directory succeeded")
	}
}

func TestEngineInfo(t *testing.T) {
	e := testEngine(t)
	if len(e.SHA256()) != 64 {
		t.Errorf("SHA256() = %q, want 64 hex digits", e.SHA256())
	}
	if !strings.HasPrefix(e.PythonVersion(), "3.13.") {
		t.Errorf("PythonVersion() = %q, want 3.13.x", e.PythonVersion())
	}
}

func TestCheckSyntax(t *testing.T) {
	e := testEngine(t)
	tests := []struct {
		name    string
		source  string
		want    *SyntaxError // nil: compiles
		msgPart string       // checked instead of want.Msg when set
	}{
		{name: "empty", source: ""},
		{name: "plain", source: "import json\nx = json.dumps({'a': 1})\n"},
		{name: "top-level await", source: "import asyncio\nawait asyncio.sleep(0)\nr = [x async for x in aiter([])] if False else 1\n"},
		{name: "top-level async with and for", source: "async with ctx() as c:\n    pass\nasync for x in it():\n    pass\n"},
		{name: "unclosed def", source: "def f(:\n    pass\n", want: &SyntaxError{Line: 1}, msgPart: "invalid syntax"},
		{name: "missing colon on line 3", source: "x = 1\ny = 2\nif x\n    y = 3\n", want: &SyntaxError{Line: 3, Offset: 5, Msg: "expected ':'"}},
		{name: "indentation", source: "if True:\npass\n", want: &SyntaxError{Line: 2, Offset: 1, Msg: "expected an indented block after 'if' statement on line 1"}},
		{name: "return outside function", source: "x = 1\nreturn x\n", want: &SyntaxError{Line: 2, Offset: 1, Msg: "'return' outside function"}},
		{name: "non-ASCII message", source: "x = 1 ™ 2\n", want: &SyntaxError{Line: 1, Offset: 7, Msg: "invalid character '™' (U+2122)"}},
		{name: "not utf-8", source: "x = 1\ny = '\xff'\n", want: &SyntaxError{Line: 2, Msg: "source is not valid UTF-8"}},
		{name: "null byte", source: "x = 1\x00\n", want: &SyntaxError{}, msgPart: "null bytes"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := e.CheckSyntax(context.Background(), tc.source)
			if err != nil {
				t.Fatalf("CheckSyntax: %v", err)
			}
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("CheckSyntax = %+v, want it to compile", *got)
			case tc.want == nil:
				return
			case got == nil:
				t.Fatalf("CheckSyntax = nil, want %+v", *tc.want)
			case tc.msgPart != "":
				if got.Line != tc.want.Line || !strings.Contains(got.Msg, tc.msgPart) {
					t.Errorf("CheckSyntax = %+v, want line %d and a message containing %q", *got, tc.want.Line, tc.msgPart)
				}
			case *got != *tc.want:
				t.Errorf("CheckSyntax = %+v, want %+v", *got, *tc.want)
			}
		})
	}
}

func TestSyntaxErrorString(t *testing.T) {
	se := &SyntaxError{Line: 2, Msg: "expected ':'"}
	if got, want := se.Error(), "expected ':' (<prelude>, line 2)"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestRun(t *testing.T) {
	e := testEngine(t)
	tests := []struct {
		name       string
		req        Request
		status     Status
		exit       int
		stdout     string   // exact, when set
		stdoutHas  []string // substrings of stdout
		stderrHas  []string // substrings of stderr
		truncated  bool
		maxElapsed time.Duration // 0: not checked
	}{
		{name: "print", req: Request{Source: "print(1)"}, status: StatusOK, stdout: "1\n"},
		{name: "exit 0", req: Request{Source: "import sys\nprint('a')\nsys.exit(0)\nprint('b')"}, status: StatusOK, stdout: "a\n"},
		{name: "SystemExit(3)", req: Request{Source: "raise SystemExit(3)"}, status: StatusError, exit: 3},
		{
			name: "uncaught exception shows the program's traceback only",
			req:  Request{Source: "x = 1\ndef f():\n    return x / 0\nf()\n"}, status: StatusError, exit: 1,
			stderrHas: []string{"Traceback (most recent call last):\n  File \"<code>\", line 4, in <module>\n    f()", "return x / 0", "ZeroDivisionError: division by zero"},
		},
		{name: "syntax error", req: Request{Source: "def f(:\n"}, status: StatusError, exit: 1, stderrHas: []string{"File \"<code>\", line 1", "SyntaxError"}},
		{name: "__main__", req: Request{Source: "import __main__\nprint(__name__, __main__.__dict__ is globals())"}, status: StatusOK, stdout: "__main__ True\n"},
		{name: "python loop times out", req: Request{Source: "while True: pass", Timeout: 1500 * time.Millisecond}, status: StatusTimeout, maxElapsed: 3500 * time.Millisecond},
		{name: "C loop times out", req: Request{Source: "sum(range(10**13))", Timeout: 1500 * time.Millisecond}, status: StatusTimeout, maxElapsed: 3500 * time.Millisecond},
		{name: "sleep times out", req: Request{Source: "import time\ntime.sleep(60)", Timeout: 1 * time.Second}, status: StatusTimeout, maxElapsed: 3 * time.Second},
		{name: "output before a timeout is kept", req: Request{Source: "print('started')\nwhile True: pass", Timeout: time.Second}, status: StatusTimeout, stdout: "started\n"},
		{name: "sleep works", req: Request{Source: "import time\nt = time.monotonic()\ntime.sleep(0.2)\nprint(0.15 < time.monotonic() - t < 2)"}, status: StatusOK, stdout: "True\n"},
		{name: "real clock and random", req: Request{Source: "import time, os\nprint(time.time() > 1.7e9, len(set(os.urandom(16))) > 1)"}, status: StatusOK, stdout: "True True\n"},
		{name: "read /etc/passwd", req: Request{Source: "print(open('/etc/passwd').read())"}, status: StatusError, exit: 1, stderrHas: []string{"Error"}},
		{name: "dot-dot out of the stdlib", req: Request{Source: "print(open('/usr/lib/python3.13/../../../etc/passwd').read())"}, status: StatusError, exit: 1},
		{name: "dot-dot out of scratch", req: Request{Source: "print(open('../etc/passwd').read())"}, status: StatusError, exit: 1},
		{name: "list /", req: Request{Source: "import os\nprint(os.listdir('/'))"}, status: StatusError, exit: 1},
		{name: "stdlib is read-only", req: Request{Source: "open('/usr/lib/python3.13/os.py', 'a').write('x')"}, status: StatusError, exit: 1},
		{name: "environment is ours", req: Request{Source: "import os\nprint(sorted(os.environ))"}, status: StatusOK,
			stdout: "['HOME', 'LANG', 'PYTHONDONTWRITEBYTECODE', 'PYTHONHOME', 'PYTHONNOUSERSITE', 'PYTHONSAFEPATH', 'PYTHONUNBUFFERED', 'PYTHONUTF8', 'TMPDIR']\n"},
		{name: "no processes", req: Request{Source: "import os\nos.system('ls')"}, status: StatusError, exit: 1},
		{name: "no subprocess", req: Request{Source: "import subprocess\nsubprocess.run(['ls'])"}, status: StatusError, exit: 1},
		{name: "no sockets", req: Request{Source: "import socket\nsocket.create_connection(('127.0.0.1', 80), timeout=1)"}, status: StatusError, exit: 1},
		{name: "no threads", req: Request{Source: "import threading\nthreading.Thread(target=print).start()"}, status: StatusError, exit: 1},
		{
			name: "scratch directory works", status: StatusOK, stdout: "/tmp hello ['a.txt', 'd'] 5\n",
			req: Request{Source: "import os\nopen('a.txt', 'w').write('hello')\nos.mkdir('d')\nprint(os.getcwd(), open('/tmp/a.txt').read(), sorted(os.listdir('.')), os.path.getsize('a.txt'))"},
		},
		{name: "no symlinks in scratch", req: Request{Source: "import os\nos.symlink('/etc/passwd', 'p')"}, status: StatusError, exit: 1, stderrHas: []string{"PermissionError"}},
		{name: "scratch is capped", req: Request{Source: "open('big', 'wb').write(b'x' * (2 << 20))", ScratchBytes: 1 << 20}, status: StatusError, exit: 1, stderrHas: []string{"OSError"}},
		{name: "scratch is fresh for each run", req: Request{Source: "import os\nprint(os.listdir('/tmp'))"}, status: StatusOK, stdout: "[]\n"},
		{
			name: "big print is capped and the run completes", status: StatusOK, truncated: true,
			req:       Request{Source: "print('x' * 10_000_000)\nprint('done')", StdoutChars: 1000},
			stdoutHas: []string{"characters omitted ...\n", "xxx\ndone\n"},
		},
		{name: "deep recursion", req: Request{Source: "def f(n): return f(n + 1)\nf(0)"}, status: StatusError, exit: 1, stderrHas: []string{"RecursionError"}},
		{
			name: "allocation beyond the limit is oom", status: StatusOOM,
			req:       Request{Source: "b = bytearray(10**9)", MemoryBytes: 256 << 20},
			stderrHas: []string{"MemoryError"}, exit: 1,
		},
		{
			name: "growing until the limit is oom", status: StatusOOM, maxElapsed: 10 * time.Second,
			req:       Request{Source: "x = []\nwhile True: x.append(bytearray(10**6))", MemoryBytes: 128 << 20},
			stderrHas: []string{"MemoryError"}, exit: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := e.Run(context.Background(), tc.req)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Status != tc.status || res.ExitCode != tc.exit {
				t.Errorf("Run = status %q exit %d, want %q exit %d\nstdout: %q\nstderr: %q", res.Status, res.ExitCode, tc.status, tc.exit, res.Stdout, res.Stderr)
			}
			if tc.stdout != "" && res.Stdout != tc.stdout {
				t.Errorf("stdout = %q, want %q", res.Stdout, tc.stdout)
			}
			for _, s := range tc.stdoutHas {
				if !strings.Contains(res.Stdout, s) {
					t.Errorf("stdout %q does not contain %q", clip(res.Stdout), s)
				}
			}
			for _, s := range tc.stderrHas {
				if !strings.Contains(res.Stderr, s) {
					t.Errorf("stderr %q does not contain %q", clip(res.Stderr), s)
				}
			}
			if res.StdoutTruncated != tc.truncated {
				t.Errorf("StdoutTruncated = %v, want %v", res.StdoutTruncated, tc.truncated)
			}
			if tc.maxElapsed > 0 && res.Elapsed > tc.maxElapsed {
				t.Errorf("Elapsed = %v, want at most %v", res.Elapsed, tc.maxElapsed)
			}
		})
	}
}

// TestRunAfterOOM checks that an instance that ran out of memory leaves nothing behind.
func TestRunAfterOOM(t *testing.T) {
	e := testEngine(t)
	res, err := e.Run(context.Background(), Request{Source: "b = bytearray(10**9)", MemoryBytes: 64 << 20})
	if err != nil || res.Status != StatusOOM {
		t.Fatalf("memory bomb: %+v, %v; want oom", res, err)
	}
	res, err = e.Run(context.Background(), Request{Source: "print(sum(range(10)))"})
	if err != nil || res.Status != StatusOK || res.Stdout != "45\n" {
		t.Fatalf("run after oom: %+v, %v; want ok 45", res, err)
	}
}

func TestRunCallerCancel(t *testing.T) {
	e := testEngine(t)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := e.Run(ctx, Request{Source: "while True: pass", Timeout: time.Minute})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Run with the caller's deadline: err = %v, want context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Run took %v after the caller's 0.5 s deadline", d)
	}
}

func TestRunConcurrent(t *testing.T) {
	e := testEngine(t)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := e.Run(context.Background(), Request{Source: "print(" + string(rune('0'+i)) + ")"})
			switch {
			case err != nil:
				errs <- err
			case res.Status != StatusOK || res.Stdout != string(rune('0'+i))+"\n":
				errs <- errors.New("run " + string(rune('0'+i)) + ": " + string(res.Status) + " " + res.Stdout + res.Stderr)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func clip(s string) string {
	if len(s) > 400 {
		return s[:200] + "…" + s[len(s)-200:]
	}
	return s
}

// prelude2K is a 2 KB prelude with top-level await, the size the spec measured.
var prelude2K = func() string {
	var b strings.Builder
	b.WriteString("import asyncio, json\n")
	for i := 0; b.Len() < 2000; i++ {
		b.WriteString("async def fetch_" + string(rune('a'+i%26)) + "(url):\n    await asyncio.sleep(0)\n    return json.loads('{\"k\": 1}')\n")
	}
	b.WriteString("data = await fetch_a('x')\n")
	return b.String()
}()

func BenchmarkCheckSyntax(b *testing.B) {
	e := testEngine(b)
	ctx := context.Background()
	for b.Loop() {
		if se, err := e.CheckSyntax(ctx, prelude2K); se != nil || err != nil {
			b.Fatal(se, err)
		}
	}
}

func BenchmarkRunPrint(b *testing.B) {
	e := testEngine(b)
	ctx := context.Background()
	for b.Loop() {
		res, err := e.Run(ctx, Request{Source: "print(1)"})
		if err != nil || res.Status != StatusOK {
			b.Fatal(res, err)
		}
	}
}
