/*
 * guard: a handler does not outlive its drainer (drain/guard.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/drain/guard.h"

/* One message on the pipe: 8 bytes, so every write is atomic (below
 * PIPE_BUF) and every read of 8 bytes takes exactly one message. */
struct guard_msg {
	int32_t	op;	/* '+': watch, '-': forget */
	int32_t	pgid;
};

static int	guard_fd = -1;		/* the pipe's write end */
static pid_t	guard_child = -1;	/* the guard process */
static pid_t	guard_owner = -1;	/* the process that started it */
/* The drainer's copy of the list: replayed into a new guard when the old
 * one is gone (killed by hand), so no running group loses its guard. */
static pid_t	watched[GUARD_GROUPS_MAX];
static size_t	nwatched;

/* The guard process: read the list until end of file, then kill what is
 * on it.  Only async-signal-safe calls: it is a fork of a process that
 * may hold libpq's and SQLite's state, which it never touches. */
static void __attribute__((noreturn))
guard_main(int fd)
{
	static const int quiet[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT,
	    SIGPIPE, SIGUSR1, SIGUSR2, SIGTSTP };
	pid_t groups[GUARD_GROUPS_MAX];
	struct guard_msg m;
	size_t n = 0, i;
	ssize_t got;

	/* Nothing of the drainer's stays open here: not its run lock (an
	 * flock held by this process would outlast the drainer), not its
	 * database sockets, not its terminal. */
	for (int f = 0; f < fd; f++)
		(void)close(f);
	if (close_range((unsigned)fd + 1, ~0U, 0) == -1) {
		/* A kernel before 5.9 (ENOSYS): one by one, up to the limit. */
		long max = sysconf(_SC_OPEN_MAX);

		for (long f = fd + 1; f < (max > 0 && max < 65536 ? max : 65536);
		    f++)
			(void)close((int)f);
	}
	/* The guard must live until the drainer is gone, however it goes:
	 * a group of its own, so that `kill -9 -PGID` of the drainer's
	 * group (a cron wrapper's, a script's) leaves it to do its work,
	 * and the stop signals ignored (a terminal's ^C stops the drainer,
	 * which ends its handlers itself). */
	(void)setpgid(0, 0);
	for (i = 0; i < sizeof quiet / sizeof quiet[0]; i++)
		(void)signal(quiet[i], SIG_IGN);
	(void)prctl(PR_SET_NAME, "webhook-guard", 0, 0, 0);
	for (;;) {
		got = read(fd, &m, sizeof m);
		if (got == -1 && errno == EINTR)
			continue;
		if (got != (ssize_t)sizeof m)
			break;	/* end of file: the drainer is gone */
		if (m.op == '+' && n < GUARD_GROUPS_MAX && m.pgid > 1) {
			groups[n++] = (pid_t)m.pgid;
		} else if (m.op == '-') {
			for (i = 0; i < n; i++)
				if (groups[i] == (pid_t)m.pgid) {
					groups[i] = groups[--n];
					break;
				}
		}
	}
	for (i = 0; i < n; i++)
		(void)kill(-groups[i], SIGKILL);
	_exit(0);
}

static int
send_msg(int op, pid_t pgid)
{
	struct guard_msg m = { op, (int32_t)pgid };
	ssize_t w;

	do
		w = write(guard_fd, &m, sizeof m);
	while (w == -1 && errno == EINTR);
	return w == (ssize_t)sizeof m ? 0 : -1;
}

/* Forget a guard that is not ours (inherited through a fork) or gone. */
static void
drop(int ours)
{
	if (guard_fd != -1)
		(void)close(guard_fd);
	if (ours && guard_child > 0)
		(void)waitpid(guard_child, NULL, WNOHANG);
	guard_fd = -1;
	guard_child = -1;
	guard_owner = -1;
}

static int
start(void)
{
	int p[2], e;
	pid_t pid;

	/* O_CLOEXEC: no handler (exec'd) holds the write end, or the guard
	 * would wait for the handler instead of the drainer. */
	if (pipe2(p, O_CLOEXEC) == -1)
		return -1;
	pid = fork();
	if (pid == 0)
		guard_main(p[0]);
	e = errno;
	(void)close(p[0]);
	if (pid == -1) {
		(void)close(p[1]);
		errno = e;
		return -1;
	}
	guard_fd = p[1];
	guard_child = pid;
	guard_owner = getpid();
	for (size_t i = 0; i < nwatched; i++)
		if (send_msg('+', watched[i]) == -1)
			return -1;
	return 0;
}

int
guard_watch(pid_t pgid)
{
	if (guard_owner != getpid()) {	/* none, or our parent's */
		drop(0);
		nwatched = 0;
	}
	if (nwatched == GUARD_GROUPS_MAX) {
		errno = ENOSPC;
		return -1;
	}
	watched[nwatched++] = pgid;
	if (guard_fd != -1 && send_msg('+', pgid) == 0)
		return 0;
	/* No guard yet, or it is gone (EPIPE: SIGPIPE is ignored by the
	 * drainer): a new one, told the whole list. */
	drop(1);
	return start();
}

void
guard_forget(pid_t pgid)
{
	size_t i;

	if (guard_owner != getpid())
		return;
	for (i = 0; i < nwatched; i++)
		if (watched[i] == pgid) {
			watched[i] = watched[--nwatched];
			break;
		}
	if (guard_fd != -1)
		(void)send_msg('-', pgid);
}

pid_t
guard_pid(void)
{
	return guard_owner == getpid() ? guard_child : -1;
}
