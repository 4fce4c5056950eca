package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"time"
)

// Errors callers inspect with errors.Is.
var (
	// ErrNotFound: no such session, or it expired.
	ErrNotFound = errors.New("session not found or expired")
	// ErrNoParkedCall: no parked call with that id (none, another one, expired, or already
	// claimed).
	ErrNoParkedCall = errors.New("no outstanding browser call with that id")
	// ErrBusy: another turn of the session holds its lock.
	ErrBusy = errors.New("session is busy with another turn")
)

// Session is a session's metadata.
type Session struct {
	ID           string    `json:"session_id"`
	Community    string    `json:"community_id"`
	MessageCount int       `json:"message_count"`
	CreatedAt    time.Time `json:"created_at"`
	LastActive   time.Time `json:"last_active"`
}

// ParkedCall is a browser tool call waiting for its result (api.md §6.2).
type ParkedCall struct {
	CallID             string          `json:"call_id"`
	Tool               string          `json:"tool"`
	Args               json.RawMessage `json:"args"`
	RequiresPermission bool            `json:"requires_permission"`
	// RunsBefore is how many browser results this reply already returned.
	RunsBefore int       `json:"runs_before"`
	CreatedAt  time.Time `json:"created_at"`
	// Carry is opaque data the caller keeps with the call until it is claimed or abandoned
	// (the chat keeps the batch's other tool results and the reply's citations here).
	Carry json.RawMessage `json:"carry,omitempty"`
}

// Limits are the store's bounds and lifetimes. A zero or negative field takes its DefaultLimits
// value.
type Limits struct {
	// SessionTTL is how long a session lives after its last activity (24 h).
	SessionTTL time.Duration
	// ParkedTTL is how long a parked call waits for its result (900 s).
	ParkedTTL time.Duration
	// MaxSessionsPerCommunity bounds the in-memory store (1,000); the least recently active
	// session without a live parked call is evicted first. Redis relies on TTLs instead.
	MaxSessionsPerCommunity int
}

// DefaultLimits are the reference's numbers.
func DefaultLimits() Limits {
	return Limits{SessionTTL: 24 * time.Hour, ParkedTTL: 900 * time.Second, MaxSessionsPerCommunity: 1000}
}

// MaxArtifactRuns is how many server-side runs' files one session keeps.
const MaxArtifactRuns = 4

// Store is the state shared by every replica. Every method is safe for concurrent use. Times
// come from the store's clock (injectable in both implementations, for tests) and are kept to
// the millisecond, in UTC.
//
// Errors other than the sentinels above mean the store could not answer (for Redis: it is down,
// slow or refused the command). Nothing is assumed then: the caller fails the request, and a
// failed Allow must be treated as a refusal.
type Store interface {
	// Session returns a session's metadata, or ErrNotFound.
	Session(ctx context.Context, community, id string) (Session, error)
	// EnsureSession returns the session, creating it (with that id) when it does not exist or
	// expired; created says which. It does not count as activity (Append does).
	EnsureSession(ctx context.Context, community, id string) (s Session, created bool, err error)
	// Append adds messages to the session's history and refreshes its TTL. It returns the new
	// message count. ErrNotFound if the session does not exist. Each message must be valid
	// JSON; the store does not cap the count (the caller enforces 300).
	Append(ctx context.Context, community, id string, msgs ...json.RawMessage) (int, error)
	// History returns the session's messages in order.
	History(ctx context.Context, community, id string) ([]json.RawMessage, error)
	// DeleteSession removes a session, its history and its parked call; deleting a missing
	// session is not an error. The turn lock is left to its holder (or its TTL).
	DeleteSession(ctx context.Context, community, id string) error

	// Park records the session's one parked call, replacing any previous one, and sets its
	// CreatedAt to the store's clock (the age Claim judges). Args are kept compacted, nil when
	// empty or null. ErrNotFound if the session does not exist.
	Park(ctx context.Context, community, id string, call ParkedCall) error
	// Claim removes and returns the parked call if its id is callID and it is younger than
	// ParkedTTL, atomically: of two concurrent claims at most one succeeds. Otherwise
	// ErrNoParkedCall (an expired call is removed too, and returned alongside the error so
	// the caller can close it in the history). A call with another id stays parked, expired or
	// not, so the next Abandon can still close it.
	Claim(ctx context.Context, community, id, callID string) (ParkedCall, error)
	// Abandon removes and returns the parked call, if any (a new message moved on), whatever
	// its age; the caller can tell an expired one by CreatedAt.
	Abandon(ctx context.Context, community, id string) (ParkedCall, bool, error)

	// Lock takes the session's turn lock for at most ttl; ErrBusy if it is held. The session
	// need not exist. The returned func releases it (only if still held by this taker) and may
	// be called more than once.
	Lock(ctx context.Context, community, id string, ttl time.Duration) (unlock func(), err error)

	// Allow counts one event against key in a fixed window (aligned to the unix epoch; each
	// window length counts separately) and reports whether it is within limit; when it is
	// not, retryAfter says when the window ends (to the millisecond: round it up for a
	// Retry-After header). On error ok is false.
	Allow(ctx context.Context, key string, limit int, window time.Duration) (ok bool, retryAfter time.Duration, err error)
	// AddCost adds usd (finite, not negative) to the community's totals for the current UTC
	// day and month and returns the new totals.
	AddCost(ctx context.Context, community string, usd float64) (day, month float64, err error)
	// Costs returns the community's totals for the current UTC day and month.
	Costs(ctx context.Context, community string) (day, month float64, err error)

	// PutArtifacts keeps the files one server-side run saved (path → bytes) with the session,
	// for as long as the session lives, and only for its newest MaxArtifactRuns runs (older
	// runs' files are dropped), so a session holds at most that many runs' worth (25 MB each).
	// ErrNotFound if the session does not exist.
	PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error
	// Artifact returns one kept file, or ErrNotFound.
	Artifact(ctx context.Context, community, id, callID, path string) ([]byte, error)

	// Close releases connections.
	Close() error
}

func (l Limits) withDefaults() Limits {
	d := DefaultLimits()
	if l.SessionTTL <= 0 {
		l.SessionTTL = d.SessionTTL
	}
	if l.ParkedTTL <= 0 {
		l.ParkedTTL = d.ParkedTTL
	}
	if l.MaxSessionsPerCommunity <= 0 {
		l.MaxSessionsPerCommunity = d.MaxSessionsPerCommunity
	}
	return l
}

func validCost(usd float64) error {
	if math.IsNaN(usd) || math.IsInf(usd, 0) || usd < 0 {
		return fmt.Errorf("store: cost must be a finite amount of at least 0 USD, got %v", usd)
	}
	return nil
}
