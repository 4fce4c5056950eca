// Package chattest provides fake model APIs for tests of code above the chat package: HTTP
// servers on loopback that speak the real streaming wire formats of Anthropic's Messages API
// (citations included) and of OpenAI-compatible Chat Completions, so the real SDK clients are
// what gets tested. A script decides each reply from the request it receives.
package chattest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// ToolUse is one tool call the fake model makes.
type ToolUse struct {
	ID, Name string
	// Input is the call's JSON object; it is sent in several input_json_delta pieces.
	Input string
}

// Cite is one search_result_location citation of a text block, sent as a citations_delta.
type Cite struct {
	Source, Title, CitedText string
	// SearchResultIndex is the cited search result's index; the fake does not check it.
	SearchResultIndex int
}

// TextBlock is one text block of a reply: its citations (each a citations_delta, before the
// text as the API sends them, or after it with CitesLast), then its text, one text_delta per
// element.
type TextBlock struct {
	Text      []string
	Cites     []Cite
	CitesLast bool
}

// Reply is what the fake model answers to one request.
type Reply struct {
	// Text is sent as one text block, one text_delta per element (for the OpenAI fake, one
	// content delta per element).
	Text []string
	// Blocks are further text blocks, after Text's (Anthropic only).
	Blocks     []TextBlock
	ToolUses   []ToolUse
	StopReason string // default: tool_use when there are tool uses, else end_turn
	Usage      [2]int // input and output tokens
	// Status, when not 0 or 200, answers with that HTTP status and an API error body.
	Status int
}

// Request is one request the fake received, decoded.
type Request struct {
	Header http.Header
	Body   map[string]any
}

// Messages returns the request's messages.
func (r Request) Messages() []any {
	m, _ := r.Body["messages"].([]any)
	return m
}

// Contains reports whether the request's messages mention s anywhere.
func (r Request) Contains(s string) bool {
	b, _ := json.Marshal(r.Body["messages"])
	return strings.Contains(string(b), s)
}

// Anthropic is the fake API. Point the client's base URL at URL.
type Anthropic struct {
	*httptest.Server
	script func(n int, req Request) Reply
	mu     sync.Mutex
	reqs   []Request
}

// NewAnthropic starts a fake whose n-th request (from 0) is answered by script. Close it when
// done.
func NewAnthropic(script func(n int, req Request) Reply) *Anthropic {
	a := &Anthropic{script: script}
	a.Server = httptest.NewServer(http.HandlerFunc(a.serve))
	return a
}

// Requests returns every request received so far.
func (a *Anthropic) Requests() []Request {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]Request(nil), a.reqs...)
}

func (a *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
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
	a.mu.Lock()
	n := len(a.reqs)
	a.reqs = append(a.reqs, req)
	a.mu.Unlock()
	reply := a.script(n, req)
	if reply.Status != 0 && reply.Status != http.StatusOK {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(reply.Status)
		fmt.Fprintf(w, `{"type":"error","error":{"type":"api_error","message":"fake status %d"}}`, reply.Status)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	flusher, _ := w.(http.Flusher)
	send := func(event string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		if flusher != nil {
			flusher.Flush()
		}
	}
	model, _ := req.Body["model"].(string)
	send("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": fmt.Sprintf("msg_fake_%d", n), "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]any{"input_tokens": reply.Usage[0], "output_tokens": 1}}})
	index := 0
	if len(reply.Text) > 0 {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": ""}})
		for _, t := range reply.Text {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, b := range reply.Blocks {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "text", "text": "", "citations": []any{}}})
		cites := func() {
			for _, c := range b.Cites {
				send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "citations_delta", "citation": map[string]any{
					"type": "search_result_location", "source": c.Source, "title": c.Title, "cited_text": c.CitedText,
					"search_result_index": c.SearchResultIndex, "start_block_index": 0, "end_block_index": 1}}})
			}
		}
		if !b.CitesLast {
			cites()
		}
		for _, t := range b.Text {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "text_delta", "text": t}})
		}
		if b.CitesLast {
			cites()
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	for _, tu := range reply.ToolUses {
		send("content_block_start", map[string]any{"type": "content_block_start", "index": index, "content_block": map[string]any{"type": "tool_use", "id": tu.ID, "name": tu.Name, "input": map[string]any{}}})
		// The input arrives split in pieces, as the real API sends it.
		for _, piece := range thirds(tu.Input) {
			send("content_block_delta", map[string]any{"type": "content_block_delta", "index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": piece}})
		}
		send("content_block_stop", map[string]any{"type": "content_block_stop", "index": index})
		index++
	}
	stop := reply.StopReason
	if stop == "" {
		stop = "end_turn"
		if len(reply.ToolUses) > 0 {
			stop = "tool_use"
		}
	}
	send("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]any{"output_tokens": reply.Usage[1]}})
	send("message_stop", map[string]any{"type": "message_stop"})
}

func thirds(s string) []string {
	if len(s) < 3 {
		return []string{s}
	}
	a, b := len(s)/3, 2*len(s)/3
	return []string{s[:a], s[a:b], s[b:]}
}
