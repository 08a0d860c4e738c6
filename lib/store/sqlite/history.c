/*
 * inbox_history: the SQLite implementation of store/inbox.h's history
 * functions (docs/report.md): the run's increments and record, the fold of
 * 5-minute buckets into days, reading them back, and the queue's shape now
 * (ready, oldest ready, blocked objects) for the report and
 * `status --json`.
 *
 * Counting `received` happens where rows are admitted (admit_chunk in
 * store/sqlite/rules.c calls ib_history_count_received in its transaction), so
 * the receiver writes nothing more than it did.
 */
#include <stdio.h>
#include <string.h>

#include <sqlite3.h>

#include "lib/store/history.h"
#include "lib/store/sqlite/private.h"

/* A delta's upsert: counters and sums add, a max keeps the larger. */
#define UPSERT_N \
	" ON CONFLICT (width_s, bucket_s, name, label, idx) DO UPDATE SET n =" \
	" CASE WHEN excluded.idx = -2 THEN max(n, excluded.n)" \
	" ELSE n + excluded.n END"

int
ib_history_count_received(struct inbox *ib, int limit)
{
	/* The same rows, in the same order, as admit_chunk's UPDATE that
	 * follows in the same transaction: the partial index's (admitted,
	 * rowid) order.  received_at's first 19 characters are the UTC
	 * second (common/instant.h). */
	static const char sql[] =
	    "INSERT INTO history (width_s, bucket_s, name, label, idx, n)"
	    " SELECT 300, b - b % 300, 'received', '', 0, count(*) FROM"
	    " (SELECT CAST(strftime('%s', substr(received_at, 1, 19)) AS INTEGER)"
	    "  AS b FROM events INDEXED BY events_unadmitted"
	    "  WHERE admitted = 0 LIMIT ?1)"
	    " WHERE true GROUP BY 2" UPSERT_N;
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int(st, 1, limit)) == SQLITE_OK)
		rc = ib_run(ib, st);
	sqlite3_finalize(st);
	return rc;
}

static int
add_deltas(struct inbox *ib, const struct history_delta *d, size_t n)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db,
	    "INSERT INTO history (width_s, bucket_s, name, label, idx, n)"
	    " VALUES (300, ?1, ?2, ?3, ?4, ?5)" UPSERT_N, -1, &st, NULL))
	    != SQLITE_OK)
		return rc;
	for (i = 0; i < n && rc == SQLITE_OK; i++) {
		if ((rc = sqlite3_bind_int64(st, 1, d[i].bucket_s)) != SQLITE_OK ||
		    (rc = sqlite3_bind_text(st, 2, d[i].name, -1, SQLITE_STATIC)) != SQLITE_OK ||
		    (rc = sqlite3_bind_text(st, 3, d[i].label, -1, SQLITE_STATIC)) != SQLITE_OK ||
		    (rc = sqlite3_bind_int(st, 4, d[i].idx)) != SQLITE_OK ||
		    (rc = sqlite3_bind_int64(st, 5, d[i].n)) != SQLITE_OK)
			break;
		rc = ib_step_done(st);
	}
	sqlite3_finalize(st);
	return rc;
}

static int
add_run(struct inbox *ib, const struct inbox_run_record *r)
{
	sqlite3_stmt *st = NULL;
	char a[INSTANT_SIZE], b[INSTANT_SIZE];
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db,
	    "INSERT OR REPLACE INTO runs (started_at, finished_at, claimed, done,"
	    " failed, retried, dead, stale, refetched, budget_hit, result)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)", -1, &st,
	    NULL)) == SQLITE_OK &&
	    (rc = ib_bind_instant(st, 1, r->started_ns, a)) == SQLITE_OK &&
	    (rc = ib_bind_instant(st, 2, r->finished_ns, b)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 3, r->claimed)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 4, r->done)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 5, r->failed)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 6, r->retried)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 7, r->dead)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 8, r->stale)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int64(st, 9, r->refetched)) == SQLITE_OK &&
	    (rc = sqlite3_bind_int(st, 10, r->budget_hit)) == SQLITE_OK &&
	    (rc = sqlite3_bind_text(st, 11, r->result, -1, SQLITE_STATIC)) == SQLITE_OK)
		rc = ib_run(ib, st);
	sqlite3_finalize(st);
	return rc;
}

/* Fold fine buckets of whole days older than the keep into days; drop
 * old runs. */
