package redisq

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/redis/go-redis/v9"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
	"github.com/batonhq/baton/queue/queuetest"
)

// The tests need a real Redis: BATON_TEST_REDIS (default
// redis://127.0.0.1:6379/0). Each test works in its own random namespace
// and deletes its keys afterwards; nothing is ever flushed.

func redisURL() string {
	if u := os.Getenv("BATON_TEST_REDIS"); u != "" {
		return u
	}
	return "redis://127.0.0.1:6379/0"
}

// base is the injected start of time; tests move time explicitly.
var base = time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)

func at(ms int64) time.Time { return base.Add(time.Duration(ms) * time.Millisecond) }

// newNamespace returns a fresh random namespace and registers the deletion
// of all its keys when the test ends (after the stores are closed).
func newNamespace(t testing.TB) string {
	t.Helper()
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	ns := "test-" + hex.EncodeToString(b)
	t.Cleanup(func() { deleteNamespace(t, ns) })
	return ns
}

// adminClient is a client of the test Redis, closed at the end of the test.
func adminClient(t testing.TB) *redis.Client {
	t.Helper()
	o, err := redis.ParseURL(redisURL())
	if err != nil {
		t.Fatalf("BATON_TEST_REDIS=%q: %v", redisURL(), err)
	}
	c := redis.NewClient(o)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// namespaceKeys lists every key of namespace ns (SCAN, never KEYS).
func namespaceKeys(t testing.TB, c *redis.Client, ns string) []string {
	t.Helper()
	var out []string
	iter := c.Scan(context.Background(), 0, "baton:{"+ns+"}:*", 1000).Iterator()
	for iter.Next(context.Background()) {
		out = append(out, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatalf("SCAN namespace %s: %v", ns, err)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func deleteNamespace(t testing.TB, ns string) {
	c := adminClient(t)
	keys := namespaceKeys(t, c, ns)
	for len(keys) > 0 {
		n := min(len(keys), 500)
		if err := c.Del(context.Background(), keys[:n]...).Err(); err != nil {
			t.Errorf("cleanup of namespace %s: %v", ns, err)
			return
		}
		keys = keys[n:]
	}
}

// openStore opens a Store on the test Redis in namespace ns, closed when the
// test ends.
func openStore(t testing.TB, ns string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Options{URL: redisURL(), Namespace: ns})
	if err != nil {
		t.Fatalf("these tests need a Redis 7 with maxmemory-policy noeviction at %s (set BATON_TEST_REDIS): %v", redisURL(), err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	queuetest.Run(t, func(t *testing.T) queue.Store {
		return openStore(t, newNamespace(t))
	})
}

func TestOpenOptions(t *testing.T) {
	// A port nobody listens on: bind one, then free it.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	deadURL := "redis://" + l.Addr().String() + "/0"
	_ = l.Close()

	for _, tc := range []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"no url or client", Options{}, "no Redis URL or client"},
		{"bad url", Options{URL: "http://x"}, "parse redis URL"},
		{"hash tag in namespace", Options{URL: redisURL(), Namespace: "a{b}"}, "must not contain"},
		{"negative retention", Options{URL: redisURL(), Retention: -time.Second}, "retention"},
		{"unreachable", Options{URL: deadURL}, "ping"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Open(ctx, tc.opts)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open(%+v) succeeded, want an error containing %q", tc.opts, tc.wantErr)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Open error = %q, want it to contain %q", err, tc.wantErr)
			}
		})
	}

	t.Run("client option", func(t *testing.T) {
		c := adminClient(t)
		s, err := Open(context.Background(), Options{Client: c, Namespace: newNamespace(t)})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		if err := s.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		// The caller's client stays open.
		if err := c.Ping(context.Background()).Err(); err != nil {
			t.Errorf("caller's client closed by Store.Close: %v", err)
		}
	})
}

// startRedis runs a private redis-server on a free loopback port with extra
// arguments and returns its URL; it is killed when the test ends.
func startRedis(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server is required for this test (apt-get install redis-server): %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()}, args...)
	cmd := exec.Command(bin, all...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})
	defer c.Close()
	deadline := time.Now().Add(20 * time.Second)
	for c.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("redis-server %v did not start:\n%s", all, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	return url
}

