/*
 * test_drain: lib/drain/drain.c — one drainer run against a real SQLite inbox in
 * a temporary directory, with trivial handlers (/bin/true, /bin/false,
 * sh snippets): what is handed out, what the handler gets, what is
 * reported, the retry policy's bounds, death after max_attempts, the stale
 * rule as the run reports it, and a run that finds the lock taken.
 *
 * Each test writes its own config (config_load, as the CLI reads one) and
 * inbox under tmpdir; Check forks every test, so drain_run's chdir stays
 * in the test.
 */
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/store/event.h"
#include "lib/drain/runlock.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

#define SEC	1000000000LL

static char tmpdir[] = "/tmp/webhook-test-drain-XXXXXX";
static char confdir[PATH_MAX];	/* the last load's */

/* What the hooks saw. */
struct seen {
	int	events[DRAIN_DEAD + 1];
	char	order[256];		/* ids handed out, space-separated */
	int64_t	last_failures;
	char	last_error[160];
	int	problems;
};

static void
on_event(void *arg, const struct drain_event *ev)
{
	struct seen *s = arg;

	s->events[ev->outcome]++;
	if (ev->outcome != DRAIN_STALE && ev->outcome != DRAIN_STALE_FETCHED) {
		strncat(s->order, ev->e->webhook_id,
		    sizeof s->order - strlen(s->order) - 2);
		strcat(s->order, " ");
	}
	if (ev->outcome == DRAIN_RETRY || ev->outcome == DRAIN_DEAD) {
		s->last_failures = ev->failures;
		snprintf(s->last_error, sizeof s->last_error, "%s", ev->r->error);
	}
}

static void
on_problem(void *arg, const char *line)
{
	struct seen *s = arg;

	fprintf(stderr, "problem: %s\n", line);
	s->problems++;
}

/* A config in a directory of its own: database there, `handler` (NULL:
 * none), retries from 10 s to 100 s, no settle, and the extra lines. */
static void
load(struct config *c, const char *handler, const char *extra)
{
	char body[1024];

	snprintf(body, sizeof body, "settle = 0\nretry_base = 10s\n"
	    "retry_max = 100s\n%s%s%s%s", handler ? "handler = " : "",
	    handler ? handler : "", handler ? "\n" : "", extra ? extra : "");
	check_config(tmpdir, body, c, confdir);
}

/* Store one event as the receiver would, from its JSON body. */
static void
deliver(const struct config *c, const char *id, const char *json)
{
	struct event_fields f;
	struct inbox_delivery d;
	struct inbox *ib;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_int_eq(event_extract(id, json, strlen(json), &f), 0);
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = 1772366400;
	d.secret_fp = "fp";
	d.body = json;
	d.body_len = strlen(json);
	d.fields = &f;
	ck_assert_int_eq(inbox_store(ib, &d, &err), INBOX_OK);
	event_fields_free(&f);
	inbox_close(ib);
	buf_free(&err);
}

/* An event of object client:oid created at HH:MM:SS on one day. */
static void
deliver_obj(const struct config *c, const char *id, const char *oid,
    const char *hms)
{
	char json[512];

	snprintf(json, sizeof json, "{\"id\":\"%s\",\"type\":\"client.updated\","
	    "\"createdAt\":\"2026-03-01T%sZ\",\"data\":{\"object\":\"client\","
	    "\"id\":\"%s\"}}", id, hms, oid);
	deliver(c, id, json);
}

/* The stored state and failures of one event. */
static int
state_of_one(const struct inbox_event *e, void *arg)
{
	snprintf(arg, 64, "%s/%lld/%lld", e->state, (long long)e->attempts,
	    (long long)e->failures);
	return -1;
}

static void
state_of(const struct config *c, const char *id, char out[64])
{
	struct inbox_filter f;
	struct inbox *ib;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	memset(&f, 0, sizeof f);
	f.webhook_id = id;
	snprintf(out, 64, "absent");
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_int_eq(inbox_list(ib, &f, 1, state_of_one, out, &err), INBOX_OK);
	inbox_close(ib);
	buf_free(&err);
}

static enum drain_status
run(const struct config *c, struct seen *s, struct drain_result *res)
{
	struct drain_hooks h = { on_event, on_problem, s };
	struct drain_limits lim = { 0, 0, NULL };

	memset(s, 0, sizeof *s);
	return drain_run(c, &lim, &h, res);
}

START_TEST(retry_delay_doubles_within_jitter_and_cap)
{
	static const struct {
		int64_t	failures, base_s;
	} cases[] = {
		{ 0, 10 }, { 1, 20 }, { 3, 80 }, { 4, 100 }, { 60, 100 },
	};
	struct config c;
	size_t i;
	int k;

	load(&c, NULL, NULL);
	for (i = 0; i < NELEM(cases); i++) {
		for (k = 0; k < 200; k++) {
			int64_t d = drain_retry_delay(&c, cases[i].failures);
			ck_assert_int_ge(d, cases[i].base_s * SEC * 750 / 1000);
			ck_assert_int_lt(d, cases[i].base_s * SEC * 1250 / 1000);
		}
	}
	config_free(&c);
}
END_TEST

