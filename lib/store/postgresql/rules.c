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

#include "lib/store/postgresql/private.h"

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
	if ((s = px_query(ib, sql, &p, 0, &r, "counting received events",
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
	if ((s = px_query(ib, sql, &p, 0, &r, "finding due events",
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
 * The stale rule (docs/DESIGN.md "Stale rule"; lib/store/sqlite/rules.c's
 * check_stale says it in words), for PostgreSQL, the one place it is
 * written: an event of object ($1, $2) created at $3, updated at $4 is
 * stale when strictly older than what was done for the object by either
 * clock.  One row (true/false), or none when nothing was done for it.
 */
#define STALE_PG_SELECT \
	"SELECT ($3::text IS NOT NULL AND done_created_at IS NOT NULL" \
	"        AND $3 < done_created_at)" \
	"    OR ($4::text IS NOT NULL AND done_updated_at IS NOT NULL" \
	"        AND $4 < done_updated_at)" \
	" FROM objects WHERE object_type = $1 AND object_id = $2"

/* Its parameters $1 … $4 for e. */
static void
bind_stale(struct px_params *p, const struct inbox_event *e)
{
	px_raw(p, e->object_type);
	px_raw(p, e->object_id);
	px_text(p, e->created_at);
	px_text(p, e->updated_at);
}

enum inbox_status
inbox_pg_is_stale(struct inbox *pib, const struct inbox_event *e, int *stale,
    struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	PGresult *r = NULL;
	enum inbox_status s;

	*stale = 0;
	if (e->object_id == NULL || e->object_type == NULL)
		return INBOX_OK;
	bind_stale(&p, e);
	if ((s = px_query(ib, STALE_PG_SELECT, &p, 0, &r, "stale check",
	    err)) != INBOX_OK)
		return s;
	*stale = PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
	PQclear(r);
	return INBOX_OK;
}

/*
 * A claim is one round trip (px_pipeline: two statements, one implicit
 * transaction), so that a hand-out costs three round trips in all, not
 * eleven (docs/postgresql.md, "A hand-out's round trips and flushes").
 *
 * First the lease: take (or renew, or take over once expired) this
 * connection's lease on the event's object; nothing when another drainer
 * holds one that has not expired.  Expiry is by the server's clock:
 * drainers on several hosts agree on it.  $1 … $3 the lease key, $4 the
 * owner, $5 the lease in µs.
 */
static const char take_lease[] =
    "INSERT INTO leases (kind, object_type, object_id, owner, expires_at)"
    " VALUES ($1, $2, $3, $4, clock_timestamp()"
    "  + $5::bigint * interval '1 microsecond')"
    " ON CONFLICT (kind, object_type, object_id) DO UPDATE SET"
    " owner = excluded.owner, expires_at = excluded.expires_at"
    " WHERE leases.owner = excluded.owner"
    " OR leases.expires_at <= clock_timestamp()"
    " RETURNING 1";

/*
 * Then, with a snapshot taken after the lease (a verdict the lease waited
 * for is seen: its object's clocks, its event's state), the event: if the
 * lease is ours and the event still pending and first of its object, lock
 * it (a row another drainer is recording or counting right now is
 * skipped, not waited for) and either mark it stale (stale rule, not
 * requeued) or count the hand-out.  The lease goes again unless the event
 * was handed out, so a claim that finds nothing to do leaves none.  Locks
 * in one order everywhere, lease before event row (the verdicts too): a
 * claim that locked the event first and then waited for the lease could
 * deadlock with the verdict of the drainer releasing it.  $1 … $4 the
 * stale rule's, $5 the webhook_id, $6 now, $7 … $9 the lease key, $10 the
 * owner.  One row (requeued, stale, state after) when claimed.
 */
static const char claim_event[] =
    "WITH c AS (SELECT e.webhook_id, e.requeued,"
    "  coalesce((" STALE_PG_SELECT "), false) AS stale"
    "  FROM events e WHERE e.webhook_id = $5 AND e.state = 'pending'"
    "  AND EXISTS (SELECT 1 FROM leases WHERE kind = $7"
    "   AND object_type = $8 AND object_id = $9 AND owner = $10)"
    "  AND NOT EXISTS (SELECT 1 FROM events_held h"
    "   WHERE h.webhook_id = e.webhook_id)"
    "  FOR UPDATE OF e SKIP LOCKED),"
    " u AS (UPDATE events SET"
    "  state = CASE WHEN c.stale AND c.requeued = 0 THEN 'stale'"
    "   ELSE events.state END,"
    "  finished_at = CASE WHEN c.stale AND c.requeued = 0 THEN $6"
    "   ELSE events.finished_at END,"
    "  attempts = events.attempts"
    "   + CASE WHEN c.stale AND c.requeued = 0 THEN 0 ELSE 1 END"
    "  FROM c WHERE events.webhook_id = c.webhook_id"
    "  RETURNING c.requeued, c.stale, events.state),"
    " d AS (DELETE FROM leases WHERE kind = $7 AND object_type = $8"
    "  AND object_id = $9 AND owner = $10"
    "  AND NOT EXISTS (SELECT 1 FROM u WHERE u.state = 'pending'))"
    " SELECT requeued, stale, state FROM u";

enum inbox_status
inbox_pg_claim(struct inbox *pib, struct inbox_event *e, int64_t now_ns,
    enum inbox_claim *claim, struct buf *err)
{
	static const char *const sql[2] = { take_lease, claim_event };
	struct inbox_pg *ib = PG(pib);
	struct px_params lease = { 0 }, ev = { 0 };
	const struct px_params *p[2] = { &lease, &ev };
	char now[INSTANT_SIZE], us[24];
	PGresult *r[2];
	enum inbox_status s;

	*claim = INBOX_SKIPPED;
	px_lease_key(&lease, e);
	px_raw(&lease, ib->owner);
	px_int(&lease, ib->lease_ns / 1000, us);
	bind_stale(&ev, e);
	px_raw(&ev, e->webhook_id);
	if (px_instant(&ev, now_ns, now) == -1)
		return px_fail(ib, err, INBOX_FAILED, "claiming an event",
		    "clock out of range");
	px_lease_key(&ev, e);
	px_raw(&ev, ib->owner);
	if ((s = px_pipeline(ib, 2, sql, p, r, "claiming an event", err)) !=
	    INBOX_OK)
		return s;
	if (PQntuples(r[1]) == 1) {
		e->requeued = (int)px_int_col(r[1], 0, 0);
		if (strcmp(PQgetvalue(r[1], 0, 2), "stale") == 0) {
			*claim = INBOX_MARKED_STALE;
		} else {
			e->attempts++;
			*claim = strcmp(PQgetvalue(r[1], 0, 1), "t") == 0 ?
			    INBOX_CLAIMED_STALE : INBOX_CLAIMED;
		}
	}
	PQclear(r[0]);
	PQclear(r[1]);
	return INBOX_OK;
}

/*
 * A verdict is one statement in a transaction of its own, one round trip
 * (fenced): release the lease if it is still this connection's (l), and
 * only then (lease before event row, as in a claim) record on the event,
 * in the statement that follows FENCED: its $1 … $4 are the lease key and
 * owner (bind_fence), and it ends by selecting, first, whether the lease
 * was held.  A lease that is no longer ours (expired and taken over)
 * records nothing.
 */
#define FENCED \
	"WITH l AS (DELETE FROM leases WHERE kind = $1 AND object_type = $2" \
	" AND object_id = $3 AND owner = $4 RETURNING 1)"

static void
bind_fence(struct inbox_pg *ib, struct px_params *p,
    const struct inbox_event *e)
{
	px_lease_key(p, e);
	px_raw(p, ib->owner);
}

/*
 * Run a FENCED statement; INBOX_LOST when the lease was no longer ours,
 * else its one row in *res (PQclear it).
 *
 * Its commit waits for the WAL flush, as every drainer commit here: a
 * verdict lost in a crash of the server would not only hand its event out
 * again -- the object's clocks it advanced decide whether an older event
 * of the object, stored meanwhile, is stale, and a dead letter would come
 * back to life (test_inbox_pg crashes the server right after a verdict).
 */
static enum inbox_status
fenced(struct inbox_pg *ib, const char *sql, const struct px_params *p,
    PGresult **res, const char *what, struct buf *err)
{
	enum inbox_status s;

	if ((s = px_query(ib, sql, p, 0, res, what, err)) != INBOX_OK)
		return s;
	if (PQntuples(*res) != 1 || strcmp(PQgetvalue(*res, 0, 0), "t") != 0) {
		PQclear(*res);
		*res = NULL;
		return px_fail(ib, err, INBOX_LOST, what, "this drainer's lease "
		    "on the event's object expired and another drainer took it "
		    "over (the handler ran longer than the lease); nothing "
		    "recorded, the other drainer hands it out");
	}
	if ((s = px_warned(ib, what, err)) != INBOX_OK) {
		PQclear(*res);
		*res = NULL;
	}
	return s;
}

/* The lease was ours, but the event's row is no longer the one claimed
 * (forgotten meanwhile, maybe stored again by a replay): its verdict is
 * not recorded (store/inbox.h, the finish_* calls). */
static enum inbox_status
row_gone(struct inbox_pg *ib, PGresult *r, int col, const char *what,
    struct buf *err)
{
	int gone = strcmp(PQgetvalue(r, 0, col), "t") != 0;

	PQclear(r);
	if (!gone)
		return INBOX_OK;
	return px_fail(ib, err, INBOX_LOST, what, "the event was forgotten "
	    "while its handler ran (a replay stored since is another event): "
	    "its verdict is not recorded");
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
	PGresult *r = NULL;
	enum inbox_status s;

	bind_fence(ib, &p, e);
	px_raw(&p, e->webhook_id);
	if (px_instant(&p, now_ns, now) == -1)
		return px_fail(ib, err, INBOX_FAILED, "marking stale",
		    "clock out of range");
	px_raw(&p, e->received_at);
	if ((s = fenced(ib, FENCED ", u AS (UPDATE events SET state = 'stale',"
	    "  finished_at = $6, requeued = 0"
	    "  WHERE webhook_id = $5 AND received_at = $7 AND state = 'pending'"
	    "  AND EXISTS (SELECT 1 FROM l) RETURNING 1)"
	    " SELECT EXISTS (SELECT 1 FROM l), EXISTS (SELECT 1 FROM u)", &p,
	    &r, "marking stale", err)) != INBOX_OK)
		return s;
	return row_gone(ib, r, 1, "marking stale", err);
}

enum inbox_status
inbox_pg_finish_done(struct inbox *pib, const struct inbox_event *e,
    int64_t now_ns, const void *output, size_t output_len, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	char now[INSTANT_SIZE];
	PGresult *r = NULL;
	enum inbox_status s;
	int object = e->object_id != NULL && e->object_type != NULL;

	bind_fence(ib, &p, e);
	px_raw(&p, e->webhook_id);
	if (px_instant(&p, now_ns, now) == -1)
		return px_fail(ib, err, INBOX_FAILED, "marking done",
		    "clock out of range");
	bind_output(&p, output, output_len);
	px_raw(&p, object ? e->object_type : NULL);
	px_raw(&p, object ? e->object_id : NULL);
	px_text(&p, instant_later(e->created_at, e->object_version));
	px_text(&p, instant_later(e->updated_at, e->object_version));
	px_raw(&p, e->received_at);
	/* The object's clocks only move forward (greatest() ignores NULLs).
	 * They are written once the event row is (o waits for all of u:
	 * lease, event, object, as before), whether or not the row is still
	 * the one claimed: the handler did apply this version of the object
	 * (an operator's forget while it ran leaves the clocks, as forget
	 * does), so an older event stored later is stale. */
	if ((s = fenced(ib, FENCED ", u AS (UPDATE events SET state = 'done',"
	    "  finished_at = $6, requeued = 0, last_error = NULL,"
	    "  last_output = $7::bytea"
	    "  WHERE webhook_id = $5 AND received_at = $12 AND state = 'pending'"
	    "  AND EXISTS (SELECT 1 FROM l) RETURNING 1),"
	    " o AS (INSERT INTO objects (object_type, object_id,"
	    "  done_created_at, done_updated_at, done_at)"
	    "  SELECT $8, $9, $10, $11, $6 FROM l WHERE $8::text IS NOT NULL"
	    "  AND (SELECT count(*) FROM u) >= 0"
	    "  ON CONFLICT (object_type, object_id) DO UPDATE SET"
	    "  done_created_at = greatest(objects.done_created_at,"
	    "   excluded.done_created_at),"
	    "  done_updated_at = greatest(objects.done_updated_at,"
	    "   excluded.done_updated_at),"
	    "  done_at = excluded.done_at)"
	    " SELECT EXISTS (SELECT 1 FROM l), EXISTS (SELECT 1 FROM u)", &p,
	    &r, "marking done", err)) != INBOX_OK)
		return s;
	return row_gone(ib, r, 1, "marking done", err);
}

enum inbox_status
inbox_pg_finish_failed(struct inbox *pib, const struct inbox_event *e,
    struct inbox_failure *f, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct px_params p = { 0 };
	char now[INSTANT_SIZE], next[INSTANT_SIZE], max[24];
	PGresult *r = NULL;
	enum inbox_status s;

	f->dead = 0;
	bind_fence(ib, &p, e);
	px_raw(&p, e->webhook_id);
	px_text(&p, f->error);
	bind_output(&p, f->output, f->output_len);
	px_int(&p, f->max_attempts, max);
	if (px_instant(&p, f->now_ns, now) == -1 ||
	    px_instant(&p, f->now_ns + f->retry_ns, next) == -1)
		return px_fail(ib, err, INBOX_FAILED, "recording a failure",
		    "clock out of range");
	px_raw(&p, e->received_at);
	if ((s = fenced(ib, FENCED ", u AS (UPDATE events SET"
	    "  failures = failures + 1, last_error = $6,"
	    "  first_error = coalesce(first_error, $6),"
	    /* the first of the failures since received or requeued */
	    "  failing_since = coalesce(failing_since, $9),"
	    "  last_output = $7::bytea,"
	    "  state = CASE WHEN failures + 1 >= $8::bigint THEN 'dead'"
	    "   ELSE state END,"
	    "  finished_at = CASE WHEN failures + 1 >= $8::bigint THEN $9"
	    "   ELSE NULL END,"
	    "  next_at = $10"
	    "  WHERE webhook_id = $5 AND received_at = $11 AND state = 'pending'"
	    "  AND EXISTS (SELECT 1 FROM l) RETURNING state = 'dead' AS dead)"
	    " SELECT EXISTS (SELECT 1 FROM l), coalesce((SELECT dead FROM u),"
	    "  false), EXISTS (SELECT 1 FROM u)", &p, &r, "recording a failure",
	    err)) != INBOX_OK)
		return s;
	f->dead = strcmp(PQgetvalue(r, 0, 1), "t") == 0;
	return row_gone(ib, r, 2, "recording a failure", err);
}

enum inbox_status
inbox_pg_list(struct inbox *pib, const struct inbox_filter *f, int with_body,
    int (*fn)(const struct inbox_event *, void *), void *arg, struct buf *err)
{
	static const char sql[] =
	    "SELECT " EVENT_PG_COLUMNS ", CASE WHEN $10 THEN body END,"
	    " EXISTS (SELECT 1 FROM events_held h WHERE h.webhook_id = e.webhook_id)"
	    " FROM events e" FILTER_PG_WHERE
	    " AND ($11::bigint < 0 OR (sort_at, received_at, seq) >"
	    "  ($12, $13, $11::bigint))"
	    " ORDER BY sort_at, received_at, seq LIMIT $9";
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
		s = px_query(ib, sql, &p, 0, &r, "listing events", err);
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
