// Package redisq is the Redis queue store: the production queue.Store,
// shared by any number of controllers pointing at one Redis (or Redis
// Cluster).
//
// # Atomicity
//
// Every state change is one Lua script (one *.lua file beside the Go method
// that calls it, its header naming KEYS, ARGV and return codes). Batches are
// one script call each: enqueueing 256 tasks, claiming up to 256 and
// completing 256 results are three round trips. Lease tokens are generated
// in Go (128 random bits each) and passed in, so the scripts stay
// deterministic in what they decide. Results are fenced: a result or
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
// only runs a script atomically over keys of one slot. The price is that a
// namespace cannot be spread over several cluster shards: its throughput is
// bounded by one Redis core (BenchmarkBatch256 reports the Redis CPU time
// per task). Cluster still buys failover and room for other namespaces;
// an installation that outgrows one core runs several namespaces.
//
// # Time
//
// Times are stored as unix milliseconds and always come from the caller
// (the Now fields), never from the Redis clock, so all controllers agree
// and tests can drive time. The exception is the TTL on finished task hashes
// (retention plus an hour), a backstop that only matters for a namespace
// nobody reaps; Reap deletes finished tasks and their index entries by the
// caller's clock.
//
// # Eviction
//
// Open refuses a server whose maxmemory-policy is anything but noeviction
// (volatile-* policies may evict finished tasks and keys with TTLs, allkeys-*
// anything, including leases), unless Options.AllowEvictingPolicy is set.
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
// Each queue is one sorted set of its pending and stalled tasks, scored by
// ready time (RunAt; NextAttemptAt after a retry; the time of a stall or a
// release), ties broken by an enqueue sequence number carried in the
// member. A claim takes the due prefix with one ZRANGEBYSCORE, so delayed
// and retrying tasks need no mover, and Ready and Retry are two ZCOUNTs.
// Nothing scans a list: cancel is a ZREM too.
package redisq
