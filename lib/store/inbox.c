/*
 * inbox: the store's public functions (lib/store/inbox.h), each one call
 * through the engine table (lib/store/engine.h) of the inbox it is given;
 * and the one place that tells, from the config's `database`, which
 * engine keeps it: a libpq URI (postgresql://, postgres://) names a
 * PostgreSQL server, anything else a SQLite file.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/store/engine.h"

static const struct inbox_engine *
engine(const struct inbox *ib)
{
	return ((const struct inbox_head *)(const void *)ib)->engine;
}

const char *
inbox_backends(void)
{
#ifdef WEBHOOK_POSTGRESQL
	return "sqlite, postgresql";
#else
	return "sqlite";
#endif
}

/* The engine for `database`, or NULL (with the reason in err) when this
 * binary was built without it. */
static const struct inbox_engine *
engine_for(const char *database, struct buf *err)
{
	if (!!inbox_is_file(database))
		return &inbox_sqlite_engine;
#ifdef WEBHOOK_POSTGRESQL
	(void)err;
	return &inbox_pg_engine;
#else
	buf_reset(err);
	(void)buf_printf(err, "database: a PostgreSQL inbox, but this "
	    "binary was built without PostgreSQL (backends: %s)",
	    inbox_backends());
	return NULL;
#endif
}

enum inbox_status
inbox_open(const char *database, const struct inbox_options *o,
    struct inbox **out, struct buf *err)
{
	const struct inbox_engine *en;

	*out = NULL;
	/* The config refuses it already (lib/program/config.c); a database
	 * named elsewhere (copy's destination) is judged here the same way. */
	if (inbox_is_file(database) && util_is_conninfo(database)) {
		buf_reset(err);
		(void)buf_printf(err, "database: a libpq key=value connection "
		    "string, which is not taken: write a PostgreSQL inbox as a "
		    "URI, postgresql://user@host/dbname");
		return INBOX_FAILED;
	}
	if ((en = engine_for(database, err)) == NULL)
		return INBOX_FAILED;
	return en->open(database, o, out, err);
}

void
inbox_close(struct inbox *ib)
{
	if (ib != NULL)
		engine(ib)->close(ib);
}

void
inbox_database_name(const char *database, char *out, size_t outsz)
{
#ifdef WEBHOOK_POSTGRESQL
	char *s;

	if (!inbox_is_file(database)) {
		s = inbox_pg_redacted(database);
		snprintf(out, outsz, "%s", s != NULL ? s :
		    "postgresql (an invalid URI)");
		free(s);
		return;
	}
#endif
	snprintf(out, outsz, "%s", database);
}

const char *
inbox_backend_name(const struct inbox *ib)
{
	return engine(ib)->name;
}

enum inbox_status
inbox_upkeep_start(const char *database, const struct inbox_options *o,
    struct inbox_upkeep **out, struct buf *err)
{
	const struct inbox_engine *en;

	*out = NULL;
	if ((en = engine_for(database, err)) == NULL)
		return INBOX_FAILED;
	if (en->upkeep_start == NULL)
		return INBOX_OK;
	return en->upkeep_start(database, o, out, err);
}

static const struct inbox_engine *
upkeep_engine(const struct inbox_upkeep *up)
{
	return ((const struct inbox_head *)(const void *)up)->engine;
}

void
inbox_upkeep_note(struct inbox_upkeep *up, const struct inbox *writer)
{
	if (up != NULL && writer != NULL)
		upkeep_engine(up)->upkeep_note(up, writer);
}

void
inbox_upkeep_stop(struct inbox_upkeep *up)
{
	if (up != NULL)
		upkeep_engine(up)->upkeep_stop(up);
}

/* ---- the connection ------------------------------------------------- */

enum inbox_status
inbox_maintain(struct inbox *ib, struct buf *err)
{
	return engine(ib)->maintain(ib, err);
}

/* ---- receiving ------------------------------------------------------ */

enum inbox_status
inbox_store(struct inbox *ib, const struct inbox_delivery *d, struct buf *err)
{
	return engine(ib)->store(ib, d, err);
}

enum inbox_status
inbox_store_batch(struct inbox *ib, struct inbox_batch *b, struct buf *err)
{
	return engine(ib)->store_batch(ib, b, err);
}

enum inbox_status
inbox_cursor_get(struct inbox *ib, const char *name, char **updated_after,
    char **page, struct buf *err)
{
	return engine(ib)->cursor_get(ib, name, updated_after, page, err);
}

/* ---- the drainer: order, claims, verdicts --------------------------- */

enum inbox_status
inbox_next_due(struct inbox *ib, struct inbox_cursor *cur, int64_t now_ns,
    int64_t settle_ns, int64_t future_ns, struct inbox_event *e,
    struct buf *err)
{
	return engine(ib)->next_due(ib, cur, now_ns,
	    settle_ns, future_ns, e, err);
}

enum inbox_status
inbox_claim(struct inbox *ib, struct inbox_event *e, int64_t now_ns,
    enum inbox_claim *claim, struct buf *err)
{
	return engine(ib)->claim(ib, e, now_ns, claim, err);
}

enum inbox_status
inbox_finish_done(struct inbox *ib, const struct inbox_event *e,
    int64_t now_ns, const void *output, size_t output_len, struct buf *err)
{
	return engine(ib)->finish_done(ib, e, now_ns, output, output_len, err);
}

