package chat

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/shared"
)

// OpenAIOptions configures an [OpenAI] provider.
type OpenAIOptions struct {
	// APIKey is sent as a bearer token; local servers may need none.
	APIKey string
	// BaseURL is the API root that "chat/completions" is appended to, e.g.
	// https://openrouter.ai/api/v1 or http://localhost:11434/v1; "" means
	// https://api.openai.com/v1.
	BaseURL string
	// HTTPClient carries the requests; nil means http.DefaultClient.
	HTTPClient *http.Client
	// MaxTokens is the reply bound when a Request leaves it 0; 0 means 4096.
	MaxTokens int
	// Images says whether the model accepts image parts.
	Images bool
	// ExtraHeaders go on every request, e.g. OpenRouter's HTTP-Referer and X-Title.
	ExtraHeaders map[string]string
}

// OpenAI streams replies from an OpenAI-compatible Chat Completions API (OpenAI,
// OpenRouter, Ollama, vLLM, llama.cpp) through the official OpenAI SDK.
//
// # Notes
//
// Request.ReasoningEffort is sent verbatim as reasoning_effort (OpenRouter takes all of
// "none" to "max"; OpenAI itself refuses "max").
//
// The reply bound is sent as max_completion_tokens to api.openai.com, whose reasoning
// models refuse max_tokens, and as max_tokens everywhere else, which every compatible
// server reads.
//
// As for [Anthropic], the SDK's retries are off and the environment is not read.
//
// Citations take the tagged path (knowledge.md §5.4): the search_result blocks of a request
// go as text opened by [src:N] tags, numbered by first appearance in the conversation, and
// the [src:N] tags the model writes come back as CitationDelta and BlockEnd events, cut from
// the text (a tag naming no source as a Notice); text that could still become a tag is held
// back until it cannot.
type OpenAI struct {
	client    openai.ChatCompletionService
	maxTokens int
	official  bool
	images    bool
}

// NewOpenAI returns a provider for an OpenAI-compatible Chat Completions API.
func NewOpenAI(opts OpenAIOptions) *OpenAI {
	// The service is built directly rather than through openai.NewClient, which would read
	// OPENAI_* variables (organisation, project, custom headers) into requests that may be
	// bound for OpenRouter or a local server.
	ro := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithAPIKey(opts.APIKey),
		option.WithMaxRetries(0),
	}
	official := true
	if opts.BaseURL != "" {
		ro = append(ro, option.WithBaseURL(opts.BaseURL))
		u, err := url.Parse(opts.BaseURL)
		official = err == nil && u.Hostname() == "api.openai.com"
	}
	if opts.HTTPClient != nil {
		ro = append(ro, option.WithHTTPClient(opts.HTTPClient))
	}
	for k, v := range opts.ExtraHeaders {
		ro = append(ro, option.WithHeader(k, v))
	}
	maxTokens := opts.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultMaxTokens
	}
	return &OpenAI{
		client:    openai.NewChatCompletionService(ro...),
		maxTokens: maxTokens,
		official:  official,
		images:    opts.Images,
	}
}

// ImagesAllowed reports OpenAIOptions.Images.
func (o *OpenAI) ImagesAllowed() bool { return o.images }

// CitationPath reports CiteTagged: Chat Completions has no search_result blocks, so they
// become [src:N]-tagged text and the model's tags become citations (citations_tagged.go).
func (o *OpenAI) CitationPath() CitationPath { return CiteTagged }

