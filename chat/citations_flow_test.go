package chat

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/chat/chattest"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/tests/golden"
	"github.com/osc-assistant/assistant/toolresults"
)

// The passages of the conversation in the citation flow tests, numbered as the tagged path
// numbers them.
var flowPassages = []Passage{
	{Source: "https://www.hedtags.org/quickstart", Title: "HED quickstart", Text: "Annotations are placed in the events.tsv file. Each row is an event."},
	{Source: "https://www.hedtags.org/schema", Title: "HED schema", Text: "Every tag comes from a schema. Versions are released on GitHub."},
	{Source: "https://www.hedtags.org/sidecars", Title: "HED sidecars", Text: "Sidecars map the columns of events.tsv to annotations."},
}

// seedCitable gives session s1 a question answered by a citable tool, as if an earlier reply
// had searched the documentation: what a model may cite from.
func seedCitable(t *testing.T, e *Engine) {
	t.Helper()
	ctx := t.Context()
	if _, _, err := e.Store.EnsureSession(ctx, "hed", "s1"); err != nil {
		t.Fatal(err)
	}
	result := Block{Type: BlockToolResult, ToolUseID: "toolu_search", Content: CitableContent(CiteNative, "Knowledge tool result.", flowPassages, "plain", nil)}
	if _, err := e.appendMsgs(ctx, "hed", "s1",
		Message{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "What is HED?"}}},
		Message{Role: RoleAssistant, Content: []Block{{Type: BlockToolUse, ToolUseID: "toolu_search", Name: "search_hed_docs", Input: json.RawMessage(`{"query":"HED"}`)}}},
		Message{Role: RoleUser, Content: []Block{result}},
		Message{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "HED annotates events."}}},
	); err != nil {
		t.Fatal(err)
	}
}

// TestCitationFlow: a reply that cites, parks a browser call and goes on after /chat/resume,
// over the native path (the fake Anthropic API streaming citations_delta) and the tagged path
// (the fake OpenAI-compatible API writing [src:N] tags), with the real SDK clients. Both give
// the reader the same markers, citation events, tool_request and done (knowledge.md §5.3,
// §5.4): numbering continues across the model calls and the resume, a source cited again
// keeps its marker, done.content is normalised, and the history keeps the markers. The
// golden files (testdata/flows/<path>.golden) hold each path's events as the wire has them.
func TestCitationFlow(t *testing.T) {
	q, s, sc := flowPassages[0], flowPassages[1], flowPassages[2]
	anthropicCite := func(p Passage, text string) chattest.Cite {
		return chattest.Cite{Source: p.Source, Title: p.Title, CitedText: text}
	}
	native := func(n int, _ chattest.Request) chattest.Reply {
		switch n {
		case 0:
			return chattest.Reply{Text: []string{"Per the docs, "}, Blocks: []chattest.TextBlock{
				{Text: []string{"tags go in ", "events"}, Cites: []chattest.Cite{anthropicCite(q, "Annotations are placed in the events.tsv file.")}},
				{Text: []string{".tsv files. "}},
				{Text: []string{"They come from a schema."}, Cites: []chattest.Cite{anthropicCite(s, "Every tag comes from a schema."), anthropicCite(q, "Each row is an event.")}},
				{Text: []string{" Let me check."}},
			}, ToolUses: []chattest.ToolUse{{ID: "toolu_run", Name: "execute_code", Input: `{"code":"print(6*7)","description":"d"}`}}}
		default:
			return chattest.Reply{Text: []string{"It printed 42. "}, Blocks: []chattest.TextBlock{
				{Text: []string{"Sidecars map columns."}, Cites: []chattest.Cite{anthropicCite(sc, "Sidecars map the columns of events.tsv to annotations.")}, CitesLast: true},
				{Text: []string{" Rows are events."}, Cites: []chattest.Cite{anthropicCite(q, "Each row is an event.")}},
			}}
		}
	}
	tagged := func(n int, _ chattest.Request) chattest.Reply {
		switch n {
		case 0:
			return chattest.Reply{Text: []string{"Per the docs, tags go in events", "[src:1]", ".tsv files. They come from a schema. [", "src:2, src:1", "] Let me check."},
				ToolUses: []chattest.ToolUse{{ID: "toolu_run", Name: "execute_code", Input: `{"code":"print(6*7)","description":"d"}`}}}
		default:
			return chattest.Reply{Text: []string{"It printed 42. Sidecars map columns.[src:3]", " Rows are events.", "[src:1]"}}
		}
	}
	type flow struct {
		name   string
		model  string
		env    func(url string) map[string]string
		script func(int, chattest.Request) chattest.Reply
		start  func(script func(int, chattest.Request) chattest.Reply) (url string, reqs func() []chattest.Request, stop func())
		// earlier is how the second model call's request shows the first call's cited text.
		earlier string
	}
	flows := []flow{
		{"native", "anthropic/claude-test", func(url string) map[string]string {
			return map[string]string{"ANTHROPIC_API_KEY": "k", "ANTHROPIC_BASE_URL": url}
		}, native, func(s func(int, chattest.Request) chattest.Reply) (string, func() []chattest.Request, func()) {
			a := chattest.NewAnthropic(s)
			return a.URL, a.Requests, a.Close
		}, "tags go in events.tsv files.[1] They come from a schema.[2][1]"},
		{"tagged", "openrouter/test-model", func(url string) map[string]string {
			return map[string]string{"OPENROUTER_API_KEY": "k", "OPENROUTER_BASE_URL": url + "/v1"}
		}, tagged, func(s func(int, chattest.Request) chattest.Reply) (string, func() []chattest.Request, func()) {
			o := chattest.NewOpenAI(s)
			return o.URL, o.Requests, o.Close
		}, "tags go in events.tsv files.[src:1] They come from a schema.[src:2][src:1]"},
	}
	views := map[string]string{}
	for _, f := range flows {
		t.Run(f.name, func(t *testing.T) {
			url, reqs, stop := f.start(f.script)
			defer stop()
			e := testEngine(store.NewMemory(store.Limits{}, nil, nil), f.env(url))
			seedCitable(t, e)
			c := browserCommunity()
			c.DefaultModel = new(f.model)
			turn := Turn{Community: c, SessionID: "s1", Declared: []string{"execute_code"}, OriginOK: true, RequestID: "req-1"}
			sink := &eventSink{}
			if err := e.Chat(t.Context(), turn, "Where do tags go?", sink); err != nil {
				t.Fatal(err)
			}
			req, ok := sink.last().(ToolRequestEvent)
			if !ok {
				t.Fatalf("the first run ended with %s", sink.names())
			}
			res := &toolresults.Result{CallID: req.CallID, Status: toolresults.StatusOK, Stdout: "42\n"}
			if err := e.Resume(t.Context(), turn, res, sink); err != nil {
				t.Fatal(err)
			}
			var wire strings.Builder
			for _, ev := range sink.events {
				b, err := json.Marshal(ev)
				if err != nil {
					t.Fatal(err)
				}
				fmt.Fprintf(&wire, "data: %s\n\n", b)
			}
			golden.Check(t, "testdata/flows/"+f.name+".golden", []byte(wire.String()))
			views[f.name] = readerView(sink.events)

			// The resumed call's request shows the first call's text with its citations.
			all := reqs()
			if len(all) != 2 {
				t.Fatalf("%d model requests, want 2", len(all))
			}
			if !all[1].Contains(f.earlier) {
				t.Errorf("the second request does not show the first call's citations as %q", f.earlier)
			}
			// The history keeps the markers, and what they cite.
			h := storedHistory(t, e.Store, "hed", "s1")
			last := h[len(h)-1]
			if last.Role != RoleAssistant || blocksText(last.Content) != "It printed 42. Sidecars map columns.[3] Rows are events.[1]" || len(last.Content[0].Citations) != 1 || last.Content[0].Citations[0].Marker != 3 {
				t.Errorf("the stored answer %+v", last)
			}
		})
	}
	if views["native"] != views["tagged"] {
		t.Errorf("the reader sees on the native path\n%s\nand on the tagged path\n%s", views["native"], views["tagged"])
	}
}

