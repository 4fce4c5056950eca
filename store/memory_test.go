package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestMemoryEvictionPrefersUnparked(t *testing.T) {
	ctx := context.Background()
	c := newClock(testStart)
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 3
	m := NewMemory(l, c.Now, nil)
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

	// When every session holds a parked call, the longest parked goes.
	mustPark(t, m, "hed", "s3", call("c3"))
	mustPark(t, m, "hed", "s5", call("c5"))
	mustEnsure(t, m, "hed", "s6")
	if exists("s1") || !exists("s3") || !exists("s5") {
		t.Fatalf("after s6: want s1 evicted (all parked, s1 parked first), got s1=%v s3=%v s5=%v",
			exists("s1"), exists("s3"), exists("s5"))
	}

	// An expired parked call does not protect its session.
	mustPark(t, m, "hed", "s6", call("c6"))
	c.Advance(l.ParkedTTL)
	if _, err := m.Claim(ctx, "hed", "s3", "c3", nil, nil); !errors.Is(err, ErrNoParkedCall) {
		t.Fatalf("Claim of an expired call: %v", err)
	}
	mustPark(t, m, "hed", "s3", call("c3b")) // s3 holds a live call; s5's and s6's expired
	mustEnsure(t, m, "hed", "s7")
	if exists("s5") || !exists("s3") || !exists("s6") {
		t.Fatalf("after s7: want s5 evicted (its call expired first), got s3=%v s5=%v s6=%v",
			exists("s3"), exists("s5"), exists("s6"))
	}
	if _, err := m.Claim(ctx, "hed", "s3", "c3b", nil, nil); err != nil {
		t.Errorf("Claim on a surviving session: %v", err)
	}
	// s6 keeps its expired call for Abandon to close.
	if ok, err := m.Abandon(ctx, "hed", "s6", "c6", msg("closed")); !ok || err != nil {
		t.Errorf("Abandon of s6's expired call = %v, %v", ok, err)
	}
}

