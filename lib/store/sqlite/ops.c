/*
 * inbox_ops: the operator's commands in the SQLite implementation of
 * store/inbox.h — filters (count, requeue, forget), retention (purge), status,
 * and the drainer's notes on its runs and the run lock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "lib/store/sqlite/private.h"

/* Bind an inbox_filter to FILTER_WHERE (store/sqlite/private.h). */
int
ib_bind_filter(sqlite3_stmt *st, const struct inbox_filter *f,
    char since[INSTANT_SIZE], char until[INSTANT_SIZE])
{
	int rc;

	if ((rc = ib_bind_text(st, 1, f->webhook_id)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 2, f->state)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 3, f->type_glob)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 4, f->object_type)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 5, f->object_id)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 8, f->source)) != SQLITE_OK)
		return rc;
	if (f->has_since)
		rc = ib_bind_instant(st, 6, f->since_ns, since);
	if (rc == SQLITE_OK && f->has_until)
		rc = ib_bind_instant(st, 7, f->until_ns, until);
	return rc;
}

enum inbox_status
inbox_sqlite_count(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char since[INSTANT_SIZE], until[INSTANT_SIZE];
	enum inbox_status s = INBOX_OK;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT count(*) FROM events"
	    FILTER_WHERE, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_filter(st, f, since, until)) != SQLITE_OK ||
	    (rc = sqlite3_step(st)) != SQLITE_ROW)
		s = ib_fail(ib, err, "counting events", rc);
	else
		*n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return s;
}

/* One filtered write in one transaction; *n = rows changed.  now_ns is
 * bound to ?9 when the statement has it. */
static enum inbox_status
filtered_write(struct inbox *ib, const char *sql, const struct inbox_filter *f,
    int64_t now_ns, int64_t *n, const char *what, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char since[INSTANT_SIZE], until[INSTANT_SIZE], now[INSTANT_SIZE];
	int rc;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = ib_bind_filter(st, f, since, until)) != SQLITE_OK ||
	    (sqlite3_bind_parameter_count(st) >= 9 &&
	    (rc = ib_bind_instant(st, 9, now_ns, now)) != SQLITE_OK) ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		goto fail;
	*n = sqlite3_changes(ib->db);
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = ib_commit(ib)) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return ib_txn_fail(ib, st, err, what, rc);
}

enum inbox_status
inbox_sqlite_requeue(struct inbox *ib, const struct inbox_filter *f, int64_t now_ns,
    int64_t *n, struct buf *err)
{
	/* An event whose body retention dropped has nothing to hand out:
	 * it stays as it is (the caller says how to get it back). */
	return filtered_write(ib,
	    "UPDATE events SET state = 'pending', failures = 0, requeued = 1,"
	    " next_at = ?9, finished_at = NULL, failing_since = NULL"
	    FILTER_WHERE
	    " AND body IS NOT NULL", f, now_ns, n, "requeueing", err);
}

enum inbox_status
inbox_sqlite_forget(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	return filtered_write(ib, "DELETE FROM events" FILTER_WHERE, f, 0, n,
	    "forgetting", err);
}

/* One batch of a purge statement; returns rows changed or -1. */
static int64_t
purge_batch(struct inbox *ib, const char *sql, const char *cutoff, int *rc)
{
	sqlite3_stmt *st = NULL;
	int64_t n = -1;

	if ((*rc = ib_begin(ib)) != SQLITE_OK)
		return -1;
	if ((*rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) == SQLITE_OK &&
	    (*rc = sqlite3_bind_text(st, 1, cutoff, -1, SQLITE_STATIC)) == SQLITE_OK &&
	    (*rc = sqlite3_bind_int(st, 2, INBOX_PURGE_BATCH)) == SQLITE_OK &&
	    (*rc = ib_run(ib, st)) == SQLITE_OK) {
		n = sqlite3_changes(ib->db);
		*rc = ib_commit(ib);
	}
	sqlite3_finalize(st);
	if (*rc != SQLITE_OK) {
		ib_rollback(ib);
		return -1;
	}
	return n;
}