static int
fold(struct inbox *ib, int64_t now_ns)
{
	int64_t now_s = now_ns / 1000000000;
	int64_t cut = history_bucket_s(now_s - HISTORY_FINE_KEEP_S, HISTORY_DAY_S);
	sqlite3_stmt *st = NULL;
	char runs_cut[INSTANT_SIZE];
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db,
	    "INSERT INTO history (width_s, bucket_s, name, label, idx, n)"
	    " SELECT 86400, bucket_s - bucket_s % 86400, name, label, idx,"
	    " CASE WHEN idx = -2 THEN max(n) ELSE sum(n) END"
	    " FROM history WHERE width_s = 300 AND bucket_s < ?1"
	    " GROUP BY 2, 3, 4, 5" UPSERT_N, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 1, cut)) != SQLITE_OK ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		goto out;
	sqlite3_finalize(st);
	if ((rc = sqlite3_prepare_v2(ib->db, "DELETE FROM history"
	    " WHERE width_s = 300 AND bucket_s < ?1", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 1, cut)) != SQLITE_OK ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		goto out;
	sqlite3_finalize(st);
	if ((rc = sqlite3_prepare_v2(ib->db, "DELETE FROM runs WHERE started_at < ?1",
	    -1, &st, NULL)) == SQLITE_OK &&
	    (rc = ib_bind_instant(st, 1, now_ns - HISTORY_RUNS_KEEP_S * 1000000000,
	    runs_cut)) == SQLITE_OK)
		rc = ib_run(ib, st);
out:
	sqlite3_finalize(st);
	return rc;
}

enum inbox_status
inbox_sqlite_history_add(struct inbox *ib, const struct history_delta *d, size_t n,
    const struct inbox_run_record *run, int64_t now_ns, struct buf *err)
{
	int rc;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = add_deltas(ib, d, n)) != SQLITE_OK ||
	    (run != NULL && (rc = add_run(ib, run)) != SQLITE_OK) ||
	    (rc = fold(ib, now_ns)) != SQLITE_OK ||
	    (rc = ib_commit(ib)) != SQLITE_OK)
		return ib_txn_fail(ib, NULL, err, "recording the run's history", rc);
	return INBOX_OK;
}

/* The end of a read: finalize st; INBOX_OK when the rows ran out or the
 * callback stopped at one (rc ROW or DONE), else rc reported as `what`
 * (before the finalize, which would reset the message). */
static enum inbox_status
read_end(struct inbox *ib, sqlite3_stmt *st, int rc, struct buf *err,
    const char *what)
{
	enum inbox_status s = INBOX_OK;

	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		s = ib_fail(ib, err, what, rc);
	sqlite3_finalize(st);
	return s;
}

enum inbox_status
inbox_sqlite_history_read(struct inbox *ib, int64_t since_s,
    int (*fn)(const struct inbox_history_row *, void *), void *arg,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	struct inbox_history_row r;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT width_s, bucket_s, name,"
	    " label, idx, n FROM history WHERE bucket_s >= ?1"
	    " ORDER BY bucket_s, width_s", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 1, since_s)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		r.width_s = sqlite3_column_int64(st, 0);
		r.bucket_s = sqlite3_column_int64(st, 1);
		r.name = (const char *)sqlite3_column_text(st, 2);
		r.label = (const char *)sqlite3_column_text(st, 3);
		r.idx = sqlite3_column_int(st, 4);
		r.n = sqlite3_column_int64(st, 5);
		if (r.name == NULL || r.label == NULL)
			continue;
		if (fn(&r, arg) == -1)
			break;
	}
fail:
	return read_end(ib, st, rc, err, "reading the history");
}

enum inbox_status
inbox_sqlite_runs_read(struct inbox *ib, int64_t since_ns,
    int (*fn)(const struct inbox_run_record *, void *), void *arg,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	struct inbox_run_record r;
	char since[INSTANT_SIZE], t[INSTANT_SIZE];
	const unsigned char *res;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT started_at, finished_at,"
	    " claimed, done, failed, retried, dead, stale, refetched, budget_hit,"
	    " result FROM runs WHERE started_at >= ?1 ORDER BY started_at", -1,
	    &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 1, since_ns, since)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		memset(&r, 0, sizeof r);
		ib_col_instant(st, 0, t);
		if (instant_to_ns(t, &r.started_ns) == -1)
			r.started_ns = 0;
		ib_col_instant(st, 1, t);
		if (instant_to_ns(t, &r.finished_ns) == -1)
			r.finished_ns = 0;
		r.claimed = sqlite3_column_int64(st, 2);
		r.done = sqlite3_column_int64(st, 3);
		r.failed = sqlite3_column_int64(st, 4);
		r.retried = sqlite3_column_int64(st, 5);
		r.dead = sqlite3_column_int64(st, 6);
		r.stale = sqlite3_column_int64(st, 7);
		r.refetched = sqlite3_column_int64(st, 8);
		r.budget_hit = sqlite3_column_int(st, 9);
		res = sqlite3_column_text(st, 10);
		snprintf(r.result, sizeof r.result, "%s", res ? (const char *)res : "");
		if (fn(&r, arg) == -1)
			break;
	}
