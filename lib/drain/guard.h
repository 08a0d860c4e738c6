/*
 * guard: a handler does not outlive its drainer.
 *
 * The drainer enforces handler_timeout itself (lib/drain/handler.c).  A drainer
 * that is SIGKILLed (kill -9, the OOM killer, a host's watchdog) cannot:
 * its handler runs on with no deadline, beside the event's next hand-out
 * once the PostgreSQL lease expired (docs/DESIGN.md "Per-object order
 * under failure" promises never two hand-outs of one event at once), and
 * on SQLite holding the inherited
 * run lock for as long as it hangs, so that no run drains anything.
 *
 * The guard is a small process forked once per drainer process, at its
 * first handler.  It holds the read end of a pipe whose write end only the
 * drainer holds, and the list of handler process groups the drainer says
 * are running.  When the pipe reads end of file -- the drainer is gone,
 * however it went -- the guard SIGKILLs each group still on the list and
 * exits.  It costs one fork per run and two 8-byte writes per hand-out
 * (no exec, no thread, no signal handler).
 *
 * It runs in a process group of its own and is named "webhook-guard":
 * `kill -9 -PGID` of the drainer's group and `pkill -9 webhook-drain`
 * leave it to do its work.  What it cannot cover: a handler process that
 * left its group (setsid, a daemon; drain/handler.h says such a process is not
 * waited for either), the guard itself killed with the drainer (a
 * cgroup's kill, which takes the handlers too; `kill -9` of both by pid),
 * and the microseconds between a spawn and its guard_watch.
 *
 * One thread: call these from the thread that starts and reaps handlers,
 * in a process that ignores SIGPIPE (webhook-drain does: a guard killed
 * by hand is then an EPIPE, and a new guard is started).
 * A forked child of the drainer (posix_spawn's or check's) starts a guard
 * of its own on its first guard_watch; it never writes to its parent's.
 */
#ifndef WEBHOOK_GUARD_H
#define WEBHOOK_GUARD_H

#include <sys/types.h>

/* Groups the guard keeps at once; run --jobs needs HANDLER_JOBS_MAX. */
#define GUARD_GROUPS_MAX	256

/*
 * Put process group `pgid` (a handler's, its leader's pid) on the list,
 * starting the guard first if this process has none.  Returns 0, or -1
 * with errno set when there is no guard (fork or pipe failed, the guard
 * died, the list is full): the handler then runs unguarded, as before.
 */
int	guard_watch(pid_t pgid);

/*
 * Take `pgid` off the list.  Call it while the group's leader is still
 * unreaped (a zombie): until it is reaped its pid cannot be reused, so the
 * guard never kills a stranger's group that took the number.
 */
void	guard_forget(pid_t pgid);

/* The guard's pid, or -1 when this process has none (for tests). */
pid_t	guard_pid(void);

#endif
