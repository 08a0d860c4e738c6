/*
 * postgresql/private.h: what the PostgreSQL engine of store/inbox.h
 * shares between its files (docs/postgresql.md).  PRIVATE: include it
 * only from the files of lib/store/postgresql/ and the unit tests.
 *
 *   engine.c        the connection (open with a deadline, the schema,
 *                   synchronous_commit, warnings), storing, cursors, the
 *                   engine's table
 *   statements.c    statements with a deadline, parameters, reading rows:
 *                   the helpers below (px_*)
 *   rules.c         order, hold, stale and leases: due events, claims,
 *                   verdicts, list
 *   ops.c           the operator's commands, retention, status
 *   history.c       history and the queue's shape, for the report
 *   copy.c          tables in their portable form, for `copy`
 *
 * Every statement is sent and waited for with a deadline (px_query): a
 * server that stops answering costs the caller its deadline, never a hang;
 * the connection is then dropped and the caller reopens.
 */
#ifndef WEBHOOK_INBOX_PG_H
#define WEBHOOK_INBOX_PG_H

#include <libpq-fe.h>

#include "lib/store/inbox.h"
#include "lib/store/engine.h"

/* ---- the engine's operations (store/engine.h), by the file that has them.
 * Each keeps the contract of the function of the same name in
 * store/inbox.h. */
/* postgresql/engine.c */
enum inbox_status inbox_pg_open(const char *database,
	    const struct inbox_options *o, struct inbox **out, struct buf *err);
void	inbox_pg_close(struct inbox *ib);
enum inbox_status inbox_pg_store(struct inbox *ib,
	    const struct inbox_delivery *d, struct buf *err);
enum inbox_status inbox_pg_store_batch(struct inbox *ib, struct inbox_batch *b,
	    struct buf *err);
enum inbox_status inbox_pg_cursor_get(struct inbox *ib, const char *name,
	    char **updated_after, char **page, struct buf *err);
enum inbox_status inbox_pg_maintain(struct inbox *ib, struct buf *err);
/* postgresql/rules.c */
enum inbox_status inbox_pg_next_due(struct inbox *ib, struct inbox_cursor *cur,
	    int64_t now_ns, int64_t settle_ns, int64_t future_ns,
	    struct inbox_event *e, struct buf *err);
enum inbox_status inbox_pg_claim(struct inbox *ib, struct inbox_event *e,
	    int64_t now_ns, enum inbox_claim *claim, struct buf *err);
enum inbox_status inbox_pg_finish_done(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, const void *output,
	    size_t output_len, struct buf *err);
enum inbox_status inbox_pg_finish_failed(struct inbox *ib,
	    const struct inbox_event *e, struct inbox_failure *f,
	    struct buf *err);
enum inbox_status inbox_pg_finish_stale(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, struct buf *err);
enum inbox_status inbox_pg_is_stale(struct inbox *ib,
	    const struct inbox_event *e, int *stale, struct buf *err);
enum inbox_status inbox_pg_list(struct inbox *ib, const struct inbox_filter *f,
	    int with_body, int (*fn)(const struct inbox_event *, void *),
	    void *arg, struct buf *err);
/* postgresql/ops.c */
enum inbox_status inbox_pg_count(struct inbox *ib,
	    const struct inbox_filter *f, int64_t *n, struct buf *err);
enum inbox_status inbox_pg_requeue(struct inbox *ib,
	    const struct inbox_filter *f, int64_t now_ns, int64_t *n,
	    struct buf *err);
enum inbox_status inbox_pg_forget(struct inbox *ib,
	    const struct inbox_filter *f, int64_t *n, struct buf *err);
enum inbox_status inbox_pg_purge(struct inbox *ib, int64_t now_ns,
	    int64_t retention_ns, int64_t *bodies, int64_t *rows,
	    struct buf *err);
enum inbox_status inbox_pg_status_report(struct inbox *ib,
	    struct inbox_status_report *r, struct buf *err);
