/*
 * test_upgrade: lib/receive/upgrade.c — a receiver replaced on disk: the
 * path remembered, nothing done while the path names the running file or
 * nothing, each kind of file refused with its reason (logged once, tried
 * again only when yet another file stands there), a receiver that answers
 * the probe accepted once, and upgrade_exec running the file that was
 * checked even when another one was renamed in since.
 *
 * The new receivers are copies of this test program, which answers the
 * probe as a receiver does (upgrade_answer_probe) or as the test asks
 * through its environment (an older schema, no answer at all); the probe
 * passes our environment on.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/receive/upgrade.h"
#include "lib/store/inbox.h"
#include "tests/check_common.h"

#define SEC	1000000000LL

static char tmpdir[] = "/tmp/webhook-test-upgrade-XXXXXX";

/* The receiver's path in tmpdir, and the log beside it. */
static char recv_path[PATH_MAX], log_path[PATH_MAX];

static void
setup(void)
{
	snprintf(recv_path, sizeof recv_path, "%s/webhook.fcgi", tmpdir);
	snprintf(log_path, sizeof log_path, "%s/log", tmpdir);
	unlink(recv_path);
	unlink(log_path);
	log_open(log_path);
}

static char *
slurp(const char *path)
{
	char *s = NULL;
	size_t n = 0;
	FILE *f, *m;
	int c;

	ck_assert_ptr_nonnull(m = open_memstream(&s, &n));
	if ((f = fopen(path, "r")) != NULL) {
		while ((c = getc(f)) != EOF)
			putc(c, m);
		fclose(f);
	}
	ck_assert_int_eq(fclose(m), 0);
	return s;
}

static int
log_lines(void)
{
	char *s = slurp(log_path), *p;
	int n = 0;

	for (p = s; (p = strchr(p, '\n')) != NULL; p++)
		n++;
	free(s);
	return n;
}

/* Copy `from` to `to` (via a temporary name and a rename, as a user
 * renames an upload in) with mode `mode`. */
static void
put(const char *from, const char *to, mode_t mode)
{
	char tmp[PATH_MAX + 8], buf[65536];
	ssize_t n;
	int in, out;

	snprintf(tmp, sizeof tmp, "%s.new", to);
	ck_assert_int_ne(in = open(from, O_RDONLY), -1);
	ck_assert_int_ne(out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, mode), -1);
	while ((n = read(in, buf, sizeof buf)) > 0)
		ck_assert_int_eq(write(out, buf, (size_t)n), n);
	ck_assert_int_eq(n, 0);
	close(in);
	ck_assert_int_eq(fchmod(out, mode), 0);
	ck_assert_int_eq(close(out), 0);
	ck_assert_int_eq(rename(tmp, to), 0);
}

/* This test program, as a new receiver at recv_path. */
static void
put_self(mode_t mode)
{
	put("/proc/self/exe", recv_path, mode);
}

START_TEST(init_remembers_the_path)
{
	char want[PATH_MAX + 32];

	setup();
	ck_assert_str_eq(upgrade_path(), "");
	ck_assert_int_eq(chdir(tmpdir), 0);
	upgrade_init("webhook.fcgi");
	snprintf(want, sizeof want, "%s/webhook.fcgi", tmpdir);
	ck_assert_str_eq(upgrade_path(), want);
	upgrade_init("/srv/x/../y/webhook.fcgi");	/* kept as given */
	ck_assert_str_eq(upgrade_path(), "/srv/x/../y/webhook.fcgi");
	upgrade_init(NULL);
	ck_assert_str_eq(upgrade_path(), "");
	ck_assert_int_eq(upgrade_due(), 0);
}
END_TEST

/* Nothing at the path, or the very file running: no upgrade, nothing
 * logged. */
START_TEST(nothing_new_is_no_upgrade)
{
	char self[PATH_MAX];
	ssize_t n;

	setup();
	upgrade_init(recv_path);
	ck_assert_int_eq(upgrade_due(), 0);
	ck_assert_int_ne(n = readlink("/proc/self/exe", self, sizeof self - 1), -1);
	self[n] = '\0';
	upgrade_init(self);
	ck_assert_int_eq(upgrade_due(), 0);
	ck_assert_int_eq(log_lines(), 0);
}
END_TEST

/* A file that fails: 0, its reason logged once; the same file is not
 * probed again. */
static void
refused(const char *reason)
{
	char *log;

	ck_assert_int_eq(upgrade_due(), 0);
	log = slurp(log_path);
	ck_assert_msg(contains(log, reason), "%s", log);
	ck_assert_msg(contains(log, "was replaced, but the new file is not "
	    "used"), "%s", log);
	free(log);
	ck_assert_int_eq(log_lines(), 1);
	ck_assert_int_eq(upgrade_due(), 0);
	ck_assert_int_eq(log_lines(), 1);
	/* Emptied for the next (the log's descriptor stays open). */
	ck_assert_int_eq(truncate(log_path, 0), 0);
}

