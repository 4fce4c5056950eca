package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/osc-assistant/assistant/limits"
)

// clock is a settable clock for tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock(t time.Time) *clock { return &clock{t: t} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// testStart is where every conformance test's clock starts: a whole second, 10 s into a
// minute window, on the last day of a month.
var testStart = time.Date(2026, 1, 31, 22, 0, 10, 0, time.UTC)

// testLimits are the reference's numbers with a small session cap.
func testLimits() Limits {
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 50
	return l
}

func msg(s string) json.RawMessage {
	b, err := json.Marshal(map[string]string{"role": "user", "content": s})
	if err != nil {
		panic(err)
	}
	return b
}

func mustEnsure(t testing.TB, s Store, community, id string) Session {
	t.Helper()
	got, _, err := s.EnsureSession(context.Background(), community, id)
	if err != nil {
		t.Fatalf("EnsureSession(%q, %q): %v", community, id, err)
	}
	return got
}

func mustAppend(t *testing.T, s Store, community, id string, msgs ...json.RawMessage) int {
	t.Helper()
	n, err := s.Append(context.Background(), community, id, msgs...)
	if err != nil {
		t.Fatalf("Append(%q, %q): %v", community, id, err)
	}
	return n
}

func mustPark(t *testing.T, s Store, community, id string, call ParkedCall, msgs ...json.RawMessage) {
	t.Helper()
	if err := s.Park(context.Background(), community, id, call, msgs...); err != nil {
		t.Fatalf("Park(%q, %q): %v", community, id, err)
	}
}

func history(t *testing.T, s Store, community, id string) []string {
	t.Helper()
	h, err := s.History(context.Background(), community, id)
	if err != nil {
		t.Fatalf("History(%q, %q): %v", community, id, err)
	}
	out := make([]string, len(h))
	for i, m := range h {
		out[i] = string(m)
	}
	return out
}

func call(id string) ParkedCall {
	return ParkedCall{
		CallID:             id,
		Tool:               "execute_code",
		Args:               json.RawMessage(`{"code": "print(1 < 2)", "description": "compare"}`),
		RequiresPermission: true,
		RunsBefore:         2,
	}
}

// wantCall is call(id) as a store returns it: args compacted, CreatedAt the park time.
func wantCall(id string, at time.Time) ParkedCall {
	c := call(id)
	c.Args = json.RawMessage(`{"code":"print(1 < 2)","description":"compare"}`)
	c.CreatedAt = at
	return c
}

