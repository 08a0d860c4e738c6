/*
 * handler: fork, exec /bin/sh -c, feed stdin, capture output, enforce the
 * timeout on the whole process group.  See handler.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "handler.h"

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

static void
child(const char *command, int in, int out, const struct handler_env *env,
    size_t nenv)
{
	struct sigaction sa;
	size_t i;

	/* A group of its own, so the timeout reaches its children too. */
	setpgid(0, 0);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = SIG_DFL;
	sigaction(SIGPIPE, &sa, NULL);	/* ignored dispositions survive exec */
	if (dup2(in, STDIN_FILENO) == -1 || dup2(out, STDOUT_FILENO) == -1 ||
	    dup2(out, STDERR_FILENO) == -1)
		_exit(126);
	if (in != STDIN_FILENO)
		close(in);
	if (out != STDOUT_FILENO && out != STDERR_FILENO)
		close(out);
	for (i = 0; i < nenv; i++) {
		if (env[i].value != NULL)
			setenv(env[i].name, env[i].value, 1);
		else
			unsetenv(env[i].name);
	}
	execl("/bin/sh", "sh", "-c", command, (char *)NULL);
	_exit(127);
}

int
handler_run(const char *command, const void *input, size_t input_len,
    const struct handler_env *env, size_t nenv, int64_t timeout_ns,
    struct handler_result *r, struct buf *err)
{
	int inpipe[2] = { -1, -1 }, outpipe[2] = { -1, -1 };
	int64_t start = util_mono_ns(), kill_at = -1, reaped_at = 0;
	size_t written = 0;
	int status = 0, reaped = 0, rc = -1, pidfd = -1;
	pid_t pid;

