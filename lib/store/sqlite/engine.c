/*
 * inbox: the SQLite implementation of store/inbox.h — the connection (open,
 * close, the schema and its migration), storing deliveries, reading rows,
 * and the helpers the other files of the implementation share
 * (store/sqlite/private.h lists them and the files).
 *
 * SQLite discipline (STYLE.md 11): bound parameters only, every rc checked
 * and reported with sqlite3_errmsg, BEGIN IMMEDIATE for every write
 * transaction (a deferred BEGIN that reads then writes fails at once with
 * SQLITE_BUSY when another connection wrote meanwhile), hot statements
 * prepared once per connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sqlite3.h>

#include "lib/store/sqlite/private.h"

/* schema.sql, linked in by store/schema.S (NUL-terminated). */
extern const char schema_sql[];

/*
 * Version 1 to 2: rows stored by the receiver wait outside the per-object
 * hold index until the drainer admits them (schema.sql, events_unadmitted).
 * The index definitions are schema.sql's, word for word (test_inbox checks
 * that a migrated inbox has the same schema as a new one).  Rows already
 * there are admitted (the default), as are those a version-1 receiver
 * still running stores: its INSERT leaves the column out.
 */
static const char migrate_v2[] =
    "ALTER TABLE events ADD COLUMN"
    " admitted INTEGER NOT NULL DEFAULT 1 CHECK (admitted IN (0, 1));"
    "DROP INDEX events_object_pending;"
    "CREATE INDEX events_object_pending ON events (object_type, object_id, sort_at, received_at)\n"
    "    WHERE state = 'pending' AND object_id IS NOT NULL AND admitted = 1;"
    "CREATE INDEX events_unadmitted ON events (admitted) WHERE admitted = 0;"
    "PRAGMA user_version = 2";

/*
 * Version 2 to 3: the history tables (docs/report.md "History (schema version 3)").  They are the tail of
 * schema.sql from this marker on, applied as they are, so a migrated inbox
 * has the same schema as a new one by construction; before them,
 * events.first_error (NULL for rows failed before).  Only the drainer
 * writes either; a version-2 receiver still running is unaffected.
 */
#define MIGRATE_V3_MARKER	"-- @@ version 3 @@"
/* Version 3 to 4, with migrate_v4 below: the table `copy` keeps in its
 * destination (schema.sql's tail from this marker on; only `webhook-drain
 * copy` writes it). */
#define MIGRATE_V4_MARKER	"-- @@ version 4 @@"

/*
 * Version 3 to 4, too: events.failing_since, when the event's failures since
 * it was received or requeued began, so that `status --max-failing`
 * counts from the first failure, not from the arrival (an event that
 * waited behind its object or a cron gap is not "failing" for that
 * time).  NULL for rows failed before: status falls back to their
 * arrival.  Only the drainer writes it.
 */
static const char migrate_v4[] =
    "ALTER TABLE events ADD COLUMN failing_since TEXT";

/*
 * Version 4 to 5: events.source (docs/DESIGN.md "Sources"), the column
 * as schema.sql declares it.  Rows already there, and those a version-4
 * receiver still running stores (its INSERT leaves the column out), are
 * the default source's: before sources, every event was.
 */
static const char migrate_v5[] =
    "ALTER TABLE events ADD COLUMN source TEXT NOT NULL DEFAULT 'default'";

static int	insert_one(struct inbox *, const struct inbox_delivery *, int *,
		    char [INBOX_SOURCE_MAX + 1]);

enum inbox_status
ib_fail(struct inbox *ib, struct buf *err, const char *what, int rc)
{
	buf_reset(err);
	(void)buf_printf(err, "%s: %s: %s", ib->path, what,
	    ib->db ? sqlite3_errmsg(ib->db) : sqlite3_errstr(rc));
	/* Extended result codes are on: compare the primary code. */
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		return INBOX_BUSY;
	return INBOX_FAILED;
}

int
ib_prepare(struct inbox *ib, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v3(ib->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    st, NULL);
}

int
ib_step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

int
ib_begin(struct inbox *ib)
{
	return ib_step_done(ib->begin);
}