// Stream sends req with stream: true and emits its text deltas (and the citations of its
// tags), then its tool calls in index order once the stream has ended (a call's arguments
// arrive in pieces across chunks), then Done. It returns errors as [Anthropic.Stream] does.
func (o *OpenAI) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	srcs := numberSources(req.Messages)
	params, err := o.params(req, srcs)
	if err != nil {
		return err
	}
	stream := o.client.NewStreaming(ctx, params)
	defer stream.Close()

	st := &openAIStream{emit: emit, tags: newTagStream(srcs, emit), done: Event{Kind: Done}, byIndex: map[int64]*indexedCall{}}
	for stream.Next() {
		if err := st.handle(stream.Current()); err != nil {
			return err
		}
	}
	if err := stream.Err(); err != nil {
		return streamError(ctx, "openai", err)
	}
	if st.finish == "" {
		return fmt.Errorf("openai: %w", ErrStreamTruncated)
	}
	return st.end()
}

// openAIStream is the state of one Chat Completions stream as its chunks arrive.
type openAIStream struct {
	emit    func(Event) error
	tags    *tagStream
	done    Event
	finish  string
	calls   []*indexedCall         // in order of first chunk
	byIndex map[int64]*indexedCall // the call each index currently names
}

// handle takes one chunk of the stream.
func (st *openAIStream) handle(chunk openai.ChatCompletionChunk) error {
	if chunk.JSON.Usage.Valid() {
		// With include_usage the last chunk, with no choices, carries the usage;
		// prompt_tokens already counts cached input.
		st.done.Usage = Usage{
			InputTokens:  int(chunk.Usage.PromptTokens),
			OutputTokens: int(chunk.Usage.CompletionTokens),
		}
	}
	for _, ch := range chunk.Choices {
		if ch.Index != 0 { // n is never set, so only choice 0 exists
			continue
		}
		if ch.Delta.Content != "" {
			if err := st.tags.write(ch.Delta.Content); err != nil {
				return err
			}
		}
		for _, tc := range ch.Delta.ToolCalls {
			if err := st.toolDelta(tc); err != nil {
				return err
			}
		}
		if ch.FinishReason != "" {
			st.finish = ch.FinishReason
		}
	}
	return nil
}

// toolDelta adds one piece of a tool call.
func (st *openAIStream) toolDelta(tc openai.ChatCompletionChunkChoiceDeltaToolCall) error {
	c := st.byIndex[tc.Index]
	// A new id on a known index is a new call from a server that leaves index at 0 for every
	// call.
	if c == nil || (tc.ID != "" && c.id != "" && tc.ID != c.id) {
		if len(st.calls) >= maxToolCalls {
			return fmt.Errorf("openai: reply has more than %d tool calls", maxToolCalls)
		}
		c = &indexedCall{index: tc.Index}
		st.calls = append(st.calls, c)
		st.byIndex[tc.Index] = c
	}
	// The id and name come in a call's first chunk; later chunks leave them empty.
	if tc.ID != "" {
		c.id = tc.ID
	}
	if tc.Function.Name != "" {
		c.name = tc.Function.Name
	}
	if err := c.add(tc.Function.Arguments); err != nil {
		return fmt.Errorf("openai: %w", err)
	}
	return nil
}

// end emits the text held back, the tool calls, in index order, then Done.
func (st *openAIStream) end() error {
	if err := st.tags.flush(); err != nil {
		return err
	}
	done := st.done
	done.StopReason = st.finish
	switch st.finish {
	case "stop":
		done.StopReason = "end_turn"
		// Some local servers (older Ollama, llama.cpp) say "stop" after tool calls.
		if len(st.calls) > 0 {
			done.StopReason = "tool_use"
		}
	case "tool_calls":
		done.StopReason = "tool_use"
	case "length":
		done.StopReason = "max_tokens"
	}
	slices.SortStableFunc(st.calls, func(a, b *indexedCall) int { return cmp.Compare(a.index, b.index) })
	for _, ic := range st.calls {
		if ic.id == "" {
			// The id pairs the call with its result, and a parked browser call is claimed by
			// it; some local servers send none.
			ic.id = "call_" + rand.Text()
		}
		c, ok := ic.finish()
		if !ok {
			// Arguments cut off by the output limit are expected and Done says why.
			if done.StopReason == "max_tokens" {
				continue
			}
			return fmt.Errorf("openai: tool call %q: %w", ic.name, ErrMalformedToolCall)
		}
		if err := st.emit(Event{Kind: ToolCall, Call: c}); err != nil {
			return err
		}
	}
	return st.emit(done)
}

