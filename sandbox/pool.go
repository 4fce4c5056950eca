package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/osc-assistant/assistant/limits"
)

// PoolOptions configures NewPool.
type PoolOptions struct {
	// Binary is the assistant executable to start workers from, normally os.Executable().
	Binary string
	// Args are the worker's arguments after Binary, e.g. {"sandbox-worker", "--engine-dir",
	// dir}. The worker must speak the protocol in protocol.go on its stdin and stdout.
	Args []string
	// Env is the workers' environment. Nil means a few variables of the server's own: those in
	// workerEnvKeys (the cache and temporary directories, the engine and log settings, Go's
	// runtime knobs), never the rest, so the processes that run untrusted code hold none of the
	// server's secrets (provider API keys, the admin key, the Redis URL).
	Env []string
	// Workers is how many worker processes are kept running (started ahead of demand, so a run
	// never waits for a process to start); zero means runtime.NumCPU(). Budget memory as
	// Workers × the engine's memory cap plus about 80 MiB per process (measured at rest).
	Workers int
	// Queue bounds the runs that may wait for a busy worker; past it Run fails at once with an
	// *OverloadError. Zero means 4 × Workers; a negative value means no waiting at all.
	Queue int
	// Grace is how long a run may overstay its deadline before its worker is killed (the
	// worker's own deadline hooks normally end the run within milliseconds; only a loop inside
	// C needs the kill). Zero means 1 s.
	Grace time.Duration
	// StartTimeout bounds a worker's start, from exec to its hello (the engine loads from
	// wazero's on-disk cache in about 0.25 s; a cold cache compiles for about 3.5 s). Zero
	// means 60 s.
	StartTimeout time.Duration
	// Stderr receives the workers' stderr (their logs); nil means os.Stderr.
	Stderr io.Writer
	// Logger receives the pool's own lines: workers started, killed or crashed. Nil discards.
	Logger *slog.Logger
}

// Pool defaults.
const (
	defaultGrace        = time.Second
	defaultStartTimeout = time.Minute
	restartBackoffMin   = 100 * time.Millisecond
	restartBackoffMax   = 10 * time.Second
)

// ErrPoolClosed is returned by Run after Close.
var ErrPoolClosed = errors.New("sandbox: the worker pool is closed")

// OverloadError is returned by Pool.Run and Limited.Run, at once, when every place is taken
// and the wait queue is full. Callers answer 503 or 429 with a Retry-After header.
type OverloadError struct {
	// RetryAfter estimates when a place will be free, in whole seconds, at least 1 s.
	RetryAfter time.Duration
}

func (e *OverloadError) Error() string {
	return fmt.Sprintf("sandbox: the server's Python is busy with other runs and its wait queue is full; retry in %s", e.RetryAfter)
}

// WorkerLostError is returned by Pool.Run when the worker process running the request ended
// before it answered: killed from outside (the kernel's out-of-memory killer, an operator) or
// crashed. The program may have partly run (what it printed or saved is lost), so the run must
// not be described as not run. Its text is meant for readers and the model: it names no
// process, signal or path; the pool logs those.
type WorkerLostError struct{}

func (e *WorkerLostError) Error() string {
	return "the run was stopped: the server's Python worker ended unexpectedly"
}

// RunStopped reports that the run started and was stopped before it ended (the chat tells the
// model so, rather than that nothing ran).
func (e *WorkerLostError) RunStopped() bool { return true }

// PoolStats is a snapshot of a Pool, for health checks and metrics.
type PoolStats struct {
	Workers int // configured
	Live    int // started and ready, idle or busy
	Idle    int
	Queued  int // runs waiting for a worker
	// Counters since NewPool.
	Started    int64 // worker processes started, replacements included
	Killed     int64 // workers killed: a run overstayed its deadline by the grace, or an interpreter did not stop
	Crashed    int64 // workers that ended on their own
	Overloaded int64 // runs refused with *OverloadError
	// Sessions and SessionMemory are the live session interpreters of the live workers and
	// their linear memory, as each worker last reported.
	Sessions      int
	SessionMemory int64
}

