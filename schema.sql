-- The inbox (docs/DESIGN.md "The inbox", contract).  Applied by inbox_open on
-- first open inside one transaction; PRAGMA user_version records it.
--
-- Every time column holds an instant in one normalised text form, UTC with
-- nanoseconds ("2026-11-30T07:15:07.123456789Z", see lib/common/instant.h), which
-- sorts as text exactly as the instants sort.

CREATE TABLE events (
    webhook_id        TEXT PRIMARY KEY,          -- the delivery's webhook-id header
    state             TEXT NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'done', 'stale', 'dead')),
    body              BLOB,                      -- exact bytes received; NULL once retention dropped it
    received_at       TEXT NOT NULL,             -- when the receiver committed it
    webhook_timestamp INTEGER NOT NULL,          -- the webhook-timestamp header (send time, Unix s)
    secret_fp         TEXT,                      -- fingerprint of the secret that verified it
    type              TEXT,                      -- body "type"
    created_at        TEXT,                      -- body "createdAt", normalised (the event clock)
    created_at_raw    TEXT,                      -- body "createdAt" as sent (WEBHOOK_CREATED_AT)
    object_type       TEXT,                      -- body "data.object"
    object_id         TEXT,                      -- body "data.id" (text as sent, or an exact integer)
    updated_at        TEXT,                      -- body "data.updated_at", normalised (object version)
    truncated         INTEGER NOT NULL DEFAULT 0,-- body "data.object_truncated"
    sort_at           TEXT NOT NULL,             -- created_at, or received_at when there is no clock
    attempts          INTEGER NOT NULL DEFAULT 0,-- hand-outs over the event's life (WEBHOOK_ATTEMPT)
    failures          INTEGER NOT NULL DEFAULT 0,-- failures since received or last requeued
    next_at           TEXT NOT NULL,             -- pending: not handed out before this instant
    finished_at       TEXT,                      -- when it became done, stale or dead
    requeued          INTEGER NOT NULL DEFAULT 0,-- 1: an operator requeued it; handed out even if stale
    last_error        TEXT,                      -- why the last hand-out failed
    last_output       BLOB,                      -- tail of the handler's last output
    admitted          INTEGER NOT NULL DEFAULT 1 -- 0: not yet in events_object_pending (below)
                      CHECK (admitted IN (0, 1)),
    first_error       TEXT,                      -- why its first hand-out failed (schema version 3)
    failing_since     TEXT,                      -- when its failures since received or requeued began (schema version 4)
    source            TEXT NOT NULL DEFAULT 'default' -- its source (docs/DESIGN.md "Sources"; schema version 5)
);

-- Due events in hand-out order (drainer "Order").
CREATE INDEX events_pending ON events (sort_at, received_at)
    WHERE state = 'pending';
-- Per-object hold: the first pending event of an object.  Only admitted
-- rows: each event's object is as good as random, so this index would cost
-- every insert a leaf page of its own (a 4 KiB WAL frame, then a
-- checkpoint write) on the path of every 200.  The receiver stores rows
-- with admitted = 0, found through events_unadmitted, whose key (0,
-- rowid) only grows: a batch of inserts shares its last page.  The
-- drainer admits them in bulk (lib/store/sqlite/rules.c, admit()), and
-- the hold check reads both indexes, so it is exact whether or not a row
-- is admitted.
-- (Schema version 2; a writer of version 1 leaves the default, 1.)
CREATE INDEX events_object_pending ON events (object_type, object_id, sort_at, received_at)
    WHERE state = 'pending' AND object_id IS NOT NULL AND admitted = 1;
CREATE INDEX events_unadmitted ON events (admitted) WHERE admitted = 0;
-- Retention walks finished events oldest first.
CREATE INDEX events_finished ON events (finished_at)
    WHERE finished_at IS NOT NULL;
-- Dead letters, for list --state dead and status (few rows; new rows are
-- pending, so inserts never touch it). There is no index on state itself:
-- it would cost every insert a page, and status can afford a scan.
CREATE INDEX events_dead ON events (received_at) WHERE state = 'dead';

