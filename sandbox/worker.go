package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// workerStopGrace bounds how long ServeWorker waits, when it returns, for its run to end.
const workerStopGrace = 2 * time.Second

// errStuck ends a worker with an interpreter that did not stop (Engine.Stuck): it runs on a
// goroutine nothing ends but the process's exit.
var errStuck = errors.New("sandbox worker: a session's interpreter did not stop; the process must end")

// ServeWorker is the worker side of a Pool (the `assistant sandbox-worker` command): it says
// hello on out, then runs every request read from in with e, one at a time, and writes each
// outcome to out, in the framed protocol described in protocol.go.
//
// It returns nil when in ends (the pool closed the pipe, or the server died), after cancelling
// a run still going and waiting up to workerStopGrace for it; a run that does not see its
// context (a loop inside C in fast mode) is left, and the caller should then exit the process,
// which ends it too. It returns an error when in or out breaks or a frame is
// malformed, and after a panic in a run (the engine may be damaged; the pool starts a new
// worker). ctx bounds nothing but the runs' own contexts; a worker is meant to outlive a
// SIGINT sent to the server's process group until the server closes it. so bounds the worker's
// live session interpreters (its idle time is the server's --sandbox-session-idle).
func ServeWorker(ctx context.Context, e *Engine, in io.Reader, out io.Writer, log *slog.Logger, so SessionsOptions) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := writeFrame(out, &frame{Type: frameReady, Hello: &hello{
		PID: os.Getpid(), SHA256: e.SHA256(), Python: e.PythonVersion(), Mode: e.Mode().String(),
	}}); err != nil {
		return fmt.Errorf("sandbox worker: saying hello: %w", err)
	}

	type readResult struct {
		f   *frame
		err error
	}
	frames := make(chan readResult)
	go func() {
		for {
			f, err := readFrame(in)
			frames <- readResult{f, err}
			if err != nil {
				return
			}
		}
	}()

	type done struct {
		id       uint64
		res      Result
		err      error
		panicked bool
	}
	finished := make(chan done, 1)
	// Live sessions: a run naming one goes to its interpreter here (the pool sends a session's
	// runs to the worker that holds it). Ended before the engine is.
	sessions := e.NewSessions(so)
	defer sessions.Close()
	// Sweeps run beside the loop, one at a time (ending an interpreter may wait stopGrace), so
	// the next run's frame is read at once; Sessions is safe for concurrent use and a sweep
	// never waits for a session's run.
	var sweeping sync.WaitGroup
	var sweepBusy atomic.Bool
	defer sweeping.Wait() // before sessions.Close (deferred calls run last in, first out)
	sweepNow := func() {
		if sweepBusy.CompareAndSwap(false, true) {
			sweeping.Add(1)
			go func() {
				defer sweeping.Done()
				defer sweepBusy.Store(false)
				sessions.Sweep()
			}()
		}
	}
	sweep := time.NewTicker(sweepEvery(so.Idle))
	sweepDue := false
	defer sweep.Stop()
	var (
		busy  bool
		runID uint64
		// cancelRun cancels the current run; a no-op when there is none.
		cancelRun = context.CancelFunc(func() {})
	)
	defer func() {
		cancelRun()
		if busy {
			// Let a cancelled run end before the engine is closed under it (a run that cannot
			// see its context, a loop inside C in fast mode, is left: the process exits).
			select {
			case <-finished:
			case <-time.After(workerStopGrace):
			}
		}
	}()
	for {
		select {
		case r := <-frames:
			if r.err != nil {
				if errors.Is(r.err, io.EOF) {
					return nil
				}
				return fmt.Errorf("sandbox worker: reading: %w", r.err)
			}
			f := r.f
			switch f.Type {
			case frameRun:
				if busy || f.Request == nil {
					msg := "busy"
					if f.Request == nil {
						msg = "run frame without a request"
					}
					if err := writeFrame(out, &frame{Type: frameError, ID: f.ID, Error: msg}); err != nil {
						return fmt.Errorf("sandbox worker: writing: %w", err)
					}
					continue
				}
				if err := writeFrame(out, &frame{Type: frameStart, ID: f.ID}); err != nil {
					return fmt.Errorf("sandbox worker: writing: %w", err)
				}
				busy, runID = true, f.ID
				runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
				cancelRun = cancel
				go func(id uint64, req Request) {
					d := done{id: id}
					defer func() {
						if p := recover(); p != nil {
							d.err = fmt.Errorf("panic: %v", p)
							d.panicked = true
							log.Error("sandbox worker: run panicked", "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
						}
						finished <- d
					}()
					if req.Session != "" {
						d.res, d.err = sessions.Run(runCtx, req.Session, req)
					} else {
						d.res, d.err = e.Run(runCtx, req)
					}
				}(f.ID, *f.Request)
			case frameCancel:
				if busy && f.ID == runID {
					cancelRun()
				}
			default:
				return fmt.Errorf("sandbox worker: unexpected %q frame", f.Type)
			}
		case <-sweep.C:
			if e.Stuck() > 0 {
				return errStuck // a sweep could not stop an interpreter
			}
			// A busy worker sweeps after its run, so one that never rests still ends idle
			// interpreters.
			sweepDue = busy
			if !busy {
				sweepNow()
			}
		case d := <-finished:
			busy = false
			cancelRun()
			reply := &frame{Type: frameResult, ID: d.id, Result: &d.res}
			if d.err != nil {
				reply = &frame{Type: frameError, ID: d.id, Error: d.err.Error()}
			}
			live, mem := sessions.Stats()
			reply.Sessions = &sessionStats{Live: live, Memory: mem}
			reply.Stuck = e.Stuck() > 0
			if err := writeFrame(out, reply); err != nil {
				return fmt.Errorf("sandbox worker: writing: %w", err)
			}
			if d.panicked {
				return d.err
			}
			if reply.Stuck {
				// The pool kills this process on reading the frame; exiting makes sure.
				return errStuck
			}
			if sweepDue {
				sweepDue = false
				sweepNow()
			}
		}
	}
}

// sweepEvery is how often a worker looks for idle interpreters: a quarter of the idle time,
// between a second and a minute.
func sweepEvery(idle time.Duration) time.Duration {
	if idle <= 0 {
		idle = defaultSessionIdle
	}
	return min(max(idle/4, time.Second), time.Minute)
}
