/*
 * inbox_pg_px: the PostgreSQL inbox's statements (store/postgresql/private.h, px_*):
 * parameters in libpq's form, columns out of results, and every statement
 * sent and waited for against a deadline -- a server that stops answering
 * costs the caller its deadline, never a hang -- with the server's
 * SQLSTATEs turned into store/inbox.h's statuses and a WARNING during COMMIT
 * turned into a failure (docs/postgresql.md, "Durability of a 200").
 */
#ifdef WEBHOOK_POSTGRESQL

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/store/postgresql/private.h"
/* ---- parameters and columns --------------------------------------------- */

void
px_text(struct px_params *p, const char *s)
{
	px_raw(p, s != NULL && *s != '\0' ? s : NULL);
}

void
px_raw(struct px_params *p, const char *s)
{
	p->v[p->n] = s;
	p->len[p->n] = 0;
	p->bin[p->n] = 0;
	p->n++;
}

void
px_int(struct px_params *p, int64_t v, char tmp[24])
{
	snprintf(tmp, 24, "%lld", (long long)v);
	px_raw(p, tmp);
}

void
px_bytes(struct px_params *p, const void *b, size_t len)
{
	p->v[p->n] = b;
	p->len[p->n] = (int)len;
	p->bin[p->n] = 1;
	p->n++;
}

int
px_instant(struct px_params *p, int64_t ns, char tmp[INSTANT_SIZE])
{
	if (instant_format(ns, tmp) == -1)
		return -1;
	px_raw(p, tmp);
	return 0;
}

char *
px_dup(const PGresult *r, int row, int col, int *oom)
{
	char *s;

	if (PQgetisnull(r, row, col))
		return NULL;
	if ((s = strdup(PQgetvalue(r, row, col))) == NULL)
		*oom = 1;
	return s;
}

void
px_instant_col(const PGresult *r, int row, int col, char out[INSTANT_SIZE])
{
	const char *t = PQgetvalue(r, row, col);

	out[0] = '\0';
	if (!PQgetisnull(r, row, col) && strlen(t) == INSTANT_LEN)
		memcpy(out, t, INSTANT_SIZE);
}

int64_t
px_int_col(const PGresult *r, int row, int col)
{
	if (PQgetisnull(r, row, col))
		return 0;
	return strtoll(PQgetvalue(r, row, col), NULL, 10);
}

int
px_bytes_col(const PGresult *r, int row, int col, struct buf *b)
{
	unsigned char *raw;
	size_t n;
	int rc;

	if (PQgetisnull(r, row, col))
		return 0;
	if ((raw = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row,
	    col), &n)) == NULL)
		return -1;
	rc = buf_append(b, n > 0 ? (const void *)raw : "", n);
	PQfreemem(raw);
	return rc;
}

int
px_read_event(const PGresult *r, int row, struct inbox_event *e, int with_body)
{
	const char *state = PQgetvalue(r, row, 1);
	int oom = 0;

	inbox_event_free(e);
	e->webhook_id = px_dup(r, row, 0, &oom);
	snprintf(e->state, sizeof e->state, "%s", state);
	px_instant_col(r, row, 2, e->received_at);
	e->webhook_timestamp = px_int_col(r, row, 3);
	e->secret_fp = px_dup(r, row, 4, &oom);
	e->type = px_dup(r, row, 5, &oom);
	px_instant_col(r, row, 6, e->created_at);
	e->created_at_raw = px_dup(r, row, 7, &oom);
	e->object_type = px_dup(r, row, 8, &oom);
	e->object_id = px_dup(r, row, 9, &oom);
	px_instant_col(r, row, 10, e->updated_at);
	e->truncated = (int)px_int_col(r, row, 11);
	px_instant_col(r, row, 12, e->sort_at);
	e->attempts = px_int_col(r, row, 13);
	e->failures = px_int_col(r, row, 14);
	px_instant_col(r, row, 15, e->next_at);
	px_instant_col(r, row, 16, e->finished_at);
	e->requeued = (int)px_int_col(r, row, 17);
	e->last_error = px_dup(r, row, 18, &oom);
	if (px_bytes_col(r, row, 19, &e->last_output) == -1)
		oom = 1;
	e->seq = px_int_col(r, row, 20);
	e->has_body = strcmp(PQgetvalue(r, row, 21), "t") == 0;
	snprintf(e->source, sizeof e->source, "%s", PQgetisnull(r, row, 22) ?
	    INBOX_DEFAULT_SOURCE : PQgetvalue(r, row, 22));
	if (with_body && e->has_body &&
	    px_bytes_col(r, row, EVENT_PG_NCOLUMNS, &e->body) == -1)
		oom = 1;
	return oom ? -1 : 0;
}

