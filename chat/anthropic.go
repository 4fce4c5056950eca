package chat

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/anthropics/anthropic-sdk-go/v2/packages/param"
)

// defaultMaxTokens bounds a reply when neither the request nor the adapter's options do.
const defaultMaxTokens = 4096

// AnthropicOptions configures an [Anthropic] provider.
type AnthropicOptions struct {
	// APIKey is the key to send; SDK v2 sends it as "Authorization: Bearer <key>". The
	// caller resolves it (platform key, community key or the reader's own): the SDK never
	// reads the environment or a profile on disk.
	APIKey string
	// BaseURL replaces https://api.anthropic.com; "" keeps it.
	BaseURL string
	// HTTPClient carries the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens is the reply bound when a Request leaves it 0; 0 means 4096.
	MaxTokens int
}

// Anthropic streams replies from Anthropic's Messages API through the official SDK.
//
// # Notes
//
// Request.ReasoningEffort "low", "medium", "high", "xhigh" and "max" become
// output_config.effort; "none" and anything else send nothing. Extended thinking is never
// turned on: a thinking model needs its signed thinking blocks sent back on the next call
// of a tool loop, and the neutral [Message] does not keep them.
//
// The SDK's own retries are off, so one Stream is one HTTP request: the turn loop owns
// the retry policy (once, and only before anything was produced).
type Anthropic struct {
	client    anthropic.Client
	maxTokens int
}

// NewAnthropic returns a provider for Anthropic's Messages API.
func NewAnthropic(opts AnthropicOptions) *Anthropic {
	ro := []option.RequestOption{
		// Ignore ANTHROPIC_* variables and profiles: whose key pays is decided per request.
		option.WithoutEnvironmentDefaults(),
		option.WithAPIKey(opts.APIKey),
		option.WithMaxRetries(0),
	}
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	maxTokens := opts.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	return &Anthropic{client: anthropic.NewClient(ro...), maxTokens: maxTokens}
}

// ImagesAllowed reports true: the Messages API takes base64 image blocks in tool results.
func (a *Anthropic) ImagesAllowed() bool { return true }

// CitationPath reports CiteNative: search_result blocks go as they are, with citations on.
func (a *Anthropic) CitationPath() CitationPath { return CiteNative }

// Stream sends req to the Messages API and emits its text deltas, one ToolCall per
// finished tool_use block, and a final Done. Besides emit's own error it returns an
// *APIError for an error answer, ErrStreamTruncated or the transport's error for a cut
// stream, ErrMalformedToolCall, or ctx's error (wrapped) once ctx is done.
func (a *Anthropic) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	params, err := a.params(req)
	if err != nil {
		return err
	}
	stream := a.client.Messages.NewStreaming(ctx, params)
	defer stream.Close()

	st := &anthropicStream{emit: emit, done: Event{Kind: Done}, blocks: map[int64]*call{}, texts: map[int64]bool{}}
	for stream.Next() {
		if err := st.handle(stream.Current()); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		return streamError(ctx, "anthropic", err)
	}
	if !st.sawStop {
		return fmt.Errorf("anthropic: %w", ErrStreamTruncated)
	}
	// A tool call cut off by the output limit is expected and Done says why; any other
	// unreadable input is the model's fault and must not reach the tool.
	if st.malformed != "" && st.done.StopReason != "max_tokens" {
		return fmt.Errorf("anthropic: tool call %q: %w", st.malformed, ErrMalformedToolCall)
	}
	return emit(st.done)
}

// anthropicStream is the state of one Messages stream as its events arrive.
type anthropicStream struct {
	emit      func(Event) error
	done      Event
	sawStop   bool
	calls     int
	malformed string          // name of a tool call whose input was not a JSON object
	blocks    map[int64]*call // open tool_use blocks by content index
	texts     map[int64]bool  // open text blocks by content index
}

