package chat

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/tests/golden"
)

// taggedTestSources are three sources as a conversation's tool results number them.
func taggedTestSources() *taggedSources {
	return numberSources([]Message{{Role: RoleUser, Content: []Block{{Type: BlockToolResult, ToolUseID: "t1", Content: []Block{
		{Type: BlockText, Text: "a note"},
		{Type: BlockSearchResult, Source: "https://example.org/quickstart", Title: "HED quickstart", Content: []Block{{Type: BlockText,
			Text: "HED is a system for annotating events. Annotations are placed in the events.tsv file.\nEach tag comes from a schema."}}},
		{Type: BlockSearchResult, Source: "https://example.org/schema", Title: "HED schema", Content: []Block{{Type: BlockText,
			Text: "The schema lists every tag. Versions are released on GitHub!"}}},
		{Type: BlockSearchResult, Source: "https://example.org/quickstart", Title: "HED quickstart", Content: []Block{{Type: BlockText,
			Text: "Sidecars map columns to annotations."}}},
		{Type: BlockSearchResult, Source: "", Title: "No source", Content: []Block{{Type: BlockText, Text: "Unsourced passage."}}},
	}}}}})
}

// taggedEvents runs text through a tag stream in the given pieces and renders the events.
func taggedEvents(t *testing.T, pieces []string) string {
	t.Helper()
	var out strings.Builder
	ts := newTagStream(taggedTestSources(), func(ev Event) error {
		switch ev.Kind {
		case TextDelta:
			fmt.Fprintf(&out, "text %d %q\n", ev.Index, ev.Text)
		case CitationDelta:
			b, _ := json.Marshal(ev.Cite)
			fmt.Fprintf(&out, "cite %d %s\n", ev.Index, b)
		case BlockEnd:
			fmt.Fprintf(&out, "end %d\n", ev.Index)
		case Notice:
			fmt.Fprintf(&out, "notice %s\n", ev.Text)
		}
		return nil
	})
	for _, p := range pieces {
		if err := ts.write(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := ts.flush(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

// joinText folds a rendering's consecutive text events of one block into one, so renderings
// of different chunkings compare.
func joinText(rendered string) string {
	var out []string
	var text strings.Builder
	cur := ""
	flush := func() {
		if text.Len() > 0 {
			out = append(out, fmt.Sprintf("text %s %q", cur, text.String()))
			text.Reset()
		}
	}
	for _, line := range strings.Split(strings.TrimSuffix(rendered, "\n"), "\n") {
		var idx int
		var s string
		if n, _ := fmt.Sscanf(line, "text %d %q", &idx, &s); n == 2 {
			if fmt.Sprint(idx) != cur {
				flush()
				cur = fmt.Sprint(idx)
			}
			text.WriteString(s)
			continue
		}
		flush()
		out = append(out, line)
	}
	flush()
	return strings.Join(out, "\n")
}

// TestTagStream: the tagged path's reader of the model's text (knowledge.md §5.4), one case
// per tag form and rule. Each case's text goes through as one piece and as one piece per
// character; both must give the same citations and text, and the golden file
// (testdata/tagged/<case>.golden) holds the events of the one-piece run, then, for the cases
// given as pieces, those of that run: what streams at once and what is held back.
func TestTagStream(t *testing.T) {
	cases := []struct {
		name   string
		text   string
		pieces []string
	}{
		{"spec example", "Tags go in events.tsv.[src:1] More context after the citation.", nil},
		{"space inside", "Tags go in events.tsv.[src: 1] More.", nil},
		{"spaces everywhere and upper case", "Fact. [ SRC : 2 ] More.", nil},
		{"two numbers with a comma", "Both.[src:1,2] Done.", nil},
		{"two numbers each prefixed", "Both.[src:1, src:2] Done.", nil},
		{"semicolon", "Both.[src:2;1] Done.", nil},
		{"adjacent tags are one group", "Both.[src:1][src:2] Done.", nil},
		{"tags apart by a space are one group", "Both.[src:1] [src:2] Done.", nil},
		{"whitespace before a tag is removed", "Fact one.  \t[src:1] Fact two.", nil},
		{"only 64 spaces go with a tag", "Fact." + strings.Repeat(" ", 70) + "[src:1]", nil},
		{"a number naming no source", "Fact.[src:9] Next.[src:1]", nil},
		{"repeats dropped", "Fact.[src:1,1][src:1] Done.", nil},
		{"a tag with no text before it", "[src:1]Starts with a tag.[src:2]", nil},
		{"a tag after a newline with no text", "Fact.[src:1]\n[src:2] Next.", nil},
		{"the empty source", "Unsourced.[src:3] Sourced.[src:1]", nil},
		{"not tags", "A bare [3], [src:], [src:x], [src 1], [source:1] and [src:1 2].", nil},
		{"a tag over 48 characters", "Long.[src:1,2,1,2,1,2,1,2,1,2,1,2,1,2,1,2,1,2,1,2,1,2,1,2,1] Short.[src:2]", nil},
		{"an unfinished tag at the end", "Fact. [src:1", nil},
		{"cited text: the sentence sharing most words", "Annotations belong in the events file.[src:1] Versions are on GitHub.[src:2]", nil},
		{"cited text: the first sentence when none share a word", "Something else entirely.[src:1]", nil},
		{"held back while streaming", "Fact one. [src:1] Fact two.", []string{"Fact one.", " ", "[", "src", ":1", "]", " Fact", " two."}},
		{"held back then released", "Look [here] and [src", []string{"Look ", "[he", "re] and ", "[src"}},
		{"a group held open until text", "A.[src:1][src:2] B.", []string{"A.[src:1]", "[src:2]", " B."}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			whole := taggedEvents(t, []string{tc.text})
			var chars []string
			for _, r := range tc.text {
				chars = append(chars, string(r))
			}
			if got := joinText(taggedEvents(t, chars)); got != joinText(whole) {
				t.Errorf("one character at a time gives\n%s\nwant\n%s", got, joinText(whole))
			}
			out := "# " + tc.text + "\n" + whole
			if tc.pieces != nil {
				out += "# in pieces " + fmt.Sprintf("%q", tc.pieces) + "\n" + taggedEvents(t, tc.pieces)
			}
			golden.Check(t, "testdata/tagged/"+slug(tc.name)+".golden", []byte(out))
		})
	}
}

// TestDefang: tag look-alikes in a passage become parentheses (knowledge.md §5.4).
func TestDefang(t *testing.T) {
	cases := []struct{ in, want string }{
		{"plain text", "plain text"},
		{"see [src:3] here", "see (src:3) here"},
		{"see [ SRC : 12, 4 ] here", "see ( SRC : 12, 4 ) here"},
		{"fullwidth ［src：1］ too", "fullwidth (src：1) too"},
		{"mixed [src:1］ and ［src:2]", "mixed (src:1) and (src:2)"},
		{"an opening only [src:1 and more", "an opening only (src:1 and more"},
		{"too long [src:" + strings.Repeat("x", 41) + "]", "too long (src:" + strings.Repeat("x", 41) + "]"},
		{"a newline [src:1\n]", "a newline (src:1\n]"},
		{"a space before the colon [src :1, src : 2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx]", "a space before the colon (src :1, src : 2 xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx]"},
		{"not a tag [source] [3] [s rc:1]", "not a tag [source] [3] [s rc:1]"},
	}
	for _, tc := range cases {
		if got := defang(tc.in); got != tc.want {
			t.Errorf("defang(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestTaggedBlock: a search_result block as the tagged path shows it, byte for byte.
func TestTaggedBlock(t *testing.T) {
	b := Block{Type: BlockSearchResult, Source: " https://example.org/a\n", Title: "HED  quick\tstart \n",
		Content: []Block{{Type: BlockText, Text: "Tags [src:2] go\nin [src: 1] events.tsv."}}}
	want := "[src:4] HED quick start\nSource: https://example.org/a\nTags (src:2) go\nin (src: 1) events.tsv.\n\n(End of [src:4]. Cite a claim drawn from it by writing [src:4] after the sentence.)"
	if got := taggedBlock(b, 4); got != want {
		t.Errorf("taggedBlock =\n%q\nwant\n%q", got, want)
	}
	if got := taggedBlock(Block{Type: BlockSearchResult, Content: []Block{{Type: BlockText, Text: "x"}}}, 1); !strings.HasPrefix(got, "[src:1]\nSource: \nx\n") {
		t.Errorf("an empty title and source give %q", got)
	}
}

// TestNumberSources: sources numbered by first appearance; a source met again keeps its number
// and adds its passage.
func TestNumberSources(t *testing.T) {
	ts := taggedTestSources()
	var got []string
	for _, s := range ts.list {
		got = append(got, fmt.Sprintf("%d %s %d", s.n, s.source, len(s.passages)))
	}
	want := []string{"1 https://example.org/quickstart 2", "2 https://example.org/schema 1", "3  1"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sources %q, want %q", got, want)
	}
}

// TestTaggedAssistant: an earlier reply's markers shown as the tags of their sources.
func TestTaggedAssistant(t *testing.T) {
	ts := taggedTestSources()
	cases := []struct {
		b    Block
		want string
	}{
		{Block{Type: BlockText, Text: "No citations [1]."}, "No citations [1]."},
		{Block{Type: BlockText, Text: "Fact.[1][2]", Citations: []Cited{{Marker: 1, Source: "https://example.org/schema"}, {Marker: 2, Source: "https://example.org/quickstart"}}}, "Fact.[src:2][src:1]"},
		{Block{Type: BlockText, Text: "Gone.[3]", Citations: []Cited{{Marker: 3, Source: "https://example.org/trimmed"}}}, "Gone."},
	}
	for _, tc := range cases {
		if got := taggedAssistant(tc.b, ts); got != tc.want {
			t.Errorf("taggedAssistant(%q) = %q, want %q", tc.b.Text, got, tc.want)
		}
	}
}

// refTagRE is the tag grammar of knowledge.md §5.4 as a regular expression, for the fuzz test
// to check matchTag against (it has no length bound: matches are filtered by it).
var refTagRE = regexp.MustCompile(`[\t\p{Zs}]{0,64}\[[\t\p{Zs}]*(?i:src)[\t\p{Zs}]*:[\t\p{Zs}]*[0-9]+(?:[\t\p{Zs}]*[,;][\t\p{Zs}]*(?:(?i:src)[\t\p{Zs}]*:[\t\p{Zs}]*)?[0-9]+)*[\t\p{Zs}]*\]`)

// scanTags is the tags matchTag finds in a whole text, left to right, as [start, end) offsets.
func scanTags(s string) [][2]int {
	var out [][2]int
	for i := 0; i < len(s); {
		if n, _, m := matchTag(s[i:]); m == tagFull {
			out = append(out, [2]int{i, i + n})
			i += n
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
	}
	return out
}

// refTags is the tags the regular expression finds, those with a bracketed part over 48
// characters left out.
func refTags(s string) [][2]int {
	var out [][2]int
	for _, m := range refTagRE.FindAllStringIndex(s, -1) {
		open := m[0] + strings.IndexByte(s[m[0]:m[1]], '[')
		if utf8.RuneCountInString(s[open:m[1]]) <= maxTagChars {
			out = append(out, [2]int{m[0], m[1]})
		}
	}
	return out
}

// FuzzTagStream: whatever the model writes and however it is cut in pieces, the tag reader
// finds exactly the tags of the grammar (as the regular expression does), gives the same
// events as for the text in one piece, lets out all the text that is not a tag, and never
// holds more than a tag and its whitespace; defanged text holds no tag.
func FuzzTagStream(f *testing.F) {
	for _, s := range []string{
		"Tags go in events.tsv.[src:1] More.", "[src: 1, src:2]", "A [src:1][src:2] B", "x" + strings.Repeat(" ", 70) + "[src:3]",
		"[ SRC : 2 ; 3 ]", "[src:", "\u3000[src:1]", "[src:99999999999999999999]", "［src：1］",
	} {
		f.Add(s, uint8(3))
	}
	srcs := taggedTestSources()
	f.Fuzz(func(t *testing.T, text string, cut uint8) {
		if len(text) > 4096 || !utf8.ValidString(text) {
			return
		}
		if got, want := scanTags(text), refTags(text); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("tags of %q: %v, the grammar's %v", text, got, want)
		}
		run := func(pieces []string) (string, int) {
			var out strings.Builder
			held := 0
			ts := newTagStream(srcs, func(ev Event) error {
				switch ev.Kind {
				case TextDelta:
					fmt.Fprintf(&out, "text %d %q\n", ev.Index, ev.Text)
				case CitationDelta:
					fmt.Fprintf(&out, "cite %d %s\n", ev.Index, ev.Cite.Source)
				case BlockEnd:
					fmt.Fprintf(&out, "end %d\n", ev.Index)
				}
				return nil
			})
			for _, p := range pieces {
				if err := ts.write(p); err != nil {
					t.Fatal(err)
				}
				held = max(held, utf8.RuneCountInString(ts.pend))
			}
			if err := ts.flush(); err != nil {
				t.Fatal(err)
			}
			return out.String(), held
		}
		whole, _ := run([]string{text})
		step := int(cut%16) + 1
		var pieces []string
		for i := 0; i < len(text); {
			j := min(i+step, len(text))
			for j < len(text) && !utf8.RuneStart(text[j]) {
				j++
			}
			pieces = append(pieces, text[i:j])
			i = j
		}
		cutUp, held := run(pieces)
		if joinText(cutUp) != joinText(whole) {
			t.Fatalf("%q in pieces of %d:\n%s\nin one piece:\n%s", text, step, joinText(cutUp), joinText(whole))
		}
		if held > maxTagSpace+maxTagChars {
			t.Fatalf("held back %d characters", held)
		}
		// The text let out is the text without its tags.
		var kept strings.Builder
		prev := 0
		for _, m := range scanTags(text) {
			kept.WriteString(text[prev:m[0]])
			prev = m[1]
		}
		kept.WriteString(text[prev:])
		var got strings.Builder
		for _, line := range strings.Split(whole, "\n") {
			var idx int
			var s string
			if n, _ := fmt.Sscanf(line, "text %d %q", &idx, &s); n == 2 {
				got.WriteString(s)
			}
		}
		if got.String() != kept.String() {
			t.Fatalf("text let out %q, want %q", got.String(), kept.String())
		}
		if d := defang(text); len(scanTags(d)) > 0 {
			t.Fatalf("defang(%q) = %q still holds a tag", text, d)
		}
	})
}

// TestBestSentence: the cited_text of a tagged citation.
func TestBestSentence(t *testing.T) {
	passages := []string{"First sentence here. Annotations are placed in the events.tsv file!\nA third line", "Another passage? With tags."}
	cases := []struct{ segment, want string }{
		{"Where do annotations go? The events file.", "Annotations are placed in the events.tsv file!"},
		{"Nothing in common.", "First sentence here."},
		{"A third line", "A third line"},
		{"tags", "With tags."},
	}
	for _, tc := range cases {
		if got := bestSentence(passages, tc.segment); got != tc.want {
			t.Errorf("bestSentence(%q) = %q, want %q", tc.segment, got, tc.want)
		}
	}
	long := strings.Repeat("word ", 100)
	if got := bestSentence([]string{long}, "word"); utf8.RuneCountInString(got) != 303 || !strings.HasSuffix(got, "...") {
		t.Errorf("a long sentence is cut to %d characters: %q", utf8.RuneCountInString(got), got)
	}
}
