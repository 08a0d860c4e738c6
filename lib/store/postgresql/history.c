/*
 * history: the PostgreSQL engine's history calls (store/inbox.h,
 * "history"): the run's increments and record, their fold into days,
 * reading them back, and the queue's shape now — the same rows and rules
 * as lib/store/sqlite/history.c.
 */
#ifdef WEBHOOK_POSTGRESQL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/store/history.h"
#include "lib/store/postgresql/private.h"

#define UPSERT_N \
	" ON CONFLICT (width_s, bucket_s, name, label, idx) DO UPDATE SET n =" \
	" CASE WHEN excluded.idx = -2 THEN greatest(history.n, excluded.n)" \
	" ELSE history.n + excluded.n END"

enum inbox_status
inbox_pg_history_add(struct inbox *pib, const struct history_delta *d,
    size_t n, const struct inbox_run_record *run, int64_t now_ns,
    struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	int64_t now_s = now_ns / 1000000000;
	int64_t cut = history_bucket_s(now_s - HISTORY_FINE_KEEP_S, HISTORY_DAY_S);
	char a[24], b[24], c[24], cuts[24], runs_cut[INSTANT_SIZE];
	char t1[INSTANT_SIZE], t2[INSTANT_SIZE], v[9][24];
	enum inbox_status s;
	size_t i;

	if ((s = px_begin(ib, 0, err)) != INBOX_OK)
		return s;
	/* One run's history at a time: two drainers ending their runs at
	 * once would upsert the same rows in different orders and deadlock
	 * (e2e_postgresql's three drainers did).  Only drainers write
	 * history, once per run and when counting received rows. */
	if ((s = px_exec(ib, "LOCK TABLE history IN SHARE ROW EXCLUSIVE MODE",
	    NULL, 0, "recording the run's history", err)) != INBOX_OK)
		goto fail;
	for (i = 0; i < n; i++) {
		struct px_params p = { 0 };

		px_int(&p, d[i].bucket_s, a);
		px_raw(&p, d[i].name);
		px_raw(&p, d[i].label);
		px_int(&p, d[i].idx, b);
		px_int(&p, d[i].n, c);
		if ((s = px_exec(ib, "INSERT INTO history (width_s, bucket_s,"
		    " name, label, idx, n) VALUES (300, $1, $2, $3, $4, $5)"
		    UPSERT_N, &p, 0, "recording the run's history", err)) !=
		    INBOX_OK)
			goto fail;
	}
	if (run != NULL) {
		struct px_params p = { 0 };

		(void)px_instant(&p, run->started_ns, t1);
		(void)px_instant(&p, run->finished_ns, t2);
		px_int(&p, run->claimed, v[0]);
		px_int(&p, run->done, v[1]);
		px_int(&p, run->failed, v[2]);
		px_int(&p, run->retried, v[3]);
		px_int(&p, run->dead, v[4]);
		px_int(&p, run->stale, v[5]);
		px_int(&p, run->refetched, v[6]);
		px_int(&p, run->budget_hit, v[7]);
		px_raw(&p, run->result);
		if ((s = px_exec(ib, "INSERT INTO runs (started_at, finished_at,"
		    " claimed, done, failed, retried, dead, stale, refetched,"
		    " budget_hit, result) VALUES ($1, $2, $3, $4, $5, $6, $7, $8,"
		    " $9, $10, $11) ON CONFLICT (started_at) DO UPDATE SET"
		    " finished_at = excluded.finished_at, claimed = excluded.claimed,"
		    " done = excluded.done, failed = excluded.failed,"
		    " retried = excluded.retried, dead = excluded.dead,"
		    " stale = excluded.stale, refetched = excluded.refetched,"
		    " budget_hit = excluded.budget_hit, result = excluded.result",
		    &p, 0, "recording the run's history", err)) != INBOX_OK)
			goto fail;
	}
	{
		struct px_params p = { 0 }, q = { 0 };

		px_int(&p, cut, cuts);
		if (instant_format(now_ns - HISTORY_RUNS_KEEP_S * 1000000000,
		    runs_cut) == -1)
			memcpy(runs_cut, "0000-00-00T00:00:00.000000000Z",
			    INSTANT_SIZE);
		px_raw(&q, runs_cut);
		if ((s = px_exec(ib, "INSERT INTO history (width_s, bucket_s,"
		    " name, label, idx, n)"
		    " SELECT 86400, bucket_s - bucket_s % 86400, name, label, idx,"
		    " CASE WHEN idx = -2 THEN max(n) ELSE sum(n)::bigint END"
		    " FROM history WHERE width_s = 300 AND bucket_s < $1::bigint"
		    " GROUP BY 2, 3, 4, 5 ORDER BY 2, 3, 4, 5" UPSERT_N, &p, 0,
		    "recording the run's history", err)) != INBOX_OK ||
		    (s = px_exec(ib, "DELETE FROM history WHERE width_s = 300"
		    " AND bucket_s < $1::bigint", &p, 0,
		    "recording the run's history", err)) != INBOX_OK ||
		    (s = px_exec(ib, "DELETE FROM runs WHERE started_at < $1", &q,
		    0, "recording the run's history", err)) != INBOX_OK)
			goto fail;
	}
	if ((s = px_commit(ib, 0, "recording the run's history", err)) !=
	    INBOX_OK)
		goto fail;
	return INBOX_OK;
fail:
	px_rollback(ib);
	return s;
}

