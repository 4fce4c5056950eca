package fastpath

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"testing"
	"time"
)

// svSent is what Sent reported for one answer.
type svSent struct {
	path    string
	written int64
	err     error
}

// svHuge serves /huge from memory and /huge-sealed from a sealed file (both far more than the
// socket buffers hold, so the loop must wait for the socket), and reports every Sent.
func svHuge(t *testing.T, configure func(*Server)) (*svServer, []byte, chan svSent) {
	t.Helper()
	big := make([]byte, 24<<20)
	for i := range big {
		big[i] = byte('a' + i%23)
	}
	sealed := Seal(big)
	if sealed == nil {
		t.Fatal("no sealed file")
	}
	got := make(chan svSent, 64)
	ts := svStart(t, func(s *Server) {
		next := s.Answer
		s.Answer = func(r *Request, w *Response) bool {
			switch r.Path {
			case "/huge":
				w.Send(http.StatusOK, big)
				return true
			case "/huge-sealed":
				w.SendSealed(http.StatusOK, big, sealed)
				return true
			}
			return next(r, w)
		}
		s.Sent = func(r *Request, w *Response, written int64, err error) {
			got <- svSent{r.Path, written, err}
		}
		if configure != nil {
			configure(s)
		}
	})
	return ts, big, got
}

// TestSlowReaderDoesNotStallTheLoop: with one event loop, an answer the socket cannot take at
// once waits for the socket while the loop serves other connections; the slow reader then gets
// every byte, and its connection serves its next request.
func TestSlowReaderDoesNotStallTheLoop(t *testing.T) {
	for _, path := range []string{"/huge", "/huge-sealed"} {
		t.Run(path, func(t *testing.T) {
			ts, big, got := svHuge(t, func(s *Server) { s.Loops = 1 })
			before := sealedSends.Load()
			slow := ts.dial(t)
			slow.write(svGet(path) + svGet("/fast"))
			// While the slow client reads nothing, another connection is answered.
			other := ts.dial(t)
			for range 20 {
				other.write(svGet("/fast"))
				other.fast()
			}
			for range 20 {
				if s := <-got; s.path != "/fast" || s.err != nil {
					t.Fatalf("Sent %+v while the large answer waits", s)
				}
			}
			select {
			case s := <-got:
				t.Fatalf("Sent %+v before the slow client read anything", s)
			default:
			}
			resp, body := slow.read("GET")
			if resp.StatusCode != http.StatusOK || !bytes.Equal(body, big) {
				t.Fatalf("status %d, %d bytes (equal: %v), want %d", resp.StatusCode, len(body), bytes.Equal(body, big), len(big))
			}
			slow.fast() // the pipelined request, after the large answer
			if s := <-got; s != (svSent{path, int64(len(big)), nil}) {
				t.Fatalf("Sent %+v, want all %d bytes", s, len(big))
			}
			if s := <-got; s.path != "/fast" || s.err != nil {
				t.Fatalf("Sent %+v for the pipelined request", s)
			}
			if sealed := sealedSends.Load() - before; (path == "/huge-sealed") != (sealed == 1) {
				t.Fatalf("%d answers went by sendfile", sealed)
			}
		})
	}
}

// TestWriteTimeout: an answer the client does not read ends after WriteTimeout; Sent reports
// the timeout and the bytes that did go, and the connection is closed.
func TestWriteTimeout(t *testing.T) {
	for _, path := range []string{"/huge", "/huge-sealed"} {
		t.Run(path, func(t *testing.T) {
			ts, big, got := svHuge(t, func(s *Server) { s.WriteTimeout = 300 * time.Millisecond })
			c := ts.dial(t)
			c.write(svGet(path))
			var s svSent
			select {
			case s = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("no Sent: the write timeout did not end the answer")
			}
			if !errors.Is(s.err, os.ErrDeadlineExceeded) || s.written <= 0 || s.written >= int64(len(big)) {
				t.Fatalf("Sent %+v, want a timeout after part of %d bytes", s, len(big))
			}
			// What the socket took, then the close.
			_ = c.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
			n, err := io.Copy(io.Discard, c.br)
			if err != nil && !errors.Is(err, net.ErrClosed) && !isReset(err) {
				t.Fatalf("reading to the close: %v", err)
			}
			if n >= int64(len(big)) {
				t.Fatalf("read %d bytes, the whole answer", n)
			}
		})
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne) && !ne.Timeout()
}

