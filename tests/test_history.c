/*
 * test_history: lib/store/history.c (bucket and histogram math, the run's
 * batch, error classes), lib/report/runrec.c (a run's events as history),
 * and lib/store/sqlite/history.c with lib/report/ (report.c, html.c,
 * prom.c) over a real inbox: received counted at admission, the fold into
 * days keeping sums, reading back, and every inbox string escaped in the
 * page.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/drain/drain.h"
#include "lib/store/history.h"
#include "lib/store/inbox.h"
#include "lib/report/report.h"
#include "lib/report/runrec.h"
#include "tests/check_common.h"

#define SEC	1000000000LL
#define T0	1772366400LL		/* 2026-03-01T12:00:00Z */

static char dir[] = "/tmp/webhook-test-history-XXXXXX";

START_TEST(buckets_floor)
{
	ck_assert_int_eq(history_bucket_s(T0 + 299, 300), T0);
	ck_assert_int_eq(history_bucket_s(T0 + 300, 300), T0 + 300);
	ck_assert_int_eq(history_bucket_s(-1, 300), -300);
	ck_assert_int_eq(history_bucket_s(-300, 300), -300);
	ck_assert_int_eq(history_bucket_s(T0 + 86399, 86400), 1772323200LL + 86400);
}
END_TEST

START_TEST(histogram_bounds_and_quantiles)
{
	struct history_hist h;
	int i;

	ck_assert_int_eq(history_index(-5), 0);
	ck_assert_int_eq(history_index(10), 0);
	ck_assert_int_eq(history_index(11), 1);
	ck_assert_int_eq(history_index(86400000), HISTORY_NBOUNDS - 1);
	ck_assert_int_eq(history_index(86400001), HISTORY_NBOUNDS);
	memset(&h, 0, sizeof h);
	ck_assert_int_eq(history_hist_quantile_ms(&h, 0.95), -1);
	for (i = 0; i < 90; i++)
		history_hist_add(&h, 40);	/* ≤ 50 ms */
	for (i = 0; i < 10; i++)
		history_hist_add(&h, 1500);	/* ≤ 2000 ms */
	ck_assert_int_eq(history_hist_total(&h), 100);
	ck_assert_int_eq(h.sum_ms, 90 * 40 + 10 * 1500);
	ck_assert_int_eq(history_hist_quantile_ms(&h, 0.5), 50);
	ck_assert_int_eq(history_hist_quantile_ms(&h, 0.90), 50);
	/* The bucket's bound (2000) is above the max seen: the max. */
	ck_assert_int_eq(history_hist_quantile_ms(&h, 0.95), 1500);
	ck_assert_int_eq(history_hist_quantile_ms(&h, 1.0), 1500);
	history_hist_add(&h, 100000000);	/* +Inf bucket */
	ck_assert_int_eq(history_hist_quantile_ms(&h, 1.0), 100000000);
}
END_TEST

START_TEST(batch_merges_by_key)
{
	struct history_batch b;
	char long_label[200];
	size_t i;
	int64_t sum = -1, max = -1, n = 0;

	history_batch_init(&b);
	history_count(&b, T0 + 1, "handled", NULL, 1);
	history_count(&b, T0 + 299, "handled", "", 2);
	history_count(&b, T0 + 300, "handled", NULL, 1);
	ck_assert_uint_eq(b.n, 2);
	ck_assert_int_eq(b.d[0].n, 3);
	history_observe(&b, T0, "handler", "t", 30);
	history_observe(&b, T0, "handler", "t", 20);
	for (i = 0; i < b.n; i++) {
		if (strcmp(b.d[i].name, "handler") != 0)
			continue;
		if (b.d[i].idx == HISTORY_IDX_SUM)
			sum = b.d[i].n;
		else if (b.d[i].idx == HISTORY_IDX_MAX)
			max = b.d[i].n;
		else
			n += b.d[i].n;
	}
	ck_assert_int_eq(sum, 50);
	ck_assert_int_eq(max, 30);
	ck_assert_int_eq(n, 2);
	memset(long_label, 'x', sizeof long_label - 1);
	long_label[sizeof long_label - 1] = '\0';
	history_count(&b, T0, "failed", long_label, 1);
	ck_assert_uint_eq(strlen(b.d[b.n - 1].label), sizeof b.d[0].label - 1);
	ck_assert_int_eq(b.oom, 0);
	history_batch_free(&b);
}
END_TEST

START_TEST(error_classes)
{
	static const char *cases[][2] = {
		{ "exit 3", "exit 3" },
		{ "killed by signal 9", "killed by signal 9" },
		{ "timed out after 60 s", "timed out after 60 s" },
		{ "could not start: sh: nope", "could not start" },
		{ "", "unknown" },
		{ "api: HTTP 503 at /v1/x", "api" },
	};
	char out[64], small[5];
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		history_error_class(cases[i][0], out, sizeof out);
		ck_assert_str_eq(out, cases[i][1]);
	}
	history_error_class(NULL, out, sizeof out);
	ck_assert_str_eq(out, "unknown");
	history_error_class("exit 127 (command not found?)", small, sizeof small);
	ck_assert_str_eq(small, "exit");
}
END_TEST

