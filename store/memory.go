package store

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
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
// cap evicts one: never a session whose turn lock is held (its turn is still writing to it),
// and of the others the least recently active one without a live parked call, else the one
// whose call was parked longest ago. Each community keeps its sessions in two queues (idle by
// activity, parked by park time), so an eviction costs O(1) plus the locked sessions it skips,
// of which there are at most as many as turns in flight. When every session is locked,
// EnsureSession fails with ErrFull. Every eviction is logged.
//
// Kept run files are bounded for the whole process (Limits.ArtifactBytes): the oldest runs'
// files, of any session, go first. Attached files, which are never evicted, share that budget,
// and each community may hold at most its share of it (FileLimits.Communities), and each
// client at most FileLimits.MaxClientBytes in a community.
//
// Memory stays bounded: expired sessions, released or expired locks, ended rate-limit windows
// and old cost totals are swept at most every minute of the store's clock, and dropped on
// access in between.
//
// All times come from the clock given to NewMemory, at millisecond precision in UTC, the same
// precision the Redis store keeps.
type Memory struct {
	limits Limits
	now    func() time.Time
	log    *slog.Logger

	mu          sync.Mutex
	communities map[string]*memCommunity
	locks       map[sessionKey]memLock
	windows     map[windowKey]*memWindow
	costs       map[costKey]memCost
	lockSeq     uint64
	nextPrune   int64 // unix ms
	// runs holds every kept run's files, oldest first; runBytes is their total, and fileBytes
	// that of the readers' attached files, which share the budget.
	runs      list.List // of *memRun
	runBytes  int64
	fileBytes int64
}

type sessionKey struct{ community, id string }

type windowKey struct {
	key    string
	window int64 // ms
}

type costKey struct{ community, period string }

type memCommunity struct {
	sessions map[string]*memSession
	// fileBytes is what the community's attached files count against the budget, clients the
	// same by the client that attached them.
	fileBytes int64
	clients   map[string]int64
	// idle holds the sessions without a parked call, least recently active first; parked the
	// others, the longest parked first. A session is in exactly one of them.
	idle, parked list.List // of *memSession
}

type memSession struct {
	id              string
	created, active int64 // unix ms
	history         []json.RawMessage
	park            *memPark
	interpreter     string        // SetInterpreter's record
	q               *list.List    // idle or parked of its community
	elem            *list.Element // in q
	runs            []*memRun     // oldest first, at most MaxArtifactRuns
	files           map[string]*memFile
	// records are the newest MaxRunRecords run records, oldest first; recorded counts every
	// record ever put (the next ordinal is recorded + 1).
	records  []RunRecord
	recorded int
}

// memFile is one attached reader file: data is the caller's own slice (NewFile), never
// changed, so it can be handed out to be read without a copy (ViewFile).
type memFile struct {
	meta   SessionFile
	data   []byte
	client string
}

type memPark struct {
	call ParkedCall // CreatedAt == at
	at   int64      // unix ms
}

