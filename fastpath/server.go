package fastpath

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// headBuffer is a connection's read buffer, and so the largest head the fast path reads; a
// larger one goes to net/http (which takes up to its MaxHeaderBytes).
const headBuffer = 4 << 10

// Server answers what Answer accepts and hands everything else to HTTP. Set the fields, then
// call Serve. Reading a request follows HTTP's ReadHeaderTimeout (from the connection's start,
// or from a later request's first byte) and IdleTimeout (between requests), as net/http does;
// writing an answer is bounded by WriteTimeout (150 s when zero).
//
// On Linux its connections are served by event loops (Loops of them), each waiting in its own
// epoll set, as nginx's workers do, so the answering never takes more than Loops threads
// (why that bound matters: the package doc). Elsewhere every connection goes to HTTP.
type Server struct {
	// Answer fills w for r and returns true, or returns false to leave the request, and the
	// connection from then on, to HTTP. It runs on the event loop serving the connection, so
	// it must not block, and must not keep r's strings or w past its return.
	Answer func(r *Request, w *Response) bool
	// Sent, when set, is called after an answer was written (or failed to be), with the bytes
	// of body that reached the socket: for the metrics and the request log, which must count
	// the transfer. r and w are those Answer had. It runs on the event loop too.
	Sent func(r *Request, w *Response, written int64, err error)
	// HTTP serves every connection handed to it, on a listener of its own that Serve starts.
	HTTP *http.Server
	// WriteTimeout bounds writing one answer.
	WriteTimeout time.Duration
	// Log receives a panic in Answer (the connection is closed); nil discards it.
	Log *slog.Logger
	// Loops is how many event loops serve the connections; zero is DefaultLoops().
	Loops int

	answered, handed atomic.Uint64
	linger           time.Duration       // rstAvoidanceDelay when zero; tests shorten it
	take             func(net.Conn) bool // tests: takes hand-offs instead of HTTP
	live             atomic.Int64        // connections the event loops have
	acked            atomic.Int32        // event loops that have seen closing
	abort            atomic.Bool         // the shutdown's context ended: close everything
	noMore           atomic.Bool         // Serve has returned: no connection will come
	rr               atomic.Uint32       // round robin over workers

	mu       sync.Mutex
	workers  []*worker
	giving   int // connections out of the event loops, not yet taken by net/http
	ln       net.Listener
	handoff  *handoff
	closing  atomic.Bool
	serveErr chan error
}

// Stats reports how many requests the fast path answered and how many connections it handed
// to net/http.
func (s *Server) Stats() (answered, handedOff uint64) {
	return s.answered.Load(), s.handed.Load()
}

// headerTimeout and idleTimeout are net/http's: ReadHeaderTimeout and IdleTimeout, each falling
// back to ReadTimeout; zero is none.
func (s *Server) headerTimeout() time.Duration {
	if s.HTTP.ReadHeaderTimeout > 0 {
		return s.HTTP.ReadHeaderTimeout
	}
	return s.HTTP.ReadTimeout
}

func (s *Server) idleTimeout() time.Duration {
	if s.HTTP.IdleTimeout > 0 {
		return s.HTTP.IdleTimeout
	}
	return s.HTTP.ReadTimeout
}

func (s *Server) writeTimeout() time.Duration {
	if s.WriteTimeout > 0 {
		return s.WriteTimeout
	}
	return 150 * time.Second
}

// DefaultLoops is half the Ps (GOMAXPROCS), rounded up: one loop answers about 200,000
// small requests a second on one core (BENCHMARKS.md), and the other half is left to the rest
// of the server (chat, server-side Python) and to the kernel's side of the connections.
func DefaultLoops() int {
	return (runtime.GOMAXPROCS(0) + 1) / 2
}

func (s *Server) loops() int {
	if s.Loops > 0 {
		return s.Loops
	}
	return DefaultLoops()
}

// ErrServerClosed is what Serve returns after Shutdown (net/http's own value).
var ErrServerClosed = http.ErrServerClosed

