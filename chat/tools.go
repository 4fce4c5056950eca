package chat

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"

	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// boundTools is what one request binds: configured ∩ declared, then get_full_output.
type boundTools struct {
	list   []Tool
	byName map[string]boundTool
}

type boundTool struct {
	requiresPermission bool
	check              func(json.RawMessage) (json.RawMessage, []string)
	// run carries out a checked call of the tool: one method of turn per kind of tool (the
	// browser runs it, the server runs it), so a new kind is one more method.
	run func(r *turn, ctx context.Context, b *batch, call checkedCall) error
	// mcp: a tool of an MCP server, counted against the reply's MCP budget, not its runs.
	mcp bool
}

// checkedCall is a call of a bound tool whose arguments passed its check.
type checkedCall struct {
	Call
	// Args are the checked arguments, as the tool's runner reads them.
	Args               json.RawMessage
	RequiresPermission bool
}

var pythonSchema = json.RawMessage(`{"type":"object","properties":{"code":{"type":"string","description":"The Python code to run."},"description":{"type":"string","description":"One line telling the reader what the code does; shown before they allow it to run."}},"required":["code","description"]}`)

var fullOutputSchema = json.RawMessage(`{"type":"object","properties":{"call_id":{"type":"string","minLength":1,"maxLength":256,"description":"The call_id of an earlier run."},"stream":{"type":"string","enum":["stdout","stderr","traceback","figures"],"default":"stdout"},"offset":{"type":"integer","minimum":0,"default":0}},"required":["call_id"]}`)

const fullOutputDescription = "Read more of an earlier browser run's output than its result showed: its full stdout, stderr or traceback, a page at a time from offset, or its figures again. The output stays in the reader's browser tab."

