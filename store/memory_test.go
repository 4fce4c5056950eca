package store

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

func TestMemoryEvictionPrefersUnparked(t *testing.T) {
	ctx := context.Background()
	c := newClock(testStart)
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 3
	m := NewMemory(l, c.Now)
	exists := func(id string) bool {
		_, err := m.Session(ctx, "hed", id)
		return err == nil
	}
	for _, id := range []string{"s1", "s2", "s3"} {
		mustEnsure(t, m, "hed", id)
		c.Advance(time.Second)
	}
	mustPark(t, m, "hed", "s1", call("c1")) // s1: oldest, but parked
	mustEnsure(t, m, "eeglab", "other")     // other communities do not count
	mustEnsure(t, m, "hed", "s4")
	if !exists("s1") || exists("s2") || !exists("s3") || !exists("s4") {
		t.Fatalf("after s4: want s2 evicted (oldest without a parked call), got s1=%v s2=%v s3=%v s4=%v",
			exists("s1"), exists("s2"), exists("s3"), exists("s4"))
	}

	// Activity moves a session to the back of the queue.
	c.Advance(time.Second)
	mustAppend(t, m, "hed", "s3", msg("x"))
	mustEnsure(t, m, "hed", "s5")
	if exists("s4") || !exists("s3") || !exists("s1") {
		t.Fatalf("after s5: want s4 evicted (s3 was active since), got s1=%v s3=%v s4=%v",
			exists("s1"), exists("s3"), exists("s4"))
	}

	// When every session holds a parked call, the least recently active goes.
	mustPark(t, m, "hed", "s3", call("c3"))
	mustPark(t, m, "hed", "s5", call("c5"))
	mustEnsure(t, m, "hed", "s6")
	if exists("s1") || !exists("s3") || !exists("s5") {
		t.Fatalf("after s6: want s1 evicted (all parked, s1 oldest), got s1=%v s3=%v s5=%v",
			exists("s1"), exists("s3"), exists("s5"))
	}

	// An expired parked call does not protect its session.
	mustPark(t, m, "hed", "s6", call("c6"))
	c.Advance(l.ParkedTTL)
	mustPark(t, m, "hed", "s3", call("c3b")) // s3 and s6 hold live calls, s5's expired
	mustEnsure(t, m, "hed", "s7")
	if exists("s5") || !exists("s3") || !exists("s6") {
		t.Fatalf("after s7: want s5 evicted (its call expired), got s3=%v s5=%v s6=%v",
			exists("s3"), exists("s5"), exists("s6"))
	}
	if _, err := m.Claim(ctx, "hed", "s3", "c3b"); err != nil {
		t.Errorf("Claim on a surviving session: %v", err)
	}
}

func TestMemoryEvictsExpiredFirst(t *testing.T) {
	c := newClock(testStart)
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 2
	m := NewMemory(l, c.Now)
	mustEnsure(t, m, "hed", "old")
	c.Advance(l.SessionTTL - time.Minute)
	mustEnsure(t, m, "hed", "young")
	c.Advance(2 * time.Minute) // "old" expired, not yet swept
	mustEnsure(t, m, "hed", "new")
	if _, err := m.Session(context.Background(), "hed", "young"); err != nil {
		t.Errorf("a live session was evicted while an expired one was there: %v", err)
	}
}

func TestMemoryPrunes(t *testing.T) {
	ctx := context.Background()
	c := newClock(testStart)
	m := NewMemory(DefaultLimits(), c.Now)
	for i := range 1000 {
		ip := fmt.Sprintf("chat:10.0.%d.%d", i/256, i%256)
		if _, _, err := m.Allow(ctx, ip, 10, time.Minute); err != nil {
			t.Fatal(err)
		}
		if _, _, err := m.Allow(ctx, ip, 20, time.Hour); err != nil {
			t.Fatal(err)
		}
		mustEnsure(t, m, fmt.Sprint("c", i%3), fmt.Sprint("s", i))
		if _, err := m.Lock(ctx, "hed", fmt.Sprint("s", i), time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := m.AddCost(ctx, "hed", 1); err != nil {
		t.Fatal(err)
	}
	size := func() (sessions, windows, locks, costs int) {
		m.mu.Lock()
		defer m.mu.Unlock()
		for _, com := range m.communities {
			sessions += len(com.sessions)
		}
		return sessions, len(m.windows), len(m.locks), len(m.costs)
	}
	if s, w, l, co := size(); s != 1000 || w != 2000 || l != 1000 || co != 2 {
		t.Fatalf("before: %d sessions, %d windows, %d locks, %d costs", s, w, l, co)
	}
	c.Advance(30 * time.Minute) // minute windows and locks ended; hour windows end at 23:00
	m.Allow(ctx, "trigger", 1, time.Second)
	if s, w, l, _ := size(); s != 1000 || w != 1001 || l != 0 {
		t.Errorf("after 30 min: %d sessions, %d windows, %d locks; want 1000, 1001, 0", s, w, l)
	}
	c.Advance(DefaultLimits().SessionTTL)
	m.Allow(ctx, "trigger", 1, time.Second)
	if s, w, l, co := size(); s != 0 || w != 1 || l != 0 || co != 2 {
		t.Errorf("after a day: %d sessions, %d windows, %d locks, %d costs; want 0, 1, 0, 2", s, w, l, co)
	}
	c.Advance(costDayTTL)
	m.Allow(ctx, "trigger", 1, time.Second)
	if _, _, _, co := size(); co != 1 {
		t.Errorf("after 48 h: %d cost totals, want 1 (the month)", co)
	}
	c.Advance(costMonthTTL)
	m.Allow(ctx, "trigger", 1, time.Second)
	if _, _, _, co := size(); co != 0 {
		t.Errorf("after 40 days: %d cost totals, want 0", co)
	}
	m.mu.Lock()
	n := len(m.communities)
	m.mu.Unlock()
	if n != 0 {
		t.Errorf("%d empty communities kept", n)
	}
}

func TestMemoryDefaults(t *testing.T) {
	m := NewMemory(Limits{}, nil)
	if m.limits != DefaultLimits() {
		t.Errorf("limits = %+v, want %+v", m.limits, DefaultLimits())
	}
	if _, _, err := m.EnsureSession(context.Background(), "hed", "a"); err != nil {
		t.Errorf("EnsureSession with the real clock: %v", err)
	}
	if _, err := m.Claim(context.Background(), "hed", "a", "x"); !errors.Is(err, ErrNoParkedCall) {
		t.Errorf("Claim: %v", err)
	}
}
