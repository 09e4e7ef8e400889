package baton

import (
	"math"
	"time"
)

// Backoff is the retry policy: exponential with jitter, never shorter than
// what the worker asked for in retryAfterMs. The zero value uses the defaults.
type Backoff struct {
	// Base is the delay before the second attempt. Default 1s.
	Base time.Duration
	// Max caps the exponential part. Default 10m.
	Max time.Duration
}

// DefaultBackoff is the policy used when none is configured.
var DefaultBackoff = Backoff{Base: time.Second, Max: 10 * time.Minute}

// Delay returns how long to wait after attempt (1-based) failed with a retry
// outcome. jitter in [0,1) spreads the delay over [d/2, d). retryAfter, when
// larger, wins: a provider's Retry-After is respected exactly.
//
// Stores apply the same formula inside their atomic operations (the Redis
// store mirrors it in Lua), so it must stay simple arithmetic.
func (b Backoff) Delay(attempt int, retryAfter time.Duration, jitter float64) time.Duration {
	base, max := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoff.Base
	}
	if max <= 0 {
		max = DefaultBackoff.Max
	}
	if attempt < 1 {
		attempt = 1
	}
	exp := float64(base) * math.Pow(2, float64(attempt-1))
	if exp > float64(max) {
		exp = float64(max)
	}
	d := time.Duration(exp * (0.5 + jitter/2))
	if retryAfter > d {
		d = retryAfter
	}
	return d
}
