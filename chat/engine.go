package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// Errors the HTTP layer maps to statuses; they are returned before a stream opens.
var (
	// ErrSessionNotFound: /chat/resume named a session that does not exist (404).
	ErrSessionNotFound = errors.New("session not found or expired")
	// ErrNoOutstandingCall: no parked call with that id (409).
	ErrNoOutstandingCall = errors.New("no outstanding browser call with that id for this session")
	// ErrSessionFull: the session holds the most messages it may (400).
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
	Store  store.Store
	Models *Models
	Budget *Budget
	// Runner runs client tools on the server for communities with server_fallback; nil turns
	// the fallback off.
	Runner Runner
	Now    func() time.Time
	Log    *slog.Logger
}

// Runner runs a python client tool's code in the server's own engine, under the community's
// policy for the deployment, and returns the result a browser would have posted plus the files
// the run saved (path → bytes).
type Runner interface {
	RunTool(ctx context.Context, c *config.Community, dep config.Deployment, callID, code string) (toolresults.Result, map[string][]byte, error)
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
	// NoTools binds no tool at all, not even the server fallback (a non-streamed chat).
	NoTools   bool
	RequestID string
}

// Sink receives a turn's events. Open is called once, before the first event, when the answer
// becomes a stream; errors returned before it are the request's HTTP errors.
type Sink interface {
	Open(sessionID string) error
	Send(ev map[string]any) error
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
	if _, _, err := e.Store.EnsureSession(ctx, c, id); err != nil {
		return err
	}
	unlock, err := e.Store.Lock(ctx, c, id, turnLockTTL)
	if errors.Is(err, store.ErrBusy) {
		return openWithError(sink, id, msgBusy)
	}
	if err != nil {
		return err
	}
	defer unlock()
	sess, err := e.Store.Session(ctx, c, id)
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
	user := Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: message}}}
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
	return e.run(ctx, t, id, history, 0, sink)
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
	answer, err := marshalMsg(toolResultMessage(call, []Block{{Type: BlockText, Text: res.StoredText()}}, res.IsError()))
	if err != nil {
		return err
	}
	late, err := marshalMsg(toolResultMessage(call, []Block{{Type: BlockText, Text: msgNotInTime}}, true))
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
	route, rerr := e.route(ctx, t)
	if rerr != "" {
		return sendError(sink, rerr, t.RequestID)
	}
	// The model sees the live result, with images where its provider takes them; the history
	// keeps only placeholders.
	var live []Block
	for _, b := range res.LiveBlocks(route.Provider.ImagesAllowed()) {
		live = append(live, Block{Type: BlockType(b.Type), Text: b.Text, MediaType: b.MediaType, Data: b.Data})
	}
	history[len(history)-1] = toolResultMessage(call, live, res.IsError())
	return e.loop(ctx, t, id, route, history, call.RunsBefore+1, sink)
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

// route resolves the model and checks that the request may use it; a non-empty string is the
// reader-facing refusal.
func (e *Engine) route(ctx context.Context, t Turn) (Route, string) {
	r, err := e.Models.Resolve(t.Community, t.Model, t.Keys)
	if err != nil {
		return Route{}, err.Error()
	}
	if !r.BYOK && !r.Free {
		if !t.OriginOK {
			return Route{}, MsgKeyRequired
		}
		if msg := e.Budget.Refusal(ctx, t.Community); msg != "" {
			return Route{}, msg
		}
	}
	return r, ""
}

func (e *Engine) run(ctx context.Context, t Turn, id string, history []Message, runs int, sink Sink) error {
	route, msg := e.route(ctx, t)
	if msg != "" {
		return sendError(sink, msg, t.RequestID)
	}
	return e.loop(ctx, t, id, route, history, runs, sink)
}

