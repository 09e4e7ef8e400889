-- complete.lua: apply a batch of worker results, each independently.
--
-- KEYS[1]  leases zset
-- KEYS[2]  running hash
-- KEYS[3]  wrun hash
-- KEYS[4]  dedup hash
-- KEYS[5]  fin list (finished tasks, "<finished ms>:<id>")
-- KEYS[6]  outbox stream
-- KEYS[7]  queues set
-- KEYS[8]  seq counter
-- Task hashes and pend zsets are built from P (same hash tag).
--
-- ARGV[1]  P, the namespace key prefix
-- ARGV[2]  wake channel
-- ARGV[3]  nh, the number of headers
-- ARGV[4+11(h-1)] ..  header h: nowMs nowSubMsNs nowRFC3339 backoffBaseNs
--          backoffMaxNs finalState retryAfterMs jitter invalid(0/1)
--          nFollowUps nOutbox
-- then, per completion, 6 values: id token outcome reason data h (its
-- header's number), followed by 9 values per follow-up (see task_at) and 2
-- per outbox entry (kind body). Completions of a batch mostly share their
-- header (the Go side zeroes the backoff fields of non-retry results), so
-- it is sent once: each argument costs the server about as much as a call.
--
-- Per completion, in order: unknown task -> code 1; token equal to the
-- token of the result already applied (ackt) -> the stored answer again,
-- duplicate; task not processing or token not the lease token -> code 2;
-- invalid (checked in Go) -> code 3; else applied. Nothing changes for
-- codes 1-3 and duplicates. A retry with attempts left waits in the pend
-- zset until NextAttemptAt; any other result ends the task, releases its
-- dedup key, then enqueues the follow-ups, appends the outbox entries and
-- the task.final event, in that order.
--
-- Returns one value per completion: the new state when the result was
-- applied without a next attempt (the common case), else the array {code
-- (0 applied or duplicate, 1 unknown task, 2 lease lost, 3 invalid), state,
-- nextAttemptMs (0 = none), duplicate (0/1)}; then one last value, 1 when
-- it published on the wake channel (after a retry, or a follow-up
-- claimable now).
local P, wake, nh = ARGV[1], ARGV[2], tonumber(ARGV[3])
local G = ctx({P = P, leases = KEYS[1], running = KEYS[2], wrun = KEYS[3],
  dedup = KEYS[4], fin = KEYS[5], outbox = KEYS[6], queues = KEYS[7], seq = KEYS[8]})
local hs = {}
for h = 1, nh do
  local b = 4 + 11 * (h - 1)
  hs[h] = {now = tonumber(ARGV[b]), nowSub = tonumber(ARGV[b + 1]), nowStr = ARGV[b + 2],
    base = tonumber(ARGV[b + 3]), max = tonumber(ARGV[b + 4]), final = ARGV[b + 5],
    retryAfter = tonumber(ARGV[b + 6]) * 1e6, jitter = tonumber(ARGV[b + 7]), invalid = ARGV[b + 8],
    nf = tonumber(ARGV[b + 9]), no = tonumber(ARGV[b + 10])}
end

-- backoff mirrors baton.Backoff.Delay, in nanoseconds.
local function backoff(attempt, retryAfter, jitter, base, max)
  if base <= 0 then base = 1e9 end
  if max <= 0 then max = 600e9 end
  if attempt < 1 then attempt = 1 end
  local exp = base * math.pow(2, attempt - 1)
  if exp > max then exp = max end
  local d = math.floor(exp * (0.5 + jitter / 2))
  if retryAfter > d then d = retryAfter end
  return d
end

local out = {}
local woke = false
local ai = 4 + 11 * nh
while ai <= #ARGV do
  local id, token, outcome, reason, data = ARGV[ai], ARGV[ai + 1], ARGV[ai + 2], ARGV[ai + 3], ARGV[ai + 4]
  local hd = hs[tonumber(ARGV[ai + 5])]
  local tk = P .. 't:' .. id
  local retryAfter, now, nowSub, nowStr = hd.retryAfter, hd.now, hd.nowSub, hd.nowStr
  local jitter, base, max = hd.jitter, hd.base, hd.max
  local final, invalid = hd.final, hd.invalid
  local nf, no = hd.nf, hd.no
  local fa = ai + 6      -- first follow-up's args
  local oa = fa + 9 * nf -- first outbox entry's args
  ai = oa + 2 * no

  local f = redis.call('HMGET', tk, 'state', 'token', 'ackt', 'acks', 'ackn', 'attempt', 'max',
    'queue', 'worker', 'dedup', 'rk', 'notify', 'next')
  local code, state, nxt, dup = 0, "", 0, 0
  if not f[1] then
    code = 1
  elseif f[3] and f[3] == token then
    -- acks is absent when the applied result ended the task, whose state
    -- has not changed since.
    state, nxt, dup = f[4] or f[1], tonumber(f[5] or '0'), 1
  elseif f[1] ~= 'processing' or f[2] ~= token then
    code = 2
  elseif invalid == '1' then
    code = 3
  else
    local t = {id = id, queue = f[8], worker = f[9], dedup = f[10]}
    local attempt, maxAttempts = tonumber(f[6]), tonumber(f[7])
    end_lease(G, t)
    if outcome == 'retry' and attempt < maxAttempts then
      local d = backoff(attempt, retryAfter, jitter, base, max)
      state = 'pending'
      nxt = now + math.floor((nowSub + d) / 1e6)
      redis.call('HSET', tk, 'state', state, 'outcome', outcome, 'reason', reason, 'data', data,
        'next', N(nxt), 'ackt', token, 'acks', state, 'ackn', N(nxt))
      redis.call('ZADD', P .. 'pend:' .. t.queue, N(nxt), f[11])
      woke = true
    else
      local err = ''
      state = final
      if outcome == 'retry' then
        state = 'failed'
        err = 'attempts exhausted: ' .. reason
      end
      -- Only what changed is written: a task without an earlier result
      -- (ackt) has no reason, data or ack fields to overwrite, and the
      -- stale token and lease fields are dead once the state is not
      -- processing (every reader checks the state first).
      local h = {'state', state, 'outcome', outcome, 'finished', N(now), 'ackt', token}
      if f[3] or reason ~= '' then
        h[#h + 1] = 'reason'
        h[#h + 1] = reason
      end
      if f[3] or data ~= '' then
        h[#h + 1] = 'data'
        h[#h + 1] = data
      end
      if f[3] then
        h[#h + 1] = 'acks'
        h[#h + 1] = state
      end
      if err ~= '' then
        h[#h + 1] = 'error'
        h[#h + 1] = err
      end
      redis.call('HSET', tk, unpack(h))
      if f[5] or f[13] then
        redis.call('HDEL', tk, 'ackn', 'next')
      end
      finish(G, tk, t, state, now)
      for j = 0, nf - 1 do
        local a = fa + 9 * j
        local r = enqueue_one(G, N(now), task_at(ARGV, a), false)
        if r[1] == 1 and tonumber(ARGV[a + 7]) <= now then
          woke = true
        end
      end
      for j = 0, no - 1 do
        redis.call('XADD', G.outbox, '*', 'k', ARGV[oa + 2 * j], 'b', ARGV[oa + 2 * j + 1])
      end
      notify_final(G, tk, f[12], state, nowStr)
    end
  end
  if code == 0 and nxt == 0 and dup == 0 then
    out[#out + 1] = state
  else
    out[#out + 1] = {code, state, nxt, dup}
  end
end
flush(G)
if woke then
  redis.call('PUBLISH', wake, '1')
  out[#out + 1] = 1
else
  out[#out + 1] = 0
end
return out
