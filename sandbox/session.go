package sandbox

import (
	"context"
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
	key    string // the policy it was started with
	stdin  *io.PipeWriter
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
	if cur := s.live.Load(); cur != nil && cur.key != key {
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
		restarted, prelude = s.ended, req.Prelude
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
	// A fresh host for every run: its own phases, report, saved files and deadline.
	host := &osaHost{ctx: runCtx, egress: live.policy.host.egress, done: make(chan int, 1)}
	live.policy.hp.Store(host)

	start := time.Now()
	// One write: the pipe blocks until the interpreter has read it all (it fails once the
	// instance ends), and an empty write would reach the interpreter as an end of input.
	msg := fmt.Appendf(nil, "%d %d\n", len(prelude), len(req.Source))
	msg = append(append(msg, prelude...), req.Source...)
	go func() { _, _ = live.stdin.Write(msg) }()

	res := Result{Timeout: timeout, Python: s.e.python, Packages: s.e.packageImports()}
	select {
	case code := <-host.done:
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
	inR, inW := io.Pipe()
	live := &liveInstance{key: key, stdin: inW, stdout: &switchWriter{w: io.Discard}, stderr: &switchWriter{w: io.Discard},
		cancel: cancel, ended: make(chan outcome, 1), policy: policy, data: data}
	// What an interpreter writes before it first reads a request is the runtime's, never a
	// run's: from an image, libc's constructors run again, and mimalloc's flushes its delayed
	// output (a newline) to stderr.
	gate := new(atomic.Bool)
	go func() {
		o := s.e.run(instCtx, instance{
			args:     []string{"python", "-c", sessionDriver},
			stdinR:   gateReader{gate, inR},
			stdout:   gateWriter{gate, live.stdout},
			stderr:   gateWriter{gate, live.stderr},
			memLimit: requestMemory(req),
			scratch:  requestScratch(req),
			mounts:   mounts,
			snap:     snap,
			onResume: func() { s.snapStarts.Add(1) },
			onAlloc:  func(a *allocator) { live.alloc.Store(a) },
		})
		_ = inR.Close()
		policy.close()
		live.ended <- o
	}()
	return live, nil
}

// stopGrace is how long stop waits for an interpreter to end. In ModeFast a loop inside C does
// not see its context until it returns; the worker process is then killed from outside.
const stopGrace = 2 * time.Second

// stop ends the current interpreter and waits for it (at most stopGrace). The caller holds s.mu.
func (s *Session) stop(cause error) {
	live := s.live.Load()
	if live == nil {
		return
	}
	if cause == nil {
		cause = context.Canceled
	}
	live.cancel(cause)
	_ = live.stdin.Close()
	select {
	case <-live.ended:
	case <-time.After(stopGrace):
		s.e.log.Warn("a session's interpreter did not stop in time; its goroutine is left to end")
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

// gateReader opens its gate on the first read.
type gateReader struct {
	open *atomic.Bool
	r    io.Reader
}

func (g gateReader) Read(p []byte) (int, error) {
	g.open.Store(true)
	return g.r.Read(p)
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