// loop calls the model until it answers (done), parks a browser call (tool_request), or fails
// (error). runs is how many browser results this reply has already returned.
func (e *Engine) loop(ctx context.Context, t Turn, id string, route Route, history []Message, runs int, sink Sink) error {
	c := t.Community.ID
	// A turn ends before its lock can expire, so no second turn of the session ever overlaps
	// it; the reader gets an error event rather than a stream that stops.
	parent := ctx
	ctx, cancel := context.WithTimeout(ctx, turnLockTTL-turnMargin)
	defer cancel()
	gone := func() error {
		if parent.Err() == nil {
			return sendError(sink, msgTurnTooLong, t.RequestID)
		}
		return nil // the reader went away
	}
	tools := bindTools(t, e.Runner != nil)
	system := SystemPrompt(t.Community, t.Page)
	retried := false
	// The run's text and usage add up over its model calls: done.content and tool_request's
	// content are everything this request streamed, which the widget shows in place of it.
	var runText strings.Builder
	var runUsage Usage
	var runCost *float64
	for step := 0; step < maxStepsPerRun; step++ {
		var text strings.Builder
		var calls []Call
		var stop string
		var usage Usage
		produced := false
		err := route.Provider.Stream(ctx, Request{Model: route.Name, System: system, Messages: trimHistory(history, maxConversationTokens), Tools: tools.list, ReasoningEffort: deref(t.Community.ReasoningEffort)}, func(ev Event) error {
			produced = produced || ev.Kind == TextDelta || ev.Kind == ToolCall
			switch ev.Kind {
			case TextDelta:
				if ev.Text == "" {
					return nil
				}
				text.WriteString(ev.Text)
				return sink.Send(map[string]any{"event": "content", "content": ev.Text})
			case ToolCall:
				calls = append(calls, *ev.Call)
				return sink.Send(map[string]any{"event": "tool_call", "name": clip(ev.Call.Name, 128)})
			case Done:
				stop, usage = ev.StopReason, ev.Usage
			}
			return nil
		})
		// Recorded even when the reader went away: the platform paid for the tokens.
		cost := e.Budget.Record(context.WithoutCancel(ctx), t.Community, route, usage)
		runUsage.InputTokens += usage.InputTokens
		runUsage.OutputTokens += usage.OutputTokens
		if cost != nil {
			total := *cost
			if runCost != nil {
				total += *runCost
			}
			runCost = &total
		}
		if err != nil {
			if ctx.Err() != nil {
				return gone()
			}
			e.log().Warn("model call failed", slog.String("community", c), slog.String("model", route.Model), slog.Any("error", err))
			// A call that fails fast, before the turn produced anything, is tried once more
			// after a second; never after output has started, never twice.
			if step == 0 && !produced && !retried {
				retried = true
				select {
				case <-time.After(retryDelay):
				case <-ctx.Done():
					return gone()
				}
				step--
				continue
			}
			return sendError(sink, providerErrorMessage(err, route), t.RequestID)
		}
		reply := text.String()
		runText.WriteString(reply)
		if len(calls) == 0 {
			if strings.TrimSpace(runText.String()) == "" {
				if stop == "max_tokens" {
					return sendError(sink, msgOutOfRoom, t.RequestID)
				}
				return sendError(sink, msgEmpty, t.RequestID)
			}
			if strings.TrimSpace(reply) != "" {
				if _, err := e.appendMsgs(ctx, c, id, Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: reply}}}); err != nil {
					return sendError(sink, msgFailed, t.RequestID)
				}
			}
			if w := replyWarning(stop == "max_tokens", conversationTokens(history) > longConversationTokens); w != nil {
				if err := sink.Send(w); err != nil {
					return err
				}
			}
			return sink.Send(map[string]any{"event": "done", "session_id": id, "request_id": t.RequestID, "model": route.Model,
				"content": runText.String(), "citations": []any{}, "usage": replyUsage(runUsage, runCost)})
		}
		assistant := Message{Role: RoleAssistant}
		if reply != "" {
			assistant.Content = append(assistant.Content, Block{Type: BlockText, Text: reply})
		}
		var results []Block
		var parked *store.ParkedCall
		for _, call := range calls {
			input := call.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			assistant.Content = append(assistant.Content, Block{Type: BlockToolUse, ToolUseID: call.ID, Name: call.Name, Input: input})
			tool, bound := tools.byName[call.Name]
			if !bound {
				results = append(results, errorResult(call.ID, fmt.Sprintf(unknownToolFmt, call.Name)))
				continue
			}
			args, problems := tool.check(input)
			switch {
			case len(problems) > 0:
				results = append(results, errorResult(call.ID, fmt.Sprintf(invalidArgsFmt, call.Name, argProblems(problems))))
			case runs >= limits.MaxBrowserRunsPerReply:
				results = append(results, errorResult(call.ID, msgBudgetSpent))
			case tool.server:
				// The server runs it now, in its own engine; it counts as a run of this reply.
				runs++
				block, err := e.runOnServer(ctx, t, id, call, args, sink)
				if err != nil {
					if ctx.Err() != nil {
						return gone()
					}
					return err
				}
				results = append(results, block)
			case parked != nil:
				results = append(results, errorResult(call.ID, msgOnlyOne))
			default:
				parked = &store.ParkedCall{CallID: call.ID, Tool: call.Name, Args: args, RequiresPermission: tool.requiresPermission, RunsBefore: runs, CreatedAt: e.now()}
			}
		}
		if parked != nil {
			return e.park(ctx, t, id, route, assistant, results, *parked, runText.String(), runUsage, runCost, sink)
		}
		next := Message{Role: RoleUser, Content: results}
		if _, err := e.appendMsgs(ctx, c, id, assistant, next); err != nil {
			return sendError(sink, msgFailed, t.RequestID)
		}
		history = append(history, assistant, next)
	}
	return sendError(sink, fmt.Sprintf(stepLimitFmt, route.Model), t.RequestID)
}