// testStore is the conformance suite every Store passes. newStore returns an empty store
// whose clock is now; it registers its own cleanup.
func testStore(t *testing.T, newStore func(t *testing.T, now func() time.Time) Store) {
	ctx := context.Background()
	setup := func(t *testing.T) (Store, *clock) {
		t.Helper()
		c := newClock(testStart)
		return newStore(t, c.Now), c
	}

	t.Run("SessionLifecycle", func(t *testing.T) {
		s, c := setup(t)
		if _, err := s.Session(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Session of a missing session: err = %v, want ErrNotFound", err)
		}
		got, created, err := s.EnsureSession(ctx, "hed", "a")
		if err != nil || !created {
			t.Fatalf("EnsureSession: created = %v, err = %v; want true, nil", created, err)
		}
		want := Session{ID: "a", Community: "hed", CreatedAt: testStart, LastActive: testStart}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("EnsureSession (-want +got):\n%s", d)
		}
		c.Advance(time.Minute)
		got, created, err = s.EnsureSession(ctx, "hed", "a")
		if err != nil || created {
			t.Fatalf("second EnsureSession: created = %v, err = %v; want false, nil", created, err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("second EnsureSession does not return the same session (-want +got):\n%s", d)
		}
		got, err = s.Session(ctx, "hed", "a")
		if err != nil {
			t.Fatalf("Session: %v", err)
		}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("Session (-want +got):\n%s", d)
		}
		if _, err := s.Session(ctx, "eeglab", "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("same id in another community: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteSession(ctx, "hed", "a"); err != nil {
			t.Fatalf("DeleteSession: %v", err)
		}
		if _, err := s.Session(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Session after DeleteSession: err = %v, want ErrNotFound", err)
		}
		if err := s.DeleteSession(ctx, "hed", "never"); err != nil {
			t.Errorf("DeleteSession of a missing session: %v", err)
		}
	})

	t.Run("AppendAndHistory", func(t *testing.T) {
		s, c := setup(t)
		if _, err := s.Append(ctx, "hed", "a", msg("x")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Append to a missing session: err = %v, want ErrNotFound", err)
		}
		if _, err := s.History(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("History of a missing session: err = %v, want ErrNotFound", err)
		}
		mustEnsure(t, s, "hed", "a")
		if h := history(t, s, "hed", "a"); len(h) != 0 {
			t.Errorf("History of a new session = %q, want empty", h)
		}
		if n := mustAppend(t, s, "hed", "a", msg("1"), msg("2")); n != 2 {
			t.Errorf("Append returned %d, want 2", n)
		}
		c.Advance(time.Minute)
		if n := mustAppend(t, s, "hed", "a", msg("3")); n != 3 {
			t.Errorf("Append returned %d, want 3", n)
		}
		if n := mustAppend(t, s, "hed", "a"); n != 3 {
			t.Errorf("Append of nothing returned %d, want 3", n)
		}
		want := []string{string(msg("1")), string(msg("2")), string(msg("3"))}
		if d := cmp.Diff(want, history(t, s, "hed", "a")); d != "" {
			t.Errorf("History (-want +got):\n%s", d)
		}
		got, err := s.Session(ctx, "hed", "a")
		if err != nil {
			t.Fatal(err)
		}
		if got.MessageCount != 3 || !got.LastActive.Equal(testStart.Add(time.Minute)) || !got.CreatedAt.Equal(testStart) {
			t.Errorf("Session = %+v, want 3 messages, created %v, last active %v", got, testStart, testStart.Add(time.Minute))
		}
		if _, err := s.Append(ctx, "hed", "a", json.RawMessage(`{"bad"`)); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("Append of invalid JSON: err = %v, want a validation error", err)
		}
		if n := len(history(t, s, "hed", "a")); n != 3 {
			t.Errorf("after a refused Append the history has %d messages, want 3", n)
		}
		// The stored bytes are the caller's, whitespace and all.
		raw := json.RawMessage(`{ "role": "tool", "content": "<b>&</b>" }`)
		mustAppend(t, s, "hed", "a", raw)
		if h := history(t, s, "hed", "a"); h[3] != string(raw) {
			t.Errorf("stored message = %s, want %s", h[3], raw)
		}
	})

	t.Run("AppendMany", func(t *testing.T) {
		s, _ := setup(t)
		mustEnsure(t, s, "hed", "a")
		mustAppend(t, s, "hed", "a", msg("first"))
		var many []json.RawMessage
		want := []string{string(msg("first"))}
		for i := range 250 {
			many = append(many, msg(fmt.Sprint(i)))
			want = append(want, string(msg(fmt.Sprint(i))))
		}
		if n := mustAppend(t, s, "hed", "a", many...); n != 251 {
			t.Errorf("Append of 250 messages returned %d, want 251", n)
		}
		if d := cmp.Diff(want, history(t, s, "hed", "a")); d != "" {
			t.Errorf("History (-want +got):\n%s", d)
		}
	})

	t.Run("SessionExpiry", func(t *testing.T) {
		s, c := setup(t)
		mustEnsure(t, s, "hed", "a")
		mustAppend(t, s, "hed", "a", msg("1"))
		mustPark(t, s, "hed", "a", call("c1"))
		c.Advance(DefaultLimits().SessionTTL - time.Millisecond)
		if _, err := s.Session(ctx, "hed", "a"); err != nil {
			t.Fatalf("Session 1 ms before expiry: %v", err)
		}
		mustAppend(t, s, "hed", "a", msg("2")) // refreshes the TTL
		c.Advance(DefaultLimits().SessionTTL - time.Millisecond)
		if _, err := s.Session(ctx, "hed", "a"); err != nil {
			t.Fatalf("Session after Append refreshed it: %v", err)
		}
		c.Advance(time.Millisecond)
		if _, err := s.Session(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Session after SessionTTL: err = %v, want ErrNotFound", err)
		}
		if _, err := s.History(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
			t.Errorf("History after SessionTTL: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Append(ctx, "hed", "a", msg("3")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Append after SessionTTL: err = %v, want ErrNotFound", err)
		}
		if err := s.Park(ctx, "hed", "a", call("c2")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Park after SessionTTL: err = %v, want ErrNotFound", err)
		}
		got, created, err := s.EnsureSession(ctx, "hed", "a")
		if err != nil || !created {
			t.Fatalf("EnsureSession of an expired session: created = %v, err = %v; want true, nil", created, err)
		}
		if got.MessageCount != 0 || !got.CreatedAt.Equal(c.Now()) {
			t.Errorf("recreated session = %+v, want a fresh one", got)
		}
		if h := history(t, s, "hed", "a"); len(h) != 0 {
			t.Errorf("recreated session has history %q", h)
		}
		if _, ok, err := s.Parked(ctx, "hed", "a"); ok || err != nil {
			t.Errorf("recreated session still had a parked call (ok = %v, err = %v)", ok, err)
		}
	})

	t.Run("ParkAndClaim", func(t *testing.T) {
		s, c := setup(t)
		if err := s.Park(ctx, "hed", "a", call("c1")); !errors.Is(err, ErrNotFound) {
			t.Errorf("Park on a missing session: err = %v, want ErrNotFound", err)
		}
		if _, err := s.Claim(ctx, "hed", "a", "c1", nil, nil); !errors.Is(err, ErrNoParkedCall) {
			t.Errorf("Claim on a missing session: err = %v, want ErrNoParkedCall", err)
		}
		mustEnsure(t, s, "hed", "a")
		if _, err := s.Claim(ctx, "hed", "a", "c1", msg("answer"), nil); !errors.Is(err, ErrNoParkedCall) {
			t.Errorf("Claim with nothing parked: err = %v, want ErrNoParkedCall", err)
		}
		if h := history(t, s, "hed", "a"); len(h) != 0 {
			t.Errorf("a failed Claim appended %q", h)
		}
		c.Advance(time.Second)
		parkedAt := c.Now()
		p := call("c1")
		p.CreatedAt = time.Unix(1, 0) // the store stamps its own time
		if err := s.Park(ctx, "hed", "a", p, msg("tool_use c1")); err != nil {
			t.Fatal(err)
		}
		if got, ok, err := s.Parked(ctx, "hed", "a"); !ok || err != nil || cmp.Diff(wantCall("c1", parkedAt), got) != "" {
			t.Errorf("Parked = %+v, %v, %v; want c1", got, ok, err)
		}
		c.Advance(time.Minute)
		got, err := s.Claim(ctx, "hed", "a", "wrong", msg("wrong answer"), msg("wrong late"))
		if !errors.Is(err, ErrNoParkedCall) {
			t.Fatalf("Claim with a wrong id: err = %v, want ErrNoParkedCall", err)
		}
		if got.CallID != "" {
			t.Errorf("Claim with a wrong id returned %+v", got)
		}
		got, err = s.Claim(ctx, "hed", "a", "c1", msg("answer c1"), msg("late c1"))
		if err != nil {
			t.Fatalf("Claim after a wrong id: %v (the call must stay parked)", err)
		}
		if d := cmp.Diff(wantCall("c1", parkedAt), got); d != "" {
			t.Errorf("Claim (-want +got):\n%s", d)
		}
		// Park appended the tool call and Claim its answer, each in the same step.
		if d := cmp.Diff([]string{string(msg("tool_use c1")), string(msg("answer c1"))}, history(t, s, "hed", "a")); d != "" {
			t.Errorf("history (-want +got):\n%s", d)
		}
		if _, err := s.Claim(ctx, "hed", "a", "c1", msg("again"), nil); !errors.Is(err, ErrNoParkedCall) {
			t.Errorf("second Claim: err = %v, want ErrNoParkedCall", err)
		}
		if _, ok, err := s.Parked(ctx, "hed", "a"); ok || err != nil {
			t.Errorf("Parked after Claim: ok = %v, err = %v", ok, err)
		}

		// A second call is refused while one is parked: the first must be closed first.
		mustPark(t, s, "hed", "a", call("c2"))
		if err := s.Park(ctx, "hed", "a", call("c3"), msg("tool_use c3")); !errors.Is(err, ErrAlreadyParked) {
			t.Errorf("Park over a parked call: err = %v, want ErrAlreadyParked", err)
		}
		if n := len(history(t, s, "hed", "a")); n != 2 {
			t.Errorf("a refused Park appended: %d messages, want 2", n)
		}
		if _, err := s.Claim(ctx, "hed", "a", "c2", nil, nil); err != nil {
			t.Errorf("Claim of the first call: %v", err)
		}

		// Empty and null args come back as nil.
		for _, args := range []string{"", "null", " "} {
			p := call("n")
			p.Args = json.RawMessage(args)
			mustPark(t, s, "hed", "a", p)
			got, err := s.Claim(ctx, "hed", "a", "n", nil, nil)
			if err != nil || got.Args != nil {
				t.Errorf("args %q: Claim = %s, %v; want nil args", args, got.Args, err)
			}
		}
		p = call("bad")
		p.Args = json.RawMessage(`{"code":`)
		if err := s.Park(ctx, "hed", "a", p); err == nil {
			t.Error("Park with invalid JSON args succeeded")
		}
		if err := s.Park(ctx, "hed", "a", call("badmsg"), json.RawMessage(`{"role":`)); err == nil {
			t.Error("Park with an invalid message succeeded")
		}
		if _, ok, _ := s.Parked(ctx, "hed", "a"); ok {
			t.Error("a refused Park left a call parked")
		}
	})

	t.Run("ClaimExpiry", func(t *testing.T) {
		s, c := setup(t)
		mustEnsure(t, s, "hed", "a")
		mustPark(t, s, "hed", "a", call("c1"))
		c.Advance(DefaultLimits().ParkedTTL - time.Millisecond)
		if _, err := s.Claim(ctx, "hed", "a", "c1", msg("on time"), msg("late")); err != nil {
			t.Fatalf("Claim 1 ms before ParkedTTL: %v", err)
		}

		parkedAt := c.Now()
		mustPark(t, s, "hed", "a", call("c2"))
		c.Advance(DefaultLimits().ParkedTTL)
		got, err := s.Claim(ctx, "hed", "a", "c2", msg("on time 2"), msg("late 2"))
		if !errors.Is(err, ErrNoParkedCall) {
			t.Fatalf("Claim after ParkedTTL: err = %v, want ErrNoParkedCall", err)
		}
		if d := cmp.Diff(wantCall("c2", parkedAt), got); d != "" {
			t.Errorf("an expired Claim returns the call (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{string(msg("on time")), string(msg("late 2"))}, history(t, s, "hed", "a")); d != "" {
			t.Errorf("an expired Claim appends the late answer (-want +got):\n%s", d)
		}
		if got, err := s.Claim(ctx, "hed", "a", "c2", msg("x"), msg("y")); !errors.Is(err, ErrNoParkedCall) || got.CallID != "" {
			t.Errorf("Claim after an expired Claim = %+v, %v; want nothing, ErrNoParkedCall", got, err)
		}
		if ok, err := s.Abandon(ctx, "hed", "a", "c2", msg("closed")); ok || err != nil {
			t.Errorf("the expired call is still parked (ok = %v, err = %v)", ok, err)
		}

		// A wrong id leaves even an expired call for Abandon to close.
		mustPark(t, s, "hed", "a", call("c3"))
		c.Advance(time.Hour)
		if _, err := s.Claim(ctx, "hed", "a", "other", msg("x"), msg("y")); !errors.Is(err, ErrNoParkedCall) {
			t.Errorf("Claim with a wrong id: err = %v, want ErrNoParkedCall", err)
		}
		if got, ok, err := s.Parked(ctx, "hed", "a"); !ok || err != nil || got.CallID != "c3" {
			t.Errorf("Parked of an expired call = %+v, %v, %v; want c3", got, ok, err)
		}
		if ok, err := s.Abandon(ctx, "hed", "a", "c3", msg("closed c3")); !ok || err != nil {
			t.Errorf("Abandon of an expired call = %v, %v; want true", ok, err)
		}
		if h := history(t, s, "hed", "a"); h[len(h)-1] != string(msg("closed c3")) {
			t.Errorf("history ends %q, want the closing message", h[len(h)-1])
		}
	})

	t.Run("Abandon", func(t *testing.T) {
		s, c := setup(t)
		if ok, err := s.Abandon(ctx, "hed", "missing", "c1", msg("x")); ok || err != nil {
			t.Errorf("Abandon on a missing session: ok = %v, err = %v", ok, err)
		}
		mustEnsure(t, s, "hed", "a")
		if ok, err := s.Abandon(ctx, "hed", "a", "c1", msg("x")); ok || err != nil {
			t.Errorf("Abandon with nothing parked: ok = %v, err = %v", ok, err)
		}
		mustPark(t, s, "hed", "a", call("c1"))
		c.Advance(time.Second)
		if ok, err := s.Abandon(ctx, "hed", "a", "other", msg("x")); ok || err != nil {
			t.Errorf("Abandon with another id: ok = %v, err = %v", ok, err)
		}
		if h := history(t, s, "hed", "a"); len(h) != 0 {
			t.Errorf("a refused Abandon appended %q", h)
		}
		ok, err := s.Abandon(ctx, "hed", "a", "c1", msg("moved on"))
		if !ok || err != nil {
			t.Fatalf("Abandon: ok = %v, err = %v", ok, err)
		}
		if d := cmp.Diff([]string{string(msg("moved on"))}, history(t, s, "hed", "a")); d != "" {
			t.Errorf("history (-want +got):\n%s", d)
		}
		if _, err := s.Claim(ctx, "hed", "a", "c1", msg("answer"), nil); !errors.Is(err, ErrNoParkedCall) {
			t.Errorf("Claim after Abandon: err = %v, want ErrNoParkedCall", err)
		}
		if ok, _ := s.Abandon(ctx, "hed", "a", "c1", msg("again")); ok {
			t.Error("second Abandon found a call")
		}
		if n := len(history(t, s, "hed", "a")); n != 1 {
			t.Errorf("history has %d messages after the refused calls, want 1", n)
		}
		// DeleteSession removes the parked call too.
		mustPark(t, s, "hed", "a", call("c2"))
		if err := s.DeleteSession(ctx, "hed", "a"); err != nil {
			t.Fatal(err)
		}
		mustEnsure(t, s, "hed", "a")
		if _, err := s.Claim(ctx, "hed", "a", "c2", nil, nil); !errors.Is(err, ErrNoParkedCall) {
			t.Errorf("Claim after DeleteSession: err = %v, want ErrNoParkedCall", err)
		}
	})

	// Whatever order concurrent Claims and Abandons of one call run in, exactly one of them
	// removes it and the history gets exactly one message for it.
	t.Run("ClaimAbandonRace", func(t *testing.T) {
		s, _ := setup(t)
		mustEnsure(t, s, "hed", "a")
		for round := range 20 {
			id := fmt.Sprintf("c%d", round)
			mustPark(t, s, "hed", "a", call(id), msg("use "+id))
			var wg sync.WaitGroup
			var won atomic.Int32
			start := make(chan struct{})
			for i := range 6 {
				wg.Go(func() {
					<-start
					if i%2 == 0 {
						if _, err := s.Claim(ctx, "hed", "a", id, msg("result "+id), msg("late "+id)); err == nil {
							won.Add(1)
						}
					} else if ok, err := s.Abandon(ctx, "hed", "a", id, msg("closed "+id)); ok && err == nil {
						won.Add(1)
					}
				})
			}
			close(start)
			wg.Wait()
			if won.Load() != 1 {
				t.Fatalf("round %d: %d winners, want 1", round, won.Load())
			}
			h := history(t, s, "hed", "a")
			if len(h) != 2*(round+1) || h[len(h)-2] != string(msg("use "+id)) {
				t.Fatalf("round %d: history %q", round, h)
			}
		}
	})

	t.Run("Lock", func(t *testing.T) {
		s, c := setup(t)
		const ttl = 300 * time.Second
		unlock, err := s.Lock(ctx, "hed", "a", ttl)
		if err != nil {
			t.Fatalf("Lock: %v", err)
		}
		if _, err := s.Lock(ctx, "hed", "a", ttl); !errors.Is(err, ErrBusy) {
			t.Errorf("second Lock: err = %v, want ErrBusy", err)
		}
		other, err := s.Lock(ctx, "hed", "b", ttl)
		if err != nil {
			t.Errorf("Lock of another session: %v", err)
		} else {
			other()
		}
		if u, err := s.Lock(ctx, "eeglab", "a", ttl); err != nil {
			t.Errorf("Lock of the same id in another community: %v", err)
		} else {
			u()
		}
		unlock()
		unlock2, err := s.Lock(ctx, "hed", "a", ttl)
		if err != nil {
			t.Fatalf("Lock after unlock: %v", err)
		}
		unlock() // a stale unlock must not release the new holder
		if _, err := s.Lock(ctx, "hed", "a", ttl); !errors.Is(err, ErrBusy) {
			t.Errorf("Lock after a stale unlock: err = %v, want ErrBusy", err)
		}

		c.Advance(ttl - time.Millisecond)
		if _, err := s.Lock(ctx, "hed", "a", ttl); !errors.Is(err, ErrBusy) {
			t.Errorf("Lock 1 ms before the ttl: err = %v, want ErrBusy", err)
		}
		c.Advance(time.Millisecond)
		unlock3, err := s.Lock(ctx, "hed", "a", ttl)
		if err != nil {
			t.Fatalf("Lock after the ttl: %v", err)
		}
		unlock2() // the expired holder's unlock must not release the new one
		if _, err := s.Lock(ctx, "hed", "a", ttl); !errors.Is(err, ErrBusy) {
			t.Errorf("Lock after an expired holder's unlock: err = %v, want ErrBusy", err)
		}
		unlock3()
		if _, err := s.Lock(ctx, "hed", "a", 0); err == nil {
			t.Error("Lock with a zero ttl succeeded")
		}
	})

	t.Run("Allow", func(t *testing.T) {
		s, c := setup(t) // 10 s into a minute window
		for i := range 3 {
			ok, retry, err := s.Allow(ctx, "chat:1.2.3.4", 3, time.Minute)
			if !ok || retry != 0 || err != nil {
				t.Fatalf("event %d: Allow = %v, %v, %v; want true, 0, nil", i+1, ok, retry, err)
			}
		}
		c.Advance(5 * time.Second)
		ok, retry, err := s.Allow(ctx, "chat:1.2.3.4", 3, time.Minute)
		if ok || err != nil || retry != 45*time.Second {
			t.Errorf("4th event: Allow = %v, %v, %v; want false, 45s, nil", ok, retry, err)
		}
		if ok, _, _ := s.Allow(ctx, "chat:1.2.3.5", 3, time.Minute); !ok {
			t.Error("another key was refused")
		}
		if ok, _, _ := s.Allow(ctx, "chat:1.2.3.4", 3, time.Hour); !ok {
			t.Error("the same key with another window was refused")
		}
		c.Advance(retry)
		if ok, _, _ := s.Allow(ctx, "chat:1.2.3.4", 3, time.Minute); !ok {
			t.Error("the next window was refused")
		}
		if ok, retry, _ := s.Allow(ctx, "zero", 0, time.Minute); ok || retry <= 0 {
			t.Errorf("limit 0: Allow = %v, %v; want false and a wait", ok, retry)
		}
		if _, _, err := s.Allow(ctx, "k", 1, 0); err == nil {
			t.Error("Allow with a zero window succeeded")
		}
	})

	t.Run("Costs", func(t *testing.T) {
		s, c := setup(t) // 2026-01-31 22:00:10
		near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
		check := func(what string, wantDay, wantMonth float64) {
			t.Helper()
			d, m, err := s.Costs(ctx, "hed")
			if err != nil || !near(d, wantDay) || !near(m, wantMonth) {
				t.Errorf("%s: Costs = %v, %v, %v; want %v, %v", what, d, m, err, wantDay, wantMonth)
			}
		}
		check("empty", 0, 0)
		if d, m, err := s.AddCost(ctx, "hed", 0.5); err != nil || !near(d, 0.5) || !near(m, 0.5) {
			t.Errorf("AddCost = %v, %v, %v; want 0.5, 0.5", d, m, err)
		}
		if d, m, err := s.AddCost(ctx, "hed", 0.25); err != nil || !near(d, 0.75) || !near(m, 0.75) {
			t.Errorf("AddCost = %v, %v, %v; want 0.75, 0.75", d, m, err)
		}
		if _, _, err := s.AddCost(ctx, "eeglab", 1); err != nil {
			t.Fatal(err)
		}
		check("same day", 0.75, 0.75)
		c.Advance(2 * time.Hour) // 2026-02-01: a new day and a new month
		check("next month", 0, 0)
		if _, _, err := s.AddCost(ctx, "hed", 1); err != nil {
			t.Fatal(err)
		}
		c.Advance(24 * time.Hour) // 2026-02-02: a new day, the same month
		check("next day", 0, 1)
		if _, _, err := s.AddCost(ctx, "hed", 0.125); err != nil {
			t.Fatal(err)
		}
		check("next day after a cost", 0.125, 1.125)
		for _, bad := range []float64{-1, math.NaN(), math.Inf(1)} {
			if _, _, err := s.AddCost(ctx, "hed", bad); err == nil {
				t.Errorf("AddCost(%v) succeeded", bad)
			}
		}
		check("after refused costs", 0.125, 1.125)
	})

	t.Run("ClaimHammer", func(t *testing.T) {
		s, _ := setup(t)
		mustEnsure(t, s, "hed", "a")
		for round := range 3 {
			id := fmt.Sprintf("c%d", round)
			mustPark(t, s, "hed", "a", call(id))
			const n = 50
			var (
				wg      sync.WaitGroup
				start   = make(chan struct{})
				results = make(chan error, n)
			)
			for range n {
				wg.Go(func() {
					<-start
					_, err := s.Claim(ctx, "hed", "a", id, msg("answer"), nil)
					results <- err
				})
			}
			close(start)
			wg.Wait()
			close(results)
			won := 0
			for err := range results {
				switch {
				case err == nil:
					won++
				case !errors.Is(err, ErrNoParkedCall):
					t.Errorf("Claim: unexpected error %v", err)
				}
			}
			if won != 1 {
				t.Errorf("round %d: %d of %d concurrent claims succeeded, want exactly 1", round, won, n)
			}
		}
	})

	t.Run("LockHammer", func(t *testing.T) {
		s, _ := setup(t)
		const n = 50
		var (
			wg    sync.WaitGroup
			start = make(chan struct{})
			mu    sync.Mutex
			won   int
		)
		for range n {
			wg.Go(func() {
				<-start
				_, err := s.Lock(ctx, "hed", "a", time.Minute)
				switch {
				case err == nil:
					mu.Lock()
					won++
					mu.Unlock()
				case !errors.Is(err, ErrBusy):
					t.Errorf("Lock: unexpected error %v", err)
				}
			})
		}
		close(start)
		wg.Wait()
		if won != 1 {
			t.Errorf("%d of %d concurrent Locks succeeded, want exactly 1", won, n)
		}
	})

	t.Run("EnsureConcurrent", func(t *testing.T) {
		s, _ := setup(t)
		const n = 20
		var (
			wg      sync.WaitGroup
			start   = make(chan struct{})
			created atomic.Int32
		)
		for range n {
			wg.Go(func() {
				<-start
				_, c, err := s.EnsureSession(ctx, "hed", "a")
				if err != nil {
					t.Errorf("EnsureSession: %v", err)
				}
				if c {
					created.Add(1)
				}
			})
		}
		close(start)
		wg.Wait()
		if got := created.Load(); got != 1 {
			t.Errorf("%d of %d concurrent EnsureSessions created the session, want 1", got, n)
		}
	})

	t.Run("AppendConcurrent", func(t *testing.T) {
		s, _ := setup(t)
		mustEnsure(t, s, "hed", "a")
		const n = 20
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				if _, err := s.Append(ctx, "hed", "a", msg(fmt.Sprint(i))); err != nil {
					t.Errorf("Append: %v", err)
				}
			})
		}
		wg.Wait()
		if got, _ := s.Session(ctx, "hed", "a"); got.MessageCount != n {
			t.Errorf("MessageCount = %d, want %d", got.MessageCount, n)
		}
		if h := history(t, s, "hed", "a"); len(h) != n {
			t.Errorf("history has %d messages, want %d", len(h), n)
		}
	})

	t.Run("IDsDoNotCollide", func(t *testing.T) {
		s, _ := setup(t)
		pairs := [][2]string{
			{"x", "a:b"}, {"x:a", "b"}, {"x", "a"}, {"x:a:b", ""}, {"", "x:a:b"},
			{"x", "{a}:b"}, {"x}:{a", "b"}, {"{x}", "a"}, {"x", "{a}"},
			{"x", "a:meta"}, {"x", "a}:hist"}, {"x", "é"}, {"x", "e\u0301"}, {"x", "日本"},
			{"x", "a*"}, {"x", "a\x00b"}, {"x", "a b"}, {"hed", "A"}, {"hed", "a"},
		}
		for i, p := range pairs {
			mustEnsure(t, s, p[0], p[1])
			mustAppend(t, s, p[0], p[1], msg(fmt.Sprint(i)))
			mustPark(t, s, p[0], p[1], call(fmt.Sprint("call", i)))
		}
		for i, p := range pairs {
			want := []string{string(msg(fmt.Sprint(i)))}
			if d := cmp.Diff(want, history(t, s, p[0], p[1])); d != "" {
				t.Errorf("community %q id %q: history (-want +got):\n%s", p[0], p[1], d)
			}
			if _, err := s.Claim(ctx, p[0], p[1], fmt.Sprint("call", i), nil, nil); err != nil {
				t.Errorf("community %q id %q: Claim: %v", p[0], p[1], err)
			}
		}
		for i, k := range []string{"a:b", "a", "a:60000", "{a}", "é", "e\u0301"} {
			if ok, _, err := s.Allow(ctx, k, 1, time.Minute); !ok || err != nil {
				t.Errorf("key %d %q: first Allow = %v, %v; want true", i, k, ok, err)
			}
		}
		for _, com := range []string{"x", "x:2026-01-31", "x:2026-01", "{x}"} {
			if _, _, err := s.AddCost(ctx, com, 1); err != nil {
				t.Fatal(err)
			}
		}
		for _, com := range []string{"x", "x:2026-01-31", "x:2026-01", "{x}"} {
			if d, m, _ := s.Costs(ctx, com); d != 1 || m != 1 {
				t.Errorf("community %q: Costs = %v, %v; want 1, 1", com, d, m)
			}
		}
	})

	t.Run("Artifacts", func(t *testing.T) {
		s, clk := setup(t)
		if err := s.PutArtifacts(ctx, "c", "none", "call", map[string][]byte{"a.txt": []byte("x")}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("put to a missing session: %v, want ErrNotFound", err)
		}
		mustEnsure(t, s, "c", "s1")
		files := map[string][]byte{"out/plot.png": {0x89, 'P', 'N', 'G', 0}, "script.py": []byte("print(1)\n")}
		if err := s.PutArtifacts(ctx, "c", "s1", "toolu_1", files); err != nil {
			t.Fatal(err)
		}
		for p, want := range files {
			got, err := s.Artifact(ctx, "c", "s1", "toolu_1", p)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s: %q, %v; want %q", p, got, err, want)
			}
		}
		for _, miss := range [][3]string{{"s1", "toolu_1", "missing.txt"}, {"s1", "toolu_2", "script.py"}, {"s2", "toolu_1", "script.py"}} {
			if _, err := s.Artifact(ctx, "c", miss[0], miss[1], miss[2]); !errors.Is(err, ErrNotFound) {
				t.Errorf("%v: %v, want ErrNotFound", miss, err)
			}
		}
		if _, err := s.Artifact(ctx, "other", "s1", "toolu_1", "script.py"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another community's session: %v, want ErrNotFound", err)
		}
		if got, err := s.ArtifactPaths(ctx, "c", "s1", "toolu_1"); err != nil || !slices.Equal(got, []string{"out/plot.png", "script.py"}) {
			t.Errorf("ArtifactPaths = %q, %v", got, err)
		}
		if got, err := s.ArtifactPaths(ctx, "c", "s1", "toolu_2"); err != nil || got == nil || len(got) != 0 {
			t.Errorf("ArtifactPaths of a run with no kept files = %#v, %v; want an empty list", got, err)
		}
		if _, err := s.ArtifactPaths(ctx, "c", "s2", "toolu_1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("ArtifactPaths of a missing session: %v, want ErrNotFound", err)
		}
		// Only the newest MaxArtifactRuns runs keep their files.
		for i := range MaxArtifactRuns {
			if err := s.PutArtifacts(ctx, "c", "s1", fmt.Sprintf("toolu_n%d", i), map[string][]byte{"f": {byte(i)}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.Artifact(ctx, "c", "s1", "toolu_1", "script.py"); !errors.Is(err, ErrNotFound) {
			t.Errorf("the oldest run's files were kept past %d runs: %v", MaxArtifactRuns, err)
		}
		for i := range MaxArtifactRuns {
			if got, err := s.Artifact(ctx, "c", "s1", fmt.Sprintf("toolu_n%d", i), "f"); err != nil || got[0] != byte(i) {
				t.Errorf("run %d: %v %v", i, got, err)
			}
		}
		// Files go with their session.
		clk.Advance(testLimits().SessionTTL + time.Second)
		if _, err := s.Artifact(ctx, "c", "s1", "toolu_n3", "f"); !errors.Is(err, ErrNotFound) {
			t.Errorf("after the session expired: %v, want ErrNotFound", err)
		}
	})

	t.Run("Files", func(t *testing.T) {
		s, clk := setup(t)
		lim := FileLimits{MaxFiles: 3, MaxSessionBytes: 100}
		f := func(name, data string) NewFile { return NewFile{Name: name, Type: "csv", Data: []byte(data)} }
		if _, err := s.PutFiles(ctx, "c", "none", []NewFile{f("a.csv", "x")}, lim); !errors.Is(err, ErrNotFound) {
			t.Fatalf("put to a missing session: %v", err)
		}
		mustEnsure(t, s, "c", "s1")
		at := clk.Now()
		got, err := s.PutFiles(ctx, "c", "s1", []NewFile{f("b.csv", "b,1\n"), f("a.csv", "a\n")}, lim)
		if err != nil {
			t.Fatal(err)
		}
		want := []SessionFile{
			{Name: "a.csv", Bytes: 2, SHA256: "87428fc522803d31065e7bce3cf03fe475096631e5e07bbd7a0fde60c4cf25c7", Type: "csv", AddedAt: at},
			{Name: "b.csv", Bytes: 4, Type: "csv", AddedAt: at},
		}
		sum := sha256.Sum256([]byte("b,1\n"))
		want[1].SHA256 = hex.EncodeToString(sum[:])
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("PutFiles (-want +got):\n%s", d)
		}
		meta, data, err := s.File(ctx, "c", "s1", "b.csv")
		if err != nil || string(data) != "b,1\n" || meta != got[1] {
			t.Errorf("File = %+v %q %v", meta, data, err)
		}
		// All or nothing: a batch past the count or the bytes keeps nothing of itself.
		if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{f("c.csv", "c"), f("d.csv", "d")}, lim); !errors.Is(err, ErrTooManyFiles) {
			t.Errorf("a 4th file: %v, want ErrTooManyFiles", err)
		}
		if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{f("c.csv", strings.Repeat("x", 95))}, lim); !errors.Is(err, ErrSessionFilesFull) {
			t.Errorf("past 100 bytes: %v, want ErrSessionFilesFull", err)
		}
		if l, _ := s.Files(ctx, "c", "s1"); len(l) != 2 {
			t.Errorf("after refusals: %d files, want 2", len(l))
		}
		// The same name replaces a file, and counts once.
		clk.Advance(time.Second)
		if l, err := s.PutFiles(ctx, "c", "s1", []NewFile{f("a.csv", strings.Repeat("y", 90)), f("c.csv", "c")}, lim); err != nil || len(l) != 3 || l[0].Bytes != 90 || !l[0].AddedAt.Equal(clk.Now()) {
			t.Errorf("replace: %+v %v", l, err)
		}
		if ok, err := s.DeleteFile(ctx, "c", "s1", "c.csv"); !ok || err != nil {
			t.Errorf("DeleteFile = %v %v", ok, err)
		}
		if ok, _ := s.DeleteFile(ctx, "c", "s1", "c.csv"); ok {
			t.Error("a second DeleteFile found the file")
		}
		if _, _, err := s.File(ctx, "c", "s1", "c.csv"); !errors.Is(err, ErrNotFound) {
			t.Errorf("a deleted file: %v", err)
		}
		if _, _, err := s.File(ctx, "other", "s1", "a.csv"); !errors.Is(err, ErrNotFound) {
			t.Errorf("another community's session: %v", err)
		}
		// Files go with their session.
		if err := s.DeleteSession(ctx, "c", "s1"); err != nil {
			t.Fatal(err)
		}
		mustEnsure(t, s, "c", "s1")
		if l, err := s.Files(ctx, "c", "s1"); err != nil || len(l) != 0 {
			t.Errorf("a recreated session has files %+v %v", l, err)
		}
	})

	t.Run("RunRecords", func(t *testing.T) {
		s, clk := setup(t)
		if _, err := s.PutRun(ctx, "c", "none", RunRecord{CallID: "x"}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("PutRun to a missing session: %v, want ErrNotFound", err)
		}
		if _, err := s.Runs(ctx, "c", "none"); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Runs of a missing session: %v, want ErrNotFound", err)
		}
		mustEnsure(t, s, "c", "s1")
		if got, err := s.Runs(ctx, "c", "s1"); err != nil || len(got) != 0 {
			t.Fatalf("Runs of a new session = %+v, %v", got, err)
		}
		in := RunRecord{Ordinal: 99, CallID: "toolu_1", Status: "ok", Description: "sum <a> & b", Code: "print(1)\n",
			Stdout: "1\n", Stderr: "", Summary: "ok", Files: []string{"out.csv", "plots/a.png"}, Time: time.Unix(1, 0)}
		got, err := s.PutRun(ctx, "c", "s1", in)
		if err != nil {
			t.Fatal(err)
		}
		want := in
		want.Ordinal, want.Time = 1, clk.Now()
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("PutRun (-want +got):\n%s", d)
		}
		clk.Advance(time.Second)
		second, err := s.PutRun(ctx, "c", "s1", RunRecord{CallID: "toolu_2", Status: "error", Stderr: "Traceback\n"})
		if err != nil {
			t.Fatal(err)
		}
		if second.Ordinal != 2 || !second.Time.Equal(clk.Now()) || second.Files == nil {
			t.Errorf("second record = %+v, want ordinal 2 at %v with an empty file list", second, clk.Now())
		}
		list, err := s.Runs(ctx, "c", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]RunRecord{want, second}, list); d != "" {
			t.Errorf("Runs (-want +got):\n%s", d)
		}
		// Keyed by community: another community's session of the same id sees none.
		mustEnsure(t, s, "other", "s1")
		if l, err := s.Runs(ctx, "other", "s1"); err != nil || len(l) != 0 {
			t.Errorf("another community's session has records %+v %v", l, err)
		}
		// The newest MaxRunRecords are kept; ordinals keep counting.
		for i := 3; i <= MaxRunRecords+5; i++ {
			if _, err := s.PutRun(ctx, "c", "s1", RunRecord{CallID: fmt.Sprintf("toolu_%d", i)}); err != nil {
				t.Fatal(err)
			}
		}
		list, err = s.Runs(ctx, "c", "s1")
		if err != nil {
			t.Fatal(err)
		}
		if len(list) != MaxRunRecords || list[0].Ordinal != 6 || list[len(list)-1].Ordinal != MaxRunRecords+5 || list[0].CallID != "toolu_6" {
			t.Errorf("after %d runs: %d records, ordinals %d..%d", MaxRunRecords+5, len(list), list[0].Ordinal, list[len(list)-1].Ordinal)
		}
		// Records live with the session: Append refreshes them, expiry and deletion drop them.
		mustAppend(t, s, "c", "s1", msg("1"))
		clk.Advance(testLimits().SessionTTL - time.Second)
		mustAppend(t, s, "c", "s1", msg("2"))
		clk.Advance(2 * time.Second)
		if l, err := s.Runs(ctx, "c", "s1"); err != nil || len(l) != MaxRunRecords {
			t.Errorf("after Append refreshed the session: %d records, %v", len(l), err)
		}
		clk.Advance(testLimits().SessionTTL)
		if _, err := s.Runs(ctx, "c", "s1"); !errors.Is(err, ErrNotFound) {
			t.Errorf("Runs after the session expired: %v, want ErrNotFound", err)
		}
		if _, err := s.PutRun(ctx, "c", "s1", RunRecord{}); !errors.Is(err, ErrNotFound) {
			t.Errorf("PutRun after the session expired: %v, want ErrNotFound", err)
		}
		mustEnsure(t, s, "c", "s1")
		if l, err := s.Runs(ctx, "c", "s1"); err != nil || len(l) != 0 {
			t.Errorf("a recreated session has records %d, %v", len(l), err)
		}
		if r, err := s.PutRun(ctx, "c", "s1", RunRecord{}); err != nil || r.Ordinal != 1 {
			t.Errorf("the recreated session's first record: %+v %v, want ordinal 1", r, err)
		}
		if err := s.DeleteSession(ctx, "c", "s1"); err != nil {
			t.Fatal(err)
		}
		mustEnsure(t, s, "c", "s1")
		if l, err := s.Runs(ctx, "c", "s1"); err != nil || len(l) != 0 {
			t.Errorf("after DeleteSession: records %d, %v", len(l), err)
		}
	})

	t.Run("RunRecordClipping", func(t *testing.T) {
		s, _ := setup(t)
		mustEnsure(t, s, "c", "s1")
		long := func(n limits.CodePoints) string { return strings.Repeat("é", int(n)+10) }
		paths := make([]string, 0, limits.MaxSavedFiles+3)
		paths = append(paths, strings.Repeat("p", int(limits.MaxArtifactNameChars)+1), "", "bad\xffname")
		for i := range limits.MaxSavedFiles {
			paths = append(paths, fmt.Sprintf("f%02d.txt", i))
		}
		paths = append(paths, "one-too-many.txt")
		in := RunRecord{CallID: long(MaxRunCallIDChars), Status: long(MaxRunStatusChars), Description: long(MaxRunDescriptionChars),
			Code: long(MaxRunCodeChars), Stdout: "a\xffb" + long(MaxRunStdoutChars), Stderr: long(MaxRunStderrChars), Summary: long(MaxRunSummaryChars), Files: paths}
		got, err := s.PutRun(ctx, "c", "s1", in)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range []struct {
			name string
			got  string
			max  limits.CodePoints
		}{
			{"call_id", got.CallID, MaxRunCallIDChars}, {"status", got.Status, MaxRunStatusChars}, {"description", got.Description, MaxRunDescriptionChars},
			{"code", got.Code, MaxRunCodeChars}, {"stdout", got.Stdout, MaxRunStdoutChars}, {"stderr", got.Stderr, MaxRunStderrChars}, {"summary", got.Summary, MaxRunSummaryChars},
		} {
			if n := utf8.RuneCountInString(f.got); n != int(f.max) || !utf8.ValidString(f.got) {
				t.Errorf("%s: %d code points (valid %v), want %d", f.name, n, utf8.ValidString(f.got), f.max)
			}
		}
		if !strings.HasPrefix(got.Stdout, "a\uFFFDb") {
			t.Errorf("stdout starts %q, want the invalid byte replaced", got.Stdout[:8])
		}
		if len(got.Files) != limits.MaxSavedFiles || got.Files[0] != "f00.txt" || slices.Contains(got.Files, "one-too-many.txt") {
			t.Errorf("files = %q, want the %d valid ones", got.Files, limits.MaxSavedFiles)
		}
		list, err := s.Runs(ctx, "c", "s1")
		if err != nil || len(list) != 1 {
			t.Fatal(list, err)
		}
		if d := cmp.Diff(got, list[0]); d != "" {
			t.Errorf("Runs differs from what PutRun returned (-put +runs):\n%s", d)
		}
	})

	t.Run("CancelledContext", func(t *testing.T) {
		s, _ := setup(t)
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if _, _, err := s.EnsureSession(cctx, "hed", "a"); err == nil {
			t.Error("EnsureSession with a cancelled context succeeded")
		}
		if ok, _, err := s.Allow(cctx, "k", 10, time.Minute); ok || err == nil {
			t.Errorf("Allow with a cancelled context = %v, %v; want false and an error", ok, err)
		}
	})
}

