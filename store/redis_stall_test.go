package store

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ownRedis is a redis-server of the test's own, so the test can stop and continue its process.
type ownRedis struct {
	addr string
	cmd  *exec.Cmd
}

// startOwnRedis starts a private redis-server on a free loopback port. Without redis-server
// the test is skipped, or fails under CI=true.
func startOwnRedis(t *testing.T) *ownRedis {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("redis-server is not installed under CI=true (scripts/redis.sh installs it)")
		}
		t.Skip("redis-server is not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	dir := t.TempDir()
	cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", dir, "--logfile", filepath.Join(dir, "redis.log"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &ownRedis{addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: cmd}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	c := redis.NewClient(&redis.Options{Addr: r.addr})
	defer c.Close()
	for i := 0; ; i++ {
		if c.Ping(context.Background()).Err() == nil {
			// Loaded scripts, as on a server that has been running: otherwise the first EVALSHA
			// of each is refused (NOSCRIPT) and its EVAL never sees a stall's retry.
			for _, sc := range []*redis.Script{ensureScript, appendScript, parkScript, parkedScript, claimScript,
				abandonScript, lockScript, unlockScript, allowScript, costScript, putRunScript, dropRunsScript, putRecordScript,
				touchScript, runFileScript, runPathsScript, putFilesScript, listFilesScript, getFileScript, deleteFileScript,
				dropFilesScript, undoFilesScript} {
				if err := sc.Load(context.Background(), c).Err(); err != nil {
					t.Fatal(err)
				}
			}
			return r
		}
		if i == 100 {
			t.Fatal("the test's redis-server did not answer PING within 5 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (r *ownRedis) stop(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

func (r *ownRedis) cont(t *testing.T) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// stallTimeout is the read and write timeout of the stores under a stall, and the client
// retries after about 10 ms: a stall of stallShort outlasts the first try, and the retry is
// sent while the server is still stopped and answered when it continues; one of stallLong
// outlasts both tries.
const (
	stallTimeout = 400 * time.Millisecond
	stallShort   = 650 * time.Millisecond
	stallLong    = 2500 * time.Millisecond
)

func newStallStore(t *testing.T, r *ownRedis) *Redis {
	t.Helper()
	u := fmt.Sprintf("redis://%s/0?read_timeout=%s&write_timeout=%s&dial_timeout=%s&min_retry_backoff=8ms&max_retry_backoff=10ms",
		r.addr, stallTimeout, stallTimeout, stallTimeout)
	s, err := NewRedis(context.Background(), RedisOptions{URL: u, Prefix: testPrefix()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// settled waits until Redis has run whatever the stall left queued: a PING on each of several
// fresh connections, each processed after every earlier command of the event loop.
func settled(t *testing.T, r *ownRedis) {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: r.addr, PoolSize: 1})
	defer c.Close()
	for range 3 {
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestRedisStallRunsWritesOnce stops the server while each write is in flight, for longer than
// the client's first try: the client sends the command again, and the store must still write
// exactly once and answer as the first run did.
func TestRedisStallRunsWritesOnce(t *testing.T) {
	r := startOwnRedis(t)
	ctx := context.Background()
	type check func(t *testing.T, s *Redis, err error)
	cases := []struct {
		name  string
		setup func(t *testing.T, s *Redis)
		op    func(s *Redis) error
		check check
	}{
		{"Append", nil,
			func(s *Redis) error { _, err := s.Append(ctx, "hed", "a", msg("once")); return err },
			func(t *testing.T, s *Redis, err error) {
				if h := history(t, s, "hed", "a"); len(h) != 1 {
					t.Errorf("history has %d messages, want 1: %q", len(h), h)
				}
			}},
		{"EnsureSession", func(t *testing.T, s *Redis) {}, func(s *Redis) error {
			_, created, err := s.EnsureSession(ctx, "hed", "new")
			if err == nil && !created {
				return errors.New("a new session was reported as existing")
			}
			return err
		}, nil},
		{"Park", nil,
			func(s *Redis) error { return s.Park(ctx, "hed", "a", call("c1"), msg("use c1")) },
			func(t *testing.T, s *Redis, err error) {
				h := history(t, s, "hed", "a")
				p, ok, perr := s.Parked(ctx, "hed", "a")
				if perr != nil || !ok || p.CallID != "c1" || len(h) != 1 {
					t.Errorf("after a stalled Park: parked %v %q, history %q; want c1 parked and its message once", ok, p.CallID, h)
				}
			}},
		{"Claim", func(t *testing.T, s *Redis) { mustPark(t, s, "hed", "a", call("c1"), msg("use c1")) },
			func(s *Redis) error { _, err := s.Claim(ctx, "hed", "a", "c1", msg("answer"), nil); return err },
			func(t *testing.T, s *Redis, err error) {
				if h := history(t, s, "hed", "a"); len(h) != 2 {
					t.Errorf("history %q, want the call and its answer once", h)
				}
			}},
		{"Abandon", func(t *testing.T, s *Redis) { mustPark(t, s, "hed", "a", call("c1"), msg("use c1")) },
			func(s *Redis) error {
				ok, err := s.Abandon(ctx, "hed", "a", "c1", msg("closed"))
				if err == nil && !ok {
					return errors.New("Abandon reported nothing parked")
				}
				return err
			},
			func(t *testing.T, s *Redis, err error) {
				if h := history(t, s, "hed", "a"); len(h) != 2 {
					t.Errorf("history %q, want the call and its closing once", h)
				}
			}},
		{"Lock", func(t *testing.T, s *Redis) {},
			func(s *Redis) error { _, err := s.Lock(ctx, "hed", "a", time.Minute); return err }, nil},
		{"AddCost", func(t *testing.T, s *Redis) {},
			func(s *Redis) error { _, _, err := s.AddCost(ctx, "hed", 1); return err },
			func(t *testing.T, s *Redis, err error) {
				if d, _, cerr := s.Costs(ctx, "hed"); cerr != nil || d != 1 {
					t.Errorf("day total %v, %v; want 1", d, cerr)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := newStallStore(t, r)
			if tc.setup == nil {
				mustEnsure(t, s, "hed", "a")
			} else {
				mustEnsure(t, s, "hed", "a")
				tc.setup(t, s)
			}
			r.stop(t)
			done := make(chan error, 1)
			go func() { done <- tc.op(s) }()
			time.Sleep(stallShort)
			r.cont(t)
			err := <-done
			settled(t, r)
			// The stall outlasted the first try only: the retry gets the first run's answer.
			if err != nil {
				t.Errorf("%s after a short stall: %v, want the first run's answer", tc.name, err)
			}
			if tc.check != nil {
				tc.check(t, s, err)
			}
		})
	}
}

// TestRedisOutageFreesSessions stops the server for longer than both tries: the store reports
// errors, nothing is written twice, and once the server is back the session's turn lock is free
// within seconds, not after its ttl.
func TestRedisOutageFreesSessions(t *testing.T) {
	r := startOwnRedis(t)
	ctx := context.Background()
	s := newStallStore(t, r)
	mustEnsure(t, s, "hed", "a")

	r.stop(t)
	lockErr := make(chan error, 1)
	appendErr := make(chan error, 1)
	go func() {
		_, err := s.Lock(ctx, "hed", "a", 5*time.Minute)
		lockErr <- err
	}()
	go func() {
		_, err := s.Append(ctx, "hed", "a", msg("once"))
		appendErr <- err
	}()
	time.Sleep(stallLong)
	r.cont(t)
	if err := <-lockErr; err == nil || errors.Is(err, ErrBusy) {
		t.Fatalf("Lock during an outage: %v, want a store error", err)
	}
	if err := <-appendErr; err == nil {
		t.Fatal("Append during an outage succeeded")
	}
	settled(t, r)
	if h := history(t, s, "hed", "a"); len(h) > 1 {
		t.Errorf("the message was written %d times", len(h))
	}

	// The failed take may have run: the store releases it in the background. Poll, bounded.
	other := newStallStore(t, r)
	if err := lockWithin5s(ctx, other, "a"); err != nil {
		t.Errorf("5 s after Redis came back the session is still locked: %v", err)
	}

	// A release that fails is retried too.
	unlock, err := s.Lock(ctx, "hed", "b", 5*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	r.stop(t)
	released := make(chan struct{})
	go func() { unlock(); close(released) }()
	time.Sleep(stallLong)
	r.cont(t)
	<-released
	if err := lockWithin5s(ctx, other, "b"); err != nil {
		t.Errorf("5 s after Redis came back, a lock whose release failed is still held: %v", err)
	}
}

// lockWithin5s tries to take session id's lock every 100 ms for 5 s, releasing it when taken;
// it returns the last error.
func lockWithin5s(ctx context.Context, s *Redis, id string) error {
	var err error
	for range 50 {
		var unlock func()
		if unlock, err = s.Lock(ctx, "hed", id, time.Minute); err == nil {
			unlock()
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// stallingConn stops the test's redis-server just before the first call of the script whose
// SHA is sha goes out, as if the server stalled with that command in flight; stopped is closed
// then.
type stallingConn struct {
	redisConn
	r       *ownRedis
	sha     string
	once    sync.Once
	stopped chan struct{}
}

func (c *stallingConn) EvalSha(ctx context.Context, sha string, keys []string, args ...any) *redis.Cmd {
	if sha == c.sha {
		c.once.Do(func() {
			_ = c.r.cmd.Process.Signal(syscall.SIGSTOP)
			close(c.stopped)
		})
	}
	return c.redisConn.EvalSha(ctx, sha, keys, args...)
}

// stallOn makes s stall the server when it sends sc (stallingConn).
func stallOn(s *Redis, r *ownRedis, sc *redis.Script) *stallingConn {
	c := &stallingConn{redisConn: s.c, r: r, sha: sc.Hash(), stopped: make(chan struct{})}
	s.c = c
	return c
}

// TestRedisStallFilesAnswerWhatIsKept (issue 22, item 15): the server stalls with uploads and
// deletes in flight, past both of the client's tries. Whatever each call answers must be what
// is stored once the server is back: an error means nothing of it was kept (or deleted), a
// success that all of it was. Several calls run into one stall, so that both outcomes of the
// race between a late script and the store's settling are met. A stall that outlasts the
// write's window (shortened here) must leave nothing written either, though the script runs
// when the server continues.
func TestRedisStallFilesAnswerWhatIsKept(t *testing.T) {
	r := startOwnRedis(t)
	ctx := context.Background()
	lim := FileLimits{MaxFiles: 4, MaxSessionBytes: 1 << 20}
	file := func(name string) []NewFile { return []NewFile{{Name: name, Type: "csv", Data: []byte("a,b\n1,2\n")}} }
	const calls = 6
	for _, tc := range []struct {
		name   string
		stall  time.Duration
		window time.Duration // 0: the store's own
		// wantErr: every call must fail (the stall outlasts its window)
		wantErr bool
	}{
		{"a stall past both tries", stallLong, 0, false},
		{"a stall past the write's window", 3 * time.Second, 1500 * time.Millisecond, true},
	} {
		t.Run(tc.name+"/PutFiles", func(t *testing.T) {
			s := newStallStore(t, r)
			if tc.window > 0 {
				s.window = tc.window
			}
			for i := range calls {
				mustEnsure(t, s, "hed", fmt.Sprintf("u%d", i))
			}
			sc := stallOn(s, r, putFilesScript)
			errs := make(chan error, calls)
			for i := range calls {
				go func() {
					_, err := s.PutFiles(ctx, "hed", fmt.Sprintf("u%d", i), file("a.csv"), lim)
					errs <- err
				}()
			}
			<-sc.stopped
			time.Sleep(tc.stall) // the stall
			r.cont(t)
			got := make([]error, 0, calls)
			for range calls {
				got = append(got, <-errs)
			}
			settled(t, r)
			kept := 0
			for i := range calls {
				l, err := s.Files(ctx, "hed", fmt.Sprintf("u%d", i))
				if err != nil {
					t.Fatal(err)
				}
				kept += len(l)
			}
			failed := 0
			for _, err := range got {
				if err != nil {
					failed++
					if !errors.Is(err, ErrUnavailable) {
						t.Errorf("a failed upload: %v, want ErrUnavailable", err)
					}
				}
			}
			t.Logf("%d of %d uploads failed; %d files kept", failed, calls, kept)
			if kept != calls-failed {
				t.Errorf("%d of %d uploads answered success but %d files are kept", calls-failed, calls, kept)
			}
			if tc.wantErr && failed != calls {
				t.Errorf("%d uploads succeeded though the stall outlasted their window", calls-failed)
			}
		})
		t.Run(tc.name+"/DeleteFile", func(t *testing.T) {
			s := newStallStore(t, r)
			if tc.window > 0 {
				s.window = tc.window
			}
			for i := range calls {
				id := fmt.Sprintf("d%d", i)
				mustEnsure(t, s, "hed", id)
				if _, err := s.PutFiles(ctx, "hed", id, file("a.csv"), lim); err != nil {
					t.Fatal(err)
				}
			}
			sc := stallOn(s, r, deleteFileScript)
			errs := make(chan error, calls)
			for i := range calls {
				go func() {
					ok, err := s.DeleteFile(ctx, "hed", fmt.Sprintf("d%d", i), "a.csv")
					if err == nil && !ok {
						err = errors.New("DeleteFile found no file")
					}
					errs <- err
				}()
			}
			<-sc.stopped
			time.Sleep(tc.stall)
			r.cont(t)
			failed := 0
			for range calls {
				if err := <-errs; err != nil {
					failed++
				}
			}
			settled(t, r)
			left := 0
			for i := range calls {
				l, err := s.Files(ctx, "hed", fmt.Sprintf("d%d", i))
				if err != nil {
					t.Fatal(err)
				}
				left += len(l)
			}
			t.Logf("%d of %d deletes failed; %d files left", failed, calls, left)
			if left != failed {
				t.Errorf("%d deletes failed but %d files are left", failed, left)
			}
			if tc.wantErr && failed != calls {
				t.Errorf("%d deletes succeeded though the stall outlasted their window", calls-failed)
			}
		})
	}
}