// park stores the assistant message, parks the browser call with the batch's other results,
// and ends the run with tool_request.
func (e *Engine) park(ctx context.Context, t Turn, id string, route Route, assistant Message, siblings []Block, call store.ParkedCall, reply string, usage Usage, cost *float64, sink Sink) error {
	c := t.Community.ID
	if len(siblings) > 0 {
		b, err := json.Marshal(siblings)
		if err != nil {
			return sendError(sink, msgParkFailed, t.RequestID)
		}
		call.Carry = b
	}
	// A different call still parked is replaced; it is closed before the new tool_use is
	// written, so each tool_use is followed by its own result.
	if old, ok, err := e.Store.Parked(ctx, c, id); err == nil && ok {
		if _, err := e.closeCall(ctx, c, id, old, msgReplaced); err != nil {
			return sendError(sink, msgParkFailed, t.RequestID)
		}
	}
	msg, err := marshalMsg(assistant)
	if err != nil {
		return sendError(sink, msgParkFailed, t.RequestID)
	}
	// The assistant message and the parked call are written in one step: if it fails, neither
	// or both are there (a lost reply), and in the second case the next message closes the call.
	if err := e.Store.Park(ctx, c, id, call, msg); err != nil {
		e.log().Warn("parking a browser call failed", slog.String("community", c), slog.Any("error", err))
		return sendError(sink, msgParkFailed, t.RequestID)
	}
	var args any
	_ = json.Unmarshal(call.Args, &args)
	return sink.Send(map[string]any{"event": "tool_request", "session_id": id, "call_id": call.CallID, "tool": call.Tool,
		"args": args, "requires_permission": call.RequiresPermission, "content": reply, "citations": []any{},
		"usage": replyUsage(usage, cost), "model": route.Model})
}

// msgFilesNotKept ends a server run's stderr when its saved files did not fit in the server's
// storage for run files.
const msgFilesNotKept = "osa: the files this run saved were not kept: workspace_full (the server's storage for run files is full)\n"

// msgRunStopped is what the model reads when a server run was stopped part way (its worker
// process ended): unlike msgServerBusy it must not say that nothing ran.
const msgRunStopped = "The server's Python stopped this run: its worker process ended unexpectedly. The code may have partly run; nothing it printed or saved was kept. Do not assume it ran to the end."

// msgServerBusy is what the model reads when the server's Python cannot take the run.
const msgServerBusy = "The server's Python could not run this code: %s. Nothing was run."

