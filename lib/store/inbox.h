/*
 * inbox: the event store (docs/DESIGN.md "The inbox", "The store contract",
 * "The drainer").
 *
 * This interface speaks of events, states and filters only — never of a
 * database's handles, settings or query text — so that two engines sit
 * behind it: SQLite (lib/store/sqlite/) and PostgreSQL (lib/store/
 * postgresql/, docs/postgresql.md), each a table of operations
 * (lib/store/engine.h) filled in its engine.c, with files named alike on
 * both sides: engine.c (connection, schema, storing), rules.c (order,
 * hold, stale, claims, verdicts), ops.c (the operator's commands),
 * history.c, copy.c.  lib/store/inbox.c hands each call to the engine the
 * inbox was opened with.
 *
 * Every write is one short explicit transaction that takes the write lock
 * first (a writer never fails half-way because another wrote meanwhile);
 * nothing here holds a transaction across a call boundary.
 *
 * Times are instants in the normalised form of lib/common/instant.h, passed as
 * nanoseconds since the epoch where the caller computes them.
 */
#ifndef WEBHOOK_INBOX_H
#define WEBHOOK_INBOX_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "lib/store/event.h"
#include "lib/common/instant.h"
#include "lib/common/util.h"

struct inbox;

/*
 * When a commit is durable (docs/DESIGN.md "Configuration", `synchronous`;
 * the config's CONFIG_SYNC_* map one to one, in the same order).
 */
enum inbox_sync {
	INBOX_SYNC_FULL = 0,	/* on disk before the call returns: a
				 * receiver's 200 survives a power cut */
	INBOX_SYNC_NORMAL = 1	/* survives the process's crash; a power cut
				 * may lose the last commits, never corrupt */
};

struct inbox_options {
	int64_t			busy_timeout_ms;	/* wait for the write lock, ≥ 1 */
	enum inbox_sync		synchronous;
	/*
	 * Group commit (for a long-lived receiver process with many threads
	 * storing; ignored unless synchronous is FULL): commit without
	 * waiting for the disk while the write lock is held, then wait for
	 * it after releasing the lock, so that concurrent writers' syncs
	 * overlap instead of queueing behind the lock.  inbox_store still
	 * returns only once the event is on disk.  Upkeep leaves the store
	 * path: call inbox_maintain between requests.
	 */
	int			group_commit;
	/*
	 * One connection per process, one request per process (plain CGI):
	 * closing it leaves the store's upkeep to the long-lived programs
	 * (webhook-drain's runs, the FastCGI processes) and to inbox_maintain,
	 * called after the answer was sent, which does what is due (no
	 * drainer running, say) so the store stays bounded.  See
	 * docs/durability.md for what that is in the SQLite implementation.
	 */
	int			short_lived;
	/*
	 * Monotonic ns (util_mono_ns) after which inbox_open waits no longer
	 * for a lock, whatever busy_timeout_ms allows (0: no such limit): a
	 * receiver reopening for a request bounds the open by the request's
	 * deadline.  Only the open: stores take theirs from the delivery.
	 */
	int64_t			deadline;
	/*
	 * A drainer's lease on an event's object, ns (0: a default of
	 * INBOX_LEASE_DEFAULT_NS).  Only where several drainers share the
	 * inbox (PostgreSQL): inbox_claim takes the lease, the finish_*
	 * calls are fenced by it, and an expired one is taken over by another
	 * drainer — so it must outlast a hand-out (handler_timeout and the
	 * refetch) with a margin.  The SQLite inbox ignores it: one run at a
	 * time holds the run lock.
	 */
	int64_t			lease_ns;
	/*
	 * The longest any one call waits for the database, ms (0: the
	 * implementation's default).  The drainer's calls take
	 * busy_timeout_ms, so that a server that stops answering (frozen,
	 * or a network that stops forwarding without closing) costs each
	 * call that much and a run's --max-time is held (docs/jobs.md).
	 * PostgreSQL: each statement and the connection attempt (the default:
	 * busy_timeout_ms, at least 60 s a statement and 10 s to connect).
	 * SQLite: its waits are for the write lock, busy_timeout_ms already.
	 */
	int64_t			call_wait_ms;
};
#define INBOX_LEASE_DEFAULT_NS	(10LL * 60 * 1000000000)

