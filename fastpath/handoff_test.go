package fastpath

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// handOffSeeds are byte streams a client might send on one connection.
var handOffSeeds = []string{
	"",
	"GET /fast HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\nPOST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /fast HTTP/1.1\r\n",
	"GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\nHost: x\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /fast HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n",
	"GET /fast HTTP/1.1\nHost: x\n\n",
	"GET /fast HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
	"GET /fast HTTP/1.1\r\nHost: x\r\nX: " + string(bytes.Repeat([]byte("a"), 5000)) + "\r\n\r\n",
	"GET /fast HTTP/1.1\r\nHost: x\r\n\r\nGET /fa",
	"\r\nGET /fast HTTP/1.1\r\nHost: x\r\n\r\n",
}

// expectHandOff works out what the fast path must do with in, sent on one connection that
// the client then half-closes, when only GET or HEAD /fast is answered: how many answers, and
// the bytes handed to net/http (nil for none), read from where the last answered head ended.
// A head the half close cut short is handed over too, so that net/http answers it.
func expectHandOff(in []byte) (answers int, handed []byte) {
	for off := 0; ; {
		window := in[off:min(len(in), off+headBuffer)]
		var r Request
		v, n := parse(window, &r)
		switch {
		case v == complete && r.Path == "/fast":
			answers++
			off += n
			if r.Close {
				return answers, nil
			}
			continue
		case v == incomplete && len(window) == 0:
			return answers, nil // the client ended between requests: closed
		case v == incomplete && len(window) < headBuffer:
			return answers, in[off:] // the client ended mid-head: net/http answers it
		}
		return answers, in[off:] // refused, declined, or a head too large for the buffer
	}
}

// FuzzHandOff: over a real connection, the fast path answers exactly the requests it should,
// and whatever it leaves reaches net/http's side byte for byte: nothing lost, nothing
// repeated, nothing answered twice.
func FuzzHandOff(f *testing.F) {
	for _, s := range handOffSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		if len(in) > 3*headBuffer {
			return
		}
		checkHandOff(t, in)
	})
}

func TestHandOffKeepsEveryByte(t *testing.T) {
	for _, s := range handOffSeeds {
		checkHandOff(t, []byte(s))
	}
}

func checkHandOff(t *testing.T, in []byte) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	// net/http's side: what it would read from a connection handed to it.
	handed := make(chan []byte, 1)
	s := &Server{
		Answer: func(r *Request, w *Response) bool {
			if r.Path != "/fast" {
				return false
			}
			w.Send(http.StatusOK, []byte("ok"))
			return true
		},
		HTTP:   &http.Server{},
		linger: time.Millisecond,
		take: func(hc net.Conn) bool {
			go func() {
				b, _ := io.ReadAll(hc)
				_ = hc.Close()
				handed <- b
			}()
			return true
		},
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(ln)
	}()
	defer func() {
		_ = s.Shutdown(context.Background())
		<-served
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	go func() {
		_, _ = c.Write(in)
		_ = c.(*net.TCPConn).CloseWrite()
	}()
	wantAnswers, wantHanded := expectHandOff(in)
	br := bufio.NewReader(c)
	answers := 0
	for {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			break
		}
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK || string(body) != "ok" {
			t.Fatalf("%q: answer %d %q", in, resp.StatusCode, body)
		}
		answers++
		if answers == wantAnswers && wantHanded != nil {
			break // the rest of the connection is net/http's
		}
	}
	if answers != wantAnswers {
		t.Fatalf("%q: %d answers, want %d", in, answers, wantAnswers)
	}
	if wantHanded == nil {
		// The fast path ends the connection itself: the client reads its close.
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if rest, err := io.ReadAll(br); err != nil || len(rest) > 0 {
			t.Fatalf("%q: after the answers, %q and %v, want the close", in, rest, err)
		}
		select {
		case b := <-handed:
			t.Fatalf("%q: %q handed to net/http, want nothing", in, b)
		default:
		}
		if _, h := s.Stats(); h != 0 {
			t.Fatalf("%q: %d hand-offs, want none", in, h)
		}
		return
	}
	select {
	case got := <-handed:
		if !bytes.Equal(got, wantHanded) {
			t.Fatalf("%q: net/http got %q, want %q", in, got, wantHanded)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("%q: nothing handed to net/http, want %q", in, wantHanded)
	}
}
