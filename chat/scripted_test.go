package chat

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/tests/golden"
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

// TestScriptedSearchesDocs: given a question without code and a bound search_{id}_docs, the
// offline model calls it with the question as the query; without it, or with code, it keeps
// its other answers.
func TestScriptedSearchesDocs(t *testing.T) {
	docs := []Tool{{Name: "retrieve_hed_docs"}, {Name: "search_hed_code_docs"}, {Name: "search_hed_docs"}, {Name: "execute_code"}}
	long := strings.Repeat("é", 1500)
	cases := []struct {
		name, message string
		tools         []Tool
		wantTool      string // "" wants no tool call
		wantQuery     string
	}{
		{"a question", "  What is HED?\n", docs, "search_hed_docs", "What is HED?"},
		{"a long question is clipped to what the tool takes", long, docs, "search_hed_docs", long[:2*maxQueryChars]},
		{"code runs instead", "```python print(1) ```", docs, "execute_code", ""},
		{"no search tool", "What is HED?", []Tool{{Name: "search_hed_code_docs_x"}}, "", ""},
		{"only spaces", " \n ", docs, "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Tools: tc.tools, Messages: []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: tc.message}}}}}
			var text string
			var calls []Call
			if err := (Scripted{}).Stream(context.Background(), req, func(ev Event) error {
				switch ev.Kind {
				case TextDelta:
					text += ev.Text
				case ToolCall:
					calls = append(calls, *ev.Call)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if tc.wantTool == "" {
				if len(calls) != 0 || text != ScriptedIntro {
					t.Errorf("calls %+v, text %q; want the intro", calls, text)
				}
				return
			}
			if len(calls) != 1 || calls[0].Name != tc.wantTool {
				t.Fatalf("calls %+v, want one of %s", calls, tc.wantTool)
			}
			if tc.wantQuery == "" {
				return
			}
			var in struct{ Query string }
			if err := json.Unmarshal(calls[0].Input, &in); err != nil || in.Query != tc.wantQuery {
				t.Errorf("query %q (%v), want %q", in.Query, err, tc.wantQuery)
			}
			if args, problems := checkSearchArgs(calls[0].Input); problems != nil {
				t.Errorf("the tool refuses the call: %v (%s)", problems, args)
			}
		})
	}
}

// TestScriptedQuotesPassages: the offline model answers a documentation search with the first
// three passages quoted and cited natively; through the turn's marker state machine that
// gives the reader the markers, citation events and citations a real model's citations give
// (testdata/scripted/<case>.golden). A result without passages gets an answer saying so.
func TestScriptedQuotesPassages(t *testing.T) {
	sr := func(src, title, text string) Block {
		return Block{Type: BlockSearchResult, Source: src, Title: title, Content: []Block{{Type: BlockText, Text: text}}}
	}
	cases := []struct {
		name    string
		content []Block
	}{
		{"passages", []Block{
			{Type: BlockText, Text: "Knowledge tool result."},
			sr("https://www.hedtags.org/intro#what-is-hed", "HED introduction > What is HED", "# What is HED\n\nHED (Hierarchical Event Descriptors) is a system for annotating events. It uses a vocabulary of tags. A third sentence is not quoted."),
			sr("https://www.hedtags.org/quickstart#where", "HED quickstart >\n Where tags go", "| col | tag |\n|---|---|\nAnnotations go in events.tsv or a JSON sidecar"),
			sr("https://www.hedtags.org/intro#what-is-hed", "HED introduction > What is HED", "HED tags come from a schema!"),
			sr("https://www.hedtags.org/schema", "HED schema", "A fourth result is not quoted."),
		}},
		{"wrapped lines and code", []Block{
			sr("https://www.hedtags.org/guide#wrap", "Guide > Wrapped", "## Wrapped\nEvery answer lists its\nsources under the reply.\n\n```python\nprint('not prose.')\n```\n\nEach marker links\nto its page. Not this one."),
		}},
		{"no passages", []Block{{Type: BlockText, Text: "Knowledge tool result.\n\nNo documentation section matches."}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := Request{Tools: []Tool{{Name: "search_hed_docs"}}, Messages: []Message{
				{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "What is HED?"}}},
				{Role: RoleAssistant, Content: []Block{{Type: BlockToolUse, ToolUseID: "toolu_s", Name: "search_hed_docs", Input: json.RawMessage(`{"query":"What is HED?"}`)}}},
				{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "toolu_s", Content: tc.content}}},
			}}
			var out strings.Builder
			var rc replyCites
			ct := newCallText(slog.New(slog.DiscardHandler))
			if err := (Scripted{}).Stream(context.Background(), req, func(ev Event) error {
				for _, se := range ct.handle(ev, &rc) {
					b, _ := json.Marshal(se)
					fmt.Fprintf(&out, "data: %s\n", b)
				}
				if ev.Kind == ToolCall {
					t.Errorf("a tool call after the search: %+v", ev.Call)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			content, _ := json.Marshal(ct.String())
			cites, _ := json.Marshal(rc.list)
			fmt.Fprintf(&out, "done.content: %s\ndone.citations: %s\n", content, cites)
			golden.Check(t, "testdata/scripted/"+slug(tc.name)+".golden", []byte(out.String()))
		})
	}
}