func TestMaxmemoryPolicy(t *testing.T) {
	evicting := startRedis(t, "--maxmemory-policy", "allkeys-lru")
	noConfig := startRedis(t, "--maxmemory-policy", "allkeys-lru", "--rename-command", "CONFIG", "config-disabled-by-test")
	setPolicy := func(t *testing.T, url, policy string) {
		o, _ := redis.ParseURL(url)
		c := redis.NewClient(o)
		defer c.Close()
		if err := c.ConfigSet(context.Background(), "maxmemory-policy", policy).Err(); err != nil {
			t.Fatalf("CONFIG SET on the private server: %v", err)
		}
	}
	for _, tc := range []struct {
		name    string
		url     string
		policy  string // set on the private server first, when not ""
		allow   bool
		wantErr []string // substrings; nil = Open succeeds
		wantLog string   // substring of the log output
	}{
		{"allkeys-lru refused", evicting, "allkeys-lru", false, []string{`"allkeys-lru"`, "noeviction", "AllowEvictingPolicy"}, ""},
		{"volatile-lru refused", evicting, "volatile-lru", false, []string{`"volatile-lru"`, "noeviction"}, ""},
		{"override", evicting, "allkeys-lru", true, nil, "AllowEvictingPolicy"},
		{"noeviction accepted", evicting, "noeviction", false, nil, ""},
		{"CONFIG disabled warns", noConfig, "", false, nil, "cannot read maxmemory-policy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.policy != "" {
				setPolicy(t, tc.url, tc.policy)
			}
			var logs bytes.Buffer
			s, err := Open(context.Background(), Options{URL: tc.url, Namespace: "policy", AllowEvictingPolicy: tc.allow,
				Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Open: %v", err)
				}
				_ = s.Close()
			} else {
				if err == nil {
					_ = s.Close()
					t.Fatalf("Open succeeded on a server with maxmemory-policy %s", tc.policy)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("Open error %q does not mention %s", err, w)
					}
				}
			}
			if !strings.Contains(logs.String(), tc.wantLog) {
				t.Errorf("log %q does not mention %q", logs.String(), tc.wantLog)
			}
		})
	}
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// keySlot is the Redis Cluster hash slot of key, honouring hash tags.
func keySlot(key string) uint16 {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	return crc16([]byte(key)) % 16384
}

func TestKeySlot(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want uint16
	}{
		{"123456789", 0x31C3 % 16384}, // the CRC16 check value from the cluster spec
		{"foo", 12182},
		{"{user1000}.following", keySlot("user1000")},
		{"foo{}{bar}", keySlot("foo{}{bar}")}, // empty tag: the whole key
	} {
		if got := keySlot(tc.key); got != tc.want {
			t.Errorf("keySlot(%q) = %d, want %d", tc.key, got, tc.want)
		}
	}
	if crc16([]byte("123456789")) != 0x31C3 {
		t.Errorf("crc16 check value = %#x, want 0x31c3", crc16([]byte("123456789")))
	}
}

