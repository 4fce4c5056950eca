package ingest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
	"github.com/osc-assistant/assistant/store/storetest"
)

// newLeaseRedis is a Redis store under a fresh key prefix on the test server, and a plain
// client on it; the prefix's keys are deleted at cleanup.
func newLeaseRedis(t *testing.T) (*store.Redis, *redis.Client, string) {
	t.Helper()
	addr := storetest.RedisAddr(t)
	var b [6]byte
	_, _ = rand.Read(b[:])
	prefix := "assistant-test:" + hex.EncodeToString(b[:]) + ":"
	ctx := context.Background()
	s, err := store.NewRedis(ctx, store.RedisOptions{URL: "redis://" + addr + "/0", Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	raw := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		s.Close()
		keys, _ := raw.Keys(ctx, prefix+"*").Result()
		if len(keys) > 0 {
			raw.Del(ctx, keys...)
		}
		raw.Close()
	})
	return s, raw, prefix
}

// TestTwoReplicasOneRedis: two runners (two replicas: each its own data directory and store
// connection, one Redis) never run the same job at once, however their runs interleave; the
// other job runs beside it.
func TestTwoReplicasOneRedis(t *testing.T) {
	rs1, _, prefix := newLeaseRedis(t)
	rs2, err := store.NewRedis(context.Background(), store.RedisOptions{URL: "redis://" + storetest.RedisAddr(t) + "/0", Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer rs2.Close()

	var active, maxActive, ran atomic.Int32
	overlap := func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		n := active.Add(1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		// Stay inside long enough for the other replica's attempts to land here.
		for range 50 {
			runtime.Gosched()
		}
		ran.Add(1)
		active.Add(-1)
		return Result{Items: 1}, nil
	}
	replica := func(rs *store.Redis) *Runner {
		st, _ := newRunStore(t)
		r, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub, sync: overlap}},
			Store: st, Leases: &RedisLeaser{Store: rs}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r1, r2 := replica(rs1), replica(rs2)
	c := runCommunity("hed")
	var skipped atomic.Int32
	var wg sync.WaitGroup
	for _, r := range []*Runner{r1, r2, r1, r2} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				_, err := r.Run(context.Background(), c, TypeGitHub, false, nil)
				switch {
				case errors.Is(err, ErrRunning):
					skipped.Add(1)
				case err != nil:
					t.Errorf("Run: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if m := maxActive.Load(); m != 1 {
		t.Errorf("%d runs of one job at once across the replicas, want 1", m)
	}
	if ran.Load() == 0 || ran.Load()+skipped.Load() != 100 {
		t.Errorf("%d ran and %d skipped of 100", ran.Load(), skipped.Load())
	}

	// Deterministically: while replica 1 runs the job, replica 2 is refused, by the lease.
	entered, release := make(chan struct{}), make(chan struct{})
	hold := func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		close(entered)
		<-release
		return Result{}, nil
	}
	st1, _ := newRunStore(t)
	st2, _ := newRunStore(t)
	h1, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub, sync: hold}}, Store: st1, Leases: &RedisLeaser{Store: rs1}})
	other := &runSource{typ: TypePapers}
	h2, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub}, TypePapers: other}, Store: st2, Leases: &RedisLeaser{Store: rs2}})
	done := make(chan error)
	go func() {
		_, err := h1.Run(context.Background(), c, TypeGitHub, false, nil)
		done <- err
	}()
	<-entered
	if _, err := h2.Run(context.Background(), c, TypeGitHub, false, nil); !errors.Is(err, ErrRunning) {
		t.Errorf("replica 2 while replica 1 runs the job: %v, want ErrRunning", err)
	}
	if _, err := h2.Run(context.Background(), c, TypePapers, false, nil); err != nil || other.calls.Load() != 1 {
		t.Errorf("replica 2, another type: %v (%d calls)", err, other.calls.Load())
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := h2.Run(context.Background(), c, TypeGitHub, false, nil); err != nil {
		t.Errorf("replica 2 once replica 1 released the lease: %v", err)
	}
}

