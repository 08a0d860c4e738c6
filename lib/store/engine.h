/*
 * inbox_backend: how the public functions of store/inbox.h reach the
 * implementation an inbox was opened with (SQLite, PostgreSQL).
 * PRIVATE: include it only from lib/inbox*.c.
 *
 * Every implementation's connection struct begins with a pointer to its
 * backend (struct inbox_head), so lib/store/inbox.c can dispatch on an
 * opaque struct inbox * without knowing which kind it is.  The list of
 * operations is written once, as INBOX_OPS below, and expanded three
 * times (the table's members, each backend's prototypes, the dispatching
 * functions): a function added to store/inbox.h is added here once, and a
 * backend that lacks it does not link.
 */
#ifndef WEBHOOK_INBOX_BACKEND_H
#define WEBHOOK_INBOX_BACKEND_H

#include "lib/report/history.h"
#include "lib/store/inbox.h"

/*
 * X(return type, name, (parameters), (arguments)) for every store/inbox.h
 * function that takes an open inbox (inbox_open chooses the backend;
 * inbox_close, inbox_event_* and inbox_schema_version are not here).
 */
#define INBOX_OPS(X) \
	X(enum inbox_status, maintain, (struct inbox *ib, struct buf *err), (ib, err)) \
	X(enum inbox_status, store, (struct inbox *ib, const struct inbox_delivery *d, \
	    struct buf *err), (ib, d, err)) \
	X(enum inbox_status, next_due, (struct inbox *ib, struct inbox_cursor *cur, \
	    int64_t now_ns, int64_t settle_ns, int64_t future_ns, \
	    struct inbox_event *e, struct buf *err), \
	    (ib, cur, now_ns, settle_ns, future_ns, e, err)) \
	X(enum inbox_status, claim, (struct inbox *ib, struct inbox_event *e, \
	    int64_t now_ns, enum inbox_claim *claim, struct buf *err), \
	    (ib, e, now_ns, claim, err)) \
	X(enum inbox_status, finish_done, (struct inbox *ib, \
	    const struct inbox_event *e, int64_t now_ns, const void *output, \
	    size_t output_len, struct buf *err), \
	    (ib, e, now_ns, output, output_len, err)) \
	X(enum inbox_status, finish_failed, (struct inbox *ib, \
	    const struct inbox_event *e, int64_t now_ns, int64_t retry_ns, \
	    int64_t max_attempts, const char *error, const void *output, \
	    size_t output_len, int *dead, struct buf *err), \
	    (ib, e, now_ns, retry_ns, max_attempts, error, output, output_len, \
	    dead, err)) \
	X(enum inbox_status, finish_stale, (struct inbox *ib, \
	    const struct inbox_event *e, int64_t now_ns, struct buf *err), \
	    (ib, e, now_ns, err)) \
	X(enum inbox_status, store_batch, (struct inbox *ib, struct inbox_batch *b, \
	    struct buf *err), (ib, b, err)) \
	X(enum inbox_status, cursor_get, (struct inbox *ib, const char *name, \
	    char **updated_after, char **page, struct buf *err), \
	    (ib, name, updated_after, page, err)) \
	X(enum inbox_status, list, (struct inbox *ib, const struct inbox_filter *f, \
	    int with_body, int (*fn)(const struct inbox_event *, void *), \
	    void *arg, struct buf *err), (ib, f, with_body, fn, arg, err)) \
	X(enum inbox_status, count, (struct inbox *ib, const struct inbox_filter *f, \
	    int64_t *n, struct buf *err), (ib, f, n, err)) \
	X(enum inbox_status, requeue, (struct inbox *ib, \
	    const struct inbox_filter *f, int64_t now_ns, int64_t *n, \
	    struct buf *err), (ib, f, now_ns, n, err)) \
	X(enum inbox_status, forget, (struct inbox *ib, const struct inbox_filter *f, \
	    int64_t *n, struct buf *err), (ib, f, n, err)) \
	X(enum inbox_status, is_stale, (struct inbox *ib, const struct inbox_event *e, \
	    int *stale, struct buf *err), (ib, e, stale, err)) \
	X(enum inbox_status, purge, (struct inbox *ib, int64_t now_ns, \
	    int64_t retention_ns, int64_t *bodies, int64_t *rows, \
	    struct buf *err), (ib, now_ns, retention_ns, bodies, rows, err)) \
	X(enum inbox_status, status_report, (struct inbox *ib, \
	    struct inbox_status_report *r, struct buf *err), (ib, r, err)) \
	X(enum inbox_status, probe_write, (struct inbox *ib, struct buf *err), \
	    (ib, err)) \
	X(enum inbox_status, note_lock, (struct inbox *ib, int64_t now_ns, int busy, \
	    struct buf *err), (ib, now_ns, busy, err)) \
	X(enum inbox_status, note_run, (struct inbox *ib, int64_t now_ns, \
	    const char *outcome, struct buf *err), (ib, now_ns, outcome, err)) \
	X(enum inbox_status, history_add, (struct inbox *ib, \
	    const struct history_delta *d, size_t n, \
	    const struct inbox_run_record *run, int64_t now_ns, struct buf *err), \
	    (ib, d, n, run, now_ns, err)) \
	X(enum inbox_status, history_read, (struct inbox *ib, int64_t since_s, \
	    int (*fn)(const struct inbox_history_row *, void *), void *arg, \
	    struct buf *err), (ib, since_s, fn, arg, err)) \
	X(enum inbox_status, runs_read, (struct inbox *ib, int64_t since_ns, \
	    int (*fn)(const struct inbox_run_record *, void *), void *arg, \
	    struct buf *err), (ib, since_ns, fn, arg, err)) \
	X(enum inbox_status, queue_now, (struct inbox *ib, int64_t now_ns, \
	    struct inbox_queue *q, struct buf *err), (ib, now_ns, q, err)) \
	X(enum inbox_status, dead_latest, (struct inbox *ib, int64_t limit, \
	    int (*fn)(const struct inbox_event *, const char *, void *), \
	    void *arg, struct buf *err), (ib, limit, fn, arg, err)) \
	X(enum inbox_status, server_facts, (struct inbox *ib, \
	    struct inbox_server_facts *f, struct buf *err), (ib, f, err)) \
	X(enum inbox_status, blocked_list, (struct inbox *ib, int64_t limit, \
	    int (*fn)(const struct inbox_blocked *, void *), void *arg, \
	    struct buf *err), (ib, limit, fn, arg, err)) \
	X(enum inbox_status, table_read, (struct inbox *ib, enum inbox_table t, \
	    const struct inbox_value *after, size_t max_rows, size_t max_bytes, \
	    int (*fn)(const struct inbox_value *, size_t, void *), void *arg, \
	    size_t *n, int *full, struct buf *err), \
	    (ib, t, after, max_rows, max_bytes, fn, arg, n, full, err)) \
	X(enum inbox_status, table_merge, (struct inbox *ib, enum inbox_table t, \
	    const struct inbox_value *rows, size_t n, inbox_merge_fn fn, \
	    void *arg, int dry, int64_t *put, struct buf *err), \
	    (ib, t, rows, n, fn, arg, dry, put, err)) \
	X(int, table_holds, (struct inbox *ib, enum inbox_table t, \
	    const struct inbox_value *row, struct buf *why), (ib, t, row, why))