START_TEST(run_hands_out_in_order_then_nothing)
{
	struct drain_result res;
	struct config c;
	struct seen s;
	char st[64];

	load(&c, "/bin/true", NULL);
	deliver_obj(&c, "e2", "1", "12:00:02");
	deliver_obj(&c, "e1", "2", "12:00:01");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.done, 2);
	ck_assert_int_eq(s.events[DRAIN_DONE], 2);
	ck_assert_str_eq(s.order, "e1 e2 ");	/* by event clock */
	ck_assert_int_eq(res.broken, 0);
	ck_assert_int_eq(s.problems, 0);
	state_of(&c, "e1", st);
	ck_assert_str_eq(st, "done/1/0");
	/* Nothing is due any more. */
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.done + res.n.failed + res.n.stale, 0);
	config_free(&c);
}
END_TEST

START_TEST(handler_gets_body_and_environment)
{
	struct drain_result res;
	struct config c;
	struct seen s;

	load(&c, "test \"$WEBHOOK_ID\" = m1 && test \"$WEBHOOK_ATTEMPT\" = 1 && "
	    "test \"$WEBHOOK_OBJECT\" = client && test \"$WEBHOOK_OBJECT_ID\" = 7 "
	    "&& test -z \"$WEBHOOK_API_TOKEN\" && grep -q '\"id\":\"m1\"'", NULL);
	deliver_obj(&c, "m1", "7", "12:00:00");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_msg(res.n.done == 1, "failed: %s", s.last_error);
	config_free(&c);
}
END_TEST

/* A named source's event: WEBHOOK_SOURCE and the provider's own id
 * beside the inbox id; the default source's are "default" and the id
 * itself (docs/DESIGN.md "Handler"). */
START_TEST(handler_environment_names_the_source)
{
	struct handler_env env[DRAIN_HANDLER_ENV_MAX];
	char idbuf[DRAIN_PROVIDER_ID_SIZE];
	struct inbox_event e;
	const char *src = NULL, *pid = NULL;
	size_t n;

	inbox_event_init(&e);
	e.webhook_id = strdup("stripe/evt_1");
	snprintf(e.source, sizeof e.source, "stripe");
	n = drain_handler_env(&e, 0, REFETCH_NONE, "1", env, idbuf);
	ck_assert_uint_le(n, DRAIN_HANDLER_ENV_MAX);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(env[i].name, "WEBHOOK_SOURCE") == 0)
			src = env[i].value;
		if (strcmp(env[i].name, "WEBHOOK_PROVIDER_ID") == 0)
			pid = env[i].value;
	}
	ck_assert_str_eq(src, "stripe");
	ck_assert_str_eq(pid, "evt_1");
	/* The default source: an id with a '/' stays whole. */
	free(e.webhook_id);
	e.webhook_id = strdup("stripe/evt_2");
	snprintf(e.source, sizeof e.source, "default");
	n = drain_handler_env(&e, 0, REFETCH_NONE, "1", env, idbuf);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(env[i].name, "WEBHOOK_SOURCE") == 0)
			src = env[i].value;
		if (strcmp(env[i].name, "WEBHOOK_PROVIDER_ID") == 0)
			pid = env[i].value;
	}
	ck_assert_str_eq(src, "default");
	ck_assert_str_eq(pid, "stripe/evt_2");
	inbox_event_free(&e);
}
END_TEST

START_TEST(failure_is_retried_with_its_reason)
{
	struct drain_result res;
	struct config c;
	struct seen s;
	char st[64];

	load(&c, "echo oops; exit 3", "max_attempts = 3\n");
	deliver_obj(&c, "f1", "1", "12:00:00");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.failed, 1);
	ck_assert_int_eq(res.n.dead, 0);
	ck_assert_int_eq(s.events[DRAIN_RETRY], 1);
	ck_assert_int_eq(s.last_failures, 1);
	ck_assert_str_eq(s.last_error, "exit 3");
	state_of(&c, "f1", st);
	ck_assert_str_eq(st, "pending/1/1");
	/* Waiting for its retry (10 s at least): not handed out again now. */
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.failed, 0);
	config_free(&c);
}
END_TEST

START_TEST(last_failure_is_death)
{
	struct drain_result res;
	struct config c;
	struct seen s;
	char st[64];

	load(&c, "/bin/false", "max_attempts = 1\n");
	deliver_obj(&c, "d1", "1", "12:00:00");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.failed, 1);
	ck_assert_int_eq(res.n.dead, 1);
	ck_assert_int_eq(s.events[DRAIN_DEAD], 1);
	ck_assert_int_eq(s.events[DRAIN_RETRY], 0);
	ck_assert_int_eq(s.last_failures, 1);
	state_of(&c, "d1", st);
	ck_assert_str_eq(st, "dead/1/1");
	config_free(&c);
}
END_TEST

