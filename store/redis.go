package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/redis/go-redis/v9"
)

// Connection defaults, used when the URL does not set them (redis.ParseURL reads
// dial_timeout, read_timeout, write_timeout, pool_size, max_retries, ...).
const (
	redisDialTimeout  = 2 * time.Second
	redisReadTimeout  = 2 * time.Second
	redisWriteTimeout = 2 * time.Second
	redisPoolSize     = 20
	// redisMaxRetries: a command whose reply was lost is sent once more. Every writing script
	// carries an operation key, so the second run returns the first one's reply instead of
	// writing again (scripts.go).
	redisMaxRetries = 1

	// unlockTimeout bounds the release of a turn lock, which runs after the turn's own
	// context may have ended.
	unlockTimeout = 2 * time.Second
)

// DefaultRedisPrefix is the key prefix when RedisOptions.Prefix is empty.
const DefaultRedisPrefix = "assistant:"

// RedisOptions configure NewRedis.
type RedisOptions struct {
	// URL is a redis:// or rediss:// URL (redis.ParseURL), e.g. redis://127.0.0.1:6379/0.
	URL string
	// Prefix starts every key (DefaultRedisPrefix when empty); it may not contain '{' or
	// '}', which would break the per-session hash tags.
	Prefix string
	// Limits are the lifetimes (zero fields take DefaultLimits). MaxSessionsPerCommunity is
	// not used: Redis bounds sessions by their TTL.
	Limits Limits
	// Now is an injected clock for tests. When nil (production) every age and window is
	// judged by the Redis server's clock (TIME), the one clock all replicas share.
	Now func() time.Time
	// Logger receives the failures nobody can return (a turn lock that could not be
	// released; it expires by its TTL). Nil discards them.
	Logger *slog.Logger
}

// redisConn is the part of the go-redis client the store uses.
type redisConn interface {
	redis.Scripter
	TxPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
	HMGet(ctx context.Context, key string, fields ...string) *redis.SliceCmd
	MGet(ctx context.Context, keys ...string) *redis.SliceCmd
	Del(ctx context.Context, keys ...string) *redis.IntCmd
	HGetAll(ctx context.Context, key string) *redis.MapStringStringCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	Time(ctx context.Context) *redis.TimeCmd
	SetNX(ctx context.Context, key string, value any, expiration time.Duration) *redis.BoolCmd
	Get(ctx context.Context, key string) *redis.StringCmd
	Close() error
}

// Redis is the Store shared by several replicas through one Redis server.
//
// # Keys
//
// Community ids, session ids and rate-limit keys are arbitrary client strings, so they appear
// in key names base64url-encoded (no padding), written c, i and k below; no id can then
// forge a separator. With P the prefix:
//
//	P s:{c:i}:meta      hash {created, active, count, runs}  TTL SessionTTL, refreshed by Append
//	P s:{c:i}:hist      list of JSON messages           TTL SessionTTL, refreshed by Append
//	P s:{c:i}:park      hash {id, at, call}             TTL SessionTTL
//	P s:{c:i}:rec       list of run records             TTL the session's, refreshed by Append
//	P s:{c:i}:lock      string "<token>:<expires ms>"   TTL the lock's ttl
//	P s:{c:i}:op:o      a script's JSON reply            TTL 120 s (see scripts.go, Retries)
//	P rl:{k:<window>}   hash {s: window start, n}       TTL until the window ends
//	P a:{c}:r:i:k       hash {path: bytes} of one run   TTL the session's, refreshed with it
//	                    (by Append, Park, Claim, Abandon)
//	P a:{c}:runs:i      list of the session's runs      TTL the same; at most MaxArtifactRuns
//	P a:{c}:idx|size|owner|total|seq|rexp  the community's runs by age, their bytes, owners,
//	                    the total (ArtifactBytes bounds it), the sequence, the runs by expiry
//	                                                    TTL the longest-lived run's
//	P a:{c}:f:i         hash {name: bytes} of the files attached  TTL the session's, refreshed
//	                    with it (by Append, Park, Claim, Abandon)
//	P a:{c}:fm:i        hash {name: SessionFile JSON}   TTL the same
//	P a:{c}:fexp|fsize|ftotal  sessions with files by expiry, their bytes, the total (counted in
//	                    ArtifactBytes)                  TTL the longest-lived files'
//	P a:{c}:fown|fclient  each session's files' clients and bytes, each client's total (bounded
//	                    by FileLimits.MaxClientBytes)   TTL the same
//	P a:{c}:op:o:undo   hash: a file write's undo record (luaUndo)  TTL 120 s, deleted once
//	                    the write is answered as done
//	P cost:{c}:YYYY-MM-DD float (USD)                   TTL 48 h, refreshed by AddCost
//	P cost:{c}:YYYY-MM  float (USD)                     TTL 40 days, refreshed by AddCost
//
// A session's keys share one hash tag, and so do a community's kept runs, so each multi-key
// script touches one hash slot. The artifact scripts also reach run keys named in the
// community's index rather than in KEYS (same slot): a single standalone Redis (or a cluster
// node that allows it) is what they are written for.
//
// A session's kept runs and attached files expire with the session: PutArtifacts and PutFiles
// give them the session's expiry, and every script that refreshes the session (Append, and
// Park, Claim, Abandon when they append) is followed by touchScript, which moves both to the
// new expiry in one round trip (the session's scripts cannot reach the community's slot). Their
// expiry is recorded in rexp and fexp as well as in the keys' TTL, so that the bytes of expired
// runs and files leave total and ftotal at the next put or touch (sweepRuns, luaFiles), and an
// injected clock expires them too.
//
// # When Redis is down or stalls
//
// NewRedis fails when the first PING fails, so a process does not start without its store.
// Afterwards every method returns the error (after the client's timeouts, 2 s by default, and
// one retry); nothing is guessed, except that PutFiles and DeleteFile find out whether a write
// whose answer was lost ran (settle), and undo one that ran after they answered an error
// (fileWrite), so that their answer says what is stored. Allow reports ok == false alongside
// the error, and the caller must fail the request (refuse rather than serve unmetered). No method turns a Redis failure
// into ErrNotFound, ErrNoParkedCall or ErrBusy. A write whose reply was lost and that the
// client sent again runs once (operation keys); a turn lock whose take or release failed is
// released in the background as soon as Redis answers again, so once Redis is back every
// session is usable within about two seconds.
type Redis struct {
	c      redisConn
	prefix string
	limits Limits
	now    func() time.Time
	log    *slog.Logger
	// window is writeWindow; tests shorten it.
	window time.Duration
	// bg ends the background releases of turn locks (Close cancels it and waits for them).
	bg     context.Context
	stopBg context.CancelFunc
	wg     sync.WaitGroup
}

