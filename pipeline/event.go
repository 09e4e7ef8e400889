package pipeline

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	baton "github.com/batonhq/baton"
)

// OutboxKind is the kind of the outbox entries the stage processor appends.
const OutboxKind = "pipeline.event"

// DedupKey is the key that keeps a domain from being in flight twice.
func DedupKey(domain string) string { return "domain:" + domain }

// Payload is the payload of a domain.<step> task.
type Payload struct {
	Domain string `json:"domain"`
	Step   string `json:"step"`
	RunID  string `json:"runId"`
	// RunStartedAt and RunSteps describe the run (the enabled steps when
	// it started), carried so every event can upsert the run row.
	RunStartedAt time.Time `json:"runStartedAt"`
	RunSteps     []string  `json:"runSteps"`
	// Passed are the steps the domain had passed before this task, in
	// this run or an earlier one.
	Passed []string `json:"passed,omitempty"`
	// Params are the step's current thresholds (Rules.Params).
	Params map[string]float64 `json:"params,omitempty"`
}

// Run statuses recorded when a run ends.
const (
	RunRunning     = "running"
	RunPassed      = "passed"
	RunRejected    = "rejected"
	RunReview      = "review"
	RunBlacklisted = "blacklisted"
	RunFailed      = "failed"
	RunStopped     = "stopped"
)

// Event is one step outcome for the ledger: the body of an OutboxKind
// entry, written atomically with the result that caused it.
type Event struct {
	Payload
	TaskID   string          `json:"taskId"`
	State    baton.State     `json:"state"`
	Outcome  baton.Outcome   `json:"outcome,omitempty"`
	Reason   string          `json:"reason,omitempty"`
	Data     json.RawMessage `json:"data,omitempty"`
	Attempts int             `json:"attempts"`
	At       time.Time       `json:"at"`
	// RunStatus is RunRunning while later steps follow, else how the run ended.
	RunStatus string `json:"runStatus"`
	// Category of a black_hit (gambling, porn, …) when the evidence names one.
	Category string `json:"category,omitempty"`
}

// entryVersion turns an outbox entry ID into a number that grows with
// later entries: SQLite IDs are integers; Redis stream IDs are "ms-seq".
func entryVersion(id string) int64 {
	if ms, seq, ok := strings.Cut(id, "-"); ok {
		m, _ := strconv.ParseInt(ms, 10, 64)
		s, _ := strconv.ParseInt(seq, 10, 64)
		return m<<20 | (s & (1<<20 - 1))
	}
	n, _ := strconv.ParseInt(id, 10, 64)
	return n
}
