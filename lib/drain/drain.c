/*
 * drain: one run of the drainer (drain/drain.h).  The order, stale and hold
 * rules are the inbox's (inbox_next_due, inbox_claim); this file decides
 * what an event's handler gets, how long a failed one waits, and what is
 * reported.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/drain/api.h"
#include "lib/scheme/scheme.h"
#include "lib/drain/drain.h"
#include "lib/drain/refetch.h"
#include "lib/drain/runlock.h"

#define NS	1000000000LL

/* One event in flight: claimed, its handler running. */
struct slot {
	struct inbox_event	 e;		/* as claimed; its body is the
						 * handler's stdin */
	char			*fetched;	/* the refetched object, or NULL */
	int			 refetched;	/* the API served it (counted) */
	char			 idesc[UTIL_IDESC_SIZE];	/* the id, escaped for messages */
	int			 busy;
};

/* Everything one run carries from event to event. */
struct run {
	struct inbox		*ib;
	const struct config	*c;
	const struct drain_hooks *h;
	struct refetch		 rf;
	struct drain_result	*res;
	int			 njobs;
	int			 inflight;	/* busy slots */
	struct slot		*slots;		/* njobs of them */
	struct handler_job	*jobs[HANDLER_JOBS_MAX];	/* slot i's */
	/* Where the next due event is sought from (claim_loop). */
	struct inbox_cursor	 cur;
	/* Serves the running handlers while a refetch waits on the API. */
	struct api_waiter	 waiter;
	/* An event passed over because its object was in flight: the
	 * cursor goes back to it when a handler ends. */
	struct inbox_cursor	 back;
	int			 has_back;
};

static void say(const struct drain_hooks *h, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* One problem line through the hooks. */
static void
say(const struct drain_hooks *h, const char *fmt, ...)
{
	va_list ap;
	char *text;

	if (h == NULL || h->problem == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) == -1)
		text = NULL;
	va_end(ap);
	h->problem(h->arg, text != NULL ? text : "out of memory");
	free(text);
}

static void
tell(struct run *run, enum drain_outcome outcome, const struct slot *sl,
    const struct handler_result *r, int64_t failures)
{
	struct drain_event ev = { outcome, &sl->e, r, failures, sl->refetched };

	if (run->h != NULL && run->h->event != NULL)
		run->h->event(run->h->arg, &ev);
}

int64_t
drain_retry_delay(const struct config *c, int64_t failures)
{
	int64_t d = c->retry_base_s;
	int64_t i;

	for (i = 0; i < failures && d < c->retry_max_s; i++)
		d *= 2;
	if (d > c->retry_max_s)
		d = c->retry_max_s;
	return d * NS * (DRAIN_JITTER_MIN +
	    (int64_t)randombytes_uniform(DRAIN_JITTER_SPAN)) / 1000;
}

static struct inbox *
open_with(const struct config *c, enum inbox_sync sync, struct buf *err)
{
	/* Every call waits for the database at most busy_timeout, so that
	 * a server that stops answering cannot keep a run past --max-time
	 * (docs/jobs.md): a statement's default wait was 60 s. */
	struct inbox_options o = { c->busy_timeout_ms, sync, 0, 0, 0,
	    DRAIN_LEASE_NS(c), c->busy_timeout_ms };
	struct inbox *ib = NULL;

	if (inbox_open(c->database, &o, &ib, err) != INBOX_OK)
		return NULL;
	return ib;
}

struct inbox *
drain_inbox_open(const struct config *c, struct buf *err)
{
	return open_with(c, c->synchronous == CONFIG_SYNC_NORMAL ?
	    INBOX_SYNC_NORMAL : INBOX_SYNC_FULL, err);
}

int
drain_enter_config_dir(const char *config_path, char *dir, size_t dirsz)
{
	const char *slash = strrchr(config_path, '/');

	if (slash == NULL || (size_t)(slash - config_path) >= dirsz)
		return 0;
	memcpy(dir, config_path, (size_t)(slash - config_path));
	dir[slash - config_path] = '\0';
	return chdir(dir[0] ? dir : "/");
}

