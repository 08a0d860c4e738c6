/*
 * inbox_pg_copy: the PostgreSQL implementation of store/inbox.h's copying calls
 * (inbox_table_read, inbox_table_merge, inbox_table_holds) over the
 * portable form of the tables that lib/store/sqlite/copy.c defines, with the
 * same semantics as the SQLite side (docs/moving.md): a page is one
 * statement (its own snapshot, over before the caller sees the rows); a
 * merge is one short transaction of a few statements whatever the batch
 * size (the rows there, their copy records, one upsert of the rows
 * written, one of their records).
 *
 * Values travel in binary form both ways (text and bytea as their bytes,
 * no hex, no NUL terminator needed), except integers, sent as decimal
 * text so that PostgreSQL picks the column's width.  The statements are
 * put together from the constant column lists, never from input; every
 * value is a bound parameter.
 */
#ifdef WEBHOOK_POSTGRESQL

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/store/postgresql/private.h"

/*
 * Each table's column types in schema-pg.sql, in inbox_table_info's
 * order: t text, b bytea, I bigint, i integer (32 bits).  The portable
 * form's types (store/inbox.h) are these: text TEXT, bytea BLOB, both integers
 * INT.  test_inbox_pg checks them against the server's catalog.
 */
static const char *const kinds[INBOX_NTABLES] = {
	"ttbtItttttttitIIttitbittt",	/* events */
	"ttttt",			/* objects */
	"ttt",				/* cursors */
	"IIttiI",			/* history */
	"ttIIIIIIIit",			/* runs */
};

/* PostgreSQL's type oids (catalog/pg_type_d.h, stable across versions). */
#define OID_BYTEA	17
#define OID_INT8	20
#define OID_INT2	21
#define OID_INT4	23

/* ---- parameters ----------------------------------------------------------- */

/* Parameters for a statement with many (px_params' xv arrays). */
struct xp {
	int		  n, cap;
	const char	**v;
	int		 *len, *bin;
	char		(*num)[24];	/* integers' decimal text */
};

static int
xp_init(struct xp *x, size_t cap)
{
	memset(x, 0, sizeof *x);
	if (cap > 65535)	/* the protocol's limit per statement */
		return -1;
	x->cap = (int)cap;
	x->v = calloc(cap + 1, sizeof *x->v);
	x->len = calloc(cap + 1, sizeof *x->len);
	x->bin = calloc(cap + 1, sizeof *x->bin);
	x->num = calloc(cap + 1, sizeof *x->num);
	return x->v && x->len && x->bin && x->num ? 0 : -1;
}

static void
xp_free(struct xp *x)
{
	free(x->v);
	free(x->len);
	free(x->bin);
	free(x->num);
	memset(x, 0, sizeof *x);
}

/* Add one value; the bytes of TEXT and BLOB are referred to, not copied. */
static void
xp_value(struct xp *x, const struct inbox_value *v)
{
	int k = x->n++;

	switch (v->type) {
	case INBOX_V_INT:
		snprintf(x->num[k], sizeof x->num[k], "%lld", (long long)v->i);
		x->v[k] = x->num[k];
		break;
	case INBOX_V_TEXT:
	case INBOX_V_BLOB:
		x->v[k] = v->p != NULL ? v->p : "";
		x->len[k] = (int)v->len;
		x->bin[k] = 1;
		break;
	default:
		x->v[k] = NULL;
		break;
	}
}

static void
xp_text(struct xp *x, const char *s)
{
	struct inbox_value v = { INBOX_V_TEXT, 0, s, strlen(s) };

	xp_value(x, &v);
}

static void
xp_params(const struct xp *x, struct px_params *p)
{
	memset(p, 0, sizeof *p);
	p->n = x->n;
	p->xv = x->v;
	p->xlen = x->len;
	p->xbin = x->bin;
	p->binary_results = 1;
}

/* ---- values out of results ------------------------------------------------ */

static int64_t
be_int(const unsigned char *p, int len)
{
	uint64_t u = 0;
	int k;

	for (k = 0; k < len; k++)
		u = u << 8 | p[k];
	/* Sign-extend a 2- or 4-byte integer. */
	if (len < 8 && len > 0 && (p[0] & 0x80))
		u |= ~(uint64_t)0 << (8 * len);
	return (int64_t)u;
}

/* Column col of a binary result as a value pointing into it (valid until
 * PQclear).  -1 for an integer of a width we do not know. */