// A Pool runs requests in worker processes of the assistant binary (`assistant
// sandbox-worker`, an Engine in fast mode), so a run that the fast mode cannot stop (a loop
// inside C) is ended by killing its process, while every other run keeps the fast mode.
// Workers are started ahead of demand and replaced when they are killed or crash. Run has
// Engine.Run's contract. A Pool is safe for concurrent use.
type Pool struct {
	opts PoolOptions
	log  *slog.Logger
	lim  *limiter      // admits at most Workers runs at once, and Queue more waiting
	done chan struct{} // closed by Close
	wg   sync.WaitGroup
	ids  atomic.Uint64

	started, killed, crashed atomic.Int64

	mu      sync.Mutex
	closed  bool
	live    map[*worker]struct{}
	idle    []*worker      // LIFO: the most recently used worker is the warmest
	waiters []chan *worker // admitted runs waiting for a worker (one is being replaced); FIFO
	helloed bool
	// affinity is the worker that holds each live session's interpreter; wanted the runs
	// waiting for one particular worker (their session's), served before the others.
	affinity map[string]*worker
	wanted   map[*worker][]chan *worker
}

// maxAffinity bounds the sessions a pool remembers; past it, those of dead workers go first.
const maxAffinity = 100000

// worker is one sandbox-worker process.
type worker struct {
	pid     int
	cmd     *exec.Cmd
	in      *os.File    // the worker's stdin, our end
	frames  chan *frame // the worker's stdout, decoded; closed when it ends
	exited  chan struct{}
	readErr error // why frames was closed (valid once it is)
	exitErr error // cmd.Wait's error (valid once exited is closed)
	killed  atomic.Bool
	python  string // the engine's CPython version, from the hello
	// sessions is what the worker last reported of its live interpreters.
	sessions atomic.Pointer[sessionStats]
}

// NewPool starts opts.Workers worker processes and returns once every one of them has loaded
// its engine: the first alone (so a cold compilation cache is filled once, not by every worker
// at the same time), then the others together. A worker that fails to start is an error: the
// binary, its arguments or the engine are broken.
func NewPool(ctx context.Context, opts PoolOptions) (*Pool, error) {
	if opts.Binary == "" {
		return nil, errors.New("sandbox: NewPool needs the worker binary")
	}
	if opts.Workers <= 0 {
		opts.Workers = runtime.NumCPU()
	}
	if opts.Grace <= 0 {
		opts.Grace = defaultGrace
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = defaultStartTimeout
	}
	if opts.Stderr == nil {
		opts.Stderr = os.Stderr
	}
	if opts.Env == nil {
		opts.Env = workerEnv(os.Environ())
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	p := &Pool{
		opts: opts,
		log:  log,
		lim:  newLimiter(opts.Workers, opts.Queue),
		done: make(chan struct{}),
		live: make(map[*worker]struct{}),
	}

	start := time.Now()
	first, err := p.start(ctx)
	if err != nil {
		_ = p.Close()
		return nil, err
	}
	p.add(first)
	errs := make(chan error, opts.Workers)
	for range opts.Workers - 1 {
		go func() {
			w, err := p.start(ctx)
			if err == nil {
				p.add(w)
			}
			errs <- err
		}()
	}
	var startErr error
	for range opts.Workers - 1 {
		startErr = errors.Join(startErr, <-errs)
	}
	if startErr != nil {
		_ = p.Close()
		return nil, startErr
	}
	log.Info("python worker pool ready", "workers", opts.Workers, "queue", p.lim.queue,
		"grace", opts.Grace, "duration", time.Since(start).Round(time.Millisecond))
	return p, nil
}

// Run runs req in an idle worker, waiting in the queue for one if all are busy, and reports
// how it ended, as Engine.Run does. A run that overstays its deadline (req.Timeout, default
// limits.Runtime.ExecSeconds.Default) by the pool's grace ends as StatusTimeout: its worker is
// killed (the output it printed is lost) and replaced. The error is non-nil when ctx ended first
// (its error), when the queue is full (*OverloadError, at once), when the pool is closed
// (ErrPoolClosed), when the worker ended during the run (*WorkerLostError), or when the worker
// failed otherwise (its engine did, or it broke the protocol).
func (p *Pool) Run(ctx context.Context, req Request) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	if req.Timeout <= 0 {
		req.Timeout = time.Duration(limits.Runtime.ExecSeconds.Default) * time.Second
	}
	release, err := p.lim.acquire(ctx, p.done, ErrPoolClosed)
	if err != nil {
		return Result{}, err
	}
	defer release()
	for attempt := 0; ; attempt++ {
		w, err := p.acquireForSession(ctx, &req)
		if err != nil {
			return Result{}, err
		}
		res, sent, err := p.runOn(ctx, w, req)
		if !sent && attempt < 3 && ctx.Err() == nil {
			continue // the worker died before it got the request: nothing ran, so try another
		}
		return res, err
	}
}

