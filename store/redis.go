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
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Connection defaults, used when the URL does not set them (redis.ParseURL reads
// dial_timeout, read_timeout, write_timeout, pool_size, max_retries, ...).
const (
	redisDialTimeout  = 2 * time.Second
	redisReadTimeout  = 2 * time.Second
	redisWriteTimeout = 2 * time.Second
	redisPoolSize     = 20
	// redisMaxRetries is low on purpose: a script whose reply was lost is not re-run blindly
	// more than once (a retried Claim can only fail, never accept twice).
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
	HGet(ctx context.Context, key, field string) *redis.StringCmd
	LRange(ctx context.Context, key string, start, stop int64) *redis.StringSliceCmd
	Time(ctx context.Context) *redis.TimeCmd
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
//	P s:{c:i}:meta      hash {created, active, count}   TTL SessionTTL, refreshed by Append
//	P s:{c:i}:hist      list of JSON messages           TTL SessionTTL, refreshed by Append
//	P s:{c:i}:park      hash {id, at, call}             TTL SessionTTL
//	P s:{c:i}:lock      string "<token>:<expires ms>"   TTL the lock's ttl
//	P rl:k:<window ms>  hash {s: window start, n}       TTL until the window ends
//	P s:{c:i}:art:k     hash {path: bytes} of one run   TTL what is left of the session's
//	P s:{c:i}:artruns   list of the runs with files     TTL the same; at most MaxArtifactRuns
//	P cost:c:YYYY-MM-DD float (USD)                     TTL 48 h, refreshed by AddCost
//	P cost:c:YYYY-MM    float (USD)                     TTL 40 days, refreshed by AddCost
//
// A session's keys share one hash tag, so its multi-key scripts also run on a Redis Cluster.
//
// # When Redis is down
//
// NewRedis fails when the first PING fails, so a process does not start without its store.
// Afterwards every method returns the error (after the client's timeouts, 2 s by default, and
// at most one retry); nothing is guessed: Allow reports ok == false alongside the error, and
// the caller must fail the request (refuse rather than serve unmetered). No method turns a
// Redis failure into ErrNotFound, ErrNoParkedCall or ErrBusy.
type Redis struct {
	c      redisConn
	prefix string
	limits Limits
	now    func() time.Time
	log    *slog.Logger
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
	return &Redis{c: client, prefix: prefix, limits: opts.Limits.withDefaults(), now: opts.Now, log: log}, nil
}

func enc(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }

type sessionKeys struct{ meta, hist, park, lock string }

func (r *Redis) keys(community, id string) sessionKeys {
	base := r.prefix + "s:{" + enc(community) + ":" + enc(id) + "}:"
	return sessionKeys{meta: base + "meta", hist: base + "hist", park: base + "park", lock: base + "lock"}
}

// artifactKey holds one run's files as a hash of path → bytes, beside the session's keys.
func (r *Redis) artifactKey(community, id, callID string) string {
	return r.prefix + "s:{" + enc(community) + ":" + enc(id) + "}:art:" + enc(callID)
}

// PutArtifacts keeps a run's files with the session, expiring with it.
func (r *Redis) PutArtifacts(ctx context.Context, community, id, callID string, files map[string][]byte) error {
	s, err := r.Session(ctx, community, id)
	if err != nil {
		return err
	}
	k := r.artifactKey(community, id, callID)
	ttl := r.limits.SessionTTL
	if rest := time.Until(s.LastActive.Add(r.limits.SessionTTL)); rest > 0 && r.now == nil {
		ttl = rest
	}
	// The session's runs with files, newest first; runs past MaxArtifactRuns lose theirs.
	order := r.prefix + "s:{" + enc(community) + ":" + enc(id) + "}:artruns"
	_, err = r.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
		pipe.LRem(ctx, order, 0, callID)
		pipe.LPush(ctx, order, callID)
		pipe.PExpire(ctx, order, ttl)
		pipe.Del(ctx, k)
		if len(files) > 0 {
			vals := make([]any, 0, 2*len(files))
			for p, b := range files {
				vals = append(vals, p, b)
			}
			pipe.HSet(ctx, k, vals...)
			pipe.PExpire(ctx, k, ttl)
		}
		return nil
	})
	if err != nil {
		return wrap("put artifacts", err)
	}
	old, err := r.c.LRange(ctx, order, MaxArtifactRuns, -1).Result()
	if err != nil {
		return wrap("put artifacts", err)
	}
	if len(old) > 0 {
		_, err = r.c.TxPipelined(ctx, func(pipe redis.Pipeliner) error {
			for _, o := range old {
				pipe.Del(ctx, r.artifactKey(community, id, o))
			}
			pipe.LTrim(ctx, order, 0, MaxArtifactRuns-1)
			return nil
		})
		if err != nil {
			return wrap("put artifacts", err)
		}
	}
	return nil
}