/* Outcome of a call that may meet a busy or broken database. */
enum inbox_status {
	INBOX_OK = 0,
	INBOX_DUPLICATE,	/* inbox_store: the webhook-id is already there */
	INBOX_NOT_FOUND,	/* no such event */
	INBOX_BUSY,		/* the write lock stayed taken past busy_timeout */
	INBOX_FAILED,		/* anything else: disk full, read-only, I/O… */
	INBOX_LOST		/* finish_*: the event is no longer this
				 * drainer's (forgotten or finished meanwhile;
				 * on PostgreSQL, its lease expired and another
				 * drainer took the object over and hands the
				 * event out again): nothing recorded */
};

/* The backends this binary was built with: "sqlite" or "sqlite,
 * postgresql" (--version). */
const char *inbox_backends(void);
/* `database` as messages and reports show it: a file's path as it is, a
 * PostgreSQL URI without its password (host, port, dbname, user). */
void	inbox_database_name(const char *database, char *out, size_t outsz);
/* The backend an open inbox uses: "sqlite" or "postgresql". */
const char *inbox_backend_name(const struct inbox *ib);
/*
 * Does `database` (the config's value) name a file on this machine (a
 * SQLite inbox: the document-root guard, file modes and the run lock
 * apply to it), rather than a database server (a libpq URI,
 * postgresql:// or postgres://)?  The one place that reads the name's
 * form: lib/store/inbox.c chooses the engine by it, and callers outside
 * lib/store/ ask here.  Inline so that the config parser, which resolves
 * a file's path, can ask without linking the store.
 */
static inline int
inbox_is_file(const char *database)
{
	return database == NULL || (strncmp(database, "postgresql://", 13) != 0 &&
	    strncmp(database, "postgres://", 11) != 0);
}

/*
 * PostgreSQL (`path` a libpq URI, util_is_postgresql): connect within
 * the options' deadline (else busy_timeout_ms), apply or migrate the
 * schema, make commits wait for the WAL flush (synchronous_commit at
 * least `on`, whatever the server's default); the password comes from
 * libpq's own means (a passfile), and messages name the database without
 * it.  A binary built without PostgreSQL refuses it (INBOX_FAILED).
 * After a failed connection attempt, further opens in the same process
 * return INBOX_BUSY at once for a short backoff (docs/postgresql.md).
 *
 * SQLite: open (creating if needed) the inbox at `path` as util_path_resolve
 * resolves it (the file the document-root guard judged; a path whose
 * directory does not resolve is refused), with the options' commit
 * durability, waiting up to busy_timeout_ms for the write lock (in short
 * steps), the schema applied to a new inbox and an older one migrated.
 * Returns INBOX_OK and *out (close with inbox_close), or another status
 * with a one-line reason in `err` (which names the path and the store's
 * message) and *out NULL.
 */
enum inbox_status inbox_open(const char *path, const struct inbox_options *o,
	    struct inbox **out, struct buf *err)
	    __attribute__((warn_unused_result));
void	inbox_close(struct inbox *ib);	/* accepts NULL */

/*
 * Call first in a process that will open one short_lived connection and
 * then end (plain CGI), before any store is opened and while it has one
 * thread: tunes the store's process-wide memory for a life of a few
 * milliseconds (docs/cgi.md).  Optional: without it everything works, a
 * little slower.
 */
void	inbox_process_short_lived(void);

/* The schema version this program writes; an inbox with a newer one is
 * refused by inbox_open. */
int	inbox_schema_version(void);

/*
 * Upkeep between requests (after the answer was sent), on a connection
 * opened with group_commit or short_lived: whatever the store needs done
 * off the request path to stay bounded (for the SQLite implementation,
 * docs/checkpoints.md).  Cheap when nothing is due; a no-op on other
 * connections.  Returns INBOX_OK, or INBOX_FAILED with the reason in err
 * (harmless: the next call tries again).
 */