// acquireForSession returns the worker for req: the one that holds req's session when it is
// alive (waiting for it if busy), else any, which then holds the session; req is marked
// SessionRestarted when the session's interpreter was on a worker that died.
func (p *Pool) acquireForSession(ctx context.Context, req *Request) (*worker, error) {
	if req.Session == "" {
		return p.acquire(ctx)
	}
	p.mu.Lock()
	w, known := p.affinity[req.Session]
	p.mu.Unlock()
	if known {
		got, err := p.acquireWorker(ctx, w)
		if got != nil || !errors.Is(err, errWorkerGone) {
			return got, err
		}
		req.SessionRestarted = true
	}
	w, err := p.acquire(ctx)
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	if p.affinity == nil {
		p.affinity = map[string]*worker{}
	}
	if len(p.affinity) >= maxAffinity {
		for k, x := range p.affinity { // the sessions of dead workers first
			if !x.alive() {
				delete(p.affinity, k)
			}
		}
		if len(p.affinity) >= maxAffinity {
			for k := range p.affinity { // then any, down to half, so this runs rarely
				if len(p.affinity) < maxAffinity/2 {
					break
				}
				delete(p.affinity, k)
			}
		}
	}
	p.affinity[req.Session] = w
	p.mu.Unlock()
	return w, nil
}

// errWorkerGone: the worker a session's run waited for ended.
var errWorkerGone = errors.New("sandbox: the session's worker ended")

// acquireWorker returns w once it is idle, or errWorkerGone when it ends first.
func (p *Pool) acquireWorker(ctx context.Context, w *worker) (*worker, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	if _, ok := p.live[w]; !ok || !w.alive() {
		p.mu.Unlock()
		return nil, errWorkerGone
	}
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			p.mu.Unlock()
			return w, nil
		}
	}
	ch := make(chan *worker, 1)
	if p.wanted == nil {
		p.wanted = map[*worker][]chan *worker{}
	}
	p.wanted[w] = append(p.wanted[w], ch)
	p.mu.Unlock()

	got, err := p.await(ctx, ch, func() (queued bool) {
		p.wanted[w], queued = dropChan(p.wanted[w], ch)
		return queued
	})
	if err == nil && got == nil {
		return nil, errWorkerGone // it ended while we waited
	}
	return got, err
}

// await waits on ch for a worker (nil: the one waited for ended), ctx or the pool's close. On
// giving up it takes ch off its queue with withdraw (called under p.mu); when ch was no longer
// queued a worker was already sent, and it is passed on.
func (p *Pool) await(ctx context.Context, ch chan *worker, withdraw func() bool) (*worker, error) {
	var err error
	select {
	case w := <-ch:
		return w, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-p.done:
		err = ErrPoolClosed
	}
	p.mu.Lock()
	queued := withdraw()
	p.mu.Unlock()
	if !queued {
		if w := <-ch; w != nil {
			p.release(w)
		}
	}
	return nil, err
}

// dropChan removes ch from q and reports whether it was there.
func dropChan(q []chan *worker, ch chan *worker) ([]chan *worker, bool) {
	i := slices.Index(q, ch)
	if i < 0 {
		return q, false
	}
	return slices.Delete(q, i, i+1), true
}

// Stats returns a snapshot of the pool.
func (p *Pool) Stats() PoolStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	var sessions int
	var memory int64
	for w := range p.live {
		if st := w.sessions.Load(); st != nil {
			sessions += st.Live
			memory += st.Memory
		}
	}
	return PoolStats{
		Sessions: sessions, SessionMemory: memory,
		Workers:    p.opts.Workers,
		Live:       len(p.live),
		Idle:       len(p.idle),
		Queued:     p.lim.queued() + len(p.waiters),
		Started:    p.started.Load(),
		Killed:     p.killed.Load(),
		Crashed:    p.crashed.Load(),
		Overloaded: p.lim.overloaded.Load(),
	}
}

// Close kills every worker and waits for them to end. Runs in flight and waiting fail.
func (p *Pool) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.done)
	ws := make([]*worker, 0, len(p.live))
	for w := range p.live {
		ws = append(ws, w)
	}
	p.idle = nil
	p.mu.Unlock()
	for _, w := range ws {
		w.kill()
	}
	p.wg.Wait()
	return nil
}

