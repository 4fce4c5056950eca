package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/tests/golden"
)

// Provider events for the marker tests: text of block i, a citation of block i, block i's end.
func txt(i int, s string) Event    { return Event{Kind: TextDelta, Index: i, Text: s} }
func cite(i int, src string) Event { return Event{Kind: CitationDelta, Index: i, Cite: citedOf(src)} }
func bend(i int) Event             { return Event{Kind: BlockEnd, Index: i} }

var done = Event{Kind: Done, StopReason: "end_turn"}

// citedOf is a citation of source src with a title and cited text made from it.
func citedOf(src string) *Cited {
	if src == "" {
		return &Cited{Title: "No source", CitedText: "Text of no source."}
	}
	return &Cited{Source: "https://example.org/" + src, Title: "Title " + src, CitedText: "Text of " + src + "."}
}

// TestMarkers: the marker state machine of knowledge.md §5.3, one case per rule. Each case is
// the provider events of one or more model calls of a reply; the golden file
// (testdata/citations/<case>.golden) holds the reader's events as the wire has them, then each
// call's done.content and the text blocks the history keeps, and the reply's citations.
func TestMarkers(t *testing.T) {
	cases := []struct {
		name  string
		calls [][]Event
	}{
		{"spec example", [][]Event{{cite(0, "quickstart"), txt(0, "Tags go in "), txt(0, "events.tsv."), bend(0), txt(1, " More context after the citation."), bend(1), done}}},
		{"citation after its text", [][]Event{{txt(0, "Tags go in events.tsv."), cite(0, "a"), bend(0), txt(1, " More."), bend(1), done}}},
		{"no citations", [][]Event{{txt(0, "Just "), txt(0, "text."), bend(0), done}}},
		{"a source cited twice", [][]Event{{cite(0, "a"), txt(0, "One."), bend(0), cite(1, "a"), txt(1, " Two."), bend(1), done}}},
		{"two sources in one block, one repeated", [][]Event{{cite(0, "a"), cite(0, "b"), cite(0, "a"), txt(0, "Both say so."), bend(0), done}}},
		{"empty source", [][]Event{{cite(0, ""), txt(0, "Unsourced."), bend(0), cite(1, "a"), cite(1, ""), txt(1, " Sourced."), bend(1), done}}},
		{"mid-sentence block moved to the sentence end", [][]Event{{txt(0, "Annotations go in "), cite(1, "a"), txt(1, "events"), bend(1), txt(2, ".tsv files, always. Then more."), bend(2), done}}},
		{"mid-sentence block moved to the line end", [][]Event{{cite(0, "a"), txt(0, "- item one"), bend(0), txt(1, "\n- item two"), bend(1), done}}},
		{"block ending a line", [][]Event{{cite(0, "a"), txt(0, "- item one\n"), bend(0), txt(1, "- item two"), bend(1), done}}},
		{"spaces before a marker", [][]Event{{cite(0, "a"), txt(0, "Fact one. "), bend(0), txt(1, "Fact two."), bend(1), done}}},
		{"mid-sentence at the end of the text", [][]Event{{txt(0, "It has "), cite(1, "a"), txt(1, "tags  "), bend(1), done}}},
		{"groups meeting at one place merge", [][]Event{{cite(0, "a"), txt(0, "HED is"), bend(0), cite(1, "b"), cite(1, "a"), txt(1, " a schema"), bend(1), txt(2, ". More."), bend(2), done}}},
		{"citation before its text is held", [][]Event{{cite(0, "a"), bend(0), cite(1, "b"), txt(1, "Cited text."), bend(1), done}}},
		{"held citation at the end of the call", [][]Event{{txt(0, "Some text."), bend(0), cite(1, "a"), bend(1), done}}},
		{"held citation with no text at all", [][]Event{{cite(0, "a"), bend(0), done}}},
		{"blocks without ends", [][]Event{{cite(0, "a"), txt(0, "One."), cite(1, "b"), txt(1, " Two."), done}}},
		{"a tool call completes the block", [][]Event{{cite(0, "a"), txt(0, "Let me check."), {Kind: ToolCall, Call: &Call{ID: "c1", Name: "t"}}, {Kind: Done, StopReason: "tool_use"}}}},
		{"markers across model calls", [][]Event{
			{cite(0, "a"), txt(0, "First call."), bend(0), {Kind: ToolCall, Call: &Call{ID: "c1", Name: "t"}}, {Kind: Done, StopReason: "tool_use"}},
			{cite(0, "b"), txt(0, "Second call."), bend(0), cite(1, "a"), txt(1, " Again the first."), bend(1), done},
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var rc replyCites
			for i, call := range tc.calls {
				ct := newCallText(slog.New(slog.DiscardHandler))
				fmt.Fprintf(&out, "# model call %d\n", i+1)
				for _, ev := range call {
					for _, se := range ct.handle(ev, &rc) {
						b, err := json.Marshal(se)
						if err != nil {
							t.Fatal(err)
						}
						fmt.Fprintf(&out, "data: %s\n", b)
					}
				}
				content, _ := json.Marshal(ct.String())
				blocks, _ := json.Marshal(ct.blocks())
				fmt.Fprintf(&out, "done.content: %s\nhistory: %s\n", content, blocks)
				if got := blocksText(ct.blocks()); got != ct.String() {
					t.Errorf("the history's text %q is not done.content %q", got, ct.String())
				}
			}
			cites, _ := json.Marshal(rc.list)
			fmt.Fprintf(&out, "done.citations: %s\n", cites)
			golden.Check(t, "testdata/citations/"+slug(tc.name)+".golden", out.Bytes())
		})
	}
}

