/*
 * test_trial: lib/operator/trial.c — `try ID`, `try ID --record` and
 * `check --handler` against a real SQLite inbox in a temporary directory
 * and a real handler (a sh script beside the config): what the handler
 * gets (stdin, WEBHOOK_* variables, the config's directory), that a plain
 * try changes nothing, what --record writes (done, a retry, dead), what it
 * refuses (not pending, held behind its object, a run holding the lock),
 * and what is said to a person.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/drain/runlock.h"
#include "lib/operator/trial.h"
#include "lib/store/event.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

#define SEC	1000000000LL

static char tmpdir[] = "/tmp/webhook-test-trial-XXXXXX";
static char confdir[PATH_MAX];

/* The handler: says what it got, then exits with $EXIT_WITH's content
 * (a file beside it, so a test can change its verdict). */
static const char handler_sh[] =
    "printf '%s %s %s %s|' \"$WEBHOOK_ID\" \"$WEBHOOK_ATTEMPT\" "
    "\"$WEBHOOK_TYPE\" \"${WEBHOOK_TEST:-}\"\n"
    "cat\n"
    "printf '|%s\\n' \"$(pwd)\"\n"
    "exit $(cat exit_with 2>/dev/null || echo 0)\n";

static void
load(struct config *c, const char *extra)
{
	char body[512], path[PATH_MAX + 16];

	snprintf(body, sizeof body, "settle = 0\nretry_base = 10s\n"
	    "retry_max = 100s\nmax_attempts = 2\nhandler = sh handler.sh\n%s",
	    extra ? extra : "");
	check_config(tmpdir, body, c, confdir);
	snprintf(path, sizeof path, "%s/handler.sh", confdir);
	check_write_file(path, handler_sh);
}

static void
exit_with(const char *code)
{
	char path[PATH_MAX + 16];

	snprintf(path, sizeof path, "%s/exit_with", confdir);
	check_write_file(path, code);
}

static const char *
body_of(const char *id, const char *oid, const char *hms, char *out,
    size_t outsz)
{
	snprintf(out, outsz, "{\"id\":\"%s\",\"type\":\"client.updated\","
	    "\"createdAt\":\"2026-03-01T%sZ\",\"data\":{\"object\":\"client\","
	    "\"id\":\"%s\"}}", id, hms, oid);
	return out;
}