static int
col_value(const PGresult *r, int row, int col, struct inbox_value *v)
{
	const unsigned char *p = (const unsigned char *)PQgetvalue(r, row, col);
	int len = PQgetlength(r, row, col);

	memset(v, 0, sizeof *v);
	if (PQgetisnull(r, row, col))
		return 0;
	switch (PQftype(r, col)) {
	case OID_INT8:
	case OID_INT4:
	case OID_INT2:
		if (len != 8 && len != 4 && len != 2)
			return -1;
		v->type = INBOX_V_INT;
		v->i = be_int(p, len);
		return 0;
	case OID_BYTEA:
		v->type = INBOX_V_BLOB;
		break;
	default:	/* text */
		v->type = INBOX_V_TEXT;
		break;
	}
	v->p = p;
	v->len = (size_t)len;
	return 0;
}

/* ---- SQL ------------------------------------------------------------------ */

/* "a, b, c" of the first n columns (prefix before each: "", "s."). */
static void
cols_sql(struct buf *b, const struct inbox_table_info *ti, int n)
{
	int i;

	for (i = 0; i < n; i++)
		(void)buf_printf(b, "%s%s", i ? ", " : "", ti->cols[i]);
}

/* "($k, $k+1, …)": one row of n parameters from number k on. */
static void
row_sql(struct buf *b, int n, int *k)
{
	int i;

	(void)buf_printf(b, "(");
	for (i = 0; i < n; i++)
		(void)buf_printf(b, "%s$%d", i ? ", " : "", ++*k);
	(void)buf_printf(b, ")");
}

static int
key_eq(const struct inbox_value *a, const struct inbox_value *b, int nkey)
{
	int k;

	for (k = 0; k < nkey; k++) {
		if (a[k].type != b[k].type)
			return 0;
		if (a[k].type == INBOX_V_INT ? a[k].i != b[k].i :
		    a[k].len != b[k].len || (a[k].len > 0 &&
		    memcmp(a[k].p, b[k].p, a[k].len) != 0))
			return 0;
	}
	return 1;
}

/* A statement's wait: busy_timeout, at least a minute (a copy is no
 * request with a provider waiting). */
static int64_t
copy_deadline(struct inbox_pg *ib)
{
	return util_mono_ns() + (ib->busy_timeout_ns > PX_DEFAULT_WAIT_NS ?
	    ib->busy_timeout_ns : PX_DEFAULT_WAIT_NS);
}

/* ---- reading a page --------------------------------------------------------- */

enum inbox_status
inbox_pg_table_read(struct inbox *pib, struct inbox_page *want,
    int (*fn)(const struct inbox_value *, size_t, void *), void *arg,
    struct buf *err)
{
	enum inbox_table t = want->t;
	const struct inbox_value *after = want->after;
	size_t max_rows = want->max_rows, max_bytes = want->max_bytes;
	size_t *n = &want->n;
	int *full = &want->full;
	struct inbox_pg *ib = PG(pib);
	const struct inbox_table_info *ti = inbox_table_info(t);
	struct inbox_value *rows = NULL, last;
	struct px_params p;
	PGresult *r = NULL;
	enum inbox_status s;
	struct buf sql;
	struct xp x;
	int i, k, got;

