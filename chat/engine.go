package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/mcp"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// The request errors of a turn, returned before a stream opens (as is a *RefusalError); the
// HTTP layer maps each to its answer.
var (
	// ErrSessionNotFound: a resume named a session that does not exist.
	ErrSessionNotFound = errors.New("session not found or expired")
	// ErrNoOutstandingCall: no parked call with that id.
	ErrNoOutstandingCall = errors.New("no outstanding browser call with that id for this session")
	// ErrSessionFull: the session holds the most messages it may.
	ErrSessionFull = errors.New("session has reached its maximum number of messages")
)

// Reader-facing texts (api.md §5, §6.2, §6.8).
const (
	msgBusy          = "This conversation is already working on a reply. Wait for it to finish before sending another message."
	msgParkFailed    = "The assistant could not start a browser task."
	msgOutOfRoom     = "The assistant ran out of room to write before it produced an answer, so there is nothing to show. Try again, or ask a narrower question."
	msgCutOff        = "This answer was cut off because the assistant reached its length limit. Ask it to continue, or ask a narrower question."
	msgEmpty         = "The assistant finished without writing an answer. Try again, or rephrase your question."
	msgFailed        = "An error occurred while processing your request."
	msgKeyRefused    = "The provider refused your API key. Check that it is valid and can use this model."
	msgServerKey     = "The assistant is unavailable because of a server problem, and trying again will not help. Please contact support."
	msgKeyThrottled  = "The provider is rate limiting your API key. Wait a moment and try again."
	msgOnlyOne       = "Only one browser-executed tool call runs per turn; this call was not run. Wait for the pending call to finish before requesting another."
	msgBudgetSpent   = "This reply has already run code in the browser the most times one reply may; this call was not run. Answer with what the earlier runs showed."
	msgMovedOn       = "Browser execution did not complete: the conversation moved on before it was run."
	msgNotInTime     = "Browser execution did not complete: it was not answered in time."
	msgReplaced      = "Browser execution did not complete: it was replaced by a newer browser call."
	unknownToolFmt   = "Unknown tool '%s': no server or client executor is registered for it."
	invalidArgsFmt   = "Invalid arguments for %s: %s. Nothing was run; call it again with valid arguments."
	stepLimitFmt     = "The current model (%s) used all its steps without finishing. Try again, or ask for a smaller part of the task."
	unavailableFmt   = "The current model (%s) is not available right now. Try again later, or choose another model."
	fullOutputTool   = "get_full_output"
	msgLong          = "Conversation is getting long. Consider starting a new chat for best results."
	msgCutOffLong    = "This answer was cut off because the assistant reached its length limit, and the conversation is getting long. Start a new chat and ask a narrower question."
	msgTurnTooLong   = "This reply took longer than the assistant allows for one answer, so it was stopped. Ask for a smaller part of the task."
	turnLockTTL      = 300 * time.Second
	turnMargin       = 15 * time.Second
	retryDelay       = time.Second
	maxStepsPerRun   = 10
	maxArgProblems   = 5
	maxArgProblemLen = 500
)

// Engine runs chat turns. Its fields are set once; it is safe for concurrent use.
type Engine struct {
	Store  SessionStore
	Models *Models
	Budget *Budget
	// Runner runs client tools on the server for communities with server_fallback; nil turns
	// the fallback off.
	Runner Runner
	// MCP offers the tools of each community's MCP servers (a *mcp.Manager); nil binds none.
	MCP MCPTools
	// Knowledge is the communities' documentation (knowledge.md §3–4): the prompt's doc
	// sections and the documentation tools; nil binds none and leaves the sections empty.
	Knowledge Knowledge
	// MCPCallsPerReply caps the knowledge tool calls (MCP and documentation) of one reply; 0
	// means maxMCPCallsPerReply.
	MCPCallsPerReply int
	Now              func() time.Time
	Log              *slog.Logger

	promptsOnce sync.Once
	prompts     *promptCache // shared with the engines Ask makes
}