enum inbox_status
inbox_pg_history_read(struct inbox *pib, int64_t since_s,
    int (*fn)(const struct inbox_history_row *, void *), void *arg,
    struct buf *err)
{
	struct px_params p = { 0 };
	struct inbox_history_row row;
	char since[24];
	PGresult *r = NULL;
	enum inbox_status s;
	int i;

	px_int(&p, since_s, since);
	if ((s = px_query(PG(pib), "SELECT width_s, bucket_s, name, label,"
	    " idx, n FROM history WHERE bucket_s >= $1::bigint"
	    " ORDER BY bucket_s, width_s", &p, 0, &r, "reading the history",
	    err)) != INBOX_OK)
		return s;
	for (i = 0; i < PQntuples(r); i++) {
		row.width_s = px_int_col(r, i, 0);
		row.bucket_s = px_int_col(r, i, 1);
		row.name = PQgetvalue(r, i, 2);
		row.label = PQgetvalue(r, i, 3);
		row.idx = (int)px_int_col(r, i, 4);
		row.n = px_int_col(r, i, 5);
		if (fn(&row, arg) == -1)
			break;
	}
	PQclear(r);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_runs_read(struct inbox *pib, int64_t since_ns,
    int (*fn)(const struct inbox_run_record *, void *), void *arg,
    struct buf *err)
{
	struct px_params p = { 0 };
	struct inbox_run_record run;
	char since[INSTANT_SIZE], t[INSTANT_SIZE];
	PGresult *r = NULL;
	enum inbox_status s;
	int i;

	if (px_instant(&p, since_ns, since) == -1)
		return px_fail(PG(pib), err, INBOX_FAILED, "reading the runs",
		    "clock out of range");
	if ((s = px_query(PG(pib), "SELECT started_at, finished_at,"
	    " claimed, done, failed, retried, dead, stale, refetched, budget_hit,"
	    " result FROM runs WHERE started_at >= $1 ORDER BY started_at", &p,
	    0, &r, "reading the runs", err)) != INBOX_OK)
		return s;
	for (i = 0; i < PQntuples(r); i++) {
		memset(&run, 0, sizeof run);
		px_instant_col(r, i, 0, t);
		if (instant_to_ns(t, &run.started_ns) == -1)
			run.started_ns = 0;
		px_instant_col(r, i, 1, t);
		if (instant_to_ns(t, &run.finished_ns) == -1)
			run.finished_ns = 0;
		run.claimed = px_int_col(r, i, 2);
		run.done = px_int_col(r, i, 3);
		run.failed = px_int_col(r, i, 4);
		run.retried = px_int_col(r, i, 5);
		run.dead = px_int_col(r, i, 6);
		run.stale = px_int_col(r, i, 7);
		run.refetched = px_int_col(r, i, 8);
		run.budget_hit = (int)px_int_col(r, i, 9);
		snprintf(run.result, sizeof run.result, "%s", PQgetvalue(r, i, 10));
		if (fn(&run, arg) == -1)
			break;
	}
	PQclear(r);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_queue_now(struct inbox *pib, int64_t now_ns, struct inbox_queue *q,
    struct buf *err)
{
	struct px_params p = { 0 };
	char now[INSTANT_SIZE];
	PGresult *r = NULL;
	enum inbox_status s;