// slug is a test case's name as a file name.
func slug(name string) string {
	b := []byte(name)
	for i, c := range b {
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9') {
			b[i] = '_'
		}
	}
	return string(b)
}

// TestNoticeLogged: a provider's notice (a tag that named no source) goes to the turn's log
// and never to the reader.
func TestNoticeLogged(t *testing.T) {
	var log bytes.Buffer
	ct := newCallText(slog.New(slog.NewTextHandler(&log, nil)).With(slog.String("community", "hed")))
	if out := ct.handle(Event{Kind: Notice, Text: "citation tag [src:9] names no source"}, &replyCites{}); len(out) != 0 {
		t.Errorf("the reader got %v", out)
	}
	if got := log.String(); !strings.Contains(got, "model stream: citation tag [src:9] names no source") || !strings.Contains(got, "community=hed") {
		t.Errorf("log %q", got)
	}
}

// TestMarkerPlace: where a marker group written at a block's end goes (knowledge.md §5.3).
func TestMarkerPlace(t *testing.T) {
	cases := []struct {
		text string // "|" marks where the block ended
		want string // "|" marks where the group goes
	}{
		{"Fact.| More.", "Fact.| More."},
		{"Fact. | More.", "Fact.|  More."},
		{"Fact!|", "Fact!|"},
		{"Is it?|\nYes.", "Is it?|\nYes."},
		{"Fact|.tsv ends. More.", "Fact.tsv ends.| More."},
		{"v1|.2 is out", "v1.2 is out|"},
		{"line one|\nline two.", "line one|\nline two."},
		{"line one\n|line two.", "line one|\nline two."},
		{"line one  \n\n|Line two.", "line one|  \n\nLine two."},
		{"no end|  ", "no end|  "},
		{"no end  |", "no end|  "},
		{"e.g.| this", "e.g.| this"},
		{"|Start.", "Start.|"},
	}
	for _, tc := range cases {
		p := bytes.IndexByte([]byte(tc.text), '|')
		text := tc.text[:p] + tc.text[p+1:]
		q := markerPlace(text, p)
		if got := text[:q] + "|" + text[q:]; got != tc.want {
			t.Errorf("markerPlace(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

// TestReplyCitations: a resumed reply's citations are read back from the history after its
// reader's message, so numbering continues; an earlier reply's are not.
func TestReplyCitations(t *testing.T) {
	a, b, c := *citedOf("a"), *citedOf("b"), *citedOf("c")
	a.Marker, b.Marker, c.Marker = 1, 2, 1
	history := []Message{
		{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "first question"}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "Old.[1]", Citations: []Cited{c}}}},
		{Role: RoleUser, Content: []Block{{Type: BlockText, Text: "second question"}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "A.[1]", Citations: []Cited{a}}, {Type: BlockToolUse, ToolUseID: "t1", Name: "x"}}},
		{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "t1"}}},
		{Role: RoleAssistant, Content: []Block{{Type: BlockText, Text: "B and A.[2][1]", Citations: []Cited{b, a}}, {Type: BlockToolUse, ToolUseID: "t2", Name: "x"}}},
		{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "t2"}}},
	}
	rc := replyCitations(history)
	want := Citations{{Marker: 1, Source: a.Source, Title: a.Title, CitedText: a.CitedText}, {Marker: 2, Source: b.Source, Title: b.Title, CitedText: b.CitedText}}
	if fmt.Sprint(rc.list) != fmt.Sprint(want) {
		t.Errorf("replyCitations = %+v, want %+v", rc.list, want)
	}
	if m, isNew := rc.marker(*citedOf("d")); m != 3 || !isNew {
		t.Errorf("the next source got marker %d (new %v), want 3", m, isNew)
	}
	if rc := replyCitations(history[:3]); len(rc.list) != 0 {
		t.Errorf("a new reply starts with %+v", rc.list)
	}
}