/* The table of one backend. */
#define INBOX_OP_MEMBER(ret, name, params, args)	ret (*name) params;
struct inbox_backend {
	const char	*name;		/* "sqlite", "postgresql" */
	enum inbox_status (*open)(const char *database,
	    const struct inbox_options *o, struct inbox **out, struct buf *err);
	void		(*close)(struct inbox *ib);
	INBOX_OPS(INBOX_OP_MEMBER)
};

/* The first member of every implementation's struct inbox. */
struct inbox_head {
	const struct inbox_backend *be;
};

/* Each backend's functions, named inbox_PREFIX_NAME (e.g.
 * inbox_sqlite_store), declared by INBOX_BACKEND_PROTOS(sqlite). */
#define INBOX_OP_PROTO_sqlite(ret, name, params, args) \
	ret inbox_sqlite_##name params;
#define INBOX_OP_PROTO_pg(ret, name, params, args) \
	ret inbox_pg_##name params;

/* A backend's table entries: INBOX_OPS(INBOX_OP_ENTRY_sqlite). */
#define INBOX_OP_ENTRY_sqlite(ret, name, params, args)	.name = inbox_sqlite_##name,
#define INBOX_OP_ENTRY_pg(ret, name, params, args)	.name = inbox_pg_##name,

extern const struct inbox_backend inbox_sqlite_backend;
#ifdef WEBHOOK_POSTGRESQL
extern const struct inbox_backend inbox_pg_backend;
/* A libpq URI as messages name it, without a password (malloc'd; NULL
 * when it does not parse or out of memory). */
char	*inbox_pg_redacted(const char *uri);
#endif

#endif
