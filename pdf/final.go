package pdf

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/callback"
	"github.com/batonhq/baton/controller"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/pdf/chromium"
	"github.com/batonhq/baton/queue"
)

type chromiumOptions = chromium.Options

func newID() string { return controller.NewID() }

// callbackMarkerTTL keeps the "callback sent" marker of a (task, status).
const callbackMarkerTTL = 30 * 24 * time.Hour

// onFinal consumes task.final events of pdf.render tasks: it records the
// end in the ledger and hands the callback to the dispatcher. It is
// idempotent: a replayed event finds the record final and the callback
// marker taken.
func (s *Service) onFinal(ctx context.Context, es []queue.OutboxEntry) error {
	for _, e := range es {
		var tf queue.TaskFinal
		if err := json.Unmarshal(e.Body, &tf); err != nil {
			s.log.Error("unreadable task.final event; skipped", "id", e.ID, "err", err)
			continue
		}
		if tf.Type != TypeRender {
			continue
		}
		if err := s.final(ctx, tf); err != nil {
			return err
		}
	}
	return nil
}

func (s *Service) final(ctx context.Context, tf queue.TaskFinal) error {
	var pl payload
	_ = json.Unmarshal(tf.Payload, &pl)
	id := pl.ConversionID
	if id == "" {
		id = tf.TaskID
	}
	conv, err := s.db.GetConversionTask(ctx, id)
	if errors.Is(err, ledger.ErrConversionTaskNotFound) {
		s.log.Warn("task.final for an unknown conversion; skipped", "task", tf.TaskID)
		return nil
	}
	if err != nil {
		return err
	}
	d := parseData(tf.Data)
	if conv.StartedAt.IsZero() {
		if ti, err := s.store.Get(ctx, tf.TaskID); err == nil && ti.StartedAt != nil {
			conv.StartedAt = ti.StartedAt.UTC()
		}
	}
	if d.Kind == kindSlow && tf.State == baton.StateFailed && tf.Queue != QueueSlow {
		// Moved to pdf.slow: not an end for the client.
		if conv.Queue != QueueSlow {
			conv.Queue, conv.Attempts = QueueSlow, tf.Attempts
			return s.db.UpdateConversionTask(ctx, conv)
		}
		return nil
	}
	if !conv.Status.Terminal() {
		if tf.TaskID != conv.ID {
			conv.Attempts += tf.Attempts
		} else {
			conv.Attempts = tf.Attempts
		}
		conv.Status, conv.Queue, conv.FinishedAt = tf.State, tf.Queue, tf.FinishedAt.UTC()
		conv.Error = ""
		switch tf.State {
		case baton.StateCompleted:
			conv.ResultSHA256, conv.ResultSize, conv.ResultPath = d.SHA256, d.Size, tf.TaskID+"/"+d.SHA256
		case baton.StateCancelled:
			conv.Error = "cancelled"
		default:
			conv.Error = tf.Error
			if conv.Error == "" {
				conv.Error = tf.Reason
			}
		}
		if err := s.db.UpdateConversionTask(ctx, conv); err != nil {
			return err
		}
	}
	if conv.CallbackURL == "" {
		return nil
	}
	_, created, err := s.store.PutIfAbsent(ctx, "pdf:cb:"+conv.ID+":"+string(conv.Status), []byte("1"), callbackMarkerTTL)
	if err != nil {
		return err
	}
	if !created {
		return nil // already handed over (a replayed event, or another controller)
	}
	secret, err := s.secretFor(ctx, conv)
	if err != nil {
		s.log.Error("callback secret; callback not sent", "task", conv.ID, "err", err)
		return nil
	}
	v, err := s.viewOf(ctx, conv)
	if err != nil {
		return err
	}
	p := s.payloadOf(v)
	p.Status, p.Error = string(conv.Status), conv.Error
	if conv.Status == baton.StateCompleted && p.ResultURL == "" {
		p.ResultURL = s.cfg.PublicURL() + "/api/tasks/" + conv.ID + "/result"
	}
	p.FinishedAt = conv.FinishedAt
	if err := s.disp.Submit(ctx, callback.Delivery{TaskID: conv.ID, URL: conv.CallbackURL, Secret: secret, Payload: p}); err != nil {
		s.log.Error("queue callback; not sent (replay it)", "task", conv.ID, "err", err)
	}
	return nil
}
