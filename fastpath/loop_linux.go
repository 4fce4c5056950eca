package fastpath

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// wakeTag marks the worker's eventfd among its epoll events (connections carry their slot).
const wakeTag = -1

// worker is one event loop: the connections it was given, in its own epoll set, served in
// turn on one goroutine that blocks in epoll_wait when none of them has anything to do.
type worker struct {
	s    *Server
	ep   int // the epoll set
	wake int // an eventfd: Serve's new connections, and Shutdown

	mu      sync.Mutex
	queue   []*conn // accepted, not yet in the epoll set
	pending atomic.Bool
	given   atomic.Int64  // connections adopted, for the tests
	wakes   atomic.Uint64 // epoll_wait returns, for the tests

	slots   []*conn // by slot, which epoll events carry; nil where free
	free    []int32
	live    int       // connections in slots
	next    time.Time // no deadline of a connection here is before next (zero: none is set)
	acked   bool      // has seen closing
	stopped bool      // its descriptors are closed (under s.mu): nothing may poke it

	evs     []unix.EpollEvent
	dateSec int64
	date    []byte
}

// connState is what a connection waits for.
type connState uint8

const (
	reading   connState = iota // a head (or the rest of one)
	writing                    // the socket to take more of an answer
	lingering                  // half closed after Connection: close, until the client closes or linger ends
	closed                     // out of the loop (closed, or handed to net/http)
)

// conn is one connection while an event loop has it.
type conn struct {
	fd    int
	slot  int32
	state connState
	buf   [headBuffer]byte
	r, n  int // buf[r:n] is read and not consumed

	req      Request
	resp     Response
	deadline time.Time // the state's timeout; zero for none
	started  bool      // an answer was written: a later request waits under the idle timeout
	armed    bool      // the header timeout runs for the head in buf
	// The answer being written.
	closeAfter bool
	headLen    int    // bytes of buf the answered head took
	out, body  []byte // still to write
	bodyLen    int64
	sealed     *Sealed
	off        int64 // of sealed, sent
	iov        [2]unix.Iovec
}

// startWorkers starts the event loops, or none (every connection then goes to HTTP) if the
// system will not give it an epoll set.
func startWorkers(s *Server) []*worker {
	n := s.loops()
	ws := make([]*worker, 0, n)
	for range n {
		w, err := newWorker(s)
		if err != nil {
			if s.Log != nil {
				s.Log.Warn("fast path off: no event loop", slog.Any("error", err))
			}
			for _, w := range ws {
				w.closeFds()
			}
			return nil
		}
		ws = append(ws, w)
	}
	for _, w := range ws {
		go w.run()
	}
	return ws
}

func newWorker(s *Server) (*worker, error) {
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, os.NewSyscallError("epoll_create1", err)
	}
	wake, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		_ = unix.Close(ep)
		return nil, os.NewSyscallError("eventfd", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: wakeTag}
	if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, wake, &ev); err != nil {
		_ = unix.Close(ep)
		_ = unix.Close(wake)
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return &worker{s: s, ep: ep, wake: wake, evs: make([]unix.EpollEvent, 128), date: make([]byte, 0, 32)}, nil
}

func (w *worker) closeFds() {
	_ = unix.Close(w.ep)
	_ = unix.Close(w.wake)
}

// stop ends the loop: under s.mu, so that no poke writes to a descriptor number that was
// closed (and perhaps reused) and adopt gives it nothing more. A loop that stops counts as
// having seen the shutdown (it will hand nothing over), whatever made it stop.
func (w *worker) stop() {
	s := w.s
	s.mu.Lock()
	defer s.mu.Unlock()
	w.stopped = true
	w.closeFds()
	if !w.acked {
		w.acked = true
		s.acked.Add(1)
	}
	// Queued after its last look (a loop that failed): never read, so net/http serves them.
	w.mu.Lock()
	q := w.queue
	w.queue = nil
	w.mu.Unlock()
	for _, c := range q {
		s.live.Add(-1)
		nc, err := fileConn(c.fd)
		if err != nil {
			continue
		}
		s.giving++ // under s.mu, with the ack: Shutdown waits for it
		s.passOn(nc, nil, c.deadline)
	}
}

