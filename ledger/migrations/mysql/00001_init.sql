-- Baton main database, MySQL/MariaDB dialect. Keep in step with ../sqlite/00001_init.sql.
-- Names are ASCII (punycode) with binary collation so ordering and prefix
-- ranges match SQLite byte for byte; times are DATETIME(6) in UTC.

-- +goose Up
CREATE TABLE domains (
    name         VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    source       VARCHAR(64)  NOT NULL DEFAULT '',
    delete_at    DATETIME(6)  NULL,
    status       VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT 'pending',
    blacklisted  TINYINT(1)   NOT NULL DEFAULT 0,
    black_reason TEXT         NOT NULL,
    last_run_id  VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    finished     TINYINT(1)   NOT NULL DEFAULT 0,
    version      BIGINT       NOT NULL DEFAULT 0,
    created_at   DATETIME(6)  NOT NULL,
    updated_at   DATETIME(6)  NOT NULL,
    -- Maintained by the ledger package in the same statement as status and
    -- blacklisted (as in SQLite); the CHECK keeps it honest.
    scannable    TINYINT(1)   NOT NULL DEFAULT 1,
    CONSTRAINT domains_scannable_check
        CHECK (scannable = (blacklisted = 0 AND status NOT IN ('rejected','review','blacklisted'))),
    CONSTRAINT domains_status_check
        CHECK (status IN ('pending','running','passed','rejected','review','blacklisted','failed')),
    KEY domains_scan (scannable, delete_at, name, status, last_run_id, finished), -- covering: the dispatcher scan reads only this index
    KEY domains_status (status, name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE step_results (
    domain      VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    step        VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    state       VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    outcome     VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    reason      TEXT         NOT NULL,
    data        LONGTEXT     NULL,
    attempts    INT          NOT NULL DEFAULT 0,
    finished_at DATETIME(6)  NULL,
    run_id      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    task_id     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    version     BIGINT       NOT NULL,
    PRIMARY KEY (domain, step),
    KEY step_results_funnel (step, outcome, state),
    CONSTRAINT step_results_domain FOREIGN KEY (domain) REFERENCES domains (name) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE runs (
    id              VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    domain          VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    started_at      DATETIME(6)  NULL,
    finished_at     DATETIME(6)  NULL,
    status          VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    steps           TEXT         NULL,
    stopped_at_step VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    version         BIGINT       NOT NULL,
    KEY runs_domain (domain, started_at),
    CONSTRAINT runs_domain FOREIGN KEY (domain) REFERENCES domains (name) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE blacklist (
    domain     VARCHAR(253) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    reason     TEXT         NOT NULL,
    category   VARCHAR(64)  NOT NULL DEFAULT '',
    evidence   LONGTEXT     NULL,
    step       VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    created_at DATETIME(6)  NOT NULL,
    version    BIGINT       NOT NULL,
    CONSTRAINT blacklist_domain FOREIGN KEY (domain) REFERENCES domains (name) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE pipeline_config (
    id         INT         NOT NULL PRIMARY KEY,
    version    BIGINT      NOT NULL,
    doc        LONGTEXT    NOT NULL,
    updated_at DATETIME(6) NOT NULL,
    CONSTRAINT pipeline_config_one_row CHECK (id = 1)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE api_keys (
    id         VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    name       VARCHAR(255) NOT NULL,
    key_hash   CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    secret     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    created_at DATETIME(6)  NOT NULL,
    revoked_at DATETIME(6)  NULL,
    UNIQUE KEY api_keys_hash (key_hash)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE conversion_tasks (
    id              VARCHAR(50)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    api_key_id      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    status          VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    source_type     VARCHAR(8)   CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    source          LONGTEXT     NOT NULL,
    options         TEXT         NULL,
    callback_url    TEXT         NOT NULL,
    queue           VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    suggested_queue VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    idempotency_key VARCHAR(255) NULL,
    request_hash    CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    result_path     VARCHAR(1024) NOT NULL DEFAULT '',
    result_sha256   CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL DEFAULT '',
    result_size     BIGINT       NOT NULL DEFAULT 0,
    error           TEXT         NOT NULL,
    attempts        INT          NOT NULL DEFAULT 0,
    created_at      DATETIME(6)  NOT NULL,
    started_at      DATETIME(6)  NULL,
    finished_at     DATETIME(6)  NULL,
    CONSTRAINT conversion_tasks_status_check
        CHECK (status IN ('pending','processing','completed','failed','timeout','cancelled','stalled')),
    CONSTRAINT conversion_tasks_source_check CHECK (source_type IN ('url','html')),
    UNIQUE KEY conversion_tasks_idem (api_key_id, idempotency_key),
    KEY conversion_tasks_key (api_key_id, created_at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

CREATE TABLE conversion_callback_logs (
    id              BIGINT      NOT NULL AUTO_INCREMENT PRIMARY KEY,
    task_id         VARCHAR(50) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempt         INT         NOT NULL,
    url             TEXT        NOT NULL,
    request_body    MEDIUMTEXT  NOT NULL,
    response_status INT         NULL,
    response_body   TEXT        NOT NULL,
    sent_at         DATETIME(6) NOT NULL,
    response_at     DATETIME(6) NULL,
    duration_ms     INT         NOT NULL DEFAULT 0,
    error           TEXT        NOT NULL,
    replay          TINYINT(1)  NOT NULL DEFAULT 0,
    KEY conversion_callback_logs_task (task_id, id),
    CONSTRAINT conversion_callback_logs_task FOREIGN KEY (task_id) REFERENCES conversion_tasks (id) ON DELETE CASCADE
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin;

-- +goose Down
DROP TABLE conversion_callback_logs;
DROP TABLE conversion_tasks;
DROP TABLE api_keys;
DROP TABLE pipeline_config;
DROP TABLE blacklist;
DROP TABLE runs;
DROP TABLE step_results;
DROP TABLE domains;
