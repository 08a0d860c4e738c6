/*
 * drain: one run of the drainer (drain.h).  The order, stale and hold
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

#include "drain.h"
#include "refetch.h"
#include "runlock.h"

#define NS	1000000000LL

/* Everything one run carries from event to event. */
struct run {
	struct inbox		*ib;
	const struct config	*c;
	const struct drain_hooks *h;
	struct refetch		 rf;
	struct drain_result	*res;
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
tell(struct run *run, enum drain_outcome outcome, const struct inbox_event *e,
    const struct handler_result *r, int64_t failures)
{
	struct drain_event ev = { outcome, e, r, failures };

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

struct inbox *
drain_inbox_open(const struct config *c, struct buf *err)
{
	struct inbox_options o = { c->busy_timeout_ms, c->synchronous ==
	    CONFIG_SYNC_NORMAL ? INBOX_SYNC_NORMAL : INBOX_SYNC_FULL, 0, 0, 0,
	    DRAIN_LEASE_NS(c) };
	struct inbox *ib = NULL;

	if (inbox_open(c->database, &o, &ib, err) != INBOX_OK)
		return NULL;
	return ib;
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

size_t
drain_handler_env(const struct inbox_event *e, int stale, enum refetch_result rf,
    const char *attempt, struct handler_env *env)
{
	size_t n = 0;

	env[n++] = (struct handler_env){ "WEBHOOK_ID", e->webhook_id };
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
	env[n++] = (struct handler_env){ "WEBHOOK_REFETCHED",
	    rf == REFETCH_OK ? "1" : NULL };
	env[n++] = (struct handler_env){ "WEBHOOK_OBJECT_GONE",
	    rf == REFETCH_GONE ? "1" : NULL };
	env[n++] = (struct handler_env){ "WEBHOOK_TRUNCATED",
	    e->truncated && rf != REFETCH_OK ? "1" : NULL };
	return n;
}

/* Record a failed attempt (retry or death) and report it.  retry_after_s
 * (the API's Retry-After) is a floor under the backoff.  0 or -1 as
 * hand_out. */
static int
record_failure(struct run *run, struct inbox_event *e,
    const struct handler_result *r, int64_t retry_after_s, const char *idesc)
{
	struct buf err;
	int64_t delay;
	int dead = 0, rc = 0;

	buf_init(&err, 4096);
	run->res->n.failed++;
	delay = drain_retry_delay(run->c, e->failures);
	if (retry_after_s * NS > delay)
		delay = retry_after_s * NS;
	if (inbox_finish_failed(run->ib, e, util_now_ns(), delay,
	    run->c->max_attempts, r->error, r->output, r->output_len, &dead,
	    &err) != INBOX_OK) {
		say(run->h, "%s: failed (%s), and the failure was not recorded: "
		    "%s", idesc, r->error, err.data);
		rc = -1;
	} else {
		if (dead)
			run->res->n.dead++;
		tell(run, dead ? DRAIN_DEAD : DRAIN_RETRY, e, r, e->failures + 1);
	}
	buf_free(&err);
	return rc;
}

/* Run the handler on body (len bytes) and record its verdict. */
static int
run_handler(struct run *run, struct inbox_event *e, const char *body,
    size_t len, const struct handler_env *env, size_t nenv, const char *idesc)
{
	struct handler_result r;
	struct buf err;
	int rc = 0;

	buf_init(&err, 4096);
	if (handler_run(run->c->handler, body, len, env, nenv,
	    run->c->handler_timeout_s * NS, &r, &err) == -1) {
		snprintf(r.error, sizeof r.error, "could not start: %s", err.data);
		r.exited = 0;
		r.output_len = 0;
	}
	if (!handler_ok(&r)) {
		rc = record_failure(run, e, &r, 0, idesc);
	} else if (inbox_finish_done(run->ib, e, util_now_ns(), r.output,
	    r.output_len, &err) != INBOX_OK) {
		say(run->h, "%s: handled, but not recorded (it will be handed "
		    "out again): %s", idesc, err.data);
		rc = -1;
	} else {
		run->res->n.done++;
		tell(run, DRAIN_DONE, e, &r, 0);
	}
	buf_free(&err);
	return rc;
}

/* Hand one claimed event to the handler and record the verdict.  Returns 0,
 * or -1 when the inbox could not record it (the event stays pending and is
 * handed out again: at least once). */
static int
hand_out(struct run *run, struct inbox_event *e, int stale)
{
	struct handler_result r;
	struct handler_env env[16];
	char attempt[32], idesc[1100];
	struct buf err, why, alarm;
	enum refetch_result rf;
	int64_t retry_after_s = 0;
	char *fetched = NULL;
	int rc = 0;
	size_t nenv;

	buf_init(&err, 4096);
	buf_init(&why, 4096);
	buf_init(&alarm, 4096);
	snprintf(attempt, sizeof attempt, "%lld", (long long)e->attempts);
	util_escape(e->webhook_id, strlen(e->webhook_id), idesc, sizeof idesc);
	rf = refetch_event(&run->rf, run->ib, run->c, e, &fetched,
	    &retry_after_s, &why, &alarm);
	if (alarm.len > 0)
		say(run->h, "%s", alarm.data);
	nenv = drain_handler_env(e, stale, rf, attempt, env);
	if (rf == REFETCH_STALE) {
		if (inbox_finish_stale(run->ib, e, util_now_ns(), &err) != INBOX_OK) {
			say(run->h, "%s: %s", idesc, err.data);
			rc = -1;
		} else {
			run->res->n.stale++;
			tell(run, DRAIN_STALE_FETCHED, e, NULL, 0);
		}
	} else if (rf == REFETCH_FAILED) {
		/* Not handed out; it counts as a failed attempt (a long API
		 * outage ends in `dead`, which an operator can requeue). */
		memset(&r, 0, sizeof r);
		snprintf(r.error, sizeof r.error, "%s", why.data ? why.data :
		    "refetch failed");
		rc = record_failure(run, e, &r, retry_after_s, idesc);
	} else if (fetched != NULL) {
		rc = run_handler(run, e, fetched, strlen(fetched), env, nenv, idesc);
	} else {
		rc = run_handler(run, e, e->body.data ? e->body.data : "",
		    e->body.len, env, nenv, idesc);
	}
	free(fetched);
	buf_free(&err);
	buf_free(&why);
	buf_free(&alarm);
	return rc;
}

/* Due events until none is left, max_time_s has passed, or the inbox
 * fails (res->broken). */
static void
claim_loop(struct run *run, int64_t max_time_s, int64_t start)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	struct buf err;
	enum inbox_status s;
	enum inbox_claim claim;

	buf_init(&err, 4096);
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	while (!run->res->broken) {
		if (max_time_s > 0 && util_mono_ns() - start >= max_time_s * NS) {
			run->res->max_time_reached = 1;
			break;
		}
		s = inbox_next_due(run->ib, &cur, util_now_ns(),
		    run->c->settle_s * NS, run->c->retry_max_s * NS, &e, &err);
		if (s == INBOX_NOT_FOUND)
			break;
		if (s != INBOX_OK || inbox_claim(run->ib, &e, util_now_ns(),
		    &claim, &err) != INBOX_OK) {
			say(run->h, "%s", err.data);
			run->res->broken = 1;
			break;
		}
		switch (claim) {
		case INBOX_SKIPPED:
			run->res->n.skipped++;
			break;
		case INBOX_MARKED_STALE:
			run->res->n.stale++;
			tell(run, DRAIN_STALE, &e, NULL, 0);
			break;
		case INBOX_CLAIMED:
		case INBOX_CLAIMED_STALE:
			if (hand_out(run, &e, claim == INBOX_CLAIMED_STALE) == -1)
				run->res->broken = 1;
			break;
		}
	}
	inbox_event_free(&e);
	buf_free(&err);
}

/* Retention, then the outcome `status` shows as the last run's. */
static void
finish_run(struct run *run)
{
	struct drain_result *res = run->res;
	struct buf err;
	char outcome[64];

	buf_init(&err, 4096);
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

	buf_init(&err, 4096);
	if ((ib = drain_inbox_open(c, &err)) == NULL ||
	    inbox_note_lock(ib, util_now_ns(), 1, &err) != INBOX_OK)
		say(h, "%s", err.data);
	inbox_close(ib);
	buf_free(&err);
}

enum drain_status
drain_run(const struct config *c, int64_t max_time_s,
    const struct drain_hooks *h, struct drain_result *res)
{
	struct run run = { NULL, c, h, { NULL, 0, 0 }, res };
	struct buf err;
	char dir[PATH_MAX];
	int64_t start = util_mono_ns();
	enum drain_status st = DRAIN_NOT_STARTED;
	int lock;

	memset(res, 0, sizeof *res);
	buf_init(&err, 4096);
	/* A PostgreSQL inbox is shared by any number of runs on any hosts
	 * (leases keep them apart: inbox.h, inbox_claim); a SQLite one by
	 * one run at a time. */
	lock = util_is_postgresql(c->database) ? DRAIN_NO_RUNLOCK :
	    runlock_try(c->database, &err);
	if (lock == -2) {
		note_locked(c, h);
		buf_free(&err);
		return DRAIN_LOCKED;
	}
	if (lock == -1) {
		say(h, "lock: %s", err.data);
		buf_free(&err);
		return DRAIN_NOT_STARTED;
	}
	if ((run.ib = drain_inbox_open(c, &err)) == NULL) {
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
	claim_loop(&run, max_time_s, start);
	finish_run(&run);
	st = DRAIN_RAN;
out:
	refetch_close(&run.rf);
	inbox_close(run.ib);
	runlock_release(lock);
	buf_free(&err);
	return st;
}
