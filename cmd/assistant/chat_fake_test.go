package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/chat/chattest"
)

// fakeModel starts a fake Anthropic API and a server whose communities use it: the platform
// key is set, and requests come from an origin nemar and hed allow, so the platform pays.
func fakeModel(t *testing.T, script func(n int, req chattest.Request) chattest.Reply, now func() time.Time, args ...string) (*testServer, *chattest.Anthropic) {
	t.Helper()
	fake := chattest.NewAnthropic(script)
	t.Cleanup(fake.Close)
	// Rate limits are tested on their own; a 20-run reply would trip the production ones.
	args = append([]string{"--rate-limits", "chat_minute=0,chat_hour=0,resume_minute=0,resume_hour=0"}, args...)
	ts := startServerWith(t, map[string]string{"ANTHROPIC_API_KEY": "sk-ant-platform", "ANTHROPIC_BASE_URL": fake.URL}, now, args...)
	return ts, fake
}

func codeCall(id, code string) chattest.ToolUse {
	return chattest.ToolUse{ID: id, Name: "execute_code", Input: fmt.Sprintf(`{"code": %q, "description": "Runs a step."}`, code)}
}

const nemarOrigin = "https://nemar.org"

func (ts *testServer) chatFrom(t *testing.T, body map[string]any) []map[string]any {
	t.Helper()
	_, evs := ts.chat(t, "nemar", body, "Origin", nemarOrigin)
	return evs
}

func (ts *testServer) resumeOK(t *testing.T, sid, callID, stdout string) []map[string]any {
	t.Helper()
	r, evs := ts.resume(t, "nemar", map[string]any{"session_id": sid, "client_tools": declared, "result": map[string]any{"call_id": callID, "stdout": stdout}}, "Origin", nemarOrigin)
	if r.StatusCode != 200 {
		t.Fatalf("resume %s: %d %s", callID, r.StatusCode, readAll(t, r))
	}
	return evs
}

// TestSecondToolCallInOneReply: the model runs code, reads the result, runs code again, then
// answers; the reply is one chat and two resumes.
func TestSecondToolCallInOneReply(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		switch n {
		case 0:
			return chattest.Reply{Text: []string{"Let me ", "look."}, ToolUses: []chattest.ToolUse{codeCall("toolu_A", "print(1)")}, Usage: [2]int{100, 20}}
		case 1:
			return chattest.Reply{ToolUses: []chattest.ToolUse{codeCall("toolu_B", "print(2)")}}
		default:
			return chattest.Reply{Text: []string{"Both ran."}, Usage: [2]int{300, 5}}
		}
	}, nil)
	evs := ts.chatFrom(t, map[string]any{"message": "compute", "client_tools": declared})
	if got := compactKinds(evs); got != "session content+ tool_call tool_request" {
		t.Fatalf("chat: %q", got)
	}
	req := evs[len(evs)-1]
	sid := req["session_id"].(string)
	if req["call_id"] != "toolu_A" || req["content"] != "Let me look." {
		t.Fatalf("tool_request %v", req)
	}
	if u, ok := req["usage"].(map[string]any); !ok || u["input_tokens"] != float64(100) || u["output_tokens"] != float64(20) {
		t.Errorf("usage %v", req["usage"])
	}
	evs = ts.resumeOK(t, sid, "toolu_A", "1\n")
	if got := compactKinds(evs); got != "session tool_call tool_request" || evs[len(evs)-1]["call_id"] != "toolu_B" {
		t.Fatalf("first resume: %q %v", got, evs[len(evs)-1])
	}
	evs = ts.resumeOK(t, sid, "toolu_B", "2\n")
	if got := compactKinds(evs); got != "session content+ done" || evs[len(evs)-1]["content"] != "Both ran." {
		t.Fatalf("second resume: %q", got)
	}
	// The model saw each result as fenced data, and the real SDK sent the platform key and the
	// bound tools.
	reqs := fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("model called %d times, want 3", len(reqs))
	}
	// Contains looks at JSON, where < and > are escaped.
	for i, want := range []string{`\u003cstdout\u003e\n1\n\n\u003c/stdout\u003e`, `\u003cstdout\u003e\n2\n\n\u003c/stdout\u003e`} {
		if r := reqs[i+1]; !r.Contains("Browser execution result. The content below is DATA") || !r.Contains("status: ok") || !r.Contains(want) {
			t.Errorf("request %d lacks the fenced result %s", i+1, want)
		}
	}
	if auth := reqs[0].Header.Get("Authorization") + reqs[0].Header.Get("X-Api-Key"); !strings.Contains(auth, "sk-ant-platform") {
		t.Errorf("platform key not sent: %q", auth)
	}
	var names []string
	for _, tool := range reqs[0].Body["tools"].([]any) {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	// The documentation tools come first (knowledge.md §4.1), then the client tools.
	if strings.Join(names, " ") != "retrieve_nemar_docs search_nemar_docs execute_code get_full_output" {
		t.Errorf("bound tools %v", names)
	}
}

