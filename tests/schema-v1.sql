-- Schema version 1 of the inbox, exactly as schema.sql was before version 2
-- (git show f413628:schema.sql): test_inbox builds a version-1 inbox from
-- it to test the migration.  Not used by the programs.

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
    last_output       BLOB                       -- tail of the handler's last output
);

-- Due events in hand-out order (drainer "Order").
CREATE INDEX events_pending ON events (sort_at, received_at)
    WHERE state = 'pending';
-- Per-object hold: the first pending event of an object.
CREATE INDEX events_object_pending ON events (object_type, object_id, sort_at, received_at)
    WHERE state = 'pending' AND object_id IS NOT NULL;
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
