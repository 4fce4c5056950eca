package ingest

import (
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/encoding/charmap"

	"github.com/osc-assistant/assistant/knowledge"
)

// MATLAB help text (knowledge.md §6.7): the comment block above a function line (the
// reference's rule) and the block right below it (MathWorks' help style, which the reference
// misses), or, when no function has either, the file's leading comment block as a script's.

// MatlabSymbol is one documented symbol of a MATLAB file.
type MatlabSymbol struct {
	Name string
	// Type is "function" or "script".
	Type      string
	Line      int // 1-based
	Docstring string
}

// matlabFunction matches a function line: optional indentation, "function", optional outputs
// ("[a, b] =" or "a ="), the name (a property accessor's "get.Name" too), then "(", the end of
// the line, or what may follow a name without arguments.
var matlabFunction = regexp.MustCompile(`^\s*function(?:\s+(?:(?:\[[^\]]*\]|[A-Za-z]\w*)\s*=\s*)?|\s*\[[^\]]*\]\s*=\s*)([A-Za-z]\w*(?:\.[A-Za-z]\w*)?)\s*(?:[(;,%]|$)`)

// maxMatlabSymbols bounds the symbols taken from one file.
const maxMatlabSymbols = 5000

// ParseMatlab returns the documented symbols of a MATLAB file at filePath (the name of a
// script's symbol). A function takes the contiguous comment block above its function line
// (blank lines inside it skipped; a block that starts right under another function's line is
// that function's help, not this one's) and the block directly below it, joined by a blank
// line; each line loses leading white space, its leading %s and one space after them. Its
// line is the first of the block above, else the function line. When no function has help,
// the leading comment block of the file (blank lines skipped) is the script's, at line 1.
// Same-named functions of a file keep the first. Text that is not UTF-8 is read as
// Windows-1252, as MATLAB files often are.
func ParseMatlab(filePath string, src []byte) []MatlabSymbol {
	text := string(src)
	if !utf8.Valid(src) {
		if dec, err := charmap.Windows1252.NewDecoder().Bytes(src); err == nil {
			text = string(dec)
		} else {
			text = strings.ToValidUTF8(text, "\uFFFD")
		}
	}
	text = strings.TrimPrefix(text, "\uFEFF")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = strings.TrimSuffix(l, "\r")
	}
	isFunc := make([]string, len(lines)) // the function's name on a function line
	for i, l := range lines {
		if strings.Contains(l, "function") { // cheap test before the regexp
			if m := matlabFunction.FindStringSubmatch(l); m != nil {
				isFunc[i] = m[1]
			}
		}
	}
	var out []MatlabSymbol
	seen := map[string]bool{}
	for i, name := range isFunc {
		if name == "" || seen[name] || len(out) >= maxMatlabSymbols {
			continue
		}
		above, first := matlabAbove(lines, isFunc, i)
		below := matlabBelow(lines, i)
		doc := strings.TrimSpace(strings.Join(nonEmpty(above, below), "\n\n"))
		if doc == "" {
			continue
		}
		line := i + 1
		if first >= 0 {
			line = first + 1
		}
		seen[name] = true
		out = append(out, MatlabSymbol{Name: name, Type: "function", Line: line, Docstring: capChars(doc, knowledge.CapDocstring)})
	}
	if len(out) > 0 {
		return out
	}
	var head []string
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "%") {
			break
		}
		head = append(head, uncomment(t))
	}
	if doc := strings.TrimSpace(strings.Join(head, "\n")); doc != "" {
		name := strings.TrimSuffix(path.Base(filePath), path.Ext(filePath))
		return []MatlabSymbol{{Name: name, Type: "script", Line: 1, Docstring: capChars(doc, knowledge.CapDocstring)}}
	}
	return nil
}

// matlabAbove is the comment block above line i and the index of its first line (-1 when
// there is none). Blank lines inside the block are skipped. The lines right under another
// function's line (up to a blank line) are that function's help, not this one's.
func matlabAbove(lines, isFunc []string, i int) (string, int) {
	var idx []int // the block's lines, bottom up
	j := i - 1
	for ; j >= 0; j-- {
		t := strings.TrimSpace(lines[j])
		if t == "" {
			continue
		}
		if !strings.HasPrefix(t, "%") {
			break
		}
		idx = append(idx, j)
	}
	slices.Reverse(idx)
	if j >= 0 && isFunc[j] != "" {
		k := 0
		for k < len(idx) && idx[k] == j+1+k {
			k++
		}
		idx = idx[k:]
	}
	if len(idx) == 0 {
		return "", -1
	}
	block := make([]string, len(idx))
	for k, n := range idx {
		block[k] = uncomment(strings.TrimSpace(lines[n]))
	}
	return strings.TrimSpace(strings.Join(block, "\n")), idx[0]
}

// matlabBelow is the comment block directly below line i, ending at the first line that is
// not a comment (a blank one too, as MATLAB's help does).
func matlabBelow(lines []string, i int) string {
	var block []string
	for j := i + 1; j < len(lines); j++ {
		t := strings.TrimSpace(lines[j])
		if !strings.HasPrefix(t, "%") {
			break
		}
		block = append(block, uncomment(t))
	}
	return strings.TrimSpace(strings.Join(block, "\n"))
}

// uncomment drops a trimmed comment line's leading %s and one space after them.
func uncomment(t string) string {
	t = strings.TrimLeft(t, "%")
	return strings.TrimPrefix(t, " ")
}

func nonEmpty(ss ...string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}
