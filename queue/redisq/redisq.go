package redisq

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

// DefaultNamespace is the namespace used when Options.Namespace is empty.
const DefaultNamespace = "baton"

// hashGrace is how much longer than the retention a worker's hash (w:<id>)
// lives in Redis; Reap forgets workers not seen within retention. Task
// hashes carry no TTL: Reap purges finished tasks (see doc.go).
const hashGrace = time.Hour

// maxBatch bounds how many tasks or completions one script call carries, so
// that one huge batch cannot block Redis for long. The controller's batches
// (at most 256) always fit in one call.
const maxBatch = 1024

// Options configures a Store.
type Options struct {
	// URL of the Redis server, e.g. "redis://127.0.0.1:6379/0" (see
	// redis.ParseURL). Required unless Client is set.
	URL string
	// Client, when set, is used instead of dialing URL (a *redis.Client or
	// a *redis.ClusterClient). The Store does not close it.
	Client redis.UniversalClient
	// Namespace separates independent Baton installations sharing one Redis;
	// it becomes the keys' cluster hash tag. Default DefaultNamespace. It
	// must not contain '{' or '}'.
	Namespace string
	// Retention is how long finished tasks stay readable; 0 means
	// queue.DefaultRetention.
	Retention time.Duration
	// Logger receives warnings; nil means slog.Default().
	Logger *slog.Logger
	// AllowEvictingPolicy lets Open start although the server's
	// maxmemory-policy may evict keys (anything but noeviction). Eviction
	// can silently drop leases, tasks and dedup keys; only set this for a
	// throwaway server.
	AllowEvictingPolicy bool
}

// Store is the Redis queue store. It implements queue.Store; several Stores
// (in one or several controller processes) may share one namespace.
type Store struct {
	client    redis.UniversalClient
	ownClient bool
	k         keys
	retention time.Duration
	log       *slog.Logger

	wake    chan struct{}
	sub     *redis.PubSub
	subDone chan struct{}

	closeOnce sync.Once
	closeErr  error
}

var _ queue.Store = (*Store)(nil)

// Open connects to Redis, checks that it will not evict Baton's keys and
// subscribes to the namespace's wake channel.
func Open(ctx context.Context, opts Options) (*Store, error) {
	ns := opts.Namespace
	if ns == "" {
		ns = DefaultNamespace
	}
	k, err := newKeys(ns)
	if err != nil {
		return nil, fmt.Errorf("redisq: %w", err)
	}
	if opts.Retention < 0 {
		return nil, fmt.Errorf("redisq: retention %v is negative", opts.Retention)
	}
	s := &Store{
		k:         k,
		retention: opts.Retention,
		log:       opts.Logger,
		wake:      make(chan struct{}, 1),
	}
	if s.retention == 0 {
		s.retention = queue.DefaultRetention
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.log = s.log.With("component", "redisq", "namespace", ns)

	switch {
	case opts.Client != nil:
		s.client = opts.Client
	case opts.URL != "":
		o, err := redis.ParseURL(opts.URL)
		if err != nil {
			return nil, fmt.Errorf("redisq: parse redis URL: %w", err)
		}
		s.client = redis.NewClient(o)
		s.ownClient = true
	default:
		return nil, errors.New("redisq: no Redis URL or client given")
	}

	if err := s.start(ctx, opts.AllowEvictingPolicy); err != nil {
		if s.ownClient {
			_ = s.client.Close()
		}
		return nil, err
	}
	return s, nil
}

func (s *Store) start(ctx context.Context, allowEvicting bool) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisq: ping: %w", err)
	}
	if err := s.checkEviction(ctx, allowEvicting); err != nil {
		return err
	}
	sub := s.client.Subscribe(ctx, s.k.wake)
	// Wait for the subscription to be confirmed, so that a task enqueued by
	// anyone after Open returns is sure to wake this Store.
	if _, err := sub.Receive(ctx); err != nil {
		_ = sub.Close()
		return fmt.Errorf("redisq: subscribe %s: %w", s.k.wake, err)
	}
	s.sub = sub
	s.subDone = make(chan struct{})
	ch := sub.Channel()
	go func() {
		defer close(s.subDone)
		for range ch {
			s.signal()
		}
	}()
	return nil
}

// checkEviction refuses a server whose maxmemory-policy may evict keys.
func (s *Store) checkEviction(ctx context.Context, allow bool) error {
	res, err := s.client.ConfigGet(ctx, "maxmemory-policy").Result()
	if err != nil {
		// Managed Redis services often disable CONFIG; we cannot check.
		s.log.Warn("cannot read maxmemory-policy; make sure it is noeviction, or leases and tasks may be evicted", "err", err)
		return nil
	}
	policy, ok := res["maxmemory-policy"]
	if !ok {
		s.log.Warn("server did not report maxmemory-policy; make sure it is noeviction")
		return nil
	}
	if policy == "noeviction" {
		return nil
	}
	if allow {
		s.log.Warn("Redis maxmemory-policy may evict leases and tasks; running anyway because AllowEvictingPolicy is set", "policy", policy)
		return nil
	}
	return fmt.Errorf("redisq: Redis maxmemory-policy is %q, which may evict leases, tasks and dedup keys under memory pressure; "+
		"set it to noeviction (CONFIG SET maxmemory-policy noeviction, and \"maxmemory-policy noeviction\" in redis.conf), "+
		"or set redisq.Options.AllowEvictingPolicy to start anyway", policy)
}

// signal wakes the Wake channel's reader, coalescing with a pending signal.
func (s *Store) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Wake returns a channel that receives (coalesced) after tasks became
// claimable through any Store of this namespace, in this process or another
// (the scripts publish on the namespace's wake channel). It has one slot and
// is meant for one reader.
func (s *Store) Wake() <-chan struct{} { return s.wake }

// Ping checks that Redis answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.client.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("redisq: ping: %w", err)
	}
	return nil
}

// Close stops the wake subscription and closes the client if Open created
// it. It is safe to call twice.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		var errs []error
		if s.sub != nil {
			if err := s.sub.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close subscription: %w", err))
			}
			<-s.subDone
		}
		if s.ownClient {
			if err := s.client.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close client: %w", err))
			}
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("redisq: %w", err)
		}
	})
	return s.closeErr
}

// hashTTLms is the TTL, in ms, given to a worker's hash.
func (s *Store) hashTTLms() int64 { return (s.retention + hashGrace).Milliseconds() }

// ms converts t to the store's time unit, unix milliseconds.
func ms(t time.Time) int64 { return t.UnixMilli() }

// fromMs converts unix milliseconds back to a time.
func fromMs(v int64) time.Time { return time.UnixMilli(v).UTC() }

// rfc3339 formats t as JSON would, at the store's millisecond precision.
func rfc3339(t time.Time) string {
	return fromMs(ms(t)).Format(time.RFC3339Nano)
}

// reply helpers: a script's array reply holds strings and integers.

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case int64:
		return strconv.FormatInt(x, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func num(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// scriptErr wraps an error from a script call, naming the operation.
func scriptErr(op string, err error) error {
	return fmt.Errorf("redisq: %s: %w", op, err)
}

// invalidf returns an EInvalid error.
func invalidf(format string, args ...any) error {
	return baton.Errorf(baton.EInvalid, format, args...)
}

// boolArg renders b as the "1"/"0" the scripts use.
func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
