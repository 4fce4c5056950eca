package mcp

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// TestCapReaderFrames: the cap bounds each message as its framing delimits it (a line, an SSE
// event ended by a blank line in any of SSE's three line endings, a whole body), and the bytes
// of earlier messages are all delivered before the error.
func TestCapReaderFrames(t *testing.T) {
	for _, tc := range []struct {
		name   string
		frames framing
		in     string
		want   string // what is read before the error
		tooBig bool
	}{
		{name: "lines within", frames: ndjsonLines, in: "12345678\n12345678\n", want: "12345678\n12345678\n"},
		{name: "line past", frames: ndjsonLines, in: "1234\n1234567890123\n", want: "1234\n123456789012", tooBig: true},
		{name: "sse LF within", frames: sseEvents, in: "data: 1\n\ndata: 2\n\n", want: "data: 1\n\ndata: 2\n\n"},
		{name: "sse CRLF within", frames: sseEvents, in: "data: 1\r\n\r\ndata: 2\r\n\r\n", want: "data: 1\r\n\r\ndata: 2\r\n\r\n"},
		{name: "sse CR within", frames: sseEvents, in: "data: 1\r\rdata: 2\r\r", want: "data: 1\r\rdata: 2\r\r"},
		{name: "sse lines of one event add up", frames: sseEvents, in: "data: 1\ndata: 2\n\n", want: "data: 1\ndata: 2\n"[:12], tooBig: true},
		{name: "sse CRLF is one line end", frames: sseEvents, in: "d:12345\r\nd:6789\r\n\r\n", want: "d:12345\r\nd:6", tooBig: true},
		{name: "whole within", frames: wholeBody, in: "123456789012", want: "123456789012"},
		{name: "whole past", frames: wholeBody, in: "1234567890123", want: "123456789012", tooBig: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tripped := false
			r := newCapReader(io.NopCloser(strings.NewReader(tc.in)), 12, tc.frames, "kb", func() { tripped = true })
			got, err := io.ReadAll(r)
			var tl *TooLargeError
			if string(got) != tc.want || errors.As(err, &tl) != tc.tooBig || tripped != tc.tooBig {
				t.Errorf("read %q, %v (tripped %v); want %q, too large %v", got, err, tripped, tc.want, tc.tooBig)
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