	*n = 0;
	*full = 0;
	if (ti == NULL || max_rows == 0 || max_rows > INT32_MAX)
		return px_fail(ib, err, INBOX_FAILED, "reading a table",
		    "bad arguments");
	buf_init(&sql, SIZE_MAX / 2);
	if (xp_init(&x, (size_t)ti->nkey + 2) == -1) {
		xp_free(&x);
		return px_fail(ib, err, INBOX_FAILED, "reading a table",
		    "out of memory");
	}
	/*
	 * The next max_rows rows in key order (an index range), then of those
	 * the ones that start before max_bytes of text and bytea: a running
	 * sum over the page only (octet_length reads no body).
	 */
	(void)buf_printf(&sql, "SELECT ");
	cols_sql(&sql, ti, ti->ncols);
	(void)buf_printf(&sql, ", run FROM (SELECT *, sum(own) OVER (ORDER BY ");
	cols_sql(&sql, ti, ti->nkey);
	(void)buf_printf(&sql, " ROWS UNBOUNDED PRECEDING) AS run FROM (SELECT ");
	cols_sql(&sql, ti, ti->ncols);
	(void)buf_printf(&sql, ", 0");
	for (i = 0; i < ti->ncols; i++)
		if (kinds[t][i] == 't' || kinds[t][i] == 'b')
			(void)buf_printf(&sql, " + coalesce(octet_length(%s), 0)",
			    ti->cols[i]);
	(void)buf_printf(&sql, " AS own FROM %s", ti->name);
	k = 0;
	if (after != NULL) {
		(void)buf_printf(&sql, " WHERE (");
		cols_sql(&sql, ti, ti->nkey);
		(void)buf_printf(&sql, ") > ");
		row_sql(&sql, ti->nkey, &k);
		for (i = 0; i < ti->nkey; i++)
			xp_value(&x, &after[i]);
	}
	(void)buf_printf(&sql, " ORDER BY ");
	cols_sql(&sql, ti, ti->nkey);
	(void)buf_printf(&sql, " LIMIT $%d) a) w WHERE run - own < $%d ORDER BY ",
	    k + 1, k + 2);
	cols_sql(&sql, ti, ti->nkey);
	snprintf(x.num[x.n], sizeof x.num[x.n], "%zu", max_rows);
	x.v[x.n] = x.num[x.n];
	x.n++;
	snprintf(x.num[x.n], sizeof x.num[x.n], "%lld", (long long)(max_bytes >
	    INT64_MAX ? INT64_MAX : (int64_t)max_bytes));
	x.v[x.n] = x.num[x.n];
	x.n++;
	xp_params(&x, &p);
	if (sql.data == NULL || sql.len + 1 >= SIZE_MAX / 2)
		s = px_fail(ib, err, INBOX_FAILED, "reading a table",
		    "out of memory");
	else
		s = px_query(ib, sql.data, &p, copy_deadline(ib), &r,
		    "reading a table to copy", err);
	xp_free(&x);
	buf_free(&sql);
	if (s != INBOX_OK)
		return s;
	/* The statement is over, and with it its snapshot. */
	got = PQntuples(r);
	if (got > 0 && (rows = calloc((size_t)got * (size_t)ti->ncols,
	    sizeof *rows)) == NULL) {
		PQclear(r);
		return px_fail(ib, err, INBOX_FAILED, "reading a table",
		    "out of memory");
	}
	for (i = 0; i < got; i++)
		for (k = 0; k < ti->ncols; k++)
			if (col_value(r, i, k, &rows[i * ti->ncols + k]) == -1) {
				free(rows);
				PQclear(r);
				return px_fail(ib, err, INBOX_FAILED,
				    "reading a table", "an integer of an "
				    "unknown width");
			}
	*n = (size_t)got;
	if (got > 0 && (size_t)got < max_rows &&
	    col_value(r, got - 1, ti->ncols, &last) == 0 &&
	    last.type == INBOX_V_INT && last.i >= 0 &&
	    (uint64_t)last.i >= (uint64_t)max_bytes)
		*full = 1;
	if (got > 0)
		(void)fn(rows, (size_t)got, arg);
	free(rows);
	PQclear(r);
	return INBOX_OK;
}

/* ---- merging a batch -------------------------------------------------------- */

/* What one merge holds: the rows there, their records, what to write. */
struct merge {
	const struct inbox_table_info *ti;
	PGresult		*cur, *led;
	struct inbox_value	*curv;		/* cur's rows as values */
	/* The rows and records to write, their bytes copied into `bytes`
	 * (the callback's `out` may point at memory of its own, valid only
	 * until it returns); offsets until the statement is put together. */
	struct inbox_value	*outv;
	size_t			*off;
	size_t			 nout;
	struct buf		 bytes;
	size_t			*led_off, *led_len;
	int			*led_row;	/* which outv row a record is of */
	size_t			 nled;
};

static void
merge_free(struct merge *m)
{
	PQclear(m->cur);
	PQclear(m->led);
	free(m->curv);
	free(m->outv);
	free(m->off);
	free(m->led_off);
	free(m->led_len);
	free(m->led_row);
	buf_free(&m->bytes);
}

/* The rows the destination has of this batch (and, for a one-column key,
 * their copy records), in one statement each. */
