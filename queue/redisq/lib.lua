-- lib.lua: helpers shared by the state-changing scripts. It is prepended to
-- each script that needs it (see script.go), so every script stays one
-- atomic EVALSHA.
--
-- The helpers work on a context table G that a script builds with ctx():
--   G.P        the namespace key prefix "baton:{ns}:"; keys a script only
--              discovers while running (a task's queue, a dedup holder) are
--              built from it, so they share the namespace's cluster slot
--   G.leases, G.running, G.wrun, G.dedup, G.fin, G.outbox, G.queues, G.seq
--              the namespace's index keys, from KEYS
-- Index updates common to many tasks (the lease index, the running
-- counters, the finished list, the pend zsets and rdy lists) are
-- collected in G and applied once by flush(G), so a batch of 256 costs
-- about two redis.call per task and step, not ten. Per-task keys (t:<id>,
-- pend:<q>, rdy:<q>) are built here from G.P rather than passed in KEYS:
-- every key shares the namespace's hash tag, so the slot is the one of the
-- declared keys, and each KEYS/ARGV entry costs the server about as much
-- as a call.
--
-- Task hash fields: id type queue payload state attempt max ttl dedup
-- notify created started finished next token lease worker outcome reason
-- data error, plus rk (the task's member in its queue's pend zset; its rdy
-- entry, when it is in the rdy list, is its created time + rk) and
-- ackt/acks/ackn (token, state and next attempt of the last applied
-- result, to answer duplicates).

-- N formats a number as an integer string. Lua 5.1 would print integers
-- above 1e14 in exponent form when a number is passed to redis.call.
local function N(x)
  return string.format('%.0f', x)
end

-- terminal reports whether no transition can leave state s.
local function terminal(s)
  return s == 'completed' or s == 'failed' or s == 'timeout' or s == 'cancelled'
end

-- A queue's rdy list holds tasks enqueued ready at once, in (ready time,
-- sequence) order; an entry is the ready time in 12 hex digits followed by
-- the task's pend member (16 hex digits of sequence + id). rdy_entry builds
-- one; rdy_time and rdy_member take it apart.
local function rdy_entry(ready, member)
  return string.format('%012x', ready) .. member
end

local function rdy_time(e)
  return tonumber(string.sub(e, 1, 12), 16)
end

local function rdy_member(e)
  return string.sub(e, 13)
end

-- ctx prepares a context table (see above).
local function ctx(G)
  G.dl, G.dr, G.dw, G.dd, G.known, G.dp = {}, {}, {}, {}, {}, {}
  G.dq, G.tail = {}, {}
  G.seqNext, G.seqLast = 1, 0
  G.seqBlock = G.seqBlock or 64
  return G
end

