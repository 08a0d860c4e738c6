/*
 * status: the report of `webhook-drain status` (operator/status.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common/instant.h"
#include "lib/common/utf8.h"
#include "lib/program/config.h"
#include "lib/operator/present.h"
#include "lib/operator/status.h"

#define NS	1000000000LL

/* Was `instant` (normalised; "" when none) more than limit_s before now? */
static int
older_than(const char *instant, int64_t now_ns, int64_t limit_s)
{
	int64_t t;

	return instant[0] != '\0' && instant_to_ns(instant, &t) == 0 &&
	    now_ns - t > limit_s * NS;
}

/* Is `instant` (normalised; "" when none) more than limit_s after now? */
static int
later_than(const char *instant, int64_t now_ns, int64_t limit_s)
{
	int64_t t;

	return instant[0] != '\0' && instant_to_ns(instant, &t) == 0 &&
	    t - now_ns > limit_s * NS;
}

void
status_attention(const struct inbox_status_report *r, int64_t now_ns,
    int64_t max_pending_age_s, int64_t max_idle_s, const char *database,
    int64_t retry_max_s, int64_t settle_s, struct status_attention *a)
{
	char ago[PRESENT_TIME_SIZE];

#define SAY(...) snprintf(a->line[a->n++], STATUS_LINE_SIZE, __VA_ARGS__)
	a->n = 0;
	if (r->dead > 0)
		SAY("%lld dead event%s: webhook-drain list --state dead",
		    (long long)r->dead, r->dead == 1 ? "" : "s");
	if (older_than(r->oldest_pending, now_ns, max_pending_age_s))
		SAY("oldest pending event received %s (over --max-pending-age "
		    "%llds)", present_relative(r->oldest_pending, now_ns, ago),
		    (long long)max_pending_age_s);
	if (older_than(r->lock_busy_since, now_ns, max_idle_s))
		SAY("every run since %s found the run lock held: a handler, or a "
		    "process it left behind (setsid, a daemon), still holds "
		    "%s.drain-lock; see `fuser -v %s.drain-lock`",
		    present_relative(r->lock_busy_since, now_ns, ago), database,
		    database);
	else if (r->last_run_started[0] == '\0' && r->pending > 0)
		SAY("no drainer run recorded yet: is the crontab line installed?");
	else if (older_than(r->last_run_started, now_ns, max_idle_s))
		SAY("the last drainer run started %s (over --max-idle %llds): is "
		    "cron running it?", present_relative(r->last_run_started,
		    now_ns, ago), (long long)max_idle_s);
	if (later_than(r->latest_next_at, now_ns, retry_max_s))
		SAY("a retry is scheduled at %s, beyond retry_max from now: the "
		    "clock stepped back? the drainer takes it as due now",
		    r->latest_next_at);
	if (later_than(r->newest_pending, now_ns, settle_s + 1))
		SAY("an event was received at %s, in the future: the clock "
		    "stepped back? the drainer takes it as due now",
		    r->newest_pending);
#undef SAY
}

static int
source_row(const struct inbox_source_count *c, void *arg)
{
	struct status_sources *ss = arg;

	if (ss->n == STATUS_SOURCES_MAX)
		ss->more++;
	else
		ss->s[ss->n++] = *c;
	return 0;
}

int
status_sources_read(struct inbox *ib, struct status_sources *ss,
    struct buf *err)
{
	memset(ss, 0, sizeof *ss);
	return inbox_count_sources(ib, source_row, ss, err) == INBOX_OK ? 0 : -1;
}

