/*
 * inbox_rules: the inbox's rules in the SQLite implementation — order,
 * hold and stale (docs/DESIGN.md "The drainer", "Per-object order under
 * failure", "Stale rule"; docs/inbox-rules.md): the drainer's due events,
 * its claims and verdicts, the operator's list (which shows the hold), and
 * the object clocks the stale rule reads.
 */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "lib/store/sqlite/private.h"

/*
 * The hold rule (docs/DESIGN.md "Per-object order under failure";
 * docs/inbox-rules.md "Hold"), the one place it is written: a pending
 * event with an object key is held while a pending event of its own
 * object (object_type, object_id) sorts before it in hand-out order
 * (sort_at, received_at, rowid).  inbox_held lists the held events'
 * rowids; every statement that needs the rule asks it about one row
 * ("NOT EXISTS (SELECT 1 FROM inbox_held WHERE rid = e.rowid)"), which
 * SQLite flattens into a lookup of that row.
 *
 * Where the earlier events are found: among the admitted rows through the
 * hold index, and among those not yet admitted (schema.sql) in
 * `unadmitted`, read once per statement and searched through an automatic
 * index on (object_type, object_id).  admitted is 0 or 1, so the two
 * together are every row: the answer never depends on admission, only
 * its cost does.  Per statement, O(P log U + U log U) for P rows asked
 * about and U not admitted: the drainer admits as it goes (U stays
 * small), and list and status, which never write, read a backlog of
 * unadmitted rows (no drainer for a day) once, not once per row (20 000
 * of each: 0.5 s, where a per-row scan took a minute).
 *
 * A TEMP view: the connection's own, no change to the inbox's schema.
 * Created by hold_ready on a connection's first use of the rule
 * (receivers never use it), outside any transaction so that a rollback
 * cannot take it away.
 */
static const char hold_view[] =
    "CREATE TEMP VIEW IF NOT EXISTS inbox_held (rid) AS\n"
    "WITH unadmitted AS MATERIALIZED (\n"
    "    SELECT object_type, object_id, sort_at, received_at, rowid AS rid\n"
    "    FROM events INDEXED BY events_unadmitted\n"
    "    WHERE admitted = 0 AND state = 'pending' AND object_id IS NOT NULL)\n"
    "SELECT e.rowid FROM events e\n"
    "WHERE e.state = 'pending' AND e.object_id IS NOT NULL AND (\n"
    "    EXISTS (SELECT 1 FROM events o INDEXED BY events_object_pending\n"
    "        WHERE o.admitted = 1 AND o.state = 'pending'\n"
    "        AND o.object_type = e.object_type AND o.object_id = e.object_id\n"
    "        AND (o.sort_at, o.received_at, o.rowid) <\n"
    "            (e.sort_at, e.received_at, e.rowid))\n"
    "    OR EXISTS (SELECT 1 FROM unadmitted o\n"
    "        WHERE o.object_type = e.object_type AND o.object_id = e.object_id\n"
    "        AND (o.sort_at, o.received_at, o.rid) <\n"
    "            (e.sort_at, e.received_at, e.rowid)))";

int
ib_hold_ready(struct inbox *ib)
{
	int rc;

	if (ib->hold_ready)
		return SQLITE_OK;
	if ((rc = ib_exec(ib, hold_view)) == SQLITE_OK)
		ib->hold_ready = 1;
	return rc;
}

/*
 * Admit up to ADMIT_CHUNK rows not yet admitted into the hold index, in
 * the caller's write transaction; *n = how many.  Returns SQLite's code.
 */
static int
admit_chunk(struct inbox *ib, int *n)
{
	int rc;

	*n = 0;
	if (ib->admit == NULL && (rc = ib_prepare(ib,
	    "UPDATE events SET admitted = 1 WHERE rowid IN"
	    " (SELECT rowid FROM events INDEXED BY events_unadmitted"
	    "  WHERE admitted = 0 LIMIT ?1)", &ib->admit)) != SQLITE_OK)
		return rc;
	/* History: admission is where the drainer first sees a received row
	 * (the receiver writes nothing for it). */
	if ((rc = ib_history_count_received(ib, ADMIT_CHUNK)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int(ib->admit, 1, ADMIT_CHUNK)) != SQLITE_OK ||
	    (rc = ib_step_done(ib->admit)) != SQLITE_OK)
		return rc;
	*n = sqlite3_changes(ib->db);
	return SQLITE_OK;
}

