package fastpath

import (
	"bufio"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
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
type Server struct {
	// Answer fills w for r and returns true, or returns false to leave the request, and the
	// connection from then on, to HTTP. It runs on the connection's goroutine and must not keep
	// r's strings or w past its return.
	Answer func(r *Request, w *Response) bool
	// Sent, when set, is called after an answer was written (or failed to be), with the bytes
	// of body that reached the socket: for the metrics and the request log, which must count
	// the transfer. r and w are those Answer had.
	Sent func(r *Request, w *Response, written int64, err error)
	// HTTP serves every connection handed to it, on a listener of its own that Serve starts.
	HTTP *http.Server
	// WriteTimeout bounds writing one answer.
	WriteTimeout time.Duration
	// Log receives a panic in Answer (the connection is closed); nil discards it.
	Log *slog.Logger

	answered, handed atomic.Uint64
	linger           time.Duration // rstAvoidanceDelay when zero; tests shorten it

	mu       sync.Mutex
	conns    map[*conn]struct{}
	giving   int // connections out of conns, not yet taken by net/http
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

// ErrServerClosed is what Serve returns after Shutdown (net/http's own value).
var ErrServerClosed = http.ErrServerClosed

// Serve accepts connections on ln until Shutdown, serving each on its own goroutine. It
// returns ErrServerClosed after Shutdown, or the error that stopped HTTP or the listener.
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
	s.conns = map[*conn]struct{}{}
	s.handoff = &handoff{conns: make(chan net.Conn), done: make(chan struct{}), addr: ln.Addr()}
	s.serveErr = make(chan error, 1)
	s.mu.Unlock()
	if s.closing.Load() {
		_ = ln.Close()
		return ErrServerClosed
	}
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
		c := newConn(nc)
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		go s.serveConn(c)
	}
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
	// First every connection that may still hand a request to net/http: one reading a head or
	// deciding on it, or being handed over. They must find the hand-off listener open. Those
	// writing an answer will not hand anything over: net/http's shutdown starts beside them,
	// so a slow reader of a large answer does not keep net/http's idle connections open.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !s.onlyWriting() {
		s.wakeConns()
		select {
		case <-ctx.Done():
			s.closeConns()
			_ = s.HTTP.Shutdown(ctx)
			return ctx.Err()
		case <-tick.C:
		}
	}
	httpDone := make(chan error, 1)
	go func() { httpDone <- s.HTTP.Shutdown(ctx) }()
	for {
		s.wakeConns()
		s.mu.Lock()
		n := len(s.conns)
		s.mu.Unlock()
		if n == 0 {
			return <-httpDone
		}
		select {
		case <-ctx.Done():
			s.closeConns()
			<-httpDone
			return ctx.Err()
		case <-tick.C:
		}
	}
}

// onlyWriting reports whether no fast-path connection can hand a request to net/http any more:
// each is writing an answer (or lingering after one), and no hand-off is under way.
func (s *Server) onlyWriting() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.giving > 0 {
		return false
	}
	for c := range s.conns {
		if !c.writing.Load() {
			return false
		}
	}
	return true
}

// wakeConns makes every fast-path connection blocked on a read return at once; each then sees
// closing and ends. A connection writing an answer finishes it first.
func (s *Server) wakeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	for c := range s.conns {
		_ = c.nc.SetReadDeadline(now)
	}
}

func (s *Server) closeConns() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.nc.Close()
	}
}

// conn is one connection while the fast path has it.
type conn struct {
	nc       net.Conn
	br       *bufio.Reader
	req      Request
	resp     Response
	bufs     net.Buffers
	rdl, wdl time.Time   // the deadlines last set
	started  bool        // an answer was written: later requests wait under the idle timeout
	writing  atomic.Bool // writing an answer or closing after one: it will hand nothing off
	dateSec  int64
	date     []byte
}

var connPool = sync.Pool{New: func() any {
	return &conn{resp: Response{header: make([]byte, 0, 512), out: make([]byte, 0, 1024)}, date: make([]byte, 0, 32)}
}}