/* A run of three events: done (refetched), a retry, a death; one stale,
 * one stale by its refetched object. */
START_TEST(runrec_counts_a_run)
{
	struct runrec rec;
	struct inbox_event e;
	struct handler_result r;
	struct drain_event ev;
	struct drain_result res;
	int64_t now = (T0 + 10) * SEC;
	size_t i;
	int64_t handled = 0, failed = 0, waits = 0, refetched = 0;

	inbox_event_init(&e);
	e.type = "client.updated";
	ck_assert_int_eq(instant_format(T0 * SEC, e.received_at), 0);
	e.attempts = 1;
	memset(&r, 0, sizeof r);
	r.exited = 1;
	r.elapsed_ns = 250 * 1000000LL;
	runrec_start(&rec, now);
	ev = (struct drain_event){ DRAIN_DONE, &e, &r, 0, 1 };	/* refetched */
	runrec_event(&rec, &ev, now);
	snprintf(r.error, sizeof r.error, "exit 3");
	ev = (struct drain_event){ DRAIN_RETRY, &e, &r, 1, 0 };
	runrec_event(&rec, &ev, now);
	e.attempts = 3;
	ev = (struct drain_event){ DRAIN_DEAD, &e, &r, 3, 0 };
	runrec_event(&rec, &ev, now);
	ev = (struct drain_event){ DRAIN_STALE, &e, NULL, 0, 0 };
	runrec_event(&rec, &ev, now);
	/* The API's object, older than what was done: refetched too. */
	ev = (struct drain_event){ DRAIN_STALE_FETCHED, &e, NULL, 0, 1 };
	runrec_event(&rec, &ev, now);
	memset(&res, 0, sizeof res);
	res.n.done = 1;
	res.n.failed = 2;
	res.n.dead = 1;
	runrec_finish(&rec, &res, now + SEC);
	for (i = 0; i < rec.b.n; i++) {
		const struct history_delta *d = &rec.b.d[i];
		if (strcmp(d->name, "handled") == 0)
			handled += d->n;
		if (strcmp(d->name, "refetched") == 0)
			refetched += d->n;
		if (strcmp(d->name, "failed") == 0) {
			ck_assert_str_eq(d->label, "exit 3");
			failed += d->n;
		}
		if (strcmp(d->name, "wait") == 0 && d->idx >= 0) {
			/* 10 s less the handler's 250 ms: ≤ 10 s bucket. */
			ck_assert_int_eq(d->idx, history_index(9750));
			waits += d->n;
		}
	}
	ck_assert_int_eq(handled, 1);
	ck_assert_int_eq(failed, 2);
	ck_assert_int_eq(waits, 2);	/* attempt 1 only: done and retry */
	ck_assert_int_eq(refetched, 2);
	ck_assert_int_eq(rec.run.refetched, 2);
	ck_assert_int_eq(rec.run.claimed, 4);
	ck_assert_int_eq(rec.run.retried, 1);
	ck_assert_str_eq(rec.run.result, "failures");
	runrec_free(&rec);
}
END_TEST

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
store(struct inbox *ib, const char *id, const char *type, struct buf *err)
{
	struct event_fields f;
	struct inbox_delivery d;

	memset(&f, 0, sizeof f);
	f.type = (char *)type;
	f.object_type = "client";
	f.object_id = (char *)id;
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = T0;
	d.body = "{}";
	d.body_len = 2;
	d.fields = &f;
	ck_assert_int_eq(inbox_store(ib, &d, err), INBOX_OK);
}

struct sums {
	int64_t	received, handled, fine, days;
};

static int
sum_row(const struct inbox_history_row *row, void *arg)
{
	struct sums *s = arg;

	if (strcmp(row->name, "received") == 0)
		s->received += row->n;
	if (strcmp(row->name, "handled") == 0)
		s->handled += row->n;
	if (row->width_s == HISTORY_FINE_S)
		s->fine++;
	else
		s->days++;
	return 0;
}

