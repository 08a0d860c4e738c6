/*
 * inbox_wal: WAL durability for the SQLite inbox (docs/durability.md,
 * docs/checkpoints.md) — switching to WAL at open, group commit's syncs
 * outside the write lock, checkpoint turns in place of SQLite's
 * auto-checkpoint, the busy handler, and "webhook-cgi", the VFS shim for
 * plain CGI.  The policy's constants and inbox_wal_checkpoint_turn are in
 * store/sqlite/private.h.
 *
 * The WAL-reset race (store/sqlite/walsync.h, "Checkpoints"): SQLite 3.7.0 through
 * 3.51.2 have it; 3.51.3 (2026-03-13) fixes it, as do the 3.44.6 and
 * 3.50.7 backports (https://sqlite.org/wal.html#walresetbug; checked
 * through the release announcements, not by test).  Debian 12 ships
 * 3.40.1.  The turn's gate (a commit between two checkpoints) stays on
 * whatever sqlite3_libversion_number() says, for three reasons: it is the
 * same rule that makes one connection at a time take the turns (which a
 * fixed SQLite still wants, so no two processes checkpoint the same
 * frames); it costs one atomic load per commit and nothing per request;
 * and the programs link SQLite dynamically, so the version they were
 * tested with is not the version that runs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/store/sqlite/private.h"

/*
 * Busy handler: the default one sleeps 1, 2, 5 … 100 ms, which with a few
 * writer processes turns into p99 of hundreds of ms (FIELD-NOTES).  A
 * commit holds the lock for well under a millisecond, so poll in short
 * randomised steps (20 µs doubling to 160 µs, each ± 50 %) until the
 * deadline.  Steps up to 1.3 ms overslept the lock: at 5 connections a
 * quarter of the receiver's commits wait here, 235 µs on average; with
 * the 160 µs cap p99 fell in each of 5 paired runs, 4.70 → 4.06 ms on
 * average (docs/caps.md).
 */
int
ib_busy_wait(void *arg, int count)
{
	struct inbox *ib = arg;
	int64_t now = util_mono_ns();
	struct timespec ts;
	uint32_t us;

	if (count == 0)
		ib->busy_start = now;
	if (now - ib->busy_start >= ib->busy_timeout_ns ||
	    (ib->busy_deadline != 0 && now >= ib->busy_deadline))
		return 0;
	us = 20u << (count < 3 ? count : 3);
	us = us / 2 + randombytes_uniform(us);
	ts.tv_sec = 0;
	ts.tv_nsec = (long)us * 1000;
	nanosleep(&ts, NULL);
	return 1;
}

/* The shared file's handle, whichever this connection has (or NULL). */
struct walsync *
ib_shared(const struct inbox *ib)
{
	return ib->ws != NULL ? ib->ws : ib->role;
}

/*
 * Commit hook: the commit is about to write its frames, holding the write
 * lock.  Note the checkpoint generation it begins in (store/sqlite/walsync.h,
 * "Checkpoints").  Returns 0: commit.
 */
static int
commit_hook(void *arg)
{
	struct inbox *ib = arg;

	ib->write_gen = walsync_write_gen(ib_shared(ib));
	return 0;
}

/* Called after each commit that wrote frames, with the WAL's size in
 * frames; replaces SQLite's auto-checkpoint (see inbox_open): group commit
 * checkpoints from the committer's thread. */
static int
wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct inbox *ib = arg;

	(void)db;
	(void)name;
	ib->wal_frames = frames;
	if (ib->ws != NULL)
		walsync_written(ib->ws, ib->write_gen, frames);
	return SQLITE_OK;
}

/*
 * Without group commit (the drainer, plain CGI, synchronous = NORMAL): a
 * checkpoint turn after our own commits, in place of SQLite's
 * auto-checkpoint, which knows nothing of the other connections' turns.
 */
