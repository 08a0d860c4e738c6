/*
 * inbox_pg_rules: the inbox's rules in the PostgreSQL implementation —
 * order, hold and stale as on SQLite (docs/inbox-rules.md; the hold rule
 * is schema-pg.sql's view events_held), and the drainers' leases that let
 * several of them share one inbox (docs/postgresql.md "Leases"): a claim
 * takes the lease on the event's object in its short transaction, the
 * verdict is recorded only while the lease is still this drainer's, and
 * no transaction stays open while a handler runs.
 */
#ifdef WEBHOOK_POSTGRESQL

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "inbox_pg.h"

/* As SQLite's (lib/inbox_rules.c): rows counted as received per
 * transaction, how often inbox_next_due does it, the output kept. */
#define ADMIT_CHUNK	500
#define ADMIT_EVERY_NS	1000000000LL
#define OUTPUT_KEEP	4096

void
px_lease_key(struct px_params *p, const struct inbox_event *e)
{
	if (e->object_type != NULL && e->object_id != NULL) {
		px_raw(p, "o");
		px_raw(p, e->object_type);
		px_raw(p, e->object_id);
	} else {
		px_raw(p, "e");
		px_raw(p, "");
		px_raw(p, e->webhook_id);
	}
}

/*
 * Count up to ADMIT_CHUNK rows the receivers stored as `received` in
 * history and mark them counted, in the caller's transaction.  Rows
 * another drainer is counting are skipped (SKIP LOCKED), not waited for
 * and never counted twice; history rows are upserted in bucket order, so
 * that two drainers counting at once wait for each other, never
 * deadlock.
 */
static enum inbox_status
admit_chunk(struct inbox_pg *ib, int64_t *n, struct buf *err)
{
	static const char sql[] =
	    "WITH a AS (UPDATE events SET admitted = 1 WHERE webhook_id IN"
	    "  (SELECT webhook_id FROM events WHERE admitted = 0 ORDER BY seq"
	    "   LIMIT $1 FOR UPDATE SKIP LOCKED) RETURNING received_at),"
	    " h AS (INSERT INTO history (width_s, bucket_s, name, label, idx, n)"
	    "  SELECT 300, b - b % 300, 'received', '', 0, count(*) FROM"
	    "  (SELECT extract(epoch FROM substr(received_at, 1, 19)::timestamp)"
	    "   ::bigint AS b FROM a) x GROUP BY 2 ORDER BY 2"
	    "  ON CONFLICT (width_s, bucket_s, name, label, idx)"
	    "  DO UPDATE SET n = history.n + excluded.n)"
	    " SELECT count(*) FROM a";
	struct px_params p = { 0 };
	char lim[24];
	PGresult *r = NULL;
	enum inbox_status s;

	*n = 0;
	px_int(&p, ADMIT_CHUNK, lim);
	if ((s = px_query(ib, NULL, sql, &p, 0, &r, "counting received events",
	    err)) != INBOX_OK)
		return s;
	*n = px_int_col(r, 0, 0);
	PQclear(r);
	return INBOX_OK;
}

/* Count what arrived; only history depends on it, so a failure is left
 * for the next call. */
static void
admit(struct inbox_pg *ib, int64_t now_ns)
{
	struct buf err;
	int64_t n;

	buf_init(&err, 1024);
	ib->admitted_ns = now_ns;
	do {
		if (px_begin(ib, 0, &err) != INBOX_OK)
			break;
		if (admit_chunk(ib, &n, &err) != INBOX_OK ||
		    px_commit(ib, 0, "counting received events", &err) !=
		    INBOX_OK) {
			px_rollback(ib);
			break;
		}
	} while (n == ADMIT_CHUNK);
	buf_free(&err);
}

enum inbox_status
inbox_pg_next_due(struct inbox *pib, struct inbox_cursor *cur, int64_t now_ns,
    int64_t settle_ns, int64_t future_ns, struct inbox_event *e,
    struct buf *err)
{
	static const char sql[] =
	    "SELECT " EVENT_PG_COLUMNS ", body FROM events e"
	    " WHERE state = 'pending' AND (next_at <= $1 OR next_at > $3)"
	    " AND (requeued = 1 OR received_at <= $2 OR received_at > $7)"
	    " AND (sort_at, received_at, seq) > ($4, $5, $6::bigint)"
	    " AND NOT EXISTS (SELECT 1 FROM events_held h"
	    "  WHERE h.webhook_id = e.webhook_id)"
	    " ORDER BY sort_at, received_at, seq LIMIT 1";
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	char now[INSTANT_SIZE], settled[INSTANT_SIZE], far[INSTANT_SIZE],
	    ahead[INSTANT_SIZE], seq[24];
	PGresult *r = NULL;
	enum inbox_status s;

