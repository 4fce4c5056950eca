package knowledge

import (
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	"github.com/yuin/goldmark/text"
)

// MaxSectionChars is the most characters (code points) of text one doc_sections row holds.
const MaxSectionChars = 4000

// Section is one row of doc_sections (spec §2.3): a part of a document under one heading.
type Section struct {
	DocURL   string
	DocTitle string
	// Anchor is the heading's id on the page ("" when none); the section's link is
	// DocURL#Anchor.
	Anchor string
	// HeadingPath is "{doc title} > {H1…} > {H3}", an H1 equal to the title not repeated.
	HeadingPath string
	// Title is the section's heading, or the doc title for the text before the first heading.
	Title string
	// Text is the cleaned Markdown under the heading, without the heading line.
	Text     string
	Position int
}

// URL is the section's link: the document's URL, plus #anchor when it has one.
func (s Section) URL() string {
	if s.Anchor == "" {
		return s.DocURL
	}
	return s.DocURL + "#" + s.Anchor
}

// ContentSHA256 is the hex sha256 of a cleaned document, stored with each of its sections.
func ContentSHA256(content string) string {
	sum := sha256.Sum256([]byte(content))
	return hex.EncodeToString(sum[:])
}

// markdown is the one goldmark parser (CommonMark; safe for concurrent use).
var markdown = goldmark.New()

type headingAt struct {
	level      int
	text       string
	start, end int // byte offsets: the heading's first line's start, and just after its last line
}

// headingsOf returns the document's top-level headings as the Markdown parser reads them
// (ATX and setext, never inside code, quotes or lists), in order.
func headingsOf(src []byte) []headingAt {
	doc := markdown.Parser().Parse(text.NewReader(src))
	var hs []headingAt
	ast.Walk(doc, func(n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		h, ok := n.(*ast.Heading)
		if !ok {
			return ast.WalkContinue, nil
		}
		if _, top := h.Parent().(*ast.Document); !top {
			// A heading inside a quote or a list item is part of that block's text, not a
			// section of the document.
			return ast.WalkSkipChildren, nil
		}
		lines := h.Lines()
		if lines.Len() == 0 {
			return ast.WalkSkipChildren, nil // "#" alone: no title
		}
		first, last := lines.At(0), lines.At(lines.Len()-1)
		start := lineStart(src, first.Start)
		end := lineEnd(src, last.Stop)
		if !isATX(src[start:]) { // setext: the underline is the next line
			end = lineEnd(src, end)
		}
		hs = append(hs, headingAt{level: h.Level, text: oneLine(plainOf(h, src)), start: start, end: end})
		return ast.WalkSkipChildren, nil
	})
	return hs
}

func lineStart(src []byte, i int) int {
	for i > 0 && src[i-1] != '\n' {
		i--
	}
	return i
}

// lineEnd is the offset just past the newline ending the line that holds i (or len(src)).
func lineEnd(src []byte, i int) int {
	for i < len(src) && src[i] != '\n' {
		i++
	}
	if i < len(src) {
		i++
	}
	return i
}

// isATX reports whether a line is an ATX heading line: up to 3 spaces, then #.
func isATX(line []byte) bool {
	i := 0
	for i < len(line) && i < 3 && line[i] == ' ' {
		i++
	}
	return i < len(line) && line[i] == '#'
}

// plainOf is the text of an inline tree: text, code spans' contents, links' text.
func plainOf(n ast.Node, src []byte) string {
	var b strings.Builder
	ast.Walk(n, func(c ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		switch t := c.(type) {
		case *ast.Text:
			b.Write(t.Segment.Value(src))
			if t.SoftLineBreak() || t.HardLineBreak() {
				b.WriteByte(' ')
			}
		case *ast.String:
			b.Write(t.Value)
		case *ast.RawHTML:
			return ast.WalkSkipChildren, nil
		}
		return ast.WalkContinue, nil
	})
	return b.String()
}

