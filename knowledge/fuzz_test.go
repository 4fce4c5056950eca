package knowledge

import (
	"database/sql"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzMatchQuery runs the search's queries built from any input against real SQLite: no input
// may make an FTS syntax error (or any other error).
func FuzzMatchQuery(f *testing.F) {
	for _, s := range []string{"", "How do I validate?", `"`, `a" OR "b`, "NEAR(a b)", "col:x", "*", "a AND NOT b",
		"^start", "x -y +z", "(((", "'; DROP TABLE doc_sections; --", "ＦＵＬＬ", "naïve café", "日本語の文書", "\x00\xff", "a*b*", "{x y}"} {
		f.Add(s)
	}
	db, err := sql.Open("sqlite", "file::memory:")
	if err != nil {
		f.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	for _, ft := range ftsTables {
		if ft.base != "doc_sections" {
			continue
		}
		if _, err := db.Exec(referenceTables[len(referenceTables)-1]); err != nil {
			f.Fatal(err)
		}
		for _, s := range ft.statements() {
			if _, err := db.Exec(s); err != nil {
				f.Fatal(err)
			}
		}
	}
	if _, err := db.Exec(`INSERT INTO doc_sections (doc_url, doc_title, anchor, heading_path, title, text, position, content_sha256, synced_at)
		VALUES ('u', 'T', '', 'T > Validation', 'Validation', 'How do I validate a dataset? naïve café 日本語', 0, 'x', 'now')`); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, q string) {
		if _, err := searchSections(t.Context(), db, q, 5); err != nil {
			m, p, _ := MatchQuery(q)
			t.Fatalf("query %q (match %q, phrase %q): %v", q, m, p, err)
		}
	})
}

func seedDocs(f *testing.F, ext string) {
	for _, d := range testDocs {
		if !strings.HasSuffix(d.file, ext) {
			continue
		}
		b, err := os.ReadFile(filepath.Join("testdata", "docs", d.file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b))
	}
}

// checkSections holds for the sections of any document: positions in order, every text
// non-empty and within MaxSectionChars, every path under the doc title.
func checkSections(t *testing.T, secs []Section, title string) {
	for i, s := range secs {
		if s.Position != i {
			t.Fatalf("section %d has position %d", i, s.Position)
		}
		if n := utf8.RuneCountInString(s.Text); n == 0 || n > MaxSectionChars || strings.TrimSpace(s.Text) != s.Text {
			t.Fatalf("section %d: %d characters, %q", i, n, s.Text)
		}
		if s.HeadingPath != title && !strings.HasPrefix(s.HeadingPath, title+" > ") {
			t.Fatalf("section %d: path %q not under %q", i, s.HeadingPath, title)
		}
	}
}

// FuzzConvertHTML converts any page: the result is valid UTF-8, its sections keep the
// rules, and every anchor is one the converter kept from the page.
func FuzzConvertHTML(f *testing.F) {
	seedDocs(f, ".html")
	for _, s := range []string{"<!DOCTYPE html><h1 id=a>x</h1>", "<html><pre>```</pre><p># x</p>", "<html><ul><li><h2 id=z>in list</h2></li></ul>",
		"<html><table><tr><td>a|b<h3>c</h3></td></tr></table>", "<html><p>---</p><p>===</p><p>1) x</p>", "<html><blockquote><h2>q</h2></blockquote>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, page string) {
		conv := Convert([]byte(page), "text/html", "html", "https://x.org/a/b.html")
		content := Clean(conv.Markdown)
		if !utf8.ValidString(content) {
			t.Fatal("invalid UTF-8")
		}
		anchors := map[string]bool{"": true}
		for _, h := range conv.Headings {
			anchors[h.Anchor] = true
		}
		secs := Sectionize("https://x.org/a/b.html", "Doc", content, conv.HTML, conv.Headings)
		checkSections(t, secs, "Doc")
		for _, s := range secs {
			if !anchors[s.Anchor] {
				t.Fatalf("anchor %q is not one of the page's", s.Anchor)
			}
		}
	})
}

// FuzzSectionize splits any Markdown document: the sections keep the rules.
func FuzzSectionize(f *testing.F) {
	seedDocs(f, ".md")
	for _, s := range []string{"# T\n\ntext", "Setext\n===\n\nx\n---\n", "```\n# not\n```\n# yes\nz", "#\n##\n###\n", "    # indented code\n", strings.Repeat("a", 9000), "> # q\n# n\n", "- # l\n# n\n", "> a\n> ---\n# b\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, md string) {
		content := Clean(md)
		checkSections(t, Sectionize("u", "Doc", content, false, nil), "Doc")
	})
}
