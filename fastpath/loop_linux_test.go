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
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"log/slog"
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
	head := make([]byte, 1) // the answer has begun: the connection is writing
	if _, err := io.ReadFull(c.br, head); err != nil {
		t.Fatal(err)
	}
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
	if n := len(ts.loops()); n != 3 {
		t.Fatalf("%d event loops, want 3", n)
	}
	if ts.s.live.Load() != 9 {
		t.Fatalf("%d connections in the loops, want 9", ts.s.live.Load())
	}
	for i, w := range ts.loops() {
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

// TestShutdownAgainAfterAnAbort: a Shutdown whose context ended while a loop was still
// deciding on a request leaves the loops stopped, and a second Shutdown then succeeds.
func TestShutdownAgainAfterAnAbort(t *testing.T) {
	entered, release := make(chan struct{}), make(chan struct{})
	ts := svStart(t, func(s *Server) {
		s.Loops = 1
		next := s.Answer
		s.Answer = func(r *Request, w *Response) bool {
			if r.Path == "/stall" {
				close(entered)
				<-release
			}
			return next(r, w)
		}
	})
	c := ts.dial(t)
	c.write(svGet("/stall"))
	<-entered
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := ts.s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("first Shutdown: %v, want DeadlineExceeded", err)
	}
	close(release)
	eventually(t, "no connection left", func() bool { return ts.s.live.Load() == 0 })
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel2()
	if err := ts.s.Shutdown(ctx2); err != nil {
		t.Fatalf("second Shutdown: %v", err)
	}
}

// plainListener hides the accepted connections' descriptors, so the loops cannot take them.
type plainListener struct{ net.Listener }

func (l plainListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return struct{ net.Conn }{c}, nil
}

// TestShutdownCountsDirectHandOffs: a connection the loops cannot take goes straight to
// net/http, and a Shutdown that begins once Serve has accepted it waits for net/http to have
// it rather than closing the hand-off listener under it.
func TestShutdownCountsDirectHandOffs(t *testing.T) {
	registered := make(chan struct{})
	testHookAfterRegister = func() {
		close(registered)
		time.Sleep(100 * time.Millisecond) // Shutdown runs meanwhile
	}
	t.Cleanup(func() { testHookAfterRegister = nil })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Answer: svAnswer, HTTP: &http.Server{Handler: svHandler(nil, nil)}}
	served := make(chan error, 1)
	go func() { served <- s.Serve(plainListener{ln}) }()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	_, _ = io.WriteString(nc, svGet("/fast"))
	<-registered
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	<-served
	if _, h := s.Stats(); h != 1 {
		t.Fatalf("%d connections reached net/http, want the one accepted", h)
	}
}