	if (ib->admitted_ns == 0 || now_ns < ib->admitted_ns ||
	    now_ns - ib->admitted_ns >= ADMIT_EVERY_NS)
		admit(ib, now_ns);
	if (px_instant(&p, now_ns, now) == -1 ||
	    px_instant(&p, now_ns - settle_ns, settled) == -1 ||
	    px_instant(&p, future_ns > 0 && now_ns <= INT64_MAX - future_ns ?
	    now_ns + future_ns : INT64_MAX, far) == -1)
		return px_fail(ib, err, INBOX_FAILED, "finding due events",
		    "clock out of range");
	px_raw(&p, cur->sort_at);
	px_raw(&p, cur->received_at);
	px_int(&p, cur->seq, seq);
	if (px_instant(&p, now_ns <= INT64_MAX - settle_ns ? now_ns + settle_ns :
	    INT64_MAX, ahead) == -1)
		return px_fail(ib, err, INBOX_FAILED, "finding due events",
		    "clock out of range");
	if ((s = px_query(ib, NULL, sql, &p, 0, &r, "finding due events",
	    err)) != INBOX_OK)
		return s;
	if (PQntuples(r) == 0) {
		PQclear(r);
		return INBOX_NOT_FOUND;
	}
	if (px_read_event(r, 0, e, 1) == -1) {
		PQclear(r);
		return px_fail(ib, err, INBOX_FAILED, "finding due events",
		    "out of memory");
	}
	PQclear(r);
	memcpy(cur->sort_at, e->sort_at, INSTANT_SIZE);
	memcpy(cur->received_at, e->received_at, INSTANT_SIZE);
	cur->seq = e->seq;
	cur->started = 1;
	return INBOX_OK;
}

/*
 * The stale rule (DESIGN.md "Stale rule"; lib/inbox_rules.c's
 * check_stale says it in words), for PostgreSQL: strictly older than
 * what was done for the object by either clock.  *stale 0/1.
 */
static enum inbox_status
check_stale(struct inbox_pg *ib, const struct inbox_event *e, int *stale,
    struct buf *err)
{
	static const char sql[] =
	    "SELECT ($3::text IS NOT NULL AND done_created_at IS NOT NULL"
	    "        AND $3 < done_created_at)"
	    "    OR ($4::text IS NOT NULL AND done_updated_at IS NOT NULL"
	    "        AND $4 < done_updated_at)"
	    " FROM objects WHERE object_type = $1 AND object_id = $2";
	struct px_params p = { 0 };
	PGresult *r = NULL;
	enum inbox_status s;

	*stale = 0;
	if (e->object_id == NULL || e->object_type == NULL)
		return INBOX_OK;
	px_raw(&p, e->object_type);
	px_raw(&p, e->object_id);
	px_text(&p, e->created_at);
	px_text(&p, e->updated_at);
	if ((s = px_query(ib, NULL, sql, &p, 0, &r, "stale check", err)) !=
	    INBOX_OK)
		return s;
	*stale = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_is_stale(struct inbox *ib, const struct inbox_event *e, int *stale,
    struct buf *err)
{
	return check_stale(PG(ib), e, stale, err);
}

/*
 * Take (or renew, or take over once expired) this connection's lease on
 * the event's object, in the caller's transaction; *got 0 when another
 * drainer holds one that has not expired.  Expiry is by the server's
 * clock: drainers on several hosts agree on it.
 */
static enum inbox_status
take_lease(struct inbox_pg *ib, const struct inbox_event *e, int *got,
    struct buf *err)
{
	struct px_params p = { 0 };
	char us[24];
	PGresult *r = NULL;
	enum inbox_status s;

