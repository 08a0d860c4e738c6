/*
 * test_status: lib/operator/status.c — the attention rules of `status` at their
 * limits (dead events, an old pending event, a held lock, no run yet, an
 * idle cron) and the report's two forms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common/instant.h"
#include "lib/operator/status.h"
#include "lib/program/config.h"
#include "tests/check_common.h"

#define SEC	1000000000LL
#define NOW	(1772366400LL * SEC)

/* A report of a healthy inbox: one run a minute ago, nothing pending. */
static void
healthy(struct inbox_status_report *r)
{
	memset(r, 0, sizeof *r);
	r->done = 5;
	ck_assert_int_eq(instant_format(NOW - 60 * SEC, r->last_run_started), 0);
	ck_assert_int_eq(instant_format(NOW - 59 * SEC, r->last_run_finished), 0);
	snprintf(r->last_run_outcome, sizeof r->last_run_outcome,
	    "ok: 5 done, 0 stale, 0 failed");
}

static void
attention(const struct inbox_status_report *r, struct status_attention *a)
{
	status_attention(r, NOW, 3600, 900, "/srv/inbox.db", 6 * 3600, 2, a);
}

START_TEST(healthy_needs_nothing)
{
	struct inbox_status_report r;
	struct status_attention a;
	char *out = NULL;
	size_t len;
	FILE *f;

	healthy(&r);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 0);
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	status_print(f, &r, NULL, &a, NOW);
	fclose(f);
	ck_assert_str_eq(out, "pending  0\ndone     5\nstale    0\ndead     0\n"
	    "oldest pending: none\nlast run: started 2026-03-01T11:59:00Z "
	    "(60s ago), ok: 5 done, 0 stale, 0 failed\nok\n");
	free(out);
}
END_TEST

START_TEST(each_rule_at_its_limit)
{
	struct inbox_status_report r;
	struct status_attention a;

	healthy(&r);
	r.dead = 1;
	attention(&r, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert_str_eq(a.line[0], "1 dead event: webhook-drain list --state dead");

	/* Pending for exactly the limit: fine; a second more: not. */
	healthy(&r);
	r.pending = 1;
	ck_assert_int_eq(instant_format(NOW - 3600 * SEC, r.oldest_pending), 0);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 0);
	ck_assert_int_eq(instant_format(NOW - 3601 * SEC, r.oldest_pending), 0);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert(contains(a.line[0], "over --max-pending-age 3600s"));

	/* The lock held for longer than max_idle names the lock file. */
	healthy(&r);
	ck_assert_int_eq(instant_format(NOW - 901 * SEC, r.lock_busy_since), 0);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert(contains(a.line[0], "fuser -v /srv/inbox.db.drain-lock"));

	/* No run yet: only a problem while something waits. */
	memset(&r, 0, sizeof r);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 0);
	r.pending = 1;
	attention(&r, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert(contains(a.line[0], "is the crontab line installed?"));

	healthy(&r);
	ck_assert_int_eq(instant_format(NOW - 901 * SEC, r.last_run_started), 0);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert(contains(a.line[0], "over --max-idle 900s"));
}
END_TEST

/* docs/DESIGN.md "The operator's tools": times from the future (the clock
 * stepped back) need a human: a retry beyond retry_max from now, an arrival
 * beyond settle. */
START_TEST(times_from_the_future)
{
	struct inbox_status_report r;
	struct status_attention a;

	healthy(&r);
	r.pending = 2;
	ck_assert_int_eq(instant_format(NOW - 10 * SEC, r.oldest_pending), 0);
	/* At the limits: fine. */
	ck_assert_int_eq(instant_format(NOW + 6 * 3600 * SEC, r.latest_next_at), 0);
	ck_assert_int_eq(instant_format(NOW + 3 * SEC, r.newest_pending), 0);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 0);
	/* Beyond: one line each. */
	ck_assert_int_eq(instant_format(NOW + 24 * 3600 * SEC, r.latest_next_at), 0);
	ck_assert_int_eq(instant_format(NOW + 23 * 3600 * SEC, r.newest_pending), 0);
	attention(&r, &a);
	ck_assert_int_eq(a.n, 2);
	ck_assert_ptr_nonnull(strstr(a.line[0], "beyond retry_max"));
	ck_assert_ptr_nonnull(strstr(a.line[1], "in the future"));
}
END_TEST

