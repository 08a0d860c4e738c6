/*
 * refetch: the object of a truncated event, fetched from the provider's API
 * and put where the event's `data` was (PROVIDER.md "Quando vier
 * object_truncated, busque o objeto"; docs/DESIGN.md "Handler": stdin gets the
 * stored body with `data` replaced by the fetched object).  Also for events
 * the config's `refetch` list names, which the operator wants fresh.
 *
 * The fetched object's `updated_at` is its version and serves as both of
 * its clocks (docs/DESIGN.md "Stale rule"): an object the API serves at a
 * version older than what was already done makes the event stale.
 */
#ifndef WEBHOOK_REFETCH_H
#define WEBHOOK_REFETCH_H

#include <stdint.h>

#include "lib/program/config.h"
#include "lib/store/inbox.h"
#include "lib/common/util.h"

struct api;		/* lib/drain/api.h */
struct api_waiter;	/* lib/drain/api.h */

/* What one drain run keeps between refetches: one API client (connections
 * kept alive), opened on the first need, and the API's request to wait. */
struct refetch {
	struct api	*api;		/* NULL until needed; owned */
	int		 open_failed;	/* api_open failed: said once a run */
	int64_t		 pause_until;	/* monotonic ns: Retry-After's end */
	/* NULL, or what the client serves while a request waits (a drain
	 * run's handlers: api_set_waiter); the caller's, set before the
	 * first refetch. */
	const struct api_waiter *waiter;
};

/* The outcome of preparing what the handler gets for an event. */
enum refetch_result {
	REFETCH_NONE,		/* hand out the stored body */
	REFETCH_OK,		/* hand out the event with the fetched object */
	REFETCH_GONE,		/* 404: hand out the stored body, say it is gone */
	REFETCH_STALE,		/* the fetched object is older than what was done */
	REFETCH_FAILED		/* try again later (*retry_after_s may say when) */
};

/*
 * Prepare event e (claimed from ib) for its handler.  Nothing to do
 * (REFETCH_NONE) unless e is truncated or matches `refetch` in c, and it
 * has an object key; a truncated event without api_url goes out as stored.
 * REFETCH_OK: *out is the body to hand out (NUL-terminated; free it) and
 * e->object_version the object's normalised updated_at ("" when it had
 * none); every other result leaves *out NULL and object_version "".
 * REFETCH_FAILED: why gets a short reason for the event's last_error, and
 * *retry_after_s the API's Retry-After in seconds (0 when none), which
 * also pauses the later refetches of this run.  alarm gets a line an
 * operator must see now (the API client does not open, said once a run;
 * the token is refused), empty otherwise.  r is the run's state
 * (zero it before the first call; refetch_close after the last).
 */
enum refetch_result refetch_event(struct refetch *r, struct inbox *ib,
	    const struct config *c, struct inbox_event *e, char **out,
	    int64_t *retry_after_s, struct buf *why, struct buf *alarm);

/* Close the run's API client, if any (r itself is the caller's). */
void	refetch_close(struct refetch *r);

#endif
