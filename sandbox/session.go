package sandbox

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/osc-assistant/assistant/limits"
)

// MsgRestarted starts the stderr of the first run of a session's new interpreter when an
// earlier one of the session ended (a timeout, running out of memory, an idle time, the server
// needing the room): the model then knows that names defined by earlier runs are gone, as the
// browser says after a reboot.
const MsgRestarted = "[runtime] The server's Python was restarted; names defined by earlier runs are gone.\n"

// NoInterpreter is the Result.Interpreter of a run that left no state to remember (its
// prelude failed): no live interpreter has that id, so one elsewhere that still holds older
// names of the session is replaced, while the next interpreter, which starts clean as at
// first, does not say it restarted.
const NoInterpreter = "-"

// A Session is one reader session's live interpreter: its runs go to one instance that lives
// between them, so globals, imports, /tmp and the files saved stay from run to run, and the
// prelude runs once, when the instance starts (as the browser's boot). Runs are serialised. The
// instance ends on a timeout or when it runs out of memory (the next run starts a new one and
// says so, MsgRestarted), on Close, or when the policy changes (a reload). A Session is for
// one session only: two sessions never share an instance.
//
// In ModeFast a loop inside C does not see the deadline (see Mode); only a worker process
// that can be killed should run sessions in that mode.
type Session struct {
	e *Engine

	mu sync.Mutex // serialises runs
	// live is the current interpreter, written under mu and read without it (Live, Memory),
	// so a Sessions can size its sessions while they run.
	live    atomic.Pointer[liveInstance]
	ended   bool // an earlier instance of this session ended: the next run says so
	closed  bool
	lastRun atomic.Int64 // unix ms of the last run's end, for idle expiry
	// snapStarts counts the interpreters that started from the engine's image.
	snapStarts atomic.Int32
}

// liveInstance is one running interpreter of a session.
type liveInstance struct {
	id     string // drawn at start (Result.Interpreter)
	key    string // the policy it was started with
	stdin  *sessionInput
	stdout *switchWriter
	stderr *switchWriter
	alloc  atomic.Pointer[allocator]
	cancel context.CancelCauseFunc
	ended  chan outcome // receives the instance's outcome when it ends
	policy *runPolicy
	data   *dataFS // /data, switched to each run's files
}

// NewSession returns a session with no interpreter yet; its first run starts one.
func (e *Engine) NewSession() *Session { return &Session{e: e} }

// errSessionIdle ends an instance that was idle too long.
var errSessionIdle = errors.New("sandbox: session idle")

// policyKey identifies what an interpreter was started with: a run with another policy needs a
// new one. The attached files are not in it: /data follows them from run to run (dataFS).
func policyKey(req Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d\x00%s\x00%q\x00%d\x00%t\x00%d", len(req.Prelude), req.Prelude, req.FetchAllow, req.MemoryBytes, req.AllowLoopback, len(req.Wheels))
	for _, w := range req.Wheels {
		b.WriteString("\x00" + w.Name)
		fmt.Fprintf(&b, "\x00%d", len(w.Data))
	}
	return b.String()
}