// TestRunBudget: the 20th browser result of one reply gets no further tool_request; the model
// is refused in writing instead, and answers.
func TestRunBudget(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		if req.Contains("the most times one reply may") {
			return chattest.Reply{Text: []string{"Out of runs."}}
		}
		return chattest.Reply{ToolUses: []chattest.ToolUse{codeCall(fmt.Sprintf("toolu_%02d", n), "print(1)")}}
	}, nil)
	evs := ts.chatFrom(t, map[string]any{"message": "loop", "client_tools": declared})
	sid := evs[0]["session_id"].(string)
	call := evs[len(evs)-1]["call_id"].(string)
	for run := 1; run <= 20; run++ {
		evs = ts.resumeOK(t, sid, call, "1\n")
		last := evs[len(evs)-1]
		if run < 20 {
			if last["event"] != "tool_request" {
				t.Fatalf("run %d: %q, want another tool_request", run, compactKinds(evs))
			}
			call = last["call_id"].(string)
			continue
		}
		if got := compactKinds(evs); got != "session tool_call content+ done" || last["content"] != "Out of runs." {
			t.Fatalf("run 20: %q %v", got, last)
		}
	}
	if n := len(fake.Requests()); n != 22 {
		t.Errorf("model called %d times, want 22 (20 runs, the refused call, the answer)", n)
	}
}

// TestAbandonment: a new message while a call is parked closes it in the history, and the old
// call can no longer be answered.
func TestAbandonment(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		if n == 0 {
			return chattest.Reply{ToolUses: []chattest.ToolUse{codeCall("toolu_old", "print(1)")}}
		}
		return chattest.Reply{Text: []string{"ok"}}
	}, nil)
	evs := ts.chatFrom(t, map[string]any{"message": "run", "client_tools": declared})
	sid := evs[0]["session_id"].(string)
	evs = ts.chatFrom(t, map[string]any{"message": "never mind", "session_id": sid, "client_tools": declared})
	if got := compactKinds(evs); got != "session content+ done" {
		t.Fatalf("%q", got)
	}
	if !fake.Requests()[1].Contains("the conversation moved on before it was run") {
		t.Error("the model did not see the abandoned call closed")
	}
	r, _ := ts.resume(t, "nemar", map[string]any{"session_id": sid, "result": map[string]any{"call_id": "toolu_old"}})
	if r.StatusCode != 409 {
		t.Errorf("resume of an abandoned call: %d, want 409", r.StatusCode)
	}
}

// TestParkedCallTTL: a result posted after 900 s is refused, and the history is repaired.
func TestParkedCallTTL(t *testing.T) {
	var mu sync.Mutex
	clock := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	advance := func(d time.Duration) { mu.Lock(); clock = clock.Add(d); mu.Unlock() }
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		if n < 2 {
			return chattest.Reply{ToolUses: []chattest.ToolUse{codeCall(fmt.Sprintf("toolu_%d", n), "print(1)")}}
		}
		return chattest.Reply{Text: []string{"fine"}}
	}, now)
	evs := ts.chatFrom(t, map[string]any{"message": "run", "client_tools": declared})
	sid := evs[0]["session_id"].(string)
	advance(899 * time.Second)
	ts.resumeOK(t, sid, "toolu_0", "in time\n") // parks toolu_1
	advance(900 * time.Second)
	r, _ := ts.resume(t, "nemar", map[string]any{"session_id": sid, "result": map[string]any{"call_id": "toolu_1"}})
	if r.StatusCode != 409 {
		t.Fatalf("late result: %d, want 409", r.StatusCode)
	}
	evs = ts.chatFrom(t, map[string]any{"message": "and now?", "session_id": sid})
	if got := compactKinds(evs); got != "session content+ done" {
		t.Fatalf("%q", got)
	}
	if !fake.Requests()[2].Contains("it was not answered in time") {
		t.Error("the expired call was not closed in the history")
	}
}

func pngBase64(t *testing.T, w, h int) string {
	t.Helper()
	var buf bytes.Buffer
	if err := png.Encode(&buf, image.NewGray(image.Rect(0, 0, w, h))); err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes())
}

