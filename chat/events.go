package chat

import "encoding/json"

// StreamEvent is one event of a reply as the widget reads it (api.md §5), sent to a Sink. Each
// kind is its own struct; encoding/json gives its bytes on the wire: a JSON object with an
// "event" key naming it, keys in sorted order (the fields are declared in that order).
//
// (Event, without the prefix, is one event of a provider's stream; see Provider.)
type StreamEvent interface {
	// EventName is the event's "event" value: "session", "content", "done", ….
	EventName() string
}

// eventName marshals as the name of the event E it sits in, as that event's "event" key, so
// an event cannot be built with a wrong or missing name.
type eventName[E StreamEvent] struct{}

func (eventName[E]) MarshalJSON() ([]byte, error) {
	var e E
	return json.Marshal(e.EventName())
}

// SessionEvent comes first in every stream, so a reader whose stream is cut still has the id.
type SessionEvent struct {
	Event     eventName[SessionEvent] `json:"event"`
	SessionID string                  `json:"session_id"`
}

// ContentEvent is the next piece of the reply's text.
type ContentEvent struct {
	Content string                  `json:"content"`
	Event   eventName[ContentEvent] `json:"event"`
}

// CitationEvent names a source the first time the reply cites it, right before the content
// chunk with its marker (knowledge.md §5.3).
type CitationEvent struct {
	CitedText string                   `json:"cited_text"`
	Event     eventName[CitationEvent] `json:"event"`
	Marker    int                      `json:"marker"`
	Source    string                   `json:"source"`
	Title     string                   `json:"title"`
}

// ToolCallEvent names a tool call as soon as the model made it; never its arguments.
type ToolCallEvent struct {
	Event eventName[ToolCallEvent] `json:"event"`
	Name  string                   `json:"name"`
}

// ToolStartEvent says the server began running a tool.
type ToolStartEvent struct {
	CallID string                    `json:"call_id"`
	Event  eventName[ToolStartEvent] `json:"event"`
	// Input is the call's arguments as a JSON value (nil: null).
	Input any    `json:"input"`
	Name  string `json:"name"`
}

// ToolEndEvent says a server-run tool finished, with the text the model reads.
type ToolEndEvent struct {
	// Artifacts are the paths of the files the run saved, fetched from
	// /{c}/sessions/{session}/artifacts/{call_id}/{path}: present (maybe empty) when the run
	// ran, left out (nil) when the server could not run it.
	Artifacts []string                `json:"artifacts,omitzero"`
	CallID    string                  `json:"call_id"`
	Event     eventName[ToolEndEvent] `json:"event"`
	Name      string                  `json:"name"`
	Output    string                  `json:"output"`
}

// ToolRequestEvent ends a run by asking the browser to run a tool (api.md §6.2).
type ToolRequestEvent struct {
	// Args is the call's checked arguments as a JSON value.
	Args               any                         `json:"args"`
	CallID             string                      `json:"call_id"`
	Citations          Citations                   `json:"citations"`
	Content            string                      `json:"content"`
	Event              eventName[ToolRequestEvent] `json:"event"`
	Model              string                      `json:"model"`
	RequiresPermission bool                        `json:"requires_permission"`
	SessionID          string                      `json:"session_id"`
	Tool               string                      `json:"tool"`
	Usage              *ReplyUsage                 `json:"usage"`
}

// DoneEvent ends a run with its answer.
type DoneEvent struct {
	Citations Citations `json:"citations"`
	// Content is everything this run wrote, which the widget shows in place of the pieces.
	Content   string               `json:"content"`
	Event     eventName[DoneEvent] `json:"event"`
	Model     string               `json:"model"`
	RequestID string               `json:"request_id"`
	// SessionID is left out by /ask, which has no session.
	SessionID string      `json:"session_id,omitempty"`
	Usage     *ReplyUsage `json:"usage"`
}

// ErrorEvent ends a stream with a reader-facing message.
type ErrorEvent struct {
	Event     eventName[ErrorEvent] `json:"event"`
	Message   string                `json:"message"`
	RequestID string                `json:"request_id,omitempty"`
	// Refusal is set when the turn was refused before any model call (not on the wire: a
	// non-streamed chat answers it with its HTTP status).
	Refusal RefusalCode `json:"-"`
}

// WarningEvent comes right before done, at most once per reply.
type WarningEvent struct {
	Code string `json:"code"`
	// Codes lists both codes when both apply, and is left out otherwise.
	Codes   []string                `json:"codes,omitempty"`
	Event   eventName[WarningEvent] `json:"event"`
	Message string                  `json:"message"`
}

// EventName implements StreamEvent.
func (SessionEvent) EventName() string { return "session" }

// EventName implements StreamEvent.
func (ContentEvent) EventName() string { return "content" }

// EventName implements StreamEvent.
func (CitationEvent) EventName() string { return "citation" }

// EventName implements StreamEvent.
func (ToolCallEvent) EventName() string { return "tool_call" }

// EventName implements StreamEvent.
func (ToolStartEvent) EventName() string { return "tool_start" }

// EventName implements StreamEvent.
func (ToolEndEvent) EventName() string { return "tool_end" }

// EventName implements StreamEvent.
func (ToolRequestEvent) EventName() string { return "tool_request" }

// EventName implements StreamEvent.
func (DoneEvent) EventName() string { return "done" }

// EventName implements StreamEvent.
func (ErrorEvent) EventName() string { return "error" }

// EventName implements StreamEvent.
func (WarningEvent) EventName() string { return "warning" }

// Citation is one source the reply cites (api.md §5): its marker, and the first passage of it
// the reply cited.
type Citation struct {
	Marker    int    `json:"marker"`
	Source    string `json:"source"`
	Title     string `json:"title"`
	CitedText string `json:"cited_text"`
}

// Citations is a reply's citation list; it is always a list on the wire, empty when nil.
type Citations []Citation

// MarshalJSON encodes nil as [].
func (c Citations) MarshalJSON() ([]byte, error) {
	if c == nil {
		return []byte("[]"), nil
	}
	return json.Marshal([]Citation(c))
}

// ReplyUsage is the usage object of done and tool_request (api.md §5): the tokens of this run.
type ReplyUsage struct {
	CacheCreationTokens int      `json:"cache_creation_tokens"`
	CacheReadTokens     int      `json:"cache_read_tokens"`
	EstimatedCost       *float64 `json:"estimated_cost"`
	InputTokens         int      `json:"input_tokens"`
	OutputTokens        int      `json:"output_tokens"`
	Partial             bool     `json:"partial"`
}

// replyUsage is the usage of done and tool_request, or nil (null) when nothing was counted.
func replyUsage(u Usage, cost *float64) *ReplyUsage {
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	return &ReplyUsage{InputTokens: u.InputTokens, OutputTokens: u.OutputTokens, EstimatedCost: cost}
}
