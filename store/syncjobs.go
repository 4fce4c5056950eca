package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The jobs of POST /sync/trigger (knowledge.md §7.3), kept in Redis so any replica answers
// GET /sync/jobs/{id}: each job's record (opaque JSON, the ingest package's) under
// prefix + "sync:{jobs}:" + its id, and an index of the ids by creation time, a sorted set
// under prefix + "sync:{jobs}:index", which bounds how many are kept. Both share one hash
// tag. A job lives ttl from its creation (by the store's clock: the injected one, else the
// server's TIME) and while it is among the newest keep.

func (r *Redis) syncJobKeys(id string) (index, job string) {
	base := r.prefix + "sync:{jobs}:"
	return base + "index", base + "j:" + enc(id)
}

// syncJobAddScript stores a new job and drops those past the bound or their age: KEYS index,
// job; ARGV now, id, record, ttl ms, keep, job key prefix. Reply 1.
var syncJobAddScript = redis.NewScript(luaNow + `
local ttl, keep = tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('SET', KEYS[2], ARGV[3], 'PX', ttl)
redis.call('ZADD', KEYS[1], now, ARGV[2])
local function drop(ids)
  for _, id in ipairs(ids) do redis.call('DEL', ARGV[6] .. id) end
end
local old = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ms(now - ttl))
drop(old)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', '(' .. ms(now - ttl))
local n = redis.call('ZCARD', KEYS[1])
if n > keep then
  local first = redis.call('ZRANGE', KEYS[1], 0, n - keep - 1)
  drop(first)
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - keep - 1)
end
redis.call('PEXPIRE', KEYS[1], ttl)
return 1
`)

// syncJobUpdateScript replaces a job's record while it is kept (never bringing back one that
// was dropped): KEYS index, job; ARGV now, id, record, ttl ms. Reply 1 replaced, 0 gone.
var syncJobUpdateScript = redis.NewScript(luaNow + `
local at = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not at or tonumber(at) + tonumber(ARGV[4]) <= now then return 0 end
if redis.call('EXISTS', KEYS[2]) == 0 then return 0 end
redis.call('SET', KEYS[2], ARGV[3], 'KEEPTTL')
return 1
`)

// syncJobGetScript returns a kept job's record, or false: KEYS index, job; ARGV now, id, ttl
// ms.
var syncJobGetScript = redis.NewScript(luaNow + `
local at = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not at or tonumber(at) + tonumber(ARGV[3]) <= now then return false end
return redis.call('GET', KEYS[2])
`)

// AddSyncJob stores a new sync job's record, kept for ttl and while it is among the newest
// keep jobs (an older one is dropped to make room).
func (r *Redis) AddSyncJob(ctx context.Context, id string, record []byte, ttl time.Duration, keep int) error {
	if ttl < time.Millisecond || keep < 1 {
		return fmt.Errorf("store: sync job ttl %v or bound %d out of range", ttl, keep)
	}
	index, job := r.syncJobKeys(id)
	// The index holds encoded ids, so the script can build a dropped job's key from it.
	err := syncJobAddScript.Run(ctx, r.c, []string{index, job}, r.nowArg(), enc(id), record,
		ttl.Milliseconds(), keep, r.prefix+"sync:{jobs}:j:").Err()
	if err != nil {
		return wrap("sync job", err)
	}
	return nil
}

// UpdateSyncJob replaces a kept job's record; ok is false when the job is gone (expired or
// dropped), and nothing is written then. ttl is the one the job was added with.
func (r *Redis) UpdateSyncJob(ctx context.Context, id string, record []byte, ttl time.Duration) (ok bool, err error) {
	index, job := r.syncJobKeys(id)
	n, err := syncJobUpdateScript.Run(ctx, r.c, []string{index, job}, r.nowArg(), enc(id), record, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, wrap("sync job", err)
	}
	return n == 1, nil
}

// SyncJob returns a kept job's record; ok is false when there is none (never added, expired
// or dropped). ttl is the one the job was added with.
func (r *Redis) SyncJob(ctx context.Context, id string, ttl time.Duration) (record []byte, ok bool, err error) {
	index, job := r.syncJobKeys(id)
	v, err := syncJobGetScript.Run(ctx, r.c, []string{index, job}, r.nowArg(), enc(id), strconv.FormatInt(ttl.Milliseconds(), 10)).Result()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, wrap("sync job", err)
	}
	s, isString := v.(string)
	if !isString {
		return nil, false, fmt.Errorf("store: sync job: unexpected reply %T", v)
	}
	return []byte(s), true, nil
}
