/*
 * test_runrec: lib/report/runrec.c — a run's events told as the drainer
 * tells them (drain_hooks.event), saved to a real SQLite inbox and read
 * back: each outcome's counters and labels, the wait and handler
 * histograms, and the run's row with its totals and result.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/common/instant.h"
#include "lib/report/runrec.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

#define SEC	1000000000LL
#define MS	1000000LL

static char tmpdir[] = "/tmp/webhook-test-runrec-XXXXXX";

/* One claimed event of `type`, at its `attempts`-th hand-out, received
 * at received_ns. */
static void
event(struct inbox_event *e, const char *type, int64_t attempts,
    int64_t received_ns)
{
	inbox_event_init(e);
	e->webhook_id = strdup("e1");
	e->type = strdup(type);
	e->attempts = attempts;
	ck_assert_int_eq(instant_format(received_ns, e->received_at), 0);
}

static void
result(struct handler_result *r, int64_t elapsed_ns, const char *error)
{
	memset(r, 0, sizeof *r);
	r->exited = 1;
	r->status = error != NULL;
	r->elapsed_ns = elapsed_ns;
	snprintf(r->error, sizeof r->error, "%s", error ? error : "");
}

/* What was saved: the sum of every row of one metric, label and idx. */
struct want {
	const char	*name, *label;
	int		 idx;
	int64_t		 n;
};
struct sums {
	struct want	*w;
	size_t		 nw;
	int		 rows;
};

static int
sum_row(const struct inbox_history_row *row, void *arg)
{
	struct sums *s = arg;
	size_t i;

	s->rows++;
	for (i = 0; i < s->nw; i++)
		if (strcmp(row->name, s->w[i].name) == 0 &&
		    strcmp(row->label, s->w[i].label) == 0 &&
		    row->idx == s->w[i].idx)
			s->w[i].n += row->n;
	return 0;
}

static int
copy_run(const struct inbox_run_record *run, void *arg)
{
	struct inbox_run_record *out = arg;

	ck_assert_str_eq(out->result, "");	/* one run only */
	*out = *run;
	return 0;
}

START_TEST(a_run_saved_and_read_back)
{
	struct want w[] = {
		{ "handled", "", 0, 0 },
		{ "failed", "exit 3", 0, 0 },
		{ "failed", "timed out after 60 s", 0, 0 },
		{ "retried", "", 0, 0 },
		{ "dead", "", 0, 0 },
		{ "stale", "", 0, 0 },
		{ "refetched", "", 0, 0 },
		{ "type_handled", "client.updated", 0, 0 },
		{ "type_failed", "invoice.paid", 0, 0 },
		{ "run", "failures", 0, 0 },
		{ "run_budget_hit", "", 0, 0 },
		{ "wait", "", HISTORY_IDX_SUM, 0 },
		{ "handler", "client.updated", HISTORY_IDX_SUM, 0 },
		{ "handler", "invoice.paid", HISTORY_IDX_SUM, 0 },
	};
	static const int64_t want_n[] = { 1, 1, 1, 1, 1, 2, 1, 1, 2, 1, 1,
	    1900, 100, 500 };
	struct sums s = { w, NELEM(w), 0 };
	struct inbox_run_record run;
	struct drain_result res;
	struct handler_result ok, fail3, slow;
	struct inbox_event done, retry, dead, stale;
	struct drain_event ev;
	struct runrec rr;
	struct config c;
	struct inbox *ib;
	struct buf err;
	char dir[PATH_MAX];
	int64_t t0 = util_now_ns(), now = t0 + 60 * SEC;
	size_t i;

	check_config(tmpdir, "", &c, dir);
	buf_init(&err, 4096);
	runrec_start(&rr, t0);
	/* Handled at its first hand-out, 2 s after it came; 100 ms run. */
	event(&done, "client.updated", 1, now - 2 * SEC);
	result(&ok, 100 * MS, NULL);
	ev = (struct drain_event){ DRAIN_DONE, &done, &ok, 0, 0 };
	runrec_event(&rr, &ev, now);
	/* Failed at its second hand-out: retried; its wait is not counted. */
	event(&retry, "invoice.paid", 2, now - 3600 * SEC);
	result(&fail3, 200 * MS, "exit 3");
	ev = (struct drain_event){ DRAIN_RETRY, &retry, &fail3, 1, 0 };
	runrec_event(&rr, &ev, now);
	/* Failed for good, after the API answered its refetch. */
	event(&dead, "invoice.paid", 5, now - 3600 * SEC);
	result(&slow, 300 * MS, "timed out after 60 s: killed");
	ev = (struct drain_event){ DRAIN_DEAD, &dead, &slow, 5, 1 };
	runrec_event(&rr, &ev, now);
	/* Stale by the rule, then stale by what the API served. */
	event(&stale, "client.updated", 1, now - 5 * SEC);
	ev = (struct drain_event){ DRAIN_STALE, &stale, NULL, 0, 0 };
	runrec_event(&rr, &ev, now);
	ev = (struct drain_event){ DRAIN_STALE_FETCHED, &stale, NULL, 0, 0 };
	runrec_event(&rr, &ev, now);
	memset(&res, 0, sizeof res);
	res.n.done = 1;
	res.n.failed = 2;
	res.n.dead = 1;
	res.n.stale = 2;
	res.max_time_reached = 1;
	runrec_finish(&rr, &res, now + SEC);
	ck_assert_msg(runrec_save(&rr, &c, &err) == 0, "%s", err.data);
	runrec_free(&rr);

	ck_assert_ptr_nonnull(ib = drain_inbox_open(&c, &err));
	ck_assert_int_eq(inbox_history_read(ib, INT64_MIN, sum_row, &s, &err),
	    INBOX_OK);
	ck_assert_int_gt(s.rows, 0);
	for (i = 0; i < NELEM(w); i++)
		ck_assert_msg(w[i].n == want_n[i], "%s{%s}[%d] = %lld, not %lld",
		    w[i].name, w[i].label, w[i].idx, (long long)w[i].n,
		    (long long)want_n[i]);
	memset(&run, 0, sizeof run);
	ck_assert_int_eq(inbox_runs_read(ib, 0, copy_run, &run, &err), INBOX_OK);
	ck_assert_str_eq(run.result, "failures");
	ck_assert_int_eq(run.started_ns, t0);
	ck_assert_int_eq(run.finished_ns, now + SEC);
	/* Handed out: done, retry, dead, and the one the API made stale. */
	ck_assert_int_eq(run.claimed, 4);
	ck_assert_int_eq(run.done, 1);
	ck_assert_int_eq(run.failed, 2);
	ck_assert_int_eq(run.retried, 1);
	ck_assert_int_eq(run.dead, 1);
	ck_assert_int_eq(run.stale, 2);
	ck_assert_int_eq(run.refetched, 1);
	ck_assert_int_eq(run.budget_hit, 1);
	inbox_close(ib);
	inbox_event_free(&done);
	inbox_event_free(&retry);
	inbox_event_free(&dead);
	inbox_event_free(&stale);
	buf_free(&err);
	config_free(&c);
}
END_TEST