fail:
	return read_end(ib, st, rc, err, "reading the runs");
}

enum inbox_status
inbox_sqlite_queue_now(struct inbox *ib, int64_t now_ns, struct inbox_queue *q,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	memset(q, 0, sizeof *q);
	/* Ready since next_at: when it was received, or when its retry (or
	 * requeue) made it due again. */
	if ((rc = ib_hold_ready(ib)) != SQLITE_OK ||
	    (rc = sqlite3_prepare_v2(ib->db, "SELECT count(*), min(next_at)"
	    " FROM events e INDEXED BY events_pending"
	    " WHERE state = 'pending' AND next_at <= ?1"
	    " AND NOT EXISTS (SELECT 1 FROM inbox_held WHERE rid = e.rowid)",
	    -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 1, now_ns, now)) != SQLITE_OK ||
	    (rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	q->ready = sqlite3_column_int64(st, 0);
	ib_col_instant(st, 1, q->oldest_ready);
	sqlite3_finalize(st);
	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT count(*) FROM (SELECT"
	    " DISTINCT e.object_type, e.object_id FROM inbox_held h"
	    " JOIN events e ON e.rowid = h.rid)", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	q->blocked_objects = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return INBOX_OK;
fail:
	sqlite3_finalize(st);
	return ib_fail(ib, err, "reading the queue", rc);
}

enum inbox_status
inbox_sqlite_blocked_list(struct inbox *ib, int64_t limit,
    int (*fn)(const struct inbox_blocked *, void *), void *arg,
    struct buf *err)
{
	static const char sql[] =
	    "WITH held AS (SELECT e.object_type AS ot, e.object_id AS oi,"
	    "  count(*) AS behind FROM inbox_held h JOIN events e"
	    "  ON e.rowid = h.rid GROUP BY 1, 2)"
	    " SELECT ot, oi, e.webhook_id, e.attempts, e.next_at, e.last_error,"
	    " behind FROM held JOIN events e ON e.object_type = ot"
	    " AND e.object_id = oi AND e.state = 'pending'"
	    " WHERE NOT EXISTS (SELECT 1 FROM inbox_held x WHERE x.rid = e.rowid)"
	    " ORDER BY behind DESC, ot, oi LIMIT ?1";
	sqlite3_stmt *st = NULL;
	struct inbox_blocked b;
	int rc;

	if ((rc = ib_hold_ready(ib)) != SQLITE_OK ||
	    (rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 1, limit)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		b.object_type = (const char *)sqlite3_column_text(st, 0);
		b.object_id = (const char *)sqlite3_column_text(st, 1);
		b.webhook_id = (const char *)sqlite3_column_text(st, 2);
		b.attempts = sqlite3_column_int64(st, 3);
		b.next_at = (const char *)sqlite3_column_text(st, 4);
		b.last_error = (const char *)sqlite3_column_text(st, 5);
		b.behind = sqlite3_column_int64(st, 6);
		if (fn(&b, arg) == -1)
			break;
	}
fail:
	return read_end(ib, st, rc, err, "reading blocked objects");
}

enum inbox_status
inbox_sqlite_dead_latest(struct inbox *ib, int64_t limit,
    int (*fn)(const struct inbox_event *, const char *, void *), void *arg,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	struct inbox_event e;
	enum inbox_status s;
	int rc;

	inbox_event_init(&e);
	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT " EVENT_COLUMNS
	    ", first_error FROM events INDEXED BY events_dead WHERE state = 'dead'"
	    " ORDER BY finished_at DESC, rowid DESC LIMIT ?1", -1, &st,
	    NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 1, limit)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (ib_read_event(st, &e, 0) == -1) {
			rc = SQLITE_NOMEM;
			break;
		}
		if (fn(&e, (const char *)sqlite3_column_text(st,
		    EVENT_NCOLUMNS), arg) == -1)
			break;
	}
fail:
	s = read_end(ib, st, rc, err, "reading dead events");
	inbox_event_free(&e);
	return s;
}
