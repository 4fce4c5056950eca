package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
)

// turn is one run of a reply: the model is called until it answers (done), parks a browser
// call (tool_request), or fails (error). Chat and Resume build it once the session is open
// and the route is known; its methods are the steps of the run.
type turn struct {
	e       *Engine
	t       Turn
	id      string // the session
	route   Route
	history []Message
	// runs is how many browser (or server) runs this reply has already made.
	runs int
	// mcpCalls is how many MCP tool calls this reply has made (across its resumes).
	mcpCalls int
	sink     Sink

	tools  boundTools
	system string
	// parent is the request's context, which tells a turn that ran out of time from a
	// reader who went away.
	parent  context.Context
	retried bool

	// The run's text and usage add up over its model calls: done.content and tool_request's
	// content are everything this request streamed, which the widget shows in place of it.
	text  strings.Builder
	usage Usage
	cost  *float64
	// cites are the sources the reply cited, numbered across its model calls and resumes.
	cites replyCites
}

// batch is what one model reply's tool calls come to: the assistant message that made them,
// the results given so far, and the browser call to park, if any.
type batch struct {
	assistant Message
	results   []Block
	parked    *store.ParkedCall
}

// refuse answers a call that is not run with an error result the model reads.
func (b *batch) refuse(callID, text string) {
	b.results = append(b.results, errorResult(callID, text))
}

// modelCall is what one model call streamed.
type modelCall struct {
	text  *callText
	calls []Call
	stop  string
	// produced: text or a tool call came, so the call is not tried again.
	produced bool
}

// loop runs the turn's model calls, at most maxStepsPerRun of them.
func (r *turn) loop(ctx context.Context) error {
	// A turn ends before its lock can expire, so no second turn of the session ever overlaps
	// it; the reader gets an error event rather than a stream that stops.
	r.parent = ctx
	ctx, cancel := context.WithTimeout(ctx, turnLockTTL-turnMargin)
	defer cancel()
	r.tools = bindTools(r.t, r.e.Runner != nil, r.e.serverNote())
	r.bindKnowledge()
	r.bindSourceTools() // before the documentation tools, which bindKnowledge put first
	r.bindMCP()
	r.system = r.e.systemPrompt(r.t.Community, r.t.Page, CitationPathOf(r.route.Provider))
	r.cites = replyCitations(r.history)
	for step := range maxStepsPerRun {
		if ended, err := r.step(ctx, step == 0); ended {
			return err
		}
	}
	return r.fail(fmt.Sprintf(stepLimitFmt, r.route.Model))
}

// step makes one model call and acts on its reply; ended says the run is over, with err what
// the turn returns.
func (r *turn) step(ctx context.Context, first bool) (ended bool, err error) {
	mc, err := r.callModel(ctx, first)
	if err != nil {
		if ctx.Err() != nil {
			return true, r.gone()
		}
		return true, r.fail(providerErrorMessage(err, r.route))
	}
	r.text.WriteString(mc.text.String())
	if len(mc.calls) == 0 {
		return true, r.finish(ctx, mc.text.blocks(), mc.stop)
	}
	return r.dispatch(ctx, mc.text.blocks(), mc.calls)
}

// callModel streams one model call. A call that fails fast, before the turn produced
// anything, is tried once more after a second; never after output has started, never twice.
func (r *turn) callModel(ctx context.Context, first bool) (*modelCall, error) {
	for {
		mc, err := r.stream(ctx)
		if err == nil || ctx.Err() != nil {
			return mc, err
		}
		r.e.log().Warn("model call failed", slog.String("community", r.t.Community.ID), slog.String("model", r.route.Model), slog.Any("error", err))
		if !first || mc.produced || r.retried {
			return mc, err
		}
		r.retried = true
		select {
		case <-time.After(retryDelay):
		case <-ctx.Done():
			return mc, ctx.Err()
		}
	}
}

// stream makes one model call, sending its text and tool calls on as they come, and counts
// its usage.
func (r *turn) stream(ctx context.Context) (*modelCall, error) {
	mc := &modelCall{text: newCallText(r.e.log().With(slog.String("community", r.t.Community.ID), slog.String("model", r.route.Model)))}
	var usage Usage
	msgs := trimHistory(r.history, maxConversationTokens)
	if CitationPathOf(r.route.Provider) == CitePlain {
		msgs = plainMessages(msgs) // passages kept from another provider, as text
	}
	req := Request{Model: r.route.Name, System: r.system, Messages: msgs, Tools: r.tools.list, ReasoningEffort: deref(r.t.Community.ReasoningEffort)}
	err := r.route.Provider.Stream(ctx, req, func(ev Event) error {
		mc.produced = mc.produced || (ev.Kind == TextDelta && ev.Text != "") || ev.Kind == ToolCall
		// Text and the markers of what it cites (citations_markers.go).
		for _, out := range mc.text.handle(ev, &r.cites) {
			if err := r.sink.Send(out); err != nil {
				return err
			}
		}
		switch ev.Kind {
		case ToolCall:
			mc.calls = append(mc.calls, *ev.Call)
			return r.sink.Send(ToolCallEvent{Name: clip(ev.Call.Name, 128)})
		case Done:
			mc.stop, usage = ev.StopReason, ev.Usage
		}
		return nil
	})
	r.count(ctx, usage)
	return mc, err
}

// count adds one model call's usage to the run's, and its cost to the community's budget.
func (r *turn) count(ctx context.Context, usage Usage) {
	// Recorded even when the reader went away: the platform paid for the tokens.
	cost := r.e.Budget.Record(context.WithoutCancel(ctx), r.t.Community, r.route, usage)
	r.usage.InputTokens += usage.InputTokens
	r.usage.OutputTokens += usage.OutputTokens
	if cost != nil {
		total := *cost
		if r.cost != nil {
			total += *r.cost
		}
		r.cost = &total
	}
}

