/*
 * inbox_copy: the SQLite implementation of store/inbox.h's copying calls
 * (inbox_table_read, inbox_table_merge), in the portable form of the
 * tables that every engine reads and writes in the same columns
 * (inbox_table_info, lib/store/tables.c; docs/moving.md).
 *
 * The statements are put together from those constant column lists,
 * never from input; every value is a bound parameter.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "lib/store/sqlite/private.h"

/* "a, b, c" (sep ", ") or "a = ?1 AND b = ?2" (where) of the first n
 * columns; -1 when out of memory. */
static int
list_cols(struct buf *b, const struct inbox_table_info *ti, int n, int where)
{
	int i, r = 0;

	for (i = 0; i < n && r == 0; i++)
		r = where ? buf_printf(b, "%s%s = ?%d", i ? " AND " : "",
		    ti->cols[i], i + 1) : buf_printf(b, "%s%s", i ? ", " : "",
		    ti->cols[i]);
	return r;
}

static int
bind_value(sqlite3_stmt *st, int i, const struct inbox_value *v)
{
	switch (v->type) {
	case INBOX_V_INT:
		return sqlite3_bind_int64(st, i, v->i);
	case INBOX_V_TEXT:
		return sqlite3_bind_text64(st, i, v->p != NULL ? v->p : "",
		    v->len, SQLITE_TRANSIENT, SQLITE_UTF8);
	case INBOX_V_BLOB:
		return sqlite3_bind_blob64(st, i, v->p != NULL ? v->p : "",
		    v->len, SQLITE_TRANSIENT);
	default:
		return sqlite3_bind_null(st, i);
	}
}

/* Column i of the current row as a value pointing into the statement's
 * memory (valid until it steps, resets or finalizes). */
static void
col_value(sqlite3_stmt *st, int i, struct inbox_value *v)
{
	memset(v, 0, sizeof *v);
	switch (sqlite3_column_type(st, i)) {
	case SQLITE_INTEGER:
		v->type = INBOX_V_INT;
		v->i = sqlite3_column_int64(st, i);
		break;
	case SQLITE_BLOB:
		v->type = INBOX_V_BLOB;
		v->p = sqlite3_column_blob(st, i);
		v->len = (size_t)sqlite3_column_bytes(st, i);
		break;
	case SQLITE_NULL:
		v->type = INBOX_V_NULL;
		break;
	default:	/* TEXT (and REAL, which no column holds, as text) */
		v->type = INBOX_V_TEXT;
		v->p = sqlite3_column_text(st, i);
		v->len = (size_t)sqlite3_column_bytes(st, i);
		break;
	}
}

/* A page of rows copied out of the statement: values[n × ncols], their
 * bytes in one allocation each. */
struct page {
	struct inbox_value	*v;
	size_t			 n, cap;	/* rows */
};

static void
page_free(struct page *pg, int ncols)
{
	size_t i;

	for (i = 0; i < pg->n * (size_t)ncols; i++)
		free((void *)pg->v[i].p);
	free(pg->v);
	memset(pg, 0, sizeof *pg);
}

/* Copy the statement's current row into the page; *bytes grows by its
 * text and blob bytes.  -1 when out of memory. */
static int
page_add(struct page *pg, sqlite3_stmt *st, int ncols, size_t *bytes)
{
	struct inbox_value *row;
	void *copy;
	int i;

	if (pg->n == pg->cap) {
		size_t cap = pg->cap ? pg->cap * 2 : 16;
		struct inbox_value *v = realloc(pg->v, cap * (size_t)ncols *
		    sizeof *v);
		if (v == NULL)
			return -1;
		pg->v = v;
		pg->cap = cap;
	}
	row = &pg->v[pg->n * (size_t)ncols];
	for (i = 0; i < ncols; i++) {
		col_value(st, i, &row[i]);
		if (row[i].type != INBOX_V_TEXT && row[i].type != INBOX_V_BLOB)
			continue;
		/* One byte more, so text is NUL-terminated for whoever wants it. */
		if ((copy = malloc(row[i].len + 1)) == NULL) {
			for (; i < ncols; i++)
				row[i].p = NULL;
			pg->n++;
			return -1;
		}
		if (row[i].len > 0)
			memcpy(copy, row[i].p, row[i].len);
		((char *)copy)[row[i].len] = '\0';
		row[i].p = copy;
		*bytes += row[i].len;
	}
	pg->n++;
	return 0;
}

