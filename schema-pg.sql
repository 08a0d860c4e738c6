-- The PostgreSQL inbox (docs/postgresql.md): schema.sql's tables with the
-- same columns and meanings, applied by lib/store/postgresql/engine.c in one transaction
-- on first open; meta's 'schema_version' row records the version (the
-- same number as SQLite's user_version).
--
-- Instants are kept in schema.sql's normalised text form (lib/common/instant.h),
-- which sorts as text exactly as the instants sort -- under the "C"
-- collation, which every instant column names: a linguistic collation
-- (en_US.UTF-8) would compare them ignoring punctuation first.  The same
-- text as SQLite's keeps one code path for every rule and a copy between
-- the two backends exact to the nanosecond (timestamptz has microseconds).
-- Only the drainers' leases use the server's clock (timestamptz): drainers
-- on several hosts must agree on when one expires.

CREATE TABLE events (
    webhook_id        text PRIMARY KEY,
    state             text NOT NULL DEFAULT 'pending'
                      CHECK (state IN ('pending', 'done', 'stale', 'dead')),
    body              bytea,
    received_at       text COLLATE "C" NOT NULL,
    webhook_timestamp bigint NOT NULL,
    secret_fp         text,
    type              text,
    created_at        text COLLATE "C",
    created_at_raw    text,
    object_type       text,
    object_id         text,
    updated_at        text COLLATE "C",
    truncated         integer NOT NULL DEFAULT 0,
    sort_at           text COLLATE "C" NOT NULL,
    attempts          bigint NOT NULL DEFAULT 0,
    failures          bigint NOT NULL DEFAULT 0,
    next_at           text COLLATE "C" NOT NULL,
    finished_at       text COLLATE "C",
    requeued          integer NOT NULL DEFAULT 0,
    last_error        text,
    last_output       bytea,
    -- 0 until a drainer counts the row as `received` in history (SQLite's
    -- admission; here it serves only that count: the hold index below
    -- holds every pending row).
    admitted          integer NOT NULL DEFAULT 1 CHECK (admitted IN (0, 1)),
    first_error       text,
    -- When its failures since received or requeued began (status
    -- --max-failing counts from it; schema version 4).
    failing_since     text COLLATE "C",
    -- Arrival tiebreak, SQLite's rowid.
    seq               bigint GENERATED ALWAYS AS IDENTITY,
    -- Its source (docs/DESIGN.md "Sources"; schema version 5, which adds
    -- it last: a migrated inbox has its columns in this order too).
    -- "C": count_sources lists sources in the byte order SQLite's does.
    source            text COLLATE "C" NOT NULL DEFAULT 'default'
);

CREATE INDEX events_pending ON events (sort_at, received_at, seq)
    WHERE state = 'pending';
CREATE INDEX events_object_pending ON events (object_type, object_id, sort_at, received_at, seq)
    WHERE state = 'pending' AND object_id IS NOT NULL;
CREATE INDEX events_unadmitted ON events (seq) WHERE admitted = 0;
CREATE INDEX events_finished ON events (finished_at)
    WHERE finished_at IS NOT NULL;
CREATE INDEX events_dead ON events (received_at) WHERE state = 'dead';

-- The hold rule (docs/DESIGN.md "Per-object order under failure";
-- docs/inbox-rules.md "Hold"), the one place it is written for
-- PostgreSQL: a pending event with an object key is held while a pending
-- event of its own object sorts before it in hand-out order (sort_at,
-- received_at, seq).  Statements ask it about one row: NOT EXISTS (SELECT
-- 1 FROM events_held h WHERE h.webhook_id = e.webhook_id).
CREATE VIEW events_held AS
SELECT e.webhook_id, e.object_type, e.object_id FROM events e
WHERE e.state = 'pending' AND e.object_id IS NOT NULL AND EXISTS (
    SELECT 1 FROM events o
    WHERE o.state = 'pending' AND o.object_id IS NOT NULL
    AND o.object_type = e.object_type AND o.object_id = e.object_id
    AND (o.sort_at, o.received_at, o.seq) < (e.sort_at, e.received_at, e.seq));

CREATE TABLE objects (
    object_type     text NOT NULL,
    object_id       text NOT NULL,
    done_created_at text COLLATE "C",
    done_updated_at text COLLATE "C",
    done_at         text COLLATE "C" NOT NULL,
    PRIMARY KEY (object_type, object_id)
);
CREATE INDEX objects_done_at ON objects (done_at);

CREATE TABLE meta (
    key   text PRIMARY KEY,
    value text
);

CREATE TABLE cursors (
    name          text PRIMARY KEY,
    updated_after text,
    page          text
);

CREATE TABLE history (
    width_s  bigint NOT NULL,
    bucket_s bigint NOT NULL,
    name     text NOT NULL,
    label    text NOT NULL DEFAULT '',
    idx      integer NOT NULL DEFAULT 0,
    n        bigint NOT NULL,
    PRIMARY KEY (width_s, bucket_s, name, label, idx)
);

CREATE TABLE runs (
    started_at  text COLLATE "C" PRIMARY KEY,
    finished_at text COLLATE "C" NOT NULL,
    claimed     bigint NOT NULL,
    done        bigint NOT NULL,
    failed      bigint NOT NULL,
    retried     bigint NOT NULL,
    dead        bigint NOT NULL,
    stale       bigint NOT NULL,
    refetched   bigint NOT NULL,
    budget_hit  integer NOT NULL,
    result      text NOT NULL
);

-- PostgreSQL only: duplicates the receivers met, per webhook-id.  A
-- duplicate's INSERT ... ON CONFLICT DO NOTHING writes no WAL, so its
-- COMMIT would neither flush nor wait for synchronous replication: the
-- first copy, committed by another session, might not be durable yet.
-- The duplicate's upsert here writes, so its commit waits for the WAL up
-- to and past the first copy's commit.  Only receivers write this table
-- (no drainer holds its rows).
CREATE TABLE seen (
    webhook_id text PRIMARY KEY,
    duplicates bigint NOT NULL
);

-- PostgreSQL only: drainers' leases (docs/postgresql.md "Leases").  One
-- row per object being handed out (kind 'o', the object's key) or event
-- without an object (kind 'e', object_type '', object_id its
-- webhook_id), written only by drainers, each in a short transaction:
-- inbox_claim takes it (or one that expired), the finish calls delete it
-- while their owner still holds it.
CREATE TABLE leases (
    kind        text NOT NULL CHECK (kind IN ('o', 'e')),
    object_type text NOT NULL,
    object_id   text NOT NULL,
    owner       text NOT NULL,
    expires_at  timestamptz NOT NULL,
    PRIMARY KEY (kind, object_type, object_id)
);

-- What `webhook-drain copy` wrote into this inbox (docs/moving.md), as in
-- schema.sql (there added by version 4; here part of the first PostgreSQL
-- schema, also version 4): for each event and cursor it copied, the
-- digest of the row as copied, so that a later copy tells a row this
-- inbox changed since (its drainers, an operator, retention) from one it
-- did not, and a row it deleted from one it never had.  `tbl` is 'events'
-- or 'cursors', `key` the row's webhook_id or name.  Only copy writes here.
CREATE TABLE copied (
    tbl    text NOT NULL,
    key    text NOT NULL,
    digest bytea NOT NULL,
    PRIMARY KEY (tbl, key)
);
