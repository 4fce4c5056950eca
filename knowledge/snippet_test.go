package knowledge

import (
	"fmt"
	"strings"
	"testing"
)

// longQuery is a 1,000-character query that repeats its words, as a pasted log or error
// message does: 60 distinct words, most of them many times.
func longQuery() string {
	var b strings.Builder
	for i := 0; b.Len() < 1000; i++ {
		fmt.Fprintf(&b, "word%d validation of the dataset ", i%60)
	}
	return b.String()[:1000]
}

// TestSnippetTermsBounded: a snippet looks for the search's own terms, the first 16
// distinct ones without stop words, not every word of a long query with its repeats.
func TestSnippetTermsBounded(t *testing.T) {
	q := longQuery()
	if n := len(Terms(q)); n < 100 {
		t.Fatalf("the query has only %d terms; the test needs many", n)
	}
	terms := snippetTerms(q)
	if len(terms) == 0 || len(terms) > maxTerms {
		t.Fatalf("%d terms looked for, want 1 to %d: %q", len(terms), maxTerms, terms)
	}
	seen := map[string]bool{}
	for _, term := range terms {
		if seen[term] || stopWords[term] {
			t.Errorf("term %q looked for twice or a stop word", term)
		}
		seen[term] = true
	}
	match, _, _ := MatchQuery(q)
	for _, term := range terms {
		if !strings.Contains(match, `"`+term+`"`) {
			t.Errorf("the snippet looks for %q, which the search does not match", term)
		}
	}
}

// TestSnippet: where the snippet starts, by case-insensitive word prefixes of the terms.
func TestSnippet(t *testing.T) {
	filler := strings.Repeat("lorem ipsum dolor sit amet\n", 100) // 2,700 characters
	tests := []struct {
		name, text, query string
		want              string // the snippet's start ("" for the text's start)
	}{
		{"short text", "Validation of ÉCOLE data", "école", ""},
		{"match early", "Validation first.\n" + filler, "validation", ""},
		{"match late", filler + "Le schéma ÉCOLE est décrit ici.\n" + filler, "école", "...lorem ipsum"},
		{"prefix of a word", filler + "Revalidation then Validators run.\n" + filler, "validator", "...lorem ipsum"},
		{"no match", filler + filler, "zebra", ""},
		{"stop words only", filler + "the end\n" + filler, "the", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Snippet(tc.text, tc.query, SnippetChars)
			if tc.want == "" {
				if got != Cut(tc.text, SnippetChars) {
					t.Errorf("got %.80q, want the text's start", got)
				}
				return
			}
			if !strings.HasPrefix(got, tc.want) {
				t.Errorf("got %.80q, want it to start with %q", got, tc.want)
			}
			head := strings.SplitN(strings.TrimPrefix(got, "..."), "\n", 2)[0]
			if head != "lorem ipsum dolor sit amet" {
				t.Errorf("the snippet does not start at a line: %q", head)
			}
		})
	}
	// The match itself is inside the snippet, by its case-folded form.
	late := filler + "Le schéma ÉCOLE est décrit ici.\n" + filler
	if got := Snippet(late, "école", SnippetChars); !strings.Contains(got, "ÉCOLE") {
		t.Errorf("the match is not in the snippet: %.80q", got)
	}
}

// BenchmarkSnippetLongQuery is the snippet work of one search result for a 1,000-character
// query over a section whose match is late (20 results are 20 of these).
func BenchmarkSnippetLongQuery(b *testing.B) {
	q := longQuery()
	text := strings.Repeat("lorem ipsum dolor sit amet\n", 140) + "word59 at last\n"
	for b.Loop() {
		Snippet(text, q, SnippetChars)
	}
}