struct stale_count {
	struct inbox	*ib;
	int64_t		 n;
};

static int
count_one_stale(const struct inbox_event *e, void *arg)
{
	struct stale_count *sc = arg;
	struct buf err;
	int stale = 0;

	buf_init(&err, 1024);
	if (inbox_is_stale(sc->ib, e, &stale, &err) == INBOX_OK)
		sc->n += stale;
	buf_free(&err);
	return 0;
}

int
drain_count_stale(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	struct stale_count sc = { ib, 0 };

	if (inbox_list(ib, f, 0, count_one_stale, &sc, err) != INBOX_OK)
		return -1;
	*n = sc.n;
	return 0;
}

/* The content tag's length, hex digits. */
#define TAG	(2 * SCHEME_CONTENT_TAG_BYTES)

/*
 * The provider's own id in a named source's inbox id (docs/DESIGN.md
 * "Sources"): after "NAME/", without the "~" + hex digits of a content
 * tag (lib/scheme/scheme.h, scheme_event_key).  The default source's id,
 * and any id not of that form, whole.
 */
static const char *
provider_id(const struct inbox_event *e, const char *source,
    char idbuf[DRAIN_PROVIDER_ID_SIZE])
{
	size_t sl = strlen(source), len, i;
	const char *id = e->webhook_id;

	if (strcmp(source, INBOX_DEFAULT_SOURCE) == 0 ||
	    strncmp(id, source, sl) != 0 || id[sl] != '/')
		return id;
	id += sl + 1;
	len = strlen(id);
	if (len <= TAG + 1 || id[len - TAG - 1] != '~' ||
	    len - TAG - 1 >= DRAIN_PROVIDER_ID_SIZE)
		return id;
	for (i = len - TAG; i < len; i++)
		if (strchr("0123456789abcdef", id[i]) == NULL)
			return id;
	memcpy(idbuf, id, len - TAG - 1);
	idbuf[len - TAG - 1] = '\0';
	return idbuf;
}

size_t
drain_handler_env(const struct inbox_event *e, int stale, enum refetch_result rf,
    const char *attempt, struct handler_env *env,
    char idbuf[DRAIN_PROVIDER_ID_SIZE])
{
	size_t n = 0;

	const char *source = e->source[0] != '\0' ? e->source :
	    INBOX_DEFAULT_SOURCE;

	env[n++] = (struct handler_env){ "WEBHOOK_ID", e->webhook_id };
	env[n++] = (struct handler_env){ "WEBHOOK_SOURCE", source };
	env[n++] = (struct handler_env){ "WEBHOOK_PROVIDER_ID",
	    provider_id(e, source, idbuf) };
	env[n++] = (struct handler_env){ "WEBHOOK_TYPE", e->type };
	env[n++] = (struct handler_env){ "WEBHOOK_CREATED_AT", e->created_at_raw };
	env[n++] = (struct handler_env){ "WEBHOOK_OBJECT", e->object_type };
	env[n++] = (struct handler_env){ "WEBHOOK_OBJECT_ID", e->object_id };
	env[n++] = (struct handler_env){ "WEBHOOK_ATTEMPT", attempt };
	/* Extension: set when an operator's requeue hands out an event that is
	 * older than what was already done for its object. */
	env[n++] = (struct handler_env){ "WEBHOOK_STALE", stale ? "1" : NULL };
	/* The API token is the drainer's, not the handler's to print. */
	env[n++] = (struct handler_env){ "WEBHOOK_API_TOKEN", NULL };
	/* Only check --handler's synthetic event is a test: one in the
	 * drainer's own environment must not reach a real event's handler,
	 * which may skip test events. */
	env[n++] = (struct handler_env){ "WEBHOOK_TEST", NULL };
	env[n++] = (struct handler_env){ "WEBHOOK_REFETCHED",
	    rf == REFETCH_OK ? "1" : NULL };
	env[n++] = (struct handler_env){ "WEBHOOK_OBJECT_GONE",
	    rf == REFETCH_GONE ? "1" : NULL };
	env[n++] = (struct handler_env){ "WEBHOOK_TRUNCATED",
	    e->truncated && rf != REFETCH_OK ? "1" : NULL };
	return n;
}

