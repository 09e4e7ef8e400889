-- claim.lua: hand out up to max claimable tasks from the queues in order.
--
-- KEYS[1]  leases zset
-- KEYS[2]  running hash (queue -> count)
-- KEYS[3]  wrun hash (worker -> count)
-- KEYS[4+3(q-1)] .. KEYS[6+3(q-1)]  queue q: pend zset, qcfg hash, gcra string
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  now (unix ms)
-- ARGV[3]  max
-- ARGV[4]  worker id
-- ARGV[5]  lease tokens: max tokens of 32 hex characters, concatenated
-- ARGV[6+(q-1)]  queue q's name
--
-- For each queue: skip it when paused; when rate limited (GCRA with burst
-- 1: the TAT in the gcra key must have passed, then moves one emission
-- interval on) take at most one task; take the first due tasks (score <=
-- now) in ready time, then insertion, order. The limiter is consumed only
-- when a task is handed out.
--
-- Returns 9 values per claimed task: id type queue payload attempt
-- maxAttempts leaseToken leaseExpiresMs createdMs.
local P, now, max, worker, tokens = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local out = {}
local n = 0
local nq = (#KEYS - 3) / 3
for q = 1, nq do
  if n >= max then
    break
  end
  local kb = 3 + 3 * (q - 1)
  local pend, cfg, gcra = KEYS[kb + 1], KEYS[kb + 2], KEYS[kb + 3]
  local qname = ARGV[5 + q]
  local c = redis.call('HMGET', cfg, 'paused', 'rate')
  local want = 0
  local rate = tonumber(c[2] or '0') or 0
  local tat = 0
  if c[1] ~= '1' then
    want = max - n
    if rate > 0 then
      tat = tonumber(redis.call('GET', gcra) or '0') or 0
      if tat > now then
        want = 0
      else
        want = 1
      end
    end
  end
  if want > 0 then
    local due = redis.call('ZRANGEBYSCORE', pend, '-inf', N(now), 'LIMIT', 0, want)
    if #due > 0 then
      chunked('ZREM', pend, due)
      local got = 0
      local z = {}
      for _, m in ipairs(due) do
        local id = string.sub(m, 17)
        local tk = P .. 't:' .. id
        local f = redis.call('HMGET', tk, 'state', 'type', 'payload', 'attempt', 'max', 'ttl', 'created', 'started', 'next')
        -- Anything else in a pend zset is stale (it cannot happen while
        -- every transition goes through these scripts); it is dropped.
        if f[1] == 'pending' or f[1] == 'stalled' then
          n = n + 1
          got = got + 1
          local attempt = tonumber(f[4] or '0') + 1
          local token = string.sub(tokens, 32 * (n - 1) + 1, 32 * n)
          local lease = now + tonumber(f[6])
          if f[8] then
            redis.call('HSET', tk, 'state', 'processing', 'attempt', attempt, 'token', token,
              'lease', N(lease), 'worker', worker)
          else
            redis.call('HSET', tk, 'state', 'processing', 'attempt', attempt, 'token', token,
              'lease', N(lease), 'worker', worker, 'started', N(now))
          end
          if f[9] then
            redis.call('HDEL', tk, 'next')
          end
          z[#z + 1] = N(lease)
          z[#z + 1] = id
          out[#out + 1] = id
          out[#out + 1] = f[2]
          out[#out + 1] = qname
          out[#out + 1] = f[3]
          out[#out + 1] = attempt
          out[#out + 1] = f[5]
          out[#out + 1] = token
          out[#out + 1] = lease
          out[#out + 1] = f[7]
        end
      end
      if got > 0 then
        chunked('ZADD', KEYS[1], z)
        redis.call('HINCRBY', KEYS[2], qname, got)
        if rate > 0 then
          redis.call('SET', gcra, string.format('%.17g', math.max(tat, now) + 60000 / rate))
        end
      end
    end
  end
end
if n > 0 and worker ~= '' then
  redis.call('HINCRBY', KEYS[3], worker, n)
end
return out
