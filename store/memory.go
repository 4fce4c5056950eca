package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"
)

// pruneEvery is how often (by the store's clock) Memory sweeps out expired sessions, locks,
// rate-limit windows and cost totals. Between sweeps an expired entry is still dropped when it
// is touched.
const pruneEvery = time.Minute

// Memory is the in-process Store: one process, nothing survives a restart.
//
// Sessions are capped per community (Limits.MaxSessionsPerCommunity). Creating a session at the
// cap evicts the least recently active session that has no live parked call; only when every
// session holds one does the least recently active of all go. Memory stays bounded: expired
// sessions, released or expired locks, ended rate-limit windows and old cost totals are swept
// at most every minute of the store's clock, and dropped on access in between.
//
// All times come from the clock given to NewMemory, at millisecond precision in UTC, the same
// precision the Redis store keeps.
type Memory struct {
	limits Limits
	now    func() time.Time

	mu          sync.Mutex
	communities map[string]*memCommunity
	locks       map[sessionKey]memLock
	windows     map[windowKey]*memWindow
	costs       map[costKey]memCost
	seq         uint64 // activity counter: orders sessions by recency when times are equal
	lockSeq     uint64
	nextPrune   int64 // unix ms
}

type sessionKey struct{ community, id string }

type windowKey struct {
	key    string
	window int64 // ms
}

type costKey struct{ community, period string }

type memCommunity struct {
	sessions map[string]*memSession
}

type memSession struct {
	created, active int64 // unix ms
	seq             uint64
	history         []json.RawMessage
	park            *memPark
	artifacts       map[string]map[string][]byte // call id → path → bytes
	artifactOrder   []string                     // call ids, oldest first
}

type memPark struct {
	call ParkedCall // CreatedAt == at
	at   int64      // unix ms
}

type memLock struct {
	token   uint64
	expires int64 // unix ms
}

type memWindow struct {
	start int64 // unix ms
	n     int
}

type memCost struct {
	usd     float64
	expires int64 // unix ms
}

// NewMemory returns an empty in-process store. A zero or negative field of limits takes its
// DefaultLimits value; now is the clock (time.Now when nil).
func NewMemory(limits Limits, now func() time.Time) *Memory {
	if now == nil {
		now = time.Now
	}
	return &Memory{
		limits:      limits.withDefaults(),
		now:         now,
		communities: make(map[string]*memCommunity),
		locks:       make(map[sessionKey]memLock),
		windows:     make(map[windowKey]*memWindow),
		costs:       make(map[costKey]memCost),
	}
}

var _ Store = (*Memory)(nil)

// clock returns the current time in unix milliseconds and runs a sweep when one is due. The
// caller holds m.mu.
func (m *Memory) clock() int64 {
	now := m.now().UnixMilli()
	if now >= m.nextPrune {
		m.prune(now)
		m.nextPrune = now + pruneEvery.Milliseconds()
	}
	return now
}

// prune drops everything that has expired. The caller holds m.mu.
func (m *Memory) prune(now int64) {
	for c, com := range m.communities {
		for id, s := range com.sessions {
			if !m.alive(s, now) {
				delete(com.sessions, id)
			}
		}
		if len(com.sessions) == 0 {
			delete(m.communities, c)
		}
	}
	for k, l := range m.locks {
		if l.expires <= now {
			delete(m.locks, k)
		}
	}
	for k, w := range m.windows {
		if w.start+k.window <= now {
			delete(m.windows, k)
		}
	}
	for k, c := range m.costs {
		if c.expires <= now {
			delete(m.costs, k)
		}
	}
}

func (m *Memory) alive(s *memSession, now int64) bool {
	return s.active+m.limits.SessionTTL.Milliseconds() > now
}

func (m *Memory) parkExpired(p *memPark, now int64) bool {
	return now-p.at >= m.limits.ParkedTTL.Milliseconds()
}

// lookup returns the live session, dropping it when it has expired. The caller holds m.mu.
func (m *Memory) lookup(community, id string, now int64) *memSession {
	com := m.communities[community]
	if com == nil {
		return nil
	}
	s := com.sessions[id]
	if s == nil {
		return nil
	}
	if !m.alive(s, now) {
		m.remove(community, id)
		return nil
	}
	return s
}

func (m *Memory) remove(community, id string) {
	com := m.communities[community]
	if com == nil {
		return
	}
	delete(com.sessions, id)
	if len(com.sessions) == 0 {
		delete(m.communities, community)
	}
}

func (m *Memory) touch(s *memSession, now int64) {
	m.seq++
	s.seq = m.seq
	s.active = now
}

