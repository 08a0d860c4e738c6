/*
 * check_common: what every unit-test program under tests/ shares.  Each
 * program is one lib module's tests on the Check framework; its main builds
 * one Suite and hands it to check_main, which runs it with the verbosity
 * CK_VERBOSITY asks for (tests/run reads the "NN%: Checks: …" line) and
 * turns the result into the exit status.
 */
#ifndef WEBHOOK_CHECK_COMMON_H
#define WEBHOOK_CHECK_COMMON_H

#include <ftw.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <check.h>

/* Array length, for tables of cases. */
#define NELEM(a)	(sizeof(a) / sizeof((a)[0]))

/* Run every test of `s` (freed here).  Returns the process exit status:
 * 0 when everything passed, 1 otherwise. */
static inline int
check_main(Suite *s)
{
	SRunner *sr = srunner_create(s);
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}

static inline int
check_remove_one(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path) == 0 ? 0 : -1;
}

/* check_main for programs whose tests work in one temporary directory:
 * `dir` is a mkdtemp template ("/tmp/…-XXXXXX", made real here), removed
 * with everything in it afterwards.  Exit status as check_main; 1 too when
 * the directory cannot be made or removed. */
static inline int
check_main_in_tmpdir(Suite *(*suite)(void), char *dir)
{
	int rc;

	if (mkdtemp(dir) == NULL) {
		perror(dir);
		return 1;
	}
	rc = check_main(suite());
	if (nftw(dir, check_remove_one, 8, FTW_DEPTH | FTW_PHYS) == -1) {
		perror(dir);
		rc = 1;
	}
	return rc;
}

/* Write `text` to a new file (or over an old one) at `path`; a failure
 * fails the test. */
static inline void
check_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_msg(f != NULL, "%s: cannot create", path);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* Does NUL-terminated `hay` (NULL allowed) contain `needle`? */
static inline int
contains(const char *hay, const char *needle)
{
	return hay != NULL && strstr(hay, needle) != NULL;
}

#endif