// poke wakes the event loop from another goroutine; the caller holds s.mu.
func (w *worker) poke() {
	if w.stopped {
		return
	}
	one := [8]byte{1}
	_, _ = unix.Write(w.wake, one[:])
}

// wakeWorkers makes every event loop look at closing and abort.
func (s *Server) wakeWorkers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.workers {
		w.poke()
	}
}

// adopt gives the accepted connection to an event loop, which takes a duplicate of its
// descriptor out of the runtime's netpoller (TCP_NODELAY and keep-alive as net set them). It
// reports false, having changed nothing, for a connection it cannot take. Serve calls it with
// s.mu held.
func (s *Server) adopt(nc net.Conn) bool {
	if len(s.workers) == 0 {
		return false
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	fd := -1
	if rc.Control(func(f uintptr) { fd, _ = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }) != nil || fd < 0 {
		return false
	}
	// The next loop in turn that still runs (one whose epoll set failed has stopped).
	var w *worker
	for range s.workers {
		if v := s.workers[s.rr.Add(1)%uint32(len(s.workers))]; !v.stopped {
			w = v
			break
		}
	}
	if w == nil {
		_ = unix.Close(fd)
		return false
	}
	_ = nc.Close() // the socket lives on in fd
	// One allocation per connection, none per request; not pooled, so that a conn the loop
	// let go can never come back as another while the loop still looks at it. Its first
	// request has the header timeout from the start, as in net/http.
	c := &conn{fd: fd, deadline: after(time.Now(), s.headerTimeout()),
		resp: Response{header: make([]byte, 0, 512), out: make([]byte, 0, 1024)}}
	s.live.Add(1)
	w.given.Add(1)
	w.mu.Lock()
	w.queue = append(w.queue, c)
	w.mu.Unlock()
	w.pending.Store(true)
	w.poke()
	return true
}

func (w *worker) run() {
	s := w.s
	defer w.stop()
	for {
		if (w.acked || s.noMore.Load()) && w.live == 0 && !w.pending.Load() {
			return
		}
		timeout := -1
		if !w.next.IsZero() {
			timeout = max(0, int((time.Until(w.next)+time.Millisecond-1)/time.Millisecond))
		}
		n, err := unix.EpollWait(w.ep, w.evs, timeout)
		w.wakes.Add(1)
		if err != nil && !errors.Is(err, unix.EINTR) {
			if s.Log != nil {
				s.Log.Error("fast path event loop failed", slog.Any("error", err))
			}
			w.closeAll()
			return
		}
		for _, ev := range w.evs[:max(n, 0)] {
			if ev.Fd == wakeTag {
				var b [8]byte
				_, _ = unix.Read(w.wake, b[:])
				continue
			}
			if c := w.slots[ev.Fd]; c != nil {
				w.event(c)
			}
		}
		if w.pending.Load() {
			w.takeQueued()
		}
		if s.abort.Load() {
			w.closeAll()
			return
		}
		if !w.acked && s.closing.Load() {
			w.shutDown()
		}
		if !w.next.IsZero() && !time.Now().Before(w.next) {
			w.sweep()
		}
	}
}

// takeQueued puts the connections Serve gave it in the epoll set.
func (w *worker) takeQueued() {
	w.pending.Store(false)
	w.mu.Lock()
	q := w.queue
	w.queue = nil
	w.mu.Unlock()
	for _, c := range q {
		if len(w.free) == 0 {
			w.free = append(w.free, int32(len(w.slots)))
			w.slots = append(w.slots, nil)
		}
		c.slot = w.free[len(w.free)-1]
		w.free = w.free[:len(w.free)-1]
		w.slots[c.slot] = c
		w.live++
		w.setDeadline(c, c.deadline)
		ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: c.slot}
		if err := unix.EpollCtl(w.ep, unix.EPOLL_CTL_ADD, c.fd, &ev); err != nil {
			w.handOff(c) // never read: net/http serves it
		}
	}
}