// TestKeysShareOneSlot drives a store through every kind of key it creates
// and checks that all of them hash to the namespace's one cluster slot.
func TestKeysShareOneSlot(t *testing.T) {
	ns := newNamespace(t)
	s := openStore(t, ns)
	ctx := context.Background()
	mustEnqueue(t, s, at(0),
		queue.NewTask{ID: "a", Type: "x", Queue: "q1", DedupKey: "d1", Notify: true},
		queue.NewTask{ID: "b", Type: "x", Queue: "q2", MaxAttempts: 1},
		queue.NewTask{ID: "c", Type: "x", Queue: "q{odd}name", RunAt: at(60000)},
		queue.NewTask{ID: "{tagged}id", Type: "x", Queue: "q1"},
	)
	if err := s.SetQueueConfig(ctx, "q2", queue.QueueConfig{RatePerMin: 10}); err != nil {
		t.Fatal(err)
	}
	if err := s.TouchWorker(ctx, queue.WorkerSeen{ID: "w", Name: "n", Types: []string{"x"}, Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	got := mustClaim(t, s, "w", at(10), 10, "q1", "q2")
	if len(got) != 3 {
		t.Fatalf("claimed %d, want 3", len(got))
	}
	byID := map[string]baton.Task{}
	for _, tk := range got {
		byID[tk.ID] = tk
	}
	c := pass(byID["a"], at(20))
	c.FollowUps = []queue.NewTask{{ID: "f", Type: "x", Queue: "q3", DedupKey: "d1"}}
	c.Outbox = []queue.OutboxEntry{{Kind: "k", Body: json.RawMessage(`{}`)}}
	mustComplete(t, s, c, retryOf(byID["b"], at(20)))
	if _, _, err := s.PutIfAbsent(ctx, "idem{x}", []byte("v"), time.Hour); err != nil {
		t.Fatal(err)
	}

	kinds := map[string]bool{}
	want := keySlot("{" + ns + "}")
	for _, k := range namespaceKeys(t, adminClient(t), ns) {
		if got := keySlot(k); got != want {
			t.Errorf("key %q is in slot %d, want %d", k, got, want)
		}
		rest := strings.TrimPrefix(k, "baton:{"+ns+"}:")
		kind, _, _ := strings.Cut(rest, ":")
		kinds[kind] = true
	}
	wantKinds := []string{"dead", "dedup", "fin", "gcra", "kv", "leases", "outbox", "pend", "qcfg", "queues", "rdy", "running", "seq", "t", "w", "workers", "wrun"}
	if d := cmp.Diff(wantKinds, slices.Sorted(func(yield func(string) bool) {
		for k := range kinds {
			if !yield(k) {
				return
			}
		}
	})); d != "" {
		t.Errorf("key kinds created (-want +got):\n%s", d)
	}
}

// TestFinishedTasksPurged checks how finished task data goes away: task
// hashes carry no TTL (a per-task PEXPIRE cost more than a fifth of a
// result's Redis time); instead every finished task is appended to the fin
// list and Reap deletes it once past retention, so the data of a reaped
// namespace does not grow forever. Finished ids in the legacy done zset of
// older stores are drained too.
func TestFinishedTasksPurged(t *testing.T) {
	ns := newNamespace(t)
	s := openStore(t, ns)
	ctx := context.Background()
	c := adminClient(t)
	key := func(id string) string { return "baton:{" + ns + "}:t:" + id }
	mustEnqueue(t, s, at(0), queue.NewTask{ID: "a", Type: "x", Queue: "q"}, queue.NewTask{ID: "b", Type: "x", Queue: "q"},
		queue.NewTask{ID: "c", Type: "x", Queue: "q"})
	tasks := mustClaim(t, s, "w", at(0), 2, "q")
	mustComplete(t, s, pass(tasks[0], at(10)))
	if _, err := s.Cancel(ctx, "c", at(20)); err != nil {
		t.Fatal(err)
	}
	// A finished task of an older store: indexed in the done zset, with a TTL.
	if err := c.HSet(ctx, key("old"), "id", "old", "state", "completed", "finished", ms(at(5))).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.PExpire(ctx, key("old"), time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.ZAdd(ctx, "baton:{"+ns+"}:done", redis.Z{Score: float64(ms(at(5))), Member: "old"}).Err(); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		ttl, err := c.PTTL(ctx, key(id)).Result()
		if err != nil {
			t.Fatal(err)
		}
		if ttl != -1 {
			t.Errorf("task %s: PTTL %v, want none (-1)", id, ttl)
		}
	}
	fin, err := c.LRange(ctx, "baton:{"+ns+"}:fin", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := []string{fmt.Sprintf("%d:a", ms(at(10))), fmt.Sprintf("%d:c", ms(at(20)))}
	if d := cmp.Diff(want, fin); d != "" {
		t.Errorf("fin list (-want +got):\n%s", d)
	}
	ret := queue.DefaultRetention
	if st, err := s.Reap(ctx, at(10).Add(ret-time.Millisecond), 100); err != nil || st.Purged != 1 {
		t.Errorf("Reap just before a's retention ends = %+v, %v; want only the legacy task purged", st, err)
	}
	if st, err := s.Reap(ctx, at(20).Add(ret), 100); err != nil || st.Purged != 2 {
		t.Errorf("Reap after retention = %+v, %v; want a and c purged", st, err)
	}
	for _, k := range []string{key("a"), key("c"), key("old"), "baton:{" + ns + "}:fin", "baton:{" + ns + "}:done"} {
		if n, err := c.Exists(ctx, k).Result(); err != nil || n != 0 {
			t.Errorf("%s still exists after the purge (%v)", k, err)
		}
	}
	if n, err := c.Exists(ctx, key("b")).Result(); err != nil || n != 1 {
		t.Errorf("processing task b was purged (%v)", err)
	}
}

// TestReadyListOrder checks the split of a queue between its rdy list
// (tasks enqueued ready now, in order) and its pend zset (everything else,
// including a task enqueued ready now by a controller whose clock is behind
// the list's tail): claims, stats and cancel see one queue in (ready time,
// enqueue order).
func TestReadyListOrder(t *testing.T) {
	ns := newNamespace(t)
	s := openStore(t, ns)
	ctx := context.Background()
	c := adminClient(t)
	mustEnqueue(t, s, at(1000), queue.NewTask{ID: "a", Type: "x", Queue: "q"},
		queue.NewTask{ID: "b", Type: "x", Queue: "q", RunAt: at(500)})
	mustEnqueue(t, s, at(800), queue.NewTask{ID: "c", Type: "x", Queue: "q"}) // clock behind the tail
	mustEnqueue(t, s, at(1000), queue.NewTask{ID: "d", Type: "x", Queue: "q"}, queue.NewTask{ID: "x", Type: "x", Queue: "q"},
		queue.NewTask{ID: "e", Type: "x", Queue: "q"})
	mustEnqueue(t, s, at(1200), queue.NewTask{ID: "f", Type: "x", Queue: "q"})
	if n, err := c.LLen(ctx, "baton:{"+ns+"}:rdy:q").Result(); err != nil || n != 5 {
		t.Fatalf("rdy list holds %d entries (%v), want 5 (a d x e f)", n, err)
	}
	want := queue.QueueStat{Name: "q", Ready: 2, Retry: 5, OldestAgeMs: 100}
	if d := cmp.Diff([]queue.QueueStat{want}, mustQueues(t, s, at(900))); d != "" {
		t.Errorf("Queues at 900 (-want +got):\n%s", d)
	}
	if _, err := s.Cancel(ctx, "x", at(900)); err != nil {
		t.Fatal(err)
	}
	want = queue.QueueStat{Name: "q", Ready: 5, Retry: 1, OldestAgeMs: 200}
	if d := cmp.Diff([]queue.QueueStat{want}, mustQueues(t, s, at(1000))); d != "" {
		t.Errorf("Queues at 1000 (-want +got):\n%s", d)
	}
	got := mustClaim(t, s, "w", at(900), 10, "q")
	if d := cmp.Diff([]string{"b", "c"}, taskIDs(got)); d != "" {
		t.Errorf("claim at 900 (-want +got):\n%s", d)
	}
	// a released task lines up by its release time, behind the list's
	// tasks ready earlier and before those ready later.
	if err := s.Release(ctx, "b", got[0].LeaseToken, at(1100)); err != nil {
		t.Fatal(err)
	}
	got = mustClaim(t, s, "w", at(2000), 2, "q")
	if d := cmp.Diff([]string{"a", "d"}, taskIDs(got)); d != "" {
		t.Errorf("first claim at 2000 (-want +got):\n%s", d)
	}
	got = mustClaim(t, s, "w", at(2000), 10, "q")
	if d := cmp.Diff([]string{"e", "b", "f"}, taskIDs(got)); d != "" {
		t.Errorf("second claim at 2000 (-want +got):\n%s", d)
	}
}

func taskIDs(ts []baton.Task) []string {
	out := make([]string, len(ts))
	for i, tk := range ts {
		out[i] = tk.ID
	}
	return out
}

// TestBackoffMirrorsGo drives tasks through many retries and checks every
// NextAttemptAt against baton.Backoff.Delay, including a Now that is not
// millisecond-aligned.
func TestBackoffMirrorsGo(t *testing.T) {
	s := openStore(t, newNamespace(t))
	for i, tc := range []struct {
		backoff    baton.Backoff
		jitter     float64
		retryAfter int64
		subNanos   time.Duration
	}{
		{baton.Backoff{}, 0, 0, 0},
		{baton.Backoff{}, 0.999, 0, 0},
		{baton.Backoff{Base: time.Second, Max: time.Minute}, 0.123456789, 0, 0},
		{baton.Backoff{Base: 777 * time.Millisecond, Max: 5 * time.Second}, 0.3, 0, 400 * time.Microsecond},
		{baton.Backoff{Base: 1500 * time.Millisecond, Max: time.Hour}, 0.7777777, 2500, 999 * time.Microsecond},
		{baton.Backoff{Base: 3 * time.Nanosecond, Max: 7 * time.Microsecond}, 0.5, 0, 123456 * time.Nanosecond},
		{baton.Backoff{Base: time.Second, Max: 10 * time.Minute}, 0.05, 86400000, 0},
	} {
		t.Run(strconv.Itoa(i), func(t *testing.T) {
			id := "t" + strconv.Itoa(i)
			q := "q" + strconv.Itoa(i)
			mustEnqueue(t, s, at(0), queue.NewTask{ID: id, Type: "x", Queue: q, MaxAttempts: 100})
			now := at(0)
			for attempt := 1; attempt <= 12; attempt++ {
				tk := mustClaim(t, s, "w", now, 1, q)
				if len(tk) != 1 || tk[0].Attempt != attempt {
					t.Fatalf("claim at %v = %+v, want attempt %d", now, tk, attempt)
				}
				now = now.Add(250*time.Millisecond + tc.subNanos)
				c := retryOf(tk[0], now)
				c.Backoff, c.Jitter, c.Result.RetryAfterMs = tc.backoff, tc.jitter, tc.retryAfter
				ack := mustComplete(t, s, c)[0]
				d := tc.backoff.Delay(attempt, time.Duration(tc.retryAfter)*time.Millisecond, tc.jitter)
				want := now.Add(d).Truncate(time.Millisecond)
				if ack.NextAttemptAt == nil || !ack.NextAttemptAt.Equal(want) {
					t.Fatalf("attempt %d: NextAttemptAt = %v, want %v (now %v + %v)", attempt, ack.NextAttemptAt, want, now, d)
				}
				now = *ack.NextAttemptAt
			}
		})
	}
}

// TestTaskFinalJSON checks the task.final body the scripts build by hand:
// awkward strings survive, payload and data are kept byte for byte (big
// numbers, [] vs {}).
func TestTaskFinalJSON(t *testing.T) {
	s := openStore(t, newNamespace(t))
	payload := `{"n":12345678901234567890,"s":"a/b","e":[],"o":{}}`
	reason := "quote \" slash / back \\ 中文 <b>&amp; tab\t nl\n \u0001 end"
	mustEnqueue(t, s, at(0), queue.NewTask{ID: "a/\"b", Type: "t\"y", Queue: "q/1", Payload: json.RawMessage(payload), Notify: true})
	tk := mustClaim(t, s, "w", at(0), 1, "q/1")[0]
	c := pass(tk, at(10))
	c.Result.Outcome, c.Result.Reason, c.Result.Data = baton.OutcomeReject, reason, json.RawMessage(`[]`)
	mustComplete(t, s, c)
	ob, err := s.ReadOutbox(context.Background(), 10)
	if err != nil || len(ob) != 1 {
		t.Fatalf("ReadOutbox = %+v, %v", ob, err)
	}
	if !json.Valid(ob[0].Body) {
		t.Fatalf("task.final body is not JSON: %s", ob[0].Body)
	}
	var got queue.TaskFinal
	if err := json.Unmarshal(ob[0].Body, &got); err != nil {
		t.Fatal(err)
	}
	want := queue.TaskFinal{TaskID: "a/\"b", Type: "t\"y", Queue: "q/1", State: baton.StateCompleted, Outcome: baton.OutcomeReject,
		Reason: reason, Attempts: 1, Payload: json.RawMessage(payload), Data: json.RawMessage(`[]`), FinishedAt: at(10)}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("task.final (-want +got):\n%s", d)
	}
}

// TestTwoControllers runs two Stores on one namespace, as two controller
// processes: workers claim through either, some abandon their first lease,
// both reap. No task is handed out twice under live leases, every task is
// completed exactly once, and late results of reaped leases are refused.
func TestTwoControllers(t *testing.T) {
	ns := newNamespace(t)
	stores := []*Store{openStore(t, ns), openStore(t, ns)}
	const nTasks, nWorkers = 600, 6
	tasks := make([]queue.NewTask, nTasks)
	for i := range tasks {
		tasks[i] = queue.NewTask{ID: fmt.Sprintf("t%04d", i), Type: "x", Queue: []string{"a", "b"}[i%2],
			LeaseTTL: time.Second, MaxAttempts: 50}
	}
	mustEnqueue(t, stores[0], at(0), tasks[:nTasks/2]...)
	mustEnqueue(t, stores[1], at(0), tasks[nTasks/2:]...)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // hang guard only
	defer cancel()
	var (
		clock        atomic.Int64
		done         atomic.Int64
		stalled      atomic.Int64
		mu           sync.Mutex
		tries        = map[string][]int{}
		tokens       = map[string]bool{}
		acks         = map[string]int{}
		lateRejected atomic.Int64
		wg           sync.WaitGroup
	)
	now := func() time.Time { return at(clock.Load()) }
	for r := range 2 {
		wg.Go(func() {
			for done.Load() < nTasks && ctx.Err() == nil {
				if r == 0 {
					clock.Add(200)
				}
				st, err := stores[r].Reap(ctx, now(), 25)
				if err != nil {
					t.Errorf("Reap: %v", err)
					return
				}
				if st.Failed != 0 {
					t.Errorf("Reap failed %d tasks; MaxAttempts is 50", st.Failed)
				}
				stalled.Add(int64(st.Stalled))
				time.Sleep(time.Millisecond)
			}
		})
	}
	for w := range nWorkers {
		s := stores[w%2]
		worker := fmt.Sprintf("w%d", w)
		wg.Go(func() {
			var late []queue.Completion
			for done.Load() < nTasks {
				if ctx.Err() != nil {
					t.Errorf("%s: gave up with %d of %d done", worker, done.Load(), nTasks)
					return
				}
				got, err := s.Claim(ctx, queue.ClaimRequest{WorkerID: worker, Queues: []string{"a", "b"}, Max: 1 + w, Now: now()})
				if err != nil {
					t.Errorf("%s: Claim: %v", worker, err)
					return
				}
				var cs []queue.Completion
				mu.Lock()
				for _, tk := range got {
					if tokens[tk.LeaseToken] {
						t.Errorf("token %s handed out twice", tk.LeaseToken)
					}
					tokens[tk.LeaseToken] = true
					tries[tk.ID] = append(tries[tk.ID], tk.Attempt)
					if tk.Attempt == 1 && strings.HasSuffix(tk.ID, "3") {
						late = append(late, pass(tk, now())) // abandoned: reported after the reap
					} else {
						cs = append(cs, pass(tk, now()))
					}
				}
				mu.Unlock()
				if len(late) > 8 || (len(got) == 0 && len(late) > 0) {
					// Report abandoned results once their leases are surely gone.
					for clock.Load() < ms(late[len(late)-1].Now)-ms(base)+5000 && done.Load() < nTasks && ctx.Err() == nil {
						time.Sleep(time.Millisecond)
					}
					for i := range late {
						late[i].Now = now()
					}
					res, err := s.Complete(ctx, late)
					if err != nil {
						t.Errorf("%s: Complete: %v", worker, err)
						return
					}
					for i, r := range res {
						if errors.Is(r.Err, baton.ErrLeaseLost) {
							lateRejected.Add(1)
							continue
						}
						// The reaper may not have got to it yet: then the
						// late result is still the current one.
						if r.Err != nil || r.Ack.Duplicate {
							t.Errorf("late Complete(%s) = %+v", late[i].TaskID, r)
							continue
						}
						mu.Lock()
						acks[late[i].TaskID]++
						mu.Unlock()
						done.Add(1)
					}
					late = late[:0]
				}
				if len(cs) == 0 {
					time.Sleep(time.Millisecond)
					continue
				}
				res, err := s.Complete(ctx, cs)
				if err != nil {
					t.Errorf("%s: Complete: %v", worker, err)
					return
				}
				for i, r := range res {
					switch {
					case r.Err == nil && !r.Ack.Duplicate && r.Ack.State == baton.StateCompleted:
						mu.Lock()
						acks[cs[i].TaskID]++
						mu.Unlock()
						done.Add(1)
					case errors.Is(r.Err, baton.ErrLeaseLost):
						// Reaped between claim and result (the clock moves fast).
					default:
						t.Errorf("%s: Complete(%s) = %+v", worker, cs[i].TaskID, r)
					}
				}
			}
		})
	}
	wg.Wait()
	if t.Failed() {
		t.Logf("done %d of %d, stalled %d, late refused %d, queues %+v", done.Load(), nTasks, stalled.Load(), lateRejected.Load(),
			mustQueues(t, stores[0], now()))
		return
	}
	var nClaims int64
	for _, tk := range tasks {
		id := tk.ID
		nClaims += int64(len(tries[id]))
		want := make([]int, len(tries[id]))
		for i := range want {
			want[i] = i + 1
		}
		if !slices.Equal(slices.Sorted(slices.Values(tries[id])), want) {
			t.Errorf("task %s: attempts handed out %v, want 1..n", id, tries[id])
		}
		if acks[id] != 1 {
			t.Errorf("task %s: %d applied results, want exactly 1", id, acks[id])
		}
		ti, err := stores[0].Get(ctx, id)
		if err != nil || ti.Status != baton.StateCompleted {
			t.Errorf("task %s: %v %v, want completed", id, ti.Status, err)
		}
	}
	if nClaims != nTasks+stalled.Load() {
		t.Errorf("%d claims for %d tasks and %d stalls: a task was handed out without a stall", nClaims, nTasks, stalled.Load())
	}
	if stalled.Load() == 0 || lateRejected.Load() == 0 {
		t.Errorf("stalled %d, late results refused %d: the test did not exercise the reapers", stalled.Load(), lateRejected.Load())
	}
	for _, st := range mustQueues(t, stores[1], now()) {
		if st.Ready != 0 || st.Running != 0 || st.Retry != 0 {
			t.Errorf("queue %s not drained: %+v", st.Name, st)
		}
	}
}

// TestWakeAcrossStores checks that a change through one Store wakes another
// Store of the same namespace (another controller process).
func TestWakeAcrossStores(t *testing.T) {
	ns := newNamespace(t)
	a, b := openStore(t, ns), openStore(t, ns)
	drain := func() {
		for {
			select {
			case <-b.Wake():
			default:
				return
			}
		}
	}
	expect := func(what string) {
		t.Helper()
		select {
		case <-b.Wake():
		case <-time.After(10 * time.Second): // hang guard, not a latency bound
			t.Fatalf("B not woken after %s on A", what)
		}
	}
	ctx := context.Background()
	for _, step := range []struct {
		name string
		do   func()
	}{
		{"Enqueue", func() { mustEnqueue(t, a, at(0), queue.NewTask{ID: "x", Type: "t", Queue: "q"}) }},
		{"Release", func() {
			tk := mustClaim(t, a, "w", at(0), 1, "q")[0]
			drain()
			if err := a.Release(ctx, tk.ID, tk.LeaseToken, at(1)); err != nil {
				t.Fatal(err)
			}
		}},
		{"Reap", func() {
			if got := mustClaim(t, a, "w", at(2), 1, "q"); len(got) != 1 {
				t.Fatalf("Claim = %v, want the released task", got)
			}
			drain()
			if st, err := a.Reap(ctx, at(60000), 10); err != nil || st.Stalled != 1 {
				t.Fatalf("Reap = %+v, %v", st, err)
			}
		}},
		{"resume", func() {
			if err := a.SetQueueConfig(ctx, "q", queue.QueueConfig{}); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		drain()
		step.do()
		expect(step.name)
	}
}

// redisCPU returns the CPU seconds the Redis server has used.
func redisCPU(tb testing.TB, c *redis.Client) float64 {
	tb.Helper()
	info, err := c.Info(context.Background(), "cpu").Result()
	if err != nil {
		tb.Fatalf("INFO cpu: %v", err)
	}
	var sum float64
	for _, l := range strings.Split(info, "\r\n") {
		k, v, _ := strings.Cut(l, ":")
		if k == "used_cpu_user" || k == "used_cpu_sys" {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				tb.Fatalf("INFO cpu: %s: %v", l, err)
			}
			sum += f
		}
	}
	return sum
}

// TestNamespacesIsolated checks that two namespaces on one server share
// nothing: tasks, queues, dedup keys, outbox.
func TestNamespacesIsolated(t *testing.T) {
	a, b := openStore(t, newNamespace(t)), openStore(t, newNamespace(t))
	ctx := context.Background()
	mustEnqueue(t, a, at(0), queue.NewTask{ID: "x", Type: "t", Queue: "q", DedupKey: "k", Notify: true})
	res := mustEnqueue(t, b, at(0), queue.NewTask{ID: "y", Type: "t", Queue: "q", DedupKey: "k"})
	if !res[0].Created {
		t.Errorf("dedup key of namespace A held in B: %+v", res[0])
	}
	if got := mustClaim(t, b, "w", at(0), 10, "q"); len(got) != 1 || got[0].ID != "y" {
		t.Errorf("B claimed %+v, want only y", got)
	}
	if _, err := b.Get(ctx, "x"); !errors.Is(err, baton.ErrNotFound) {
		t.Errorf("B.Get(x) = %v, want ErrNotFound", err)
	}
	if _, err := a.Cancel(ctx, "x", at(1)); err != nil {
		t.Fatal(err)
	}
	if ob, err := b.ReadOutbox(ctx, 10); err != nil || len(ob) != 0 {
		t.Errorf("B's outbox = %+v, %v; want empty", ob, err)
	}
	if st := mustQueues(t, a, at(2)); len(st) != 1 || st[0].Ready != 0 || st[0].Running != 0 {
		t.Errorf("A's queues = %+v, want q with nothing ready or running", st)
	}
}

// BenchmarkBatch256 measures one controller's round: enqueue 256 no-op
// tasks, claim them in one call, complete them in one call. Besides
// tasks/s it reports the Redis server's CPU time per task (redis-µs/task),
// which does not depend on how busy the client machine is; it includes
// whatever else the server runs meanwhile, so use a quiet server.
func BenchmarkBatch256(b *testing.B) {
	s := openStore(b, newNamespace(b))
	admin := adminClient(b)
	ctx := context.Background()
	const n = 256
	tasks := make([]queue.NewTask, n)
	cs := make([]queue.Completion, n)
	now := at(0)
	cpu0 := redisCPU(b, admin)
	b.ResetTimer()
	for i := range b.N {
		for j := range tasks {
			tasks[j] = queue.NewTask{ID: fmt.Sprintf("b%d-%d", i, j), Type: "noop", Queue: "bench"}
		}
		if _, err := s.Enqueue(ctx, now, tasks); err != nil {
			b.Fatal(err)
		}
		got, err := s.Claim(ctx, queue.ClaimRequest{WorkerID: "w", Queues: []string{"bench"}, Max: n, Now: now})
		if err != nil || len(got) != n {
			b.Fatalf("Claim = %d tasks, %v", len(got), err)
		}
		for j, tk := range got {
			cs[j] = pass(tk, now)
		}
		res, err := s.Complete(ctx, cs)
		if err != nil {
			b.Fatal(err)
		}
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tasks/s")
	b.ReportMetric((redisCPU(b, admin)-cpu0)*1e6/float64(n*b.N), "redis-µs/task")
}

// BenchmarkPhases is BenchmarkBatch256 with the Redis CPU time per task
// reported for each step (enqueue, claim, complete), on an empty queue and
// behind a backlog of 100,000 tasks (time moves 1 ms per round there, as
// it does under load). INFO is called around each step, which adds a
// little to every figure.
func BenchmarkPhases(b *testing.B) {
	for _, backlog := range []int{0, 100000} {
		b.Run(fmt.Sprintf("backlog=%d", backlog), func(b *testing.B) { benchPhases(b, backlog) })
	}
}

func benchPhases(b *testing.B, backlog int) {
	s := openStore(b, newNamespace(b))
	admin := adminClient(b)
	ctx := context.Background()
	const n = 256
	tasks := make([]queue.NewTask, n)
	cs := make([]queue.Completion, n)
	now := at(0)
	for i := 0; i < backlog; i += n {
		for j := range tasks {
			tasks[j] = queue.NewTask{ID: fmt.Sprintf("p%d-%d", i, j), Type: "noop", Queue: "bench"}
		}
		if _, err := s.Enqueue(ctx, now, tasks); err != nil {
			b.Fatal(err)
		}
	}
	var enq, claim, compl float64
	b.ResetTimer()
	for i := range b.N {
		for j := range tasks {
			tasks[j] = queue.NewTask{ID: fmt.Sprintf("b%d-%d", i, j), Type: "noop", Queue: "bench"}
		}
		if backlog > 0 {
			now = now.Add(time.Millisecond)
		}
		t0 := redisCPU(b, admin)
		if _, err := s.Enqueue(ctx, now, tasks); err != nil {
			b.Fatal(err)
		}
		t1 := redisCPU(b, admin)
		got, err := s.Claim(ctx, queue.ClaimRequest{WorkerID: "w", Queues: []string{"bench"}, Max: n, Now: now})
		if err != nil || len(got) != n {
			b.Fatalf("Claim = %d tasks, %v", len(got), err)
		}
		t2 := redisCPU(b, admin)
		for j, tk := range got {
			cs[j] = pass(tk, now)
		}
		if _, err := s.Complete(ctx, cs); err != nil {
			b.Fatal(err)
		}
		t3 := redisCPU(b, admin)
		enq, claim, compl = enq+t1-t0, claim+t2-t1, compl+t3-t2
	}
	b.StopTimer()
	per := 1e6 / float64(n*b.N)
	b.ReportMetric(enq*per, "enqueue-redis-µs/task")
	b.ReportMetric(claim*per, "claim-redis-µs/task")
	b.ReportMetric(compl*per, "complete-redis-µs/task")
}

// helpers

func pass(tk baton.Task, now time.Time) queue.Completion {
	return queue.Completion{TaskID: tk.ID, Now: now, Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomePass}}
}

func retryOf(tk baton.Task, now time.Time) queue.Completion {
	return queue.Completion{TaskID: tk.ID, Now: now, Result: baton.Result{LeaseToken: tk.LeaseToken, Outcome: baton.OutcomeRetry, Reason: "again"}}
}

func mustEnqueue(t testing.TB, s *Store, now time.Time, tasks ...queue.NewTask) []queue.EnqueueResult {
	t.Helper()
	res, err := s.Enqueue(context.Background(), now, tasks)
	if err != nil {
		t.Fatalf("Enqueue: %v", err)
	}
	return res
}

func mustClaim(t testing.TB, s *Store, worker string, now time.Time, max int, queues ...string) []baton.Task {
	t.Helper()
	got, err := s.Claim(context.Background(), queue.ClaimRequest{WorkerID: worker, Queues: queues, Max: max, Now: now})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return got
}

func mustComplete(t testing.TB, s *Store, cs ...queue.Completion) []queue.Ack {
	t.Helper()
	res, err := s.Complete(context.Background(), cs)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	acks := make([]queue.Ack, len(res))
	for i, r := range res {
		if r.Err != nil {
			t.Fatalf("Complete(%s): %v", cs[i].TaskID, r.Err)
		}
		acks[i] = r.Ack
	}
	return acks
}

func mustQueues(t testing.TB, s *Store, now time.Time) []queue.QueueStat {
	t.Helper()
	st, err := s.Queues(context.Background(), now)
	if err != nil {
		t.Fatalf("Queues: %v", err)
	}
	return st
}
