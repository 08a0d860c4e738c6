/*
 * handler: spawn /bin/sh -c, feed stdin, capture output, enforce the
 * timeout on the whole process group — for one handler or several at
 * once.  See drain/handler.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/drain/guard.h"
#include "lib/drain/handler.h"

/* The guard could not be had once: said once per process, not per event. */
static int guard_warned;

/* Append to the output tail, keeping only the last HANDLER_OUTPUT_KEEP. */
static void
keep_tail(struct handler_result *r, const char *p, size_t n)
{
	size_t keep = sizeof r->output;

	if (n >= keep) {
		memcpy(r->output, p + (n - keep), keep);
		r->output_cut |= r->output_len > 0 || n > keep;
		r->output_len = keep;
		return;
	}
	if (r->output_len + n > keep) {
		size_t drop = r->output_len + n - keep;
		memmove(r->output, r->output + drop, r->output_len - drop);
		r->output_len -= drop;
		r->output_cut = 1;
	}
	memcpy(r->output + r->output_len, p, n);
	r->output_len += n;
}

/*
 * One running handler.  Its state moves only forward: stdin written then
 * closed (or abandoned on EPIPE), output read until EOF (or until the
 * shell is gone and the output stayed quiet), the shell reaped.  Finished
 * once reaped with its output closed.
 */
struct handler_job {
	pid_t			 pid;		/* the shell; its group's id */
	int			 pidfd;		/* -1: none (Linux < 5.3) */
	int			 in, out;	/* our pipe ends; -1 once closed */
	const char		*input;		/* the caller's, not copied */
	size_t			 input_len, written;
	int64_t			 start, timeout_ns;
	int64_t			 kill_at;	/* next kill of the group; -1 */
	int64_t			 reaped_at, last_read;
	int			 reaped, status;
	struct handler_result	 r;
};

/* After the shell exited: output silent this long counts as ended (a
 * process that escaped the group may hold the pipe open, silent). */
#define QUIET_NS	(10LL * 1000000)
/* Without a pidfd nothing wakes us when the shell exits: look this often. */
#define NO_PIDFD_STEP_NS (1LL * 1000000)

/* Move *fd above 2, so that the child's dup2 onto 0, 1, 2 never meets its
 * own source (a drainer started with a standard stream closed).  0 or -1. */
static int
above_stdio(int *fd)
{
	int nfd;

	if (*fd > STDERR_FILENO)
		return 0;
	if ((nfd = fcntl(*fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1)) == -1)
		return -1;
	close(*fd);
	*fd = nfd;
	return 0;
}

/* Our environment with env[0..nenv) applied (a NULL value removes the
 * name), as a NULL-terminated array for posix_spawn.  The array and the
 * strings from its *nown-th entry on are malloc'd (free_env); the rest
 * are environ's.  NULL when out of memory. */
static char **
make_env(const struct handler_env *env, size_t nenv, size_t *nown)
{
	extern char **environ;
	size_t n = 0, i, k, out = 0;
	char **v;

	while (environ != NULL && environ[n] != NULL)
		n++;
	if ((v = calloc(n + nenv + 1, sizeof *v)) == NULL)
		return NULL;
	for (i = 0; i < n; i++) {
		for (k = 0; k < nenv; k++) {
			size_t len = strlen(env[k].name);
			if (strncmp(environ[i], env[k].name, len) == 0 &&
			    environ[i][len] == '=')
				break;
		}
		if (k == nenv)
			v[out++] = environ[i];
	}
	*nown = out;
	for (k = 0; k < nenv; k++) {
		size_t j;

		if (env[k].value == NULL)
			continue;
		/* A name given twice: the last wins, as setenv would. */
		for (j = k + 1; j < nenv; j++)
			if (strcmp(env[j].name, env[k].name) == 0)
				break;
		if (j < nenv)
			continue;
		if (asprintf(&v[out], "%s=%s", env[k].name, env[k].value) == -1) {
			v[out] = NULL;
			for (j = *nown; j < out; j++)
				free(v[j]);
			free(v);
			return NULL;
		}
		out++;
	}
	v[out] = NULL;
	return v;
}

