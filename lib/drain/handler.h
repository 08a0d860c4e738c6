/*
 * handler: run the user's command for one event (docs/DESIGN.md "Handler").
 *
 * `/bin/sh -c COMMAND` in a process group of its own, the event's body on
 * stdin, WEBHOOK_* in the environment, stdout and stderr captured together
 * (the tail is kept, the rest drained), killed with its whole group when
 * it passes the timeout.  Stdin is written while output is read (poll), so
 * bodies larger than a pipe buffer cannot deadlock, and a handler that exits
 * without reading stdin is no error (EPIPE is expected; SIGPIPE is ignored
 * here and reset to default in the child).
 */
#ifndef WEBHOOK_HANDLER_H
#define WEBHOOK_HANDLER_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/common/util.h"

/* Bytes of output kept (the tail): enough for a stack trace's end. */
#define HANDLER_OUTPUT_KEEP	4096
/* After the shell exited: how long its output may still arrive. */
#define HANDLER_OUTPUT_GRACE_NS	(200LL * 1000000)
/* After the timeout: SIGTERM to the group, then SIGKILL this much later. */
#define HANDLER_KILL_GRACE_NS	(2LL * 1000000000)
/* Jobs one handler_wait_any serves at most (run --jobs: 1..64). */
#define HANDLER_JOBS_MAX	64

struct handler_env {
	const char	*name;	/* e.g. "WEBHOOK_ID" */
	const char	*value;	/* NULL: the variable is removed */
};

struct handler_result {
	int	 exited;	/* 1: exited with `status`; 0: killed by `signal` */
	int	 status;
	int	 signal;
	int	 timed_out;	/* killed by us past the timeout; never set
				 * for a handler that had exited by itself
				 * when its deadline was judged */
	int64_t	 elapsed_ns;	/* start to when its end was seen */
	char	 output[HANDLER_OUTPUT_KEEP];	/* tail of stdout+stderr */
	size_t	 output_len;
	int	 output_cut;	/* more was written than kept */
	char	 error[160];	/* short reason when not exit 0: "exit 3",
				 * "killed by signal 9", "timed out after 60 s" */
};

/*
 * Run `command` with `input` (input_len bytes) on stdin and the variables in
 * env[0..nenv) added to our environment.  Waits at most timeout_ns, then
 * kills the process group (SIGTERM, then SIGKILL after the grace).  When the
 * shell exits, any processes it left in its group are killed too: a handler
 * runs to completion, and stray children would hold the run lock.  If
 * this process dies (SIGKILL included), its guard kills every group still
 * running (drain/guard.h).  A process that escaped the group (setsid) is not
 * waited for: its output is read for HANDLER_OUTPUT_GRACE_NS after the
 * shell exits, then closed.
 * Returns 0 with *r filled (success means r->exited && r->status == 0), or
 * -1 when the handler could not be started (err says why).
 * handler_start + handler_wait_any on that one job.
 */
int	handler_run(const char *command, const void *input, size_t input_len,
	    const struct handler_env *env, size_t nenv, int64_t timeout_ns,
	    struct handler_result *r, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Several handlers at once (`run --jobs N`): start them without waiting,
 * then wait for whichever finishes first.  Everything handler_run promises
 * holds for each job (stdin fed while output is read, the output tail,
 * the timeout and kill schedule on its group, strays killed) — as long as
 * the caller keeps calling handler_wait_any: a job's timeout, kills and
 * pipes are served only inside that call.  No threads, no signal
 * handlers: one poll over every job's pipes and pidfd.
 */
struct handler_job;

/*
 * Start `command` as handler_run does and return at once: a job owned by
 * the caller until handler_wait_any reports it finished (then freed).
 * `input` is NOT copied: it must stay valid and unchanged until then.
 * The timeout counts from now.  Returns the job, or NULL when the handler
 * could not be started (err says why).
 */
struct handler_job *handler_start(const char *command, const void *input,
	    size_t input_len, const struct handler_env *env, size_t nenv,
	    int64_t timeout_ns, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * Serve jobs[0..n) (n ≤ HANDLER_JOBS_MAX; NULL entries are skipped) for at most wait_ns
 * (negative: until one finishes; 0: what is there now — the pipes are
 * read, the ended reaped, the timeouts enforced — without waiting) and
 * stop at the first that finished:
 * its result goes to *r, the job is freed, jobs[i] set to NULL, and i is
 * returned.  -1 when none finished within wait_ns, when there is no job,
 * or when a signal interrupted the wait (the caller checks its flags and
 * calls again: the jobs go on).
 */
int	handler_wait_any(struct handler_job **jobs, size_t n, int64_t wait_ns,
	    struct handler_result *r);

/*
 * The same service for a caller that must wait on descriptors of its own
 * as well (a drain run's refetch: the API's sockets) and so owns the
 * poll.  pfd has room for HANDLER_POLLFDS × n entries; job i's are at
 * HANDLER_POLLFDS × i (fd -1 where there is nothing to watch, which poll
 * skips).
 *
 * handler_poll_fds fills them, sets *due to the monotonic instant (ns)
 * by which handler_poll_serve must run even if no descriptor stirs (a
 * timeout, a kill, the output's grace; -1: none) and returns how many
 * jobs are live.  After the poll, handler_poll_serve does what
 * handler_wait_any does with its events (and the timeouts due), without
 * waiting: the first job that finished goes to *r, is freed, jobs[i] set
 * NULL, and i is returned; -1 when none did.  Call it again until -1:
 * the events it served are cleared, so no job is served twice for one.
 */
#define HANDLER_POLLFDS	3
int	handler_poll_fds(struct handler_job **jobs, size_t n,
	    struct pollfd *pfd, int64_t *due);
int	handler_poll_serve(struct handler_job **jobs, size_t n,
	    struct pollfd *pfd, struct handler_result *r);

/* The process id of a running job's shell (its group's id too). */
long	handler_job_pid(const struct handler_job *j);

/* 1 when the result counts as success. */
int	handler_ok(const struct handler_result *r);

#endif
