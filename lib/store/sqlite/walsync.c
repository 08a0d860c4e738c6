/*
 * walsync: one WAL sync shared by every receiver process.  See store/sqlite/walsync.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/store/sqlite/walsync.h"

#define WALSYNC_MAGIC	0x31434e5953574857ULL	/* "WHWSYNC1", little-endian */
#define WALSYNC_SIZE	4096

/* The shared page.  Plain 64-bit words used only through __atomic builtins
 * (lock-free on every platform this runs on: a MAP_SHARED mapping). */
struct shared {
	uint64_t	magic;
	uint64_t	committed;	/* last ticket handed out */
	uint64_t	synced;		/* every ticket ≤ this is durable */
	uint32_t	gen;		/* futex word: bumped after every sync */
	uint32_t	pad;
	int64_t		sync_started;	/* CLOCK_MONOTONIC ns: the current or last
					 * sync's start (the clock is system-wide) */
	/* Checkpoints (store/sqlite/walsync.h, "Checkpoints"); zero in a file made by
	 * an older version, which is a valid state: the gate is closed. */
	uint64_t	ckpt_gen;	/* odd while a checkpoint runs, bumped
					 * again (even) when it ends */
	uint64_t	written_gen;	/* newest (ckpt_gen + 1) of a write that
					 * committed frames */
	uint64_t	wal_frames;	/* WAL size after the latest commit */
	uint64_t	ckpt_frames;	/* wal_frames when the last checkpoint began */
	uint32_t	ckpt_mode;	/* its mode: WALSYNC_PASSIVE / _RESTART */
	uint32_t	pad2;
	/* The WAL file whose directory entry a sync has made durable
	 * (walsync_wal_named); zero in older files: nothing known. */
	uint64_t	named_dev;
	uint64_t	named_ino;
	/* The database file as the last checkpoint of ours left it
	 * (store/sqlite/walsync.h, "Stamps"); zero in older files: no stamp. */
	uint64_t	epoch;		/* bumped when a file not so is found */
	uint64_t	stamp_seq;	/* odd while the stamp is written */
	uint64_t	stamp_epoch;	/* epoch + 1 when stamped; 0: void */
	uint64_t	stamp_ino;
	int64_t		stamp_sec, stamp_nsec;
	uint64_t	stamp_size, stamp_pgno, stamp_hash;
};

struct walsync {
	int		 fd;
	struct shared	*sh;
};

int
walsync_open(const char *database, struct walsync **out, struct buf *err)
{
	char real[PATH_MAX];

	if (realpath(database, real) != NULL)
		database = real;
	return walsync_open_real(database, out, err);
}

int
walsync_open_real(const char *database, struct walsync **out, struct buf *err)
{
	struct walsync *ws = NULL;
	struct buf path;
	struct stat sb;
	uint64_t zero = 0;
	void *map;
	int fd = -1;

	*out = NULL;
	buf_init(&path, 8192);
	if (buf_printf(&path, "%s.wal-sync", database) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: path too long", database);
		goto fail;
	}
	fd = open(path.data, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0660);
	if (fd == -1 || fstat(fd, &sb) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: %s", path.data, strerror(errno));
		goto fail;
	}
	/* Two users may run receivers (FastCGI and plain CGI under suEXEC):
	 * give the group its share whatever the umask.  Fails harmlessly
	 * when another user owns the file.  Only when it lacks it: a chmod
	 * is a journalled inode update, which a plain-CGI request would
	 * otherwise pay every time (docs/cgi.md). */
	if ((sb.st_mode & 0660) != 0660)
		(void)fchmod(fd, 0660);
	/* Every opener makes sure the page exists on disk (new bytes are
	 * zeros, a valid state).  Allocated, not just sized: a sparse page
	 * touched through the mapping on a full disk would kill the process
	 * with SIGBUS instead of failing here.  A file already that large
	 * with that many blocks was allocated by an earlier opener (the
	 * file only ever has this one page); fallocate again would be one
	 * more journalled inode update per plain-CGI request. */
	if ((sb.st_size < WALSYNC_SIZE ||
	    (int64_t)sb.st_blocks * 512 < WALSYNC_SIZE) &&
	    (errno = posix_fallocate(fd, 0, WALSYNC_SIZE)) != 0) {
		buf_reset(err);
		(void)buf_printf(err, "%s: %s", path.data, strerror(errno));
		goto fail;
	}
	map = mmap(NULL, WALSYNC_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		buf_reset(err);
		(void)buf_printf(err, "%s: %s", path.data, strerror(errno));
		goto fail;
	}
	if ((ws = calloc(1, sizeof *ws)) == NULL) {
		munmap(map, WALSYNC_SIZE);
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", path.data);
		goto fail;
	}
	ws->fd = fd;
	ws->sh = map;
	/* A new file gets its magic; anything else that is not ours is left
	 * alone (and not trusted).  Looked at first: a compare-and-swap
	 * writes the page even when it fails, an inode time update. */
	if (__atomic_load_n(&ws->sh->magic, __ATOMIC_SEQ_CST) == 0)
		(void)__atomic_compare_exchange_n(&ws->sh->magic, &zero,
		    WALSYNC_MAGIC, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&ws->sh->magic, __ATOMIC_SEQ_CST) != WALSYNC_MAGIC) {
		buf_reset(err);
		(void)buf_printf(err, "%s: not a wal-sync file (remove it)",
		    path.data);
		walsync_close(ws);
		buf_free(&path);
		return -1;
	}
	buf_free(&path);
	*out = ws;
	return 0;
