/*
 * trial: the handler run outside a run (operator/trial.h).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/drain/drain.h"
#include "lib/operator/present.h"
#include "lib/drain/refetch.h"
#include "lib/drain/runlock.h"
#include "lib/operator/trial.h"

#define NS	1000000000LL

struct found {
	struct inbox_event	e;
	int			n;
};

/* inbox_list's callback: keep a copy of the one event (with its body). */
static int
keep_one(const struct inbox_event *e, void *arg)
{
	struct found *f = arg;
	struct inbox_event *k = &f->e;

	f->n++;
	/* Every member: with received_at a verdict finds this very row
	 * (store/inbox.h); with source the handler gets what a run gives. */
	return inbox_event_copy(k, e);
}

/* The event from ib, its staleness (judged now, as a claim would). */
static enum trial_status
load(struct inbox *ib, const char *id, struct found *f, int *stale,
    struct buf *err)
{
	struct inbox_filter flt;

	memset(&flt, 0, sizeof flt);
	flt.webhook_id = id;
	if (inbox_list(ib, &flt, 1, keep_one, f, err) != INBOX_OK)
		return TRIAL_FAILED;
	if (f->n == 0)
		return TRIAL_NO_EVENT;
	if (f->e.webhook_id == NULL) {
		buf_printf(err, "out of memory");
		return TRIAL_FAILED;
	}
	if (inbox_is_stale(ib, &f->e, stale, err) != INBOX_OK)
		return TRIAL_FAILED;
	return f->e.has_body ? TRIAL_RAN : TRIAL_NO_BODY;
}

/* try --record's verdict, as drain/drain.c's record_failure writes it: the
 * run's backoff (the API's Retry-After a floor), dead at max_attempts. */
static enum trial_status
record_failure(const struct config *c, struct inbox *ib,
    const struct inbox_event *e, const struct handler_result *r,
    int64_t retry_after_s, struct trial_info *info, struct buf *err)
{
	int64_t now = util_now_ns(), delay = drain_retry_delay(c, e->failures);
	struct inbox_failure f = { .now_ns = now, .max_attempts = c->max_attempts,
	    .error = r->error, .output = r->output, .output_len = r->output_len };

	if (retry_after_s * NS > delay)
		delay = retry_after_s * NS;
	f.retry_ns = delay;
	if (inbox_finish_failed(ib, e, &f, err) != INBOX_OK)
		return TRIAL_FAILED;
	info->recorded = f.dead ? TRIAL_REC_DEAD : TRIAL_REC_RETRY;
	info->failures = (long long)e->failures + 1;
	if (!f.dead && instant_format(now + delay, info->next_at) == -1)
		info->next_at[0] = '\0';
	return TRIAL_RAN;
}

/*
 * The claim was refused (INBOX_SKIPPED): the event changed since it was
 * read (no longer pending, or now held behind an earlier event of its
 * object), or another run holds its object's lease.  Read it again to
 * tell which: a pending event first of its object whose claim was refused
 * is one another run has in hand, never "held behind" anything.
 */
static enum trial_status
skipped_why(struct inbox *ib, const char *id, struct trial_info *info,
    struct buf *err)
{
	enum trial_status st;
	struct found f;
	int stale = 0;

	memset(&f, 0, sizeof f);
	inbox_event_init(&f.e);
	st = load(ib, id, &f, &stale, err);
	if (st == TRIAL_RAN || st == TRIAL_NO_BODY) {
		memcpy(info->state, f.e.state, sizeof info->state);
		info->blocked = f.e.blocked;
		st = strcmp(f.e.state, "pending") == 0 && !f.e.blocked ?
		    TRIAL_IN_HAND : TRIAL_NOT_DUE;
	} else if (st == TRIAL_NO_EVENT) {
		st = TRIAL_NOT_DUE;	/* forgotten meanwhile */
		snprintf(info->state, sizeof info->state, "gone");
	}
	inbox_event_free(&f.e);
	return st;
}