	*got = 0;
	px_lease_key(&p, e);
	px_raw(&p, ib->owner);
	px_int(&p, ib->lease_ns / 1000, us);
	if ((s = px_query(ib, NULL,
	    "INSERT INTO leases (kind, object_type, object_id, owner, expires_at)"
	    " VALUES ($1, $2, $3, $4, clock_timestamp()"
	    "  + $5::bigint * interval '1 microsecond')"
	    " ON CONFLICT (kind, object_type, object_id) DO UPDATE SET"
	    " owner = excluded.owner, expires_at = excluded.expires_at"
	    " WHERE leases.owner = excluded.owner"
	    " OR leases.expires_at <= clock_timestamp()"
	    " RETURNING 1", &p, 0, &r, "taking the lease", err)) != INBOX_OK)
		return s;
	*got = PQntuples(r) == 1;
	PQclear(r);
	return INBOX_OK;
}

/* Release the lease if it is still ours, in the caller's transaction; *held
 * 0 when it is not (expired and taken over: record nothing). */
static enum inbox_status
release_lease(struct inbox_pg *ib, const struct inbox_event *e, int *held,
    struct buf *err)
{
	struct px_params p = { 0 };
	PGresult *r = NULL;
	enum inbox_status s;

	*held = 0;
	px_lease_key(&p, e);
	px_raw(&p, ib->owner);
	if ((s = px_query(ib, NULL, "DELETE FROM leases WHERE kind = $1"
	    " AND object_type = $2 AND object_id = $3 AND owner = $4"
	    " RETURNING 1", &p, 0, &r, "releasing the lease", err)) != INBOX_OK)
		return s;
	*held = PQntuples(r) == 1;
	PQclear(r);
	return INBOX_OK;
}

enum inbox_status
inbox_pg_claim(struct inbox *pib, struct inbox_event *e, int64_t now_ns,
    enum inbox_claim *claim, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	char now[INSTANT_SIZE];
	PGresult *r = NULL;
	enum inbox_status s;
	int stale, got, held;

	*claim = INBOX_SKIPPED;
	/*
	 * Locks in one order everywhere, lease before event row (the
	 * verdicts' fenced() too): a claim that locked the event first and
	 * then waited for the lease could deadlock with the verdict of the
	 * drainer releasing it.  Nothing else is written here (counting
	 * received rows, SQLite's admission, is inbox_next_due's, in its own
	 * transactions), so a claim that finds nothing to do rolls back and
	 * leaves no lease behind.
	 */
	if ((s = px_begin(ib, 0, err)) != INBOX_OK)
		return s;
	if ((s = take_lease(ib, e, &got, err)) != INBOX_OK)
		goto fail;
	if (!got) {	/* another drainer has its object */
		px_rollback(ib);
		return INBOX_OK;
	}
	/* Still pending and first of its object; a row another drainer is
	 * recording or counting right now is skipped, not waited for. */
	px_raw(&p, e->webhook_id);
	if ((s = px_query(ib, NULL, "SELECT requeued FROM events e"
	    " WHERE webhook_id = $1 AND state = 'pending'"
	    " AND NOT EXISTS (SELECT 1 FROM events_held h"
	    "  WHERE h.webhook_id = e.webhook_id)"
	    " FOR UPDATE OF e SKIP LOCKED", &p, 0, &r, "claiming an event",
	    err)) != INBOX_OK)
		goto fail;
	if (PQntuples(r) == 0) {
		PQclear(r);
		px_rollback(ib);
		return INBOX_OK;
	}
	e->requeued = (int)px_int_col(r, 0, 0);
	PQclear(r);
	if ((s = check_stale(ib, e, &stale, err)) != INBOX_OK)
		goto fail;
	memset(&p, 0, sizeof p);
	px_raw(&p, e->webhook_id);
	if (stale && !e->requeued) {
		if (px_instant(&p, now_ns, now) == -1) {
			s = px_fail(ib, err, INBOX_FAILED, "claiming an event",
			    "clock out of range");
			goto fail;
		}
		if ((s = px_exec(ib, "UPDATE events SET state = 'stale',"
		    " finished_at = $2 WHERE webhook_id = $1", &p, 0,
		    "claiming an event", err)) != INBOX_OK ||
		    (s = release_lease(ib, e, &held, err)) != INBOX_OK)
			goto fail;
		if ((s = px_commit(ib, 0, "claiming an event", err)) != INBOX_OK)
			return s;
		*claim = INBOX_MARKED_STALE;
		return INBOX_OK;
	}
	if ((s = px_exec(ib, "UPDATE events SET attempts = attempts + 1"
	    " WHERE webhook_id = $1", &p, 0, "claiming an event", err)) !=
	    INBOX_OK)
		goto fail;
	if ((s = px_commit(ib, 0, "claiming an event", err)) != INBOX_OK)
		return s;
	e->attempts++;
	*claim = stale ? INBOX_CLAIMED_STALE : INBOX_CLAIMED;
	return INBOX_OK;
fail:
	px_rollback(ib);
	return s;
}

/* A verdict's transaction: release the lease (INBOX_LOST, nothing
 * recorded, when it is no longer ours), then run `sql` with p. */
static enum inbox_status
fenced(struct inbox_pg *ib, const struct inbox_event *e, const char *sql,
    const struct px_params *p, PGresult **res, const char *what,
    struct buf *err)
{
	enum inbox_status s;
	int held;

