package store

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// interpreterStore is a Store with the interpreter record (the runner's own interface).
type interpreterStore interface {
	Store
	Interpreter(ctx context.Context, community, id string) (string, error)
	SetInterpreter(ctx context.Context, community, id, holder string) error
}

// TestInterpreterRecord: the record of which interpreter holds a session's Python state, in
// both stores: none for a new session, set and cleared, bounded, gone with the session (and
// not made up for a missing one).
func TestInterpreterRecord(t *testing.T) {
	stores := map[string]func(t *testing.T) interpreterStore{
		"memory": func(t *testing.T) interpreterStore {
			return NewMemory(testLimits(), newClock(testStart).Now, nil)
		},
		"redis": func(t *testing.T) interpreterStore {
			s, _ := newTestRedis(t, newClock(testStart).Now, testLimits())
			return s
		},
	}
	ctx := context.Background()
	for name, open := range stores {
		t.Run(name, func(t *testing.T) {
			s := open(t)
			if _, err := s.Interpreter(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
				t.Errorf("Interpreter of a missing session: %v, want ErrNotFound", err)
			}
			if err := s.SetInterpreter(ctx, "hed", "a", "x"); !errors.Is(err, ErrNotFound) {
				t.Errorf("SetInterpreter of a missing session: %v, want ErrNotFound", err)
			}
			if _, err := s.Session(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
				t.Errorf("SetInterpreter made a session up: %v", err)
			}
			mustEnsure(t, s, "hed", "a")
			mustEnsure(t, s, "bids", "a")
			steps := []struct{ set, want string }{{"", ""}, {"r1.0001", "r1.0001"}, {"r2.0007", "r2.0007"}, {"", ""}, {"r3", "r3"}}
			for _, st := range steps {
				if st.set != "" || st.want == "" {
					if err := s.SetInterpreter(ctx, "hed", "a", st.set); err != nil {
						t.Fatal(err)
					}
				}
				if got, err := s.Interpreter(ctx, "hed", "a"); err != nil || got != st.want {
					t.Errorf("after SetInterpreter(%q): %q, %v; want %q", st.set, got, err, st.want)
				}
			}
			if got, err := s.Interpreter(ctx, "bids", "a"); err != nil || got != "" {
				t.Errorf("another community's session: %q, %v", got, err)
			}
			if err := s.SetInterpreter(ctx, "hed", "a", strings.Repeat("x", MaxInterpreterChars+1)); err == nil {
				t.Error("an oversized record was accepted")
			}
			if got, _ := s.Interpreter(ctx, "hed", "a"); got != "r3" {
				t.Errorf("a refused record changed it to %q", got)
			}
			before, err := s.Session(ctx, "hed", "a")
			if err != nil {
				t.Fatal(err)
			}
			if err := s.SetInterpreter(ctx, "hed", "a", "r4"); err != nil {
				t.Fatal(err)
			}
			if after, _ := s.Session(ctx, "hed", "a"); !after.LastActive.Equal(before.LastActive) {
				t.Errorf("SetInterpreter counted as activity: %v → %v", before.LastActive, after.LastActive)
			}
			if err := s.DeleteSession(ctx, "hed", "a"); err != nil {
				t.Fatal(err)
			}
			mustEnsure(t, s, "hed", "a")
			if got, err := s.Interpreter(ctx, "hed", "a"); err != nil || got != "" {
				t.Errorf("a new session under the same id: %q, %v; want no record", got, err)
			}
		})
	}
}

// TestInterpreterRecordExpires: in memory the record goes when the session expires.
func TestInterpreterRecordExpires(t *testing.T) {
	c := newClock(testStart)
	s := NewMemory(testLimits(), c.Now, nil)
	ctx := context.Background()
	mustEnsure(t, s, "hed", "a")
	if err := s.SetInterpreter(ctx, "hed", "a", "r1"); err != nil {
		t.Fatal(err)
	}
	c.Advance(testLimits().SessionTTL + time.Second)
	if _, err := s.Interpreter(ctx, "hed", "a"); !errors.Is(err, ErrNotFound) {
		t.Errorf("after the session expired: %v, want ErrNotFound", err)
	}
}
