/*
 * test_report_history: the report page (lib/report/html.c, report.c,
 * prom.c) against a known history written with the store API into a real
 * SQLite inbox: charts and tiles draw only what was recorded (an inbox a
 * minute old has no 24 h of backlog and no 24 h gap between runs),
 * quantiles read from fixed buckets are shown as the bounds they are,
 * "last successful run" follows `status`'s rule of a failed run, and every
 * page is valid UTF-8 whatever bytes the inbox holds (lib/common/utf8.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/common/utf8.h"
#include "lib/operator/status.h"
#include "lib/store/history.h"
#include "lib/report/report.h"
#include "lib/store/inbox.h"
#include "tests/check_common.h"

#define SEC	1000000000LL
#define NOW	1772366400LL		/* 2026-03-01T12:00:00Z, a bucket start */

static char dir[] = "/tmp/webhook-test-report-history-XXXXXX";

static struct inbox *
open_new(const char *name, struct buf *err)
{
	struct inbox_options o = { .busy_timeout_ms = 5000,
	    .synchronous = INBOX_SYNC_NORMAL };
	struct inbox *ib = NULL;
	char path[512];

	snprintf(path, sizeof path, "%s/%s", dir, name);
	ck_assert_int_eq(inbox_open(path, &o, &ib, err), INBOX_OK);
	return ib;
}

static void
store(struct inbox *ib, const char *id, const char *type, const char *oid,
    struct buf *err)
{
	struct event_fields f;
	struct inbox_delivery d;

	memset(&f, 0, sizeof f);
	f.type = (char *)type;
	f.object_type = "client";
	f.object_id = (char *)oid;
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = NOW;
	d.body = "{}";
	d.body_len = 2;
	d.fields = &f;
	ck_assert_int_eq(inbox_store(ib, &d, err), INBOX_OK);
}

static struct inbox_run_record
run_of(int64_t started_s, int64_t finished_s, const char *result,
    int64_t done, int64_t failed)
{
	struct inbox_run_record run;

	memset(&run, 0, sizeof run);
	run.started_ns = started_s * SEC;
	run.finished_ns = finished_s * SEC;
	run.claimed = done + failed;
	run.done = done;
	run.failed = failed;
	snprintf(run.result, sizeof run.result, "%s", result);
	return run;
}

/* The page (and the metrics) of ib at now_s, malloc'd. */
static char *
render(struct inbox *ib, const char *db, int64_t now_s,
    void (*fn)(FILE *, const struct report *))
{
	struct report *r = malloc(sizeof *r);
	struct buf err;
	char *out = NULL;
	size_t len;
	FILE *f;

	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(r);
	ck_assert_msg(report_collect(ib, db, now_s * SEC, 900, NULL, r, &err) == 0,
	    "%s", err.data);
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	fn(f, r);
	fclose(f);
	free(r);
	buf_free(&err);
	return out;
}

/* The part of page from `<div ... id="ID"` to the end of its table. */
static char *
chart_of(const char *page, const char *id)
{
	char key[64];
	const char *p, *e;

	snprintf(key, sizeof key, "id=\"%s\"", id);
	ck_assert_msg((p = strstr(page, key)) != NULL, "no %s", id);
	ck_assert_ptr_nonnull(e = strstr(p, "</table>"));
	return strndup(p, (size_t)(e - p));
}

/* Points drawn in a chart's SVG (every series): "x,y " pairs in its
 * polylines' points, and its dots (a line of one point). */
static int
points(const char *chart)
{
	const char *p = chart, *e;
	int n = 0;

	while ((p = strstr(p, "points=\"")) != NULL) {
		p += 8;
		for (e = strchr(p, '"'); p < e; p++)
			n += *p == ',';
	}
	for (p = chart; (p = strstr(p, "<circle ")) != NULL; p++)
		n++;
	return n;
}

/* Dots alone. */
static int
dots(const char *chart)
{
	const char *p;
	int n = 0;

	for (p = chart; (p = strstr(p, "<circle ")) != NULL; p++)
		n++;
	return n;
}

