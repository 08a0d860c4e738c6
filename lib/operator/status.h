/*
 * status: what `webhook-drain status` reports (docs/DESIGN.md "The drainer"):
 * counts per state, the oldest pending event, the last run, and the lines
 * that need a human ("attention"): dead events, a pending event older than
 * allowed, a cron that stopped running the drainer, a run lock held for
 * longer than a run should take.  A monitoring check runs `status` and
 * alerts on its exit code, so the rules live here, apart from printing.
 */
#ifndef WEBHOOK_STATUS_H
#define WEBHOOK_STATUS_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "lib/store/inbox.h"

struct config;

/* Attention lines at most: one per rule below (status_attention's and
 * status_failing's). */
#define STATUS_ATTENTION_MAX	8
/* Bytes of one line (with its NUL): a database path near PATH_MAX, named
 * twice by the lock rule, is cut rather than grow the report. */
#define STATUS_LINE_SIZE	(PATH_MAX + 200)

struct status_attention {
	int	n;
	char	line[STATUS_ATTENTION_MAX][STATUS_LINE_SIZE];
};

/* Sources kept (docs/DESIGN.md "Sources"): a config names at most 17
 * (default and 16 sections); rows of sources since removed from it
 * count too.  More are counted in `more`, not shown. */
#define STATUS_SOURCES_MAX	32

/* Events by source and state (inbox_count_sources), in name order. */
struct status_sources {
	struct inbox_source_count s[STATUS_SOURCES_MAX];
	int	n;
	int	more;
};

/* Read them: 0, or -1 with the inbox's reason in err. */
int	status_sources_read(struct inbox *ib, struct status_sources *ss,
	    struct buf *err) __attribute__((warn_unused_result));

/* Add a row of zeros for each of c's [source NAME] sections with no
 * events yet, in name order: a source that never received anything is
 * what a wrong URL at the provider looks like, and a view that leaves it
 * out cannot show it.  Past STATUS_SOURCES_MAX, counted in `more`. */
void	status_sources_configured(struct status_sources *ss,
	    const struct config *c);

/* Is there a [source NAME]'s row (its events, or the zeros of
 * status_sources_configured)?  (Else the per-source
 * views say nothing: an inbox of the default source alone looks as it
 * did before sources.) */
int	status_sources_named(const struct status_sources *ss);

/*
 * The lines that need a human, in this order: dead events; the oldest
 * pending event received more than max_pending_age_s ago; runs that found
 * the lock held since more than max_idle_s ago (naming database's lock
 * file), else no run recorded while events are pending, else a last run
 * started more than max_idle_s ago; then times from the future (the clock
 * stepped back): a next attempt later than now + retry_max_s, an arrival
 * later than now + settle_s (+ 1 s).  now_ns: ns since the epoch.
 */
void	status_attention(const struct inbox_status_report *r, int64_t now_ns,
	    int64_t max_pending_age_s, int64_t max_idle_s, const char *database,
	    int64_t retry_max_s, int64_t settle_s, struct status_attention *a);

/*
 * Failing is a state to see within one run of the first failure, not an
 * hour later (docs/DESIGN.md "The operator's tools").  Adds to a (after
 * status_attention) a line when the last run failed outright (its outcome
 * "error: ...": the inbox broke mid-run, e.g. a full disk) or had failures
 * and nothing done, and a line when the oldest event waiting for a retry
 * first failed more than max_failing_s ago (r->oldest_failing: its first
 * failure since it was received or requeued, so a wait behind its object or
 * a cron gap before it failed does not count).  Instead of the first line,
 * while events are retrying and no event was done since the oldest of them
 * first failed, a line says so: the runs between retries do nothing and end
 * "ok", and must not make the report "ok" with them.
 */
void	status_failing(const struct inbox_status_report *r, int64_t now_ns,
	    int64_t max_failing_s, struct status_attention *a);

/*
 * The one rule of a failed run, for `status` and the report page alike:
 * result is the run's ("ok", "failures", "error": lib/report/runrec.c),
 * done its events done.  A run failed when it broke ("error"), or failed
 * events and did none; a run that did some is one that works, its
 * failures are the events'.  1 failed, 0 not.
 */
int	status_run_failed(const char *result, int64_t done);

/* The report for a person: counts, oldest pending, last run, the counts
 * by source (when ss is not NULL and status_sources_named), then each
 * attention line, or "ok" when there is none. */
void	status_print(FILE *f, const struct inbox_status_report *r,
	    const struct status_sources *ss, const struct status_attention *a,
	    int64_t now_ns);

/* Text from the inbox as a JSON string, valid UTF-8 (common/utf8.h: U+FFFD
 * for a stray byte; JSON must be UTF-8); NULL when out of memory. */
cJSON	*status_json_text(const char *s);

/* The report as one JSON object (`status --json`): counts, instants (null
 * when none), the last run's outcome and the "attention" array.  A new
 * object (cJSON_Delete it), or NULL when out of memory. */
cJSON	*status_json(const struct inbox_status_report *r,
	    const struct status_attention *a);

/* "sources" into o: one object per source {"source", "pending",
 * "waiting_retry", "done", "stale", "dead"}, always (the default source
 * included), so a monitor can rely on the key. */
void	status_json_sources(cJSON *o, const struct status_sources *ss);

#endif
