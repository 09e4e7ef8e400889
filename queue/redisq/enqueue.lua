-- enqueue.lua: add a batch of tasks, honouring dedup keys.
--
-- KEYS[1]  dedup hash
-- KEYS[2]  queues set
-- KEYS[3]  seq counter
-- KEYS[4+2(k-1)], KEYS[5+2(k-1)]  task k: task hash, pend zset of its queue
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  now (unix ms)
-- ARGV[3]  wake channel
-- ARGV[4+9(k-1)] ..  task k: id type queue payload maxAttempts ttlMs dedupKey runAtMs notify(0/1)
--
-- Returns, per task, 4 values: created (1/0), id holding the key (or the
-- existing task), its state, its queue. Publishes on the wake channel when
-- a task was created claimable now.
local now, wake = ARGV[2], ARGV[3]
local n = (#KEYS - 3) / 2
local G = ctx({P = ARGV[1], dedup = KEYS[1], queues = KEYS[2], seq = KEYS[3], seqBlock = n})
local out = {}
local woke = false
for k = 1, n do
  local kb = 3 + 2 * (k - 1)
  local ab = 4 + 9 * (k - 1)
  local r = enqueue_one(G, KEYS[kb + 1], KEYS[kb + 2], now, ARGV, ab)
  if r[1] == 1 and tonumber(ARGV[ab + 7]) <= tonumber(now) then
    woke = true
  end
  out[#out + 1] = r[1]
  out[#out + 1] = r[2]
  out[#out + 1] = r[3]
  out[#out + 1] = r[4]
end
flush(G)
if woke then
  redis.call('PUBLISH', wake, '1')
end
return out