/* The run's result: "error" when the inbox broke, "failures" when a
 * handler failed, else "ok"; one `run` count under that label. */
START_TEST(result_says_how_the_run_ended)
{
	static const struct {
		int		broken;
		int64_t		failed;
		const char	*want;
	} cases[] = {
		{ 0, 0, "ok" }, { 0, 3, "failures" }, { 1, 3, "error" },
		{ 1, 0, "error" },
	};
	struct drain_result res;
	struct runrec rr;
	size_t i, k;
	int64_t runs;

	for (i = 0; i < NELEM(cases); i++) {
		runrec_start(&rr, 10 * SEC);
		memset(&res, 0, sizeof res);
		res.broken = cases[i].broken;
		res.n.failed = cases[i].failed;
		runrec_finish(&rr, &res, 20 * SEC);
		ck_assert_str_eq(rr.run.result, cases[i].want);
		ck_assert_int_eq(rr.run.budget_hit, 0);
		for (runs = 0, k = 0; k < rr.b.n; k++) {
			ck_assert_str_ne(rr.b.d[k].name, "run_budget_hit");
			if (strcmp(rr.b.d[k].name, "run") == 0) {
				ck_assert_str_eq(rr.b.d[k].label, cases[i].want);
				runs += rr.b.d[k].n;
			}
		}
		ck_assert_int_eq(runs, 1);
		runrec_free(&rr);
	}
}
END_TEST

START_TEST(save_to_an_inbox_that_cannot_open_fails)
{
	struct drain_result res;
	struct runrec rr;
	struct config c;
	struct buf err;
	char dir[PATH_MAX];

	check_config(tmpdir, "", &c, dir);
	free(c.database);
	ck_assert_ptr_nonnull(c.database = strdup("/nonexistent/dir/inbox.db"));
	buf_init(&err, 4096);
	runrec_start(&rr, util_now_ns());
	memset(&res, 0, sizeof res);
	runrec_finish(&rr, &res, util_now_ns());
	ck_assert_int_eq(runrec_save(&rr, &c, &err), -1);
	ck_assert_msg(contains(err.data, "/nonexistent/dir"), "%s", err.data);
	runrec_free(&rr);
	buf_free(&err);
	config_free(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("runrec");
	TCase *tc = tcase_create("runrec");

	tcase_add_test(tc, a_run_saved_and_read_back);
	tcase_add_test(tc, result_says_how_the_run_ended);
	tcase_add_test(tc, save_to_an_inbox_that_cannot_open_fails);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(suite, tmpdir);
}