// Run runs req in the session's interpreter, starting one (and running req.Prelude in it) when
// there is none. Like Engine.Run, the error is non-nil only when the run could not be judged.
func (s *Session) Run(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Result{}, errors.New("sandbox: session closed")
	}
	timeout := req.Timeout
	if timeout <= 0 {
		timeout = time.Duration(limits.Runtime.ExecSeconds.Default) * time.Second
	}
	key := policyKey(req)
	cur := s.live.Load()
	switch {
	case cur != nil && req.Interpreter != "" && cur.id != req.Interpreter:
		// The session's state is another interpreter's (its last run was elsewhere): this
		// one's names are older than the session's, so it goes, and the new one says so.
		s.stop(nil)
		s.ended = true
	case cur != nil && cur.key != key:
		s.stop(nil) // the policy changed: a new interpreter, without the restart line
	}
	restarted := false
	prelude := ""
	if s.live.Load() == nil {
		live, err := s.start(ctx, req, key)
		if err != nil {
			return Result{}, err
		}
		s.live.Store(live)
		// An interpreter of the session held state (here, or where the record says): gone.
		restarted, prelude = s.ended || (req.Interpreter != "" && req.Interpreter != NoInterpreter && cur == nil), req.Prelude
	}
	live := s.live.Load()
	if err := live.data.set(req.Data); err != nil {
		return Result{}, err
	}

	stdout := newClipWriter(orDefault(req.StdoutChars, int(limits.MaxStdoutChars)))
	stderr := newClipWriter(orDefault(req.StderrChars, int(limits.MaxStderrChars)))
	if restarted {
		_, _ = io.WriteString(stderr, MsgRestarted)
	}
	live.stdout.set(stdout)
	live.stderr.set(stderr)
	runCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	// A fresh host for every run: its own phases, report, saved files, fetch counts and
	// deadline.
	end := &runEnd{ended: make(chan struct{})}
	host := &osaHost{ctx: runCtx, egress: live.policy.host.egress, session: end}
	live.policy.hp.Store(host)

	start := time.Now()
	msg := fmt.Appendf(nil, "%d %d\n", len(prelude), len(req.Source))
	msg = append(append(msg, prelude...), req.Source...)
	live.stdin.put(msg, end)

	res := Result{Timeout: timeout, Python: s.e.python, Packages: s.e.packageImports(), Interpreter: live.id}
	select {
	case <-end.ended:
		code := end.exitCode()
		res.ExitCode = code
		res.Status = StatusError
		if host.phaseNow() == phaseCode && code == 0 {
			res.Status = StatusOK
		}
		if a := live.alloc.Load(); a != nil && a.hitCap() && memoryError(host.reported()) && code != 0 {
			// It hit its memory cap and lived: its state is suspect, so it is replaced.
			res.Status = StatusOOM
			s.stop(nil)
			s.ended = true
		}
	case o := <-live.ended:
		// The interpreter ended during the run (out of memory, a crash, an exit from C): the
		// verdict comes from the host's records, as in Engine.Run.
		res.ExitCode, res.Status = int(o.exitCode), StatusError
		if o.memCap && memoryError(host.reported()) {
			res.Status = StatusOOM
		}
		s.live.Store(nil)
		s.ended = true
	case <-runCtx.Done():
		if err := ctx.Err(); err != nil {
			s.stop(err) // the caller gave up: the run is not judged
			s.ended = true
			return Result{}, err
		}
		res.Status = StatusTimeout
		s.stop(context.DeadlineExceeded)
		s.ended = true
	}
	res.Elapsed = time.Since(start)
	if a := live.alloc.Load(); a != nil {
		res.MemoryPeak = int64(a.peak())
	}
	res.PreludeFailed = prelude != "" && host.phaseNow() == phasePrelude && res.Status != StatusTimeout
	if res.PreludeFailed {
		s.stop(nil) // the prelude runs again in the next interpreter, which starts clean
		s.ended = false
		res.Interpreter = NoInterpreter
	}
	res.Stdout, res.StdoutTruncated = stdout.String(), stdout.Truncated()
	res.Stderr, res.StderrTruncated = stderr.String(), stderr.Truncated()
	res.StdoutTotal, res.StderrTotal = stdout.chars, stderr.chars
	res.Exception = host.reported()
	res.Artifacts, res.Files = host.files()
	live.stdout.set(io.Discard)
	live.stderr.set(io.Discard)
	s.lastRun.Store(time.Now().UnixMilli())
	return res, nil
}