var _ Store = (*Redis)(nil)

// NewRedis connects to opts.URL and checks the server with PING; on failure it returns the
// error and no store.
func NewRedis(ctx context.Context, opts RedisOptions) (*Redis, error) {
	o, err := redis.ParseURL(opts.URL)
	if err != nil {
		return nil, fmt.Errorf("store: redis url: %w", err)
	}
	if o.DialTimeout == 0 {
		o.DialTimeout = redisDialTimeout
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = redisReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = redisWriteTimeout
	}
	if o.PoolSize == 0 {
		o.PoolSize = redisPoolSize
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = redisMaxRetries
	}
	o.ContextTimeoutEnabled = true
	prefix := opts.Prefix
	if prefix == "" {
		prefix = DefaultRedisPrefix
	}
	if strings.ContainsAny(prefix, "{}") {
		return nil, fmt.Errorf("store: redis prefix %q contains '{' or '}'", prefix)
	}
	client := redis.NewClient(o)
	if err := client.Ping(ctx).Err(); err != nil {
		_ = client.Close()
		return nil, fmt.Errorf("store: redis ping %s: %w", o.Addr, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	bg, stop := context.WithCancel(context.Background())
	return &Redis{c: client, prefix: prefix, limits: opts.Limits.withDefaults(), now: opts.Now, log: log, window: writeWindow, bg: bg, stopBg: stop}, nil
}

func enc(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

// newOp returns a fresh operation id: the key under which a script remembers its reply, so a
// retried command does not run twice (scripts.go).
func newOp() string {
	var b [12]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

type sessionKeys struct{ meta, hist, park, rec, lock, base string }

func (r *Redis) keys(community, id string) sessionKeys {
	base := r.prefix + "s:{" + enc(community) + ":" + enc(id) + "}:"
	return sessionKeys{meta: base + "meta", hist: base + "hist", park: base + "park", rec: base + "rec", lock: base + "lock", base: base}
}

// op is a fresh operation key in the session's hash tag.
func (k sessionKeys) op() string { return k.base + "op:" + newOp() }

// artifactKeys are a community's kept-run keys: they share the community's hash tag, because
// the byte budget spans its sessions.
type artifactKeys struct{ base, idx, size, owner, total, seq, rexp, ftotal, fexp, fsize string }

func (r *Redis) artifactKeys(community string) artifactKeys {
	base := r.prefix + "a:{" + enc(community) + "}:"
	return artifactKeys{base: base, idx: base + "idx", size: base + "size", owner: base + "owner", total: base + "total",
		seq: base + "seq", rexp: base + "rexp", ftotal: base + "ftotal", fexp: base + "fexp", fsize: base + "fsize"}
}

// files and metas hold a session's attached files (name → bytes, name → SessionFile JSON), in
// the community's hash tag, since they share its budget; the scripts rebuild these names from
// ftotal's and the member, enc(id) (luaFiles).
func (a artifactKeys) files(id string) string { return a.base + "f:" + enc(id) }
func (a artifactKeys) metas(id string) string { return a.base + "fm:" + enc(id) }

func (a artifactKeys) run(id, callID string) string {
	return a.base + "r:" + enc(id) + ":" + enc(callID)
}
func (a artifactKeys) runs(id string) string { return a.base + "runs:" + enc(id) }
func (a artifactKeys) op() string            { return a.base + "op:" + newOp() }

// PutArtifacts keeps a run's files with the session, within the session's run count and the
// community's byte budget (putRunScript). They expire with the session (its expiry is passed,
// and judged by the script's clock); every later refresh of the session moves them along
// (touchAfter).
func (r *Redis) PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error {
	s, err := r.Session(ctx, community, id)
	if err != nil {
		return err
	}
	size := runSize(files)
	if size > r.limits.ArtifactBytes {
		return ErrArtifactBudget
	}
	a := r.artifactKeys(community)
	args := make([]any, 0, 6+2*len(files))
	args = append(args, r.nowArg(), s.LastActive.UnixMilli()+r.sttl(), r.limits.ArtifactBytes, MaxArtifactRuns, size, enc(id))
	for p, b := range files {
		args = append(args, p, b)
	}
	n, err := putRunScript.Run(ctx, r.c, []string{a.run(id, callID), a.runs(id), a.idx, a.size, a.owner, a.total, a.seq, a.rexp,
		a.ftotal, a.fexp, a.fsize, a.op()}, args...).Int64()
	if err != nil {
		return wrap("put artifacts", err)
	}
	switch {
	case n == -2:
		return ErrNotFound
	case n < 0:
		return ErrArtifactBudget
	case n > 0:
		r.log.LogAttrs(ctx, slog.LevelInfo, "kept run files evicted for the artifact budget",
			slog.String("community", community), slog.Int64("runs", n), slog.Int64("budget_bytes", r.limits.ArtifactBytes))
	}
	return nil
}

// Artifact returns one kept file of a live run (runFileScript).
func (r *Redis) Artifact(ctx context.Context, community, id, callID, path string) ([]byte, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return nil, err
	}
	a := r.artifactKeys(community)
	b, err := runFileScript.Run(ctx, r.c, []string{a.run(id, callID), a.rexp}, r.nowArg(), path).Text()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrap("artifact", err)
	}
	return []byte(b), nil
}

// ViewArtifact is Artifact without a copy of the reply's bytes.
func (r *Redis) ViewArtifact(ctx context.Context, community, id, callID, path string) ([]byte, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return nil, err
	}
	a := r.artifactKeys(community)
	b, err := runFileScript.Run(ctx, r.c, []string{a.run(id, callID), a.rexp}, r.nowArg(), path).Text()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrap("artifact", err)
	}
	return readOnly(b), nil
}