static int
role_wal_hook(void *arg, sqlite3 *db, const char *name, int frames)
{
	struct inbox *ib = arg;
	struct buf err;

	(void)db;
	(void)name;
	walsync_written(ib->role, ib->write_gen, frames);
	ib->wal_frames = frames;
	if (ib->short_lived)	/* after the answer: inbox_maintain */
		return SQLITE_OK;
	buf_init(&err, 256);
	if (inbox_wal_checkpoint_turn(ib, frames, &err) != INBOX_OK)
		log_msg("inbox: %s", err.data);
	buf_free(&err);
	return SQLITE_OK;
}

/*
 * Make everything this process wrote to the WAL durable: fsync/fdatasync
 * of SQLite's own WAL file handle (the unix VFS's xSync).  It starts after
 * our commit's writes returned, so it covers them, whichever process's
 * later writes it also covers.
 *
 * Why not in a VFS shim's xSync, as the plain-CGI open below is: SQLite
 * calls xSync inside COMMIT, holding the write lock — exactly the wait
 * group commit takes off the lock (synchronous = OFF, so SQLite calls no
 * xSync at all here).  The sync must come after COMMIT returned, from the
 * caller, and SQLITE_FCNTL_JOURNAL_POINTER is SQLite's documented way to
 * reach the WAL's sqlite3_file for that: the same handle, the same xSync
 * (the unix VFS's fdatasync, its full_fsync and dirsync rules), called
 * once per batch instead of once per commit.
 */
static int
sync_wal(struct inbox *ib)
{
	sqlite3_file *wal = NULL;
	int rc;

	rc = sqlite3_file_control(ib->db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
	    &wal);
	if (rc != SQLITE_OK)
		return rc;
	if (wal == NULL || wal->pMethods == NULL)
		return SQLITE_IOERR_FSYNC;
	return wal->pMethods->xSync(wal, SQLITE_SYNC_NORMAL);
}

int
inbox_wal_frames(const struct inbox *ib)
{
	return ib->wal_frames;
}

/*
 * A checkpoint on this connection with full syncs, whatever its synchronous
 * level; SQLITE_BUSY (another checkpoint running, or RESTART's wait timed
 * out) is INBOX_OK.  PASSIVE copies what it can without blocking anyone;
 * but under unbroken load the WAL never restarts (a writer restarts it only
 * when it finds every frame copied back), and grows without bound — 1.6 GB
 * in 15 s of saturation here.  `restart` (SQLITE_CHECKPOINT_RESTART) holds
 * new writers back, for at most INBOX_WAL_RESTART_WAIT_MS of waiting (for the
 * writer in progress, and for readers of an older snapshot: the drainer, a
 * `status`) plus the copy of what is left, so that the next writer starts
 * the WAL over; when it cannot within that wait it gives up until the next
 * turn.  Only through inbox_wal_checkpoint_turn: see store/sqlite/walsync.h, "Checkpoints".
 */
static enum inbox_status
checkpoint(struct inbox *ib, int restart, struct buf *err)
{
	enum inbox_status s = INBOX_OK;
	int64_t saved = ib->busy_timeout_ns;
	int rc, log = 0, done = 0;

	/* A checkpoint must sync the database file before the WAL can be
	 * reused, whatever this connection's synchronous level. */
	if (ib->group_commit && (rc = ib_exec(ib, "PRAGMA synchronous = FULL")) != SQLITE_OK)
		return ib_fail(ib, err, "checkpoint", rc);
	if (restart && ib->busy_timeout_ns > INBOX_WAL_RESTART_WAIT_MS * 1000000)
		ib->busy_timeout_ns = (int64_t)INBOX_WAL_RESTART_WAIT_MS * 1000000;
	/* A short-lived connection truncates: the next process rebuilds the
	 * shared index from the WAL file and would take every frame a
	 * RESTART left there as not yet copied (SQLite's recovery starts
	 * with nothing checkpointed), append behind them, and copy them all
	 * again at each checkpoint. */
	rc = sqlite3_wal_checkpoint_v2(ib->db, "main", !restart ?
	    SQLITE_CHECKPOINT_PASSIVE : ib->short_lived ?
	    SQLITE_CHECKPOINT_TRUNCATE : SQLITE_CHECKPOINT_RESTART, &log, &done);
	ib->busy_timeout_ns = saved;
	/* SQLITE_BUSY: another connection is checkpointing; that one will do. */
	if (rc != SQLITE_OK && (rc & 0xff) != SQLITE_BUSY)
		s = ib_fail(ib, err, "checkpoint", rc);	/* before the next exec */
	if (ib->group_commit && (rc = ib_exec(ib, "PRAGMA synchronous = OFF")) != SQLITE_OK &&
	    s == INBOX_OK)
		s = ib_fail(ib, err, "checkpoint", rc);
	return s;
}