enum inbox_status inbox_maintain(struct inbox *ib, struct buf *err);

/*
 * Background upkeep for a long-lived process whose many threads store
 * through one writer connection (the receiver's committer): what the
 * engine needs done off the request path to stay bounded (SQLite: WAL
 * checkpoint turns on a connection and a thread of their own,
 * docs/checkpoints.md; a database server needs none).  inbox_upkeep_start
 * returns INBOX_OK with *out NULL when there is nothing to do, else the
 * upkeep to tell after each commit of `writer` (inbox_upkeep_note: cheap,
 * never blocks on I/O) and to stop (joins its thread, closes its
 * connection).  Both accept NULL.
 */
struct inbox_upkeep;
enum inbox_status inbox_upkeep_start(const char *database,
	    const struct inbox_options *o, struct inbox_upkeep **out,
	    struct buf *err) __attribute__((warn_unused_result));
void	inbox_upkeep_note(struct inbox_upkeep *up, const struct inbox *writer);
void	inbox_upkeep_stop(struct inbox_upkeep *up);

/*
 * Sources (docs/DESIGN.md "Sources"): every event belongs to one, by name.
 * The top-level keys of the config are the source called "default"
 * (INBOX_DEFAULT_SOURCE), whose events keep their webhook-id as their
 * inbox id; an event of a [source NAME] section is stored under
 * "NAME/" + the provider's own id, so that two providers' ids never meet
 * and duplicates are found per source.
 */
#define INBOX_DEFAULT_SOURCE	"default"
/* Longest source name, bytes (a-z, 0-9, '_', '-'; config.h checks). */
#define INBOX_SOURCE_MAX	32

/* A verified delivery, as the receiver stores it. */
struct inbox_delivery {
	const char		*webhook_id;	/* NUL-terminated; for a named
						 * source "NAME/provider-id" */
	/* Its source's name: INBOX_DEFAULT_SOURCE, or a [source NAME]'s.
	 * NULL is taken as INBOX_DEFAULT_SOURCE. */
	const char		*source;
	int64_t			 webhook_timestamp;	/* Unix seconds */
	const char		*secret_fp;	/* fingerprint of the verifying key */
	const void		*body;		/* exact bytes */
	size_t			 body_len;
	const struct event_fields *fields;	/* extracted at receive time */
	/*
	 * Monotonic ns (util_mono_ns) after which the store waits no longer
	 * for the write lock (INBOX_BUSY), whatever busy_timeout_ms allows:
	 * the request's own deadline, so that every answer leaves in time
	 * (docs/caps.md, RECEIVE_DEADLINE_S).  0: busy_timeout_ms alone.
	 */
	int64_t			 deadline;
};

/*
 * Store a delivery under its webhook-id in one transaction; a webhook-id
 * already there is left as it is.  An id already stored from another
 * source (a default-source sender whose own ids look like "NAME/…") is not
 * a duplicate: INBOX_FAILED, saying whose it is, nothing written.  The wait for the write lock ends at
 * busy_timeout_ms or at d->deadline, whichever comes first.
 * INBOX_OK: new and committed (durable per the synchronous level);
 * INBOX_DUPLICATE: already there, nothing written (with group commit it is
 * made durable first, since the first copy may not be yet); INBOX_BUSY / INBOX_FAILED:
 * nothing written, reason in err.  After INBOX_FAILED the caller should
 * close and reopen the inbox before the next call.
 */
/* Before it answers, a store checks that the path still names the files
 * it wrote (not replaced, moved, truncated or deleted meanwhile): else
 * INBOX_FAILED, saying so. */
enum inbox_status inbox_store(struct inbox *ib, const struct inbox_delivery *d,
	    struct buf *err) __attribute__((warn_unused_result));

