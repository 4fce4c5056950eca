package fastpath

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/net/http/httpguts"
)

func TestParse(t *testing.T) {
	const h = "Host: example.org\r\n"
	tests := []struct {
		name string
		in   string
		want verdict
		req  Request // checked on complete
	}{
		{"plain GET", "GET /nemar HTTP/1.1\r\n" + h + "\r\n", complete, Request{Method: "GET", Path: "/nemar"}},
		{"HEAD with query", "HEAD /nemar/?x=1&y=/a?b HTTP/1.1\r\n" + h + "\r\n", complete, Request{Method: "HEAD", Path: "/nemar/", Query: "x=1&y=/a?b"}},
		{"the headers it reads, any case, trimmed", "GET /c HTTP/1.1\r\nhOsT: a.b:8080\r\naccept-encoding:  gzip, br \r\nIF-NONE-MATCH: \"x\"\r\nOrigin:\thttps://a.org\t\r\nx-request-id: abcdefgh12\r\nConnection: close\r\nUser-Agent: wrk\r\n\r\n",
			complete, Request{Method: "GET", Path: "/c", AcceptEncoding: "gzip, br", IfNoneMatch: `"x"`, Origin: "https://a.org", RequestID: "abcdefgh12", Close: true}},
		{"keep-alive", "GET /c HTTP/1.1\r\n" + h + "Connection: Keep-Alive\r\n\r\n", complete, Request{Method: "GET", Path: "/c"}},
		{"pipelined: only the first", "GET /a HTTP/1.1\r\n" + h + "\r\nGET /b HTTP/1.1\r\n" + h + "\r\n", complete, Request{Method: "GET", Path: "/a"}},

		{"no end yet", "GET /nemar HTTP/1.1\r\nHost: exa", incomplete, Request{}},
		{"a CR waiting for its LF", "GET /nemar HTTP/1.1\r", incomplete, Request{}},
		{"empty", "", incomplete, Request{}},
		{"a GET begun", "GE", incomplete, Request{}},
		{"a HEAD begun", "HEAD /x", incomplete, Request{}},
		{"a POST begun: net/http's at once", "POST /nemar/chat HTTP/1.1\r\nHost: x\r\nContent-Le", refuse, Request{}},
		{"a P: net/http's at once", "P", refuse, Request{}},
		{"a request line, headers to come", "GET /nemar HTTP/1.1\r\n", incomplete, Request{}},
		{"a Host, more to come", "GET /nemar HTTP/1.1\r\nHost: x\r\nAccept: */*\r\n", incomplete, Request{}},
		{"HTTP/0.9: net/http's at once", "GET /nemar\r\n", refuse, Request{}},
		{"HTTP/1.0 before its end: net/http's at once", "GET /nemar HTTP/1.0\r\nHo", refuse, Request{}},
		{"a broken header before the end: net/http's at once", "GET /nemar HTTP/1.1\r\nHost x\r\nAcc", refuse, Request{}},
		{"a header it leaves to net/http, before the end", "GET /nemar HTTP/1.1\r\nRange: bytes=0-1\r\n", refuse, Request{}},

		{"bare LF", "GET /nemar HTTP/1.1\nHost: x\n\n", refuse, Request{}},
		{"bare LF before the end arrives", "GET /nemar HTTP/1.1\nHo", refuse, Request{}},
		{"bare CR", "GET /nemar HTTP/1.1\rHost: x\r\n\r\n", refuse, Request{}},
		{"POST", "POST /nemar HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"lower-case method", "get /nemar HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"HTTP/1.0", "GET /nemar HTTP/1.0\r\n" + h + "\r\n", refuse, Request{}},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", refuse, Request{}},
		{"absolute form", "GET http://x/nemar HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"percent-encoded", "GET /ne%6Dar HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"two spaces", "GET  /nemar HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"fragment", "GET /nemar#x HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"no Host", "GET /nemar HTTP/1.1\r\n\r\n", refuse, Request{}},
		{"two Hosts", "GET /nemar HTTP/1.1\r\n" + h + h + "\r\n", refuse, Request{}},
		{"empty Host", "GET /nemar HTTP/1.1\r\nHost:\r\n\r\n", refuse, Request{}},
		{"odd Host", "GET /nemar HTTP/1.1\r\nHost: a b\r\n\r\n", refuse, Request{}},
		{"a body", "GET /nemar HTTP/1.1\r\n" + h + "Content-Length: 0\r\n\r\n", refuse, Request{}},
		{"chunked", "GET /nemar HTTP/1.1\r\n" + h + "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", refuse, Request{}},
		{"Range", "GET /w.whl HTTP/1.1\r\n" + h + "Range: bytes=0-1\r\n\r\n", refuse, Request{}},
		{"If-Range", "GET /w.whl HTTP/1.1\r\n" + h + "If-Range: \"x\"\r\n\r\n", refuse, Request{}},
		{"Expect", "GET /nemar HTTP/1.1\r\n" + h + "Expect: 100-continue\r\n\r\n", refuse, Request{}},
		{"Upgrade", "GET /nemar HTTP/1.1\r\n" + h + "Connection: Upgrade\r\nUpgrade: websocket\r\n\r\n", refuse, Request{}},
		{"Connection list", "GET /nemar HTTP/1.1\r\n" + h + "Connection: keep-alive, TE\r\n\r\n", refuse, Request{}},
		{"Origin twice", "GET /nemar HTTP/1.1\r\n" + h + "Origin: https://a\r\nOrigin: https://b\r\n\r\n", refuse, Request{}},
		{"empty If-None-Match", "GET /nemar HTTP/1.1\r\n" + h + "If-None-Match:\r\n\r\n", refuse, Request{}},
		{"folded header", "GET /nemar HTTP/1.1\r\n" + h + "X-A: 1\r\n 2\r\n\r\n", refuse, Request{}},
		{"space before the colon", "GET /nemar HTTP/1.1\r\n" + h + "X-A : 1\r\n\r\n", refuse, Request{}},
		{"no colon", "GET /nemar HTTP/1.1\r\n" + h + "X-A\r\n\r\n", refuse, Request{}},
		{"obs-text", "GET /nemar HTTP/1.1\r\n" + h + "X-A: caf\xc3\xa9\r\n\r\n", refuse, Request{}},
		{"control byte", "GET /nemar HTTP/1.1\r\n" + h + "X-A: a\x00b\r\n\r\n", refuse, Request{}},
		{"long target", "GET /" + strings.Repeat("a", maxTarget) + " HTTP/1.1\r\n" + h + "\r\n", refuse, Request{}},
		{"long value", "GET /nemar HTTP/1.1\r\n" + h + "X-A: " + strings.Repeat("a", maxHeader+1) + "\r\n\r\n", refuse, Request{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r Request
			v, n := parse([]byte(tc.in), &r)
			if v != tc.want {
				t.Fatalf("verdict %d, want %d", v, tc.want)
			}
			if v != complete {
				return
			}
			if r != tc.req {
				t.Errorf("request %+v, want %+v", r, tc.req)
			}
			if end := strings.Index(tc.in, "\r\n\r\n") + 4; n != end {
				t.Errorf("head length %d, want %d", n, end)
			}
		})
	}
}

// TestParseAgreesWithNetHTTP runs the seeds of FuzzParse as a test.
func TestParseAgreesWithNetHTTP(t *testing.T) {
	for _, s := range parseSeeds {
		agreeWithNetHTTP(t, []byte(s))
	}
}

var parseSeeds = []string{
	"GET /nemar HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n",
	"GET /nemar HTTP/1.1\r\nHost: x\r\nAccept-Encoding: gzip;q=0, identity\r\nIf-None-Match: W/\"a\", \"b\"\r\n\r\n",
	"HEAD /osa/nemar/runtime/nemar_tools-0.1.0-py3-none-any.whl?v=1 HTTP/1.1\r\nHost: x\r\nOrigin: https://nemar.org\r\nConnection: close\r\n\r\n",
	"GET /communities HTTP/1.1\r\nhost: x\r\nX-Request-ID: 0123456789\r\nCookie: a=b; c=d\r\nUser-Agent: Mozilla/5.0 (X11)\r\n\r\nGET / HTTP/1.1\r\n",
	"GET /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello",
	"GET /a HTTP/1.1\nHost: x\n\n",
	"GET /a HTTP/1.1\r\nHost: x\r\nX: a\r\n b\r\n\r\n",
	"GET /a HTTP/1.1\r\nHost: x\r\nConnection: close, keep-alive\r\n\r\n",
	"GET /a?%zz HTTP/1.1\r\nHost: [::1]:80\r\n\r\n",
	"GET /a;b=c/@:!$&'()*+,= HTTP/1.1\r\nHost: x\r\n\r\n",
}

// FuzzParse holds the parser to net/http's: whatever parse accepts, http.ReadRequest reads
// as the same bodiless request, with the same method, path, query and header values, ending
// at the same byte, and the Host net/http's server would accept.
func FuzzParse(f *testing.F) {
	for _, s := range parseSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		agreeWithNetHTTP(t, in)
	})
}

