package fastpath

import (
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"
)

// malformedHeads are heads net/http answers at once, with no header timeout involved: a
// request line or header line it cannot read (the line is whole, the head is not), or a head
// cut short by the client's half close.
var malformedHeads = []struct {
	in        string
	halfClose bool
}{
	{"GET /fast\r\n", false}, // HTTP/0.9
	{"GET /fast HTTP/1.1 x\r\n", false},
	{"GET  /fast HTTP/1.1\r\n", false},
	{"GET fast HTTP/1.1\r\n", false},
	{"GET /fa st HTTP/1.1\r\n", false},
	{"GET /fa%zz HTTP/1.1\r\n", false},
	{"GET /fast HTTP/1.1\r\nHost x\r\n", false},
	{"GET /fast HTTP/1.1\r\n Host: x\r\n", false},
	{"GET /fast HTTP/1.1\r\nHost: x\r\n", true},
	{"GET /fast HTTP/1.1\r\nHost: x\r\n\r", true},
	{"GET /fast HTTP/1.1\r\nHo", true},
	{"GET /fast HTTP/1.1\r", true},
	{"GE", true},
}

// answerWithin is how long a client waits for an answer to a malformed head; the servers'
// header timeout is an hour, so an answer within it came at once, not from a timeout.
const answerWithin = 10 * time.Second

// sendHead writes in on nc (then half closes it, with halfClose) and returns what the server
// sends before it closes the connection; it fails if the server is still silent after
// answerWithin.
func sendHead(t *testing.T, nc net.Conn, in string, halfClose bool) string {
	t.Helper()
	if _, err := io.WriteString(nc, in); err != nil {
		t.Fatal(err)
	}
	if halfClose {
		if err := nc.(*net.TCPConn).CloseWrite(); err != nil {
			t.Fatal(err)
		}
	}
	_ = nc.SetReadDeadline(time.Now().Add(answerWithin))
	b, err := io.ReadAll(nc)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("%q (half close %v): no answer and no close after %v, with an hour's header timeout; got %q",
			in, halfClose, answerWithin, b)
	}
	return string(b)
}

// netHTTPAlone is what net/http alone, with an hour's header timeout, sends to in.
func netHTTPAlone(t *testing.T, in string, halfClose bool) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{ReadHeaderTimeout: time.Hour, Handler: http.NotFoundHandler()}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	return sendHead(t, nc, in, halfClose)
}

// TestMalformedHeadsAnswerAtOnce: a head net/http answers at once (a request line that is not
// HTTP/1.x, a broken header line, a head cut by the client's half close) gets the same bytes at
// once through the fast path, first on a connection or after a fast answer, rather than
// waiting for the header timeout or being closed unanswered.
func TestMalformedHeadsAnswerAtOnce(t *testing.T) {
	ts := svStart(t, func(s *Server) { s.HTTP.ReadHeaderTimeout = time.Hour })
	for _, tc := range malformedHeads {
		want := netHTTPAlone(t, tc.in, tc.halfClose)
		if want == "" {
			t.Fatalf("%q: net/http alone sends nothing; the case tests nothing", tc.in)
		}
		name := strconv.Quote(tc.in)
		if tc.halfClose {
			name += " then a half close"
		}
		t.Run(name, func(t *testing.T) {
			c := ts.dial(t)
			if got := sendHead(t, c.nc, tc.in, tc.halfClose); got != want {
				t.Errorf("got %q, net/http alone sends %q", got, want)
			}
		})
		t.Run(name+" after a fast answer", func(t *testing.T) {
			c := ts.dial(t)
			c.write(svGet("/fast"))
			c.fast()
			if _, err := io.WriteString(c.nc, tc.in); err != nil {
				t.Fatal(err)
			}
			if tc.halfClose {
				if err := c.nc.(*net.TCPConn).CloseWrite(); err != nil {
					t.Fatal(err)
				}
			}
			if got := c.readToClose(answerWithin); got != want {
				t.Errorf("got %q, net/http alone sends %q", got, want)
			}
		})
	}
}