/*
 * Admit every row not yet admitted, ADMIT_CHUNK per transaction.  Only
 * performance depends on it (hold_view), so a failure (busy past the
 * timeout, a read-only inbox) is left for the next call.  Outside any
 * transaction.
 */
static void
admit(struct inbox *ib, int64_t now_ns)
{
	int n;

	ib->admitted_ns = now_ns;
	do {
		if (ib_begin(ib) != SQLITE_OK)
			break;
		if (admit_chunk(ib, &n) != SQLITE_OK || ib_commit(ib) != SQLITE_OK) {
			ib_rollback(ib);
			break;
		}
	} while (n == ADMIT_CHUNK);
}

enum inbox_status
inbox_sqlite_next_due(struct inbox *ib, struct inbox_cursor *cur, int64_t now_ns,
    int64_t settle_ns, int64_t future_ns, struct inbox_event *e,
    struct buf *err)
{
	static const char sql[] =
	    /* INDEXED BY: walk the pending events in hand-out order; left to
	     * itself the planner may scan and sort every pending row per
	     * event (O(n^2) over a backlog; docs/inbox-rules.md). */
	    "SELECT " EVENT_COLUMNS ", body FROM events e INDEXED BY events_pending"
	    " WHERE state = 'pending' AND (next_at <= ?1 OR next_at > ?3)"
	    " AND (requeued = 1 OR received_at <= ?2 OR received_at > ?7)"
	    /* The cursor: a range the index seeks to.  Before the first
	     * event it is ('', '', 0), which sorts before every instant. */
	    " AND (sort_at, received_at, rowid) > (?4, ?5, ?6)"
	    " AND NOT EXISTS (SELECT 1 FROM inbox_held WHERE rid = e.rowid)"
	    " ORDER BY sort_at, received_at, rowid LIMIT 1";
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE], settled[INSTANT_SIZE], far[INSTANT_SIZE],
	    ahead[INSTANT_SIZE];
	enum inbox_status s = INBOX_NOT_FOUND;
	int rc;

	/* What arrived since the last call's admission, at most once a
	 * second of the caller's clock (so a test decides when, and a clock
	 * stepped back admits at once): the hold rule reads every row not
	 * yet admitted. */
	if (ib->admitted_ns == 0 || now_ns < ib->admitted_ns ||
	    now_ns - ib->admitted_ns >= ADMIT_EVERY_NS)
		admit(ib, now_ns);
	if ((rc = ib_hold_ready(ib)) != SQLITE_OK ||
	    (rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 1, now_ns, now)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 2, now_ns - settle_ns, settled)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 3, future_ns > 0 && now_ns <= INT64_MAX -
	    future_ns ? now_ns + future_ns : INT64_MAX, far)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 7, now_ns <= INT64_MAX - settle_ns ?
	    now_ns + settle_ns : INT64_MAX, ahead)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 4, cur->sort_at, -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 5, cur->received_at, -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 6, cur->seq)) != SQLITE_OK) {
		s = ib_fail(ib, err, "finding due events", rc);
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (ib_read_event(st, e, 1) == -1) {
			buf_reset(err);
			(void)buf_printf(err, "%s: out of memory", ib->path);
			s = INBOX_FAILED;
			goto out;
		}
		memcpy(cur->sort_at, e->sort_at, INSTANT_SIZE);
		memcpy(cur->received_at, e->received_at, INSTANT_SIZE);
		cur->seq = e->seq;
		cur->started = 1;
		s = INBOX_OK;
	} else if (rc != SQLITE_DONE) {
		s = ib_fail(ib, err, "finding due events", rc);
	}
out:
	sqlite3_finalize(st);
	return s;
}

/*
 * The stale rule (docs/DESIGN.md "Stale rule"), the one place it is written:
 * an event is stale when it is strictly older than what was already done
 * for its object by either clock — its created_at before the object's
 * done_created_at, or its updated_at before its done_updated_at (a clock
 * the event or the object lacks never makes it stale; equal times are
 * two events of one write: not stale).  The clocks only move forward
 * (inbox_finish_done, instant_later()).  ?1, ?2: the object; ?3, ?4: the event's
 * created_at and updated_at (NULL when none).  One row (0/1), or none for
 * an object nothing was done for yet: not stale.
 *
 * *stale 0/1; an event without an object is never stale.  Runs inside the
 * caller's transaction when there is one.
 */