// ViewsCopy reports true: ViewFile's and ViewArtifact's bytes are each a reply read for the
// caller, so a caller that holds many at once (exports) bounds them itself.
func (r *Redis) ViewsCopy() bool { return true }

// readOnly is s's bytes without a copy. go-redis makes each reply string from a buffer of its
// own (without a copy either), so the bytes are not shared; the callers only read them.
func readOnly(s string) []byte { return unsafe.Slice(unsafe.StringData(s), len(s)) }

// ArtifactPaths lists one live run's paths (runPathsScript), sorted.
func (r *Redis) ArtifactPaths(ctx context.Context, community, id, callID string) ([]string, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return nil, err
	}
	a := r.artifactKeys(community)
	out, err := runPathsScript.Run(ctx, r.c, []string{a.run(id, callID), a.rexp}, r.nowArg()).StringSlice()
	if err != nil {
		return nil, wrap("artifact paths", err)
	}
	slices.Sort(out)
	return out, nil
}

func (r *Redis) rateKey(key string, window int64) string {
	return r.prefix + "rl:{" + enc(key) + ":" + strconv.FormatInt(window, 10) + "}"
}

func (r *Redis) costKeys(community string, now time.Time) (day, month, op string) {
	d, m := costPeriods(now)
	base := r.prefix + "cost:{" + enc(community) + "}:"
	return base + d, base + m, base + "op:" + newOp()
}

// nowArg is the scripts' first argument: the injected clock, or "" for the server's TIME.
func (r *Redis) nowArg() string {
	if r.now == nil {
		return ""
	}
	return strconv.FormatInt(r.now().UnixMilli(), 10)
}

func (r *Redis) sttl() int64 { return r.limits.SessionTTL.Milliseconds() }

// clock is the injected clock or the server's (one round trip).
func (r *Redis) clock(ctx context.Context) (time.Time, error) {
	if r.now != nil {
		return r.now(), nil
	}
	t, err := r.c.Time(ctx).Result()
	if err != nil {
		return time.Time{}, wrap("time", err)
	}
	return t, nil
}

// expired reports whether a session last active at active (unix ms) is dead by the injected
// clock. Without one the key's TTL has already judged it with the server's clock.
func (r *Redis) expired(active int64) bool {
	return r.now != nil && active+r.sttl() <= r.now().UnixMilli()
}

// wrap marks a failure to get an answer from Redis as ErrUnavailable, keeping the cause.
func wrap(op string, err error) error {
	return fmt.Errorf("store: redis %s: %w (%w)", op, ErrUnavailable, err)
}

// Session returns a session's metadata, or ErrNotFound.
func (r *Redis) Session(ctx context.Context, community, id string) (Session, error) {
	k := r.keys(community, id)
	v, err := r.c.HMGet(ctx, k.meta, "created", "active", "count").Result()
	if err != nil {
		return Session{}, wrap("session", err)
	}
	if v[1] == nil {
		return Session{}, ErrNotFound
	}
	s, err := sessionFrom(community, id, v)
	if err != nil {
		return Session{}, wrap("session", err)
	}
	if r.expired(s.LastActive.UnixMilli()) {
		return Session{}, ErrNotFound
	}
	return s, nil
}

// sessionFrom decodes {created, active, count}.
func sessionFrom(community, id string, v []any) (Session, error) {
	if len(v) != 3 {
		return Session{}, fmt.Errorf("session meta has %d fields, want 3", len(v))
	}
	var n [3]int64
	for i, x := range v {
		var err error
		if n[i], err = toInt(x); err != nil {
			return Session{}, fmt.Errorf("session meta field %d: %w", i, err)
		}
	}
	return Session{
		ID: id, Community: community, MessageCount: int(n[2]),
		CreatedAt: msTime(n[0]), LastActive: msTime(n[1]),
	}, nil
}

// toInt reads an integer reply, a decimal string, or a whole JSON number (a reply read back
// from its operation key).
func toInt(x any) (int64, error) {
	switch v := x.(type) {
	case int64:
		return v, nil
	case float64:
		if v != float64(int64(v)) {
			return 0, fmt.Errorf("reply %v is not a whole number", v)
		}
		return int64(v), nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	default:
		return 0, fmt.Errorf("unexpected reply %T", x)
	}
}

// EnsureSession returns the live session or creates it (wiping an expired one), atomically.
func (r *Redis) EnsureSession(ctx context.Context, community, id string) (Session, bool, error) {
	k := r.keys(community, id)
	v, err := ensureScript.Run(ctx, r.c, []string{k.meta, k.hist, k.park, k.rec, k.op()}, r.nowArg(), r.sttl()).Slice()
	if err != nil {
		return Session{}, false, wrap("ensure session", err)
	}
	if len(v) != 4 {
		return Session{}, false, wrap("ensure session", fmt.Errorf("reply has %d items, want 4", len(v)))
	}
	created, err := toInt(v[0])
	if err != nil {
		return Session{}, false, wrap("ensure session", err)
	}
	s, err := sessionFrom(community, id, v[1:])
	if err != nil {
		return Session{}, false, wrap("ensure session", err)
	}
	return s, created == 1, nil
}

// Append adds msgs to the history, stamps activity and refreshes the session's TTLs in one
// script (which, unlike MULTI, can refuse a missing session).
func (r *Redis) Append(ctx context.Context, community, id string, msgs ...json.RawMessage) (int, error) {
	if err := validMessages(msgs); err != nil {
		return 0, err
	}
	k := r.keys(community, id)
	args := make([]any, 0, 2+len(msgs))
	args = append(args, r.nowArg(), r.sttl())
	for _, m := range msgs {
		args = append(args, []byte(m))
	}
	n, err := appendScript.Run(ctx, r.c, []string{k.meta, k.hist, k.rec, k.op()}, args...).Int64()
	if err != nil {
		return 0, wrap("append", err)
	}
	if n < 0 {
		return 0, ErrNotFound
	}
	r.touchAfter(ctx, community, id)
	return int(n), nil
}