// acquire returns an idle worker, waiting for one in FIFO order. Only runs the limiter admitted
// call it, at most one per worker, so they wait only while a worker is being replaced or
// finishing a cancelled run.
func (p *Pool) acquire(ctx context.Context) (*worker, error) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, ErrPoolClosed
	}
	for len(p.idle) > 0 {
		w := p.idle[len(p.idle)-1]
		p.idle = p.idle[:len(p.idle)-1]
		if w.alive() {
			p.mu.Unlock()
			return w, nil
		}
	}
	ch := make(chan *worker, 1)
	p.waiters = append(p.waiters, ch)
	p.mu.Unlock()
	return p.await(ctx, ch, func() (queued bool) {
		p.waiters, queued = dropChan(p.waiters, ch)
		return queued
	})
}

// release makes w available again: to the first waiting run, else to the idle list.
func (p *Pool) release(w *worker) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.live[w]; !ok || !w.alive() || w.killed.Load() || p.closed {
		return // ended, or ending: its reaper replaces it
	}
	if ws := p.wanted[w]; len(ws) > 0 { // a run of a session this worker holds
		p.wanted[w] = ws[1:]
		ws[0] <- w
		return
	}
	if len(p.waiters) > 0 {
		ch := p.waiters[0]
		p.waiters = p.waiters[1:]
		ch <- w
		return
	}
	p.idle = append(p.idle, w)
}

// runOn sends req to w and waits for its answer, the run's deadline plus the grace, or ctx.
// sent reports whether the worker may have started the run (false: it died before it
// acknowledged the request, so nothing ran and the run may go to another worker).
func (p *Pool) runOn(ctx context.Context, w *worker, req Request) (res Result, sent bool, err error) {
	id := p.ids.Add(1)
	start := time.Now()
	limit := req.Timeout + p.opts.Grace
	kill := time.NewTimer(limit)
	defer kill.Stop()
	files, err := announceData(req.Data)
	if err != nil {
		// Refused before anything was written: the worker is as good as before, and another
		// would refuse it too (sent, so Run does not try one).
		p.release(w)
		return Result{}, true, fmt.Errorf("sandbox: the run's attached files cannot be sent to a Python worker: %w", err)
	}
	var dataBytes int64
	for _, f := range files {
		dataBytes += f.Bytes
	}
	// The worker reads its stdin all the time; the files get a second per 16 MB on top.
	_ = w.in.SetWriteDeadline(start.Add(min(limit, 10*time.Second) + time.Duration(dataBytes>>24)*time.Second))
	if err := writeRun(w.in, id, req, files); err != nil {
		// The worker is gone or stuck; a partial frame is never run.
		w.kill()
		p.log.Warn("python worker: sending a run failed", "pid", w.pid, "error", err)
		return Result{}, false, errors.New("sandbox: the run could not be sent to a Python worker")
	}
	started := false
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				<-w.exited
				if p.isClosed() {
					return Result{}, started, ErrPoolClosed
				}
				// The process, its signal and its status are for the server's log only; the
				// error reaches the model.
				p.log.Warn("python worker ended during a run", "pid", w.pid, "status", w.why(), "started", started)
				if !started {
					// It had not acknowledged the run, so nothing of it ran (Run tries another
					// worker).
					return Result{}, false, errors.New("sandbox: the Python worker ended before it started the run")
				}
				return Result{}, true, &WorkerLostError{}
			}
			if f.Sessions != nil {
				w.sessions.Store(f.Sessions)
			}
			if f.ID != id {
				continue // a late answer to a run its caller gave up on
			}
			switch {
			case f.Type == frameStart && !started:
				started = true
			case f.Type == frameResult && f.Result != nil:
				p.release(w)
				return *f.Result, true, nil
			case f.Type == frameError && f.Error == "busy" && !started:
				// Out of step with us (it is still running something): nothing of this run
				// ran, so it may go to another worker.
				w.kill()
				p.log.Warn("python worker was busy with another run; killed", "pid", w.pid)
				return Result{}, false, errors.New("sandbox: the Python worker was busy")
			case f.Type == frameError:
				p.release(w)
				p.log.Warn("python worker could not run a request", "pid", w.pid, "error", f.Error)
				return Result{}, true, fmt.Errorf("sandbox: the Python worker could not run it: %s", f.Error)
			default:
				w.kill()
				p.log.Warn("python worker broke the protocol; killed", "pid", w.pid, "frame", f.Type)
				return Result{}, true, &WorkerLostError{}
			}
		case <-kill.C:
			// The run is stuck where the worker's deadline hooks cannot reach (a loop inside
			// C). Killing the process is the only way to stop it.
			w.kill()
			p.killed.Add(1)
			elapsed := time.Since(start)
			p.log.Warn("python worker killed: a run overstayed its deadline", "pid", w.pid,
				"timeout", req.Timeout, "grace", p.opts.Grace)
			// What the program printed is lost with the process.
			return Result{Status: StatusTimeout, Elapsed: elapsed, Timeout: req.Timeout, Python: w.python}, true, nil
		case <-ctx.Done():
			// The caller gave up: ask the worker to stop the run, and take the worker back
			// once it has (or kill it if it does not within the grace).
			_ = w.in.SetWriteDeadline(time.Now().Add(p.opts.Grace))
			if err := writeFrame(w.in, &frame{Type: frameCancel, ID: id}); err != nil {
				w.kill()
			} else {
				p.goUnlessClosed(func() { p.drain(w, id) }, w.kill)
			}
			return Result{}, true, ctx.Err()
		}
	}
}

