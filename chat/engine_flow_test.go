package chat

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/osc-assistant/assistant/chat/chattest"
	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/limits"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/toolresults"
)

// eventSink keeps a turn's events as sent.
type eventSink struct {
	opened string
	events []StreamEvent
}

func (s *eventSink) Open(id string) error { s.opened = id; return nil }
func (s *eventSink) Send(ev StreamEvent) error {
	s.events = append(s.events, ev)
	return nil
}

// names is the events' names, in order, a run of content events as one.
func (s *eventSink) names() string {
	var n []string
	for _, ev := range s.events {
		if name := ev.EventName(); len(n) == 0 || name != "content" || n[len(n)-1] != name {
			n = append(n, name)
		}
	}
	return strings.Join(n, " ")
}

// last is the last event (the terminal one of a stream).
func (s *eventSink) last() StreamEvent {
	if len(s.events) == 0 {
		return nil
	}
	return s.events[len(s.events)-1]
}

// parkFails is a session store whose Park fails.
type parkFails struct{ SessionStore }

func (parkFails) Park(context.Context, string, string, store.ParkedCall, ...json.RawMessage) error {
	return store.ErrUnavailable
}

// browserCommunity binds execute_code in the browser when the caller declares it.
func browserCommunity() *config.Community {
	return &config.Community{
		ID:         "hed",
		Extensions: &config.Extensions{ClientTools: []config.ClientTool{{Name: "execute_code", Runtime: "python", RequiresPermission: true}}},
		Runtime:    &config.Runtime{Python: &config.PythonRuntime{}},
	}
}

func testEngine(st SessionStore, env map[string]string) *Engine {
	return &Engine{Store: st, Models: &Models{Getenv: func(k string) string { return env[k] }, Default: DefaultScripted},
		Budget: &Budget{Store: store.NewMemory(store.Limits{}, nil, nil)}}
}

const runCode = "Run this:\n```python\nprint(6*7)\n```"