// touch moves the session's attached files and kept runs to the session's new expiry
// (touchScript); the caller has just refreshed the session. They live in the community's hash
// tag, which no session script can reach, hence a script of its own.
func (r *Redis) touch(ctx context.Context, community, id string) error {
	a := r.artifactKeys(community)
	return touchScript.Run(ctx, r.c, []string{a.ftotal, a.fexp, a.fsize, a.runs(id), a.idx, a.size, a.owner, a.total, a.seq, a.rexp},
		r.nowArg(), r.sttl(), enc(id)).Err()
}

// touchFailed logs a touch that got no answer: the session's own write has happened (and must
// not be reported failed, or the caller would send it again), and its files and runs keep their
// previous expiry.
func (r *Redis) touchFailed(ctx context.Context, community string, err error) {
	r.log.LogAttrs(ctx, slog.LevelWarn, "extending a session's attached files and kept runs failed; they keep their previous expiry",
		slog.String("community", community), slog.Any("error", err))
}

// touchAfter runs touch after a script that refreshed the session. It is a second round
// trip rather than one pipelined with the session's script: it must not run when that script
// found the session dead (it would keep a dead session's files), and a pipelined EVALSHA
// cannot fall back to EVAL on NOSCRIPT.
func (r *Redis) touchAfter(ctx context.Context, community, id string) {
	if err := r.touch(ctx, community, id); err != nil {
		r.touchFailed(ctx, community, err)
	}
}

// History returns the session's messages in order (one MULTI, so the check and the read see
// the same state).
func (r *Redis) History(ctx context.Context, community, id string) ([]json.RawMessage, error) {
	k := r.keys(community, id)
	var active *redis.StringCmd
	var list *redis.StringSliceCmd
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		active = p.HGet(ctx, k.meta, "active")
		list = p.LRange(ctx, k.hist, 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap("history", err)
	}
	a, err := active.Int64()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrap("history", err)
	}
	if r.expired(a) {
		return nil, ErrNotFound
	}
	msgs, err := list.Result()
	if err != nil {
		return nil, wrap("history", err)
	}
	out := make([]json.RawMessage, len(msgs))
	for i, m := range msgs {
		out[i] = json.RawMessage(m)
	}
	return out, nil
}

// DeleteSession removes the session's meta, history, parked call and kept files.
func (r *Redis) DeleteSession(ctx context.Context, community, id string) error {
	k := r.keys(community, id)
	if err := r.c.Del(ctx, k.meta, k.hist, k.park, k.rec).Err(); err != nil {
		return wrap("delete session", err)
	}
	a := r.artifactKeys(community)
	if err := dropRunsScript.Run(ctx, r.c, []string{a.runs(id), a.idx, a.size, a.owner, a.total, a.rexp, a.op()}, r.nowArg()).Err(); err != nil {
		return wrap("delete session", err)
	}
	if err := dropFilesScript.Run(ctx, r.c, []string{a.files(id), a.metas(id), a.ftotal, a.fexp, a.fsize, a.op()}, r.nowArg(), enc(id)).Err(); err != nil {
		return wrap("delete session", err)
	}
	return nil
}

// PutFiles attaches files in putFilesScript, all or nothing. They expire with the session (its
// expiry is passed, and judged by the script's clock); every later refresh of the session
// moves them along (touchAfter). The script answers the session's files, so nothing is read
// after the write; a write whose answer was lost is settled before PutFiles answers, and one
// that could not be settled in time is undone in the background if it ran (fileWrite).
func (r *Redis) PutFiles(ctx context.Context, community, id string, files []NewFile, lim FileLimits) ([]SessionFile, error) {
	s, err := r.Session(ctx, community, id)
	if err != nil {
		return nil, err
	}
	now, err := r.clock(ctx)
	if err != nil {
		return nil, err
	}
	a := r.artifactKeys(community)
	exp := s.LastActive.UnixMilli() + r.sttl()
	args := []any{r.nowArg(), exp, r.limits.ArtifactBytes, lim.MaxFiles, lim.MaxSessionBytes, runOverhead, enc(id),
		lim.Client, lim.maxClient(r.limits.ArtifactBytes), now.Add(r.window).UnixMilli()}
	for _, f := range lastByName(files) {
		meta, err := json.Marshal(newFileMeta(f, now.UnixMilli()))
		if err != nil {
			return nil, fmt.Errorf("store: encoding a file's metadata: %w", err)
		}
		args = append(args, f.Name, meta, f.Data)
	}
	w := r.fileWrite(community, id)
	v, err := w.run(ctx, "put files", func() (any, error) {
		return putFilesScript.Run(ctx, r.c, []string{a.files(id), a.metas(id), a.idx, a.size, a.owner, a.total, a.rexp, a.ftotal, a.fexp, a.fsize, w.undo, w.op}, args...).Result()
	})
	if err != nil {
		return nil, err
	}
	list, err := filesReply(v)
	if err == nil {
		w.kept()
	}
	return list, err
}