func agreeWithNetHTTP(t *testing.T, in []byte) {
	t.Helper()
	var r Request
	v, n := parse(in, &r)
	if v != complete {
		return
	}
	if n <= 0 || n > len(in) {
		t.Fatalf("%q: head length %d of %d bytes", in, n, len(in))
	}
	br := bufio.NewReader(bytes.NewReader(in))
	req, err := http.ReadRequest(br)
	if err != nil {
		t.Fatalf("%q: parse accepted it, net/http: %v", in, err)
	}
	rest, _ := io.ReadAll(br)
	if len(in)-len(rest) != n {
		t.Fatalf("%q: parse read %d bytes, net/http %d", in, n, len(in)-len(rest))
	}
	if req.Method != r.Method || req.URL.Path != r.Path || req.URL.RawQuery != r.Query {
		t.Fatalf("%q: %s %q ? %q from net/http, %s %q ? %q from parse", in, req.Method, req.URL.Path, req.URL.RawQuery, r.Method, r.Path, r.Query)
	}
	// With a sub-delim net/http keeps a RawPath, but one equal to the path: echo routes on
	// either and logs EscapedPath, which must be the path the fast path sees.
	if req.URL.EscapedPath() != r.Path {
		t.Fatalf("%q: escaped path %q, parse %q", in, req.URL.EscapedPath(), r.Path)
	}
	if req.ContentLength != 0 || len(req.TransferEncoding) != 0 || req.Body != http.NoBody {
		t.Fatalf("%q: net/http sees a body (length %d, %v)", in, req.ContentLength, req.TransferEncoding)
	}
	if req.ProtoMajor != 1 || req.ProtoMinor != 1 || req.Close != r.Close {
		t.Fatalf("%q: HTTP/%d.%d close %v, parse close %v", in, req.ProtoMajor, req.ProtoMinor, req.Close, r.Close)
	}
	if req.Host == "" || !httpguts.ValidHostHeader(req.Host) {
		t.Fatalf("%q: Host %q that net/http's server refuses", in, req.Host)
	}
	for name, got := range map[string]string{
		"Accept-Encoding": r.AcceptEncoding, "If-None-Match": r.IfNoneMatch,
		"Origin": r.Origin, "X-Request-Id": r.RequestID,
	} {
		vals := req.Header.Values(name)
		if got == "" && len(vals) != 0 || got != "" && (len(vals) != 1 || vals[0] != got) {
			t.Fatalf("%q: %s %q from net/http, %q from parse", in, name, vals, got)
		}
	}
	for _, name := range []string{"Content-Length", "Transfer-Encoding", "Range", "If-Range", "Expect", "Upgrade"} {
		if len(req.Header.Values(name)) != 0 {
			t.Fatalf("%q: parse accepted a request with %s", in, name)
		}
	}
}