// Artifact returns one kept file.
func (r *Redis) Artifact(ctx context.Context, community, id, callID, path string) ([]byte, error) {
	if _, err := r.Session(ctx, community, id); err != nil {
		return nil, err
	}
	b, err := r.c.HGet(ctx, r.artifactKey(community, id, callID), path).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, ErrNotFound
	}
	if err != nil {
		return nil, wrap("artifact", err)
	}
	return b, nil
}

func (r *Redis) rateKey(key string, window int64) string {
	return r.prefix + "rl:" + enc(key) + ":" + strconv.FormatInt(window, 10)
}

func (r *Redis) costKeys(community string, now time.Time) (day, month string) {
	d, m := costPeriods(now)
	base := r.prefix + "cost:" + enc(community) + ":"
	return base + d, base + m
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
		return time.Time{}, fmt.Errorf("store: redis time: %w", err)
	}
	return t, nil
}

// expired reports whether a session last active at active (unix ms) is dead by the injected
// clock. Without one the key's TTL has already judged it with the server's clock.
func (r *Redis) expired(active int64) bool {
	return r.now != nil && active+r.sttl() <= r.now().UnixMilli()
}

func wrap(op string, err error) error { return fmt.Errorf("store: redis %s: %w", op, err) }

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

// toInt reads an integer reply or a decimal string.
func toInt(x any) (int64, error) {
	switch v := x.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	default:
		return 0, fmt.Errorf("unexpected reply %T", x)
	}
}