// filesReply decodes putFilesScript's reply: from the script ({1, name, meta, ...} with an
// integer) or from its operation key (the same as JSON, numbers as float64).
func filesReply(v any) ([]SessionFile, error) {
	var status any = v
	list, isList := v.([]any)
	if isList && len(list) > 0 {
		status = list[0]
	}
	n, err := toInt(status)
	if err != nil {
		return nil, wrap("put files", err)
	}
	switch n {
	case 1:
	case -1:
		return nil, ErrTooManyFiles
	case -2:
		return nil, ErrSessionFilesFull
	case -3:
		return nil, ErrArtifactBudget
	case -4:
		return nil, ErrNotFound
	case -5:
		return nil, ErrClientFilesFull
	case -6:
		return nil, ErrNameClash
	default: // -7: it ran past its deadline, so it wrote nothing
		return nil, wrap("put files", fmt.Errorf("reply %d", n))
	}
	if !isList || len(list)%2 != 1 {
		return nil, wrap("put files", fmt.Errorf("reply has %d items", len(list)))
	}
	out := make([]SessionFile, 0, len(list)/2)
	for i := 2; i < len(list); i += 2 {
		meta, ok := list[i].(string)
		var f SessionFile
		if !ok || json.Unmarshal([]byte(meta), &f) != nil {
			return nil, wrap("put files", fmt.Errorf("reply item %d is not a file's metadata", i))
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b SessionFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// writeWindow is how long after it was sent a write of attached files (PutFiles, DeleteFile)
// may still take effect: a script that runs later, having waited in a stalled server while its
// caller gave up, writes nothing. settleMargin allows for the caller's clock and the server's
// to differ. undoMargin is how long before its operation key expires (opTTL after the script
// ran, so at least opTTL after it was sent) a write is last settled in the background.
const (
	writeWindow  = 10 * time.Second
	settleMargin = time.Second
	undoMargin   = 5 * time.Second
)

// settledMark is what settle leaves under an operation key whose script had not run: once()
// returns it instead of running the script, as -7 (past its deadline).
const settledMark = "-7"

// fileWrite is one write of a session's attached files (putFilesScript, deleteFileScript), with
// its operation key and undo record (luaUndo), so that its answer is what is stored:
//
//   - answered (at once, or by the client's retry): that answer;
//   - its answer lost: settled before it answers (settle), so either it ran (its reply is the
//     answer) or it never will (an error);
//   - not settled within its window (Redis unreachable past it, a partition): it answers an
//     error, and goes on settling in the background (undoLater): if the script had run, it is
//     undone from its undo record as soon as Redis answers, for as long as that record lives.
//
// kept deletes the undo record once a success is answered.
type fileWrite struct {
	r                  *Redis
	community, id      string
	op, undo           string
	sent, until, undos time.Time // when it was sent; settled until; undone in the background until
}

func (r *Redis) fileWrite(community, id string) *fileWrite {
	op := r.artifactKeys(community).op()
	now := time.Now()
	return &fileWrite{r: r, community: community, id: id, op: op, undo: op + ":undo", sent: now,
		until: now.Add(r.window + settleMargin), undos: now.Add(opTTL - undoMargin)}
}

// run sends the write and answers its reply, settling it when it was lost (see fileWrite);
// what names it in errors.
func (w *fileWrite) run(ctx context.Context, what string, send func() (any, error)) (any, error) {
	v, err := send()
	if err == nil {
		return v, nil
	}
	cause := wrap(what, err)
	v, known := w.r.settle(ctx, w.op, w.until)
	switch {
	case !known:
		w.r.undoLater(w)
		return nil, cause
	case v == nil:
		return nil, cause // it had not run, and never will
	}
	return v, nil
}

// kept drops the undo record of a write answered as done: nothing will undo it.
func (w *fileWrite) kept() {
	ctx, cancel := context.WithTimeout(w.r.bg, time.Second)
	defer cancel()
	_ = w.r.c.Del(ctx, w.undo).Err() // else it expires with the operation key
}

// settle finds out whether a script whose answer was lost ran, and what it answered. It claims
// the script's operation key with settledMark: if the claim succeeds the script had not run
// and never will (once() finds the mark), and settle reports nil; if the key is there already
// it holds the script's reply, which settle returns as JSON values. It tries until Redis
// answers or until (by this process's clock); known is false when it gave up.
func (r *Redis) settle(ctx context.Context, op string, until time.Time) (v any, known bool) {
	ctx = context.WithoutCancel(ctx) // the client's leaving does not change what was stored
	wait := 50 * time.Millisecond
	for {
		v, done := r.settleOnce(ctx, op)
		if done {
			if v == nil {
				r.log.LogAttrs(ctx, slog.LevelInfo, "a write whose answer was lost had not run; it never will")
			} else {
				r.log.LogAttrs(ctx, slog.LevelInfo, "a write whose answer was lost had run; answering its reply")
			}
			return v, true
		}
		if !time.Now().Add(wait).Before(until) {
			return nil, false
		}
		time.Sleep(wait)
		wait = min(2*wait, time.Second)
	}
}

// undoLater settles w in the background, once it has answered an error: if its script ran
// and wrote (its reply is 1, or the files), the write is undone (undoFilesScript). It tries
// until Redis answers, w.undos passes (its operation key and undo record may be gone after:
// then what was stored stays, and is logged as an error), or the store is closed.
func (r *Redis) undoLater(w *fileWrite) {
	if r.bg.Err() != nil {
		return // closed
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		log := r.log.With(slog.String("community", w.community))
		wait := releaseFirst
		settled := false
		for time.Now().Before(w.undos) {
			select {
			case <-r.bg.Done():
				return
			case <-time.After(wait):
			}
			wait = min(2*wait, releaseMax)
			if !settled {
				v, done := r.settleOnce(r.bg, w.op)
				if !done {
					continue
				}
				if !wrote(v) {
					log.LogAttrs(r.bg, slog.LevelInfo, "a write of attached files answered as failed had not written; nothing to undo")
					return
				}
				settled = true
			}
			a := r.artifactKeys(w.community)
			ctx, cancel := context.WithTimeout(r.bg, unlockTimeout)
			n, err := undoFilesScript.Run(ctx, r.c, []string{a.files(w.id), a.metas(w.id), a.ftotal, a.fexp, a.fsize, w.undo}, r.nowArg(), runOverhead).Int64()
			cancel()
			if err == nil {
				log.LogAttrs(r.bg, slog.LevelWarn, "a write of attached files answered as failed had been kept after all; undone", slog.Int64("files", n))
				return
			}
		}
		log.LogAttrs(r.bg, slog.LevelError, "a write of attached files answered as failed may have been kept: Redis did not answer before its undo record expired",
			slog.Duration("since", time.Since(w.sent)))
	}()
}

// wrote reports whether a file write's reply (as its operation key holds it, JSON) says it
// wrote: putFilesScript's {1, ...}, deleteFileScript's 1.
func wrote(v any) bool {
	if list, ok := v.([]any); ok && len(list) > 0 {
		v = list[0]
	}
	n, err := toInt(v)
	return err == nil && n == 1
}

// settleOnce is one try of settle: done when Redis answered, with the script's reply, or nil
// when the mark was set.
func (r *Redis) settleOnce(ctx context.Context, op string) (any, bool) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	set, err := r.c.SetNX(ctx, op, settledMark, opTTL).Result()
	if err != nil {
		return nil, false
	}
	if set {
		return nil, true
	}
	prior, err := r.c.Get(ctx, op).Result()
	if err != nil {
		return nil, false
	}
	var v any
	if err := json.Unmarshal([]byte(prior), &v); err != nil {
		return nil, false
	}
	return v, true
}

// Files lists the session's attached files by name.
func (r *Redis) Files(ctx context.Context, community, id string) ([]SessionFile, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return nil, err
	}
	a := r.artifactKeys(community)
	m, err := listFilesScript.Run(ctx, r.c, []string{a.metas(id), a.fexp}, r.nowArg(), enc(id)).StringSlice()
	if err != nil {
		return nil, wrap("files", err)
	}
	out := make([]SessionFile, 0, len(m)/2)
	for i := 1; i < len(m); i += 2 {
		var f SessionFile
		if err := json.Unmarshal([]byte(m[i]), &f); err != nil {
			return nil, wrap("files", err)
		}
		out = append(out, f)
	}
	slices.SortFunc(out, func(a, b SessionFile) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// File returns one attached file and its bytes.
func (r *Redis) File(ctx context.Context, community, id, name string) (SessionFile, []byte, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return SessionFile{}, nil, err
	}
	a := r.artifactKeys(community)
	v, err := getFileScript.Run(ctx, r.c, []string{a.files(id), a.metas(id), a.fexp}, r.nowArg(), enc(id), name).StringSlice()
	if err != nil {
		return SessionFile{}, nil, wrap("file", err)
	}
	if len(v) != 2 {
		return SessionFile{}, nil, ErrNotFound
	}
	var f SessionFile
	if err := json.Unmarshal([]byte(v[0]), &f); err != nil {
		return SessionFile{}, nil, wrap("file", err)
	}
	return f, []byte(v[1]), nil
}

// ViewFile is File's bytes without a copy of the reply.
func (r *Redis) ViewFile(ctx context.Context, community, id, name string) ([]byte, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return nil, err
	}
	a := r.artifactKeys(community)
	v, err := getFileScript.Run(ctx, r.c, []string{a.files(id), a.metas(id), a.fexp}, r.nowArg(), enc(id), name).StringSlice()
	if err != nil {
		return nil, wrap("file", err)
	}
	if len(v) != 2 {
		return nil, ErrNotFound
	}
	return readOnly(v[1]), nil
}

// DeleteFile removes one attached file (deleteFileScript); a delete whose answer was lost is
// settled before it answers, and one that could not be settled in time is undone in the
// background if it ran (fileWrite).
func (r *Redis) DeleteFile(ctx context.Context, community, id, name string) (bool, error) {
	now, err := r.clock(ctx)
	if err != nil {
		return false, err
	}
	a := r.artifactKeys(community)
	w := r.fileWrite(community, id)
	v, err := w.run(ctx, "delete file", func() (any, error) {
		return deleteFileScript.Run(ctx, r.c, []string{a.files(id), a.metas(id), a.ftotal, a.fexp, a.fsize, w.undo, w.op}, r.nowArg(), name, runOverhead, enc(id),
			now.Add(r.window).UnixMilli()).Result()
	})
	if err != nil {
		return false, err
	}
	n, err := toInt(v)
	if err != nil || n < 0 {
		return false, wrap("delete file", fmt.Errorf("reply %v (%v)", v, err))
	}
	if n == 1 {
		w.kept()
	}
	return n == 1, nil
}

// encodeCall is the stored form of a parked call: args compacted, CreatedAt left to the store.
func encodeCall(call ParkedCall) ([]byte, error) {
	args, err := normalizeArgs(call.Args)
	if err != nil {
		return nil, err
	}
	call.Args = args
	call.CreatedAt = time.Time{}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(call); err != nil {
		return nil, fmt.Errorf("store: encoding parked call: %w", err)
	}
	return bytes.TrimSpace(buf.Bytes()), nil
}

// Park appends msgs and parks the call, stamped with the store's clock, in one script.
func (r *Redis) Park(ctx context.Context, community, id string, call ParkedCall, msgs ...json.RawMessage) error {
	enc, err := encodeCall(call)
	if err != nil {
		return err
	}
	if err := validMessages(msgs); err != nil {
		return err
	}
	k := r.keys(community, id)
	// The key lives as long as the session, not just ParkedTTL: the call's age is judged from
	// its stamp, and a call found expired (by Claim) or left over (by Abandon on the next
	// message) must still be there to be closed in the history; a call that vanished with
	// its key would leave an unanswered tool_use that the model API refuses.
	args := []any{r.nowArg(), r.sttl(), call.CallID, enc, r.sttl()}
	for _, m := range msgs {
		args = append(args, []byte(m))
	}
	n, err := parkScript.Run(ctx, r.c, []string{k.meta, k.hist, k.park, k.rec, k.op()}, args...).Int64()
	if err != nil {
		return wrap("park", err)
	}
	switch n {
	case -1:
		return ErrNotFound
	case -2:
		return ErrAlreadyParked
	}
	if len(msgs) > 0 { // the session was refreshed
		r.touchAfter(ctx, community, id)
	}
	return nil
}

// parkedFrom decodes a stored call and its park time (unix ms).
func parkedFrom(at, call any) (ParkedCall, error) {
	ms, err := toInt(at)
	if err != nil {
		return ParkedCall{}, fmt.Errorf("parked call time: %w", err)
	}
	s, ok := call.(string)
	if !ok {
		return ParkedCall{}, fmt.Errorf("parked call: unexpected reply %T", call)
	}
	var p ParkedCall
	if err := json.Unmarshal([]byte(s), &p); err != nil {
		return ParkedCall{}, fmt.Errorf("parked call: %w", err)
	}
	if string(p.Args) == "null" {
		p.Args = nil
	}
	p.CreatedAt = msTime(ms)
	return p, nil
}

// Parked reads the parked call without removing it.
func (r *Redis) Parked(ctx context.Context, community, id string) (ParkedCall, bool, error) {
	k := r.keys(community, id)
	v, err := parkedScript.Run(ctx, r.c, []string{k.park, k.meta}, r.nowArg(), r.sttl()).Slice()
	if err != nil {
		return ParkedCall{}, false, wrap("parked", err)
	}
	status, err := replyStatus(v)
	if err != nil {
		return ParkedCall{}, false, wrap("parked", err)
	}
	if status == 0 {
		return ParkedCall{}, false, nil
	}
	if len(v) != 3 {
		return ParkedCall{}, false, wrap("parked", fmt.Errorf("reply has %d items, want 3", len(v)))
	}
	p, err := parkedFrom(v[1], v[2])
	if err != nil {
		return ParkedCall{}, false, wrap("parked", err)
	}
	return p, true, nil
}

// Claim runs claimScript: of any number of concurrent claims, on any replicas, at most one
// gets the call, and its answer is appended in the same step.
func (r *Redis) Claim(ctx context.Context, community, id, callID string, answer, late json.RawMessage) (ParkedCall, error) {
	if err := validOptional(answer, late); err != nil {
		return ParkedCall{}, err
	}
	k := r.keys(community, id)
	v, err := claimScript.Run(ctx, r.c, []string{k.park, k.meta, k.hist, k.rec, k.op()},
		r.nowArg(), r.sttl(), callID, r.limits.ParkedTTL.Milliseconds(), []byte(answer), []byte(late)).Slice()
	if err != nil {
		return ParkedCall{}, wrap("claim", err)
	}
	status, err := replyStatus(v)
	if err != nil {
		return ParkedCall{}, wrap("claim", err)
	}
	if status == 0 {
		return ParkedCall{}, ErrNoParkedCall
	}
	if len(v) != 3 {
		return ParkedCall{}, wrap("claim", fmt.Errorf("reply has %d items, want 3", len(v)))
	}
	p, err := parkedFrom(v[1], v[2])
	if err != nil {
		return ParkedCall{}, wrap("claim", err)
	}
	if (status == 1 && len(answer) > 0) || (status == 2 && len(late) > 0) { // appended: refreshed
		r.touchAfter(ctx, community, id)
	}
	if status == 2 {
		return p, ErrNoParkedCall
	}
	return p, nil
}

func replyStatus(v []any) (int64, error) {
	if len(v) == 0 {
		return 0, errors.New("empty reply")
	}
	return toInt(v[0])
}

// Abandon removes the parked call if its id is callID and appends closing, in one script.
func (r *Redis) Abandon(ctx context.Context, community, id, callID string, closing json.RawMessage) (bool, error) {
	if err := validOptional(closing); err != nil {
		return false, err
	}
	k := r.keys(community, id)
	n, err := abandonScript.Run(ctx, r.c, []string{k.park, k.meta, k.hist, k.rec, k.op()}, r.nowArg(), r.sttl(), callID, []byte(closing)).Int64()
	if err != nil {
		return false, wrap("abandon", err)
	}
	if n == 1 && len(closing) > 0 { // appended: refreshed
		r.touchAfter(ctx, community, id)
	}
	return n == 1, nil
}

// Lock takes the session's turn lock (SET PX with a random token, in lockScript). The
// returned func deletes the lock only while this token holds it; it uses its own short
// timeout, so it also works after the turn's context has ended. A take or a release that
// fails (Redis stalled or gone) is released in the background until it succeeds or the lock
// would have expired anyway, so no orphan lock shuts a session out once Redis is back.
func (r *Redis) Lock(ctx context.Context, community, id string, ttl time.Duration) (func(), error) {
	if ttl < time.Millisecond {
		return nil, fmt.Errorf("store: lock ttl %v is under a millisecond", ttl)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	token := hex.EncodeToString(b[:])
	key := r.keys(community, id).lock
	n, err := lockScript.Run(ctx, r.c, []string{key}, r.nowArg(), token, ttl.Milliseconds()).Int64()
	if err != nil {
		// The take may have run with its reply lost: release it, or it would hold the session
		// for the whole ttl.
		r.releaseLater(community, key, token, ttl)
		return nil, wrap("lock", err)
	}
	if n != 1 {
		return nil, ErrBusy
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(r.bg, unlockTimeout)
			defer cancel()
			if err := unlockScript.Run(ctx, r.c, []string{key}, token).Err(); err != nil {
				r.log.LogAttrs(ctx, slog.LevelWarn, "releasing a session lock failed; retrying in the background",
					slog.String("community", community), slog.Any("error", err))
				r.releaseLater(community, key, token, ttl)
			}
		})
	}, nil
}