// SessionStore is where the engine keeps sessions: their history, the one parked browser call,
// the turn lock, the files and records of server runs and the reader's attached files
// (store.Store implements it; see it for each method's contract). Every write to a history is
// made under the session's turn lock.
type SessionStore interface {
	Session(ctx context.Context, community, id string) (store.Session, error)
	EnsureSession(ctx context.Context, community, id string) (s store.Session, created bool, err error)
	Append(ctx context.Context, community, id string, msgs ...json.RawMessage) (int, error)
	History(ctx context.Context, community, id string) ([]json.RawMessage, error)
	Park(ctx context.Context, community, id string, call store.ParkedCall, msgs ...json.RawMessage) error
	Parked(ctx context.Context, community, id string) (store.ParkedCall, bool, error)
	Claim(ctx context.Context, community, id, callID string, answer, late json.RawMessage) (store.ParkedCall, error)
	Abandon(ctx context.Context, community, id, callID string, closing json.RawMessage) (bool, error)
	Lock(ctx context.Context, community, id string, ttl time.Duration) (unlock func(), err error)
	PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error
	Files(ctx context.Context, community, id string) ([]store.SessionFile, error)
	File(ctx context.Context, community, id, name string) (store.SessionFile, []byte, error)
	PutRun(ctx context.Context, community, id string, rec store.RunRecord) (store.RunRecord, error)
}

// Runner runs a python client tool's code in the server's own engine, under the community's
// policy for the deployment, and returns the result a browser would have posted plus the files
// the run saved (path → bytes).
type Runner interface {
	// RunTool runs code for session sessionID of c (a runner may keep the session's
	// interpreter alive between its runs). data are the session's attached files (name →
	// verified bytes, nil when c takes no uploads), which the code reads at /data/<name>.
	RunTool(ctx context.Context, c *config.Community, dep config.Deployment, sessionID, callID, code string, data map[string][]byte) (toolresults.Result, map[string][]byte, error)
}

// MCPTools are the tools of the communities' MCP servers (mcp.Manager implements it): Tools is
// what a community's model calls are offered now, Call calls one with arguments that passed
// its Check.
type MCPTools interface {
	Tools(community string) []mcp.Tool
	Call(ctx context.Context, community, name string, args json.RawMessage) (mcp.Result, error)
}

// noter is a Runner that has one line for the model about what the server's Python holds; it
// ends the description of every tool bound to run on the server.
type noter interface{ ToolNote() string }

// serverNote is the Runner's note, or "".
func (e *Engine) serverNote() string {
	if n, ok := e.Runner.(noter); ok {
		return n.ToolNote()
	}
	return ""
}

// PageContext is the page the widget is embedded in.
type PageContext struct {
	URL, Title, WidgetInstructions string
}

// Turn is what one /chat or /chat/resume request asks for.
type Turn struct {
	Community  *config.Community
	Deployment config.Deployment
	SessionID  string
	// Model is the request's model override, or "".
	Model string
	Page  *PageContext
	// Declared are the client tools the caller can run; nil binds none.
	Declared []string
	Keys     Keys
	// OriginOK: the request's Origin may spend the platform's key (api.md §9).
	OriginOK bool
	// ToolsOff: the client-tool kill switch is on for this community.
	ToolsOff bool
	// NoClientTools binds no client tool, not even the server fallback (a non-streamed chat,
	// /ask); the knowledge and MCP tools the server runs itself are bound.
	NoClientTools bool
	RequestID     string
}

// Sink receives a turn's events. Open is called once, before the first event, when the answer
// becomes a stream; errors returned before it are the request's errors.
type Sink interface {
	Open(sessionID string) error
	Send(ev StreamEvent) error
}

func (e *Engine) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

func (e *Engine) log() *slog.Logger {
	if e.Log != nil {
		return e.Log
	}
	return slog.New(slog.DiscardHandler)
}