static enum inbox_status
merge_fetch(struct inbox_pg *ib, enum inbox_table t, struct merge *m,
    const struct inbox_value *rows, size_t n, int dry, int64_t deadline,
    struct buf *err)
{
	const struct inbox_table_info *ti = m->ti;
	struct px_params p;
	enum inbox_status s;
	struct buf sql;
	struct xp x;
	size_t i;
	int k = 0, c;

	buf_init(&sql, SIZE_MAX / 2);
	if (xp_init(&x, n * (size_t)ti->nkey + 1) == -1) {
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
		goto out;
	}
	(void)buf_printf(&sql, "SELECT ");
	cols_sql(&sql, ti, ti->ncols);
	(void)buf_printf(&sql, " FROM %s WHERE (", ti->name);
	cols_sql(&sql, ti, ti->nkey);
	(void)buf_printf(&sql, ") IN (");
	for (i = 0; i < n; i++) {
		(void)buf_printf(&sql, "%s", i ? ", " : "");
		row_sql(&sql, ti->nkey, &k);
		for (c = 0; c < ti->nkey; c++)
			xp_value(&x, &rows[i * (size_t)ti->ncols + c]);
	}
	/* Locked: no drainer changes them between the decision and the
	 * write (and under REPEATABLE READ one that did since the snapshot
	 * fails the batch, BUSY, rather than be overwritten). */
	(void)buf_printf(&sql, ")%s", dry ? "" : " FOR UPDATE");
	xp_params(&x, &p);
	if (sql.data == NULL)
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
	else
		s = px_query(ib, sql.data, &p, deadline, &m->cur,
		    "reading the destination's rows", err);
	if (s != INBOX_OK || ti->nkey != 1)
		goto out;
	x.n = 0;
	k = 1;
	buf_reset(&sql);
	(void)buf_printf(&sql, "SELECT key, digest FROM copied WHERE tbl = $1"
	    " AND key IN (");
	xp_text(&x, ti->name);
	for (i = 0; i < n; i++) {
		(void)buf_printf(&sql, "%s$%d", i ? ", " : "", ++k);
		xp_value(&x, &rows[i * (size_t)ti->ncols]);
	}
	(void)buf_printf(&sql, ")");
	xp_params(&x, &p);
	if (sql.data == NULL)
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
	else
		s = px_query(ib, sql.data, &p, deadline, &m->led,
		    "reading the copy records", err);
out:
	(void)t;
	xp_free(&x);
	buf_free(&sql);
	return s;
}

/* Keep a copy of `out` (a row to write) and its record. */
static int
merge_keep(struct merge *m, const struct inbox_value *out,
    const struct buf *ledger)
{
	const struct inbox_table_info *ti = m->ti;
	size_t base = m->nout * (size_t)ti->ncols;
	int k;

	for (k = 0; k < ti->ncols; k++) {
		m->outv[base + k] = out[k];
		m->outv[base + k].p = NULL;
		m->off[base + k] = m->bytes.len;
		if ((out[k].type == INBOX_V_TEXT || out[k].type == INBOX_V_BLOB) &&
		    out[k].len > 0 && buf_append(&m->bytes, out[k].p,
		    out[k].len) == -1)
			return -1;
	}
	if (ti->nkey == 1 && ledger->len > 0) {
		m->led_row[m->nled] = (int)m->nout;
		m->led_off[m->nled] = m->bytes.len;
		m->led_len[m->nled] = ledger->len;
		if (buf_append(&m->bytes, ledger->data, ledger->len) == -1)
			return -1;
		m->nled++;
	}
	m->nout++;
	return 0;
}

/* Write the rows kept (one upsert) and their records (another). */
static enum inbox_status
merge_write(struct inbox_pg *ib, struct merge *m, int64_t deadline,
    struct buf *err)
{
	const struct inbox_table_info *ti = m->ti;
	struct px_params p;
	enum inbox_status s = INBOX_OK;
	struct inbox_value v;
	struct buf sql;
	struct xp x;
	size_t i;
	int k = 0, c;