static int
check_stale(struct inbox *ib, const struct inbox_event *e, int *stale)
{
	static const char sql[] =
	    "SELECT (?3 IS NOT NULL AND done_created_at IS NOT NULL"
	    "        AND ?3 < done_created_at)"
	    "    OR (?4 IS NOT NULL AND done_updated_at IS NOT NULL"
	    "        AND ?4 < done_updated_at)"
	    " FROM objects WHERE object_type = ?1 AND object_id = ?2";
	sqlite3_stmt *st = NULL;
	int rc;

	*stale = 0;
	if (e->object_id == NULL || e->object_type == NULL)
		return SQLITE_OK;
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 1, e->object_type)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 2, e->object_id)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 3, e->created_at)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 4, e->updated_at)) != SQLITE_OK)
		goto out;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*stale = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
out:
	sqlite3_finalize(st);
	return rc;
}

enum inbox_status
inbox_sqlite_is_stale(struct inbox *ib, const struct inbox_event *e, int *stale,
    struct buf *err)
{
	int rc = check_stale(ib, e, stale);

	return rc == SQLITE_OK ? INBOX_OK : ib_fail(ib, err, "stale check", rc);
}

enum inbox_status
inbox_sqlite_claim(struct inbox *ib, struct inbox_event *e, int64_t now_ns,
    enum inbox_claim *claim, struct buf *err)
{
	static const char recheck[] =
	    "SELECT requeued FROM events e WHERE webhook_id = ?1"
	    " AND state = 'pending'"
	    " AND NOT EXISTS (SELECT 1 FROM inbox_held WHERE rid = e.rowid)";
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc, stale, n;

	if ((rc = ib_hold_ready(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "preparing the hold rule", rc);
	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	/* Admit what arrived since the last claim, in this transaction (its
	 * sync serves both): the recheck then reads no row not yet admitted,
	 * and while deliveries keep arriving inbox_next_due only meets the
	 * few that came during one hand-out (the hold rule reads them all). */
	if ((rc = admit_chunk(ib, &n)) != SQLITE_OK)
		goto fail;
	if ((rc = sqlite3_prepare_v2(ib->db, recheck, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 1, e->webhook_id)) != SQLITE_OK)
		goto fail;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		*claim = INBOX_SKIPPED;		/* keep what admit_chunk did */
		return ib_txn_commit(ib, st, err, "admitting events");
	}
	if (rc != SQLITE_ROW)
		goto fail;
	e->requeued = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = check_stale(ib, e, &stale)) != SQLITE_OK)
		goto fail;
	if (stale && !e->requeued) {
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "UPDATE events SET state = 'stale', finished_at = ?2"
		    " WHERE webhook_id = ?1", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = ib_bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
		    (rc = ib_bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
		    (rc = ib_run(ib, st)) != SQLITE_OK)
			goto fail;
		*claim = INBOX_MARKED_STALE;
	} else {
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "UPDATE events SET attempts = attempts + 1"
		    " WHERE webhook_id = ?1", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = ib_bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
		    (rc = ib_run(ib, st)) != SQLITE_OK)
			goto fail;
		e->attempts++;
		*claim = stale ? INBOX_CLAIMED_STALE : INBOX_CLAIMED;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = ib_commit(ib)) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return ib_txn_fail(ib, st, err, "claiming an event", rc);
}

static int
bind_output(sqlite3_stmt *st, int i, const void *output, size_t len)
{
	if (output == NULL || len == 0)
		return sqlite3_bind_null(st, i);
	if (len > OUTPUT_KEEP) {	/* keep the tail: the end says why */
		output = (const char *)output + (len - OUTPUT_KEEP);
		len = OUTPUT_KEEP;
	}
	return sqlite3_bind_blob64(st, i, output, len, SQLITE_STATIC);
}

/*
 * A verdict whose event row is no longer the one claimed — forgotten
 * meanwhile (a replay stored since has a later received_at), or finished
 * by another hand — records nothing on it: roll back, INBOX_LOST, as the
 * PostgreSQL engine answers a verdict whose lease is gone (store/inbox.h,
 * the finish_* calls).  The rows are told apart by (webhook_id,
 * received_at), never by rowid, which SQLite may give a new row again.
 */