func TestMemory(t *testing.T) {
	testStore(t, func(t *testing.T, now func() time.Time) Store {
		return NewMemory(testLimits(), now, nil)
	})
}

// testFilesShareTheBudget: attached files count toward the artifact budget with the kept run
// files; room for a file is made by evicting runs' files, never other files, and a run or a
// file that cannot fit is refused. s's ArtifactBytes is 10,000.
func testFilesShareTheBudget(t *testing.T, s Store) {
	ctx := context.Background()
	lim := FileLimits{MaxFiles: 16, MaxSessionBytes: 1 << 20}
	file := func(name string, n int) NewFile { // counts n bytes with its name and overhead
		return NewFile{Name: name, Type: "txt", Data: bytes.Repeat([]byte{'x'}, n-len(name)-runOverhead)}
	}
	run := func(n int) map[string][]byte {
		return map[string][]byte{"f": bytes.Repeat([]byte{'x'}, n-1-runOverhead)}
	}
	mustEnsure(t, s, "c", "s1")
	mustEnsure(t, s, "c", "s2")
	for i, id := range []string{"r1", "r2", "r3"} {
		if err := s.PutArtifacts(ctx, "c", []string{"s1", "s2", "s1"}[i], id, run(3000)); err != nil {
			t.Fatal(err)
		}
	}
	// 9,000 in runs: a 4,001 upload evicts the two oldest runs.
	if _, err := s.PutFiles(ctx, "c", "s2", []NewFile{file("a.txt", 4001)}, lim); err != nil {
		t.Fatal(err)
	}
	for id, want := range map[string]bool{"r1": false, "r2": false, "r3": true} {
		sid := map[string]string{"r1": "s1", "r2": "s2", "r3": "s1"}[id]
		if _, err := s.Artifact(ctx, "c", sid, id, "f"); (err == nil) != want {
			t.Errorf("run %s kept = %v, want %v", id, err == nil, want)
		}
	}
	// Files are never evicted: a file that does not fit beside the others is refused.
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{file("b.txt", 6000)}, lim); !errors.Is(err, ErrArtifactBudget) {
		t.Errorf("an upload past the budget: %v, want ErrArtifactBudget", err)
	}
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{file("b.txt", 5999)}, lim); err != nil {
		t.Errorf("an upload that fits once the runs are gone: %v", err)
	}
	// Now files hold the whole budget: a run's files do not fit.
	if err := s.PutArtifacts(ctx, "c", "s1", "r4", run(2000)); !errors.Is(err, ErrArtifactBudget) {
		t.Errorf("a run with the budget full of files: %v, want ErrArtifactBudget", err)
	}
	if l, _ := s.Files(ctx, "c", "s2"); len(l) != 1 {
		t.Errorf("s2's file went: %+v", l)
	}
	// Deleting a file or a session gives its bytes back.
	if ok, err := s.DeleteFile(ctx, "c", "s1", "b.txt"); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if err := s.PutArtifacts(ctx, "c", "s1", "r5", run(5000)); err != nil {
		t.Errorf("a run after the file was deleted: %v", err)
	}
	if err := s.DeleteSession(ctx, "c", "s2"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{file("c.txt", 5000)}, lim); err != nil {
		t.Errorf("an upload after the session with the other file was deleted: %v", err)
	}
}