// handle takes one event of the stream.
func (st *anthropicStream) handle(ev anthropic.MessageStreamEventUnion) error {
	switch ev.Type {
	case "message_start":
		u := ev.Message.Usage
		// The reply usage counts cached input as input, as the widget's usage object does.
		st.done.Usage.InputTokens = int(u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens)
		st.done.Usage.OutputTokens = int(u.OutputTokens)
	case "content_block_start":
		return st.blockStart(ev)
	case "content_block_delta":
		return st.blockDelta(ev)
	case "content_block_stop":
		return st.blockStop(ev)
	case "message_delta":
		st.done.StopReason = string(ev.Delta.StopReason)
		u := ev.Usage
		st.done.Usage.OutputTokens = int(u.OutputTokens)
		// message_delta's usage is cumulative; newer API versions repeat the input count.
		if in := u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens; in > 0 {
			st.done.Usage.InputTokens = int(in)
		}
	case "message_stop":
		st.sawStop = true
	}
	return nil
}

func (st *anthropicStream) blockStart(ev anthropic.MessageStreamEventUnion) error {
	cb := ev.ContentBlock
	switch cb.Type {
	case "text":
		st.texts[ev.Index] = true
		if cb.Text != "" {
			return st.emit(Event{Kind: TextDelta, Index: int(ev.Index), Text: cb.Text})
		}
	case "tool_use":
		if st.calls++; st.calls > maxToolCalls {
			return fmt.Errorf("anthropic: reply has more than %d tool calls", maxToolCalls)
		}
		st.blocks[ev.Index] = &call{id: cb.ID, name: cb.Name}
	}
	return nil
}

func (st *anthropicStream) blockDelta(ev anthropic.MessageStreamEventUnion) error {
	switch ev.Delta.Type {
	case "text_delta":
		return st.emit(Event{Kind: TextDelta, Index: int(ev.Index), Text: ev.Delta.Text})
	case "citations_delta":
		// Only search_result blocks are sent, so only their citations are read.
		c := ev.Delta.Citation
		if c.Type != "search_result_location" {
			return nil
		}
		return st.emit(Event{Kind: CitationDelta, Index: int(ev.Index), Cite: &Cited{Source: c.Source, Title: c.Title, CitedText: c.CitedText}})
	case "input_json_delta":
		b := st.blocks[ev.Index]
		if b == nil {
			return nil
		}
		if err := b.add(ev.Delta.PartialJSON); err != nil {
			return fmt.Errorf("anthropic: %w", err)
		}
	}
	return nil
}

func (st *anthropicStream) blockStop(ev anthropic.MessageStreamEventUnion) error {
	if st.texts[ev.Index] {
		delete(st.texts, ev.Index)
		return st.emit(Event{Kind: BlockEnd, Index: int(ev.Index)})
	}
	b := st.blocks[ev.Index]
	if b == nil {
		return nil
	}
	delete(st.blocks, ev.Index)
	c, ok := b.finish()
	if !ok {
		st.malformed = b.name
		return nil
	}
	return st.emit(Event{Kind: ToolCall, Call: c})
}

// params translates req into the SDK's request.
func (a *Anthropic) params(req Request) (anthropic.MessageNewParams, error) {
	p := anthropic.MessageNewParams{
		Model:     anthropic.Model(req.Model),
		MaxTokens: int64(a.maxTokens),
	}
	if req.MaxTokens > 0 {
		p.MaxTokens = int64(req.MaxTokens)
	}
	if req.System != "" {
		p.System = []anthropic.TextBlockParam{{Text: req.System}}
	}
	switch req.ReasoningEffort {
	case "low", "medium", "high", "xhigh", "max":
		p.OutputConfig.Effort = anthropic.OutputConfigEffort(req.ReasoningEffort)
	}
	for _, t := range req.Tools {
		tool := anthropic.ToolParam{
			Name:        t.Name,
			InputSchema: param.Override[anthropic.ToolInputSchemaParam](objectSchema(t.Schema)),
		}
		if t.Description != "" {
			tool.Description = anthropic.String(t.Description)
		}
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &tool})
	}
	for i, m := range req.Messages {
		content, err := anthropicContent(m)
		if err != nil {
			return p, fmt.Errorf("anthropic: message %d: %w", i, err)
		}
		// The API refuses a message with no content; an empty one carries nothing anyway.
		switch {
		case len(content) == 0:
		case m.Role == RoleUser:
			p.Messages = append(p.Messages, anthropic.NewUserMessage(content...))
		case m.Role == RoleAssistant:
			p.Messages = append(p.Messages, anthropic.NewAssistantMessage(content...))
		default:
			return p, fmt.Errorf("anthropic: message %d: unknown role %q", i, m.Role)
		}
	}
	return p, nil
}