	for (i = 0; i < m->nout * (size_t)ti->ncols; i++)
		m->outv[i].p = m->bytes.data != NULL ? m->bytes.data + m->off[i] :
		    "";
	buf_init(&sql, SIZE_MAX / 2);
	if (xp_init(&x, m->nout * (size_t)ti->ncols + 1) == -1) {
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
		goto out;
	}
	/* Every column of the row there replaced; events.seq, the arrival
	 * order among equal instants, stays (as SQLite's rowid). */
	(void)buf_printf(&sql, "INSERT INTO %s (", ti->name);
	cols_sql(&sql, ti, ti->ncols);
	(void)buf_printf(&sql, ") VALUES ");
	for (i = 0; i < m->nout; i++) {
		(void)buf_printf(&sql, "%s", i ? ", " : "");
		row_sql(&sql, ti->ncols, &k);
		for (c = 0; c < ti->ncols; c++)
			xp_value(&x, &m->outv[i * (size_t)ti->ncols + c]);
	}
	(void)buf_printf(&sql, " ON CONFLICT (");
	cols_sql(&sql, ti, ti->nkey);
	(void)buf_printf(&sql, ") DO UPDATE SET ");
	for (c = ti->nkey; c < ti->ncols; c++)
		(void)buf_printf(&sql, "%s%s = excluded.%s", c > ti->nkey ? ", " :
		    "", ti->cols[c], ti->cols[c]);
	xp_params(&x, &p);
	if (sql.data == NULL) {
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
		goto out;
	}
	if ((s = px_exec(ib, sql.data, &p, deadline, "copying rows", err)) !=
	    INBOX_OK || m->nled == 0)
		goto out;
	x.n = 0;
	k = 0;
	buf_reset(&sql);
	(void)buf_printf(&sql, "INSERT INTO copied (tbl, key, digest) VALUES ");
	for (i = 0; i < m->nled; i++) {
		(void)buf_printf(&sql, "%s($%d, $%d, $%d)", i ? ", " : "", k + 1,
		    k + 2, k + 3);
		k += 3;
		xp_text(&x, ti->name);
		xp_value(&x, &m->outv[(size_t)m->led_row[i] * (size_t)ti->ncols]);
		v.type = INBOX_V_BLOB;
		v.p = m->bytes.data + m->led_off[i];
		v.len = m->led_len[i];
		xp_value(&x, &v);
	}
	(void)buf_printf(&sql, " ON CONFLICT (tbl, key) DO UPDATE SET"
	    " digest = excluded.digest");
	xp_params(&x, &p);
	if (sql.data == NULL)
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
	else
		s = px_exec(ib, sql.data, &p, deadline, "recording the copy",
		    err);
out:
	xp_free(&x);
	buf_free(&sql);
	return s;
}

/* Ask fn about each row; keep what it decides to write.  -1 out of memory. */
static int
merge_decide(struct merge *m, enum inbox_table t,
    const struct inbox_value *rows, size_t n, inbox_merge_fn fn, void *arg,
    int dry, int64_t *put)
{
	const struct inbox_table_info *ti = m->ti;
	struct inbox_value out[TABLE_COLS_MAX], key;
	const struct inbox_value *in, *cur;
	const void *led;
	size_t i, led_len;
	struct buf ledger;
	int j, ncur = PQntuples(m->cur), rc = 0;
	enum inbox_merge d;

	buf_init(&ledger, 4096);
	for (i = 0; i < n && rc == 0; i++) {
		in = &rows[i * (size_t)ti->ncols];
		cur = NULL;
		for (j = 0; j < ncur && cur == NULL; j++)
			if (key_eq(in, &m->curv[j * ti->ncols], ti->nkey))
				cur = &m->curv[j * ti->ncols];
		led = NULL;
		led_len = 0;
		for (j = 0; m->led != NULL && j < PQntuples(m->led) && led == NULL;
		    j++)
			if (col_value(m->led, j, 0, &key) == 0 &&
			    key_eq(in, &key, 1)) {
				led = PQgetvalue(m->led, j, 1);
				led_len = (size_t)PQgetlength(m->led, j, 1);
			}
		memcpy(out, in, (size_t)ti->ncols * sizeof *out);
		buf_reset(&ledger);
		d = fn(t, in, cur, led, led_len, out, &ledger, arg);
		if (d != INBOX_MERGE_PUT)
			continue;
		(*put)++;
		if (!dry && merge_keep(m, out, &ledger) == -1)
			rc = -1;
	}
	buf_free(&ledger);
	return rc;
}