/*
 * try --record on the loaded event e: one hand-out as drain/drain.c's claim_loop
 * and hand_out make it (claim, refetch, handler, verdict).  Notes for a
 * person (the API's alarm) go to err with TRIAL_RAN.
 */
static enum trial_status
record_one(const struct config *c, struct inbox *ib, struct inbox_event *e,
    struct handler_result *r, struct trial_info *info, struct buf *err)
{
	struct handler_env env[DRAIN_HANDLER_ENV_MAX];
	char idbuf[DRAIN_PROVIDER_ID_SIZE];
	struct refetch rf = { NULL, 0, 0, NULL };
	struct buf why, alarm;
	enum inbox_claim claim;
	enum refetch_result got;
	enum trial_status st;
	char attempt[32], *fetched = NULL;
	int64_t retry_after_s = 0;
	size_t nenv;

	memset(r, 0, sizeof *r);
	if (inbox_claim(ib, e, util_now_ns(), &claim, err) != INBOX_OK)
		return TRIAL_FAILED;
	if (claim == INBOX_SKIPPED)
		return skipped_why(ib, e->webhook_id, info, err);
	if (claim == INBOX_MARKED_STALE) {
		info->recorded = TRIAL_REC_STALE;
		return TRIAL_RAN;
	}
	info->attempt = (long long)e->attempts;
	snprintf(attempt, sizeof attempt, "%lld", info->attempt);
	buf_init(&why, 1024);
	buf_init(&alarm, 1024);
	got = refetch_event(&rf, ib, c, e, &fetched, &retry_after_s, &why,
	    &alarm);
	nenv = drain_handler_env(e, claim == INBOX_CLAIMED_STALE, got, attempt,
	    env, idbuf);
	info->refetched = got == REFETCH_OK;
	if (got == REFETCH_STALE) {
		st = inbox_finish_stale(ib, e, util_now_ns(), err) == INBOX_OK ?
		    TRIAL_RAN : TRIAL_FAILED;
		if (st == TRIAL_RAN)
			info->recorded = TRIAL_REC_STALE;
	} else if (got == REFETCH_FAILED) {
		snprintf(r->error, sizeof r->error, "%s", why.data ? why.data :
		    "refetch failed");
		st = record_failure(c, ib, e, r, retry_after_s, info, err);
	} else {
		if (handler_run(c->handler, fetched ? fetched : e->body.data ?
		    e->body.data : "", fetched ? strlen(fetched) : e->body.len,
		    env, nenv, c->handler_timeout_s * NS, r, err) == -1) {
			/* As a run: a handler that does not start failed. */
			snprintf(r->error, sizeof r->error, "could not start: %s",
			    err->data ? err->data : "?");
			r->exited = 0;
			r->output_len = 0;
		}
		buf_reset(err);
		if (!handler_ok(r))
			st = record_failure(c, ib, e, r, 0, info, err);
		else if (inbox_finish_done(ib, e, util_now_ns(), r->output,
		    r->output_len, err) != INBOX_OK)
			st = TRIAL_FAILED;
		else {
			info->recorded = TRIAL_REC_DONE;
			st = TRIAL_RAN;
		}
	}
	if (st == TRIAL_RAN && alarm.len > 0)
		buf_printf(err, "%s", alarm.data);
	free(fetched);
	refetch_close(&rf);
	buf_free(&why);
	buf_free(&alarm);
	return st;
}

enum trial_status
trial_event(const struct config *c, const char *id, int record,
    struct handler_result *r, struct trial_info *info, struct buf *err)
{
	struct handler_env env[DRAIN_HANDLER_ENV_MAX];
	char idbuf[DRAIN_PROVIDER_ID_SIZE];
	struct inbox *ib = NULL;
	struct found f;
	char attempt[32], dir[PATH_MAX];
	enum trial_status st;
	size_t nenv;
	int stale = 0, lock = -1;

