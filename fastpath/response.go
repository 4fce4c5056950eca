package fastpath

import (
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Response collects an answer: header lines, then Send with the status and body. The fast
// path adds the status line, Date, Content-Length and, when the connection ends after the
// answer, Connection: close, and writes it all with one writev. Nothing reaches the wire until
// Answer returns true, so an Answer that declines may leave a half-built Response behind.
type Response struct {
	header   []byte // the Answer's header lines, each ending in CRLF
	body     []byte // not copied: it must stay unchanged until written (precomputed bytes)
	sealed   *Sealed
	status   int
	sent     bool
	deadline time.Duration // 0: the server's WriteTimeout
	began    time.Time     // when the head was read and Answer called
	tag      string
	out      []byte // the head as written: status line, Date, framing, header
}

// Reset empties w and keeps its buffers, so one Response serves all of a connection's answers.
func (w *Response) Reset() {
	w.header = w.header[:0]
	w.body = nil
	w.sealed = nil
	w.status = 0
	w.sent = false
	w.tag = ""
	w.deadline = 0
}

// Header adds one header line. An empty name, or a name or value holding a CR, a LF or a NUL,
// is dropped rather than written, so a value taken from the request can never split the
// answer.
func (w *Response) Header(name, value string) {
	if name == "" || strings.ContainsAny(name, "\r\n\x00: ") || strings.ContainsAny(value, "\r\n\x00") {
		return
	}
	w.header = append(w.header, name...)
	w.header = append(w.header, ": "...)
	w.header = append(w.header, value...)
	w.header = append(w.header, "\r\n"...)
}

// HeaderBytes is Header with the value in bytes, copied (a view, so that a caller's buffer on
// its stack stays there).
func (w *Response) HeaderBytes(name string, value []byte) { w.Header(name, str(value)) }

// Send sets the status and the body (nil for none). Content-Length is len(body) for a status
// that has a body; a HEAD gets the same head and no body.
func (w *Response) Send(status int, body []byte) {
	w.status, w.body, w.sent = status, body, true
}

// SendSealed is Send for a body that also has a sealed copy (Seal(body)), sent from it with
// sendfile where the connection allows; f may be nil.
func (w *Response) SendSealed(status int, body []byte, f *Sealed) {
	w.Send(status, body)
	w.sealed = f
}

// HeaderValue is the value of the first header line named name (as written, case and all)
// that the Answer added, copied, or "".
func (w *Response) HeaderValue(name string) string {
	for rest := w.header; len(rest) > 0; {
		line, more, _ := bytes.Cut(rest, []byte("\r\n"))
		rest = more
		if k, v, ok := bytes.Cut(line, []byte(": ")); ok && string(k) == name {
			return string(v)
		}
	}
	return ""
}

// Began is when the request's head had been read and Answer was called.
func (w *Response) Began() time.Time { return w.began }

// Status is the status Send set.
func (w *Response) Status() int { return w.status }

// SetTag keeps a string of the Answer's (a route's name) for Sent, without allocating.
func (w *Response) SetTag(tag string) { w.tag = tag }

// Tag is what SetTag kept.
func (w *Response) Tag() string { return w.tag }

// WriteTimeout gives this answer d to be written instead of the server's WriteTimeout (a large
// file to a slow client).
func (w *Response) WriteTimeout(d time.Duration) { w.deadline = d }

// frame builds the head: status line, Date (date is the current one, formatted at most once a
// second), Content-Length, Connection: close when closing, then the Answer's header lines.
func (w *Response) frame(date []byte, closing bool) {
	b := w.out[:0]
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(w.status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(w.status)...)
	b = append(b, "\r\nDate: "...)
	b = append(b, date...)
	b = append(b, "\r\n"...)
	if bodyAllowed(w.status) {
		b = append(b, "Content-Length: "...)
		b = strconv.AppendInt(b, int64(len(w.body)), 10)
		b = append(b, "\r\n"...)
	}
	if closing {
		b = append(b, "Connection: close\r\n"...)
	}
	b = append(b, w.header...)
	b = append(b, "\r\n"...)
	w.out = b
}

// bodyAllowed reports whether a response with this status carries a body (RFC 9110 §6.4.1).
func bodyAllowed(status int) bool {
	return status >= 200 && status != http.StatusNoContent && status != http.StatusNotModified
}