-- chunked runs cmd on key with the items of list, at most 1000 per call
-- (Lua's unpack has a limit; keep it even for ZADD pairs).
local function chunked(cmd, key, list)
  local i = 1
  while i <= #list do
    local j = math.min(i + 999, #list)
    redis.call(cmd, key, unpack(list, i, j))
    i = j + 1
  end
end

-- hincr adds d to field f of hash h and drops the field when it reaches 0.
local function hincr(h, f, d)
  if redis.call('HINCRBY', h, f, d) <= 0 then
    redis.call('HDEL', h, f)
  end
end

-- flush applies the collected index updates.
local function flush(G)
  if #G.dl > 0 then
    chunked('ZREM', G.leases, G.dl)
  end
  for q, d in pairs(G.dr) do
    if d ~= 0 then hincr(G.running, q, d) end
  end
  for w, d in pairs(G.dw) do
    if d ~= 0 then hincr(G.wrun, w, d) end
  end
  if #G.dd > 0 then
    chunked('RPUSH', G.fin, G.dd)
  end
  for k, z in pairs(G.dp) do
    chunked('ZADD', k, z)
  end
  for k, l in pairs(G.dq) do
    chunked('RPUSH', k, l)
  end
  G.dl, G.dr, G.dw, G.dd, G.dp, G.dq = {}, {}, {}, {}, {}, {}
end

-- next_seq returns the next enqueue sequence number, reserving them from
-- the counter in blocks (gaps are harmless: only the order matters).
local function next_seq(G)
  if G.seqNext > G.seqLast then
    G.seqLast = redis.call('INCRBY', G.seq, G.seqBlock)
    G.seqNext = G.seqLast - G.seqBlock + 1
  end
  local v = G.seqNext
  G.seqNext = v + 1
  return v
end

-- enqueue_one creates task t (a table: id typ queue payload max ttl dkey
-- runat notify, all strings) unless its id exists or its dedup key is held
-- by a live task. fresh means the caller knows the id does not exist yet
-- (one EXISTS for the whole batch), which spares the per-task lookup. The
-- task goes (at flush) to the tail of its queue's rdy list when it is ready
-- now and not before the list's last entry (the usual case: a list append
-- is several times cheaper than a zset insert), else into the pend zset at
-- its RunAt. Either way it is claimed in (ready time, sequence) order. Returns
-- created (0/1), the id now holding the key (or the existing task's id),
-- its state, its queue. Absent hash fields mean empty: attempt 0, no dedup
-- key, no notify.
local function enqueue_one(G, now, t, fresh)
  local id, queue, dkey = t.id, t.queue, t.dkey
  local taskKey = G.P .. 't:' .. id
  if not fresh then
    local ex = redis.call('HMGET', taskKey, 'state', 'queue')
    if ex[1] then
      return {0, id, ex[1], ex[2]}
    end
  end
  if dkey ~= '' then
    local holder = redis.call('HGET', G.dedup, dkey)
    if holder then
      local h = redis.call('HMGET', G.P .. 't:' .. holder, 'state', 'queue')
      if h[1] and not terminal(h[1]) then
        return {0, holder, h[1], h[2]}
      end
    end
    redis.call('HSET', G.dedup, dkey, id)
  end
  local member = string.format('%016x', next_seq(G)) .. id
  if dkey ~= '' or t.notify == '1' then
    local h = {'id', id, 'type', t.typ, 'queue', queue, 'payload', t.payload, 'state', 'pending',
      'max', t.max, 'ttl', t.ttl, 'created', now, 'rk', member}
    if dkey ~= '' then
      h[#h + 1] = 'dedup'
      h[#h + 1] = dkey
    end
    if t.notify == '1' then
      h[#h + 1] = 'notify'
      h[#h + 1] = '1'
    end
    redis.call('HSET', taskKey, unpack(h))
  else
    redis.call('HSET', taskKey, 'id', id, 'type', t.typ, 'queue', queue, 'payload', t.payload,
      'state', 'pending', 'max', t.max, 'ttl', t.ttl, 'created', now, 'rk', member)
  end
  local runat = tonumber(t.runat)
  local rdyKey = G.P .. 'rdy:' .. queue
  local tail = G.tail[rdyKey]
  if tail == nil and runat == tonumber(now) and runat >= 0 then
    local last = redis.call('LINDEX', rdyKey, -1)
    tail = last and rdy_time(last) or -1
    G.tail[rdyKey] = tail
  end
  if runat == tonumber(now) and tail ~= nil and runat >= tail then
    G.tail[rdyKey] = runat
    local l = G.dq[rdyKey]
    if not l then
      l = {}
      G.dq[rdyKey] = l
    end
    l[#l + 1] = rdy_entry(runat, member)
  else
    local pendKey = G.P .. 'pend:' .. queue
    local z = G.dp[pendKey]
    if not z then
      z = {}
      G.dp[pendKey] = z
    end
    z[#z + 1] = t.runat
    z[#z + 1] = member
  end
  if not G.known[queue] then
    redis.call('SADD', G.queues, queue)
    G.known[queue] = true
  end
  return {1, id, 'pending', queue}
end

-- task_at reads the 9 fields of a task to enqueue from a[i..i+8]: id type
-- queue payload max ttlMs dedup runAtMs notify (follow-ups use this
-- uncompressed form).
local function task_at(a, i)
  return {id = a[i], typ = a[i + 1], queue = a[i + 2], payload = a[i + 3], max = a[i + 4],
    ttl = a[i + 5], dkey = a[i + 6], runat = a[i + 7], notify = a[i + 8]}
end

-- end_lease forgets the lease of processing task t (a table with id, queue,
-- worker) in the lease index and the running counters (at flush). The
-- caller deletes the token and lease fields.
local function end_lease(G, t)
  G.dl[#G.dl + 1] = t.id
  G.dr[t.queue] = (G.dr[t.queue] or 0) - 1
  if t.worker and t.worker ~= '' then
    G.dw[t.worker] = (G.dw[t.worker] or 0) - 1
  end
end

-- finish records that task t (id, queue, dedup) ended in state at now:
-- appends "<now>:<id>" to the finished list (Reap purges from its head),
-- indexes it as dead when failed and releases its dedup key if it holds
-- it. The hash gets no TTL: Reap deletes it once past retention.
local function finish(G, taskKey, t, state, now)
  G.dd[#G.dd + 1] = N(now) .. ':' .. t.id
  if state == 'failed' then
    redis.call('ZADD', G.P .. 'dead:' .. t.queue, N(now), t.id)
  end
  if t.dedup and t.dedup ~= '' and redis.call('HGET', G.dedup, t.dedup) == t.id then
    redis.call('HDEL', G.dedup, t.dedup)
  end
end

-- jstr encodes s as a JSON string.
local function jstr(s)
  return cjson.encode(s or '')
end

-- notify_final appends the task.final outbox event (queue.TaskFinal JSON,
-- fields in the Go struct's order) when the task asked for it (notify is
-- its notify field). Payload and data are spliced in raw: they are JSON
-- already, and decoding them would lose number precision and the [] / {}
-- distinction.
local function notify_final(G, taskKey, notify, state, nowStr)
  if notify ~= '1' then
    return
  end
  local f = redis.call('HMGET', taskKey, 'id', 'type', 'queue', 'outcome', 'reason', 'error',
    'attempt', 'payload', 'data')
  local b = '{"taskId":' .. jstr(f[1]) .. ',"type":' .. jstr(f[2]) .. ',"queue":' .. jstr(f[3]) ..
    ',"state":' .. jstr(state)
  if f[4] and f[4] ~= '' then b = b .. ',"outcome":' .. jstr(f[4]) end
  if f[5] and f[5] ~= '' then b = b .. ',"reason":' .. jstr(f[5]) end
  if f[6] and f[6] ~= '' then b = b .. ',"error":' .. jstr(f[6]) end
  b = b .. ',"attempts":' .. (f[7] or '0')
  if f[8] and f[8] ~= '' then b = b .. ',"payload":' .. f[8] end
  if f[9] and f[9] ~= '' then b = b .. ',"data":' .. f[9] end
  b = b .. ',"finishedAt":' .. jstr(nowStr) .. '}'
  redis.call('XADD', G.outbox, '*', 'k', 'task.final', 'b', b)
end
