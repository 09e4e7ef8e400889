-- Baton main database, SQLite dialect. Keep in step with ../mysql/00001_init.sql:
-- same tables, columns and meaning; times are UTC text 'YYYY-MM-DD HH:MM:SS.ffffff'.

-- +goose Up
CREATE TABLE domains (
    name         TEXT    NOT NULL PRIMARY KEY,
    source       TEXT    NOT NULL DEFAULT '',
    delete_at    TEXT,
    status       TEXT    NOT NULL DEFAULT 'pending'
                 CHECK (status IN ('pending','running','passed','rejected','review','blacklisted','failed')),
    blacklisted  INTEGER NOT NULL DEFAULT 0,
    black_reason TEXT    NOT NULL DEFAULT '',
    last_run_id  TEXT    NOT NULL DEFAULT '',
    finished     INTEGER NOT NULL DEFAULT 0,
    version      INTEGER NOT NULL DEFAULT 0,
    created_at   TEXT    NOT NULL,
    updated_at   TEXT    NOT NULL,
    -- Maintained by the ledger package in the same statement as status and
    -- blacklisted; the CHECK keeps it honest. (Not a generated column:
    -- SQLite never treats an index over one as covering here.)
    scannable    INTEGER NOT NULL DEFAULT 1,
    CHECK (scannable = (blacklisted = 0 AND status NOT IN ('rejected','review','blacklisted')))
) WITHOUT ROWID;
-- Covering: the dispatcher scan reads only this index.
CREATE INDEX domains_scan ON domains (scannable, delete_at, name, status, last_run_id, finished);
CREATE INDEX domains_status ON domains (status, name);

CREATE TABLE step_results (
    domain      TEXT    NOT NULL REFERENCES domains (name) ON DELETE CASCADE,
    step        TEXT    NOT NULL,
    state       TEXT    NOT NULL,
    outcome     TEXT    NOT NULL DEFAULT '',
    reason      TEXT    NOT NULL DEFAULT '',
    data        TEXT,
    attempts    INTEGER NOT NULL DEFAULT 0,
    finished_at TEXT,
    run_id      TEXT    NOT NULL DEFAULT '',
    task_id     TEXT    NOT NULL DEFAULT '',
    version     INTEGER NOT NULL,
    PRIMARY KEY (domain, step)
) WITHOUT ROWID;
CREATE INDEX step_results_funnel ON step_results (step, outcome, state);

CREATE TABLE runs (
    id              TEXT    NOT NULL PRIMARY KEY,
    domain          TEXT    NOT NULL REFERENCES domains (name) ON DELETE CASCADE,
    started_at      TEXT,
    finished_at     TEXT,
    status          TEXT    NOT NULL,
    steps           TEXT,
    stopped_at_step TEXT    NOT NULL DEFAULT '',
    version         INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX runs_domain ON runs (domain, started_at);

CREATE TABLE blacklist (
    domain     TEXT    NOT NULL PRIMARY KEY REFERENCES domains (name) ON DELETE CASCADE,
    reason     TEXT    NOT NULL DEFAULT '',
    category   TEXT    NOT NULL DEFAULT '',
    evidence   TEXT,
    step       TEXT    NOT NULL DEFAULT '',
    created_at TEXT    NOT NULL,
    version    INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE pipeline_config (
    id         INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    version    INTEGER NOT NULL,
    doc        TEXT    NOT NULL,
    updated_at TEXT    NOT NULL
);

CREATE TABLE api_keys (
    id         TEXT NOT NULL PRIMARY KEY,
    name       TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    secret     TEXT NOT NULL,
    created_at TEXT NOT NULL,
    revoked_at TEXT
);

CREATE TABLE conversion_tasks (
    id              TEXT    NOT NULL PRIMARY KEY,
    api_key_id      TEXT    NOT NULL DEFAULT '',
    status          TEXT    NOT NULL
                    CHECK (status IN ('pending','processing','completed','failed','timeout','cancelled','stalled')),
    source_type     TEXT    NOT NULL CHECK (source_type IN ('url','html')),
    source          TEXT    NOT NULL,
    options         TEXT,
    callback_url    TEXT    NOT NULL DEFAULT '',
    queue           TEXT    NOT NULL DEFAULT '',
    suggested_queue TEXT    NOT NULL DEFAULT '',
    idempotency_key TEXT,
    request_hash    TEXT    NOT NULL DEFAULT '',
    result_path     TEXT    NOT NULL DEFAULT '',
    result_sha256   TEXT    NOT NULL DEFAULT '',
    result_size     INTEGER NOT NULL DEFAULT 0,
    error           TEXT    NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    created_at      TEXT    NOT NULL,
    started_at      TEXT,
    finished_at     TEXT,
    UNIQUE (api_key_id, idempotency_key)
);
CREATE INDEX conversion_tasks_key ON conversion_tasks (api_key_id, created_at);

CREATE TABLE conversion_callback_logs (
    id              INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id         TEXT    NOT NULL REFERENCES conversion_tasks (id) ON DELETE CASCADE,
    attempt         INTEGER NOT NULL,
    url             TEXT    NOT NULL DEFAULT '',
    request_body    TEXT    NOT NULL DEFAULT '',
    response_status INTEGER,
    response_body   TEXT    NOT NULL DEFAULT '',
    sent_at         TEXT    NOT NULL,
    response_at     TEXT,
    duration_ms     INTEGER NOT NULL DEFAULT 0,
    error           TEXT    NOT NULL DEFAULT '',
    replay          INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX conversion_callback_logs_task ON conversion_callback_logs (task_id, id);

-- +goose Down
DROP TABLE conversion_callback_logs;
DROP TABLE conversion_tasks;
DROP TABLE api_keys;
DROP TABLE pipeline_config;
DROP TABLE blacklist;
DROP TABLE runs;
DROP TABLE step_results;
DROP TABLE domains;