// TestAFailedLoopIsPassedOver: a loop whose epoll set fails stops, closes what it had, and
// gets no more connections: with no loop left they go to net/http, and Shutdown still ends.
func TestAFailedLoopIsPassedOver(t *testing.T) {
	var logs svLockedBuffer
	ts := svStart(t, func(s *Server) {
		s.Loops = 1
		s.Log = slog.New(slog.NewTextHandler(&logs, nil))
	})
	c := ts.dial(t)
	c.write(svGet("/fast"))
	c.fast()
	w := ts.loops()[0]
	// The loop's epoll descriptor now names /dev/null: its next epoll_wait fails.
	null, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if err := unix.Dup2(int(null.Fd()), w.ep); err != nil {
		t.Fatal(err)
	}
	// A connection given to the loop now cannot join its epoll set: net/http serves it.
	b := ts.dial(t)
	b.write(svGet("/fast"))
	b.netHTTP("GET")
	c.expectClosed(5 * time.Second)
	eventually(t, "the loop to stop", func() bool {
		ts.s.mu.Lock()
		defer ts.s.mu.Unlock()
		return w.stopped
	})
	if !strings.Contains(logs.String(), "event loop failed") {
		t.Errorf("log %q: want the failure", logs.String())
	}
	d := ts.dial(t)
	d.write(svGet("/fast"))
	d.netHTTP("GET")
	if n := ts.s.live.Load(); n != 0 {
		t.Fatalf("%d connections in loops, want none", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := ts.s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

// TestSentPanicsWhileAborting: a panic in Sent for an answer cut by the shutdown's deadline
// is logged, not the end of the process.
func TestSentPanicsWhileAborting(t *testing.T) {
	var logs svLockedBuffer
	ts, _, _ := svHuge(t, func(s *Server) {
		s.Log = slog.New(slog.NewTextHandler(&logs, nil))
		s.Sent = func(r *Request, w *Response, written int64, err error) {
			if err != nil {
				panic("boom-in-sent")
			}
		}
	})
	c := ts.dial(t)
	c.write(svGet("/huge"))
	head := make([]byte, 1)
	if _, err := io.ReadFull(c.br, head); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_ = ts.s.Shutdown(ctx)
	eventually(t, "the panic logged", func() bool { return strings.Contains(logs.String(), "boom-in-sent") })
	eventually(t, "no connection left", func() bool { return ts.s.live.Load() == 0 })
}

// TestCloseLeavesTheEpollSet: a connection closed while another descriptor still holds its
// socket (a child process between fork and exec) leaves the loop's epoll set, so the loop does
// not wake again and again for a connection it no longer has.
func TestCloseLeavesTheEpollSet(t *testing.T) {
	held := make(chan int, 1)
	ts := svStart(t, func(s *Server) {
		s.Loops = 1
		s.Sent = func(r *Request, w *Response, written int64, err error) {
			// On the loop's goroutine: its one connection's descriptor, held as a child would.
			for _, c := range s.workers[0].slots {
				if c != nil {
					if fd, err := unix.Dup(c.fd); err == nil {
						held <- fd
					}
				}
			}
		}
	})
	c := ts.dial(t)
	c.write(svGet("/fast"))
	c.fast()
	fd := <-held
	defer unix.Close(fd)
	_ = c.nc.Close() // the loop reads EOF and closes its descriptor
	eventually(t, "the loop to close it", func() bool { return ts.s.live.Load() == 0 })
	w := ts.loops()[0]
	before := w.wakes.Load()
	time.Sleep(200 * time.Millisecond)
	if n := w.wakes.Load() - before; n > 20 {
		t.Fatalf("the loop woke %d times in 200 ms with nothing to do", n)
	}
}

// TestLoopsEndWithServe: when Serve returns without a Shutdown (its listener closed), the
// loops serve the connections they have and stop once those end.
func TestLoopsEndWithServe(t *testing.T) {
	ts := svStart(t, func(s *Server) { s.Loops = 2 })
	c := ts.dial(t)
	c.write(svGet("/fast"))
	c.fast()
	ts.s.mu.Lock()
	ln := ts.s.ln
	ts.s.mu.Unlock()
	_ = ln.Close()
	if err := <-ts.serve; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Serve: %v, want the closed listener", err)
	}
	c.write(svGet("/fast"))
	c.fast()
	_ = c.nc.Close()
	eventually(t, "the loops to stop", func() bool {
		ts.s.mu.Lock()
		defer ts.s.mu.Unlock()
		for _, w := range ts.s.workers {
			if !w.stopped {
				return false
			}
		}
		return true
	})
}

// loops is the server's event loops (read under the lock Serve set them with).
func (ts *svServer) loops() []*worker {
	ts.s.mu.Lock()
	defer ts.s.mu.Unlock()
	return ts.s.workers
}

// TestHandOffDoesNotStallTheLoop: while net/http has not yet taken a connection handed to it,
// the loop that handed it serves its other connections.
func TestHandOffDoesNotStallTheLoop(t *testing.T) {
	taking, release := make(chan struct{}), make(chan struct{})
	ts := svStart(t, func(s *Server) {
		s.Loops = 1
		s.take = func(nc net.Conn) bool {
			close(taking)
			<-release
			_ = nc.Close()
			return true
		}
	})
	handed := ts.dial(t)
	handed.write(svGet("/other"))
	<-taking
	c := ts.dial(t)
	for range 3 {
		c.write(svGet("/fast"))
		c.fast()
	}
	close(release)
	handed.expectClosed(5 * time.Second)
}

// TestHandOffAfterAnAnswerHasNoReadLimit: a request whose whole head came while the idle
// timeout ran (after a fast answer) goes to net/http without that deadline: net/http alone
// decides how long its body may take (here, with no ReadTimeout, as long as it likes).
func TestHandOffAfterAnAnswerHasNoReadLimit(t *testing.T) {
	ts := svStart(t, func(s *Server) { s.HTTP.IdleTimeout = 500 * time.Millisecond })
	c := ts.dial(t)
	c.write(svGet("/fast"))
	c.fast()
	time.Sleep(300 * time.Millisecond)
	c.write("POST /x HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\n")
	time.Sleep(400 * time.Millisecond) // past the fast path's idle deadline
	c.write("abc")
	if rep := c.netHTTP("POST"); string(rep.Body) != "abc" {
		t.Fatalf("net/http read %q, want the body", rep.Body)
	}
}

// TestAStoppedLoopPassesItsQueueOn: connections queued to a loop that stops before it took
// them (it failed) are handed to net/http unread, and counted until net/http has them.
func TestAStoppedLoopPassesItsQueueOn(t *testing.T) {
	handed := make(chan net.Conn, 1)
	s := &Server{Answer: svAnswer, HTTP: &http.Server{}, take: func(nc net.Conn) bool {
		handed <- nc
		return true
	}}
	w, err := newWorker(s) // not running: its queue stays as adopt leaves it
	if err != nil {
		t.Fatal(err)
	}
	s.workers = []*worker{w}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	nc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	adopted := s.adopt(nc)
	s.mu.Unlock()
	if !adopted || s.live.Load() != 1 {
		t.Fatalf("adopted %v, %d live", adopted, s.live.Load())
	}
	req := svGet("/fast")
	_, _ = io.WriteString(client, req)
	w.stop()
	var hc net.Conn
	select {
	case hc = <-handed:
	case <-time.After(5 * time.Second):
		t.Fatal("the queued connection was not handed to net/http")
	}
	defer hc.Close()
	_ = hc.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(req))
	if _, err := io.ReadFull(hc, got); err != nil || string(got) != req {
		t.Fatalf("net/http read %q, %v; want %q", got, err, req)
	}
	if s.live.Load() != 0 || s.acked.Load() != 1 {
		t.Fatalf("%d live, %d acked; want 0 and 1", s.live.Load(), s.acked.Load())
	}
	eventually(t, "the hand-off counted out", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.giving == 0
	})
}
