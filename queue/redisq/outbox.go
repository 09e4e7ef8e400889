package redisq

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"

	"github.com/batonhq/baton/queue"
)

// The outbox is a Redis Stream: the scripts XADD entries (field k = kind,
// b = body) in commit order, so stream IDs increase with it.

// ReadOutbox returns up to limit oldest outbox entries.
func (s *Store) ReadOutbox(ctx context.Context, limit int) ([]queue.OutboxEntry, error) {
	if limit <= 0 {
		return nil, nil
	}
	msgs, err := s.client.XRangeN(ctx, s.k.outbox, "-", "+", int64(limit)).Result()
	if err != nil {
		return nil, fmt.Errorf("redisq: read outbox: %w", err)
	}
	out := make([]queue.OutboxEntry, len(msgs))
	for i, m := range msgs {
		kind, _ := m.Values["k"].(string)
		body, _ := m.Values["b"].(string)
		out[i] = queue.OutboxEntry{ID: m.ID, Kind: kind, Body: json.RawMessage(body)}
	}
	return out, nil
}

// streamID matches a Redis stream entry ID; anything else cannot name an
// outbox entry and is ignored by AckOutbox.
var streamID = regexp.MustCompile(`^[0-9]+-[0-9]+$`)

// AckOutbox deletes consumed entries; unknown IDs are ignored.
func (s *Store) AckOutbox(ctx context.Context, ids []string) error {
	valid := make([]string, 0, len(ids))
	for _, id := range ids {
		if streamID.MatchString(id) {
			valid = append(valid, id)
		}
	}
	if len(valid) == 0 {
		return nil
	}
	if err := s.client.XDel(ctx, s.k.outbox, valid...).Err(); err != nil {
		return fmt.Errorf("redisq: ack outbox: %w", err)
	}
	return nil
}