// shutDown is the loop's part of Shutdown: it closes the connections that are idle or reading
// a head (net/http does the same with its idle ones) and lets those writing finish.
func (w *worker) shutDown() {
	// Serve queued these before closing was set (under s.mu): they are this loop's to close.
	w.takeQueued()
	for _, c := range w.slots {
		if c != nil && c.state == reading {
			w.closeConn(c)
		}
	}
	w.acked = true
	w.s.acked.Add(1)
}

func (w *worker) closeAll() {
	w.takeQueued()
	for _, c := range w.slots {
		if c != nil {
			w.cut(c)
		}
	}
}

// cut closes c now, an answer being written included (Sent says so).
func (w *worker) cut(c *conn) {
	defer w.recover(c)
	if c.state == writing {
		w.finish(c, net.ErrClosed)
		return
	}
	w.closeConn(c)
}

func (w *worker) setDeadline(c *conn, t time.Time) {
	c.deadline = t
	if !t.IsZero() && (w.next.IsZero() || t.Before(w.next)) {
		w.next = t
	}
}

// sweepGap is the least time between two sweeps: a timeout may end that much late, and
// thousands of connections whose deadlines are spread out cost a sweep per gap, not one each.
const sweepGap = 20 * time.Millisecond

// sweep ends the connections whose timeout has passed and finds the next one.
func (w *worker) sweep() {
	now := time.Now()
	w.next = time.Time{}
	for _, c := range w.slots {
		if c == nil || c.deadline.IsZero() {
			continue
		}
		if now.Before(c.deadline) {
			w.setDeadline(c, c.deadline)
			continue
		}
		w.expire(c)
	}
	if !w.next.IsZero() {
		w.next = later(w.next, now.Add(sweepGap))
	}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (w *worker) expire(c *conn) {
	defer w.recover(c)
	switch c.state {
	case reading:
		// A head cut short by the header timeout gets net/http's answer to that, a 400, from
		// net/http itself: handed over, it meets the same expired deadline.
		if c.n > c.r && !w.s.closing.Load() {
			w.handOff(c)
			return
		}
		w.closeConn(c)
	case writing:
		w.finish(c, os.ErrDeadlineExceeded)
	default:
		w.closeConn(c)
	}
}

// event serves what epoll reported for c.
func (w *worker) event(c *conn) {
	defer w.recover(c)
	switch c.state {
	case reading:
		m, err := unix.Read(c.fd, c.buf[c.n:])
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			return
		}
		if m == 0 && c.n > c.r && !w.s.closing.Load() {
			// A head cut short by the client's half close: net/http, handed the bytes and
			// then the end, answers it (a 400) as it would alone.
			w.handOff(c)
			return
		}
		if m <= 0 {
			w.closeConn(c) // the client closed, or the connection failed
			return
		}
		c.n += m
		w.process(c)
	case writing:
		if w.flush(c) {
			w.process(c)
		}
	case lingering:
		var b [512]byte
		if m, err := unix.Read(c.fd, b[:]); m <= 0 && !errors.Is(err, unix.EAGAIN) && !errors.Is(err, unix.EINTR) {
			w.closeConn(c) // the client has closed too: nothing left to protect
		}
	}
}

// recover closes c after a panic in Answer or Sent, and logs it.
func (w *worker) recover(c *conn) {
	if r := recover(); r != nil {
		if c.state != closed {
			w.closeConn(c)
		}
		if w.s.Log != nil {
			w.s.Log.Error("panic in the fast path", slog.Any("error", r), slog.String("stack", string(debug.Stack())))
		}
	}
}