static enum inbox_status
not_claimed(struct inbox *ib, sqlite3_stmt *st, struct buf *err)
{
	if (st != NULL) {
		sqlite3_finalize(st);
		ib_rollback(ib);
	}
	buf_reset(err);
	(void)buf_printf(err, "%s: the event was forgotten or finished while "
	    "its handler ran (a replay stored since is another event): its "
	    "verdict is not recorded", ib->path);
	return INBOX_LOST;
}

enum inbox_status
inbox_sqlite_finish_stale(struct inbox *ib, const struct inbox_event *e,
    int64_t now_ns, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "UPDATE events SET state = 'stale', finished_at = ?2, requeued = 0"
	    " WHERE webhook_id = ?1 AND received_at = ?3 AND state = 'pending'",
	    -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 3, e->received_at)) != SQLITE_OK ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		return ib_txn_fail(ib, st, err, "marking stale", rc);
	if (sqlite3_changes(ib->db) == 0)
		return not_claimed(ib, st, err);
	return ib_txn_commit(ib, st, err, "marking stale");
}

enum inbox_status
inbox_sqlite_finish_done(struct inbox *ib, const struct inbox_event *e, int64_t now_ns,
    const void *output, size_t output_len, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc, recorded;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "UPDATE events SET state = 'done', finished_at = ?2, requeued = 0,"
	    " last_error = NULL, last_output = ?3"
	    " WHERE webhook_id = ?1 AND received_at = ?4 AND state = 'pending'",
	    -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
	    (rc = bind_output(st, 3, output, output_len)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 4, e->received_at)) != SQLITE_OK ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		goto fail;
	/* The row gone (forgotten while the handler ran): the verdict is not
	 * recorded, but the object's clocks below still move, since the
	 * handler did apply this version (forget leaves clocks as they are;
	 * an older event stored later must be stale). */
	recorded = sqlite3_changes(ib->db) > 0;
	sqlite3_finalize(st);
	st = NULL;
	if (e->object_id != NULL && e->object_type != NULL) {
		/* Clocks only move forward: max() ignores NULLs' absence via
		 * coalesce, and a requeued old event cannot move them back. */
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "INSERT INTO objects (object_type, object_id, done_created_at,"
		    " done_updated_at, done_at) VALUES (?1, ?2, ?3, ?4, ?5)"
		    " ON CONFLICT (object_type, object_id) DO UPDATE SET"
		    " done_created_at = CASE"
		    "   WHEN excluded.done_created_at IS NULL THEN done_created_at"
		    "   WHEN done_created_at IS NULL THEN excluded.done_created_at"
		    "   ELSE max(done_created_at, excluded.done_created_at) END,"
		    " done_updated_at = CASE"
		    "   WHEN excluded.done_updated_at IS NULL THEN done_updated_at"
		    "   WHEN done_updated_at IS NULL THEN excluded.done_updated_at"
		    "   ELSE max(done_updated_at, excluded.done_updated_at) END,"
		    " done_at = excluded.done_at", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = ib_bind_text(st, 1, e->object_type)) != SQLITE_OK ||
		    (rc = ib_bind_text(st, 2, e->object_id)) != SQLITE_OK ||
		    (rc = ib_bind_text(st, 3, instant_later(e->created_at,
		    e->object_version))) != SQLITE_OK ||
		    (rc = ib_bind_text(st, 4, instant_later(e->updated_at,
		    e->object_version))) != SQLITE_OK ||
		    (rc = sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC)) != SQLITE_OK ||
		    (rc = ib_run(ib, st)) != SQLITE_OK)
			goto fail;
		sqlite3_finalize(st);
		st = NULL;
	}
	if ((rc = ib_commit(ib)) != SQLITE_OK)
		goto fail;
	return recorded ? INBOX_OK : not_claimed(ib, NULL, err);
fail:
	return ib_txn_fail(ib, st, err, "marking done", rc);
}