enum inbox_status
inbox_sqlite_table_read(struct inbox *ib, struct inbox_page *want,
    int (*fn)(const struct inbox_value *, size_t, void *), void *arg,
    struct buf *err)
{
	enum inbox_table t = want->t;
	const struct inbox_value *after = want->after;
	size_t max_rows = want->max_rows, max_bytes = want->max_bytes;
	size_t *n = &want->n;
	int *full = &want->full;
	const struct inbox_table_info *ti = inbox_table_info(t);
	struct page pg = { NULL, 0, 0 };
	sqlite3_stmt *st = NULL;
	enum inbox_status s = INBOX_OK;
	size_t bytes = 0;
	struct buf sql;
	int rc = SQLITE_OK, k;

	*n = 0;
	*full = 0;
	buf_init(&sql, 4096);
	if (ti == NULL || max_rows == 0) {
		buf_free(&sql);
		buf_reset(err);
		(void)buf_printf(err, "%s: reading a table: bad arguments",
		    ib->path);
		return INBOX_FAILED;
	}
	/* SELECT cols FROM t WHERE (keys) > (?1, …) ORDER BY keys LIMIT ?: the
	 * primary key's order, so the page is a range of its index. */
	if (buf_printf(&sql, "SELECT ") == -1 || list_cols(&sql, ti,
	    ti->ncols, 0) == -1 || buf_printf(&sql, " FROM %s", ti->name) == -1 ||
	    (after != NULL && (buf_printf(&sql, " WHERE (") == -1 ||
	    list_cols(&sql, ti, ti->nkey, 0) == -1 ||
	    buf_printf(&sql, ") > (") == -1)))
		rc = SQLITE_NOMEM;
	for (k = 0; after != NULL && rc == SQLITE_OK && k < ti->nkey; k++)
		if (buf_printf(&sql, "%s?%d", k ? ", " : "", k + 1) == -1)
			rc = SQLITE_NOMEM;
	if (rc == SQLITE_OK && ((after != NULL && buf_printf(&sql, ")") == -1) ||
	    buf_printf(&sql, " ORDER BY ") == -1 ||
	    list_cols(&sql, ti, ti->nkey, 0) == -1 ||
	    buf_printf(&sql, " LIMIT ?%d", ti->nkey + 1) == -1))
		rc = SQLITE_NOMEM;
	if (rc != SQLITE_OK ||
	    (rc = sqlite3_prepare_v2(ib->db, sql.data, -1, &st, NULL)) != SQLITE_OK)
		goto fail;
	for (k = 0; after != NULL && k < ti->nkey; k++)
		if ((rc = bind_value(st, k + 1, &after[k])) != SQLITE_OK)
			goto fail;
	if ((rc = sqlite3_bind_int64(st, ti->nkey + 1, (sqlite3_int64)max_rows))
	    != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (page_add(&pg, st, ti->ncols, &bytes) == -1) {
			rc = SQLITE_NOMEM;
			goto fail;
		}
		if (bytes >= max_bytes && pg.n < max_rows) {
			*full = 1;
			break;
		}
	}
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		goto fail;
	/* The statement ends here, and with it the read transaction: the
	 * caller may take its time over the rows. */
	sqlite3_finalize(st);
	st = NULL;
	*n = pg.n;
	if (pg.n > 0)
		(void)fn(pg.v, pg.n, arg);
	goto out;
fail:
	s = ib_fail(ib, err, "reading a table to copy", rc);
	sqlite3_finalize(st);
out:
	page_free(&pg, ti->ncols);
	buf_free(&sql);
	return s;
}

/* The statements one merge uses, prepared once per call. */
struct merge_stmts {
	sqlite3_stmt	*get, *put, *led_get, *led_put;
};

