-- claim.lua: hand out up to max claimable tasks from the queues in order.
--
-- KEYS[1]  leases zset
-- KEYS[2]  running hash (queue -> count)
-- KEYS[3]  wrun hash (worker -> count)
-- KEYS[4+4(q-1)] .. KEYS[7+4(q-1)]  queue q: pend zset, qcfg hash, gcra
--          string, rdy list
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
-- interval on) take at most one task; take the first due tasks (ready time
-- <= now) in ready time, then insertion, order, merging the pend zset
-- (score = ready time, member = sequence + id) and the rdy list (entries in
-- that same order, see lib.lua). The limiter is consumed only when a task
-- is handed out.
--
-- Returns 8 values per claimed task: id type queue payload attempt
-- maxAttempts leaseExpiresMs createdMs. The n-th task claimed got the n-th
-- token of ARGV[5], which the caller knows already.
local P, now, max, worker, tokens = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5]
local nowS = N(now)
local out = {}
local n = 0
local nq = (#KEYS - 3) / 4
for q = 1, nq do
  if n >= max then
    break
  end
  local kb = 3 + 4 * (q - 1)
  local pend, cfg, gcra, rdy = KEYS[kb + 1], KEYS[kb + 2], KEYS[kb + 3], KEYS[kb + 4]
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
    local zs = redis.call('ZRANGEBYSCORE', pend, '-inf', nowS, 'WITHSCORES', 'LIMIT', 0, want)
    local ls = redis.call('LRANGE', rdy, 0, want - 1)
    -- Merge both, in (ready time, sequence) order, up to want due tasks.
    local due, zrem, nl = {}, {}, 0
    local zi, li = 1, 1
    while #due < want do
      local zm, le = zs[zi], ls[li]
      local lt
      if le then
        lt = rdy_time(le)
        if lt > now then
          le = nil -- the list is in order: nothing after it is due either
        end
      end
      if not zm and not le then
        break
      end
      local fromZ = not le
      if zm and le then
        local zt = tonumber(zs[zi + 1])
        local lm = rdy_member(le)
        if zt ~= lt then
          fromZ = zt < lt
        else
          fromZ = string.sub(zm, 1, 16) < string.sub(lm, 1, 16)
        end
      end
      if fromZ then
        due[#due + 1] = zm
        zrem[#zrem + 1] = zm
        zi = zi + 2
      else
        due[#due + 1] = rdy_member(le)
        li = li + 1
        nl = nl + 1
      end
    end
    if #due > 0 then
      if #zrem > 0 then
        chunked('ZREM', pend, zrem)
      end
      if nl > 0 then
        redis.call('LTRIM', rdy, nl, -1)
      end
      local got = 0
      local z = {}
      for _, m in ipairs(due) do
        local id = string.sub(m, 17)
        local tk = P .. 't:' .. id
        local f = redis.call('HMGET', tk, 'state', 'type', 'payload', 'attempt', 'max', 'ttl', 'created', 'started', 'next')
        -- Anything else in a pend zset or rdy list is stale (it cannot
        -- happen while every transition goes through these scripts); it
        -- is dropped.
        if f[1] == 'pending' or f[1] == 'stalled' then
          n = n + 1
          got = got + 1
          local attempt = tonumber(f[4] or '0') + 1
          local token = string.sub(tokens, 32 * (n - 1) + 1, 32 * n)
          local lease = now + tonumber(f[6])
          local leaseS = N(lease)
          if f[8] then
            redis.call('HSET', tk, 'state', 'processing', 'attempt', attempt, 'token', token,
              'lease', leaseS, 'worker', worker)
          else
            redis.call('HSET', tk, 'state', 'processing', 'attempt', attempt, 'token', token,
              'lease', leaseS, 'worker', worker, 'started', nowS)
          end
          if f[9] then
            redis.call('HDEL', tk, 'next')
          end
          z[#z + 1] = leaseS
          z[#z + 1] = id
          out[#out + 1] = id
          out[#out + 1] = f[2]
          out[#out + 1] = qname
          out[#out + 1] = f[3]
          out[#out + 1] = attempt
          out[#out + 1] = f[5]
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
