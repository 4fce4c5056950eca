package chat

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/openai/openai-go/v3"
)

// oChunk is one chat.completion.chunk frame with the given choices JSON, in the shape
// OpenAI streams with stream_options.include_usage (usage null until the last chunk).
func oChunk(choices string) string {
	return sseData(`{"id":"chatcmpl-01","object":"chat.completion.chunk","created":1735689600,"model":"gpt-x","system_fingerprint":"fp_01","choices":` + choices + `,"usage":null}`)
}

// oDelta is a chunk with one choice carrying delta and finish_reason (a JSON value).
func oDelta(delta, finish string) string {
	return oChunk(`[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + finish + `}]`)
}

func oText(s string) string {
	b, _ := json.Marshal(s)
	return oDelta(`{"content":`+string(b)+`}`, "null")
}

// oToolStart opens tool call i: its first chunk carries the id, type and name.
func oToolStart(i int, id, name string) string {
	return oDelta(`{"tool_calls":[{"index":`+itoa(i)+`,"id":"`+id+`","type":"function","function":{"name":"`+name+`","arguments":""}}]}`, "null")
}

// oArgs continues tool call i with a piece of its arguments.
func oArgs(i int, piece string) string {
	b, _ := json.Marshal(piece)
	return oDelta(`{"tool_calls":[{"index":`+itoa(i)+`,"function":{"arguments":`+string(b)+`}}]}`, "null")
}

func oFinish(reason string) string { return oDelta(`{}`, `"`+reason+`"`) }

var (
	oRole  = oDelta(`{"role":"assistant","content":"","refusal":null}`, "null")
	oUsage = sseData(`{"id":"chatcmpl-01","object":"chat.completion.chunk","created":1735689600,"model":"gpt-x","system_fingerprint":"fp_01","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":57,"total_tokens":869,"prompt_tokens_details":{"cached_tokens":512,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":0,"audio_tokens":0,"accepted_prediction_tokens":0,"rejected_prediction_tokens":0}}}`)
	oDone  = sseData(`[DONE]`)
)

func TestOpenAIStream(t *testing.T) {
	parallel := []string{
		oRole,
		oText("Checking "), oText("both."),
		oToolStart(0, "call_a", "retrieve_hed_docs"),
		oToolStart(1, "call_b", "execute_code"),
		oArgs(0, `{"url":`),
		oArgs(1, `{"code": `),
		oArgs(0, ` "https://hedtags.org`),
		oArgs(1, `"print(1)"`),
		oArgs(0, `/docs"}`),
		oArgs(1, `}`),
		oFinish("tool_calls"),
		oUsage,
		oDone,
	}
	tests := []struct {
		name    string
		reply   reply
		want    []Event
		wantErr func(t *testing.T, err error)
	}{
		{
			name:  "text then two parallel tool calls interleaved",
			reply: reply{frames: parallel},
			want: []Event{
				// The space could still have begun a [src:N] tag, so it waits for the next piece.
				{Kind: TextDelta, Text: "Checking"},
				{Kind: TextDelta, Text: " both."},
				{Kind: ToolCall, Call: &Call{ID: "call_a", Name: "retrieve_hed_docs", Input: json.RawMessage(`{"url":"https://hedtags.org/docs"}`)}},
				{Kind: ToolCall, Call: &Call{ID: "call_b", Name: "execute_code", Input: json.RawMessage(`{"code":"print(1)"}`)}},
				{Kind: Done, StopReason: "tool_use", Usage: Usage{InputTokens: 812, OutputTokens: 57}},
			},
		},
		{
			name:  "text only",
			reply: reply{frames: []string{oRole, oText("Hello"), oText(" there."), oFinish("stop"), oUsage, oDone}},
			want: []Event{
				{Kind: TextDelta, Text: "Hello"},
				{Kind: TextDelta, Text: " there."},
				{Kind: Done, StopReason: "end_turn", Usage: Usage{InputTokens: 812, OutputTokens: 57}},
			},
		},
		{
			name: "server without usage, tool call without arguments, stop instead of tool_calls",
			reply: reply{frames: []string{
				oRole, oToolStart(0, "call_c", "list_hed_recent"), oFinish("stop"), oDone,
			}},
			want: []Event{
				{Kind: ToolCall, Call: &Call{ID: "call_c", Name: "list_hed_recent", Input: json.RawMessage(`{}`)}},
				{Kind: Done, StopReason: "tool_use"},
			},
		},
		{
			name: "output limit cuts a tool call",
			reply: reply{frames: []string{
				oRole, oText("Fetching."), oToolStart(0, "call_d", "retrieve_hed_docs"), oArgs(0, `{"url": "ht`),
				oFinish("length"), oUsage, oDone,
			}},
			want: []Event{
				{Kind: TextDelta, Text: "Fetching."},
				{Kind: Done, StopReason: "max_tokens", Usage: Usage{InputTokens: 812, OutputTokens: 57}},
			},
		},
		{
			name: "server that numbers every call 0",
			reply: reply{frames: []string{
				oRole,
				oToolStart(0, "call_x", "list_hed_recent"), oArgs(0, `{}`),
				oToolStart(0, "call_y", "retrieve_hed_docs"), oArgs(0, `{"url":"u"}`),
				oFinish("tool_calls"), oDone,
			}},
			want: []Event{
				{Kind: ToolCall, Call: &Call{ID: "call_x", Name: "list_hed_recent", Input: json.RawMessage(`{}`)}},
				{Kind: ToolCall, Call: &Call{ID: "call_y", Name: "retrieve_hed_docs", Input: json.RawMessage(`{"url":"u"}`)}},
				{Kind: Done, StopReason: "tool_use"},
			},
		},
		{
			name:  "other finish reasons pass through",
			reply: reply{frames: []string{oRole, oFinish("content_filter"), oDone}},
			want:  []Event{{Kind: Done, StopReason: "content_filter"}},
		},
		{
			name: "malformed tool arguments",
			reply: reply{frames: []string{
				oRole, oToolStart(0, "call_e", "retrieve_hed_docs"), oArgs(0, `{"url": nope}`), oFinish("tool_calls"), oDone,
			}},
			wantErr: wantIs(ErrMalformedToolCall),
		},
		{
			name:  "401 with the API's error body",
			reply: reply{status: 401, body: `{"error":{"message":"Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
			wantErr: wantAPIError(&APIError{
				Provider: "openai", Status: 401, Type: "invalid_api_key",
				Message: "Incorrect API key provided: sk-test. You can find your API key at https://platform.openai.com/account/api-keys.",
			}),
		},
		{
			name:  "429 from OpenRouter",
			reply: reply{status: 429, body: `{"error":{"message":"Rate limit exceeded: free-models-per-min.","code":429}}`},
			wantErr: wantAPIError(&APIError{
				Provider: "openai", Status: 429, Message: "Rate limit exceeded: free-models-per-min.",
			}),
		},
		{
			name: "OpenRouter error chunk after text",
			reply: reply{frames: []string{
				oRole, oText("Partial"),
				sseData(`{"id":"gen-01","object":"chat.completion.chunk","created":1735689600,"model":"anthropic/claude-haiku-4.5","provider":"Anthropic","error":{"code":502,"message":"Provider returned error"},"choices":[{"index":0,"delta":{"content":""},"finish_reason":"error","native_finish_reason":"error"}]}`),
			}},
			want: []Event{{Kind: TextDelta, Text: "Partial"}},
			wantErr: wantAPIError(&APIError{
				Provider: "openai", Status: 502, Message: "Provider returned error",
			}),
		},
		{
			name:    "connection cut mid-stream",
			reply:   reply{frames: parallel[:6], end: endAbort},
			want:    []Event{{Kind: TextDelta, Text: "Checking"}, {Kind: TextDelta, Text: " both."}},
			wantErr: wantIs(io.ErrUnexpectedEOF),
		},
		{
			name:    "stream ends without a finish reason",
			reply:   reply{frames: append(parallel[:6:6], oDone)},
			want:    []Event{{Kind: TextDelta, Text: "Checking"}, {Kind: TextDelta, Text: " both."}},
			wantErr: wantIs(ErrStreamTruncated),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, "/v1/chat/completions", tc.reply)
			p := NewOpenAI(OpenAIOptions{APIKey: "sk-test", BaseURL: f.srv.URL + "/v1"})
			var got []Event
			err := p.Stream(t.Context(), Request{Model: "gpt-x", Messages: []Message{
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
			if n := len(f.requests()); n != 1 {
				t.Errorf("fake API got %d requests, want 1", n)
			}
		})
	}
}

func TestOpenAIAPIErrorUnwrapsToSDKError(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", reply{status: 403, body: `{"error":{"message":"Key limit exceeded","code":403}}`})
	p := NewOpenAI(OpenAIOptions{APIKey: "k", BaseURL: f.srv.URL + "/v1"})
	err := p.Stream(t.Context(), Request{Model: "m"}, collect(new([]Event)))
	sdkErr, ok := errors.AsType[*openai.Error](err)
	if !ok {
		t.Fatalf("error %v does not unwrap to *openai.Error", err)
	}
	if sdkErr.StatusCode != 403 {
		t.Errorf("SDK error status = %d, want 403", sdkErr.StatusCode)
	}
}

func TestOpenAIRequestGolden(t *testing.T) {
	tests := []struct {
		golden string
		opts   OpenAIOptions
	}{
		{"openai_request_images.json", OpenAIOptions{
			Images:       true,
			ExtraHeaders: map[string]string{"HTTP-Referer": "https://hedtags.org", "X-Title": "HED assistant"},
		}},
		{"openai_request_no_images.json", OpenAIOptions{}},
	}
	for _, tc := range tests {
		t.Run(tc.golden, func(t *testing.T) {
			t.Parallel()
			f := newFakeAPI(t, "/api/v1/chat/completions", reply{frames: []string{oRole, oFinish("stop"), oDone}})
			tc.opts.APIKey = "sk-or-test"
			tc.opts.BaseURL = f.srv.URL + "/api/v1" // as OpenRouter's https://openrouter.ai/api/v1
			p := NewOpenAI(tc.opts)
			if got := p.ImagesAllowed(); got != tc.opts.Images {
				t.Errorf("ImagesAllowed() = %v, want %v", got, tc.opts.Images)
			}
			if err := p.Stream(t.Context(), sampleRequest(), collect(new([]Event))); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			r := f.only(t)
			if got := r.Header.Get("Authorization"); got != "Bearer sk-or-test" {
				t.Errorf("Authorization = %q, want the caller's key", got)
			}
			for k, v := range tc.opts.ExtraHeaders {
				if got := r.Header.Get(k); got != v {
					t.Errorf("%s = %q, want %q", k, got, v)
				}
			}
			checkGolden(t, tc.golden, goldenRequest(t, r, "Authorization", "Content-Type", "Accept", "HTTP-Referer", "X-Title"))
		})
	}
}

func TestOpenAIRequestFields(t *testing.T) {
	tests := []struct {
		name     string
		official bool // leave BaseURL empty and reach the fake through a redirecting client
		opts     OpenAIOptions
		req      Request
		want     map[string]any // fields of the body; nil means absent
	}{
		{
			name: "compatible server: max_tokens",
			want: map[string]any{"max_tokens": 4096.0, "max_completion_tokens": nil, "reasoning_effort": nil},
		},
		{
			name:     "api.openai.com: max_completion_tokens",
			official: true,
			opts:     OpenAIOptions{MaxTokens: 1000},
			want:     map[string]any{"max_tokens": nil, "max_completion_tokens": 1000.0},
		},
		{
			name: "request bound and effort",
			opts: OpenAIOptions{MaxTokens: 1000},
			req:  Request{MaxTokens: 300, ReasoningEffort: "max"},
			want: map[string]any{"max_tokens": 300.0, "reasoning_effort": "max"},
		},
		{
			name: "stream options",
			want: map[string]any{"stream": true, "stream_options": map[string]any{"include_usage": true}, "tools": nil},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFakeAPI(t, "/v1/chat/completions", reply{frames: []string{oRole, oFinish("stop"), oDone}})
			var asked *[]string
			if tc.official {
				tc.opts.HTTPClient, asked = f.redirect()
			} else {
				tc.opts.BaseURL = f.srv.URL + "/v1"
			}
			tc.req.Model = "m"
			tc.req.Messages = []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "hi"}}}}
			if err := NewOpenAI(tc.opts).Stream(t.Context(), tc.req, collect(new([]Event))); err != nil {
				t.Fatalf("Stream: %v", err)
			}
			if asked != nil {
				if diff := cmp.Diff([]string{"https://api.openai.com/v1/chat/completions"}, *asked); diff != "" {
					t.Errorf("URLs asked for (-want +got):\n%s", diff)
				}
			}
			body := f.only(t).Body
			for k, want := range tc.want {
				if diff := cmp.Diff(want, jsonField(t, body, k)); diff != "" {
					t.Errorf("%s (-want +got):\n%s", k, diff)
				}
			}
		})
	}
}

// TestOpenAIIgnoresEnvironment checks that no OPENAI_* variable reaches a request that may
// be bound for OpenRouter or a local server.
func TestOpenAIIgnoresEnvironment(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-from-env")
	t.Setenv("OPENAI_BASE_URL", "http://127.0.0.1:1/v1")
	t.Setenv("OPENAI_ORG_ID", "org-leak")
	t.Setenv("OPENAI_PROJECT_ID", "proj-leak")
	t.Setenv("OPENAI_CUSTOM_HEADERS", "X-Leak: yes")
	f := newFakeAPI(t, "/v1/chat/completions", reply{frames: []string{oRole, oFinish("stop"), oDone}})
	p := NewOpenAI(OpenAIOptions{BaseURL: f.srv.URL + "/v1"}) // a local server: no key
	if err := p.Stream(t.Context(), Request{Model: "m"}, collect(new([]Event))); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	r := f.only(t)
	for _, h := range []string{"OpenAI-Organization", "OpenAI-Project", "X-Leak"} {
		if got := r.Header.Get(h); got != "" {
			t.Errorf("%s = %q, want no header from the environment", h, got)
		}
	}
	if got := r.Header.Get("Authorization"); got == "Bearer sk-from-env" {
		t.Errorf("Authorization = %q, want no key from the environment", got)
	}
}

func TestOpenAIContextCancelledMidStream(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", reply{frames: []string{oRole, oText("Hello")}, end: endHang})
	p := NewOpenAI(OpenAIOptions{APIKey: "k", BaseURL: f.srv.URL + "/v1"})
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

func TestOpenAIEmitErrorStops(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", reply{frames: []string{
		oRole, oToolStart(0, "call_a", "t"), oToolStart(1, "call_b", "t"), oFinish("tool_calls"), oDone,
	}})
	p := NewOpenAI(OpenAIOptions{APIKey: "k", BaseURL: f.srv.URL + "/v1"})
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

func TestOpenAITooManyToolCalls(t *testing.T) {
	frames := []string{oRole}
	for i := range maxToolCalls + 1 {
		frames = append(frames, oToolStart(i, "call_"+itoa(i), "t"))
	}
	frames = append(frames, oFinish("tool_calls"), oDone)
	f := newFakeAPI(t, "/v1/chat/completions", reply{frames: frames})
	p := NewOpenAI(OpenAIOptions{APIKey: "k", BaseURL: f.srv.URL + "/v1"})
	var got []Event
	if err := p.Stream(t.Context(), Request{Model: "m"}, collect(&got)); err == nil {
		t.Fatalf("Stream accepted %d tool calls; events %v", maxToolCalls+1, got)
	}
}

func TestOpenAIToolCallWithoutID(t *testing.T) {
	f := newFakeAPI(t, "/v1/chat/completions", reply{frames: []string{
		oRole,
		oDelta(`{"tool_calls":[{"index":0,"type":"function","function":{"name":"list_hed_recent","arguments":"{}"}}]}`, "null"),
		oFinish("tool_calls"), oDone,
	}})
	p := NewOpenAI(OpenAIOptions{BaseURL: f.srv.URL + "/v1"})
	var got []Event
	if err := p.Stream(t.Context(), Request{Model: "m"}, collect(&got)); err != nil {
		t.Fatalf("Stream: %v", err)
	}
	if len(got) != 2 || got[0].Kind != ToolCall {
		t.Fatalf("events = %+v, want a tool call and Done", got)
	}
	if id := got[0].Call.ID; !strings.HasPrefix(id, "call_") || len(id) < len("call_")+16 {
		t.Errorf("generated id = %q, want call_ and a random suffix", id)
	}
}
