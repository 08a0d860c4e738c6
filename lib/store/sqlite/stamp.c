/*
 * inbox_stamp: is the database file still the inbox this connection
 * writes, as far as its content goes?  (docs/durability.md, "An inbox
 * replaced under a running receiver"; store/sqlite/walsync.h, "Stamps".)
 *
 * In WAL mode only a checkpoint writes the database file, and every
 * checkpoint of ours runs in a turn that stamps the file as it left it
 * (mtime, size, inode, a probe of its content) on the shared page.  A
 * look compares the file with what this connection last accepted and,
 * when it differs, with the stamp: a file that matches neither was
 * written by someone else — a backup copied over it in place (`cp`,
 * `dd conv=notrunc`), a checkpoint by a foreign program — whoever
 * checkpointed since.  The probe (page 1's header and the page of the
 * last WAL frame a checkpoint of ours copied, hashed) sees a copy that
 * left the mtime as it was (a coarse filesystem, `touch -r`).
 *
 * The database file is read through SQLite's own handle (xRead), never
 * through a descriptor of ours: closing one would drop every POSIX lock
 * the process holds on the file, SQLite's included.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/store/sqlite/private.h"

#define HEADER		100		/* SQLite's database header, page 1 */
#define MAX_PAGE	65536

/* SQLite's file handle of the main database, or NULL. */
static sqlite3_file *
db_file(struct inbox *ib)
{
	sqlite3_file *f = NULL;

	if (sqlite3_file_control(ib->db, "main", SQLITE_FCNTL_FILE_POINTER,
	    &f) != SQLITE_OK || f == NULL || f->pMethods == NULL)
		return NULL;
	return f;
}

/* Read n bytes at off through SQLite's handle; a short read (past the
 * end) reads zeros, which is what the probe should see there.  0 or -1. */
static int
read_at(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	int rc = f->pMethods->xRead(f, p, n, off);

	return rc == SQLITE_OK || rc == SQLITE_IOERR_SHORT_READ ? 0 : -1;
}

/* The page size in the header the last probe read (65536 is stored as 1). */
static uint32_t
page_size(const struct inbox *ib)
{
	uint32_t psz = (uint32_t)ib->probe[16] << 8 | ib->probe[17];

	return psz == 1 ? MAX_PAGE : psz;
}

/*
 * Read the file as it is now into the probe's buffer (its first half):
 * mtime and size from sb, page 1's header and page `pgno` (its size from
 * the header); *len the bytes read.  0, or -1 when it cannot be read
 * (then nothing is judged).  The second half keeps the bytes of
 * ib->base, so that the usual look compares bytes and hashes nothing.
 */
static int
probe_read(struct inbox *ib, const struct stat *sb, uint64_t pgno,
    struct walsync_stamp *out, size_t *len)
{
	sqlite3_file *f;
	uint32_t psz;

	if (ib->probe == NULL &&
	    (ib->probe = calloc(2, HEADER + MAX_PAGE)) == NULL)
		return -1;
	if ((f = db_file(ib)) == NULL || read_at(f, ib->probe, HEADER, 0) == -1)
		return -1;
	psz = page_size(ib);
	if (psz < 512 || psz > MAX_PAGE || (psz & (psz - 1)) != 0)
		psz = 512;	/* not a database header: the header alone decides */
	if (pgno == 0)
		pgno = 1;
	if (read_at(f, ib->probe + HEADER, (int)psz,
	    (sqlite3_int64)(pgno - 1) * psz) == -1)
		return -1;
	memset(out, 0, sizeof *out);
	out->sec = sb->st_mtim.tv_sec;
	out->nsec = sb->st_mtim.tv_nsec;
	out->size = (uint64_t)sb->st_size;
	out->pgno = pgno;
	*len = HEADER + psz;
	return 0;
}

/* The hash of what probe_read read, into out->hash. */
static void
probe_hash(struct inbox *ib, size_t len, struct walsync_stamp *out)
{
	static const unsigned char key[crypto_shorthash_KEYBYTES];
	unsigned char h[crypto_shorthash_BYTES];

	crypto_shorthash(h, ib->probe, len, key);
	memcpy(&out->hash, h, sizeof out->hash);
}

/* probe_read, then probe_hash: the file as a stamp describes it. */
static int
probe(struct inbox *ib, const struct stat *sb, uint64_t pgno,
    struct walsync_stamp *out)
{
	size_t len;

	if (probe_read(ib, sb, pgno, out, &len) == -1)
		return -1;
	probe_hash(ib, len, out);
	return 0;
}