static void
deliver(const struct config *c, const char *id, const char *oid,
    const char *hms)
{
	struct event_fields f;
	struct inbox_delivery d;
	struct inbox *ib;
	struct buf err;
	char json[512];

	body_of(id, oid, hms, json, sizeof json);
	buf_init(&err, 4096);
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

static int
state_of_one(const struct inbox_event *e, void *arg)
{
	snprintf(arg, 64, "%s/%lld/%lld", e->state, (long long)e->attempts,
	    (long long)e->failures);
	return -1;
}

/* "state/attempts/failures" of event id. */
static const char *
state_of(const struct config *c, const char *id, char out[64])
{
	struct inbox_filter f;
	struct inbox *ib;
	struct buf err;

	buf_init(&err, 4096);
	memset(&f, 0, sizeof f);
	f.webhook_id = id;
	snprintf(out, 64, "absent");
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_int_eq(inbox_list(ib, &f, 0, state_of_one, out, &err),
	    INBOX_OK);
	inbox_close(ib);
	buf_free(&err);
	return out;
}

/* The handler's output as a string. */
static const char *
output(const struct handler_result *r, char *out, size_t outsz)
{
	snprintf(out, outsz, "%.*s", (int)r->output_len, r->output);
	return out;
}

START_TEST(try_gives_what_a_run_gives_and_changes_nothing)
{
	struct handler_result r;
	struct trial_info info;
	struct config c;
	struct buf err;
	char want[PATH_MAX + 1024], json[512], got[1024], st[64];

	load(&c, NULL);
	deliver(&c, "e1", "7", "10:00:00");
	buf_init(&err, 4096);
	ck_assert_int_eq(trial_event(&c, "e1", 0, &r, &info, &err), TRIAL_RAN);
	ck_assert(handler_ok(&r));
	snprintf(want, sizeof want, "e1 1 client.updated |%s|%s\n",
	    body_of("e1", "7", "10:00:00", json, sizeof json), confdir);
	ck_assert_str_eq(output(&r, got, sizeof got), want);
	ck_assert_str_eq(info.state, "pending");
	ck_assert_int_eq(info.attempt, 1);
	ck_assert_int_eq(info.recorded, TRIAL_REC_NONE);
	ck_assert_int_eq(info.stale, 0);
	ck_assert_int_eq(info.blocked, 0);
	/* A failing handler: its verdict, and still nothing written. */
	exit_with("3");
	ck_assert_int_eq(trial_event(&c, "e1", 0, &r, &info, &err), TRIAL_RAN);
	ck_assert(!handler_ok(&r));
	ck_assert_str_eq(r.error, "exit 3");
	ck_assert_str_eq(state_of(&c, "e1", st), "pending/0/0");
	/* No such event. */
	ck_assert_int_eq(trial_event(&c, "nope", 0, &r, &info, &err),
	    TRIAL_NO_EVENT);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(record_writes_the_verdict_as_a_run)
{
	struct handler_result r;
	struct trial_info info;
	struct config c;
	struct buf err;
	char st[64];
	int64_t next;

	load(&c, NULL);
	deliver(&c, "ok1", "1", "10:00:00");
	deliver(&c, "bad", "2", "10:00:00");
	buf_init(&err, 4096);
	/* Done. */
	ck_assert_int_eq(trial_event(&c, "ok1", 1, &r, &info, &err), TRIAL_RAN);
	ck_assert_int_eq(info.recorded, TRIAL_REC_DONE);
	ck_assert_int_eq(info.attempt, 1);
	ck_assert_str_eq(state_of(&c, "ok1", st), "done/1/0");
	/* Done is no longer due: refused, nothing run. */
	ck_assert_int_eq(trial_event(&c, "ok1", 1, &r, &info, &err),
	    TRIAL_NOT_DUE);
	ck_assert_str_eq(info.state, "done");
	ck_assert_str_eq(state_of(&c, "ok1", st), "done/1/0");
	/* A failure: retried after the run's backoff (10 s, jittered), then
	 * dead at max_attempts = 2. */
	exit_with("3");
	ck_assert_int_eq(trial_event(&c, "bad", 1, &r, &info, &err), TRIAL_RAN);
	ck_assert_int_eq(info.recorded, TRIAL_REC_RETRY);
	ck_assert_int_eq(info.failures, 1);
	ck_assert_int_eq(instant_to_ns(info.next_at, &next), 0);
	ck_assert_int_gt(next, util_now_ns() + 3 * SEC);
	ck_assert_int_lt(next, util_now_ns() + 30 * SEC);
	ck_assert_str_eq(state_of(&c, "bad", st), "pending/1/1");
	ck_assert_int_eq(trial_event(&c, "bad", 1, &r, &info, &err), TRIAL_RAN);
	ck_assert_int_eq(info.recorded, TRIAL_REC_DEAD);
	ck_assert_int_eq(info.failures, 2);
	ck_assert_int_eq(info.attempt, 2);
	ck_assert_str_eq(state_of(&c, "bad", st), "dead/2/2");
	buf_free(&err);
	config_free(&c);
}
END_TEST

/* An event held behind an earlier pending one of its object, and a run
 * holding the lock: --record refuses and runs nothing. */
START_TEST(record_refuses_what_a_run_would_not_do)
{
	struct handler_result r;
	struct trial_info info;
	struct config c;
	struct buf err;
	char st[64];
	int lock;

	load(&c, NULL);
	deliver(&c, "first", "7", "10:00:00");
	deliver(&c, "second", "7", "11:00:00");
	buf_init(&err, 4096);
	ck_assert_int_eq(trial_event(&c, "second", 1, &r, &info, &err),
	    TRIAL_NOT_DUE);
	ck_assert_int_eq(info.blocked, 1);
	ck_assert_str_eq(state_of(&c, "second", st), "pending/0/0");
	/* A plain try runs it, and says it is held. */
	ck_assert_int_eq(trial_event(&c, "second", 0, &r, &info, &err),
	    TRIAL_RAN);
	ck_assert_int_eq(info.blocked, 1);
	ck_assert_int_ge(lock = runlock_try(c.database, &err), 0);
	ck_assert_int_eq(trial_event(&c, "first", 1, &r, &info, &err),
	    TRIAL_LOCKED);
	ck_assert_str_eq(state_of(&c, "first", st), "pending/0/0");
	runlock_release(lock);
	ck_assert_int_eq(trial_event(&c, "first", 1, &r, &info, &err), TRIAL_RAN);
	ck_assert_str_eq(state_of(&c, "first", st), "done/1/0");
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(synthetic_event_says_it_is_a_test)
{
	static const char want[] = "test_webhook_inbox_check 1 "
	    "webhook_inbox.test 1|{\"type\":\"webhook_inbox.test\"";
	struct handler_result r;
	struct config c;
	struct buf err;
	char got[1024];

	load(&c, NULL);
	buf_init(&err, 4096);
	ck_assert_int_eq(trial_synthetic(&c, &r, &err), 0);
	ck_assert(handler_ok(&r));
	output(&r, got, sizeof got);
	ck_assert_msg(strncmp(got, want, strlen(want)) == 0, "%s", got);
	ck_assert(contains(got, confdir));
	/* Nothing was stored for it. */
	ck_assert_int_eq(access(c.database, F_OK), -1);
	buf_free(&err);
	config_free(&c);
}
END_TEST

static char *
printed(enum trial_status st, const struct handler_result *r,
    const struct trial_info *info, const char *err_text, char **errs)
{
	char *out = NULL;
	size_t len, elen;
	struct buf err;
	FILE *f, *ef;

	buf_init(&err, 4096);
	if (err_text != NULL)
		ck_assert_int_eq(buf_printf(&err, "%s", err_text), 0);
	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	ck_assert_ptr_nonnull(ef = open_memstream(errs, &elen));
	trial_print(f, ef, "e\x1b[31m", st, r, info, &err);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(fclose(ef), 0);
	buf_free(&err);
	return out;
}

START_TEST(print_says_what_happened)
{
	struct handler_result r;
	struct trial_info info;
	char *out, *errs;

	memset(&r, 0, sizeof r);
	r.exited = 1;
	r.elapsed_ns = 12 * 1000000LL;
	memcpy(r.output, "hello\nworld\n", 12);
	r.output_len = 12;
	memset(&info, 0, sizeof info);
	snprintf(info.state, sizeof info.state, "pending");
	info.attempt = 1;
	info.truncated = 1;
	out = printed(TRIAL_RAN, &r, &info, NULL, &errs);
	ck_assert_str_eq(out, "pending event, WEBHOOK_ATTEMPT=1 (truncated: a "
	    "run would refetch it first; try gives the stored body); handler "
	    "output:\n  | hello\n  | world\nexit 0 after 0.012 s: a run would "
	    "mark it done\nthe inbox is unchanged\n");
	ck_assert_str_eq(errs, "");
	free(out);
	free(errs);
	/* Recorded: a failure retried. */
	r.exited = 1;
	r.status = 3;
	snprintf(r.error, sizeof r.error, "exit 3");
	r.output_len = 0;
	info.truncated = 0;
	info.recorded = TRIAL_REC_DEAD;
	info.failures = 5;
	out = printed(TRIAL_RAN, &r, &info, NULL, &errs);
	ck_assert(contains(out, "  (no output)\nexit 3 after 0.012 s: a run "
	    "would count a failure\nrecorded: failure 5, now dead"));
	free(out);
	free(errs);
	/* Nothing to run: on errf, the id shown escaped. */
	out = printed(TRIAL_NO_EVENT, &r, &info, NULL, &errs);
	ck_assert_str_eq(out, "");
	ck_assert(contains(errs, "webhook-drain: no event e"));
	ck_assert(!contains(errs, "\x1b"));
	free(out);
	free(errs);
	out = printed(TRIAL_LOCKED, &r, &info, NULL, &errs);
	ck_assert(contains(errs, "a run holds the run lock"));
	free(out);
	free(errs);
	out = printed(TRIAL_FAILED, &r, &info, "inbox.db: disk I/O error", &errs);
	ck_assert_str_eq(errs, "webhook-drain: inbox.db: disk I/O error\n");
	free(out);
	free(errs);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("trial");
	TCase *tc = tcase_create("trial");

	tcase_add_test(tc, try_gives_what_a_run_gives_and_changes_nothing);
	tcase_add_test(tc, record_writes_the_verdict_as_a_run);
	tcase_add_test(tc, record_refuses_what_a_run_would_not_do);
	tcase_add_test(tc, synthetic_event_says_it_is_a_test);
	tcase_add_test(tc, print_says_what_happened);
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