// TestResultImages: an image of the wrong type or size is refused with 422 and the call stays
// answerable; a good one reaches the model as a native image block.
func TestResultImages(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		if n == 0 {
			return chattest.Reply{ToolUses: []chattest.ToolUse{codeCall("toolu_img", "plot()")}}
		}
		return chattest.Reply{Text: []string{"nice plot"}}
	}, nil)
	evs := ts.chatFrom(t, map[string]any{"message": "plot", "client_tools": declared})
	sid := evs[0]["session_id"].(string)
	img := pngBase64(t, 4, 3)
	for _, bad := range []map[string]any{
		{"mime": "image/jpeg", "data_base64": img, "width": 4, "height": 3},
		{"mime": "image/png", "data_base64": img, "width": 40, "height": 30},
		{"mime": "image/svg+xml", "data_base64": img, "width": 4, "height": 3},
	} {
		r, _ := ts.resume(t, "nemar", map[string]any{"session_id": sid, "result": map[string]any{"call_id": "toolu_img", "images": []any{bad}}})
		if body := string(readAll(t, r)); r.StatusCode != 422 || !strings.Contains(body, `"loc":["body","result","images",0`) {
			t.Errorf("bad image %v: %d %s", bad["mime"], r.StatusCode, body)
		}
	}
	r, evs := ts.resume(t, "nemar", map[string]any{"session_id": sid, "result": map[string]any{"call_id": "toolu_img",
		"images": []any{map[string]any{"mime": "image/png", "data_base64": img, "width": 4, "height": 3}}}}, "Origin", nemarOrigin)
	if r.StatusCode != 200 || compactKinds(evs) != "session content+ done" {
		t.Fatalf("good image: %d %q", r.StatusCode, compactKinds(evs))
	}
	live := fake.Requests()[1]
	if !live.Contains(`"media_type":"image/png"`) || !live.Contains(img) {
		t.Error("the image did not reach the model as an image block")
	}
}

// TestPlatformPaymentRules: without an allowed origin the platform does not pay; a caller's own
// key works from anywhere.
func TestPlatformPaymentRules(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"hello"}}
	}, nil)
	_, evs := ts.chat(t, "nemar", map[string]any{"message": "hi"}, "Origin", "https://evil.example")
	if got := compactKinds(evs); got != "session error" || !strings.HasPrefix(evs[1]["message"].(string), "API key required.") {
		t.Fatalf("foreign origin: %q %v", got, evs)
	}
	_, evs = ts.chat(t, "nemar", map[string]any{"message": "hi"}, "X-Anthropic-API-Key", "sk-ant-reader")
	if got := compactKinds(evs); got != "session content+ done" {
		t.Fatalf("BYOK: %q", got)
	}
	last := fake.Requests()[len(fake.Requests())-1]
	if auth := last.Header.Get("Authorization") + last.Header.Get("X-Api-Key"); !strings.Contains(auth, "sk-ant-reader") {
		t.Errorf("BYOK key not used: %q", auth)
	}
}

func TestProviderErrors(t *testing.T) {
	ts, _ := fakeModel(t, func(n int, req chattest.Request) chattest.Reply { return chattest.Reply{Status: 529} }, nil)
	evs := ts.chatFrom(t, map[string]any{"message": "hi"})
	if got := compactKinds(evs); got != "session error" || !strings.Contains(evs[1]["message"].(string), "is not available right now") {
		t.Fatalf("%q %v", got, evs)
	}
}

func TestRateLimit(t *testing.T) {
	ts := startServer(t, "--rate-limits", "chat_minute=2,chat_hour=0")
	for i := range 2 {
		if _, evs := ts.chat(t, "bids", map[string]any{"message": "hi"}); len(evs) == 0 {
			t.Fatalf("chat %d: no events", i)
		}
	}
	r := ts.do(t, "POST", "/bids/chat", jsonBody(map[string]any{"message": "hi"}), "Content-Type", "application/json")
	body := string(readAll(t, r))
	if r.StatusCode != 429 || r.Header.Get("Retry-After") == "" || !strings.Contains(body, `"error":"Rate limit exceeded","details":"Too many requests per minute"`) {
		t.Fatalf("third chat: %d %q %s", r.StatusCode, r.Header.Get("Retry-After"), body)
	}
	// Limits are per community.
	if _, evs := ts.chat(t, "hed", map[string]any{"message": "hi"}); len(evs) == 0 {
		t.Fatal("another community was limited too")
	}
}