/*
 * A verdict the inbox did not record because this run's lease on the
 * event's object expired and another drainer took it over (a PostgreSQL
 * inbox shared by several runs: store/inbox.h, INBOX_LOST).  Not a broken
 * inbox: the other drainer hands the event out again (at least once) and
 * its verdict counts; this run goes on with other objects.
 */
static void
lost(struct run *run, struct slot *sl)
{
	run->res->n.skipped++;
	say(run->h, "%s: not recorded: the event is no longer this run's — "
	    "forgotten or finished meanwhile, or its lease expired and another "
	    "drainer took the event over (it is handed out again there); a "
	    "drainer stalled past its lease (stopped, swapped out) lets that "
	    "happen", sl->idesc);
}

/* Record a failed attempt (retry or death) and report it.  retry_after_s
 * (the API's Retry-After) is a floor under the backoff.  0 or -1 as
 * hand_out. */
static int
record_failure(struct run *run, struct slot *sl,
    const struct handler_result *r, int64_t retry_after_s)
{
	struct inbox_event *e = &sl->e;
	const char *idesc = sl->idesc;
	struct buf err;
	enum inbox_status s;
	int64_t delay;
	struct inbox_failure f;
	int rc = 0;

	buf_init(&err, BUF_ERR_MAX);
	delay = drain_retry_delay(run->c, e->failures);
	if (retry_after_s * NS > delay)
		delay = retry_after_s * NS;
	f = (struct inbox_failure){ .now_ns = util_now_ns(), .retry_ns = delay,
	    .max_attempts = run->c->max_attempts, .error = r->error,
	    .output = r->output, .output_len = r->output_len };
	s = inbox_finish_failed(run->ib, e, &f, &err);
	if (s == INBOX_LOST) {
		lost(run, sl);
	} else if ((run->res->n.failed++, s != INBOX_OK)) {
		say(run->h, "%s: failed (%s), and the failure was not recorded: "
		    "%s", idesc, r->error, err.data);
		rc = -1;
	} else {
		if (f.dead)
			run->res->n.dead++;
		tell(run, f.dead ? DRAIN_DEAD : DRAIN_RETRY, sl, r, e->failures + 1);
	}
	buf_free(&err);
	return rc;
}

/* Record a finished handler's verdict for the event in slot sl. */
static int
record_verdict(struct run *run, struct slot *sl, const struct handler_result *r)
{
	enum inbox_status s;
	struct buf err;
	int rc = 0;

	if (!handler_ok(r))
		return record_failure(run, sl, r, 0);
	buf_init(&err, BUF_ERR_MAX);
	s = inbox_finish_done(run->ib, &sl->e, util_now_ns(), r->output,
	    r->output_len, &err);
	if (s == INBOX_LOST) {
		lost(run, sl);
	} else if (s != INBOX_OK) {
		say(run->h, "%s: handled, but not recorded (it will be handed "
		    "out again): %s", sl->idesc, err.data);
		rc = -1;
	} else {
		run->res->n.done++;
		tell(run, DRAIN_DONE, sl, r, 0);
	}
	buf_free(&err);
	return rc;
}

/* Start the handler on body (len bytes) for the event in slot i; a
 * handler that cannot start is a failed attempt, recorded now.  1: it
 * runs; 0 or -1 as hand_out. */
static int
start_handler(struct run *run, int i, const char *body, size_t len,
    const struct handler_env *env, size_t nenv)
{
	struct slot *sl = &run->slots[i];
	struct handler_result r;
	struct buf err;
	int rc = 1;

	buf_init(&err, BUF_ERR_MAX);
	if ((run->jobs[i] = handler_start(run->c->handler, body, len, env, nenv,
	    run->c->handler_timeout_s * NS, &err)) == NULL) {
		memset(&r, 0, sizeof r);
		snprintf(r.error, sizeof r.error, "could not start: %s", err.data);
		rc = record_failure(run, sl, &r, 0);
	}
	buf_free(&err);
	return rc;
}