func newConn(nc net.Conn) *conn {
	c := connPool.Get().(*conn)
	c.nc = nc
	c.started = false
	if c.br == nil {
		c.br = bufio.NewReaderSize(nc, headBuffer)
	} else {
		c.br.Reset(nc)
	}
	return c
}

func (s *Server) serveConn(c *conn) {
	nc := c.nc
	handed := false
	// Two defers: the clean-up runs even if logging the panic panics too.
	defer func() {
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
		if !handed {
			_ = nc.Close()
			c.br.Reset(nil)
		} else {
			c.br = nil // it went with the connection
		}
		c.nc, c.rdl, c.wdl, c.req, c.bufs = nil, time.Time{}, time.Time{}, Request{}, nil
		c.resp.Reset()
		c.writing.Store(false)
		connPool.Put(c)
	}()
	defer func() {
		if r := recover(); r != nil && s.Log != nil {
			s.Log.Error("panic in the fast path", slog.Any("error", r), slog.String("stack", string(debug.Stack())))
		}
	}()
	for {
		v, n := c.readHead(s)
		if v == incomplete {
			return // closed, timed out, or shutting down
		}
		c.resp.Reset()
		c.resp.began = time.Now()
		if v == refuse || !s.Answer(&c.req, &c.resp) || !c.resp.sent {
			handed = s.handOff(c)
			return
		}
		s.answered.Add(1)
		c.writing.Store(true)
		closing := c.req.Close || s.closing.Load()
		written, err := c.write(s, closing)
		if s.Sent != nil {
			s.Sent(&c.req, &c.resp, written, err)
		}
		c.started = true
		c.req = Request{}
		_, _ = c.br.Discard(n)
		if err != nil {
			return
		}
		if closing {
			s.closeWriteAndWait(nc)
			return
		}
		c.writing.Store(false)
	}
}

// readHead waits for a whole head: for a connection's first request under the header timeout,
// for a later one under the idle timeout and then the header timeout once part of it arrived.
// incomplete means the connection is done with (closed by the client, timed out, or the
// server is shutting down).
func (c *conn) readHead(s *Server) (verdict, int) {
	// A connection's first request has the header timeout from the start, as in net/http;
	// between requests the idle timeout runs until the next one begins.
	wait := s.headerTimeout()
	if c.started {
		wait = s.idleTimeout()
	}
	c.setReadDeadline(time.Now(), wait)
	// After the deadline is set: Shutdown sets closing, then a deadline in the past, so either
	// this sees closing or that deadline ends the wait below.
	if s.closing.Load() {
		return incomplete, 0
	}
	headerArmed := !c.started // a first request is under the header timeout already
	for {
		buf, _ := c.br.Peek(c.br.Buffered())
		if len(buf) > 0 {
			v, n := parse(buf, &c.req)
			if v != incomplete {
				return v, n
			}
			if len(buf) == c.br.Size() {
				return refuse, 0 // too large for the fast path; net/http reads on
			}
			if !headerArmed {
				headerArmed = true
				c.setReadDeadline(time.Now(), s.headerTimeout())
			}
		}
		if _, err := c.br.Peek(len(buf) + 1); err != nil {
			// A head cut short by the header timeout gets net/http's answer to that, a 400,
			// from net/http itself: handed over, it meets the same expired deadline (handOff).
			var ne net.Error
			if len(buf) > 0 && errors.As(err, &ne) && ne.Timeout() && !s.closing.Load() {
				return refuse, 0
			}
			return incomplete, 0
		}
	}
}

// setReadDeadline sets the read deadline d from now, unless the one set already falls a little
// before that (within an eighth of d, at most a second): re-arming it on every request costs a
// timer update, and a timeout that ends that little early changes nothing.
func (c *conn) setReadDeadline(now time.Time, d time.Duration) {
	if d <= 0 { // no timeout
		if !c.rdl.IsZero() {
			c.rdl = time.Time{}
			_ = c.nc.SetReadDeadline(time.Time{})
		}
		return
	}
	if t := now.Add(d); rearm(c.rdl, now, t, d) {
		c.rdl = t
		_ = c.nc.SetReadDeadline(t)
	}
}

