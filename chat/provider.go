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
	// BlockSearchResult is a citable passage inside a tool result (knowledge.md §5.2).
	BlockSearchResult BlockType = "search_result"
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
//   - tool_result (user): ToolUseID, IsError, and Content: text, image and search_result
//     blocks.
//   - search_result (inside a tool_result only): Source (the URL a citation links to, may be
//     ""), Title, and Content: text blocks, the passage. Build them with [CitableContent].
//   - a text block of an assistant message may carry Citations: the sources its text cites,
//     with their markers (the text then ends with the markers, "[1][3]"; see citations.go).
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
	Source    string          `json:"source,omitempty"`
	Title     string          `json:"title,omitempty"`
	Citations []Cited         `json:"citations,omitempty"`
}

// Cited is one citation of a passage: what a provider's stream says a text block cites
// (Anthropic's search_result_location, a [src:N] tag on the tagged path), and what a stored
// assistant text block keeps of the sources it cites.
type Cited struct {
	// Marker is the source's number in its reply; 0 until the turn gives it one, and for a
	// citation with an empty Source, which gets none.
	Marker    int    `json:"marker,omitempty"`
	Source    string `json:"source"`
	Title     string `json:"title"`
	CitedText string `json:"cited_text"`
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

// The streamed events. A stream is any number of TextDelta, CitationDelta, BlockEnd and
// ToolCall events, then exactly one Done, unless Stream returns an error.
const (
	// TextDelta carries the next piece of the reply's text.
	TextDelta EventKind = iota + 1
	// ToolCall carries one complete tool call: the adapter joins argument pieces split across
	// chunks before emitting it.
	ToolCall
	// Done ends the stream with the stop reason and the token usage.
	Done
	// CitationDelta says the text block Index cites Cite. It may come before the block's
	// text; the turn holds it until the block is complete.
	CitationDelta
	// BlockEnd says the text block Index is complete. A block is also complete when an event
	// of another block, a ToolCall or Done comes, so a provider without block ends may leave
	// it out.
	BlockEnd
	// Notice carries a note for the server's log in Text (a citation tag that named no
	// source); the reader never sees it.
	Notice
)

// Event is one streamed event.
type Event struct {
	Kind EventKind
	Text string
	// Index is the content block of this model call that a TextDelta, CitationDelta or
	// BlockEnd belongs to; indexes restart with each call.
	Index int
	Cite  *Cited
	Call  *Call
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