// storedHistory is the session's history, decoded.
func storedHistory(t *testing.T, st SessionStore, c, id string) []Message {
	t.Helper()
	raw, err := st.History(context.Background(), c, id)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]Message, len(raw))
	for i, r := range raw {
		if err := json.Unmarshal(r, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// turnS1 is a turn of session s1 that declares execute_code, from an allowed origin.
var turnS1 = Turn{Community: browserCommunity(), SessionID: "s1", Declared: []string{"execute_code"}, OriginOK: true, RequestID: "req-1"}

// parkCall runs a /chat that parks a browser call, and returns the call.
func parkCall(t *testing.T, e *Engine) store.ParkedCall {
	t.Helper()
	if err := e.Chat(t.Context(), turnS1, runCode, &eventSink{}); err != nil {
		t.Fatal(err)
	}
	call, ok, err := e.Store.Parked(t.Context(), "hed", "s1")
	if err != nil || !ok {
		t.Fatalf("no parked call: %v", err)
	}
	return call
}

func okResult(callID string) *toolresults.Result {
	return &toolresults.Result{CallID: callID, Status: "ok", Stdout: "42\n"}
}

// engineTurnCases are the requests TestEngineTurns makes, each on a new memory store.
var engineTurnCases = []struct {
	name string
	// store wraps the memory store (nil: as it is).
	store func(SessionStore) SessionStore
	// do is the request, after any earlier ones it makes itself.
	do         func(t *testing.T, e *Engine, sink Sink) error
	wantErr    error
	wantEvents string
	// check looks at the last event and the session afterwards.
	check func(t *testing.T, e *Engine, sink *eventSink)
}{{
	name: "chat parks a browser call",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		return e.Chat(t.Context(), turnS1, runCode, sink)
	},
	wantEvents: "session content tool_call tool_request",
	check: func(t *testing.T, e *Engine, sink *eventSink) {
		req := sink.last().(ToolRequestEvent)
		call, ok, _ := e.Store.Parked(t.Context(), "hed", "s1")
		if !ok || req.CallID != call.CallID || req.Tool != "execute_code" || !req.RequiresPermission || req.SessionID != "s1" ||
			req.Model != DefaultScripted || req.Content != "I will run your code in your browser." || call.RunsBefore != 0 {
			t.Errorf("tool_request %+v, parked %+v", req, call)
		}
		if args, _ := req.Args.(map[string]any); args["code"] != "print(6*7)\n" {
			t.Errorf("args %v", req.Args)
		}
		h := storedHistory(t, e.Store, "hed", "s1")
		if len(h) != 2 || h[1].Role != RoleAssistant || h[1].Content[len(h[1].Content)-1].Type != BlockToolUse {
			t.Errorf("history %+v", h)
		}
	},
}, {
	name: "resume answers the parked call",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		call := parkCall(t, e)
		return e.Resume(t.Context(), turnS1, okResult(call.CallID), sink)
	},
	wantEvents: "session content done",
	check: func(t *testing.T, e *Engine, sink *eventSink) {
		done := sink.last().(DoneEvent)
		if done.Content != "The code finished with status ok. It printed:\n\n```\n42\n```" || done.SessionID != "s1" || done.RequestID != "req-1" || done.Usage != nil {
			t.Errorf("done %+v", done)
		}
		if _, ok, _ := e.Store.Parked(t.Context(), "hed", "s1"); ok {
			t.Error("the call is still parked")
		}
		h := storedHistory(t, e.Store, "hed", "s1")
		if len(h) != 4 || h[2].Content[0].Type != BlockToolResult || h[2].Content[0].IsError || h[3].Role != RoleAssistant {
			t.Errorf("history %+v", h)
		}
	},
}, {
	name: "a second resume of the call finds nothing",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		call := parkCall(t, e)
		if err := e.Resume(t.Context(), turnS1, okResult(call.CallID), &eventSink{}); err != nil {
			t.Fatal(err)
		}
		return e.Resume(t.Context(), turnS1, okResult(call.CallID), sink)
	},
	wantErr: ErrNoOutstandingCall,
}, {
	name: "busy session",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		// Another turn of the session holds its lock.
		if _, _, err := e.Store.EnsureSession(t.Context(), "hed", "s1"); err != nil {
			t.Fatal(err)
		}
		unlock, err := e.Store.Lock(t.Context(), "hed", "s1", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		defer unlock()
		return e.Chat(t.Context(), turnS1, "hello", sink)
	},
	wantEvents: "session error",
	check: func(t *testing.T, e *Engine, sink *eventSink) {
		if ev := sink.last().(ErrorEvent); ev.Message != msgBusy || ev.RequestID != "" || ev.Refusal != 0 {
			t.Errorf("error %+v", ev)
		}
		if h := storedHistory(t, e.Store, "hed", "s1"); len(h) != 0 {
			t.Errorf("a busy turn wrote %d messages", len(h))
		}
	},
}, {
	name: "resume of an unknown session",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		return e.Resume(t.Context(), turnS1, okResult("toolu_x"), sink)
	},
	wantErr: ErrSessionNotFound,
}, {
	name: "resume without an outstanding call",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		if err := e.Chat(t.Context(), turnS1, "hello", &eventSink{}); err != nil {
			t.Fatal(err)
		}
		return e.Resume(t.Context(), turnS1, okResult("toolu_x"), sink)
	},
	wantErr: ErrNoOutstandingCall,
}, {
	name: "resume of another call keeps the parked one",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		parkCall(t, e)
		return e.Resume(t.Context(), turnS1, okResult("toolu_other"), sink)
	},
	wantErr: ErrNoOutstandingCall,
	check: func(t *testing.T, e *Engine, _ *eventSink) {
		if _, ok, _ := e.Store.Parked(t.Context(), "hed", "s1"); !ok {
			t.Error("the parked call is gone")
		}
	},
}, {
	name: "session full",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		if _, _, err := e.Store.EnsureSession(t.Context(), "hed", "s1"); err != nil {
			t.Fatal(err)
		}
		msg, _ := marshalMsg(Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "x"}}})
		for range limits.MaxSessionMessages - 1 {
			if _, err := e.Store.Append(t.Context(), "hed", "s1", msg); err != nil {
				t.Fatal(err)
			}
		}
		return e.Chat(t.Context(), turnS1, "hello", sink)
	},
	wantErr: ErrSessionFull,
}, {
	name: "a new message abandons the parked call",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		parkCall(t, e)
		return e.Chat(t.Context(), turnS1, "hello", sink)
	},
	wantEvents: "session content done",
	check: func(t *testing.T, e *Engine, _ *eventSink) {
		if _, ok, _ := e.Store.Parked(t.Context(), "hed", "s1"); ok {
			t.Error("the call is still parked")
		}
		h := storedHistory(t, e.Store, "hed", "s1")
		if len(h) != 5 {
			t.Fatalf("history %+v", h)
		}
		closing := h[2].Content[0]
		if closing.Type != BlockToolResult || !closing.IsError || closing.Content[0].Text != msgMovedOn || textOf(h[3]) != "hello" {
			t.Errorf("history %+v", h)
		}
	},
}, {
	name: "resume after the reader moved on",
	do: func(t *testing.T, e *Engine, sink Sink) error {
		call := parkCall(t, e)
		if err := e.Chat(t.Context(), turnS1, "hello", &eventSink{}); err != nil {
			t.Fatal(err)
		}
		return e.Resume(t.Context(), turnS1, okResult(call.CallID), sink)
	},
	wantErr: ErrNoOutstandingCall,
}, {
	name:  "a failed park is an error event and writes nothing",
	store: func(st SessionStore) SessionStore { return parkFails{st} },
	do: func(t *testing.T, e *Engine, sink Sink) error {
		return e.Chat(t.Context(), turnS1, runCode, sink)
	},
	wantEvents: "session content tool_call error",
	check: func(t *testing.T, e *Engine, sink *eventSink) {
		if ev := sink.last().(ErrorEvent); ev.Message != msgParkFailed || ev.RequestID != "req-1" {
			t.Errorf("error %+v", ev)
		}
		if h := storedHistory(t, e.Store, "hed", "s1"); len(h) != 1 {
			t.Errorf("history %+v", h)
		}
	},
}}