/* One event as the drainer and the operator see it. */
struct inbox_event {
	char	*webhook_id;
	char	 source[INBOX_SOURCE_MAX + 1];	/* its source's name */
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
	 * then advances both of the object's clocks to it (docs/DESIGN.md
	 * "Stale rule": objects from the API carry updated_at as both
	 * clocks). */
	char	 object_version[INSTANT_SIZE];
};
void	inbox_event_init(struct inbox_event *e);
void	inbox_event_free(struct inbox_event *e);	/* then reusable */
/*
 * A deep copy of src into dst (initialised, or freed: its old contents
 * are freed first), every member: a copy that is later finished must
 * find its row (received_at) and hand out what a run would (source...).
 * 0, or -1 when out of memory (dst then freed).
 */
int	inbox_event_copy(struct inbox_event *dst, const struct inbox_event *src)
	    __attribute__((warn_unused_result));

/*
 * The drainer's cursor over due events, in hand-out order (sort_at, then
 * arrival).  An event is due when pending, next_at ≤ now, received at
 * least `settle_ns` ago (unless requeued), and no pending event of its own
 * object sorts before it (docs/DESIGN.md "Per-object order under failure").
 * Times from the future are due too (the clock stepped back, or ahead and
 * back: an NTP step, a restored VM): a next attempt later than now +
 * `future_ns` (retry_max: no backoff schedules one that far; 0: no such
 * rule), or an arrival later than now + settle_ns.
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
	    int64_t now_ns, int64_t settle_ns, int64_t future_ns,
	    struct inbox_event *e, struct buf *err)
	    __attribute__((warn_unused_result));

/* What inbox_claim decided. */
enum inbox_claim {
	INBOX_CLAIMED,		/* hand it out; attempts incremented */
	INBOX_CLAIMED_STALE,	/* requeued: hand out although stale */
	INBOX_MARKED_STALE,	/* older than what was done: now 'stale' */
	INBOX_SKIPPED		/* no longer pending or now held: leave it */
};

/*
 * In one transaction: re-check that `e` is still pending and first of its
 * object, apply the stale rule (docs/DESIGN.md "Stale rule") and either mark it
 * stale or count the hand-out (attempts + 1, reflected in e->attempts).
 * *claim says which.  Returns INBOX_OK or BUSY/FAILED.
 *
 * Where several drainers share the inbox (PostgreSQL), the claim also
 * takes this connection's lease on the event's object (or on the event,
 * when it has none) for the options' lease_ns, in the same transaction:
 * INBOX_SKIPPED when another drainer holds a lease that has not expired.
 * The finish_* calls below then record only while this connection still
 * holds that lease, release it, and return INBOX_LOST (nothing recorded)
 * when another drainer took it over after it expired.
 */
enum inbox_status inbox_claim(struct inbox *ib, struct inbox_event *e,
	    int64_t now_ns, enum inbox_claim *claim, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Record the handler's verdict in one transaction.  Done: state 'done',
 * the object's clocks advanced (never moved back); `output`/`output_len`
 * the tail of the handler's output (may be NULL).  Failed: see
 * struct inbox_failure.
 *
 * A verdict records only on the very row claimed (the same webhook_id
 * and received_at: a replay stored after a forget is another event),
 * still pending, and only while it is this drainer's (SQLite: its run
 * holds the run lock; PostgreSQL: this connection's lease from
 * inbox_claim).  Otherwise nothing is recorded on any event and the call
 * returns INBOX_LOST, on both engines — with one exception: a done
 * verdict whose row was forgotten while the handler ran, by a drainer
 * that still holds the object, still advances the object's clocks, since
 * the handler did apply that version (an older event stored later must
 * be stale; forget leaves clocks as they are).
 */
enum inbox_status inbox_finish_done(struct inbox *ib, const struct inbox_event *e,
	    int64_t now_ns, const void *output, size_t output_len,
	    struct buf *err) __attribute__((warn_unused_result));

/* A failed hand-out as inbox_finish_failed records it: failures + 1; the
 * event dies when failures reaches max_attempts, else its next attempt is
 * due at now_ns + retry_ns. */