// params translates req into the SDK's request.
func (o *OpenAI) params(req Request, srcs *taggedSources) (openai.ChatCompletionNewParams, error) {
	p := openai.ChatCompletionNewParams{
		Model:         shared.ChatModel(req.Model),
		StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
	}
	maxTokens := int64(o.maxTokens)
	if req.MaxTokens > 0 {
		maxTokens = int64(req.MaxTokens)
	}
	if o.official {
		p.MaxCompletionTokens = openai.Int(maxTokens)
	} else {
		p.MaxTokens = openai.Int(maxTokens)
	}
	if req.ReasoningEffort != "" {
		p.ReasoningEffort = shared.ReasoningEffort(req.ReasoningEffort)
	}
	for _, t := range req.Tools {
		var schema map[string]any
		if err := json.Unmarshal(objectSchema(t.Schema), &schema); err != nil {
			return p, fmt.Errorf("openai: tool %q schema: %w", t.Name, err)
		}
		fn := shared.FunctionDefinitionParam{Name: t.Name, Parameters: schema}
		if t.Description != "" {
			fn.Description = openai.String(t.Description)
		}
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(fn))
	}
	if req.System != "" {
		p.Messages = append(p.Messages, openai.SystemMessage(req.System))
	}
	for i, m := range req.Messages {
		var err error
		switch m.Role {
		case RoleAssistant:
			p.Messages, err = appendAssistant(p.Messages, m, srcs)
		case RoleUser:
			p.Messages, err = o.appendUser(p.Messages, m, srcs)
		default:
			err = fmt.Errorf("unknown role %q", m.Role)
		}
		if err != nil {
			return p, fmt.Errorf("openai: message %d: %w", i, err)
		}
	}
	return p, nil
}

// appendAssistant adds an assistant message: its text, and its tool_use blocks as
// tool_calls. Its text blocks are one reply cut after each marker group, so they are joined
// as they are, the markers shown as the [src:N] tags of their sources.
func appendAssistant(out []openai.ChatCompletionMessageParamUnion, m Message, srcs *taggedSources) ([]openai.ChatCompletionMessageParamUnion, error) {
	var (
		text []string
		a    openai.ChatCompletionAssistantMessageParam
	)
	for _, b := range m.Content {
		switch b.Type {
		case BlockText:
			if b.Text != "" {
				text = append(text, taggedAssistant(b, srcs))
			}
		case BlockToolUse:
			a.ToolCalls = append(a.ToolCalls, openai.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &openai.ChatCompletionMessageFunctionToolCallParam{
					ID: b.ToolUseID,
					Function: openai.ChatCompletionMessageFunctionToolCallFunctionParam{
						Name:      b.Name,
						Arguments: string(objectInput(b.Input)),
					},
				},
			})
		default:
			return out, fmt.Errorf("%s block in an assistant message", b.Type)
		}
	}
	if len(text) == 0 && len(a.ToolCalls) == 0 {
		return out, nil
	}
	if len(text) > 0 {
		a.Content.OfString = openai.String(strings.Join(text, ""))
	}
	return append(out, openai.ChatCompletionMessageParamUnion{OfAssistant: &a}), nil
}

