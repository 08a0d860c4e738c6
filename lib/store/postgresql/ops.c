/*
 * inbox_pg_ops: the operator's commands in the PostgreSQL implementation
 * of store/inbox.h — filters (count, requeue, forget), retention (purge, in
 * batches of short transactions), status, and the drainer's notes on its
 * runs; as lib/store/sqlite/ops.c does for SQLite.
 */
#ifdef WEBHOOK_POSTGRESQL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/store/history.h"
#include "lib/store/postgresql/private.h"

/* A shell-style pattern (SQLite's GLOB: *, ?, [...] with ^ or ! to
 * negate) as an anchored POSIX regular expression for `~`.  NULL when
 * out of memory. */
static char *
glob_regex(const char *g)
{
	struct buf b;
	const char *end;
	char *s;

	buf_init(&b, 1 << 20);
	(void)buf_printf(&b, "^");
	for (; *g != '\0'; g++) {
		if (*g == '*') {
			(void)buf_printf(&b, ".*");
		} else if (*g == '?') {
			(void)buf_printf(&b, ".");
		} else if (*g == '[' && g[1] != '\0' &&
		    (end = strchr(g + 2, ']')) != NULL) {
			(void)buf_printf(&b, "[");
			g++;
			if (*g == '^' || *g == '!') {
				(void)buf_printf(&b, "^");
				g++;
			}
			for (; g < end; g++)
				(void)buf_printf(&b, *g == '\\' ? "\\\\" : "%c", *g);
			(void)buf_printf(&b, "]");
			g = end;
		} else if (strchr(".^$+(){}|\\[]", *g) != NULL) {
			(void)buf_printf(&b, "\\%c", *g);
		} else {
			(void)buf_printf(&b, "%c", *g);
		}
	}
	(void)buf_printf(&b, "$");
	s = b.data != NULL ? strdup(b.data) : NULL;
	buf_free(&b);
	return s;
}

int
px_filter(struct px_params *p, const struct inbox_filter *f,
    struct px_filter_tmp *t)
{
	memset(t, 0, sizeof *t);
	px_text(p, f->webhook_id);
	px_text(p, f->state);
	if (f->type_glob != NULL && *f->type_glob != '\0') {
		if ((t->regex = glob_regex(f->type_glob)) == NULL)
			return -1;
		px_raw(p, t->regex);
	} else {
		px_raw(p, NULL);
	}
	px_text(p, f->object_type);
	px_text(p, f->object_id);
	/* px_instant adds nothing when out of range: NULL then. */
	if (!f->has_since || px_instant(p, f->since_ns, t->since) == -1)
		px_raw(p, NULL);
	if (!f->has_until || px_instant(p, f->until_ns, t->until) == -1)
		px_raw(p, NULL);
	px_text(p, f->source);
	return 0;
}

void
px_filter_free(struct px_filter_tmp *t)
{
	free(t->regex);
	t->regex = NULL;
}

enum inbox_status
inbox_pg_count(struct inbox *pib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	struct px_filter_tmp t;
	PGresult *r = NULL;
	enum inbox_status s;

	if (px_filter(&p, f, &t) == -1)
		return px_fail(ib, err, INBOX_FAILED, "counting events",
		    "out of memory");
	s = px_query(ib, "SELECT count(*) FROM events" FILTER_PG_WHERE,
	    &p, 0, &r, "counting events", err);
	px_filter_free(&t);
	if (s == INBOX_OK) {
		*n = px_int_col(r, 0, 0);
		PQclear(r);
	}
	return s;
}

/* One filtered write (its own transaction); *n = rows changed.  now_ns
 * is $9 when the statement has one. */
static enum inbox_status
filtered_write(struct inbox_pg *ib, const char *sql,
    const struct inbox_filter *f, int64_t now_ns, int64_t *n, const char *what,
    struct buf *err)
{
	struct px_params p = { 0 };
	struct px_filter_tmp t;
	char now[INSTANT_SIZE];
	PGresult *r = NULL;
	enum inbox_status s;

	if (px_filter(&p, f, &t) == -1)
		return px_fail(ib, err, INBOX_FAILED, what, "out of memory");
	if (strstr(sql, "$9") != NULL && px_instant(&p, now_ns, now) == -1) {
		px_filter_free(&t);
		return px_fail(ib, err, INBOX_FAILED, what, "clock out of range");
	}
	s = px_query(ib, sql, &p, 0, &r, what, err);
	px_filter_free(&t);
	if (s == INBOX_OK) {
		*n = strtoll(PQcmdTuples(r), NULL, 10);
		PQclear(r);
	}
	return s;
}

