/*
 * bulk: `requeue` and `forget` (docs/DESIGN.md "The drainer"), by one id or by
 * filters, with the dry run's count first.  Moved out of webhook-drain.c
 * so the CLI only parses and prints.
 */
#ifndef WEBHOOK_BULK_H
#define WEBHOOK_BULK_H

#include <stdint.h>
#include <stdio.h>

#include "lib/program/config.h"
#include "lib/store/inbox.h"
#include "lib/common/util.h"

enum bulk_status {
	BULK_DONE,	/* counted (act = 0) or acted: *n, *stale */
	BULK_NONE,	/* nothing matches: nothing to do */
	BULK_FAILED	/* the inbox failed: err says why */
};

/*
 * Count the events f matches in c->database (and, for requeue, how many
 * are older than what was done for their object), then with act requeue
 * (due now, fresh budget) or forget them; *n is what was counted, or
 * changed when act.
 */
enum bulk_status bulk_apply(const struct config *c, const struct inbox_filter *f,
	    int requeue, int act, int64_t *n, int64_t *stale, struct buf *err)
	    __attribute__((warn_unused_result));

/* The sentence for a person: "would requeue 3 events ...; run again with
 * --yes", "requeued 3 events", "forgot 1 event; a replay is ...". */
void	bulk_print(FILE *f, int requeue, int acted, int64_t n, int64_t stale);

#endif