// process answers the complete heads in c's buffer, in turn, while c is reading.
func (w *worker) process(c *conn) {
	s := w.s
	for c.state == reading {
		buf := c.buf[c.r:c.n]
		if len(buf) == 0 {
			c.r, c.n = 0, 0
			return
		}
		v, n := parse(buf, &c.req)
		if v == incomplete {
			if len(buf) == len(c.buf) {
				w.handOff(c) // too large for the fast path; net/http reads on
				return
			}
			if c.r > 0 {
				c.n = copy(c.buf[:], buf)
				c.r = 0
			}
			// A later request's head has the header timeout from its first byte.
			if !c.armed {
				c.armed = true
				if c.started {
					w.setDeadline(c, after(time.Now(), s.headerTimeout()))
				}
			}
			return
		}
		c.resp.Reset()
		c.resp.began = time.Now()
		if v == refuse || !s.Answer(&c.req, &c.resp) || !c.resp.sent {
			w.handOff(c)
			return
		}
		c.armed = false
		s.answered.Add(1)
		c.closeAfter = c.req.Close || s.closing.Load()
		c.headLen = n
		if !w.write(c) {
			return // the rest when the socket takes it
		}
	}
}

// after is now+d, or zero (no timeout) when d is not positive.
func after(now time.Time, d time.Duration) time.Time {
	if d <= 0 {
		return time.Time{}
	}
	return now.Add(d)
}

// write starts sending c's answer: the head and the body in one writev, or the head and then
// sendfile for a sealed body (the body only for a GET). It reports whether it is done.
func (w *worker) write(c *conn) bool {
	now := c.resp.began
	if sec := now.Unix(); sec != w.dateSec || len(w.date) == 0 {
		w.dateSec = sec
		w.date = now.UTC().AppendFormat(w.date[:0], http.TimeFormat)
	}
	c.resp.frame(w.date, c.closeAfter)
	c.out, c.body, c.sealed, c.off, c.bodyLen = c.resp.out, nil, nil, 0, 0
	if len(c.resp.body) > 0 && !c.req.Head() && bodyAllowed(c.resp.status) {
		c.body, c.bodyLen = c.resp.body, int64(len(c.resp.body))
		if c.resp.sealed != nil {
			c.sealed, c.body = c.resp.sealed, nil
			sealedSends.Add(1)
		}
	}
	d := w.s.writeTimeout()
	if c.resp.deadline > 0 {
		d = c.resp.deadline
	}
	c.deadline = now.Add(d) // set in the loop's timeouts only if the socket makes it wait
	return w.flush(c)
}

// flush writes what the socket takes of c's answer. Done (or failed), it finishes the request
// and reports true; otherwise c waits for the socket, and it reports false.
func (w *worker) flush(c *conn) bool {
	done, err := c.push()
	if !done {
		if c.state != writing {
			c.state = writing
			w.watch(c, unix.EPOLLOUT)
			w.setDeadline(c, c.deadline)
		}
		return false
	}
	w.finish(c, err)
	return true
}

// push writes until the answer is sent (true), the socket is full (false, nil) or the write
// fails (true, err).
func (c *conn) push() (bool, error) {
	if c.sealed != nil {
		for len(c.out) > 0 {
			n, err := unix.SendmsgN(c.fd, c.out, nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
			if done, err := retry(err); err != nil || !done {
				return err != nil, err
			}
			c.out = c.out[max(n, 0):]
		}
		for c.off < c.sealed.size {
			n, err := unix.Sendfile(c.fd, c.sealed.fd, &c.off, int(min(c.sealed.size-c.off, 1<<30)))
			if done, err := retry(err); err != nil || !done {
				return err != nil, err
			}
			if n == 0 && err == nil {
				return true, io.ErrUnexpectedEOF
			}
		}
		runtime.KeepAlive(c.sealed)
		return true, nil
	}
	for len(c.out) > 0 || len(c.body) > 0 {
		iov := c.iov[:0]
		for _, b := range [2][]byte{c.out, c.body} {
			if len(b) > 0 {
				v := unix.Iovec{Base: &b[0]}
				v.SetLen(len(b))
				iov = append(iov, v)
			}
		}
		r, _, e := unix.Syscall(unix.SYS_WRITEV, uintptr(c.fd), uintptr(unsafe.Pointer(&iov[0])), uintptr(len(iov)))
		var err error
		if e != 0 {
			err = e
		}
		if done, err := retry(err); err != nil || !done {
			return err != nil, err
		}
		n := int(r)
		k := min(n, len(c.out))
		c.out, n = c.out[k:], n-k
		c.body = c.body[n:]
	}
	c.iov = [2]unix.Iovec{}
	return true, nil
}

// retry sorts a write's error: (true, nil) none, (false, nil) the socket is full (or a signal
// came: the event loop comes back), or the error.
func retry(err error) (bool, error) {
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		return false, nil
	}
	return false, err
}