enum inbox_status
inbox_sqlite_purge(struct inbox *ib, int64_t now_ns, int64_t retention_ns,
    int64_t *bodies, int64_t *rows, struct buf *err)
{
	static const char *const sql[] = {
		/* bodies of finished events past retention */
		"UPDATE events SET body = NULL, last_output = NULL"
		" WHERE rowid IN (SELECT rowid FROM events"
		"  WHERE finished_at IS NOT NULL AND finished_at < ?1"
		"  AND state IN ('done', 'stale')"
		"  AND (body IS NOT NULL OR last_output IS NOT NULL) LIMIT ?2)",
		/* ids past max(retention, 31 d) */
		"DELETE FROM events WHERE rowid IN (SELECT rowid FROM events"
		"  WHERE finished_at IS NOT NULL AND finished_at < ?1"
		"  AND state IN ('done', 'stale') LIMIT ?2)",
		/* object clocks not advanced since */
		"DELETE FROM objects WHERE (object_type, object_id) IN"
		" (SELECT object_type, object_id FROM objects"
		"  WHERE done_at < ?1 LIMIT ?2)",
	};
	char cut_body[INSTANT_SIZE], cut_ids[INSTANT_SIZE];
	int64_t keep_ids = retention_ns > INBOX_KEEP_IDS_NS ? retention_ns :
	    INBOX_KEEP_IDS_NS;
	int64_t got;
	int rc = SQLITE_OK, i;

	*bodies = *rows = 0;
	if (instant_format(now_ns - retention_ns, cut_body) == -1 ||
	    instant_format(now_ns - keep_ids, cut_ids) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: purge: clock out of range", ib->path);
		return INBOX_FAILED;
	}
	for (i = 0; i < 3; i++) {
		do {
			got = purge_batch(ib, sql[i], i == 0 ? cut_body : cut_ids, &rc);
			if (got < 0)
				return ib_fail(ib, err, "purging", rc);
			if (i == 0)
				*bodies += got;
			else if (i == 1)
				*rows += got;
		} while (got == INBOX_PURGE_BATCH);
	}
	return INBOX_OK;
}

static void
meta_get(struct inbox *ib, const char *key, char *out, size_t outsz)
{
	sqlite3_stmt *st = NULL;

	out[0] = '\0';
	if (sqlite3_prepare_v2(ib->db, "SELECT value FROM meta WHERE key = ?1",
	    -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
		snprintf(out, outsz, "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

enum inbox_status
inbox_sqlite_status_report(struct inbox *ib, struct inbox_status_report *r,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	memset(r, 0, sizeof *r);
	if ((rc = ib_hold_ready(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "preparing the hold rule", rc);
	/* One read transaction, so the figures agree with each other. */
	if ((rc = ib_exec(ib, "BEGIN")) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT state, count(*) FROM events GROUP BY state", -1, &st,
	    NULL)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		int64_t n = sqlite3_column_int64(st, 1);
		if (s == NULL)
			continue;
		if (strcmp(s, "pending") == 0)
			r->pending = n;
		else if (strcmp(s, "done") == 0)
			r->done = n;
		else if (strcmp(s, "stale") == 0)
			r->stale = n;
		else if (strcmp(s, "dead") == 0)
			r->dead = n;
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT min(received_at), sum(failures > 0),"
	    /* failing since: the first failure (schema 4); the arrival
	     * for a row that failed before it. */
	    " min(CASE WHEN failures > 0 THEN coalesce(failing_since,"
	    " received_at) END),"
	    " count(DISTINCT CASE WHEN failures > 0 AND object_id IS NOT NULL"
	    " THEN object_type || ':' || object_id END),"
	    " max(next_at), max(received_at)"
	    " FROM events WHERE state = 'pending'", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	ib_col_instant(st, 0, r->oldest_pending);
	r->waiting_retry = sqlite3_column_int64(st, 1);
	ib_col_instant(st, 2, r->oldest_failing);
	r->failing_objects = sqlite3_column_int64(st, 3);
	ib_col_instant(st, 4, r->latest_next_at);
	ib_col_instant(st, 5, r->newest_pending);
	sqlite3_finalize(st);
	/* events_finished, read from its end. */
	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT finished_at FROM events"
	    " WHERE finished_at IS NOT NULL AND state = 'done'"
	    " ORDER BY finished_at DESC LIMIT 1", -1, &st, NULL)) != SQLITE_OK)
		goto fail;
	if ((rc = sqlite3_step(st)) == SQLITE_ROW)
		ib_col_instant(st, 0, r->last_done);
	else if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = ib_count_held(ib, &r->blocked)) != SQLITE_OK)
		goto fail;
	meta_get(ib, "last_run_started", r->last_run_started,
	    sizeof r->last_run_started);
	meta_get(ib, "last_run_finished", r->last_run_finished,
	    sizeof r->last_run_finished);
	meta_get(ib, "last_run_outcome", r->last_run_outcome,
	    sizeof r->last_run_outcome);
	meta_get(ib, "lock_busy_since", r->lock_busy_since,
	    sizeof r->lock_busy_since);
	(void)ib_exec(ib, "COMMIT");
	return INBOX_OK;
fail:
	return ib_txn_fail(ib, st, err, "status", rc);
}

/*
 * Sources and their figures, read whole before fn sees any: a caller
 * blocked on its output must not pin the snapshot (as inbox_list).  A
 * source is a config section, so they are few.
 */
enum inbox_status
inbox_sqlite_count_sources(struct inbox *ib,
    int (*fn)(const struct inbox_source_count *, void *), void *arg,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	struct inbox_source_count *v = NULL, *nv;
	size_t n = 0, cap = 0, i;
	const unsigned char *name;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT source, sum(state = 'pending'), sum(state = 'done'),"
	    " sum(state = 'stale'), sum(state = 'dead'),"
	    " sum(state = 'pending' AND failures > 0)"
	    " FROM events GROUP BY source ORDER BY source", -1, &st,
	    NULL)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (n == cap) {
			cap = cap ? cap * 2 : 8;
			if ((nv = realloc(v, cap * sizeof *v)) == NULL) {
				rc = SQLITE_NOMEM;
				goto fail;
			}
			v = nv;
		}
		memset(&v[n], 0, sizeof v[n]);
		name = sqlite3_column_text(st, 0);
		snprintf(v[n].source, sizeof v[n].source, "%s",
		    name != NULL ? (const char *)name : "");
		v[n].pending = sqlite3_column_int64(st, 1);
		v[n].done = sqlite3_column_int64(st, 2);
		v[n].stale = sqlite3_column_int64(st, 3);
		v[n].dead = sqlite3_column_int64(st, 4);
		v[n].waiting_retry = sqlite3_column_int64(st, 5);
		n++;
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	for (i = 0; i < n; i++)
		if (fn(&v[i], arg) == -1)
			break;
	free(v);
	return INBOX_OK;
fail:
	free(v);
	sqlite3_finalize(st);
	return ib_fail(ib, err, "counting sources", rc);
}

