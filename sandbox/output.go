package sandbox

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// clipWriter captures a stream the way the widget clips it: when the text is longer than limit
// characters (code points), it keeps the first 3/5 and the last part, with a
// "\n... N characters omitted ...\n" marker between them, and the result is at most limit
// characters long. It never fails and never blocks the writer, so the program keeps running
// after the cap is reached; memory stays bounded by about 4 bytes per character of limit.
type clipWriter struct {
	limit     int
	headLimit int    // characters kept from the start
	head      []byte // the first headLimit characters
	headChars int
	tail      []byte // ring buffer of the last bytes written after the head
	tailPos   int    // next write position in tail once it is full
	tailFull  bool
	chars     int64 // characters written in total
	bytes     int64 // bytes written in total
}

func newClipWriter(limit int) *clipWriter {
	if limit < 0 {
		limit = 0
	}
	head := limit * 3 / 5
	// The tail window holds up to the whole limit (in bytes, a character is at most 4) so the
	// text can be rebuilt exactly whenever it fits.
	return &clipWriter{limit: limit, headLimit: head, tail: make([]byte, 0, 4*(limit-head)+4)}
}

// Write implements io.Writer. It always reports success.
func (w *clipWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.bytes += int64(n)
	w.chars += int64(countChars(p))
	if len(w.tail) == 0 && !w.tailFull {
		// Still filling the head: take bytes up to the first character past headLimit, so a
		// character split across writes stays whole.
		i := 0
		for ; i < len(p); i++ {
			if p[i]&0xC0 != 0x80 {
				if w.headChars == w.headLimit {
					break
				}
				w.headChars++
			}
		}
		w.head = append(w.head, p[:i]...)
		p = p[i:]
	}
	if len(p) > 0 {
		w.appendTail(p)
	}
	return n, nil
}

func (w *clipWriter) appendTail(p []byte) {
	c := cap(w.tail)
	if c == 0 {
		return
	}
	if len(p) >= c {
		w.tail = append(w.tail[:0], p[len(p)-c:]...)
		w.tailPos, w.tailFull = 0, true
		return
	}
	if !w.tailFull {
		room := c - len(w.tail)
		if len(p) <= room {
			w.tail = append(w.tail, p...)
			if len(w.tail) == c {
				w.tailFull = true
			}
			return
		}
		w.tail = append(w.tail, p[:room]...)
		p = p[room:]
		w.tailFull, w.tailPos = true, 0
	}
	for len(p) > 0 {
		k := copy(w.tail[w.tailPos:], p)
		p = p[k:]
		w.tailPos = (w.tailPos + k) % c
	}
}

// tailBytes returns the ring buffer in write order.
func (w *clipWriter) tailBytes() []byte {
	if !w.tailFull {
		return w.tail
	}
	out := make([]byte, 0, len(w.tail))
	out = append(out, w.tail[w.tailPos:]...)
	return append(out, w.tail[:w.tailPos]...)
}

// Truncated reports whether characters were left out.
func (w *clipWriter) Truncated() bool { return w.chars > int64(w.limit) }

// String returns the captured text, clipped to at most limit characters. Invalid UTF-8 is
// replaced with U+FFFD.
func (w *clipWriter) String() string {
	tail := w.tailBytes()
	if !w.Truncated() {
		return strings.ToValidUTF8(string(w.head)+string(tail), "\uFFFD")
	}
	// Drop a partial character at the start of the ring.
	for len(tail) > 0 && tail[0]&0xC0 == 0x80 {
		tail = tail[1:]
	}
	// Size the marker for the largest count it could report, so the text never exceeds limit.
	widest := utf8.RuneCountInString(marker(w.chars))
	if widest > w.limit { // a cap too small for the marker: the head alone
		return strings.ToValidUTF8(firstChars(w.head, w.limit), "\uFFFD")
	}
	head := firstChars(w.head, min(w.headChars, w.limit-widest))
	headChars := utf8.RuneCountInString(head)
	keep := w.limit - headChars - widest
	omitted := w.chars - int64(headChars) - int64(keep)
	return strings.ToValidUTF8(head+marker(omitted)+lastChars(tail, keep), "\uFFFD")
}

func marker(omitted int64) string {
	return fmt.Sprintf("\n... %d characters omitted ...\n", omitted)
}

// countChars counts the code points in p, treating every byte that does not continue a UTF-8
// sequence as the start of one, so counts over split writes add up.
func countChars(p []byte) int {
	n := 0
	for _, b := range p {
		if b&0xC0 != 0x80 {
			n++
		}
	}
	return n
}

// firstChars returns the first n characters of b.
func firstChars(b []byte, n int) string {
	i := 0
	for ; i < len(b); i++ {
		if b[i]&0xC0 != 0x80 {
			if n == 0 {
				break
			}
			n--
		}
	}
	return string(b[:i])
}

// lastChars returns the last n characters of b.
func lastChars(b []byte, n int) string {
	i := len(b)
	for n > 0 && i > 0 {
		i--
		if b[i]&0xC0 != 0x80 {
			n--
		}
	}
	return string(b[i:])
}
