package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/osc-assistant/assistant/store/storetest"
)

// redisAddr is the test server's address (storetest.RedisAddr).
func redisAddr(tb testing.TB) string {
	tb.Helper()
	return storetest.RedisAddr(tb)
}

// testPrefix is a key prefix no other test uses.
func testPrefix() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "assistant-test:" + hex.EncodeToString(b[:]) + ":"
}

// newTestRedis returns a Redis store under a fresh prefix, plus a plain client on the same
// server for inspecting keys; both are closed, and the prefix's keys deleted, at cleanup.
func newTestRedis(tb testing.TB, now func() time.Time, limits Limits) (*Redis, *redis.Client) {
	tb.Helper()
	addr := redisAddr(tb)
	prefix := testPrefix()
	ctx := context.Background()
	s, err := NewRedis(ctx, RedisOptions{URL: "redis://" + addr + "/0", Prefix: prefix, Limits: limits, Now: now})
	if err != nil {
		tb.Fatalf("NewRedis: %v", err)
	}
	raw := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second})
	tb.Cleanup(func() {
		_ = s.Close()
		keys, err := scanKeys(ctx, raw, prefix)
		if err != nil {
			tb.Errorf("cleanup: %v", err)
		}
		if len(keys) > 0 {
			if err := raw.Del(ctx, keys...).Err(); err != nil {
				tb.Errorf("cleanup: %v", err)
			}
		}
		_ = raw.Close()
	})
	return s, raw
}

func scanKeys(ctx context.Context, c *redis.Client, prefix string) ([]string, error) {
	var out []string
	iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	for iter.Next(ctx) {
		out = append(out, iter.Val())
	}
	return out, iter.Err()
}

func TestRedis(t *testing.T) {
	redisAddr(t)
	testStore(t, func(t *testing.T, now func() time.Time) Store {
		s, _ := newTestRedis(t, now, testLimits())
		return s
	})
}

