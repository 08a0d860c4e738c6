/*
 * sqlite/private.h: what the SQLite engine of store/inbox.h shares between
 * its files, and its WAL policy.  PRIVATE: include it only from the
 * files of lib/store/sqlite/ and the unit tests — never from a program
 * that should work with any inbox (as SQLite keeps sqliteInt.h apart
 * from sqlite3.h).
 *
 *   engine.c        the connection (open, close, schema), storing, reading
 *                   rows, the helpers below (ib_*), the engine's table
 *   rules.c         order, hold and stale: due events, claims, verdicts
 *   ops.c           the operator's commands: filters, purge, status
 *   history.c       history and the queue's shape, for the report
 *   copy.c          tables in their portable form, for `copy`
 *   wal.c           WAL durability: group-commit syncs, checkpoint turns,
 *                   the busy handler, the plain-CGI VFS shim
 *   stamp.c         the checkpoint stamp: files replaced under us
 *   walsync.c       the sync and checkpoint counters shared by processes
 *   checkpointer.c  the receiver's checkpoint thread (inbox_upkeep_*)
 *
 * Functions named ib_* are internal to those files (extern only because
 * they are shared between them); inbox_wal_* is the WAL policy's API.
 * Unless said otherwise, ib_* return SQLite's result code.
 */
#ifndef WEBHOOK_INBOX_SQLITE_H
#define WEBHOOK_INBOX_SQLITE_H

#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>

#include <sqlite3.h>

#include "lib/store/inbox.h"
#include "lib/store/engine.h"
#include "lib/store/sqlite/walsync.h"

/*
 * Checkpoint turns (docs/checkpoints.md, docs/caps.md).
 *
 * A turn runs a PASSIVE checkpoint once the WAL has grown by
 * INBOX_WAL_CHECKPOINT_FRAMES since the last checkpoint began (2000
 * frames, 8 MiB; SQLite's own default is 1000, but ours run off the
 * request path).
 */
#define INBOX_WAL_CHECKPOINT_FRAMES	2000
/* The same for short_lived connections (plain CGI): each new process
 * reads every frame since the WAL last restarted (SQLite's recovery of its
 * shared index: 2000 frames, 8 MiB, cost more than the request itself), so
 * a checkpoint (two syncs, after the answer) every few dozen requests is
 * the cheaper side.  Measured by bench/cgi.py (bench/README). */
#define INBOX_WAL_SHORT_CHECKPOINT_FRAMES	128
/* WAL size, frames, from which a checkpoint turn that follows a PASSIVE
 * checkpoint is a RESTART one: 16000 frames of 4 KiB, 64 MiB, under
 * journal_size_limit (96 MiB) so that the file is reused, not truncated
 * and regrown at each restart (a truncation on this VM's `discard` mount
 * stalled writers for tens of ms: p99 24 ms at 5 connections with a
 * 128 MiB threshold, 4.2–4.6 ms with this one). */
#define INBOX_WAL_RESTART_FRAMES	16000
/* The most frames a RESTART checkpoint may have to copy while writers
 * wait (256 frames, 1 MiB): more, and the turn runs another PASSIVE
 * first.  Until INBOX_WAL_RESTART_MAX_FRAMES (about 70 MiB), from which a
 * RESTART runs whatever it has to copy: a RESTART that fails (a reader on
 * an old snapshot past INBOX_WAL_RESTART_WAIT_MS) is tried again 2000
 * frames later, and three such tries still fit under journal_size_limit
 * (~24400 frames).  With the tail unbounded (a RESTART right after one
 * PASSIVE of 2000 frames) RESTARTs were the p99.9 at 5 connections
 * (docs/caps.md). */
#define INBOX_WAL_RESTART_TAIL_FRAMES	256
#define INBOX_WAL_RESTART_MAX_FRAMES	18000
/*
 * RESTART checkpoints hold new writers back while they wait for the
 * writer in progress and for readers of an older snapshot (the drainer, a
 * `status`): at most this long, ms, plus the copy of what is left; then
 * they give up until the next turn.  (With 200 ms, make bench's drainer
 * section, whose row counts are such readers, showed a 178 ms p99 at 5
 * connections.)
 */
#define INBOX_WAL_RESTART_WAIT_MS	10