/* `<td>…NAME</td><td class="n">A</td><td class="n">B</td>` in chart. */
static void
row_is(const char *chart, const char *name, const char *a, const char *b)
{
	char want[160];

	snprintf(want, sizeof want, "</span>%s</td><td class=\"n\">%s</td>"
	    "<td class=\"n\">%s</td>", name, a, b);
	ck_assert_msg(strstr(chart, want) != NULL, "want %s in %s", want, chart);
}

/*
 * An inbox a minute old: 40 events received, 38 handled in one run that
 * ended a minute ago, 2 pending.  The 24 h charts start at the current
 * bucket; backlog is what was recorded (2 pending now, 4 before that
 * bucket's run is not recorded); the strip has no 24 h gap.
 */
START_TEST(young_inbox_draws_only_its_history)
{
	struct buf err;
	struct inbox *ib;
	struct history_batch b;
	struct inbox_run_record run = run_of(NOW + 1, NOW + 2, "ok", 38, 0);
	char *page, *c;
	int i;

	buf_init(&err, 4096);
	ib = open_new("young.db", &err);
	store(ib, "p1", "t", "1", &err);
	store(ib, "p2", "t", "2", &err);
	history_batch_init(&b);
	history_count(&b, NOW + 2, "received", NULL, 40);
	history_count(&b, NOW + 2, "handled", NULL, 38);
	history_count(&b, NOW + 2, "type_handled", "t", 38);
	/* A handler that takes a few ms, and a few slower ones. */
	for (i = 0; i < 30; i++)
		history_observe(&b, NOW + 2, "handler", "t", 3);
	for (i = 0; i < 8; i++)
		history_observe(&b, NOW + 2, "handler", "t", 200);
	ck_assert_int_eq(inbox_history_add(ib, b.d, b.n, &run, (NOW + 2) * SEC,
	    &err), INBOX_OK);
	page = render(ib, "/srv/young.db", NOW + 60, report_html);

	/* 5-minute buckets: NOW's is the 288th of the 24 h. */
	c = chart_of(page, "backlog-24h");
	ck_assert_ptr_nonnull(strstr(c, "data-from=\"287\""));
	ck_assert_int_eq(points(c), 2);		/* pending and dead, once */
	row_is(c, "pending", "2", "2");
	free(c);
	c = chart_of(page, "flow-24h");
	ck_assert_int_eq(points(c), 3);
	row_is(c, "received", "40", "40");
	row_is(c, "handled", "38", "38");
	free(c);
	c = chart_of(page, "backlog-30d");
	ck_assert_ptr_nonnull(strstr(c, "data-from=\"29\""));
	ck_assert_int_eq(points(c), 2);
	ck_assert_int_eq(dots(c), 2);		/* one day: shown as dots */
	free(c);
	/* p50 lies in the ≤ 10 ms bucket, p95 in the ≤ 500 ms one, whose
	 * bound is above the max seen (200): bounds, said as bounds. */
	c = chart_of(page, "handler-24h");
	row_is(c, "p50", "≤ 10 ms", "≤ 10 ms");
	row_is(c, "p95", "≤ 200 ms", "≤ 200 ms");
	row_is(c, "max", "200 ms", "200 ms");
	free(c);
	ck_assert_msg(strstr(page, "<td class=\"n\">≤ 200 ms</td></tr>") != NULL,
	    "types' p95");
	/* One run, 58 s ago: the longest gap is since then, not 24 h. */
	ck_assert_ptr_nonnull(strstr(page, "id=\"runs-gap\" data-s=\"58\""));
	ck_assert_ptr_nonnull(strstr(page, "History since 2026-03-01 12:00 UTC"));
	free(page);
	history_batch_free(&b);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

/* No history at all: nothing drawn, no gap, no success. */
START_TEST(empty_inbox_draws_nothing)
{
	struct buf err;
	struct inbox *ib;
	char *page, *c;

	buf_init(&err, 4096);
	ib = open_new("empty.db", &err);
	page = render(ib, "/srv/empty.db", NOW, report_html);
	c = chart_of(page, "backlog-24h");
	ck_assert_int_eq(points(c), 0);
	row_is(c, "pending", "–", "–");
	free(c);
	ck_assert_ptr_nonnull(strstr(page, "id=\"runs-gap\" data-s=\"-1\""));
	ck_assert_ptr_nonnull(strstr(page, "No history yet"));
	ck_assert_ptr_nonnull(strstr(page, "id=\"last-success\" class=\"bad\" "
	    "data-age-s=\"-1\""));
	free(page);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

/* status_run_failed is the one rule; the page and metrics follow it. */
START_TEST(a_run_in_which_every_event_failed_is_no_success)
{
	struct buf err;
	struct inbox *ib;
	struct inbox_run_record ok = run_of(NOW - 601, NOW - 600, "ok", 5, 0),
	    bad = run_of(NOW - 61, NOW - 60, "failures", 0, 7);
	char *page;

	ck_assert_int_eq(status_run_failed("failures", 0), 1);
	ck_assert_int_eq(status_run_failed("failures", 3), 0);
	ck_assert_int_eq(status_run_failed("error", 5), 1);
	ck_assert_int_eq(status_run_failed("ok", 0), 0);
	buf_init(&err, 4096);
	ib = open_new("failed.db", &err);
	ck_assert_int_eq(inbox_history_add(ib, NULL, 0, &ok, (NOW - 600) * SEC,
	    &err), INBOX_OK);
	ck_assert_int_eq(inbox_history_add(ib, NULL, 0, &bad, (NOW - 60) * SEC,
	    &err), INBOX_OK);
	page = render(ib, "/srv/failed.db", NOW, report_html);
	ck_assert_msg(strstr(page, "id=\"last-success\" class=\"\" "
	    "data-age-s=\"600\">10m ago") != NULL, "%.300s",
	    strstr(page, "Last run"));
	ck_assert_ptr_nonnull(strstr(page, "id=\"last-run\" class=\"bad\" "
	    "data-failed=\"1\" data-age-s=\"60\">failed (0 done, 7 failed)"));
	free(page);
	page = render(ib, "/srv/failed.db", NOW, report_prom);
	ck_assert_ptr_nonnull(strstr(page,
	    "\nwebhook_last_success_timestamp_seconds 1772365800\n"));
	free(page);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

START_TEST(utf8_fix_replaces_what_is_not_utf8)
{
	static const struct { const char *in, *out; } cases[] = {
		{ "plain", "plain" },
		{ "ü€😀", "ü€😀" },
		{ "a\xff" "b", "a" UTF8_REPLACEMENT "b" },
		{ "\xc0\xaf", UTF8_REPLACEMENT UTF8_REPLACEMENT },	/* overlong */
		{ "\xed\xa0\x80", UTF8_REPLACEMENT UTF8_REPLACEMENT
		  UTF8_REPLACEMENT },					/* surrogate */
		{ "\xf4\x90\x80\x80", UTF8_REPLACEMENT UTF8_REPLACEMENT
		  UTF8_REPLACEMENT UTF8_REPLACEMENT },			/* > U+10FFFF */
		{ "cut \xe2\x82", "cut " UTF8_REPLACEMENT UTF8_REPLACEMENT },
	};
	char *t;

	for (size_t i = 0; i < NELEM(cases); i++) {
		t = utf8_fix(cases[i].in);
		ck_assert_str_eq(t, cases[i].out);
		ck_assert(utf8_valid(t));
		ck_assert_int_eq(utf8_valid(cases[i].in),
		    strcmp(cases[i].in, cases[i].out) == 0);
		free(t);
	}
}
END_TEST

/* Hostile bytes in types, error classes, ids, object ids and the
 * database's name: the page, the metrics and `status --json` stay UTF-8. */
START_TEST(every_page_is_utf8_whatever_the_inbox_holds)
{
	struct buf err;
	struct inbox *ib;
	struct history_batch b;
	struct inbox_status_report st;
	struct status_attention at = { 0 };
	struct inbox_run_record run = run_of(NOW - 3, NOW - 2, "failures", 1, 1);
	char *page, *t;
	cJSON *j;

	buf_init(&err, 4096);
	ib = open_new("hostile.db", &err);
	history_batch_init(&b);
	history_count(&b, NOW - 2, "type_handled", "ty\xff\xfepe", 1);
	history_count(&b, NOW - 2, "type_failed", "cut \xe2\x82", 1);
	history_count(&b, NOW - 2, "failed", "exit \xc0\xaf", 1);
	history_observe(&b, NOW - 2, "handler", "ty\xff\xfepe", 3);
	ck_assert_int_eq(inbox_history_add(ib, b.d, b.n, &run, (NOW - 2) * SEC,
	    &err), INBOX_OK);
	store(ib, "id\xed\xa0\x80", "t\xf4\x90\x80\x80", "obj\xff", &err);
	page = render(ib, "/srv/\xff.db", NOW, report_html);
	ck_assert_msg(utf8_valid(page), "page not UTF-8");
	ck_assert_ptr_nonnull(strstr(page, "ty" UTF8_REPLACEMENT UTF8_REPLACEMENT
	    "pe"));
	ck_assert_ptr_nonnull(strstr(page, "/srv/" UTF8_REPLACEMENT ".db"));
	/* A valid character next to a quote in a shell word stays whole. */
	free(page);
	page = render(ib, "/srv/\xff.db", NOW, report_prom);
	ck_assert_msg(utf8_valid(page), "metrics not UTF-8");
	free(page);
	ck_assert_int_eq(inbox_status_report(ib, &st, &err), INBOX_OK);
	snprintf(st.last_run_outcome, sizeof st.last_run_outcome, "ok \xff");
	at.n = 1;
	snprintf(at.line[0], sizeof at.line[0], "line \xfe");
	ck_assert_ptr_nonnull(j = status_json(&st, &at));
	ck_assert_ptr_nonnull(t = cJSON_PrintUnformatted(j));
	ck_assert_msg(utf8_valid(t), "status --json not UTF-8: %s", t);
	ck_assert_ptr_nonnull(strstr(t, "\"line " UTF8_REPLACEMENT "\""));
	free(t);
	cJSON_Delete(j);
	history_batch_free(&b);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

/* A shell word keeps a multi-byte character whole beside a quote. */
START_TEST(shell_words_keep_characters_whole)
{
	struct buf err;
	struct inbox *ib;
	struct history_batch b;
	char *page;

	buf_init(&err, 4096);
	ib = open_new("words.db", &err);
	history_batch_init(&b);
	history_count(&b, NOW - 2, "type_handled", "caf\xc3\xa9'x", 1);
	ck_assert_int_eq(inbox_history_add(ib, b.d, b.n, NULL, (NOW - 2) * SEC,
	    &err), INBOX_OK);
	page = render(ib, "/srv/w.db", NOW, report_html);
	ck_assert_msg(strstr(page, "list --type &#39;caf\xc3\xa9&#39;\\&#39;&#39;x"
	    "&#39;") != NULL, "%s", strstr(page, "list --type"));
	free(page);
	history_batch_free(&b);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

static Suite *
report_history_suite(void)
{
	Suite *s = suite_create("report_history");
	TCase *tc = tcase_create("report_history");

	tcase_add_test(tc, young_inbox_draws_only_its_history);
	tcase_add_test(tc, empty_inbox_draws_nothing);
	tcase_add_test(tc, a_run_in_which_every_event_failed_is_no_success);
	tcase_add_test(tc, utf8_fix_replaces_what_is_not_utf8);
	tcase_add_test(tc, every_page_is_utf8_whatever_the_inbox_holds);
	tcase_add_test(tc, shell_words_keep_characters_whole);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(report_history_suite, dir);
}
