package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/sandbox"
	"github.com/osc-assistant/assistant/toolresults"
)

// toolRunner runs a community's client tool on the server, for chat's server_fallback: the
// same policy a browser gets (prelude, overlay wheels, fetch_allow, limits), the same result
// shape.
type toolRunner struct {
	run           func(ctx context.Context, req sandbox.Request) (sandbox.Result, error)
	allowLoopback bool
	// packages are the engine's own (packages.json), for the model's note.
	packages []sandbox.Package
	// inSession, when set, runs a session's code in its live interpreter (in-process runs);
	// without it every run gets a fresh one (the worker pool, for now).
	inSession func(ctx context.Context, key string, req sandbox.Request) (sandbox.Result, error)
	// sessionStats reports the live session interpreters and their memory (nil without them).
	sessionStats func() (live int, memory int64)
	// records keeps which interpreter holds each session's state, so a run on another replica
	// knows (nil: none kept, one replica's memory only).
	records interpreterRecords
	log     *slog.Logger
	// workers reports the worker pool's counters (nil without a pool); stuck counts the
	// in-process interpreters that did not stop when told to (nil with a pool, whose workers
	// are killed for it and counted in workers).
	workers func() sandbox.PoolStats
	stuck   func() int64
}

// interpreterRecords is what the runner needs of the session store (store.Memory and
// store.Redis have it): which interpreter holds a session's Python state.
type interpreterRecords interface {
	Interpreter(ctx context.Context, community, id string) (string, error)
	SetInterpreter(ctx context.Context, community, id, holder string) error
}

// collectors are the runner's metrics: its live session interpreters and their memory, and
// the interpreters that had to be killed.
func (r *toolRunner) collectors() []prometheus.Collector {
	if r == nil {
		return nil
	}
	var out []prometheus.Collector
	if stat := r.sessionStats; stat != nil {
		out = append(out,
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assistant_python_sessions_live",
				Help: "Live server-side Python interpreters of chat sessions."}, func() float64 { n, _ := stat(); return float64(n) }),
			prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "assistant_python_sessions_memory_bytes",
				Help: "Linear memory held by the live session interpreters."}, func() float64 { _, m := stat(); return float64(m) }))
	}
	if w := r.workers; w != nil {
		out = append(out,
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assistant_python_workers_started_total",
				Help: "Python worker processes started, replacements included."}, func() float64 { return float64(w().Started) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assistant_python_workers_killed_total",
				Help: "Python workers killed: a run overstayed its deadline by the grace, or an interpreter did not stop when told to."}, func() float64 { return float64(w().Killed) }),
			prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assistant_python_workers_crashed_total",
				Help: "Python workers that ended on their own."}, func() float64 { return float64(w().Crashed) }))
	}
	if st := r.stuck; st != nil {
		out = append(out, prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "assistant_python_interpreters_stuck_total",
			Help: "In-process Python interpreters that did not stop within the grace when told to."}, func() float64 { return float64(st()) }))
	}
	return out
}

// ToolNote is the line the chat adds to a tool that runs on the server: what its Python has.
func (r toolRunner) ToolNote() string {
	return "This tool runs on the server, not in the reader's browser. " + sandbox.PackagesNote(r.packages)
}

// RunTool runs code under c's policy for dep; data (the session's attached files, checked by
// the chat engine) are mounted read-only at /data/<name>, from their bytes.
func (r toolRunner) RunTool(ctx context.Context, c *config.Community, dep config.Deployment, sessionID, callID, code string, data map[string][]byte) (toolresults.Result, map[string][]byte, error) {
	req, lim, err := policyRequest(c, dep)
	if err != nil {
		return toolresults.Result{}, nil, err
	}
	req.Source = code
	req.Data = data
	req.AllowLoopback = r.allowLoopback
	var res sandbox.Result
	if r.inSession != nil && sessionID != "" {
		res, err = r.runInSession(ctx, c.ID, string(dep), sessionID, req)
	} else {
		res, err = r.run(ctx, req)
	}
	if err != nil {
		return toolresults.Result{}, nil, err
	}
	return sandbox.ToolResult(res, callID, lim), res.Files, nil
}

// runInSession runs req in the session's live interpreter, told which interpreter held the
// session's state after its last run (wherever that ran), and records the one that holds it
// now. A store that cannot answer costs only that knowledge: the run goes on as if nothing
// were recorded (the chat around it fails on the same store anyway).
func (r toolRunner) runInSession(ctx context.Context, community, dep, sessionID string, req sandbox.Request) (sandbox.Result, error) {
	var holder string
	if r.records != nil {
		h, err := r.records.Interpreter(ctx, community, sessionID)
		if err != nil && r.log != nil {
			r.log.Warn("reading which interpreter holds a session failed", slog.String("community", community), slog.Any("error", err))
		}
		holder = h
	}
	req.Interpreter = holder
	// The key holds the community too: a session id is only unique within one.
	res, err := r.inSession(ctx, community+"\x00"+dep+"\x00"+sessionID, req)
	if err == nil && r.records != nil && res.Interpreter != holder {
		if err := r.records.SetInterpreter(ctx, community, sessionID, res.Interpreter); err != nil && r.log != nil {
			r.log.Warn("recording which interpreter holds a session failed", slog.String("community", community), slog.Any("error", err))
		}
	}
	return res, err
}