/* Never copy frames into a file that is no longer the inbox they belong
 * to (a backup copied over it: ib_db_intact). */
static enum inbox_status
refused(struct inbox *ib, struct buf *err)
{
	buf_reset(err);
	(void)buf_printf(err, "%s: the database file was replaced or changed "
	    "in place (not by a checkpoint of ours) while open; not "
	    "checkpointing into it", ib->path);
	return INBOX_FAILED;
}

/*
 * Which checkpoint a turn runs: WALSYNC_PASSIVE once the WAL grew by
 * INBOX_WAL_CHECKPOINT_FRAMES since the last one began; past
 * INBOX_WAL_RESTART_FRAMES, WALSYNC_RESTART right after a PASSIVE one (at the
 * next turn: a commit must come between, store/sqlite/walsync.h) that left at most
 * INBOX_WAL_RESTART_TAIL_FRAMES behind it, or another PASSIVE until then (see
 * below); 0: none.
 */
static int
turn_mode(const struct walsync_turn *t, int every)
{
	/* Fewer frames than at the last checkpoint: the WAL was restarted. */
	uint64_t since = t->frames >= t->last_frames ? t->last_frames : 0;

	if (t->frames >= INBOX_WAL_RESTART_FRAMES && t->last_mode == WALSYNC_PASSIVE &&
	    since != 0) {
		/* What a RESTART would copy with writers held back: what came
		 * since the last PASSIVE began (store/inbox.h, the limits' reasons). */
		if (t->frames - since <= INBOX_WAL_RESTART_TAIL_FRAMES ||
		    t->frames >= INBOX_WAL_RESTART_MAX_FRAMES)
			return WALSYNC_RESTART;
		return WALSYNC_PASSIVE;
	}
	if (t->frames - since >= (uint64_t)every)
		return WALSYNC_PASSIVE;
	return 0;
}

/*
 * Did this turn's checkpoint leave the WAL empty?  A short-lived
 * connection's turn truncates it (checkpoint): the next turn then counts
 * from 0.  Counting from the frames the turn began with instead, a new
 * WAL that grows past the old one's size looks unrestarted to turn_mode
 * and waits for twice `every` frames (e2e_durability's CGI bound saw 257).
 */
static int
truncated(const struct inbox *ib, enum inbox_status s)
{
	return ib->short_lived && s == INBOX_OK;
}

enum inbox_status
inbox_wal_checkpoint_turn(struct inbox *ib, int frames, struct buf *err)
{
	struct walsync *ws = ib_shared(ib);
	struct walsync_turn t;
	enum inbox_status s;
	uint64_t pgno;
	uint32_t mx;
	/* A short-lived connection's process reads the whole WAL back at
	 * start (SQLite's recovery): keep it short (store/inbox.h). */
	int mode, every = ib->short_lived ? INBOX_WAL_SHORT_CHECKPOINT_FRAMES :
	    INBOX_WAL_CHECKPOINT_FRAMES;

	if (ws == NULL) {	/* alone: this connection's own view */
		ib->turn.frames = frames < 0 ? 0 : (uint64_t)frames;
		if ((mode = turn_mode(&ib->turn, every)) == 0)
			return INBOX_OK;
		if (ib->short_lived)	/* every turn truncates (checkpoint) */
			mode = WALSYNC_RESTART;
		s = ib_db_intact(ib) ? checkpoint(ib, mode == WALSYNC_RESTART,
		    err) : refused(ib, err);
		ib->turn.last_frames = truncated(ib, s) ? 0 : ib->turn.frames;
		ib->turn.last_mode = mode;
		return s;
	}
	/* Most calls end here, without a system call. */
	walsync_peek(ws, &t);
	if (!t.open || turn_mode(&t, every) == 0)
		return INBOX_OK;
	if (walsync_turn_begin(ws, &t) == 0)
		return INBOX_OK;
	if ((mode = turn_mode(&t, every)) == 0) {	/* another turn came first */
		walsync_turn_end(ws, &t, 0);
		return INBOX_OK;
	}
	if (ib->short_lived)	/* every turn truncates (checkpoint) */
		mode = WALSYNC_RESTART;
	/* Checked before ckpt_gen goes odd: a look that finds it odd knows
	 * the file was as stamped when this checkpoint began
	 * (ib_db_unchanged, the ordering argument). */
	if (!ib_db_intact(ib)) {
		walsync_turn_end(ws, &t, 0);
		return refused(ib, err);
	}
	pgno = ib_db_last_page(ib, &mx);
	walsync_turn_checkpoint(ws);
	s = checkpoint(ib, mode == WALSYNC_RESTART, err);
	/* Stamped while ckpt_gen is still odd: no look sees the file
	 * written and the stamp not yet (store/sqlite/walsync.h, "Stamps"). */
	ib_db_stamp(ib, pgno, mx, truncated(ib, s));
	if (truncated(ib, s))
		t.frames = 0;
	walsync_turn_end(ws, &t, mode);
	return s;
}

