package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The fast answers the test Answer gives.
var (
	svFastBody = []byte("fast answer body\n")
	svBigBody  = func() []byte {
		b := make([]byte, 200<<10)
		for i := range b {
			b[i] = byte('a' + i%26)
		}
		copy(b[len(b)-8:], "THE-END\n")
		return b
	}()
)

// svReport is what the net/http handler says it received.
type svReport struct {
	Method     string
	RequestURI string
	Path       string
	Proto      string
	Host       string
	Body       []byte // base64 in the JSON: every byte as received
	Header     http.Header
}

// svLockedBuffer is a bytes.Buffer safe for the server's goroutines and the test.
type svLockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *svLockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *svLockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// svAnswer answers /fast, /fast-big, /inject and /panic, and declines the rest.
func svAnswer(r *Request, w *Response) bool {
	switch r.Path {
	case "/fast":
		if r.IfNoneMatch == `"v1"` {
			w.Header("ETag", `"v1"`)
			w.Send(http.StatusNotModified, nil)
			return true
		}
		w.Header("Content-Type", "text/plain; charset=utf-8")
		w.Header("ETag", `"v1"`)
		w.Header("X-Fast", "1")
		w.Header("X-Method", r.Method)
		w.Header("X-Query", r.Query)
		w.Header("X-AE", r.AcceptEncoding)
		w.Header("X-Origin", r.Origin)
		w.HeaderBytes("X-Req-ID", []byte(r.RequestID))
		w.Send(http.StatusOK, svFastBody)
		return true
	case "/fast-big":
		w.Header("Content-Type", "application/octet-stream")
		w.Header("X-Fast", "1")
		w.Send(http.StatusOK, svBigBody)
		return true
	case "/inject":
		w.Header("X-Inject", "a\r\nX-Evil: 1")
		w.Header("X-Inject-LF", "a\nX-Evil2: 1")
		w.Header("X-Inject-NUL", "a\x00b")
		w.Header("X-Evil3: 1\r\nX-Name", "v")
		w.Header("Bad Name", "v")
		w.HeaderBytes("X-Inject-Bytes", []byte("b\r\nX-Evil4: 1"))
		w.Header("X-Ok", "yes")
		w.HeaderBytes("X-Ok-Bytes", []byte("yes too"))
		w.Send(http.StatusOK, []byte("injected?"))
		return true
	case "/panic":
		panic("boom-panic-in-answer")
	case "/half":
		// Builds an answer, then declines: nothing of it may reach the wire.
		w.Header("X-Half", "leaked")
		w.Send(http.StatusTeapot, []byte("half"))
		return false
	case "/nosend":
		// Claims to answer without Send: the request must go to net/http.
		w.Header("X-Nosend", "leaked")
		return true
	}
	return false
}

// svHandler reports what it received, blocking on /block until release is closed.
func svHandler(entered chan<- struct{}, release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, "reading the body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if r.URL.Path == "/block" {
			if entered != nil {
				entered <- struct{}{}
			}
			if release != nil {
				<-release
			}
		}
		rep := svReport{
			Method:     r.Method,
			RequestURI: r.RequestURI,
			Path:       r.URL.Path,
			Proto:      r.Proto,
			Host:       r.Host,
			Body:       body,
			Header:     r.Header,
		}
		w.Header().Set("X-Served-By", "net/http")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rep)
	})
}

type svServer struct {
	s       *Server
	addr    string
	log     *svLockedBuffer
	serve   chan error // Serve's result
	entered chan struct{}
	release chan struct{}
}

// svStart serves a fastpath.Server on a loopback port; configure may change the http.Server
// and Server before Serve. Shutdown runs at the end of the test unless the test did it.
func svStart(t *testing.T, configure func(*Server)) *svServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ts := &svServer{
		addr:    ln.Addr().String(),
		log:     &svLockedBuffer{},
		serve:   make(chan error, 1),
		entered: make(chan struct{}, 16),
		release: make(chan struct{}),
	}
	ts.s = &Server{
		Answer: svAnswer,
		HTTP:   &http.Server{Handler: svHandler(ts.entered, ts.release), ErrorLog: nil},
		Log:    slog.New(slog.NewTextHandler(ts.log, nil)),
	}
	if configure != nil {
		configure(ts.s)
	}
	go func() { ts.serve <- ts.s.Serve(ln) }()
	t.Cleanup(func() {
		select {
		case <-ts.release:
		default:
			close(ts.release)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = ts.s.Shutdown(ctx)
	})
	return ts
}

type svClient struct {
	t  *testing.T
	nc net.Conn
	br *bufio.Reader
}

func (ts *svServer) dial(t *testing.T) *svClient {
	t.Helper()
	nc, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = nc.Close() })
	// Nothing here should take long: a hang fails the test instead of stalling it.
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	return &svClient{t: t, nc: nc, br: bufio.NewReader(nc)}
}

func (c *svClient) write(s string) {
	c.t.Helper()
	if _, err := io.WriteString(c.nc, s); err != nil {
		c.t.Fatalf("write: %v", err)
	}
}

// read reads one response to a request of method and its whole body.
func (c *svClient) read(method string) (*http.Response, []byte) {
	c.t.Helper()
	resp, err := http.ReadResponse(c.br, &http.Request{Method: method})
	if err != nil {
		c.t.Fatalf("reading a response to %s: %v", method, err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatalf("reading the body of a response to %s: %v", method, err)
	}
	_ = resp.Body.Close()
	return resp, body
}

// expectClosed reads until the connection ends and fails unless the server ended it (EOF or
// a reset) with nothing more sent.
func (c *svClient) expectClosed(within time.Duration) {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(within))
	rest, err := io.ReadAll(c.br)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("the server did not close the connection within %v", within)
	}
	if len(rest) > 0 {
		c.t.Fatalf("got %q before the close, want nothing", rest)
	}
}