enum inbox_status
inbox_sqlite_note_lock(struct inbox *ib, int64_t now_ns, int busy, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db, busy ?
	    "INSERT INTO meta (key, value) VALUES ('lock_busy_since', ?1)"
	    " ON CONFLICT (key) DO NOTHING" :
	    "DELETE FROM meta WHERE key = 'lock_busy_since'", -1, &st,
	    NULL)) != SQLITE_OK ||
	    (busy && (rc = ib_bind_instant(st, 1, now_ns, now)) != SQLITE_OK) ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		return ib_txn_fail(ib, st, err, "noting the run lock", rc);
	return ib_txn_commit(ib, st, err, "noting the run lock");
}

enum inbox_status
inbox_sqlite_probe_shared(struct inbox *ib, struct buf *what, struct buf *err)
{
	struct walsync *ws = NULL;

	if (walsync_open(ib->path, &ws, err) == -1)
		return INBOX_FAILED;
	walsync_close(ws);
	buf_reset(what);
	(void)buf_printf(what, "%s.wal-sync", ib->path);
	return INBOX_OK;
}

enum inbox_status
inbox_sqlite_probe_write(struct inbox *ib, struct buf *err)
{
	int rc;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "taking the write lock", rc);
	rc = ib_exec(ib, "INSERT INTO meta (key, value) VALUES ('check', 1)"
	    " ON CONFLICT (key) DO UPDATE SET value = value + 1");
	{
		enum inbox_status s = rc == SQLITE_OK ? INBOX_OK :
		    ib_fail(ib, err, "writing", rc);
		ib_rollback(ib);
		return s;
	}
}

enum inbox_status
inbox_sqlite_server_facts(struct inbox *ib, struct inbox_server_facts *f,
    struct buf *err)
{
	(void)ib;
	(void)err;
	memset(f, 0, sizeof *f);
	return INBOX_NOT_FOUND;		/* a file, no server */
}

enum inbox_status
inbox_sqlite_note_run(struct inbox *ib, int64_t now_ns, const char *outcome,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "INSERT INTO meta (key, value) VALUES (?1, ?2), (?3, ?4)"
	    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
	    -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 1, outcome == NULL ? "last_run_started" :
	    "last_run_finished", -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = ib_bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 3, "last_run_outcome", -1,
	    SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 4, outcome == NULL ? "running" : outcome,
	    -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = ib_run(ib, st)) != SQLITE_OK)
		return ib_txn_fail(ib, st, err, "noting the run", rc);
	return ib_txn_commit(ib, st, err, "noting the run");
}
