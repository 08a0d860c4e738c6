/*
 * test_runlock: lib/drain/runlock.c — one `webhook-drain run` per inbox at
 * a time (docs/DESIGN.md "The drainer": an overlapping run exits 0
 * quietly).  The lock is an flock on "<database>.drain-lock"; flock belongs
 * to the open file description, so two runlock_try calls in one process
 * contend like two drainers, and a forked child holds the lock through its
 * inherited copy.  Every test works in one mkdtemp directory that main
 * removes at the end.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/drain/runlock.h"
#include "tests/check_common.h"

/* The directory every test's files go in (made by main). */
static char lockdir[] = "/tmp/webhook-test-runlock-XXXXXX";

/* A database path of our own in lockdir (the database itself need not
 * exist: only the lock file beside it is made). */
static void
db_path(char *out, size_t outsz, const char *name)
{
	snprintf(out, outsz, "%s/%s-%ld.db", lockdir, name, (long)getpid());
}

static const char *
err_text(const struct buf *b)
{
	return b->data != NULL ? b->data : "";
}

START_TEST(take_contend_release)
{
	char db[256], lockpath[300];
	struct buf err;
	struct stat st;
	int fd, fd2, fd3;

	buf_init(&err, BUF_ERR_MAX);
	db_path(db, sizeof db, "take");
	snprintf(lockpath, sizeof lockpath, "%s.drain-lock", db);
	fd = runlock_try(db, &err);
	ck_assert_msg(fd >= 0, "runlock_try: %d: %s", fd, err_text(&err));
	ck_assert_int_eq(stat(lockpath, &st), 0);
	ck_assert(S_ISREG(st.st_mode));

	/* A second taker (another open file description) is turned away. */
	fd2 = runlock_try(db, &err);
	ck_assert_int_eq(fd2, -2);

	/* Released: free again, and the lock file may stay. */
	runlock_release(fd);
	fd3 = runlock_try(db, &err);
	ck_assert_msg(fd3 >= 0, "runlock_try after release: %d: %s", fd3,
	    err_text(&err));
	ck_assert_int_eq(runlock_try(db, &err), -2);
	runlock_release(fd3);
	runlock_release(-1);	/* accepted, does nothing */
	buf_free(&err);
}
END_TEST

START_TEST(databases_do_not_contend)
{
	char a[256], b[256];
	struct buf err;
	int fa, fb;

	buf_init(&err, BUF_ERR_MAX);
	db_path(a, sizeof a, "one");
	db_path(b, sizeof b, "two");
	fa = runlock_try(a, &err);
	fb = runlock_try(b, &err);
	ck_assert_msg(fa >= 0 && fb >= 0, "%d %d: %s", fa, fb, err_text(&err));
	runlock_release(fa);
	runlock_release(fb);
	buf_free(&err);
}
END_TEST

/* The designed behaviour of runlock.h: a handler left running by a killed
 * drainer keeps the lock through the descriptor it inherited across fork
 * and exec. */
START_TEST(inherited_by_child)
{
	char db[256], ready[8];
	struct buf err;
	int fd, again, go[2], up[2], status;
	pid_t pid;

	buf_init(&err, BUF_ERR_MAX);
	db_path(db, sizeof db, "inherit");
	fd = runlock_try(db, &err);
	ck_assert_msg(fd >= 0, "runlock_try: %d: %s", fd, err_text(&err));
	ck_assert_int_eq(pipe(go), 0);
	ck_assert_int_eq(pipe(up), 0);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		/* The orphaned handler, a program of its own (the lock must
		 * survive exec, as under the handler's /bin/sh): says it
		 * runs, then holds the lock until its stdin reaches EOF. */
		close(go[1]);
		close(up[0]);
		if (dup2(go[0], STDIN_FILENO) == -1 ||
		    dup2(up[1], STDOUT_FILENO) == -1)
			_exit(126);
		execl("/bin/sh", "sh", "-c",
		    "echo up; exec >&-; cat >/dev/null", (char *)NULL);
		_exit(127);
	}
	close(go[0]);
	close(up[1]);
	/* Past exec before we let go of our copy. */
	ck_assert_int_eq(read(up[0], ready, 3), 3);
	close(up[0]);

	runlock_release(fd);
	ck_assert_msg(runlock_try(db, &err) == -2,
	    "the child's inherited copy should still hold the lock");

	close(go[1]);	/* the child exits */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	again = runlock_try(db, &err);
	ck_assert_msg(again >= 0, "lock still taken after the last holder "
	    "exited: %d: %s", again, err_text(&err));
	runlock_release(again);
	buf_free(&err);
}
END_TEST

