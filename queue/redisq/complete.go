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
	keys := make([]string, 0, 8+len(cs))
	keys = append(keys, s.k.leases, s.k.running, s.k.wrun, s.k.dedup, s.k.done, s.k.outbox, s.k.queues, s.k.seq)
	args := make([]any, 0, 3+16*len(cs))
	args = append(args, s.k.prefix, s.hashTTLms(), s.k.wake)
	invalid := make([]error, len(cs))
	for i, c := range cs {
		r, final, follow, err := checkCompletion(c)
		invalid[i] = err
		if err != nil {
			// The script still decides between not found, duplicate and
			// lease lost first; it applies nothing for an invalid result.
			follow = nil
		}
		outbox := c.Outbox
		if err != nil {
			outbox = nil
		}
		b := c.Backoff
		// The script works in ms; subMs carries the rest of Now so that the
		// retry deadline is exactly Now+Delay truncated to the millisecond.
		subMs := c.Now.Sub(fromMs(ms(c.Now))).Nanoseconds()
		keys = append(keys, s.k.task(c.TaskID))
		args = append(args, c.TaskID, r.LeaseToken, string(r.Outcome), r.Reason, []byte(r.Data),
			r.RetryAfterMs, ms(c.Now), subMs, rfc3339(c.Now),
			c.Jitter, int64(b.Base), int64(b.Max), string(final), boolArg(err != nil),
			len(follow), len(outbox))
		for _, t := range follow {
			keys = append(keys, s.k.task(t.ID), s.k.pend(t.Queue))
			args = appendTaskArgs(args, t)
		}
		for _, o := range outbox {
			args = append(args, o.Kind, []byte(o.Body))
		}
	}
	v, err := completeScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return nil, scriptErr("complete", err)
	}
	if len(v) != 4*len(cs)+1 {
		return nil, fmt.Errorf("redisq: complete: script returned %d values for %d completions", len(v), len(cs))
	}
	out := make([]queue.CompleteResult, len(cs))
	for i := range out {
		code, state, next, dup := num(v[4*i]), str(v[4*i+1]), num(v[4*i+2]), num(v[4*i+3])
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