int
ib_commit(struct inbox *ib)
{
	return ib_step_done(ib->commit);
}

void
ib_rollback(struct inbox *ib)
{
	if (!sqlite3_get_autocommit(ib->db))
		(void)ib_step_done(ib->rollback);
}

/* The end of a failed write transaction: finalize its statement (NULL is
 * fine), report the error (before the rollback can change it), roll back. */
enum inbox_status
ib_txn_fail(struct inbox *ib, sqlite3_stmt *st, struct buf *err, const char *what,
    int rc)
{
	enum inbox_status s;

	sqlite3_finalize(st);
	s = ib_fail(ib, err, what, rc);
	ib_rollback(ib);
	return s;
}

/* The end of a write transaction whose statement succeeded: finalize it,
 * commit; on failure, as txn_fail. */
enum inbox_status
ib_txn_commit(struct inbox *ib, sqlite3_stmt *st, struct buf *err, const char *what)
{
	int rc;

	sqlite3_finalize(st);
	if ((rc = ib_commit(ib)) != SQLITE_OK)
		return ib_txn_fail(ib, NULL, err, what, rc);
	return INBOX_OK;
}

/* Run a statement with no result rows (schema, PRAGMA). */
int
ib_exec(struct inbox *ib, const char *sql)
{
	return sqlite3_exec(ib->db, sql, NULL, NULL, NULL);
}

/* Run schema.sql from marker `from` up to marker `to` (a migration's
 * part of the file), in the caller's transaction. */
static int
migrate_tail(struct inbox *ib, const char *from, const char *to)
{
	const char *a = strstr(schema_sql, from), *b = strstr(schema_sql, to);
	char *part;
	int rc;

	if (a == NULL || b == NULL || b < a ||
	    (part = strndup(a, (size_t)(b - a))) == NULL)
		return SQLITE_NOMEM;
	rc = ib_exec(ib, part);
	free(part);
	return rc;
}

