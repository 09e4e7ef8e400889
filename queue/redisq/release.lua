-- release.lua: hand a claimed task back to its queue, ready from now (it
-- lines up behind the tasks that were ready before), without spending the
-- attempt.
--
-- KEYS[1]  task hash
-- KEYS[2]  leases zset
-- KEYS[3]  running hash
-- KEYS[4]  wrun hash
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  lease token
-- ARGV[3]  task id
-- ARGV[4]  wake channel
-- ARGV[5]  now (unix ms)
--
-- Returns 0 on success, 1 when the task is unknown, 2 when it is not
-- processing under this token (lease lost).
local P = ARGV[1]
local f = redis.call('HMGET', KEYS[1], 'state', 'token', 'attempt', 'queue', 'worker', 'rk')
if not f[1] then
  return 1
end
if f[1] ~= 'processing' or f[2] ~= ARGV[2] then
  return 2
end
local G = ctx({P = P, leases = KEYS[2], running = KEYS[3], wrun = KEYS[4]})
end_lease(G, {id = ARGV[3], queue = f[4], worker = f[5]})
redis.call('HDEL', KEYS[1], 'token', 'lease')
local attempt = tonumber(f[3]) - 1
if attempt < 0 then
  attempt = 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempt', attempt)
if attempt == 0 then
  -- Back to exactly how it was before its first claim.
  redis.call('HDEL', KEYS[1], 'started')
end
redis.call('ZADD', P .. 'pend:' .. f[4], ARGV[5], f[6])
flush(G)
redis.call('PUBLISH', ARGV[4], '1')
return 0