START_TEST(json_has_nulls_and_attention)
{
	struct inbox_status_report r;
	struct status_attention a;
	cJSON *j;
	const cJSON *arr;

	memset(&r, 0, sizeof r);
	r.dead = 2;
	attention(&r, &a);
	ck_assert_ptr_nonnull(j = status_json(&r, &a));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j, "last_run_started")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItem(j,
	    "oldest_pending_received_at")));
	ck_assert_int_eq((int)cJSON_GetObjectItem(j, "dead")->valuedouble, 2);
	arr = cJSON_GetObjectItem(j, "attention");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 1);
	ck_assert_str_eq(cJSON_GetArrayItem(arr, 0)->valuestring,
	    "2 dead events: webhook-drain list --state dead");
	cJSON_Delete(j);
}
END_TEST

/* docs/DESIGN.md "The operator's tools": a run with failures and nothing
 * done, a run that broke, and an event failing past --max-failing each need
 * a human at once. */
START_TEST(failing_is_seen_within_one_run)
{
	struct inbox_status_report r;
	struct status_attention a;

	healthy(&r);
	a.n = 0;
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 0);
	snprintf(r.last_run_outcome, sizeof r.last_run_outcome,
	    "failures: 3 done, 0 stale, 2 failed");
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 0);	/* something still goes through */
	snprintf(r.last_run_outcome, sizeof r.last_run_outcome,
	    "failures: 0 done, 0 stale, 200 failed");
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert_ptr_nonnull(strstr(a.line[0], "the last run failed (failures: "
	    "0 done"));
	a.n = 0;
	snprintf(r.last_run_outcome, sizeof r.last_run_outcome,
	    "error: 0 done, 0 stale, 0 failed");
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 1);
	a.n = 0;
	healthy(&r);
	r.waiting_retry = 3;
	r.failing_objects = 2;
	/* Other events done since: not everything fails. */
	ck_assert_int_eq(instant_format(NOW - 10 * SEC, r.last_done), 0);
	ck_assert_int_eq(instant_format(NOW - 900 * SEC, r.oldest_failing), 0);
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 0);	/* at the limit: not over it */
	ck_assert_int_eq(instant_format(NOW - 901 * SEC, r.oldest_failing), 0);
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert_str_eq(a.line[0], "3 events failing since 15m ago (over "
	    "--max-failing 900s), holding 2 objects: webhook-drain list --state "
	    "retrying");
	/* Retrying, and nothing done since they arrived: seen at once,
	 * whatever the last (idle) run said. */
	a.n = 0;
	r.last_done[0] = '\0';
	ck_assert_int_eq(instant_format(NOW - 60 * SEC, r.oldest_failing), 0);
	status_failing(&r, NOW, 900, &a);
	ck_assert_int_eq(a.n, 1);
	ck_assert_str_eq(a.line[0], "3 events retrying and none done since 60s "
	    "ago: webhook-drain list --state retrying; webhook-drain try ID");
}
END_TEST

/* The counts by source, printed only once an event came through a
 * [source NAME] (docs/DESIGN.md "Sources"). */
