/*
 * trial: run the user's handler now, outside a run, on one stored event
 * (`webhook-drain try ID`) or on a synthetic one (`check --handler`), and
 * report what it did (issue 18).  An operator fixing a handler at 3 a.m.
 * wants to see it work on one real event before requeueing hundreds.
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

#include "config.h"
#include "handler.h"
#include "util.h"

/* What a trial found beside the handler's result. */
struct trial_info {
	char	state[8];	/* the event's state */
	int	stale;		/* a run would not hand it out: stale */
	int	blocked;	/* a run would hold it behind its object */
	int	truncated;	/* the API would have been asked first */
	long long attempt;	/* WEBHOOK_ATTEMPT given */
};

enum trial_status {
	TRIAL_RAN,		/* *r and *info filled */
	TRIAL_NO_EVENT,		/* no event with that id */
	TRIAL_NO_BODY,		/* retention dropped its body: nothing to give */
	TRIAL_FAILED		/* the inbox or the handler's start failed (err) */
};

/*
 * Run c->handler (set) on the stored event `id` of c->database, which
 * is opened read-only in effect (no write is made).  Changes the working
 * directory to the config's (drain_enter_config_dir).
 */
enum trial_status trial_event(const struct config *c, const char *id,
	    struct handler_result *r, struct trial_info *info, struct buf *err)
	    __attribute__((warn_unused_result));

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