enum inbox_status
inbox_sqlite_maintain(struct inbox *ib, struct buf *err)
{
	if (!ib->group_commit && !ib->short_lived)
		return INBOX_OK;
	return inbox_wal_checkpoint_turn(ib, ib->wal_frames, err);
}

/* Do the database's and the WAL's paths still name the files we write? */
int
ib_same_files(struct inbox *ib)
{
	struct stat sb;
	char wal[PATH_MAX + 8];
	/* Before the stat: ib_db_unchanged's ordering argument. */
	uint64_t g1 = ib_shared(ib) != NULL ? walsync_write_gen(ib_shared(ib)) : 0;

	if (stat(ib->path, &sb) == -1 || sb.st_dev != ib->db_dev ||
	    sb.st_ino != ib->db_ino || sb.st_size == 0 ||
	    sb.st_size < ib->db_size || !ib_db_unchanged(ib, &sb, g1))
		return 0;
	ib->db_size = sb.st_size;
	if (!ib->wal ||
	    (size_t)snprintf(wal, sizeof wal, "%s-wal", ib->path) >= sizeof wal)
		return 1;
	if (stat(wal, &sb) == -1)
		return 0;
	if (ib->wal_ino == 0) {		/* created after we opened */
		ib->wal_dev = sb.st_dev;
		ib->wal_ino = sb.st_ino;
	}
	return sb.st_dev == ib->wal_dev && sb.st_ino == ib->wal_ino;
}

static int
sync_cb(void *arg)
{
	return sync_wal(arg);
}

static int
live_cb(void *arg)
{
	return ib_same_files(arg);
}

/*
 * Group commit, after COMMIT returned: return once a sync of the WAL that
 * began after this commit has completed — ours, or another receiver
 * process's (store/sqlite/walsync.h).  A commit that only met duplicates is synced
 * too: the first copy may be another process's commit whose own sync has
 * not finished yet.  Returns SQLITE_OK or the sync's error.
 */
int
ib_make_durable(struct inbox *ib)
{
	return walsync_commit(ib->ws, sync_cb, live_cb, ib);
}

/* Run a one-row PRAGMA and tell whether its text answer is "wal". */
static int
journal_pragma(struct inbox *ib, const char *sql)
{
	sqlite3_stmt *st = NULL;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) == SQLITE_OK &&
	    (rc = sqlite3_step(st)) == SQLITE_ROW) {
		const unsigned char *mode = sqlite3_column_text(st, 0);
		ib->wal = mode != NULL && strcmp((const char *)mode, "wal") == 0;
		rc = SQLITE_OK;
	}
	sqlite3_finalize(st);
	return rc;
}

/*
 * Switch to WAL.  Changing the journal mode does not go through the busy
 * handler: when several processes open a new inbox at once (a web server
 * starting its workers), the losers get SQLITE_BUSY at once.  So look
 * first (an inbox already in WAL needs no lock), and retry the switch in
 * short steps until busy_timeout.
 */