static int
merge_prepare(struct inbox *ib, const struct inbox_table_info *ti,
    struct merge_stmts *m)
{
	struct buf sql;
	int rc = SQLITE_NOMEM, k;

	buf_init(&sql, 8192);
	/* The destination's row with this key. */
	if (buf_printf(&sql, "SELECT ") == -1 || list_cols(&sql, ti, ti->ncols,
	    0) == -1 || buf_printf(&sql, " FROM %s WHERE ", ti->name) == -1 ||
	    list_cols(&sql, ti, ti->nkey, 1) == -1)
		goto out;
	if ((rc = sqlite3_prepare_v2(ib->db, sql.data, -1, &m->get, NULL)) !=
	    SQLITE_OK)
		goto out;
	/* Insert it, or replace every column of the row there (the rowid,
	 * hence the arrival order among equal instants, stays). */
	rc = SQLITE_NOMEM;
	buf_reset(&sql);
	if (buf_printf(&sql, "INSERT INTO %s (", ti->name) == -1 ||
	    list_cols(&sql, ti, ti->ncols, 0) == -1 ||
	    buf_printf(&sql, ") VALUES (") == -1)
		goto out;
	for (k = 0; k < ti->ncols; k++)
		if (buf_printf(&sql, "%s?%d", k ? ", " : "", k + 1) == -1)
			goto out;
	if (buf_printf(&sql, ") ON CONFLICT (") == -1 ||
	    list_cols(&sql, ti, ti->nkey, 0) == -1 ||
	    buf_printf(&sql, ") DO UPDATE SET ") == -1)
		goto out;
	for (k = ti->nkey; k < ti->ncols; k++)
		if (buf_printf(&sql, "%s%s = excluded.%s", k > ti->nkey ? ", " :
		    "", ti->cols[k], ti->cols[k]) == -1)
			goto out;
	if ((rc = sqlite3_prepare_v2(ib->db, sql.data, -1, &m->put, NULL)) !=
	    SQLITE_OK)
		goto out;
	if (ti->nkey == 1 && ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT digest FROM copied WHERE tbl = ?1 AND key = ?2", -1,
	    &m->led_get, NULL)) != SQLITE_OK || (rc = sqlite3_prepare_v2(ib->db,
	    "INSERT INTO copied (tbl, key, digest) VALUES (?1, ?2, ?3)"
	    " ON CONFLICT (tbl, key) DO UPDATE SET digest = excluded.digest",
	    -1, &m->led_put, NULL)) != SQLITE_OK))
		goto out;
out:
	buf_free(&sql);
	return rc;
}

static void
merge_finalize(struct merge_stmts *m)
{
	sqlite3_finalize(m->get);
	sqlite3_finalize(m->put);
	sqlite3_finalize(m->led_get);
	sqlite3_finalize(m->led_put);
}

