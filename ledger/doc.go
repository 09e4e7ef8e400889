// Package ledger is Baton's main database (the ledger, 海外主库): the domain
// source data, the final per-step results, the blacklist, run history, the
// pipeline configuration and the PDF service's task records, callback audit
// log and API keys.
//
// It is written in batches (ImportDomains, ApplyBatch), never per task, and
// read by the dispatcher (ScanCandidates) and the admin API (GetDomain,
// ListDomains, Funnel). Two dialects share one logical schema:
//
//   - SQLite (DSN "sqlite:PATH", modernc.org/sqlite, no cgo): WAL, a busy
//     timeout, enforced foreign keys, one writer connection whose
//     transactions begin IMMEDIATE, and a pool of query-only readers.
//   - MySQL/MariaDB (DSN "mysql://user:pass@host:port/db"): utf8mb4, UTC
//     DATETIME(6), names in ASCII with binary collation so that ordering is
//     the same byte order as SQLite's.
//
// # Migrations
//
// Versioned SQL files in migrations/sqlite and migrations/mysql, with the
// same version numbers, embedded in the binary and applied by goose v3 on
// Open (table goose_db_version). A new migration must be added to both
// directories with the same number.
//
// # Times
//
// Every timestamp is UTC at microsecond precision. SQLite stores it as
// fixed-width text "2006-01-02 15:04:05.000000" (so text order is time
// order), MySQL as DATETIME(6). A zero time.Time is NULL.
//
// # Tables
//
// domains — one row per registrable domain.
//
//	name          PK, normalized ASCII (punycode), ≤ 253 bytes
//	source        where the import said it came from, ≤ 64 bytes
//	delete_at     when the registry deletes it; NULL when unknown
//	status        pending | running | passed | rejected | review | blacklisted | failed
//	blacklisted   0/1, set by a blacklist entry
//	black_reason  the blacklist entry's reason
//	last_run_id   the latest run (runs.id), empty before the first
//	finished      0 while a run is in progress
//	version       version of the last DomainChange applied
//	created_at, updated_at
//	scannable     1 when not blacklisted and status not rejected/review/blacklisted;
//	              written with them in one statement, enforced by a CHECK
//	index domains_scan (scannable, delete_at, name, status, last_run_id, finished):
//	    the dispatcher's keyset scan; covering, so a page never touches the rows
//	index domains_status (status, name): ListDomains by status
//
// step_results — the latest result of each step for each domain.
//
//	(domain, step)  PK; domain → domains ON DELETE CASCADE
//	state           the step task's baton.State (completed, failed, ...)
//	outcome         pass | reject | black_hit | retry | empty
//	reason, data    human reason; evidence as JSON text (NULL when none)
//	attempts, finished_at, run_id, task_id
//	version         version of the change that wrote the row
//	index step_results_funnel (step, outcome, state): Funnel
//
// runs — one pass of a domain through the pipeline.
//
//	id PK, domain → domains, started_at, finished_at (NULL while running),
//	status, steps (JSON array of the steps enabled at start),
//	stopped_at_step (empty unless stopped), version; index (domain, started_at)
//
// blacklist — why a domain is blacklisted.
//
//	domain PK → domains, reason, category, evidence (JSON), step, created_at, version
//
// pipeline_config — a single row (id = 1): the operator's step
// configuration as one JSON document, a version incremented by each Put (for
// compare-and-set), updated_at.
//
// api_keys — PDF clients: id PK, name, key_hash (SHA-256 hex of the key,
// unique; the key itself is never stored), secret (the callback HMAC
// secret), created_at, revoked_at.
//
// conversion_tasks — PDF conversions (HTML→PDF seed §8.3): id PK,
// api_key_id (empty for the admin), status (the baton.State words), source_type
// (url | html), source, options (JSON), callback_url, queue,
// suggested_queue, idempotency_key (NULL when absent; unique per key),
// request_hash (to answer 422 for a reused key with another body),
// result_path, result_sha256, result_size, error, attempts, created_at,
// started_at, finished_at.
//
// conversion_callback_logs — every callback attempt (seed §8.2): id
// (auto-increment), task_id → conversion_tasks, attempt, url, request_body,
// response_status (NULL when no answer), response_body (truncated by the
// writer), sent_at, response_at, duration_ms, error, replay (0/1).
//
// # Idempotent batches
//
// ApplyBatch upserts rows with multi-row INSERT ... ON CONFLICT DO UPDATE
// (SQLite) or INSERT ... ON DUPLICATE KEY UPDATE (MySQL), one transaction per
// batch. Each change carries a Version that grows with each later change of
// its row; a conflicting row is updated only when the incoming version is at
// least the stored one. Replaying a batch therefore leaves every row
// byte-identical, and an older change delivered after a newer one is a
// no-op. No column is set from the database clock.
package ledger