enum inbox_status
inbox_pg_requeue(struct inbox *ib, const struct inbox_filter *f, int64_t now_ns,
    int64_t *n, struct buf *err)
{
	return filtered_write(PG(ib),
	    "UPDATE events SET state = 'pending', failures = 0, requeued = 1,"
	    " next_at = $9, finished_at = NULL, failing_since = NULL"
	    FILTER_PG_WHERE
	    " AND body IS NOT NULL", f, now_ns, n, "requeueing", err);
}

enum inbox_status
inbox_pg_forget(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	return filtered_write(PG(ib), "DELETE FROM events" FILTER_PG_WHERE, f, 0,
	    n, "forgetting", err);
}

enum inbox_status
inbox_pg_purge(struct inbox *pib, int64_t now_ns, int64_t retention_ns,
    int64_t *bodies, int64_t *rows, struct buf *err)
{
	/* As SQLite's (lib/store/sqlite/ops.c), each batch one statement in its
	 * own transaction; rows another drainer is purging are skipped. */
	static const char *const sql[] = {
		"UPDATE events SET body = NULL, last_output = NULL"
		" WHERE webhook_id IN (SELECT webhook_id FROM events"
		"  WHERE finished_at IS NOT NULL AND finished_at < $1"
		"  AND state IN ('done', 'stale')"
		"  AND (body IS NOT NULL OR last_output IS NOT NULL) LIMIT $2"
		"  FOR UPDATE SKIP LOCKED)",
		"DELETE FROM events WHERE webhook_id IN (SELECT webhook_id"
		"  FROM events WHERE finished_at IS NOT NULL AND finished_at < $1"
		"  AND state IN ('done', 'stale') LIMIT $2 FOR UPDATE SKIP LOCKED)",
		"DELETE FROM objects WHERE (object_type, object_id) IN"
		" (SELECT object_type, object_id FROM objects"
		"  WHERE done_at < $1 LIMIT $2 FOR UPDATE SKIP LOCKED)",
		/* Duplicate counters of ids that are gone. */
		"DELETE FROM seen WHERE webhook_id IN (SELECT s.webhook_id"
		"  FROM seen s WHERE NOT EXISTS (SELECT 1 FROM events e"
		"  WHERE e.webhook_id = s.webhook_id) LIMIT $2"
		"  FOR UPDATE SKIP LOCKED) AND $1::text IS NOT NULL",
	};
	struct inbox_pg *ib = PG(pib);
	char cut_body[INSTANT_SIZE], cut_ids[INSTANT_SIZE], lim[24];
	int64_t keep_ids = retention_ns > INBOX_KEEP_IDS_NS ? retention_ns :
	    INBOX_KEEP_IDS_NS;
	int64_t got;
	enum inbox_status s;
	PGresult *r;
	int i;

	*bodies = *rows = 0;
	if (instant_format(now_ns - retention_ns, cut_body) == -1 ||
	    instant_format(now_ns - keep_ids, cut_ids) == -1)
		return px_fail(ib, err, INBOX_FAILED, "purging",
		    "clock out of range");
	for (i = 0; i < 4; i++) {
		do {
			struct px_params p = { 0 };

			px_raw(&p, i == 0 ? cut_body : cut_ids);
			px_int(&p, INBOX_PURGE_BATCH, lim);
			if ((s = px_query(ib, sql[i], &p, 0, &r, "purging",
			    err)) != INBOX_OK)
				return s;
			got = strtoll(PQcmdTuples(r), NULL, 10);
			PQclear(r);
			if (i == 0)
				*bodies += got;
			else if (i == 1)
				*rows += got;
		} while (got == INBOX_PURGE_BATCH);
	}
	return INBOX_OK;
}

static void
meta_get(struct inbox_pg *ib, const char *key, char *out, size_t outsz)
{
	struct px_params p = { 0 };
	PGresult *r = NULL;
	struct buf err;

	out[0] = '\0';
	buf_init(&err, 1024);
	px_raw(&p, key);
	if (px_query(ib, "SELECT value FROM meta WHERE key = $1", &p, 0,
	    &r, "status", &err) == INBOX_OK) {
		if (PQntuples(r) == 1 && !PQgetisnull(r, 0, 0))
			snprintf(out, outsz, "%s", PQgetvalue(r, 0, 0));
		PQclear(r);
	}
	buf_free(&err);
}

