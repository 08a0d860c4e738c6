/*
 * inbox: the event store (DESIGN.md "The inbox", "The drainer").
 *
 * This interface speaks of events and states only — never of SQLite handles
 * or SQL text — so that a PostgreSQL implementation can sit behind it.
 * Every write is one short explicit transaction (BEGIN IMMEDIATE … COMMIT);
 * nothing here holds a transaction across a call boundary.
 *
 * Times are instants in the normalised form of lib/instant.h, passed as
 * nanoseconds since the epoch where the caller computes them.
 */
#ifndef WEBHOOK_INBOX_H
#define WEBHOOK_INBOX_H

#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "event.h"
#include "instant.h"
#include "util.h"

struct inbox;

struct inbox_options {
	int64_t			busy_timeout_ms;	/* wait for the write lock, ≥ 1 */
	enum config_sync	synchronous;
	/*
	 * Group commit (for a long-lived receiver process; ignored unless
	 * synchronous is FULL): commit without syncing while the write lock
	 * is held, then make the WAL durable after releasing it, so that
	 * concurrent writers' syncs overlap instead of queueing behind the
	 * lock.  inbox_store still returns only once the event is on disk.
	 * Checkpoints leave the store path: call inbox_maintain between
	 * requests.
	 */
	int			group_commit;
	/*
	 * One connection per process, one request per process (plain CGI):
	 * its close does not checkpoint (SQLite would, as the last
	 * connection, and delete the WAL: two more syncs and every page
	 * written twice, per request).  Checkpoints stay with webhook-drain's
	 * runs and the FastCGI processes, and inbox_maintain, called after
	 * the answer was sent, takes a turn when the WAL has grown past
	 * INBOX_CHECKPOINT_FRAMES (no drainer running, say), so the WAL
	 * stays bounded.  Each new process then reads the WAL back into the
	 * shared index (SQLite's recovery; memory only, no sync).
	 */
	int			short_lived;
};

/* Outcome of a call that may meet a busy or broken database. */
enum inbox_status {
	INBOX_OK = 0,
	INBOX_DUPLICATE,	/* inbox_store: the webhook-id is already there */
	INBOX_NOT_FOUND,	/* no such event */
	INBOX_BUSY,		/* the write lock stayed taken past busy_timeout */
	INBOX_FAILED		/* anything else: disk full, read-only, I/O… */
};

/*
 * Open (creating if needed) the inbox at `path`: WAL journal, the
 * configured synchronous level, a busy handler that waits in steps of tens
 * of microseconds (not SQLite's 1…100 ms) up to busy_timeout_ms, the schema
 * applied when user_version is 0.  Returns INBOX_OK and *out (close with
 * inbox_close), or another status with a one-line reason in `err` (which
 * names the path and SQLite's message) and *out NULL.
 */
enum inbox_status inbox_open(const char *path, const struct inbox_options *o,
	    struct inbox **out, struct buf *err)
	    __attribute__((warn_unused_result));
void	inbox_close(struct inbox *ib);	/* accepts NULL */

/* The schema version this program writes (PRAGMA user_version); an inbox
 * with a newer one is refused by inbox_open. */
int	inbox_schema_version(void);

/*
 * Between requests (after the answer was sent), on a connection with group
 * commit or short_lived: inbox_checkpoint_turn with the WAL size of its
 * last commit, so the WAL stays bounded without a checkpoint on any
 * request's path.  A no-op otherwise.  Returns INBOX_OK, or FAILED (harmless: the next call
 * tries again).
 */
#define INBOX_CHECKPOINT_FRAMES	2000
/* The same for short_lived connections (plain CGI): each new process
 * reads every frame since the WAL last restarted (SQLite's recovery of its
 * shared index: 2000 frames, 8 MiB, cost more than the request itself), so
 * a checkpoint (two syncs, after the answer) every few dozen requests is
 * the cheaper side.  Measured by bench/cgi.py (bench/README). */
#define INBOX_SHORT_CHECKPOINT_FRAMES	128
/* WAL size, frames, from which a checkpoint turn that follows a PASSIVE
 * checkpoint is a RESTART one (inbox_checkpoint_turn): 16000 frames of 4 KiB, 64 MiB,
 * under journal_size_limit (96 MiB) so that the file is reused, not
 * truncated and regrown at each restart (a truncation on this VM's
 * `discard` mount stalled writers for tens of ms: p99 24 ms at 5
 * connections with a 128 MiB threshold, 4.2–4.6 ms with this one). */