// start starts an interpreter for req's policy, from the engine's snapshot when it has one.
// The caller holds s.mu.
func (s *Session) start(ctx context.Context, req Request, key string) (*liveInstance, error) {
	files, err := s.e.policyFiles(ctx, req)
	if err != nil {
		return nil, err
	}
	// Without its image ready (being built, or none), the interpreter starts cold; so it does
	// when the image is larger than it may grow (Engine.run decides).
	snap := s.e.readySnapshot(ctx, req, files)
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	instCtx, cancel := context.WithCancelCause(context.Background())
	data := newDataFS()
	policy, mounts, err := s.e.sessionPolicy(instCtx, req, files, data)
	if err != nil {
		cancel(err)
		return nil, err
	}
	// What an interpreter writes before it first reads a request is the runtime's, never a
	// run's: from an image, libc's constructors run again, and mimalloc's flushes its delayed
	// output (a newline) to stderr.
	gate := new(atomic.Bool)
	in := newSessionInput(instCtx, gate)
	live := &liveInstance{id: newInterpreterID(), key: key, stdin: in, stdout: &switchWriter{w: io.Discard}, stderr: &switchWriter{w: io.Discard},
		cancel: cancel, ended: make(chan outcome, 1), policy: policy, data: data}
	go func() {
		o := s.e.run(instCtx, instance{
			args:     []string{"python", "-c", sessionDriver},
			stdinR:   in,
			stdout:   gateWriter{gate, live.stdout},
			stderr:   gateWriter{gate, live.stderr},
			memLimit: requestMemory(req),
			scratch:  requestScratch(req),
			mounts:   mounts,
			snap:     snap,
			onResume: func() { s.snapStarts.Add(1) },
			onAlloc:  func(a *allocator) { live.alloc.Store(a) },
		})
		policy.close()
		live.ended <- o
	}()
	return live, nil
}

// stopGrace is how long stop waits for an interpreter to end. In ModeFast a loop inside C does
// not see its context until it returns; the worker process is then killed from outside.
const stopGrace = 2 * time.Second

// stop ends the current interpreter and waits for it (at most stopGrace). One waiting for its
// next request ends at once (sessionInput); one running its program ends at its next deadline
// check. One that does not end in time (a loop inside C, in ModeFast) is counted as stuck
// (Engine.Stuck): a worker process then has itself killed, since nothing else stops it. The
// caller holds s.mu.
func (s *Session) stop(cause error) {
	live := s.live.Load()
	if live == nil {
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	live.cancel(cause)
	t := time.NewTimer(stopGrace)
	defer t.Stop()
	select {
	case <-live.ended:
	case <-t.C:
		s.e.stuck.Add(1)
		s.e.log.Error("a session's interpreter did not stop within the grace; it still runs", "grace", stopGrace, "mode", s.e.mode.String())
	}
	s.live.Store(nil)
}

// idleFor is how long ago the last run ended.
func (s *Session) idleFor() time.Duration { return time.Since(time.UnixMilli(s.lastRun.Load())) }

// Live reports whether the session has an interpreter now. It does not wait for a run.
func (s *Session) Live() bool { return s.live.Load() != nil }

// Memory is the linear memory the session's interpreter holds now, in bytes (0 without one). It
// does not wait for a run.
func (s *Session) Memory() int64 {
	if live := s.live.Load(); live != nil {
		if a := live.alloc.Load(); a != nil {
			return int64(a.peak())
		}
	}
	return 0
}

// ExpireIdle ends the interpreter if no run ended within idle; the next run starts a new one
// and says so. It reports whether it ended one. A run in progress is never interrupted.
func (s *Session) ExpireIdle(idle time.Duration) bool {
	if !s.mu.TryLock() {
		return false // a run is in progress
	}
	defer s.mu.Unlock()
	if s.live.Load() == nil || s.idleFor() < idle {
		return false
	}
	s.stop(errSessionIdle)
	s.ended = true
	return true
}

// Evict ends the interpreter for the room it holds (the next run says so); it waits for a run
// in progress.
func (s *Session) Evict() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.live.Load() != nil {
		s.stop(nil)
		s.ended = true
	}
}