// runOnServer runs one client-tool call in the server's engine, with tool_start and tool_end
// events, keeps the files it saved with the session, and returns the tool result the model reads:
// the same fenced text a browser run gives.
func (e *Engine) runOnServer(ctx context.Context, t Turn, id string, call Call, args json.RawMessage, sink Sink) (Block, error) {
	var in struct {
		Code        string `json:"code"`
		Description string `json:"description"`
	}
	_ = json.Unmarshal(args, &in)
	var input any
	_ = json.Unmarshal(args, &input)
	if err := sink.Send(map[string]any{"event": "tool_start", "name": call.Name, "input": input, "call_id": call.ID}); err != nil {
		return Block{}, err
	}
	res, files, err := e.Runner.RunTool(ctx, t.Community, t.Deployment, call.ID, in.Code)
	if err != nil {
		if ctx.Err() != nil {
			return Block{}, ctx.Err()
		}
		e.log().Warn("server-side run failed", slog.String("community", t.Community.ID), slog.Any("error", err))
		text := fmt.Sprintf(msgServerBusy, err)
		var stopped interface{ RunStopped() bool }
		if errors.As(err, &stopped) && stopped.RunStopped() {
			text = msgRunStopped
		}
		if err := sink.Send(map[string]any{"event": "tool_end", "name": call.Name, "output": text, "call_id": call.ID}); err != nil {
			return Block{}, err
		}
		return errorResult(call.ID, text), nil
	}
	if len(files) > 0 {
		err := e.Store.PutArtifacts(ctx, t.Community.ID, id, call.ID, files)
		switch {
		case errors.Is(err, store.ErrArtifactBudget):
			// As the browser does when its workspace is full: the run stands, its files are not
			// kept, and its stderr says so.
			if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
				res.Stderr += "\n"
			}
			res.Stderr += msgFilesNotKept
			res.Artifacts = nil
		case err != nil:
			e.log().Error("keeping a run's files failed", slog.String("community", t.Community.ID), slog.Any("error", err))
		}
	}
	text := res.Text()
	// call_id and artifacts (not in the reference's events) let a client fetch the run's files
	// from /{c}/sessions/{session}/artifacts/{call_id}/{path}.
	if err := sink.Send(map[string]any{"event": "tool_end", "name": call.Name, "output": text, "call_id": call.ID, "artifacts": nonNil(res.Artifacts)}); err != nil {
		return Block{}, err
	}
	return Block{Type: BlockToolResult, ToolUseID: call.ID, IsError: res.IsError(), Content: []Block{{Type: BlockText, Text: text}}}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func errorResult(callID, text string) Block {
	return Block{Type: BlockToolResult, ToolUseID: callID, IsError: true, Content: []Block{{Type: BlockText, Text: text}}}
}

