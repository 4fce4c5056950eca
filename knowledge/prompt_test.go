package knowledge

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/osc-assistant/assistant/tests/golden"
)

func TestPrompt(t *testing.T) {
	doc := func(title string, preload, has bool, content, desc string) DocState {
		return DocState{Doc: Doc{Title: title, URL: "https://x.org/" + strings.ToLower(title), Preload: preload, Description: desc}, HasContent: has, Content: content}
	}
	snap := &Snapshot{Docs: []DocState{
		doc("Spec", true, true, "spec text", ""),
		doc("Guide", false, false, "", "How to start"),
		doc("Failed", true, false, "", ""),
		doc("Long", true, true, strings.Repeat("a", 60), ""),
		doc("Later", true, true, "never shown", "moved"),
	}}
	p := snap.Prompt(50) // spec text (9) + 41 of Long, then Later moves
	golden.Check(t, filepath.Join("testdata", "golden", "prompt_preloaded.txt"), []byte(p.Preloaded))
	golden.Check(t, filepath.Join("testdata", "golden", "prompt_available.txt"), []byte(p.Available))
	if p.PreloadChars != 50 || len(p.Moved) != 1 || p.Moved[0].Title != "Later" || len(p.Unavailable) != 1 || p.Unavailable[0].Title != "Failed" {
		t.Errorf("chars %d, moved %v, unavailable %v", p.PreloadChars, p.Moved, p.Unavailable)
	}
	var names []string
	for _, d := range p.OnDemand {
		names = append(names, d.Title)
	}
	if strings.Join(names, ",") != "Guide,Failed,Later" {
		t.Errorf("on demand %v", names)
	}
	if got := (&Snapshot{}).Prompt(0); got.Preloaded != "" || got.Available != "" {
		t.Errorf("empty snapshot: %+v", got)
	}
	desc := RetrieveDescription("EAF", []Doc{{Title: "A", URL: "u1", Category: "getting_started"}, {Title: "B", URL: "u2", Category: "api-reference", Description: "the API"}, {Title: "C", URL: "u3", Category: "getting_started"}})
	golden.Check(t, filepath.Join("testdata", "golden", "retrieve_description.txt"), []byte(desc))
}

func TestSearchText(t *testing.T) {
	secs := []Section{
		{DocURL: "https://x.org/spec", Anchor: "tags", HeadingPath: "Spec > Tags", Text: "Tags are words."},
		{DocURL: "https://x.org/guide", HeadingPath: "Guide", Text: strings.Repeat("intro ", 300) + "\n" + strings.Repeat("filler ", 200) + "the needle is here " + strings.Repeat("after ", 400)},
	}
	golden.Check(t, filepath.Join("testdata", "golden", "search_text.txt"), []byte(SearchText("EAF", "eaf", "needle tags", secs, nil)))
	for _, tc := range []struct {
		err  error
		secs []Section
		want string
	}{
		{ErrNotInitialized, nil, "The EAF documentation index is not built yet. Use retrieve_eaf_docs with a URL from its list."},
		{ErrUnreadable, nil, "Error: the EAF knowledge database could not be read."},
		{nil, nil, "No documentation sections found for 'q'."},
	} {
		if got := SearchText("EAF", "eaf", "q", tc.secs, tc.err); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}
