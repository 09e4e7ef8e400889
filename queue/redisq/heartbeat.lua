-- heartbeat.lua: extend a lease.
--
-- KEYS[1]  task hash
-- KEYS[2]  leases zset
--
-- ARGV[1]  lease token
-- ARGV[2]  now (unix ms)
-- ARGV[3]  extension in ms; 0 means the task's lease TTL
-- ARGV[4]  task id
--
-- Returns the new lease deadline (unix ms), -1 when the task is unknown,
-- -2 when it is not processing under this token (lease lost).
local f = redis.call('HMGET', KEYS[1], 'state', 'token', 'ttl')
if not f[1] then
  return -1
end
if f[1] ~= 'processing' or f[2] ~= ARGV[1] then
  return -2
end
local ext = tonumber(ARGV[3])
if ext <= 0 then
  ext = tonumber(f[3])
end
local lease = tonumber(ARGV[2]) + ext
redis.call('HSET', KEYS[1], 'lease', N(lease))
redis.call('ZADD', KEYS[2], N(lease), ARGV[4])
return lease