/* ---- statements with a deadline ----------------------------------------- */

enum inbox_status
px_fail(struct inbox_pg *ib, struct buf *err, enum inbox_status s,
    const char *what, const char *msg)
{
	size_t n;

	buf_reset(err);
	(void)buf_printf(err, "%s: %s: %s", ib->name, what, msg);
	/* libpq's messages end in a newline: one line for the logs. */
	n = err->len;
	while (n > 0 && (err->data[n - 1] == '\n' || err->data[n - 1] == ' '))
		err->data[--n] = '\0';
	err->len = n;
	return s;
}

/* Wait until the statement sent is fully answered (0), the deadline passed
 * (-1), or the connection failed (-2). */
static int
wait_ready(PGconn *c, int64_t deadline)
{
	struct pollfd pfd;
	int64_t left;
	int fl;

	while ((fl = PQflush(c)) == 1 || PQisBusy(c)) {
		if (fl == -1)
			return -2;
		if ((left = deadline - util_mono_ns()) <= 0)
			return -1;
		pfd.fd = PQsocket(c);
		pfd.events = POLLIN | (fl == 1 ? POLLOUT : 0);
		pfd.revents = 0;
		if (poll(&pfd, 1, (int)(left / 1000000 + 1)) == -1 && errno != EINTR)
			return -2;
		if (!PQconsumeInput(c))
			return -2;
	}
	return 0;
}

/*
 * A statement that ran past its deadline: drop the connection (its state
 * is unknown; the caller reopens).  No PQcancel: it waits, without a
 * bound, for a server that may be the one not answering (a stopped or
 * hung host: tests/e2e_postgresql.py froze one and PQcancel hung the
 * request).  The server ends the statement itself: statement_timeout,
 * set from the same deadline (px_begin), and the lost connection.
 */
static void
give_up(struct inbox_pg *ib)
{
	ib->broken = 1;
}

/* What a failed result's SQLSTATE means to our callers: the ones a retry
 * a moment later may cure are BUSY. */
static enum inbox_status
classify(const PGresult *r)
{
	const char *code = r != NULL ? PQresultErrorField(r,
	    PG_DIAG_SQLSTATE) : NULL;

	if (code == NULL)
		return INBOX_FAILED;
	if (strcmp(code, "40001") == 0 || strcmp(code, "40P01") == 0 ||
	    strcmp(code, "55P03") == 0 || strcmp(code, "57014") == 0 ||
	    strcmp(code, "53300") == 0 || strncmp(code, "08", 2) == 0)
		return INBOX_BUSY;
	return INBOX_FAILED;
}

/* A result of what was sent: the first error is the one to report (in
 * *s and err, kept in *keep), else the last result (a simple query of
 * several statements) is kept. */
static void
take(struct inbox_pg *ib, PGresult *r, enum inbox_status *s, PGresult **keep,
    const char *what, struct buf *err)
{
	ExecStatusType st = PQresultStatus(r);

	if (*s == INBOX_OK && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		*s = classify(r);
		(void)px_fail(ib, err, *s, what, PQresultErrorMessage(r));
		PQclear(*keep);
		*keep = r;
	} else if (*s == INBOX_OK) {
		PQclear(*keep);
		*keep = r;
	} else {
		PQclear(r);
	}
}

/* Wait for the next result until `deadline`; NULL with *s set when the
 * wait failed (the connection is then dropped), NULL with *s unchanged at
 * the end of the statement's results. */
static PGresult *
next_result(struct inbox_pg *ib, int64_t deadline, enum inbox_status *s,
    const char *what, struct buf *err)
{
	int w;

	if ((w = wait_ready(ib->conn, deadline)) == -1) {
		give_up(ib);
		*s = px_fail(ib, err, INBOX_BUSY, what, "no answer from the "
		    "server in time (cancelled)");
		return NULL;
	}
	if (w == -2) {
		ib->broken = 1;
		*s = px_fail(ib, err, INBOX_FAILED, what,
		    PQerrorMessage(ib->conn));
		return NULL;
	}
	return PQgetResult(ib->conn);
}

