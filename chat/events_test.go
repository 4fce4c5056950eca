package chat

import (
	"encoding/json"
	"testing"

	"github.com/osc-assistant/assistant/tests/golden"
)

// TestEventWire: each event's JSON, exactly as it goes on the wire inside `data: …\n\n`
// (testdata/events/<case>.golden, the bytes followed by one newline; -update rewrites them). The key order, nulls,
// empty lists and left-out keys are what the widget and the reference's clients read.
func TestEventWire(t *testing.T) {
	cost := 0.0125
	usage := replyUsage(Usage{InputTokens: 1200, OutputTokens: 34}, &cost)
	cases := []struct {
		name string
		ev   StreamEvent
	}{
		{"session", SessionEvent{SessionID: "s-1"}},
		{"content", ContentEvent{Content: "a <b> & \"c\"\n\u00e9\u2028"}},
		{"tool_call", ToolCallEvent{Name: "execute_code"}},
		{"tool_start", ToolStartEvent{Name: "execute_code", Input: map[string]any{"code": "print(1)\n", "description": "prints 1"}, CallID: "toolu_1"}},
		{"tool_start_null_input", ToolStartEvent{Name: "execute_code", CallID: "toolu_1"}},
		{"tool_end", ToolEndEvent{Name: "execute_code", Output: "```\n1\n```", CallID: "toolu_1", Artifacts: []string{"out/a.png", "b.csv"}}},
		{"tool_end_no_files", ToolEndEvent{Name: "execute_code", Output: "ok", CallID: "toolu_1", Artifacts: nonNil(nil)}},
		{"tool_end_not_run", ToolEndEvent{Name: "execute_code", Output: "The server's Python could not run this code: busy. Nothing was run.", CallID: "toolu_1"}},
		{"tool_request", ToolRequestEvent{SessionID: "s-1", CallID: "toolu_2", Tool: "execute_code", Args: map[string]any{"code": "print(6*7)\n", "description": "d"},
			RequiresPermission: true, Content: "Running it.", Usage: usage, Model: "anthropic/claude-haiku-4-5"}},
		{"tool_request_no_usage", ToolRequestEvent{SessionID: "s-1", CallID: "toolu_3", Tool: "get_full_output", Args: map[string]any{"call_id": "toolu_2", "offset": 0.0, "stream": "stdout"},
			Usage: replyUsage(Usage{}, nil), Model: "scripted/demo"}},
		{"done", DoneEvent{SessionID: "s-1", RequestID: "req-1", Model: "anthropic/claude-haiku-4-5", Content: "The answer is 42.", Usage: usage}},
		{"done_unpriced", DoneEvent{SessionID: "s-1", RequestID: "req-1", Model: "openai/local", Content: "x", Usage: replyUsage(Usage{InputTokens: 5}, nil)}},
		{"done_no_usage", DoneEvent{SessionID: "s-1", Model: "scripted/demo", Content: "Hello."}},
		{"done_citations", DoneEvent{SessionID: "s-1", RequestID: "req-1", Model: "anthropic/claude-haiku-4-5", Content: "Tags go in events.tsv.[1] More context after the citation.",
			Citations: Citations{{Marker: 1, Source: "https://example.org/hed/quickstart.html", Title: "HED quickstart", CitedText: "Annotations are placed in the events.tsv file."}}}},
		{"citation", CitationEvent{Marker: 1, Source: "https://example.org/hed/quickstart.html", Title: "HED quickstart", CitedText: "Annotations are placed in the events.tsv file."}},
		{"error", ErrorEvent{Message: msgFailed, RequestID: "req-1"}},
		{"error_no_request_id", ErrorEvent{Message: msgBusy, Refusal: CodeKeyRequired}},
		{"warning_cut_off", *replyWarning(true, false)},
		{"warning_long", *replyWarning(false, true)},
		{"warning_both", *replyWarning(true, true)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.ev)
			if err != nil {
				t.Fatal(err)
			}
			var obj map[string]any
			if err := json.Unmarshal(b, &obj); err != nil || obj["event"] != tc.ev.EventName() {
				t.Errorf("event = %v (%v), want %q", obj["event"], err, tc.ev.EventName())
			}
			golden.Check(t, "testdata/events/"+tc.name+".golden", append(b, '\n'))
		})
	}
}