// EnsureSession returns the live session or creates it (wiping an expired one), atomically.
func (r *Redis) EnsureSession(ctx context.Context, community, id string) (Session, bool, error) {
	k := r.keys(community, id)
	v, err := ensureScript.Run(ctx, r.c, []string{k.meta, k.hist, k.park}, r.nowArg(), r.sttl()).Slice()
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
	n, err := appendScript.Run(ctx, r.c, []string{k.meta, k.hist}, args...).Int64()
	if err != nil {
		return 0, wrap("append", err)
	}
	if n < 0 {
		return 0, ErrNotFound
	}
	return int(n), nil
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

// DeleteSession removes the session's meta, history and parked call.
func (r *Redis) DeleteSession(ctx context.Context, community, id string) error {
	k := r.keys(community, id)
	if err := r.c.Del(ctx, k.meta, k.hist, k.park).Err(); err != nil {
		return wrap("delete session", err)
	}
	return nil
}

// Park replaces the session's parked call, stamped with the store's clock.
func (r *Redis) Park(ctx context.Context, community, id string, call ParkedCall) error {
	args, err := normalizeArgs(call.Args)
	if err != nil {
		return err
	}
	call.Args = args
	call.CreatedAt = time.Time{}
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(call); err != nil {
		return fmt.Errorf("store: encoding parked call: %w", err)
	}
	k := r.keys(community, id)
	// The key lives as long as the session, not just ParkedTTL: the call's age is judged from
	// its stamp, and a call found expired (by Claim) or left over (by Abandon on the next
	// message) must still be there to be closed in the history; a call that vanished with
	// its key would leave an unanswered tool_use that the model API refuses.
	pttl := r.sttl()
	n, err := parkScript.Run(ctx, r.c, []string{k.meta, k.park},
		r.nowArg(), r.sttl(), call.CallID, bytes.TrimSpace(buf.Bytes()), pttl).Int64()
	if err != nil {
		return wrap("park", err)
	}
	if n < 0 {
		return ErrNotFound
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

// Claim runs claimScript: of any number of concurrent claims, on any replicas, at most one
// gets the call.
func (r *Redis) Claim(ctx context.Context, community, id, callID string) (ParkedCall, error) {
	k := r.keys(community, id)
	v, err := claimScript.Run(ctx, r.c, []string{k.park, k.meta},
		r.nowArg(), r.sttl(), callID, r.limits.ParkedTTL.Milliseconds()).Slice()
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

// Abandon removes and returns the parked call, whatever its age.
func (r *Redis) Abandon(ctx context.Context, community, id string) (ParkedCall, bool, error) {
	k := r.keys(community, id)
	v, err := abandonScript.Run(ctx, r.c, []string{k.park, k.meta}, r.nowArg(), r.sttl()).Slice()
	if err != nil {
		return ParkedCall{}, false, wrap("abandon", err)
	}
	status, err := replyStatus(v)
	if err != nil {
		return ParkedCall{}, false, wrap("abandon", err)
	}
	if status == 0 {
		return ParkedCall{}, false, nil
	}
	if len(v) != 3 {
		return ParkedCall{}, false, wrap("abandon", fmt.Errorf("reply has %d items, want 3", len(v)))
	}
	p, err := parkedFrom(v[1], v[2])
	if err != nil {
		return ParkedCall{}, false, wrap("abandon", err)
	}
	return p, true, nil
}

// Lock takes the session's turn lock (SET PX with a random token, in lockScript). The
// returned func deletes the lock only while this token holds it; it uses its own short
// timeout, so it also works after the turn's context has ended.
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
		return nil, wrap("lock", err)
	}
	if n != 1 {
		return nil, ErrBusy
	}
	base := context.WithoutCancel(ctx)
	var once sync.Once
	return func() {
		once.Do(func() {
			ctx, cancel := context.WithTimeout(base, unlockTimeout)
			defer cancel()
			if err := unlockScript.Run(ctx, r.c, []string{key}, token).Err(); err != nil {
				r.log.LogAttrs(ctx, slog.LevelWarn, "releasing session lock failed; it expires by its ttl",
					slog.String("community", community), slog.Any("error", err))
			}
		})
	}, nil
}

// Allow counts one event in allowScript; the window's key expires when the window ends.
func (r *Redis) Allow(ctx context.Context, key string, limit int, window time.Duration) (bool, time.Duration, error) {
	w := window.Milliseconds()
	if w < 1 {
		return false, 0, fmt.Errorf("store: rate window %v is under a millisecond", window)
	}
	v, err := allowScript.Run(ctx, r.c, []string{r.rateKey(key, w)}, r.nowArg(), w).Int64Slice()
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

// AddCost adds usd to the day and month totals (INCRBYFLOAT and EXPIRE in one MULTI). The
// day is read from the store's clock just before.
func (r *Redis) AddCost(ctx context.Context, community string, usd float64) (float64, float64, error) {
	if err := validCost(usd); err != nil {
		return 0, 0, err
	}
	now, err := r.clock(ctx)
	if err != nil {
		return 0, 0, err
	}
	dk, mk := r.costKeys(community, now)
	var d, m *redis.FloatCmd
	_, err = r.c.TxPipelined(ctx, func(p redis.Pipeliner) error {
		d = p.IncrByFloat(ctx, dk, usd)
		p.Expire(ctx, dk, costDayTTL)
		m = p.IncrByFloat(ctx, mk, usd)
		p.Expire(ctx, mk, costMonthTTL)
		return nil
	})
	if err != nil {
		return 0, 0, wrap("add cost", err)
	}
	return d.Val(), m.Val(), nil
}

// Costs reads the day and month totals.
func (r *Redis) Costs(ctx context.Context, community string) (float64, float64, error) {
	now, err := r.clock(ctx)
	if err != nil {
		return 0, 0, err
	}
	dk, mk := r.costKeys(community, now)
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

// Close closes the connection pool.
func (r *Redis) Close() error { return r.c.Close() }
