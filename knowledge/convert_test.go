package knowledge

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/osc-assistant/assistant/tests/golden"
)

// testDoc is one of the documents in testdata/docs, as a config would list it.
type testDoc struct {
	file, title, url, typ, contentType string
}

var testDocs = []testDoc{
	{"sphinx.html", "EAF specification", "https://docs.example.org/spec/index.html", "sphinx", "text/html; charset=utf-8"},
	{"mkdocs.html", "Tutorial: annotating a dataset", "https://docs.example.org/tutorial/", "mkdocs", "text/html"},
	{"faq.html", "EAF FAQ", "https://www.example.org/faq.html", "html", "text/html"},
	{"guide.md", "Python tools user guide", "https://docs.example.org/guide.md", "markdown", "text/plain"},
	{"governance.md", "Governance and contributing", "https://www.example.org/governance", "markdown", "text/markdown"},
	{"schema.json", "EAF schema", "https://www.example.org/schema.json", "json", "application/json"},
}

// renderSections writes sections in a form a reviewer can read in a golden file.
func renderSections(secs []Section) string {
	var b strings.Builder
	for _, s := range secs {
		fmt.Fprintf(&b, "=== %d %q\npath:  %s\ntitle: %s\nurl:   %s\n%s\n\n", s.Position, s.Anchor, s.HeadingPath, s.Title, s.URL(), s.Text)
	}
	return b.String()
}

// TestConvertGolden converts, cleans and sections each test document and compares the
// Markdown and the sections with golden files (go test ./knowledge -run TestConvertGolden -update).
func TestConvertGolden(t *testing.T) {
	for _, d := range testDocs {
		t.Run(d.file, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("testdata", "docs", d.file))
			if err != nil {
				t.Fatal(err)
			}
			conv := Convert(body, d.contentType, d.typ, d.url)
			content := Clean(conv.Markdown)
			golden.Check(t, filepath.Join("testdata", "golden", d.file+".md"), []byte(content))
			secs := Sectionize(d.url, d.title, content, conv.HTML, conv.Headings)
			golden.Check(t, filepath.Join("testdata", "golden", d.file+".sections.txt"), []byte(renderSections(secs)))
			for i, s := range secs {
				if s.Position != i {
					t.Errorf("section %d has position %d", i, s.Position)
				}
				if n := utf8.RuneCountInString(s.Text); n == 0 || n > MaxSectionChars {
					t.Errorf("section %d has %d characters", i, n)
				}
			}
		})
	}
}