// readerView is what a reader makes of events: the text as it builds up (content joined, each
// citation event as a line), and each terminal event's content and citations, the model left
// out. The cited_text of the tagged path is its best sentence, so it is left out too.
func readerView(events []StreamEvent) string {
	var b strings.Builder
	for _, ev := range events {
		switch ev := ev.(type) {
		case ContentEvent:
			b.WriteString(ev.Content)
		case CitationEvent:
			fmt.Fprintf(&b, "\n<citation %d %s %s>\n", ev.Marker, ev.Source, ev.Title)
		case ToolRequestEvent:
			fmt.Fprintf(&b, "\n<tool_request %q %s>\n", ev.Content, markers(ev.Citations))
		case DoneEvent:
			fmt.Fprintf(&b, "\n<done %q %s>\n", ev.Content, markers(ev.Citations))
		default:
			fmt.Fprintf(&b, "\n<%s>\n", ev.EventName())
		}
	}
	return b.String()
}

func markers(cs Citations) string {
	var parts []string
	for _, c := range cs {
		parts = append(parts, fmt.Sprintf("%d=%s", c.Marker, c.Source))
	}
	return "[" + strings.Join(parts, " ") + "]"
}

// TestPlainMessages: on the plain path, citable passages reach the model as the plain text
// the tool gives, and passages a history kept from another provider as text; the history
// itself is not changed.
func TestPlainMessages(t *testing.T) {
	got := CitableContent(CitationPathOf(plainProvider{}), "note", flowPassages, "the plain text", nil)
	if len(got) != 1 || got[0].Type != BlockText || got[0].Text != "the plain text" {
		t.Errorf("content %+v", got)
	}
	result := Block{Type: BlockToolResult, ToolUseID: "t", Content: CitableContent(CiteNative, "note", flowPassages[:1], "plain", nil)}
	history := []Message{{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "q"}}}, {Role: RoleUser, Content: []Block{result}}}
	before, _ := json.Marshal(history)
	out := plainMessages(history)
	want := []Block{{Type: BlockText, Text: "note"}, {Type: BlockText, Text: "HED quickstart\nSource: https://www.hedtags.org/quickstart\n\nAnnotations are placed in the events.tsv file. Each row is an event."}}
	if b, _ := json.Marshal(out[1].Content[0].Content); string(b) != jsonOf(want) {
		t.Errorf("plain result %s, want %s", b, jsonOf(want))
	}
	if after, _ := json.Marshal(history); string(after) != string(before) {
		t.Errorf("the history changed: %s", after)
	}
	if &out[0].Content[0] != &history[0].Content[0] {
		t.Errorf("a message without passages was copied")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