// TestRedisKeysHaveTTLs checks the key layout and that every key the store writes expires.
func TestRedisKeysHaveTTLs(t *testing.T) {
	ctx := context.Background()
	c := newClock(testStart)
	s, raw := newTestRedis(t, c.Now, DefaultLimits())
	l := DefaultLimits()

	mustEnsure(t, s, "hed", "a:b")
	mustAppend(t, s, "hed", "a:b", msg("1"))
	mustPark(t, s, "hed", "a:b", call("c1"))
	if _, err := s.Lock(ctx, "hed", "a:b", 300*time.Second); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Allow(ctx, "chat:1.2.3.4", 10, time.Minute); err != nil { // 10 s into the window
		t.Fatal(err)
	}
	if _, _, err := s.AddCost(ctx, "hed", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRun(ctx, "hed", "a:b", RunRecord{CallID: "c0"}); err != nil {
		t.Fatal(err)
	}

	k := s.keys("hed", "a:b")
	if want := s.prefix + "s:{aGVk:YTpi}:meta"; k.meta != want {
		t.Errorf("meta key = %q, want %q", k.meta, want)
	}
	day, month, _ := s.costKeys("hed", c.Now())
	want := map[string]time.Duration{ // key → its TTL
		k.meta: l.SessionTTL,
		k.hist: l.SessionTTL,
		k.park: l.SessionTTL,
		k.rec:  l.SessionTTL,
		k.lock: 300 * time.Second,
		s.prefix + "rl:{" + enc("chat:1.2.3.4") + ":60000}": 50 * time.Second,
		day:   costDayTTL,
		month: costMonthTTL,
	}
	keys, err := scanKeys(ctx, raw, s.prefix)
	if err != nil {
		t.Fatal(err)
	}
	ops := 0
	for _, key := range keys {
		ttl, err := raw.PTTL(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[key]
		if strings.Contains(key, ":op:") { // the scripts' remembered replies
			ops++
			w, ok = 120*time.Second, true
		}
		switch {
		case !ok:
			t.Errorf("unexpected key %q", key)
		case ttl <= w-5*time.Second || ttl > w:
			t.Errorf("key %q: TTL = %v, want about %v", key, ttl, w)
		}
	}

	if len(keys)-ops != len(want) || ops != 6 { // ensure, append, park, allow, cost and put run
		t.Errorf("keys under the prefix = %q, want %d keys and 6 operation keys", keys, len(want))
	}

	// Append refreshes the session keys' TTL.
	for _, key := range []string{k.meta, k.rec} {
		if err := raw.PExpire(ctx, key, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(t, s, "hed", "a:b", msg("2"))
	for _, key := range []string{k.meta, k.rec} {
		if ttl := raw.PTTL(ctx, key).Val(); ttl < l.SessionTTL-5*time.Second {
			t.Errorf("after Append the TTL of %q = %v, want about %v", key, ttl, l.SessionTTL)
		}
	}
}

// TestRedisServerClock runs with no injected clock: ages and windows are judged by the Redis
// server's TIME, and real TTLs have to pass (about a second in all).
func TestRedisServerClock(t *testing.T) {
	ctx := context.Background()
	l := DefaultLimits()
	l.ParkedTTL = 300 * time.Millisecond
	s, raw := newTestRedis(t, nil, l)

	before := time.Now().Add(-time.Second)
	got, created, err := s.EnsureSession(ctx, "hed", "a")
	if err != nil || !created {
		t.Fatalf("EnsureSession = %v, %v", created, err)
	}
	if got.CreatedAt.Before(before) || got.CreatedAt.After(time.Now().Add(time.Second)) {
		t.Errorf("CreatedAt = %v, want about now", got.CreatedAt)
	}
	mustAppend(t, s, "hed", "a", msg("1"))
	if _, err := s.Session(ctx, "hed", "a"); err != nil {
		t.Fatalf("Session: %v", err)
	}

	mustPark(t, s, "hed", "a", call("c1"))
	if _, err := s.Claim(ctx, "hed", "a", "c1", nil, nil); err != nil {
		t.Fatalf("Claim at once: %v", err)
	}
	mustPark(t, s, "hed", "a", call("c2"))
	unlock, err := s.Lock(ctx, "hed", "a", 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	var (
		ok    bool
		retry time.Duration
	)
	for range 3 {
		if ok, retry, err = s.Allow(ctx, "k", 1, 500*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if ok || retry <= 0 || retry > 500*time.Millisecond {
		t.Fatalf("third event: Allow = %v, %v; want false, in (0, 500ms]", ok, retry)
	}

	// An unlock after the turn's context ended still releases the lock.
	lctx, cancel := context.WithCancel(ctx)
	unlockB, err := s.Lock(lctx, "hed", "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	unlockB()
	if u, err := s.Lock(ctx, "hed", "b", time.Minute); err != nil {
		t.Errorf("Lock after an unlock with a cancelled context: %v", err)
	} else {
		u()
	}

	time.Sleep(550 * time.Millisecond) // past ParkedTTL, the lock's ttl and the rate window

	if got, err := s.Claim(ctx, "hed", "a", "c2", nil, nil); !errors.Is(err, ErrNoParkedCall) || got.CallID != "c2" {
		t.Errorf("Claim after ParkedTTL = %+v, %v; want c2, ErrNoParkedCall", got, err)
	}
	if n := raw.Exists(ctx, s.keys("hed", "a").park).Val(); n != 0 {
		t.Error("the expired call's key is still there")
	}
	if u, err := s.Lock(ctx, "hed", "a", time.Minute); err != nil {
		t.Errorf("Lock after the previous one expired: %v", err)
	} else {
		u()
	}
	if ok, _, err := s.Allow(ctx, "k", 1, 500*time.Millisecond); !ok || err != nil {
		t.Errorf("Allow in the next window = %v, %v; want true", ok, err)
	}
	mustPark(t, s, "hed", "a", call("c3"))
	if ok, err := s.Abandon(ctx, "hed", "a", "c3", nil); !ok || err != nil {
		t.Errorf("Abandon = %v, %v; want true", ok, err)
	}
	if _, _, err := s.AddCost(ctx, "hed", 0.5); err != nil {
		t.Fatal(err)
	}
	if d, m, err := s.Costs(ctx, "hed"); err != nil || d != 0.5 || m != 0.5 {
		t.Errorf("Costs = %v, %v, %v; want 0.5, 0.5", d, m, err)
	}
}

// TestRedisDown checks that a store that cannot reach Redis reports errors and refuses.
func TestRedisDown(t *testing.T) {
	ctx := context.Background()
	// A port nothing listens on: take a free one and close it.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	if _, err := NewRedis(ctx, RedisOptions{URL: "redis://" + addr}); err == nil {
		t.Error("NewRedis with nothing listening succeeded")
	}
	if _, err := NewRedis(ctx, RedisOptions{URL: "http://x"}); err == nil {
		t.Error("NewRedis with a bad URL succeeded")
	}

	// A store whose server went away: every method fails, none reports a sentinel.
	s, _ := newTestRedis(t, nil, DefaultLimits())
	if _, err := NewRedis(ctx, RedisOptions{URL: "redis://" + redisAddr(t), Prefix: "a{b}"}); err == nil {
		t.Error("NewRedis accepted a prefix with braces")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sentinel := func(err error) bool {
		return errors.Is(err, ErrNotFound) || errors.Is(err, ErrNoParkedCall) || errors.Is(err, ErrBusy)
	}
	if _, err := s.Session(ctx, "hed", "a"); err == nil || sentinel(err) || !errors.Is(err, ErrUnavailable) {
		t.Errorf("Session: err = %v, want ErrUnavailable", err)
	}
	if _, err := s.Append(ctx, "hed", "a", msg("x")); !errors.Is(err, ErrUnavailable) {
		t.Errorf("Append: err = %v, want ErrUnavailable", err)
	}
	if _, _, err := s.EnsureSession(ctx, "hed", "a"); err == nil || sentinel(err) {
		t.Errorf("EnsureSession: err = %v", err)
	}
	if _, err := s.Claim(ctx, "hed", "a", "c", nil, nil); err == nil || sentinel(err) {
		t.Errorf("Claim: err = %v", err)
	}
	if _, err := s.Lock(ctx, "hed", "a", time.Second); err == nil || sentinel(err) {
		t.Errorf("Lock: err = %v", err)
	}
	if ok, _, err := s.Allow(ctx, "k", 10, time.Minute); ok || err == nil {
		t.Errorf("Allow = %v, %v; want false and an error", ok, err)
	}
	if _, _, err := s.AddCost(ctx, "hed", 1); err == nil {
		t.Error("AddCost succeeded")
	}
	if _, _, err := s.Costs(ctx, "hed"); err == nil {
		t.Error("Costs succeeded")
	}
}

// TestRedisDefaults checks the connection settings NewRedis applies.
func TestRedisDefaults(t *testing.T) {
	s, _ := newTestRedis(t, nil, Limits{})
	o := s.c.(*redis.Client).Options()
	if o.DialTimeout != redisDialTimeout || o.ReadTimeout != redisReadTimeout || o.WriteTimeout != redisWriteTimeout ||
		o.PoolSize != redisPoolSize || !o.ContextTimeoutEnabled {
		t.Errorf("options: dial %v read %v write %v pool %d context %v", o.DialTimeout, o.ReadTimeout, o.WriteTimeout, o.PoolSize, o.ContextTimeoutEnabled)
	}
	if s.limits != DefaultLimits() {
		t.Errorf("limits = %+v, want the defaults", s.limits)
	}
	if !strings.HasPrefix(s.prefix, "assistant-test:") {
		t.Errorf("prefix = %q", s.prefix)
	}

	// The URL's own settings win over the defaults.
	r, err := NewRedis(context.Background(), RedisOptions{URL: "redis://" + redisAddr(t) + "/0?dial_timeout=5s&pool_size=7&read_timeout=3s"})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	o = r.c.(*redis.Client).Options()
	if o.DialTimeout != 5*time.Second || o.PoolSize != 7 || o.ReadTimeout != 3*time.Second || o.WriteTimeout != redisWriteTimeout {
		t.Errorf("URL options: dial %v pool %d read %v write %v", o.DialTimeout, o.PoolSize, o.ReadTimeout, o.WriteTimeout)
	}
	if r.prefix != DefaultRedisPrefix {
		t.Errorf("default prefix = %q, want %q", r.prefix, DefaultRedisPrefix)
	}
}

// TestRedisArtifactBudget: each community's kept run files stay within ArtifactBytes, the oldest
// runs of any of its sessions going first; other communities have budgets of their own; a run
// over the whole budget is refused and evicts nothing; deleting a session frees its bytes.
func TestRedisArtifactBudget(t *testing.T) {
	ctx := context.Background()
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	s, raw := newTestRedis(t, nil, l)
	put := func(c, id, call string, n int) error {
		return s.PutArtifacts(ctx, c, id, call, map[string][]byte{"f": bytes.Repeat([]byte{'x'}, n-1-runOverhead)})
	}
	for _, k := range [][2]string{{"a", "s1"}, {"a", "s2"}, {"b", "s1"}} {
		mustEnsure(t, s, k[0], k[1])
	}
	for _, k := range [][3]string{{"a", "s1", "r1"}, {"a", "s2", "r1"}, {"a", "s1", "r2"}, {"b", "s1", "r1"}} {
		if err := put(k[0], k[1], k[2], 3000); err != nil {
			t.Fatal(err)
		}
	}
	total := func(c string) int64 {
		n, _ := raw.Get(ctx, s.artifactKeys(c).total).Int64()
		return n
	}
	if total("a") != 9000 || total("b") != 3000 {
		t.Fatalf("totals a=%d b=%d, want 9000 and 3000", total("a"), total("b"))
	}
	if err := put("a", "s2", "r2", 3000); err != nil { // 12000: a/s1/r1, the oldest, goes
		t.Fatal(err)
	}
	if _, err := s.Artifact(ctx, "a", "s1", "r1", "f"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest run survived the budget: %v", err)
	}
	for _, k := range [][3]string{{"a", "s2", "r1"}, {"a", "s1", "r2"}, {"a", "s2", "r2"}, {"b", "s1", "r1"}} {
		if _, err := s.Artifact(ctx, k[0], k[1], k[2], "f"); err != nil {
			t.Errorf("%v: %v", k, err)
		}
	}
	if total("a") != 9000 {
		t.Errorf("total a = %d, want 9000", total("a"))
	}
	if err := put("b", "s1", "big", 10001); !errors.Is(err, ErrArtifactBudget) {
		t.Errorf("a run over the budget: %v, want ErrArtifactBudget", err)
	}
	if _, err := s.Artifact(ctx, "b", "s1", "r1", "f"); err != nil || total("b") != 3000 {
		t.Errorf("a refused run changed the community's files: %v, total %d", err, total("b"))
	}
	// A session's list of runs forgets the evicted one, so it keeps its newest runs.
	if n := raw.LLen(ctx, s.artifactKeys("a").runs("s1")).Val(); n != 1 {
		t.Errorf("s1 lists %d runs, want 1", n)
	}
	if err := s.DeleteSession(ctx, "a", "s2"); err != nil {
		t.Fatal(err)
	}
	if total("a") != 3000 {
		t.Errorf("after deleting s2: total a = %d, want 3000", total("a"))
	}
	if _, err := s.Artifact(ctx, "a", "s1", "r2", "f"); err != nil {
		t.Errorf("another session's run went with the deleted one: %v", err)
	}
}

func TestRedisFilesShareTheBudget(t *testing.T) {
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	s, _ := newTestRedis(t, nil, l)
	testFilesShareTheBudget(t, s)
}

// TestRedisRunsAcrossReplicas: a run recorded through one replica's store is listed by
// another's, as a chat on one replica and an export on another need.
func TestRedisRunsAcrossReplicas(t *testing.T) {
	ctx := context.Background()
	a, _ := newTestRedis(t, nil, DefaultLimits())
	b, err := NewRedis(ctx, RedisOptions{URL: "redis://" + redisAddr(t) + "/0", Prefix: a.prefix})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	mustEnsure(t, a, "hed", "s1")
	put, err := a.PutRun(ctx, "hed", "s1", RunRecord{CallID: "toolu_1", Status: "ok", Code: "print(1)", Files: []string{"out.csv"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.Runs(ctx, "hed", "s1")
	if err != nil || len(got) != 1 || got[0].CallID != "toolu_1" || got[0].Ordinal != 1 || !got[0].Time.Equal(put.Time) || got[0].Files[0] != "out.csv" {
		t.Errorf("the other replica's Runs = %+v, %v; want the record %+v", got, err, put)
	}
	if second, err := b.PutRun(ctx, "hed", "s1", RunRecord{CallID: "toolu_2"}); err != nil || second.Ordinal != 2 {
		t.Errorf("the other replica's PutRun = %+v, %v; want ordinal 2", second, err)
	}
}

func TestRedisFilesLiveWithTheSession(t *testing.T) {
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	c := newClock(testStart)
	s, _ := newTestRedis(t, c.Now, l)
	testFilesLiveWithTheSession(t, s, c)
}

// shortTTL is the session TTL of newShortTTLRedis.
const shortTTL = 600 * time.Millisecond

// newShortTTLRedis is a Redis store on the server's clock whose sessions live shortTTL.
func newShortTTLRedis(t *testing.T) (*Redis, *redis.Client) {
	t.Helper()
	l := DefaultLimits()
	l.SessionTTL = shortTTL
	l.ParkedTTL = time.Minute
	l.ArtifactBytes = 10000
	return newTestRedis(t, nil, l)
}

// TestRedisFilesRefreshedWithTheSession runs on the server's clock with a short SessionTTL: the
// files' keys really expire, so only a refresh by Append (or Claim) keeps them past the TTL they
// were put with; idle, they expire with the session and their bytes leave the total.
func TestRedisFilesRefreshedWithTheSession(t *testing.T) {
	ctx := context.Background()
	s, raw := newShortTTLRedis(t)
	lim := FileLimits{MaxFiles: 4, MaxSessionBytes: 1 << 20}
	a := s.artifactKeys("c")
	ftotal := func() int64 {
		n, _ := raw.Get(ctx, a.ftotal).Int64()
		return n
	}
	mustEnsure(t, s, "c", "s1")
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{{Name: "a.txt", Type: "txt", Data: bytes.Repeat([]byte{'x'}, 4000)}}, lim); err != nil {
		t.Fatal(err)
	}
	want := int64(4000 + len("a.txt") + runOverhead)
	if got := ftotal(); got != want {
		t.Fatalf("ftotal = %d, want %d", got, want)
	}
	for i := range 4 { // 1.2 s of activity, twice the TTL
		time.Sleep(300 * time.Millisecond)
		if i == 2 { // a refresh by Claim counts as well as one by Append
			mustPark(t, s, "c", "s1", call("c1"))
			if _, err := s.Claim(ctx, "c", "s1", "c1", msg("ok"), nil); err != nil {
				t.Fatal(err)
			}
			continue
		}
		mustAppend(t, s, "c", "s1", msg("1"))
	}
	if l, err := s.Files(ctx, "c", "s1"); err != nil || len(l) != 1 {
		t.Fatalf("an active session's files after twice its TTL = %+v, %v; want a.txt", l, err)
	}
	for _, k := range []string{a.files("s1"), a.metas("s1")} {
		if ttl := raw.PTTL(ctx, k).Val(); ttl < 250*time.Millisecond || ttl > shortTTL {
			t.Errorf("TTL of %q = %v, want the session's (under %v, refreshed 300 ms ago)", k, ttl, shortTTL)
		}
	}

	time.Sleep(700 * time.Millisecond) // idle past the TTL
	if n := raw.Exists(ctx, a.files("s1"), a.metas("s1")).Val(); n != 0 {
		t.Errorf("%d of the idle session's files keys are still there", n)
	}
	mustEnsure(t, s, "c", "s2")
	if _, err := s.PutFiles(ctx, "c", "s2", []NewFile{{Name: "b.txt", Type: "txt", Data: bytes.Repeat([]byte{'x'}, 8000)}}, lim); err != nil {
		t.Fatalf("an upload that needs the dead session's room: %v", err)
	}
	if got, want := ftotal(), int64(8000+len("b.txt")+runOverhead); got != want {
		t.Errorf("ftotal after the dead session's files went = %d, want %d", got, want)
	}
	if n := raw.HLen(ctx, a.fsize).Val(); n != 1 {
		t.Errorf("fsize holds %d sessions, want 1", n)
	}
}

// TestRedisRunsLiveWithTheSession runs the conformance test on an injected clock, then checks
// the bookkeeping: only s4's run is left in the budget, every expired one having given its
// bytes back.
func TestRedisRunsLiveWithTheSession(t *testing.T) {
	ctx := context.Background()
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	c := newClock(testStart)
	s, raw := newTestRedis(t, c.Now, l)
	testRunsLiveWithTheSession(t, s, c)
	a := s.artifactKeys("c")
	if n, _ := raw.Get(ctx, a.total).Int64(); n != 2000 {
		t.Errorf("total = %d, want s4's 2000", n)
	}
	for _, k := range []string{a.idx, a.rexp} {
		if n := raw.ZCard(ctx, k).Val(); n != 1 {
			t.Errorf("%s holds %d runs, want 1", k, n)
		}
	}
	for _, k := range []string{a.size, a.owner} {
		if n := raw.HLen(ctx, k).Val(); n != 1 {
			t.Errorf("%s holds %d runs, want 1", k, n)
		}
	}
	if n := raw.Exists(ctx, a.run("s1", "r1"), a.run("s2", "r2"), a.run("s3", "r3")).Val(); n != 0 {
		t.Errorf("%d expired runs' keys are still there", n)
	}
}

// TestRedisRunsRefreshedWithTheSession runs on the server's clock with a short SessionTTL: the
// kept run's keys really expire, so only the refreshes (by Append, Abandon and Claim, the same
// touch that moves the attached files) keep them past the TTL they were kept with; idle, they
// expire with the session and their bytes leave the total.
func TestRedisRunsRefreshedWithTheSession(t *testing.T) {
	ctx := context.Background()
	s, raw := newShortTTLRedis(t)
	a := s.artifactKeys("c")
	run := func(n int) map[string][]byte {
		return map[string][]byte{"f": bytes.Repeat([]byte{'x'}, n-1-runOverhead)}
	}
	mustEnsure(t, s, "c", "s1")
	if err := s.PutArtifacts(ctx, "c", "s1", "r1", run(4000)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutRun(ctx, "c", "s1", RunRecord{CallID: "r1", Status: "ok", Files: []string{"f"}}); err != nil {
		t.Fatal(err)
	}
	lim := FileLimits{MaxFiles: 4, MaxSessionBytes: 1 << 20}
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{{Name: "a.txt", Type: "txt", Data: []byte("abc")}}, lim); err != nil {
		t.Fatal(err)
	}
	for i := range 4 { // 1.2 s of activity, twice the TTL
		time.Sleep(300 * time.Millisecond)
		switch i {
		case 1:
			mustPark(t, s, "c", "s1", call("c1"))
			if ok, err := s.Abandon(ctx, "c", "s1", "c1", msg("closed")); err != nil || !ok {
				t.Fatalf("Abandon = %v, %v", ok, err)
			}
		case 2:
			mustPark(t, s, "c", "s1", call("c2"))
			if _, err := s.Claim(ctx, "c", "s1", "c2", msg("ok"), nil); err != nil {
				t.Fatal(err)
			}
		default:
			mustAppend(t, s, "c", "s1", msg("1"))
		}
	}
	if b, err := s.Artifact(ctx, "c", "s1", "r1", "f"); err != nil || len(b) != 4000-1-runOverhead {
		t.Fatalf("an active session's run file after twice its TTL: %d bytes, %v", len(b), err)
	}
	if p, err := s.ArtifactPaths(ctx, "c", "s1", "r1"); err != nil || len(p) != 1 {
		t.Fatalf("an active session's run paths after twice its TTL = %q, %v", p, err)
	}
	if recs, err := s.Runs(ctx, "c", "s1"); err != nil || len(recs) != 1 {
		t.Fatalf("an active session's run records after twice its TTL = %+v, %v", recs, err)
	}
	if f, err := s.Files(ctx, "c", "s1"); err != nil || len(f) != 1 {
		t.Fatalf("an active session's files after twice its TTL = %+v, %v", f, err)
	}
	for _, k := range []string{a.run("s1", "r1"), a.runs("s1")} {
		if ttl := raw.PTTL(ctx, k).Val(); ttl < 250*time.Millisecond || ttl > shortTTL {
			t.Errorf("TTL of %q = %v, want the session's (under %v, refreshed 300 ms ago)", k, ttl, shortTTL)
		}
	}

	time.Sleep(700 * time.Millisecond) // idle past the TTL
	if n := raw.Exists(ctx, a.run("s1", "r1"), a.runs("s1")).Val(); n != 0 {
		t.Errorf("%d of the idle session's run keys are still there", n)
	}
	mustEnsure(t, s, "c", "s2")
	mustAppend(t, s, "c", "s2", msg("a touch sweeps"))
	if n, _ := raw.Get(ctx, a.total).Int64(); n != 0 {
		t.Errorf("total after the idle session's run expired = %d, want 0", n)
	}
	if err := s.PutArtifacts(ctx, "c", "s2", "r2", run(9000)); err != nil {
		t.Fatal(err)
	}
	if n, _ := raw.Get(ctx, a.total).Int64(); n != 9000 {
		t.Errorf("total = %d, want s2's 9000", n)
	}
	if n := raw.ZCard(ctx, a.rexp).Val(); n != 1 {
		t.Errorf("rexp holds %d runs, want 1", n)
	}
}
