/*
 * engine: what a store engine (SQLite, PostgreSQL) provides, as one table
 * of operations that each engine fills in by hand (lib/store/sqlite/
 * engine.c, lib/store/postgresql/engine.c), in the manner of SQLite's
 * sqlite3_io_methods or curl's Curl_handler.  lib/store/inbox.c writes
 * out every public function of lib/store/inbox.h as one call through the
 * table of the inbox it is given.
 * PRIVATE: include it only from lib/store/.
 *
 * Every engine's connection struct begins with a struct inbox_head, so
 * lib/store/inbox.c reaches the table from an opaque struct inbox *
 * without knowing which engine it is.  Each operation has the contract of
 * the public function of the same name in lib/store/inbox.h; a member is
 * never NULL, except upkeep_start (below).  A function added to inbox.h
 * is added here, to both engines' tables and to inbox.c; a member an
 * engine's table leaves out is NULL, which tests/test_inbox.c
 * (engine_tables_are_complete) catches.
 */
#ifndef WEBHOOK_STORE_ENGINE_H
#define WEBHOOK_STORE_ENGINE_H

#include "lib/store/history.h"
#include "lib/store/inbox.h"

/* ---- sizes both engines keep alike ---- */

/* Rows admitted (counted as received, made visible to the hold rule) per
 * transaction: the receivers wait for the write lock while one runs (a
 * few ms), and get it between two. */
#define ADMIT_CHUNK	500
/* How often inbox_next_due admits what arrived meanwhile: the hold check
 * reads every row not yet admitted, so their number must stay small. */
#define ADMIT_EVERY_NS	1000000000LL
/* Largest handler output tail kept for `show`, bytes. */
#define OUTPUT_KEEP	4096
/*
 * Events read per page by inbox_list before any is handed to the caller
 * (fewer with bodies: each may be max_body).  A page is read, its
 * statement ended — and with it the read transaction — and only then
 * handed out: a reader blocked on its output (`webhook-drain list | less`
 * left open) must not pin a snapshot, or SQLite's WAL grows without bound.
 */
#define LIST_PAGE		256
#define LIST_PAGE_BODIES	4
/* Columns of the widest table in its portable form (events: inbox_table_info,
 * lib/store/tables.c, which checks every table against it): copy keeps a
 * row on the stack in this many values. */
#define TABLE_COLS_MAX	25

/* A delivery's source as stored: d->source, or INBOX_DEFAULT_SOURCE for
 * NULL or "" (lib/store/inbox.h). */
static inline const char *
store_source(const struct inbox_delivery *d)
{
	return d->source != NULL && *d->source != '\0' ? d->source :
	    INBOX_DEFAULT_SOURCE;
}

/*
 * Is the delivery's source a name the store takes (at most
 * INBOX_SOURCE_MAX bytes: inbox_event.source holds it)?  1, or 0 with
 * "where: storing the event: ..." in err.  The config checks names
 * first; this keeps a caller's slip from being truncated on the way back.
 */
int	store_source_ok(const struct inbox_delivery *d, const char *where,
	    struct buf *err);

/*
 * The message of a webhook-id already stored from another source
 * (lib/store/inbox.h, inbox_store): "where: storing the event:
 * webhook-id ID of source SRC is already stored from source OTHER", in
 * err.  Both engines say it alike.
 *
 * These two, like the engine-neutral public functions (the schema's
 * version, inbox_table_info, inbox_event_init/_free/_copy), are defined
 * in lib/store/tables.c: no engine calls into another.
 */
void	store_conflict(struct buf *err, const char *where, const char *id,
	    const char *src, const char *other);

struct inbox_engine {
	const char	*name;		/* "sqlite", "postgresql" */

	/* ---- the connection ---- */
	enum inbox_status (*open)(const char *database,
	    const struct inbox_options *o, struct inbox **out, struct buf *err);
	void		(*close)(struct inbox *ib);
	enum inbox_status (*maintain)(struct inbox *ib, struct buf *err);
	/* Background upkeep for a long-lived writer of many threads (the
	 * receiver's committer; lib/store/inbox.h, inbox_upkeep_start).
	 * The engine's struct inbox_upkeep begins with a struct inbox_head,
	 * as its struct inbox does.  upkeep_start NULL: this engine needs
	 * none (a database server keeps itself), and the other two are NULL
	 * too. */
	enum inbox_status (*upkeep_start)(const char *database,
	    const struct inbox_options *o, struct inbox_upkeep **out,
	    struct buf *err);
	void		(*upkeep_note)(struct inbox_upkeep *up,
	    const struct inbox *writer);
	void		(*upkeep_stop)(struct inbox_upkeep *up);

