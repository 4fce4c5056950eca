package mcp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// TestCapReaderFrames: the cap bounds each message as its framing delimits it (a JSON value
// however it is laid out, an SSE event ended by a blank line in any of SSE's three line endings,
// a whole body), and the bytes of earlier messages are all delivered before the error. A JSON
// message past the cap is told with its first bytes.
func TestCapReaderFrames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames framing
		in     string
		read   int    // bytes read before the error; len(in) when there is none
		head   string // what the tripped function is given (JSON)
		tooBig bool
	}{
		{name: "json values within", frames: jsonValues, in: `{"a":1234}` + "\n" + `{"b":5678}` + "\n", read: 22},
		{name: "json value past", frames: jsonValues, in: `{"a":1}` + "\n" + `{"b":"1234567890"}`, read: 7 + 12, head: "\n" + `{"b":"12345`, tooBig: true},
		{name: "json lines of one value add up", frames: jsonValues, in: "{\n \"a\": 1,\n \"b\": 2\n}\n", read: 12, head: "{\n \"a\": 1,\n ", tooBig: true},
		{name: "json bracket in a string", frames: jsonValues, in: `{"a":"}}}}}}}}}}}}}}"}`, read: 12, head: `{"a":"}}}}}}`, tooBig: true},
		{name: "json escaped quote", frames: jsonValues, in: `{"a":"\"}}}}}}}}}}}}"}`, read: 12, head: `{"a":"\"}}}}`, tooBig: true},
		{name: "json escaped backslash", frames: jsonValues, in: `{"a":"\\"}{"b":1}`, read: 17},
		{name: "json space between values counts", frames: jsonValues, in: "{}" + strings.Repeat(" ", 20), read: 2 + 12, head: strings.Repeat(" ", 12), tooBig: true},
		{name: "json batch is one value", frames: jsonValues, in: `[{"a":1},{"b":2}]`, read: 12, head: `[{"a":1},{"b`, tooBig: true},
		{name: "sse LF within", frames: sseEvents, in: "data: 1\n\ndata: 2\n\n", read: 18},
		{name: "sse CRLF within", frames: sseEvents, in: "data: 1\r\n\r\ndata: 2\r\n\r\n", read: 22},
		{name: "sse CR within", frames: sseEvents, in: "data: 1\r\rdata: 2\r\r", read: 18},
		{name: "sse lines of one event add up", frames: sseEvents, in: "data: 1\ndata: 2\n\n", read: 12, tooBig: true},
		{name: "sse CRLF is one line end", frames: sseEvents, in: "d:12345\r\nd:6789\r\n\r\n", read: 12, tooBig: true},
		{name: "whole within", frames: wholeBody, in: "123456789012", read: 12},
		{name: "whole past", frames: wholeBody, in: "1234567890123", read: 12, tooBig: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tripped, head := false, ""
			r := newCapReader(io.NopCloser(strings.NewReader(tc.in)), 12, tc.frames, "kb", func(h []byte) { tripped, head = true, string(h) })
			got, err := io.ReadAll(r)
			var tl *TooLargeError
			if string(got) != tc.in[:tc.read] || errors.As(err, &tl) != tc.tooBig || tripped != tc.tooBig || head != tc.head {
				t.Errorf("read %q, %v (tripped %v with %q); want %q, too large %v, with %q", got, err, tripped, head, tc.in[:tc.read], tc.tooBig, tc.head)
			}
		})
	}
}

// TestAnswerOf: the first bytes of a message past the cap tell whose answer it is when the id
// comes before the result (Go and Python servers), that it answers no call when it is the
// server's own request or notification, and nothing when they end first (TypeScript servers
// write the id last).
func TestAnswerOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		head string
		id   jsonrpc.ID
		kind answerKind
	}{
		{name: "go order", head: `{"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"xxxx`, id: mustID(7.0), kind: answerTo},
		{name: "indented", head: "\n{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 7,\n  \"result\": {\n    \"content\": [", id: mustID(7.0), kind: answerTo},
		{name: "string id, error", head: `{"id":"a-1","jsonrpc":"2.0","error":{"code":-32603,"message":"xxxx`, id: mustID("a-1"), kind: answerTo},
		{name: "id after a short result", head: `{"result":{},"jsonrpc":"2.0","id":3}`, id: mustID(3.0), kind: answerTo},
		{name: "null id", head: `{"jsonrpc":"2.0","id":null,"error":{"code":-32700`, kind: answerTo},
		{name: "typescript order", head: `{"result":{"content":[{"type":"text","text":"xxxx`, kind: unknownAnswer},
		{name: "id, then cut", head: `{"jsonrpc":"2.0","id":7`, kind: unknownAnswer},
		{name: "server request", head: `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{"xxxx`, kind: notAnswer},
		{name: "notification", head: `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"xxxx`, kind: notAnswer},
		{name: "batch", head: `[{"jsonrpc":"2.0","id":7,"result":{`, kind: unknownAnswer},
		{name: "space", head: "\n   \n", kind: unknownAnswer},
		{name: "not json", head: "Traceback (most recent call last):", kind: unknownAnswer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id, kind := answerOf([]byte(tc.head))
			if id != tc.id || kind != tc.kind {
				t.Errorf("answerOf = %v, %v; want %v, %v", id, kind, tc.id, tc.kind)
			}
		})
	}
}

// TestHeadersOnlyToOrigin: the configured headers go with requests to the configured origin
// (its default port written or not) and with no other, whatever sends them there.
func TestHeadersOnlyToOrigin(t *testing.T) {
	var got []string
	base := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		got = append(got, r.Header.Get("Authorization"))
		return httptest.NewRecorder().Result(), nil
	})
	h := headerTransport{base: base, headers: http.Header{"Authorization": {"Bearer x"}}, origin: origin(mustURL(t, "https://mcp.example.org/mcp"))}
	for _, u := range []string{"https://mcp.example.org/mcp", "https://MCP.example.org:443/other", "http://mcp.example.org/mcp", "https://mcp.example.org:8443/mcp", "https://evil.example.org/mcp"} {
		req, _ := http.NewRequest("POST", u, nil)
		if _, err := h.RoundTrip(req); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{"Bearer x", "Bearer x", "", "", ""}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Authorization sent: %q, want %q", got, want)
	}
}

// mustID is the id the SDK makes of v, a JSON number (float64) or string.
func mustID(v any) jsonrpc.ID {
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		panic(err)
	}
	return id
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}
