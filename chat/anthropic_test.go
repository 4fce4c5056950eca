package chat

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strconv"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// Frames as Anthropic documents them for a streamed Messages reply.
var (
	aMessageStart = sseEvent("message_start", `{"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-haiku-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":472,"cache_creation_input_tokens":0,"cache_read_input_tokens":100,"output_tokens":2}}}`)
	aPing         = sseEvent("ping", `{"type": "ping"}`)
	aMessageStop  = sseEvent("message_stop", `{"type":"message_stop"}`)
)

func aTextStart(i int) string {
	return sseEvent("content_block_start", `{"type":"content_block_start","index":`+itoa(i)+`,"content_block":{"type":"text","text":""}}`)
}

func aText(i int, s string) string {
	b, _ := json.Marshal(s)
	return sseEvent("content_block_delta", `{"type":"content_block_delta","index":`+itoa(i)+`,"delta":{"type":"text_delta","text":`+string(b)+`}}`)
}

func aToolStart(i int, id, name string) string {
	return sseEvent("content_block_start", `{"type":"content_block_start","index":`+itoa(i)+`,"content_block":{"type":"tool_use","id":"`+id+`","name":"`+name+`","input":{}}}`)
}

func aJSON(i int, partial string) string {
	b, _ := json.Marshal(partial)
	return sseEvent("content_block_delta", `{"type":"content_block_delta","index":`+itoa(i)+`,"delta":{"type":"input_json_delta","partial_json":`+string(b)+`}}`)
}

func aStop(i int) string {
	return sseEvent("content_block_stop", `{"type":"content_block_stop","index":`+itoa(i)+`}`)
}

func aDelta(stop string, out int) string {
	return sseEvent("message_delta", `{"type":"message_delta","delta":{"stop_reason":"`+stop+`","stop_sequence":null},"usage":{"output_tokens":`+itoa(out)+`}}`)
}

func itoa(i int) string { return strconv.Itoa(i) }

// cmpAPIError compares *APIError values without their wrapped SDK error.
var cmpAPIError = cmpopts.IgnoreUnexported(APIError{})