	/* ---- receiving ---- */
	enum inbox_status (*store)(struct inbox *ib,
	    const struct inbox_delivery *d, struct buf *err);
	enum inbox_status (*store_batch)(struct inbox *ib, struct inbox_batch *b,
	    struct buf *err);
	enum inbox_status (*cursor_get)(struct inbox *ib, const char *name,
	    char **updated_after, char **page, struct buf *err);

	/* ---- the drainer: order, claims, verdicts ---- */
	enum inbox_status (*next_due)(struct inbox *ib, struct inbox_cursor *cur,
	    int64_t now_ns, int64_t settle_ns, int64_t future_ns,
	    struct inbox_event *e, struct buf *err);
	enum inbox_status (*claim)(struct inbox *ib, struct inbox_event *e,
	    int64_t now_ns, enum inbox_claim *claim, struct buf *err);
	enum inbox_status (*finish_done)(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, const void *output,
	    size_t output_len, struct buf *err);
	enum inbox_status (*finish_failed)(struct inbox *ib,
	    const struct inbox_event *e, struct inbox_failure *f,
	    struct buf *err);
	enum inbox_status (*finish_stale)(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, struct buf *err);
	enum inbox_status (*is_stale)(struct inbox *ib,
	    const struct inbox_event *e, int *stale, struct buf *err);

	/* ---- the operator's commands ---- */
	enum inbox_status (*list)(struct inbox *ib, const struct inbox_filter *f,
	    int with_body, int (*fn)(const struct inbox_event *, void *),
	    void *arg, struct buf *err);
	enum inbox_status (*count)(struct inbox *ib, const struct inbox_filter *f,
	    int64_t *n, struct buf *err);
	enum inbox_status (*requeue)(struct inbox *ib,
	    const struct inbox_filter *f, int64_t now_ns, int64_t *n,
	    struct buf *err);
	enum inbox_status (*forget)(struct inbox *ib, const struct inbox_filter *f,
	    int64_t *n, struct buf *err);
	enum inbox_status (*purge)(struct inbox *ib, int64_t now_ns,
	    int64_t retention_ns, int64_t *bodies, int64_t *rows,
	    struct buf *err);
	enum inbox_status (*status_report)(struct inbox *ib,
	    struct inbox_status_report *r, struct buf *err);
	enum inbox_status (*count_sources)(struct inbox *ib,
	    int (*fn)(const struct inbox_source_count *, void *), void *arg,
	    struct buf *err);
	enum inbox_status (*probe_write)(struct inbox *ib, struct buf *err);
	enum inbox_status (*probe_shared)(struct inbox *ib, struct buf *what,
	    struct buf *err);
	enum inbox_status (*server_facts)(struct inbox *ib,
	    struct inbox_server_facts *f, struct buf *err);
	enum inbox_status (*note_lock)(struct inbox *ib, int64_t now_ns, int busy,
	    struct buf *err);
	enum inbox_status (*note_run)(struct inbox *ib, int64_t now_ns,
	    const char *outcome, struct buf *err);

	/* ---- history, for the report ---- */
	enum inbox_status (*history_add)(struct inbox *ib,
	    const struct history_delta *d, size_t n,
	    const struct inbox_run_record *run, int64_t now_ns, struct buf *err);
	enum inbox_status (*history_read)(struct inbox *ib, int64_t since_s,
	    int (*fn)(const struct inbox_history_row *, void *), void *arg,
	    struct buf *err);
	enum inbox_status (*runs_read)(struct inbox *ib, int64_t since_ns,
	    int (*fn)(const struct inbox_run_record *, void *), void *arg,
	    struct buf *err);
	enum inbox_status (*queue_now)(struct inbox *ib, int64_t now_ns,
	    struct inbox_queue *q, struct buf *err);
	enum inbox_status (*dead_latest)(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_event *, const char *, void *),
	    void *arg, struct buf *err);
	enum inbox_status (*blocked_list)(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_blocked *, void *), void *arg,
	    struct buf *err);

	/* ---- copying between inboxes (docs/moving.md) ---- */
	enum inbox_status (*table_read)(struct inbox *ib, struct inbox_page *pg,
	    int (*fn)(const struct inbox_value *, size_t, void *), void *arg,
	    struct buf *err);
	enum inbox_status (*table_merge)(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *rows, size_t n, inbox_merge_fn fn,
	    void *arg, int dry, int64_t *put, struct buf *err);
	int		(*table_holds)(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *row, struct buf *why);
};

/* The first member of every engine's struct inbox. */
struct inbox_head {
	const struct inbox_engine *engine;
};

extern const struct inbox_engine inbox_sqlite_engine;
#ifdef WEBHOOK_POSTGRESQL
extern const struct inbox_engine inbox_pg_engine;
/* A libpq URI as messages name it, without a password (malloc'd; NULL
 * when it does not parse or out of memory). */
char	*inbox_pg_redacted(const char *uri);
#endif

#endif