static int
set_wal(struct inbox *ib)
{
	int64_t deadline = util_mono_ns() + ib->busy_timeout_ns;
	int rc, count = 0;

	if (ib->busy_deadline != 0 && ib->busy_deadline < deadline)
		deadline = ib->busy_deadline;
	if ((rc = journal_pragma(ib, "PRAGMA journal_mode")) != SQLITE_OK ||
	    ib->wal)
		return rc;
	for (;;) {
		rc = journal_pragma(ib, "PRAGMA journal_mode = WAL");
		if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED)
			return rc;
		if (util_mono_ns() >= deadline)
			return rc;
		ib->busy_start = util_mono_ns();
		(void)ib_busy_wait(ib, ++count);
	}
}

/*
 * "webhook-cgi": SQLite's "unix" VFS, but a WAL file that a sync already
 * named (store/sqlite/walsync.h, walsync_wal_named) is opened without
 * SQLITE_OPEN_CREATE, so that SQLite does not sync its directory again at
 * every plain-CGI request (the unix VFS syncs the directory at the first
 * sync of each connection that opened the WAL with O_CREAT).  SQLite
 * opens the WAL while it holds the database's shared lock, which keeps
 * the file from being deleted and made anew meanwhile, so the file
 * checked is the file opened.  Only short-lived connections use it, one
 * per process (cgi_ws is the process's).
 */
static sqlite3_vfs cgi_vfs;
static sqlite3_vfs *unix_vfs;
static struct walsync *cgi_ws;

static int
cgi_open(sqlite3_vfs *vfs, sqlite3_filename name, sqlite3_file *f, int flags,
    int *out)
{
	struct stat sb;

	(void)vfs;
	if ((flags & SQLITE_OPEN_WAL) && name != NULL && cgi_ws != NULL &&
	    stat(name, &sb) == 0 &&
	    walsync_wal_is_named(cgi_ws, (uint64_t)sb.st_dev, (uint64_t)sb.st_ino))
		flags &= ~SQLITE_OPEN_CREATE;
	return unix_vfs->xOpen(unix_vfs, name, f, flags, out);
}

/* The VFS's name for sqlite3_open_v2, or NULL (the default) when "unix"
 * is not there to wrap. */
static const char *
cgi_vfs_name(void)
{
	if (unix_vfs == NULL) {
		if ((unix_vfs = sqlite3_vfs_find("unix")) == NULL)
			return NULL;
		cgi_vfs = *unix_vfs;
		cgi_vfs.zName = "webhook-cgi";
		cgi_vfs.pNext = NULL;
		cgi_vfs.xOpen = cgi_open;
		if (sqlite3_vfs_register(&cgi_vfs, 0) != SQLITE_OK) {
			unix_vfs = NULL;
			return NULL;
		}
	}
	return cgi_vfs.zName;
}

const char *
ib_wal_vfs(struct inbox *ib, const char *path, const struct inbox_options *o,
    struct buf *err)
{
	/* Plain CGI: its shared page first, for the VFS. */
	if (o->short_lived && !o->group_commit &&
	    walsync_open_real(path, &ib->role, err) == 0) {
		cgi_ws = ib->role;
		return cgi_vfs_name();
	}
	return NULL;
}

/*
 * Group commit.  synchronous=OFF makes COMMIT write the WAL frames without
 * a sync; inbox_store syncs the WAL itself once the lock is released.  The
 * wal hook replaces auto-checkpoints (which would run unsynced, and on the
 * request path) with inbox_maintain's, which switch back to FULL: a
 * checkpoint must sync the database file before the WAL can be reused, or
 * a power cut could lose checkpointed pages.  inbox_close does the same
 * before the last-connection checkpoint.
 */