	memset(q, 0, sizeof *q);
	if (px_instant(&p, now_ns, now) == -1)
		return px_fail(PG(pib), err, INBOX_FAILED, "reading the queue",
		    "clock out of range");
	if ((s = px_query(PG(pib), "SELECT count(*), min(next_at)"
	    " FROM events e WHERE state = 'pending' AND next_at <= $1"
	    " AND NOT EXISTS (SELECT 1 FROM events_held h"
	    "  WHERE h.webhook_id = e.webhook_id)", &p, 0, &r,
	    "reading the queue", err)) != INBOX_OK)
		return s;
	q->ready = px_int_col(r, 0, 0);
	px_instant_col(r, 0, 1, q->oldest_ready);
	PQclear(r);
	if ((s = px_query(PG(pib), "SELECT count(*) FROM (SELECT DISTINCT"
	    " object_type, object_id FROM events_held) x", NULL, 0, &r,
	    "reading the queue", err)) != INBOX_OK)
		return s;
	q->blocked_objects = px_int_col(r, 0, 0);
	PQclear(r);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_blocked_list(struct inbox *pib, int64_t limit,
    int (*fn)(const struct inbox_blocked *, void *), void *arg,
    struct buf *err)
{
	static const char sql[] =
	    "WITH held AS (SELECT object_type AS ot, object_id AS oi,"
	    "  count(*) AS behind FROM events_held GROUP BY 1, 2)"
	    " SELECT ot, oi, e.webhook_id, e.attempts, e.next_at, e.last_error,"
	    " behind FROM held JOIN events e ON e.object_type = ot"
	    " AND e.object_id = oi AND e.state = 'pending'"
	    " WHERE NOT EXISTS (SELECT 1 FROM events_held x"
	    "  WHERE x.webhook_id = e.webhook_id)"
	    " ORDER BY behind DESC, ot, oi LIMIT $1::bigint";
	struct px_params p = { 0 };
	struct inbox_blocked b;
	char lim[24];
	PGresult *r = NULL;
	enum inbox_status s;
	int i;

	px_int(&p, limit, lim);
	if ((s = px_query(PG(pib), sql, &p, 0, &r,
	    "reading blocked objects", err)) != INBOX_OK)
		return s;
	for (i = 0; i < PQntuples(r); i++) {
		b.object_type = PQgetvalue(r, i, 0);
		b.object_id = PQgetvalue(r, i, 1);
		b.webhook_id = PQgetvalue(r, i, 2);
		b.attempts = px_int_col(r, i, 3);
		b.next_at = PQgetvalue(r, i, 4);
		b.last_error = PQgetisnull(r, i, 5) ? NULL : PQgetvalue(r, i, 5);
		b.behind = px_int_col(r, i, 6);
		if (fn(&b, arg) == -1)
			break;
	}
	PQclear(r);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_dead_latest(struct inbox *pib, int64_t limit,
    int (*fn)(const struct inbox_event *, const char *, void *), void *arg,
    struct buf *err)
{
	struct px_params p = { 0 };
	struct inbox_event e;
	char lim[24];
	PGresult *r = NULL;
	enum inbox_status s;
	int i;

	px_int(&p, limit, lim);
	if ((s = px_query(PG(pib), "SELECT " EVENT_PG_COLUMNS
	    ", first_error FROM events WHERE state = 'dead'"
	    " ORDER BY finished_at DESC, seq DESC LIMIT $1::bigint", &p, 0, &r,
	    "reading dead events", err)) != INBOX_OK)
		return s;
	inbox_event_init(&e);
	for (i = 0; i < PQntuples(r); i++) {
		if (px_read_event(r, i, &e, 0) == -1) {
			s = px_fail(PG(pib), err, INBOX_FAILED,
			    "reading dead events", "out of memory");
			break;
		}
		if (fn(&e, PQgetisnull(r, i, EVENT_PG_NCOLUMNS) ? NULL :
		    PQgetvalue(r, i, EVENT_PG_NCOLUMNS), arg) == -1)
			break;
	}
	inbox_event_free(&e);
	PQclear(r);
	return s;
}

#endif /* WEBHOOK_POSTGRESQL */
