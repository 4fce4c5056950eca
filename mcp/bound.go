package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// MaxMessageBytes caps one JSON-RPC message read from an MCP server: one JSON value of a stdio
// child (however many lines it spans), one event of an SSE stream, or a whole other HTTP body (a
// JSON answer, an error page). Past it the reader stops and the message is not read. A call
// holds at most one such message, and a server has at most Options.MaxCallsInFlight calls under
// way, so what answers hold in memory is bounded whatever the number of readers asking.
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

// ResetError is a call that was under way on a connection dropped because another message on it
// (another call's answer, or a message of the server's own) was larger than MaxMessageBytes.
// Unlike a *TooLargeError, calling again may work.
type ResetError struct {
	Server string
	Limit  int64 // bytes
}

// Error is the message the log and the model read.
func (e *ResetError) Error() string {
	return fmt.Sprintf("the connection to MCP server %s was reset: a message on it larger than %s was not this call's answer", e.Server, sizeText(e.Limit))
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
	wholeBody  framing = iota // the body is one message
	jsonValues                // one message a JSON value, over any number of lines (stdio)
	sseEvents                 // one message an event: lines up to a blank line (text/event-stream)
)

// headBytes is how much of the current message a jsonValues reader keeps, to tell whose answer
// one past the cap was (answerOf).
const headBytes = 512

// capReader reads r and fails with a *TooLargeError once one message passes limit bytes. It
// fails while reading, before the consumer buffers more: what comes after is never read, and r
// is closed at once so that an HTTP connection is dropped rather than drained.
type capReader struct {
	r      io.ReadCloser
	limit  int64
	frames framing
	server string
	// tripped, when set, is told that the cap was hit, with the first headBytes of the message
	// that passed it (jsonValues; nil otherwise), before the error is returned.
	tripped func(head []byte)

	n           int64 // bytes of the current message
	atLineStart bool  // the last byte ended a line (SSE)
	afterCR     bool  // the last byte was '\r' (SSE: "\r\n" ends one line)
	depth       int   // open objects and arrays (JSON)
	inString    bool  // within a string (JSON)
	escaped     bool  // the last byte was the backslash of an escape in a string (JSON)
	head        []byte
	err         error // sticky
}

func newCapReader(r io.ReadCloser, limit int64, frames framing, server string, tripped func(head []byte)) *capReader {
	c := &capReader{r: r, limit: limit, frames: frames, server: server, tripped: tripped, atLineStart: true}
	if frames == jsonValues {
		c.head = make([]byte, 0, headBytes)
	}
	return c
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
	case jsonValues:
		// A message ends where its value (an object, or a batch's array) closes, as the SDK's
		// json.Decoder reads it, not at a newline: an indented answer spans many lines. What
		// comes between two values counts toward the next.
		if len(c.head) < headBytes {
			c.head = append(c.head, b)
		}
		switch {
		case c.escaped:
			c.escaped = false
		case c.inString:
			c.escaped = b == '\\'
			c.inString = b != '"'
		case b == '"':
			c.inString = true
		case b == '{' || b == '[':
			c.depth++
		case (b == '}' || b == ']') && c.depth > 0:
			if c.depth--; c.depth == 0 {
				c.n, c.head = 0, c.head[:0]
			}
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
		c.tripped(c.head)
	}
}

func (c *capReader) Close() error { return c.r.Close() }

// callWatch is told when the answer of one call (or of one tools/list) was too large. The SDK
// reports an HTTP body that failed to read as text, and a stdio connection that failed ends every
// call under way on it with one error, so the request's context carries the watch to the reader
// of its answer (boundTransport, stdioConn).
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

// capError is the error of a call (or a tools/list) that failed with err: a *TooLargeError if its
// own answer passed MaxMessageBytes, a *ResetError if another message did and its connection
// ended with it, nil otherwise.
func capError(server string, err error, w *callWatch) error {
	var tl *TooLargeError
	switch {
	case w.tooLarge.Load():
		return &TooLargeError{Server: server, Limit: MaxMessageBytes}
	case errors.As(err, &tl):
		return &ResetError{Server: server, Limit: MaxMessageBytes}
	}
	return nil
}

// answerKind is what the first bytes of a message say about whose answer it is.
type answerKind int

const (
	unknownAnswer answerKind = iota // they end before they tell
	answerTo                        // the answer to the call of the id
	notAnswer                       // a request or notification of the server's own
)

// answerOf reads the first bytes of a JSON-RPC message (head) for the call it answers. Members
// come in any order: Go and Python servers write "id" ahead of "result" and "method", so the
// kind is known; a TypeScript server writes it after the result, past what head holds.
func answerOf(head []byte) (jsonrpc.ID, answerKind) {
	dec := json.NewDecoder(bytes.NewReader(head))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return jsonrpc.ID{}, unknownAnswer // a batch, or not JSON-RPC at all
	}
	var id jsonrpc.ID
	hasID, answer := false, false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			break
		}
		switch key {
		case "method":
			return jsonrpc.ID{}, notAnswer
		case "result", "error":
			if hasID {
				return id, answerTo
			}
			answer = true
		case "id":
			v, err := dec.Token()
			if err == nil {
				id, err = jsonrpc.MakeID(v) // null, the id of no call, matches none
			}
			if err != nil {
				return jsonrpc.ID{}, unknownAnswer
			}
			if answer {
				return id, answerTo
			}
			hasID = true
			continue
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			break
		}
	}
	return jsonrpc.ID{}, unknownAnswer
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
	var tripped func([]byte)
	if w := watchOf(r.Context()); w != nil {
		tripped = func([]byte) { w.tooLarge.Store(true) }
	}
	resp.Body = newCapReader(resp.Body, b.limit, frames, b.server, tripped)
	return resp, nil
}