func argProblems(problems []string) string {
	s := strings.Join(problems[:min(len(problems), maxArgProblems)], "; ")
	return clip(s, maxArgProblemLen)
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// replyUsage is the usage object of done and tool_request, or nil when nothing was counted.
func replyUsage(u Usage, cost *float64) any {
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	return map[string]any{"input_tokens": u.InputTokens, "output_tokens": u.OutputTokens, "cache_read_tokens": 0,
		"cache_creation_tokens": 0, "estimated_cost": cost, "partial": false}
}

func openSession(sink Sink, id string) error {
	if err := sink.Open(id); err != nil {
		return err
	}
	return sink.Send(map[string]any{"event": "session", "session_id": id})
}

func openWithError(sink Sink, id, msg string) error {
	if err := openSession(sink, id); err != nil {
		return err
	}
	return sendError(sink, msg, "")
}

func sendError(sink Sink, msg, requestID string) error {
	ev := map[string]any{"event": "error", "message": msg}
	if requestID != "" {
		ev["request_id"] = requestID
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

// boundTools is what one request binds: configured ∩ declared, then get_full_output.
type boundTools struct {
	list   []Tool
	byName map[string]boundTool
}

type boundTool struct {
	requiresPermission bool
	// server: the server runs this tool itself (server_fallback) instead of parking it.
	server bool
	check  func(json.RawMessage) (json.RawMessage, []string)
}

var pythonSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"The Python code to run."},"description":{"type":"string","description":"One line telling the reader what the code does; shown before they allow it to run."}},"required":["code","description"]}`)

var fullOutputSchema = json.RawMessage(`{"type":"object","properties":{"call_id":{"type":"string","minLength":1,"maxLength":256,"description":"The call_id of an earlier run."},"stream":{"type":"string","enum":["stdout","stderr","traceback","figures"],"default":"stdout"},"offset":{"type":"integer","minimum":0,"default":0}},"required":["call_id"]}`)

const fullOutputDescription = "Read more of an earlier browser run's output than its result showed: its full stdout, stderr or traceback, a page at a time from offset, or its figures again. The output stays in the reader's browser tab."

// bindTools binds the client tools of one request (config.md §3.3): configured ∩ declared,
// then get_full_output. With server_fallback (and a runner), a configured tool the caller does
// not declare is bound as a server tool instead.
func bindTools(t Turn, canRunOnServer bool) boundTools {
	out := boundTools{byName: map[string]boundTool{}}
	c := t.Community
	if t.ToolsOff || t.NoTools || c.Extensions == nil || c.Runtime == nil || c.Runtime.Python == nil {
		return out
	}
	fallback := canRunOnServer && c.Runtime.Python.ServerFallback
	python := false
	for _, ct := range c.Extensions.ClientTools {
		if ct.Runtime != "python" {
			continue
		}
		declared := slices.Contains(t.Declared, ct.Name)
		if !declared && !fallback {
			continue
		}
		python = python || declared
		out.list = append(out.list, Tool{Name: ct.Name, Description: ct.Description, Schema: pythonSchema, RunsOnServer: !declared})
		out.byName[ct.Name] = boundTool{requiresPermission: ct.RequiresPermission, server: !declared, check: checkPythonArgs}
	}
	if python && slices.Contains(t.Declared, fullOutputTool) {
		out.list = append(out.list, Tool{Name: fullOutputTool, Description: fullOutputDescription, Schema: fullOutputSchema})
		out.byName[fullOutputTool] = boundTool{requiresPermission: false, check: checkFullOutputArgs}
	}
	return out
}

func decodeArgs(input json.RawMessage) (map[string]any, []string) {
	var m map[string]any
	if err := json.Unmarshal(input, &m); err != nil || m == nil {
		return nil, []string{"input: must be a JSON object"}
	}
	return m, nil
}

func checkPythonArgs(input json.RawMessage) (json.RawMessage, []string) {
	m, problems := decodeArgs(input)
	if problems != nil {
		return nil, problems
	}
	out := map[string]string{}
	for _, k := range []string{"code", "description"} {
		v, ok := m[k]
		s, isStr := v.(string)
		switch {
		case !ok:
			problems = append(problems, k+": Field required")
		case !isStr:
			problems = append(problems, k+": Input should be a valid string")
		default:
			out[k] = s
		}
	}
	if problems != nil {
		return nil, problems
	}
	b, _ := json.Marshal(out)
	return b, nil
}

func checkFullOutputArgs(input json.RawMessage) (json.RawMessage, []string) {
	m, problems := decodeArgs(input)
	if problems != nil {
		return nil, problems
	}
	out := map[string]any{"stream": "stdout", "offset": 0}
	id, ok := m["call_id"].(string)
	switch {
	case m["call_id"] == nil:
		problems = append(problems, "call_id: Field required")
	case !ok:
		problems = append(problems, "call_id: Input should be a valid string")
	case len([]rune(id)) < 1 || len([]rune(id)) > int(limits.MaxCallIDChars):
		problems = append(problems, fmt.Sprintf("call_id: String should have 1 to %d characters", limits.MaxCallIDChars))
	default:
		out["call_id"] = id
	}
	if v, set := m["stream"]; set {
		s, _ := v.(string)
		if !slices.Contains([]string{"stdout", "stderr", "traceback", "figures"}, s) {
			problems = append(problems, "stream: Input should be 'stdout', 'stderr', 'traceback' or 'figures'")
		} else {
			out["stream"] = s
		}
	}
	if v, set := m["offset"]; set {
		f, ok := v.(float64)
		if !ok || f < 0 || f != float64(int64(f)) {
			problems = append(problems, "offset: Input should be a whole number greater than or equal to 0")
		} else {
			out["offset"] = int64(f)
		}
	}
	if problems != nil {
		return nil, problems
	}
	b, _ := json.Marshal(out)
	return b, nil
}
