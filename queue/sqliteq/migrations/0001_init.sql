-- Baton embedded queue store, schema version 1.
--
-- Invariants kept by the store (checked by the crash test):
--   ready_at IS NOT NULL          <=> state IN ('pending', 'stalled')
--   lease_token, lease_expires_at <=> state = 'processing'
--   finished_at IS NOT NULL       <=> state is terminal
-- Times are Unix milliseconds.

CREATE TABLE tasks (
    seq              INTEGER PRIMARY KEY AUTOINCREMENT, -- insertion order (FIFO tie-break)
    id               TEXT    NOT NULL UNIQUE,
    type             TEXT    NOT NULL,
    queue            TEXT    NOT NULL,
    payload          BLOB    NOT NULL,
    state            TEXT    NOT NULL CHECK (state IN ('pending', 'processing', 'stalled', 'completed', 'failed', 'timeout', 'cancelled')),
    attempt          INTEGER NOT NULL DEFAULT 0,
    max_attempts     INTEGER NOT NULL,
    lease_ttl_ms     INTEGER NOT NULL,
    dedup_key        TEXT,
    notify           INTEGER NOT NULL DEFAULT 0,
    ready_at         INTEGER,
    lease_token      TEXT,
    lease_expires_at INTEGER,
    worker_id        TEXT,
    outcome          TEXT,
    reason           TEXT,
    data             BLOB,
    error            TEXT,
    next_attempt_at  INTEGER,
    ack_token        TEXT,
    ack              TEXT,
    created_at       INTEGER NOT NULL,
    started_at       INTEGER,
    finished_at      INTEGER
);

-- Claim: the ready tasks of a queue in FIFO order, without a sort.
CREATE INDEX tasks_ready ON tasks (queue, ready_at, seq) WHERE ready_at IS NOT NULL;
-- Reap: expired leases.
CREATE INDEX tasks_lease ON tasks (lease_expires_at) WHERE lease_expires_at IS NOT NULL;
-- Retention purge.
CREATE INDEX tasks_finished ON tasks (finished_at) WHERE finished_at IS NOT NULL;
-- Queue stats (running, dead).
CREATE INDEX tasks_queue_state ON tasks (queue, state, finished_at);
-- Workers' running counts.
CREATE INDEX tasks_worker ON tasks (worker_id) WHERE state = 'processing';
-- Dedup: a key is held by at most one non-terminal task; the index enforces it.
CREATE UNIQUE INDEX tasks_dedup ON tasks (dedup_key)
    WHERE dedup_key IS NOT NULL AND state IN ('pending', 'processing', 'stalled');

-- Every queue that ever had a task or a config, with its settings and the
-- GCRA rate limiter state (theoretical arrival time).
CREATE TABLE queues (
    name         TEXT    PRIMARY KEY,
    paused       INTEGER NOT NULL DEFAULT 0,
    rate_per_min INTEGER NOT NULL DEFAULT 0,
    tat_ms       INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE outbox (
    id   INTEGER PRIMARY KEY AUTOINCREMENT,
    kind TEXT    NOT NULL,
    body BLOB    NOT NULL
);

CREATE TABLE workers (
    id        TEXT    PRIMARY KEY,
    name      TEXT    NOT NULL,
    types     TEXT    NOT NULL,
    last_seen INTEGER NOT NULL
) WITHOUT ROWID;

-- PutIfAbsent; expires_at is wall-clock Unix milliseconds.
CREATE TABLE kv (
    key        TEXT    PRIMARY KEY,
    val        BLOB    NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