START_TEST(older_than_done_is_stale_not_handed_out)
{
	struct drain_result res;
	struct config c;
	struct seen s;
	char st[64];

	load(&c, "/bin/true", NULL);
	deliver_obj(&c, "new", "1", "12:00:05");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.done, 1);
	deliver_obj(&c, "old", "1", "12:00:01");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.stale, 1);
	ck_assert_int_eq(s.events[DRAIN_STALE], 1);
	ck_assert_int_eq(res.n.done, 0);
	state_of(&c, "old", st);
	ck_assert_str_eq(st, "stale/0/0");
	/* What a requeue of it would hand out although stale. */
	{
		struct inbox_filter f;
		struct inbox *ib;
		struct buf err;
		int64_t n = -1;

		buf_init(&err, BUF_ERR_MAX);
		memset(&f, 0, sizeof f);
		ck_assert_ptr_nonnull(ib = drain_inbox_open(&c, &err));
		ck_assert_int_eq(drain_count_stale(ib, &f, &n, &err), 0);
		ck_assert_int_eq(n, 1);
		f.webhook_id = "new";
		ck_assert_int_eq(drain_count_stale(ib, &f, &n, &err), 0);
		ck_assert_int_eq(n, 0);
		inbox_close(ib);
		buf_free(&err);
	}
	config_free(&c);
}
END_TEST

START_TEST(held_lock_means_nothing_done)
{
	struct drain_result res;
	struct config c;
	struct seen s;
	struct buf err;
	char st[64];
	int lock;

	load(&c, "/bin/true", NULL);
	deliver_obj(&c, "l1", "1", "12:00:00");
	buf_init(&err, BUF_ERR_MAX);
	ck_assert_int_ge(lock = runlock_try(c.database, &err), 0);
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_LOCKED);
	state_of(&c, "l1", st);
	ck_assert_str_eq(st, "pending/0/0");
	runlock_release(lock);
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_int_eq(res.n.done, 1);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(handler_runs_in_the_config_directory)
{
	struct drain_result res;
	struct config c;
	struct seen s;
	char path[PATH_MAX + 16];
	FILE *f;

	load(&c, "./h.sh", NULL);
	/* The script beside the config, the test elsewhere. */
	snprintf(path, sizeof path, "%s/h.sh", confdir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fputs("#!/bin/sh\nexit 0\n", f);
	fclose(f);
	ck_assert_int_eq(chmod(path, 0700), 0);
	ck_assert_int_eq(chdir("/"), 0);
	deliver_obj(&c, "r1", "1", "12:00:00");
	ck_assert_int_eq(run(&c, &s, &res), DRAIN_RAN);
	ck_assert_msg(res.n.done == 1, "failed: %s", s.last_error);
	config_free(&c);
}
END_TEST

START_TEST(enter_config_dir_without_slash_stays)
{
	char dir[PATH_MAX] = "", before[PATH_MAX], after[PATH_MAX];

	ck_assert_ptr_nonnull(getcwd(before, sizeof before));
	ck_assert_int_eq(drain_enter_config_dir("webhook.conf", dir,
	    sizeof dir), 0);
	ck_assert_ptr_nonnull(getcwd(after, sizeof after));
	ck_assert_str_eq(before, after);
	ck_assert_int_eq(drain_enter_config_dir("/nonexistent/x/webhook.conf",
	    dir, sizeof dir), -1);
	ck_assert_str_eq(dir, "/nonexistent/x");
	ck_assert_int_eq(drain_enter_config_dir("/webhook.conf", dir,
	    sizeof dir), 0);
	ck_assert_ptr_nonnull(getcwd(after, sizeof after));
	ck_assert_str_eq(after, "/");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("drain");
	TCase *tc = tcase_create("drain");

	tcase_add_test(tc, retry_delay_doubles_within_jitter_and_cap);
	tcase_add_test(tc, run_hands_out_in_order_then_nothing);
	tcase_add_test(tc, handler_gets_body_and_environment);
	tcase_add_test(tc, handler_environment_names_the_source);
	tcase_add_test(tc, failure_is_retried_with_its_reason);
	tcase_add_test(tc, last_failure_is_death);
	tcase_add_test(tc, older_than_done_is_stale_not_handed_out);
	tcase_add_test(tc, held_lock_means_nothing_done);
	tcase_add_test(tc, handler_runs_in_the_config_directory);
	tcase_add_test(tc, enter_config_dir_without_slash_stays);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	/* As webhook-drain does: a handler that exits without reading its
	 * stdin must not kill the test. */
	signal(SIGPIPE, SIG_IGN);
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(suite, tmpdir);
}
