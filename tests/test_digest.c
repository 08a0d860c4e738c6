/*
 * test_digest: lib/operator/digest.c — a run's failures as one message: grouping
 * by outcome, error and output tail, the ids shown and counted, the cap on
 * groups, retries counted but never listed, the output as lines, and the
 * next steps naming the config (shell-quoted).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/operator/digest.h"
#include "tests/check_common.h"

/* One event's outcome, added to d. */
static void
add(struct digest *d, enum drain_outcome o, const char *id, int64_t failures,
    const char *error, const char *output)
{
	static struct handler_result r;
	struct inbox_event e;
	struct drain_event ev;

	memset(&e, 0, sizeof e);
	memset(&r, 0, sizeof r);
	e.webhook_id = (char *)id;
	snprintf(r.error, sizeof r.error, "%s", error);
	r.output_len = strlen(output);
	memcpy(r.output, output, r.output_len);
	ev.outcome = o;
	ev.e = &e;
	ev.r = &r;
	ev.failures = failures;
	digest_add(d, &ev);
}

static char *
printed(const struct digest *d, const char *conf)
{
	char *out = NULL;
	size_t len;
	FILE *f = open_memstream(&out, &len);

	ck_assert_ptr_nonnull(f);
	digest_print(f, d, conf, 12);
	fclose(f);
	return out;
}

START_TEST(storm_is_one_group_with_ids_and_count)
{
	static struct digest d;
	char id[32], *out;
	int i;

	digest_init(&d);
	for (i = 0; i < 200; i++) {
		snprintf(id, sizeof id, "msg_%03d", i);
		add(&d, DRAIN_RETRY, id, 1, "exit 255",
		    "PHP Parse error: syntax error in h.php on line 52\n");
	}
	add(&d, DRAIN_DONE, "ok1", 0, "", "");
	ck_assert_int_eq(d.ngroups, 1);
	ck_assert_int_eq(d.g[0].n, 200);
	out = printed(&d, "/home/u/webhook.conf");
	ck_assert_ptr_nonnull(strstr(out, "1 done, 0 stale, 200 failed for the "
	    "first time"));
	ck_assert_ptr_nonnull(strstr(out, "msg_000, msg_001, msg_002, msg_003, "
	    "msg_004 and 195 more failed (exit 255); they will be retried"));
	/* The newline is a line break, not "\x0a". */
	ck_assert_ptr_nonnull(strstr(out, "  | PHP Parse error: syntax error in "
	    "h.php on line 52\n"));
	ck_assert_ptr_null(strstr(out, "\\x0a"));
	ck_assert_ptr_nonnull(strstr(out, "webhook-drain -c /home/u/webhook.conf "
	    "try msg_000"));
	ck_assert_ptr_nonnull(strstr(out, "requeue --state retrying --yes"));
	ck_assert_ptr_null(strstr(out, "--state dead"));
	ck_assert_uint_lt(strlen(out), 2000);
	free(out);
}
END_TEST

START_TEST(groups_split_by_error_output_and_outcome)
{
	static struct digest d;
	char *out;

	digest_init(&d);
	add(&d, DRAIN_RETRY, "a", 1, "exit 1", "x\n");
	add(&d, DRAIN_RETRY, "b", 1, "exit 2", "x\n");
	add(&d, DRAIN_RETRY, "c", 1, "exit 1", "y\n");
	add(&d, DRAIN_DEAD, "d", 12, "exit 1", "x\n");
	add(&d, DRAIN_RETRY, "e", 1, "exit 1", "x\n");
	ck_assert_int_eq(d.ngroups, 4);
	ck_assert_int_eq(d.g[0].n, 2);
	out = printed(&d, NULL);
	ck_assert_ptr_nonnull(strstr(out, "webhook-drain: a and e failed (exit 1)"));
	ck_assert_ptr_nonnull(strstr(out, "webhook-drain: d is dead after 12 "
	    "failures (last: exit 1)"));
	ck_assert_ptr_nonnull(strstr(out, "webhook-drain requeue --state dead"));
	ck_assert_ptr_null(strstr(out, " -c "));
	free(out);
}
END_TEST

START_TEST(retries_are_counted_not_listed)
{
	static struct digest d;
	char *out;

	digest_init(&d);
	add(&d, DRAIN_RETRY, "r1", 2, "exit 1", "x");
	add(&d, DRAIN_RETRY, "r2", 5, "exit 1", "x");
	ck_assert_int_eq(d.retried, 2);
	ck_assert(!digest_has_news(&d));
	out = printed(&d, "c.conf");
	ck_assert_str_eq(out, "");
	free(out);
}
END_TEST

START_TEST(groups_past_the_cap_are_counted)
{
	static struct digest d;
	char err[32], *out;
	int i;

	digest_init(&d);
	for (i = 0; i < DIGEST_GROUPS_MAX + 3; i++) {
		snprintf(err, sizeof err, "exit %d", i + 1);
		add(&d, DRAIN_RETRY, "z", 1, err, "");
	}
	ck_assert_int_eq(d.ngroups, DIGEST_GROUPS_MAX);
	ck_assert_int_eq(d.other, 3);
	out = printed(&d, "c.conf");
	ck_assert_ptr_nonnull(strstr(out, "3 more events failed with other errors"));
	ck_assert_ptr_nonnull(strstr(out, "No output."));
	free(out);
}
END_TEST

START_TEST(control_bytes_escaped_and_tail_bounded)
{
	static struct digest d;
	char big[3000], *out;

	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	big[sizeof big - 4] = '\033';
	digest_init(&d);
	add(&d, DRAIN_RETRY, "a", 1, "exit 1", big);
	ck_assert_uint_eq(d.g[0].tail_len, DIGEST_TAIL_MAX);
	out = printed(&d, "c.conf");
	ck_assert_ptr_null(strchr(out, '\033'));
	ck_assert_ptr_nonnull(strstr(out, "\\x1b"));
	free(out);
}
END_TEST

START_TEST(quote_for_a_shell)
{
	char q[64];

	digest_quote("/home/u/web.conf", q, sizeof q);
	ck_assert_str_eq(q, "/home/u/web.conf");
	digest_quote("/home/u/my conf", q, sizeof q);
	ck_assert_str_eq(q, "'/home/u/my conf'");
	digest_quote("it's", q, sizeof q);
	ck_assert_str_eq(q, "'it'\\''s'");
	digest_quote("", q, sizeof q);
	ck_assert_str_eq(q, "''");
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("digest");
	TCase *tc = tcase_create("digest");

	tcase_add_test(tc, storm_is_one_group_with_ids_and_count);
	tcase_add_test(tc, groups_split_by_error_output_and_outcome);
	tcase_add_test(tc, retries_are_counted_not_listed);
	tcase_add_test(tc, groups_past_the_cap_are_counted);
	tcase_add_test(tc, control_bytes_escaped_and_tail_bounded);
	tcase_add_test(tc, quote_for_a_shell);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(suite());
}
