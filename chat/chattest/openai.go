package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
)

// OpenAI is a fake OpenAI-compatible Chat Completions API (OpenRouter, OpenAI, a local
// server). Point the client's base URL at URL + "/v1".
type OpenAI struct {
	*httptest.Server
	script func(n int, req Request) Reply
	mu     sync.Mutex
	reqs   []Request
}

// NewOpenAI starts a fake whose n-th request (from 0) is answered by script: Reply.Text as
// content deltas, one per element, then its tool calls (arguments in pieces), then the finish
// reason and the usage. Close it when done.
func NewOpenAI(script func(n int, req Request) Reply) *OpenAI {
	o := &OpenAI{script: script}
	o.Server = httptest.NewServer(http.HandlerFunc(o.serve))
	return o
}

// Requests returns every request received so far.
func (o *OpenAI) Requests() []Request {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Request(nil), o.reqs...)
}

func (o *OpenAI) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.NotFound(w, r)
		return
	}
	data, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req := Request{Header: r.Header.Clone()}
	if err := json.Unmarshal(data, &req.Body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	o.mu.Lock()
	n := len(o.reqs)
	o.reqs = append(o.reqs, req)
	o.mu.Unlock()
	reply := o.script(n, req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"error":{"message":"fake status %d","type":"server_error","code":%d}}`, reply.Status, reply.Status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	model, _ := req.Body["model"].(string)
	id := fmt.Sprintf("chatcmpl-fake-%d", n)
	chunk := func(delta map[string]any, finish any, usage any) {
		v := map[string]any{"id": id, "object": "chat.completion.chunk", "created": 1, "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			v["choices"] = []any{}
			v["usage"] = usage
		}
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "data: %s\n\n", b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	for _, t := range reply.Text {
		chunk(map[string]any{"content": t}, nil, nil)
	}
	for i, tu := range reply.ToolUses {
		for j, piece := range thirds(tu.Input) {
			tc := map[string]any{"index": i, "function": map[string]any{"arguments": piece}}
			if j == 0 {
				tc["id"], tc["type"] = tu.ID, "function"
				tc["function"].(map[string]any)["name"] = tu.Name
			}
			chunk(map[string]any{"tool_calls": []any{tc}}, nil, nil)
		}
	}
	finish := reply.StopReason
	switch {
	case finish == "" && len(reply.ToolUses) > 0, finish == "tool_use":
		finish = "tool_calls"
	case finish == "", finish == "end_turn":
		finish = "stop"
	case finish == "max_tokens":
		finish = "length"
	}
	chunk(map[string]any{}, finish, nil)
	chunk(nil, nil, map[string]any{"prompt_tokens": reply.Usage[0], "completion_tokens": reply.Usage[1], "total_tokens": reply.Usage[0] + reply.Usage[1]})
	fmt.Fprint(w, "data: [DONE]\n\n")
}