/* After a statement's results: a lost connection is a failure. */
static enum inbox_status
settle(struct inbox_pg *ib, enum inbox_status s, const char *what,
    struct buf *err)
{
	if (PQstatus(ib->conn) != CONNECTION_OK) {
		ib->broken = 1;
		if (s == INBOX_OK)
			s = px_fail(ib, err, INBOX_FAILED, what,
			    PQerrorMessage(ib->conn));
	}
	return s;
}

/* The results of what was sent, until the last or `deadline`: the first
 * error, else the last result in *res (NULL: cleared). */
static enum inbox_status
collect(struct inbox_pg *ib, int64_t deadline, PGresult **res,
    const char *what, struct buf *err)
{
	PGresult *r, *keep = NULL;
	enum inbox_status s = INBOX_OK, w = INBOX_OK;

	while ((r = next_result(ib, deadline, &w, what, err)) != NULL)
		take(ib, r, &s, &keep, what, err);
	if (w != INBOX_OK) {
		PQclear(keep);
		return w;
	}
	s = settle(ib, s, what, err);
	if (s != INBOX_OK || res == NULL)
		PQclear(keep);
	else
		*res = keep;
	return s;
}

/* Is the connection usable?  INBOX_OK, or FAILED with why. */
static enum inbox_status
usable(struct inbox_pg *ib, const char *what, struct buf *err)
{
	if (ib->conn == NULL || ib->broken)
		return px_fail(ib, err, INBOX_FAILED, what, "the connection "
		    "was dropped after an earlier failure (reopening)");
	return INBOX_OK;
}

static int64_t
default_deadline(const struct inbox_pg *ib)
{
	if (ib->call_wait_ns > 0)
		return util_mono_ns() + ib->call_wait_ns;
	return util_mono_ns() + (ib->busy_timeout_ns > PX_DEFAULT_WAIT_NS ?
	    ib->busy_timeout_ns : PX_DEFAULT_WAIT_NS);
}

/*
 * Send one statement: `sql` with parameters p (the extended protocol, an
 * unnamed statement), or without (the simple protocol: several
 * statements allowed).  Nothing is prepared by name: a named statement
 * lives in a server session, and behind a pooler in transaction mode
 * (PgBouncer, Supabase's, Neon's) the next transaction may run in
 * another session, where it does not exist (docs/postgresql.md,
 * "Poolers").
 */
static enum inbox_status
send_one(struct inbox_pg *ib, const char *sql, const struct px_params *p,
    const char *what, struct buf *err)
{
	int ok;

	if (p != NULL)
		ok = PQsendQueryParams(ib->conn, sql, p->n, NULL, p->xv != NULL ?
		    p->xv : p->v, p->xv != NULL ? p->xlen : p->len,
		    p->xv != NULL ? p->xbin : p->bin, p->binary_results);
	else
		ok = PQsendQuery(ib->conn, sql);
	if (!ok) {
		ib->broken = PQstatus(ib->conn) != CONNECTION_OK;
		return px_fail(ib, err, INBOX_FAILED, what,
		    PQerrorMessage(ib->conn));
	}
	return INBOX_OK;
}

/* The statement that raises synchronous_commit for the current
 * transaction only (set_config's is_local: no session state, and no
 * WARNING outside a BEGIN, where SET LOCAL would give one). */
#define SYNC_ON_SQL	"SELECT set_config('synchronous_commit', 'on', true)"

static enum inbox_status pipeline(struct inbox_pg *ib, int n,
	    const char *const sql[], const struct px_params *const p[],
	    PGresult *res[], int64_t deadline, const char *what,
	    struct buf *err);