// testFilesLiveWithTheSession: attached files live exactly as long as their session. Appends
// keep them past the TTL they were put with; once the session has been idle for its TTL they are
// gone with it (a new session under the same id starts without them), and their bytes are back
// in the budget. s's ArtifactBytes is 10,000, its SessionTTL 24 h, and c its clock.
func testFilesLiveWithTheSession(t *testing.T, s Store, c *clock) {
	ctx := context.Background()
	lim := FileLimits{MaxFiles: 16, MaxSessionBytes: 1 << 20}
	file := func(name string, n int) NewFile { // counts n bytes with its name and overhead
		return NewFile{Name: name, Type: "txt", Data: bytes.Repeat([]byte{'x'}, n-len(name)-runOverhead)}
	}
	names := func(id string) ([]string, error) {
		l, err := s.Files(ctx, "c", id)
		out := make([]string, 0, len(l))
		for _, f := range l {
			out = append(out, f.Name)
		}
		return out, err
	}
	mustEnsure(t, s, "c", "s1")
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{file("a.txt", 6000)}, lim); err != nil {
		t.Fatal(err)
	}
	for range 2 { // 40 h of activity, past the 24 h the files were put with
		c.Advance(20 * time.Hour)
		mustAppend(t, s, "c", "s1", msg("still here"))
	}
	if got, err := names("s1"); err != nil || !slices.Equal(got, []string{"a.txt"}) {
		t.Fatalf("an active session's files after 40 h = %q, %v; want [a.txt]", got, err)
	}
	if f, b, err := s.File(ctx, "c", "s1", "a.txt"); err != nil || f.Bytes != int64(len(b)) || len(b) != 6000-5-runOverhead {
		t.Fatalf("File of an active session after 40 h = %+v, %d bytes, %v", f, len(b), err)
	}

	mustEnsure(t, s, "c", "s2")
	if _, err := s.PutFiles(ctx, "c", "s2", []NewFile{file("b.txt", 3000)}, lim); err != nil {
		t.Fatal(err)
	}
	// Both sessions' files count: 9,000 of 10,000.
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{file("c.txt", 2000)}, lim); !errors.Is(err, ErrArtifactBudget) {
		t.Fatalf("an upload past the budget: %v, want ErrArtifactBudget", err)
	}
	c.Advance(20 * time.Hour)
	mustAppend(t, s, "c", "s1", msg("and here"))
	c.Advance(5 * time.Hour) // s2 idle for 25 h: dead, with its files
	if _, err := s.Files(ctx, "c", "s2"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Files of the idle session: %v, want ErrNotFound", err)
	}
	if _, err := s.PutFiles(ctx, "c", "s1", []NewFile{file("c.txt", 2000)}, lim); err != nil {
		t.Errorf("an upload that fits once the idle session's files are gone: %v", err)
	}
	mustEnsure(t, s, "c", "s2")
	if got, err := names("s2"); err != nil || len(got) != 0 {
		t.Errorf("a new session under the dead one's id has files %q, %v; want none", got, err)
	}
	if _, _, err := s.File(ctx, "c", "s2", "b.txt"); !errors.Is(err, ErrNotFound) {
		t.Errorf("File of the dead session's file: %v, want ErrNotFound", err)
	}
	if got, err := names("s1"); err != nil || !slices.Equal(got, []string{"a.txt", "c.txt"}) {
		t.Errorf("the active session's files = %q, %v; want [a.txt c.txt]", got, err)
	}

	// Left idle, s1 loses its 8,000 too: the whole budget is free again.
	c.Advance(25 * time.Hour)
	mustEnsure(t, s, "c", "s3")
	if _, err := s.PutFiles(ctx, "c", "s3", []NewFile{file("d.txt", 10000)}, lim); err != nil {
		t.Errorf("an upload of the whole budget after every other session died: %v", err)
	}
	if _, err := s.Files(ctx, "c", "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Files of s1 after 25 h idle: %v, want ErrNotFound", err)
	}
}

