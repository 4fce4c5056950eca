package mcp

import (
	"fmt"
	"unicode/utf8"
)

// clip cuts text as the widget clips a run's stdout (web/testdata/clip.json): past limit code
// points it keeps the first 3/5 and the end around a "\n... N characters omitted ...\n"
// marker, and is at most limit code points long.
func clip(s string, limit int) string {
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	r := []rune(s)
	headChars := limit * 3 / 5
	widest := utf8.RuneCountInString(marker(n))
	if widest > limit {
		return string(r[:headChars])
	}
	head := min(headChars, limit-widest)
	keep := limit - head - widest
	return string(r[:head]) + marker(n-head-keep) + string(r[n-keep:])
}

func marker(omitted int) string { return fmt.Sprintf("\n... %d characters omitted ...\n", omitted) }
