package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/knowledge"
)

// TypeDocs is the documentation store's refresh as a sync type: POST /sync/trigger accepts it
// (knowledge.md §7.3) and DocsSource runs it.
const TypeDocs = "docs"

// TypeBEPs is accepted by POST /sync/trigger and the sync section but runs nothing here (the
// reference's BIDS-only BEP sync is out of scope, §1).
const TypeBEPs = "beps"

// Errors of Run that callers inspect.
var (
	// ErrRunning: the job is already running, in this process or on another replica (its
	// lease is held); the run was skipped.
	ErrRunning = errors.New("sync already running")
	// ErrNoSource: no source of that type was given to the runner.
	ErrNoSource = errors.New("no source for that sync type")
	// ErrNoData: the community's config names nothing for that type.
	ErrNoData = errors.New("no data configured for that sync type")
)

// FailedError is a run that ran and failed: the sources that failed (Result.Failed), or the
// whole run's error, or the publish's.
type FailedError struct {
	Job    string
	Failed []SourceError
	Err    error
}

func (e *FailedError) Error() string {
	var parts []string
	if e.Err != nil {
		parts = append(parts, e.Err.Error())
	}
	for _, f := range e.Failed {
		// A source's error often names its first failure already.
		one := f.Source + ": " + f.Err.Error()
		if e.Err == nil || !strings.Contains(parts[0], one) {
			parts = append(parts, one)
		}
	}
	return strings.Join(parts, "; ")
}

func (e *FailedError) Unwrap() error { return e.Err }

// maxLastError bounds the last error a job's state keeps (for /health/communities): it is
// built from outside text (an API's message, URLs).
const maxLastError = 2000

// JobID is a sync job's id, {type}_{community} (knowledge.md §6.1).
func JobID(syncType, community string) string { return syncType + "_" + community }

// Publisher publishes a community's working copy (*knowledge.Store).
type Publisher interface {
	Publish(ctx context.Context, id string) error
}

// RunnerOptions configure NewRunner.
type RunnerOptions struct {
	// Sources are the sources by type; each key must be its source's Type().
	Sources map[string]Source
	// Store publishes the database once per run.
	Store Publisher
	// Leases keep one run per community and type at a time across replicas.
	Leases Leaser
	// Renewal overrides LeaseRenewal (tests).
	Renewal time.Duration
	Logger  *slog.Logger
	// Now is the clock of the recorded times; nil is time.Now.
	Now func() time.Time
}

// Runner runs syncs: one per community and type at a time (a lease), the type's source, one
// publish, and the record of how it went (failure counters, last error, durations, metrics).
// It is safe for concurrent use.
type Runner struct {
	sources map[string]Source
	store   Publisher
	leases  Leaser
	renewal time.Duration
	log     *slog.Logger
	now     func() time.Time
	metrics runnerMetrics

	mu     sync.Mutex
	states map[string]*JobState
}

// JobState is how a job's runs in this process went.
type JobState struct {
	Running bool
	// LastRun is when the last finished run started; LastSuccess when the last successful
	// one did.
	LastRun, LastSuccess time.Time
	LastDuration         time.Duration
	LastItems            int
	// ConsecutiveFailures counts failed runs since the last success.
	ConsecutiveFailures int
	// LastError is the last failed run's error ("" after a success).
	LastError string
}

// NewRunner returns a runner of the given sources.
func NewRunner(opts RunnerOptions) (*Runner, error) {
	if opts.Store == nil || opts.Leases == nil {
		return nil, errors.New("ingest: a runner needs a store and leases")
	}
	for typ, src := range opts.Sources {
		if src == nil || src.Type() != typ {
			return nil, fmt.Errorf("ingest: the source under %q is not of that type", typ)
		}
	}
	r := &Runner{sources: maps.Clone(opts.Sources), store: opts.Store, leases: opts.Leases, renewal: opts.Renewal,
		log: opts.Logger, now: opts.Now, metrics: newRunnerMetrics(), states: map[string]*JobState{}}
	if r.sources == nil {
		r.sources = map[string]Source{}
	}
	if r.renewal <= 0 {
		r.renewal = LeaseRenewal
	}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.now == nil {
		r.now = time.Now
	}
	return r, nil
}

// Types are the sync types the runner has a source for, sorted.
func (r *Runner) Types() []string { return slices.Sorted(maps.Keys(r.sources)) }

// Has reports whether the runner has a source of syncType and c's config names data for it.
func (r *Runner) Has(c *config.Community, syncType string) bool {
	src, ok := r.sources[syncType]
	return ok && src.Has(c)
}

// State returns how the job's runs went in this process; ok is false before its first run.
func (r *Runner) State(jobID string) (JobState, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st, ok := r.states[jobID]
	if !ok {
		return JobState{}, false
	}
	return *st, true
}