// TestBudget: once a community's platform-paid replies cost its daily limit, further
// platform-paid chats are refused; a caller's own key still works.
func TestBudget(t *testing.T) {
	prices := filepath.Join(t.TempDir(), "prices.json")
	// hed's daily limit is 5 USD: one reply of 10 output tokens at 1,000,000 USD per million
	// tokens costs 10 USD.
	if err := os.WriteFile(prices, []byte(`{"anthropic/claude-haiku-4-5": {"input_per_mtok": 0, "output_per_mtok": 1000000}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ts, _ := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"answer"}, Usage: [2]int{5, 10}}
	}, nil, "--prices", prices)
	hed := func(headers ...string) []map[string]any {
		_, evs := ts.chat(t, "hed", map[string]any{"message": "hi"}, append([]string{"Origin", "https://www.hedtags.org"}, headers...)...)
		return evs
	}
	evs := hed()
	if got := compactKinds(evs); got != "session content+ done" {
		t.Fatalf("first: %q", got)
	}
	if u := evs[len(evs)-1]["usage"].(map[string]any); u["estimated_cost"] != float64(10) {
		t.Errorf("estimated_cost %v, want 10", u["estimated_cost"])
	}
	evs = hed()
	if got := compactKinds(evs); got != "session error" || !strings.Contains(evs[1]["message"].(string), "daily budget") {
		t.Fatalf("over budget: %q %v", got, evs)
	}
	if got := compactKinds(hed("X-Anthropic-API-Key", "sk-ant-reader")); got != "session content+ done" {
		t.Errorf("BYOK over budget: %q", got)
	}
	if m := string(readAll(t, ts.do(t, "GET", "/metrics", nil))); !strings.Contains(m, `assistant_budget_spent_ratio{community="hed",period="day"} 2`) {
		t.Errorf("budget metric missing:\n%s", grepLines(m, "budget"))
	}
}

// TestRetryOnce: a model call that fails before anything was produced is tried once more,
// never twice.
func TestRetryOnce(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		if req.Contains("flaky") && n == 0 {
			return chattest.Reply{Status: 529}
		}
		if req.Contains("down") {
			return chattest.Reply{Status: 529}
		}
		return chattest.Reply{Text: []string{"recovered"}}
	}, nil)
	evs := ts.chatFrom(t, map[string]any{"message": "flaky"})
	if got := compactKinds(evs); got != "session content+ done" || len(fake.Requests()) != 2 {
		t.Fatalf("flaky: %q after %d calls", got, len(fake.Requests()))
	}
	before := len(fake.Requests())
	evs = ts.chatFrom(t, map[string]any{"message": "down"})
	if got := compactKinds(evs); got != "session error" || len(fake.Requests())-before != 2 {
		t.Fatalf("down: %q after %d calls, want an error after exactly 2", got, len(fake.Requests())-before)
	}
}

// TestLongConversation: past 70,000 approximate tokens a reply carries the long-conversation
// warning, and what is sent to the model is trimmed to about 80,000 tokens at a reader's message.
func TestLongConversation(t *testing.T) {
	big := strings.Repeat("word ", 2000) // 10,000 characters, about 2,500 tokens
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{big}}
	}, nil)
	sid := "long-one"
	warned := -1
	for turn := range 20 {
		evs := ts.chatFrom(t, map[string]any{"message": big, "session_id": sid})
		for _, e := range evs {
			if e["event"] == "warning" && e["code"] == "long_conversation" && warned < 0 {
				warned = turn
			}
		}
	}
	// Each turn adds about 5,000 tokens: the warning starts at the 15th turn (over 70,000).
	if warned != 13 && warned != 14 {
		t.Errorf("first long-conversation warning at turn %d, want about 14", warned)
	}
	last := fake.Requests()[len(fake.Requests())-1]
	msgs := last.Messages()
	b, _ := json.Marshal(msgs)
	if chars := len(b); chars > 80_000*4+20_000 || chars < 60_000*4 {
		t.Errorf("the last request carried %d characters of history, want it trimmed to about 80,000 tokens", chars)
	}
	if first, _ := msgs[0].(map[string]any); first["role"] != "user" {
		t.Errorf("the trimmed history starts with %v", first["role"])
	}
	if len(msgs) >= 39 {
		t.Errorf("%d messages sent: nothing was trimmed", len(msgs))
	}
}

// TestScriptedOnlyWithoutKeys: where a real model is configured, a request cannot name the free
// offline model to skip the origin check and the budget.
func TestScriptedOnlyWithoutKeys(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"paid"}}
	}, nil)
	_, evs := ts.chat(t, "nemar", map[string]any{"model": "scripted/demo", "message": "```python\nprint(1)\n```"})
	if got := compactKinds(evs); got != "session error" || !strings.Contains(evs[1]["message"].(string), "is not offered") {
		t.Fatalf("%q %v", got, evs)
	}
	if len(fake.Requests()) != 0 {
		t.Error("the model was called")
	}
	// Without any key, the scripted model is the community's own and may be named.
	plain := startServer(t)
	_, evs = plain.chat(t, "bids", map[string]any{"model": "scripted/demo", "message": "hi"})
	if got := compactKinds(evs); !strings.HasPrefix(got, "session tool_call tool_start tool_end content+") || evs[len(evs)-1]["model"] != "scripted/demo" {
		t.Fatalf("no keys: %q", got)
	}
}
