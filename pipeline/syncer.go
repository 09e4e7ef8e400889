package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	baton "github.com/batonhq/baton"
	"github.com/batonhq/baton/ledger"
	"github.com/batonhq/baton/queue"
)

// Syncer writes pipeline events from the durable outbox to the main DB in
// batches (one transaction per batch). Every row change carries the
// outbox entry's sequence as its version, so replaying a batch after a
// crash changes nothing and an older event never overwrites a newer one.
// It is also the finalizer: an event whose run status is not "running"
// closes the run and sets the domain's final status.
type Syncer struct {
	db  *ledger.DB
	log *slog.Logger
}

// NewSyncer returns a syncer writing to db.
func NewSyncer(db *ledger.DB, log *slog.Logger) *Syncer {
	if log == nil {
		log = slog.Default()
	}
	return &Syncer{db: db, log: log.With("component", "syncer")}
}

// HandleEvents is the outbox handler for OutboxKind entries.
func (s *Syncer) HandleEvents(ctx context.Context, entries []queue.OutboxEntry) error {
	var evs []versioned
	for _, e := range entries {
		var ev Event
		if err := json.Unmarshal(e.Body, &ev); err != nil {
			s.log.Error("dropping malformed pipeline event", "id", e.ID, "err", err)
			continue
		}
		evs = append(evs, versioned{ev, entryVersion(e.ID)})
	}
	return s.apply(ctx, evs)
}

// HandleTaskFinal is the outbox handler for queue.OutboxKindTaskFinal
// entries: a domain task that ended without a verdict (attempts spent on
// retries or lost leases, cancelled) ends its run.
func (s *Syncer) HandleTaskFinal(ctx context.Context, entries []queue.OutboxEntry) error {
	var evs []versioned
	for _, e := range entries {
		var tf queue.TaskFinal
		if err := json.Unmarshal(e.Body, &tf); err != nil {
			s.log.Error("dropping malformed task.final event", "id", e.ID, "err", err)
			continue
		}
		if StepOf(tf.Type) == "" || tf.State == baton.StateCompleted {
			continue // completed domain tasks are recorded by their pipeline.event
		}
		var pl Payload
		if json.Unmarshal(tf.Payload, &pl) != nil || pl.Domain == "" {
			continue
		}
		ev := Event{
			Payload: pl, TaskID: tf.TaskID, State: tf.State, Outcome: tf.Outcome, Reason: tf.Error,
			Data: tf.Data, Attempts: tf.Attempts, At: tf.FinishedAt, RunStatus: RunFailed,
		}
		if ev.Reason == "" {
			ev.Reason = tf.Reason
		}
		if tf.State == baton.StateCancelled {
			ev.RunStatus = RunStopped
		}
		evs = append(evs, versioned{ev, entryVersion(e.ID)})
	}
	return s.apply(ctx, evs)
}

type versioned struct {
	Event
	version int64
}

func domainStatus(runStatus string) ledger.Status {
	switch runStatus {
	case RunRunning:
		return ledger.StatusRunning
	case RunPassed:
		return ledger.StatusPassed
	case RunRejected:
		return ledger.StatusRejected
	case RunReview:
		return ledger.StatusReview
	case RunBlacklisted:
		return ledger.StatusBlacklisted
	case RunStopped:
		return ledger.StatusPending
	}
	return ledger.StatusFailed
}

func (s *Syncer) apply(ctx context.Context, evs []versioned) error {
	if len(evs) == 0 {
		return nil
	}
	var b ledger.Batch
	for _, v := range evs {
		ev := v.Event
		at := ev.At.UTC()
		if at.IsZero() {
			at = time.Now().UTC()
		}
		b.Results = append(b.Results, ledger.StepResult{
			Domain: ev.Domain, Step: ev.Step, State: ev.State, Outcome: ev.Outcome, Reason: ev.Reason,
			Data: ev.Data, Attempts: ev.Attempts, FinishedAt: at, RunID: ev.RunID, TaskID: ev.TaskID, Version: v.version,
		})
		run := ledger.Run{ID: ev.RunID, Domain: ev.Domain, StartedAt: ev.RunStartedAt.UTC(), Status: ev.RunStatus,
			Steps: ev.RunSteps, Version: v.version}
		finished := ev.RunStatus != RunRunning
		if finished {
			run.FinishedAt = at
			if ev.RunStatus != RunPassed {
				run.StoppedAtStep = ev.Step
			}
		}
		b.Runs = append(b.Runs, run)
		b.Domains = append(b.Domains, ledger.DomainChange{
			Name: ev.Domain, Status: domainStatus(ev.RunStatus), LastRunID: ev.RunID, Finished: finished, At: at, Version: v.version,
		})
		if ev.RunStatus == RunBlacklisted {
			b.Blacklist = append(b.Blacklist, ledger.BlacklistEntry{
				Domain: ev.Domain, Reason: ev.Reason, Category: ev.Category, Evidence: ev.Data, Step: ev.Step,
				CreatedAt: at, Version: v.version,
			})
		}
	}
	if err := s.db.ApplyBatch(ctx, b); err != nil {
		return fmt.Errorf("sync %d pipeline events: %w", len(evs), err)
	}
	return nil
}