// A session in the middle of a turn is never evicted (its turn would end with an error and lose
// what it wrote); when every session is, new ones are refused, and every eviction is logged.
func TestMemoryNeverEvictsLocked(t *testing.T) {
	ctx := context.Background()
	c := newClock(testStart)
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 3
	var logs bytes.Buffer
	m := NewMemory(l, c.Now, slog.New(slog.NewJSONHandler(&logs, nil)))
	for _, id := range []string{"s1", "s2", "s3"} {
		mustEnsure(t, m, "hed", id)
		c.Advance(time.Second)
	}
	unlock1, err := m.Lock(ctx, "hed", "s1", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Lock(ctx, "hed", "s2", time.Minute); err != nil {
		t.Fatal(err)
	}
	mustEnsure(t, m, "hed", "s4") // s1 and s2 are locked: s3 goes
	for id, want := range map[string]bool{"s1": true, "s2": true, "s3": false, "s4": true} {
		if _, err := m.Session(ctx, "hed", id); (err == nil) != want {
			t.Errorf("after s4: %s exists = %v, want %v", id, err == nil, want)
		}
	}
	if _, err := m.Lock(ctx, "hed", "s4", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, _, err := m.EnsureSession(ctx, "hed", "s5"); !errors.Is(err, ErrFull) {
		t.Fatalf("every session locked: EnsureSession = %v, want ErrFull", err)
	}
	unlock1()
	mustEnsure(t, m, "hed", "s5") // s1's turn ended: it can go now
	if _, err := m.Session(ctx, "hed", "s1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("s1 after its lock was released: %v, want evicted", err)
	}
	n := strings.Count(logs.String(), `"msg":"session evicted"`)
	if n != 2 || !strings.Contains(logs.String(), `"community":"hed"`) {
		t.Errorf("logged %d evictions, want 2:\n%s", n, logs.String())
	}
	if strings.Contains(logs.String(), `"s1"`) || strings.Contains(logs.String(), `"s3"`) {
		t.Errorf("the log names a session id:\n%s", logs.String())
	}
}

// The kept files of all sessions, of all communities, stay within the process's budget; the
// oldest runs go first, and a run bigger than the budget is refused whole.
func TestMemoryArtifactBudget(t *testing.T) {
	ctx := context.Background()
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	m := NewMemory(l, nil, nil)
	put := func(c, id, call string, n int) error {
		return m.PutArtifacts(ctx, c, id, call, map[string][]byte{"f": bytes.Repeat([]byte{'x'}, n-1-runOverhead)})
	}
	for i, sid := range []string{"a", "b", "c"} {
		mustEnsure(t, m, fmt.Sprint("com", i%2), sid)
	}
	for i, sid := range []string{"a", "b", "c"} {
		if err := put(fmt.Sprint("com", i%2), sid, "r1", 3000); err != nil {
			t.Fatal(err)
		}
	}
	if err := put("com0", "a", "r2", 3000); err != nil { // 12000 bytes: a's r1 goes
		t.Fatal(err)
	}
	if m.runBytes != 9000 {
		t.Errorf("kept %d bytes, want 9000", m.runBytes)
	}
	if _, err := m.Artifact(ctx, "com0", "a", "r1", "f"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the oldest run survived the budget: %v", err)
	}
	for _, k := range [][3]string{{"com1", "b", "r1"}, {"com0", "c", "r1"}, {"com0", "a", "r2"}} {
		if _, err := m.Artifact(ctx, k[0], k[1], k[2], "f"); err != nil {
			t.Errorf("%v: %v", k, err)
		}
	}
	if err := put("com1", "b", "big", 10001); !errors.Is(err, ErrArtifactBudget) {
		t.Errorf("a run over the whole budget: %v, want ErrArtifactBudget", err)
	}
	if _, err := m.Artifact(ctx, "com1", "b", "r1", "f"); err != nil {
		t.Errorf("a refused run evicted others: %v", err)
	}
	// Files leave the budget with their session.
	if err := m.DeleteSession(ctx, "com0", "a"); err != nil {
		t.Fatal(err)
	}
	if m.runBytes != 6000 {
		t.Errorf("after deleting a session: %d bytes kept, want 6000", m.runBytes)
	}
}

func TestMemoryEvictsExpiredFirst(t *testing.T) {
	c := newClock(testStart)
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 2
	m := NewMemory(l, c.Now, nil)
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
	m := NewMemory(DefaultLimits(), c.Now, nil)
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
	m := NewMemory(Limits{}, nil, nil)
	if m.limits != DefaultLimits() {
		t.Errorf("limits = %+v, want %+v", m.limits, DefaultLimits())
	}
	if _, _, err := m.EnsureSession(context.Background(), "hed", "a"); err != nil {
		t.Errorf("EnsureSession with the real clock: %v", err)
	}
	if _, err := m.Claim(context.Background(), "hed", "a", "x", nil, nil); !errors.Is(err, ErrNoParkedCall) {
		t.Errorf("Claim: %v", err)
	}
}

// TestMemoryCapOfOne: evicting a community's only session must not lose the new one.
func TestMemoryCapOfOne(t *testing.T) {
	l := DefaultLimits()
	l.MaxSessionsPerCommunity = 1
	m := NewMemory(l, nil, nil)
	mustEnsure(t, m, "hed", "a")
	mustEnsure(t, m, "hed", "b")
	if _, err := m.Session(context.Background(), "hed", "b"); err != nil {
		t.Errorf("the new session: %v", err)
	}
	if _, err := m.Session(context.Background(), "hed", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("the evicted session: %v", err)
	}
}

func TestMemoryFilesShareTheBudget(t *testing.T) {
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	testFilesShareTheBudget(t, NewMemory(l, nil, nil))
}

func TestMemoryFilesLiveWithTheSession(t *testing.T) {
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	c := newClock(testStart)
	testFilesLiveWithTheSession(t, NewMemory(l, c.Now, nil), c)
}

func TestMemoryRunsLiveWithTheSession(t *testing.T) {
	l := DefaultLimits()
	l.ArtifactBytes = 10000
	c := newClock(testStart)
	m := NewMemory(l, c.Now, nil)
	testRunsLiveWithTheSession(t, m, c)
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.runBytes != 2000 || m.runs.Len() != 1 {
		t.Errorf("the budget counts %d bytes in %d runs, want s4's 2000 in 1", m.runBytes, m.runs.Len())
	}
}