// Release retries: from releaseFirst, doubling up to releaseMax, until the lock is released or
// releaseChecks answers found it not held.
const (
	releaseFirst  = 100 * time.Millisecond
	releaseMax    = 2 * time.Second
	releaseChecks = 4
)

// releaseLater keeps trying to release token's lock until it succeeds, the lock's ttl has
// passed (it expired by itself), or the store is closed.
func (r *Redis) releaseLater(community, key, token string, ttl time.Duration) {
	if r.bg.Err() != nil {
		return // closed
	}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		deadline := time.Now().Add(ttl)
		wait := releaseFirst
		notHeld := 0
		for time.Now().Before(deadline) {
			select {
			case <-r.bg.Done():
				return
			case <-time.After(wait):
			}
			ctx, cancel := context.WithTimeout(r.bg, unlockTimeout)
			n, err := unlockScript.Run(ctx, r.c, []string{key}, token).Int64()
			cancel()
			switch {
			case err == nil && n == 1:
				r.log.LogAttrs(r.bg, slog.LevelInfo, "session lock released after a store failure", slog.String("community", community))
				return
			case err == nil:
				// Not held (yet): a take still in flight on a dead connection may land after
				// this answer, so look a few more times before giving up.
				if notHeld++; notHeld >= releaseChecks {
					return
				}
			}
			wait = min(2*wait, releaseMax)
		}
	}()
}