// Serve accepts connections on ln until Shutdown and gives each to an event loop (or, where
// there are none, to HTTP). It returns ErrServerClosed after Shutdown, or the error that
// stopped HTTP or the listener. The loops end by themselves once Serve has returned and their
// connections are done; HTTP, serving on its own listener, ends only with Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	if s.Answer == nil || s.HTTP == nil {
		return errors.New("fastpath: Serve needs Answer and HTTP")
	}
	s.mu.Lock()
	if s.ln != nil {
		s.mu.Unlock()
		return errors.New("fastpath: Serve called twice")
	}
	s.ln = ln
	if s.closing.Load() {
		s.mu.Unlock()
		_ = ln.Close()
		return ErrServerClosed
	}
	s.handoff = &handoff{conns: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}
	s.serveErr = make(chan error, 1)
	s.workers = startWorkers(s)
	s.mu.Unlock()
	defer s.acceptDone()
	go func() {
		err := s.HTTP.Serve(s.handoff)
		_ = s.handoff.Close() // nothing may wait to hand a connection to a server that stopped
		s.serveErr <- err
	}()

	var backoff time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.closing.Load() {
				return ErrServerClosed
			}
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of descriptors and the like: wait and try again, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			if s.Log != nil {
				s.Log.Warn("accept failed; retrying", slog.Any("error", err), slog.Duration("in", backoff))
			}
			select {
			case <-time.After(backoff):
				continue
			case err := <-s.serveErr:
				return err
			}
		}
		backoff = 0
		// Registered here, under the lock Shutdown takes to set closing, so that Shutdown
		// waits for every connection accepted before it, and none accepted after it is served.
		s.mu.Lock()
		if s.closing.Load() {
			s.mu.Unlock()
			_ = nc.Close()
			return ErrServerClosed
		}
		adopted := s.adopt(nc)
		if !adopted {
			s.giving++
		}
		s.mu.Unlock()
		if testHookAfterRegister != nil {
			testHookAfterRegister()
		}
		if !adopted && !s.give(nc, nil, time.Time{}) {
			_ = nc.Close()
		}
	}
}

// acceptDone tells the event loops that Serve gives them no more connections: each ends once
// it has none left.
func (s *Server) acceptDone() {
	s.noMore.Store(true)
	s.wakeWorkers()
}

// Shutdown stops accepting, ends the fast path's idle connections, lets the answers being
// written and the hand-offs under way finish, then shuts HTTP down, which serves what was
// handed to it and waits for its own connections. It may be called again, for instance with a
// later deadline after a first one expired.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.closing.Store(true)
	ln := s.ln
	s.mu.Unlock()
	if ln != nil {
		_ = ln.Close()
	}
	s.wakeWorkers()
	// First every connection that may still hand a request to net/http: each worker must have
	// seen closing (it closes its idle connections and those reading a head, and finishes the
	// request it is deciding on), and no hand-off may be under way. They must find the
	// hand-off listener open. Those writing an answer will not hand anything over: net/http's
	// shutdown starts beside them, so a slow reader of a large answer does not keep
	// net/http's idle connections open.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.onlyWriting() {
		select {
		case <-ctx.Done():
			s.abortConns()
			_ = s.HTTP.Shutdown(ctx)
			return ctx.Err()
		case <-tick.C:
			s.wakeWorkers()
		}
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- s.HTTP.Shutdown(ctx) }()
	for s.live.Load() > 0 {
		select {
		case <-ctx.Done():
			s.abortConns()
			<-httpDone
			return ctx.Err()
		case <-tick.C:
		}
	}
	return <-httpDone
}

// onlyWriting reports whether no fast-path connection can hand a request to net/http any more:
// every worker has seen the shutdown, so what it still has is writing an answer (or lingering
// after one), and no hand-off is under way.
func (s *Server) onlyWriting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.giving == 0 && int(s.acked.Load()) == len(s.workers)
}

