/*
 * test_guard: lib/drain/guard.c — a handler does not outlive its drainer.
 *
 * Each test forks a stand-in drainer D that starts handlers (process
 * groups of their own) and puts them in the guard's care, tells the test
 * their pids over a pipe, and waits.  The test SIGKILLs D, as kill -9 or
 * the OOM killer would.  The test process is a child subreaper, so D's
 * orphans (handlers and guard) become its children: it waits for each and
 * reads how it ended, instead of guessing from kill(pid, 0).
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/drain/guard.h"
#include "lib/drain/handler.h"
#include "tests/check_common.h"

/* Far above the microseconds a kill takes: reached only when nothing
 * kills the process, and then the test fails on it. */
#define WAIT_S	30

/* A handler stand-in: a process group of its own that sleeps, with one
 * child of its own in the group (a shell's command, say). */
static pid_t
start_group(void)
{
	pid_t pid = fork();

	/* alarm: a stand-in that nothing killed (the test failed) ends by
	 * itself, and does not hold the test's output open for ever. */
	if (pid == 0) {
		(void)setpgid(0, 0);
		if (fork() == 0) {
			alarm(4 * WAIT_S);
			pause();
			_exit(0);
		}
		alarm(4 * WAIT_S);
		pause();
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	(void)setpgid(pid, pid);	/* as posix_spawn's SETPGROUP does */
	return pid;
}

/* How child `pid` (-1: any child) ended: waits at most WAIT_S.  -1:
 * still running. */
static int
wait_end(pid_t pid, int *status)
{
	struct timespec step = { 0, 10 * 1000000 };

	for (int i = 0; i < WAIT_S * 100; i++) {
		pid_t got = waitpid(pid, status, WNOHANG);
		if (got > 0 && (pid == -1 || got == pid))
			return 0;
		ck_assert_msg(got == 0, "waitpid %ld: %s", (long)pid,
		    strerror(errno));
		nanosleep(&step, NULL);
	}
	return -1;
}

static void
read_pids(int fd, pid_t *p, size_t n)
{
	ck_assert_int_eq(read(fd, p, n * sizeof *p), (ssize_t)(n * sizeof *p));
}

static void
assert_killed(pid_t pid, const char *what)
{
	int st = 0;

	if (wait_end(pid, &st) != 0) {
		kill(-pid, SIGKILL);
		ck_abort_msg("%s %ld still runs %d s after its drainer was "
		    "killed", what, (long)pid, WAIT_S);
	}
	ck_assert_msg(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "%s ended with status 0x%x, not SIGKILL", what, st);
}

/* The guard's descriptors: the pipe's read end only. */
static int
open_fds(pid_t pid)
{
	char path[64];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(path, sizeof path, "/proc/%ld/fd", (long)pid);
	ck_assert((d = opendir(path)) != NULL);
	while ((e = readdir(d)) != NULL)
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/*
 * Fork the stand-in drainer D (a process group of its own, SIGPIPE
 * ignored, as webhook-drain's): it runs body, which starts and watches
 * handlers and fills out[0..n) with the pids the test needs, sends them
 * over a pipe and then waits to be killed (body returns 0) or exits at
 * once (1).  The test process becomes a child subreaper first.  Returns
 * D's pid, with the pids in got.
 */
static pid_t
drainer(int (*body)(pid_t *out), pid_t *got, size_t n)
{
	int p[2];
	pid_t d;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(pipe(p), 0);
	if ((d = fork()) == 0) {
		pid_t out[8] = { 0 };
		int leave;

		(void)setpgid(0, 0);
		signal(SIGPIPE, SIG_IGN);
		leave = body(out);
		if (write(p[1], out, n * sizeof *out) != (ssize_t)(n * sizeof *out))
			_exit(9);
		alarm(4 * WAIT_S);
		if (!leave)
			pause();
		_exit(0);
	}
	ck_assert_int_gt(d, 0);
	(void)setpgid(d, d);
	read_pids(p[0], got, n);
	close(p[0]);
	close(p[1]);
	return d;
}

static void
kill_drainer(pid_t d, int group)
{
	int st;

	ck_assert_int_eq(kill(group ? -d : d, SIGKILL), 0);
	ck_assert_int_eq(waitpid(d, &st, 0), d);
}

/* Two watched groups, the guard's pid; a file held open, as a drainer
 * holds its run lock. */
static int
two_watched(pid_t *out)
{
	(void)tmpfile();
	out[0] = start_group();
	out[1] = start_group();
	if (guard_watch(out[0]) != 0 || guard_watch(out[1]) != 0)
		_exit(2);
	out[2] = guard_pid();
	return 0;
}

/* D killed: both groups end with SIGKILL -- their inner children too --
 * and the guard, which kept none of D's descriptors, exits 0. */
START_TEST(killed_drainer_takes_its_handlers)
{
	pid_t got[3];
	pid_t d = drainer(two_watched, got, 3);
	int st;

	ck_assert_int_gt(got[2], 0);
	/* Closing the drainer's descriptors is the guard's first act after
	 * the fork: give it the time a loaded machine takes. */
	for (int i = 0; i < WAIT_S * 100 && open_fds(got[2]) != 1; i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000000 }, NULL);
	ck_assert_int_eq(open_fds(got[2]), 1);
	kill_drainer(d, 0);
	assert_killed(got[0], "handler");
	assert_killed(got[1], "handler");
	ck_assert_int_eq(wait_end(got[2], &st), 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* The groups' inner children, orphaned to us too, are gone: no
	 * child of ours is left. */
	for (int i = 0; i < 2; i++) {
		ck_assert_msg(wait_end(-1, &st) == 0, "a command in a handler's "
		    "group still runs");
		ck_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	}
	ck_assert_int_eq(waitpid(-1, &st, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

/* `kill -9 -PGID` of the drainer's process group (a wrapper's, a
 * script's) does not take the guard with it: it has a group of its own. */
START_TEST(a_group_kill_of_the_drainer_leaves_the_guard)
{
	pid_t got[3];
	pid_t d = drainer(two_watched, got, 3);
	int st;

	/* The guard leaves the group as its first act after the fork. */
	for (int i = 0; i < WAIT_S * 100 && getpgid(got[2]) != got[2]; i++)
		nanosleep(&(struct timespec){ 0, 10 * 1000000 }, NULL);
	ck_assert_int_eq(getpgid(got[2]), got[2]);
	kill_drainer(d, 1);
	assert_killed(got[0], "handler");
	assert_killed(got[1], "handler");
	ck_assert_int_eq(wait_end(got[2], &st), 0);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

static int
one_forgotten(pid_t *out)
{
	out[0] = start_group();
	out[1] = start_group();
	if (guard_watch(out[0]) != 0 || guard_watch(out[1]) != 0)
		_exit(2);
	guard_forget(out[1]);
	return 1;
}

/* A forgotten group (its handler reaped, in real use) is not the guard's
 * to kill; a drainer that exits normally is gone just the same. */
START_TEST(forgotten_groups_are_left_alone)
{
	pid_t got[2];
	pid_t d = drainer(one_forgotten, got, 2);
	int st;

	ck_assert_int_eq(waitpid(d, &st, 0), d);
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_killed(got[0], "watched handler");
	/* The forgotten one runs on: the guard has exited, so nothing
	 * will kill it but us. */
	ck_assert_int_eq(waitpid(got[1], &st, WNOHANG), 0);
	kill(-got[1], SIGKILL);
	ck_assert_int_eq(waitpid(got[1], &st, 0), got[1]);
}
END_TEST

static int
guard_replaced(pid_t *out)
{
	out[0] = start_group();
	if (guard_watch(out[0]) != 0)
		_exit(2);
	out[2] = guard_pid();
	kill(out[2], SIGKILL);
	if (waitpid(out[2], NULL, 0) != out[2])
		_exit(3);
	out[1] = start_group();
	if (guard_watch(out[1]) != 0)
		_exit(4);
	out[3] = guard_pid();
	return 0;
}

/* The guard killed by hand: the next guard_watch starts another and
 * tells it every group still watched, not only the new one. */
START_TEST(a_killed_guard_is_replaced_with_the_whole_list)
{
	pid_t got[4];
	pid_t d = drainer(guard_replaced, got, 4);

	ck_assert_int_gt(got[3], 0);
	ck_assert_int_ne(got[3], got[2]);
	kill_drainer(d, 0);
	assert_killed(got[0], "handler watched by the first guard");
	assert_killed(got[1], "handler watched by the second guard");
}
END_TEST

static int
one_handler(pid_t *out)
{
	struct handler_job *j;
	struct buf err;

	buf_init(&err, 256);
	j = handler_start("sleep 60 & sleep 60; wait", NULL, 0, NULL, 0,
	    60LL * 1000000000, &err);
	if (j == NULL)
		_exit(2);
	out[0] = (pid_t)handler_job_pid(j);
	return 0;
}

/* Through lib/drain/handler.c: a handler_start job is watched, so a killed
 * drainer's shell and the command it started both end. */
START_TEST(handler_start_is_guarded)
{
	pid_t got[1];
	pid_t d = drainer(one_handler, got, 1);

	kill_drainer(d, 0);
	assert_killed(got[0], "handler shell");
}
END_TEST

static Suite *
guard_suite(void)
{
	Suite *s = suite_create("guard");
	TCase *tc = tcase_create("guard");

	tcase_set_timeout(tc, 4 * WAIT_S);
	tcase_add_test(tc, killed_drainer_takes_its_handlers);
	tcase_add_test(tc, forgotten_groups_are_left_alone);
	tcase_add_test(tc, a_killed_guard_is_replaced_with_the_whole_list);
	tcase_add_test(tc, a_group_kill_of_the_drainer_leaves_the_guard);
	tcase_add_test(tc, handler_start_is_guarded);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(guard_suite());
}