// Run runs one sync of syncType for c: it takes the job's lease (ErrRunning when another run
// holds it, here or on another replica), runs the source, publishes the database once
// (whatever the source stored is kept, even when it failed), and records the outcome. A
// failed run returns its Result with a *FailedError. progress may be nil.
func (r *Runner) Run(ctx context.Context, c *config.Community, syncType string, full bool, progress func(Progress)) (Result, error) {
	src, ok := r.sources[syncType]
	if !ok {
		return Result{}, fmt.Errorf("%w: %q", ErrNoSource, syncType)
	}
	if !knowledge.ValidID(c.ID) {
		return Result{}, fmt.Errorf("sync of %q: %w", c.ID, knowledge.ErrInvalidID)
	}
	if !src.Has(c) {
		return Result{}, fmt.Errorf("%s sync for %s: %w", syncType, c.ID, ErrNoData)
	}
	job := JobID(syncType, c.ID)
	log := r.log.With(slog.String("community", c.ID), slog.String("sync_type", syncType))

	// This process first: a second run here never asks the lease (which, as a flock, would
	// also refuse it, but a Redis lease is the replica's and would not).
	r.mu.Lock()
	st := r.states[job]
	if st == nil {
		st = &JobState{}
		r.states[job] = st
	}
	if st.Running {
		r.mu.Unlock()
		log.Info("sync skipped: the job is already running")
		r.metrics.runs.WithLabelValues(c.ID, syncType, "skipped").Inc()
		return Result{}, ErrRunning
	}
	st.Running = true
	r.mu.Unlock()
	defer func() {
		r.mu.Lock()
		st.Running = false
		r.mu.Unlock()
	}()

	lease, err := r.leases.Acquire(ctx, c.ID, syncType)
	if errors.Is(err, ErrLeaseHeld) {
		log.Info("sync skipped: another replica is running the job")
		r.metrics.runs.WithLabelValues(c.ID, syncType, "skipped").Inc()
		return Result{}, ErrRunning
	}
	start := r.now()
	if err != nil {
		return r.finish(log, c.ID, syncType, start, 0, Result{}, err)
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	renewDone := make(chan struct{})
	go func() {
		defer close(renewDone)
		r.keepLease(runCtx, lease, cancel, log)
	}()

	res, err := syncRecovered(runCtx, src, c, RunOptions{Full: full}, progress, log)
	if cause := context.Cause(runCtx); err != nil && errors.Is(cause, ErrLeaseLost) {
		err = fmt.Errorf("%w (%w)", err, cause)
	}
	cancel(nil)
	<-renewDone
	// What the run stored is published even when it failed or was cancelled (§6.2), with a
	// context of its own so a shutdown does not leave it half done.
	pubCtx, cancelPub := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	if perr := r.store.Publish(pubCtx, c.ID); perr != nil {
		err = errors.Join(err, fmt.Errorf("publishing: %w", perr))
	}
	cancelPub()
	relCtx, cancelRel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	if rerr := lease.Release(relCtx); rerr != nil {
		log.Warn("releasing the sync lease failed; it expires by itself", slog.Any("error", rerr))
	}
	cancelRel()
	return r.finish(log, c.ID, syncType, start, r.now().Sub(start), res, err)
}

// syncRecovered runs src.Sync, turning a panic (a parser's bug met on outside data) into the
// run's error, logged with its stack, so it fails this run only and not the server.
// A panic in a goroutine the source starts itself is not caught here.
func syncRecovered(ctx context.Context, src Source, c *config.Community, opts RunOptions, progress func(Progress), log *slog.Logger) (res Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			log.Error("sync source panicked", slog.Any("panic", v), slog.String("stack", string(debug.Stack())))
			err = &PanicError{Value: v}
		}
	}()
	return src.Sync(ctx, c, opts, progress)
}

// PanicError is a source's Sync that panicked; the run failed with it.
type PanicError struct {
	Value any
}

func (e *PanicError) Error() string { return fmt.Sprintf("the source panicked: %v", e.Value) }

// keepLease renews the lease every renewal interval until ctx ends. A lease found lost cancels
// the run at once (another replica may be running it now); renewals that keep failing cancel
// it once the lease would have expired since the last one that worked.
func (r *Runner) keepLease(ctx context.Context, lease Lease, cancel context.CancelCauseFunc, log *slog.Logger) {
	t := time.NewTicker(r.renewal)
	defer t.Stop()
	lastOK := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
		err := lease.Renew(rctx)
		rcancel()
		switch {
		case err == nil:
			lastOK = time.Now()
		case errors.Is(err, ErrLeaseLost):
			log.Error("sync lease lost; stopping the run", slog.Any("error", err))
			cancel(err)
			return
		case ctx.Err() != nil:
			return
		default:
			log.Warn("renewing the sync lease failed; trying again", slog.Any("error", err))
			if time.Since(lastOK) >= LeaseTTL-r.renewal {
				cancel(fmt.Errorf("%w: not renewed since %s", ErrLeaseLost, lastOK.UTC().Format(time.RFC3339)))
				return
			}
		}
	}
}