// FuzzMarkers: however a model's text is cut into blocks and whichever blocks cite, the
// marker state machine only places markers: done.content without its marker groups is the
// text the model wrote, the history's blocks hold exactly done.content, each group is the
// markers of what its blocks cited, and the streamed chunks are the text and those markers.
func FuzzMarkers(f *testing.F) {
	f.Add("Tags go in events.tsv. More context.", []byte{10, 1, 22, 2})
	f.Add("a\nb. c! d? e", []byte{1, 1, 3, 0, 5, 2, 7, 3})
	f.Add("  .\n\n", []byte{0, 1, 2, 1})
	f.Fuzz(func(t *testing.T, text string, plan []byte) {
		if len(text) > 2000 || len(plan) > 64 {
			return
		}
		// plan holds pairs: a cut in the text (a byte offset) and which sources the block
		// ending there cites (a bit mask of four; 0 none).
		var events []Event
		var rc replyCites
		ct := newCallText(slog.New(slog.DiscardHandler))
		prev, block := 0, 0
		var streamed strings.Builder
		send := func(ev Event) {
			for _, se := range ct.handle(ev, &rc) {
				if c, ok := se.(ContentEvent); ok {
					streamed.WriteString(c.Content)
				}
			}
			events = append(events, ev)
		}
		for i := 0; i+1 < len(plan); i += 2 {
			cut := min(max(int(plan[i]), prev), len(text))
			for cut < len(text) && !utf8.RuneStart(text[cut]) {
				cut++
			}
			for s := range 4 {
				if plan[i+1]&(1<<s) != 0 {
					send(Event{Kind: CitationDelta, Index: block, Cite: citedOf(string(rune('a' + s)))})
				}
			}
			send(Event{Kind: TextDelta, Index: block, Text: text[prev:cut]})
			send(Event{Kind: BlockEnd, Index: block})
			prev, block = cut, block+1
		}
		send(Event{Kind: TextDelta, Index: block, Text: text[prev:]})
		send(done)
		content, blocks := ct.String(), ct.blocks()
		if got := blocksText(blocks); got != content {
			t.Fatalf("history %q, done.content %q", got, content)
		}
		var bare strings.Builder
		for _, b := range blocks {
			var group strings.Builder
			for _, c := range b.Citations {
				if c.Marker < 1 || c.Marker > len(rc.list) || rc.list[c.Marker-1].Source != c.Source {
					t.Fatalf("block %q cites %+v, the reply's list is %+v", b.Text, c, rc.list)
				}
				group.WriteString(markerText(c.Marker))
			}
			if !strings.HasSuffix(b.Text, group.String()) {
				t.Fatalf("block %q does not end with its markers %q", b.Text, group.String())
			}
			bare.WriteString(strings.TrimSuffix(b.Text, group.String()))
		}
		if bare.String() != text {
			t.Fatalf("done.content %q without its markers is %q, the model wrote %q", content, bare.String(), text)
		}
		if stripped := regexp.MustCompile(`\[\d+\]`).ReplaceAllString(streamed.String(), ""); stripped != regexp.MustCompile(`\[\d+\]`).ReplaceAllString(text, "") {
			t.Fatalf("streamed %q for %q", streamed.String(), text)
		}
	})
}
