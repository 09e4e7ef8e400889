-- reap.lua: recover expired leases and purge finished tasks past retention.
--
-- KEYS[1]  leases zset
-- KEYS[2]  running hash
-- KEYS[3]  wrun hash
-- KEYS[4]  dedup hash
-- KEYS[5]  fin list
-- KEYS[6]  outbox stream
-- KEYS[7]  queues set
-- KEYS[8]  workers zset
-- KEYS[9]  legacy done zset (finished ids of older stores; drained here)
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  now (unix ms)
-- ARGV[3]  now as RFC 3339 (for task.final)
-- ARGV[4]  limit (expired leases handled, and finished tasks purged, at most)
-- ARGV[5]  retention (ms)
-- ARGV[6]  wake channel
--
-- A processing task whose lease deadline is <= now goes back to its queue
-- as stalled, ready from now, while it has attempts left, else ends failed
-- with "lease expired". Each task is handled by one script run, so concurrent
-- reapers never both act on one task: the second no longer finds it in the
-- lease index. Finished tasks whose finish time is <= now-retention are
-- deleted with their index entries: the fin list is consumed from its
-- head, in the order tasks finished, and stops at the first entry still
-- within retention (an entry behind it that finished earlier by another
-- controller's clock waits for it: purging is late by at most the clock
-- skew between controllers, never early). Every queue's dead index is
-- trimmed by score.
-- Workers not seen within retention are forgotten.
--
-- Returns {stalled, failed, purged, queue of each expired lease...}.
local P, now, nowStr = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local limit, retention, wake = tonumber(ARGV[4]), tonumber(ARGV[5]), ARGV[6]
local G = ctx({P = P, leases = KEYS[1], running = KEYS[2], wrun = KEYS[3],
  dedup = KEYS[4], fin = KEYS[5], outbox = KEYS[6], queues = KEYS[7]})
local stalled, failed, purged = 0, 0, 0
local qs = {}

local ids = redis.call('ZRANGEBYSCORE', G.leases, '-inf', N(now), 'LIMIT', 0, limit)
for _, id in ipairs(ids) do
  local tk = P .. 't:' .. id
  local f = redis.call('HMGET', tk, 'state', 'lease', 'attempt', 'max', 'queue', 'worker', 'dedup', 'rk', 'notify')
  if f[1] ~= 'processing' then
    -- Stale index entry (cannot happen while all transitions go through
    -- the scripts); drop it.
    redis.call('ZREM', G.leases, id)
  elseif tonumber(f[2]) > now then
    redis.call('ZADD', G.leases, f[2], id)
  else
    local t = {id = id, queue = f[5], worker = f[6], dedup = f[7]}
    end_lease(G, t)
    redis.call('HDEL', tk, 'token', 'lease')
    qs[#qs + 1] = t.queue
    if tonumber(f[3]) < tonumber(f[4]) then
      redis.call('HSET', tk, 'state', 'stalled')
      redis.call('ZADD', P .. 'pend:' .. t.queue, N(now), f[8])
      stalled = stalled + 1
    else
      redis.call('HSET', tk, 'state', 'failed', 'error', 'lease expired', 'finished', N(now))
      redis.call('HDEL', tk, 'next')
      finish(G, tk, t, 'failed', now)
      notify_final(G, tk, f[9], 'failed', nowStr)
      failed = failed + 1
    end
  end
end

flush(G)

local cutoffMs = now - retention
local cutoff = N(cutoffMs)
-- purge deletes the hashes of ids (finished past retention), in one call.
-- A task id may be reused after its purge window started only if the
-- caller re-enqueued it; never delete a task that is not finished.
local function purge(ids)
  local del = {}
  for _, id in ipairs(ids) do
    local tk = P .. 't:' .. id
    local st = redis.call('HGET', tk, 'state')
    if st and terminal(st) then
      del[#del + 1] = tk
    end
  end
  local i = 1
  while i <= #del do
    local j = math.min(i + 999, #del)
    redis.call('DEL', unpack(del, i, j))
    i = j + 1
  end
  purged = purged + #ids
end

-- finished at or before cutoffMs? e is a fin entry "<ms>:<id>"; returns
-- the id when it is.
local function due(e)
  local c = string.find(e, ':', 1, true)
  if tonumber(string.sub(e, 1, c - 1)) <= cutoffMs then
    return string.sub(e, c + 1)
  end
  return nil
end

local head = redis.call('LINDEX', G.fin, 0)
if head and due(head) then
  local ids = {}
  for _, e in ipairs(redis.call('LRANGE', G.fin, 0, limit - 1)) do
    local id = due(e)
    if not id then
      break
    end
    ids[#ids + 1] = id
  end
  redis.call('LTRIM', G.fin, #ids, -1)
  purge(ids)
end
if purged < limit then
  local old = redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', cutoff, 'LIMIT', 0, limit - purged)
  if #old > 0 then
    chunked('ZREM', KEYS[9], old)
    purge(old)
  end
end
for _, q in ipairs(redis.call('SMEMBERS', G.queues)) do
  redis.call('ZREMRANGEBYSCORE', P .. 'dead:' .. q, '-inf', cutoff)
end
redis.call('ZREMRANGEBYSCORE', KEYS[8], '-inf', cutoff)

if stalled > 0 then
  redis.call('PUBLISH', wake, '1')
end
local out = {stalled, failed, purged}
for _, q in ipairs(qs) do
  out[#out + 1] = q
end
return out