void
status_sources_configured(struct status_sources *ss, const struct config *c)
{
	size_t j;
	int i, k;

	for (j = 0; j < c->nsources; j++) {
		const char *name = c->sources[j].name;

		for (i = 0; i < ss->n && strcmp(ss->s[i].source, name) < 0; i++)
			;
		if (i < ss->n && strcmp(ss->s[i].source, name) == 0)
			continue;
		if (ss->n == STATUS_SOURCES_MAX) {
			ss->more++;
			continue;
		}
		for (k = ss->n; k > i; k--)
			ss->s[k] = ss->s[k - 1];
		memset(&ss->s[i], 0, sizeof ss->s[i]);
		snprintf(ss->s[i].source, sizeof ss->s[i].source, "%s", name);
		ss->n++;
	}
}

int
status_sources_named(const struct status_sources *ss)
{
	return ss->more > 0 || ss->n > 1 || (ss->n == 1 &&
	    strcmp(ss->s[0].source, INBOX_DEFAULT_SOURCE) != 0);
}

void
status_json_sources(cJSON *o, const struct status_sources *ss)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "sources"), *x;
	int i;

	for (i = 0; arr != NULL && i < ss->n; i++) {
		if ((x = cJSON_CreateObject()) == NULL)
			return;
		cJSON_AddItemToObject(x, "source",
		    status_json_text(ss->s[i].source));
		cJSON_AddNumberToObject(x, "pending", (double)ss->s[i].pending);
		cJSON_AddNumberToObject(x, "waiting_retry",
		    (double)ss->s[i].waiting_retry);
		cJSON_AddNumberToObject(x, "done", (double)ss->s[i].done);
		cJSON_AddNumberToObject(x, "stale", (double)ss->s[i].stale);
		cJSON_AddNumberToObject(x, "dead", (double)ss->s[i].dead);
		cJSON_AddItemToArray(arr, x);
	}
}

void
status_print(FILE *f, const struct inbox_status_report *r,
    const struct status_sources *ss, const struct status_attention *a,
    int64_t now_ns)
{
	char ago[PRESENT_TIME_SIZE], at[PRESENT_TIME_SIZE];
	int i;

	fprintf(f, "pending  %lld", (long long)r->pending);
	if (r->waiting_retry || r->blocked)
		fprintf(f, " (%lld waiting for a retry, on %lld object%s; %lld "
		    "blocked behind an earlier event of their object)",
		    (long long)r->waiting_retry, (long long)r->failing_objects,
		    r->failing_objects == 1 ? "" : "s", (long long)r->blocked);
	fprintf(f, "\ndone     %lld\nstale    %lld\ndead     %lld\n",
	    (long long)r->done, (long long)r->stale, (long long)r->dead);
	fprintf(f, "oldest pending: %s\n", r->oldest_pending[0] ?
	    present_relative(r->oldest_pending, now_ns, ago) : "none");
	if (r->last_run_started[0])
		fprintf(f, "last run: started %s (%s), %s\n",
		    present_short_time(r->last_run_started, at),
		    present_relative(r->last_run_started, now_ns, ago),
		    r->last_run_outcome[0] ? r->last_run_outcome : "?");
	else
		fprintf(f, "last run: never\n");
	if (ss != NULL && status_sources_named(ss)) {
		fprintf(f, "by source:\n");
		for (i = 0; i < ss->n; i++) {
			const struct inbox_source_count *c = &ss->s[i];
			char *name = utf8_fix(c->source);

			if (c->pending + c->done + c->stale + c->dead == 0) {
				fprintf(f, "  %-16s nothing received yet\n",
				    name ? name : "?");
				free(name);
				continue;
			}
			fprintf(f, "  %-16s pending %lld", name ? name : "?",
			    (long long)ss->s[i].pending);
			if (ss->s[i].waiting_retry)
				fprintf(f, " (%lld retrying)",
				    (long long)ss->s[i].waiting_retry);
			fprintf(f, ", done %lld, stale %lld, dead %lld\n",
			    (long long)ss->s[i].done, (long long)ss->s[i].stale,
			    (long long)ss->s[i].dead);
			free(name);
		}
		if (ss->more)
			fprintf(f, "  and %d more sources\n", ss->more);
	}
	for (i = 0; i < a->n; i++)
		fprintf(f, "attention: %s\n", a->line[i]);
	if (a->n == 0)
		fprintf(f, "ok\n");
}

