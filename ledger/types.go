package ledger

import (
	"encoding/json"
	"time"

	"github.com/batonhq/baton"
)

// Status is a domain's place in the pipeline.
type Status string

// Domain statuses (SPEC §5).
const (
	StatusPending     Status = "pending"     // imported, no run finished yet
	StatusRunning     Status = "running"     // a run is in progress
	StatusPassed      Status = "passed"      // every enabled step passed
	StatusRejected    Status = "rejected"    // a step rejected it; terminal
	StatusReview      Status = "review"      // a step rejected it and parked it for a person; terminal
	StatusBlacklisted Status = "blacklisted" // a step found it on a blacklist; terminal
	StatusFailed      Status = "failed"      // a step ran out of attempts; scanned again
)

// Valid reports whether s is one of the statuses.
func (s Status) Valid() bool {
	switch s {
	case StatusPending, StatusRunning, StatusPassed, StatusRejected, StatusReview, StatusBlacklisted, StatusFailed:
		return true
	}
	return false
}

// Scannable reports whether a domain in status s is a dispatcher candidate.
func (s Status) Scannable() bool {
	return s != StatusRejected && s != StatusReview && s != StatusBlacklisted
}

// Domain is a row of the domains table; GetDomain fills Steps and Runs too.
type Domain struct {
	Name        string
	Source      string
	DeleteAt    time.Time // zero when unknown
	Status      Status
	Blacklisted bool
	BlackReason string
	LastRunID   string
	Finished    bool // the last run is complete (or none has started)
	CreatedAt   time.Time
	UpdatedAt   time.Time
	// Steps holds the latest result of each step, by step name (GetDomain).
	Steps map[string]StepResult
	// Runs holds the domain's runs, newest first (GetDomain).
	Runs []Run
}

// StepResult is the latest result of one step for one domain.
type StepResult struct {
	Domain     string
	Step       string
	State      baton.State   // completed, failed, ... of the step's task
	Outcome    baton.Outcome // empty when the step ended without a verdict
	Reason     string
	Data       json.RawMessage // the evidence; nil when none
	Attempts   int
	FinishedAt time.Time
	RunID      string
	TaskID     string
	// Version orders the changes of one row; see Batch.
	Version int64
}

// Run is one pass of a domain through the pipeline.
type Run struct {
	ID         string
	Domain     string
	StartedAt  time.Time // zero in a change keeps the stored value
	FinishedAt time.Time // zero while running
	// Status is the run's state, e.g. running, passed, rejected, review,
	// blacklisted, failed, stopped (free text, at most 16 bytes).
	Status string
	// Steps are the steps enabled when the run started; nil in a change
	// keeps the stored value.
	Steps         []string
	StoppedAtStep string
	// Version orders the changes of one row; see Batch.
	Version int64
}

// DomainChange moves a domain to a new status.
type DomainChange struct {
	Name      string
	Status    Status
	LastRunID string
	Finished  bool
	// At is when the change happened; it becomes updated_at.
	At time.Time
	// Version orders the changes of one row; see Batch.
	Version int64
}

// BlacklistEntry records why a domain is blacklisted. Applying one also
// sets the domain's blacklisted flag and black_reason.
type BlacklistEntry struct {
	Domain    string
	Reason    string
	Category  string
	Evidence  json.RawMessage
	Step      string
	CreatedAt time.Time
	// Version orders the changes of one row; see Batch.
	Version int64
}

// Batch is the syncer's unit of work, applied in one transaction by
// ApplyBatch.
//
// Every change carries a Version, a number its producer guarantees to grow
// with each later change of the same row (the outbox sequence number is the
// natural choice; a Unix-microsecond time from one clock also works). A row
// is overwritten only by a change whose Version is at least the stored one,
// so replaying a batch changes nothing and an older change arriving after a
// newer one is ignored. Each change carries the full new state of its row
// (Run.StartedAt and Run.Steps excepted, see Run).
type Batch struct {
	Results   []StepResult
	Runs      []Run
	Domains   []DomainChange
	Blacklist []BlacklistEntry
}

// Len returns the number of changes in b.
func (b Batch) Len() int {
	return len(b.Results) + len(b.Runs) + len(b.Domains) + len(b.Blacklist)
}
