package sandbox

import (
	"context"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// limiter admits at most n runs at once and lets at most queue more wait, first come first
// served; a run past that is refused at once with an *OverloadError. It is the admission rule
// of both a Pool (n is its worker count) and a Limited engine (n runs in this process), so the
// two behave alike for their callers.
type limiter struct {
	n, queue int

	mu      sync.Mutex
	running int
	waiters []chan struct{} // FIFO; each is closed when its run is admitted
	avgRun  time.Duration   // moving average of how long a run holds its place, for RetryAfter

	overloaded atomic.Int64
}

// Admission defaults.
const (
	defaultQueuePer = 4 // waiting runs per concurrent run
	maxRetryAfter   = time.Minute
)

// newLimiter returns a limiter for n concurrent runs (at least 1) and queue waiting runs: zero
// means defaultQueuePer × n, a negative value none.
func newLimiter(n, queue int) *limiter {
	n = max(n, 1)
	switch {
	case queue == 0:
		queue = defaultQueuePer * n
	case queue < 0:
		queue = 0
	}
	return &limiter{n: n, queue: queue}
}

// acquire waits for a place, in FIFO order, while the queue has room, and returns the function
// that gives it back (call it exactly once). It fails at once with *OverloadError when the
// queue is full, and with ctx's error, or errStop when stop is closed, if either comes first.
func (l *limiter) acquire(ctx context.Context, stop <-chan struct{}, errStop error) (func(), error) {
	l.mu.Lock()
	if l.running < l.n && len(l.waiters) == 0 {
		l.running++
		l.mu.Unlock()
		return l.releaser(), nil
	}
	if len(l.waiters) >= l.queue {
		err := &OverloadError{RetryAfter: l.retryAfterLocked()}
		l.mu.Unlock()
		l.overloaded.Add(1)
		return nil, err
	}
	ch := make(chan struct{})
	l.waiters = append(l.waiters, ch)
	l.mu.Unlock()

	var err error
	select {
	case <-ch:
		return l.releaser(), nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-stop:
		err = errStop
	}
	l.mu.Lock()
	for i, c := range l.waiters {
		if c == ch {
			l.waiters = append(l.waiters[:i], l.waiters[i+1:]...)
			l.mu.Unlock()
			return nil, err
		}
	}
	l.mu.Unlock()
	// Admitted as we gave up: pass the place on, without counting it as a run.
	l.free(0, false)
	return nil, err
}

// releaser returns the function that gives an admitted run's place back; it records how long
// the place was held, for RetryAfter.
func (l *limiter) releaser() func() {
	start := time.Now()
	var once sync.Once
	return func() { once.Do(func() { l.free(time.Since(start), true) }) }
}

// free gives a place back: to the first waiting run, else to the free places.
func (l *limiter) free(held time.Duration, record bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if record {
		if l.avgRun == 0 {
			l.avgRun = held
		} else {
			l.avgRun = (4*l.avgRun + held) / 5
		}
	}
	if len(l.waiters) > 0 {
		ch := l.waiters[0]
		l.waiters = l.waiters[1:]
		close(ch) // the place goes straight to it: running is unchanged
		return
	}
	l.running--
}

// queued returns how many runs are waiting.
func (l *limiter) queued() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.waiters)
}

// retryAfterLocked estimates when a queue place frees: one average run divided among the
// concurrent places, in whole seconds, between 1 s and a minute.
func (l *limiter) retryAfterLocked() time.Duration {
	d := l.avgRun / time.Duration(l.n)
	s := math.Ceil(d.Seconds())
	return min(max(time.Duration(s)*time.Second, time.Second), maxRetryAfter)
}

// Limited runs an Engine's runs in this process under the same admission rule as a Pool: at
// most Concurrency at once, at most Queue more waiting in FIFO order, and past that an
// *OverloadError at once. An Engine alone starts every run it is given, each holding up to its
// memory cap; a server that runs untrusted code in its own process needs this bound. It is safe
// for concurrent use.
type Limited struct {
	e   *Engine
	lim *limiter
}

// LimitedOptions configures NewLimited.
type LimitedOptions struct {
	// Concurrency is how many runs may go at once; zero means runtime.GOMAXPROCS(0) (one per
	// CPU this process may use: a run is CPU-bound in one goroutine).
	Concurrency int
	// Queue bounds the runs that may wait for a place; past it Run fails at once with an
	// *OverloadError. Zero means 4 × Concurrency; a negative value means no waiting at all.
	Queue int
}

// NewLimited returns e bounded by opts.
func NewLimited(e *Engine, opts LimitedOptions) *Limited {
	n := opts.Concurrency
	if n <= 0 {
		n = runtime.GOMAXPROCS(0)
	}
	return &Limited{e: e, lim: newLimiter(n, opts.Queue)}
}

// Run waits for a place and then runs req as Engine.Run does. Besides Engine.Run's errors it
// returns an *OverloadError, at once, when the queue is full, and ctx's error when ctx ends
// while the run waits.
func (l *Limited) Run(ctx context.Context, req Request) (Result, error) {
	return l.admit(ctx, func() (Result, error) { return l.e.Run(ctx, req) })
}

// admit waits for a place, runs run in it and frees the place.
func (l *Limited) admit(ctx context.Context, run func() (Result, error)) (Result, error) {
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	release, err := l.lim.acquire(ctx, nil, nil)
	if err != nil {
		return Result{}, err
	}
	defer release()
	return run()
}

// Concurrency returns how many runs may go at once.
func (l *Limited) Concurrency() int { return l.lim.n }

// RunIn waits for a place like Run and then runs req in key's live session of ss.
func (l *Limited) RunIn(ctx context.Context, ss *Sessions, key string, req Request) (Result, error) {
	return l.admit(ctx, func() (Result, error) { return ss.Run(ctx, key, req) })
}