// Chat runs one /chat turn: the reader's message, then the model's reply until it answers,
// asks the browser to run code, or fails.
func (e *Engine) Chat(ctx context.Context, t Turn, message string, sink Sink) error {
	id := t.SessionID
	if id == "" {
		id = newID()
	}
	c := t.Community.ID
	// The lock comes before the session is made sure of: a session mid-turn is never evicted,
	// so once locked it cannot vanish before the turn writes to it.
	unlock, err := e.Store.Lock(ctx, c, id, turnLockTTL)
	if errors.Is(err, store.ErrBusy) {
		return openWithError(sink, id, msgBusy)
	}
	if err != nil {
		return err
	}
	defer unlock()
	sess, _, err := e.Store.EnsureSession(ctx, c, id)
	if err != nil {
		return err
	}
	if sess.MessageCount+2 > limits.MaxSessionMessages {
		return ErrSessionFull
	}
	// A parked call the reader never answered is closed, so every tool call in the history
	// keeps its result. Every write to the history happens under the turn lock.
	if call, ok, err := e.Store.Parked(ctx, c, id); err != nil {
		return err
	} else if ok {
		if _, err := e.closeCall(ctx, c, id, call, msgMovedOn); err != nil {
			return err
		}
	}
	// The model is told which files are attached when they changed since it was last told.
	user := Message{Role: RoleUser}
	if note := e.filesNote(ctx, t.Community, id); note != nil {
		user.Content = append(user.Content, *note)
	}
	user.Content = append(user.Content, Block{Type: BlockText, Text: message})
	if _, err := e.appendMsgs(ctx, c, id, user); err != nil {
		return err
	}
	if err := openSession(sink, id); err != nil {
		return err
	}
	history, err := e.history(ctx, c, id)
	if err != nil {
		return sendError(sink, msgFailed, t.RequestID)
	}
	route, err := e.route(ctx, t)
	if err != nil {
		return sendRefusal(sink, err, t.RequestID)
	}
	r := &turn{e: e, t: t, id: id, route: route, history: history, sink: sink}
	return r.loop(ctx)
}

// Resume runs one /chat/resume turn: the browser's result for the parked call, then the model
// again.
func (e *Engine) Resume(ctx context.Context, t Turn, res *toolresults.Result, sink Sink) error {
	c, id := t.Community.ID, t.SessionID
	if _, err := e.Store.Session(ctx, c, id); errors.Is(err, store.ErrNotFound) {
		return ErrSessionNotFound
	} else if err != nil {
		return err
	}
	// The turn lock comes first, so the result is written under it like every other write to
	// the history: a /chat racing this resume either closes the call before the result (which
	// then finds nothing to claim) or appends its message after it.
	unlock, err := e.lockForResume(ctx, c, id, res.CallID)
	if errors.Is(err, store.ErrBusy) {
		// The call stays parked; the reader can send the result again.
		return openWithError(sink, id, msgBusy)
	}
	if err != nil {
		return err
	}
	defer unlock()
	call, ok, err := e.Store.Parked(ctx, c, id)
	if err != nil {
		return err
	}
	if !ok || call.CallID != res.CallID {
		return ErrNoOutstandingCall
	}
	// The claim is what makes a result count at most once: of concurrent resumes of one call
	// exactly one gets past it, and its result is appended in the same step.
	// Files attached while the browser ran are told of with the result, in either answer.
	note := e.filesNote(ctx, t.Community, id)
	answer, err := marshalMsg(withNote(toolResultMessage(call, []Block{{Type: BlockText, Text: res.StoredText()}}, res.IsError()), note))
	if err != nil {
		return err
	}
	late, err := marshalMsg(withNote(toolResultMessage(call, []Block{{Type: BlockText, Text: msgNotInTime}}, true), note))
	if err != nil {
		return err
	}
	call, err = e.Store.Claim(ctx, c, id, res.CallID, answer, late)
	if errors.Is(err, store.ErrNoParkedCall) {
		return ErrNoOutstandingCall // too late (closed as such) or claimed by another resume
	}
	if err != nil {
		return err
	}
	if err := openSession(sink, id); err != nil {
		return err
	}
	history, err := e.history(ctx, c, id)
	if err != nil {
		return sendError(sink, msgFailed, t.RequestID)
	}
	route, err := e.route(ctx, t)
	if err != nil {
		return sendRefusal(sink, err, t.RequestID)
	}
	// The model sees the live result, with images where its provider takes them; the history
	// keeps only placeholders.
	var live []Block
	for _, b := range res.LiveBlocks(route.Provider.ImagesAllowed()) {
		live = append(live, Block{Type: BlockType(b.Type), Text: b.Text, MediaType: b.MediaType, Data: b.Data})
	}
	history[len(history)-1] = withNote(toolResultMessage(call, live, res.IsError()), note)
	r := &turn{e: e, t: t, id: id, route: route, history: history, runs: call.RunsBefore + 1, mcpCalls: call.MCPCallsBefore, sink: sink}
	return r.loop(ctx)
}