// TestEngineTurns drives Chat and Resume against the memory store with the scripted model:
// what each request streams, returns, and leaves in the session.
func TestEngineTurns(t *testing.T) {
	for _, tc := range engineTurnCases {
		t.Run(tc.name, func(t *testing.T) {
			var st SessionStore = store.NewMemory(store.Limits{}, nil, nil)
			if tc.store != nil {
				st = tc.store(st)
			}
			e := testEngine(st, nil)
			sink := &eventSink{}
			err := tc.do(t, e, sink)
			if !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
				t.Fatalf("err = %v, want %v", err, tc.wantErr)
			}
			if got := sink.names(); got != tc.wantEvents {
				t.Errorf("events %q, want %q", got, tc.wantEvents)
			}
			if tc.wantEvents != "" && sink.opened != "s1" {
				t.Errorf("opened %q", sink.opened)
			}
			if tc.check != nil {
				tc.check(t, e, sink)
			}
		})
	}
}

// TestEngineRefusals: a turn the platform may not pay for is refused after the session event,
// with the refusal's code on the error event, and the reader's message kept.
func TestEngineRefusals(t *testing.T) {
	ctx := context.Background()
	budget := &config.Budget{DailyLimitUSD: 1, MonthlyLimitUSD: 10, AlertThresholdPct: 80}
	cases := []struct {
		name     string
		originOK bool
		spent    float64
		keys     Keys
		want     RefusalCode
	}{
		{"origin not allowed", false, 0, Keys{}, CodeKeyRequired},
		{"over budget", true, 2, Keys{}, CodeBudget},
		{"the reader's own key pays", false, 2, Keys{Anthropic: "sk-reader"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := store.NewMemory(store.Limits{}, nil, nil)
			e := testEngine(st, map[string]string{"ANTHROPIC_API_KEY": "sk-platform", "ANTHROPIC_BASE_URL": "http://127.0.0.1:1"})
			e.Budget.Store = st
			if _, _, err := st.AddCost(ctx, "hed", tc.spent); err != nil {
				t.Fatal(err)
			}
			c := browserCommunity()
			c.DefaultModel, c.Budget = new("anthropic/claude-haiku-4-5"), budget
			r, err := e.route(ctx, Turn{Community: c, OriginOK: tc.originOK, Keys: tc.keys})
			if got := refusalOf(err); (got == nil) != (tc.want == 0) || (got != nil && got.Code != tc.want) {
				t.Fatalf("route = %+v, %v; want code %d", r, err, tc.want)
			}
			if tc.want == 0 {
				return
			}
			sink := &eventSink{}
			if err := e.Chat(ctx, Turn{Community: c, SessionID: "s1", OriginOK: tc.originOK, RequestID: "req-1"}, "hello", sink); err != nil {
				t.Fatal(err)
			}
			ev, ok := sink.last().(ErrorEvent)
			if sink.names() != "session error" || !ok || ev.Refusal != tc.want || ev.Message != err.Error() || ev.RequestID != "req-1" {
				t.Errorf("events %q, last %+v", sink.names(), sink.last())
			}
			if h := storedHistory(t, st, "hed", "s1"); len(h) != 1 {
				t.Errorf("history %+v", h)
			}
		})
	}
}

