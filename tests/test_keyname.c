/*
 * test_keyname: lib/program/keyname.c -- what a refused config line's key
 * is printed as, and the key it was probably meant to be, over a table of
 * its own (config's own table is test_config's "did_you_mean").
 */
#include <stdlib.h>
#include <string.h>

#include "lib/program/keyname.h"
#include "tests/check_common.h"

static const char *const names[] = {
	"database", "secret", "tolerance", "log", "handler",
	"handler_timeout", "retry_base", "max_body",
};

static const char *
name_at(size_t i)
{
	return names[i];
}

static const struct keyname_table table = { name_at, NELEM(names) };

/* The name keyname_near finds, or "-". */
static const char *
near(const char *s)
{
	long i = keyname_near(&table, s);

	return i == -1 ? "-" : names[i];
}

START_TEST(near_by_edits_and_start)
{
	static const struct {
		const char	*typed, *meant;
	} cases[] = {
		{ "databse", "database" },	/* a transposition */
		{ "tolerence", "tolerance" },	/* a wrong letter */
		{ "Tolerance", "tolerance" },	/* case */
		{ "secrets", "secret" },	/* one more */
		{ "handler_time", "handler_timeout" },	/* its start */
		{ "logfile", "log" },		/* it starts with the key */
		{ "database_url", "database" },
		{ "max-body", "max_body" },
		{ "foo", "-" },			/* 2 edits of "log": too far */
		{ "hand", "-" },		/* starts 2 keys */
		{ "", "-" },
	};

	for (size_t i = 0; i < NELEM(cases); i++)
		ck_assert_msg(strcmp(near(cases[i].typed), cases[i].meant) == 0,
		    "%s: %s, not %s", cases[i].typed, near(cases[i].typed),
		    cases[i].meant);
}
END_TEST

START_TEST(like_a_key)
{
	static const char *const yes[] = {
		"database", "max_body", "Tolerance", "retry2", "logfile",
	};
	static const char *const no[] = {
		"", "whsec_abc", "my_whpk_x", "MfKQ9r8GKYqr", "a-b", "x=y",
		"abc123", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	};

	for (size_t i = 0; i < NELEM(yes); i++)
		ck_assert_msg(keyname_like(yes[i]), "%s", yes[i]);
	for (size_t i = 0; i < NELEM(no); i++)
		ck_assert_msg(!keyname_like(no[i]), "%s", no[i]);
}
END_TEST

/* Printed: a key, a near miss, a word as keys are written; never a word
 * with digits or capitals that is neither (it may be a password). */
START_TEST(known_or_near)
{
	ck_assert(keyname_known_or_near(&table, "secret"));
	ck_assert(keyname_known_or_near(&table, "tolerence"));
	ck_assert(keyname_known_or_near(&table, "log_file"));
	ck_assert(keyname_known_or_near(&table, "Tolerance"));
	ck_assert(!keyname_known_or_near(&table, "hunter22"));
	ck_assert(!keyname_known_or_near(&table, "Password"));
	ck_assert(!keyname_known_or_near(&table, "x"));
}
END_TEST

static Suite *
keyname_suite(void)
{
	Suite *s = suite_create("keyname");
	TCase *tc = tcase_create("keyname");

	tcase_add_test(tc, near_by_edits_and_start);
	tcase_add_test(tc, like_a_key);
	tcase_add_test(tc, known_or_near);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(keyname_suite());
}
