package store

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Which interpreter holds a live session's Python state. A session's server-side runs go to
// one live interpreter, on one replica; with several replicas and no affinity, the next run
// may land on another. The chat's runner records here the interpreter that holds the state
// after each run (an id the sandbox draws when the interpreter starts, so it names the replica
// and the generation at once), and gives the record to the next run, wherever it runs: one that
// does not find that interpreter alive starts a new one and says that the names of earlier runs
// are gone, as after a restart on one replica. The record lives and expires with the session;
// writing it is not activity.

// MaxInterpreterChars bounds a record.
const MaxInterpreterChars = 64

// Interpreter returns the session's record ("" when none was set), or ErrNotFound.
func (m *Memory) Interpreter(ctx context.Context, community, id string) (string, error) {
	return readLive(ctx, m, community, id, func(s *memSession) (string, error) { return s.interpreter, nil })
}

// SetInterpreter records holder for the session ("" clears it); ErrNotFound when there is no
// session.
func (m *Memory) SetInterpreter(ctx context.Context, community, id, holder string) error {
	if err := checkInterpreter(holder); err != nil {
		return err
	}
	// readLive holds the store's lock while f runs, so f may write.
	_, err := readLive(ctx, m, community, id, func(s *memSession) (struct{}, error) {
		s.interpreter = holder
		return struct{}{}, nil
	})
	return err
}

// Interpreter returns the session's record ("" when none was set), or ErrNotFound.
func (r *Redis) Interpreter(ctx context.Context, community, id string) (string, error) {
	v, err := r.c.HMGet(ctx, r.keys(community, id).meta, "created", "interp").Result()
	if err != nil {
		return "", wrap("interpreter", err)
	}
	if len(v) != 2 {
		return "", wrap("interpreter", fmt.Errorf("reply has %d items, want 2", len(v)))
	}
	if v[0] == nil {
		return "", ErrNotFound
	}
	holder, _ := v[1].(string)
	if len(holder) > MaxInterpreterChars {
		return "", nil // not ours to trust: as if none
	}
	return holder, nil
}

// setInterpreterScript writes the record into a session's metadata only while it exists, so it
// never makes a session up (nor outlives one: it goes with the hash).
var setInterpreterScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'interp', ARGV[1])
return 1
`)

// SetInterpreter records holder for the session ("" clears it); ErrNotFound when there is no
// session.
func (r *Redis) SetInterpreter(ctx context.Context, community, id, holder string) error {
	if err := checkInterpreter(holder); err != nil {
		return err
	}
	n, err := setInterpreterScript.Run(ctx, r.c, []string{r.keys(community, id).meta}, holder).Int()
	if err != nil {
		return wrap("set interpreter", err)
	}
	if n == 0 {
		return ErrNotFound
	}
	return nil
}

func checkInterpreter(holder string) error {
	if len(holder) > MaxInterpreterChars {
		return fmt.Errorf("store: an interpreter record of %d bytes, over %d", len(holder), MaxInterpreterChars)
	}
	return nil
}

// Both stores keep the records (the chat's runner asserts it on the Store it is given).
var (
	_ interface {
		Interpreter(ctx context.Context, community, id string) (string, error)
		SetInterpreter(ctx context.Context, community, id, holder string) error
	} = (*Memory)(nil)
	_ interface {
		Interpreter(ctx context.Context, community, id string) (string, error)
		SetInterpreter(ctx context.Context, community, id, holder string) error
	} = (*Redis)(nil)
)
