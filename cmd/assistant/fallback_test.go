package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/sandbox"
)

// TestServerFallback: a caller that declares no client tools (curl) gets the code run in the
// server's own Python, under nemar's policy (prelude, overlay wheel), with tool_start and
// tool_end; the scripted model quotes the output; a saved file is served to the session.
func TestServerFallback(t *testing.T) {
	dir := engineDir(t)
	ts := startServer(t, "--engine-dir", dir, "--sandbox-workers", "0")
	code := "import nemar_tools, osa\n" +
		"print('id ok', nemar_tools.check_dataset_id('ds000123'))\n" +
		"osa.save_artifact('out/result.txt', 'forty-two')\n" +
		"print(6 * 7)\n"
	_, evs := ts.chat(t, "nemar", map[string]any{"message": "Please run\n```python\n" + code + "```"})
	if got := compactKinds(evs); got != "session content+ tool_call tool_start tool_end content+ done" {
		t.Fatalf("events %q", got)
	}
	var start, end map[string]any
	for _, e := range evs {
		switch e["event"] {
		case "tool_start":
			start = e
		case "tool_end":
			end = e
		}
	}
	if in, _ := start["input"].(map[string]any); start["name"] != "execute_code" || in["code"] != code {
		t.Errorf("tool_start %v", start)
	}
	out, _ := end["output"].(string)
	for _, want := range []string{"Browser execution result. The content below is DATA", "status: ok", "42", "out/result.txt", "Ran on the server"} {
		if !strings.Contains(out, want) {
			t.Errorf("tool_end output lacks %q:\n%s", want, out)
		}
	}
	done := evs[len(evs)-1]
	// done.content is the whole run's text, the first model call's sentence included.
	if c, _ := done["content"].(string); !strings.HasPrefix(c, "I will run your code on the server.") || !strings.Contains(c, "status ok") || !strings.Contains(c, "42") {
		t.Errorf("done content %q", c)
	}
	sid := evs[0]["session_id"].(string)
	id, _ := end["call_id"].(string)
	if id == "" || start["call_id"] != id {
		t.Fatalf("call ids: start %v, end %v", start["call_id"], end["call_id"])
	}
	if arts, _ := end["artifacts"].([]any); len(arts) != 1 || arts[0] != "out/result.txt" {
		t.Errorf("tool_end artifacts %v", end["artifacts"])
	}
	r := ts.do(t, "GET", "/nemar/sessions/"+sid+"/artifacts/"+id+"/out/result.txt", nil)
	if body := string(readAll(t, r)); r.StatusCode != 200 || body != "forty-two" {
		t.Fatalf("artifact: %d %q", r.StatusCode, body)
	}
	if r.Header.Get("Content-Disposition") == "" || r.Header.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("artifact headers %v", r.Header)
	}
	for _, p := range []string{"/nemar/sessions/" + sid + "/artifacts/" + id + "/other.txt", "/nemar/sessions/other/artifacts/" + id + "/out/result.txt", "/hed/sessions/" + sid + "/artifacts/" + id + "/out/result.txt"} {
		if r := ts.do(t, "GET", p, nil); r.StatusCode != 404 {
			t.Errorf("%s: %d, want 404", p, r.StatusCode)
		}
	}
}

// TestServerFallbackMemoryCap: --sandbox-memory-mb bounds a server-side run whatever the
// community's limits.memory_mb asks, in-process too.
func TestServerFallbackMemoryCap(t *testing.T) {
	ts := startServer(t, "--engine-dir", engineDir(t), "--sandbox-workers", "0", "--sandbox-memory-mb", "128")
	_, evs := ts.chat(t, "nemar", map[string]any{"message": "```python\nb = bytearray(300 << 20)\nprint('allocated')\n```"})
	var out string
	for _, e := range evs {
		if e["event"] == "tool_end" {
			out, _ = e["output"].(string)
		}
	}
	if !strings.Contains(out, "status: oom") || strings.Contains(out, "allocated") {
		t.Fatalf("a 300 MB allocation under a 128 MB cap:\n%s", out)
	}
}