	memset(info, 0, sizeof *info);
	memset(&f, 0, sizeof f);
	inbox_event_init(&f.e);
	/* --record writes as a run: never beside one (the lock is inherited
	 * by the handler, as a run's is).  A PostgreSQL inbox has no run
	 * lock: its claim takes the object's lease, as a run's does. */
	if (record && inbox_is_file(c->database) &&
	    (lock = runlock_try(c->database, err)) < 0) {
		st = lock == -2 ? TRIAL_LOCKED : TRIAL_FAILED;
		goto out;
	}
	if ((ib = drain_inbox_open(c, err)) == NULL) {
		st = TRIAL_FAILED;
		goto out;
	}
	if ((st = load(ib, id, &f, &stale, err)) != TRIAL_RAN)
		goto out;
	memcpy(info->state, f.e.state, sizeof info->state);
	info->stale = stale;
	info->blocked = f.e.blocked;
	info->truncated = f.e.truncated;
	info->attempt = (long long)f.e.attempts + 1;
	if (drain_enter_config_dir(c->path, dir, sizeof dir) == -1) {
		buf_printf(err, "cannot enter %s", dir);
		st = TRIAL_FAILED;
		goto out;
	}
	if (record) {
		if (strcmp(f.e.state, "pending") != 0 || f.e.blocked)
			st = TRIAL_NOT_DUE;
		else
			st = record_one(c, ib, &f.e, r, info, err);
		goto out;
	}
	/* A plain try only reads: the inbox is closed before the handler
	 * runs, so no snapshot is held while it works. */
	inbox_close(ib);
	ib = NULL;
	snprintf(attempt, sizeof attempt, "%lld", info->attempt);
	/* As a run: WEBHOOK_STALE only for a requeued event handed out
	 * although stale; a truncated one without its refetch. */
	nenv = drain_handler_env(&f.e, stale && f.e.requeued, REFETCH_NONE,
	    attempt, env, idbuf);
	if (handler_run(c->handler, f.e.body.data ? f.e.body.data : "",
	    f.e.body.len, env, nenv, c->handler_timeout_s * NS, r, err) == -1)
		st = TRIAL_FAILED;
out:
	inbox_close(ib);
	runlock_release(lock);
	inbox_event_free(&f.e);
	return st;
}

int
trial_synthetic(const struct config *c, struct handler_result *r,
    struct buf *err)
{
	static const char body[] = "{\"type\":\"webhook_inbox.test\","
	    "\"createdAt\":\"2026-01-01T00:00:00Z\",\"data\":{\"object\":"
	    "\"test\",\"id\":\"test_1\"}}";
	const struct handler_env env[] = {
		{ "WEBHOOK_ID", "test_webhook_inbox_check" },
		{ "WEBHOOK_TYPE", "webhook_inbox.test" },
		{ "WEBHOOK_CREATED_AT", "2026-01-01T00:00:00Z" },
		{ "WEBHOOK_OBJECT", "test" },
		{ "WEBHOOK_OBJECT_ID", "test_1" },
		{ "WEBHOOK_ATTEMPT", "1" },
		{ "WEBHOOK_TEST", "1" },
		{ "WEBHOOK_API_TOKEN", NULL },
	};
	char dir[PATH_MAX];

	if (drain_enter_config_dir(c->path, dir, sizeof dir) == -1) {
		buf_printf(err, "cannot enter %s", dir);
		return -1;
	}
	return handler_run(c->handler, body, sizeof body - 1, env,
	    sizeof env / sizeof env[0], c->handler_timeout_s * NS, r, err);
}