struct inbox_failure {
	int64_t		 now_ns;	/* when the verdict was reached */
	int64_t		 retry_ns;	/* backoff before the next attempt, ≥ 0 */
	int64_t		 max_attempts;	/* failures that make it dead, ≥ 1 */
	const char	*error;		/* short reason ("exit 1"); may be NULL */
	const void	*output;	/* tail of the handler's output; may be NULL */
	size_t		 output_len;
	int		 dead;		/* out: this failure made it dead */
};
enum inbox_status inbox_finish_failed(struct inbox *ib,
	    const struct inbox_event *e, struct inbox_failure *f,
	    struct buf *err) __attribute__((warn_unused_result));

/*
 * The event was claimed, but what it would hand out is older than what was
 * already done for its object (a refetched object the API served at an
 * older version): mark it 'stale' in one transaction.
 */
enum inbox_status inbox_finish_stale(struct inbox *ib,
	    const struct inbox_event *e, int64_t now_ns, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Many deliveries stored in ONE transaction, each under its webhook_id (a
 * duplicate is left as it is): the receiver's committer commits many
 * requests' deliveries at once; `sync` and `recover` store a page of the
 * API's objects or events.  In: d (n entries) and, optionally, a cursor
 * recorded in the same transaction (cursor_name NULL: none; `sync`
 * resumes from it, inbox_cursor_get).  Out: stored, the new ones; changed,
 * when not NULL (n entries, the caller's), 1 for each delivery stored, 0
 * for each duplicate, -1 for each whose webhook-id is already stored from
 * another source (inbox_store's INBOX_FAILED: that delivery is not
 * stored, the others are as if it were not in the batch; the call returns
 * INBOX_OK with the first such delivery's reason in err).  With changed
 * NULL such a delivery fails the whole batch (INBOX_FAILED, its reason in
 * err).  With group commit the batch is durable before the call returns.
 */
struct inbox_batch {
	const struct inbox_delivery *d;		/* in: n deliveries */
	size_t		 n;
	const char	*cursor_name;		/* in: NULL, or the cursor to set */
	const char	*cursor_updated_after;	/* in: its values (NULL: none) */
	const char	*cursor_page;
	int64_t		 stored;		/* out */
	int		*changed;		/* out: NULL or n entries */
};

/*
 * Store a batch (above), waiting for the write lock until busy_timeout_ms
 * or the earliest d[i].deadline, whichever comes first.  Returns INBOX_OK, or BUSY/FAILED with the reason
 * in err: then nothing was stored, stored is 0 and the cursor did not
 * move.  After INBOX_FAILED the caller should close and reopen the inbox.
 */
enum inbox_status inbox_store_batch(struct inbox *ib, struct inbox_batch *b,
	    struct buf *err) __attribute__((warn_unused_result));

/* Read a cursor: *updated_after and *page are malloc'd strings or NULL. */
enum inbox_status inbox_cursor_get(struct inbox *ib, const char *name,
	    char **updated_after, char **page, struct buf *err)
	    __attribute__((warn_unused_result));

/* Which events an operator command applies to (NULL/"" = any). */
struct inbox_filter {
	const char	*webhook_id;	/* exact id */
	const char	*source;	/* a source's name ("default" too) */
	const char	*state;		/* a state, or "retrying": pending
					 * events that failed and wait for
					 * their next attempt */
	const char	*type_glob;	/* shell-style pattern (*, ?, [...]),
					 * case-sensitive, e.g. "payment.*" */
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
 * Retention (docs/DESIGN.md "Retention"): bodies and outputs of done/stale
 * events finished before now - retention are dropped; their rows, and
 * object clocks not advanced since, go after max(retention, 31 days).  Dead
 * events are never purged.  Works in batches of INBOX_PURGE_BATCH rows, one
 * short transaction each.  Counts go to *bodies and *rows.
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
	int64_t	failing_objects;	/* objects with an event waiting_retry */
	char	oldest_failing[INSTANT_SIZE];	/* the earliest first failure
						 * (since received or requeued)
						 * of a waiting_retry event
						 * (its received_at if it failed
						 * before schema 4); "" when none */
	char	last_done[INSTANT_SIZE];	/* newest finished_at of a done
						 * event; "" when none */
	char	oldest_pending[INSTANT_SIZE];	/* received_at; "" when none */
	char	last_run_started[INSTANT_SIZE];	/* "" when never */
	char	last_run_finished[INSTANT_SIZE];
	char	last_run_outcome[64];
	char	lock_busy_since[INSTANT_SIZE];	/* runs found the lock held
						 * since then; "" when not */
	/* Pending events' latest next attempt and latest arrival ("" when
	 * none): in the future beyond retry_max or settle, the clock stepped
	 * back (status says so; the drainer takes them as due). */
	char	latest_next_at[INSTANT_SIZE];
	char	newest_pending[INSTANT_SIZE];
};
enum inbox_status inbox_status_report(struct inbox *ib,
	    struct inbox_status_report *r, struct buf *err)
	    __attribute__((warn_unused_result));

/* One source's events by state, for status, the report page and metrics. */
struct inbox_source_count {
	char	source[INBOX_SOURCE_MAX + 1];
	int64_t	pending, done, stale, dead;
	int64_t	waiting_retry;		/* pending with failures > 0 */
};
/*
 * Call fn once per source that has events, in name order (bodies
 * untouched; one read transaction).  fn returns 0 to go on, -1 to stop.
 */
enum inbox_status inbox_count_sources(struct inbox *ib,
	    int (*fn)(const struct inbox_source_count *, void *), void *arg,
	    struct buf *err) __attribute__((warn_unused_result));

/*
 * For `check`: can this process take the write lock and write?  A write
 * transaction that is rolled back (nothing changes).  Returns INBOX_OK or
 * BUSY/FAILED with the store's reason ("attempt to write a readonly
 * database", …) in err.
 */
enum inbox_status inbox_probe_write(struct inbox *ib, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * For `check`: can this user open what every process that writes the
 * inbox shares beside it?  For SQLite, the page of WAL sync and
 * checkpoint counters (<database>.wal-sync, lib/store/sqlite/walsync.h):
 * without it each process syncs alone and checkpoints outside the
 * schedule that avoids SQLite's WAL-reset race.  INBOX_OK with its name
 * in `what`; INBOX_NOT_FOUND when the engine shares no such file (a
 * database server); INBOX_FAILED with the reason in err.
 */
enum inbox_status inbox_probe_shared(struct inbox *ib, struct buf *what,
	    struct buf *err) __attribute__((warn_unused_result));

/* A run found the run lock held (busy = 1: remember since when, unless
 * already set) or took it (busy = 0: forget).  For status. */
enum inbox_status inbox_note_lock(struct inbox *ib, int64_t now_ns, int busy,
	    struct buf *err) __attribute__((warn_unused_result));

/* Record a drainer run's start / end and outcome (short text). */
enum inbox_status inbox_note_run(struct inbox *ib, int64_t now_ns,
	    const char *outcome, struct buf *err)
	    __attribute__((warn_unused_result));

/* ---- history (docs/report.md; lib/store/history.h) ----------------------- */

/* A drainer run as `runs` keeps it.  result: "ok", "failures", "error". */
struct inbox_run_record {
	int64_t		 started_ns, finished_ns;
	int64_t		 claimed, done, failed, retried, dead, stale, refetched;
	int		 budget_hit;	/* stopped by --max-time */
	char		 result[16];
};

/*
 * At the end of a run, in one transaction: add the run's increments (n
 * deltas, fine buckets; a HISTORY_IDX_MAX delta keeps the larger value),
 * record the run (NULL: none), fold fine buckets older than
 * HISTORY_FINE_KEEP_S before now into days, and drop runs older than
 * HISTORY_RUNS_KEEP_S.  Sums are preserved by the fold: totals only grow.
 */
struct history_delta;
enum inbox_status inbox_history_add(struct inbox *ib,
	    const struct history_delta *d, size_t n,
	    const struct inbox_run_record *run, int64_t now_ns, struct buf *err)
	    __attribute__((warn_unused_result));

/* One stored history row; strings live only for the callback. */
struct inbox_history_row {
	int64_t		 width_s, bucket_s;
	const char	*name, *label;
	int		 idx;
	int64_t		 n;
};
/* Every row whose bucket starts at or after since_s (INT64_MIN: all),
 * oldest first.  fn returns 0 to go on, -1 to stop. */
enum inbox_status inbox_history_read(struct inbox *ib, int64_t since_s,
	    int (*fn)(const struct inbox_history_row *, void *), void *arg,
	    struct buf *err) __attribute__((warn_unused_result));

/* Runs that started at or after since_ns, oldest first. */
enum inbox_status inbox_runs_read(struct inbox *ib, int64_t since_ns,
	    int (*fn)(const struct inbox_run_record *, void *), void *arg,
	    struct buf *err) __attribute__((warn_unused_result));

/* The queue now, beyond inbox_status_report: events ready to hand out
 * (pending, due, not held) and the oldest of them's received_at ("" when
 * none); objects held behind a head waiting for its retry. */
struct inbox_queue {
	int64_t	ready;
	char	oldest_ready[INSTANT_SIZE];
	int64_t	blocked_objects;
};
enum inbox_status inbox_queue_now(struct inbox *ib, int64_t now_ns,
	    struct inbox_queue *q, struct buf *err)
	    __attribute__((warn_unused_result));

/* A blocked object: its head event (waiting for a retry) and how many
 * pending events of the object wait behind it. */
struct inbox_blocked {
	const char	*object_type, *object_id, *webhook_id, *last_error;
	int64_t		 attempts, behind;
	const char	*next_at;
};
/* The `limit` dead events that died last, newest first (bodies not
 * loaded), each with the error of its first failed hand-out (NULL when
 * not recorded: failed before schema version 3); reads only dead rows,
 * whatever the inbox's size. */
enum inbox_status inbox_dead_latest(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_event *, const char *first_error,
	    void *), void *arg,
	    struct buf *err) __attribute__((warn_unused_result));

/*
 * For `check` on a database server (PostgreSQL): what the server says.
 * INBOX_OK with *f filled; INBOX_NOT_FOUND for an inbox that is a file
 * (SQLite: nothing more to say than inbox_probe_write does).
 */
struct inbox_server_facts {
	char	server_version[64];	/* "15.18 (Debian 15.18-0+deb12u1)" */
	char	sync_default[32];	/* synchronous_commit as the session
					 * began (the server's, role's or
					 * database's default) */
	char	sync_effective[32];	/* as this connection commits */
	int	schema_version;
	char	user[64];		/* the role connected as */
};
enum inbox_status inbox_server_facts(struct inbox *ib,
	    struct inbox_server_facts *f, struct buf *err)
	    __attribute__((warn_unused_result));

/* At most `limit` blocked objects, longest queue first. */
enum inbox_status inbox_blocked_list(struct inbox *ib, int64_t limit,
	    int (*fn)(const struct inbox_blocked *, void *), void *arg,
	    struct buf *err) __attribute__((warn_unused_result));

/* ---- copying an inbox (`webhook-drain copy`; lib/operator/copy.h, docs/moving.md) --
 *
 * Two calls move every table's rows between two inboxes of any
 * implementation, in a portable form: each table as a fixed list of
 * columns (inbox_table_info), each row as that many values.  What to do
 * with a row that both sides have is the caller's decision (lib/operator/copy.c),
 * taken inside the destination's write transaction.  The SQLite
 * implementation is lib/store/sqlite/copy.c, PostgreSQL's lib/store/postgresql/copy.c.
 */
enum inbox_table {
	INBOX_EVENTS,		/* every column of an event (lib/store/tables.c
				 * lists them); key webhook_id */
	INBOX_OBJECTS,		/* the per-object clocks; key (object_type,
				 * object_id) */
	INBOX_CURSORS,		/* sync's and recover's cursors; key name */
	INBOX_HISTORY,		/* history buckets; key (width_s, bucket_s,
				 * name, label, idx) */
	INBOX_RUNS,		/* the runs kept for history; key started_at */
	INBOX_NTABLES
};

struct inbox_table_info {
	const char		*name;		/* "events", … */
	int			 ncols;		/* values per row */
	int			 nkey;		/* the first nkey columns are its key */
	const char *const	*cols;		/* column names */
};
/* The portable form of table t (static; never NULL for t < INBOX_NTABLES). */
const struct inbox_table_info *inbox_table_info(enum inbox_table t);

/* One value: times as their normalised instants (TEXT), bodies and
 * outputs as BLOB, counts INTEGER; an absent value is NULL.  p/len point
 * into memory the call that hands the value out owns. */
enum inbox_vtype { INBOX_V_NULL, INBOX_V_INT, INBOX_V_TEXT, INBOX_V_BLOB };
struct inbox_value {
	enum inbox_vtype	 type;
	int64_t			 i;		/* INBOX_V_INT */
	const void		*p;		/* TEXT (no NUL needed), BLOB */
	size_t			 len;
};

/*
 * One page of a table, as inbox_table_read reads it: up to max_rows rows
 * of table t whose key sorts after `after` (its nkey values; NULL: from
 * the first row), in key order, stopping early once max_bytes of TEXT and
 * BLOB values were read (at least one row).  Out: n, the rows read; fewer
 * than max_rows with full 0 means the table ended; full = 1 when the byte
 * bound cut the page.
 */
struct inbox_page {
	enum inbox_table	 t;
	const struct inbox_value *after;
	size_t			 max_rows;	/* ≥ 1 */
	size_t			 max_bytes;
	size_t			 n;		/* out */
	int			 full;		/* out */
};
/*
 * Read page pg (above) in one short read transaction that ends before fn
 * is called once with the whole page (rows: n × ncols values, valid during
 * the call only; not called for an empty page): a caller that writes
 * elsewhere meanwhile never pins this inbox's snapshot.  fn returns 0, or
 * -1 to report a failure of its own (this call then still returns
 * INBOX_OK; the caller keeps its reason).  Returns INBOX_OK or BUSY/FAILED
 * with the reason in err.
 */
enum inbox_status inbox_table_read(struct inbox *ib, struct inbox_page *pg,
	    int (*fn)(const struct inbox_value *rows, size_t n, void *arg),
	    void *arg, struct buf *err) __attribute__((warn_unused_result));

/*
 * What a merge callback decided for one incoming row.  On INBOX_MERGE_PUT
 * the row `out` replaces (or becomes) the destination's row, and, for a
 * table with a one-column key, `ledger` (when not empty) is recorded as
 * the row's copy record (schema.sql, table `copied`).
 */
enum inbox_merge { INBOX_MERGE_KEEP, INBOX_MERGE_PUT };
/*
 * in: the incoming row; cur: the destination's row with the same key
 * (NULL: none); led/led_len: the copy record kept for that key (NULL:
 * none; tables with a one-column key only); out: ncols values, preset to
 * in, which the callback may point at in's, cur's or its own memory
 * (valid until it returns); ledger: empty, to fill for a PUT.
 */
typedef enum inbox_merge (*inbox_merge_fn)(enum inbox_table t,
	    const struct inbox_value *in, const struct inbox_value *cur,
	    const void *led, size_t led_len, struct inbox_value *out,
	    struct buf *ledger, void *arg);

/*
 * Merge n rows (rows: n × ncols values) into table t in ONE write
 * transaction, asking fn about each row (above).  dry: decide only, in a
 * read transaction, writing nothing.  *put = rows fn decided to write.
 * Returns INBOX_OK, or BUSY/FAILED with the reason in err (then nothing
 * of this call was written).
 */
enum inbox_status inbox_table_merge(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *rows, size_t n, inbox_merge_fn fn,
	    void *arg, int dry, int64_t *put, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Can this inbox hold `row` of table t exactly as it is (every value
 * stored and read back with the same type and bytes)?  1, or 0 with the
 * reason in why (one line, no row data).  No I/O.  A SQLite inbox holds
 * any row; a PostgreSQL one no text that is not valid UTF-8 or holds a
 * NUL byte, and no value of another type than its column's (docs/
 * postgresql.md).  A copy leaves such rows out and reports them
 * (lib/operator/copy.c) rather than mend them into another key or content.
 */
int	inbox_table_holds(struct inbox *ib, enum inbox_table t,
	    const struct inbox_value *row, struct buf *why);

#endif
