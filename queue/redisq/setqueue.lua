-- setqueue.lua: store a queue's settings and make the queue known.
--
-- KEYS[1]  qcfg hash of the queue
-- KEYS[2]  queues set
--
-- ARGV[1]  queue name
-- ARGV[2]  paused (0/1)
-- ARGV[3]  rate per minute (0 = unlimited)
-- ARGV[4]  wake channel
--
-- Publishes on the wake channel when the queue is not paused (resuming a
-- queue can make tasks claimable). Returns 0.
redis.call('HSET', KEYS[1], 'paused', ARGV[2], 'rate', ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
if ARGV[2] ~= '1' then
  redis.call('PUBLISH', ARGV[4], '1')
end
return 0
