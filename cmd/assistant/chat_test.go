package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvents reads a whole SSE response the way the widget does: one `data: {json}` line per
// event; any other non-blank line is a protocol error here.
func sseEvents(t *testing.T, resp *http.Response) []map[string]any {
	t.Helper()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream; charset=utf-8" {
		t.Fatalf("Content-Type %q, want text/event-stream", ct)
	}
	var out []map[string]any
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	blank := true
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			blank = true
			continue
		}
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok || !blank {
			t.Fatalf("bad SSE framing at %q", line)
		}
		blank = false
		var ev map[string]any
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("event is not one JSON line: %v: %q", err, data)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// compactKinds folds runs of content events into one "content+" so assertions do not depend on
// how a model splits its text.
func compactKinds(evs []map[string]any) string {
	var k []string
	for _, e := range evs {
		name := e["event"].(string)
		if name == "content" {
			if len(k) > 0 && k[len(k)-1] == "content+" {
				continue
			}
			name = "content+"
		}
		k = append(k, name)
	}
	return strings.Join(k, " ")
}

func jsonBody(v any) *strings.Reader {
	b, _ := json.Marshal(v)
	return strings.NewReader(string(b))
}

func (ts *testServer) chat(t *testing.T, community string, body map[string]any, headers ...string) (*http.Response, []map[string]any) {
	t.Helper()
	resp := ts.do(t, "POST", "/"+community+"/chat", jsonBody(body), append([]string{"Content-Type", "application/json"}, headers...)...)
	if resp.StatusCode != 200 {
		t.Fatalf("chat: status %d: %s", resp.StatusCode, readAll(t, resp))
	}
	return resp, sseEvents(t, resp)
}

func (ts *testServer) resume(t *testing.T, community string, body map[string]any, headers ...string) (*http.Response, []map[string]any) {
	t.Helper()
	resp := ts.do(t, "POST", "/"+community+"/chat/resume", jsonBody(body), append([]string{"Content-Type", "application/json"}, headers...)...)
	if resp.StatusCode != 200 {
		return resp, nil
	}
	return resp, sseEvents(t, resp)
}

var declared = []string{"execute_code", "get_full_output"}

// TestScriptedRoundTrip is the offline path `make run` gives: a python block becomes a
// tool_request; the posted result comes back quoted.
func TestScriptedRoundTrip(t *testing.T) {
	ts := startServer(t)
	resp, evs := ts.chat(t, "nemar", map[string]any{"message": "Please run\n```python\nprint(6*7)\n```", "client_tools": declared})
	if got := compactKinds(evs); got != "session content+ tool_call tool_request" {
		t.Fatalf("events %q", got)
	}
	sid := evs[0]["session_id"].(string)
	if resp.Header.Get("X-Session-ID") != sid || sid == "" {
		t.Errorf("X-Session-ID %q, session %q", resp.Header.Get("X-Session-ID"), sid)
	}
	req := evs[len(evs)-1]
	args := req["args"].(map[string]any)
	if req["tool"] != "execute_code" || args["code"] != "print(6*7)\n" || req["requires_permission"] != true || req["session_id"] != sid {
		t.Fatalf("tool_request %v", req)
	}
	callID := req["call_id"].(string)
	_, evs = ts.resume(t, "nemar", map[string]any{"session_id": sid, "client_tools": declared,
		"result": map[string]any{"call_id": callID, "status": "ok", "stdout": "42\n", "elapsed_ms": 12}})
	if got := compactKinds(evs); got != "session content+ done" {
		t.Fatalf("resume events %q", got)
	}
	done := evs[len(evs)-1]
	if c := done["content"].(string); !strings.Contains(c, "status ok") || !strings.Contains(c, "42") {
		t.Errorf("done content %q does not quote the result", c)
	}
	if done["session_id"] != sid || done["model"] != "scripted/demo" {
		t.Errorf("done %v", done)
	}
	// A replayed result is refused: accept at most once.
	r, _ := ts.resume(t, "nemar", map[string]any{"session_id": sid, "result": map[string]any{"call_id": callID, "stdout": "42\n"}})
	if r.StatusCode != 409 || string(readAll(t, r)) != `{"detail":"No outstanding browser call with that id for this session."}`+"\n" {
		t.Errorf("replay: %d", r.StatusCode)
	}
}

// TestScriptedPlainAnswer: a question without code gets the offline model's answer from the
// community's documentation: it searches, then writes in several content events.
func TestScriptedPlainAnswer(t *testing.T) {
	ts := startServer(t)
	_, evs := ts.chat(t, "bids", map[string]any{"message": "What is BIDS?"})
	if got := compactKinds(evs); !strings.HasPrefix(got, "session tool_call tool_start tool_end content+") || !strings.HasSuffix(got, " done") ||
		evs[2]["name"] != "search_bids_docs" {
		t.Fatalf("events %q", got)
	}
	n := 0
	for _, e := range evs {
		if e["event"] == "content" {
			n++
		}
	}
	if n < 2 {
		t.Errorf("text came in %d content events, want several", n)
	}
	if c := evs[len(evs)-1]["content"].(string); !strings.Contains(c, "offline demo model") && !strings.Contains(c, "searched the documentation") {
		t.Errorf("content %q", c)
	}
	// Without declared tools a python block is not run.
	_, evs = ts.chat(t, "nemar", map[string]any{"message": "```python\nprint(1)\n```"})
	if got := compactKinds(evs); strings.Contains(got, "tool_request") || evs[1]["name"] == "execute_code" || !strings.HasSuffix(got, " done") {
		t.Errorf("undeclared tools: events %q", got)
	}
}