static void
free_env(char **v, size_t nown)
{
	size_t i;

	if (v == NULL)
		return;
	for (i = nown; v[i] != NULL; i++)
		free(v[i]);
	free(v);
}

/*
 * posix_spawn, not fork: glibc's posix_spawn is a vfork-style clone that
 * neither copies our page tables nor leaves our whole heap copy-on-write
 * behind it, which made fork + exec cost the drainer about twice what the
 * exec itself does (docs/drain-throughput.md).  The child gets a group
 * of its own (so the timeout reaches its children), SIGPIPE back to
 * default (an ignored disposition survives exec; we ignore it), an empty
 * signal mask, and the pipes as stdin, stdout and stderr.
 */
static int
spawn(const char *command, int in, int out, char **envp, pid_t *pid)
{
	char *argv[] = { "sh", "-c", (char *)(uintptr_t)command, NULL };
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t at;
	sigset_t def, none;
	int rc;

	sigemptyset(&def);
	sigaddset(&def, SIGPIPE);
	sigemptyset(&none);
	if ((rc = posix_spawn_file_actions_init(&fa)) != 0)
		return rc;
	if ((rc = posix_spawnattr_init(&at)) != 0) {
		posix_spawn_file_actions_destroy(&fa);
		return rc;
	}
	if ((rc = posix_spawn_file_actions_adddup2(&fa, in, STDIN_FILENO)) == 0 &&
	    (rc = posix_spawn_file_actions_adddup2(&fa, out, STDOUT_FILENO)) == 0 &&
	    (rc = posix_spawn_file_actions_adddup2(&fa, out, STDERR_FILENO)) == 0 &&
	    (rc = posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP |
	    POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK)) == 0 &&
	    (rc = posix_spawnattr_setpgroup(&at, 0)) == 0 &&
	    (rc = posix_spawnattr_setsigdefault(&at, &def)) == 0 &&
	    (rc = posix_spawnattr_setsigmask(&at, &none)) == 0)
		rc = posix_spawn(pid, "/bin/sh", &fa, &at, argv, envp);
	posix_spawnattr_destroy(&at);
	posix_spawn_file_actions_destroy(&fa);
	return rc;
}

struct handler_job *
handler_start(const char *command, const void *input, size_t input_len,
    const struct handler_env *env, size_t nenv, int64_t timeout_ns,
    struct buf *err)
{
	int inpipe[2] = { -1, -1 }, outpipe[2] = { -1, -1 };
	struct handler_job *j;
	char **envp = NULL;
	size_t nown = 0;
	int rc;

	if ((j = calloc(1, sizeof *j)) == NULL ||
	    (envp = make_env(env, nenv, &nown)) == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "out of memory");
		free(j);
		return NULL;
	}
	if (pipe2(inpipe, O_CLOEXEC) == -1 || pipe2(outpipe, O_CLOEXEC) == -1 ||
	    above_stdio(&inpipe[0]) == -1 || above_stdio(&outpipe[1]) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "pipe: %s", strerror(errno));
		goto fail;
	}
	j->start = util_mono_ns();
	if ((rc = spawn(command, inpipe[0], outpipe[1], envp, &j->pid)) != 0) {
		buf_reset(err);
		(void)buf_printf(err, "spawn /bin/sh: %s", strerror(rc));
		goto fail;
	}
	/* Killed with us if we are killed (drain/guard.h); without a guard the
	 * handler still runs, as it always could. */
	if (guard_watch(j->pid) == -1 && !guard_warned) {
		guard_warned = 1;
		log_msg("handler: no guard (%s): a handler outlives a drainer "
		    "killed with SIGKILL", strerror(errno));
	}
	free_env(envp, nown);
	close(inpipe[0]);
	close(outpipe[1]);
	j->in = inpipe[1];
	j->out = outpipe[0];
	fcntl(j->in, F_SETFL, O_NONBLOCK);
	fcntl(j->out, F_SETFL, O_NONBLOCK);
	if (input_len == 0) {
		close(j->in);
		j->in = -1;
	}
	j->input = input;
	j->input_len = input_len;
	j->timeout_ns = timeout_ns;
	j->kill_at = -1;
	/* A pidfd becomes readable when the shell exits: the wait wakes at
	 * once instead of looking in steps (Linux 5.3). */
	j->pidfd = pidfd_open(j->pid, 0);
	return j;
