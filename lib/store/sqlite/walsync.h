/*
 * walsync: one WAL sync shared by every receiver process (docs/durability.md).
 *
 * Group commit inside one process (receive/committer.h) batches the requests a
 * process holds; but a web server runs several FastCGI processes, each
 * committing its own small batches, and each batch then paid its own
 * fdatasync — on this project's VM about 115 µs of CPU each, more than
 * everything else a small batch costs (docs/durability.md).
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

#include "lib/common/util.h"

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

/* The same for a `database` path that is already real (realpath(3), as
 * util_path_resolve gives for an existing file): saves a plain-CGI
 * request the path's readlink calls.  A path that is not real still
 * works, but its processes may not share the file with others'. */
int	walsync_open_real(const char *database, struct walsync **out,
	    struct buf *err) __attribute__((warn_unused_result));

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
 * Checkpoints: one connection at a time, and never one that starts on a
 * WAL whose frames were all copied back already.
 *
 * Why: SQLite up to 3.51.2 (Debian 12 ships 3.40.1) has a data race that
 * loses committed transactions (https://sqlite.org/wal.html#walresetbug;
 * SQLite's test/walrestart.test): a checkpoint completes; another starts
 * while every frame is copied back; before it reads how far the copy got,
 * a writer resets the WAL (a writer does so when it finds every frame
 * copied back) and commits; the second checkpoint records a wrong position
 * in the WAL index, and a later checkpoint skips frames of the new WAL,
 * which the next reset then throws away.  A writer can only reset a WAL
 * that is entirely copied back, and only a checkpoint copies frames back.
 * So a checkpoint that starts after a commit which itself began after the
 * previous checkpoint ended cannot meet a reset: that commit's frames are
 * still to copy, and nothing but a checkpoint (there is one at a time)
 * can copy them.  The shared page keeps that rule across processes:
 *
 *   ckpt_gen     bumped when a checkpoint starts (odd) and again when it
 *                ends (even); odd with the role free means its
 *                connection died mid-turn: the next turn asker ends it
 *                (bumps it) and takes no turn;
 *   written_gen  each connection reads ckpt_gen when a commit begins
 *                (SQLite's commit hook: it holds the write lock, no frame
 *                of the commit is visible yet) and, once the commit wrote
 *                frames (the WAL hook), raises written_gen to that + 1.
 *
 * A checkpoint may start only while written_gen > ckpt_gen: a commit that
 * began after the last checkpoint ended has written frames.  The WAL's
 * size after the latest commit and the last checkpoint's start and mode
 * are kept beside them, so whichever process is writing can take the next
 * turn (no process holds the role between turns: an idle one holding it
 * would leave the WAL to grow).
 *
 * Every program that writes the inbox through lib/store/sqlite/ takes part.  A
 * foreign writer (the sqlite3 shell) does not: its commits do not open
 * the gate, and its own auto-checkpoints are outside the rule.
 */
#define WALSYNC_PASSIVE	1
#define WALSYNC_RESTART	2

struct walsync_turn {
	int		open;		/* written_gen > ckpt_gen */
	uint64_t	frames;		/* WAL frames after the latest commit */
	uint64_t	last_frames;	/* `frames` when the last checkpoint began */
	int		last_mode;	/* its mode; 0: none yet */
};

/*
 * The WAL's name (plain CGI, store/inbox.h short_lived).  SQLite syncs the WAL's
 * directory at the first sync of every connection that opened the WAL
 * with O_CREAT, which every connection does: a second sync per CGI
 * request, although the file's directory entry was made durable once,
 * when it was created.  A connection whose commit synced the WAL it opened
 * with O_CREAT (so the directory too) records the file here
 * (walsync_wal_named); a later connection that finds the same file (same
 * device and inode, checked while SQLite holds the database's shared lock,
 * which keeps the WAL from being deleted) opens it without O_CREAT and
 * skips that sync.  Anything else (another file, a torn or zero record)
 * keeps SQLite's sync.
 */
void	walsync_wal_named(struct walsync *ws, uint64_t dev, uint64_t ino);
int	walsync_wal_is_named(struct walsync *ws, uint64_t dev, uint64_t ino);

/* From SQLite's commit hook (the connection holds the write lock): the
 * checkpoint generation this commit begins in.  Never fails. */
uint64_t walsync_write_gen(struct walsync *ws);

/* From the WAL hook, after a commit that wrote frames: `frames` is the
 * WAL's size in frames (SQLite's count), `gen` what walsync_write_gen
 * returned when the commit began.  Never fails. */
void	walsync_written(struct walsync *ws, uint64_t gen, int frames);

/* The shared state without taking anything: to decide cheaply whether a
 * turn is worth asking for (walsync_turn_begin reads it again). */
void	walsync_peek(struct walsync *ws, struct walsync_turn *t);

/*
 * Ask for a checkpoint turn.  Returns 1 with the role held and *t read
 * under it (the gate is open); 0 when another connection is checkpointing,
 * when no commit has begun since the last checkpoint ended, or when the
 * last one's connection died during it (nothing held); -1 when the gate is
 * open but the lock itself failed (then checkpoint anyway: the WAL must
 * not grow without bound; *t is filled).  After 1 or -1: if a checkpoint
 * is to run, walsync_turn_checkpoint right before it; then, always,
 * walsync_turn_end.
 */
int	walsync_turn_begin(struct walsync *ws, struct walsync_turn *t);

/* A checkpoint of this turn starts now.  Never fails. */
void	walsync_turn_checkpoint(struct walsync *ws);

/* End a turn: `mode` 0 when no checkpoint ran; else the WALSYNC_ mode of
 * the one that ran — attempted counts, whatever it returned — with
 * t->frames as it was when the turn began.  Closes the gate (after a
 * checkpoint), gives up the role. */
void	walsync_turn_end(struct walsync *ws, const struct walsync_turn *t,
	    int mode);

/*
 * Stamps: the database file as the last checkpoint of ours left it
 * (docs/durability.md, "An inbox replaced under a running receiver").
 * In WAL mode only a checkpoint writes the database file, and every
 * checkpoint of ours runs in a turn: so after each one, still holding
 * the role and with ckpt_gen odd, the checkpointer records the file's
 * mtime, size, inode and a content probe here.  A connection then asks
 * "is the file as the last checkpoint by anyone of ours left it?" — a
 * file that is not was written by someone else (a backup copied over
 * it, a checkpoint by a foreign program), whichever process looks.
 *
 *   epoch        bumped (once per finding: walsync_epoch_bump from the
 *                value seen) when a connection finds the file not as
 *                stamped; every connection opened before reopens on the
 *                file as it now is (its next look fails).  It also makes
 *                the stamp not current, until a connection of the new
 *                epoch stamps the file again.
 *   stamp        current when written in this epoch for this inode;
 *                written under the role (one writer at a time) inside a
 *                sequence count, read consistently or not at all.
 *   void         a connection whose close let SQLite checkpoint (the last
 *                one: nobody of ours is looking) clears the stamp, and so
 *                does the turn that ends a checkpoint whose connection
 *                died (it may have written the file); without a current
 *                stamp nothing is judged, and the next opener or
 *                checkpoint stamps the file as it finds it.
 */
struct walsync_stamp {
	int64_t		sec, nsec;	/* mtime */
	uint64_t	size;		/* bytes */
	uint64_t	pgno;		/* the page probed, 1-based */
	uint64_t	hash;		/* of page 1's header and page pgno */
};

uint64_t walsync_epoch(struct walsync *ws);
/* Move the epoch from `seen` (what the finder read) to seen + 1; a no-op
 * when another finder moved it already. */
void	walsync_epoch_bump(struct walsync *ws, uint64_t seen);
/* The stamp for the file of inode `ino`: 1 current (*s filled), 0 none
 * (never stamped, voided, another epoch or inode), -1 being written. */
int	walsync_stamp_get(struct walsync *ws, uint64_t ino,
	    struct walsync_stamp *s);
/* Stamp; the caller holds the role (a turn, or walsync_role_try). */
void	walsync_stamp_set(struct walsync *ws, uint64_t epoch, uint64_t ino,
	    const struct walsync_stamp *s);
void	walsync_stamp_void(struct walsync *ws);
/* The checkpointer's role outside a turn, without waiting: 1 held, 0 not
 * (another connection has it, or the lock failed). */
int	walsync_role_try(struct walsync *ws);
void	walsync_role_release(struct walsync *ws);

#endif