-- Per-object clocks of what was done (docs/DESIGN.md "Stale rule").  They
-- outlive the event rows: kept max(retention, 31 days) after the object's
-- last done.
CREATE TABLE objects (
    object_type     TEXT NOT NULL,
    object_id       TEXT NOT NULL,
    done_created_at TEXT,          -- newest event clock done
    done_updated_at TEXT,          -- newest object version done
    done_at         TEXT NOT NULL, -- when an event of it was last done
    PRIMARY KEY (object_type, object_id)
) WITHOUT ROWID;

CREATE INDEX objects_done_at ON objects (done_at);

-- Drainer bookkeeping for status: last run, its outcome.
CREATE TABLE meta (
    key   TEXT PRIMARY KEY,
    value
) WITHOUT ROWID;

-- Where `webhook-drain sync RESOURCE` resumes (PROVIDER.md "Webhooks do not
-- replace synchronisation"): the updated_after of the query in progress and,
-- within it, the API's page cursor. Updated in the same transaction that
-- stores a page's objects, so a killed sync neither skips nor repeats.
CREATE TABLE cursors (
    name          TEXT PRIMARY KEY,  -- "sync:clients"
    updated_after TEXT,              -- as the API takes it; NULL: from the start
    page          TEXT               -- next_cursor within that query; NULL: first page
) WITHOUT ROWID;

-- @@ version 3 @@ (lib/store/sqlite/engine.c applies what follows as the migration from 2)
-- History that retention does not erase (schema version 3; docs/report.md,
-- lib/store/history.h).  Counters and histograms in fixed time buckets: 5
-- minutes (width_s 300) for HISTORY_FINE_KEEP_S, then folded into days
-- (width_s 86400).  Values only ever grow: reports and metrics read these
-- sums, never COUNT(*) of rows that retention deletes.  `label` is an
-- event type or an error class ('' for the total), `idx` a histogram
-- bucket (0 for a counter; HISTORY_IDX_SUM and HISTORY_IDX_MAX hold a
-- histogram's sum and max, ms).  The receiver never writes here:
-- `received` is counted by the drainer as it admits rows
-- (lib/store/sqlite/rules.c, admit_chunk).
CREATE TABLE history (
    width_s  INTEGER NOT NULL,
    bucket_s INTEGER NOT NULL,     -- bucket start, Unix s, a multiple of width_s
    name     TEXT NOT NULL,
    label    TEXT NOT NULL DEFAULT '',
    idx      INTEGER NOT NULL DEFAULT 0,
    n        INTEGER NOT NULL,
    PRIMARY KEY (width_s, bucket_s, name, label, idx)
) WITHOUT ROWID;

-- One row per drainer run that ran (not the ones that found the lock
-- held); kept HISTORY_RUNS_KEEP_S.
CREATE TABLE runs (
    started_at  TEXT PRIMARY KEY,
    finished_at TEXT NOT NULL,
    claimed     INTEGER NOT NULL,
    done        INTEGER NOT NULL,
    failed      INTEGER NOT NULL,
    retried     INTEGER NOT NULL,
    dead        INTEGER NOT NULL,
    stale       INTEGER NOT NULL,
    refetched   INTEGER NOT NULL,
    budget_hit  INTEGER NOT NULL,  -- stopped by --max-time
    result      TEXT NOT NULL      -- ok, failures, error
) WITHOUT ROWID;

-- @@ version 4 @@ (lib/store/sqlite/engine.c applies what follows as the migration from 3)
-- What `webhook-drain copy` wrote into this inbox (docs/moving.md): for each
-- event and cursor it copied, the digest of the row as copied, so that a
-- later copy tells a row this inbox changed since (its drainer, an
-- operator, retention) from one it did not, and a row it deleted from one
-- it never had.  `tbl` is 'events' or 'cursors', `key` the row's
-- webhook_id or name.  Only copy writes here; empty unless this inbox was
-- a copy's destination.
CREATE TABLE copied (
    tbl    TEXT NOT NULL,
    key    TEXT NOT NULL,
    digest BLOB NOT NULL,
    PRIMARY KEY (tbl, key)
) WITHOUT ROWID;