fail:
	for (int i = 0; i < 2; i++) {
		if (inpipe[i] != -1)
			close(inpipe[i]);
		if (outpipe[i] != -1)
			close(outpipe[i]);
	}
	free_env(envp, nown);
	free(j);
	return NULL;
}

long
handler_job_pid(const struct handler_job *j)
{
	return (long)j->pid;
}

/* The kill schedule: past the timeout SIGTERM to the group, then SIGKILL
 * every grace until the shell is reaped. */
static void
job_timers(struct handler_job *j, int64_t now)
{
	if (j->reaped)
		return;
	if (j->kill_at < 0 && now - j->start >= j->timeout_ns) {
		j->r.timed_out = 1;
		kill(-j->pid, SIGTERM);
		j->kill_at = now + HANDLER_KILL_GRACE_NS;
	} else if (j->kill_at >= 0 && now >= j->kill_at) {
		kill(-j->pid, SIGKILL);
		j->kill_at = now + HANDLER_KILL_GRACE_NS;
	}
}

static void
job_close_out(struct handler_job *j)
{
	close(j->out);
	j->out = -1;
}

/* Read what is there (a bounded number of chunks: a fast writer must not
 * keep the other jobs waiting). */
static void
job_read(struct handler_job *j, int64_t now)
{
	char chunk[16384];

	for (int i = 0; i < 16 && j->out != -1; i++) {
		ssize_t n = read(j->out, chunk, sizeof chunk);
		if (n > 0) {
			keep_tail(&j->r, chunk, (size_t)n);
			j->last_read = now;
			continue;
		}
		if (n == 0 || (errno != EAGAIN && errno != EINTR))
			job_close_out(j);
		break;
	}
}

static void
job_write(struct handler_job *j)
{
	ssize_t n = write(j->in, j->input + j->written,
	    j->input_len - j->written);

	if (n > 0)
		j->written += (size_t)n;
	/* EPIPE: the handler did not read it all; not an error. */
	if ((n == -1 && errno != EAGAIN && errno != EINTR) ||
	    j->written == j->input_len) {
		close(j->in);
		j->in = -1;
	}
}

/* 1 when the shell has exited, leaving it unreaped (a zombie). */
static int
leader_exited(pid_t pid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) ==
	    0 && si.si_pid == pid;
}

/*
 * One step of job j with its poll results (p[0] output, p[1] stdin,
 * p[2] pidfd; first: before any poll).  Returns 1 once it finished.
 */