fail:
	if (fd != -1)
		close(fd);
	buf_free(&path);
	return -1;
}

void
walsync_close(struct walsync *ws)
{
	if (ws == NULL)
		return;
	munmap(ws->sh, WALSYNC_SIZE);
	close(ws->fd);
	free(ws);
}

/* Byte 0 of the file: the syncer's lock; byte 1: the checkpointer's
 * role.  OFD locks: per open file description (so per handle, also
 * between threads), dropped by the kernel when the process dies. */
#define SYNCER_BYTE	0
#define ROLE_BYTE	1

/* Take (F_WRLCK) or give up (F_UNLCK) one of them without waiting.
 * Returns 0 (done), 1 (another handle holds it) or -1. */
static int
byte_lock(struct walsync *ws, off_t byte, short type)
{
	struct flock fl;

	memset(&fl, 0, sizeof fl);
	fl.l_type = type;
	fl.l_whence = SEEK_SET;
	fl.l_start = byte;
	fl.l_len = 1;
	if (fcntl(ws->fd, F_OFD_SETLK, &fl) == 0)
		return 0;
	return errno == EAGAIN || errno == EACCES ? 1 : -1;
}

/*
 * Give up the syncer's lock and wake everyone waiting for it.  Unlock
 * first, then move the generation: a waiter that found the lock held has
 * read the old generation, so it either sleeps on it and is woken here, or
 * sees it moved and tries the lock again.  (The other order let a waiter
 * read the new generation, still find the lock held, and sleep out
 * WALSYNC_WAIT_MS for a wake-up already sent: test_walsync's
 * no_commit_sleeps_past_a_finished_sync.)  Also after a turn that needed
 * no sync: whoever queued behind it must not sleep for one.
 */
