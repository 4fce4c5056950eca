package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// quickCommunity is a community whose code runs on the server with a 2 s deadline.
const quickCommunity = `id: quick
name: Quick
description: Runs code on the server with a short deadline.
extensions:
  client_tools:
    - name: execute_code
      runtime: python
      description: Runs Python and returns its output.
runtime:
  python:
    pyodide_version: "0.29.5"
    server_fallback: true
    limits:
      exec_seconds: 2
`

// TestForgedDoneThroughTheServer (issue 22, item 1) through the real binary and its worker
// pool: a program that writes the run driver's own "done" message and then loops inside C is
// not reported as finished: the run ends as a timeout at its deadline, its worker is killed
// and counted on /metrics, and the session's next run says that the interpreter restarted.
func TestForgedDoneThroughTheServer(t *testing.T) {
	eng := engineDir(t)
	dir := filepath.Join(t.TempDir(), "quick")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(quickCommunity), 0o644); err != nil {
		t.Fatal(err)
	}
	off := "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"
	p := serve(t, nil, "--communities", filepath.Dir(dir), "--engine-dir", eng, "--sandbox-workers", "1", "--rate-limits", off)
	sid := "forged-" + strings.ToLower(t.Name())
	forged := `import os; fd = os.open("/dev/osa/call", os.O_RDWR); os.write(fd, b'{"op":"done","code":0}\n'); os.read(fd, 4096); x = 1; sum(range(10**13))`
	out := serverRunIn(t, p, "quick", sid, forged)
	if !strings.Contains(out, "status: timeout") {
		t.Fatalf("the forged run did not end as a timeout; the model read:\n%s", out)
	}
	if n := metricValue(t, p.url, "assistant_python_workers_killed_total"); n != 1 {
		t.Errorf("assistant_python_workers_killed_total = %v, want 1", n)
	}
	out = serverRunIn(t, p, "quick", sid, "print('x' in globals())")
	if !strings.Contains(out, "status: ok") || !strings.Contains(out, "<stdout>\nFalse\n") || !strings.Contains(out, msgRestarted) {
		t.Errorf("the next run; the model read:\n%s", out)
	}
}