enum inbox_status
inbox_pg_table_merge(struct inbox *pib, enum inbox_table t,
    const struct inbox_value *rows, size_t n, inbox_merge_fn fn, void *arg,
    int dry, int64_t *put, struct buf *err)
{
	struct inbox_pg *ib = PG(pib);
	struct merge m;
	enum inbox_status s;
	int64_t deadline = copy_deadline(ib);
	size_t cells;
	int i, k;

	*put = 0;
	memset(&m, 0, sizeof m);
	if ((m.ti = inbox_table_info(t)) == NULL || n == 0 || n > 2000)
		return px_fail(ib, err, INBOX_FAILED, "merging", n == 0 ?
		    "nothing to merge" : "bad arguments");
	buf_init(&m.bytes, SIZE_MAX / 2);
	cells = n * (size_t)m.ti->ncols;
	m.outv = calloc(cells, sizeof *m.outv);
	m.off = calloc(cells, sizeof *m.off);
	m.led_off = calloc(n, sizeof *m.led_off);
	m.led_len = calloc(n, sizeof *m.led_len);
	m.led_row = calloc(n, sizeof *m.led_row);
	if (m.outv == NULL || m.off == NULL || m.led_off == NULL ||
	    m.led_len == NULL || m.led_row == NULL) {
		merge_free(&m);
		return px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
	}
	/* One transaction; REPEATABLE READ, so that a row a receiver or a
	 * drainer wrote after this snapshot is no silent overwrite but a
	 * serialization failure (BUSY: the batch again). */
	if ((s = px_begin(ib, deadline, err)) != INBOX_OK)
		goto out;
	if ((s = px_exec(ib, "SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
	    NULL, deadline, "merging", err)) != INBOX_OK ||
	    (s = merge_fetch(ib, t, &m, rows, n, dry, deadline, err)) !=
	    INBOX_OK)
		goto fail;
	if ((PQntuples(m.cur) > 0 &&
	    (m.curv = calloc((size_t)PQntuples(m.cur) * (size_t)m.ti->ncols,
	    sizeof *m.curv)) == NULL)) {
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
		goto fail;
	}
	for (i = 0; i < PQntuples(m.cur); i++)
		for (k = 0; k < m.ti->ncols; k++)
			if (col_value(m.cur, i, k, &m.curv[i * m.ti->ncols + k]) ==
			    -1) {
				s = px_fail(ib, err, INBOX_FAILED, "merging",
				    "an integer of an unknown width");
				goto fail;
			}
	if (merge_decide(&m, t, rows, n, fn, arg, dry, put) == -1) {
		s = px_fail(ib, err, INBOX_FAILED, "merging", "out of memory");
		goto fail;
	}
	if (dry) {
		px_rollback(ib);
		goto out;
	}
	if (m.nout > 0 && (s = merge_write(ib, &m, deadline, err)) != INBOX_OK)
		goto fail;
	if ((s = px_commit(ib, deadline, "copying rows", err)) == INBOX_OK)
		goto out;
fail:
	px_rollback(ib);
	*put = 0;
out:
	merge_free(&m);
	return s;
}

/* ---- what a PostgreSQL inbox can hold --------------------------------------- */

int
inbox_pg_table_holds(struct inbox *ib, enum inbox_table t,
    const struct inbox_value *row, struct buf *why)
{
	const struct inbox_table_info *ti = inbox_table_info(t);
	const struct inbox_value *v;
	char kind;
	int k;

	(void)ib;
	if (ti == NULL)
		return 0;
	for (k = 0; k < ti->ncols; k++) {
		v = &row[k];
		kind = kinds[t][k];
		if (v->type == INBOX_V_NULL)
			continue;
		if ((kind == 't' && v->type != INBOX_V_TEXT) ||
		    (kind == 'b' && v->type != INBOX_V_BLOB) ||
		    ((kind == 'i' || kind == 'I') && v->type != INBOX_V_INT)) {
			buf_reset(why);
			(void)buf_printf(why, "%s is not of its column's type",
			    ti->cols[k]);
			return 0;
		}
		if (kind == 'i' && (v->i < INT32_MIN || v->i > INT32_MAX)) {
			buf_reset(why);
			(void)buf_printf(why, "%s is out of a 32-bit integer's "
			    "range", ti->cols[k]);
			return 0;
		}
		if (kind == 't' && !px_utf8_valid(v->p, v->len)) {
			buf_reset(why);
			(void)buf_printf(why, "%s is not valid UTF-8 (or holds a "
			    "NUL byte), which PostgreSQL text cannot hold",
			    ti->cols[k]);
			return 0;
		}
	}
	return 1;
}

#endif /* WEBHOOK_POSTGRESQL */