enum inbox_status
px_query(struct inbox_pg *ib, const char *sql, const struct px_params *p,
    int64_t deadline, PGresult **res, const char *what, struct buf *err)
{
	enum inbox_status s;

	if (res != NULL)
		*res = NULL;
	if ((s = usable(ib, what, err)) != INBOX_OK)
		return s;
	if (deadline == 0)
		deadline = default_deadline(ib);
	/* A statement that is its own transaction, where commits must be
	 * raised to synchronous_commit = on (make_synchronous): raised for
	 * that transaction, never the session, which a pooler shares. */
	if (ib->sync_weak && PQtransactionStatus(ib->conn) == PQTRANS_IDLE) {
		PGresult *two[2] = { NULL, NULL };
		const char *sqls[2] = { SYNC_ON_SQL, sql };
		const struct px_params *ps[2] = { NULL, p };
		struct buf text;

		if (p != NULL) {
			s = pipeline(ib, 2, sqls, ps, two, deadline, what, err);
			PQclear(two[0]);
			if (res != NULL)
				*res = two[1];
			else
				PQclear(two[1]);
			return s;
		}
		/* Several statements in one simple query are one implicit
		 * transaction block, where SET LOCAL holds (and a BEGIN in it
		 * makes it an explicit one, the same transaction). */
		buf_init(&text, SIZE_MAX / 2);
		if (buf_printf(&text, "SET LOCAL synchronous_commit = on; %s",
		    sql) == -1) {
			buf_free(&text);
			return px_fail(ib, err, INBOX_FAILED, what,
			    "out of memory");
		}
		ib->warned = 0;
		if ((s = send_one(ib, text.data, NULL, what, err)) == INBOX_OK)
			s = collect(ib, deadline, res, what, err);
		buf_free(&text);
		return s;
	}
	ib->warned = 0;
	if ((s = send_one(ib, sql, p, what, err)) != INBOX_OK)
		return s;
	return collect(ib, deadline, res, what, err);
}

enum inbox_status
px_pipeline(struct inbox_pg *ib, int n, const char *const sql[],
    const struct px_params *const p[], PGresult *res[], const char *what,
    struct buf *err)
{
	const char *sqls[PX_PIPELINE_MAX + 1];
	const struct px_params *ps[PX_PIPELINE_MAX + 1];
	PGresult *r[PX_PIPELINE_MAX + 1];
	enum inbox_status s;
	int i;

	if (n > PX_PIPELINE_MAX) {
		for (i = 0; i < n; i++)
			res[i] = NULL;
		return px_fail(ib, err, INBOX_FAILED, what, "a pipeline "
		    "longer than PX_PIPELINE_MAX (a bug)");
	}
	if (!ib->sync_weak)
		return pipeline(ib, n, sql, p, res, default_deadline(ib), what,
		    err);
	/* Its implicit transaction commits with synchronous_commit raised
	 * (px_query). */
	sqls[0] = SYNC_ON_SQL;
	ps[0] = NULL;
	for (i = 0; i < n; i++) {
		sqls[i + 1] = sql[i];
		ps[i + 1] = p[i];
	}
	s = pipeline(ib, n + 1, sqls, ps, r, default_deadline(ib), what, err);
	PQclear(r[0]);
	for (i = 0; i < n; i++)
		res[i] = r[i + 1];
	return s;
}