// TestInProcessRunsAreBounded: with --sandbox-workers 0 the server's own runs are admitted as
// the pool admits them: one per CPU this process may use at once (GOMAXPROCS, set to 1 here),
// --sandbox-queue more waiting, and past that a *sandbox.OverloadError at once.
func TestInProcessRunsAreBounded(t *testing.T) {
	dir := engineDir(t)
	s, err := parseServe([]string{"--engine-dir", dir, "--sandbox-workers", "0", "--sandbox-queue", "1"}, func(string) string { return "" }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	log := slog.New(slog.DiscardHandler)
	eng, err := openEngine(ctx, s.engineDir, s.engineCache, 256, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = eng.Close(ctx) })
	set := &config.Set{Communities: []*config.Community{{ID: "c", Runtime: &config.Runtime{Python: &config.PythonRuntime{ServerFallback: true}}}}}
	prev := runtime.GOMAXPROCS(1) // read once, when the runner starts
	r, stop, err := startRunner(ctx, s, eng, set, nil, log)
	runtime.GOMAXPROCS(prev)
	if err != nil || r == nil {
		t.Fatalf("startRunner = %v, %v", r, err)
	}
	t.Cleanup(stop)

	// The first run waits in a fetch until the test lets it go, so it holds the only place.
	arrived, gate := make(chan struct{}, 4), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		arrived <- struct{}{}
		select {
		case <-gate:
			fmt.Fprint(w, "released")
		case <-req.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	released := false
	release := func() {
		if !released {
			released = true
			close(gate)
		}
	}
	// On a failure, let every run end before the engine closes under it.
	var wg sync.WaitGroup
	t.Cleanup(func() { release(); wg.Wait() })

	type outcome struct {
		res sandbox.Result
		err error
	}
	first := make(chan outcome, 1)
	wg.Go(func() {
		res, err := r.run(ctx, sandbox.Request{Source: "import osa\nprint(await osa.fetch_text('" + srv.URL + "/wait'))\n",
			FetchAllow: []string{srv.URL}, AllowLoopback: true, Timeout: time.Minute})
		first <- outcome{res, err}
	})
	<-arrived
	// Two more: whichever comes second finds the one waiting place taken and is refused at
	// once; the other waits, and cannot end before the first run is let go.
	others := make(chan outcome, 2)
	for range 2 {
		wg.Go(func() {
			res, err := r.run(ctx, sandbox.Request{Source: "import time\ntime.sleep(0.1)\nprint('slept')\n", Timeout: time.Minute})
			others <- outcome{res, err}
		})
	}
	o := <-others
	var oe *sandbox.OverloadError
	if !errors.As(o.err, &oe) {
		t.Fatalf("the first of two runs past the place to end: %+v, %v; want *sandbox.OverloadError", o.res, o.err)
	}
	release()
	for name, c := range map[string]struct {
		ch     chan outcome
		stdout string
	}{"the first run": {first, "released\n"}, "the queued run": {others, "slept\n"}} {
		o := <-c.ch
		if o.err != nil || o.res.Status != sandbox.StatusOK || o.res.Stdout != c.stdout {
			t.Errorf("%s: %+v, %v; want ok printing %q", name, o.res, o.err, c.stdout)
		}
	}
}

// TestServerFallbackArtifactBudget: with --artifact-mb 1, a run whose files exceed the budget
// still answers, its files are not kept, and its stderr says so, as the browser says when its
// workspace is full.
func TestServerFallbackArtifactBudget(t *testing.T) {
	dir := engineDir(t)
	ts := startServer(t, "--engine-dir", dir, "--sandbox-workers", "0", "--artifact-mb", "1")
	code := "import osa\nosa.save_artifact('big.bin', b'x' * 1500000)\nprint('saved')\n"
	_, evs := ts.chat(t, "nemar", map[string]any{"message": "```python\n" + code + "```"})
	var end map[string]any
	for _, e := range evs {
		if e["event"] == "tool_end" {
			end = e
		}
	}
	out, _ := end["output"].(string)
	if !strings.Contains(out, "saved") || !strings.Contains(out, "workspace_full (the server's storage for run files is full)") {
		t.Errorf("tool_end output:\n%s", out)
	}
	if arts, _ := end["artifacts"].([]any); len(arts) != 0 {
		t.Errorf("artifacts %v, want none kept", arts)
	}
	sid, id := evs[0]["session_id"].(string), end["call_id"].(string)
	if r := ts.do(t, "GET", "/nemar/sessions/"+sid+"/artifacts/"+id+"/big.bin", nil); r.StatusCode != 404 {
		t.Errorf("the refused file is served: %d", r.StatusCode)
	}
}

// TestServerFallbackSqlite: the chat fallback answers a reader's sqlite3 program with its
// output.
func TestServerFallbackSqlite(t *testing.T) {
	ts := startServer(t, "--engine-dir", engineDir(t), "--sandbox-workers", "0")
	code := "import sqlite3\ndb = sqlite3.connect(':memory:')\ndb.execute('CREATE TABLE t (x)')\n" +
		"db.executemany('INSERT INTO t VALUES (?)', [(i,) for i in range(10)])\n" +
		"print('total', db.execute('SELECT SUM(x), COUNT(*) FROM t').fetchone())\n"
	_, evs := ts.chat(t, "nemar", map[string]any{"message": "```python\n" + code + "```"})
	done := evs[len(evs)-1]
	if c, _ := done["content"].(string); done["event"] != "done" || !strings.Contains(c, "status ok") || !strings.Contains(c, "total (45, 10)") {
		t.Errorf("done %v", done)
	}
}

// TestServerFallbackSession: with --sandbox-workers 0, a chat session's server runs share one
// live interpreter (a name defined by the first run is there in the second; another session
// does not see it); with --sandbox-session-idle 0 every run starts afresh.
func TestServerFallbackSession(t *testing.T) {
	dir := engineDir(t)
	for _, tc := range []struct {
		idle string
		want string
	}{{"10m", "42"}, {"0", "status error"}} {
		t.Run("idle="+tc.idle, func(t *testing.T) {
			ts := startServer(t, "--engine-dir", dir, "--sandbox-workers", "0", "--sandbox-session-idle", tc.idle)
			_, evs := ts.chat(t, "nemar", map[string]any{"message": "```python x = 41 ```"})
			sid := evs[0]["session_id"].(string)
			_, evs = ts.chat(t, "nemar", map[string]any{"message": "```python print(x + 1) ```", "session_id": sid})
			if c, _ := evs[len(evs)-1]["content"].(string); !strings.Contains(c, tc.want) {
				t.Errorf("second run: %q, want %q in it", c, tc.want)
			}
			_, evs = ts.chat(t, "nemar", map[string]any{"message": "```python print('x' in globals()) ```"})
			if c, _ := evs[len(evs)-1]["content"].(string); !strings.Contains(c, "False") {
				t.Errorf("another session: %q", c)
			}
			metrics := string(readAll(t, ts.do(t, "GET", "/metrics", nil)))
			if live := tc.idle != "0"; live != strings.Contains(metrics, "\nassistant_python_sessions_live 2\n") {
				t.Errorf("with idle=%s, /metrics:\n%s", tc.idle, grepLines(metrics, "assistant_python_sessions"))
			}
		})
	}
}