// drain waits for w's answer to the cancelled run id, then releases w; it kills w if no answer
// comes within the grace.
func (p *Pool) drain(w *worker, id uint64) {
	t := time.NewTimer(p.opts.Grace)
	defer t.Stop()
	for {
		select {
		case f, ok := <-w.frames:
			if !ok {
				return
			}
			if f.ID == id && (f.Type == frameResult || f.Type == frameError) {
				p.release(w)
				return
			}
		case <-t.C:
			w.kill()
			return
		case <-p.done:
			return
		}
	}
}

// start starts one worker process and waits for its hello.
func (p *Pool) start(ctx context.Context) (*worker, error) {
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: starting a worker: %w", err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inR.Close()
		_ = inW.Close()
		return nil, fmt.Errorf("sandbox: starting a worker: %w", err)
	}
	cmd := exec.Command(p.opts.Binary, p.opts.Args...)
	cmd.Env = p.opts.Env
	cmd.Stdin = inR
	cmd.Stdout = outW
	cmd.Stderr = p.opts.Stderr
	err = cmd.Start()
	_ = inR.Close()
	_ = outW.Close()
	if err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, fmt.Errorf("sandbox: starting a worker: %w", err)
	}
	p.started.Add(1)
	w := &worker{
		pid:    cmd.Process.Pid,
		cmd:    cmd,
		in:     inW,
		frames: make(chan *frame, 4),
		exited: make(chan struct{}),
	}
	p.wg.Add(1) // start runs in NewPool or in a replace goroutine, so never after Close's Wait
	go p.reap(w, outR)

	t := time.NewTimer(p.opts.StartTimeout)
	defer t.Stop()
	var why string
	select {
	case f, ok := <-w.frames:
		switch {
		case ok && f.Type == frameReady && f.Hello != nil:
			w.python = f.Hello.Python
			p.mu.Lock()
			first := !p.helloed
			p.helloed = true
			p.mu.Unlock()
			if first {
				p.log.Info("python worker engine", "sha256", f.Hello.SHA256, "python", f.Hello.Python,
					"mode", f.Hello.Mode, "pid", f.Hello.PID)
			}
			return w, nil
		case ok:
			why = fmt.Sprintf("it sent a %q frame before its hello", f.Type)
		default:
			<-w.exited
			why = "it ended: " + w.why()
		}
	case <-t.C:
		why = fmt.Sprintf("no hello within %s", p.opts.StartTimeout)
	case <-ctx.Done():
		why = ctx.Err().Error()
	case <-p.done:
		why = "the pool closed"
	}
	w.kill()
	return nil, fmt.Errorf("sandbox: python worker %s %v did not start: %s", p.opts.Binary, p.opts.Args, why)
}

