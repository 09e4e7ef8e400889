// Package redisq is the Redis queue store: the production queue.Store,
// shared by any number of controllers pointing at one Redis (or Redis
// Cluster).
//
// # Atomicity
//
// Every state change is one Lua script (one *.lua file beside the Go method
// that calls it, its header naming KEYS, ARGV and return codes). Batches are
// one script call each: enqueueing 256 tasks, claiming up to 256 and
// completing 256 results are three round trips. Inside a script, what costs
// is the number of redis.call and of KEYS/ARGV entries (each costs the
// server roughly what a cheap call does), so the scripts make about one
// call per task and step besides batched index updates (enqueue: HSET;
// claim: HMGET + HSET; complete: HMGET + HSET), the per-task keys are built
// in Lua from the namespace prefix instead of being passed in KEYS, fields
// a batch shares are sent once as a header, and replies omit what the
// caller knows (a created task's id and queue, its lease token, the usual
// ack). Lease tokens are generated in Go (128 random bits each) and passed
// in, so the scripts stay deterministic in what they decide. Results are fenced: a result or
// heartbeat whose token is not the task's current lease token changes
// nothing, and a result repeated with the token already applied gets the
// first answer again.
//
// # One hash tag per namespace
//
// Every key starts with "baton:{<namespace>}:" (see keys.go), so the whole
// namespace lives in one Redis Cluster slot. This is deliberate: applying a
// result touches the task, its queue, the lease index, the dedup index, the
// follow-up tasks' queues and the outbox in one atomic script, and Redis
// only runs a script atomically over keys of one slot. (The scripts declare
// the namespace's fixed keys in KEYS and build per-task keys from the
// prefix; with one hash tag every key they touch is in the declared keys'
// slot, which Redis Cluster accepts.) The price is that a
// namespace cannot be spread over several cluster shards: its throughput is
// bounded by one Redis core (BenchmarkBatch256 reports the Redis CPU time
// per task). Cluster still buys failover and room for other namespaces;
// an installation that outgrows one core runs several namespaces.
//
// # Time
//
// Times are stored as unix milliseconds and always come from the caller
// (the Now fields), never from the Redis clock, so all controllers agree
// and tests can drive time.
//
// # Retention
//
// Task hashes carry no TTL (a PEXPIRE per finished task was about a fifth
// of a result's Redis time). Every task that ends is appended, as
// "<finished ms>:<id>", to the namespace's fin list, and Reap, which every
// controller runs periodically, purges from the head of that list the
// tasks finished at or before now minus retention by the caller's clock,
// so finished task data does not grow forever while any controller runs.
// The list is in the order tasks ended; an entry stops the purge until it
// is itself past retention, so a task may outlive its retention by the
// clock skew between controllers, never the other way. A namespace nobody
// reaps any more keeps its data until Reap runs again (or the namespace is
// dropped). Finished ids left in the "done" zset by older versions are
// drained by Reap as well.
//
// # Eviction
//
// Open refuses a server whose maxmemory-policy is anything but noeviction
// (volatile-* policies may evict keys with TTLs, allkeys-* anything,
// including leases), unless Options.AllowEvictingPolicy is set.
// When CONFIG is disabled (managed services) it logs a warning and starts.
//
// # Wake-ups
//
// The scripts PUBLISH on "baton:{<namespace>}:wake" whenever they make a
// task claimable now (enqueue, follow-ups, release, stall, resuming a
// queue) or schedule a retry. Each Store runs one subscriber goroutine that
// turns these messages into a coalesced signal on Wake(). A task becoming
// due later (RunAt, retry backoff) is not announced when it becomes due;
// long-polling claimers also poll.
//
// # Order
//
// Each queue's pending and stalled tasks are in one of two structures,
// both in (ready time, enqueue sequence) order: the rdy list holds tasks
// enqueued ready at once (RunAt = now, not earlier than the list's tail,
// which is almost always the case), the pend sorted set everything else:
// delayed tasks (score = RunAt), retries (NextAttemptAt), stalled and
// released tasks (the time of the stall or release), and a task enqueued
// by a controller whose clock is behind the list's tail. A claim reads the
// due prefix of both (one ZRANGEBYSCORE, one LRANGE) and merges them, so
// delayed and retrying tasks need no mover; Ready and Retry are two
// ZCOUNTs plus the list's due prefix (found by bisection when its tail is
// not due). Appending to a list and trimming its head cost a fraction of a
// zset insert and remove (with a backlog of 100,000 tasks, about 1.5 µs
// less per enqueued task and 3 µs less per claimed task). Cancelling a
// task in the rdy list is an LREM, which scans the list up to it; nothing
// else scans a list.
//
// # Cost
//
// Measured on a 2-core machine shared with other jobs, Redis 7.0, in Redis
// CPU per task (best of several runs; under load every figure inflates by
// up to half): BenchmarkBatch256 (enqueue 256 no-op tasks, claim them,
// complete them) went from 33 µs (about 10 enqueue, 11 claim, 16
// complete) to 22 µs (about 8, 10, 10) with the design above, and
// "baton bench queue --redis" end to end, whose batches are smaller, from
// about 53 to 37 µs. BenchmarkPhases reports the split per step, also
// behind a backlog, where the rdy list pays most. What is left is mostly
// the fixed cost of the five redis.call per task (a hash write at enqueue,
// a read and a write at claim and at completion) plus each script call's
// own overhead, which smaller batches spread over fewer tasks.
package redisq