// appendUser adds a user message. Chat Completions has a tool role where Anthropic puts
// tool results in the user message, and a tool message holds text only, so each
// tool_result becomes a tool message (they must directly follow the assistant's
// tool_calls), and any images they carry, with the message's own content, follow in one
// user message.
func (o *OpenAI) appendUser(out []openai.ChatCompletionMessageParamUnion, m Message, srcs *taggedSources) ([]openai.ChatCompletionMessageParamUnion, error) {
	var parts []openai.ChatCompletionContentPartUnionParam
	for _, b := range m.Content {
		if b.Type != BlockToolResult {
			continue
		}
		var (
			text   []string
			images []openai.ChatCompletionContentPartUnionParam
		)
		for _, c := range b.Content {
			switch c.Type {
			case BlockText:
				text = append(text, c.Text)
			case BlockSearchResult:
				text = append(text, taggedBlock(c, srcs.bySource[c.Source].n))
			case BlockImage:
				if o.images {
					images = append(images, imagePart(c))
				} else {
					// The caller renders placeholders when images are not allowed; this only
					// keeps a stray image from vanishing without a trace.
					text = append(text, "[image: "+c.MediaType+", not attached: images are not sent to this model]")
				}
			default:
				return out, fmt.Errorf("%s block inside a tool result", c.Type)
			}
		}
		out = append(out, openai.ToolMessage(strings.Join(text, "\n\n"), b.ToolUseID))
		if len(images) > 0 {
			parts = append(parts, openai.TextContentPart(
				fmt.Sprintf("The result of tool call %s included these images:", b.ToolUseID)))
			parts = append(parts, images...)
		}
	}
	for _, b := range m.Content {
		switch b.Type {
		case BlockToolResult:
		case BlockText:
			if b.Text != "" {
				parts = append(parts, openai.TextContentPart(b.Text))
			}
		case BlockImage:
			if o.images {
				parts = append(parts, imagePart(b))
			} else {
				parts = append(parts, openai.TextContentPart(
					"[image: "+b.MediaType+", not attached: images are not sent to this model]"))
			}
		default:
			return out, fmt.Errorf("%s block in a user message", b.Type)
		}
	}
	switch {
	case len(parts) == 0:
		return out, nil
	case len(parts) == 1 && parts[0].OfText != nil:
		// Plain string content is what the simplest local servers understand.
		return append(out, openai.UserMessage(parts[0].OfText.Text)), nil
	default:
		return append(out, openai.UserMessage(parts)), nil
	}
}

// indexedCall is a tool call being joined, with the index its chunks name.
type indexedCall struct {
	call
	index int64
}

// imagePart is an image block as a data: URI image part.
func imagePart(b Block) openai.ChatCompletionContentPartUnionParam {
	return openai.ImageContentPart(openai.ChatCompletionContentPartImageImageURLParam{
		URL: "data:" + b.MediaType + ";base64," + b.Data,
	})
}

// openAIAPIError converts the OpenAI SDK's error answers to *APIError, or returns nil.
func openAIAPIError(err error) *APIError {
	if oe, ok := errors.AsType[*openai.Error](err); ok {
		msg := oe.Message
		if msg == "" {
			msg = http.StatusText(oe.StatusCode)
		}
		// OpenAI's code is a word ("invalid_api_key"); OpenRouter's repeats the status.
		typ := oe.Code
		if _, err := strconv.Atoi(typ); err == nil || typ == "" {
			typ = oe.Type
		}
		return &APIError{Provider: "openai", Status: oe.StatusCode, Type: typ, Message: msg, err: err}
	}
	if se, ok := errors.AsType[*ssestream.StreamError](err); ok {
		// A mid-stream error chunk: {"error": {"code": 502 or "some_code", "message": …}}.
		var body struct {
			Error struct {
				Code    json.RawMessage `json:"code"`
				Message string          `json:"message"`
				Type    string          `json:"type"`
			} `json:"error"`
		}
		_ = json.Unmarshal(se.Event.Data, &body) // a body we cannot read still ends the stream
		ae := &APIError{Provider: "openai", Status: http.StatusBadGateway, Type: body.Error.Type, Message: body.Error.Message, err: err}
		if n, err := strconv.Atoi(string(body.Error.Code)); err == nil && n >= 400 && n <= 599 {
			ae.Status = n
		} else if code := ""; json.Unmarshal(body.Error.Code, &code) == nil && code != "" {
			ae.Type = code
		}
		return ae
	}
	return nil
}