// readToClose reads until the server ends the connection and returns what it sent.
func (c *svClient) readToClose(within time.Duration) string {
	c.t.Helper()
	_ = c.nc.SetReadDeadline(time.Now().Add(within))
	rest, err := io.ReadAll(c.br)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		c.t.Fatalf("the server did not close the connection within %v", within)
	}
	return string(rest)
}

// netHTTPAloneTimesOut is what net/http alone sends, until it closes, to a client that sends
// partial and then waits past its header timeout.
func netHTTPAloneTimesOut(t *testing.T, timeout time.Duration, partial string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: timeout, Handler: http.NotFoundHandler()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(nc, partial); err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(nc)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func svGet(path string, headers ...string) string {
	return svReq("GET", path, headers...)
}

func svReq(method, path string, headers ...string) string {
	var b strings.Builder
	b.WriteString(method + " " + path + " HTTP/1.1\r\nHost: example.test\r\n")
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

func svPost(path, body string) string {
	return "POST " + path + " HTTP/1.1\r\nHost: example.test\r\nContent-Type: text/plain\r\nContent-Length: " +
		strconv.Itoa(len(body)) + "\r\n\r\n" + body
}

// checkFast fails unless resp is the fast path's answer to GET /fast (or HEAD with head).
func checkFast(t *testing.T, resp *http.Response, body []byte, head bool) {
	t.Helper()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d, want 200", resp.StatusCode)
	}
	if got := resp.Header.Get("X-Served-By"); got != "" {
		t.Fatalf("answered by %s, want the fast path", got)
	}
	if resp.Header.Get("X-Fast") != "1" || resp.Header.Get("Content-Type") != "text/plain; charset=utf-8" {
		t.Fatalf("headers the Answer set are missing: %v", resp.Header)
	}
	if resp.Proto != "HTTP/1.1" {
		t.Fatalf("proto %q", resp.Proto)
	}
	if d := resp.Header.Get("Date"); d == "" {
		t.Fatal("no Date")
	} else if when, err := http.ParseTime(d); err != nil || time.Since(when).Abs() > time.Minute {
		t.Fatalf("Date %q: %v", d, err)
	}
	if got := resp.Header.Get("Content-Length"); got != strconv.Itoa(len(svFastBody)) {
		t.Fatalf("Content-Length %q, want %d", got, len(svFastBody))
	}
	want := svFastBody
	if head {
		want = nil
	}
	if !bytes.Equal(body, want) {
		t.Fatalf("body %q, want %q", body, want)
	}
}

// checkNetHTTP fails unless resp came from the test's net/http handler, and returns its report.
func checkNetHTTP(t *testing.T, resp *http.Response, body []byte) svReport {
	t.Helper()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Served-By") != "net/http" {
		t.Fatalf("status %d, X-Served-By %q, body %q: want net/http's answer",
			resp.StatusCode, resp.Header.Get("X-Served-By"), body)
	}
	var rep svReport
	if err := json.Unmarshal(body, &rep); err != nil {
		t.Fatalf("report %q: %v", body, err)
	}
	return rep
}

// eventually polls cond for a few seconds: the counters move just after the answer is written.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (ts *svServer) waitStats(t *testing.T, answered, handed uint64) {
	t.Helper()
	eventually(t, fmt.Sprintf("Stats() == (%d, %d)", answered, handed), func() bool {
		a, h := ts.s.Stats()
		return a == answered && h == handed
	})
	// And they stay there.
	time.Sleep(20 * time.Millisecond)
	if a, h := ts.s.Stats(); a != answered || h != handed {
		t.Fatalf("Stats() = (%d, %d), want (%d, %d)", a, h, answered, handed)
	}
}

func TestKeepAlive(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	const n = 5
	for i := range n {
		c.write(svGet("/fast?i="+strconv.Itoa(i), "Accept-Encoding: gzip, br", "Origin: https://o.test",
			"X-Request-ID: req-"+strconv.Itoa(i), "User-Agent: test"))
		resp, body := c.read("GET")
		checkFast(t, resp, body, false)
		if resp.Close {
			t.Fatalf("request %d: the answer closes the connection", i)
		}
		for name, want := range map[string]string{
			"X-Method": "GET", "X-Query": "i=" + strconv.Itoa(i), "X-AE": "gzip, br",
			"X-Origin": "https://o.test", "X-Req-ID": "req-" + strconv.Itoa(i),
		} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("request %d: %s %q, want %q", i, name, got, want)
			}
		}
	}
	ts.waitStats(t, n, 0)
}

func TestPipelining(t *testing.T) {
	ts := svStart(t, nil)
	t.Run("fast", func(t *testing.T) {
		c := ts.dial(t)
		c.write(svGet("/fast?n=1") + svReq("HEAD", "/fast?n=2") + svGet("/fast?n=3"))
		for i, method := range []string{"GET", "HEAD", "GET"} {
			resp, body := c.read(method)
			checkFast(t, resp, body, method == "HEAD")
			if got, want := resp.Header.Get("X-Query"), "n="+strconv.Itoa(i+1); got != want {
				t.Fatalf("answer %d is for %q, want %q", i, got, want)
			}
		}
	})
	t.Run("fast then handed", func(t *testing.T) {
		// The POST and the GET after it are in the fast path's buffer when it hands off.
		c := ts.dial(t)
		c.write(svGet("/fast?n=1") + svPost("/echo", "pipelined body") + svGet("/fast?n=3"))
		resp, body := c.read("GET")
		checkFast(t, resp, body, false)
		rep := c.netHTTP("POST")
		if rep.Method != "POST" || rep.Path != "/echo" || string(rep.Body) != "pipelined body" {
			t.Fatalf("net/http got %+v", rep)
		}
		rep = c.netHTTP("GET")
		if rep.Method != "GET" || rep.RequestURI != "/fast?n=3" {
			t.Fatalf("net/http got %+v", rep)
		}
	})
	t.Run("fast then a head over 4 KB", func(t *testing.T) {
		// The large head starts part-way into the buffer the first answer leaves behind.
		c := ts.dial(t)
		big := strings.Repeat("z", 1000)
		c.write(svGet("/fast?n=1") + svGet("/fast?n=2", "X-A: "+big, "X-B: "+big, "X-C: "+big, "X-D: "+big, "X-E: "+big))
		c.fast()
		rep := c.netHTTP("GET")
		if rep.RequestURI != "/fast?n=2" || rep.Header.Get("X-E") != big {
			t.Fatalf("net/http got %s with %d bytes of X-E", rep.RequestURI, len(rep.Header.Get("X-E")))
		}
	})
	ts.waitStats(t, 5, 2)
}

