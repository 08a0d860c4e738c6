/*
 * runrec: one drainer run as history (docs/report.md): the run's events,
 * told through drain_hooks, become counters and histograms in 5-minute
 * buckets (store/history.h), and the run itself a row of `runs`;
 * runrec_save writes both in one transaction after the run.  Kept apart
 * from lib/drain/drain.c so that the run's logic does not change for it.
 *
 * What is counted (names as stored in `history`):
 *   handled   label ''          handler exited 0
 *   failed    label error class a failed attempt (retry or dead)
 *   retried   label ''          a failed attempt that will be retried
 *   dead      label ''          a failed attempt that made it dead
 *   stale     label ''          marked stale, not handed out
 *   type_handled, type_failed   label event type ('' when none)
 *   wait      histogram, ms: received → first hand-out (attempt 1 only)
 *   handler   histogram, ms, label event type: the handler's run time
 *   run       label ok, failures or error: one per run (runrec_finish)
 *   run_budget_hit              a run stopped by --max-time
 * `received` is counted by the inbox at admission (store/sqlite/history.c).
 * A run killed before runrec_save loses its increments (at least the run
 * row then is missing too, so the strip of runs shows the gap).
 */
#ifndef WEBHOOK_RUNREC_H
#define WEBHOOK_RUNREC_H

#include <stdint.h>

#include "lib/program/config.h"
#include "lib/drain/drain.h"
#include "lib/store/history.h"
#include "lib/store/inbox.h"

struct runrec {
	struct history_batch	b;
	struct inbox_run_record	run;
};

void	runrec_start(struct runrec *r, int64_t now_ns);
/* One event's outcome (from drain_hooks.event), at now_ns. */
void	runrec_event(struct runrec *r, const struct drain_event *ev,
	    int64_t now_ns);
/* The run is over: its totals from res. */
void	runrec_finish(struct runrec *r, const struct drain_result *res,
	    int64_t now_ns);
/* Write it to c->database.  0, or -1 with the reason in err. */
int	runrec_save(struct runrec *r, const struct config *c, struct buf *err)
	    __attribute__((warn_unused_result));
void	runrec_free(struct runrec *r);

#endif