func TestAnthropicStream(t *testing.T) {
	textThenTool := []string{
		aMessageStart,
		aTextStart(0), aPing,
		aText(0, "Let me "), aText(0, "check."),
		aStop(0),
		aToolStart(1, "toolu_01", "retrieve_hed_docs"),
		aJSON(1, ""), aJSON(1, `{"url": "https://`), aJSON(1, `www.hedtags.org/`), aJSON(1, `docs"}`),
		aStop(1),
		aDelta("tool_use", 89),
		aMessageStop,
	}
	tests := []struct {
		name    string
		reply   reply
		want    []Event
		wantErr func(t *testing.T, err error)
	}{
		{
			name:  "text then a tool call in pieces",
			reply: reply{frames: textThenTool},
			want: []Event{
				{Kind: TextDelta, Text: "Let me "},
				{Kind: TextDelta, Text: "check."},
				{Kind: BlockEnd},
				{Kind: ToolCall, Call: &Call{ID: "toolu_01", Name: "retrieve_hed_docs", Input: json.RawMessage(`{"url":"https://www.hedtags.org/docs"}`)}},
				{Kind: Done, StopReason: "tool_use", Usage: Usage{InputTokens: 572, OutputTokens: 89}},
			},
		},
		{
			// As the API streams a reply citing search_result blocks (knowledge.md §5.3): each
			// cited text block starts with empty citations, its citations_delta come before
			// its text; block indexes are the message's.
			name: "text blocks with citations",
			reply: reply{frames: []string{
				aMessageStart,
				aTextStart(0), aText(0, "Per the docs, "), aStop(0),
				sseEvent("content_block_start", `{"type":"content_block_start","index":1,"content_block":{"type":"text","text":"","citations":[]}}`),
				sseEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"search_result_location","cited_text":"Annotations are placed in the events.tsv file.","source":"https://example.org/hed/quickstart.html","title":"HED quickstart","search_result_index":0,"start_block_index":0,"end_block_index":1}}}`),
				sseEvent("content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"citations_delta","citation":{"type":"char_location","cited_text":"x","document_index":0,"document_title":"d","start_char_index":0,"end_char_index":1}}}`),
				aText(1, "tags go in events.tsv"), aStop(1),
				aTextStart(2), aText(2, "."), aStop(2),
				aDelta("end_turn", 30),
				aMessageStop,
			}},
			want: []Event{
				{Kind: TextDelta, Text: "Per the docs, "},
				{Kind: BlockEnd},
				{Kind: CitationDelta, Index: 1, Cite: &Cited{Source: "https://example.org/hed/quickstart.html", Title: "HED quickstart", CitedText: "Annotations are placed in the events.tsv file."}},
				{Kind: TextDelta, Index: 1, Text: "tags go in events.tsv"},
				{Kind: BlockEnd, Index: 1},
				{Kind: TextDelta, Index: 2, Text: "."},
				{Kind: BlockEnd, Index: 2},
				{Kind: Done, StopReason: "end_turn", Usage: Usage{InputTokens: 572, OutputTokens: 30}},
			},
		},
		{
			name: "tool call without input and a thinking block",
			reply: reply{frames: []string{
				aMessageStart,
				sseEvent("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`),
				sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The reader wants recent items."}}`),
				sseEvent("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"EqQBCgIYAhIM"}}`),
				aStop(0),
				aToolStart(1, "toolu_02", "list_hed_recent"),
				aStop(1),
				aDelta("tool_use", 12),
				aMessageStop,
			}},
			want: []Event{
				{Kind: ToolCall, Call: &Call{ID: "toolu_02", Name: "list_hed_recent", Input: json.RawMessage(`{}`)}},
				{Kind: Done, StopReason: "tool_use", Usage: Usage{InputTokens: 572, OutputTokens: 12}},
			},
		},
		{
			name: "tool call cut off by the output limit",
			reply: reply{frames: []string{
				aMessageStart,
				aTextStart(0), aText(0, "Fetching."), aStop(0),
				aToolStart(1, "toolu_03", "retrieve_hed_docs"),
				aJSON(1, `{"url": "htt`),
				aStop(1),
				aDelta("max_tokens", 4096),
				aMessageStop,
			}},
			want: []Event{
				{Kind: TextDelta, Text: "Fetching."},
				{Kind: BlockEnd},
				{Kind: Done, StopReason: "max_tokens", Usage: Usage{InputTokens: 572, OutputTokens: 4096}},
			},
		},
		{
			name: "malformed tool input",
			reply: reply{frames: []string{
				aMessageStart,
				aToolStart(0, "toolu_04", "retrieve_hed_docs"),
				aJSON(0, `["not", "an object"]`),
				aStop(0),
				aDelta("tool_use", 9),
				aMessageStop,
			}},
			wantErr: wantIs(ErrMalformedToolCall),
		},
		{
			name:  "401 with the API's error body",
			reply: reply{status: 401, body: `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"},"request_id":"req_011CSHoEeqs5C35K2UUqR7Fy"}`},
			wantErr: wantAPIError(&APIError{
				Provider: "anthropic", Status: 401, Type: "authentication_error", Message: "invalid x-api-key",
			}),
		},
		{
			name:  "429 rate limit",
			reply: reply{status: 429, body: `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`},
			wantErr: wantAPIError(&APIError{
				Provider: "anthropic", Status: 429, Type: "rate_limit_error", Message: "Number of request tokens has exceeded your per-minute rate limit",
			}),
		},
		{
			name:  "529 overloaded",
			reply: reply{status: 529, body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`},
			wantErr: wantAPIError(&APIError{
				Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded",
			}),
		},
		{
			name:  "502 from a proxy, not JSON",
			reply: reply{status: 502, body: `<html>Bad Gateway</html>`},
			wantErr: wantAPIError(&APIError{
				Provider: "anthropic", Status: 502, Message: "Bad Gateway",
			}),
		},
		{
			name: "error event after text",
			reply: reply{frames: []string{
				aMessageStart, aTextStart(0), aText(0, "Partial"),
				sseEvent("error", `{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}`),
			}},
			want: []Event{{Kind: TextDelta, Text: "Partial"}},
			wantErr: wantAPIError(&APIError{
				Provider: "anthropic", Status: 529, Type: "overloaded_error", Message: "Overloaded",
			}),
		},
		{
			name:    "connection cut mid-stream",
			reply:   reply{frames: textThenTool[:8], end: endAbort},
			want:    []Event{{Kind: TextDelta, Text: "Let me "}, {Kind: TextDelta, Text: "check."}, {Kind: BlockEnd}},
			wantErr: wantIs(io.ErrUnexpectedEOF),
		},
		{
			name:    "stream ends cleanly before message_stop",
			reply:   reply{frames: textThenTool[:8]},
			want:    []Event{{Kind: TextDelta, Text: "Let me "}, {Kind: TextDelta, Text: "check."}, {Kind: BlockEnd}},
			wantErr: wantIs(ErrStreamTruncated),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, "/v1/messages", tc.reply)
			p := NewAnthropic(AnthropicOptions{APIKey: "sk-ant-test", BaseURL: f.srv.URL})
			var got []Event
			err := p.Stream(t.Context(), Request{Model: "claude-haiku-4-5", Messages: []Message{
				{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}},
			}}, collect(&got))
			if tc.wantErr == nil && err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if tc.wantErr != nil {
				tc.wantErr(t, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			// One Stream is one request: the SDK's retries are off.
			if n := len(f.requests()); n != 1 {
				t.Errorf("fake API got %d requests, want 1", n)
			}
		})
	}
}

func TestAnthropicAPIErrorUnwrapsToSDKError(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages", reply{status: 403, body: `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission to use the specified resource."}}`})
	p := NewAnthropic(AnthropicOptions{APIKey: "sk-ant-test", BaseURL: f.srv.URL})
	err := p.Stream(t.Context(), Request{Model: "m"}, collect(new([]Event)))
	sdkErr, ok := errors.AsType[*anthropic.Error](err)
	if !ok {
		t.Fatalf("error %v does not unwrap to *anthropic.Error", err)
	}
	if sdkErr.StatusCode != 403 {
		t.Errorf("SDK error status = %d, want 403", sdkErr.StatusCode)
	}
}

func TestAnthropicRequestGolden(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages", reply{frames: []string{aMessageStart, aDelta("end_turn", 1), aMessageStop}})
	p := NewAnthropic(AnthropicOptions{APIKey: "sk-ant-test", BaseURL: f.srv.URL})
	if err := p.Stream(t.Context(), sampleRequest(), collect(new([]Event))); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	r := f.only(t)
	// SDK v2 sends an API key as a bearer token, not as x-api-key.
	if got := r.Header.Get("Authorization"); got != "Bearer sk-ant-test" {
		t.Errorf("Authorization = %q, want the caller's key as a bearer token", got)
	}
	if got := r.Header.Get("X-Api-Key"); got != "" {
		t.Errorf("x-api-key = %q, want none beside Authorization", got)
	}
	if r.Header.Get("Anthropic-Version") == "" {
		t.Error("no anthropic-version header")
	}
	checkGolden(t, "anthropic_request.json", goldenRequest(t, r, "Authorization", "X-Api-Key", "Anthropic-Version", "Content-Type", "Accept"))
}

func TestAnthropicRequestFields(t *testing.T) {
	tests := []struct {
		name          string
		opts          AnthropicOptions
		req           Request
		wantMaxTokens float64
		wantOutput    any
	}{
		{name: "defaults", wantMaxTokens: 4096},
		{name: "adapter bound", opts: AnthropicOptions{MaxTokens: 1000}, wantMaxTokens: 1000},
		{name: "request bound wins", opts: AnthropicOptions{MaxTokens: 1000}, req: Request{MaxTokens: 300}, wantMaxTokens: 300},
		{name: "effort max", req: Request{ReasoningEffort: "max"}, wantMaxTokens: 4096, wantOutput: map[string]any{"effort": "max"}},
		{name: "effort low", req: Request{ReasoningEffort: "low"}, wantMaxTokens: 4096, wantOutput: map[string]any{"effort": "low"}},
		{name: "effort none sends nothing", req: Request{ReasoningEffort: "none"}, wantMaxTokens: 4096},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, "/v1/messages", reply{frames: []string{aMessageStart, aDelta("end_turn", 1), aMessageStop}})
			tc.opts.BaseURL = f.srv.URL
			tc.req.Model = "m"
			tc.req.Messages = []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}}
			if err := NewAnthropic(tc.opts).Stream(t.Context(), tc.req, collect(new([]Event))); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			body := f.only(t).Body
			if got := jsonField(t, body, "max_tokens"); got != tc.wantMaxTokens {
				t.Errorf("max_tokens = %v, want %v", got, tc.wantMaxTokens)
			}
			if diff := cmp.Diff(tc.wantOutput, jsonField(t, body, "output_config")); diff != "" {
				t.Errorf("output_config (-want +got):\n%s", diff)
			}
			if got := jsonField(t, body, "thinking"); got != nil {
				t.Errorf("thinking = %v, want none", got)
			}
		})
	}
}