// anthropicContent translates one neutral message's blocks. The neutral model is
// Anthropic's own, so this is mostly a change of types.
func anthropicContent(m Message) ([]anthropic.ContentBlockParamUnion, error) {
	var out []anthropic.ContentBlockParamUnion
	blocks := m.Content
	if m.Role == RoleUser {
		// The API wants a user message's tool results before any other content.
		blocks = slices.Clone(blocks)
		slices.SortStableFunc(blocks, func(x, y Block) int {
			return boolRank(y.Type == BlockToolResult) - boolRank(x.Type == BlockToolResult)
		})
	}
	for i, b := range blocks {
		switch {
		case b.Type == BlockText && m.Role == RoleAssistant:
			// A reply is kept as text blocks cut after each marker group: it goes as one, as
			// the model wrote it, markers included.
			if i > 0 && blocks[i-1].Type == BlockText {
				continue
			}
			var text strings.Builder
			for _, t := range blocks[i:] {
				if t.Type != BlockText {
					break
				}
				text.WriteString(t.Text)
			}
			if text.Len() > 0 {
				out = append(out, anthropic.NewTextBlock(text.String()))
			}
		case b.Type == BlockText:
			// The API refuses empty text blocks.
			if b.Text != "" {
				out = append(out, anthropic.NewTextBlock(b.Text))
			}
		case b.Type == BlockImage && m.Role == RoleUser:
			out = append(out, anthropic.NewImageBlockBase64(b.MediaType, b.Data))
		case b.Type == BlockToolUse && m.Role == RoleAssistant:
			out = append(out, anthropic.NewToolUseBlock(b.ToolUseID, objectInput(b.Input), b.Name))
		case b.Type == BlockToolResult && m.Role == RoleUser:
			tr := anthropic.ToolResultBlockParam{ToolUseID: b.ToolUseID}
			if b.IsError {
				tr.IsError = anthropic.Bool(true)
			}
			for _, c := range b.Content {
				switch c.Type {
				case BlockText:
					if c.Text != "" {
						tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{
							OfText: &anthropic.TextBlockParam{Text: c.Text},
						})
					}
				case BlockImage:
					tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{
						OfImage: &anthropic.ImageBlockParam{Source: anthropic.ImageBlockParamSourceUnion{
							OfBase64: &anthropic.Base64ImageSourceParam{
								MediaType: anthropic.Base64ImageSourceMediaType(c.MediaType),
								Data:      c.Data,
							},
						}},
					})
				case BlockSearchResult:
					if sr := searchResultParam(c); sr != nil {
						tr.Content = append(tr.Content, anthropic.ToolResultBlockParamContentUnion{OfSearchResult: sr})
					}
				default:
					return nil, fmt.Errorf("%s block inside a tool result", c.Type)
				}
			}
			out = append(out, anthropic.ContentBlockParamUnion{OfToolResult: &tr})
		default:
			return nil, fmt.Errorf("%s block in a %s message", b.Type, m.Role)
		}
	}
	return out, nil
}

