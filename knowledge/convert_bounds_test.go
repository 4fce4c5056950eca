package knowledge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// para is about n bytes of words, numbered so that no two levels' text is the same.
func para(level, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "word%d_%d ", level, i)
	}
	return b.String()
}

// nestedTables is a page of depth tables, each in the first cell of the one around it, with
// about size bytes of text in all.
func nestedTables(depth, size int) string {
	per := size / depth / 3
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><body><main>")
	for i := range depth {
		fmt.Fprintf(&b, "<table><tr><th>%s</th><th>head %d</th></tr><tr><td>%s", para(i, per), i, para(i, per))
	}
	for i := depth - 1; i >= 0; i-- {
		fmt.Fprintf(&b, "</td><td>%s</td></tr></table>", para(i+depth, per))
	}
	b.WriteString("</main></body></html>")
	return b.String()
}

// nested is a page of depth copies of open around text, each level with its own text.
func nested(open, close string, depth, size int) string {
	per := size / depth
	var b strings.Builder
	b.WriteString("<!DOCTYPE html><html><body><main>")
	for i := range depth {
		b.WriteString(open + para(i, per))
	}
	for range depth {
		b.WriteString(close)
	}
	b.WriteString("</main></body></html>")
	return b.String()
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestConvertBounds: pages nested to make every level copy the text inside it (tables in
// cells, blocks in inline elements, emphasis in emphasis, permalinks in cells) convert to
// Markdown at most twice their size with allocations a bounded multiple of it; a page whose
// Markdown would pass the cap inside one block (a table, a paragraph) stops there.
func TestConvertBounds(t *testing.T) {
	const size = 1 << 20
	tests := []struct {
		name, page string
		// most is the most Markdown allowed: twice the page, or the cap plus what the line
		// that reached it ends with (a row's padding, a newline).
		most int
	}{
		{"tables nested 120 deep", nestedTables(120, size), 2 * size},
		{"span and div nested 250 deep", nested("<span><div>", "</div></span>", 250, size), 2 * size},
		{"bold and italic nested 250 deep", nested("<b><i>", "</i></b>", 250, size), 2 * size},
		{"permalinks in cells nested 100 deep", nested(`<table><tr><td><a href="#x">#`, "</a></td></tr></table>", 100, size), 2 * size},
		{"links in cells nested 100 deep", nested(`<table><tr><td><a href="https://x.org/">`, "</a></td></tr></table>", 100, size), 2 * size},
		{"a table past the cap", "<html><body><table>" + strings.Repeat("<tr><td>"+para(0, 1000)+"</td><td>x</td></tr>", 6000) + "</table>", maxConvertedBytes + 8000},
		{"a paragraph past the cap", "<html><body><p>" + para(0, 6<<20) + "</p>", maxConvertedBytes + len("\n")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var conv Converted
			bytes := allocated(func() { conv = Convert([]byte(tc.page), "text/html", "html", "https://x.org/a/") })
			t.Logf("page %d, markdown %d, allocated %d", len(tc.page), len(conv.Markdown), bytes)
			if n := len(conv.Markdown); n > tc.most {
				t.Errorf("%d bytes of Markdown from a %d-byte page, want at most %d", n, len(tc.page), tc.most)
			}
			if n := len(conv.Markdown); n < 1000 {
				t.Errorf("only %d bytes of Markdown: the page's text was lost", n)
			}
			// html.Parse alone takes about 10 times the page.
			if most := 40 * uint64(len(tc.page)); bytes > most {
				t.Errorf("%d MB allocated for a %d MB page, want at most %d MB", bytes>>20, len(tc.page)>>20, most>>20)
			}
		})
	}
}

// TestConvertCells: a nested table is its cell's text once, flat, and a long cell is cut.
func TestConvertCells(t *testing.T) {
	page := `<html><body><table><tr><th>outer</th></tr><tr><td>a <table><tr><td>inner one</td><td>inner two</td></tr></table> b</td></tr>` +
		`<tr><td>` + strings.Repeat("long ", 1000) + `</td></tr></table>`
	got := Convert([]byte(page), "text/html", "html", "").Markdown
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) != 4 || lines[0] != "| outer |" || lines[2] != "| a inner one inner two b |" {
		t.Fatalf("got %q", got)
	}
	if n := len([]rune(lines[3])); n > maxCellChars+len("|  …|") || !strings.HasSuffix(lines[3], "… |") {
		t.Errorf("the long cell has %d characters (%q...)", n, lines[3][:40])
	}
	if strings.Count(got, "inner one") != 1 {
		t.Errorf("the inner table's text is not written once: %q", got)
	}
}

// TestConvertContextEnds: a conversion whose context has ended writes nothing more.
func TestConvertContextEnds(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	page := "<html><body>" + strings.Repeat("<p>"+para(0, 100)+"</p>", 1000)
	if got := ConvertContext(ctx, []byte(page), "text/html", "html", "").Markdown; got != "" {
		t.Errorf("%d bytes written after the context ended", len(got))
	}
}

// TestConvertFuzzSeeds keeps the nested-table seed in FuzzConvertHTML's corpus.
func TestConvertFuzzSeeds(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "fuzz", "FuzzConvertHTML", "nested-tables"))
	if err != nil || !strings.Contains(string(b), strings.Repeat("<table><tr><td>", 120)) {
		t.Errorf("the nested tables seed is missing: %v", err)
	}
}