static int
apply_schema(struct inbox *ib, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, version = -1;

	if ((rc = ib_exec(ib, "BEGIN IMMEDIATE")) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db, "PRAGMA user_version", -1, &st,
	    NULL)) != SQLITE_OK)
		goto fail;
	if ((rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (version > inbox_schema_version()) {
		ib_rollback(ib);
		buf_reset(err);
		(void)buf_printf(err, "%s: schema version %d is newer than this "
		    "program's %d", ib->path, version, inbox_schema_version());
		return INBOX_FAILED;
	}
	if (version == 0) {
		if ((rc = ib_exec(ib, schema_sql)) != SQLITE_OK)
			goto fail;
		if ((rc = ib_exec(ib, "PRAGMA user_version = 5")) != SQLITE_OK)
			goto fail;
	} else if (version < inbox_schema_version()) {
		if (version == 1 && (rc = ib_exec(ib, migrate_v2)) != SQLITE_OK)
			goto fail;
		if (version <= 2 && ((rc = ib_exec(ib, "ALTER TABLE events ADD"
		    " COLUMN first_error TEXT")) != SQLITE_OK ||
		    (rc = migrate_tail(ib, MIGRATE_V3_MARKER,
		    MIGRATE_V4_MARKER)) != SQLITE_OK))
			goto fail;
		if (version <= 3 && ((rc = ib_exec(ib, migrate_v4)) !=
		    SQLITE_OK || (rc = ib_exec(ib, strstr(schema_sql,
		    MIGRATE_V4_MARKER))) != SQLITE_OK))
			goto fail;
		if ((rc = ib_exec(ib, migrate_v5)) != SQLITE_OK ||
		    (rc = ib_exec(ib, "PRAGMA user_version = 5")) != SQLITE_OK)
			goto fail;
	}
	if ((rc = ib_exec(ib, "COMMIT")) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return ib_txn_fail(ib, st, err, "applying the schema", rc);
}

static enum inbox_status
check_version(struct inbox *ib, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, version;

	if ((rc = sqlite3_prepare_v2(ib->db, "PRAGMA user_version", -1, &st,
	    NULL)) != SQLITE_OK || (rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return ib_fail(ib, err, "reading the schema version", rc);
	}
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > inbox_schema_version()) {
		buf_reset(err);
		(void)buf_printf(err, "%s: schema version %d is newer than this "
		    "program's %d", ib->path, version, inbox_schema_version());
		return INBOX_FAILED;
	}
	return INBOX_OK;
}

void
inbox_process_short_lived(void)
{
	/*
	 * Before SQLite initialises (sqlite3_config refuses afterwards; the
	 * calls then fail harmlessly).  A connection's lookaside buffers
	 * (120 KiB, every slot written when the connection opens) and the
	 * page cache's first bulk allocation cost page faults that a
	 * process storing one row never earns back, and memory statistics
	 * a lock per allocation nobody reads (docs/cgi.md).
	 */
	(void)sqlite3_config(SQLITE_CONFIG_LOOKASIDE, 0, 0);
	(void)sqlite3_config(SQLITE_CONFIG_PAGECACHE, (void *)NULL, 0, 0);
	(void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
}

/* Create the inbox file 0660 whatever the umask, when it is not there. */
static void
create_shared(const char *path)
{
	/* Two users share the inbox (the web server writes, cron drains).
	 * SQLite would create it 0644 & ~umask, and its -wal and -shm copy
	 * the database's mode, so the second user could only read.  An
	 * existing file is left as it is (`webhook-drain check` reports a
	 * mode that locks someone out). */
	int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);

	if (fd != -1) {
		(void)fchmod(fd, 0660);
		close(fd);
	}
}

/* The statements every connection keeps prepared. */
static int
prepare_hot(struct inbox *ib)
{
	int rc;

	if ((rc = ib_prepare(ib, "BEGIN IMMEDIATE", &ib->begin)) != SQLITE_OK ||
	    (rc = ib_prepare(ib, "COMMIT", &ib->commit)) != SQLITE_OK ||
	    (rc = ib_prepare(ib, "ROLLBACK", &ib->rollback)) != SQLITE_OK)
		return rc;
	return ib_prepare(ib,
	    "INSERT INTO events (webhook_id, body, received_at, webhook_timestamp,"
	    " secret_fp, type, created_at, created_at_raw, object_type, object_id,"
	    " updated_at, truncated, sort_at, next_at, admitted, source)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
	    " coalesce(?7, ?3), ?3, 0, ?13)"
	    " ON CONFLICT (webhook_id) DO NOTHING", &ib->insert);
}

enum inbox_status
inbox_sqlite_open(const char *given, const struct inbox_options *o, struct inbox **out,
    struct buf *err)
{
	struct inbox *ib;
	enum inbox_status s = INBOX_FAILED;
	char path[PATH_MAX];
	const char *vfs;
	int rc;

	*out = NULL;
	/* The file the document-root guard and `check` judged
	 * (util_path_inside), not SQLite's own reading of `..`. */
	if (util_path_resolve(given, path) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: cannot open: %s (its directory must "
		    "exist, named without a missing directory before a \"..\")",
		    given, strerror(errno));
		return INBOX_FAILED;
	}
	if ((ib = calloc(1, sizeof *ib)) == NULL ||
	    (ib->path = strdup(path)) == NULL) {
		free(ib);
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", path);
		return INBOX_FAILED;
	}
	ib->head.engine = &inbox_sqlite_engine;
	ib->busy_timeout_ns = o->busy_timeout_ms * 1000000;
	ib->busy_deadline = o->deadline;	/* for the open only (below) */
	create_shared(path);
	vfs = ib_wal_vfs(ib, path, o, err);
	rc = sqlite3_open_v2(path, &ib->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
	if (rc != SQLITE_OK) {
		s = ib_fail(ib, err, "cannot open", rc);
		goto out;
	}
	sqlite3_extended_result_codes(ib->db, 1);
	sqlite3_busy_handler(ib->db, ib_busy_wait, ib);
	ib->synchronous_full = o->synchronous == INBOX_SYNC_FULL;
	if (o->short_lived && !o->group_commit) {
		ib->short_lived = 1;
		(void)sqlite3_db_config(ib->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
		    1, NULL);
	}
	/* A database from a newer version of this program is left untouched
	 * (not even switched to WAL). */
	if ((s = check_version(ib, err)) != INBOX_OK ||
	    (s = ib_wal_setup(ib, path, o, err)) != INBOX_OK ||
	    (s = apply_schema(ib, err)) != INBOX_OK)
		goto out;
	if ((rc = prepare_hot(ib)) != SQLITE_OK) {
		s = ib_fail(ib, err, "preparing statements", rc);
		goto out;
	}
	ib_note_files(ib, path);
	ib->busy_deadline = 0;
	*out = ib;
	return INBOX_OK;
out:
	inbox_sqlite_close(ib);
	return s;
}

/* The engine's table (store/engine.h): every operation, in its order. */
const struct inbox_engine inbox_sqlite_engine = {
	.name = "sqlite",
	.open = inbox_sqlite_open,
	.close = inbox_sqlite_close,
	.maintain = inbox_sqlite_maintain,
	.upkeep_start = inbox_sqlite_upkeep_start,
	.upkeep_note = inbox_sqlite_upkeep_note,
	.upkeep_stop = inbox_sqlite_upkeep_stop,
	.store = inbox_sqlite_store,
	.store_batch = inbox_sqlite_store_batch,
	.cursor_get = inbox_sqlite_cursor_get,
	.next_due = inbox_sqlite_next_due,
	.claim = inbox_sqlite_claim,
	.finish_done = inbox_sqlite_finish_done,
	.finish_failed = inbox_sqlite_finish_failed,
	.finish_stale = inbox_sqlite_finish_stale,
	.is_stale = inbox_sqlite_is_stale,
	.list = inbox_sqlite_list,
	.count = inbox_sqlite_count,
	.requeue = inbox_sqlite_requeue,
	.forget = inbox_sqlite_forget,
	.purge = inbox_sqlite_purge,
	.status_report = inbox_sqlite_status_report,
	.count_sources = inbox_sqlite_count_sources,
	.probe_write = inbox_sqlite_probe_write,
	.probe_shared = inbox_sqlite_probe_shared,
	.server_facts = inbox_sqlite_server_facts,
	.note_lock = inbox_sqlite_note_lock,
	.note_run = inbox_sqlite_note_run,
	.history_add = inbox_sqlite_history_add,
	.history_read = inbox_sqlite_history_read,
	.runs_read = inbox_sqlite_runs_read,
	.queue_now = inbox_sqlite_queue_now,
	.dead_latest = inbox_sqlite_dead_latest,
	.blocked_list = inbox_sqlite_blocked_list,
	.table_read = inbox_sqlite_table_read,
	.table_merge = inbox_sqlite_table_merge,
	.table_holds = inbox_sqlite_table_holds,
};

void
inbox_sqlite_close(struct inbox *ib)
{
	if (ib == NULL)
		return;
	ib_wal_close(ib);
	sqlite3_finalize(ib->begin);
	sqlite3_finalize(ib->commit);
	sqlite3_finalize(ib->rollback);
	sqlite3_finalize(ib->insert);
	sqlite3_finalize(ib->admit);
	sqlite3_close(ib->db);
	ib_wal_release(ib);
	free(ib->probe);
	free(ib->path);
	free(ib);
}

/* Bind text or NULL (for "" too). */
int
ib_bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s == NULL || *s == '\0')
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

int
ib_bind_instant(sqlite3_stmt *st, int i, int64_t ns, char tmp[INSTANT_SIZE])
{
	if (instant_format(ns, tmp) == -1)
		return SQLITE_RANGE;
	return sqlite3_bind_text(st, i, tmp, -1, SQLITE_STATIC);
}

/* The answer when the files at the path are no longer the ones this
 * connection writes (ib_same_files). */
static enum inbox_status
moved(struct inbox *ib, struct buf *err)
{
	buf_reset(err);
	(void)buf_printf(err, "%s: the database or its -wal file was moved "
	    "or deleted while open (or replaced or truncated in place); not "
	    "acknowledging into it (reopening)", ib->path);
	return INBOX_FAILED;
}

static enum inbox_status
store_one(struct inbox *ib, const struct inbox_delivery *d, struct buf *err)
{
	int rc, changed = 0;
	char other[INBOX_SOURCE_MAX + 1];

	struct stat wal = { 0 };
	char walpath[PATH_MAX + 8];

	if (!store_source_ok(d, ib->path, err))
		return INBOX_FAILED;
	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	/* Plain CGI: the WAL this commit writes (under the write lock: it
	 * cannot be deleted meanwhile).  Once the commit synced it (and, the
	 * first time, its directory), the file is named for the next
	 * processes (store/sqlite/walsync.h, walsync_wal_named). */
	if (ib->short_lived && ib->role != NULL &&
	    (size_t)snprintf(walpath, sizeof walpath, "%s-wal", ib->path) <
	    sizeof walpath && stat(walpath, &wal) == -1)
		wal.st_ino = 0;
	if ((rc = insert_one(ib, d, &changed, other)) != SQLITE_OK)
		return ib_txn_fail(ib, NULL, err, "storing the event", rc);
	if (changed == -1) {	/* nothing was written */
		ib_rollback(ib);
		store_conflict(err, ib->path, d->webhook_id, store_source(d),
		    other);
		return INBOX_FAILED;
	}
	if ((rc = ib_commit(ib)) != SQLITE_OK)
		return ib_txn_fail(ib, NULL, err, "storing the event", rc);
	/* Never a 200 into a file that no longer holds the inbox (replaced,
	 * deleted, truncated in place): the caller reopens. */
	if (!ib_same_files(ib))
		return moved(ib, err);
	if (wal.st_ino != 0 && ib->synchronous_full && !walsync_wal_is_named(ib->role,
	    (uint64_t)wal.st_dev, (uint64_t)wal.st_ino))
		walsync_wal_named(ib->role, (uint64_t)wal.st_dev,
		    (uint64_t)wal.st_ino);
	/* Group commit: the sync happens outside the lock. */
	if (ib->group_commit && (rc = ib_make_durable(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "syncing the WAL", rc);
	return changed == 1 ? INBOX_OK : INBOX_DUPLICATE;
}

enum inbox_status
inbox_sqlite_store(struct inbox *ib, const struct inbox_delivery *d, struct buf *err)
{
	enum inbox_status s;

	ib->busy_deadline = d->deadline;
	s = store_one(ib, d, err);
	ib->busy_deadline = 0;
	return s;
}

char *
ib_col_dup(sqlite3_stmt *st, int i, int *oom)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	char *s;

	if (t == NULL)
		return NULL;
	if ((s = strdup((const char *)t)) == NULL)
		*oom = 1;
	return s;
}

void
ib_col_instant(sqlite3_stmt *st, int i, char out[INSTANT_SIZE])
{
	const unsigned char *t = sqlite3_column_text(st, i);

	out[0] = '\0';
	if (t != NULL && strlen((const char *)t) == INSTANT_LEN)
		memcpy(out, t, INSTANT_SIZE);
}

/* Fill *e from a row of EVENT_COLUMNS (+ body as column EVENT_NCOLUMNS when
 * with_body).  Returns 0, or -1 when out of memory. */
int
ib_read_event(sqlite3_stmt *st, struct inbox_event *e, int with_body)
{
	const unsigned char *state, *source;
	int oom = 0;

	inbox_event_free(e);
	e->webhook_id = ib_col_dup(st, 0, &oom);
	state = sqlite3_column_text(st, 1);
	snprintf(e->state, sizeof e->state, "%s", state ? (const char *)state : "");
	ib_col_instant(st, 2, e->received_at);
	e->webhook_timestamp = sqlite3_column_int64(st, 3);
	e->secret_fp = ib_col_dup(st, 4, &oom);
	e->type = ib_col_dup(st, 5, &oom);
	ib_col_instant(st, 6, e->created_at);
	e->created_at_raw = ib_col_dup(st, 7, &oom);
	e->object_type = ib_col_dup(st, 8, &oom);
	e->object_id = ib_col_dup(st, 9, &oom);
	ib_col_instant(st, 10, e->updated_at);
	e->truncated = sqlite3_column_int(st, 11);
	ib_col_instant(st, 12, e->sort_at);
	e->attempts = sqlite3_column_int64(st, 13);
	e->failures = sqlite3_column_int64(st, 14);
	ib_col_instant(st, 15, e->next_at);
	ib_col_instant(st, 16, e->finished_at);
	e->requeued = sqlite3_column_int(st, 17);
	e->last_error = ib_col_dup(st, 18, &oom);
	if (sqlite3_column_type(st, 19) != SQLITE_NULL &&
	    buf_append(&e->last_output, sqlite3_column_blob(st, 19),
	    (size_t)sqlite3_column_bytes(st, 19)) == -1)
		oom = 1;
	e->seq = sqlite3_column_int64(st, 20);
	e->has_body = sqlite3_column_int(st, 21);
	source = sqlite3_column_text(st, 22);
	snprintf(e->source, sizeof e->source, "%s", source != NULL ?
	    (const char *)source : INBOX_DEFAULT_SOURCE);
	if (with_body && e->has_body) {
		const void *b = sqlite3_column_blob(st, EVENT_NCOLUMNS);
		int n = sqlite3_column_bytes(st, EVENT_NCOLUMNS);
		if (buf_append(&e->body, b != NULL ? b : "", (size_t)n) == -1)
			oom = 1;
	}
	return oom ? -1 : 0;
}

/* Run an UPDATE/INSERT/DELETE with its parameters bound by the caller's
 * callback-free protocol: prepare, bind text/int params, step. */
int
ib_run(struct inbox *ib, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	(void)ib;
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * The source of the event stored under id, into other ("" when none):
 * asked only when an insert found the id there, so the insert of a new
 * event costs nothing more (docs/DESIGN.md "Sources").
 */
static int
stored_source(struct inbox *ib, const char *id,
    char other[INBOX_SOURCE_MAX + 1])
{
	sqlite3_stmt *st = NULL;
	const unsigned char *t;
	int rc;

	other[0] = '\0';
	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT source FROM events"
	    " WHERE webhook_id = ?1", -1, &st, NULL)) == SQLITE_OK &&
	    (rc = ib_bind_text(st, 1, id)) == SQLITE_OK &&
	    (rc = sqlite3_step(st)) == SQLITE_ROW) {
		t = sqlite3_column_text(st, 0);
		snprintf(other, INBOX_SOURCE_MAX + 1, "%s",
		    t != NULL ? (const char *)t : "");
	}
	sqlite3_finalize(st);
	return rc == SQLITE_ROW || rc == SQLITE_DONE ? SQLITE_OK : rc;
}

/*
 * Bind and run the prepared insert for one delivery, inside the caller's
 * transaction; *changed 1 (stored), 0 (a duplicate: there from the same
 * source) or -1 (there from another source, whose name is put in other;
 * nothing written).
 */
static int
insert_one(struct inbox *ib, const struct inbox_delivery *d, int *changed,
    char other[INBOX_SOURCE_MAX + 1])
{
	const struct event_fields *f = d->fields;
	sqlite3_stmt *st = ib->insert;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = ib_bind_text(st, 1, d->webhook_id)) != SQLITE_OK ||
	    (rc = sqlite3_bind_blob64(st, 2, d->body != NULL ? d->body : "",
	    d->body_len, SQLITE_STATIC)) != SQLITE_OK ||
	    /* received_at is taken inside the lock, so arrival order and
	     * commit order agree. */
	    (rc = ib_bind_instant(st, 3, util_now_ns(), now)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 4, d->webhook_timestamp)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 5, d->secret_fp)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 6, f->type)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 7, f->created_at)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 8, f->created_at_raw)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 9, f->object_type)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 10, f->object_id)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 11, f->updated_at)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int(st, 12, f->truncated)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 13, store_source(d), -1,
	    SQLITE_STATIC)) != SQLITE_OK)
		goto out;
	rc = sqlite3_step(st);
	*changed = sqlite3_changes(ib->db);
	rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
