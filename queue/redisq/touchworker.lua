-- touchworker.lua: record that a worker was seen.
--
-- KEYS[1]  workers zset (id -> last seen ms)
-- KEYS[2]  the worker's hash
--
-- ARGV[1]  worker id
-- ARGV[2]  now (unix ms)
-- ARGV[3]  name
-- ARGV[4]  types, as a JSON array
-- ARGV[5]  TTL of the worker hash (ms)
--
-- Returns 0.
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
redis.call('HSET', KEYS[2], 'name', ARGV[3], 'types', ARGV[4])
redis.call('PEXPIRE', KEYS[2], ARGV[5])
return 0
