package redisq

import (
	"fmt"
	"strings"
)

// keys builds every Redis key and channel name the store uses. All of them
// start with "baton:{<namespace>}:", so the whole namespace hashes to one
// Redis Cluster slot (see doc.go for why). The Lua scripts receive the same
// prefix (keys.prefix) and build from it the keys they only discover while
// running (a task's queue, a dedup holder, the queues of expired leases) and
// the per-task keys of a batch (t:<id>, pend:<q>, rdy:<q>), which would
// otherwise cost one KEYS entry each.
//
// Layout (P = "baton:{ns}:"):
//
//	P t:<id>        hash   one task
//	P pend:<q>      zset   the pending and stalled tasks of queue q that
//	                       are not in rdy:<q> (see doc.go, Order). Score =
//	                       ready time in ms: RunAt when enqueued, NextAttemptAt
//	                       after a retry, the time of the stall or release;
//	                       claimable when <= now. Member = 16 hex digits of
//	                       the task's enqueue sequence number + id, so equal
//	                       ready times keep insertion order.
//	P rdy:<q>       list   tasks of queue q enqueued ready at once (RunAt =
//	                       now, not before the list's tail), in (ready
//	                       time, sequence) order: entry = ready ms in 12
//	                       hex digits + the pend member. Claim merges it
//	                       with pend:<q>; everything else (delayed,
//	                       retried, stalled, released) goes to pend:<q>
//	P seq           string enqueue sequence counter
//	P dead:<q>      zset   failed ids within retention (score = finished ms)
//	P qcfg:<q>      hash   queue config: paused, rate
//	P gcra:<q>      string rate limiter TAT (ms)
//	P queues        set    known queue names
//	P leases        zset   processing ids (score = lease deadline ms)
//	P running       hash   queue -> processing count
//	P wrun          hash   worker id -> processing count
//	P dedup         hash   dedup key -> holding task id
//	P fin           list   finished tasks, "<finished ms>:<id>", appended
//	                       when a task ends; Reap purges from the head
//	P done          zset   legacy finished index (score = finished ms) of
//	                       stores before the fin list; only Reap reads
//	                       and drains it, nothing adds to it any more
//	P outbox        stream outbox entries (fields k=kind, b=body)
//	P workers       zset   worker id -> last seen ms
//	P w:<id>        hash   worker name and types
//	P kv:<key>      string PutIfAbsent values
//	P wake          pubsub channel: tasks became claimable
//
// Every key is a distinct fixed word followed by ":" (or nothing), then the
// caller's name, so no task id or queue name can make two keys collide.
//
// The scripts build the keys they discover from the same prefix and words
// ("t:", "pend:", "rdy:", "dead:", "qcfg:"); TestKeysShareOneSlot checks that every
// key a store creates is one of the kinds above and in the namespace's slot.
type keys struct {
	prefix  string
	queues  string
	leases  string
	running string
	wrun    string
	dedup   string
	fin     string
	done    string
	outbox  string
	workers string
	seq     string
	wake    string
}

func newKeys(namespace string) (keys, error) {
	if namespace == "" {
		return keys{}, fmt.Errorf("namespace is empty")
	}
	if strings.ContainsAny(namespace, "{}") {
		return keys{}, fmt.Errorf("namespace %q must not contain '{' or '}' (it becomes the cluster hash tag)", namespace)
	}
	p := "baton:{" + namespace + "}:"
	return keys{
		prefix:  p,
		queues:  p + "queues",
		leases:  p + "leases",
		running: p + "running",
		wrun:    p + "wrun",
		dedup:   p + "dedup",
		fin:     p + "fin",
		done:    p + "done",
		outbox:  p + "outbox",
		workers: p + "workers",
		seq:     p + "seq",
		wake:    p + "wake",
	}, nil
}

func (k keys) task(id string) string   { return k.prefix + "t:" + id }
func (k keys) pend(q string) string    { return k.prefix + "pend:" + q }
func (k keys) rdy(q string) string     { return k.prefix + "rdy:" + q }
func (k keys) qcfg(q string) string    { return k.prefix + "qcfg:" + q }
func (k keys) gcra(q string) string    { return k.prefix + "gcra:" + q }
func (k keys) worker(id string) string { return k.prefix + "w:" + id }
func (k keys) kv(key string) string    { return k.prefix + "kv:" + key }
