package main

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestSandboxWorkerUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"sandbox-worker"}, 2, "no engine"},
		{[]string{"sandbox-worker", "--engine-dir", "x", "extra"}, 2, "unexpected argument"},
		{[]string{"sandbox-worker", "--engine-dir", "x", "--mode", "quick"}, 2, "unknown mode"},
		{[]string{"sandbox-worker", "--engine-dir", "x", "--memory-mb", "5000"}, 2, "outside"},
		{[]string{"sandbox-worker", "--engine-dir", "x", "--log-format", "xml"}, 2, "log format"},
		{[]string{"sandbox-worker", "--bogus"}, 2, "flag provided but not defined"},
		{[]string{"sandbox-worker", "-h"}, 0, "not for interactive use"},
		{[]string{"sandbox-worker", "--engine-dir", filepath.Join("testdata", "no-such-engine"), "--log-format", "text"}, 1, "loading the engine failed"},
	} {
		code, stdout, stderr := runCmd(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) || stdout != "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d mentioning %q", tc.args, code, stdout, stderr, tc.code, tc.want)
		}
	}
}

// TestSandboxWorkerServes speaks the worker protocol (sandbox/protocol.go) to the subcommand:
// a hello, a run acknowledged and answered, and a clean exit when stdin ends.
func TestSandboxWorkerServes(t *testing.T) {
	dir := engineDir(t)
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var stderr strings.Builder
	code := make(chan int, 1)
	go func() {
		code <- run(t.Context(), []string{"assistant", "sandbox-worker", "--engine-dir", dir, "--log-format", "json"},
			func(string) string { return "" }, inR, outW, &stderr)
		_ = outW.Close()
	}()
	defer inW.Close()

	type frame struct {
		Type   string          `json:"type"`
		ID     uint64          `json:"id,omitempty"`
		Hello  json.RawMessage `json:"hello,omitempty"`
		Result *struct {
			Status string
			Stdout string
		} `json:"result,omitempty"`
	}
	recv := func() frame {
		t.Helper()
		var hdr [4]byte
		if _, err := io.ReadFull(outR, hdr[:]); err != nil {
			t.Fatalf("reading a frame: %v; stderr:\n%s", err, stderr.String())
		}
		body := make([]byte, binary.BigEndian.Uint32(hdr[:]))
		if _, err := io.ReadFull(outR, body); err != nil {
			t.Fatal(err)
		}
		var f frame
		if err := json.Unmarshal(body, &f); err != nil {
			t.Fatalf("%v: %s", err, body)
		}
		return f
	}
	send := func(v any) {
		t.Helper()
		body, _ := json.Marshal(v)
		buf := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		if _, err := inW.Write(append(buf, body...)); err != nil {
			t.Fatal(err)
		}
	}

	if f := recv(); f.Type != "ready" || !strings.Contains(string(f.Hello), `"mode":"fast"`) {
		t.Fatalf("first frame %+v, want a fast-mode hello", f)
	}
	send(map[string]any{"type": "run", "id": 1, "request": map[string]any{"Source": "print(40 + 2)", "Timeout": int64(10 * time.Second)}})
	if f := recv(); f.Type != "started" || f.ID != 1 {
		t.Fatalf("got %+v, want started", f)
	}
	if f := recv(); f.Type != "result" || f.Result == nil || f.Result.Status != "ok" || f.Result.Stdout != "42\n" {
		t.Fatalf("got %+v, want the result", f)
	}
	_ = inW.Close()
	select {
	case c := <-code:
		if c != 0 {
			t.Fatalf("exit %d after stdin ended; stderr:\n%s", c, stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the worker did not exit when its stdin ended")
	}
	if !strings.Contains(stderr.String(), `"mode":"fast"`) {
		t.Errorf("stderr should log the engine it loaded:\n%s", stderr.String())
	}
}