enum inbox_status inbox_pg_count_sources(struct inbox *ib,
	    int (*fn)(const struct inbox_source_count *, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_pg_probe_write(struct inbox *ib, struct buf *err);
enum inbox_status inbox_pg_probe_shared(struct inbox *ib,
	    struct buf *what, struct buf *err);
enum inbox_status inbox_pg_server_facts(struct inbox *ib,
	    struct inbox_server_facts *f, struct buf *err);
enum inbox_status inbox_pg_note_lock(struct inbox *ib, int64_t now_ns,
	    int busy, struct buf *err);
enum inbox_status inbox_pg_note_run(struct inbox *ib, int64_t now_ns,
	    const char *outcome, struct buf *err);
/* postgresql/history.c */
enum inbox_status inbox_pg_history_add(struct inbox *ib,
	    const struct history_delta *d, size_t n,
	    const struct inbox_run_record *run, int64_t now_ns,
	    struct buf *err);
enum inbox_status inbox_pg_history_read(struct inbox *ib, int64_t since_s,
	    int (*fn)(const struct inbox_history_row *, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_pg_runs_read(struct inbox *ib, int64_t since_ns,
	    int (*fn)(const struct inbox_run_record *, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_pg_queue_now(struct inbox *ib, int64_t now_ns,
	    struct inbox_queue *q, struct buf *err);
enum inbox_status inbox_pg_dead_latest(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_event *, const char *, void *),
	    void *arg, struct buf *err);
enum inbox_status inbox_pg_blocked_list(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_blocked *, void *), void *arg,
	    struct buf *err);
/* postgresql/copy.c */
enum inbox_status inbox_pg_table_read(struct inbox *ib, struct inbox_page *pg,
	    int (*fn)(const struct inbox_value *, size_t, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_pg_table_merge(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *rows, size_t n, inbox_merge_fn fn,
	    void *arg, int dry, int64_t *put, struct buf *err);
int	inbox_pg_table_holds(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *row, struct buf *why);

/* The most statements px_pipeline sends at once. */
#define PX_PIPELINE_MAX	8

struct inbox_pg {
	struct inbox_head head;		/* first: the engine (store/engine.h) */
	PGconn		*conn;
	char		*name;		/* the database for messages, no password */
	int64_t		 busy_timeout_ns;
	int64_t		 call_wait_ns;	/* inbox_options' call_wait_ms; 0: none */
	int64_t		 lease_ns;
	char		 owner[96];	/* this connection's lease token */
	int		 broken;	/* a statement timed out: reopen */
	/* The role's synchronous_commit is off or local: every transaction
	 * raises it for itself (px_query, px_begin, px_pipeline), never the
	 * session, which a pooler in transaction mode shares. */
	int		 sync_weak;
	int64_t		 admitted_ns;	/* as SQLite's (store/sqlite/private.h) */
	/* WARNINGs the server sent during the last statement (a commit whose
	 * wait for synchronous replication was cancelled). */
	char		 sync_default[32];	/* synchronous_commit at connect */
	int		 warned;
	char		 warning[256];
};

/* The struct behind an opaque inbox of this backend. */
#define PG(ib)	((struct inbox_pg *)(void *)(ib))

/* Statement parameters in text form (NULL: SQL NULL), with optional
 * binary ones (bytea): lengths[i] > 0 or binary[i] set. */
struct px_params {
	int		 n;
	const char	*v[16];
	int		 len[16];
	int		 bin[16];
	/* More than 16 (lib/store/postgresql/copy.c's batches): n values from these
	 * arrays instead, when xv is set; results in binary form when
	 * binary_results is set. */
	const char *const *xv;
	const int	*xlen, *xbin;
	int		 binary_results;
};
void	px_text(struct px_params *p, const char *s);	/* NULL for NULL or "" */
void	px_raw(struct px_params *p, const char *s);	/* as is; NULL for NULL */
void	px_int(struct px_params *p, int64_t v, char tmp[24]);
void	px_bytes(struct px_params *p, const void *b, size_t len);	/* NULL: NULL */
/* An instant; -1 when out of range. */
int	px_instant(struct px_params *p, int64_t ns, char tmp[INSTANT_SIZE]);

/*
 * Run one statement (sql, with parameters p: an unnamed statement of the
 * extended protocol; or NULL: the simple protocol, several statements
 * allowed) and wait for its result until `deadline` (monotonic ns; 0:
 * the connection's default, its call_wait when set, else its
 * busy_timeout at least PX_DEFAULT_WAIT_NS).  Results are text.  Nothing
 * is prepared by name and no session state is set: each transaction
 * stands alone, as a pooler in transaction mode needs.
 * Returns INBOX_OK with *res (PQclear it; NULL allowed when the caller
 * wants none), or BUSY (timed out: cancelled, connection dropped; a lock
 * or statement timeout; a serialization failure) / FAILED, with
 * "what: the server's message" in err.
 */
#define PX_DEFAULT_WAIT_NS	(60LL * 1000000000)
enum inbox_status px_query(struct inbox_pg *ib, const char *sql,
	    const struct px_params *p, int64_t deadline, PGresult **res,
	    const char *what, struct buf *err);
/* The same with no result wanted. */
enum inbox_status px_exec(struct inbox_pg *ib, const char *sql,
	    const struct px_params *p, int64_t deadline, const char *what,
	    struct buf *err);
/*
 * Run n (at most PX_PIPELINE_MAX) statements (each p[i] with
 * parameters, or NULL) in one
 * round trip, as ONE implicit transaction (libpq's pipeline mode): the
 * server runs them in order, each with its own snapshot (READ COMMITTED:
 * a statement sees what committed while an earlier one waited for a
 * lock), and commits them together after the last, or rolls all back at
 * the first error.  Not inside a BEGIN.  Returns INBOX_OK with res[i] each
 * statement's result (PQclear them), or as px_query with every res[i]
 * NULL; a WARNING during the commit is a failure, as in px_commit.
 */
enum inbox_status px_pipeline(struct inbox_pg *ib, int n,
	    const char *const sql[], const struct px_params *const p[],
	    PGresult *res[], const char *what, struct buf *err);
/* After a statement that committed by itself (outside BEGIN): the server's
 * WARNING during its commit as a failure, as px_commit. */
enum inbox_status px_warned(struct inbox_pg *ib, const char *what,
	    struct buf *err);
/* BEGIN, COMMIT (a WARNING during it, such as a cancelled wait for
 * synchronous replication, is a failure: INBOX_FAILED), ROLLBACK (when
 * the connection is still usable; quiet). */
enum inbox_status px_begin(struct inbox_pg *ib, int64_t deadline,
	    struct buf *err);
enum inbox_status px_commit(struct inbox_pg *ib, int64_t deadline,
	    const char *what, struct buf *err);
void	px_rollback(struct inbox_pg *ib);
/* "name: what: message" in err; returns s. */
enum inbox_status px_fail(struct inbox_pg *ib, struct buf *err,
	    enum inbox_status s, const char *what, const char *msg);

/* Columns: row values, NULL for SQL NULL. */
char	*px_dup(const PGresult *r, int row, int col, int *oom);
void	 px_instant_col(const PGresult *r, int row, int col,
	    char out[INSTANT_SIZE]);
int64_t	 px_int_col(const PGresult *r, int row, int col);
/* A bytea column (text form: \x hex) appended to b; -1 out of memory. */
int	 px_bytes_col(const PGresult *r, int row, int col, struct buf *b);

/* The columns every event query selects, in inbox_event order
 * (px_read_event), then body as column EVENT_PG_NCOLUMNS when asked. */
#define EVENT_PG_COLUMNS \
	"webhook_id, state, received_at, webhook_timestamp, secret_fp, type," \
	" created_at, created_at_raw, object_type, object_id, updated_at," \
	" truncated, sort_at, attempts, failures, next_at, finished_at," \
	" requeued, last_error, last_output, seq, body IS NOT NULL, source"
#define EVENT_PG_NCOLUMNS	23
int	px_read_event(const PGresult *r, int row, struct inbox_event *e,
	    int with_body);

/* The operator filter (inbox_filter) as one fixed WHERE clause with
 * parameters $1 … $8 (px_filter binds them; the type glob as an anchored
 * POSIX regular expression).  Statements number their own from $9. */
#define FILTER_PG_WHERE \
	" WHERE ($1::text IS NULL OR webhook_id = $1)" \
	" AND ($2::text IS NULL OR state = $2 OR ($2 = 'retrying'" \
	" AND state = 'pending' AND failures > 0))" \
	" AND ($3::text IS NULL OR type ~ $3)" \
	" AND ($4::text IS NULL OR object_type = $4)" \
	" AND ($5::text IS NULL OR object_id = $5)" \
	" AND ($6::text IS NULL OR received_at >= $6)" \
	" AND ($7::text IS NULL OR received_at < $7)" \
	" AND ($8::text IS NULL OR source = $8)"
struct px_filter_tmp {
	char	since[INSTANT_SIZE], until[INSTANT_SIZE];
	char	*regex;		/* free with px_filter_free */
};
int	px_filter(struct px_params *p, const struct inbox_filter *f,
	    struct px_filter_tmp *t);	/* -1: out of memory */
void	px_filter_free(struct px_filter_tmp *t);

/* Is s[0..len) valid UTF-8 without a NUL byte, as a PostgreSQL text value
 * must be (lib/store/postgresql/engine.c)? */
int	px_utf8_valid(const void *s, size_t len);

/* lib/store/postgresql/rules.c: the lease key of an event (kind, object_type,
 * object_id: three parameters, schema-pg.sql's leases). */
void	px_lease_key(struct px_params *p, const struct inbox_event *e);

#endif