START_TEST(received_is_counted_at_admission)
{
	struct buf err;
	struct inbox *ib;
	struct inbox_cursor cur;
	struct inbox_event e;
	struct sums s = { 0 };

	buf_init(&err, BUF_ERR_MAX);
	ib = open_new("admit.db", &err);
	store(ib, "a", "t", &err);
	store(ib, "b", "t", &err);
	ck_assert_int_eq(inbox_history_read(ib, INT64_MIN, sum_row, &s, &err),
	    INBOX_OK);
	ck_assert_int_eq(s.received, 0);	/* the receiver wrote nothing */
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	ck_assert_int_eq(inbox_next_due(ib, &cur, util_now_ns() + 3600 * SEC, 0, 0,
	    &e, &err), INBOX_OK);
	inbox_event_free(&e);
	ck_assert_int_eq(inbox_history_read(ib, INT64_MIN, sum_row, &s, &err),
	    INBOX_OK);
	ck_assert_int_eq(s.received, 2);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

START_TEST(fold_into_days_keeps_the_sums)
{
	struct buf err;
	struct inbox *ib;
	struct history_batch b;
	struct inbox_run_record run = { 0 };
	struct sums s = { 0 };
	int64_t now = T0 + 40 * 86400;

	buf_init(&err, BUF_ERR_MAX);
	ib = open_new("fold.db", &err);
	history_batch_init(&b);
	history_count(&b, T0, "handled", NULL, 5);		/* 40 days old */
	history_count(&b, T0 + 600, "handled", NULL, 2);	/* same day */
	history_observe(&b, T0, "wait", NULL, 70);
	history_observe(&b, T0 + 600, "wait", NULL, 20);
	history_count(&b, now - 60, "handled", NULL, 1);	/* recent */
	run.started_ns = (now - 61) * SEC;
	run.finished_ns = (now - 60) * SEC;
	snprintf(run.result, sizeof run.result, "ok");
	ck_assert_int_eq(inbox_history_add(ib, b.d, b.n, &run, now * SEC, &err),
	    INBOX_OK);
	/* Twice: the second fold finds nothing more to fold. */
	ck_assert_int_eq(inbox_history_add(ib, NULL, 0, NULL, now * SEC, &err),
	    INBOX_OK);
	ck_assert_int_eq(inbox_history_read(ib, INT64_MIN, sum_row, &s, &err),
	    INBOX_OK);
	ck_assert_int_eq(s.handled, 8);
	ck_assert_int_eq(s.fine, 1);		/* the recent one */
	ck_assert_int_eq(s.days, 5);	/* handled, wait: 2 buckets, sum, max */
	history_batch_free(&b);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

START_TEST(page_escapes_inbox_strings)
{
	struct buf err;
	struct inbox *ib;
	struct report *r = malloc(sizeof *r);
	struct history_batch b;
	char *out = NULL;
	size_t len;
	FILE *f;

	buf_init(&err, BUF_ERR_MAX);
	ib = open_new("escape.db", &err);
	history_batch_init(&b);
	history_count(&b, T0, "type_handled", "<script>x</script>", 1);
	history_count(&b, T0, "failed", "exit \"3\" & <b>", 1);
	ck_assert_int_eq(inbox_history_add(ib, b.d, b.n, NULL, T0 * SEC, &err),
	    INBOX_OK);
	store(ib, "id'<i>", "t", &err);
	ck_assert_int_eq(report_collect(ib, "/x/<db>", (T0 + 60) * SEC, 900, NULL,
	    r, &err), 0);
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	report_html(f, r);
	fclose(f);
	ck_assert_ptr_null(strstr(out, "<script>x"));
	ck_assert_ptr_nonnull(strstr(out, "&lt;script&gt;x&lt;/script&gt;"));
	ck_assert_ptr_nonnull(strstr(out, "exit &quot;3&quot; &amp; &lt;b&gt;"));
	ck_assert_ptr_nonnull(strstr(out, "/x/&lt;db&gt;"));
	ck_assert_ptr_null(strstr(out, "<b>\n"));
	/* A quote in a shell word closes and reopens it. */
	ck_assert_ptr_nonnull(strstr(out, "list --type &#39;&lt;script&gt;"));
	free(out);
	out = NULL;
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	report_prom(f, r);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(out, "\nwebhook_received_total 0\n"));
	ck_assert_ptr_nonnull(strstr(out,
	    "\nwebhook_wait_seconds_bucket{le=\"+Inf\"} 0\n"));
	ck_assert_ptr_null(strstr(out, "script"));	/* no per-type label */
	free(out);
	history_batch_free(&b);
	free(r);
	inbox_close(ib);
	buf_free(&err);
}
END_TEST

START_TEST(atomic_write_leaves_no_temporary)
{
	struct report *r = calloc(1, sizeof *r);
	struct buf err;
	char path[512], bad[600];

	buf_init(&err, BUF_ERR_MAX);
	snprintf(path, sizeof path, "%s/metrics.prom", dir);
	ck_assert_int_eq(report_write_file(path, r, report_prom, &err), 0);
	ck_assert_int_eq(access(path, R_OK), 0);
	snprintf(bad, sizeof bad, "%s/missing/metrics.prom", dir);
	ck_assert_int_eq(report_write_file(bad, r, report_prom, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.data, "missing/metrics.prom"));
	free(r);
	buf_free(&err);
}
END_TEST

static Suite *
history_suite(void)
{
	Suite *s = suite_create("history");
	TCase *tc = tcase_create("history");

	tcase_add_test(tc, buckets_floor);
	tcase_add_test(tc, histogram_bounds_and_quantiles);
	tcase_add_test(tc, batch_merges_by_key);
	tcase_add_test(tc, error_classes);
	tcase_add_test(tc, runrec_counts_a_run);
	tcase_add_test(tc, received_is_counted_at_admission);
	tcase_add_test(tc, fold_into_days_keeps_the_sums);
	tcase_add_test(tc, page_escapes_inbox_strings);
	tcase_add_test(tc, atomic_write_leaves_no_temporary);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(history_suite, dir);
}
