package sandbox

import (
	"container/list"
	"context"
	"sync"
	"time"
)

// defaultSessionIdle is how long an unused interpreter lives when no idle time is given.
const defaultSessionIdle = 10 * time.Minute

// SessionsOptions bound a Sessions.
type SessionsOptions struct {
	// Idle ends an interpreter no run used for this long (defaultSessionIdle, 10 min, when zero).
	Idle time.Duration
	// MaxLive bounds the interpreters alive at once (16 when zero); MaxMemory their linear
	// memory in all (2 GiB when zero). Past either, the least recently used go first.
	MaxLive   int
	MaxMemory int64
}

// Sessions keeps one live interpreter per session key: each key's runs go to its own Session,
// runs of different keys never share one, and the interpreters are bounded in number, memory
// and idle time, least recently used first. It is safe for concurrent use.
type Sessions struct {
	e    *Engine
	opts SessionsOptions

	mu  sync.Mutex
	m   map[string]*list.Element // of *sessionEntry
	lru list.List                // least recently used at the front
	// gone holds the keys of sessions Sweep forgot after their interpreter ended, oldest
	// first (at most maxForgotten), so a later run of one still says it restarted.
	gone      map[string]struct{}
	goneOrder []string
}

// maxForgotten bounds the forgotten session keys a Sessions remembers.
const maxForgotten = 10000

type sessionEntry struct {
	key string
	s   *Session
	// runs counts the Runs that took this entry (under mu) and have not returned: Sweep never
	// forgets an entry a run is about to use.
	runs int
}

// NewSessions returns an empty set of sessions on e.
func (e *Engine) NewSessions(opts SessionsOptions) *Sessions {
	if opts.Idle <= 0 {
		opts.Idle = defaultSessionIdle
	}
	if opts.MaxLive <= 0 {
		opts.MaxLive = 16
	}
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = 2 << 30
	}
	return &Sessions{e: e, opts: opts, m: map[string]*list.Element{}, gone: map[string]struct{}{}}
}

// Run runs req in key's session, starting it when needed, then makes room: other sessions'
// interpreters past the bounds are ended, least recently used first.
func (ss *Sessions) Run(ctx context.Context, key string, req Request) (Result, error) {
	ss.mu.Lock()
	el, ok := ss.m[key]
	if !ok {
		s := ss.e.NewSession()
		// Its interpreter ended elsewhere (a worker died) or here before Sweep forgot it: the
		// first run says so.
		_, forgot := ss.gone[key]
		delete(ss.gone, key)
		s.ended = req.SessionRestarted || forgot
		el = ss.lru.PushBack(&sessionEntry{key: key, s: s})
		ss.m[key] = el
	} else {
		ss.lru.MoveToBack(el)
	}
	ent := el.Value.(*sessionEntry)
	ent.runs++
	ss.mu.Unlock()
	res, err := ent.s.Run(ctx, req)
	ss.mu.Lock()
	ent.runs--
	ss.mu.Unlock()
	ss.makeRoom(ent.s)
	return res, err
}

// makeRoom ends the least recently used interpreters other than keep while there are too many
// or they hold too much memory.
func (ss *Sessions) makeRoom(keep *Session) {
	type sized struct {
		s   *Session
		mem int64
	}
	ss.mu.Lock()
	var live []sized
	var mem int64
	for el := ss.lru.Front(); el != nil; el = el.Next() {
		s := el.Value.(*sessionEntry).s
		if s.Live() {
			m := s.Memory()
			live = append(live, sized{s, m})
			mem += m
		}
	}
	ss.mu.Unlock()
	n := len(live)
	for _, l := range live {
		if n <= ss.opts.MaxLive && mem <= ss.opts.MaxMemory {
			return
		}
		if l.s == keep {
			continue
		}
		l.s.Evict()
		n--
		mem -= l.mem
	}
}

// Sweep ends interpreters idle past opts.Idle and forgets sessions that have none; call it from
// time to time. It reports how many interpreters it ended.
func (ss *Sessions) Sweep() int {
	ss.mu.Lock()
	entries := make([]*list.Element, 0, ss.lru.Len())
	for el := ss.lru.Front(); el != nil; el = el.Next() {
		entries = append(entries, el)
	}
	ss.mu.Unlock()
	ended := 0
	for _, el := range entries {
		e := el.Value.(*sessionEntry)
		if e.s.ExpireIdle(ss.opts.Idle) {
			ended++
		}
		if !e.s.Live() && e.s.idleFor() > ss.opts.Idle {
			ss.mu.Lock()
			if ss.m[e.key] == el && e.runs == 0 {
				delete(ss.m, e.key)
				ss.lru.Remove(el)
				ss.forget(e.key)
			}
			ss.mu.Unlock()
		}
	}
	return ended
}

// forget remembers that key's interpreter ended. The caller holds mu.
func (ss *Sessions) forget(key string) {
	if _, ok := ss.gone[key]; !ok {
		ss.gone[key] = struct{}{}
		ss.goneOrder = append(ss.goneOrder, key)
	}
	for len(ss.gone) > maxForgotten && len(ss.goneOrder) > 0 {
		delete(ss.gone, ss.goneOrder[0])
		ss.goneOrder = ss.goneOrder[1:]
	}
	if len(ss.goneOrder) > 2*maxForgotten { // keys that ran again since: compact
		kept := ss.goneOrder[:0]
		for _, k := range ss.goneOrder {
			if _, ok := ss.gone[k]; ok {
				kept = append(kept, k)
			}
		}
		ss.goneOrder = kept
	}
}

// Stats reports the live interpreters and their memory.
func (ss *Sessions) Stats() (live int, memory int64) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for el := ss.lru.Front(); el != nil; el = el.Next() {
		s := el.Value.(*sessionEntry).s
		if s.Live() {
			live++
			memory += s.Memory()
		}
	}
	return live, memory
}

// Close ends every interpreter.
func (ss *Sessions) Close() {
	ss.mu.Lock()
	entries := make([]*Session, 0, ss.lru.Len())
	for el := ss.lru.Front(); el != nil; el = el.Next() {
		entries = append(entries, el.Value.(*sessionEntry).s)
	}
	ss.m = map[string]*list.Element{}
	ss.lru.Init()
	ss.mu.Unlock()
	for _, s := range entries {
		s.Close()
	}
}