	memset(r, 0, sizeof *r);
	if (pipe2(inpipe, O_CLOEXEC) == -1 || pipe2(outpipe, O_CLOEXEC) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "pipe: %s", strerror(errno));
		goto out;
	}
	if ((pid = fork()) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "fork: %s", strerror(errno));
		goto out;
	}
	if (pid == 0)
		child(command, inpipe[0], outpipe[1], env, nenv);
	setpgid(pid, pid);	/* also here: no race with our kill() */
	close(inpipe[0]);
	close(outpipe[1]);
	inpipe[0] = outpipe[1] = -1;
	fcntl(inpipe[1], F_SETFL, O_NONBLOCK);
	fcntl(outpipe[0], F_SETFL, O_NONBLOCK);
	if (input_len == 0) {
		close(inpipe[1]);
		inpipe[1] = -1;
	}
	/* A pidfd becomes readable when the shell exits: the loops below wake
	 * at once instead of polling waitpid (Linux 5.3; without it, short
	 * sleeps). */
	pidfd = pidfd_open(pid, 0);

	/* Until the output ends (every writer gone) or, once the shell has
	 * exited, until nothing more is readable — and while the shell lives,
	 * until stdin is written. */
	while (outpipe[0] != -1 || (inpipe[1] != -1 && !reaped)) {
		struct pollfd pfd[3];
		int nfd = 0, wait_ms = 100;
		int64_t now = util_mono_ns();

		if (!reaped && kill_at < 0 && now - start >= timeout_ns) {
			r->timed_out = 1;
			kill(-pid, SIGTERM);
			kill_at = now + HANDLER_KILL_GRACE_NS;
		}
		if (kill_at >= 0 && now >= kill_at) {
			kill(-pid, SIGKILL);
			kill_at = now + HANDLER_KILL_GRACE_NS;
		}
		if (!reaped && waitpid(pid, &status, WNOHANG) == pid) {
			reaped = 1;
			reaped_at = now;
			/* Stray processes of the group: end them (handler.h). */
			kill(-pid, SIGKILL);
		}
		/* outpipe[0] is -1 once the output ended: poll skips it, and
		 * stdin is still fed (a handler may close its output first). */
		pfd[nfd].fd = outpipe[0];
		pfd[nfd].revents = 0;
		pfd[nfd++].events = POLLIN;
		pfd[nfd].fd = inpipe[1];	/* -1 once closed: skipped */
		pfd[nfd].revents = 0;
		pfd[nfd++].events = POLLOUT;
		pfd[nfd].fd = reaped ? -1 : pidfd;
		pfd[nfd].revents = 0;
		pfd[nfd++].events = POLLIN;
		if (reaped)
			wait_ms = 10;
		if (poll(pfd, (nfds_t)nfd, wait_ms) == -1 && errno != EINTR)
			break;
		if (pfd[0].revents & (POLLIN | POLLHUP | POLLERR)) {
			char chunk[16384];
			ssize_t n = read(outpipe[0], chunk, sizeof chunk);
			if (n > 0) {
				keep_tail(r, chunk, (size_t)n);
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				close(outpipe[0]);
				outpipe[0] = -1;
			}
		} else if (reaped && outpipe[0] != -1) {
			/* The shell is gone and nothing is pending. */
			close(outpipe[0]);
			outpipe[0] = -1;
		}
		/* A process that left the group (setsid) may keep the output open
		 * and busy forever: once the shell is gone, what it wrote gets
		 * HANDLER_OUTPUT_GRACE_NS, then the pipe is closed. */
		if (reaped && outpipe[0] != -1 &&
		    util_mono_ns() - reaped_at > HANDLER_OUTPUT_GRACE_NS) {
			close(outpipe[0]);
			outpipe[0] = -1;
		}
		if (inpipe[1] != -1 && (pfd[1].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = write(inpipe[1], (const char *)input + written,
			    input_len - written);
			if (n > 0)
				written += (size_t)n;
			/* EPIPE: the handler did not read it all; not an error. */
			if ((n == -1 && errno != EAGAIN && errno != EINTR) ||
			    written == input_len) {
				close(inpipe[1]);
				inpipe[1] = -1;
			}
		}
	}
	if (!reaped) {
		/* Output closed but the shell lives: wait, within the timeout. */
		while (waitpid(pid, &status, WNOHANG) == 0) {
			int64_t now = util_mono_ns();
			if (kill_at < 0 && now - start >= timeout_ns) {
				r->timed_out = 1;
				kill(-pid, SIGTERM);
				kill_at = now + HANDLER_KILL_GRACE_NS;
			} else if (kill_at >= 0 && now >= kill_at) {
				kill(-pid, SIGKILL);
				kill_at = now + HANDLER_KILL_GRACE_NS;
			}
			if (pidfd != -1) {
				struct pollfd p = { pidfd, POLLIN, 0 };
				(void)poll(&p, 1, 100);
			} else {
				usleep(1000);
			}
		}
		kill(-pid, SIGKILL);
	}
	r->elapsed_ns = util_mono_ns() - start;
	if (WIFEXITED(status)) {
		r->exited = 1;
		r->status = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		r->signal = WTERMSIG(status);
	}
	if (r->timed_out)
		snprintf(r->error, sizeof r->error, "timed out after %lld s",
		    (long long)(timeout_ns / 1000000000));
	else if (r->exited && r->status == 127)
		snprintf(r->error, sizeof r->error, "exit 127 (command not found?)");
	else if (r->exited && r->status != 0)
		snprintf(r->error, sizeof r->error, "exit %d", r->status);
	else if (!r->exited)
		snprintf(r->error, sizeof r->error, "killed by signal %d", r->signal);
	rc = 0;
out:
	if (pidfd != -1)
		close(pidfd);
	if (inpipe[0] != -1)
		close(inpipe[0]);
	if (inpipe[1] != -1)
		close(inpipe[1]);
	if (outpipe[0] != -1)
		close(outpipe[0]);
	if (outpipe[1] != -1)
		close(outpipe[1]);
	return rc;
}

int
handler_ok(const struct handler_result *r)
{
	return r->exited && r->status == 0 && !r->timed_out;
}