enum inbox_status
inbox_sqlite_finish_failed(struct inbox *ib, const struct inbox_event *e,
    struct inbox_failure *f, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE], next[INSTANT_SIZE];
	int rc;

	f->dead = 0;
	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    /* first_error: the original error, which a dead letter's
	     * reader asks for first (the report); never reset. */
	    "UPDATE events SET failures = failures + 1, last_error = ?2,"
	    " first_error = coalesce(first_error, ?2),"
	    /* failing_since: the first of the failures since received or
	     * requeued (status --max-failing counts from it). */
	    " failing_since = coalesce(failing_since, ?5),"
	    " last_output = ?3,"
	    " state = CASE WHEN failures + 1 >= ?4 THEN 'dead' ELSE state END,"
	    " finished_at = CASE WHEN failures + 1 >= ?4 THEN ?5 ELSE NULL END,"
	    " next_at = ?6"
	    " WHERE webhook_id = ?1 AND received_at = ?7 AND state = 'pending'"
	    " RETURNING state = 'dead'", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 2, f->error)) != SQLITE_OK ||
	    (rc = bind_output(st, 3, f->output, f->output_len)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 4, f->max_attempts)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 5, f->now_ns, now)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 6, f->now_ns + f->retry_ns, next)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 7, e->received_at)) != SQLITE_OK)
		return ib_txn_fail(ib, st, err, "recording a failure", rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE)
		return not_claimed(ib, st, err);
	if (rc == SQLITE_ROW) {
		f->dead = sqlite3_column_int(st, 0);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		return ib_txn_fail(ib, st, err, "recording a failure", rc);
	return ib_txn_commit(ib, st, err, "recording a failure");
}

/* Read at most `max` events after the keyset (sort_at, received_at,
 * rowid) of `after` (all when after->seq < 0) into page[]; *n = how
 * many.  Returns SQLite's code. */
static int
list_page(struct inbox *ib, const struct inbox_filter *f, int with_body,
    const struct inbox_event *after, int64_t max, struct inbox_event *page,
    int *n)
{
	static const char sql[] =
	    "SELECT " EVENT_COLUMNS ", CASE WHEN ?10 THEN body END,"
	    " EXISTS (SELECT 1 FROM inbox_held WHERE rid = e.rowid)"
	    " FROM events e" FILTER_WHERE
	    " AND (?11 < 0 OR (sort_at, received_at, rowid) > (?12, ?13, ?11))"
	    " ORDER BY sort_at, received_at, rowid LIMIT ?9";
	sqlite3_stmt *st = NULL;
	char since[INSTANT_SIZE], until[INSTANT_SIZE];
	int rc;

	*n = 0;
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_filter(st, f, since, until)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 9, max)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int(st, 10, with_body)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 11, after->seq)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 12, after->sort_at, -1,
	    SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 13, after->received_at, -1,
	    SQLITE_STATIC)) != SQLITE_OK)
		goto out;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (ib_read_event(st, &page[*n], with_body) == -1) {
			rc = SQLITE_NOMEM;
			goto out;
		}
		page[*n].blocked = sqlite3_column_int(st, EVENT_NCOLUMNS + 1);
		(*n)++;
	}
	if (rc == SQLITE_DONE)
		rc = SQLITE_OK;
out:
	sqlite3_finalize(st);
	return rc;
}

enum inbox_status
inbox_sqlite_list(struct inbox *ib, const struct inbox_filter *f, int with_body,
    int (*fn)(const struct inbox_event *, void *), void *arg, struct buf *err)
{
	struct inbox_event page[LIST_PAGE], after;
	int64_t left = f->limit > 0 ? f->limit : INT64_MAX, max;
	enum inbox_status s = INBOX_OK;
	int i, n, rc, size = with_body ? LIST_PAGE_BODIES : LIST_PAGE;

	for (i = 0; i < size; i++)
		inbox_event_init(&page[i]);
	memset(&after, 0, sizeof after);
	after.seq = -1;
	if ((rc = ib_hold_ready(ib)) != SQLITE_OK) {
		s = ib_fail(ib, err, "listing events", rc);
		goto out;
	}
	while (left > 0) {
		max = left < size ? left : size;
		if ((rc = list_page(ib, f, with_body, &after, max, page, &n)) !=
		    SQLITE_OK) {
			s = ib_fail(ib, err, "listing events", rc);
			goto out;
		}
		/* The read transaction is over: now the output may block. */
		for (i = 0; i < n; i++)
			if (fn(&page[i], arg) == -1)
				goto out;
		if (n < max)
			break;
		left -= n;
		memcpy(after.sort_at, page[n - 1].sort_at, INSTANT_SIZE);
		memcpy(after.received_at, page[n - 1].received_at, INSTANT_SIZE);
		after.seq = page[n - 1].seq;
	}
out:
	for (i = 0; i < size; i++)
		inbox_event_free(&page[i]);
	return s;
}

int
ib_count_held(struct inbox *ib, int64_t *n)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT count(*) FROM inbox_held",
	    -1, &st, NULL)) == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW) {
		*n = sqlite3_column_int64(st, 0);
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}
