/*
 * runlock: one `webhook-drain run` per inbox at a time (docs/DESIGN.md "The
 * drainer": an overlapping run exits 0 quietly and touches nothing).
 *
 * An flock(2) on "<database>.drain-lock".  The descriptor is deliberately
 * inherited by the handler's processes: if the drainer is killed while a
 * handler runs, the handler holds the lock until the drainer's guard has
 * killed it (drain/guard.h), so the next run cannot hand the same event out
 * while it still runs.  The kernel drops the lock when the last holder
 * exits; nothing is left to clean up.
 */
#ifndef WEBHOOK_RUNLOCK_H
#define WEBHOOK_RUNLOCK_H

#include "lib/common/util.h"

/*
 * Try to take the lock for `database` without waiting.  Returns the lock's
 * descriptor (≥ 0, keep it open for the run; runlock_release closes it),
 * -2 when another run holds it, or -1 on an error described in err.
 * The file is created with mode 0660 (the group may run the drainer too).
 */
int	runlock_try(const char *database, struct buf *err)
	    __attribute__((warn_unused_result));
void	runlock_release(int fd);

#endif
