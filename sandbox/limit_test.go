package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// blockingServer answers every request only once the test calls release, so a run that
// fetches from it is known to be running (arrived) and stays so until released. release is
// also called when the test ends, before the server closes.
func blockingServer(t *testing.T) (url string, arrived <-chan struct{}, release func()) {
	t.Helper()
	in := make(chan struct{}, 16)
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in <- struct{}{}
		select {
		case <-gate:
			fmt.Fprint(w, "released")
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(release) // cleanups run last first: release, then close
	return srv.URL, in, release
}

// waitingRequest is a run that waits for url to answer, then prints the answer.
func waitingRequest(url string) Request {
	return Request{
		Source:     "import osa\nprint(await osa.fetch_text(" + pyQuote(url+"/wait") + "))\n",
		FetchAllow: []string{url}, AllowLoopback: true, FetchTimeout: 2 * time.Minute, Timeout: 2 * time.Minute,
	}
}

// TestLimitedQueueAndOverload: with one run at a time and one waiting place, a third run is
// refused at once with *OverloadError while the first two complete.
func TestLimitedQueueAndOverload(t *testing.T) {
	l := NewLimited(testEngine(t), LimitedOptions{Concurrency: 1, Queue: 1})
	url, arrived, release := blockingServer(t)
	type outcome struct {
		res Result
		err error
	}
	// On a failure, let the runs end before the test does.
	var wg sync.WaitGroup
	t.Cleanup(func() { release(); wg.Wait() })
	first, second := make(chan outcome, 1), make(chan outcome, 1)
	wg.Go(func() {
		res, err := l.Run(context.Background(), waitingRequest(url))
		first <- outcome{res, err}
	})
	<-arrived // the first run holds the only place until released
	wg.Go(func() {
		res, err := l.Run(context.Background(), Request{Source: "import time\ntime.sleep(0.1)\nprint('second')\n", Timeout: time.Minute})
		second <- outcome{res, err}
	})
	waitFor(t, "the second run to queue", 10*time.Second, func() bool { return l.lim.queued() == 1 })

	_, err := l.Run(context.Background(), Request{Source: "print('third')\n"})
	var oe *OverloadError
	if !errors.As(err, &oe) {
		t.Fatalf("a third run with the place taken and the queue full: err = %v, want *OverloadError", err)
	}
	if oe.RetryAfter < time.Second || oe.RetryAfter%time.Second != 0 {
		t.Errorf("RetryAfter = %s, want whole seconds, at least 1", oe.RetryAfter)
	}
	release()
	for name, c := range map[string]struct {
		ch     chan outcome
		stdout string
	}{"first": {first, "released\n"}, "second": {second, "second\n"}} {
		o := <-c.ch
		if o.err != nil || o.res.Status != StatusOK || o.res.Stdout != c.stdout {
			t.Errorf("the %s run: %+v, %v; want ok printing %q", name, o.res, o.err, c.stdout)
		}
	}
	if n := l.lim.overloaded.Load(); n != 1 {
		t.Errorf("%d runs refused, want 1", n)
	}
	// The places are free again.
	if res, err := l.Run(context.Background(), Request{Source: "print(4)\n"}); err != nil || res.Stdout != "4\n" {
		t.Errorf("a run after the others: %+v, %v", res, err)
	}
}

// TestLimiter checks the admission rule without an engine: FIFO hand-over, a waiter that gives
// up leaves its place in the queue, a place handed to a waiter as it gives up is passed on.
func TestLimiter(t *testing.T) {
	l := newLimiter(1, 2)
	rel1, err := l.acquire(context.Background(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	order := make(chan int, 2)
	rels := make(chan func(), 2)
	for i := range 2 {
		go func() {
			rel, err := l.acquire(context.Background(), nil, nil)
			if err != nil {
				t.Error(err)
				return
			}
			order <- i
			rels <- rel
		}()
		waitFor(t, "a waiter", 10*time.Second, func() bool { return l.queued() == i+1 })
	}
	if _, err := l.acquire(context.Background(), nil, nil); !errors.As(err, new(*OverloadError)) {
		t.Fatalf("past the queue: err = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stop := make(chan struct{})
	close(stop)
	errStop := errors.New("stopped")
	// A full queue refuses at once, whatever the context.
	if _, err := l.acquire(ctx, stop, errStop); !errors.As(err, new(*OverloadError)) {
		t.Fatalf("past the queue with a done ctx: err = %v", err)
	}
	rel1()
	rel1() // a second call gives nothing back twice
	if got := <-order; got != 0 {
		t.Fatalf("waiter %d admitted first, want 0", got)
	}
	(<-rels)()
	if got := <-order; got != 1 {
		t.Fatalf("waiter %d admitted second, want 1", got)
	}
	(<-rels)()
	l.mu.Lock()
	running, waiting := l.running, len(l.waiters)
	l.mu.Unlock()
	if running != 0 || waiting != 0 {
		t.Fatalf("after every release: %d running, %d waiting", running, waiting)
	}

	// A waiter whose stop channel closes leaves the queue with errStop.
	rel, _ := l.acquire(context.Background(), nil, nil)
	stop2 := make(chan struct{})
	errc := make(chan error, 1)
	go func() {
		_, err := l.acquire(context.Background(), stop2, errStop)
		errc <- err
	}()
	waitFor(t, "a waiter", 10*time.Second, func() bool { return l.queued() == 1 })
	close(stop2)
	if err := <-errc; !errors.Is(err, errStop) {
		t.Fatalf("a stopped waiter: err = %v", err)
	}
	if q := l.queued(); q != 0 {
		t.Fatalf("%d queued after the waiter left", q)
	}
	rel()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.running != 0 {
		t.Fatalf("%d running after the last release", l.running)
	}
}