// sentBody is how many bytes of the answer's body reached the socket.
func (c *conn) sentBody() int64 {
	if c.sealed != nil {
		return c.off
	}
	return c.bodyLen - int64(len(c.body))
}

// finish ends the request whose answer was written (err nil) or failed: Sent, then the next
// request, the linger after Connection: close, or the close.
func (w *worker) finish(c *conn, err error) {
	s := w.s
	written := c.sentBody()
	c.out, c.body, c.sealed, c.iov = nil, nil, nil, [2]unix.Iovec{}
	if c.state == writing {
		w.watch(c, unix.EPOLLIN)
	}
	c.state = reading
	if s.Sent != nil {
		s.Sent(&c.req, &c.resp, written, err)
	}
	c.started = true
	c.req = Request{}
	c.r += c.headLen
	c.headLen = 0
	switch {
	case err != nil:
		w.closeConn(c)
	case c.closeAfter:
		if unix.Shutdown(c.fd, unix.SHUT_WR) != nil {
			w.closeConn(c)
			return
		}
		c.state = lingering
		w.setDeadline(c, time.Now().Add(s.lingerFor()))
	case s.closing.Load():
		w.closeConn(c) // shutting down: no next request
	default:
		w.setDeadline(c, after(time.Now(), s.idleTimeout()))
	}
}

// watch sets what epoll reports for c.
func (w *worker) watch(c *conn, events uint32) {
	ev := unix.EpollEvent{Events: events, Fd: c.slot}
	_ = unix.EpollCtl(w.ep, unix.EPOLL_CTL_MOD, c.fd, &ev)
}

// release takes c out of the loop.
func (w *worker) release(c *conn) {
	w.slots[c.slot] = nil
	w.free = append(w.free, c.slot)
	w.live--
	w.s.live.Add(-1)
	c.state, c.fd, c.out, c.body, c.sealed = closed, -1, nil, nil, nil
}

func (w *worker) closeConn(c *conn) {
	// Out of the epoll set first: a child process between fork and exec may hold the socket
	// open a moment longer, and with it the registration, which the close alone would leave.
	_ = unix.EpollCtl(w.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	_ = unix.Close(c.fd)
	w.release(c)
}

// handOff gives the connection, with the bytes read but not consumed, to net/http, which
// takes it from its first unread byte through the runtime's netpoller.
func (w *worker) handOff(c *conn) {
	s := w.s
	_ = unix.EpollCtl(w.ep, unix.EPOLL_CTL_DEL, c.fd, nil)
	rest := append([]byte(nil), c.buf[c.r:c.n]...)
	// A head read under the fast path's header timeout keeps what is left of it (the idle
	// timeout, running when a whole head came at once, is no limit on net/http's reading).
	var limit time.Time
	if !c.started || c.armed {
		limit = c.deadline
	}
	nc, err := fileConn(c.fd)
	c.fd = -1 // closed by fileConn
	if err != nil {
		w.release(c)
		if s.Log != nil {
			s.Log.Error("fast path: handing a connection to net/http", slog.Any("error", err))
		}
		return
	}
	// Counted as giving before the loop lets it go, so Shutdown cannot miss it.
	s.mu.Lock()
	s.giving++
	s.mu.Unlock()
	w.release(c)
	s.passOn(nc, rest, limit)
}

// fileConn makes the socket fd, which has left the loops, a net.Conn on the runtime's
// netpoller; fd is closed either way (the net.Conn has a duplicate).
func fileConn(fd int) (net.Conn, error) {
	f := os.NewFile(uintptr(fd), "fastpath")
	nc, err := net.FileConn(f)
	_ = f.Close()
	return nc, err
}