START_TEST(each_kind_of_file_is_refused_with_its_reason)
{
	char script[PATH_MAX + 16];

	setup();
	upgrade_init(recv_path);
	snprintf(script, sizeof script, "%s/script", tmpdir);
	check_write_file(script, "#!/bin/sh\necho webhook.fcgi\n");
	put(script, recv_path, 0700);
	refused("it is not a program (a partial upload, or a script?)");
	put_self(0600);
	refused("it is not executable (chmod 700 it)");
	put("/bin/true", recv_path, 0700);
	refused("it is not a receiver that knows the upgrade probe");
	/* A receiver of an older schema would refuse this inbox. */
	setenv("TEST_UPGRADE_SCHEMA", "1", 1);
	put_self(0700);
	refused("it is an older receiver (inbox schema 1, this one");
	unlink(script);
}
END_TEST

START_TEST(a_probe_that_hangs_is_given_up)
{
	int64_t t0, took;

	setup();
	upgrade_init(recv_path);
	setenv("TEST_UPGRADE_HANG", "1", 1);
	put_self(0700);
	t0 = util_mono_ns();
	refused("it did not answer within 5 s");
	took = util_mono_ns() - t0;
	ck_assert_int_ge(took, UPGRADE_PROBE_MS / 1000 * SEC - SEC);
	ck_assert_int_lt(took, UPGRADE_PROBE_MS / 1000 * SEC + 10 * SEC);
}
END_TEST

START_TEST(a_receiver_is_accepted_and_the_checked_file_runs)
{
	char *argv[] = { (char *)"anything", (char *)"--exec-check", NULL };
	char out[PATH_MAX + 64], want[PATH_MAX + 64], *log;
	int p[2], status;
	ssize_t n;
	pid_t pid;

	setup();
	upgrade_init(recv_path);
	put_self(0700);
	ck_assert_int_eq(upgrade_due(), 1);
	log = slurp(log_path);
	ck_assert_msg(contains(log, "was replaced (an upgrade)"), "%s", log);
	free(log);
	/* Once due, no more checks. */
	ck_assert_int_eq(upgrade_due(), 0);
	ck_assert_int_eq(log_lines(), 1);
	/* Something else renamed in since: the file checked still runs. */
	put("/bin/false", recv_path, 0700);
	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_ne(pid = fork(), -1);
	if (pid == 0) {
		dup2(p[1], 1);
		upgrade_exec(argv);
		_exit(99);
	}
	close(p[1]);
	ck_assert_int_gt(n = read(p[0], out, sizeof out - 1), 0);
	out[n] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	snprintf(want, sizeof want, "exec'd %s\n", recv_path);
	ck_assert_str_eq(out, want);
}
END_TEST

/* Without a file checked, exec is refused. */
START_TEST(exec_without_a_checked_file_returns)
{
	char *argv[] = { (char *)"x", NULL };

	setup();
	upgrade_init(recv_path);
	errno = 0;
	upgrade_exec(argv);
	ck_assert_int_eq(errno, EBADF);
}
END_TEST

START_TEST(answer_says_nonce_and_schema)
{
	char want[128];
	int p[2], saved;
	ssize_t n;
	char out[128];

	ck_assert_int_eq(pipe(p), 0);
	fflush(stdout);
	ck_assert_int_ne(saved = dup(1), -1);
	dup2(p[1], 1);
	upgrade_answer_probe("0123abcd");
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	close(p[1]);
	ck_assert_int_gt(n = read(p[0], out, sizeof out - 1), 0);
	out[n] = '\0';
	close(p[0]);
	snprintf(want, sizeof want, "webhook.fcgi upgrade-probe 0123abcd "
	    "schema %d\n", inbox_schema_version());
	ck_assert_str_eq(out, want);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("upgrade");
	TCase *tc = tcase_create("upgrade");

	tcase_add_test(tc, init_remembers_the_path);
	tcase_add_test(tc, nothing_new_is_no_upgrade);
	tcase_add_test(tc, each_kind_of_file_is_refused_with_its_reason);
	tcase_add_test(tc, a_probe_that_hangs_is_given_up);
	tcase_add_test(tc, a_receiver_is_accepted_and_the_checked_file_runs);
	tcase_add_test(tc, exec_without_a_checked_file_returns);
	tcase_add_test(tc, answer_says_nonce_and_schema);
	/* The hanging probe takes UPGRADE_PROBE_MS by design. */
	tcase_set_timeout(tc, UPGRADE_PROBE_MS / 1000 + 15);
	suite_add_tcase(s, tc);
	return s;
}

int
main(int argc, char **argv)
{
	const char *schema = getenv("TEST_UPGRADE_SCHEMA");

	/* A copy of this program, probed or executed as a new receiver. */
	if (argc == 3 && strcmp(argv[1], "--upgrade-probe") == 0) {
		if (getenv("TEST_UPGRADE_HANG") != NULL)
			sleep(120);
		else if (schema != NULL)
			printf("webhook.fcgi upgrade-probe %s schema %s\n",
			    argv[2], schema);
		else
			upgrade_answer_probe(argv[2]);
		return 0;
	}
	if (argc == 2 && strcmp(argv[1], "--exec-check") == 0) {
		printf("exec'd %s\n", argv[0]);
		return 0;
	}
	if (sodium_init() < 0)
		return 1;
	log_init("test_upgrade");
	return check_main_in_tmpdir(suite, tmpdir);
}