/* px_pipeline, until `deadline`. */
static enum inbox_status
pipeline(struct inbox_pg *ib, int n, const char *const sql[],
    const struct px_params *const p[], PGresult *res[], int64_t deadline,
    const char *what, struct buf *err)
{
	/* Every statement goes by the extended protocol, the only one a
	 * pipeline takes: none with parameters has an empty list. */
	static const struct px_params none;
	enum inbox_status s, w = INBOX_OK;
	PGresult *r;
	int i;

	for (i = 0; i < n; i++)
		res[i] = NULL;
	if ((s = usable(ib, what, err)) != INBOX_OK)
		return s;
	if (PQtransactionStatus(ib->conn) != PQTRANS_IDLE)
		return px_fail(ib, err, INBOX_FAILED, what, "a pipeline "
		    "inside a transaction (a bug)");
	ib->warned = 0;
	if (!PQenterPipelineMode(ib->conn)) {
		ib->broken = 1;
		return px_fail(ib, err, INBOX_FAILED, what,
		    PQerrorMessage(ib->conn));
	}
	for (i = 0; i < n && s == INBOX_OK; i++)
		s = send_one(ib, sql[i], p[i] != NULL ? p[i] : &none, what,
		    err);
	if (s == INBOX_OK && !PQpipelineSync(ib->conn)) {
		ib->broken = 1;
		s = px_fail(ib, err, INBOX_FAILED, what,
		    PQerrorMessage(ib->conn));
	}
	if (s != INBOX_OK) {	/* half sent: the connection's state is lost */
		ib->broken = 1;
		return s;
	}
	/* Each statement's results end with NULL; a statement after a failed
	 * one answers PGRES_PIPELINE_ABORTED (take: not the first error). */
	for (i = 0; i < n && w == INBOX_OK; i++)
		while ((r = next_result(ib, deadline, &w, what, err)) != NULL)
			take(ib, r, &s, &res[i], what, err);
	/* Then the sync, after the implicit transaction committed. */
	if (w == INBOX_OK && (r = next_result(ib, deadline, &w, what, err)) !=
	    NULL) {
		if (PQresultStatus(r) != PGRES_PIPELINE_SYNC && s == INBOX_OK)
			s = px_fail(ib, err, INBOX_FAILED, what, "no end of "
			    "the pipeline where one was due");
		PQclear(r);
	}
	if (w == INBOX_OK && !PQexitPipelineMode(ib->conn)) {
		ib->broken = 1;
		if (s == INBOX_OK)
			s = px_fail(ib, err, INBOX_FAILED, what,
			    PQerrorMessage(ib->conn));
	}
	if (w != INBOX_OK)
		s = w;
	s = settle(ib, s, what, err);
	if (s == INBOX_OK)
		s = px_warned(ib, what, err);
	if (s != INBOX_OK)
		for (i = 0; i < n; i++) {
			PQclear(res[i]);
			res[i] = NULL;
		}
	return s;
}

enum inbox_status
px_exec(struct inbox_pg *ib, const char *sql, const struct px_params *p,
    int64_t deadline, const char *what, struct buf *err)
{
	return px_query(ib, sql, p, deadline, NULL, what, err);
}

enum inbox_status
px_begin(struct inbox_pg *ib, int64_t deadline, struct buf *err)
{
	char sql[160];
	int64_t ms;

	if (deadline == 0)
		return px_exec(ib, "BEGIN", NULL, 0, "begin", err);
	/* The server gives up too (a lock held by another session, a slow
	 * disk), not only this side's wait: the transaction then ends there
	 * rather than holding its locks until the connection is noticed
	 * gone. */
	ms = (deadline - util_mono_ns()) / 1000000;
	if (ms < 1)
		ms = 1;
	snprintf(sql, sizeof sql, "BEGIN; SET LOCAL statement_timeout = %lld;"
	    " SET LOCAL lock_timeout = %lld", (long long)ms, (long long)ms);
	return px_exec(ib, sql, NULL, deadline, "begin", err);
}

enum inbox_status
px_commit(struct inbox_pg *ib, int64_t deadline, const char *what,
    struct buf *err)
{
	PGresult *r = NULL;
	enum inbox_status s;

	if ((s = px_query(ib, "COMMIT", NULL, deadline, &r, what,
	    err)) != INBOX_OK)
		return s;
	/* COMMIT of a transaction that failed answers ROLLBACK. */
	if (strcmp(PQcmdStatus(r), "COMMIT") != 0) {
		PQclear(r);
		return px_fail(ib, err, INBOX_FAILED, what, "rolled back");
	}
	PQclear(r);
	return px_warned(ib, what, err);
}

enum inbox_status
px_warned(struct inbox_pg *ib, const char *what, struct buf *err)
{
	char msg[400];

	/* A WARNING while committing: the wait for synchronous replication
	 * was cancelled (or the session is being terminated) -- committed
	 * here, maybe not on the standby.  Not acknowledged: the sender
	 * retries, and the retry's duplicate path waits again. */
	if (ib->warned) {
		snprintf(msg, sizeof msg, "the server warned while committing "
		    "(not acknowledged): %s", ib->warning);
		return px_fail(ib, err, INBOX_FAILED, what, msg);
	}
	return INBOX_OK;
}

void
px_rollback(struct inbox_pg *ib)
{
	struct buf err;

	if (ib->conn == NULL || ib->broken ||
	    PQtransactionStatus(ib->conn) == PQTRANS_IDLE)
		return;
	buf_init(&err, 1024);
	(void)px_exec(ib, "ROLLBACK", NULL, util_mono_ns() + 5000000000LL,
	    "rollback", &err);
	buf_free(&err);
}

#endif /* WEBHOOK_POSTGRESQL */