func (c *conn) setWriteDeadline(now time.Time, d time.Duration) {
	if t := now.Add(d); rearm(c.wdl, now, t, d) {
		c.wdl = t
		_ = c.nc.SetWriteDeadline(t)
	}
}

// rearm reports whether a deadline set at old must move to t (d from now).
func rearm(old, now, t time.Time, d time.Duration) bool {
	return old.After(t) || t.Sub(old) > min(d/8, time.Second) || !old.After(now)
}

// write sends the answer: the head and the body in one writev, or the head and then sendfile
// for a sealed body (the body only for a GET). It returns how many bytes of body were sent.
func (c *conn) write(s *Server, closing bool) (int64, error) {
	now := time.Now()
	if sec := now.Unix(); sec != c.dateSec || len(c.date) == 0 {
		c.dateSec = sec
		c.date = now.UTC().AppendFormat(c.date[:0], http.TimeFormat)
	}
	c.resp.frame(c.date, closing)
	d := s.writeTimeout()
	if c.resp.deadline > 0 {
		d = c.resp.deadline
	}
	c.setWriteDeadline(now, d)
	withBody := len(c.resp.body) > 0 && !c.req.Head() && bodyAllowed(c.resp.status)
	if withBody && c.resp.sealed != nil {
		if ok, n, err := sendSealed(c.nc, c.resp.out, c.resp.sealed); ok {
			return n, err
		}
	}
	c.resp.vec[0] = c.resp.out
	c.bufs = c.resp.vec[:1]
	if withBody {
		c.resp.vec[1] = c.resp.body
		c.bufs = c.resp.vec[:2]
	}
	n, err := c.bufs.WriteTo(c.nc)
	c.resp.vec = [2][]byte{}
	return max(n-int64(len(c.resp.out)), 0), err
}

// rstAvoidanceDelay is how long a connection closed after an answer lingers half-closed, as in
// net/http: closing a socket with unread bytes (a request pipelined after Connection: close)
// sends a reset, which may destroy the answer before the client has read it.
const rstAvoidanceDelay = 500 * time.Millisecond

// closeWriteAndWait ends the sending side, so the client reads the answer and then EOF, and
// waits a little before the caller closes.
func (s *Server) closeWriteAndWait(nc net.Conn) {
	if cw, ok := nc.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
		d := rstAvoidanceDelay
		if s.linger > 0 {
			d = s.linger
		}
		time.Sleep(d)
	}
}

// handOff gives the connection, with the bytes read but not consumed, to net/http. It reports
// whether net/http took it (false once shutting down: the caller closes it).
func (s *Server) handOff(c *conn) bool {
	// net/http sets its own deadlines as it reads; clear ours so a stale one cannot cut it off,
	// but let its first one (the header timeout) end no later than ours would have, so a head
	// that began under the fast path's header timeout gets no second one.
	limit := c.rdl
	_ = c.nc.SetDeadline(time.Time{})
	bc := &bufferedConn{Conn: c.nc, r: c.br, limit: limit}
	// No longer the fast path's: Shutdown must not set deadlines on it or close it, but must
	// wait for net/http to have it.
	s.mu.Lock()
	delete(s.conns, c)
	s.giving++
	s.mu.Unlock()
	if testHookBeforeGive != nil {
		testHookBeforeGive()
	}
	ok := s.handoff.give(bc)
	s.mu.Lock()
	s.giving--
	s.mu.Unlock()
	if !ok {
		return false
	}
	s.handed.Add(1)
	return true
}

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

// bufferedConn is a connection whose first bytes are still in the fast path's buffer.
type bufferedConn struct {
	net.Conn
	r     *bufio.Reader // nil once drained
	limit time.Time     // the latest net/http's first read deadline may be; zero for none
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
	if c.r != nil {
		if c.r.Buffered() > 0 {
			return c.r.Read(p)
		}
		c.r = nil
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