// searchResultParam is a search_result block as the API takes it, with citations enabled
// (knowledge.md §5.2), or nil when it has no text (the API refuses empty text blocks).
func searchResultParam(b Block) *anthropic.SearchResultBlockParam {
	sr := &anthropic.SearchResultBlockParam{Source: b.Source, Title: b.Title, Citations: anthropic.CitationsConfigParam{Enabled: anthropic.Bool(true)}}
	for _, c := range b.Content {
		if c.Type == BlockText && c.Text != "" {
			sr.Content = append(sr.Content, anthropic.TextBlockParam{Text: c.Text})
		}
	}
	if len(sr.Content) == 0 {
		return nil
	}
	return sr
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// ---- Shared by the Anthropic and OpenAI adapters ----

// Bounds on what an adapter accumulates from a stream. Text is passed on as it arrives and
// never buffered; tool-call arguments must be joined before they can be emitted.
const (
	maxToolCalls      = 64
	maxToolInputBytes = 1 << 20
)

// ErrStreamTruncated reports a model stream that ended cleanly before its final event
// (Anthropic's message_stop, a Chat Completions finish_reason): a proxy or the provider cut
// it. A connection that broke mid-stream returns the transport's error instead.
var ErrStreamTruncated = errors.New("model stream ended before its final event")

// ErrMalformedToolCall reports a tool call whose input is not a JSON object, when the reply
// was not cut off by the output limit.
var ErrMalformedToolCall = errors.New("tool call input is not a JSON object")

// APIError is an error answer from a model API: an HTTP error status, or an error event in a
// stream that had already begun (Anthropic's overloaded_error, OpenRouter's mid-stream error
// chunk). Callers map Status: 401/403 refused key, 429 rate limit, 5xx provider trouble.
// It unwraps to the SDK's own error (*anthropic.Error, *openai.Error or the OpenAI SDK's
// *ssestream.StreamError).
type APIError struct {
	// Provider is "anthropic" or "openai" (any Chat Completions server).
	Provider string
	// Status is the HTTP status. For an error event inside a 200 stream it is the status
	// the error's type stands for (overloaded_error 529, rate_limit_error 429, a numeric
	// OpenRouter code as is), or 502 when the type says nothing.
	Status int
	// Type is the API's machine-readable error type or code ("authentication_error",
	// "invalid_api_key"), or "".
	Type string
	// Message is the API's own explanation, for logs; it is not reader-facing text.
	Message string

	err error
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s API error: %d", e.Provider, e.Status)
	if e.Type != "" {
		s += " " + e.Type
	}
	if e.Message != "" {
		s += ": " + e.Message
	}
	return s
}

func (e *APIError) Unwrap() error { return e.err }

// anthropicStatus is the HTTP status each Anthropic error type is documented with, for
// errors that arrive as events inside a stream whose status was 200.
var anthropicStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest,
	"authentication_error":  http.StatusUnauthorized,
	"billing_error":         http.StatusPaymentRequired,
	"permission_error":      http.StatusForbidden,
	"not_found_error":       http.StatusNotFound,
	"request_too_large":     http.StatusRequestEntityTooLarge,
	"rate_limit_error":      http.StatusTooManyRequests,
	"api_error":             http.StatusInternalServerError,
	"timeout_error":         http.StatusGatewayTimeout,
	"overloaded_error":      529,
}

// streamError turns the error that ended a stream into what Stream returns: the context's
// error when ctx is done (the SDK reports it as a failed read), an *APIError for an API
// error answer, and otherwise the transport's error.
func streamError(ctx context.Context, provider string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("%s: %w", provider, ctx.Err())
	}
	if ae, ok := errors.AsType[*anthropic.Error](err); ok {
		typ := string(ae.Type())
		status := ae.StatusCode
		if status < 400 {
			status = anthropicStatus[typ]
		}
		if status == 0 {
			status = http.StatusBadGateway
		}
		msg := ae.Message
		if msg == "" {
			msg = http.StatusText(status)
		}
		return &APIError{Provider: provider, Status: status, Type: typ, Message: msg, err: err}
	}
	if ae := openAIAPIError(err); ae != nil {
		return ae
	}
	return fmt.Errorf("%s: %w", provider, err)
}

// call joins one tool call's argument pieces.
type call struct {
	id, name string
	args     bytes.Buffer
}

func (c *call) add(piece string) error {
	if c.args.Len()+len(piece) > maxToolInputBytes {
		return fmt.Errorf("tool call %q input over %d bytes", c.name, maxToolInputBytes)
	}
	c.args.WriteString(piece)
	return nil
}

// finish returns the complete call, with "{}" for a call that sent no input. ok is false
// when the input is not a JSON object.
func (c *call) finish() (*Call, bool) {
	in := bytes.TrimSpace(c.args.Bytes())
	if len(in) == 0 {
		return &Call{ID: c.id, Name: c.name, Input: json.RawMessage(`{}`)}, true
	}
	var out bytes.Buffer
	if in[0] != '{' || json.Compact(&out, in) != nil {
		return nil, false
	}
	return &Call{ID: c.id, Name: c.name, Input: out.Bytes()}, true
}

// objectInput is a stored tool_use input as the APIs want it: a JSON object, "{}" when empty.
func objectInput(in json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(in)) == 0 {
		return json.RawMessage(`{}`)
	}
	return in
}

// objectSchema is a tool's input schema, with an empty object schema standing in for none.
func objectSchema(s json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(s)) == 0 {
		return json.RawMessage(`{"type":"object","properties":{}}`)
	}
	return s
}