// finish records a run that started at start and took d, logs it, and returns its result
// and error (a *FailedError when it failed).
func (r *Runner) finish(log *slog.Logger, community, syncType string, start time.Time, d time.Duration, res Result, err error) (Result, error) {
	job := JobID(syncType, community)
	if err != nil || len(res.Failed) > 0 {
		err = &FailedError{Job: job, Failed: res.Failed, Err: err}
	}
	r.mu.Lock()
	st := r.states[job]
	st.LastRun, st.LastDuration, st.LastItems = start, d, res.Items
	if err == nil {
		st.LastSuccess, st.ConsecutiveFailures, st.LastError = start, 0, ""
	} else {
		st.ConsecutiveFailures++
		st.LastError = clipError(err.Error(), maxLastError)
	}
	n := st.ConsecutiveFailures
	r.mu.Unlock()

	m := r.metrics
	m.items.WithLabelValues(community, syncType).Add(float64(res.Items))
	m.duration.WithLabelValues(community, syncType).Observe(d.Seconds())
	m.consecutive.WithLabelValues(community, syncType).Set(float64(n))
	if err == nil {
		m.runs.WithLabelValues(community, syncType, "succeeded").Inc()
		m.lastSuccess.WithLabelValues(community, syncType).Set(float64(start.Unix()))
		log.Info("sync finished", slog.Int("items", res.Items), slog.Int("deleted", res.Deleted), slog.Duration("duration", d))
		return res, nil
	}
	m.runs.WithLabelValues(community, syncType, "failed").Inc()
	m.failures.WithLabelValues(community, syncType).Inc()
	// One line per failed run, so a source that is down logs once per fire, not in a loop.
	if n >= 3 {
		log.Error(fmt.Sprintf("%s sync for %s has failed %d times consecutively. Manual intervention required.", syncType, community, n),
			slog.Any("error", err))
	} else {
		log.Warn("sync failed", slog.Int("items", res.Items), slog.Duration("duration", d), slog.Int("consecutive_failures", n), slog.Any("error", err))
	}
	return res, err
}

// Collectors are the runner's metrics for GET /metrics.
func (r *Runner) Collectors() []prometheus.Collector { return r.metrics.collectors() }

// runnerMetrics are the per-job metrics (labels community and type).
type runnerMetrics struct {
	items       *prometheus.CounterVec
	lastSuccess *prometheus.GaugeVec
	failures    *prometheus.CounterVec
	consecutive *prometheus.GaugeVec
	duration    *prometheus.HistogramVec
	runs        *prometheus.CounterVec
}

func newRunnerMetrics() runnerMetrics {
	labels := []string{"community", "type"}
	return runnerMetrics{
		items: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assistant_sync_items_total",
			Help: "Rows the syncs wrote (inserted or updated), by community and sync type."}, labels),
		lastSuccess: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "assistant_sync_last_success_timestamp_seconds",
			Help: "When the last successful sync started (unix seconds), by community and sync type."}, labels),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assistant_sync_failures_total",
			Help: "Sync runs that failed, by community and sync type."}, labels),
		consecutive: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "assistant_sync_consecutive_failures",
			Help: "Sync runs that failed since the last success, by community and sync type."}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "assistant_sync_duration_seconds",
			Help:    "How long sync runs took, by community and sync type.",
			Buckets: []float64{1, 5, 15, 60, 300, 900, 1800, 3600, 7200}}, labels),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "assistant_sync_runs_total",
			Help: "Sync runs by community, sync type and result (succeeded, failed, skipped)."}, []string{"community", "type", "result"}),
	}
}

func (m runnerMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.items, m.lastSuccess, m.failures, m.consecutive, m.duration, m.runs}
}

// DocsSource is the documentation store's refresh run as a sync, for POST /sync/trigger's
// "docs" type (knowledge.md §7.3): Refresh is the knowledge Library's, which fetches, indexes
// and publishes on its own.
type DocsSource struct {
	Refresh func(ctx context.Context, community string) error
}

// Type implements Source.
func (DocsSource) Type() string { return TypeDocs }

// Has implements Source: the community has documentation.
func (DocsSource) Has(c *config.Community) bool { return len(c.Documentation) > 0 }

// Sync implements Source.
func (d DocsSource) Sync(ctx context.Context, c *config.Community, _ RunOptions, _ func(Progress)) (Result, error) {
	return Result{}, d.Refresh(ctx, c.ID)
}