/* Hand the event claimed into slot i to the handler (refetching it first
 * when its object must be).  1: its handler runs (slot i is busy until it
 * ends); 0: decided without one (stale, or the refetch failed) and
 * recorded; -1: the inbox could not record it (the event stays pending
 * and is handed out again: at least once). */
static int
hand_out(struct run *run, int i, int stale)
{
	struct slot *sl = &run->slots[i];
	struct inbox_event *e = &sl->e;
	struct handler_result r;
	struct handler_env env[DRAIN_HANDLER_ENV_MAX];
	char idbuf[DRAIN_PROVIDER_ID_SIZE];
	char attempt[32];
	struct buf err, why, alarm;
	enum refetch_result rf;
	int64_t retry_after_s = 0;
	int rc = 0;
	size_t nenv;

	buf_init(&err, BUF_ERR_MAX);
	buf_init(&why, BUF_ERR_MAX);
	buf_init(&alarm, 4096);
	snprintf(attempt, sizeof attempt, "%lld", (long long)e->attempts);
	util_escape(e->webhook_id, strlen(e->webhook_id), sl->idesc,
	    sizeof sl->idesc);
	sl->fetched = NULL;
	rf = refetch_event(&run->rf, run->ib, run->c, e, &sl->fetched,
	    &retry_after_s, &why, &alarm);
	if (alarm.len > 0)
		say(run->h, "%s", alarm.data);
	/* The handler's copy of the environment is made when it starts: env
	 * and attempt need not outlive this call. */
	nenv = drain_handler_env(e, stale, rf, attempt, env, idbuf);
	sl->refetched = rf == REFETCH_OK || rf == REFETCH_STALE;
	if (rf == REFETCH_STALE) {
		enum inbox_status s = inbox_finish_stale(run->ib, e,
		    util_now_ns(), &err);

		if (s == INBOX_LOST) {
			lost(run, sl);
		} else if (s != INBOX_OK) {
			say(run->h, "%s: %s", sl->idesc, err.data);
			rc = -1;
		} else {
			run->res->n.stale++;
			tell(run, DRAIN_STALE_FETCHED, sl, NULL, 0);
		}
	} else if (rf == REFETCH_FAILED) {
		/* Not handed out; it counts as a failed attempt (a long API
		 * outage ends in `dead`, which an operator can requeue). */
		memset(&r, 0, sizeof r);
		snprintf(r.error, sizeof r.error, "%s", why.data ? why.data :
		    "refetch failed");
		rc = record_failure(run, sl, &r, retry_after_s);
	} else if (sl->fetched != NULL) {
		rc = start_handler(run, i, sl->fetched, strlen(sl->fetched), env,
		    nenv);
	} else {
		rc = start_handler(run, i, e->body.data ? e->body.data : "",
		    e->body.len, env, nenv);
	}
	if (rc != 1) {
		free(sl->fetched);
		sl->fetched = NULL;
	}
	buf_free(&err);
	buf_free(&why);
	buf_free(&alarm);
	return rc;
}

/* Does (sort_at, received_at, seq) of a sort before b's? */
static int
sorts_before(const char *a_sort, const char *a_recv, int64_t a_seq,
    const char *b_sort, const char *b_recv, int64_t b_seq)
{
	int c = strcmp(a_sort, b_sort);

	if (c == 0)
		c = strcmp(a_recv, b_recv);
	return c < 0 || (c == 0 && a_seq < b_seq);
}

/* Move the cursor back to just before event e's place (never forward). */
static void
cursor_back_to(struct inbox_cursor *cur, const char *sort_at,
    const char *received_at, int64_t seq)
{
	if (!sorts_before(sort_at, received_at, seq, cur->sort_at,
	    cur->received_at, cur->seq))
		return;
	memcpy(cur->sort_at, sort_at, INSTANT_SIZE);
	memcpy(cur->received_at, received_at, INSTANT_SIZE);
	cur->seq = seq;
}

