package chat

import (
	"context"
	"encoding/json"
	"testing"
)

// TestScriptedReadsFencedCode: the offline model finds the code of a fenced block whether it
// spans lines or stands on one line, as the OSA widget's single-line input sends it, and says
// where the code will run.
func TestScriptedReadsFencedCode(t *testing.T) {
	browser := []Tool{{Name: "execute_code"}}
	server := []Tool{{Name: "execute_code", RunsOnServer: true}}
	cases := []struct {
		name, message string
		tools         []Tool
		wantCode      string // "" wants no tool call
		wantText      string
	}{
		{"lines", "Please run this:\n```python\nprint(6*7)\n```", browser, "print(6*7)\n", "I will run your code in your browser."},
		{"one line", "Please run this: ```python print(6*7) ```", browser, "print(6*7)", "I will run your code in your browser."},
		{"one line, no space before the fence", "```python print(1)```", browser, "print(1)", "I will run your code in your browser."},
		{"crlf", "```python\r\nx = 1\r\nprint(x)\r\n```", browser, "x = 1\r\nprint(x)\r\n", "I will run your code in your browser."},
		{"on the server", "```python print(6*7) ```", server, "print(6*7)", "I will run your code on the server."},
		{"another language", "```python3 print(1) ```", browser, "", ScriptedIntro},
		{"no tool bound", "```python print(1) ```", nil, "", ScriptedIntro},
		{"no fence", "print(1)", browser, "", ScriptedIntro},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Tools: tc.tools, Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: tc.message}}}}}
			var text string
			var calls []Call
			err := Scripted{}.Stream(context.Background(), req, func(ev Event) error {
				switch ev.Kind {
				case TextDelta:
					text += ev.Text
				case ToolCall:
					calls = append(calls, *ev.Call)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if text != tc.wantText {
				t.Errorf("text = %q, want %q", text, tc.wantText)
			}
			if tc.wantCode == "" {
				if len(calls) != 0 {
					t.Errorf("calls = %+v, want none", calls)
				}
				return
			}
			if len(calls) != 1 {
				t.Fatalf("calls = %+v, want one", calls)
			}
			var in struct{ Code string }
			if err := json.Unmarshal(calls[0].Input, &in); err != nil || in.Code != tc.wantCode {
				t.Errorf("code = %q (%v), want %q", in.Code, err, tc.wantCode)
			}
		})
	}
}
