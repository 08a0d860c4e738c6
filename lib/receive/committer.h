/*
 * committer: group commit for a multi-threaded receiver (docs/durability.md).
 *
 * Request threads hand their verified deliveries to committer_store and
 * wait.  The first thread to find no commit in progress becomes the
 * leader: it takes every delivery queued so far (at most COMMITTER_BATCH),
 * stores them in ONE transaction and ONE sync of the WAL (inbox_store_batch
 * with group commit; the sync itself is shared with the other receiver
 * processes, store/sqlite/walsync.h), records each one's outcome, hands the lead to the
 * first delivery queued meanwhile and wakes exactly the threads of its
 * batch (one semaphore per thread: no broadcast that would wake every
 * waiter to send most back to sleep).  While it commits, new deliveries
 * queue up for the next leader, so the batch grows with the load and a
 * lone request waits for nobody.
 *
 * Beside it runs the store's background upkeep (lib/store/inbox.h,
 * inbox_upkeep_start), told after each of the leader's commits: for a
 * SQLite inbox a checkpointer thread with a connection of its own
 * (lib/store/sqlite/checkpointer.c), so that the WAL stays bounded and no
 * request ever waits for a checkpoint.
 */
#ifndef WEBHOOK_COMMITTER_H
#define WEBHOOK_COMMITTER_H

#include "lib/store/inbox.h"
#include "lib/common/util.h"

/* Most deliveries in one transaction: bounds a leader's work (and so the
 * wait of the requests behind it). */
#define COMMITTER_BATCH	64

struct committer;

/*
 * Open the inbox at `path` (the writer, with group commit) and start the
 * store's upkeep.  Returns INBOX_OK and *out (free with committer_close),
 * or the inbox's status with the reason in err.
 */
enum inbox_status committer_open(const char *path, const struct inbox_options *o,
	    struct committer **out, struct buf *err)
	    __attribute__((warn_unused_result));

/* Stop the upkeep, close the writer.  No committer_store may be
 * running.  Accepts NULL. */
void	committer_close(struct committer *cm);

/*
 * Store one delivery, possibly batched with other threads' (see above).
 * After a batch fails (busy past busy_timeout; an I/O error; the database
 * or its WAL moved or deleted: checked after every commit), the next
 * leader reopens the inbox at its path first.
 * Returns when it is durable: INBOX_OK (new), INBOX_DUPLICATE, or
 * INBOX_BUSY / INBOX_FAILED for the whole batch it was in (reason in err,
 * which must be this thread's own buffer).  Thread-safe.
 */
enum inbox_status committer_store(struct committer *cm,
	    const struct inbox_delivery *d, struct buf *err)
	    __attribute__((warn_unused_result));


#endif