out:
	sqlite3_clear_bindings(st);
	sqlite3_reset(st);
	/* Under the write lock: the row found is the one the insert met. */
	if (rc == SQLITE_OK && *changed == 0 &&
	    (rc = stored_source(ib, d->webhook_id, other)) == SQLITE_OK &&
	    other[0] != '\0' && strcmp(other, store_source(d)) != 0)
		*changed = -1;
	return rc;
}

/* Record a cursor (inbox_batch) in the caller's write transaction. */
static int
set_cursor(struct inbox *ib, const struct inbox_batch *b)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db,
	    "INSERT INTO cursors (name, updated_after, page) VALUES (?1, ?2, ?3)"
	    " ON CONFLICT (name) DO UPDATE SET updated_after = excluded.updated_after,"
	    " page = excluded.page", -1, &st, NULL)) == SQLITE_OK &&
	    (rc = ib_bind_text(st, 1, b->cursor_name)) == SQLITE_OK &&
	    (rc = ib_bind_text(st, 2, b->cursor_updated_after)) == SQLITE_OK &&
	    (rc = ib_bind_text(st, 3, b->cursor_page)) == SQLITE_OK)
		rc = ib_run(ib, st);
	sqlite3_finalize(st);
	return rc;
}

static enum inbox_status
store_batch(struct inbox *ib, struct inbox_batch *b, struct buf *err)
{
	size_t i;
	int rc, changed, conflicts = 0;
	char other[INBOX_SOURCE_MAX + 1];

	b->stored = 0;
	for (i = 0; i < b->n; i++)
		if (!store_source_ok(&b->d[i], ib->path, err))
			return INBOX_FAILED;
	if ((rc = ib_begin(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "begin", rc);
	for (i = 0; i < b->n; i++) {
		if ((rc = insert_one(ib, &b->d[i], &changed, other)) != SQLITE_OK)
			goto fail;
		/* Another source's id: this delivery only is refused
		 * (inbox_batch.changed), unless the caller cannot be told. */
		if (changed == -1 && conflicts++ == 0)
			store_conflict(err, ib->path, b->d[i].webhook_id,
			    store_source(&b->d[i]), other);
		if (changed == -1 && b->changed == NULL) {
			ib_rollback(ib);
			b->stored = 0;
			return INBOX_FAILED;
		}
		if (changed == 1)
			b->stored++;
		if (b->changed != NULL)
			b->changed[i] = changed;
	}
	if (b->cursor_name != NULL && (rc = set_cursor(ib, b)) != SQLITE_OK)
		goto fail;
	if ((rc = ib_commit(ib)) != SQLITE_OK)
		goto fail;
	if (ib->group_commit && (rc = ib_make_durable(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "syncing the WAL", rc);
	if (!ib_same_files(ib))
		return moved(ib, err);
	return INBOX_OK;
fail:
	b->stored = 0;
	return ib_txn_fail(ib, NULL, err, "storing a batch", rc);
}

/* The batch waits for the lock no longer than its most pressed delivery
 * may: the requests queued behind it then still have their own time. */
enum inbox_status
inbox_sqlite_store_batch(struct inbox *ib, struct inbox_batch *b, struct buf *err)
{
	enum inbox_status s;
	size_t i;

	ib->busy_deadline = 0;
	for (i = 0; i < b->n; i++)
		if (b->d[i].deadline != 0 && (ib->busy_deadline == 0 ||
		    b->d[i].deadline < ib->busy_deadline))
			ib->busy_deadline = b->d[i].deadline;
	s = store_batch(ib, b, err);
	ib->busy_deadline = 0;
	return s;
}

enum inbox_status
inbox_sqlite_cursor_get(struct inbox *ib, const char *name, char **updated_after,
    char **page, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, oom = 0;

	*updated_after = *page = NULL;
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT updated_after, page FROM cursors WHERE name = ?1", -1, &st,
	    NULL)) != SQLITE_OK ||
	    (rc = ib_bind_text(st, 1, name)) != SQLITE_OK) {
		sqlite3_finalize(st);
		return ib_fail(ib, err, "reading a cursor", rc);
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*updated_after = ib_col_dup(st, 0, &oom);
		*page = ib_col_dup(st, 1, &oom);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return ib_fail(ib, err, "reading a cursor", rc);
	if (oom) {
		free(*updated_after);
		free(*page);
		*updated_after = *page = NULL;
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", ib->path);
		return INBOX_FAILED;
	}
	return INBOX_OK;
}