/* One row: read what is there, ask fn, write what it decided.  *put 0/1. */
static int
merge_row(const struct inbox_table_info *ti, enum inbox_table t,
    struct merge_stmts *m, const struct inbox_value *in, inbox_merge_fn fn,
    void *arg, int dry, struct buf *ledger, int *put)
{
	struct inbox_value cur[TABLE_COLS_MAX], out[TABLE_COLS_MAX];
	const void *led = NULL;
	size_t led_len = 0;
	int rc, k, have_cur = 0, have_led = 0;
	enum inbox_merge d;

	*put = 0;
	for (k = 0; k < ti->nkey; k++)
		if ((rc = bind_value(m->get, k + 1, &in[k])) != SQLITE_OK)
			return rc;
	if ((rc = sqlite3_step(m->get)) == SQLITE_ROW) {
		have_cur = 1;
		for (k = 0; k < ti->ncols; k++)
			col_value(m->get, k, &cur[k]);
	} else if (rc != SQLITE_DONE) {
		goto out;
	}
	if (m->led_get != NULL) {
		if ((rc = sqlite3_bind_text(m->led_get, 1, ti->name, -1,
		    SQLITE_STATIC)) != SQLITE_OK ||
		    (rc = bind_value(m->led_get, 2, &in[0])) != SQLITE_OK)
			goto out;
		if ((rc = sqlite3_step(m->led_get)) == SQLITE_ROW) {
			have_led = 1;
			led = sqlite3_column_blob(m->led_get, 0);
			led_len = (size_t)sqlite3_column_bytes(m->led_get, 0);
		} else if (rc != SQLITE_DONE) {
			goto out;
		}
	}
	memcpy(out, in, (size_t)ti->ncols * sizeof *out);
	buf_reset(ledger);
	d = fn(t, in, have_cur ? cur : NULL, have_led ? (led != NULL ? led : "") :
	    NULL, led_len, out, ledger, arg);
	rc = SQLITE_OK;
	if (d != INBOX_MERGE_PUT)
		goto out;
	*put = 1;
	if (dry)
		goto out;
	/* Bound as copies (SQLITE_TRANSIENT) before anything is written:
	 * out may point into the rows just read. */
	for (k = 0; k < ti->ncols; k++)
		if ((rc = bind_value(m->put, k + 1, &out[k])) != SQLITE_OK)
			goto out;
	if (m->led_put != NULL && ledger->len > 0 &&
	    ((rc = sqlite3_bind_text(m->led_put, 1, ti->name, -1,
	    SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = bind_value(m->led_put, 2, &in[0])) != SQLITE_OK ||
	    (rc = sqlite3_bind_blob64(m->led_put, 3, ledger->data, ledger->len,
	    SQLITE_TRANSIENT)) != SQLITE_OK))
		goto out;
	sqlite3_reset(m->get);
	if (m->led_get != NULL)
		sqlite3_reset(m->led_get);
	if ((rc = ib_step_done(m->put)) == SQLITE_OK && m->led_put != NULL &&
	    ledger->len > 0)
		rc = ib_step_done(m->led_put);
out:
	sqlite3_reset(m->get);
	if (m->led_get != NULL)
		sqlite3_reset(m->led_get);
	sqlite3_clear_bindings(m->put);
	return rc;
}

enum inbox_status
inbox_sqlite_table_merge(struct inbox *ib, enum inbox_table t,
    const struct inbox_value *rows, size_t n, inbox_merge_fn fn, void *arg,
    int dry, int64_t *put, struct buf *err)
{
	const struct inbox_table_info *ti = inbox_table_info(t);
	struct merge_stmts m = { NULL, NULL, NULL, NULL };
	struct buf ledger;
	size_t i;
	int rc, one;

	*put = 0;
	if (ti == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "%s: merging: no such table", ib->path);
		return INBOX_FAILED;
	}
	buf_init(&ledger, 4096);
	/* A dry run reads in a read transaction and writes nothing. */
	if ((rc = dry ? ib_exec(ib, "BEGIN") : ib_begin(ib)) != SQLITE_OK) {
		buf_free(&ledger);
		return ib_fail(ib, err, "begin", rc);
	}
	if ((rc = merge_prepare(ib, ti, &m)) != SQLITE_OK)
		goto fail;
	for (i = 0; i < n; i++) {
		if ((rc = merge_row(ti, t, &m, &rows[i * (size_t)ti->ncols], fn,
		    arg, dry, &ledger, &one)) != SQLITE_OK)
			goto fail;
		*put += one;
	}
	merge_finalize(&m);
	buf_free(&ledger);
	if ((rc = dry ? ib_exec(ib, "COMMIT") : ib_commit(ib)) != SQLITE_OK)
		return ib_txn_fail(ib, NULL, err, "copying rows", rc);
	return INBOX_OK;
fail:
	merge_finalize(&m);
	buf_free(&ledger);
	*put = 0;
	return ib_txn_fail(ib, NULL, err, "copying rows", rc);
}

int
inbox_sqlite_table_holds(struct inbox *ib, enum inbox_table t,
    const struct inbox_value *row, struct buf *why)
{
	/* SQLite keeps any value in any column, as it is. */
	(void)ib, (void)t, (void)row, (void)why;
	return 1;
}
