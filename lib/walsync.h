/*
 * walsync: one WAL sync shared by every receiver process (issue 5).
 *
 * Group commit inside one process (committer.h) batches the requests a
 * process holds; but a web server runs several FastCGI processes, each
 * committing its own small batches, and each batch then paid its own
 * fdatasync — on this project's VM about 115 µs of CPU each, more than
 * everything else a small batch costs (bench/RESULTS.md, "Issue 5").
 *
 * A sync covers every byte written to the file before it started,
 * whichever process wrote it.  So the processes share a small counter
 * file beside the database (its real path + ".wal-sync", 4 KiB, mapped
 * shared):
 *
 *   committed  tickets handed out.  A process takes the next ticket right
 *              after its COMMIT returned, i.e. after its WAL frames were
 *              written.
 *   synced     every ticket up to it is durable.  A syncer reads
 *              `committed` BEFORE its fdatasync starts and publishes that
 *              value after the sync returned.
 *
 * A ticket ≤ synced was therefore taken before a sync that started later:
 * that sync covered its frames.  One process syncs at a time (an OFD lock
 * on the file, released by the kernel if the process dies); the others
 * wait on a futex in the mapping for its end, and the next one syncs for
 * everyone who committed meanwhile.  Nobody waits for a sync that has run
 * longer than WALSYNC_WAIT_MS: it syncs by itself instead, so a stopped or
 * hung process can slow the others but never stall them.
 *
 * The counters only grow, and `synced` is only ever set to a value
 * `committed` had: a stale or zeroed file (a reboot, a deleted file) can
 * make a process sync once more than needed, never less.
 */
#ifndef WEBHOOK_WALSYNC_H
#define WEBHOOK_WALSYNC_H

#include <stdint.h>

#include "util.h"

/* Oldest sync of another process worth waiting for, ms: a healthy disk
 * syncs in well under this (≈ 0.1 ms on this project's VM, tens of ms on a
 * busy spinning disk). */
#define WALSYNC_WAIT_MS	200

struct walsync;

/*
 * Open (creating it 0660 if needed) the counter file of the database at
 * `database` (the same path SQLite opened; the real path names the
 * file, so every spelling of the path shares it).  Returns 0 and *out
 * (free with walsync_close), or -1 with the reason in err — callers then
 * sync by themselves, which is always correct.
 */
int	walsync_open(const char *database, struct walsync **out, struct buf *err)
	    __attribute__((warn_unused_result));

/* Unmap and close.  Accepts NULL. */
void	walsync_close(struct walsync *ws);

/*
 * Make the caller's commit durable.  Call once per COMMIT, after it
 * returned and before answering anyone it covers.  `sync` makes the WAL
 * durable (fdatasync of the WAL file) and returns 0 or an error code,
 * which is passed on; `live` tells whether the caller's WAL file is still
 * the one at the database's path (a sync of an unlinked WAL covers nobody
 * else), 1 or 0.  Returns 0 once a sync that started after the commit
 * has completed (ours or another process's), else the error of our own
 * sync.  Thread-safe within a process only through the caller: one call
 * at a time per struct walsync (the committer's leader).
 */
int	walsync_commit(struct walsync *ws, int (*sync)(void *), int (*live)(void *),
	    void *arg);

/*
 * The checkpointer's role, one receiver process at a time: an OFD lock on
 * the file's second byte, taken here and kept until walsync_close (or the
 * process's death, when the kernel drops it and the next caller takes
 * it).  Returns 1 when this handle holds the role, 0 when another does,
 * -1 on error (then checkpoint anyway: the WAL must not grow unbounded).
 *
 * Why: SQLite up to 3.51.2 (Debian 12 ships 3.40.1) has a data race that
 * can lose committed transactions when a checkpoint starts right after
 * another connection's checkpoint completed while a third connection
 * resets the WAL (https://sqlite.org/wal.html#walresetbug).  A checkpointer
 * thread in every process made exactly that pattern likely: all of them
 * crossed the same WAL-size threshold at once.  With one checkpointing
 * connection, consecutive checkpoints are INBOX_CHECKPOINT_FRAMES apart.
 */
int	walsync_checkpointer(struct walsync *ws);

#endif