/*
 * A checkpoint turn: when the WAL has grown by INBOX_WAL_CHECKPOINT_FRAMES
 * since the last checkpoint began, a PASSIVE checkpoint (copies what it
 * can, blocks nobody); past INBOX_WAL_RESTART_FRAMES, the turn after a
 * PASSIVE one that left little behind (INBOX_WAL_RESTART_TAIL_FRAMES; at
 * the latest from INBOX_WAL_RESTART_MAX_FRAMES) is a RESTART one (see
 * INBOX_WAL_RESTART_WAIT_MS), so that the WAL stays bounded under unbroken
 * load — PASSIVE alone let it reach 1.6 GB in 15 s of saturation, since a
 * writer restarts the WAL only when it finds every frame copied back.
 * Checkpoints always sync the database file, whatever the connection's
 * synchronous level.
 *
 * One connection at a time across every program using the inbox, and
 * only after a commit that began since the last checkpoint ended: SQLite's
 * WAL-reset race (store/sqlite/walsync.h, "Checkpoints"; lib/store/sqlite/wal.c says which
 * SQLite versions have it).  `frames` is the WAL's size as this
 * connection last saw it, used only when the shared file could not be
 * opened (then each connection decides alone, as SQLite's own
 * auto-checkpoint does).  Cheap when no turn is due (no system call).
 * Returns INBOX_OK (also when it was not this connection's turn, or
 * another checkpoint was running), or INBOX_FAILED with the reason in err.
 */
enum inbox_status inbox_wal_checkpoint_turn(struct inbox *ib, int frames,
	    struct buf *err);

/* Frames in the WAL after this connection's last commit (group commit). */
int	inbox_wal_frames(const struct inbox *ib);

/* ---- shared by the files of lib/store/sqlite/ only ------------------ */

/* ---- the engine's operations (store/engine.h), by the file that has them.
 * Each keeps the contract of the function of the same name in
 * store/inbox.h. */
/* sqlite/engine.c */
enum inbox_status inbox_sqlite_open(const char *database,
	    const struct inbox_options *o, struct inbox **out, struct buf *err);
void	inbox_sqlite_close(struct inbox *ib);
enum inbox_status inbox_sqlite_store(struct inbox *ib,
	    const struct inbox_delivery *d, struct buf *err);
enum inbox_status inbox_sqlite_store_batch(struct inbox *ib,
	    struct inbox_batch *b, struct buf *err);
enum inbox_status inbox_sqlite_cursor_get(struct inbox *ib, const char *name,
	    char **updated_after, char **page, struct buf *err);
/* sqlite/rules.c */
enum inbox_status inbox_sqlite_next_due(struct inbox *ib,
	    struct inbox_cursor *cur, int64_t now_ns, int64_t settle_ns,
	    int64_t future_ns, struct inbox_event *e, struct buf *err);
enum inbox_status inbox_sqlite_claim(struct inbox *ib, struct inbox_event *e,
	    int64_t now_ns, enum inbox_claim *claim, struct buf *err);
enum inbox_status inbox_sqlite_finish_done(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, const void *output,
	    size_t output_len, struct buf *err);
enum inbox_status inbox_sqlite_finish_failed(struct inbox *ib,
	    const struct inbox_event *e, struct inbox_failure *f,
	    struct buf *err);
enum inbox_status inbox_sqlite_finish_stale(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, struct buf *err);
enum inbox_status inbox_sqlite_is_stale(struct inbox *ib,
	    const struct inbox_event *e, int *stale, struct buf *err);
enum inbox_status inbox_sqlite_list(struct inbox *ib,
	    const struct inbox_filter *f, int with_body,
	    int (*fn)(const struct inbox_event *, void *), void *arg,
	    struct buf *err);
/* sqlite/ops.c */
enum inbox_status inbox_sqlite_count(struct inbox *ib,
	    const struct inbox_filter *f, int64_t *n, struct buf *err);
enum inbox_status inbox_sqlite_requeue(struct inbox *ib,
	    const struct inbox_filter *f, int64_t now_ns, int64_t *n,
	    struct buf *err);
enum inbox_status inbox_sqlite_forget(struct inbox *ib,
	    const struct inbox_filter *f, int64_t *n, struct buf *err);
enum inbox_status inbox_sqlite_purge(struct inbox *ib, int64_t now_ns,
	    int64_t retention_ns, int64_t *bodies, int64_t *rows,
	    struct buf *err);