// memRun is one server-side run's kept files.
type memRun struct {
	callID string
	files  map[string][]byte
	bytes  int64
	owner  *memSession
	elem   *list.Element // in Memory.runs
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
// DefaultLimits value; now is the clock (time.Now when nil); log receives evictions (nil
// discards them).
func NewMemory(limits Limits, now func() time.Time, log *slog.Logger) *Memory {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Memory{
		limits:      limits.withDefaults(),
		now:         now,
		log:         log,
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
				m.remove(c, id)
			}
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
// readLive runs f on the live session, under the lock, for the methods that only read it;
// ErrNotFound without one.
func readLive[T any](ctx context.Context, m *Memory, community, id string, f func(s *memSession) (T, error)) (T, error) {
	var zero T
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil {
		return zero, ErrNotFound
	}
	return f(s)
}

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

// remove drops a session with its queue entry and its kept files. The caller holds m.mu.
func (m *Memory) remove(community, id string) {
	com := m.communities[community]
	if com == nil {
		return
	}
	s := com.sessions[id]
	if s == nil {
		return
	}
	s.q.Remove(s.elem)
	for _, r := range slices.Clone(s.runs) {
		m.dropRun(r)
	}
	for _, f := range s.files {
		m.uncount(com, f)
	}
	delete(com.sessions, id)
	if len(com.sessions) == 0 {
		delete(m.communities, community)
	}
}

// touch stamps activity: an idle session moves to the back of its queue. The caller holds
// m.mu.
func (m *Memory) touch(com *memCommunity, s *memSession, now int64) {
	s.active = now
	if s.q == &com.idle {
		com.idle.MoveToBack(s.elem)
	}
}

// enqueue moves s to the back of q.
func enqueue(s *memSession, q *list.List) {
	if s.q != nil {
		s.q.Remove(s.elem)
	}
	s.q = q
	s.elem = q.PushBack(s)
}

// setPark parks (p != nil) or unparks a session, moving it between its community's queues.
func setPark(com *memCommunity, s *memSession, p *memPark) {
	s.park = p
	switch {
	case p != nil:
		enqueue(s, &com.parked)
	case s.q == &com.parked:
		enqueue(s, &com.idle)
	}
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
	return readLive(ctx, m, community, id, func(s *memSession) (Session, error) { return s.meta(community, id), nil })
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
		ok := m.evict(community, com, now)
		m.communities[community] = com // evicting its last session removed it
		if !ok {
			m.log.LogAttrs(ctx, slog.LevelWarn, "session store full: every session of the community is in a turn",
				slog.String("community", community), slog.Int("sessions", len(com.sessions)))
			return Session{}, false, ErrFull
		}
	}
	s := &memSession{id: id, created: now, active: now}
	enqueue(s, &com.idle)
	com.sessions[id] = s
	return s.meta(community, id), true, nil
}

// evict removes one session of com that is not in a turn: an expired one at the front of a
// queue, else the least recently active idle one, else the longest parked one. A session whose
// parked call expired counts as idle and goes first. It reports whether it removed one. The
// caller holds m.mu.
func (m *Memory) evict(community string, com *memCommunity, now int64) bool {
	var last *list.Element // the sessions moved so far, in the order their calls expired
	for e := com.parked.Front(); e != nil; e = com.parked.Front() {
		s := e.Value.(*memSession)
		if !m.parkExpired(s.park, now) {
			break
		}
		// Its reader left the call unanswered: it is the first to go. It keeps its parked call
		// (Claim and Abandon still close it) but no longer counts as parked.
		com.parked.Remove(e)
		s.q = &com.idle
		if last == nil {
			s.elem = com.idle.PushFront(s)
		} else {
			s.elem = com.idle.InsertAfter(s, last)
		}
		last = s.elem
	}
	for _, q := range []*list.List{&com.idle, &com.parked} {
		for e := q.Front(); e != nil; e = e.Next() {
			s := e.Value.(*memSession)
			if l, ok := m.locks[sessionKey{community, s.id}]; ok && l.expires > now {
				continue // its turn is still writing to it
			}
			reason := "least recently active"
			switch {
			case !m.alive(s, now):
				reason = "expired"
			case q == &com.parked:
				reason = "every other session holds a parked call or is in a turn"
			}
			m.log.LogAttrs(context.Background(), slog.LevelInfo, "session evicted",
				slog.String("community", community), slog.String("reason", reason),
				slog.Duration("idle", time.Duration(now-s.active)*time.Millisecond), slog.Int("cap", m.limits.MaxSessionsPerCommunity))
			m.remove(community, s.id)
			return true
		}
	}
	return false
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
	m.appendLocked(m.communities[community], s, now, msgs...)
	return len(s.history), nil
}

// appendLocked appends copies of msgs and stamps activity. The caller holds m.mu.
func (m *Memory) appendLocked(com *memCommunity, s *memSession, now int64, msgs ...json.RawMessage) {
	for _, msg := range msgs {
		if len(msg) > 0 {
			s.history = append(s.history, bytes.Clone(msg))
		}
	}
	m.touch(com, s, now)
}

func validMessages(msgs []json.RawMessage) error {
	for i, msg := range msgs {
		if !json.Valid(msg) {
			return fmt.Errorf("store: message %d is not valid JSON", i)
		}
	}
	return nil
}

// validOptional checks messages that may be left out (nil).
func validOptional(msgs ...json.RawMessage) error {
	for i, msg := range msgs {
		if len(msg) > 0 && !json.Valid(msg) {
			return fmt.Errorf("store: message %d is not valid JSON", i)
		}
	}
	return nil
}

// History returns copies of the session's messages in order.
func (m *Memory) History(ctx context.Context, community, id string) ([]json.RawMessage, error) {
	return readLive(ctx, m, community, id, func(s *memSession) ([]json.RawMessage, error) {
		out := make([]json.RawMessage, len(s.history))
		for i, msg := range s.history {
			out[i] = bytes.Clone(msg)
		}
		return out, nil
	})
}

// runOverhead is what every kept run counts against the artifact budget besides its files'
// bytes: its bookkeeping, so many tiny runs cannot fill a store.
const runOverhead = 1024

// runSize is what a run's files count against the artifact budget.
func runSize(files map[string][]byte) int64 {
	n := int64(runOverhead)
	for p, b := range files {
		n += int64(len(p) + len(b))
	}
	return n
}

// PutArtifacts keeps a run's files with the session, within the session's run count and the
// process's byte budget.
func (m *Memory) PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	size := runSize(files)
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil {
		return ErrNotFound
	}
	if size > m.limits.ArtifactBytes-m.fileBytes {
		return ErrArtifactBudget // even with every other run's files gone it would not fit
	}
	for _, r := range s.runs {
		if r.callID == callID {
			m.dropRun(r)
			break
		}
	}
	r := &memRun{callID: callID, files: make(map[string][]byte, len(files)), bytes: size, owner: s}
	for p, b := range files {
		r.files[p] = bytes.Clone(b)
	}
	r.elem = m.runs.PushBack(r)
	m.runBytes += size
	s.runs = append(s.runs, r)
	for len(s.runs) > MaxArtifactRuns {
		m.dropRun(s.runs[0])
	}
	evicted := 0
	for m.runBytes+m.fileBytes > m.limits.ArtifactBytes {
		m.dropRun(m.runs.Front().Value.(*memRun)) // never r: it alone fits
		evicted++
	}
	if evicted > 0 {
		m.log.LogAttrs(ctx, slog.LevelInfo, "kept run files evicted for the artifact budget",
			slog.String("community", community), slog.Int("runs", evicted), slog.Int64("budget_bytes", m.limits.ArtifactBytes))
	}
	return nil
}

