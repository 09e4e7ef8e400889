-- stats.lua: a consistent snapshot of every known queue (read only).
--
-- KEYS[1]  queues set
-- KEYS[2]  running hash
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  now (unix ms)
-- ARGV[3]  retention cutoff (unix ms): dead tasks finished at or before it
--          are past retention
--
-- Returns 8 values per queue: name, ready (due members of pend), retry
-- (members not yet due), running, dead, paused (0/1), rate per minute, and
-- the created time (ms) of the oldest ready task or -1, looked for among
-- the first OLDEST tasks in line.
local OLDEST = 100
local P, now, cutoff = ARGV[1], ARGV[2], ARGV[3]
local out = {}
for _, q in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local pend = P .. 'pend:' .. q
  local ready = redis.call('ZCOUNT', pend, '-inf', now)
  local retry = redis.call('ZCOUNT', pend, '(' .. now, '+inf')
  local running = tonumber(redis.call('HGET', KEYS[2], q) or '0')
  local dead = redis.call('ZCOUNT', P .. 'dead:' .. q, '(' .. cutoff, '+inf')
  local c = redis.call('HMGET', P .. 'qcfg:' .. q, 'paused', 'rate')
  local oldest = -1
  if ready > 0 then
    for _, m in ipairs(redis.call('ZRANGEBYSCORE', pend, '-inf', now, 'LIMIT', 0, OLDEST)) do
      local cr = tonumber(redis.call('HGET', P .. 't:' .. string.sub(m, 17), 'created') or '')
      if cr and (oldest < 0 or cr < oldest) then
        oldest = cr
      end
    end
  end
  out[#out + 1] = q
  out[#out + 1] = ready
  out[#out + 1] = retry
  out[#out + 1] = running
  out[#out + 1] = dead
  out[#out + 1] = (c[1] == '1') and 1 or 0
  out[#out + 1] = tonumber(c[2] or '0') or 0
  out[#out + 1] = oldest
end
return out
