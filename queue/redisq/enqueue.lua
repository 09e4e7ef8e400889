-- enqueue.lua: add a batch of tasks, honouring dedup keys.
--
-- KEYS[1]  dedup hash
-- KEYS[2]  queues set
-- KEYS[3]  seq counter
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  now (unix ms)
-- ARGV[3]  wake channel
-- ARGV[4]  nh, the number of headers
-- ARGV[5+7(h-1)] ..  header h: type queue maxAttempts ttlMs dedupKey runAtMs notify(0/1)
-- then, per task k, 3 values: id payload h (its header's number)
--
-- Tasks of a batch mostly share everything but id and payload, so those
-- fields are sent once per distinct combination: each argument costs the
-- server about as much as a redis.call. Task hashes and pend zsets are
-- built from P (same hash tag as KEYS).
--
-- One EXISTS over all the batch's task keys decides whether any id may
-- exist already; only then (or for an id repeated within the batch) is each
-- task looked up before it is written.
--
-- Returns one value per task: 1 when it was created (pending, in its own
-- queue), else the array {id holding the key (or the existing task), its
-- state, its queue}. Publishes on the wake channel when a task was created
-- claimable now.
local P, now, wake, nh = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local first = 5 + 7 * nh
local n = (#ARGV - first + 1) / 3
local G = ctx({P = P, dedup = KEYS[1], queues = KEYS[2], seq = KEYS[3], seqBlock = n})
local hs = {}
for h = 1, nh do
  local b = 5 + 7 * (h - 1)
  hs[h] = {typ = ARGV[b], queue = ARGV[b + 1], max = ARGV[b + 2], ttl = ARGV[b + 3], dkey = ARGV[b + 4],
    runat = ARGV[b + 5], notify = ARGV[b + 6], due = tonumber(ARGV[b + 5]) <= tonumber(now)}
end
local tks = {}
for k = 1, n do
  tks[k] = P .. 't:' .. ARGV[first + 3 * (k - 1)]
end
local anyExist = false
local i = 1
while i <= n do
  local j = math.min(i + 999, n)
  if redis.call('EXISTS', unpack(tks, i, j)) > 0 then
    anyExist = true
    break
  end
  i = j + 1
end
local seen = {}
local out = {}
local woke = false
for k = 1, n do
  local a = first + 3 * (k - 1)
  local id = ARGV[a]
  local hd = hs[tonumber(ARGV[a + 2])]
  local t = {id = id, typ = hd.typ, queue = hd.queue, payload = ARGV[a + 1], max = hd.max, ttl = hd.ttl,
    dkey = hd.dkey, runat = hd.runat, notify = hd.notify}
  local r = enqueue_one(G, now, t, not anyExist and not seen[id])
  seen[id] = true
  if r[1] == 1 and hd.due then
    woke = true
  end
  if r[1] == 1 then
    out[k] = 1
  else
    out[k] = {r[2], r[3], r[4]}
  end
end
flush(G)
if woke then
  redis.call('PUBLISH', wake, '1')
end
return out