START_TEST(sources_printed_when_named)
{
	struct inbox_status_report r;
	struct status_attention a;
	struct status_sources ss;
	char *out = NULL;
	size_t len;
	FILE *f;

	healthy(&r);
	attention(&r, &a);
	memset(&ss, 0, sizeof ss);
	ss.n = 1;
	snprintf(ss.s[0].source, sizeof ss.s[0].source, "default");
	ss.s[0].done = 5;
	ck_assert(!status_sources_named(&ss));
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	status_print(f, &r, &ss, &a, NOW);
	fclose(f);
	ck_assert(!contains(out, "by source"));
	free(out);
	ss.n = 2;
	snprintf(ss.s[1].source, sizeof ss.s[1].source, "stripe");
	ss.s[1].pending = 3;
	ss.s[1].waiting_retry = 1;
	ck_assert(status_sources_named(&ss));
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	status_print(f, &r, &ss, &a, NOW);
	fclose(f);
	ck_assert_msg(contains(out, "by source:\n  default          pending 0, "
	    "done 5, stale 0, dead 0\n  stripe           pending 3 (1 retrying), "
	    "done 0, stale 0, dead 0\nok\n"), "%s", out);
	free(out);
}
END_TEST

/* A configured source with no events shows as "nothing received yet"
 * (a wrong URL at the provider looks like that); rows stay in name
 * order, a source with events is not doubled, and a config without
 * sections adds nothing. */
START_TEST(sources_configured_without_events)
{
	struct config_source src[3];
	struct config c;
	struct inbox_status_report r;
	struct status_attention a;
	struct status_sources ss;
	char *out = NULL;
	size_t len;
	FILE *f;

	memset(&c, 0, sizeof c);
	memset(src, 0, sizeof src);
	memset(&ss, 0, sizeof ss);
	ss.n = 1;
	snprintf(ss.s[0].source, sizeof ss.s[0].source, "default");
	ss.s[0].done = 5;
	status_sources_configured(&ss, &c);
	ck_assert_int_eq(ss.n, 1);
	ck_assert(!status_sources_named(&ss));

	snprintf(src[0].name, sizeof src[0].name, "zeta");
	snprintf(src[1].name, sizeof src[1].name, "alpha");
	snprintf(src[2].name, sizeof src[2].name, "stripe");
	c.sources = src;
	c.nsources = 3;
	ss.n = 2;
	snprintf(ss.s[1].source, sizeof ss.s[1].source, "stripe");
	ss.s[1].dead = 2;
	status_sources_configured(&ss, &c);
	ck_assert_int_eq(ss.n, 4);
	ck_assert_str_eq(ss.s[0].source, "alpha");
	ck_assert_str_eq(ss.s[1].source, "default");
	ck_assert_str_eq(ss.s[2].source, "stripe");
	ck_assert_int_eq(ss.s[2].dead, 2);
	ck_assert_str_eq(ss.s[3].source, "zeta");
	ck_assert_int_eq(ss.s[3].pending + ss.s[3].done + ss.s[3].dead, 0);

	healthy(&r);
	attention(&r, &a);
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	status_print(f, &r, &ss, &a, NOW);
	fclose(f);
	ck_assert_msg(contains(out, "by source:\n  alpha            nothing "
	    "received yet\n  default          pending 0, done 5, stale 0, "
	    "dead 0\n  stripe           pending 0, done 0, stale 0, dead 2\n"
	    "  zeta             nothing received yet\n"), "%s", out);
	free(out);

	/* Full: the rest counted, not shown. */
	ss.n = STATUS_SOURCES_MAX;
	for (int i = 4; i < STATUS_SOURCES_MAX; i++)
		snprintf(ss.s[i].source, sizeof ss.s[i].source, "zz%02d", i);
	snprintf(src[0].name, sizeof src[0].name, "zzz");
	status_sources_configured(&ss, &c);
	ck_assert_int_eq(ss.n, STATUS_SOURCES_MAX);
	ck_assert_int_eq(ss.more, 1);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("status");
	TCase *tc = tcase_create("status");

	tcase_add_test(tc, healthy_needs_nothing);
	tcase_add_test(tc, sources_printed_when_named);
	tcase_add_test(tc, sources_configured_without_events);
	tcase_add_test(tc, each_rule_at_its_limit);
	tcase_add_test(tc, times_from_the_future);
	tcase_add_test(tc, json_has_nulls_and_attention);
	tcase_add_test(tc, failing_is_seen_within_one_run);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(suite());
}