enum inbox_status
inbox_pg_status_report(struct inbox *pib, struct inbox_status_report *r,
    struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	PGresult *q = NULL;
	enum inbox_status s;
	int i;

	memset(r, 0, sizeof *r);
	/* One snapshot, so the figures agree with each other. */
	if ((s = px_exec(ib, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY",
	    NULL, 0, "status", err)) != INBOX_OK)
		return s;
	if ((s = px_query(ib, "SELECT state, count(*) FROM events"
	    " GROUP BY state", NULL, 0, &q, "status", err)) != INBOX_OK)
		goto fail;
	for (i = 0; i < PQntuples(q); i++) {
		const char *st = PQgetvalue(q, i, 0);
		int64_t n = px_int_col(q, i, 1);

		if (strcmp(st, "pending") == 0)
			r->pending = n;
		else if (strcmp(st, "done") == 0)
			r->done = n;
		else if (strcmp(st, "stale") == 0)
			r->stale = n;
		else if (strcmp(st, "dead") == 0)
			r->dead = n;
	}
	PQclear(q);
	if ((s = px_query(ib, "SELECT min(received_at),"
	    " count(*) FILTER (WHERE failures > 0),"
	    " min(CASE WHEN failures > 0 THEN coalesce(failing_since,"
	    " received_at) END),"
	    " count(DISTINCT CASE WHEN failures > 0 AND object_id IS NOT NULL"
	    " THEN object_type || ':' || object_id END),"
	    " max(next_at), max(received_at)"
	    " FROM events WHERE state = 'pending'", NULL, 0, &q, "status",
	    err)) != INBOX_OK)
		goto fail;
	px_instant_col(q, 0, 0, r->oldest_pending);
	r->waiting_retry = px_int_col(q, 0, 1);
	px_instant_col(q, 0, 2, r->oldest_failing);
	r->failing_objects = px_int_col(q, 0, 3);
	px_instant_col(q, 0, 4, r->latest_next_at);
	px_instant_col(q, 0, 5, r->newest_pending);
	PQclear(q);
	if ((s = px_query(ib, "SELECT finished_at FROM events"
	    " WHERE finished_at IS NOT NULL AND state = 'done'"
	    " ORDER BY finished_at DESC LIMIT 1", NULL, 0, &q, "status",
	    err)) != INBOX_OK)
		goto fail;
	if (PQntuples(q) == 1)
		px_instant_col(q, 0, 0, r->last_done);
	PQclear(q);
	if ((s = px_query(ib, "SELECT count(*) FROM events_held", NULL, 0,
	    &q, "status", err)) != INBOX_OK)
		goto fail;
	r->blocked = px_int_col(q, 0, 0);
	PQclear(q);
	meta_get(ib, "last_run_started", r->last_run_started,
	    sizeof r->last_run_started);
	meta_get(ib, "last_run_finished", r->last_run_finished,
	    sizeof r->last_run_finished);
	meta_get(ib, "last_run_outcome", r->last_run_outcome,
	    sizeof r->last_run_outcome);
	meta_get(ib, "lock_busy_since", r->lock_busy_since,
	    sizeof r->lock_busy_since);
	px_rollback(ib);
	return INBOX_OK;
fail:
	px_rollback(ib);
	return s;
}

/* One statement (its own snapshot); the result is read whole before fn
 * sees a row. */