#define INBOX_RESTART_FRAMES	16000
/* The most frames a RESTART checkpoint may have to copy while writers
 * wait (256 frames, 1 MiB): more, and the turn runs another PASSIVE
 * first.  Until INBOX_RESTART_MAX_FRAMES (about 70 MiB), from which a RESTART
 * runs whatever it has to copy: a RESTART that fails (a reader on an old
 * snapshot past INBOX_RESTART_WAIT_MS) is tried again 2000 frames later,
 * and three such tries still fit under journal_size_limit (~24400 frames).
 * With the tail unbounded (a RESTART right after one PASSIVE of 2000
 * frames) RESTARTs were the p99.9 at 5 connections (docs/caps.md). */
#define INBOX_RESTART_TAIL_FRAMES	256
#define INBOX_RESTART_MAX_FRAMES	18000
enum inbox_status inbox_maintain(struct inbox *ib, struct buf *err);

/* A verified delivery, as the receiver stores it. */
struct inbox_delivery {
	const char		*webhook_id;	/* NUL-terminated */
	int64_t			 webhook_timestamp;	/* Unix seconds */
	const char		*secret_fp;	/* fingerprint of the verifying key */
	const void		*body;		/* exact bytes */
	size_t			 body_len;
	const struct event_fields *fields;	/* extracted at receive time */
};

/*
 * Store a delivery under its webhook-id in one transaction (BEGIN
 * IMMEDIATE; INSERT … ON CONFLICT(webhook_id) DO NOTHING; COMMIT).
 * INBOX_OK: new and committed (durable per the synchronous level);
 * INBOX_DUPLICATE: already there, nothing written (with group commit the
 * WAL is synced first, since the first copy may not be durable yet); INBOX_BUSY / INBOX_FAILED:
 * nothing written, reason in err.  After INBOX_FAILED the caller should
 * close and reopen the inbox before the next call.
 */
enum inbox_status inbox_store(struct inbox *ib, const struct inbox_delivery *d,
	    struct buf *err) __attribute__((warn_unused_result));

/* One event as the drainer and the operator see it. */
struct inbox_event {
	char	*webhook_id;
	char	 state[8];		/* pending, done, stale, dead */
	struct buf body;		/* exact bytes; has_body 0 once purged */
	int	 has_body;
	char	 received_at[INSTANT_SIZE];
	int64_t	 webhook_timestamp;
	char	*secret_fp;
	char	*type;
	char	 created_at[INSTANT_SIZE];	/* "" when none */
	char	*created_at_raw;
	char	*object_type;		/* NULL when no object key */
	char	*object_id;
	char	 updated_at[INSTANT_SIZE];	/* "" when none */
	int	 truncated;
	char	 sort_at[INSTANT_SIZE];
	int64_t	 attempts;		/* hand-outs over its life */
	int64_t	 failures;		/* since received or requeued */
	char	 next_at[INSTANT_SIZE];
	char	 finished_at[INSTANT_SIZE];	/* "" while pending */
	int	 requeued;
	char	*last_error;
	struct buf last_output;
	int64_t	 seq;			/* arrival tiebreak (internal order) */
	/* Filled by inbox_list for pending events: held behind an earlier
	 * pending event of the same object. */
	int	 blocked;
	/* Set by the drainer when the handler was given the object as the API
	 * returned it (normalised updated_at; "" otherwise): inbox_finish_done
	 * then advances both of the object's clocks to it (DESIGN.md "Stale
	 * rule": objects from the API carry updated_at as both clocks). */
	char	 object_version[INSTANT_SIZE];
};
void	inbox_event_init(struct inbox_event *e);
void	inbox_event_free(struct inbox_event *e);	/* then reusable */

/*
 * The drainer's cursor over due events, in hand-out order (sort_at, then
 * arrival).  An event is due when pending, next_at ≤ now, received at
 * least `settle_ns` ago (unless requeued), and no pending event of its own
 * object sorts before it (DESIGN.md "Per-object order under failure").
 * Call inbox_next_due repeatedly with the same cursor: INBOX_OK fills *e,
 * INBOX_NOT_FOUND means none left; BUSY/FAILED as usual.
 */
struct inbox_cursor {
	char	sort_at[INSTANT_SIZE];
	char	received_at[INSTANT_SIZE];
	int64_t	seq;
	int	started;
};
enum inbox_status inbox_next_due(struct inbox *ib, struct inbox_cursor *cur,
	    int64_t now_ns, int64_t settle_ns, struct inbox_event *e,
	    struct buf *err) __attribute__((warn_unused_result));