// Sectionize splits a cleaned document into sections (spec §3.2 "Sections"): at headings of
// levels 1–3 outside code; the text before the first heading is position 0 under the doc
// title; heading-only sections are skipped; a section over MaxSectionChars is split at blank
// lines outside code fences (with a hard cut inside a longer paragraph) into rows sharing its
// heading path and anchor. Anchors come from headings (what the HTML converter kept, matched
// to the parsed headings in order, when fromHTML) or, for Markdown, are slugs of the heading
// text.
func Sectionize(docURL, docTitle, content string, fromHTML bool, headings []Heading) []Section {
	src := []byte(content)
	hs := headingsOf(src)
	slugs := newSlugger()
	var secs []Section
	add := func(anchor, path, title, body string) {
		for _, part := range splitSection(strings.TrimSpace(body)) {
			secs = append(secs, Section{DocURL: docURL, DocTitle: docTitle, Anchor: anchor,
				HeadingPath: path, Title: title, Text: part, Position: len(secs)})
		}
	}
	leadEnd := len(src)
	if len(hs) > 0 {
		leadEnd = hs[0].start
	}
	add("", docTitle, docTitle, string(src[:leadEnd]))

	var stack [3]string // the current H1, H2, H3
	next := 0           // the next converter heading to match
	for i, h := range hs {
		anchor := ""
		if fromHTML {
			anchor, next = matchHeading(headings, next, h)
		} else {
			anchor = slugs.slug(h.text)
		}
		if h.level > 3 {
			continue // kept inside its section's text
		}
		stack[h.level-1] = h.text
		for l := h.level; l < 3; l++ {
			stack[l] = ""
		}
		parts := []string{docTitle}
		for l, t := range stack {
			if t == "" || (l == 0 && t == docTitle) {
				continue
			}
			parts = append(parts, t)
		}
		// The section runs to the next heading of level 1–3.
		end := len(src)
		for _, n := range hs[i+1:] {
			if n.level <= 3 {
				end = n.start
				break
			}
		}
		add(anchor, strings.Join(parts, " > "), h.text, string(src[min(h.end, end):end]))
	}
	return secs
}

// matchHeading finds the converter's heading for a parsed one: the next few with the same
// level and text, else the next one if its level matches; it returns the anchor and where
// to look next.
func matchHeading(hs []Heading, next int, h headingAt) (string, int) {
	want := letters(h.text)
	for k := next; k < len(hs) && k < next+4; k++ {
		if hs[k].Level == h.level && letters(hs[k].Text) == want {
			return hs[k].Anchor, k + 1
		}
	}
	if next < len(hs) && hs[next].Level == h.level {
		return hs[next].Anchor, next + 1
	}
	return "", next
}

func letters(s string) string {
	var b strings.Builder
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// slugger makes Markdown anchors: lower-case; letters, digits, - and _ kept; spaces to -;
// everything else dropped; a repeat gets -1, -2, … (GitHub's rule).
type slugger struct{ seen map[string]int }

func newSlugger() *slugger { return &slugger{seen: map[string]int{}} }

func (s *slugger) slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteByte('-')
		}
	}
	base := b.String()
	n, dup := s.seen[base]
	s.seen[base] = n + 1
	if dup {
		return base + "-" + strconv.Itoa(n)
	}
	return base
}

// splitSection cuts a section's text into parts of at most MaxSectionChars: whole paragraphs
// (separated by blank lines outside code fences) packed greedily, a longer one cut hard.
func splitSection(body string) []string {
	if body == "" {
		return nil
	}
	if utf8.RuneCountInString(body) <= MaxSectionChars {
		return []string{body}
	}
	lines := strings.Split(body, "\n")
	code := fencedLines(lines)
	var paras []string
	var cur []string
	for i, line := range lines {
		if strings.TrimSpace(line) == "" && code[i] == notCode {
			if len(cur) > 0 {
				paras = append(paras, strings.Join(cur, "\n"))
				cur = nil
			}
			continue
		}
		cur = append(cur, line)
	}
	if len(cur) > 0 {
		paras = append(paras, strings.Join(cur, "\n"))
	}
	var parts []string
	var b strings.Builder
	n := 0
	flush := func() {
		if t := strings.TrimSpace(b.String()); t != "" {
			parts = append(parts, t)
		}
		b.Reset()
		n = 0
	}
	for _, p := range paras {
		pn := utf8.RuneCountInString(p)
		if pn > MaxSectionChars {
			flush()
			parts = append(parts, hardCut(p, MaxSectionChars)...)
			continue
		}
		if n > 0 && n+2+pn > MaxSectionChars {
			flush()
		}
		if n > 0 {
			b.WriteString("\n\n")
			n += 2
		}
		b.WriteString(p)
		n += pn
	}
	flush()
	return parts
}

// hardCut cuts s into pieces of at most n code points.
func hardCut(s string, n int) []string {
	var out []string
	for s != "" {
		i, count := 0, 0
		for i < len(s) && count < n {
			_, size := utf8.DecodeRuneInString(s[i:])
			i += size
			count++
		}
		if piece := strings.TrimSpace(s[:i]); piece != "" {
			out = append(out, piece)
		}
		s = s[i:]
	}
	return out
}