static int
same_object(const struct inbox_event *a, const struct inbox_event *b)
{
	return a->object_type != NULL && a->object_id != NULL &&
	    b->object_type != NULL && b->object_id != NULL &&
	    strcmp(a->object_type, b->object_type) == 0 &&
	    strcmp(a->object_id, b->object_id) == 0;
}

/*
 * Is e (just found due) in flight, or its object?  The event itself is
 * found again when the cursor went back past it: pass over it.  Another
 * event of an object in flight sorts before the one running (a later one
 * is held by the inbox): it arrived late; pass over it and come back once
 * the object's handler ended (the stale rule then judges it, as one job
 * would have).  1: pass over e.
 */
static int
in_flight(struct run *run, const struct inbox_event *e)
{
	int i;

	for (i = 0; i < run->njobs; i++) {
		const struct slot *sl = &run->slots[i];

		if (!sl->busy)
			continue;
		if (strcmp(sl->e.webhook_id, e->webhook_id) == 0)
			return 1;
		if (same_object(&sl->e, e)) {
			/* Back to just before it: the cursor is exclusive. */
			if (!run->has_back || sorts_before(e->sort_at,
			    e->received_at, e->seq - 1, run->back.sort_at,
			    run->back.received_at, run->back.seq)) {
				memcpy(run->back.sort_at, e->sort_at,
				    INSTANT_SIZE);
				memcpy(run->back.received_at, e->received_at,
				    INSTANT_SIZE);
				run->back.seq = e->seq - 1;
				run->has_back = 1;
			}
			return 1;
		}
	}
	return 0;
}

/* Slot i's handler ended with *r: record it, free the slot, and move the
 * cursor back over what its object's hand-out held: the later events of
 * its object (after its place) and those passed over (run->back). */
static void
job_ended(struct run *run, int i, const struct handler_result *r)
{
	struct slot *sl = &run->slots[i];
	struct inbox_cursor *cur = &run->cur;

	if (record_verdict(run, sl, r) == -1)
		run->res->broken = 1;
	cursor_back_to(cur, sl->e.sort_at, sl->e.received_at, sl->e.seq);
	if (run->has_back) {
		cursor_back_to(cur, run->back.sort_at, run->back.received_at,
		    run->back.seq);
		run->has_back = 0;
	}
	free(sl->fetched);
	sl->fetched = NULL;
	sl->busy = 0;
	run->inflight--;
}

/*
 * Look after the running handlers without waiting: read their pipes,
 * feed their stdin, enforce their timeouts, and record every one that
 * ended.  Before each claim, so that a run that finds many events in a
 * row (stale ones marked, skipped claims) leaves none unattended.
 */
static void
attend(struct run *run)
{
	struct handler_result r;
	int i;

	while (run->inflight > 0 && (i = handler_wait_any(run->jobs,
	    (size_t)run->njobs, 0, &r)) >= 0)
		job_ended(run, i, &r);
}

/* The run's api_waiter (drain/api.h): while a refetch waits on the API, its
 * poll watches the running handlers' pipes and pidfds too, and wakes by
 * their next timeout or kill. */
static size_t
attend_fds(void *arg, struct pollfd *p, size_t max, int64_t *due_ns)
{
	struct run *run = arg;

	*due_ns = -1;
	if ((size_t)run->njobs * HANDLER_POLLFDS > max)
		return 0;	/* cannot be: API_WAIT_FDS_MAX covers 64 jobs */
	(void)handler_poll_fds(run->jobs, (size_t)run->njobs, p, due_ns);
	return (size_t)run->njobs * HANDLER_POLLFDS;
}

/* ... and after each wait, serves them and records the ones that ended
 * (another object's verdict, while this event's refetch goes on). */
static void
attend_serve(void *arg, struct pollfd *p, size_t n)
{
	struct run *run = arg;
	struct handler_result r;
	int i;

	if (n == 0)
		return;
	while ((i = handler_poll_serve(run->jobs, (size_t)run->njobs, p,
	    &r)) >= 0)
		job_ended(run, i, &r);
}

/* A slot with no event in flight, or -1. */
static int
free_slot(const struct run *run)
{
	int i;

	for (i = 0; i < run->njobs; i++)
		if (!run->slots[i].busy)
			return i;
	return -1;
}