// okRunner runs every server call successfully, saving one file.
type okRunner struct{}

func (okRunner) RunTool(_ context.Context, _ *config.Community, _ config.Deployment, _, callID, _ string, _ map[string][]byte) (toolresults.Result, map[string][]byte, error) {
	return toolresults.Result{CallID: callID, Status: "ok", Stdout: "1\n", Artifacts: []string{"out.txt"}}, map[string][]byte{"out.txt": []byte("1")}, nil
}

// fakeModelEngine is an engine whose platform-paid model is the fake Anthropic API.
func fakeModelEngine(t *testing.T, script func(n int, req chattest.Request) chattest.Reply) (*Engine, *chattest.Anthropic) {
	t.Helper()
	api := chattest.NewAnthropic(script)
	t.Cleanup(api.Close)
	e := testEngine(store.NewMemory(store.Limits{}, nil, nil), map[string]string{"ANTHROPIC_API_KEY": "sk-platform", "ANTHROPIC_BASE_URL": api.URL})
	return e, api
}

// TestTurnDispatch: each tool call of one reply goes to its kind: an unknown tool and invalid
// arguments get error results, the first browser call is parked with the others' results, and
// a second one is refused; the resumed call brings them all to the model.
func TestTurnDispatch(t *testing.T) {
	ctx := t.Context()
	e, api := fakeModelEngine(t, func(n int, _ chattest.Request) chattest.Reply {
		if n == 0 {
			return chattest.Reply{ToolUses: []chattest.ToolUse{
				{ID: "toolu_u", Name: "web_search", Input: `{}`},
				{ID: "toolu_i", Name: "execute_code", Input: `{"code":1}`},
				{ID: "toolu_a", Name: "execute_code", Input: `{"code":"print(1)","description":"d"}`},
				{ID: "toolu_b", Name: "execute_code", Input: `{"code":"print(2)","description":"d"}`},
			}, Usage: [2]int{10, 5}}
		}
		return chattest.Reply{Text: []string{"Done."}, Usage: [2]int{20, 2}}
	})
	c := browserCommunity()
	c.DefaultModel = new("anthropic/claude-haiku-4-5")
	turn := Turn{Community: c, SessionID: "s1", Declared: []string{"execute_code"}, OriginOK: true}
	sink := &eventSink{}
	if err := e.Chat(ctx, turn, "go", sink); err != nil {
		t.Fatal(err)
	}
	if got := sink.names(); got != "session tool_call tool_call tool_call tool_call tool_request" {
		t.Fatalf("events %q", got)
	}
	req := sink.last().(ToolRequestEvent)
	if req.CallID != "toolu_a" || req.Usage == nil || req.Usage.InputTokens != 10 || req.Model != "anthropic/claude-haiku-4-5" {
		t.Errorf("tool_request %+v", req)
	}
	call, _, _ := e.Store.Parked(ctx, "hed", "s1")
	var carried []Block
	if err := json.Unmarshal(call.Carry, &carried); err != nil || len(carried) != 3 {
		t.Fatalf("carried %s (%v)", call.Carry, err)
	}
	for i, want := range []string{"Unknown tool 'web_search'", "Invalid arguments for execute_code: code: Input should be a valid string", msgOnlyOne} {
		if b := carried[i]; !b.IsError || !strings.HasPrefix(b.Content[0].Text, want) {
			t.Errorf("carried[%d] = %+v, want %q", i, b, want)
		}
	}
	sink = &eventSink{}
	if err := e.Resume(ctx, turn, &toolresults.Result{CallID: "toolu_a", Status: "ok", Stdout: "1\n"}, sink); err != nil {
		t.Fatal(err)
	}
	if done, ok := sink.last().(DoneEvent); !ok || done.Content != "Done." {
		t.Fatalf("events %q, last %+v", sink.names(), sink.last())
	}
	reqs := api.Requests()
	if len(reqs) != 2 || !reqs[1].Contains(msgOnlyOne) || !reqs[1].Contains("toolu_a") {
		t.Errorf("the resumed call did not carry the batch's results: %d requests", len(reqs))
	}
}