// bindTools binds the client tools of one request (config.md §3.3): configured ∩ declared,
// then get_full_output. With server_fallback (and a runner), a configured tool the caller does
// not declare is bound as a server tool instead.
func bindTools(t Turn, canRunOnServer bool, serverNote string) boundTools {
	out := boundTools{byName: map[string]boundTool{}}
	c := t.Community
	if t.ToolsOff || t.NoClientTools || c.Extensions == nil || c.Runtime == nil || c.Runtime.Python == nil {
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
		desc := ct.Description
		if !declared && serverNote != "" {
			desc += "\n\n" + serverNote // where it runs, and what that Python has
		}
		out.list = append(out.list, Tool{Name: ct.Name, Description: desc, Schema: pythonSchema, RunsOnServer: !declared})
		run := (*turn).parkForBrowser
		if !declared {
			run = (*turn).runOnServer
		}
		out.byName[ct.Name] = boundTool{requiresPermission: ct.RequiresPermission, check: checkPythonArgs, run: run}
	}
	if python && slices.Contains(t.Declared, fullOutputTool) {
		out.list = append(out.list, Tool{Name: fullOutputTool, Description: fullOutputDescription, Schema: fullOutputSchema})
		out.byName[fullOutputTool] = boundTool{requiresPermission: false, check: checkFullOutputArgs, run: (*turn).parkForBrowser}
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

// parkForBrowser keeps the reply's one browser-run call, to be parked when the batch is done;
// another in the same batch is answered that only one runs per turn.
func (r *turn) parkForBrowser(_ context.Context, b *batch, call checkedCall) error {
	if b.parked != nil {
		b.refuse(call.ID, msgOnlyOne)
		return nil
	}
	b.parked = &store.ParkedCall{CallID: call.ID, Tool: call.Name, Args: call.Args, RequiresPermission: call.RequiresPermission, RunsBefore: r.runs, MCPCallsBefore: r.mcpCalls, CreatedAt: r.e.now()}
	return nil
}

// msgFilesNotKept ends a server run's stderr when its saved files did not fit in the server's
// storage for run files.
const msgFilesNotKept = "osa: the files this run saved were not kept: workspace_full (the server's storage for run files is full)\n"

// msgRunStopped is what the model reads when a server run was stopped part way (its worker
// process ended): unlike msgServerBusy it must not say that nothing ran.
const msgRunStopped = "The server's Python stopped this run: its worker process ended unexpectedly. The code may have partly run; nothing it printed or saved was kept. Do not assume it ran to the end."

// msgServerBusy is what the model reads when the server's Python cannot take the run.
const msgServerBusy = "The server's Python could not run this code: %s. Nothing was run."

// runOnServer runs a tool the server runs itself (server_fallback) now, in its own engine; it
// counts as a browser run of this reply.
func (r *turn) runOnServer(ctx context.Context, b *batch, call checkedCall) error {
	r.runs++
	block, err := r.serverRun(ctx, call)
	if err != nil {
		return err
	}
	b.results = append(b.results, block)
	return nil
}

// runInput is what a python tool's checked arguments hold.
type runInput struct {
	Code        string `json:"code"`
	Description string `json:"description"`
}

// serverRun runs one client-tool call in the server's engine, with the session's attached
// files at /data and with tool_start and tool_end events, keeps the files it saved and a record
// of it with the session, and returns the tool result the model reads: the same fenced text a
// browser run gives.
func (r *turn) serverRun(ctx context.Context, call checkedCall) (Block, error) {
	sink := r.sink
	var in runInput
	_ = json.Unmarshal(call.Args, &in)
	var input any
	_ = json.Unmarshal(call.Args, &input)
	if err := sink.Send(ToolStartEvent{Name: call.Name, Input: input, CallID: call.ID}); err != nil {
		return Block{}, err
	}
	res, files, err := r.runTool(ctx, call.ID, in.Code)
	if err != nil {
		return r.serverRunFailed(ctx, call, in, err)
	}
	var kept []string
	res, kept = r.keepFiles(ctx, call.ID, res, files)
	r.recordRun(ctx, store.RunRecord{CallID: call.ID, Status: res.Status, Description: in.Description, Code: in.Code,
		Stdout: res.Stdout, Stderr: res.Stderr, Summary: res.Summary, Files: kept})
	text := res.Text()
	// call_id and artifacts (not in the reference's events) let a client fetch the run's files
	// from /{c}/sessions/{session}/artifacts/{call_id}/{path}.
	if err := sink.Send(ToolEndEvent{Name: call.Name, Output: text, CallID: call.ID, Artifacts: nonNil(res.Artifacts)}); err != nil {
		return Block{}, err
	}
	return Block{Type: BlockToolResult, ToolUseID: call.ID, IsError: res.IsError(), Content: []Block{{Type: BlockText, Text: text}}}, nil
}

// runTool reads the session's attached files and runs code with them.
func (r *turn) runTool(ctx context.Context, callID, code string) (toolresults.Result, map[string][]byte, error) {
	e, t := r.e, r.t
	data, err := e.runData(ctx, t.Community, r.id)
	if err != nil {
		if ctx.Err() != nil {
			return toolresults.Result{}, nil, ctx.Err()
		}
		e.log().Error("reading a session's files for a run failed", slog.String("community", t.Community.ID), slog.Any("error", err))
		return toolresults.Result{}, nil, errFilesUnreadable
	}
	return e.Runner.RunTool(ctx, t.Community, t.Deployment, r.id, callID, code, data)
}

// serverRunFailed answers a server run that did not give a result: nothing ran (the server
// could not take it), or its worker ended part way, which is recorded as a failed run.
func (r *turn) serverRunFailed(ctx context.Context, call checkedCall, in runInput, err error) (Block, error) {
	if ctx.Err() != nil {
		return Block{}, ctx.Err()
	}
	r.e.log().Warn("server-side run failed", slog.String("community", r.t.Community.ID), slog.Any("error", err))
	text := fmt.Sprintf(msgServerBusy, err)
	var stopped interface{ RunStopped() bool }
	if errors.As(err, &stopped) && stopped.RunStopped() {
		text = msgRunStopped
		r.recordRun(ctx, store.RunRecord{CallID: call.ID, Status: toolresults.StatusError, Description: in.Description, Code: in.Code, Stderr: text})
	}
	if err := r.sink.Send(ToolEndEvent{Name: call.Name, Output: text, CallID: call.ID}); err != nil {
		return Block{}, err
	}
	return errorResult(call.ID, text), nil
}

// keepFiles keeps the files a run saved with the session and returns the result the model
// reads and the paths kept (none when the store refused them).
func (r *turn) keepFiles(ctx context.Context, callID string, res toolresults.Result, files map[string][]byte) (toolresults.Result, []string) {
	if len(files) == 0 {
		return res, nil
	}
	err := r.e.Store.PutArtifacts(ctx, r.t.Community.ID, r.id, callID, files)
	switch {
	case errors.Is(err, store.ErrArtifactBudget):
		// As the browser does when its workspace is full: the run stands, its files are not
		// kept, and its stderr says so.
		if res.Stderr != "" && !strings.HasSuffix(res.Stderr, "\n") {
			res.Stderr += "\n"
		}
		res.Stderr += msgFilesNotKept
		res.Artifacts = nil
		return res, nil
	case err != nil:
		r.e.log().Error("keeping a run's files failed", slog.String("community", r.t.Community.ID), slog.Any("error", err))
		return res, nil
	}
	return res, slices.Sorted(maps.Keys(files))
}

// recordRun keeps a record of a server run for the session's manifest and export: its summary
// is the runtime's short summary line (the one inside the model's result), not the whole text
// the model read. A record that cannot be kept is logged; the turn goes on.
func (r *turn) recordRun(ctx context.Context, rec store.RunRecord) {
	// Kept even when the reader went away: the run happened.
	if _, err := r.e.Store.PutRun(context.WithoutCancel(ctx), r.t.Community.ID, r.id, rec); err != nil {
		r.e.log().Error("recording a server run failed", slog.String("community", r.t.Community.ID), slog.String("call_id", rec.CallID), slog.Any("error", err))
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func argProblems(problems []string) string {
	s := strings.Join(problems[:min(len(problems), maxArgProblems)], "; ")
	return clip(s, maxArgProblemLen)
}