// dropRun forgets one run's files. The caller holds m.mu.
func (m *Memory) dropRun(r *memRun) {
	m.runs.Remove(r.elem)
	m.runBytes -= r.bytes
	r.owner.runs = slices.DeleteFunc(r.owner.runs, func(x *memRun) bool { return x == r })
}

// Artifact returns a copy of one kept file.
func (m *Memory) Artifact(ctx context.Context, community, id, callID, path string) ([]byte, error) {
	b, err := m.ViewArtifact(ctx, community, id, callID, path)
	return bytes.Clone(b), err
}

// ViewArtifact returns one kept file, the store's own bytes: they are never changed.
func (m *Memory) ViewArtifact(ctx context.Context, community, id, callID, path string) ([]byte, error) {
	return readLive(ctx, m, community, id, func(s *memSession) ([]byte, error) {
		for _, r := range s.runs {
			if r.callID == callID {
				if b, ok := r.files[path]; ok {
					return b, nil
				}
			}
		}
		return nil, ErrNotFound
	})
}

// DeleteSession removes the session, its history, its parked call and its files. The turn
// lock is left to its holder (or its TTL).
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

// Park appends msgs and records the session's parked call in one step, stamped with the
// store's clock.
func (m *Memory) Park(ctx context.Context, community, id string, call ParkedCall, msgs ...json.RawMessage) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	args, err := normalizeArgs(call.Args)
	if err != nil {
		return err
	}
	if err := validMessages(msgs); err != nil {
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
	if s.park != nil {
		return ErrAlreadyParked
	}
	com := m.communities[community]
	m.appendLocked(com, s, now, msgs...)
	call.CreatedAt = msTime(now)
	setPark(com, s, &memPark{call: call, at: now})
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

// Parked returns the parked call without removing it.
func (m *Memory) Parked(ctx context.Context, community, id string) (ParkedCall, bool, error) {
	if err := ctx.Err(); err != nil {
		return ParkedCall{}, false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil || s.park == nil {
		return ParkedCall{}, false, nil
	}
	return s.park.call, true, nil
}

// Claim removes the parked call if its id is callID and appends answer (or late, when it has
// expired) in the same step.
func (m *Memory) Claim(ctx context.Context, community, id, callID string, answer, late json.RawMessage) (ParkedCall, error) {
	if err := ctx.Err(); err != nil {
		return ParkedCall{}, err
	}
	if err := validOptional(answer, late); err != nil {
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
	com := m.communities[community]
	setPark(com, s, nil)
	if m.parkExpired(p, now) {
		m.appendLocked(com, s, now, late)
		return p.call, ErrNoParkedCall
	}
	m.appendLocked(com, s, now, answer)
	return p.call, nil
}

// Abandon removes the parked call if its id is callID, expired or not, and appends closing.
func (m *Memory) Abandon(ctx context.Context, community, id, callID string, closing json.RawMessage) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if err := validOptional(closing); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.lookup(community, id, now)
	if s == nil || s.park == nil || s.park.call.CallID != callID {
		return false, nil
	}
	com := m.communities[community]
	setPark(com, s, nil)
	m.appendLocked(com, s, now, closing)
	return true, nil
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

// fileSize is what an attached file counts against the budgets: its bytes, its name and the
// per-entry overhead.
func fileSize(f SessionFile) int64 { return f.Bytes + int64(len(f.Name)) + runOverhead }

// PutFiles attaches files to the session, all or nothing, within its limits, the client's and
// the community's share of the budget. It keeps each file's Data as it is.
func (m *Memory) PutFiles(ctx context.Context, community, id string, files []NewFile, lim FileLimits) ([]SessionFile, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	files = lastByName(files)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.lookup(community, id, now)
	if s == nil {
		return nil, ErrNotFound
	}
	com := m.communities[community]
	for i, f := range files {
		clash := func(name string) bool { return name != f.Name && strings.EqualFold(name, f.Name) }
		if slices.ContainsFunc(files[:i], func(g NewFile) bool { return clash(g.Name) }) {
			return nil, ErrNameClash
		}
		for name := range s.files {
			if clash(name) {
				return nil, ErrNameClash
			}
		}
	}
	metas := make([]SessionFile, len(files))
	count, total := len(s.files), int64(0)
	var delta, clientDelta int64 // what the budget and lim.Client's count gain
	for _, f := range s.files {
		total += f.meta.Bytes
	}
	for i, f := range files {
		metas[i] = newFileMeta(f, now)
		if old := s.files[f.Name]; old != nil {
			total -= old.meta.Bytes
			delta -= fileSize(old.meta)
			if old.client == lim.Client {
				clientDelta -= fileSize(old.meta)
			}
		} else {
			count++
		}
		total += metas[i].Bytes
		delta += fileSize(metas[i])
		clientDelta += fileSize(metas[i])
	}
	share := m.limits.ArtifactBytes / int64(max(1, lim.Communities))
	switch {
	case count > lim.MaxFiles:
		return nil, ErrTooManyFiles
	case total > lim.MaxSessionBytes:
		return nil, ErrSessionFilesFull
	case delta > 0 && (com.fileBytes+delta > share || m.fileBytes+delta > m.limits.ArtifactBytes):
		return nil, ErrArtifactBudget // even with every run's files gone it would not fit
	case lim.Client != "" && clientDelta > 0 && com.clients[lim.Client]+clientDelta > lim.maxClient(share):
		return nil, ErrClientFilesFull
	}
	if s.files == nil {
		s.files = make(map[string]*memFile, len(files))
	}
	for i, f := range files {
		if old := s.files[f.Name]; old != nil {
			m.uncount(com, old)
		}
		nf := &memFile{meta: metas[i], data: f.Data, client: lim.Client}
		s.files[f.Name] = nf
		m.count(com, nf)
	}
	for m.runBytes+m.fileBytes > m.limits.ArtifactBytes {
		m.dropRun(m.runs.Front().Value.(*memRun))
	}
	m.touch(com, s, now)
	return sortedFiles(s.files), nil
}

// lastByName keeps, of files with the same name, the last (a later one replaces an earlier).
func lastByName(files []NewFile) []NewFile {
	out := make([]NewFile, 0, len(files))
	for i, f := range files {
		if !slices.ContainsFunc(files[i+1:], func(g NewFile) bool { return g.Name == f.Name }) {
			out = append(out, f)
		}
	}
	return out
}

// count adds an attached file to the process's, the community's and its client's totals;
// uncount takes it out. The caller holds m.mu.
func (m *Memory) count(com *memCommunity, f *memFile) { m.addFile(com, f, fileSize(f.meta)) }

func (m *Memory) uncount(com *memCommunity, f *memFile) { m.addFile(com, f, -fileSize(f.meta)) }

func (m *Memory) addFile(com *memCommunity, f *memFile, n int64) {
	m.fileBytes += n
	com.fileBytes += n
	if f.client == "" {
		return
	}
	if com.clients == nil {
		com.clients = make(map[string]int64)
	}
	if com.clients[f.client] += n; com.clients[f.client] <= 0 {
		delete(com.clients, f.client)
	}
}

func newFileMeta(f NewFile, now int64) SessionFile {
	sum := sha256.Sum256(f.Data)
	return SessionFile{Name: f.Name, Bytes: int64(len(f.Data)), SHA256: hex.EncodeToString(sum[:]), Type: f.Type, AddedAt: msTime(now)}
}

func sortedFiles(files map[string]*memFile) []SessionFile {
	out := make([]SessionFile, 0, len(files))
	for _, f := range files {
		out = append(out, f.meta)
	}
	slices.SortFunc(out, func(a, b SessionFile) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// Files lists the session's attached files by name.
func (m *Memory) Files(ctx context.Context, community, id string) ([]SessionFile, error) {
	return readLive(ctx, m, community, id, func(s *memSession) ([]SessionFile, error) { return sortedFiles(s.files), nil })
}

// File returns one attached file and a copy of its bytes.
func (m *Memory) File(ctx context.Context, community, id, name string) (SessionFile, []byte, error) {
	if err := ctx.Err(); err != nil {
		return SessionFile{}, nil, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil || s.files[name] == nil {
		return SessionFile{}, nil, ErrNotFound
	}
	f := s.files[name]
	return f.meta, bytes.Clone(f.data), nil
}

// ViewsCopy reports false: ViewFile and ViewArtifact hand out the store's own bytes, which cost
// nothing more however many callers hold them.
func (m *Memory) ViewsCopy() bool { return false }

// ViewFile returns one attached file's bytes, the store's own: they are never changed.
func (m *Memory) ViewFile(ctx context.Context, community, id, name string) ([]byte, error) {
	return readLive(ctx, m, community, id, func(s *memSession) ([]byte, error) {
		if f := s.files[name]; f != nil {
			return f.data, nil
		}
		return nil, ErrNotFound
	})
}

// DeleteFile removes one attached file.
func (m *Memory) DeleteFile(ctx context.Context, community, id, name string) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	s := m.lookup(community, id, m.clock())
	if s == nil || s.files[name] == nil {
		return false, nil
	}
	m.uncount(m.communities[community], s.files[name])
	delete(s.files, name)
	return true, nil
}

// PutRun records one run of the session, numbered and stamped by the store.
func (m *Memory) PutRun(ctx context.Context, community, id string, rec RunRecord) (RunRecord, error) {
	if err := ctx.Err(); err != nil {
		return RunRecord{}, err
	}
	rec = ClipRun(rec)
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.clock()
	s := m.lookup(community, id, now)
	if s == nil {
		return RunRecord{}, ErrNotFound
	}
	s.recorded++
	rec.Ordinal, rec.Time = s.recorded, msTime(now)
	s.records = append(s.records, rec)
	if n := len(s.records) - MaxRunRecords; n > 0 {
		s.records = slices.Delete(s.records, 0, n)
	}
	return cloneRecord(rec), nil
}

// Runs returns copies of the session's kept run records, oldest first.
func (m *Memory) Runs(ctx context.Context, community, id string) ([]RunRecord, error) {
	return readLive(ctx, m, community, id, func(s *memSession) ([]RunRecord, error) {
		out := make([]RunRecord, len(s.records))
		for i, r := range s.records {
			out[i] = cloneRecord(r)
		}
		return out, nil
	})
}

// cloneRecord copies the one shared part of a record, its file list.
func cloneRecord(r RunRecord) RunRecord {
	r.Files = append([]string{}, r.Files...)
	return r
}

// ArtifactPaths lists one kept run's paths, sorted.
func (m *Memory) ArtifactPaths(ctx context.Context, community, id, callID string) ([]string, error) {
	return readLive(ctx, m, community, id, func(s *memSession) ([]string, error) {
		out := []string{}
		for _, r := range s.runs {
			if r.callID == callID {
				for p := range r.files {
					out = append(out, p)
				}
			}
		}
		slices.Sort(out)
		return out, nil
	})
}
