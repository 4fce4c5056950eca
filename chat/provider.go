package chat

import (
	"context"
	"encoding/json"
)

// Role is who wrote a message.
type Role string

// The roles of a conversation. Tool results travel in a user message, as in Anthropic's API;
// providers with a separate tool role translate.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// BlockType names what a content block holds.
type BlockType string

// The block types.
const (
	BlockText       BlockType = "text"
	BlockImage      BlockType = "image"
	BlockToolUse    BlockType = "tool_use"
	BlockToolResult BlockType = "tool_result"
)

// Message is one turn of the history, provider-neutral. It is stored as JSON.
type Message struct {
	Role    Role    `json:"role"`
	Content []Block `json:"content"`
}

// Block is one content block.
//
//   - text: Text. A note of the attached files (files.go) also has Files, the fingerprint of
//     the set it announced; providers send only its Text.
//   - image: MediaType and Data (standard base64). Only ever sent live, never stored.
//   - tool_use (assistant): ToolUseID, Name, Input (a JSON object).
//   - tool_result (user): ToolUseID, IsError, and Content: text and image blocks.
type Block struct {
	Type      BlockType       `json:"type"`
	Text      string          `json:"text,omitempty"`
	MediaType string          `json:"media_type,omitempty"`
	Data      string          `json:"data,omitempty"`
	ToolUseID string          `json:"tool_use_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Input     json.RawMessage `json:"input,omitempty"`
	IsError   bool            `json:"is_error,omitempty"`
	Content   []Block         `json:"content,omitempty"`
	Files     string          `json:"files,omitempty"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of the tool's input (an object schema).
	Schema json.RawMessage
	// RunsOnServer: the server runs this tool itself rather than the reader's browser. It is
	// not sent to providers; the scripted model uses it to say where the code will run.
	RunsOnServer bool
}

// Request is one call to a model.
type Request struct {
	// Model is the provider's own model name, without the "provider/" prefix.
	Model    string
	System   string
	Messages []Message
	Tools    []Tool
	// MaxTokens bounds the reply; 0 means the provider adapter's default.
	MaxTokens int
	// ReasoningEffort is the community's reasoning_effort, or "" for the provider's default.
	ReasoningEffort string
}

// EventKind names a streamed event.
type EventKind int

// The streamed events. A stream is any number of TextDelta and ToolCall events, then exactly
// one Done, unless Stream returns an error.
const (
	// TextDelta carries the next piece of the reply's text.
	TextDelta EventKind = iota + 1
	// ToolCall carries one complete tool call: the adapter joins argument pieces split across
	// chunks before emitting it.
	ToolCall
	// Done ends the stream with the stop reason and the token usage.
	Done
)

// Event is one streamed event.
type Event struct {
	Kind EventKind
	Text string
	Call *Call
	// StopReason is set on Done: "end_turn", "tool_use", "max_tokens" or the provider's word.
	StopReason string
	Usage      Usage
}

// Call is one tool call the model made.
type Call struct {
	ID    string
	Name  string
	Input json.RawMessage
}

// Usage counts the tokens of one model call.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// Provider is a model API.
type Provider interface {
	// Stream sends req and calls emit for each event as it arrives. It returns when the
	// stream ends, when emit returns an error (which it returns), or when ctx is done.
	Stream(ctx context.Context, req Request, emit func(Event) error) error
	// ImagesAllowed reports whether image blocks may be sent in tool results.
	ImagesAllowed() bool
}
