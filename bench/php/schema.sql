-- bench/php/schema.sql: the table of the PHP receivers (bench/php.py applies
-- it, then PRAGMA journal_mode = WAL, before the servers start).
--
-- What a shared-hosting user would keep: the id (for deduplication), the
-- timestamp, the body, the arrival time.  Less than our inbox stores (no
-- extracted fields, no indexes besides the primary key): any difference
-- this makes is in PHP's favour.
CREATE TABLE webhooks (
    webhook_id        TEXT PRIMARY KEY,
    webhook_timestamp INTEGER NOT NULL,
    body              BLOB NOT NULL,
    received_at       TEXT NOT NULL
);