// reap decodes w's stdout into w.frames until it ends, then waits for the process and, if it
// was one of the pool's workers, removes it and starts a replacement.
func (p *Pool) reap(w *worker, out *os.File) {
	defer p.wg.Done()
	for {
		f, err := readWorkerFrame(out)
		if err != nil {
			w.readErr = err
			break
		}
		if f.Stuck && !w.killed.Swap(true) {
			// An interpreter in the worker did not stop: only the process's end stops it.
			// Marked here, before the frame goes on, so the worker's own exit is not counted as
			// a crash.
			p.killed.Add(1)
			p.log.Warn("python worker killed: an interpreter did not stop when told to", "pid", w.pid)
			_ = w.cmd.Process.Kill()
		}
		select {
		case w.frames <- f:
		default: // nobody is reading: the worker talks out of turn
			w.readErr = errors.New("unsolicited frames")
			w.kill()
		}
		if w.readErr != nil {
			break
		}
	}
	close(w.frames)
	if !errors.Is(w.readErr, io.EOF) {
		w.kill() // a broken stream: the worker cannot be trusted any more
	}
	w.exitErr = w.cmd.Wait()
	_ = out.Close()
	_ = w.in.Close()
	close(w.exited)

	p.mu.Lock()
	_, member := p.live[w]
	delete(p.live, w)
	for i, x := range p.idle {
		if x == w {
			p.idle = append(p.idle[:i], p.idle[i+1:]...)
			break
		}
	}
	for _, ch := range p.wanted[w] { // its sessions' runs go elsewhere, told they restarted
		ch <- nil
	}
	delete(p.wanted, w)
	p.mu.Unlock()
	if !member {
		return
	}
	if !w.killed.Load() {
		p.crashed.Add(1)
		p.log.Warn("python worker ended unexpectedly; starting another", "pid", w.pid, "status", w.why())
	}
	p.goUnlessClosed(p.replace, func() {})
}

// goUnlessClosed runs f in a goroutine that Close waits for, or calls otherwise when the pool
// is closed. (Adding to the WaitGroup under mu, before Close sets closed, keeps every Add
// before Close's Wait.)
func (p *Pool) goUnlessClosed(f, otherwise func()) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		otherwise()
		return
	}
	p.wg.Add(1)
	p.mu.Unlock()
	go func() {
		defer p.wg.Done()
		f()
	}()
}

// replace starts a worker to take an ended one's place, retrying with a growing pause while
// starts fail, until the pool closes.
func (p *Pool) replace() {
	backoff := restartBackoffMin
	for {
		w, err := p.start(context.Background()) // start gives up when the pool closes
		if err == nil {
			p.add(w)
			return
		}
		p.log.Error("python worker start failed; retrying", "error", err, "in", backoff)
		select {
		case <-time.After(backoff):
		case <-p.done:
			return
		}
		backoff = min(2*backoff, restartBackoffMax)
	}
}

// add makes a started worker one of the pool's and hands it to a waiting run or the idle list.
func (p *Pool) add(w *worker) {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		w.kill()
		return
	}
	p.live[w] = struct{}{}
	p.mu.Unlock()
	p.release(w)
}

func (p *Pool) isClosed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.closed
}

// workerEnvKeys are the variables a worker inherits when PoolOptions.Env is nil.
var workerEnvKeys = []string{
	"PATH", "HOME", "TMPDIR", "XDG_CACHE_HOME", "LANG", "TZ",
	"ASSISTANT_ENGINE_DIR", "ASSISTANT_ENGINE_CACHE", "ASSISTANT_LOG_FORMAT",
	"GODEBUG", "GOMAXPROCS", "GOMEMLIMIT", "GOGC", "GOTRACEBACK",
}

// workerEnv keeps the entries of environ named in workerEnvKeys.
func workerEnv(environ []string) []string {
	env := []string{}
	for _, kv := range environ {
		k, _, _ := strings.Cut(kv, "=")
		if slices.Contains(workerEnvKeys, k) {
			env = append(env, kv)
		}
	}
	return env
}

// alive reports whether w's process has not been reaped.
func (w *worker) alive() bool {
	select {
	case <-w.exited:
		return false
	default:
		return true
	}
}

// kill sends SIGKILL (on Windows, TerminateProcess); the reaper does the rest.
func (w *worker) kill() {
	w.killed.Store(true)
	_ = w.cmd.Process.Kill()
}

// why describes how w ended; call it only after exited is closed.
func (w *worker) why() string {
	status := "exit status 0"
	if w.exitErr != nil {
		status = w.exitErr.Error()
	}
	if w.readErr != nil && !errors.Is(w.readErr, io.EOF) {
		return w.readErr.Error() + " (" + status + ")"
	}
	return status
}