// Allow counts one event in allowScript; the window's key expires when the window ends.
func (r *Redis) Allow(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	w := window.Milliseconds()
	if w < 1 {
		return false, 0, fmt.Errorf("store: rate window %v is under a millisecond", window)
	}
	v, err := allowScript.Run(ctx, r.c, []string{r.rateKey(key, w), r.rateKey(key, w) + ":op:" + newOp()}, r.nowArg(), w).Int64Slice()
	if err != nil {
		return false, 0, wrap("allow", err)
	}
	if len(v) != 2 {
		return false, 0, wrap("allow", fmt.Errorf("reply has %d items, want 2", len(v)))
	}
	if v[0] > int64(limit) {
		return false, time.Duration(v[1]) * time.Millisecond, nil
	}
	return true, 0, nil
}

// AddCost adds usd to the day and month totals (costScript). The day is read from the
// store's clock just before.
func (r *Redis) AddCost(ctx context.Context, community string, usd float64) (float64, float64, error) {
	if err := validCost(usd); err != nil {
		return 0, 0, err
	}
	now, err := r.clock(ctx)
	if err != nil {
		return 0, 0, err
	}
	dk, mk, op := r.costKeys(community, now)
	v, err := costScript.Run(ctx, r.c, []string{dk, mk, op}, r.nowArg(), strconv.FormatFloat(usd, 'f', -1, 64),
		int64(costDayTTL/time.Second), int64(costMonthTTL/time.Second)).StringSlice()
	if err != nil {
		return 0, 0, wrap("add cost", err)
	}
	if len(v) != 2 {
		return 0, 0, wrap("add cost", fmt.Errorf("reply has %d items, want 2", len(v)))
	}
	var out [2]float64
	for i, x := range v {
		if out[i], err = strconv.ParseFloat(x, 64); err != nil {
			return 0, 0, wrap("add cost", err)
		}
	}
	return out[0], out[1], nil
}

