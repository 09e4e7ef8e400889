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
-- Returns 8 values per queue: name, ready (due members of pend and due
-- entries of rdy), retry (those not yet due), running, dead, paused (0/1),
-- rate per minute, and the created time (ms) of the oldest ready task or
-- -1, looked for among the first OLDEST tasks in line.
--
-- A rdy entry is the ready time (= created time) in 12 hex digits followed
-- by the pend member (see lib.lua); the list is in ready time order, so its
-- due entries are a prefix, found by bisection when its tail is not due.
local OLDEST = 100
local P, now, cutoff = ARGV[1], ARGV[2], ARGV[3]
local nowN = tonumber(now)
local function rtime(e)
  return tonumber(string.sub(e, 1, 12), 16)
end
local out = {}
for _, q in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local pend = P .. 'pend:' .. q
  local rdy = P .. 'rdy:' .. q
  local zready = redis.call('ZCOUNT', pend, '-inf', now)
  local retry = redis.call('ZCOUNT', pend, '(' .. now, '+inf')
  local len = redis.call('LLEN', rdy)
  local lready = 0
  if len > 0 then
    if rtime(redis.call('LINDEX', rdy, -1)) <= nowN then
      lready = len
    else
      -- the first lo entries are due; entry hi (0-based) is not
      local lo, hi = 0, len - 1
      while lo < hi do
        local mid = math.floor((lo + hi) / 2)
        if rtime(redis.call('LINDEX', rdy, mid)) <= nowN then
          lo = mid + 1
        else
          hi = mid
        end
      end
      lready = lo
    end
  end
  local ready = zready + lready
  retry = retry + len - lready
  local running = tonumber(redis.call('HGET', KEYS[2], q) or '0')
  local dead = redis.call('ZCOUNT', P .. 'dead:' .. q, '(' .. cutoff, '+inf')
  local c = redis.call('HMGET', P .. 'qcfg:' .. q, 'paused', 'rate')
  local oldest = -1
  if ready > 0 then
    -- The first OLDEST tasks in line: merge the due prefixes of both.
    local zs = {}
    if zready > 0 then
      zs = redis.call('ZRANGEBYSCORE', pend, '-inf', now, 'WITHSCORES', 'LIMIT', 0, OLDEST)
    end
    local ls = {}
    if lready > 0 then
      ls = redis.call('LRANGE', rdy, 0, math.min(lready, OLDEST) - 1)
    end
    local zi, li, seen = 1, 1, 0
    while seen < OLDEST and (zs[zi] or ls[li]) do
      local cr
      local fromZ = not ls[li]
      if zs[zi] and ls[li] then
        local zt, lt = tonumber(zs[zi + 1]), rtime(ls[li])
        if zt ~= lt then
          fromZ = zt < lt
        else
          fromZ = string.sub(zs[zi], 1, 16) < string.sub(ls[li], 13, 28)
        end
      end
      if fromZ then
        cr = tonumber(redis.call('HGET', P .. 't:' .. string.sub(zs[zi], 17), 'created') or '')
        zi = zi + 2
      else
        cr = rtime(ls[li])
        li = li + 1
      end
      if cr and (oldest < 0 or cr < oldest) then
        oldest = cr
      end
      seen = seen + 1
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