func TestHandOffMidConnection(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	c.write(svGet("/fast"))
	c.fast()
	ts.waitStats(t, 1, 0)

	body := "exact body\r\n\r\nGET /fast HTTP/1.1\r\n\x00\xff bytes"
	c.write(svPost("/echo", body))
	rep := c.netHTTP("POST")
	if rep.Method != "POST" || rep.Path != "/echo" || string(rep.Body) != body || rep.Header.Get("Content-Type") != "text/plain" {
		t.Fatalf("net/http got %+v", rep)
	}
	// The connection is net/http's now, even for what the fast path would answer.
	c.write(svGet("/fast", "X-Request-ID: after"))
	rep = c.netHTTP("GET")
	if rep.Path != "/fast" || rep.Header.Get("X-Request-Id") != "after" {
		t.Fatalf("net/http got %+v", rep)
	}
	ts.waitStats(t, 1, 1)
}

// fast reads the answer to a GET and checks it is the fast path's /fast.
func (c *svClient) fast() {
	c.t.Helper()
	resp, body := c.read("GET")
	checkFast(c.t, resp, body, false)
}

// netHTTP reads the answer to a request of method and checks net/http gave it.
func (c *svClient) netHTTP(method string) svReport {
	c.t.Helper()
	resp, body := c.read(method)
	return checkNetHTTP(c.t, resp, body)
}

