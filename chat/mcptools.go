package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/osc-assistant/assistant/mcp"
	"github.com/osc-assistant/assistant/toolresults"
)

// maxMCPCallsPerReply is the default cap on the MCP tool calls of one reply.
const maxMCPCallsPerReply = 20

const (
	msgMCPBudgetSpent = "This reply has already called knowledge tools the most times one reply may; this call was not made. Answer with what the earlier calls returned."
	msgMCPFailedFmt   = "The knowledge tool %s could not be called: %s. You may try again, or answer without it."
	// msgMCPTooLargeFmt: retrying the same call would get the same answer, so it says so.
	msgMCPTooLargeFmt = "The knowledge tool %s gave an answer too large to read (%s). Calling it again the same way will not help: ask it for less (a narrower query), or answer without it."
)

// bindMCP adds the community's MCP tools to the turn's tools, unless the turn binds none. A tool
// whose name a client tool already has is left out.
func (r *turn) bindMCP() {
	if r.e.MCP == nil {
		return
	}
	for _, mt := range r.e.MCP.Tools(r.t.Community.ID) {
		if _, taken := r.tools.byName[mt.Name]; taken {
			continue
		}
		check := mt.Check
		r.tools.list = append(r.tools.list, Tool{Name: mt.Name, Description: mt.Description, Schema: mt.Schema, RunsOnServer: true})
		r.tools.byName[mt.Name] = boundTool{mcp: true, run: (*turn).runMCP, check: func(in json.RawMessage) (json.RawMessage, []string) {
			if problems := check(in); problems != nil {
				return nil, problems
			}
			return in, nil
		}}
	}
}

// runMCP calls an MCP tool now, with tool_start and tool_end events. Whatever happens to the
// call (the tool's isError, a timeout, a server gone) the model reads a tool result it can
// recover from; only the reader going away ends the turn.
func (r *turn) runMCP(ctx context.Context, b *batch, call checkedCall) error {
	limit := r.e.MCPCallsPerReply
	if limit <= 0 {
		limit = maxMCPCallsPerReply
	}
	if r.mcpCalls >= limit {
		b.refuse(call.ID, msgMCPBudgetSpent)
		return nil
	}
	r.mcpCalls++
	var input any
	_ = json.Unmarshal(call.Args, &input)
	if err := r.sink.Send(ToolStartEvent{Name: call.Name, Input: input, CallID: call.ID}); err != nil {
		return err
	}
	res, err := r.e.MCP.Call(ctx, r.t.Community.ID, call.Name, call.Args)
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	var text string
	isError := true
	if err != nil {
		r.e.log().Warn("MCP tool call failed", slog.String("community", r.t.Community.ID), slog.String("tool", call.Name), slog.Any("error", err))
		// The error may quote the server: it is fenced like a result.
		msg := msgMCPFailedFmt
		var tooLarge *mcp.TooLargeError
		if errors.As(err, &tooLarge) {
			msg = msgMCPTooLargeFmt
		}
		text = renderMCP(call.Name, fmt.Sprintf(msg, call.Name, err), true)
	} else {
		text, isError = renderMCP(call.Name, res.Text, res.IsError), res.IsError
	}
	if err := r.sink.Send(ToolEndEvent{Name: call.Name, Output: text, CallID: call.ID}); err != nil {
		return err
	}
	b.results = append(b.results, Block{Type: BlockToolResult, ToolUseID: call.ID, IsError: isError, Content: []Block{{Type: BlockText, Text: text}}})
	return nil
}

// renderMCP fences an MCP result as untrusted data, as a browser run's result is fenced.
func renderMCP(name, text string, isError bool) string {
	res := toolresults.Result{Status: toolresults.StatusOK, Summary: "Knowledge tool " + name + " (an MCP server; no code was run).", Stdout: text}
	if isError {
		res.Status = toolresults.StatusError
	}
	return res.TextUnder(toolresults.KnowledgeHeader)
}