// TestTurnStepLimit: a server tool runs at once, with tool_start and tool_end, and a reply
// that keeps calling tools ends after maxStepsPerRun model calls with an error event.
func TestTurnStepLimit(t *testing.T) {
	ctx := t.Context()
	e, api := fakeModelEngine(t, func(n int, _ chattest.Request) chattest.Reply {
		return chattest.Reply{ToolUses: []chattest.ToolUse{{ID: "toolu_" + string(rune('a'+n)), Name: "execute_code", Input: `{"code":"print(1)","description":"d"}`}}, Usage: [2]int{1, 1}}
	})
	e.Runner = okRunner{}
	c := fallbackCommunity()
	c.DefaultModel = new("anthropic/claude-haiku-4-5")
	sink := &eventSink{}
	if err := e.Chat(ctx, Turn{Community: c, SessionID: "s1", OriginOK: true}, "go", sink); err != nil {
		t.Fatal(err)
	}
	want := "session" + strings.Repeat(" tool_call tool_start tool_end", maxStepsPerRun) + " error"
	if got := sink.names(); got != want {
		t.Fatalf("events %q, want %q", got, want)
	}
	end := sink.events[3].(ToolEndEvent)
	if end.CallID != "toolu_a" || len(end.Artifacts) != 1 || !strings.Contains(end.Output, "1") {
		t.Errorf("tool_end %+v", end)
	}
	if ev := sink.last().(ErrorEvent); ev.Message != "The current model (anthropic/claude-haiku-4-5) used all its steps without finishing. Try again, or ask for a smaller part of the task." {
		t.Errorf("error %+v", ev)
	}
	if n := len(api.Requests()); n != maxStepsPerRun {
		t.Errorf("%d model calls", n)
	}
	if h := storedHistory(t, e.Store, "nemar", "s1"); len(h) != 1+2*maxStepsPerRun {
		t.Errorf("%d messages stored", len(h))
	}
}
