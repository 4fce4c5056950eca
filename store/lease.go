package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Leases of the sync runs (knowledge.md §6.1): one run per community and sync type at a time
// across every replica sharing this Redis. A lease is the key prefix + name (the runner names
// them "sync:{community}:{type}", so with the default prefix the key is the spec's
// assistant:sync:{community}:{type}) holding the taker's random token, with a TTL the holder
// renews. Only the holder's token renews or releases it (compare-and-set in Lua), so a run that
// lost its lease (it expired while Redis was unreachable, and another replica took it) can
// never release or extend the other's. The TTL is the Redis server's (PX), whatever clock the
// store was given.

// leaseTakeScript sets the lease if it is absent, or finds it already ours (the client sent the
// take again after losing the first reply): KEYS lease; ARGV token, ttl ms. Reply 1 taken, 0
// held by another.
var leaseTakeScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur == ARGV[1] then return 1 end
if cur then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', tonumber(ARGV[2]))
return 1
`)

// leaseRenewScript extends the lease while this token holds it: KEYS lease; ARGV token, ttl
// ms. Reply 1 renewed, 0 not held (expired, or another's).
var leaseRenewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]))
end
return 0
`)

// leaseReleaseScript deletes the lease while this token holds it: KEYS lease; ARGV token.
// Reply 1 released, 0 not held.
var leaseReleaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// AcquireLease takes the lease name for ttl. It returns the token that renews and releases
// it, or ok false when another holder has it. An error means Redis did not answer; the lease
// may then be held by nobody or, if the take ran, by this token until its TTL ends.
func (r *Redis) AcquireLease(ctx context.Context, name string, ttl time.Duration) (token string, ok bool, err error) {
	if ttl < time.Millisecond {
		return "", false, fmt.Errorf("store: lease ttl %v is under a millisecond", ttl)
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	token = hex.EncodeToString(b[:])
	n, err := leaseTakeScript.Run(ctx, r.c, []string{r.prefix + name}, token, ttl.Milliseconds()).Int64()
	if err != nil {
		return "", false, wrap("lease", err)
	}
	if n != 1 {
		return "", false, nil
	}
	return token, true, nil
}

// RenewLease sets the lease's TTL to ttl again while token holds it; held is false when it
// does not (it expired, or another holder took it since).
func (r *Redis) RenewLease(ctx context.Context, name, token string, ttl time.Duration) (held bool, err error) {
	if ttl < time.Millisecond {
		return false, fmt.Errorf("store: lease ttl %v is under a millisecond", ttl)
	}
	n, err := leaseRenewScript.Run(ctx, r.c, []string{r.prefix + name}, token, ttl.Milliseconds()).Int64()
	if err != nil {
		return false, wrap("lease renew", err)
	}
	return n == 1, nil
}

// ReleaseLease deletes the lease while token holds it; released is false when it did not.
func (r *Redis) ReleaseLease(ctx context.Context, name, token string) (released bool, err error) {
	n, err := leaseReleaseScript.Run(ctx, r.c, []string{r.prefix + name}, token).Int64()
	if err != nil {
		return false, wrap("lease release", err)
	}
	return n == 1, nil
}