// TestShutdownDeadlineEndsWriters: when the shutdown's context ends, the answers still being
// written are cut, and Sent says so.
func TestShutdownDeadlineEndsWriters(t *testing.T) {
	ts, _, got := svHuge(t, nil)
	c := ts.dial(t)
	c.write(svGet("/huge"))
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if err := ts.s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Shutdown: %v, want DeadlineExceeded with an answer still being written", err)
	}
	select {
	case s := <-got:
		if s.path != "/huge" || s.err == nil {
			t.Fatalf("Sent %+v, want an error", s)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no Sent for the cut answer")
	}
	_ = c.nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.Copy(io.Discard, c.br); err != nil && !isReset(err) {
		t.Fatalf("the connection was not closed: %v", err)
	}
	eventually(t, "no connection left", func() bool { return ts.s.live.Load() == 0 })
}

// TestLoops: Loops sets how many event loops there are, half the Ps by default, and
// connections go to all of them.
func TestLoops(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for procs, want := range map[int]int{1: 1, 2: 1, 3: 2, 8: 4} {
		runtime.GOMAXPROCS(procs)
		if got := DefaultLoops(); got != want {
			t.Errorf("GOMAXPROCS %d: %d loops, want %d", procs, got, want)
		}
	}
	ts := svStart(t, func(s *Server) { s.Loops = 3 })
	var cs []*svClient
	for range 9 {
		c := ts.dial(t)
		c.write(svGet("/fast"))
		c.fast()
		cs = append(cs, c)
	}
	ts.s.mu.Lock()
	n := len(ts.s.workers)
	ts.s.mu.Unlock()
	if n != 3 {
		t.Fatalf("%d event loops, want 3", n)
	}
	if ts.s.live.Load() != 9 {
		t.Fatalf("%d connections in the loops, want 9", ts.s.live.Load())
	}
	for i, w := range ts.s.workers {
		if g := w.given.Load(); g != 3 {
			t.Errorf("loop %d was given %d connections, want 3", i, g)
		}
	}
	for _, c := range cs {
		_ = c.nc.Close()
	}
	eventually(t, "the loops to see the closes", func() bool { return ts.s.live.Load() == 0 })
}

// TestFailedWriteEndsTheConnection: a request pipelined behind an answer whose write fails is
// not answered, and the connection leaves its loop once (its slot is not freed twice).
func TestFailedWriteEndsTheConnection(t *testing.T) {
	ts, big, got := svHuge(t, func(s *Server) { s.Loops = 1 })
	for range 3 {
		c := ts.dial(t)
		c.write(svGet("/huge") + svGet("/fast"))
		head := make([]byte, 1)
		if _, err := io.ReadFull(c.br, head); err != nil {
			t.Fatal(err)
		}
		_ = c.nc.(*net.TCPConn).SetLinger(0) // a reset: the pending write fails
		_ = c.nc.Close()
		select {
		case s := <-got:
			if s.path != "/huge" || s.err == nil || s.written >= int64(len(big)) {
				t.Fatalf("Sent %+v, want the failed write", s)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no Sent for the failed write")
		}
	}
	eventually(t, "no connection left", func() bool { return ts.s.live.Load() == 0 })
	// Two connections at once still get one slot each: a slot freed twice would give them
	// the same one, and one of them its answers never.
	a, b := ts.dial(t), ts.dial(t)
	for range 5 {
		a.write(svGet("/fast"))
		b.write(svGet("/fast"))
		a.fast()
		b.fast()
	}
	select {
	case s := <-got:
		if s.path != "/fast" {
			t.Fatalf("Sent %+v after the failed writes", s)
		}
	default:
		t.Fatal("no Sent for the answers after the failed writes")
	}
	if n := ts.s.live.Load(); n != 2 {
		t.Fatalf("%d connections in the loop, want 2", n)
	}
}