// TestAnthropicIgnoresEnvironment checks that the SDK reads no key or base URL from the
// environment, and that the default base URL gives the documented path.
func TestAnthropicIgnoresEnvironment(t *testing.T) {
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
	t.Setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:1")
	t.Setenv("ANTHROPIC_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFakeAPI(t, "/v1/messages", reply{frames: []string{aMessageStart, aDelta("end_turn", 1), aMessageStop}})
	hc, asked := f.redirect()
	p := NewAnthropic(AnthropicOptions{APIKey: "sk-ant-caller", HTTPClient: hc})
	if err := p.Stream(t.Context(), Request{Model: "m"}, collect(new([]Event))); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if diff := cmp.Diff([]string{"https://api.anthropic.com/v1/messages"}, *asked); diff != "" {
		t.Errorf("URLs asked for (-want +got):\n%s", diff)
	}
	r := f.only(t)
	if got := r.Header.Get("Authorization"); got != "Bearer sk-ant-caller" {
		t.Errorf("Authorization = %q, want the caller's key", got)
	}
	if got := r.Header.Get("X-Leak"); got != "" {
		t.Errorf("X-Leak = %q, want no header from the environment", got)
	}
}

func TestAnthropicContextCancelledMidStream(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages", reply{frames: []string{aMessageStart, aTextStart(0), aText(0, "Hello")}, end: endHang})
	p := NewAnthropic(AnthropicOptions{APIKey: "k", BaseURL: f.srv.URL})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	start := time.Now()
	err := p.Stream(ctx, Request{Model: "m"}, func(e Event) error {
		if e.Kind == TextDelta {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Stream error = %v, want context.Canceled", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Stream took %v to notice the cancellation", d)
	}
}

func TestAnthropicEmitErrorStops(t *testing.T) {
	f := newFakeAPI(t, "/v1/messages", reply{frames: []string{aMessageStart, aTextStart(0), aText(0, "a"), aText(0, "b"), aStop(0), aDelta("end_turn", 2), aMessageStop}})
	p := NewAnthropic(AnthropicOptions{APIKey: "k", BaseURL: f.srv.URL})
	errStop := errors.New("reader went away")
	calls := 0
	err := p.Stream(t.Context(), Request{Model: "m"}, func(Event) error {
		calls++
		return errStop
	})
	if err != errStop {
		t.Errorf("Stream error = %v, want emit's own error", err)
	}
	if calls != 1 {
		t.Errorf("emit called %d times, want 1", calls)
	}
}

func TestAnthropicRefusesImpossibleBlocks(t *testing.T) {
	tests := []struct {
		name string
		msg  Message
	}{
		{"image from the assistant", Message{Role: RoleAssistant, Content: []Block{{Type: BlockImage, MediaType: "image/png", Data: "AA=="}}}},
		{"tool_use from the user", Message{Role: RoleUser, Content: []Block{{Type: BlockToolUse, ToolUseID: "x", Name: "t"}}}},
		{"tool_use inside a tool result", Message{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "x", Content: []Block{{Type: BlockToolUse}}}}}},
		{"unknown role", Message{Role: "system", Content: []Block{{Type: BlockText, Text: "x"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewAnthropic(AnthropicOptions{APIKey: "k", BaseURL: "http://127.0.0.1:1"})
			err := p.Stream(t.Context(), Request{Model: "m", Messages: []Message{tc.msg}}, collect(new([]Event)))
			if err == nil {
				t.Fatal("Stream accepted the message")
			}
			if _, ok := errors.AsType[*APIError](err); ok {
				t.Errorf("error %v is an APIError; want a local refusal before any request", err)
			}
		})
	}
}

// wantIs returns a check that err matches target.
func wantIs(target error) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("error = %v, want %v", err, target)
		}
	}
}

// wantAPIError returns a check that err is an *APIError equal to want.
func wantAPIError(want *APIError) func(*testing.T, error) {
	return func(t *testing.T, err error) {
		t.Helper()
		got, ok := errors.AsType[*APIError](err)
		if !ok {
			t.Fatalf("error = %v (%T), want *APIError", err, err)
		}
		if diff := cmp.Diff(want, got, cmpAPIError); diff != "" {
			t.Errorf("APIError (-want +got):\n%s", diff)
		}
	}
}
