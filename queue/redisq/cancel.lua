-- cancel.lua: end a non-terminal task as cancelled.
--
-- KEYS[1]  task hash
-- KEYS[2]  leases zset
-- KEYS[3]  running hash
-- KEYS[4]  wrun hash
-- KEYS[5]  dedup hash
-- KEYS[6]  fin list
-- KEYS[7]  outbox stream
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  task id
-- ARGV[3]  now (unix ms)
-- ARGV[4]  now as RFC 3339 (for task.final)
--
-- A pending or stalled task leaves its queue's pend zset (ZREM) or, when
-- it is not there, its rdy list (LREM, which scans the list from its head
-- to the entry: cancelling is rare, claiming is not); a
-- processing task loses its lease, so its worker's next heartbeat or result
-- gets lease lost. The dedup key is released and task.final appended.
--
-- Returns {code, state}: code 0 cancelled, 1 unknown task, 2 already
-- terminal (state is the state it ended in).
local id, now, nowStr = ARGV[2], tonumber(ARGV[3]), ARGV[4]
local G = ctx({P = ARGV[1], leases = KEYS[2], running = KEYS[3], wrun = KEYS[4],
  dedup = KEYS[5], fin = KEYS[6], outbox = KEYS[7]})
local f = redis.call('HMGET', KEYS[1], 'state', 'queue', 'worker', 'dedup', 'rk', 'notify', 'created')
if not f[1] then
  return {1, ''}
end
if terminal(f[1]) then
  return {2, f[1]}
end
local t = {id = id, queue = f[2], worker = f[3], dedup = f[4]}
if f[1] == 'processing' then
  end_lease(G, t)
elseif redis.call('ZREM', G.P .. 'pend:' .. t.queue, f[5]) == 0 then
  redis.call('LREM', G.P .. 'rdy:' .. t.queue, 1, rdy_entry(tonumber(f[7]), f[5]))
end
redis.call('HSET', KEYS[1], 'state', 'cancelled', 'finished', N(now))
redis.call('HDEL', KEYS[1], 'next', 'token', 'lease')
finish(G, KEYS[1], t, 'cancelled', now)
notify_final(G, KEYS[1], f[6], 'cancelled', nowStr)
flush(G)
return {0, 'cancelled'}