/* What probe (or probe_read + probe_hash) just read becomes ib->base. */
static void
keep_base(struct inbox *ib, const struct walsync_stamp *cur)
{
	ib->base = *cur;
	memcpy(ib->probe + HEADER + MAX_PAGE, ib->probe, HEADER + MAX_PAGE);
}

static int
same(const struct walsync_stamp *a, const struct walsync_stamp *b)
{
	return a->sec == b->sec && a->nsec == b->nsec && a->size == b->size &&
	    a->pgno == b->pgno && a->hash == b->hash;
}

/* What a stamp probes next: its own page, or page 1 when there is none. */
static uint64_t
stamp_page(struct walsync *ws, const struct inbox *ib)
{
	struct walsync_stamp s;

	if (walsync_stamp_get(ws, (uint64_t)ib->db_ino, &s) == 1)
		return s.pgno;
	return ib->base.pgno != 0 ? ib->base.pgno : 1;
}

/* The file is not as any checkpoint of ours left it: every connection
 * opened so far reopens (store/sqlite/walsync.h, "Stamps").  Returns 0. */
static int
found(struct inbox *ib, struct walsync *ws, const char *how)
{
	if (walsync_epoch(ws) == ib->epoch)
		log_msg("inbox: %s: the database file is not as the last "
		    "checkpoint left it (%s: a backup copied over it in place, "
		    "or a checkpoint by another program); every connection "
		    "reopens on it as it now is", ib->path, how);
	walsync_epoch_bump(ws, ib->epoch);
	return 0;
}

void
ib_db_note(struct inbox *ib, const struct stat *sb)
{
	struct walsync *ws = ib_shared(ib);
	struct walsync_stamp s;
	int held;

	memset(&ib->base, 0, sizeof ib->base);
	if (ws == NULL)
		return;
	ib->epoch = walsync_epoch(ws);
	/* No current stamp (a new inbox, a close that let SQLite checkpoint,
	 * a finding): this connection stamps the file as it finds it, under
	 * the role, so no checkpoint of ours writes it meanwhile. */
	held = walsync_stamp_get(ws, (uint64_t)ib->db_ino, &s) != 1 &&
	    walsync_role_try(ws);
	if (probe(ib, sb, stamp_page(ws, ib), &s) == -1)
		memset(&ib->base, 0, sizeof ib->base);
	else if (keep_base(ib, &s), held && walsync_stamp_get(ws, (uint64_t)ib->db_ino, &s) != 1 &&
	    walsync_epoch(ws) == ib->epoch)
		walsync_stamp_set(ws, ib->epoch, (uint64_t)ib->db_ino, &ib->base);
	if (held)
		walsync_role_release(ws);
}

/*
 * The look before every answer (ib_same_files).  `g1` is ckpt_gen read
 * BEFORE the caller's stat of the file (sb).  The ordering argument:
 *
 * A checkpoint of ours writes the file only while ckpt_gen is odd: the
 * turn makes it odd after checking the file against the stamp
 * (ib_db_intact) and before SQLite's first write; it stamps after the
 * last write and only then makes it even.  So when g1 is even and
 * ckpt_gen still reads g1 after the stamp was read, no checkpoint of
 * ours wrote the file between the stat and that read: the stat, the
 * probe and the stamp all describe the file as the last checkpoint left
 * it — unless someone else wrote it.  A checkpoint finishing between the
 * stat and the read moves ckpt_gen, and the look then judges nothing
 * (the previous attempt's false 503: a stat before, a state read after).
 * When ckpt_gen is odd, the running checkpoint found the file as stamped
 * before it began, so a change seen now is its own (or a copy landing
 * during it, which nothing here can tell apart): no judgement either; the
 * next look judges against its stamp.
 */
int
ib_db_unchanged(struct inbox *ib, const struct stat *sb, uint64_t g1)
{
	struct walsync *ws = ib_shared(ib);
	struct walsync_stamp cur, s;
	size_t len;
	int st;

	if (ws == NULL)
		return 1;	/* nothing shared: inode and size only */
	if (walsync_epoch(ws) != ib->epoch)
		return 0;	/* found by another connection: reopen */
	/* The usual look: the bytes as this connection last accepted them. */
	if (ib->base.pgno == 0 ||
	    probe_read(ib, sb, ib->base.pgno, &cur, &len) == -1)
		return 1;
	cur.hash = ib->base.hash;
	if (same(&cur, &ib->base) &&
	    memcmp(ib->probe, ib->probe + HEADER + MAX_PAGE, len) == 0)
		return 1;
	probe_hash(ib, len, &cur);
	if (g1 & 1)
		return 1;
	st = walsync_stamp_get(ws, (uint64_t)ib->db_ino, &s);
	if (walsync_write_gen(ws) != g1 || st == -1)
		return 1;
	if (st == 0) {	/* nothing to judge by (store/sqlite/walsync.h, "void") */
		keep_base(ib, &cur);
		return 1;
	}
	if (s.pgno != cur.pgno && probe(ib, sb, s.pgno, &cur) == -1)
		return 1;
	if (!same(&cur, &s))
		return found(ib, ws, "changed since");
	keep_base(ib, &cur);
	return 1;
}