/* Should the run stop claiming?  (It then waits for what runs.) */
static int
stopping(struct run *run, const struct drain_limits *lim, int64_t start)
{
	if (run->res->broken)
		return 1;
	if (lim->stop != NULL && *lim->stop) {
		run->res->stopped = 1;
		return 1;
	}
	if (lim->max_time_s > 0 && util_mono_ns() - start >= lim->max_time_s * NS) {
		run->res->max_time_reached = 1;
		return 1;
	}
	return 0;
}

/*
 * Claim due events and hand them out, up to run->njobs at once, until
 * none is left (and none runs), max_time_s has passed, the stop flag is
 * set, or the inbox fails (res->broken); then wait for the handlers still
 * running and record them.  The cursor walks the due events in hand-out
 * order; it goes back when a handler ends (job_ended), since what its
 * event held is due from then on.  With one job nothing is in flight
 * while the next event is sought, so it never goes back.
 */
static void
claim_loop(struct run *run, const struct drain_limits *lim, int64_t start)
{
	struct handler_result r;
	struct buf err;
	enum inbox_status s;
	enum inbox_claim claim;
	int i, rc;

	buf_init(&err, BUF_ERR_MAX);
	memset(&run->cur, 0, sizeof run->cur);
	for (;;) {
		attend(run);
		if (!stopping(run, lim, start) && (i = free_slot(run)) != -1) {
			struct slot *sl = &run->slots[i];

			s = inbox_next_due(run->ib, &run->cur, util_now_ns(),
			    run->c->settle_s * NS, run->c->retry_max_s * NS,
			    &sl->e, &err);
			if (s == INBOX_OK) {
				if (in_flight(run, &sl->e))
					continue;
				if (inbox_claim(run->ib, &sl->e, util_now_ns(),
				    &claim, &err) != INBOX_OK) {
					say(run->h, "%s", err.data);
					run->res->broken = 1;
					continue;
				}
				switch (claim) {
				case INBOX_SKIPPED:
					/* No longer pending or now held (on a
					 * shared inbox: another drainer has
					 * its object); leave it. */
					run->res->n.skipped++;
					break;
				case INBOX_MARKED_STALE:
					run->res->n.stale++;
					sl->refetched = 0;
					tell(run, DRAIN_STALE, sl, NULL, 0);
					break;
				case INBOX_CLAIMED:
				case INBOX_CLAIMED_STALE:
					rc = hand_out(run, i,
					    claim == INBOX_CLAIMED_STALE);
					if (rc == 1) {
						sl->busy = 1;
						if (++run->inflight >
						    run->res->jobs)
							run->res->jobs =
							    run->inflight;
					} else if (rc == -1) {
						run->res->broken = 1;
					}
					break;
				}
				continue;
			}
			if (s != INBOX_NOT_FOUND) {
				say(run->h, "%s", err.data);
				run->res->broken = 1;
				continue;
			}
			/* None due now: what runs may free more. */
		}
		if (run->inflight == 0)
			break;
		if ((i = handler_wait_any(run->jobs, (size_t)run->njobs, -1,
		    &r)) >= 0)
			job_ended(run, i, &r);
	}
	buf_free(&err);
}

/* Retention, then the outcome `status` shows as the last run's. */
static void
finish_run(struct run *run)
{
	struct drain_result *res = run->res;
	struct buf err;
	char outcome[64];

	buf_init(&err, BUF_ERR_MAX);
	if (!res->broken && inbox_purge(run->ib, util_now_ns(),
	    run->c->retention_s * NS, &res->bodies, &res->rows, &err) != INBOX_OK) {
		say(run->h, "retention: %s", err.data);
		res->broken = 1;
	}
	snprintf(outcome, sizeof outcome, "%s: %lld done, %lld stale, %lld failed",
	    res->broken ? "error" : res->n.failed ? "failures" : "ok",
	    (long long)res->n.done, (long long)res->n.stale,
	    (long long)res->n.failed);
	if (inbox_note_run(run->ib, util_now_ns(), outcome, &err) != INBOX_OK) {
		say(run->h, "%s", err.data);
		res->broken = 1;
	}
	buf_free(&err);
}