	if ((s = px_begin(ib, 0, err)) != INBOX_OK)
		return s;
	if ((s = release_lease(ib, e, &held, err)) != INBOX_OK)
		goto fail;
	if (!held) {
		px_rollback(ib);
		return px_fail(ib, err, INBOX_LOST, what, "this drainer's lease "
		    "on the event's object expired and another drainer took it "
		    "over (the handler ran longer than the lease); nothing "
		    "recorded, the other drainer hands it out");
	}
	if ((s = px_query(ib, NULL, sql, p, 0, res, what, err)) != INBOX_OK)
		goto fail;
	return INBOX_OK;	/* the caller commits */
fail:
	px_rollback(ib);
	return s;
}

static void
bind_output(struct px_params *p, const void *output, size_t len)
{
	if (output == NULL || len == 0) {
		px_raw(p, NULL);
		return;
	}
	if (len > OUTPUT_KEEP) {	/* keep the tail: the end says why */
		output = (const char *)output + (len - OUTPUT_KEEP);
		len = OUTPUT_KEEP;
	}
	px_bytes(p, output, len);
}

enum inbox_status
inbox_pg_finish_stale(struct inbox *pib, const struct inbox_event *e,
    int64_t now_ns, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	char now[INSTANT_SIZE];
	enum inbox_status s;

	px_raw(&p, e->webhook_id);
	if (px_instant(&p, now_ns, now) == -1)
		return px_fail(ib, err, INBOX_FAILED, "marking stale",
		    "clock out of range");
	if ((s = fenced(ib, e, "UPDATE events SET state = 'stale',"
	    " finished_at = $2, requeued = 0"
	    " WHERE webhook_id = $1 AND state = 'pending'", &p, NULL,
	    "marking stale", err)) != INBOX_OK)
		return s;
	if ((s = px_commit(ib, 0, "marking stale", err)) != INBOX_OK)
		px_rollback(ib);
	return s;
}

enum inbox_status
inbox_pg_finish_done(struct inbox *pib, const struct inbox_event *e,
    int64_t now_ns, const void *output, size_t output_len, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 }, q = { 0 };
	char now[INSTANT_SIZE];
	enum inbox_status s;

	px_raw(&p, e->webhook_id);
	if (px_instant(&p, now_ns, now) == -1)
		return px_fail(ib, err, INBOX_FAILED, "marking done",
		    "clock out of range");
	bind_output(&p, output, output_len);
	if ((s = fenced(ib, e, "UPDATE events SET state = 'done',"
	    " finished_at = $2, requeued = 0, last_error = NULL,"
	    " last_output = $3::bytea WHERE webhook_id = $1", &p, NULL,
	    "marking done", err)) != INBOX_OK)
		return s;
	if (e->object_id != NULL && e->object_type != NULL) {
		/* Clocks only move forward: greatest() ignores NULLs. */
		px_raw(&q, e->object_type);
		px_raw(&q, e->object_id);
		px_text(&q, instant_later(e->created_at, e->object_version));
		px_text(&q, instant_later(e->updated_at, e->object_version));
		px_raw(&q, now);
		if ((s = px_exec(ib, "INSERT INTO objects (object_type, object_id,"
		    " done_created_at, done_updated_at, done_at)"
		    " VALUES ($1, $2, $3, $4, $5)"
		    " ON CONFLICT (object_type, object_id) DO UPDATE SET"
		    " done_created_at = greatest(objects.done_created_at,"
		    "  excluded.done_created_at),"
		    " done_updated_at = greatest(objects.done_updated_at,"
		    "  excluded.done_updated_at),"
		    " done_at = excluded.done_at", &q, 0, "marking done", err)) !=
		    INBOX_OK)
			goto fail;
	}
	if ((s = px_commit(ib, 0, "marking done", err)) != INBOX_OK)
		goto fail;
	return INBOX_OK;
fail:
	px_rollback(ib);
	return s;
}

