package chat

import (
	"context"
	"testing"

	"github.com/osc-assistant/assistant/config"
	"github.com/osc-assistant/assistant/store"
)

// crowdedStore lets another reader start a session right after each EnsureSession, as happens
// when a community's in-memory store is at its cap and new readers keep arriving.
type crowdedStore struct {
	*store.Memory
	n int
}

func (s *crowdedStore) EnsureSession(ctx context.Context, c, id string) (store.Session, bool, error) {
	sess, created, err := s.Memory.EnsureSession(ctx, c, id)
	s.n++
	_, _, _ = s.Memory.EnsureSession(ctx, c, "newcomer-"+string(rune('a'+s.n)))
	return sess, created, err
}

// TestChatSurvivesEvictionPressure: a chat whose session another reader's new session would
// evict still gets its answer, because its session is locked before it is made sure of.
func TestChatSurvivesEvictionPressure(t *testing.T) {
	l := store.DefaultLimits()
	l.MaxSessionsPerCommunity = 1
	st := &crowdedStore{Memory: store.NewMemory(l, nil, nil)}
	e := testEngine(st, nil)
	sink := &recordSink{}
	c := &config.Community{ID: "bids"}
	if err := e.Chat(context.Background(), Turn{Community: c, SessionID: "mine", OriginOK: true}, "hello", sink); err != nil {
		t.Fatalf("Chat: %v", err)
	}
	if last := sink.events[len(sink.events)-1]; last["event"] != "done" {
		t.Errorf("last event %v, want done", last)
	}
}