func anyFallback(set *config.Set) bool {
	for _, c := range set.Communities {
		if c.Runtime != nil && c.Runtime.Python != nil && c.Runtime.Python.ServerFallback {
			return true
		}
	}
	return false
}

// startRunner starts what runs server-side code: a pool of sandbox-worker processes (fast
// mode, killed and replaced when a run overstays its deadline), or, with workers = 0, the
// engine in this process (strict mode; no extra processes, for small deployments and tests).
// Either way runs are admitted alike: a fixed number at once (the workers, or one per CPU this
// process may use), --sandbox-queue more waiting, and past that a *sandbox.OverloadError at
// once. It returns a nil runner when no community asks for server_fallback or there is no
// engine.
func startRunner(ctx context.Context, s serveSettings, eng *sandbox.Engine, set *config.Set, records interpreterRecords, log *slog.Logger) (*toolRunner, func(), error) {
	if !anyFallback(set) {
		return nil, func() {}, nil
	}
	if eng == nil {
		log.Warn("server_fallback is configured but there is no Python engine (--engine-dir); server-side runs are off")
		return nil, func() {}, nil
	}
	if s.sandboxWorkers == 0 {
		// Every in-process run holds up to its memory cap and a CPU: unbounded, enough
		// concurrent chats would take the server down with them.
		lim := sandbox.NewLimited(eng, sandbox.LimitedOptions{Queue: s.sandboxQueue})
		log.Info("python runs in this process", slog.Int("concurrency", lim.Concurrency()))
		r := &toolRunner{run: lim.Run, allowLoopback: s.sandboxLoopback, packages: eng.Packages(), records: records, log: log, stuck: eng.Stuck}
		if s.sessionIdle <= 0 {
			return r, func() {}, nil
		}
		// One live interpreter per chat session, swept when idle; closed before the engine.
		ss := eng.NewSessions(sandbox.SessionsOptions{Idle: s.sessionIdle})
		r.inSession = func(ctx context.Context, key string, req sandbox.Request) (sandbox.Result, error) {
			return lim.RunIn(ctx, ss, key, req)
		}
		r.sessionStats = ss.Stats
		stop := make(chan struct{})
		go func() {
			t := time.NewTicker(max(s.sessionIdle/4, time.Second))
			defer t.Stop()
			for {
				select {
				case <-t.C:
					if n := ss.Sweep(); n > 0 {
						log.Info("idle python sessions ended", slog.Int("sessions", n))
					}
				case <-stop:
					return
				}
			}
		}()
		return r, func() { close(stop); ss.Close() }, nil
	}
	bin := s.workerBinary
	if bin == "" {
		var err error
		if bin, err = os.Executable(); err != nil {
			return nil, nil, fmt.Errorf("finding this binary for the Python workers: %v", err)
		}
	}
	// The workers write to the server's stderr, so in its format (auto: they see the same
	// stderr the server does).
	args := []string{"sandbox-worker", "--engine-dir", s.engineDir, "--mode", "fast",
		"--memory-mb", strconv.Itoa(s.sandboxMemoryMB), "--log-format", s.logFormat}
	if s.sessionIdle > 0 {
		args = append(args, "--session-idle", s.sessionIdle.String())
	}
	if s.engineCache != "" {
		args = append(args, "--engine-cache", s.engineCache)
	}
	workers := s.sandboxWorkers
	if workers < 0 {
		workers = 0 // the pool's default: one per CPU
	}
	pool, err := sandbox.NewPool(ctx, sandbox.PoolOptions{Binary: bin, Args: args, Workers: workers, Queue: s.sandboxQueue, Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("starting the Python workers: %v", err)
	}
	log.Info("python workers ready", slog.Int("workers", pool.Stats().Workers))
	r := &toolRunner{run: pool.Run, allowLoopback: s.sandboxLoopback, packages: eng.Packages(), records: records, log: log, workers: pool.Stats}
	if s.sessionIdle > 0 {
		// Each worker keeps its sessions' live interpreters (ending idle ones after --sandbox-session-idle);
		// the pool sends a session's runs to the worker that holds it.
		r.inSession = func(ctx context.Context, key string, req sandbox.Request) (sandbox.Result, error) {
			req.Session = key
			return pool.Run(ctx, req)
		}
		r.sessionStats = func() (int, int64) { st := pool.Stats(); return st.Sessions, st.SessionMemory }
	}
	return r, func() { _ = pool.Close() }, nil
}
