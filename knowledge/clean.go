package knowledge

import (
	"io"
	"regexp"
	"strings"

	"golang.org/x/net/html"
)

// Clean applies the spec's cleaning steps to a document's Markdown, in order (§3.3 step 4):
// (1) HTML tags stripped, their text kept and character references decoded; (2) ![alt](url)
// becomes [Image: alt]; (3) [text](url) becomes "text (url)", or the url alone when both are
// equal after trimming; (4) a blank line before an opening code fence that follows a
// non-blank line and after a closing fence followed by a non-blank line; (5) a line whose
// trimmed text starts with # gets a blank line before and after it; (6) tabs become 4
// spaces, trailing whitespace is trimmed and runs of blank lines become one. We differ: (1),
// (3) and (5) never touch fenced code or inline code spans.
func Clean(md string) string {
	md = strings.ReplaceAll(md, "\r\n", "\n")
	lines := strings.Split(md, "\n")
	code := fencedLines(lines)

	// Steps (1)-(3) run over each stretch of text lines between fences, so a tag or link
	// may span lines; code spans inside a stretch are kept as they are.
	var out []string
	for i := 0; i < len(lines); {
		if code[i] != notCode {
			out = append(out, lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && code[j] == notCode {
			j++
		}
		out = append(out, strings.Split(cleanText(strings.Join(lines[i:j], "\n")), "\n")...)
		i = j
	}
	// Recompute the fences: step (1) cannot create or remove one, since a fence line has no
	// tag to strip that would change its start, but the line count may have changed.
	lines = out
	code = fencedLines(lines)

	// Steps (4) and (5): blank lines around fences and heading-like lines.
	var spaced []string
	blankLast := func() bool { return len(spaced) == 0 || strings.TrimSpace(spaced[len(spaced)-1]) == "" }
	for i, line := range lines {
		next := ""
		hasNext := i+1 < len(lines)
		if hasNext {
			next = lines[i+1]
		}
		switch code[i] {
		case fenceOpen:
			if !blankLast() {
				spaced = append(spaced, "")
			}
			spaced = append(spaced, line)
		case fenceClose:
			spaced = append(spaced, line)
			if hasNext && strings.TrimSpace(next) != "" {
				spaced = append(spaced, "")
			}
		case notCode:
			if strings.HasPrefix(strings.TrimSpace(line), "#") {
				if !blankLast() {
					spaced = append(spaced, "")
				}
				spaced = append(spaced, line)
				if hasNext && strings.TrimSpace(next) != "" {
					spaced = append(spaced, "")
				}
				continue
			}
			spaced = append(spaced, line)
		default:
			spaced = append(spaced, line)
		}
	}

	// Step (6).
	var b strings.Builder
	blanks := 0
	for _, line := range spaced {
		line = strings.TrimRight(strings.ReplaceAll(line, "\t", "    "), " \t\r\f\v")
		if line == "" {
			blanks++
			if blanks > 1 {
				continue
			}
		} else {
			blanks = 0
		}
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.Trim(b.String(), "\n") + "\n"
}

// Kinds of line, for the cleaning steps.
const (
	notCode = iota
	fenceOpen
	fenceClose
	inCode
)

// fencedLines marks the lines of fenced code blocks (CommonMark's rule: a run of three or
// more backticks or tildes opens, a run of the same character at least as long with nothing
// after it closes, an unclosed block runs to the end). Any indentation is allowed, since a
// fence inside a nested list item is indented more than three spaces.
func fencedLines(lines []string) []int {
	kinds := make([]int, len(lines))
	var ch byte
	open := 0
	for i, line := range lines {
		t := strings.TrimLeft(line, " \t")
		if open == 0 {
			if n, c := fenceRun(t); n >= 3 && (c == '~' || !strings.Contains(t[n:], "`")) {
				kinds[i], ch, open = fenceOpen, c, n
			}
			continue
		}
		if n, c := fenceRun(t); c == ch && n >= open && strings.TrimSpace(t[n:]) == "" {
			kinds[i], open = fenceClose, 0
			continue
		}
		kinds[i] = inCode
	}
	return kinds
}

func fenceRun(t string) (int, byte) {
	if t == "" || (t[0] != '`' && t[0] != '~') {
		return 0, 0
	}
	n := 0
	for n < len(t) && t[n] == t[0] {
		n++
	}
	return n, t[0]
}

var (
	imageRE = regexp.MustCompile(`!\[([^\]\n]*)\]\(([^)\n]*)\)`)
	linkRE  = regexp.MustCompile(`\[([^\]\n]+)\]\(([^)\n]+)\)`)
)

// cleanText applies steps (1)-(3) to text outside fences, leaving code spans as they are.
func cleanText(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		start, end := nextCodeSpan(s)
		if start < 0 {
			b.WriteString(cleanProse(s))
			break
		}
		b.WriteString(cleanProse(s[:start]))
		b.WriteString(s[start:end])
		s = s[end:]
	}
	return b.String()
}

// nextCodeSpan finds the first code span in s (CommonMark: a run of n backticks up to the next
// run of exactly n); -1 when there is none. A backslash-escaped backtick opens nothing.
func nextCodeSpan(s string) (int, int) {
	for i := 0; i < len(s); {
		if s[i] == '\\' {
			i += 2
			continue
		}
		if s[i] != '`' {
			i++
			continue
		}
		n := 0
		for i+n < len(s) && s[i+n] == '`' {
			n++
		}
		for j := i + n; j < len(s); {
			if s[j] != '`' {
				j++
				continue
			}
			m := 0
			for j+m < len(s) && s[j+m] == '`' {
				m++
			}
			if m == n {
				return i, j + m
			}
			j += m
		}
		i += n // no closing run: the backticks are literal
	}
	return -1, -1
}

// cleanProse is steps (1)-(3) on text without code.
func cleanProse(s string) string {
	s = stripTags(s)
	s = imageRE.ReplaceAllString(s, "[Image: $1]")
	return linkRE.ReplaceAllStringFunc(s, func(m string) string {
		sub := linkRE.FindStringSubmatch(m)
		text, href := strings.TrimSpace(sub[1]), strings.TrimSpace(sub[2])
		if text == href {
			return href
		}
		return sub[1] + " (" + sub[2] + ")"
	})
}

// stripTags removes HTML tags and comments with the HTML tokenizer, keeping text and decoding
// character references; what is not a tag ("a < b", "<3") stays text.
func stripTags(s string) string {
	if !strings.ContainsAny(s, "<&") {
		return s
	}
	z := html.NewTokenizer(strings.NewReader(s))
	var b strings.Builder
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				// An unfinished tag at the end is not a tag: keep what the tokenizer held back.
				b.Write(z.Raw())
			}
			return b.String()
		case html.TextToken:
			b.Write(z.Text())
		}
	}
}