/* An instant, or null when there is none. */
static void
add_instant(cJSON *o, const char *k, const char *v)
{
	if (v[0] != '\0')
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

cJSON *
status_json_text(const char *s)
{
	char *t = utf8_fix(s);
	cJSON *j = t != NULL ? cJSON_CreateString(t) : NULL;

	free(t);
	return j;
}

cJSON *
status_json(const struct inbox_status_report *r,
    const struct status_attention *a)
{
	cJSON *j = cJSON_CreateObject(), *arr;
	int i;

	if (j == NULL)
		return NULL;
	cJSON_AddNumberToObject(j, "pending", (double)r->pending);
	cJSON_AddNumberToObject(j, "waiting_retry", (double)r->waiting_retry);
	cJSON_AddNumberToObject(j, "blocked", (double)r->blocked);
	cJSON_AddNumberToObject(j, "done", (double)r->done);
	cJSON_AddNumberToObject(j, "stale", (double)r->stale);
	cJSON_AddNumberToObject(j, "dead", (double)r->dead);
	add_instant(j, "oldest_pending_received_at", r->oldest_pending);
	add_instant(j, "last_run_started", r->last_run_started);
	add_instant(j, "last_run_finished", r->last_run_finished);
	cJSON_AddItemToObject(j, "last_run_outcome",
	    status_json_text(r->last_run_outcome));
	arr = cJSON_AddArrayToObject(j, "attention");
	for (i = 0; i < a->n; i++)
		cJSON_AddItemToArray(arr, status_json_text(a->line[i]));
	return j;
}

int
status_run_failed(const char *result, int64_t done)
{
	return strcmp(result, "error") == 0 ||
	    (strcmp(result, "failures") == 0 && done == 0);
}

/* The outcome drain/drain.c notes (lib/drain/drain.c, finish_run): "ok: N done, ...",
 * "failures: N done, ...", "error: N done, ...", read by status_run_failed's
 * rule. */
static int
last_run_failed(const char *outcome)
{
	char result[16];
	long long done = -1;

	if (sscanf(outcome, "%15[a-z]: %lld done", result, &done) < 1)
		return 0;
	return status_run_failed(result, done);
}

void
status_failing(const struct inbox_status_report *r, int64_t now_ns,
    int64_t max_failing_s, struct status_attention *a)
{
	char ago[PRESENT_TIME_SIZE];

#define SAY(...) do { if (a->n < STATUS_ATTENTION_MAX) \
	snprintf(a->line[a->n++], STATUS_LINE_SIZE, __VA_ARGS__); } while (0)
	if (last_run_failed(r->last_run_outcome))
		SAY("the last run failed (%s): webhook-drain list --state "
		    "retrying; webhook-drain try ID", r->last_run_outcome);
	else if (r->waiting_retry > 0 && strcmp(r->last_done,
	    r->oldest_failing) < 0)
		/* Idle runs (the retries' backoff not due) come between:
		 * without this, status would say ok a minute after a storm. */
		SAY("%lld event%s retrying and none done since %s: webhook-drain "
		    "list --state retrying; webhook-drain try ID",
		    (long long)r->waiting_retry, r->waiting_retry == 1 ? "" : "s",
		    present_relative(r->oldest_failing, now_ns, ago));
	if (older_than(r->oldest_failing, now_ns, max_failing_s))
		SAY("%lld event%s failing since %s (over --max-failing %llds), "
		    "holding %lld object%s: webhook-drain list --state retrying",
		    (long long)r->waiting_retry, r->waiting_retry == 1 ? "" : "s",
		    present_relative(r->oldest_failing, now_ns, ago),
		    (long long)max_failing_s, (long long)r->failing_objects,
		    r->failing_objects == 1 ? "" : "s");
#undef SAY
}