// abortConns makes every worker close all its connections (answers being written included) and
// stop: the shutdown's context ended.
func (s *Server) abortConns() {
	s.abort.Store(true)
	s.wakeWorkers()
}

// rstAvoidanceDelay is how long a connection closed after an answer lingers half-closed, as in
// net/http: closing a socket with unread bytes (a request pipelined after Connection: close)
// sends a reset, which may destroy the answer before the client has read it.
const rstAvoidanceDelay = 500 * time.Millisecond

func (s *Server) lingerFor() time.Duration {
	if s.linger > 0 {
		return s.linger
	}
	return rstAvoidanceDelay
}

// give hands nc, whose first bytes are rest (read, not consumed) to net/http; limit is the
// latest its first read deadline may be (zero for none). It reports whether net/http took it;
// the caller closes nc when it did not. The caller has counted it in giving, under s.mu and
// before the connection left what Shutdown waits for, so that Shutdown cannot miss it.
func (s *Server) give(nc net.Conn, rest []byte, limit time.Time) bool {
	defer func() {
		s.mu.Lock()
		s.giving--
		s.mu.Unlock()
	}()
	// net/http sets its own deadlines as it reads; clear any so a stale one cannot cut it off,
	// but let its first one (the header timeout) end no later than ours would have, so a head
	// that began under the fast path's header timeout gets no second one.
	_ = nc.SetDeadline(time.Time{})
	bc := &bufferedConn{Conn: nc, rest: rest, limit: limit}
	if testHookBeforeGive != nil {
		testHookBeforeGive()
	}
	take := s.handoff.give
	if s.take != nil {
		take = s.take
	}
	if !take(bc) {
		return false
	}
	s.handed.Add(1)
	return true
}

// passOn gives nc to net/http on a goroutine of its own: net/http's accept loop may take a
// moment to come for it, and an event loop's other connections need not wait for that. The
// caller has counted it in giving.
func (s *Server) passOn(nc net.Conn, rest []byte, limit time.Time) {
	go func() {
		if !s.give(nc, rest, limit) {
			_ = nc.Close()
		}
	}()
}

// testHookAfterRegister, when set by a test, runs after Serve has registered a connection
// (given it to a loop, or counted it as being handed to net/http) and let go of the lock.
var testHookAfterRegister func()

// testHookBeforeGive, when set by a test, runs between a connection leaving conns and
// net/http taking it.
var testHookBeforeGive func()

// handoff is the listener HTTP serves: its connections are the ones the fast path gave up.
type handoff struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	addr  net.Addr
}

func (h *handoff) Accept() (net.Conn, error) {
	select {
	case c := <-h.conns:
		return c, nil
	case <-h.done:
		return nil, net.ErrClosed
	}
}

func (h *handoff) Close() error {
	h.once.Do(func() { close(h.done) })
	return nil
}

func (h *handoff) Addr() net.Addr { return h.addr }

func (h *handoff) give(c net.Conn) bool {
	select {
	case <-h.done:
		return false
	default:
	}
	select {
	case h.conns <- c:
		return true
	case <-h.done:
		return false
	}
}

// bufferedConn is a connection whose first bytes were read by the fast path.
type bufferedConn struct {
	net.Conn
	rest  []byte    // read, not yet consumed
	limit time.Time // the latest net/http's first read deadline may be; zero for none
}

// SetReadDeadline passes net/http's deadlines on, the first no later than limit.
func (c *bufferedConn) SetReadDeadline(t time.Time) error {
	if !c.limit.IsZero() {
		if t.IsZero() || t.After(c.limit) {
			t = c.limit
		}
		c.limit = time.Time{}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *bufferedConn) Read(p []byte) (int, error) {
	if len(c.rest) > 0 {
		n := copy(p, c.rest)
		c.rest = c.rest[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite and ReadFrom keep what net/http finds on a *net.TCPConn: a half close before a
// graceful close, and sendfile.
func (c *bufferedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

func (c *bufferedConn) ReadFrom(r io.Reader) (int64, error) {
	return io.Copy(c.Conn, r)
}