// toolResultMessage is the user message answering a parked call, followed by the results of
// the other calls of its batch that were kept with it.
func toolResultMessage(call store.ParkedCall, content []Block, isError bool) Message {
	m := Message{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: call.CallID, Content: content, IsError: isError}}}
	var siblings []Block
	if len(call.Carry) > 0 && json.Unmarshal(call.Carry, &siblings) == nil {
		m.Content = append(m.Content, siblings...)
	}
	return m
}

// closeCall removes a parked call and records, in the same step, that it will never be
// answered; it reports whether the call was still parked.
func (e *Engine) closeCall(ctx context.Context, c, id string, call store.ParkedCall, why string) (bool, error) {
	closing, err := marshalMsg(toolResultMessage(call, []Block{{Type: BlockText, Text: why}}, true))
	if err != nil {
		return false, err
	}
	return e.Store.Abandon(ctx, c, id, call.CallID, closing)
}

// resumeWait bounds how long a resume waits for the turn that parked its call to let go of
// the session (it sends tool_request just before it does), polling every resumePoll.
const (
	resumeWait = 3 * time.Second
	resumePoll = 25 * time.Millisecond
)

// lockForResume takes the session's turn lock for a resume of callID. While another turn holds
// it, it waits only as long as the call is still parked: once it is gone (claimed by a
// concurrent resume, or closed by a new message) the resume is answered ErrNoOutstandingCall at
// once. It returns store.ErrBusy when the lock stays taken past resumeWait.
func (e *Engine) lockForResume(ctx context.Context, c, id, callID string) (func(), error) {
	deadline := time.Now().Add(resumeWait)
	for {
		unlock, err := e.Store.Lock(ctx, c, id, turnLockTTL)
		if !errors.Is(err, store.ErrBusy) {
			return unlock, err
		}
		call, ok, err := e.Store.Parked(ctx, c, id)
		if err != nil {
			return nil, err
		}
		if !ok || call.CallID != callID {
			return nil, ErrNoOutstandingCall
		}
		if time.Now().After(deadline) {
			return nil, store.ErrBusy
		}
		select {
		case <-time.After(resumePoll):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func marshalMsg(m Message) (json.RawMessage, error) {
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("encoding a message: %w", err)
	}
	return b, nil
}

func (e *Engine) appendMsgs(ctx context.Context, c, id string, msgs ...Message) (int, error) {
	raw := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		b, err := marshalMsg(m)
		if err != nil {
			return 0, err
		}
		raw[i] = b
	}
	return e.Store.Append(ctx, c, id, raw...)
}

func (e *Engine) history(ctx context.Context, c, id string) ([]Message, error) {
	raw, err := e.Store.History(ctx, c, id)
	if err != nil {
		return nil, err
	}
	out := make([]Message, 0, len(raw))
	for _, r := range raw {
		var m Message
		if err := json.Unmarshal(r, &m); err != nil {
			return nil, fmt.Errorf("stored message: %w", err)
		}
		out = append(out, m)
	}
	return out, nil
}

// CheckModel returns the refusal (a *RefusalError) of a turn whose model cannot be resolved
// at all (an unknown model, or one with no key here), before anything is stored; nil otherwise.
func (e *Engine) CheckModel(t Turn) error {
	_, err := e.Models.Resolve(t.Community, t.Model, t.Keys)
	return err
}

// route resolves the model and checks that the request may use it; the error is a
// *RefusalError.
func (e *Engine) route(ctx context.Context, t Turn) (Route, error) {
	r, err := e.Models.Resolve(t.Community, t.Model, t.Keys)
	if err != nil {
		return Route{}, err
	}
	if !r.BYOK && !r.Free {
		if !t.OriginOK {
			return Route{}, refuse(CodeKeyRequired, msgKeyRequired)
		}
		if err := e.Budget.Refusal(ctx, t.Community); err != nil {
			return Route{}, err
		}
	}
	return r, nil
}

func openSession(sink Sink, id string) error {
	if err := sink.Open(id); err != nil {
		return err
	}
	return sink.Send(SessionEvent{SessionID: id})
}

func openWithError(sink Sink, id, msg string) error {
	if err := openSession(sink, id); err != nil {
		return err
	}
	return sendError(sink, msg, "")
}

func sendError(sink Sink, msg, requestID string) error {
	return sink.Send(ErrorEvent{Message: msg, RequestID: requestID})
}

// sendRefusal ends the stream with a refusal's error event, which carries its code.
func sendRefusal(sink Sink, err error, requestID string) error {
	ev := ErrorEvent{Message: err.Error(), RequestID: requestID}
	if r := refusalOf(err); r != nil {
		ev.Refusal = r.Code
	}
	return sink.Send(ev)
}

// providerErrorMessage is the reader-facing text for a failed model call.
func providerErrorMessage(err error, r Route) string {
	var api *APIError
	if errors.As(err, &api) {
		switch {
		case api.Status == 401 || api.Status == 403:
			if r.BYOK {
				return msgKeyRefused
			}
			return msgServerKey
		case api.Status == 429 && r.BYOK:
			return msgKeyThrottled
		case api.Status == 404 || api.Status == 429 || api.Status >= 500:
			return fmt.Sprintf(unavailableFmt, r.Model)
		}
	}
	return msgFailed
}

func errorResult(callID, text string) Block {
	return Block{Type: BlockToolResult, ToolUseID: callID, IsError: true, Content: []Block{{Type: BlockText, Text: text}}}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// Ask runs one /ask question (api.md §4.4): a reply with no session and no history, the
// knowledge and MCP tools bound, client tools not. The turn runs as a chat of a session kept
// only for this request (an in-memory store that goes with it); the sink gets the chat's
// events without the session's: no session event, no session id in done.
func (e *Engine) Ask(ctx context.Context, t Turn, question string, sink Sink) error {
	t.SessionID, t.Declared, t.NoClientTools = "", nil, true
	scratch := &Engine{
		Store:            store.NewMemory(store.DefaultLimits(), e.Now, nil),
		Models:           e.Models,
		Budget:           e.Budget,
		MCP:              e.MCP,
		Knowledge:        e.Knowledge,
		MCPCallsPerReply: e.MCPCallsPerReply,
		Now:              e.Now,
		Log:              e.Log,
		prompts:          e.promptCache(),
	}
	return scratch.Chat(ctx, t, question, askSink{sink})
}

// askSink passes a chat's events on without its session.
type askSink struct{ Sink }

func (s askSink) Open(string) error { return s.Sink.Open("") }

func (s askSink) Send(ev StreamEvent) error {
	switch ev := ev.(type) {
	case SessionEvent:
		return nil
	case DoneEvent:
		ev.SessionID = ""
		return s.Sink.Send(ev)
	}
	return s.Sink.Send(ev)
}
