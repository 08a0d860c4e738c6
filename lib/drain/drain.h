/*
 * drain: one `webhook-drain run` (docs/DESIGN.md "The drainer", contract):
 * take the run lock, claim due events in order, hand each to the handler
 * (refetching truncated objects first), record done / retry / dead with
 * the retry policy below, then apply retention and note the run's outcome.
 *
 * The library prints nothing: what happened is reported through struct
 * drain_hooks as it happens and summed up in struct drain_result, so the
 * CLI decides what cron mails and the tests assert on the same facts.
 */
#ifndef WEBHOOK_DRAIN_H
#define WEBHOOK_DRAIN_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/program/config.h"
#include "lib/drain/handler.h"
#include "lib/store/inbox.h"
#include "lib/drain/refetch.h"
#include "lib/common/util.h"

/* Bounds of the retry jitter, per mille of the backoff: a burst of
 * failures must not come back in lockstep. */
#define DRAIN_JITTER_MIN	750
#define DRAIN_JITTER_SPAN	500

/*
 * A drainer's lease on the object it hands out, where several drainers
 * share the inbox (PostgreSQL; store/inbox.h, inbox_options.lease_ns), taken at
 * the claim and never renewed: longer than one hand-out can take — the
 * event's own refetch (one API timeout), the handler until its kill
 * (handler_timeout and the kill grace twice) — and than any wait the run
 * puts between the handler's end and its verdict.  The run looks after
 * its handlers while another job's refetch waits on the API and before
 * each claim (docs/jobs.md), so that wait is at most one inbox call: a
 * second API timeout and DRAIN_LEASE_MARGIN_S cover it, the verdict's
 * own transaction and a slow machine.  A drainer killed mid-hand-out
 * delays its object by at most this much.
 */
#define DRAIN_LEASE_MARGIN_S	10
#define DRAIN_LEASE_NS(c) \
	(((c)->handler_timeout_s + 2 * (c)->api_timeout_s + \
	DRAIN_LEASE_MARGIN_S) * 1000000000LL + 2 * HANDLER_KILL_GRACE_NS)
/* drain_run's run lock where none is taken (a PostgreSQL inbox). */
#define DRAIN_NO_RUNLOCK	(-3)

/* What happened to one event. */
enum drain_outcome {
	DRAIN_DONE,		/* handler exited 0; recorded done */
	DRAIN_STALE,		/* older than what was done: marked stale */
	DRAIN_STALE_FETCHED,	/* the API's object is older than what was
				 * done: marked stale, not handed out */
	DRAIN_RETRY,		/* failed; pending until its next attempt */
	DRAIN_DEAD		/* failed max_attempts times: dead */
};

struct drain_event {
	enum drain_outcome		 outcome;
	const struct inbox_event	*e;	/* as claimed */
	/* DONE, RETRY, DEAD: the handler's result (for a failed refetch, the
	 * reason in r->error and no output). */
	const struct handler_result	*r;
	/* RETRY, DEAD: failures counted so far, this one included (1 on the
	 * first failure, max_attempts on death). */
	int64_t				 failures;
	/* DONE, RETRY, DEAD, STALE_FETCHED: the API answered this event's
	 * refetch with its object (handed out, or judged stale by it); 0
	 * otherwise (no refetch, 404, a failed one).  The run's history
	 * counts these (lib/report/runrec.c). */
	int				 refetched;
};

/* The run's reports; every function may be NULL.  Strings live only for
 * the call. */
struct drain_hooks {
	/* An event's outcome, as soon as it is recorded. */
	void	(*event)(void *arg, const struct drain_event *ev);
	/* A problem an operator must hear of (cron mails it): one line, no
	 * trailing newline, never a secret. */
	void	(*problem)(void *arg, const char *line);
	void	 *arg;
};

struct drain_counts {
	int64_t	done, stale, failed, dead, skipped;
};

struct drain_result {
	struct drain_counts	n;
	int64_t			bodies;		/* retention: bodies dropped */
	int64_t			rows;		/* retention: records dropped */
	int			broken;		/* the inbox failed mid-run */
	int			max_time_reached;	/* stopped by max_time_s */
	int			stopped;	/* stopped by lim->stop (a signal) */
	int			jobs;		/* handlers it ran at once, at most */
};

/* How long a run goes on, and how wide. */
struct drain_limits {
	int64_t				 max_time_s;	/* 0: no limit */
	/* Handlers at once, 1..CONFIG_JOBS_MAX; 0: the config's `jobs`. */
	int				 jobs;
	/* NULL, or a flag a signal handler sets: once nonzero, no event is
	 * claimed any more; the handlers running are let finish (or time
	 * out) and recorded, then the run ends as usual.  The caller's
	 * handler should use SA_RESTART: the wait for handlers returns on a
	 * signal whatever the flag, and the inbox's calls are not disturbed. */
	const volatile sig_atomic_t	*stop;
};