static int
job_step(struct handler_job *j, const struct pollfd *p, int first,
    int64_t now)
{
	/* The verdict is the handler's own: a shell that has already exited
	 * is reaped before its deadline is judged.  The drainer may have been
	 * away past the deadline -- stopped, swapped out, blocked in a store
	 * call -- while the handler ended by itself; that is its exit status,
	 * never "timed out" (docs/jobs.md "Looking after running handlers"). */
	int judging = !j->reaped && j->kill_at < 0 &&
	    now - j->start >= j->timeout_ns;

	if (!j->reaped && (first || judging || j->pidfd == -1 ||
	    (p[2].revents & (POLLIN | POLLHUP | POLLERR))) &&
	    leader_exited(j->pid)) {
		/* Stray processes of the group: end them (drain/handler.h); then
		 * off the guard's list.  Both while the shell is a zombie, so
		 * its pid -- the group's number -- is not yet free for reuse. */
		kill(-j->pid, SIGKILL);
		guard_forget(j->pid);
		(void)waitpid(j->pid, &j->status, 0);
		j->reaped = 1;
		j->reaped_at = now;
	}
	job_timers(j, now);
	if (j->out != -1 && (j->reaped || (p[0].revents & (POLLIN | POLLHUP |
	    POLLERR))))
		job_read(j, now);
	/* The shell is gone: what is still pending gets QUIET_NS of silence,
	 * and a process that left the group (setsid) and keeps writing gets
	 * HANDLER_OUTPUT_GRACE_NS in all; then the pipe is closed. */
	if (j->reaped && j->out != -1 && (now - (j->last_read > j->reaped_at ?
	    j->last_read : j->reaped_at) >= QUIET_NS ||
	    now - j->reaped_at >= HANDLER_OUTPUT_GRACE_NS))
		job_close_out(j);
	/* stdin is fed while the shell lives, even after it closed its
	 * output (a handler may log elsewhere, then read). */
	if (j->in != -1 && !j->reaped && (first ||
	    (p[1].revents & (POLLOUT | POLLERR | POLLHUP))))
		job_write(j);
	if (j->in != -1 && j->reaped) {
		close(j->in);
		j->in = -1;
	}
	return j->reaped && j->out == -1;
}

/* The earliest moment job j needs serving without a poll event, or -1. */
static int64_t
job_due(const struct handler_job *j, int64_t now)
{
	int64_t due = -1, t;

	if (!j->reaped) {
		due = j->kill_at >= 0 ? j->kill_at : j->start + j->timeout_ns;
		if (j->pidfd == -1 && (t = now + NO_PIDFD_STEP_NS) < due)
			due = t;
	} else if (j->out != -1) {
		due = (j->last_read > j->reaped_at ? j->last_read :
		    j->reaped_at) + QUIET_NS;
		if ((t = j->reaped_at + HANDLER_OUTPUT_GRACE_NS) < due)
			due = t;
	}
	return due;
}

/* Fill *r from the finished job and free it. */
static void
job_finish(struct handler_job *j, struct handler_result *r, int64_t now)
{
	j->r.elapsed_ns = now - j->start;
	if (WIFEXITED(j->status)) {
		j->r.exited = 1;
		j->r.status = WEXITSTATUS(j->status);
	} else if (WIFSIGNALED(j->status)) {
		j->r.signal = WTERMSIG(j->status);
	}
	if (j->r.timed_out)
		snprintf(j->r.error, sizeof j->r.error, "timed out after %lld s",
		    (long long)(j->timeout_ns / 1000000000));
	else if (j->r.exited && j->r.status == 127)
		snprintf(j->r.error, sizeof j->r.error,
		    "exit 127 (command not found?)");
	else if (j->r.exited && j->r.status != 0)
		snprintf(j->r.error, sizeof j->r.error, "exit %d", j->r.status);
	else if (!j->r.exited)
		snprintf(j->r.error, sizeof j->r.error, "killed by signal %d",
		    j->r.signal);
	memcpy(r, &j->r, sizeof *r);
	if (j->pidfd != -1)
		close(j->pidfd);
	if (j->in != -1)
		close(j->in);
	if (j->out != -1)
		close(j->out);
	free(j);
}

/* Step every job with its poll results in pfd (first: before any poll,
 * when there are none), clearing them; stop at the first that finished:
 * its result to *r, freed, jobs[i] NULL, i returned.  -1: none did. */
static int
serve(struct handler_job **jobs, size_t n, struct pollfd *pfd, int first,
    struct handler_result *r)
{
	int64_t now = util_mono_ns();
	size_t i, k;

	if (n > HANDLER_JOBS_MAX)
		n = HANDLER_JOBS_MAX;
	for (i = 0; i < n; i++) {
		struct handler_job *j = jobs[i];
		int done;

		if (j == NULL)
			continue;
		done = job_step(j, &pfd[HANDLER_POLLFDS * i], first, now);
		/* Served: a second call (the caller's loop after one job
		 * finished) must not act on these events again. */
		for (k = 0; k < HANDLER_POLLFDS; k++)
			pfd[HANDLER_POLLFDS * i + k].revents = 0;
		if (done) {
			job_finish(j, r, now);
			jobs[i] = NULL;
			return (int)i;
		}
	}
	return -1;
}

