package redisq

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

//go:embed complete.lua
var completeLua string

var completeScript = newScript(completeLua)

// Complete applies results, each atomically and independently; a batch of
// up to maxBatch completions is one script call.
func (s *Store) Complete(ctx context.Context, cs []queue.Completion) ([]queue.CompleteResult, error) {
	out := make([]queue.CompleteResult, 0, len(cs))
	for start := 0; start < len(cs); start += maxBatch {
		end := min(start+maxBatch, len(cs))
		res, err := s.completeBatch(ctx, cs[start:end])
		if err != nil {
			return nil, err
		}
		out = append(out, res...)
	}
	return out, nil
}

func (s *Store) completeBatch(ctx context.Context, cs []queue.Completion) ([]queue.CompleteResult, error) {
	keys := []string{s.k.leases, s.k.running, s.k.wrun, s.k.dedup, s.k.fin, s.k.outbox, s.k.queues, s.k.seq}
	// Header fields are sent once per distinct combination (see complete.lua).
	type header struct {
		now, subMs       int64
		base, max        int64
		final            baton.State
		retryAfterMs     int64
		jitter           float64
		invalid          bool
		nFollow, nOutbox int
	}
	idx := make(map[header]int, 1)
	hdrs := make([]header, 0, 1)
	body := make([]any, 0, 6*len(cs))
	invalid := make([]error, len(cs))
	for i, c := range cs {
		r, final, follow, err := checkCompletion(c)
		invalid[i] = err
		outbox := c.Outbox
		if err != nil {
			// The script still decides between not found, duplicate and
			// lease lost first; it applies nothing for an invalid result.
			follow, outbox = nil, nil
		}
		// The script works in ms; subMs carries the rest of Now so that the
		// retry deadline is exactly Now+Delay truncated to the millisecond.
		h := header{now: ms(c.Now), subMs: c.Now.Sub(fromMs(ms(c.Now))).Nanoseconds(), final: final,
			invalid: err != nil, nFollow: len(follow), nOutbox: len(outbox)}
		if r.Outcome == baton.OutcomeRetry {
			// Only a retry reads the backoff fields; leaving them zero
			// otherwise lets the batch share one header.
			h.base, h.max, h.retryAfterMs, h.jitter = int64(c.Backoff.Base), int64(c.Backoff.Max), r.RetryAfterMs, c.Jitter
		}
		n, ok := idx[h]
		if !ok {
			hdrs = append(hdrs, h)
			n = len(hdrs)
			idx[h] = n
		}
		body = append(body, c.TaskID, r.LeaseToken, string(r.Outcome), r.Reason, []byte(r.Data), n)
		for _, t := range follow {
			body = appendTaskArgs(body, t)
		}
		for _, o := range outbox {
			body = append(body, o.Kind, []byte(o.Body))
		}
	}
	args := make([]any, 0, 3+11*len(hdrs)+len(body))
	args = append(args, s.k.prefix, s.k.wake, len(hdrs))
	for _, h := range hdrs {
		args = append(args, h.now, h.subMs, rfc3339(fromMs(h.now)), h.base, h.max, string(h.final),
			h.retryAfterMs, h.jitter, boolArg(h.invalid), h.nFollow, h.nOutbox)
	}
	args = append(args, body...)
	v, err := completeScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return nil, scriptErr("complete", err)
	}
	if len(v) != len(cs)+1 {
		return nil, fmt.Errorf("redisq: complete: script returned %d values for %d completions", len(v), len(cs))
	}
	out := make([]queue.CompleteResult, len(cs))
	for i := range out {
		f, ok := v[i].([]any)
		if !ok {
			out[i].Ack = queue.Ack{State: baton.State(str(v[i]))}
			continue
		}
		if len(f) != 4 {
			return nil, fmt.Errorf("redisq: complete: script returned %d fields for completion %d", len(f), i)
		}
		code, state, next, dup := num(f[0]), str(f[1]), num(f[2]), num(f[3])
		switch code {
		case 0:
			a := queue.Ack{State: baton.State(state), Duplicate: dup == 1}
			if next > 0 {
				t := fromMs(next)
				a.NextAttemptAt = &t
			}
			out[i].Ack = a
		case 1:
			out[i].Err = baton.ErrNotFound
		case 2:
			out[i].Err = baton.ErrLeaseLost
		case 3:
			out[i].Err = invalid[i]
		default:
			return nil, fmt.Errorf("redisq: complete: unknown script code %d", code)
		}
	}
	if num(v[len(v)-1]) == 1 {
		// A retry or a follow-up changed what is claimable. The script
		// published for every Store; this one need not wait for the echo.
		s.signal()
	}
	return out, nil
}

// checkCompletion validates a completion and returns its result (reason
// truncated as baton.Result.Validate does), final state and normalized
// follow-ups, or the *baton.Error EInvalid that rejects it.
func checkCompletion(c queue.Completion) (baton.Result, baton.State, []queue.NewTask, error) {
	r := c.Result
	if err := r.Validate(); err != nil {
		return c.Result, "", nil, err
	}
	final := c.FinalState
	if final == "" {
		final = baton.StateCompleted
	}
	if !final.Terminal() {
		return r, "", nil, invalidf("final state %q is not terminal", string(final))
	}
	follow := make([]queue.NewTask, len(c.FollowUps))
	for i, t := range c.FollowUps {
		n, err := normalize(t, c.Now)
		if err != nil {
			return r, "", nil, fmt.Errorf("follow-up %d: %w", i, err)
		}
		follow[i] = n
	}
	for i, o := range c.Outbox {
		if o.Kind == "" {
			return r, "", nil, invalidf("outbox entry %d has no kind", i)
		}
		if !json.Valid(o.Body) {
			return r, "", nil, invalidf("outbox entry %d body is not valid JSON", i)
		}
	}
	return r, final, follow, nil
}