void
trial_print_result(FILE *out, const struct handler_result *r)
{
	if (r->output_len > 0)
		present_output(out, r->output, r->output_len);
	else
		fprintf(out, "  (no output)\n");
	if (handler_ok(r))
		fprintf(out, "exit 0 after %.3f s: a run would mark it done\n",
		    (double)r->elapsed_ns / 1e9);
	else
		fprintf(out, "%s after %.3f s: a run would count a failure\n",
		    r->error, (double)r->elapsed_ns / 1e9);
}

/* What try --record wrote, for a person. */
static void
print_recorded(FILE *out, const struct trial_info *info)
{
	char when[PRESENT_TIME_SIZE];

	switch (info->recorded) {
	case TRIAL_REC_NONE:
		fprintf(out, "the inbox is unchanged\n");
		break;
	case TRIAL_REC_DONE:
		fprintf(out, "recorded: done\n");
		break;
	case TRIAL_REC_RETRY:
		fprintf(out, "recorded: failure %lld, retried from %s by a run\n",
		    info->failures, present_short_time(info->next_at, when));
		break;
	case TRIAL_REC_DEAD:
		fprintf(out, "recorded: failure %lld, now dead (max_attempts); "
		    "requeue ID hands it out again\n", info->failures);
		break;
	case TRIAL_REC_STALE:
		fprintf(out, "recorded: stale (older than what was done for its "
		    "object); nothing handed out\n");
		break;
	}
}

void
trial_print(FILE *out, FILE *errf, const char *id, enum trial_status st,
    const struct handler_result *r, const struct trial_info *info,
    const struct buf *err)
{
	switch (st) {
	case TRIAL_RAN:
		if (err->len > 0)	/* the API's alarm (try --record) */
			fprintf(errf, "webhook-drain: %s\n", err->data);
		if (info->recorded == TRIAL_REC_STALE) {
			print_recorded(out, info);
			break;
		}
		fprintf(out, "%s event, WEBHOOK_ATTEMPT=%lld%s%s%s%s; handler "
		    "output:\n", info->state, info->attempt, info->stale &&
		    info->recorded == TRIAL_REC_NONE ?
		    " (a run would not hand it out: older than what was done "
		    "for its object)" : "", info->blocked ? " (a run holds it "
		    "behind an earlier event of its object)" : "",
		    info->truncated && info->recorded == TRIAL_REC_NONE ?
		    " (truncated: a run would refetch it first; try gives the "
		    "stored body)" : "", info->refetched ? " (refetched from "
		    "the API)" : "");
		trial_print_result(out, r);
		print_recorded(out, info);
		break;
	case TRIAL_NO_EVENT:
	case TRIAL_NO_BODY:
		fprintf(errf, "webhook-drain: %s ", st == TRIAL_NO_EVENT ?
		    "no event" : "retention dropped the body of");
		present_text(errf, id);
		fputc('\n', errf);
		break;
	case TRIAL_LOCKED:
		fprintf(errf, "webhook-drain: a run holds the run lock; nothing "
		    "done (try --record again when it has finished)\n");
		break;
	case TRIAL_NOT_DUE:
		fprintf(errf, "webhook-drain: try --record: ");
		present_text(errf, id);
		if (strcmp(info->state, "pending") != 0)
			fprintf(errf, " is %s, not pending: nothing run, nothing "
			    "recorded (`requeue ID` makes it pending; `try ID` "
			    "without --record runs the handler and records "
			    "nothing)\n", info->state);
		else
			fprintf(errf, " is held behind an earlier pending event "
			    "of its object: a run would not hand it out; nothing "
			    "run, nothing recorded\n");
		break;
	case TRIAL_IN_HAND:
		fprintf(errf, "webhook-drain: try --record: ");
		present_text(errf, id);
		fprintf(errf, " is in hand: another run holds its object's lease "
		    "and is running its handler now; nothing run, nothing "
		    "recorded (`show ID` after that run shows its verdict)\n");
		break;
	case TRIAL_FAILED:
		fprintf(errf, "webhook-drain: %s\n", err->data ? err->data : "?");
		break;
	}
}
