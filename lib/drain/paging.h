/*
 * paging: `sync` and `recover` walk the provider's paginated lists
 * (tests/PROVIDER-API.md: {"data": [...], "next_cursor": ...}) and store
 * what they find in the inbox as events, one transaction per page.
 *
 * sync RESOURCE: GET RESOURCE?limit=…&updated_after=… from the cursor kept
 * in the inbox; each object becomes a synthetic event (type
 * "<object>.synced", a stable id from paging_sync_id, createdAt = its
 * updated_at, data = the object), stored with the cursor in the same
 * transaction, so a killed sync resumes at the first page not stored.
 *
 * recover: GET events?limit=…&since=…; every event the inbox lacks is
 * stored under its own id (a later retry of it is then a duplicate).
 *
 * Neither hands the events out: the caller runs the drain afterwards.
 * Nothing is printed; problems, detail and progress go through hooks.
 */
#ifndef WEBHOOK_PAGING_H
#define WEBHOOK_PAGING_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/store/inbox.h"

struct api;	/* lib/drain/api.h */

/* Objects per page we ask for. */
#define PAGING_LIMIT		100
/* Waits for a Retry-After within one walk, and the longest one we sit
 * through (a CLI run can afford a few; a longer one ends the walk). */
#define PAGING_TRIES		5
#define PAGING_WAIT_MAX_S	300
/* The provider's events list reaches 30 days back (PROVIDER.md). */
#define PAGING_RECOVER_MAX_NS	(30LL * 86400 * 1000000000LL)
/* Longest RESOURCE name sync takes, bytes. */
#define PAGING_RESOURCE_MAX	256

/* How far a walk got; the clock range is for an ETA. */
struct paging_progress {
	int64_t	start;		/* monotonic ns at the walk's start */
	int64_t	from_ns;	/* the clocks walked: from (0: unknown) */
	int64_t	to_ns;		/* ... to now */
	int64_t	pages, items, stored;	/* stored: new events */
};

/* The walk's reports; each function may be NULL.  Strings live only for
 * the call. */
struct paging_hooks {
	/* Something went wrong or was skipped: one line, no newline. */
	void	(*problem)(void *arg, const char *line);
	/* Detail for -v ("page 3: 100 items, 2 new", a Retry-After wait). */
	void	(*detail)(void *arg, const char *line);
	/* After each stored page; `what` names the walk ("sync clients",
	 * "recover"), `at` is the newest clock of the page (may be NULL). */
	void	(*progress)(void *arg, const struct paging_progress *p,
		    const char *what, const char *at);
	void	 *arg;
};

/*
 * sync `resource` (a path under api_url, at most PAGING_RESOURCE_MAX bytes,
 * no "..") into ib.  Returns 0 when the last page was stored, -1 after a
 * failure (reported).  *p gets the counts either way.
 */
int	paging_sync(struct api *a, struct inbox *ib, const char *resource,
	    const struct paging_hooks *h, struct paging_progress *p)
	    __attribute__((warn_unused_result));

/*
 * recover every event of the provider's list created since since_ns (the
 * caller bounds it by PAGING_RECOVER_MAX_NS) into ib.  Returns 0 or -1 as
 * paging_sync.
 */
int	paging_recover(struct api *a, struct inbox *ib, int64_t since_ns,
	    const struct paging_hooks *h, struct paging_progress *p)
	    __attribute__((warn_unused_result));

/*
 * A page's parts: *data its "data" array, *next its "next_cursor" (NULL
 * when null, absent or ""; points into page).  Returns 0, or -1 when the
 * page is not {data: [...], next_cursor: string|null}.
 */
int	paging_page_parts(const cJSON *page, const cJSON **data,
	    const char **next) __attribute__((warn_unused_result));

/*
 * The webhook id of a synced object version, "sync_" + 24 hex digits of a
 * BLAKE2b hash of (kind, id, version): the same version synced twice is
 * one event, deduplicated like any delivery; kind and id are hashed with
 * their NULs, so ("ab", "c") and ("a", "bc") differ.
 */
void	paging_sync_id(const char *kind, const char *id, const char *version,
	    char out[64]);

#endif