int
handler_poll_fds(struct handler_job **jobs, size_t n, struct pollfd *pfd,
    int64_t *due)
{
	int64_t now = util_mono_ns(), t;
	size_t i;
	int live = 0;

	if (n > HANDLER_JOBS_MAX)
		n = HANDLER_JOBS_MAX;
	*due = -1;
	for (i = 0; i < n; i++) {
		struct handler_job *j = jobs[i];
		struct pollfd *p = &pfd[HANDLER_POLLFDS * i];

		if (j == NULL) {	/* -1: poll skips it */
			p[0] = p[1] = p[2] = (struct pollfd){ -1, 0, 0 };
			continue;
		}
		live++;
		p[0] = (struct pollfd){ j->out, POLLIN, 0 };
		p[1] = (struct pollfd){ j->in, POLLOUT, 0 };
		p[2] = (struct pollfd){ j->reaped ? -1 : j->pidfd, POLLIN, 0 };
		if ((t = job_due(j, now)) >= 0 && (*due < 0 || t < *due))
			*due = t;
	}
	return live;
}

int
handler_poll_serve(struct handler_job **jobs, size_t n, struct pollfd *pfd,
    struct handler_result *r)
{
	return serve(jobs, n, pfd, 0, r);
}

int
handler_wait_any(struct handler_job **jobs, size_t n, int64_t wait_ns,
    struct handler_result *r)
{
	struct pollfd pfd[HANDLER_POLLFDS * HANDLER_JOBS_MAX];
	int64_t deadline = wait_ns < 0 ? -1 : util_mono_ns() + wait_ns;
	int first = 1, polled = 0, i;
	size_t k;

	if (n > HANDLER_JOBS_MAX)
		n = HANDLER_JOBS_MAX;
	for (k = 0; k < HANDLER_POLLFDS * n; k++)
		pfd[k] = (struct pollfd){ -1, 0, 0 };
	for (;;) {
		int64_t now, due;
		int ms;

		if ((i = serve(jobs, n, pfd, first, r)) >= 0)
			return i;
		first = 0;
		if (handler_poll_fds(jobs, n, pfd, &due) == 0)
			return -1;
		now = util_mono_ns();
		/* Polled once at least: a wait of 0 still reads what the
		 * pipes hold and reaps what ended. */
		if (polled && deadline >= 0 && now >= deadline)
			return -1;
		if (deadline >= 0 && (due < 0 || deadline < due))
			due = deadline;
		/* Round up: waking a little late beats spinning early. */
		ms = due < 0 ? -1 : due <= now ? 0 :
		    (int)((due - now + 999999) / 1000000 > 60000 ? 60000 :
		    (due - now + 999999) / 1000000);
		polled = 1;
		if (poll(pfd, (nfds_t)(HANDLER_POLLFDS * n), ms) == -1) {
			if (errno == EINTR)
				return -1;
			/* Cannot happen with valid arguments; do not spin. */
			usleep(1000);
			for (k = 0; k < HANDLER_POLLFDS * n; k++)
				pfd[k].revents = 0;
		}
	}
}

int
handler_run(const char *command, const void *input, size_t input_len,
    const struct handler_env *env, size_t nenv, int64_t timeout_ns,
    struct handler_result *r, struct buf *err)
{
	struct handler_job *j;

	memset(r, 0, sizeof *r);
	if ((j = handler_start(command, input, input_len, env, nenv,
	    timeout_ns, err)) == NULL)
		return -1;
	while (handler_wait_any(&j, 1, -1, r) != 0)
		;	/* a signal: the job goes on */
	return 0;
}

int
handler_ok(const struct handler_result *r)
{
	return r->exited && r->status == 0 && !r->timed_out;
}
