package mcp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
)

// MaxMessageBytes caps one JSON-RPC message read from an MCP server: a line of a stdio child,
// one event of an SSE stream, or a whole other HTTP body (a JSON answer, an error page). Past it
// the reader stops and the message is not read. A call holds at most one such message, and a
// server has at most Options.MaxCallsInFlight calls under way, so what answers hold in memory
// is bounded whatever the number of readers asking.
const MaxMessageBytes = 1 << 20

// TooLargeError is an answer of an MCP server longer than MaxMessageBytes: it was not read (the
// connection that carried it was dropped).
type TooLargeError struct {
	Server string
	Limit  int64 // bytes
}

// Error is the message the log and the model read.
func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the answer of MCP server %s was larger than %s; it was not read", e.Server, sizeText(e.Limit))
}

func sizeText(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%d bytes", n)
}

// framing says where one message ends in a stream, so that the cap applies to each message.
type framing int

const (
	wholeBody   framing = iota // the body is one message
	ndjsonLines                // one message a line (stdio)
	sseEvents                  // one message an event: lines up to a blank line (text/event-stream)
)

// capReader reads r and fails with a *TooLargeError once one message passes limit bytes. It
// fails while reading, before the consumer buffers more: what comes after is never read, and r
// is closed at once so that an HTTP connection is dropped rather than drained.
type capReader struct {
	r      io.ReadCloser
	limit  int64
	frames framing
	server string
	// tripped, when set, is told that the cap was hit (the call that is waiting for the answer).
	tripped func()

	n           int64 // bytes of the current message
	atLineStart bool  // the last byte ended a line (SSE)
	afterCR     bool  // the last byte was '\r' (SSE: "\r\n" ends one line)
	err         error // sticky
}

func newCapReader(r io.ReadCloser, limit int64, frames framing, server string, tripped func()) *capReader {
	return &capReader{r: r, limit: limit, frames: frames, server: server, tripped: tripped, atLineStart: true}
}

func (c *capReader) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	if c.frames == wholeBody && int64(len(p)) > c.limit-c.n+1 {
		p = p[:c.limit-c.n+1] // one byte past the cap is enough to know
	}
	n, err := c.r.Read(p)
	for i := range n {
		c.n++
		if c.n > c.limit {
			c.trip()
			return i, nil // the bytes before belong to messages within the cap; the next Read fails
		}
		c.frame(p[i])
	}
	return n, err
}

// frame ends the current message at its delimiter.
func (c *capReader) frame(b byte) {
	switch c.frames {
	case ndjsonLines:
		if b == '\n' {
			c.n = 0
		}
	case sseEvents:
		// SSE ends a line with "\r\n", "\n" or "\r", and an event with an empty line.
		if b == '\n' && c.afterCR {
			c.afterCR = false
			return
		}
		c.afterCR = b == '\r'
		if b != '\r' && b != '\n' {
			c.atLineStart = false
			return
		}
		if c.atLineStart {
			c.n = 0
		}
		c.atLineStart = true
	}
}

func (c *capReader) trip() {
	c.err = &TooLargeError{Server: c.server, Limit: c.limit}
	_ = c.r.Close()
	if c.tripped != nil {
		c.tripped()
	}
}

func (c *capReader) Close() error { return c.r.Close() }

// callWatch is told when the answer of one call (or of one tools/list) was too large. The SDK
// reports an HTTP body that failed to read as text, so the request's context carries the watch
// to the reader of its answer.
type callWatch struct{ tooLarge atomic.Bool }

type callWatchKey struct{}

func withCallWatch(ctx context.Context) (context.Context, *callWatch) {
	w := &callWatch{}
	return context.WithValue(ctx, callWatchKey{}, w), w
}

func watchOf(ctx context.Context) *callWatch {
	w, _ := ctx.Value(callWatchKey{}).(*callWatch)
	return w
}

// tooLarge reports whether err ended a call whose answer passed MaxMessageBytes.
func tooLarge(err error, w *callWatch) bool {
	var tl *TooLargeError
	return errors.As(err, &tl) || w != nil && w.tooLarge.Load()
}

// boundTransport caps every response body of a url server as it is read: per event for an SSE
// stream, which carries many messages in one body (the long-lived GET stream among them), and
// per body for anything else.
type boundTransport struct {
	base   http.RoundTripper
	server string
	limit  int64
}

func (b boundTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := b.base.RoundTrip(r)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	frames := wholeBody
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "text/event-stream" {
		frames = sseEvents
	}
	var tripped func()
	if w := watchOf(r.Context()); w != nil {
		tripped = func() { w.tooLarge.Store(true) }
	}
	resp.Body = newCapReader(resp.Body, b.limit, frames, b.server, tripped)
	return resp, nil
}