/* What inbox_claim decided. */
enum inbox_claim {
	INBOX_CLAIMED,		/* hand it out; attempts incremented */
	INBOX_CLAIMED_STALE,	/* requeued: hand out although stale */
	INBOX_MARKED_STALE,	/* older than what was done: now 'stale' */
	INBOX_SKIPPED		/* no longer pending or now held: leave it */
};

/*
 * In one transaction: re-check that `e` is still pending and first of its
 * object, apply the stale rule (DESIGN.md "Stale rule") and either mark it
 * stale or count the hand-out (attempts + 1, reflected in e->attempts).
 * *claim says which.  Returns INBOX_OK or BUSY/FAILED.
 */
enum inbox_status inbox_claim(struct inbox *ib, struct inbox_event *e,
	    int64_t now_ns, enum inbox_claim *claim, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Record the handler's verdict in one transaction.  Done: state 'done',
 * the object's clocks advanced (never moved back).  Failed: failures + 1;
 * `dead` when failures reaches max_attempts, else next_at = now + retry_ns.
 * `error` is a short reason, `output`/`output_len` the tail of the
 * handler's output (both may be NULL).  *dead tells whether it just died.
 */
enum inbox_status inbox_finish_done(struct inbox *ib, const struct inbox_event *e,
	    int64_t now_ns, const void *output, size_t output_len,
	    struct buf *err) __attribute__((warn_unused_result));
enum inbox_status inbox_finish_failed(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, int64_t retry_ns,
	    int64_t max_attempts, const char *error, const void *output,
	    size_t output_len, int *dead, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * The event was claimed, but what it would hand out is older than what was
 * already done for its object (a refetched object the API served at an
 * older version): mark it 'stale' in one transaction.
 */
enum inbox_status inbox_finish_stale(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Store events that did not come through the receiver — objects from the
 * API's list (`sync`), events from its events list (`recover`) — in ONE
 * transaction, each under its webhook_id with ON CONFLICT DO NOTHING, and,
 * when cursor_name is not NULL, record the cursor in the same transaction.
 * *stored counts the new ones; changed (NULL, or n entries) gets 1 for each
 * delivery stored, 0 for each duplicate.  With group commit the WAL is
 * synced before returning.  Returns INBOX_OK or BUSY/FAILED (then nothing
 * was stored and the cursor did not move).  The receiver's committer uses
 * it to commit many requests' deliveries at once.
 */
enum inbox_status inbox_store_batch(struct inbox *ib,
	    const struct inbox_delivery *d, size_t n, const char *cursor_name,
	    const char *updated_after, const char *page, int64_t *stored,
	    int *changed, struct buf *err) __attribute__((warn_unused_result));

/* Frames in the WAL after this connection's last commit (group commit). */
int	inbox_wal_frames(const struct inbox *ib);

/*
 * RESTART checkpoints (inbox_checkpoint_turn) hold new writers back while
 * they wait for the writer in progress and for readers of an older
 * snapshot (the drainer, a `status`): at most this long, ms, plus the copy
 * of what is left; then they give up until the next turn.  (With 200 ms,
 * make bench's drainer section, whose row counts are such readers, showed
 * a 178 ms p99 at 5 connections.)
 */
#define INBOX_RESTART_WAIT_MS	10

/*
 * A checkpoint turn: when the WAL has grown by INBOX_CHECKPOINT_FRAMES since
 * the last checkpoint began, a PASSIVE checkpoint (copies what it can,
 * blocks nobody); past INBOX_RESTART_FRAMES, the turn after a PASSIVE one
 * that left little behind (INBOX_RESTART_TAIL_FRAMES; at the latest from
 * INBOX_RESTART_MAX_FRAMES) is a RESTART one (see INBOX_RESTART_WAIT_MS),
 * so that the WAL stays bounded under unbroken load — PASSIVE alone let
 * it reach 1.6 GB in 15 s of saturation, since a writer restarts the WAL
 * only when it finds every frame copied back.  Checkpoints always sync the database file, whatever
 * the connection's synchronous level.
 *
 * One connection at a time across every program using the inbox, and
 * only after a commit that began since the last checkpoint ended: SQLite's
 * WAL-reset race (walsync.h, "Checkpoints").  `frames` is the WAL's size
 * as this connection last saw it, used only when the shared file could
 * not be opened (then each connection decides alone, as SQLite's own
 * auto-checkpoint does).  Cheap when no turn is due (no system call).
 * Returns INBOX_OK (also when it was not this connection's turn, or
 * another checkpoint was running), or INBOX_FAILED with the reason in err.
 */
enum inbox_status inbox_checkpoint_turn(struct inbox *ib, int frames,
	    struct buf *err);

/* Read a cursor: *updated_after and *page are malloc'd strings or NULL. */
enum inbox_status inbox_cursor_get(struct inbox *ib, const char *name,
	    char **updated_after, char **page, struct buf *err)
	    __attribute__((warn_unused_result));

/* Which events an operator command applies to (NULL/"" = any). */
struct inbox_filter {
	const char	*webhook_id;	/* exact id */
	const char	*state;
	const char	*type_glob;	/* GLOB pattern, e.g. "payment.*" */
	const char	*object_type;
	const char	*object_id;
	int64_t		 since_ns;	/* received at or after, when has_since */
	int64_t		 until_ns;	/* received before, when has_until */
	int		 has_since, has_until;	/* (the epoch is a real bound) */
	int64_t		 limit;		/* list only; 0 = no limit */
};

/* Call fn for each matching event in hand-out order (bodies not loaded
 * unless with_body).  fn returns 0 to go on, -1 to stop. */
enum inbox_status inbox_list(struct inbox *ib, const struct inbox_filter *f,
	    int with_body, int (*fn)(const struct inbox_event *, void *),
	    void *arg, struct buf *err) __attribute__((warn_unused_result));

/* Count matching events (for a dry run). */
enum inbox_status inbox_count(struct inbox *ib, const struct inbox_filter *f,
	    int64_t *n, struct buf *err) __attribute__((warn_unused_result));

/*
 * Requeue: make matching events pending and due now with a fresh failure
 * budget, marked requeued (handed out even if stale); events whose body
 * retention dropped are left as they are (nothing to hand out).  Forget: delete the
 * matching rows (the object's clocks stay).  Both in one transaction;
 * *n gets the number of events changed.
 */
enum inbox_status inbox_requeue(struct inbox *ib, const struct inbox_filter *f,
	    int64_t now_ns, int64_t *n, struct buf *err)
	    __attribute__((warn_unused_result));
enum inbox_status inbox_forget(struct inbox *ib, const struct inbox_filter *f,
	    int64_t *n, struct buf *err) __attribute__((warn_unused_result));

/* Would this event be stale now?  (For requeue's warning.)  *stale 0/1. */
enum inbox_status inbox_is_stale(struct inbox *ib, const struct inbox_event *e,
	    int *stale, struct buf *err) __attribute__((warn_unused_result));

/*
 * Retention (DESIGN.md `retention`): bodies and outputs of done/stale events
 * finished before now - retention are dropped; their rows, and object clocks
 * not advanced since, go after max(retention, 31 days).  Dead events are
 * never purged.  Works in batches of INBOX_PURGE_BATCH rows, one short
 * transaction each.  Counts go to *bodies and *rows.
 */
#define INBOX_PURGE_BATCH	500
#define INBOX_KEEP_IDS_NS	(31LL * 86400 * 1000000000)
enum inbox_status inbox_purge(struct inbox *ib, int64_t now_ns,
	    int64_t retention_ns, int64_t *bodies, int64_t *rows,
	    struct buf *err) __attribute__((warn_unused_result));

struct inbox_status_report {
	int64_t	pending, done, stale, dead;
	int64_t	waiting_retry;		/* pending with failures > 0 */
	int64_t	blocked;		/* pending behind an earlier one of its object */
	char	oldest_pending[INSTANT_SIZE];	/* received_at; "" when none */
	char	last_run_started[INSTANT_SIZE];	/* "" when never */
	char	last_run_finished[INSTANT_SIZE];
	char	last_run_outcome[64];
	char	lock_busy_since[INSTANT_SIZE];	/* runs found the lock held
						 * since then; "" when not */
};
enum inbox_status inbox_status_report(struct inbox *ib,
	    struct inbox_status_report *r, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * For `check`: can this process take the write lock and write?  A write
 * transaction that is rolled back (nothing changes).  Returns INBOX_OK or
 * BUSY/FAILED with SQLite's reason ("attempt to write a readonly
 * database", …) in err.
 */
enum inbox_status inbox_probe_write(struct inbox *ib, struct buf *err)
	    __attribute__((warn_unused_result));

/* A run found the run lock held (busy = 1: remember since when, unless
 * already set) or took it (busy = 0: forget).  For status. */
enum inbox_status inbox_note_lock(struct inbox *ib, int64_t now_ns, int busy,
	    struct buf *err) __attribute__((warn_unused_result));

/* Record a drainer run's start / end and outcome (short text). */
enum inbox_status inbox_note_run(struct inbox *ib, int64_t now_ns,
	    const char *outcome, struct buf *err)
	    __attribute__((warn_unused_result));

#endif
