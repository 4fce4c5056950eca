package main

import (
	"strings"
	"testing"
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
	if c, _ := done["content"].(string); !strings.HasPrefix(c, "I will run your code in your browser.") || !strings.Contains(c, "status ok") || !strings.Contains(c, "42") {
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