enum inbox_status
inbox_finish_failed(struct inbox *ib, const struct inbox_event *e,
    struct inbox_failure *f, struct buf *err)
{
	return engine(ib)->finish_failed(ib, e, f, err);
}

enum inbox_status
inbox_finish_stale(struct inbox *ib, const struct inbox_event *e,
    int64_t now_ns, struct buf *err)
{
	return engine(ib)->finish_stale(ib, e, now_ns, err);
}

enum inbox_status
inbox_is_stale(struct inbox *ib, const struct inbox_event *e, int *stale,
    struct buf *err)
{
	return engine(ib)->is_stale(ib, e, stale, err);
}

/* ---- the operator's commands ---------------------------------------- */

enum inbox_status
inbox_list(struct inbox *ib, const struct inbox_filter *f, int with_body,
    int (*fn)(const struct inbox_event *, void *), void *arg, struct buf *err)
{
	return engine(ib)->list(ib, f, with_body, fn, arg, err);
}

enum inbox_status
inbox_count(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	return engine(ib)->count(ib, f, n, err);
}

enum inbox_status
inbox_requeue(struct inbox *ib, const struct inbox_filter *f, int64_t now_ns,
    int64_t *n, struct buf *err)
{
	return engine(ib)->requeue(ib, f, now_ns, n, err);
}

enum inbox_status
inbox_forget(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	return engine(ib)->forget(ib, f, n, err);
}

enum inbox_status
inbox_purge(struct inbox *ib, int64_t now_ns, int64_t retention_ns,
    int64_t *bodies, int64_t *rows, struct buf *err)
{
	return engine(ib)->purge(ib, now_ns, retention_ns, bodies, rows, err);
}

enum inbox_status
inbox_status_report(struct inbox *ib, struct inbox_status_report *r,
    struct buf *err)
{
	return engine(ib)->status_report(ib, r, err);
}

enum inbox_status
inbox_count_sources(struct inbox *ib,
    int (*fn)(const struct inbox_source_count *, void *), void *arg,
    struct buf *err)
{
	return engine(ib)->count_sources(ib, fn, arg, err);
}

enum inbox_status
inbox_probe_write(struct inbox *ib, struct buf *err)
{
	return engine(ib)->probe_write(ib, err);
}

enum inbox_status
inbox_probe_shared(struct inbox *ib, struct buf *what, struct buf *err)
{
	return engine(ib)->probe_shared(ib, what, err);
}

enum inbox_status
inbox_server_facts(struct inbox *ib, struct inbox_server_facts *f,
    struct buf *err)
{
	return engine(ib)->server_facts(ib, f, err);
}

enum inbox_status
inbox_note_lock(struct inbox *ib, int64_t now_ns, int busy, struct buf *err)
{
	return engine(ib)->note_lock(ib, now_ns, busy, err);
}

enum inbox_status
inbox_note_run(struct inbox *ib, int64_t now_ns, const char *outcome,
    struct buf *err)
{
	return engine(ib)->note_run(ib, now_ns, outcome, err);
}

/* ---- history, for the report ---------------------------------------- */

enum inbox_status
inbox_history_add(struct inbox *ib, const struct history_delta *d, size_t n,
    const struct inbox_run_record *run, int64_t now_ns, struct buf *err)
{
	return engine(ib)->history_add(ib, d, n, run, now_ns, err);
}

enum inbox_status
inbox_history_read(struct inbox *ib, int64_t since_s,
    int (*fn)(const struct inbox_history_row *, void *), void *arg,
    struct buf *err)
{
	return engine(ib)->history_read(ib, since_s, fn, arg, err);
}

enum inbox_status
inbox_runs_read(struct inbox *ib, int64_t since_ns,
    int (*fn)(const struct inbox_run_record *, void *), void *arg,
    struct buf *err)
{
	return engine(ib)->runs_read(ib, since_ns, fn, arg, err);
}

enum inbox_status
inbox_queue_now(struct inbox *ib, int64_t now_ns, struct inbox_queue *q,
    struct buf *err)
{
	return engine(ib)->queue_now(ib, now_ns, q, err);
}

enum inbox_status
inbox_dead_latest(struct inbox *ib, int64_t limit,
    int (*fn)(const struct inbox_event *, const char *, void *), void *arg,
    struct buf *err)
{
	return engine(ib)->dead_latest(ib, limit, fn, arg, err);
}

enum inbox_status
inbox_blocked_list(struct inbox *ib, int64_t limit,
    int (*fn)(const struct inbox_blocked *, void *), void *arg,
    struct buf *err)
{
	return engine(ib)->blocked_list(ib, limit, fn, arg, err);
}

/* ---- copying between inboxes ---------------------------------------- */

enum inbox_status
inbox_table_read(struct inbox *ib, struct inbox_page *pg,
    int (*fn)(const struct inbox_value *, size_t, void *), void *arg,
    struct buf *err)
{
	return engine(ib)->table_read(ib, pg, fn, arg, err);
}

enum inbox_status
inbox_table_merge(struct inbox *ib, enum inbox_table t,
    const struct inbox_value *rows, size_t n, inbox_merge_fn fn, void *arg,
    int dry, int64_t *put, struct buf *err)
{
	return engine(ib)->table_merge(ib, t, rows, n, fn, arg, dry, put, err);
}

int
inbox_table_holds(struct inbox *ib, enum inbox_table t,
    const struct inbox_value *row, struct buf *why)
{
	return engine(ib)->table_holds(ib, t, row, why);
}
