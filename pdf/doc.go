// Package pdf is Baton's HTML→PDF conversion service (SPEC §6; the
// HTML-to-PDF seed v2.1): the client API (API keys, task creation with
// idempotency keys, status, result download, cancel, dry run, callback log
// and replay), the worker handler that renders a task with the Chromium
// pool (package chromium) behind the egress proxy, the Advancer that maps a
// render's outcome to the task's final state and lane, and the outbox
// consumer that records finished tasks in the ledger and sends the signed
// callbacks (package callback).
//
// # Where state lives
//
// The queue store is the live truth of a conversion's state (pending,
// processing, stalled, the lease, the attempts) and of its result data; the
// ledger's conversion_tasks row is its durable record (owner, source,
// options, callback URL, lane, final status and result), written when the
// task is created and when the store's task.final outbox event for it is
// relayed. GET /api/tasks/{id} merges the two: the store's view while the
// store still holds the task (24 hours after it ends), the ledger's after.
//
// # Lanes
//
// pdf.fast, pdf.normal and pdf.slow; workers drain them in that order (the
// controller's default queue order). The client's priority chooses the
// lane; without one the dry run's suggestion does. On pdf.fast and
// pdf.normal a render gets at most Config.SlowThreshold (default 20s): a
// render that runs past it is not failed but moved to pdf.slow, where it gets
// the full budget. The move is a follow-up task named <id>-slow, created in
// the same atomic step that ends the first one; the client keeps using <id>.
//
// # Failures
//
// A page that never finishes loading ends "timeout"; an invalid job, a page
// refused by the egress policy or a page that cannot be fetched ends
// "failed" with a client-safe error; a browser crash or hang (chromium's
// ErrStalled) is retried like a lease expiry ("stalled" → pending again,
// counted in conversion_tasks_stalled_total), except that a page that stalls
// the browser on two attempts in a row fails as poison.
//
// # Idempotency
//
// An Idempotency-Key is stored with the queue store's PutIfAbsent, scoped
// per API key (so it holds across controllers sharing a store), mapping to
// the task id and the SHA-256 of the normalized request; it is kept for
// Config.IdempotencyTTL (default 24h). The same key with the same body
// answers the existing task (200), with another body 422.
//
// # Callbacks
//
// Tasks are created with Notify, so the store appends task.final atomically
// with the task's end. The relay hands those events to this package, which
// updates the ledger and hands the callback to a background dispatcher. The
// relay is at-least-once; a PutIfAbsent marker per (task, final status)
// makes the delivery happen once. Callbacks of a task submitted with the
// admin token are signed with the controller's admin callback secret (GET
// /api/pdf/callback-secret).
package pdf