// testRunsLiveWithTheSession: a session's kept runs (their files and records) live exactly as
// long as the session. Appends keep them past the TTL they were kept with; once the session has
// been idle for its TTL they are gone with it (a new session under the same id starts without
// them, even once it is touched), and their bytes are back in the budget at once: they cost no
// live run its files. s's ArtifactBytes is 10,000, its SessionTTL 24 h, and c its clock. It
// ends with one live run of 2,000 bytes, s4's "r4", in the budget.
func testRunsLiveWithTheSession(t *testing.T, s Store, c *clock) {
	ctx := context.Background()
	run := func(n int) map[string][]byte { // counts n bytes with its path and overhead
		return map[string][]byte{"f": bytes.Repeat([]byte{'x'}, n-1-runOverhead)}
	}
	put := func(id, callID string, n int) {
		t.Helper()
		if err := s.PutArtifacts(ctx, "c", id, callID, run(n)); err != nil {
			t.Fatalf("PutArtifacts(%s, %s): %v", id, callID, err)
		}
		if _, err := s.PutRun(ctx, "c", id, RunRecord{CallID: callID, Status: "ok", Files: []string{"f"}}); err != nil {
			t.Fatalf("PutRun(%s, %s): %v", id, callID, err)
		}
	}
	// serves reports whether id serves callID's file, its paths and its record, failing the
	// test when it serves only some of them.
	serves := func(id, callID string, n int) bool {
		t.Helper()
		b, ferr := s.Artifact(ctx, "c", id, callID, "f")
		paths, perr := s.ArtifactPaths(ctx, "c", id, callID)
		recs, rerr := s.Runs(ctx, "c", id)
		if ferr != nil && !errors.Is(ferr, ErrNotFound) || perr != nil || rerr != nil {
			t.Fatalf("%s/%s: Artifact %v, ArtifactPaths %v, Runs %v", id, callID, ferr, perr, rerr)
		}
		hasRec := slices.ContainsFunc(recs, func(r RunRecord) bool { return r.CallID == callID })
		switch {
		case ferr == nil && len(b) == n-1-runOverhead && slices.Equal(paths, []string{"f"}) && hasRec:
			return true
		case errors.Is(ferr, ErrNotFound) && len(paths) == 0 && !hasRec:
			return false
		}
		t.Fatalf("%s/%s half kept: %d bytes (%v), paths %q, record %v", id, callID, len(b), ferr, paths, hasRec)
		return false
	}

	mustEnsure(t, s, "c", "s1")
	put("s1", "r1", 3000)
	for range 2 { // 40 h of activity, past the 24 h the run was kept with
		c.Advance(20 * time.Hour)
		mustAppend(t, s, "c", "s1", msg("still here"))
	}
	if !serves("s1", "r1", 3000) {
		t.Fatal("an active session's run after 40 h is gone")
	}

	mustEnsure(t, s, "c", "s2")
	put("s2", "r2", 3000)
	c.Advance(20 * time.Hour)
	mustAppend(t, s, "c", "s1", msg("and here"))
	c.Advance(5 * time.Hour) // s2 idle for 25 h: dead, with its run
	if _, err := s.Artifact(ctx, "c", "s2", "r2", "f"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Artifact of the idle session: %v, want ErrNotFound", err)
	}
	// 3,000 live and 6,000 new fit; with the dead run's 3,000 still counted, the oldest run,
	// s1's live one, would be evicted.
	mustEnsure(t, s, "c", "s3")
	put("s3", "r3", 6000)
	if !serves("s1", "r1", 3000) {
		t.Error("a live run was evicted for a dead session's bytes")
	}
	mustEnsure(t, s, "c", "s2")
	mustAppend(t, s, "c", "s2", msg("a new session under the old id"))
	if serves("s2", "r2", 3000) {
		t.Error("a new session under the dead one's id serves its run")
	}

	// Left idle, every run goes: a new session under s1's id starts without r1, and the budget
	// counts only what is kept next.
	c.Advance(25 * time.Hour)
	mustEnsure(t, s, "c", "s1")
	mustAppend(t, s, "c", "s1", msg("back"))
	if serves("s1", "r1", 3000) {
		t.Error("s1's run outlived 25 h of idleness")
	}
	mustEnsure(t, s, "c", "s4")
	put("s4", "r4", 2000)
	if !serves("s4", "r4", 2000) {
		t.Error("the new run is not kept")
	}
}
