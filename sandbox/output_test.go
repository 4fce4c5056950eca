package sandbox

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestClipWriter runs the clipping vectors (web/testdata/clip.json), which the browser's clip
// (web/static/lib.mjs) runs too, writing each piece of the text as one write.
func TestClipWriter(t *testing.T) {
	var v struct {
		Cases []struct {
			Name  string   `json:"name"`
			Limit int      `json:"limit"`
			Text  [][2]any `json:"text"`
			Want  [][2]any `json:"want"`
		} `json:"cases"`
	}
	readVectors(t, "clip.json", &v)
	piece := func(p [2]any) string { return strings.Repeat(p[0].(string), int(p[1].(float64))) }
	for _, tc := range v.Cases {
		var writes []string
		var want strings.Builder
		for _, p := range tc.Text {
			writes = append(writes, piece(p))
		}
		for _, p := range tc.Want {
			want.WriteString(piece(p))
		}
		checkClip(t, tc.Name, tc.Limit, writes, want.String(), want.String() != strings.Join(writes, ""))
	}
	// A character split across writes stays whole (bytes, which the vectors cannot hold).
	checkClip(t, "split rune fits", 5, []string{"h\xc3", "\xa9llo"}, "héllo", false)
}

func checkClip(t *testing.T, name string, limit int, writes []string, want string, trunc bool) {
	t.Run(name, func(t *testing.T) {
		w := newClipWriter(limit)
		for _, s := range writes {
			n, err := w.Write([]byte(s))
			if n != len(s) || err != nil {
				t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
			}
		}
		got := w.String()
		if got != want {
			t.Errorf("String() = %q\nwant       %q", got, want)
		}
		if w.Truncated() != trunc {
			t.Errorf("Truncated() = %v, want %v", w.Truncated(), trunc)
		}
		if n := utf8.RuneCountInString(got); n > limit {
			t.Errorf("String() has %d characters, over the limit %d", n, limit)
		}
	})
}

func TestClipWriterManySmallWrites(t *testing.T) {
	const limit = 1000
	w := newClipWriter(limit)
	var all strings.Builder
	for i := range 100000 {
		s := strings.Repeat("x", i%7) + "\n"
		all.WriteString(s)
		_, _ = w.Write([]byte(s))
	}
	got := w.String()
	if !w.Truncated() {
		t.Fatal("Truncated() = false after 400 KB into a 1000-character cap")
	}
	if n := utf8.RuneCountInString(got); n != limit {
		t.Errorf("clipped text has %d characters, want exactly %d", n, limit)
	}
	head, tail, ok := strings.Cut(got, "\n... ")
	if !ok {
		t.Fatalf("no omission marker in %q", got)
	}
	if !strings.HasPrefix(all.String(), head) {
		t.Errorf("head is not the start of the text")
	}
	_, tail, _ = strings.Cut(tail, " characters omitted ...\n")
	if !strings.HasSuffix(all.String(), tail) {
		t.Errorf("tail %q is not the end of the text", tail)
	}
}
