/*
 * test_version: lib/program/version.c — what `--version` says: the tree's
 * VERSION and the commit the Makefile compiled in, then the libraries and
 * the inbox schema this binary was built with, each exactly as the
 * libraries themselves report them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/program/version.h"
#include "lib/store/inbox.h"
#include "tests/check_common.h"

/* The tree's VERSION file, beside tests/ (SCHEMA_V1 is the tree's
 * tests/schema-v1.sql, from the Makefile). */
static void
tree_version(char *out, size_t outsz)
{
	char path[4096];
	const char *tail = "tests/schema-v1.sql";
	size_t n = strlen(SCHEMA_V1) - strlen(tail);
	FILE *f;

	ck_assert(strcmp(SCHEMA_V1 + n, tail) == 0);
	snprintf(path, sizeof path, "%.*sVERSION", (int)n, SCHEMA_V1);
	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_ptr_nonnull(fgets(out, (int)outsz, f));
	fclose(f);
	out[strcspn(out, "\n")] = '\0';
}

START_TEST(number_and_commit_come_from_the_build)
{
	char want[64];
	size_t i;

	tree_version(want, sizeof want);
	ck_assert_str_eq(version_number, want);
	/* git's 12 hex digits, maybe -dirty; "unknown" outside a checkout. */
	if (strcmp(version_commit, "unknown") != 0) {
		for (i = 0; i < 12; i++)
			ck_assert_msg(strchr("0123456789abcdef", version_commit[i])
			    != NULL && version_commit[i] != '\0', "%s",
			    version_commit);
		ck_assert(version_commit[12] == '\0' ||
		    strcmp(version_commit + 12, "-dirty") == 0);
	}
}
END_TEST

START_TEST(print_says_the_three_lines)
{
	char want[1024], *out = NULL;
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	version_print(f, "webhook.fcgi");
	ck_assert_int_eq(fclose(f), 0);
	snprintf(want, sizeof want, "webhook.fcgi %s (commit %s)\n"
	    "SQLite %s, libsodium %s, inbox schema %d\n"
	    "inbox backends: %s\n", version_number, version_commit,
	    sqlite3_libversion(), sodium_version_string(),
	    inbox_schema_version(), inbox_backends());
	ck_assert_str_eq(out, want);
	/* The backends this build has: PostgreSQL in the default build. */
#ifdef WEBHOOK_POSTGRESQL
	ck_assert(contains(out, "inbox backends: sqlite, postgresql\n"));
#else
	ck_assert(contains(out, "inbox backends: sqlite\n"));
#endif
	ck_assert_int_ge(inbox_schema_version(), 1);
	free(out);
}
END_TEST

/* The caller's name, whichever program prints. */
START_TEST(print_names_the_program)
{
	char *out = NULL;
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	version_print(f, "webhook-drain");
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(strncmp(out, "webhook-drain ", 14), 0);
	free(out);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("version");
	TCase *tc = tcase_create("version");

	tcase_add_test(tc, number_and_commit_come_from_the_build);
	tcase_add_test(tc, print_says_the_three_lines);
	tcase_add_test(tc, print_names_the_program);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(suite());
}