/*
 * Before a checkpoint copies frames into the file (the caller holds the
 * turn, ckpt_gen even): the file must be as the last checkpoint of ours
 * left it — the stamp decides, not what this connection saw at open (a
 * process that opened after a copy would otherwise checkpoint into it
 * and stamp it as ours).
 */
int
ib_db_intact(struct inbox *ib)
{
	struct walsync *ws = ib_shared(ib);
	struct walsync_stamp cur, s;
	struct stat sb;

	if (stat(ib->path, &sb) == -1 || sb.st_dev != ib->db_dev ||
	    sb.st_ino != ib->db_ino || sb.st_size == 0 ||
	    sb.st_size < ib->db_size)
		return 0;
	if (ws == NULL || ib->base.pgno == 0)
		return 1;
	if (walsync_epoch(ws) != ib->epoch)
		return 0;
	/* No current stamp (void, or a writer outside the role whose lock
	 * failed): nothing to judge by; this checkpoint stamps. */
	if (walsync_stamp_get(ws, (uint64_t)ib->db_ino, &s) != 1)
		return 1;
	if (probe(ib, &sb, s.pgno, &cur) == -1)
		return 1;
	if (!same(&cur, &s))
		return found(ib, ws, "found before a checkpoint");
	return 1;
}

/* The shared index's header words (SQLite's wal.c: WalIndexHdr.mxFrame
 * at 16, WalCkptInfo.nBackfill at 96), read through the connection's own
 * mapping of the -shm (xShmMap of region 0), never a descriptor of ours.
 * 0 or -1. */
static int
shm_words(struct inbox *ib, uint32_t *mx, uint32_t *backfill)
{
	volatile void *map = NULL;
	sqlite3_file *f = db_file(ib);

	if (!ib->wal || f == NULL || f->pMethods->iVersion < 2 ||
	    f->pMethods->xShmMap(f, 0, 32768, 0, &map) != SQLITE_OK ||
	    map == NULL)
		return -1;
	memcpy(mx, (const char *)map + 16, 4);
	memcpy(backfill, (const char *)map + 96, 4);
	return 0;
}

uint64_t
ib_db_last_page(struct inbox *ib, uint32_t *mx)
{
	sqlite3_file *wal = NULL;
	unsigned char h[4];
	uint32_t backfill;
	sqlite3_int64 off;

	*mx = 0;
	if (shm_words(ib, mx, &backfill) == -1 || *mx == 0 || *mx <= backfill ||
	    ib->base.pgno == 0)
		return 0;
	/* Frame mx's header: the frames past nBackfill stay where they are
	 * until a checkpoint copied them (we hold the turn).  The page size
	 * is the database's (the probe's header). */
	off = 32 + (sqlite3_int64)(*mx - 1) * (24 + page_size(ib));
	if (sqlite3_file_control(ib->db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
	    &wal) != SQLITE_OK || wal == NULL || wal->pMethods == NULL ||
	    wal->pMethods->xRead(wal, h, 4, off) != SQLITE_OK)
		return 0;
	return (uint64_t)h[0] << 24 | (uint64_t)h[1] << 16 | (uint64_t)h[2] << 8 |
	    h[3];
}

void
ib_db_stamp(struct inbox *ib, uint64_t pgno, uint32_t mx, int emptied)
{
	struct walsync *ws = ib_shared(ib);
	struct walsync_stamp cur;
	uint32_t now_mx, backfill;
	struct stat sb;

	if (ws == NULL || ib->base.pgno == 0 || stat(ib->path, &sb) == -1)
		return;
	/* The page of the last frame copied: its content was never in the
	 * file before this checkpoint, so a copy of the file from before it
	 * differs there (unless a transaction wrote a page back unchanged).
	 * Only if the checkpoint got that far; else the last stamp's page. */
	if (pgno == 0 || (!emptied && (shm_words(ib, &now_mx, &backfill) == -1 ||
	    backfill < mx)))
		pgno = stamp_page(ws, ib);
	if (probe(ib, &sb, pgno, &cur) == 0) {
		keep_base(ib, &cur);
		walsync_stamp_set(ws, ib->epoch, (uint64_t)ib->db_ino, &cur);
	}
}