enum drain_status {
	DRAIN_RAN,		/* the run happened: see drain_result */
	DRAIN_LOCKED,		/* another run holds the lock: nothing done */
	DRAIN_NOT_STARTED	/* the lock or the inbox failed (reported) */
};

/*
 * One run over c->database with c->handler (which must be set): the lock
 * (drain/runlock.h; a busy lock is noted in the inbox for `status`), the config
 * file's directory as the working directory (drain_enter_config_dir), then
 * due events until none is left, lim->max_time_s has passed or lim->stop
 * is set, then retention.  *res is filled for DRAIN_RAN.
 *
 * Up to lim->jobs handlers run at once (docs/jobs.md).  The unit is one
 * event: next due → claim → handler → verdict, every inbox call in this
 * process, each a short transaction, none open while handlers run.  Never
 * two events of one object at once: a pending event in flight holds the
 * later events of its object (the inbox's hold rule), and the run skips
 * an event whose object it has in flight (one that sorts earlier, arrived
 * late) and comes back to it once that object's handler ended.  Events
 * without an object key are independent.  A claim the inbox skips (the
 * event moved on, or is held) is left as it is.  At max_time or stop, no
 * more claims; the running handlers are waited for and recorded.  The
 * running handlers are looked after (pipes, timeouts, verdicts) before
 * each claim and while a refetch waits on the API, never left alone.
 * lim may be NULL: no time limit, the config's `jobs`, no stop flag.
 */
enum drain_status drain_run(const struct config *c,
	    const struct drain_limits *lim, const struct drain_hooks *h,
	    struct drain_result *res);

/*
 * The wait before the next attempt after `failures` earlier failures, in
 * ns: retry_base_s × 2^failures, at most retry_max_s, times a random factor
 * in [DRAIN_JITTER_MIN, DRAIN_JITTER_MIN + DRAIN_JITTER_SPAN) per mille.
 */
int64_t	drain_retry_delay(const struct config *c, int64_t failures);

/* Room a handler's environment needs in drain_handler_env's env. */
#define DRAIN_HANDLER_ENV_MAX	18
/* Room drain_handler_env's idbuf needs: a provider's id, bytes + NUL
 * (lib/scheme/scheme.h, SCHEME_VALUE_MAX). */
#define DRAIN_PROVIDER_ID_SIZE	256

/*
 * The handler's environment for event e (docs/DESIGN.md "Handler"): the
 * WEBHOOK_* variables, WEBHOOK_STALE when stale, what refetch rf decided,
 * WEBHOOK_ATTEMPT = attempt (text); the API token removed.  Values point
 * into e, attempt and idbuf (DRAIN_PROVIDER_ID_SIZE bytes, the caller's:
 * WEBHOOK_PROVIDER_ID, the provider's id without "NAME/" and a content
 * tag, lib/scheme/scheme.h scheme_event_key).  Fills env (DRAIN_HANDLER_ENV_MAX) and returns how
 * many it set.  One function, so `try` gives exactly what a run gives.
 */
size_t	drain_handler_env(const struct inbox_event *e, int stale,
	    enum refetch_result rf, const char *attempt, struct handler_env *env,
	    char idbuf[DRAIN_PROVIDER_ID_SIZE]);

/*
 * How many of the events f matches are older than what was already done
 * for their object (the stale rule, judged now): `requeue` hands them out
 * anyway, and says so.  An event whose check fails counts as not stale.
 * Returns 0 with *n, or -1 with the inbox's reason in err.
 */
int	drain_count_stale(struct inbox *ib, const struct inbox_filter *f,
	    int64_t *n, struct buf *err) __attribute__((warn_unused_result));

/*
 * Open c->database with the config's busy timeout and synchronous mode,
 * every call waiting for the database at most busy_timeout
 * (inbox_options' call_wait_ms).
 * Returns the inbox (inbox_close it), or NULL with the reason in err.
 */
struct inbox *drain_inbox_open(const struct config *c, struct buf *err);

/*
 * chdir to the directory of config_path: handlers run there, so a relative
 * path in `handler` means what it means for every other path in the file.
 * A path without a slash leaves the directory as it is.  Returns 0, or -1
 * with errno set and `dir` (dirsz bytes) naming what could not be entered.
 */
int	drain_enter_config_dir(const char *config_path, char *dir, size_t dirsz);

#endif