// finish ends the run with the model's answer: its last reply (text blocks, with their
// markers) is stored, then the warning, if any, and done.
func (r *turn) finish(ctx context.Context, reply []Block, stop string) error {
	if strings.TrimSpace(r.text.String()) == "" {
		if stop == "max_tokens" {
			return r.fail(msgOutOfRoom)
		}
		return r.fail(msgEmpty)
	}
	if strings.TrimSpace(blocksText(reply)) != "" {
		if _, err := r.e.appendMsgs(ctx, r.t.Community.ID, r.id, Message{Role: RoleAssistant, Content: reply}); err != nil {
			return r.fail(msgFailed)
		}
	}
	if w := replyWarning(stop == "max_tokens", conversationTokens(r.history) > longConversationTokens); w != nil {
		if err := r.sink.Send(*w); err != nil {
			return err
		}
	}
	return r.sink.Send(DoneEvent{SessionID: r.id, RequestID: r.t.RequestID, Model: r.route.Model,
		Content: r.text.String(), Citations: r.cites.list, Usage: replyUsage(r.usage, r.cost)})
}

// dispatch carries out the reply's tool calls, each by its tool's kind. When one is a browser
// call the run ends by parking it; otherwise the calls and their results are stored and the
// model is called again.
func (r *turn) dispatch(ctx context.Context, reply []Block, calls []Call) (ended bool, err error) {
	b := &batch{assistant: Message{Role: RoleAssistant, Content: reply}}
	for _, call := range calls {
		if len(call.Input) == 0 {
			call.Input = json.RawMessage("{}")
		}
		b.assistant.Content = append(b.assistant.Content, Block{Type: BlockToolUse, ToolUseID: call.ID, Name: call.Name, Input: call.Input})
		if err := r.dispatchCall(ctx, b, call); err != nil {
			if ctx.Err() != nil {
				return true, r.gone()
			}
			return true, err
		}
	}
	if b.parked != nil {
		return true, r.park(ctx, b)
	}
	next := Message{Role: RoleUser, Content: b.results}
	if _, err := r.e.appendMsgs(ctx, r.t.Community.ID, r.id, b.assistant, next); err != nil {
		return true, r.fail(msgFailed)
	}
	r.history = append(r.history, b.assistant, next)
	return false, nil
}

// dispatchCall answers a call that cannot run (an unknown tool, invalid arguments, no runs
// left in this reply) with an error result, and hands any other to its tool's kind.
func (r *turn) dispatchCall(ctx context.Context, b *batch, call Call) error {
	tool, bound := r.tools.byName[call.Name]
	if !bound {
		b.refuse(call.ID, fmt.Sprintf(unknownToolFmt, call.Name))
		return nil
	}
	args, problems := tool.check(call.Input)
	switch {
	case len(problems) > 0:
		b.refuse(call.ID, fmt.Sprintf(invalidArgsFmt, call.Name, argProblems(problems)))
	case !tool.mcp && r.runs >= limits.MaxBrowserRunsPerReply:
		b.refuse(call.ID, msgBudgetSpent)
	default:
		return tool.run(r, ctx, b, checkedCall{Call: call, Args: args, RequiresPermission: tool.requiresPermission})
	}
	return nil
}

// park stores the assistant message, parks the browser call with the batch's other results,
// and ends the run with tool_request.
func (r *turn) park(ctx context.Context, b *batch) error {
	c, id, call := r.t.Community.ID, r.id, *b.parked
	if len(b.results) > 0 {
		carry, err := json.Marshal(b.results)
		if err != nil {
			return r.fail(msgParkFailed)
		}
		call.Carry = carry
	}
	msg, err := marshalMsg(b.assistant)
	if err != nil {
		return r.fail(msgParkFailed)
	}
	// The assistant message and the parked call are written in one step: if it fails, neither
	// or both are there (a lost reply), and in the second case the next message closes the call.
	err = r.e.Store.Park(ctx, c, id, call, msg)
	if errors.Is(err, store.ErrAlreadyParked) {
		// A different call still parked is replaced: it is closed first, so each tool_use is
		// followed by its own result. (Under the turn lock this does not happen: a turn closes
		// or claims the parked call before it runs.)
		if old, ok, perr := r.e.Store.Parked(ctx, c, id); perr == nil && ok {
			if _, cerr := r.e.closeCall(ctx, c, id, old, msgReplaced); cerr != nil {
				return r.fail(msgParkFailed)
			}
		}
		err = r.e.Store.Park(ctx, c, id, call, msg)
	}
	if err != nil {
		r.e.log().Warn("parking a browser call failed", slog.String("community", c), slog.Any("error", err))
		return r.fail(msgParkFailed)
	}
	var args any
	_ = json.Unmarshal(call.Args, &args)
	return r.sink.Send(ToolRequestEvent{SessionID: id, CallID: call.CallID, Tool: call.Tool, Args: args,
		RequiresPermission: call.RequiresPermission, Content: r.text.String(), Citations: r.cites.list, Usage: replyUsage(r.usage, r.cost), Model: r.route.Model})
}

// fail ends the run with an error event.
func (r *turn) fail(msg string) error { return sendError(r.sink, msg, r.t.RequestID) }

// gone ends a run whose context is done: an error event when it ran out of time, nothing when
// the reader went away.
func (r *turn) gone() error {
	if r.parent.Err() == nil {
		return r.fail(msgTurnTooLong)
	}
	return nil
}
