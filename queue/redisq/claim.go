package redisq

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/queue"
)

//go:embed claim.lua
var claimLua string

var claimScript = newScript(claimLua)

// tokenBytes is the size of a lease token: 128 random bits, 32 hex digits.
const tokenBytes = 16

// Claim atomically takes up to req.Max claimable tasks from req.Queues in
// order (one script call), skipping paused queues and honouring rate limits.
func (s *Store) Claim(ctx context.Context, req queue.ClaimRequest) ([]baton.Task, error) {
	if req.Max <= 0 || len(req.Queues) == 0 {
		return nil, nil
	}
	if req.Max > maxBatch {
		req.Max = maxBatch
	}
	raw := make([]byte, tokenBytes*req.Max)
	if _, err := rand.Read(raw); err != nil {
		return nil, fmt.Errorf("redisq: claim: lease tokens: %w", err)
	}
	keys := make([]string, 0, 3+4*len(req.Queues))
	keys = append(keys, s.k.leases, s.k.running, s.k.wrun)
	args := make([]any, 0, 5+len(req.Queues))
	tokens := hex.EncodeToString(raw)
	args = append(args, s.k.prefix, ms(req.Now), req.Max, req.WorkerID, tokens)
	for _, q := range req.Queues {
		keys = append(keys, s.k.pend(q), s.k.qcfg(q), s.k.gcra(q), s.k.rdy(q))
		args = append(args, q)
	}
	v, err := claimScript.Run(ctx, s.client, keys, args...).Slice()
	if err != nil {
		return nil, scriptErr("claim", err)
	}
	const fields = 8
	if len(v)%fields != 0 || len(v)/fields > req.Max {
		return nil, fmt.Errorf("redisq: claim: script returned %d values", len(v))
	}
	tasks := make([]baton.Task, len(v)/fields)
	for i := range tasks {
		f := v[fields*i : fields*i+fields]
		tasks[i] = baton.Task{
			ID:             str(f[0]),
			Type:           str(f[1]),
			Queue:          str(f[2]),
			Payload:        json.RawMessage(str(f[3])),
			Attempt:        int(num(f[4])),
			MaxAttempts:    int(num(f[5])),
			LeaseToken:     tokens[2*tokenBytes*i : 2*tokenBytes*(i+1)],
			LeaseExpiresAt: fromMs(num(f[6])),
			CreatedAt:      fromMs(num(f[7])),
		}
	}
	return tasks, nil
}
