/*
 * tables: the inbox's tables as every engine keeps them alike — the
 * schema's version, each table's columns in the portable form that
 * copying moves (docs/moving.md), an events row in memory (struct
 * inbox_event: init, free, copy), and the two things both engines say of
 * a row's source when storing.  They hold for any engine, so they live
 * here, below both, and neither engine calls into the other
 * (docs/DESIGN.md "The store contract": as SQLite's os.c holds what
 * os_unix.c and os_win.c share).  Nothing here touches a database.
 *
 * The public functions' contracts are in lib/store/inbox.h, those of
 * store_source_ok and store_conflict in lib/store/engine.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/store/engine.h"

/*
 * The schema's version: schema.sql's PRAGMA user_version and
 * schema-pg.sql's meta 'schema_version' row hold the same number.  Raised
 * with both schemas together, and with each engine's migration to it
 * (lib/store/sqlite/engine.c, lib/store/postgresql/engine.c).
 */
#define SCHEMA_VERSION	5

int
inbox_schema_version(void)
{
	return SCHEMA_VERSION;
}

/* ---- the portable form of each table ---------------------------------- */

/* Each table's columns, in the order both engines read and merge them;
 * the first nkey of each (tables[] below) are its key. */
static const char *const events_cols[] = {
	"webhook_id", "state", "body", "received_at", "webhook_timestamp",
	"secret_fp", "type", "created_at", "created_at_raw", "object_type",
	"object_id", "updated_at", "truncated", "sort_at", "attempts",
	"failures", "next_at", "finished_at", "requeued", "last_error",
	"last_output", "admitted", "first_error", "failing_since", "source",
};
static const char *const objects_cols[] = {
	"object_type", "object_id", "done_created_at", "done_updated_at",
	"done_at",
};
static const char *const cursors_cols[] = {
	"name", "updated_after", "page",
};
static const char *const history_cols[] = {
	"width_s", "bucket_s", "name", "label", "idx", "n",
};
static const char *const runs_cols[] = {
	"started_at", "finished_at", "claimed", "done", "failed", "retried",
	"dead", "stale", "refetched", "budget_hit", "result",
};

#define NCOLS(a)	((int)(sizeof a / sizeof a[0]))

/* The engines keep a row on the stack in TABLE_COLS_MAX values. */
_Static_assert(NCOLS(events_cols) <= TABLE_COLS_MAX &&
    NCOLS(objects_cols) <= TABLE_COLS_MAX &&
    NCOLS(cursors_cols) <= TABLE_COLS_MAX &&
    NCOLS(history_cols) <= TABLE_COLS_MAX &&
    NCOLS(runs_cols) <= TABLE_COLS_MAX, "a table wider than TABLE_COLS_MAX");

static const struct inbox_table_info tables[INBOX_NTABLES] = {
	[INBOX_EVENTS] = { "events", NCOLS(events_cols), 1, events_cols },
	[INBOX_OBJECTS] = { "objects", NCOLS(objects_cols), 2, objects_cols },
	[INBOX_CURSORS] = { "cursors", NCOLS(cursors_cols), 1, cursors_cols },
	[INBOX_HISTORY] = { "history", NCOLS(history_cols), 5, history_cols },
	[INBOX_RUNS] = { "runs", NCOLS(runs_cols), 1, runs_cols },
};

const struct inbox_table_info *
inbox_table_info(enum inbox_table t)
{
	return (unsigned)t < INBOX_NTABLES ? &tables[t] : NULL;
}

/* ---- an events row in memory ----------------------------------------- */

void
inbox_event_init(struct inbox_event *e)
{
	memset(e, 0, sizeof *e);
	buf_init(&e->body, SIZE_MAX / 2);
	buf_init(&e->last_output, SIZE_MAX / 2);
}

void
inbox_event_free(struct inbox_event *e)
{
	free(e->webhook_id);
	free(e->secret_fp);
	free(e->type);
	free(e->created_at_raw);
	free(e->object_type);
	free(e->object_id);
	free(e->last_error);
	buf_free(&e->body);
	buf_free(&e->last_output);
	inbox_event_init(e);
}

static int
dup_or_null(char **dst, const char *src)
{
	*dst = src != NULL ? strdup(src) : NULL;
	return src != NULL && *dst == NULL ? -1 : 0;
}

int
inbox_event_copy(struct inbox_event *dst, const struct inbox_event *src)
{
	int rc = 0;

	inbox_event_free(dst);
	*dst = *src;
	/* The copy owns nothing of src's yet. */
	dst->webhook_id = dst->secret_fp = dst->type = dst->created_at_raw =
	    dst->object_type = dst->object_id = dst->last_error = NULL;
	buf_init(&dst->body, SIZE_MAX / 2);
	buf_init(&dst->last_output, SIZE_MAX / 2);
	rc |= dup_or_null(&dst->webhook_id, src->webhook_id);
	rc |= dup_or_null(&dst->secret_fp, src->secret_fp);
	rc |= dup_or_null(&dst->type, src->type);
	rc |= dup_or_null(&dst->created_at_raw, src->created_at_raw);
	rc |= dup_or_null(&dst->object_type, src->object_type);
	rc |= dup_or_null(&dst->object_id, src->object_id);
	rc |= dup_or_null(&dst->last_error, src->last_error);
	if (src->body.len > 0)
		rc |= buf_append(&dst->body, src->body.data, src->body.len);
	if (src->last_output.len > 0)
		rc |= buf_append(&dst->last_output, src->last_output.data,
		    src->last_output.len);
	if (rc != 0) {
		inbox_event_free(dst);
		return -1;
	}
	return 0;
}

/* ---- a row's source, as both engines store it ------------------------ */

int
store_source_ok(const struct inbox_delivery *d, const char *where,
    struct buf *err)
{
	if (strlen(store_source(d)) <= INBOX_SOURCE_MAX)
		return 1;
	buf_reset(err);
	(void)buf_printf(err, "%s: storing the event: a source name longer "
	    "than %d bytes", where, INBOX_SOURCE_MAX);
	return 0;
}

void
store_conflict(struct buf *err, const char *where, const char *id,
    const char *src, const char *other)
{
	buf_reset(err);
	(void)buf_printf(err, "%s: storing the event: webhook-id %s of source "
	    "%s is already stored from source %s (not a duplicate: nothing "
	    "stored)", where, id, src, other);
}