enum inbox_status
inbox_pg_finish_failed(struct inbox *pib, const struct inbox_event *e,
    int64_t now_ns, int64_t retry_ns, int64_t max_attempts, const char *error,
    const void *output, size_t output_len, int *dead, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	char now[INSTANT_SIZE], next[INSTANT_SIZE], max[24];
	PGresult *r = NULL;
	enum inbox_status s;

	*dead = 0;
	px_raw(&p, e->webhook_id);
	px_text(&p, error);
	bind_output(&p, output, output_len);
	px_int(&p, max_attempts, max);
	if (px_instant(&p, now_ns, now) == -1 ||
	    px_instant(&p, now_ns + retry_ns, next) == -1)
		return px_fail(ib, err, INBOX_FAILED, "recording a failure",
		    "clock out of range");
	if ((s = fenced(ib, e,
	    "UPDATE events SET failures = failures + 1, last_error = $2,"
	    " first_error = coalesce(first_error, $2),"
	    /* the first of the failures since received or requeued */
	    " failing_since = coalesce(failing_since, $5),"
	    " last_output = $3::bytea,"
	    " state = CASE WHEN failures + 1 >= $4::bigint THEN 'dead'"
	    "  ELSE state END,"
	    " finished_at = CASE WHEN failures + 1 >= $4::bigint THEN $5"
	    "  ELSE NULL END,"
	    " next_at = $6"
	    " WHERE webhook_id = $1 AND state = 'pending'"
	    " RETURNING state = 'dead'", &p, &r, "recording a failure", err)) !=
	    INBOX_OK)
		return s;
	*dead = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	if ((s = px_commit(ib, 0, "recording a failure", err)) != INBOX_OK) {
		px_rollback(ib);
		*dead = 0;
	}
	return s;
}

/* As SQLite's list (lib/inbox_rules.c): pages read, then handed out, so
 * that a reader blocked on its output holds no snapshot. */
#define LIST_PAGE		256
#define LIST_PAGE_BODIES	4

enum inbox_status
inbox_pg_list(struct inbox *pib, const struct inbox_filter *f, int with_body,
    int (*fn)(const struct inbox_event *, void *), void *arg, struct buf *err)
{
	static const char sql[] =
	    "SELECT " EVENT_PG_COLUMNS ", CASE WHEN $9 THEN body END,"
	    " EXISTS (SELECT 1 FROM events_held h WHERE h.webhook_id = e.webhook_id)"
	    " FROM events e" FILTER_PG_WHERE
	    " AND ($10::bigint < 0 OR (sort_at, received_at, seq) >"
	    "  ($11, $12, $10::bigint))"
	    " ORDER BY sort_at, received_at, seq LIMIT $8";
	struct inbox_pg *ib = PG(pib);
	struct inbox_event ev;
	struct px_filter_tmp t;
	char sort_at[INSTANT_SIZE] = "", received_at[INSTANT_SIZE] = "";
	char lim[24], seqs[24];
	int64_t left = f->limit > 0 ? f->limit : INT64_MAX, max, seq = -1;
	int size = with_body ? LIST_PAGE_BODIES : LIST_PAGE, i, n;
	enum inbox_status s = INBOX_OK;
	PGresult *r;

	inbox_event_init(&ev);
	while (left > 0) {
		struct px_params p = { 0 };

		max = left < size ? left : size;
		if (px_filter(&p, f, &t) == -1)
			return px_fail(ib, err, INBOX_FAILED, "listing events",
			    "out of memory");
		px_int(&p, max, lim);
		px_raw(&p, with_body ? "t" : "f");
		px_int(&p, seq, seqs);
		px_raw(&p, sort_at);
		px_raw(&p, received_at);
		s = px_query(ib, NULL, sql, &p, 0, &r, "listing events", err);
		px_filter_free(&t);
		if (s != INBOX_OK)
			break;
		n = PQntuples(r);
		for (i = 0; i < n; i++) {
			if (px_read_event(r, i, &ev, with_body) == -1) {
				s = px_fail(ib, err, INBOX_FAILED,
				    "listing events", "out of memory");
				break;
			}
			ev.blocked = strcmp(PQgetvalue(r, i,
			    EVENT_PG_NCOLUMNS + 1), "t") == 0;
			if (fn(&ev, arg) == -1) {
				n = -1;
				break;
			}
			memcpy(sort_at, ev.sort_at, INSTANT_SIZE);
			memcpy(received_at, ev.received_at, INSTANT_SIZE);
			seq = ev.seq;
		}
		PQclear(r);
		if (s != INBOX_OK || n < max)
			break;
		left -= n;
	}
	inbox_event_free(&ev);
	return s;
}

#endif /* WEBHOOK_POSTGRESQL */