func (s *memSession) meta(community, id string) Session {
	return Session{
		ID:           id,
		Community:    community,
		MessageCount: len(s.history),
		CreatedAt:    msTime(s.created),
		LastActive:   msTime(s.active),
	}
}

// Session returns a session's metadata, or ErrNotFound.
func (m *Memory) Session(ctx context.Context, community, id string) (Session, error) {
	if err := ctx.Err(); err != nil {
		return Session{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil {
		return Session{}, ErrNotFound
	}
	return s.meta(community, id), nil
}

// EnsureSession returns the live session or creates it, evicting one at the community's cap.
// It does not count as activity.
func (m *Memory) EnsureSession(ctx context.Context, community, id string) (Session, bool, error) {
	if err := ctx.Err(); err != nil {
		return Session{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	if s := m.lookup(community, id, now); s != nil {
		return s.meta(community, id), false, nil
	}
	com := m.communities[community]
	if com == nil {
		com = &memCommunity{sessions: make(map[string]*memSession)}
		m.communities[community] = com
	}
	for len(com.sessions) >= m.limits.MaxSessionsPerCommunity {
		m.evict(com, now)
	}
	s := &memSession{created: now}
	m.touch(s, now)
	com.sessions[id] = s
	return s.meta(community, id), true, nil
}

// evict removes one session of com: an expired one if any, else the least recently active
// one without a live parked call, else the least recently active one. The caller holds m.mu.
func (m *Memory) evict(com *memCommunity, now int64) {
	var (
		victim, victimParked     string
		oldest, oldestParked     uint64
		haveVictim, haveParkedVi bool
	)
	for id, s := range com.sessions {
		if !m.alive(s, now) {
			delete(com.sessions, id)
			return
		}
		if s.park != nil && !m.parkExpired(s.park, now) {
			if !haveParkedVi || s.seq < oldestParked {
				victimParked, oldestParked, haveParkedVi = id, s.seq, true
			}
			continue
		}
		if !haveVictim || s.seq < oldest {
			victim, oldest, haveVictim = id, s.seq, true
		}
	}
	switch {
	case haveVictim:
		delete(com.sessions, victim)
	case haveParkedVi:
		delete(com.sessions, victimParked)
	}
}

// Append adds msgs (each must be valid JSON) to the history and refreshes the session's TTL.
func (m *Memory) Append(ctx context.Context, community, id string, msgs ...json.RawMessage) (int, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	if err := validMessages(msgs); err != nil {
		return 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.lookup(community, id, now)
	if s == nil {
		return 0, ErrNotFound
	}
	for _, msg := range msgs {
		s.history = append(s.history, bytes.Clone(msg))
	}
	m.touch(s, now)
	return len(s.history), nil
}

func validMessages(msgs []json.RawMessage) error {
	for i, msg := range msgs {
		if !json.Valid(msg) {
			return fmt.Errorf("store: message %d is not valid JSON", i)
		}
	}
	return nil
}

// History returns copies of the session's messages in order.
func (m *Memory) History(ctx context.Context, community, id string) ([]json.RawMessage, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil {
		return nil, ErrNotFound
	}
	out := make([]json.RawMessage, len(s.history))
	for i, msg := range s.history {
		out[i] = bytes.Clone(msg)
	}
	return out, nil
}

// PutArtifacts keeps a run's files with the session.
func (m *Memory) PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil {
		return ErrNotFound
	}
	if s.artifacts == nil {
		s.artifacts = map[string]map[string][]byte{}
	}
	kept := make(map[string][]byte, len(files))
	for p, b := range files {
		kept[p] = bytes.Clone(b)
	}
	if _, again := s.artifacts[callID]; !again {
		s.artifactOrder = append(s.artifactOrder, callID)
	}
	s.artifacts[callID] = kept
	for len(s.artifactOrder) > MaxArtifactRuns {
		delete(s.artifacts, s.artifactOrder[0])
		s.artifactOrder = s.artifactOrder[1:]
	}
	return nil
}

// Artifact returns one kept file.
func (m *Memory) Artifact(ctx context.Context, community, id, callID, path string) ([]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil {
		return nil, ErrNotFound
	}
	b, ok := s.artifacts[callID][path]
	if !ok {
		return nil, ErrNotFound
	}
	return bytes.Clone(b), nil
}

// DeleteSession removes the session, its history and its parked call. The turn lock is left
// to its holder (or its TTL).
func (m *Memory) DeleteSession(ctx context.Context, community, id string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.clock()
	m.remove(community, id)
	return nil
}

// Park records the session's parked call, stamped with the store's clock.
func (m *Memory) Park(ctx context.Context, community, id string, call ParkedCall) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	args, err := normalizeArgs(call.Args)
	if err != nil {
		return err
	}
	call.Args = args
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.lookup(community, id, now)
	if s == nil {
		return ErrNotFound
	}
	call.CreatedAt = msTime(now)
	s.park = &memPark{call: call, at: now}
	return nil
}

// normalizeArgs returns args compacted (the form the Redis store keeps), nil when empty or
// JSON null, or an error when it is not valid JSON.
func normalizeArgs(args json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(args)) == 0 {
		return nil, nil
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, fmt.Errorf("store: parked call args are not valid JSON: %w", err)
	}
	if buf.String() == "null" {
		return nil, nil
	}
	return buf.Bytes(), nil
}

// Claim removes and returns the parked call if its id is callID and it has not expired. A
// call with another id is left parked; an expired one is removed and returned with
// ErrNoParkedCall.
func (m *Memory) Claim(ctx context.Context, community, id, callID string) (ParkedCall, error) {
	if err := ctx.Err(); err != nil {
		return ParkedCall{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.lookup(community, id, now)
	if s == nil || s.park == nil || s.park.call.CallID != callID {
		return ParkedCall{}, ErrNoParkedCall
	}
	p := s.park
	s.park = nil
	if m.parkExpired(p, now) {
		return p.call, ErrNoParkedCall
	}
	return p.call, nil
}

// Abandon removes and returns the parked call, expired or not.
func (m *Memory) Abandon(ctx context.Context, community, id string) (ParkedCall, bool, error) {
	if err := ctx.Err(); err != nil {
		return ParkedCall{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil || s.park == nil {
		return ParkedCall{}, false, nil
	}
	p := s.park
	s.park = nil
	return p.call, true, nil
}

// Lock takes the session's turn lock for ttl (at least a millisecond). The session need not
// exist. The returned func is idempotent and releases only this taker's lock.
func (m *Memory) Lock(ctx context.Context, community, id string, ttl time.Duration) (func(), error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("store: lock ttl %v is under a millisecond", ttl)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	k := sessionKey{community, id}
	if l, ok := m.locks[k]; ok && l.expires > now {
		return nil, ErrBusy
	}
	m.lockSeq++
	token := m.lockSeq
	m.locks[k] = memLock{token: token, expires: now + ttl.Milliseconds()}
	var once sync.Once
	return func() {
		once.Do(func() {
			m.mu.Lock()
			defer m.mu.Unlock()
			if l, ok := m.locks[k]; ok && l.token == token {
				delete(m.locks, k)
			}
		})
	}, nil
}

// Allow counts one event against key in the fixed window (aligned to the unix epoch) that
// contains now. Windows of different lengths are counted separately.
func (m *Memory) Allow(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return false, 0, err
	}
	w := window.Milliseconds()
	if w < 1 {
		return false, 0, fmt.Errorf("store: rate window %v is under a millisecond", window)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	start := now - now%w
	k := windowKey{key, w}
	cur := m.windows[k]
	if cur == nil || cur.start != start {
		cur = &memWindow{start: start}
		m.windows[k] = cur
	}
	cur.n++
	if cur.n > limit {
		return false, time.Duration(start+w-now) * time.Millisecond, nil
	}
	return true, 0, nil
}

// Cost totals are kept as long as the Redis store keeps them.
const (
	costDayTTL   = 48 * time.Hour
	costMonthTTL = 40 * 24 * time.Hour
)

func costPeriods(now time.Time) (day, month string) {
	u := now.UTC()
	return u.Format("2006-01-02"), u.Format("2006-01")
}

// AddCost adds usd (finite, not negative) to the community's totals for the current UTC day
// and month.
func (m *Memory) AddCost(ctx context.Context, community string, usd float64) (float64, float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	if err := validCost(usd); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	d, mo := costPeriods(msTime(now))
	dk, mk := costKey{community, d}, costKey{community, mo}
	dc, mc := m.costs[dk], m.costs[mk]
	dc.usd += usd
	dc.expires = now + costDayTTL.Milliseconds()
	mc.usd += usd
	mc.expires = now + costMonthTTL.Milliseconds()
	m.costs[dk], m.costs[mk] = dc, mc
	return dc.usd, mc.usd, nil
}

// Costs returns the community's totals for the current UTC day and month.
func (m *Memory) Costs(ctx context.Context, community string) (float64, float64, error) {
	if err := ctx.Err(); err != nil {
		return 0, 0, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	d, mo := costPeriods(msTime(m.clock()))
	return m.costs[costKey{community, d}].usd, m.costs[costKey{community, mo}].usd, nil
}

// Close does nothing.
func (m *Memory) Close() error { return nil }

// msTime is the UTC time of a unix millisecond count.
func msTime(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
