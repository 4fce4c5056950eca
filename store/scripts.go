package store

import (
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Lua scripts of the Redis store. Each runs atomically on the server, so two replicas
// never interleave inside one. Every script takes "now" (unix ms) as its first argument: a
// number when the store has an injected clock (tests), else empty, and then the script reads
// the Redis server's clock with TIME, so that every replica judges ages by one clock. Times are
// kept as decimal unix-ms strings.
//
// Session keys: meta is a hash {created, active, count, runs}; hist a list of JSON messages;
// park a hash {id, at, call}; rec a list of run records ("<ordinal>:<ms>:<JSON>"); lock a string
// "<token>:<expires ms>". A session is alive while
// active + SessionTTL > now (the keys' own TTL enforces the same with the server clock).
//
// # Retries
//
// The client re-sends a command whose reply it did not get (a stalled server, a lost
// connection), and the first one may have run. Every script that writes is therefore made
// safe to run twice with once(): its last key is an operation key, unique to one call of the
// store, in the same hash tag as the keys it writes; the first run stores its reply there for
// opTTL, and a second run with the same key returns that reply without doing anything. The
// turn lock needs no operation key: a take is recognised by its own random token.

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

// opTTL is how long an operation key remembers its reply: longer than any client retry, and
// than a settle (redis.go).
const opTTL = 120 * time.Second

// once wraps a script body (Lua statements that end with a return) so that it runs at most
// once per operation key, KEYS[#KEYS].
func once(body string) *redis.Script {
	return redis.NewScript(luaNow + `
local opkey = KEYS[#KEYS]
local prior = redis.call('GET', opkey)
if prior then return cjson.decode(prior) end
local function body()
` + body + `
end
local reply = body()
redis.call('SET', opkey, cjson.encode(reply), 'PX', ` + strconv.FormatInt(opTTL.Milliseconds(), 10) + `)
return reply
`)
}

// luaAppend pushes the messages ARGV[from..] onto hist, stamps activity and refreshes the
// session's TTLs (its run records' too); it returns the new count.
const luaAppend = `
local function push(meta, hist, rec, sttl, from, to)
  local count = redis.call('LLEN', hist)
  for i = from, to, 100 do
    count = redis.call('RPUSH', hist, unpack(ARGV, i, math.min(i + 99, to)))
  end
  redis.call('HSET', meta, 'active', ms(now), 'count', count)
  redis.call('PEXPIRE', meta, sttl)
  if count > 0 then redis.call('PEXPIRE', hist, sttl) end
  redis.call('PEXPIRE', rec, sttl)
  return count
end
`

// ensureScript returns the live session or recreates it (wiping an expired one's history,
// parked call and run records): KEYS meta, hist, park, rec, op; ARGV now, session ttl ms. Reply {created 0|1,
// created ms, active ms, count}.
var ensureScript = once(`
local sttl = tonumber(ARGV[2])
local m = redis.call('HMGET', KEYS[1], 'created', 'active', 'count')
if m[2] and tonumber(m[2]) + sttl > now then
  return {0, m[1], m[2], m[3]}
end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4])
local n = ms(now)
redis.call('HSET', KEYS[1], 'created', n, 'active', n, 'count', 0)
redis.call('PEXPIRE', KEYS[1], sttl)
return {1, n, n, '0'}
`)

// appendScript pushes messages onto a live session's history: KEYS meta, hist, rec, op; ARGV now,
// session ttl ms, messages... Reply the new count, or -1 when the session does not exist or
// expired.
var appendScript = once(luaAppend + `
local sttl = tonumber(ARGV[2])
if not alive(KEYS[1], sttl) then return -1 end
return push(KEYS[1], KEYS[2], KEYS[3], sttl, 3, #ARGV)
`)

// parkScript appends the messages that made a call and parks it, stamped with now, in one
// step: KEYS meta, hist, park, rec, op; ARGV now, session ttl ms, call id, call JSON, park key ttl
// ms, messages... Reply 1, -1 when the session does not exist or expired, -2 when another
// call is parked.
var parkScript = once(luaAppend + `
local sttl = tonumber(ARGV[2])
if not alive(KEYS[1], sttl) then return -1 end
if redis.call('EXISTS', KEYS[3]) == 1 then return -2 end
if #ARGV >= 6 then push(KEYS[1], KEYS[2], KEYS[4], sttl, 6, #ARGV) end
redis.call('HSET', KEYS[3], 'id', ARGV[3], 'at', ms(now), 'call', ARGV[4])
redis.call('PEXPIRE', KEYS[3], ARGV[5])
return 1
`)

// parkedScript reads the parked call of a live session: KEYS park, meta; ARGV now, session
// ttl ms. Reply {0} or {1, at, call}. It only reads, so it needs no operation key.
var parkedScript = redis.NewScript(luaNow + `
if not alive(KEYS[2], tonumber(ARGV[2])) then return {0} end
local p = redis.call('HMGET', KEYS[1], 'at', 'call')
if not p[1] then return {0} end
return {1, p[1], p[2]}
`)

// claimScript is the at-most-once acceptance of a browser result: read the parked call,
// compare its id, judge its age, delete it and append its answer, all in one step. KEYS park,
// meta, hist, rec, op; ARGV now, session ttl ms, call id, parked ttl ms, answer, late answer (each
// may be empty: nothing is appended). Reply {0} when nothing with that id is parked (a call
// with another id is left alone; one of a dead session is deleted), {1, at, call} on success,
// {2, at, call} when it had expired (deleted too, and the late answer appended).
var claimScript = once(luaAppend + `
local sttl = tonumber(ARGV[2])
local p = redis.call('HMGET', KEYS[1], 'id', 'at', 'call')
if not p[1] or p[1] ~= ARGV[3] then return {0} end
redis.call('DEL', KEYS[1])
if not alive(KEYS[2], sttl) then return {0} end
local status, at = 1, 5
if now - tonumber(p[2]) >= tonumber(ARGV[4]) then status, at = 2, 6 end
if ARGV[at] ~= '' then push(KEYS[2], KEYS[3], KEYS[4], sttl, at, at) end
return {status, p[2], p[3]}
`)

// abandonScript removes the parked call if its id is the given one, whatever its age, and
// appends the closing message: KEYS park, meta, hist, rec, op; ARGV now, session ttl ms, call id,
// closing message (may be empty). Reply 1 or 0.
var abandonScript = once(luaAppend + `
local sttl = tonumber(ARGV[2])
local id = redis.call('HGET', KEYS[1], 'id')
if not id or id ~= ARGV[3] then return 0 end
redis.call('DEL', KEYS[1])
if not alive(KEYS[2], sttl) then return 0 end
if ARGV[4] ~= '' then push(KEYS[2], KEYS[3], KEYS[4], sttl, 4, 4) end
return 1
`)

// lockScript takes the turn lock unless a live one is held by another token: KEYS lock; ARGV
// now, token, ttl ms. The value carries its own expiry so that an injected clock can expire
// it; with the server clock it coincides with the key's PX. A second run of the same take (the
// client retrying after a lost reply) finds its own token and succeeds. Reply 1 taken, 0 busy.
var lockScript = redis.NewScript(luaNow + `
local cur = redis.call('GET', KEYS[1])
if cur then
  local tok, exp = string.match(cur, '^([^:]*):(%d+)$')
  if tok == ARGV[2] then return 1 end
  if exp and tonumber(exp) > now then return 0 end
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
// {s: window start ms, n: count}), op; ARGV now, window ms. The key expires when its window
// ends. Reply {count, ms until the window ends}.
var allowScript = once(`
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

// costScript adds to a community's day and month totals: KEYS day, month, op; ARGV now (unused
// here: the caller picked the periods), usd, day ttl s, month ttl s. Reply {day, month} as
// decimal strings.
var costScript = once(`
local d = redis.call('INCRBYFLOAT', KEYS[1], ARGV[2])
redis.call('EXPIRE', KEYS[1], ARGV[3])
local m = redis.call('INCRBYFLOAT', KEYS[2], ARGV[2])
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {d, m}
`)

// luaDropRun forgets one kept run of a community: its files, its size, its expiry and its
// place in the community's index and in its session's list. KEYS of the caller: idx (zset run
// key → sequence), size (hash run key → bytes), owner (hash run key → runs list key), total,
// rexp (zset run key → expiry ms, the session's as it was when the run was kept or last
// touched). sweepRuns forgets every run past its expiry, so that the bytes of runs whose
// session died leave total at once (their keys expire by their own TTL too, but that gives no
// bytes back; and an injected clock expires nothing on the server). A run past its expiry is
// gone, whatever its keys say: its session is dead.
const luaDropRun = `
local function drop(idx, size, owner, total, rexp, run)
  local b = redis.call('HGET', size, run)
  if b then redis.call('DECRBY', total, b) end
  local o = redis.call('HGET', owner, run)
  if o then redis.call('LREM', o, 0, run) end
  redis.call('HDEL', size, run)
  redis.call('HDEL', owner, run)
  redis.call('ZREM', idx, run)
  redis.call('ZREM', rexp, run)
  redis.call('DEL', run)
end
local function sweepRuns(idx, size, owner, total, rexp)
  for _ = 1, 10 do
    local old = redis.call('ZRANGEBYSCORE', rexp, '-inf', now, 'LIMIT', 0, 100)
    if #old == 0 then break end
    for _, run in ipairs(old) do drop(idx, size, owner, total, rexp, run) end
  end
end
-- outlive makes each key last at least ttl ms: the bookkeeping lives as long as its
-- longest-lived entry.
local function outlive(ttl, keys)
  for _, k in ipairs(keys) do
    if redis.call('PTTL', k) < ttl then redis.call('PEXPIRE', k, ttl) end
  end
end
`

// putRunScript keeps one run's files within the session's run count and the community's byte
// budget: KEYS run (hash path → bytes), runs (the session's list of run keys, newest first),
// idx, size, owner, total, seq, rexp (luaDropRun), ftotal, fexp, fsize (the attached files'
// bookkeeping, luaFiles), op; ARGV now, the session's expiry ms, budget bytes, max runs per
// session, run bytes, the member (encoded id), path, bytes, path, bytes... Expired runs and
// files give their bytes back first; then older runs of the session past the count, then the
// community's oldest runs until the total fits, are dropped. Reply the number of runs dropped
// for the budget, -1 when the run alone exceeds it, -2 when the session has expired (nothing
// kept in either case).
var putRunScript = once(luaDropRun + luaFiles + `
local run, runs, idx, size, owner, total, seq, rexp, ftotal, fexp, fsize = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local exp, budget, maxRuns, bytes, m = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
if exp <= now then return -2 end
sweepRuns(idx, size, owner, total, rexp)
-- The readers' attached files share the budget and are never evicted for a run's files;
-- those of dead sessions give their bytes back first.
sweep(ftotal, fexp, fsize)
budget = budget - tonumber(redis.call('GET', ftotal) or '0')
if bytes > budget then return -1 end
drop(idx, size, owner, total, rexp, run)
-- An Append since the caller read the session may have pushed its expiry further already: its
-- other runs and its files carry it (expired ones were swept just now).
local head = redis.call('LINDEX', runs, 0)
if head then exp = math.max(exp, tonumber(redis.call('ZSCORE', rexp, head) or '0')) end
exp = math.max(exp, tonumber(redis.call('ZSCORE', fexp, m) or '0'))
local ttl = exp - now
if #ARGV >= 8 then
  for i = 7, #ARGV, 100 do
    redis.call('HSET', run, unpack(ARGV, i, math.min(i + 99, #ARGV)))
  end
  redis.call('PEXPIRE', run, ttl)
end
redis.call('LPUSH', runs, run)
redis.call('PEXPIRE', runs, ttl)
redis.call('ZADD', idx, redis.call('INCR', seq), run)
redis.call('ZADD', rexp, ms(exp), run)
redis.call('HSET', size, run, bytes)
redis.call('HSET', owner, run, runs)
redis.call('INCRBY', total, bytes)
for _, old in ipairs(redis.call('LRANGE', runs, maxRuns, -1)) do
  drop(idx, size, owner, total, rexp, old)
end
-- Runs kept before rexp existed have no expiry there: forget a few of the oldest whose files
-- expired on every put, so they never pile up.
for _, old in ipairs(redis.call('ZRANGE', idx, 0, 15)) do
  if old ~= run and not redis.call('ZSCORE', rexp, old) and redis.call('EXISTS', old) == 0 then
    drop(idx, size, owner, total, rexp, old)
  end
end
local dropped = 0
while tonumber(redis.call('GET', total)) > budget and dropped < 1000 do
  local oldest = redis.call('ZRANGE', idx, 0, 0)
  if #oldest == 0 or oldest[1] == run then break end
  drop(idx, size, owner, total, rexp, oldest[1])
  dropped = dropped + 1
end
outlive(ttl, {idx, size, owner, total, seq, rexp})
return dropped
`)

// dropRunsScript forgets every kept run of a session: KEYS runs, idx, size, owner, total, rexp,
// op; ARGV now. Reply the number of runs dropped.
var dropRunsScript = once(luaDropRun + `
local list = redis.call('LRANGE', KEYS[1], 0, -1)
for _, run in ipairs(list) do drop(KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], run) end
redis.call('DEL', KEYS[1])
return #list
`)

// luaFiles keeps the attached files' share of the budget right as they expire. Each session's
// files are a member (the session id, encoded) of fexp (zset member → expiry ms, the session's
// as it was when they were last put or touched) and of fsize (hash member → bytes counted);
// ftotal is the sum of fsize. fown (hash member → JSON {name: [client, bytes counted]}) says
// which client attached each file, and fclient (hash client → bytes counted) sums them by
// client, so one client's share can be bounded. Files keys expire by their own TTL too, but that
// does not give their bytes back: sweep does, for every member past its expiry, and also deletes
// the keys (an injected clock expires nothing on the server). Members are named by id, so the
// keys are rebuilt from ftotal's name (same hash tag), and so are fown's and fclient's. Files
// whose expiry has passed are gone, whatever their keys say: the session they belonged to is
// dead.
const luaFiles = `
local function fkeys(ftotal, m)
  local base = string.sub(ftotal, 1, -7) -- strip 'ftotal'
  return base .. 'f:' .. m, base .. 'fm:' .. m
end
local function fbook(ftotal)
  local base = string.sub(ftotal, 1, -7)
  return base .. 'fown', base .. 'fclient'
end
-- owners is a member's {name: {client, bytes}}; setOwners stores it back.
local function owners(fown, m)
  local j = redis.call('HGET', fown, m)
  if j then return cjson.decode(j) end
  return {}
end
local function setOwners(fown, m, o)
  if next(o) == nil then redis.call('HDEL', fown, m) else redis.call('HSET', fown, m, cjson.encode(o)) end
end
local function addClient(fclient, client, n)
  if client == '' or n == 0 then return end
  if redis.call('HINCRBY', fclient, client, n) <= 0 then redis.call('HDEL', fclient, client) end
end
-- forget takes a member's files out of their clients' counts.
local function forget(ftotal, m)
  local fown, fclient = fbook(ftotal)
  for _, o in pairs(owners(fown, m)) do addClient(fclient, o[1], -o[2]) end
  redis.call('HDEL', fown, m)
end
local function sweep(ftotal, fexp, fsize)
  for _ = 1, 10 do
    local old = redis.call('ZRANGEBYSCORE', fexp, '-inf', now, 'LIMIT', 0, 100)
    if #old == 0 then break end
    for _, m in ipairs(old) do
      local b = redis.call('HGET', fsize, m)
      if b then redis.call('DECRBY', ftotal, b) end
      redis.call('HDEL', fsize, m)
      redis.call('ZREM', fexp, m)
      forget(ftotal, m)
      redis.call('DEL', fkeys(ftotal, m))
    end
  end
  -- No live files, no bytes: this also clears a total left by files put before fexp existed.
  if redis.call('EXISTS', fexp) == 0 then
    local fown, fclient = fbook(ftotal)
    redis.call('DEL', ftotal, fown, fclient)
  end
end
-- keep sets the member's files to expire at exp (ms) and the bookkeeping to last as long as
-- the longest-lived files.
local function keep(ftotal, fexp, fsize, m, exp)
  local ttl = exp - now
  local fown, fclient = fbook(ftotal)
  redis.call('ZADD', fexp, ms(exp), m)
  for _, k in ipairs({fkeys(ftotal, m)}) do redis.call('PEXPIRE', k, ttl) end
  for _, k in ipairs({ftotal, fexp, fsize, fown, fclient}) do
    if redis.call('PTTL', k) < ttl then redis.call('PEXPIRE', k, ttl) end
  end
end
`

// luaUndo is the undo record a write of attached files leaves (putFilesScript,
// deleteFileScript), so that a write whose caller answered an error can be undone
// (undoFilesScript): a hash of "n:<name>" the meta JSON the write put, "d:<name>" for a name it
// removed, and for a file it replaced or removed "m:<name>" its meta JSON, "b:<name>" its bytes
// and "o:<name>" its owner ({client, bytes counted}, when it had one); "member" the session's
// member and "exp" its files' expiry. It lives as long as the operation key (opTTL); the caller
// deletes it once it has answered success.
var luaUndo = `
local function remember(undo, files, metas, o, name)
  local meta = redis.call('HGET', metas, name)
  if not meta then return end
  redis.call('HSET', undo, 'm:' .. name, meta, 'b:' .. name, redis.call('HGET', files, name) or '')
  if o[name] then redis.call('HSET', undo, 'o:' .. name, cjson.encode(o[name])) end
end
local function sealUndo(undo, m, exp)
  redis.call('HSET', undo, 'member', m, 'exp', ms(exp))
  redis.call('PEXPIRE', undo, ` + strconv.FormatInt(opTTL.Milliseconds(), 10) + `)
end
`

// putFilesScript attaches reader files to a session, all or nothing: KEYS files (hash name →
// bytes), metas (hash name → SessionFile JSON), idx, size, owner, total, rexp, ftotal, fexp,
// fsize, undo (luaUndo), op; ARGV now, the session's expiry ms, budget bytes, max files, max session bytes, the
// overhead counted per file, the member (encoded id), the client ("" for none), the most the
// client may keep, the deadline ms, then per file: name, meta JSON, bytes. Room in the
// community's budget is made by dropping the oldest runs' files. A run after the deadline (the
// command waited in a stalled server while its caller gave up) writes nothing. Reply {1, name,
// meta JSON, ...} (the session's files after the change), -1 too many files, -2 the session's
// bytes, -3 the budget, -4 the session has expired, -5 the client's share, -6 a name that
// differs from another only in case, -7 past the deadline (nothing written in any of these
// cases, nor an undo record).
var putFilesScript = once(luaDropRun + luaFiles + luaUndo + `
local files, metas, idx, size, owner, total, rexp, ftotal, fexp, fsize, undo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10], KEYS[11]
local exp, budget, maxFiles, maxSession, over, m = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), ARGV[7]
local client, maxClient, deadline = ARGV[8], tonumber(ARGV[9]), tonumber(ARGV[10])
if now > deadline then return -7 end
if exp <= now then return -4 end
sweep(ftotal, fexp, fsize)
sweepRuns(idx, size, owner, total, rexp)
local fown, fclient = fbook(ftotal)
local sizes, lower = {}, {}
local cur = redis.call('HGETALL', metas)
for i = 1, #cur, 2 do
  sizes[cur[i]] = cjson.decode(cur[i + 1]).bytes
  lower[string.lower(cur[i])] = cur[i]
end
local o = owners(fown, m)
local gain = 0
for i = 11, #ARGV, 3 do
  local name, b = ARGV[i], cjson.decode(ARGV[i + 1]).bytes
  local l = string.lower(name)
  if lower[l] and lower[l] ~= name then return -6 end
  lower[l] = name
  local old = o[name]
  if old and old[1] == client then gain = gain - old[2] end
  gain = gain + b + #name + over
  sizes[name] = b
end
local count, sum, after = 0, 0, 0
for name, b in pairs(sizes) do
  count = count + 1
  sum = sum + b
  after = after + b + #name + over
end
if count > maxFiles then return -1 end
if sum > maxSession then return -2 end
local before = tonumber(redis.call('HGET', fsize, m) or '0')
local fnow = tonumber(redis.call('GET', ftotal) or '0') - before + after
if after > before and fnow > budget then return -3 end
if client ~= '' and gain > 0 and tonumber(redis.call('HGET', fclient, client) or '0') + gain > maxClient then return -5 end
for i = 11, #ARGV, 3 do
  local name = ARGV[i]
  remember(undo, files, metas, o, name)
  redis.call('HSET', undo, 'n:' .. name, ARGV[i + 1])
  redis.call('HSET', metas, name, ARGV[i + 1])
  redis.call('HSET', files, name, ARGV[i + 2])
  local old = o[name]
  if old then addClient(fclient, old[1], -old[2]) end
  local n = cjson.decode(ARGV[i + 1]).bytes + #name + over
  o[name] = {client, n}
  addClient(fclient, client, n)
end
setOwners(fown, m, o)
redis.call('SET', ftotal, ms(fnow))
redis.call('HSET', fsize, m, ms(after))
-- An Append since the caller read the session may have pushed the expiry further already.
exp = math.max(exp, tonumber(redis.call('ZSCORE', fexp, m) or '0'))
keep(ftotal, fexp, fsize, m, exp)
sealUndo(undo, m, exp)
local dropped = 0
while tonumber(redis.call('GET', total) or '0') + fnow > budget and dropped < 1000 do
  local oldest = redis.call('ZRANGE', idx, 0, 0)
  if #oldest == 0 then break end
  drop(idx, size, owner, total, rexp, oldest[1])
  dropped = dropped + 1
end
local reply = {1}
for _, v in ipairs(redis.call('HGETALL', metas)) do reply[#reply + 1] = v end
return reply
`)

// touchScript moves a session's attached files and kept runs to the session's new expiry,
// after a script that refreshed the session's TTL (Append, Park, Claim, Abandon): KEYS ftotal,
// fexp, fsize, runs, idx, size, owner, total, seq, rexp; ARGV now, session ttl ms, member.
// Files and runs that have expired already are not brought back (their session died before it
// was touched); the sweeps give their bytes back. It can run twice harmlessly, so it needs no
// operation key. Reply {files touched 0|1, runs touched}.
var touchScript = redis.NewScript(luaNow + luaDropRun + luaFiles + `
local ftotal, fexp, fsize, runs, idx, size, owner, total, seq, rexp = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9], KEYS[10]
local sttl, m = tonumber(ARGV[2]), ARGV[3]
sweep(ftotal, fexp, fsize)
sweepRuns(idx, size, owner, total, rexp)
-- A sweep forgets at most 1,000 entries: what it left behind must not be revived.
local function live(zset, member)
  local e = redis.call('ZSCORE', zset, member)
  return e and tonumber(e) > now
end
local f = 0
if live(fexp, m) then
  keep(ftotal, fexp, fsize, m, now + sttl)
  f = 1
end
local n = 0
for _, run in ipairs(redis.call('LRANGE', runs, 0, -1)) do
  if live(rexp, run) then
    redis.call('ZADD', rexp, ms(now + sttl), run)
    redis.call('PEXPIRE', run, sttl) -- a run that kept no files has no key: a no-op
    n = n + 1
  end
end
if n > 0 then
  redis.call('PEXPIRE', runs, sttl)
  outlive(sttl, {idx, size, owner, total, seq, rexp})
end
return {f, n}
`)

// runFileScript reads one kept file of a live run: KEYS run, rexp; ARGV now, path. Reply the
// bytes, or false when the run has expired or has no such file. A run with no expiry in rexp
// (kept before rexp existed) is judged by its key alone.
var runFileScript = redis.NewScript(luaNow + `
local e = redis.call('ZSCORE', KEYS[2], KEYS[1])
if e and tonumber(e) <= now then return false end
return redis.call('HGET', KEYS[1], ARGV[2])
`)

// runPathsScript lists a live run's kept paths: KEYS run, rexp; ARGV now. Reply HKEYS', empty
// when the run has expired (judged as runFileScript does).
var runPathsScript = redis.NewScript(luaNow + `
local e = redis.call('ZSCORE', KEYS[2], KEYS[1])
if e and tonumber(e) <= now then return {} end
return redis.call('HKEYS', KEYS[1])
`)

// listFilesScript reads a session's live files' metadata: KEYS metas, fexp; ARGV now, member.
// Reply HGETALL's, empty when the files have expired.
var listFilesScript = redis.NewScript(luaNow + `
local exp = redis.call('ZSCORE', KEYS[2], ARGV[2])
if not exp or tonumber(exp) <= now then return {} end
return redis.call('HGETALL', KEYS[1])
`)

// getFileScript reads one live file: KEYS files, metas, fexp; ARGV now, member, name. Reply
// {meta JSON, bytes}, or {} when there is no such live file.
var getFileScript = redis.NewScript(luaNow + `
local exp = redis.call('ZSCORE', KEYS[3], ARGV[2])
if not exp or tonumber(exp) <= now then return {} end
local meta = redis.call('HGET', KEYS[2], ARGV[3])
local b = redis.call('HGET', KEYS[1], ARGV[3])
if not meta or not b then return {} end
return {meta, b}
`)

// deleteFileScript removes one attached file: KEYS files, metas, ftotal, fexp, fsize, undo
// (luaUndo), op; ARGV now, name, the overhead counted per file, member, the deadline ms (as
// putFilesScript's). Reply 1 removed, 0 not there, -7 past the deadline (nothing removed, nor
// an undo record).
var deleteFileScript = once(luaFiles + luaUndo + `
local files, metas, ftotal, fexp, fsize, undo, m = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], ARGV[4]
if now > tonumber(ARGV[5]) then return -7 end
sweep(ftotal, fexp, fsize)
local meta = redis.call('HGET', metas, ARGV[2])
if not meta then return 0 end
local fown, fclient = fbook(ftotal)
local o = owners(fown, m)
remember(undo, files, metas, o, ARGV[2])
redis.call('HSET', undo, 'd:' .. ARGV[2], '1')
sealUndo(undo, m, tonumber(redis.call('ZSCORE', fexp, m) or '0'))
local b = cjson.decode(meta).bytes + #ARGV[2] + tonumber(ARGV[3])
redis.call('HDEL', files, ARGV[2])
redis.call('HDEL', metas, ARGV[2])
if o[ARGV[2]] then
  addClient(fclient, o[ARGV[2]][1], -o[ARGV[2]][2])
  o[ARGV[2]] = nil
  setOwners(fown, m, o)
end
if not redis.call('HGET', fsize, m) then return 1 end -- not counted (put before fsize existed)
redis.call('DECRBY', ftotal, b)
if redis.call('HLEN', metas) == 0 then
  redis.call('HDEL', fsize, m)
  redis.call('ZREM', fexp, m)
else
  redis.call('HINCRBY', fsize, m, -b)
end
return 1
`)

// undoFilesScript undoes a write of attached files whose caller answered an error, from the
// write's undo record (luaUndo): KEYS files, metas, ftotal, fexp, fsize, undo; ARGV now, the
// overhead counted per file. A file the write put is taken out again if it is still as the
// write left it (a later write's file is left alone), and the one it replaced, if any, put
// back; a file the write removed is put back if its name is still free. The files' bytes,
// their clients' counts and the session's expiry are set as they were; the budget is not
// checked (this gives back what the caller was told it still has). Files of a session that
// has ended are not brought back. The record is consumed, so a second run does nothing. Reply
// the number of files undone.
var undoFilesScript = redis.NewScript(luaNow + luaFiles + `
local files, metas, ftotal, fexp, fsize, undo = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local over = tonumber(ARGV[2])
local rec = redis.call('HGETALL', undo)
if #rec == 0 then return 0 end
redis.call('DEL', undo)
local r = {}
for i = 1, #rec, 2 do r[rec[i]] = rec[i + 1] end
local m, exp = r['member'], tonumber(r['exp'] or '0')
sweep(ftotal, fexp, fsize)
if not m then return 0 end
exp = math.max(exp, tonumber(redis.call('ZSCORE', fexp, m) or '0'))
if exp <= now then return 0 end
local fown, fclient = fbook(ftotal)
local o = owners(fown, m)
local delta, undone = 0, 0
local function counted(meta, name) return cjson.decode(meta).bytes + #name + over end
local function unset(name, meta)
  redis.call('HDEL', files, name)
  redis.call('HDEL', metas, name)
  if o[name] then
    addClient(fclient, o[name][1], -o[name][2])
    o[name] = nil
  end
  delta = delta - counted(meta, name)
end
local function restore(name)
  local meta = r['m:' .. name]
  if not meta then return end
  redis.call('HSET', metas, name, meta)
  redis.call('HSET', files, name, r['b:' .. name])
  if r['o:' .. name] then
    o[name] = cjson.decode(r['o:' .. name])
    addClient(fclient, o[name][1], o[name][2])
  end
  delta = delta + counted(meta, name)
end
for k, v in pairs(r) do
  local kind, name = string.sub(k, 1, 2), string.sub(k, 3)
  if kind == 'n:' then
    local cur = redis.call('HGET', metas, name)
    if cur == v then
      unset(name, cur)
      restore(name)
      undone = undone + 1
    end
  elseif kind == 'd:' and not redis.call('HGET', metas, name) then
    restore(name)
    undone = undone + 1
  end
end
if undone == 0 then return 0 end
setOwners(fown, m, o)
redis.call('SET', ftotal, ms(tonumber(redis.call('GET', ftotal) or '0') + delta))
if redis.call('HLEN', metas) == 0 then
  redis.call('HDEL', fsize, m)
  redis.call('ZREM', fexp, m)
  redis.call('DEL', files, metas)
else
  redis.call('HSET', fsize, m, ms(tonumber(redis.call('HGET', fsize, m) or '0') + delta))
  keep(ftotal, fexp, fsize, m, exp)
end
return undone
`)

// dropFilesScript removes every attached file of a session: KEYS files, metas, ftotal, fexp,
// fsize, op; ARGV now, member. Reply the number removed.
var dropFilesScript = once(luaFiles + `
local files, metas, ftotal, fexp, fsize, m = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], ARGV[2]
sweep(ftotal, fexp, fsize)
local n = redis.call('HLEN', metas)
local b = redis.call('HGET', fsize, m)
if b then redis.call('DECRBY', ftotal, b) end
forget(ftotal, m)
redis.call('HDEL', fsize, m)
redis.call('ZREM', fexp, m)
redis.call('DEL', files, metas)
return n
`)

// putRecordScript records one run of a live session: KEYS meta, rec, op; ARGV now, session ttl
// ms, records kept, the record's JSON. The ordinal counts in meta's "runs" field; the list keeps
// the newest records and expires with meta (the session). Reply {ordinal, now ms}, or {-1} when
// the session does not exist or expired.
var putRecordScript = once(`
local sttl = tonumber(ARGV[2])
if not alive(KEYS[1], sttl) then return {-1} end
local n = redis.call('HINCRBY', KEYS[1], 'runs', 1)
redis.call('RPUSH', KEYS[2], n .. ':' .. ms(now) .. ':' .. ARGV[4])
redis.call('LTRIM', KEYS[2], -tonumber(ARGV[3]), -1)
local ttl = redis.call('PTTL', KEYS[1])
if ttl <= 0 then ttl = sttl end
redis.call('PEXPIRE', KEYS[2], ttl)
return {n, ms(now)}
`)