/* Another run holds the lock: nothing to do, but remember it, so that
 * status can tell a lock held for hours (a handler's escaped daemon) from
 * a dead cron. */
static void
note_locked(const struct config *c, const struct drain_hooks *h)
{
	struct inbox *ib;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	if ((ib = drain_inbox_open(c, &err)) == NULL ||
	    inbox_note_lock(ib, util_now_ns(), 1, &err) != INBOX_OK)
		say(h, "%s", err.data);
	inbox_close(ib);
	buf_free(&err);
}

static const struct drain_limits no_limits;

enum drain_status
drain_run(const struct config *c, const struct drain_limits *lim,
    const struct drain_hooks *h, struct drain_result *res)
{
	struct run run;
	struct buf err;
	char dir[PATH_MAX];
	int64_t start = util_mono_ns();
	enum drain_status st = DRAIN_NOT_STARTED;
	int lock, i;

	memset(res, 0, sizeof *res);
	memset(&run, 0, sizeof run);
	run.c = c;
	run.h = h;
	run.res = res;
	/* Refetches serve the running handlers while they wait (drain/drain.h). */
	run.waiter = (struct api_waiter){ attend_fds, attend_serve, &run };
	run.rf.waiter = &run.waiter;
	if (lim == NULL)
		lim = &no_limits;
	run.njobs = lim->jobs > 0 ? lim->jobs : (int)c->jobs;
	if (run.njobs < 1)
		run.njobs = 1;
	if (run.njobs > HANDLER_JOBS_MAX)
		run.njobs = HANDLER_JOBS_MAX;
	if ((run.slots = calloc((size_t)run.njobs, sizeof *run.slots)) == NULL) {
		say(h, "out of memory");
		return DRAIN_NOT_STARTED;
	}
	for (i = 0; i < run.njobs; i++)
		inbox_event_init(&run.slots[i].e);
	buf_init(&err, BUF_ERR_MAX);
	/* A PostgreSQL inbox is shared by any number of runs on any hosts
	 * (leases keep them apart: store/inbox.h, inbox_claim); a SQLite one by
	 * one run at a time. */
	lock = !inbox_is_file(c->database) ? DRAIN_NO_RUNLOCK :
	    runlock_try(c->database, &err);
	if (lock == -2) {
		note_locked(c, h);
		st = DRAIN_LOCKED;
		goto out;
	}
	if (lock == -1) {
		say(h, "lock: %s", err.data);
		goto out;
	}
	/*
	 * The run's own state changes (claims, verdicts, retention) commit
	 * with synchronous = NORMAL whatever the config says: in WAL mode
	 * that is still crash-safe (never corrupt), and a power cut that
	 * loses the last of them only hands those events out again — at
	 * least once, WEBHOOK_ID the idempotency key — while saving two
	 * syncs per event.  The receiver's 200 is untouched: its commits
	 * sync the WAL themselves.  docs/drain-throughput.md.
	 */
	if ((run.ib = open_with(c, INBOX_SYNC_NORMAL, &err)) == NULL) {
		say(h, "%s", err.data);
		goto out;
	}
	if (drain_enter_config_dir(c->path, dir, sizeof dir) == -1)
		say(h, "cannot enter %s: %s", dir, strerror(errno));
	if (inbox_note_run(run.ib, util_now_ns(), NULL, &err) != INBOX_OK ||
	    inbox_note_lock(run.ib, util_now_ns(), 0, &err) != INBOX_OK) {
		say(h, "%s", err.data);
		goto out;
	}
	claim_loop(&run, lim, start);
	finish_run(&run);
	st = DRAIN_RAN;
out:
	refetch_close(&run.rf);
	inbox_close(run.ib);
	if (lock >= 0)
		runlock_release(lock);
	for (i = 0; i < run.njobs; i++)
		inbox_event_free(&run.slots[i].e);
	free(run.slots);
	buf_free(&err);
	return st;
}
