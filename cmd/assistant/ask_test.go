package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/chat/chattest"
)

// toolNames are the tools a model request offered.
func toolNames(req chattest.Request) []string {
	tools, _ := req.Body["tools"].([]any)
	var names []string
	for _, tool := range tools {
		names = append(names, tool.(map[string]any)["name"].(string))
	}
	return names
}

// TestAsk: POST /{c}/ask (api.md §4.4) against the real server and a fake Anthropic API. A
// JSON answer by default ({answer, tool_calls, citations, request_id, model, warnings,
// usage}), a stream on request (/chat's events without session and tool_request; done without
// session_id); no session is made or kept (each question stands alone), and no client tool is
// bound, not even nemar's server fallback, whatever the body declares.
func TestAsk(t *testing.T) {
	ts, fake := fakeModel(t, func(n int, req chattest.Request) chattest.Reply {
		return chattest.Reply{Text: []string{"An answer ", "to ", "it."}, Usage: [2]int{10, 3}}
	}, nil)
	resp := ts.do(t, "POST", "/nemar/ask", jsonBody(map[string]any{"question": "What is NEMAR?", "client_tools": declared}),
		"Content-Type", "application/json", "Origin", nemarOrigin)
	body := string(readAll(t, resp))
	var got map[string]any
	if resp.StatusCode != 200 || json.Unmarshal([]byte(body), &got) != nil {
		t.Fatalf("ask: %d %s", resp.StatusCode, body)
	}
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if strings.Join(keys, ",") != "answer,citations,model,request_id,tool_calls,usage,warnings" || got["answer"] != "An answer to it." {
		t.Errorf("ask answer %s", body)
	}
	if resp.Header.Get("X-Session-ID") != "" {
		t.Errorf("an /ask answer named a session: %q", resp.Header.Get("X-Session-ID"))
	}

	resp = ts.do(t, "POST", "/nemar/ask", jsonBody(map[string]any{"question": "And again?", "stream": true}),
		"Content-Type", "application/json", "Origin", nemarOrigin)
	evs := sseEvents(t, resp)
	if got := compactKinds(evs); got != "content+ done" {
		t.Errorf("stream: %q", got)
	}
	if done := evs[len(evs)-1]; done["content"] != "An answer to it." || done["session_id"] != nil {
		t.Errorf("done %v", done)
	}
	reqs := fake.Requests()
	if len(reqs) != 2 {
		t.Fatalf("%d model requests", len(reqs))
	}
	for i, req := range reqs {
		if names := toolNames(req); slices.Contains(names, "execute_code") || slices.Contains(names, "get_full_output") {
			t.Errorf("request %d offered client tools: %v", i, names)
		}
		if msgs := req.Messages(); len(msgs) != 1 {
			t.Errorf("request %d carried %d messages: an /ask question stands alone", i, len(msgs))
		}
	}

	resp = ts.do(t, "POST", "/nemar/ask", jsonBody(map[string]any{"question": ""}), "Content-Type", "application/json", "Origin", nemarOrigin)
	if b := string(readAll(t, resp)); resp.StatusCode != 422 || !strings.Contains(b, "question") {
		t.Errorf("an empty question: %d %s", resp.StatusCode, b)
	}
}
