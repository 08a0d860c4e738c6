/*
 * trial: run the user's handler now, outside a run, on one stored event
 * (`webhook-drain try ID`) or on a synthetic one (`check --handler`), and
 * report what it did (docs/DESIGN.md "The operator's tools").  An operator
 * fixing a handler at 3 a.m. wants to see it work on one real event before
 * requeueing hundreds.
 *
 * try gives the handler exactly the stdin and environment a run would
 * give (drain_handler_env, the config file's directory as the working
 * directory, WEBHOOK_ATTEMPT the next attempt), with one documented
 * difference: a truncated event is not refetched from the API (that
 * would record the object's version); it gets its stored body and
 * WEBHOOK_TRUNCATED=1, as a run without an API configured does.  The
 * inbox is only read: nothing in it changes.
 */
#ifndef WEBHOOK_TRIAL_H
#define WEBHOOK_TRIAL_H

#include <stdio.h>

#include "lib/program/config.h"
#include "lib/drain/handler.h"
#include "lib/common/instant.h"
#include "lib/common/util.h"

/* What `try --record` wrote (trial_event with record set). */
enum trial_recorded {
	TRIAL_REC_NONE,		/* nothing: a plain try, or nothing was run */
	TRIAL_REC_DONE,		/* the event is done */
	TRIAL_REC_RETRY,	/* a failure: retried at next_at */
	TRIAL_REC_DEAD,		/* its max_attempts-th failure: dead */
	TRIAL_REC_STALE		/* the stale rule (or the refetched object's
				 * version): stale, nothing handed out */
};

/* What a trial found beside the handler's result. */
struct trial_info {
	char	state[8];	/* the event's state */
	int	stale;		/* a run would not hand it out: stale */
	int	blocked;	/* a run would hold it behind its object */
	int	truncated;	/* the API would have been asked first */
	long long attempt;	/* WEBHOOK_ATTEMPT given */
	enum trial_recorded recorded;	/* with record: what was written */
	long long failures;	/* with record: its failures now */
	char	next_at[INSTANT_SIZE];	/* TRIAL_REC_RETRY: the next attempt */
	int	refetched;	/* with record: handed the API's object */
};

enum trial_status {
	TRIAL_RAN,		/* *r and *info filled */
	TRIAL_NO_EVENT,		/* no event with that id */
	TRIAL_NO_BODY,		/* retention dropped its body: nothing to give */
	TRIAL_FAILED,		/* the inbox or the handler's start failed (err) */
	/* With record only; nothing was run and nothing changed: */
	TRIAL_LOCKED,		/* a run holds the run lock */
	TRIAL_NOT_DUE,		/* not pending, or held behind an earlier event
				 * of its object: a run would not hand it out
				 * (info->state, info->blocked say which) */
	TRIAL_IN_HAND		/* pending and first of its object, but another
				 * run holds its object's lease (PostgreSQL):
				 * that run has it in hand right now */
};

/*
 * Run c->handler (set) on the stored event `id` of c->database.  Changes
 * the working directory to the config's (drain_enter_config_dir).
 *
 * record 0 (`try ID`): the inbox is opened read-only in effect (no write
 * is made), a truncated event gets its stored body.
 *
 * record 1 (`try ID --record`): as one hand-out of a run, under the run
 * lock (TRIAL_LOCKED when a run holds it), for a pending event a run
 * would hand out now or later (TRIAL_NOT_DUE for a done, stale or dead
 * one, or one held behind its object: `requeue ID` first; TRIAL_IN_HAND
 * when another run has its object in hand, the claim refused for its
 * lease: judged by reading the event again after the refused claim, so
 * that a person is told what is true now); the claim
 * (stale rule, attempts + 1), the refetch of a truncated event, the
 * handler, then its verdict recorded as a run records it: done, or a
 * failure with the run's backoff (dead at max_attempts).  info->recorded
 * says which.  The run's history (report, metrics) does not count it:
 * it is not a run.  TRIAL_FAILED with info->recorded TRIAL_REC_NONE
 * when the verdict could not be written (the event stays pending).
 */
enum trial_status trial_event(const struct config *c, const char *id,
	    int record, struct handler_result *r, struct trial_info *info,
	    struct buf *err) __attribute__((warn_unused_result));

/*
 * What trial_event found, for a person: on out the event's state and
 * what a run would do with it, the output as "  | line"s, the exit status
 * and elapsed time, "the inbox is unchanged"; on errf why there was
 * nothing to run (id shown escaped, err from trial_event).
 */
void	trial_print(FILE *out, FILE *errf, const char *id, enum trial_status st,
	    const struct handler_result *r, const struct trial_info *info,
	    const struct buf *err);

/* A handler's result for a person: its output as "  | line"s (or "(no
 * output)"), then "exit 0 after 0.012 s: ..." or its error. */
void	trial_print_result(FILE *out, const struct handler_result *r);

/*
 * Run c->handler on a synthetic event: a small JSON body of type
 * "webhook_inbox.test", WEBHOOK_ID "test_…", WEBHOOK_ATTEMPT 1 and
 * WEBHOOK_TEST=1 so a handler can tell it from a real one (and do
 * nothing).  Returns 0 with *r, or -1 when it could not start (err).
 */
int	trial_synthetic(const struct config *c, struct handler_result *r,
	    struct buf *err) __attribute__((warn_unused_result));

#endif