static void
syncer_release(struct walsync *ws)
{
	(void)byte_lock(ws, SYNCER_BYTE, F_UNLCK);
	__atomic_add_fetch(&ws->sh->gen, 1, __ATOMIC_SEQ_CST);
	(void)syscall(SYS_futex, &ws->sh->gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

void
walsync_wal_named(struct walsync *ws, uint64_t dev, uint64_t ino)
{
	/* Two words, so a reader could see a torn pair: ino first cleared,
	 * the pair written, ino last.  A torn read compares unequal to any
	 * file and only costs a directory sync. */
	__atomic_store_n(&ws->sh->named_ino, 0, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ws->sh->named_dev, dev, __ATOMIC_SEQ_CST);
	__atomic_store_n(&ws->sh->named_ino, ino, __ATOMIC_SEQ_CST);
}

int
walsync_wal_is_named(struct walsync *ws, uint64_t dev, uint64_t ino)
{
	return ino != 0 &&
	    __atomic_load_n(&ws->sh->named_ino, __ATOMIC_SEQ_CST) == ino &&
	    __atomic_load_n(&ws->sh->named_dev, __ATOMIC_SEQ_CST) == dev;
}

uint64_t
walsync_write_gen(struct walsync *ws)
{
	return __atomic_load_n(&ws->sh->ckpt_gen, __ATOMIC_SEQ_CST);
}

void
walsync_written(struct walsync *ws, uint64_t gen, int frames)
{
	uint64_t seen = __atomic_load_n(&ws->sh->written_gen, __ATOMIC_SEQ_CST);

	/* Counters only grow: a slow writer's older generation must not
	 * hide a newer one's. */
	while (seen < gen + 1 && !__atomic_compare_exchange_n(&ws->sh->written_gen,
	    &seen, gen + 1, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
		;
	__atomic_store_n(&ws->sh->wal_frames, (uint64_t)(frames < 0 ? 0 : frames),
	    __ATOMIC_SEQ_CST);
}

void
walsync_peek(struct walsync *ws, struct walsync_turn *t)
{
	uint64_t gen = __atomic_load_n(&ws->sh->ckpt_gen, __ATOMIC_SEQ_CST);

	t->open = __atomic_load_n(&ws->sh->written_gen, __ATOMIC_SEQ_CST) > gen;
	t->frames = __atomic_load_n(&ws->sh->wal_frames, __ATOMIC_SEQ_CST);
	t->last_frames = __atomic_load_n(&ws->sh->ckpt_frames, __ATOMIC_SEQ_CST);
	t->last_mode = (int)__atomic_load_n(&ws->sh->ckpt_mode, __ATOMIC_SEQ_CST);
}

int
walsync_turn_begin(struct walsync *ws, struct walsync_turn *t)
{
	int rc = byte_lock(ws, ROLE_BYTE, F_WRLCK);

	if (rc == 1)
		return 0;	/* another connection is checkpointing */
	walsync_peek(ws, t);
	if (rc == 0 && (__atomic_load_n(&ws->sh->ckpt_gen, __ATOMIC_SEQ_CST) & 1)) {
		/* A checkpoint began and its connection died (the kernel gave
		 * us its lock): it may have copied every frame back.  It ends
		 * now; commits that begin from here reopen the gate.  It may
		 * have written the database file without stamping it: no stamp
		 * is current until the next checkpoint's (store/sqlite/walsync.h, "Stamps"). */
		__atomic_store_n(&ws->sh->stamp_epoch, 0, __ATOMIC_SEQ_CST);
		__atomic_add_fetch(&ws->sh->ckpt_gen, 1, __ATOMIC_SEQ_CST);
		(void)byte_lock(ws, ROLE_BYTE, F_UNLCK);
		return 0;
	}
	if (!t->open) {
		if (rc == 0)
			(void)byte_lock(ws, ROLE_BYTE, F_UNLCK);
		return 0;
	}
	return rc == 0 ? 1 : -1;
}

void
walsync_turn_checkpoint(struct walsync *ws)
{
	/* Odd while the checkpoint runs: if we die before walsync_turn_end,
	 * the next turn knows (walsync_turn_begin). */
	__atomic_add_fetch(&ws->sh->ckpt_gen, 1, __ATOMIC_SEQ_CST);
}

void
walsync_turn_end(struct walsync *ws, const struct walsync_turn *t, int mode)
{
	if (mode != 0) {
		__atomic_store_n(&ws->sh->ckpt_frames, t->frames, __ATOMIC_SEQ_CST);
		__atomic_store_n(&ws->sh->ckpt_mode, (uint32_t)mode, __ATOMIC_SEQ_CST);
		/* Last: even again, and the gate closed until a commit that
		 * reads this generation writes frames. */
		__atomic_add_fetch(&ws->sh->ckpt_gen, 1, __ATOMIC_SEQ_CST);
	}
	(void)byte_lock(ws, ROLE_BYTE, F_UNLCK);
}

/* Sleep until the sync generation moves past `gen`, or `ms` passed.
 * Returns 0 when it moved (or a spurious wake-up), -1 on timeout. */
static int
wait_gen(struct walsync *ws, uint32_t gen, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	if (syscall(SYS_futex, &ws->sh->gen, FUTEX_WAIT, gen, &ts, NULL, 0) == -1 &&
	    errno == ETIMEDOUT)
		return -1;
	return 0;
}

/*
 * Has a completed sync covered `ticket`?  `synced` is only ever set to a
 * value `committed` had, so synced > committed means the file was damaged
 * or written by something else: then nothing is covered (each process
 * syncs alone) rather than acknowledging unsynced commits.
 */
static int
covered(struct shared *sh, uint64_t ticket)
{
	uint64_t synced = __atomic_load_n(&sh->synced, __ATOMIC_SEQ_CST);

	return synced >= ticket &&
	    synced <= __atomic_load_n(&sh->committed, __ATOMIC_SEQ_CST);
}

int
walsync_commit(struct walsync *ws, int (*sync)(void *), int (*live)(void *),
    void *arg)
{
	struct shared *sh;
	uint64_t ticket, upto, cur;
	int rc, is_live;

	if (ws == NULL)
		return sync(arg);
	sh = ws->sh;
	/* Our frames are written (COMMIT returned): take a ticket. */
	ticket = __atomic_add_fetch(&sh->committed, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		int64_t started, age;
		uint32_t gen;

		if (covered(sh, ticket))
			return 0;
		gen = __atomic_load_n(&sh->gen, __ATOMIC_SEQ_CST);
		if ((rc = byte_lock(ws, SYNCER_BYTE, F_WRLCK)) == 0)
			break;
		if (rc == -1)
			return sync(arg);	/* no lock: sync alone, always right */
		/* Another process is syncing and may cover us — unless its
		 * sync is older than WALSYNC_WAIT_MS (a stopped or stuck
		 * process): then we sync alone at once, every time, instead of
		 * waiting for it again and again. */
		started = __atomic_load_n(&sh->sync_started, __ATOMIC_SEQ_CST);
		age = (util_mono_ns() - started) / 1000000;
		if (age < 0 || age >= WALSYNC_WAIT_MS ||
		    wait_gen(ws, gen, (int)(WALSYNC_WAIT_MS - age)) == -1)
			return sync(arg);
	}
	/* We are the syncer.  The previous one may have covered us. */
	if (covered(sh, ticket)) {
		syncer_release(ws);	/* and wake who queued behind us */
		return 0;
	}
	/* Read before the sync starts: every ticket up to `upto` was taken
	 * after its frames were written, so this sync covers them — if our
	 * WAL is the file they were written to (else it covers only us). */
	__atomic_store_n(&sh->sync_started, util_mono_ns(), __ATOMIC_SEQ_CST);
	upto = __atomic_load_n(&sh->committed, __ATOMIC_SEQ_CST);
	/* After reading `upto`: a commit into a WAL that replaced ours at the
	 * path would have come after the replacement, so this sees it. */
	is_live = live(arg);
	rc = sync(arg);
	/* A counter that went backwards (the file was truncated or replaced
	 * meanwhile) makes `upto` meaningless for it: publish nothing. */
	if (!is_live || __atomic_load_n(&sh->committed, __ATOMIC_SEQ_CST) < upto)
		upto = 0;
	if (rc == 0 && upto > 0) {
		cur = __atomic_load_n(&sh->synced, __ATOMIC_SEQ_CST);
		while (cur < upto && !__atomic_compare_exchange_n(&sh->synced,
		    &cur, upto, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			;
	}
	syncer_release(ws);
	return rc;
}

uint64_t
walsync_epoch(struct walsync *ws)
{
	return __atomic_load_n(&ws->sh->epoch, __ATOMIC_SEQ_CST);
}

void
walsync_epoch_bump(struct walsync *ws, uint64_t seen)
{
	/* From `seen` only: two connections that find the same copy move
	 * the epoch once, so nobody reopens twice for it. */
	(void)__atomic_compare_exchange_n(&ws->sh->epoch, &seen, seen + 1, 0,
	    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

int
walsync_stamp_get(struct walsync *ws, uint64_t ino, struct walsync_stamp *s)
{
	struct shared *sh = ws->sh;
	uint64_t seq = __atomic_load_n(&sh->stamp_seq, __ATOMIC_SEQ_CST), e;

	if (seq & 1)
		return -1;
	e = __atomic_load_n(&sh->stamp_epoch, __ATOMIC_SEQ_CST);
	s->sec = __atomic_load_n(&sh->stamp_sec, __ATOMIC_SEQ_CST);
	s->nsec = __atomic_load_n(&sh->stamp_nsec, __ATOMIC_SEQ_CST);
	s->size = __atomic_load_n(&sh->stamp_size, __ATOMIC_SEQ_CST);
	s->pgno = __atomic_load_n(&sh->stamp_pgno, __ATOMIC_SEQ_CST);
	s->hash = __atomic_load_n(&sh->stamp_hash, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&sh->stamp_ino, __ATOMIC_SEQ_CST) != ino)
		e = 0;
	if (__atomic_load_n(&sh->stamp_seq, __ATOMIC_SEQ_CST) != seq)
		return -1;
	return e != 0 && e == walsync_epoch(ws) + 1;
}

void
walsync_stamp_set(struct walsync *ws, uint64_t epoch, uint64_t ino,
    const struct walsync_stamp *s)
{
	struct shared *sh = ws->sh;

	__atomic_add_fetch(&sh->stamp_seq, 1, __ATOMIC_SEQ_CST);	/* odd */
	__atomic_store_n(&sh->stamp_epoch, epoch + 1, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->stamp_ino, ino, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->stamp_sec, s->sec, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->stamp_nsec, s->nsec, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->stamp_size, s->size, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->stamp_pgno, s->pgno, __ATOMIC_SEQ_CST);
	__atomic_store_n(&sh->stamp_hash, s->hash, __ATOMIC_SEQ_CST);
	__atomic_add_fetch(&sh->stamp_seq, 1, __ATOMIC_SEQ_CST);	/* even */
}

void
walsync_stamp_void(struct walsync *ws)
{
	__atomic_store_n(&ws->sh->stamp_epoch, 0, __ATOMIC_SEQ_CST);
}

int
walsync_role_try(struct walsync *ws)
{
	return byte_lock(ws, ROLE_BYTE, F_WRLCK) == 0;
}

void
walsync_role_release(struct walsync *ws)
{
	(void)byte_lock(ws, ROLE_BYTE, F_UNLCK);
}