// TestChatJSONMode: a non-streamed chat answers as JSON; the offline model searches the
// community's documentation (its own guide, read from its folder in the background at start)
// and answers with the passages quoted and cited, and the JSON carries the tool call and the
// citations.
func TestChatJSONMode(t *testing.T) {
	ts := startServerWith(t, nil, nil, "--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0")
	type answer struct {
		SessionID string `json:"session_id"`
		Message   struct {
			Role, Content string
		} `json:"message"`
		Model     string `json:"model"`
		ToolCalls []struct {
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		} `json:"tool_calls"`
		Citations []struct {
			Marker        int
			Source, Title string
			CitedText     string `json:"cited_text"`
		} `json:"citations"`
	}
	var body answer
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		r := ts.do(t, "POST", "/hed/chat", jsonBody(map[string]any{"message": "What is HED?", "stream": false, "session_id": fmt.Sprintf("my-session-%d", i)}), "Content-Type", "application/json")
		body = answer{}
		if err := json.Unmarshal(readAll(t, r), &body); err != nil || r.StatusCode != 200 {
			t.Fatalf("%d %v", r.StatusCode, err)
		}
		// The guide is indexed in the background: until then the search finds nothing.
		if len(body.Citations) > 0 || time.Now().After(deadline) {
			break
		}
	}
	if !strings.HasPrefix(body.SessionID, "my-session-") || body.Message.Role != "assistant" || body.Model != "scripted/demo" ||
		!strings.Contains(body.Message.Content, "Hierarchical Event Descriptors") || !strings.Contains(body.Message.Content, "[1]") {
		t.Errorf("body %+v", body)
	}
	if len(body.ToolCalls) != 1 || body.ToolCalls[0].Name != "search_hed_docs" || body.ToolCalls[0].Args["query"] != "What is HED?" {
		t.Errorf("tool calls %+v", body.ToolCalls)
	}
	if len(body.Citations) == 0 || body.Citations[0].Marker != 1 || !strings.Contains(body.Citations[0].Source, "communities/hed/docs/guide.md#") ||
		!strings.Contains(body.Message.Content, body.Citations[0].CitedText) {
		t.Errorf("citations %+v", body.Citations)
	}
}

func TestChatRequestErrors(t *testing.T) {
	ts := startServer(t)
	post := func(path string, body string) (int, string) {
		r := ts.do(t, "POST", path, strings.NewReader(body), "Content-Type", "application/json")
		return r.StatusCode, string(readAll(t, r))
	}
	cases := []struct {
		path, body string
		status     int
		contains   string
	}{
		{"/hed/chat", `{"message":""}`, 422, `"loc":["body","message"]`},
		{"/hed/chat", `{}`, 422, `"type":"missing"`},
		{"/hed/chat", `{"message":"` + strings.Repeat("é", 10001) + `"}`, 400, `Message too long (10001 chars). Max: 10000`},
		{"/hed/chat", `{"message":"x","client_tools":["a","b","c","d","e","f","g","h","i"]}`, 422, `"type":"too_long"`},
		{"/hed/chat", `{"message":"x","page_context":{"url":"file:///etc/passwd"}}`, 422, `"loc":["body","page_context","url"]`},
		{"/hed/chat", `{"message":"x","page_context":{"title":"` + strings.Repeat("t", 501) + `"}}`, 422, `"string_too_long"`},
		{"/nope/chat", `{"message":"x"}`, 404, `Not Found`},
		{"/hed/chat/resume", `{"session_id":"s","result":{"call_id":"c"},"extra":1}`, 422, `"extra_forbidden"`},
		{"/hed/chat/resume", `{"session_id":"s"}`, 422, `"loc":["body","result"]`},
		{"/hed/chat/resume", `{"session_id":"s","result":{"call_id":"c","stdout":"` + strings.Repeat("x", 16385) + `"}}`, 422, `"string_too_long"`},
		{"/hed/chat/resume", `{"session_id":"never-created","result":{"call_id":"c"}}`, 404, `{"detail":"Session not found or expired."}`},
	}
	for _, tc := range cases {
		code, body := post(tc.path, tc.body)
		if code != tc.status || !strings.Contains(body, tc.contains) {
			t.Errorf("%s %.60s: %d %.300s; want %d containing %s", tc.path, tc.body, code, body, tc.status, tc.contains)
		}
	}
	// A session that exists but has nothing parked: 409.
	_, evs := ts.chat(t, "hed", map[string]any{"message": "hello", "session_id": "s-409"})
	if len(evs) == 0 {
		t.Fatal("no events")
	}
	if code, body := post("/hed/chat/resume", `{"session_id":"s-409","result":{"call_id":"nothing"}}`); code != 409 {
		t.Errorf("nothing parked: %d %s", code, body)
	}
}