// Costs reads the day and month totals.
func (r *Redis) Costs(ctx context.Context, community string) (float64, float64, error) {
	now, err := r.clock(ctx)
	if err != nil {
		return 0, 0, err
	}
	dk, mk, _ := r.costKeys(community, now)
	v, err := r.c.MGet(ctx, dk, mk).Result()
	if err != nil {
		return 0, 0, wrap("costs", err)
	}
	var out [2]float64
	for i, x := range v {
		if x == nil {
			continue
		}
		s, ok := x.(string)
		if !ok {
			return 0, 0, wrap("costs", fmt.Errorf("unexpected reply %T", x))
		}
		if out[i], err = strconv.ParseFloat(s, 64); err != nil {
			return 0, 0, wrap("costs", err)
		}
	}
	return out[0], out[1], nil
}

// Close stops the background lock releases and closes the connection pool.
func (r *Redis) Close() error {
	r.stopBg()
	r.wg.Wait()
	return r.c.Close()
}

// PutRun records a run in putRecordScript: numbered in the session's meta, kept in its list of
// records (the newest MaxRunRecords), expiring with the session.
func (r *Redis) PutRun(ctx context.Context, community, id string, rec RunRecord) (RunRecord, error) {
	rec = ClipRun(rec)
	rec.Ordinal, rec.Time = 0, time.Time{} // the stored prefix carries them
	b, err := json.Marshal(rec)
	if err != nil {
		return RunRecord{}, fmt.Errorf("store: encoding a run record: %w", err)
	}
	k := r.keys(community, id)
	v, err := putRecordScript.Run(ctx, r.c, []string{k.meta, k.rec, k.op()}, r.nowArg(), r.sttl(), MaxRunRecords, b).Slice()
	if err != nil {
		return RunRecord{}, wrap("put run", err)
	}
	n, err := replyStatus(v)
	if err != nil {
		return RunRecord{}, wrap("put run", err)
	}
	if n < 0 {
		return RunRecord{}, ErrNotFound
	}
	if len(v) != 2 {
		return RunRecord{}, wrap("put run", fmt.Errorf("reply has %d items, want 2", len(v)))
	}
	at, err := toInt(v[1])
	if err != nil {
		return RunRecord{}, wrap("put run", err)
	}
	rec.Ordinal, rec.Time = int(n), msTime(at)
	return rec, nil
}

// Runs returns the session's kept run records, oldest first (one MULTI, as History).
func (r *Redis) Runs(ctx context.Context, community, id string) ([]RunRecord, error) {
	k := r.keys(community, id)
	var active *redis.StringCmd
	var list *redis.StringSliceCmd
	_, err := r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		active = p.HGet(ctx, k.meta, "active")
		list = p.LRange(ctx, k.rec, 0, -1)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, wrap("runs", err)
	}
	a, err := active.Int64()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrap("runs", err)
	}
	if r.expired(a) {
		return nil, ErrNotFound
	}
	items, err := list.Result()
	if err != nil {
		return nil, wrap("runs", err)
	}
	out := make([]RunRecord, 0, len(items))
	for _, it := range items {
		rec, err := recordFrom(it)
		if err != nil {
			return nil, wrap("runs", err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// recordFrom decodes a stored record, "<ordinal>:<unix ms>:<JSON>".
func recordFrom(s string) (RunRecord, error) {
	ord, rest, ok1 := strings.Cut(s, ":")
	at, js, ok2 := strings.Cut(rest, ":")
	if !ok1 || !ok2 {
		return RunRecord{}, errors.New("run record: no ordinal and time")
	}
	n, err := strconv.Atoi(ord)
	if err != nil {
		return RunRecord{}, fmt.Errorf("run record ordinal: %w", err)
	}
	ms, err := strconv.ParseInt(at, 10, 64)
	if err != nil {
		return RunRecord{}, fmt.Errorf("run record time: %w", err)
	}
	var rec RunRecord
	if err := json.Unmarshal([]byte(js), &rec); err != nil {
		return RunRecord{}, fmt.Errorf("run record: %w", err)
	}
	if rec.Files == nil {
		rec.Files = []string{}
	}
	rec.Ordinal, rec.Time = n, msTime(ms)
	return rec, nil
}
