package sandbox

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestClipWriter(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
		trunc  bool
	}{
		{name: "cap smaller than the marker", limit: 10, writes: []string{strings.Repeat("a", 20)}, want: "aaaaaa", trunc: true},
		{name: "empty", limit: 10, writes: nil, want: ""},
		{name: "fits", limit: 10, writes: []string{"abc", "def"}, want: "abcdef"},
		{name: "exactly the limit", limit: 10, writes: []string{"0123456789"}, want: "0123456789"},
		{name: "exactly the limit in pieces", limit: 10, writes: []string{"012345", "6", "789"}, want: "0123456789"},
		{name: "multibyte fits", limit: 5, writes: []string{"héllo"}, want: "héllo"},
		{name: "split rune fits", limit: 5, writes: []string{"h\xc3", "\xa9llo"}, want: "héllo"},
		{
			name:   "clipped keeps head 3/5 and tail",
			limit:  60,
			writes: []string{strings.Repeat("a", 50), strings.Repeat("b", 50), strings.Repeat("c", 50)},
			// The marker is 32 characters, so the head shrinks to 28 and there is no tail.
			want:  strings.Repeat("a", 28) + "\n... 122 characters omitted ...\n",
			trunc: true,
		},
		{
			name:   "clipped with a tail",
			limit:  100,
			writes: []string{strings.Repeat("a", 100), strings.Repeat("z", 100)},
			want:   strings.Repeat("a", 60) + "\n... 132 characters omitted ...\n" + strings.Repeat("z", 8),
			trunc:  true,
		},
		{
			name:   "clipped multibyte tail stays whole",
			limit:  100,
			writes: []string{strings.Repeat("é", 150), strings.Repeat("€", 150)},
			want:   strings.Repeat("é", 60) + "\n... 232 characters omitted ...\n" + strings.Repeat("€", 8),
			trunc:  true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newClipWriter(tc.limit)
			total := 0
			for _, s := range tc.writes {
				n, err := w.Write([]byte(s))
				if n != len(s) || err != nil {
					t.Fatalf("Write(%q) = %d, %v; want %d, nil", s, n, err, len(s))
				}
				total += len(s)
			}
			got := w.String()
			if got != tc.want {
				t.Errorf("String() = %q\nwant       %q", got, tc.want)
			}
			if w.Truncated() != tc.trunc {
				t.Errorf("Truncated() = %v, want %v", w.Truncated(), tc.trunc)
			}
			if n := utf8.RuneCountInString(got); n > tc.limit {
				t.Errorf("String() has %d characters, over the limit %d", n, tc.limit)
			}
		})
	}
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