enum inbox_status inbox_sqlite_status_report(struct inbox *ib,
	    struct inbox_status_report *r, struct buf *err);
enum inbox_status inbox_sqlite_count_sources(struct inbox *ib,
	    int (*fn)(const struct inbox_source_count *, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_sqlite_probe_write(struct inbox *ib, struct buf *err);
enum inbox_status inbox_sqlite_probe_shared(struct inbox *ib,
	    struct buf *what, struct buf *err);
enum inbox_status inbox_sqlite_server_facts(struct inbox *ib,
	    struct inbox_server_facts *f, struct buf *err);
enum inbox_status inbox_sqlite_note_lock(struct inbox *ib, int64_t now_ns,
	    int busy, struct buf *err);
enum inbox_status inbox_sqlite_note_run(struct inbox *ib, int64_t now_ns,
	    const char *outcome, struct buf *err);
/* sqlite/history.c */
enum inbox_status inbox_sqlite_history_add(struct inbox *ib,
	    const struct history_delta *d, size_t n,
	    const struct inbox_run_record *run, int64_t now_ns,
	    struct buf *err);
enum inbox_status inbox_sqlite_history_read(struct inbox *ib, int64_t since_s,
	    int (*fn)(const struct inbox_history_row *, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_sqlite_runs_read(struct inbox *ib, int64_t since_ns,
	    int (*fn)(const struct inbox_run_record *, void *), void *arg,
	    struct buf *err);
enum inbox_status inbox_sqlite_queue_now(struct inbox *ib, int64_t now_ns,
	    struct inbox_queue *q, struct buf *err);
enum inbox_status inbox_sqlite_dead_latest(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_event *, const char *, void *),
	    void *arg, struct buf *err);
enum inbox_status inbox_sqlite_blocked_list(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_blocked *, void *), void *arg,
	    struct buf *err);
/* sqlite/copy.c */
enum inbox_status inbox_sqlite_table_read(struct inbox *ib,
	    struct inbox_page *pg, int (*fn)(const struct inbox_value *,
	    size_t, void *), void *arg, struct buf *err);
enum inbox_status inbox_sqlite_table_merge(struct inbox *ib,
	    enum inbox_table t, const struct inbox_value *rows, size_t n,
	    inbox_merge_fn fn, void *arg, int dry, int64_t *put,
	    struct buf *err);
int	inbox_sqlite_table_holds(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *row, struct buf *why);
/* sqlite/wal.c */
enum inbox_status inbox_sqlite_maintain(struct inbox *ib, struct buf *err);
/* sqlite/checkpointer.c */
enum inbox_status inbox_sqlite_upkeep_start(const char *database,
	    const struct inbox_options *o, struct inbox_upkeep **out,
	    struct buf *err);
void	inbox_sqlite_upkeep_note(struct inbox_upkeep *up,
	    const struct inbox *writer);
void	inbox_sqlite_upkeep_stop(struct inbox_upkeep *up);

struct inbox {
	struct inbox_head head;		/* first: the engine (store/engine.h) */
	sqlite3		*db;
	char		*path;
	int64_t		 busy_timeout_ns;
	int64_t		 busy_start;	/* monotonic ns of the first busy wait */
	/* Monotonic ns after which no busy wait goes on (0: none): the
	 * earliest deadline of the deliveries being stored, set only for the
	 * length of one store. */
	int64_t		 busy_deadline;
	int		 wal;		/* the journal mode is WAL */
	int		 group_commit;	/* see inbox_options */
	int		 short_lived;	/* see inbox_options */
	int		 synchronous_full;	/* commits sync the WAL */
	int		 wal_frames;	/* group commit: WAL frames after the last commit */
	/* The files this connection writes, as opened: a receiver must not
	 * acknowledge into a database that was moved or deleted meanwhile
	 * (its rows would live only in an unlinked file). */
	dev_t		 db_dev, wal_dev;
	ino_t		 db_ino, wal_ino;
	/* The largest size seen of the database file: it never shrinks (no
	 * VACUUM, no auto_vacuum), so a smaller one was truncated or
	 * restored in place (`: > inbox.db`) under us. */
	off_t		 db_size;
	/* The database file as this connection last accepted it, and the
	 * shared epoch when it opened (store/sqlite/stamp.c, store/sqlite/walsync.h "Stamps"):
	 * a file that is neither this nor as the last checkpoint of ours
	 * stamped it was written by someone else. */
	struct walsync_stamp base;	/* pgno 0: nothing probed */
	uint64_t	 epoch;
	unsigned char	*probe;		/* the probe's buffer, allocated once */
	uint64_t	 write_gen;	/* walsync_write_gen of the commit under way */
	struct walsync_turn turn;	/* checkpoints, when there is no shared file */
	sqlite3_stmt	*begin, *commit, *rollback, *insert;
	sqlite3_stmt	*admit;		/* admit_chunk's, prepared on first use */
	struct walsync	*ws;		/* group commit: syncs shared across processes */
	struct walsync	*role;		/* otherwise: for checkpoint turns */
	int64_t		 admitted_ns;	/* the caller's now_ns at the last admit(); 0 never */
	int		 hold_ready;	/* the TEMP view inbox_held exists */
};

/* The columns every event query selects, in inbox_event order
 * (ib_read_event). */
#define EVENT_COLUMNS \
	"webhook_id, state, received_at, webhook_timestamp, secret_fp, type," \
	" created_at, created_at_raw, object_type, object_id, updated_at," \
	" truncated, sort_at, attempts, failures, next_at, finished_at," \
	" requeued, last_error, last_output, rowid, body IS NOT NULL, source"
#define EVENT_NCOLUMNS	23

/* The operator filter (inbox_filter) as one fixed WHERE clause with
 * optional parameters ?1 … ?8, bound by ib_bind_filter, so no SQL is ever
 * assembled from input.  Statements number their own parameters from ?9. */
#define FILTER_WHERE \
	" WHERE (?1 IS NULL OR webhook_id = ?1)" \
	" AND (?2 IS NULL OR state = ?2 OR (?2 = 'retrying'" \
	" AND state = 'pending' AND failures > 0))" \
	" AND (?3 IS NULL OR type GLOB ?3)" \
	" AND (?4 IS NULL OR object_type = ?4)" \
	" AND (?5 IS NULL OR object_id = ?5)" \
	" AND (?6 IS NULL OR received_at >= ?6)" \
	" AND (?7 IS NULL OR received_at < ?7)" \
	" AND (?8 IS NULL OR source = ?8)"

/* lib/store/sqlite/engine.c: errors and transactions. */
/* Put "path: what: SQLite's message" in err; INBOX_BUSY for a busy or
 * locked rc, else INBOX_FAILED. */
enum inbox_status ib_fail(struct inbox *ib, struct buf *err, const char *what,
	    int rc);
int	ib_prepare(struct inbox *ib, const char *sql, sqlite3_stmt **st);
int	ib_step_done(sqlite3_stmt *st);	/* step, reset; ROW counts as done */
int	ib_begin(struct inbox *ib);	/* BEGIN IMMEDIATE */
int	ib_commit(struct inbox *ib);
void	ib_rollback(struct inbox *ib);	/* when a transaction is open */
/* The end of a failed write transaction: finalize st (NULL is fine),
 * report (before the rollback can change the message), roll back. */
enum inbox_status ib_txn_fail(struct inbox *ib, sqlite3_stmt *st,
	    struct buf *err, const char *what, int rc);
/* The end of a write transaction whose statement succeeded: finalize st,
 * commit; on failure, as ib_txn_fail. */
enum inbox_status ib_txn_commit(struct inbox *ib, sqlite3_stmt *st,
	    struct buf *err, const char *what);
int	ib_exec(struct inbox *ib, const char *sql);	/* no result rows */
int	ib_run(struct inbox *ib, sqlite3_stmt *st);	/* step to DONE */

/* lib/store/sqlite/engine.c: parameters and rows. */
int	ib_bind_text(sqlite3_stmt *st, int i, const char *s);	/* NULL for "" */
int	ib_bind_instant(sqlite3_stmt *st, int i, int64_t ns,
	    char tmp[INSTANT_SIZE]);	/* tmp must outlive the step */
char	*ib_col_dup(sqlite3_stmt *st, int i, int *oom);	/* NULL for NULL */
void	 ib_col_instant(sqlite3_stmt *st, int i, char out[INSTANT_SIZE]);
/* Fill *e from a row of EVENT_COLUMNS (+ body as column EVENT_NCOLUMNS
 * when with_body).  Returns 0, or -1 when out of memory. */
int	ib_read_event(sqlite3_stmt *st, struct inbox_event *e, int with_body);

/* lib/store/sqlite/ops.c: bind an inbox_filter to FILTER_WHERE's ?1 … ?8. */
int	ib_bind_filter(sqlite3_stmt *st, const struct inbox_filter *f,
	    char since[INSTANT_SIZE], char until[INSTANT_SIZE]);

/* lib/store/sqlite/rules.c: the hold rule, the TEMP view inbox_held (rid), made
 * on the connection's first call; call it outside any transaction, before
 * a statement that reads inbox_held. */
int	ib_hold_ready(struct inbox *ib);
/* Pending events held behind an earlier one of their object (for status,
 * after ib_hold_ready); *n. */
int	ib_count_held(struct inbox *ib, int64_t *n);

/* lib/store/sqlite/history.c: count as `received` the rows the next admit_chunk
 * (same transaction, same limit) admits. */
int	ib_history_count_received(struct inbox *ib, int limit);

/* lib/store/sqlite/wal.c: SQLite's busy handler for every connection. */
int	ib_busy_wait(void *arg, int count);
/*
 * Before sqlite3_open_v2: the VFS to open with — "webhook-cgi" for a
 * short_lived connection whose shared walsync file opened (ib->role),
 * else NULL (the default).  `path`, here and in ib_wal_setup, is
 * inbox_open's resolved path (util_path_resolve): walsync_open_real.
 */
const char *ib_wal_vfs(struct inbox *ib, const char *path,
	    const struct inbox_options *o, struct buf *err);
/*
 * After the version check: WAL mode, the synchronous level, the hooks
 * that replace auto-checkpoints with turns, group commit's shared file.
 * Returns INBOX_OK or FAILED with the reason in err.
 */
enum inbox_status ib_wal_setup(struct inbox *ib, const char *path,
	    const struct inbox_options *o, struct buf *err);
void	ib_wal_close(struct inbox *ib);	/* before sqlite3_close */
void	ib_wal_release(struct inbox *ib);	/* after it */
/* Group commit, after COMMIT returned: return once a WAL sync that began
 * after this commit has completed (store/sqlite/walsync.h). */
int	ib_make_durable(struct inbox *ib);
/* Do the database's and the WAL's paths still name the files we write:
 * the same inodes, a database file not shrunk (truncated or restored in
 * place) and written by nobody but a checkpoint of ours (ib_db_unchanged)?
 * Two stat(2)s and two reads of the database (page 1's header, the
 * stamp's page); checked before every store's answer. */
int	ib_same_files(struct inbox *ib);
/* The shared page this connection uses (ws or role), or NULL. */
struct walsync *ib_shared(const struct inbox *ib);

/* lib/store/sqlite/stamp.c: is the database file still the one this connection
 * writes, as far as its content goes (store/sqlite/walsync.h, "Stamps")? */
/* At open, after ib_note_files' stat: note the file as it is (and stamp
 * it when no stamp is current). */
void	ib_db_note(struct inbox *ib, const struct stat *sb);
/* Part of ib_same_files: the file `sb` (stat'ed after ckpt_gen read `g1`,
 * walsync_write_gen) is as this connection last saw it, or as the last
 * checkpoint of ours stamped it, or cannot be judged now: 1; else 0 —
 * then every connection opened so far reopens, and it is logged. */
int	ib_db_unchanged(struct inbox *ib, const struct stat *sb, uint64_t g1);
/* Before a checkpoint copies frames into it (the turn held, ckpt_gen
 * even): the same inode, not shrunk, and as the last checkpoint of ours
 * stamped it (or as this connection opened it, without a stamp).  1 or 0. */
int	ib_db_intact(struct inbox *ib);
/* Before a turn's checkpoint: the page of the WAL's last frame (0: none)
 * and the frame's number in *mx. */
uint64_t ib_db_last_page(struct inbox *ib, uint32_t *mx);
/* After it, before ckpt_gen goes even: stamp the file as the checkpoint
 * left it; `pgno`/`mx` from ib_db_last_page, `emptied` when it emptied the
 * WAL (TRUNCATE). */
void	ib_db_stamp(struct inbox *ib, uint64_t pgno, uint32_t mx, int emptied);
void	ib_note_files(struct inbox *ib, const char *path);	/* at open */

#endif