static enum inbox_status
group_commit_setup(struct inbox *ib, const char *path, struct buf *err)
{
	int rc;

	ib->group_commit = 1;
	/* The receiver only appends: 512 KiB of page cache holds the b-tree
	 * paths it touches; a large body's overflow pages spill to the WAL
	 * instead of staying in memory (default: 2 MiB). */
	if ((rc = ib_exec(ib, "PRAGMA synchronous = OFF")) != SQLITE_OK ||
	    (rc = ib_exec(ib, "PRAGMA cache_size = -512")) != SQLITE_OK)
		return ib_fail(ib, err, "setting pragmas", rc);
	sqlite3_wal_hook(ib->db, wal_hook, ib);
	/* Without the shared counters each process syncs for itself: slower,
	 * never wrong.  Say why once per open. */
	if (walsync_open_real(path, &ib->ws, err) == -1)
		log_msg("inbox: %s (each process syncs alone)", err->data);
	return INBOX_OK;
}

enum inbox_status
ib_wal_setup(struct inbox *ib, const char *path, const struct inbox_options *o,
    struct buf *err)
{
	int rc;

	/* WAL: the receiver's commits never wait on the drainer's reads.  It
	 * does not work on network filesystems; say so instead of limping. */
	if ((rc = set_wal(ib)) != SQLITE_OK)
		return ib_fail(ib, err, "setting WAL mode", rc);
	if (!ib->wal) {
		buf_reset(err);
		(void)buf_printf(err, "%s: the database refuses WAL mode (a "
		    "network filesystem?)", path);
		return INBOX_FAILED;
	}
	/* FULL: a 200 promises the row is on disk (FIELD-NOTES "SQLite").
	 * journal_size_limit (96 MiB, above INBOX_WAL_RESTART_FRAMES' 64): the
	 * WAL is truncated back after a burst instead of keeping its
	 * high-water size, but not at every restart under steady load. */
	if ((rc = ib_exec(ib, o->synchronous == INBOX_SYNC_NORMAL ?
	    "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL")) != SQLITE_OK ||
	    (rc = ib_exec(ib, "PRAGMA journal_size_limit = 100663296")) != SQLITE_OK)
		return ib_fail(ib, err, "setting pragmas", rc);
	if (o->group_commit && o->synchronous == INBOX_SYNC_FULL) {
		enum inbox_status s = group_commit_setup(ib, path, err);
		if (s != INBOX_OK)
			return s;
	} else if (ib->role != NULL || walsync_open_real(path, &ib->role, err) == 0) {
		sqlite3_wal_hook(ib->db, role_wal_hook, ib);
	}	/* else SQLite's own auto-checkpoint, as any program's */
	if (ib_shared(ib) != NULL)
		sqlite3_commit_hook(ib->db, commit_hook, ib);
	return INBOX_OK;
}

void
ib_wal_close(struct inbox *ib)
{
	/* The last connection to close checkpoints: with full syncs. */
	if (ib->group_commit)
		(void)ib_exec(ib, "PRAGMA synchronous = FULL");
}

void
ib_wal_release(struct inbox *ib)
{
	char wal[PATH_MAX + 8];
	struct stat sb;

	/* Our close deleted the WAL: SQLite found this the last connection
	 * and checkpointed, outside any turn.  Nobody of ours is looking; the
	 * next opener stamps the file as it finds it (store/sqlite/walsync.h, "Stamps"). */
	if (ib->wal && ib_shared(ib) != NULL && ib->wal_ino != 0 &&
	    (size_t)snprintf(wal, sizeof wal, "%s-wal", ib->path) < sizeof wal &&
	    stat(wal, &sb) == -1 && errno == ENOENT)
		walsync_stamp_void(ib_shared(ib));
	if (cgi_ws == ib->role)
		cgi_ws = NULL;
	walsync_close(ib->ws);
	walsync_close(ib->role);
}

void
ib_note_files(struct inbox *ib, const char *path)
{
	struct stat sb;
	struct buf wal;

	if (stat(path, &sb) == 0) {
		ib->db_dev = sb.st_dev;
		ib->db_ino = sb.st_ino;
		ib->db_size = sb.st_size;
		ib_db_note(ib, &sb);
	}
	buf_init(&wal, 8192);
	if (buf_printf(&wal, "%s-wal", path) == 0 && stat(wal.data, &sb) == 0) {
		ib->wal_dev = sb.st_dev;
		ib->wal_ino = sb.st_ino;
	}
	buf_free(&wal);
}