func TestRefusedGoToNetHTTP(t *testing.T) {
	bigHeaders := make([]string, 6)
	for i := range bigHeaders {
		bigHeaders[i] = fmt.Sprintf("X-Big-%d: %s", i, strings.Repeat(string(rune('a'+i)), 1000))
	}
	hugeValue := strings.Repeat("v", 6<<10)
	tests := []struct {
		name  string
		req   string
		check func(t *testing.T, rep svReport)
		// keep is false when net/http ends the connection after its answer.
		closes bool
	}{
		{
			name: "range",
			req:  svGet("/fast", "Range: bytes=0-3"),
			check: func(t *testing.T, rep svReport) {
				if rep.Path != "/fast" || rep.Header.Get("Range") != "bytes=0-3" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "if-range",
			req:  svGet("/fast", "If-Range: \"v1\""),
			check: func(t *testing.T, rep svReport) {
				if rep.Header.Get("If-Range") != `"v1"` {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "chunked POST",
			req: "POST /echo HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n" +
				"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n",
			check: func(t *testing.T, rep svReport) {
				if rep.Method != "POST" || string(rep.Body) != "hello world" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "chunked GET /fast",
			req:  "GET /fast HTTP/1.1\r\nHost: example.test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n",
			check: func(t *testing.T, rep svReport) {
				if rep.Method != "GET" || rep.Path != "/fast" || string(rep.Body) != "hi" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "GET with Content-Length",
			req:  "GET /fast HTTP/1.1\r\nHost: example.test\r\nContent-Length: 4\r\n\r\nbody",
			check: func(t *testing.T, rep svReport) {
				if rep.Path != "/fast" || string(rep.Body) != "body" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name:   "HTTP/1.0",
			req:    "GET /fast HTTP/1.0\r\nHost: example.test\r\n\r\n",
			closes: true,
			check: func(t *testing.T, rep svReport) {
				if rep.Proto != "HTTP/1.0" || rep.Path != "/fast" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "head over 4 KB in several headers",
			req:  svGet("/fast", bigHeaders...),
			check: func(t *testing.T, rep svReport) {
				for i, h := range bigHeaders {
					name, value, _ := strings.Cut(h, ": ")
					if got := rep.Header.Get(name); got != value {
						t.Fatalf("header %d: net/http got %d bytes, want %d", i, len(got), len(value))
					}
				}
			},
		},
		{
			name: "one 6 KB header value",
			req:  svGet("/fast", "X-Huge: "+hugeValue, "X-After: tail"),
			check: func(t *testing.T, rep svReport) {
				if rep.Header.Get("X-Huge") != hugeValue || rep.Header.Get("X-After") != "tail" {
					t.Fatalf("net/http got %d bytes of X-Huge, X-After %q", len(rep.Header.Get("X-Huge")), rep.Header.Get("X-After"))
				}
			},
		},
		{
			name: "bare LF",
			req:  "GET /fast HTTP/1.1\nHost: x\n\n",
			check: func(t *testing.T, rep svReport) {
				if rep.Path != "/fast" || rep.Host != "x" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "bare LF after the request line only",
			req:  "GET /fast HTTP/1.1\r\nHost: x\n\r\n",
			check: func(t *testing.T, rep svReport) {
				if rep.Path != "/fast" || rep.Host != "x" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "percent-encoded path",
			req:  svGet("/f%61st"),
			check: func(t *testing.T, rep svReport) {
				if rep.RequestURI != "/f%61st" || rep.Path != "/fast" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "percent-encoded query",
			req:  svGet("/fast?q=%20x"),
			check: func(t *testing.T, rep svReport) {
				if rep.RequestURI != "/fast?q=%20x" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "absolute-form target",
			req:  "GET http://example.test/fast HTTP/1.1\r\nHost: example.test\r\n\r\n",
			check: func(t *testing.T, rep svReport) {
				if rep.RequestURI != "http://example.test/fast" || rep.Path != "/fast" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "lower-case method",
			req:  svReq("get", "/fast"),
			check: func(t *testing.T, rep svReport) {
				if rep.Method != "get" || rep.Path != "/fast" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "duplicate Accept-Encoding",
			req:  svGet("/fast", "Accept-Encoding: gzip", "Accept-Encoding: br"),
			check: func(t *testing.T, rep svReport) {
				if got := rep.Header.Values("Accept-Encoding"); len(got) != 2 || got[0] != "gzip" || got[1] != "br" {
					t.Fatalf("net/http got Accept-Encoding %q", got)
				}
			},
		},
		{
			name: "empty If-None-Match",
			req:  svGet("/fast", "If-None-Match:"),
			check: func(t *testing.T, rep svReport) {
				if v, ok := rep.Header["If-None-Match"]; !ok || len(v) != 1 || v[0] != "" {
					t.Fatalf("net/http got If-None-Match %q", v)
				}
			},
		},
		{
			name: "Connection: upgrade",
			req:  svGet("/fast", "Connection: Upgrade", "Upgrade: websocket"),
			check: func(t *testing.T, rep svReport) {
				if rep.Header.Get("Upgrade") != "websocket" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "declined after building an answer",
			req:  svGet("/half"),
			check: func(t *testing.T, rep svReport) {
				if rep.Path != "/half" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "answer without Send",
			req:  svGet("/nosend"),
			check: func(t *testing.T, rep svReport) {
				if rep.Path != "/nosend" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
		{
			name: "declined path",
			req:  svGet("/other?x=1"),
			check: func(t *testing.T, rep svReport) {
				if rep.RequestURI != "/other?x=1" {
					t.Fatalf("net/http got %+v", rep)
				}
			},
		},
	}
	ts := svStart(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t)
			c.write(tt.req)
			resp, body := c.read("GET")
			tt.check(t, checkNetHTTP(t, resp, body))
			for _, name := range []string{"X-Fast", "X-Half", "X-Nosend"} {
				if resp.Header.Get(name) != "" {
					t.Fatalf("the fast path's %s leaked into net/http's answer", name)
				}
			}
			if tt.closes {
				c.expectClosed(5 * time.Second)
				return
			}
			// net/http keeps the connection.
			c.write(svGet("/fast"))
			if rep := c.netHTTP("GET"); rep.Path != "/fast" {
				t.Fatalf("net/http got %+v", rep)
			}
		})
	}
	ts.waitStats(t, 0, uint64(len(tests)))

	// What net/http refuses, it refuses as it would alone.
	for _, tt := range []struct{ name, req string }{
		{"no Host", "GET /fast HTTP/1.1\r\n\r\n"},
		{"two Hosts", "GET /fast HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial(t)
			c.write(tt.req)
			resp, body := c.read("GET")
			if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Fast") != "" {
				t.Fatalf("status %d, headers %v, body %q: want net/http's 400", resp.StatusCode, resp.Header, body)
			}
		})
	}
}

func TestHead(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	c.write(svReq("HEAD", "/fast"))
	resp, body := c.read("HEAD")
	checkFast(t, resp, body, true)
	if resp.Header.Get("X-Method") != "HEAD" {
		t.Fatalf("X-Method %q", resp.Header.Get("X-Method"))
	}
	// Had the HEAD's answer carried a body, this would read it as the next status line.
	c.write(svGet("/fast?next"))
	resp, body = c.read("GET")
	checkFast(t, resp, body, false)
	if resp.Header.Get("X-Query") != "next" {
		t.Fatalf("X-Query %q", resp.Header.Get("X-Query"))
	}
	ts.waitStats(t, 2, 0)
}

func TestNotModified(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	c.write(svGet("/fast", `If-None-Match: "v1"`))
	resp, body := c.read("GET")
	if resp.StatusCode != http.StatusNotModified || resp.Header.Get("ETag") != `"v1"` || len(body) != 0 {
		t.Fatalf("status %d, headers %v, body %q", resp.StatusCode, resp.Header, body)
	}
	if _, ok := resp.Header["Content-Length"]; ok {
		t.Fatal("a 304 carries Content-Length")
	}
	c.write(svGet("/fast"))
	c.fast()
}

func TestConnectionClose(t *testing.T) {
	ts := svStart(t, nil)
	for _, value := range []string{"close", "Close"} {
		t.Run(value, func(t *testing.T) {
			c := ts.dial(t)
			c.write(svGet("/fast", "Connection: "+value))
			// The server ends the connection after its answer: all of it, then EOF.
			_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
			raw, err := io.ReadAll(c.br)
			if err != nil {
				t.Fatalf("reading to EOF: %v (got %q)", err, raw)
			}
			head, _, _ := bytes.Cut(raw, []byte("\r\n\r\n"))
			if !bytes.Contains(head, []byte("\r\nConnection: close\r\n")) {
				t.Fatalf("head %q lacks Connection: close", head)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(raw)), &http.Request{Method: "GET"})
			if err != nil {
				t.Fatal(err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			checkFast(t, resp, body, false)
			if !resp.Close {
				t.Fatal("the answer does not close the connection")
			}
			if got := len(raw) - len(head) - 4 - len(body); got != 0 {
				t.Fatalf("%d bytes after the answer", got)
			}
		})
	}
	t.Run("keep-alive", func(t *testing.T) {
		c := ts.dial(t)
		c.write(svGet("/fast", "Connection: keep-alive"))
		resp, body := c.read("GET")
		checkFast(t, resp, body, false)
		if resp.Close || resp.Header.Get("Connection") != "" {
			t.Fatalf("Close %v, Connection %q: want neither", resp.Close, resp.Header.Get("Connection"))
		}
		c.write(svGet("/fast"))
		c.fast()
	})
}

func TestDribbledHead(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	req := svGet("/fast?dribbled", "X-Request-ID: slow")
	for i := range len(req) {
		c.write(req[i : i+1])
		time.Sleep(2 * time.Millisecond)
	}
	resp, body := c.read("GET")
	checkFast(t, resp, body, false)
	if resp.Header.Get("X-Query") != "dribbled" || resp.Header.Get("X-Req-ID") != "slow" {
		t.Fatalf("headers %v", resp.Header)
	}
	// The CRLF split across two reads.
	c.write("GET /fast?split HTTP/1.1\r")
	time.Sleep(10 * time.Millisecond)
	c.write("\nHost: x\r\n\r")
	time.Sleep(10 * time.Millisecond)
	c.write("\n")
	resp, body = c.read("GET")
	checkFast(t, resp, body, false)
	if resp.Header.Get("X-Query") != "split" {
		t.Fatalf("X-Query %q", resp.Header.Get("X-Query"))
	}
	ts.waitStats(t, 2, 0)
}

func TestTimeouts(t *testing.T) {
	const timeout = 300 * time.Millisecond
	const bound = 5 * time.Second
	t.Run("a new connection has the header timeout, not the idle one", func(t *testing.T) {
		// As in net/http: a connection that sends nothing is closed after ReadHeaderTimeout.
		ts := svStart(t, func(s *Server) {
			s.HTTP.ReadHeaderTimeout = timeout
			s.HTTP.IdleTimeout = time.Hour
		})
		c := ts.dial(t)
		c.expectClosed(bound)
	})
	t.Run("idle after an answer", func(t *testing.T) {
		ts := svStart(t, func(s *Server) { s.HTTP.IdleTimeout = timeout })
		c := ts.dial(t)
		c.write(svGet("/fast"))
		c.fast()
		c.expectClosed(bound)
	})
	t.Run("idle after a hand-off", func(t *testing.T) {
		// net/http's own idle timeout then.
		ts := svStart(t, func(s *Server) { s.HTTP.IdleTimeout = timeout })
		c := ts.dial(t)
		c.write(svGet("/other"))
		c.netHTTP("GET")
		c.expectClosed(bound)
	})
	// A head cut short by the header timeout: what the client gets before the close is what
	// net/http alone sends it (nothing, or a 400, depending on where the head was cut).
	for _, partial := range []string{"GET /fast HTTP/1.1\r\nHost: x\r\n", "GET /fast HTTP/1.1\r\nHo", "GE"} {
		want := netHTTPAloneTimesOut(t, timeout, partial)
		t.Run("header "+strconv.Quote(partial), func(t *testing.T) {
			ts := svStart(t, func(s *Server) { s.HTTP.ReadHeaderTimeout = timeout })
			c := ts.dial(t)
			c.write(partial)
			if got := c.readToClose(bound); got != want {
				t.Errorf("got %q before the close, net/http alone sends %q", got, want)
			}
		})
		t.Run("header after an answer "+strconv.Quote(partial), func(t *testing.T) {
			ts := svStart(t, func(s *Server) { s.HTTP.ReadHeaderTimeout = timeout })
			c := ts.dial(t)
			c.write(svGet("/fast"))
			c.fast()
			c.write(partial)
			if got := c.readToClose(bound); got != want {
				t.Errorf("got %q before the close, net/http alone sends %q", got, want)
			}
		})
	}
	t.Run("idle timeout counts from the last answer", func(t *testing.T) {
		// Requests 250 ms apart never leave the connection idle for its second, so the
		// fast path must not close it, as net/http would not (the deadline may be re-armed up
		// to an eighth of the timeout early: 125 ms).
		ts := svStart(t, func(s *Server) { s.HTTP.IdleTimeout = time.Second })
		c := ts.dial(t)
		for i := range 3 {
			if i > 0 {
				time.Sleep(250 * time.Millisecond)
			}
			c.write(svGet("/fast?i=" + strconv.Itoa(i)))
			resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
			if err != nil {
				t.Fatalf("request %d, %v after the previous answer (idle timeout 1s): %v",
					i, 250*time.Millisecond, err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
		}
	})
}

func TestShutdown(t *testing.T) {
	ts := svStart(t, nil)

	// An idle keep-alive connection of the fast path's.
	idle := ts.dial(t)
	idle.write(svGet("/fast"))
	idle.fast()

	// A handed-off request whose handler is still running.
	busy := ts.dial(t)
	busy.write(svPost("/block", "blocked body"))
	select {
	case <-ts.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the handler did not start")
	}
	// And an idle connection of net/http's.
	idleHTTP := ts.dial(t)
	idleHTTP.write(svGet("/other"))
	idleHTTP.netHTTP("GET")

	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- ts.s.Shutdown(ctx)
	}()

	idle.expectClosed(5 * time.Second)
	idleHTTP.expectClosed(5 * time.Second)
	select {
	case err := <-ts.serve:
		if !errors.Is(err, http.ErrServerClosed) || !errors.Is(err, ErrServerClosed) {
			t.Fatalf("Serve returned %v, want ErrServerClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return")
	}
	if nc, err := net.DialTimeout("tcp", ts.addr, time.Second); err == nil {
		_ = nc.Close()
		t.Fatal("the listener still accepts")
	}
	// Both idle connections are gone and Serve has returned, yet the handler still runs:
	// Shutdown must still be waiting.
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned (%v) while a handler was running", err)
	default:
	}
	close(ts.release)
	rep := busy.netHTTP("POST")
	if rep.Path != "/block" || string(rep.Body) != "blocked body" {
		t.Fatalf("net/http got %+v", rep)
	}
	select {
	case err := <-shut:
		if err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Shutdown did not return after the handler did")
	}
	busy.expectClosed(5 * time.Second)
	// Shutdown again is harmless.
	if err := ts.s.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestShutdownDeadline(t *testing.T) {
	ts := svStart(t, nil)
	busy := ts.dial(t)
	busy.write(svGet("/block"))
	<-ts.entered
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := ts.s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown with a handler still running returned %v, want DeadlineExceeded", err)
	}
	close(ts.release)
	if err := ts.s.Shutdown(context.Background()); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

func TestServeMisuse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := (&Server{HTTP: &http.Server{}}).Serve(ln); err == nil {
		t.Fatal("Serve without Answer returned nil")
	}
	if err := (&Server{Answer: svAnswer}).Serve(ln); err == nil {
		t.Fatal("Serve without HTTP returned nil")
	}
	ts := svStart(t, nil)
	ts.dial(t) // Serve is running
	if err := ts.s.Serve(ln); err == nil || errors.Is(err, ErrServerClosed) {
		t.Fatalf("second Serve returned %v", err)
	}

	s := &Server{Answer: svAnswer, HTTP: &http.Server{}}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown before Serve: %v", err)
	}
	if err := s.Serve(ln); !errors.Is(err, ErrServerClosed) {
		t.Fatalf("Serve after Shutdown returned %v", err)
	}
}

func TestAnswerPanics(t *testing.T) {
	ts := svStart(t, nil)
	other := ts.dial(t)
	other.write(svGet("/fast"))
	other.fast()

	c := ts.dial(t)
	c.write(svGet("/panic"))
	c.expectClosed(5 * time.Second)

	// The other connection, and new ones, keep working.
	other.write(svGet("/fast"))
	other.fast()
	fresh := ts.dial(t)
	fresh.write(svGet("/fast"))
	fresh.fast()
	fresh.write(svGet("/other"))
	fresh.netHTTP("GET")

	log := ts.log.String()
	if !strings.Contains(log, "boom-panic-in-answer") || !strings.Contains(log, "panic") {
		t.Fatalf("the log does not hold the panic: %q", log)
	}
	ts.waitStats(t, 3, 1)
}

func TestHeaderInjection(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	c.write(svGet("/inject"))
	resp, body := c.read("GET")
	if resp.StatusCode != http.StatusOK || string(body) != "injected?" {
		t.Fatalf("status %d, body %q", resp.StatusCode, body)
	}
	for _, name := range []string{"X-Evil", "X-Evil2", "X-Evil3", "X-Evil4", "X-Inject", "X-Inject-Lf",
		"X-Inject-Nul", "X-Inject-Bytes", "X-Name", "Bad Name", "Bad"} {
		if v, ok := resp.Header[http.CanonicalHeaderKey(name)]; ok {
			t.Errorf("header %s: %q got through", name, v)
		}
	}
	if resp.Header.Get("X-Ok") != "yes" || resp.Header.Get("X-Ok-Bytes") != "yes too" {
		t.Fatalf("the valid headers are missing: %v", resp.Header)
	}
	// The connection is intact: the next answer parses.
	c.write(svGet("/fast"))
	c.fast()
}

func TestResponseHeaderUnit(t *testing.T) {
	var w Response
	w.Header("A", "1")
	w.Header("B", "x\ry")
	w.Header("C\n", "1")
	w.HeaderBytes("D", []byte("2"))
	w.HeaderBytes("E", []byte("x\ny"))
	w.Header("", "nameless")
	w.Header("F", "a\x00b")
	got := string(w.header)
	for _, want := range []string{"A: 1\r\n", "D: 2\r\n"} {
		if !strings.Contains(got, want) {
			t.Errorf("header %q lacks %q", got, want)
		}
	}
	for _, bad := range []string{"B:", "x\ry", "C\n", "E:", "x\ny", "nameless", "F:"} {
		if strings.Contains(got, bad) {
			t.Errorf("header %q holds %q", got, bad)
		}
	}
}

func TestLargeBody(t *testing.T) {
	ts := svStart(t, nil)
	c := ts.dial(t)
	// Two in one write, with a small one between, to check the framing after the large one.
	c.write(svGet("/fast-big") + svGet("/fast") + svGet("/fast-big"))
	for i := range 3 {
		resp, body := c.read("GET")
		if i == 1 {
			checkFast(t, resp, body, false)
			continue
		}
		if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Fast") != "1" {
			t.Fatalf("answer %d: status %d, headers %v", i, resp.StatusCode, resp.Header)
		}
		if resp.ContentLength != int64(len(svBigBody)) {
			t.Fatalf("answer %d: Content-Length %d, want %d", i, resp.ContentLength, len(svBigBody))
		}
		if !bytes.Equal(body, svBigBody) {
			t.Fatalf("answer %d: %d bytes differ from the %d sent", i, len(body), len(svBigBody))
		}
	}
	// HEAD of the large one: the length, no body.
	c.write(svReq("HEAD", "/fast-big") + svGet("/fast"))
	resp, body := c.read("HEAD")
	if resp.ContentLength != int64(len(svBigBody)) || len(body) != 0 {
		t.Fatalf("HEAD: Content-Length %d, %d body bytes", resp.ContentLength, len(body))
	}
	c.fast()
	ts.waitStats(t, 5, 0)
}

func TestConcurrent(t *testing.T) {
	for _, loops := range []int{1, 4} {
		t.Run(strconv.Itoa(loops)+" loops", func(t *testing.T) { testConcurrent(t, loops) })
	}
}

func testConcurrent(t *testing.T, loops int) {
	ts := svStart(t, func(s *Server) { s.Loops = loops })
	const workers, requests = 32, 50
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	var fastCount, handCount sync.Map
	for g := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answered, handed, err := svWorker(ts.addr, g, requests)
			fastCount.Store(g, answered)
			handCount.Store(g, handed)
			if err != nil {
				errs <- fmt.Errorf("worker %d: %w", g, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var wantAnswered, wantHanded uint64
	fastCount.Range(func(_, v any) bool { wantAnswered += v.(uint64); return true })
	handCount.Range(func(_, v any) bool { wantHanded += v.(uint64); return true })
	if t.Failed() {
		return
	}
	ts.waitStats(t, wantAnswered, wantHanded)
}

// svWorker does n mixed requests, reconnecting now and then, checking each answer; it returns
// how many the fast path should have answered and how many connections it should have handed.
func svWorker(addr string, g, n int) (answered, handed uint64, err error) {
	var (
		nc       net.Conn
		br       *bufio.Reader
		isHanded bool
	)
	defer func() {
		if nc != nil {
			_ = nc.Close()
		}
	}()
	for i := range n {
		if nc == nil || (i+g)%9 == 0 {
			if nc != nil {
				_ = nc.Close()
			}
			if nc, err = net.Dial("tcp", addr); err != nil {
				return answered, handed, err
			}
			_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
			br, isHanded = bufio.NewReader(nc), false
		}
		kind := (i*7 + g) % 6
		id := fmt.Sprintf("g%d-i%d", g, i)
		var req, method string
		switch kind {
		case 0, 1:
			method, req = "GET", svGet("/fast?"+id, "X-Request-ID: "+id)
		case 2:
			method, req = "HEAD", svReq("HEAD", "/fast?"+id, "X-Request-ID: "+id)
		case 3:
			method, req = "GET", svGet("/fast-big?"+id)
		case 4:
			method, req = "POST", svPost("/echo", "body of "+id)
		case 5:
			method, req = "GET", svGet("/other?"+id, "X-Request-ID: "+id)
		}
		// Now and then two at once.
		pipelined := i%5 == 4
		if pipelined {
			req += svGet("/fast?" + id + "-2")
		}
		if _, err := io.WriteString(nc, req); err != nil {
			return answered, handed, fmt.Errorf("request %d: %w", i, err)
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return answered, handed, fmt.Errorf("request %d (%s): %w", i, req[:20], err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return answered, handed, fmt.Errorf("request %d body: %w", i, err)
		}
		byHTTP := resp.Header.Get("X-Served-By") == "net/http"
		if kind >= 4 && !isHanded {
			isHanded = true
			handed++
		}
		if byHTTP != isHanded {
			return answered, handed, fmt.Errorf("request %d (kind %d): served by net/http %v, want %v", i, kind, byHTTP, isHanded)
		}
		if !isHanded {
			answered++
			want := svFastBody
			switch kind {
			case 2:
				want = nil
			case 3:
				want = svBigBody
			}
			if !bytes.Equal(body, want) {
				return answered, handed, fmt.Errorf("request %d (kind %d): body of %d bytes, want %d", i, kind, len(body), len(want))
			}
			if kind != 3 && resp.Header.Get("X-Req-ID") != id {
				return answered, handed, fmt.Errorf("request %d: X-Req-ID %q, want %q", i, resp.Header.Get("X-Req-ID"), id)
			}
		} else if method != "HEAD" {
			var rep svReport
			if err := json.Unmarshal(body, &rep); err != nil {
				return answered, handed, fmt.Errorf("request %d: %q: %w", i, body, err)
			}
			wantBody := ""
			if kind == 4 {
				wantBody = "body of " + id
			}
			if rep.Method != method || (kind != 4 && !strings.Contains(rep.RequestURI, id)) || string(rep.Body) != wantBody {
				return answered, handed, fmt.Errorf("request %d (kind %d): net/http got %+v", i, kind, rep)
			}
		}
		if pipelined {
			resp, err := http.ReadResponse(br, &http.Request{Method: "GET"})
			if err != nil {
				return answered, handed, fmt.Errorf("request %d, second: %w", i, err)
			}
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				return answered, handed, fmt.Errorf("request %d, second body: %w", i, err)
			}
			if byHTTP := resp.Header.Get("X-Served-By") == "net/http"; byHTTP != isHanded {
				return answered, handed, fmt.Errorf("request %d, second: served by net/http %v, want %v", i, byHTTP, isHanded)
			}
			if !isHanded {
				answered++
				if !bytes.Equal(body, svFastBody) || resp.Header.Get("X-Query") != id+"-2" {
					return answered, handed, fmt.Errorf("request %d, second: body %q, X-Query %q", i, body, resp.Header.Get("X-Query"))
				}
			} else if !bytes.Contains(body, []byte(id+"-2")) {
				return answered, handed, fmt.Errorf("request %d, second: net/http answered %q", i, body)
			}
		}
	}
	return answered, handed, nil
}

// TestSentCountsTheWrite: Sent comes after the write with the bytes of body that reached the
// socket: all of them for a reader that reads, fewer and an error for one that leaves.
func TestSentCountsTheWrite(t *testing.T) {
	type sent struct {
		path    string
		status  int
		written int64
		err     error
	}
	got := make(chan sent, 8)
	big := bytes.Repeat([]byte("x"), 16<<20) // far more than the socket buffers hold
	ts := svStart(t, func(s *Server) {
		next := s.Answer
		s.Answer = func(r *Request, w *Response) bool {
			if r.Path == "/huge" {
				w.SetTag("huge")
				w.Send(http.StatusOK, big)
				return true
			}
			return next(r, w)
		}
		s.Sent = func(r *Request, w *Response, written int64, err error) {
			got <- sent{r.Path, w.Status(), written, err}
		}
	})
	c := ts.dial(t)
	c.write(svGet("/fast") + svReq("HEAD", "/fast"))
	c.read("GET")
	c.read("HEAD")
	for _, want := range []sent{{"/fast", 200, int64(len(svFastBody)), nil}, {"/fast", 200, 0, nil}} {
		if s := <-got; s != want {
			t.Errorf("Sent %+v, want %+v", s, want)
		}
	}
	// A client that asks for 16 MB and leaves: the write fails, Sent says so.
	gone := ts.dial(t)
	gone.write(svGet("/huge"))
	head := make([]byte, 1)
	if _, err := io.ReadFull(gone.br, head); err != nil {
		t.Fatal(err)
	}
	_ = gone.nc.(*net.TCPConn).SetLinger(0)
	_ = gone.nc.Close()
	select {
	case s := <-got:
		if s.path != "/huge" || s.err == nil || s.written >= int64(len(big)) {
			t.Errorf("Sent for a client that left: %+v, want an error and fewer than %d bytes", s, len(big))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no Sent for a failed write")
	}
}

// TestShutdownHandsOverADeclinedRequest: a request the fast path has read and then leaves to
// net/http while Shutdown runs is still handed over, not dropped by the fast path: its
// connections drain before net/http shuts its listener.
func TestShutdownHandsOverADeclinedRequest(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	ts := svStart(t, func(s *Server) {
		next := s.Answer
		s.Answer = func(r *Request, w *Response) bool {
			if r.Path == "/slow-decline" {
				close(entered)
				<-release
				return false
			}
			return next(r, w)
		}
	})
	c := ts.dial(t)
	c.write(svGet("/slow-decline"))
	<-entered
	done := make(chan error, 1)
	go func() { done <- ts.s.Shutdown(context.Background()) }()
	// Shutdown has begun once the listener refuses new connections.
	eventually(t, "the listener to close", func() bool {
		nc, err := net.Dial("tcp", ts.addr)
		if err == nil {
			_ = nc.Close()
		}
		return err != nil
	})
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) while a request was being read", err)
	default:
	}
	close(release)
	checkHandedDuringShutdown(t, ts, c, done)
}

// checkHandedDuringShutdown: the connection went to net/http (the fast path did not close it
// itself), and Shutdown ended cleanly. What net/http then does is its own rule: it serves a
// request it finished reading before its Shutdown began and drops one it finishes after,
// as it does without the fast path; so the client gets net/http's answer or the close.
func checkHandedDuringShutdown(t *testing.T, ts *svServer, c *svClient, done chan error) {
	t.Helper()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, handed := ts.s.Stats(); handed != 1 {
		t.Fatalf("%d connections handed to net/http, want 1", handed)
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	if err == nil && resp.Header.Get("X-Served-By") != "net/http" {
		t.Fatalf("answer %d from %q, want net/http's", resp.StatusCode, resp.Header.Get("X-Served-By"))
	}
}

// TestShutdownWaitsForAHandOffUnderWay: a connection between leaving the fast path and being
// taken by net/http is waited for, so net/http gets it rather than a closed listener.
func TestShutdownWaitsForAHandOffUnderWay(t *testing.T) {
	inGive := make(chan struct{})
	testHookBeforeGive = func() {
		close(inGive)
		time.Sleep(100 * time.Millisecond) // Shutdown polls meanwhile
	}
	t.Cleanup(func() { testHookBeforeGive = nil })
	ts := svStart(t, nil)
	c := ts.dial(t)
	c.write(svGet("/other"))
	<-inGive
	done := make(chan error, 1)
	go func() { done <- ts.s.Shutdown(context.Background()) }()
	checkHandedDuringShutdown(t, ts, c, done)
}

// TestShutdownDoesNotWaitForSlowWriters: a client that does not read a large fast answer does
// not keep net/http from shutting down: its idle connection is closed at once, not when the
// slow writer's deadline or the shutdown's context ends.
func TestShutdownDoesNotWaitForSlowWriters(t *testing.T) {
	huge := bytes.Repeat([]byte("y"), 64<<20) // more than the socket buffers hold
	ts := svStart(t, func(s *Server) {
		next := s.Answer
		s.Answer = func(r *Request, w *Response) bool {
			if r.Path == "/huge" {
				w.Send(http.StatusOK, huge)
				return true
			}
			return next(r, w)
		}
	})
	slow := ts.dial(t)
	slow.write(svGet("/huge")) // and never read
	idle := ts.dial(t)
	idle.write(svGet("/other"))
	idle.netHTTP("GET")
	ts.waitStats(t, 1, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- ts.s.Shutdown(ctx) }()
	// net/http closes its idle connection while the slow answer is still being written.
	idle.expectClosed(5 * time.Second)
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned (%v) with an answer still being written", err)
	default:
	}
	_ = slow.nc.Close()
	if err := <-done; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestHandOffKeepsTheHeaderBudget: a first request whose first byte comes late and is not a
// GET is handed to net/http with what is left of the header timeout, not a fresh one.
func TestHandOffKeepsTheHeaderBudget(t *testing.T) {
	const timeout = time.Second
	ts := svStart(t, func(s *Server) { s.HTTP.ReadHeaderTimeout = timeout })
	c := ts.dial(t)
	start := time.Now()
	time.Sleep(800 * time.Millisecond)
	c.write("P") // a POST begun, then nothing
	// net/http answers a head cut short by its timeout with a 400 and closes.
	resp, _ := c.read("GET")
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d, want net/http's 400", resp.StatusCode)
	}
	c.expectClosed(5 * time.Second)
	// Closed at the first timeout (1 s), not 800 ms + a second one (1.8 s).
	if d := time.Since(start); d > 1500*time.Millisecond {
		t.Errorf("closed after %v: the hand-off gave net/http a second header timeout", d)
	}
}

// TestHeaderTimeoutAnswersLikeNetHTTP: a GET head cut short by the header timeout gets what
// net/http sends then, a 400 and the close, at the first timeout.
func TestHeaderTimeoutAnswersLikeNetHTTP(t *testing.T) {
	ts := svStart(t, func(s *Server) { s.HTTP.ReadHeaderTimeout = 300 * time.Millisecond })
	c := ts.dial(t)
	c.write("GET /fast HTTP/1.1\r\nHo")
	resp, _ := c.read("GET")
	if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("X-Served-By") != "" {
		t.Errorf("status %d from %q, want net/http's own 400", resp.StatusCode, resp.Header.Get("X-Served-By"))
	}
	c.expectClosed(5 * time.Second)
}
