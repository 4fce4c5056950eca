package store

import "github.com/redis/go-redis/v9"

// The Lua scripts of the Redis store. Each runs atomically on the server, so two replicas
// never interleave inside one. Every script takes "now" (unix ms) as its first argument: a
// number when the store has an injected clock (tests), else empty, and then the script reads
// the Redis server's clock with TIME, so that every replica judges ages by one clock. Times are
// kept as decimal unix-ms strings.
//
// Session keys: meta is a hash {created, active, count}; hist a list of JSON messages; park a
// hash {id, at, call}; lock a string "<token>:<expires ms>". A session is alive while
// active + SessionTTL > now (the keys' own TTL enforces the same with the server clock).

const luaNow = `
local now = tonumber(ARGV[1])
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function alive(meta, sttl)
  local active = redis.call('HGET', meta, 'active')
  return active and tonumber(active) + sttl > now
end
local function ms(n) return string.format('%.0f', n) end
`

// ensureScript returns the live session or recreates it (wiping an expired one's history and
// parked call): KEYS meta, hist, park; ARGV now, session ttl ms. Reply {created 0|1, created
// ms, active ms, count}.
var ensureScript = redis.NewScript(luaNow + `
local sttl = tonumber(ARGV[2])
local m = redis.call('HMGET', KEYS[1], 'created', 'active', 'count')
if m[2] and tonumber(m[2]) + sttl > now then
  return {0, m[1], m[2], m[3]}
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
local n = ms(now)
redis.call('HSET', KEYS[1], 'created', n, 'active', n, 'count', 0)
redis.call('PEXPIRE', KEYS[1], sttl)
return {1, n, n, '0'}
`)

// appendScript pushes messages onto a live session's history, stamps activity and refreshes
// the TTLs: KEYS meta, hist; ARGV now, session ttl ms, messages... Reply the new count, or -1
// when the session does not exist or expired.
var appendScript = redis.NewScript(luaNow + `
local sttl = tonumber(ARGV[2])
if not alive(KEYS[1], sttl) then return -1 end
local count = redis.call('LLEN', KEYS[2])
for i = 3, #ARGV, 100 do
  count = redis.call('RPUSH', KEYS[2], unpack(ARGV, i, math.min(i + 99, #ARGV)))
end
redis.call('HSET', KEYS[1], 'active', ms(now), 'count', count)
redis.call('PEXPIRE', KEYS[1], sttl)
if count > 0 then redis.call('PEXPIRE', KEYS[2], sttl) end
return count
`)

// parkScript replaces a live session's parked call, stamped with now: KEYS meta, park; ARGV
// now, session ttl ms, call id, call JSON, park key ttl ms. Reply 1, or -1 when the session
// does not exist or expired.
var parkScript = redis.NewScript(luaNow + `
if not alive(KEYS[1], tonumber(ARGV[2])) then return -1 end
redis.call('DEL', KEYS[2])
redis.call('HSET', KEYS[2], 'id', ARGV[3], 'at', ms(now), 'call', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 1
`)

// claimScript is the at-most-once acceptance of a browser result: read the parked call,
// compare its id, judge its age, delete it, all in one step. KEYS park, meta; ARGV now,
// session ttl ms, call id, parked ttl ms. Reply {0} when nothing with that id is parked (a
// call with another id is left alone; one of a dead session is deleted), {1, at, call} on
// success, {2, at, call} when it had expired (deleted too).
var claimScript = redis.NewScript(luaNow + `
local p = redis.call('HMGET', KEYS[1], 'id', 'at', 'call')
if not p[1] or p[1] ~= ARGV[3] then return {0} end
redis.call('DEL', KEYS[1])
if not alive(KEYS[2], tonumber(ARGV[2])) then return {0} end
if now - tonumber(p[2]) >= tonumber(ARGV[4]) then return {2, p[2], p[3]} end
return {1, p[2], p[3]}
`)

// abandonScript removes and returns the parked call whatever its age: KEYS park, meta; ARGV
// now, session ttl ms. Reply {0} or {1, at, call}.
var abandonScript = redis.NewScript(luaNow + `
local p = redis.call('HMGET', KEYS[1], 'at', 'call')
if not p[1] then return {0} end
redis.call('DEL', KEYS[1])
if not alive(KEYS[2], tonumber(ARGV[2])) then return {0} end
return {1, p[1], p[2]}
`)

// lockScript takes the turn lock unless a live one is held: KEYS lock; ARGV now, token, ttl
// ms. The value carries its own expiry so that an injected clock can expire it; with the
// server clock it coincides with the key's PX. Reply 1 taken, 0 busy.
var lockScript = redis.NewScript(luaNow + `
local cur = redis.call('GET', KEYS[1])
if cur then
  local exp = tonumber(string.match(cur, ':(%d+)$'))
  if exp and exp > now then return 0 end
end
local ttl = tonumber(ARGV[3])
redis.call('SET', KEYS[1], ARGV[2] .. ':' .. ms(now + ttl), 'PX', ttl)
return 1
`)

// unlockScript deletes the lock only if this taker's token still holds it: KEYS lock; ARGV
// token. Reply 1 released, 0 not held.
var unlockScript = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur and string.match(cur, '^([^:]*):') == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
`)

// allowScript counts one event in the fixed window containing now: KEYS counter (a hash
// {s: window start ms, n: count}); ARGV now, window ms. The key expires when its window ends.
// Reply {count, ms until the window ends}.
var allowScript = redis.NewScript(luaNow + `
local w = tonumber(ARGV[2])
local start = now - (now % w)
local s = redis.call('HGET', KEYS[1], 's')
local n
if s and tonumber(s) == start then
  n = redis.call('HINCRBY', KEYS[1], 'n', 1)
else
  redis.call('HSET', KEYS[1], 's', ms(start), 'n', 1)
  n = 1
end
local left = start + w - now
redis.call('PEXPIRE', KEYS[1], left)
return {n, left}
`)