// Close ends the session's interpreter; later runs fail.
func (s *Session) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stop(nil)
	s.closed = true
}

// switchWriter sends a long-lived instance's output to the current run's writer.
type switchWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *switchWriter) set(w io.Writer) {
	s.mu.Lock()
	s.w = w
	s.mu.Unlock()
}

func (s *switchWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// newInterpreterID draws a session interpreter's id: 64 random bits, so ids from every replica
// and every start differ.
func newInterpreterID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// How a live session's run ends. The run driver and the program run in one interpreter, so
// anything the driver can say through /dev/osa the program can say too, including "done" with
// an exit code; a run that ended on that message would let the program go on running with no
// deadline. The host therefore ends a run on what it sees itself: the interpreter, after
// reporting done, reads its stdin (sessionInput) with the request consumed, and is blocked
// there, in the host, running nothing. A program that forges done and computes on is not
// blocked, so its run's deadline and the stop after it hold; one that forges done and then
// reads stdin itself is blocked as the driver would be, and runs again only with the next
// request, under that run's deadline. An interpreter stopped while it waits there ends at
// once: the read ends the instance.

// runEnd is one run of a live session: the exit code the driver reported, and ended, closed
// when the run ended.
type runEnd struct {
	mu       sync.Mutex
	code     int
	reported bool
	ended    chan struct{}
}

// report records the run's exit code (the last report counts; it is data, never a verdict).
func (r *runEnd) report(code int) {
	r.mu.Lock()
	r.code, r.reported = code, true
	r.mu.Unlock()
}

func (r *runEnd) exitCode() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.code
}

func (r *runEnd) isReported() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reported
}

// sessionInput is a live interpreter's stdin: the current run's request, then, once the run
// reported done, a wait for the next one (see "How a live session's run ends").
type sessionInput struct {
	ctx    context.Context // the interpreter's: a read waiting for a request ends the instance once it is done
	opened *atomic.Bool    // set by the first read
	next   chan struct{}   // a request was put (1-buffered)

	mu  sync.Mutex
	buf []byte  // the rest of the current request
	run *runEnd // the run in progress; nil between runs
}

func newSessionInput(ctx context.Context, opened *atomic.Bool) *sessionInput {
	return &sessionInput{ctx: ctx, opened: opened, next: make(chan struct{}, 1)}
}

// put gives the interpreter the next run's request; the previous run has ended.
func (in *sessionInput) put(req []byte, run *runEnd) {
	in.mu.Lock()
	in.buf, in.run = req, run
	in.mu.Unlock()
	select {
	case in.next <- struct{}{}:
	default:
	}
}

// Read returns the request's bytes. Past them, while the run has not reported done, it returns
// end of input: the program reads an empty stdin, as in a fresh run. Once the run has reported
// done, a read past the request ends the run and waits for the next request, or, when the
// interpreter is stopped meanwhile, ends the instance (a host function ends one by panicking
// with its *sys.ExitError, as the deadline hooks do).
func (in *sessionInput) Read(p []byte) (int, error) {
	in.opened.Store(true)
	if len(p) == 0 {
		return 0, nil
	}
	for {
		in.mu.Lock()
		if len(in.buf) > 0 {
			n := copy(p, in.buf)
			in.buf = in.buf[n:]
			in.mu.Unlock()
			return n, nil
		}
		if r := in.run; r != nil {
			if !r.isReported() {
				in.mu.Unlock()
				return 0, io.EOF
			}
			in.run = nil
			close(r.ended)
		}
		in.mu.Unlock()
		select {
		case <-in.next:
		case <-in.ctx.Done():
			panic(exitFor(in.ctx.Err()))
		}
	}
}

// gateWriter drops what is written until its gate opens.
type gateWriter struct {
	open *atomic.Bool
	w    io.Writer
}

func (g gateWriter) Write(p []byte) (int, error) {
	if !g.open.Load() {
		return len(p), nil
	}
	return g.w.Write(p)
}