// TestLeaseLostStopsTheRun: a run whose Redis lease disappears (expired while Redis was away,
// and perhaps taken by another replica) is cancelled at its next renewal and fails.
func TestLeaseLostStopsTheRun(t *testing.T) {
	rs, raw, prefix := newLeaseRedis(t)
	entered := make(chan struct{})
	src := &runSource{typ: TypeGitHub, sync: func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		close(entered)
		<-ctx.Done()
		return Result{}, ctx.Err()
	}}
	st, _ := newRunStore(t)
	r, _ := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: src}, Store: st, Leases: &RedisLeaser{Store: rs}, Renewal: 5 * time.Millisecond})
	done := make(chan error)
	go func() {
		_, err := r.Run(context.Background(), runCommunity("hed"), TypeGitHub, false, nil)
		done <- err
	}()
	<-entered
	key := prefix + LeaseName("hed", TypeGitHub)
	if ttl := raw.PTTL(context.Background(), key).Val(); ttl <= 9*time.Minute {
		t.Errorf("lease %s TTL %v, want about 10 minutes", key, ttl)
	}
	raw.Set(context.Background(), key, "another-replica", time.Minute)
	var fe *FailedError
	if err := <-done; !errors.Is(err, ErrLeaseLost) || !errors.As(err, &fe) {
		t.Errorf("run after its lease was taken: %v, want a FailedError with ErrLeaseLost", err)
	}
	if got := raw.Get(context.Background(), key).Val(); got != "another-replica" {
		t.Errorf("the run released another replica's lease: key holds %q", got)
	}
}

// TestLeasesOneDataDirectory: a runner with Redis (a server with --redis-url) and one
// without (an assistant sync beside it, without --redis-url) on one data directory never run
// a job at once, however their runs interleave: the one with Redis takes the flock too.
func TestLeasesOneDataDirectory(t *testing.T) {
	rs, raw, prefix := newLeaseRedis(t)
	dir := t.TempDir() + "/knowledge"
	var active, maxActive, ran atomic.Int32
	overlap := func(ctx context.Context, c *config.Community, _ RunOptions) (Result, error) {
		n := active.Add(1)
		for {
			m := maxActive.Load()
			if n <= m || maxActive.CompareAndSwap(m, n) {
				break
			}
		}
		for range 50 {
			runtime.Gosched()
		}
		ran.Add(1)
		active.Add(-1)
		return Result{Items: 1}, nil
	}
	runner := func(redis RedisLeases, sync func(context.Context, *config.Community, RunOptions) (Result, error)) *Runner {
		st, _ := newRunStore(t)
		r, err := NewRunner(RunnerOptions{Sources: map[string]Source{TypeGitHub: &runSource{typ: TypeGitHub, sync: sync}},
			Store: st, Leases: NewLeaser(dir, redis)})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	server, cli := runner(rs, overlap), runner(nil, overlap)
	c := runCommunity("hed")
	var skipped atomic.Int32
	var wg sync.WaitGroup
	for _, r := range []*Runner{server, cli, server, cli} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 25 {
				_, err := r.Run(context.Background(), c, TypeGitHub, false, nil)
				switch {
				case errors.Is(err, ErrRunning):
					skipped.Add(1)
				case err != nil:
					t.Errorf("Run: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	if m := maxActive.Load(); m != 1 {
		t.Errorf("%d runs of one job at once on one data directory, want 1", m)
	}
	if ran.Load() == 0 || ran.Load()+skipped.Load() != 100 {
		t.Errorf("%d ran and %d skipped of 100", ran.Load(), skipped.Load())
	}

	// Deterministically, each way round; a refused run leaves no Redis lease behind.
	key := prefix + LeaseName("hed", TypeGitHub)
	for _, tc := range []struct {
		name         string
		holder, kept RedisLeases
	}{{"the server runs, the command is refused", rs, nil}, {"the command runs, the server is refused", nil, rs}} {
		t.Run(tc.name, func(t *testing.T) {
			entered, release := make(chan struct{}), make(chan struct{})
			holder := runner(tc.holder, func(context.Context, *config.Community, RunOptions) (Result, error) {
				close(entered)
				<-release
				return Result{}, nil
			})
			other := runner(tc.kept, nil)
			done := make(chan error)
			go func() {
				_, err := holder.Run(context.Background(), c, TypeGitHub, false, nil)
				done <- err
			}()
			<-entered
			if _, err := other.Run(context.Background(), c, TypeGitHub, false, nil); !errors.Is(err, ErrRunning) {
				t.Errorf("the other runner while one runs the job: %v, want ErrRunning", err)
			}
			if tc.holder == nil && raw.Exists(context.Background(), key).Val() != 0 {
				t.Errorf("the refused runner left its Redis lease %s", key)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if _, err := other.Run(context.Background(), c, TypeGitHub, false, nil); err != nil {
				t.Errorf("the other runner once the first finished: %v", err)
			}
			if raw.Exists(context.Background(), key).Val() != 0 {
				t.Errorf("the Redis lease %s is left after the runs", key)
			}
		})
	}
}
