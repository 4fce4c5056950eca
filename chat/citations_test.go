package chat

import (
	"context"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestCitableContent: the tool result of a citable tool on each provider path (knowledge.md
// §5.2): search_result blocks on the native and tagged paths, empty passages skipped, the
// plain text when none is left and on the plain path.
func TestCitableContent(t *testing.T) {
	passages := []Passage{
		{Source: "https://example.org/a", Title: "A", Text: "Alpha text."},
		{Source: "https://example.org/b", Title: "B", Text: "  \n"},
		{Source: "", Title: "C", Text: "Gamma text."},
	}
	sr := func(src, title, text string) Block {
		return Block{Type: BlockSearchResult, Source: src, Title: title, Content: []Block{{Type: BlockText, Text: text}}}
	}
	plain := []Block{{Type: BlockText, Text: "PLAIN"}}
	cases := []struct {
		name     string
		path     CitationPath
		note     string
		passages []Passage
		want     []Block
	}{
		{"native", CiteNative, "", passages, []Block{sr("https://example.org/a", "A", "Alpha text."), sr("", "C", "Gamma text.")}},
		{"tagged with a note", CiteTagged, "NOTE", passages, []Block{{Type: BlockText, Text: "NOTE"}, sr("https://example.org/a", "A", "Alpha text."), sr("", "C", "Gamma text.")}},
		{"plain path", CitePlain, "NOTE", passages, plain},
		{"every passage empty", CiteNative, "NOTE", []Passage{{Source: "s", Text: ""}, {Source: "t", Text: " "}}, plain},
		{"no passages", CiteNative, "NOTE", nil, plain},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := CitableContent(tc.path, tc.note, tc.passages, "PLAIN", slog.New(slog.DiscardHandler))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCitationSection: exactly one section per path, byte for byte (knowledge.md §5.4, §5.5).
func TestCitationSection(t *testing.T) {
	cases := []struct {
		path CitationPath
		want string
	}{
		{CiteNative, ""},
		{CiteTagged, "## Citing Sources\n\nThis section replaces any earlier instruction to link to your sources. Retrieved documents, discussions, FAQ entries, forum posts and papers arrive tagged like `[src:3] Title`. After each sentence that states a fact drawn from one, write its tag immediately after the sentence's final punctuation, for example: `HED tags are assembled from a schema.[src:3]`. Write `[src:1][src:2]` when a claim rests on several sources. Use only tags that appear in the tool results and never invent one. Do not write a markdown link or a URL for these sources, and never write a bare `[3]`: the reader's screen turns each tag into a numbered, clickable citation. A fact that did not come from a tool result gets no tag. If the tool results do not answer the question, say so and cite nothing."},
		{CitePlain, "## Source Links Required (No Native Citations)\n\nThis session is not running on a provider that supports automatic inline citations. Whenever you state a fact drawn from a retrieved document, GitHub discussion, FAQ entry, forum post, or paper, end that sentence with a markdown link to its exact source immediately, e.g. \"...as described in the tutorial ([source](https://example.com/tutorial)).\" Do this after every such claim, not just once at the end of your response."},
	}
	for _, tc := range cases {
		t.Run(tc.path.String(), func(t *testing.T) {
			if got := CitationSection(tc.path); got != tc.want {
				t.Errorf("CitationSection(%v) differs:\n%s", tc.path, cmp.Diff(tc.want, got))
			}
		})
	}
}

// TestCitationPathOf: each built-in provider's path, and plain for one that says nothing.
func TestCitationPathOf(t *testing.T) {
	cases := []struct {
		p    Provider
		want CitationPath
	}{
		{NewAnthropic(AnthropicOptions{}), CiteNative},
		{Scripted{}, CiteNative},
		{NewOpenAI(OpenAIOptions{}), CiteTagged},
		{plainProvider{}, CitePlain},
	}
	for _, tc := range cases {
		if got := CitationPathOf(tc.p); got != tc.want {
			t.Errorf("CitationPathOf(%T) = %v, want %v", tc.p, got, tc.want)
		}
	}
}

// plainProvider is a provider that says nothing of citations: the scripted model's answers
// without its CitationPath.
type plainProvider struct{}

func (plainProvider) Stream(ctx context.Context, req Request, emit func(Event) error) error {
	return Scripted{}.Stream(ctx, req, emit)
}

func (plainProvider) ImagesAllowed() bool { return false }

// TestToolEndOutput: tool_end shows text as it is and other blocks as placeholders (api.md §5).
func TestToolEndOutput(t *testing.T) {
	got := toolEndOutput([]Block{{Type: BlockText, Text: "note"}, {Type: BlockSearchResult, Source: "s"}, {Type: BlockSearchResult}})
	want := "note\n\n[search_result block, not shown in this event]\n\n[search_result block, not shown in this event]"
	if got != want {
		t.Errorf("toolEndOutput = %q, want %q", got, want)
	}
}