START_TEST(lock_file_mode)
{
	char db[256], lockpath[300];
	struct buf err;
	struct stat st;
	int fd;

	/* 0660 under the umask FIELD-NOTES asks of a shared setup. */
	umask(002);
	buf_init(&err, BUF_ERR_MAX);
	db_path(db, sizeof db, "mode");
	snprintf(lockpath, sizeof lockpath, "%s.drain-lock", db);
	fd = runlock_try(db, &err);
	ck_assert_msg(fd >= 0, "runlock_try: %d: %s", fd, err_text(&err));
	ck_assert_int_eq(stat(lockpath, &st), 0);
	ck_assert_uint_eq(st.st_mode & 07777, 0660);
	runlock_release(fd);
	buf_free(&err);
}
END_TEST

START_TEST(symlink_refused)
{
	char db[256], lockpath[300], target[300];
	struct buf err;
	int fd;

	/* A planted symlink must not make us create or lock its target. */
	buf_init(&err, BUF_ERR_MAX);
	db_path(db, sizeof db, "link");
	snprintf(lockpath, sizeof lockpath, "%s.drain-lock", db);
	snprintf(target, sizeof target, "%s.elsewhere", db);
	ck_assert_int_eq(symlink(target, lockpath), 0);
	fd = runlock_try(db, &err);
	ck_assert_int_eq(fd, -1);
	ck_assert_msg(contains(err_text(&err), lockpath), "%s", err_text(&err));
	ck_assert_int_eq(access(target, F_OK), -1);
	buf_free(&err);
}
END_TEST

START_TEST(missing_directory)
{
	char db[256];
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	snprintf(db, sizeof db, "%s/no/such/dir/inbox.db", lockdir);
	ck_assert_int_eq(runlock_try(db, &err), -1);
	ck_assert_msg(contains(err_text(&err), db), "%s", err_text(&err));
	ck_assert_msg(contains(err_text(&err), strerror(ENOENT)), "%s",
	    err_text(&err));
	buf_free(&err);
}
END_TEST

/*
 * An unwritable directory: -1 and a message naming the lock file and the
 * reason.  root writes anywhere, so as root a child drops to "nobody"
 * (65534) first and reports back through a pipe.
 */
START_TEST(unwritable_directory)
{
	char ro[256], db[300], msg[1024];
	struct buf err;
	int p[2], status;
	ssize_t n;
	pid_t pid;

	snprintf(ro, sizeof ro, "%s/ro-%ld", lockdir, (long)getpid());
	ck_assert_int_eq(mkdir(ro, 0555), 0);
	ck_assert_int_eq(chmod(ro, 0555), 0);
	ck_assert_int_eq(chmod(lockdir, 0711), 0);
	snprintf(db, sizeof db, "%s/inbox.db", ro);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		int fd;

		close(p[0]);
		if (geteuid() == 0 && (setgid(65534) == -1 ||
		    setuid(65534) == -1))
			_exit(3);
		buf_init(&err, BUF_ERR_MAX);
		fd = runlock_try(db, &err);
		if (write(p[1], err_text(&err), strlen(err_text(&err))) < 0)
			_exit(4);
		_exit(fd == -1 ? 0 : fd == -2 ? 2 : 1);
	}
	close(p[1]);
	n = read(p[0], msg, sizeof msg - 1);
	msg[n > 0 ? n : 0] = '\0';
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	chmod(lockdir, 0700);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "runlock_try in an unwritable directory: child status %d, "
	    "message \"%s\"", status, msg);
	ck_assert_msg(contains(msg, db), "message \"%s\" names no path", msg);
	ck_assert_msg(contains(msg, strerror(EACCES)), "message \"%s\"", msg);
}
END_TEST

static Suite *
runlock_suite(void)
{
	Suite *s = suite_create("runlock");
	TCase *tc;

	tc = tcase_create("lock");
	tcase_add_test(tc, take_contend_release);
	tcase_add_test(tc, databases_do_not_contend);
	tcase_add_test(tc, inherited_by_child);
	tcase_add_test(tc, lock_file_mode);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, symlink_refused);
	tcase_add_test(tc, missing_directory);
	tcase_add_test(tc, unwritable_directory);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(runlock_suite, lockdir);
}