enum inbox_status
inbox_pg_count_sources(struct inbox *pib,
    int (*fn)(const struct inbox_source_count *, void *), void *arg,
    struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct inbox_source_count c;
	PGresult *q = NULL;
	enum inbox_status s;
	int i;

	if ((s = px_query(ib, "SELECT source,"
	    " count(*) FILTER (WHERE state = 'pending'),"
	    " count(*) FILTER (WHERE state = 'done'),"
	    " count(*) FILTER (WHERE state = 'stale'),"
	    " count(*) FILTER (WHERE state = 'dead'),"
	    " count(*) FILTER (WHERE state = 'pending' AND failures > 0)"
	    " FROM events GROUP BY source ORDER BY source COLLATE \"C\"",
	    NULL, 0, &q, "counting sources", err)) != INBOX_OK)
		return s;
	for (i = 0; i < PQntuples(q); i++) {
		memset(&c, 0, sizeof c);
		snprintf(c.source, sizeof c.source, "%s", PQgetvalue(q, i, 0));
		c.pending = px_int_col(q, i, 1);
		c.done = px_int_col(q, i, 2);
		c.stale = px_int_col(q, i, 3);
		c.dead = px_int_col(q, i, 4);
		c.waiting_retry = px_int_col(q, i, 5);
		if (fn(&c, arg) == -1)
			break;
	}
	PQclear(q);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_note_lock(struct inbox *pib, int64_t now_ns, int busy,
    struct buf *err)
{
	struct px_params p = { 0 };
	char now[INSTANT_SIZE];

	if (!busy)
		return px_exec(PG(pib), "DELETE FROM meta"
		    " WHERE key = 'lock_busy_since'", NULL, 0,
		    "noting the run lock", err);
	(void)px_instant(&p, now_ns, now);
	return px_exec(PG(pib), "INSERT INTO meta (key, value)"
	    " VALUES ('lock_busy_since', $1) ON CONFLICT (key) DO NOTHING", &p,
	    0, "noting the run lock", err);
}

enum inbox_status
inbox_pg_probe_shared(struct inbox *pib, struct buf *what, struct buf *err)
{
	(void)pib;
	(void)what;
	(void)err;
	return INBOX_NOT_FOUND;
}

enum inbox_status
inbox_pg_probe_write(struct inbox *pib, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	enum inbox_status s;

	if ((s = px_begin(ib, 0, err)) != INBOX_OK)
		return s;
	/* Every table a drainer or a receiver writes, in a transaction that
	 * is rolled back: a missing privilege names its table. */
	s = px_exec(ib, "INSERT INTO meta (key, value) VALUES ('check', '1')"
	    " ON CONFLICT (key) DO UPDATE SET value = excluded.value;"
	    " UPDATE events SET attempts = attempts WHERE false;"
	    " DELETE FROM events WHERE false;"
	    " INSERT INTO seen (webhook_id, duplicates) VALUES ('', 0)"
	    " ON CONFLICT (webhook_id) DO UPDATE SET duplicates = seen.duplicates;"
	    " INSERT INTO leases (kind, object_type, object_id, owner, expires_at)"
	    " VALUES ('e', '', '', '', now()) ON CONFLICT DO NOTHING;"
	    " DELETE FROM leases WHERE false;"
	    " UPDATE objects SET done_at = done_at WHERE false;"
	    " DELETE FROM objects WHERE false;"
	    " UPDATE history SET n = n WHERE false;"
	    " INSERT INTO runs SELECT * FROM runs WHERE false;"
	    " UPDATE cursors SET page = page WHERE false",
	    NULL, 0, "writing", err);
	px_rollback(ib);
	return s;
}

enum inbox_status
inbox_pg_note_run(struct inbox *pib, int64_t now_ns, const char *outcome,
    struct buf *err)
{
	struct px_params p = { 0 };
	char now[INSTANT_SIZE];

	px_raw(&p, outcome == NULL ? "last_run_started" : "last_run_finished");
	(void)px_instant(&p, now_ns, now);
	px_raw(&p, outcome == NULL ? "running" : outcome);
	return px_exec(PG(pib), "INSERT INTO meta (key, value)"
	    " VALUES ($1, $2), ('last_run_outcome', $3)"
	    " ON CONFLICT (key) DO UPDATE SET value = excluded.value", &p, 0,
	    "noting the run", err);
}

enum inbox_status
inbox_pg_server_facts(struct inbox *pib, struct inbox_server_facts *f,
    struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	PGresult *r = NULL;
	enum inbox_status s;

	memset(f, 0, sizeof *f);
	if ((s = px_query(ib, "SELECT version(),"
	    " current_setting('server_version'),"
	    " current_setting('synchronous_commit'), current_user,"
	    " (SELECT value FROM meta WHERE key = 'schema_version')", NULL, 0,
	    &r, "reading the server's settings", err)) != INBOX_OK)
		return s;
	snprintf(f->server_version, sizeof f->server_version, "%s",
	    PQgetvalue(r, 0, 1));
	snprintf(f->sync_effective, sizeof f->sync_effective, "%s",
	    PQgetvalue(r, 0, 2));
	snprintf(f->user, sizeof f->user, "%s", PQgetvalue(r, 0, 3));
	f->schema_version = atoi(PQgetvalue(r, 0, 4));
	snprintf(f->sync_default, sizeof f->sync_default, "%s",
	    ib->sync_default);
	PQclear(r);
	return INBOX_OK;
}

#endif /* WEBHOOK_POSTGRESQL */
