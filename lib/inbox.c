/*
 * inbox: the SQLite implementation of inbox.h.
 *
 * SQLite discipline (STYLE.md 11): bound parameters only, every rc checked
 * and reported with sqlite3_errmsg, BEGIN IMMEDIATE for every write
 * transaction (a deferred BEGIN that reads then writes fails at once with
 * SQLITE_BUSY when another connection wrote meanwhile), hot statements
 * prepared once per connection.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "inbox.h"
#include "walsync.h"

/* schema.sql, linked in by schema.S (NUL-terminated). */
extern const char schema_sql[];

#define SCHEMA_VERSION	2

/*
 * Version 1 to 2: rows stored by the receiver wait outside the per-object
 * hold index until the drainer admits them (schema.sql, events_unadmitted).
 * The index definitions are schema.sql's, word for word (test_inbox checks
 * that a migrated inbox has the same schema as a new one).  Rows already
 * there are admitted (the default), as are those a version-1 receiver
 * still running stores: its INSERT leaves the column out.
 */
static const char migrate_v2[] =
    "ALTER TABLE events ADD COLUMN"
    " admitted INTEGER NOT NULL DEFAULT 1 CHECK (admitted IN (0, 1));"
    "DROP INDEX events_object_pending;"
    "CREATE INDEX events_object_pending ON events (object_type, object_id, sort_at, received_at)\n"
    "    WHERE state = 'pending' AND object_id IS NOT NULL AND admitted = 1;"
    "CREATE INDEX events_unadmitted ON events (admitted) WHERE admitted = 0;"
    "PRAGMA user_version = 2";

/* Rows admitted per transaction: the receivers wait for the write lock
 * while one runs (a few ms), and get it between two. */
#define ADMIT_CHUNK	500

/* How often inbox_next_due admits what arrived meanwhile: the hold check
 * reads every row not yet admitted, so their number must stay small. */
#define ADMIT_EVERY_NS	1000000000LL

/* Largest handler output tail kept for `show`, bytes. */
#define OUTPUT_KEEP	4096

struct inbox {
	sqlite3		*db;
	char		*path;
	int64_t		 busy_timeout_ns;
	int64_t		 busy_start;	/* monotonic ns of the first busy wait */
	int		 wal;		/* the journal mode is WAL */
	int		 group_commit;	/* see inbox_options */
	int		 short_lived;	/* see inbox_options */
	int		 synchronous_full;	/* commits sync the WAL */
	int		 wal_frames;	/* group commit: WAL frames after the last commit */
	/* The files this connection writes, as opened: a receiver must not
	 * acknowledge into a database that was moved or deleted meanwhile
	 * (its rows would live only in an unlinked file). */
	dev_t		 db_dev, wal_dev;
	ino_t		 db_ino, wal_ino;
	uint64_t	 write_gen;	/* walsync_write_gen of the commit under way */
	struct walsync_turn turn;	/* checkpoints, when there is no shared file */
	sqlite3_stmt	*begin, *commit, *rollback, *insert;
	sqlite3_stmt	*admit;		/* admit_chunk's, prepared on first use */
	struct walsync	*ws;		/* group commit: syncs shared across processes */
	struct walsync	*role;		/* otherwise: for checkpoint turns */
	int64_t		 admitted_ns;	/* monotonic ns of the last admit(); 0 never */
};

static int	insert_one(struct inbox *, const struct inbox_delivery *, int *);

int
inbox_schema_version(void)
{
	return SCHEMA_VERSION;
}

/* The columns every event query selects, in inbox_event order. */
#define EVENT_COLUMNS \
	"webhook_id, state, received_at, webhook_timestamp, secret_fp, type," \
	" created_at, created_at_raw, object_type, object_id, updated_at," \
	" truncated, sort_at, attempts, failures, next_at, finished_at," \
	" requeued, last_error, last_output, rowid, body IS NOT NULL"
#define EVENT_NCOLUMNS	22

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
static int
busy_wait(void *arg, int count)
{
	struct inbox *ib = arg;
	int64_t now = util_mono_ns();
	struct timespec ts;
	uint32_t us;

	if (count == 0)
		ib->busy_start = now;
	if (now - ib->busy_start >= ib->busy_timeout_ns)
		return 0;
	us = 20u << (count < 3 ? count : 3);
	us = us / 2 + randombytes_uniform(us);
	ts.tv_sec = 0;
	ts.tv_nsec = (long)us * 1000;
	nanosleep(&ts, NULL);
	return 1;
}

static enum inbox_status
db_fail(struct inbox *ib, struct buf *err, const char *what, int rc)
{
	buf_reset(err);
	(void)buf_printf(err, "%s: %s: %s", ib->path, what,
	    ib->db ? sqlite3_errmsg(ib->db) : sqlite3_errstr(rc));
	/* Extended result codes are on: compare the primary code. */
	if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
		return INBOX_BUSY;
	return INBOX_FAILED;
}

static int
prepare(struct inbox *ib, const char *sql, sqlite3_stmt **st)
{
	return sqlite3_prepare_v3(ib->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
	    st, NULL);
}

static int
step_done(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE || rc == SQLITE_ROW ? SQLITE_OK : rc;
}

static int
begin(struct inbox *ib)
{
	return step_done(ib->begin);
}

static int
commit(struct inbox *ib)
{
	return step_done(ib->commit);
}

static void
rollback(struct inbox *ib)
{
	if (!sqlite3_get_autocommit(ib->db))
		(void)step_done(ib->rollback);
}

/* The end of a failed write transaction: finalize its statement (NULL is
 * fine), report the error (before the rollback can change it), roll back. */
static enum inbox_status
txn_fail(struct inbox *ib, sqlite3_stmt *st, struct buf *err, const char *what,
    int rc)
{
	enum inbox_status s;

	sqlite3_finalize(st);
	s = db_fail(ib, err, what, rc);
	rollback(ib);
	return s;
}

/* The end of a write transaction whose statement succeeded: finalize it,
 * commit; on failure, as txn_fail. */
static enum inbox_status
txn_commit(struct inbox *ib, sqlite3_stmt *st, struct buf *err, const char *what)
{
	int rc;

	sqlite3_finalize(st);
	if ((rc = commit(ib)) != SQLITE_OK)
		return txn_fail(ib, NULL, err, what, rc);
	return INBOX_OK;
}

/* Run a statement with no result rows (schema, PRAGMA). */
static int
exec(struct inbox *ib, const char *sql)
{
	return sqlite3_exec(ib->db, sql, NULL, NULL, NULL);
}

static int
apply_schema(struct inbox *ib, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, version = -1;

	if ((rc = exec(ib, "BEGIN IMMEDIATE")) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db, "PRAGMA user_version", -1, &st,
	    NULL)) != SQLITE_OK)
		goto fail;
	if ((rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (version > SCHEMA_VERSION) {
		rollback(ib);
		buf_reset(err);
		(void)buf_printf(err, "%s: schema version %d is newer than this "
		    "program's %d", ib->path, version, SCHEMA_VERSION);
		return INBOX_FAILED;
	}
	if (version == 0) {
		if ((rc = exec(ib, schema_sql)) != SQLITE_OK)
			goto fail;
		if ((rc = exec(ib, "PRAGMA user_version = 2")) != SQLITE_OK)
			goto fail;
	} else if (version == 1 && (rc = exec(ib, migrate_v2)) != SQLITE_OK) {
		goto fail;
	}
	if ((rc = exec(ib, "COMMIT")) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return txn_fail(ib, st, err, "applying the schema", rc);
}

/* The shared file's handle, whichever this connection has (or NULL). */
static struct walsync *
shared_file(const struct inbox *ib)
{
	return ib->ws != NULL ? ib->ws : ib->role;
}

/*
 * Commit hook: the commit is about to write its frames, holding the write
 * lock.  Note the checkpoint generation it begins in (walsync.h,
 * "Checkpoints").  Returns 0: commit.
 */
static int
commit_hook(void *arg)
{
	struct inbox *ib = arg;

	ib->write_gen = walsync_write_gen(shared_file(ib));
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
	if (inbox_checkpoint_turn(ib, frames, &err) != INBOX_OK)
		log_msg("inbox: %s", err.data);
	buf_free(&err);
	return SQLITE_OK;
}

/*
 * Make everything this process wrote to the WAL durable: fsync/fdatasync
 * of SQLite's own WAL file handle (the unix VFS's xSync).  It starts after
 * our commit's writes returned, so it covers them, whichever process's
 * later writes it also covers.
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
 * new writers back, for at most INBOX_RESTART_WAIT_MS of waiting (for the
 * writer in progress, and for readers of an older snapshot: the drainer, a
 * `status`) plus the copy of what is left, so that the next writer starts
 * the WAL over; when it cannot within that wait it gives up until the next
 * turn.  Only through inbox_checkpoint_turn: see walsync.h, "Checkpoints".
 */
static enum inbox_status
checkpoint(struct inbox *ib, int restart, struct buf *err)
{
	enum inbox_status s = INBOX_OK;
	int64_t saved = ib->busy_timeout_ns;
	int rc, log = 0, done = 0;

	/* A checkpoint must sync the database file before the WAL can be
	 * reused, whatever this connection's synchronous level. */
	if (ib->group_commit && (rc = exec(ib, "PRAGMA synchronous = FULL")) != SQLITE_OK)
		return db_fail(ib, err, "checkpoint", rc);
	if (restart && ib->busy_timeout_ns > INBOX_RESTART_WAIT_MS * 1000000)
		ib->busy_timeout_ns = (int64_t)INBOX_RESTART_WAIT_MS * 1000000;
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
		s = db_fail(ib, err, "checkpoint", rc);	/* before the next exec */
	if (ib->group_commit && (rc = exec(ib, "PRAGMA synchronous = OFF")) != SQLITE_OK &&
	    s == INBOX_OK)
		s = db_fail(ib, err, "checkpoint", rc);
	return s;
}

/*
 * Which checkpoint a turn runs: WALSYNC_PASSIVE once the WAL grew by
 * INBOX_CHECKPOINT_FRAMES since the last one began; past
 * INBOX_RESTART_FRAMES, WALSYNC_RESTART right after a PASSIVE one (at the
 * next turn: a commit must come between, walsync.h) that left at most
 * INBOX_RESTART_TAIL_FRAMES behind it, or another PASSIVE until then (see
 * below); 0: none.
 */
static int
turn_mode(const struct walsync_turn *t, int every)
{
	/* Fewer frames than at the last checkpoint: the WAL was restarted. */
	uint64_t since = t->frames >= t->last_frames ? t->last_frames : 0;

	if (t->frames >= INBOX_RESTART_FRAMES && t->last_mode == WALSYNC_PASSIVE &&
	    since != 0) {
		/* What a RESTART would copy with writers held back: what came
		 * since the last PASSIVE began (inbox.h, the limits' reasons). */
		if (t->frames - since <= INBOX_RESTART_TAIL_FRAMES ||
		    t->frames >= INBOX_RESTART_MAX_FRAMES)
			return WALSYNC_RESTART;
		return WALSYNC_PASSIVE;
	}
	if (t->frames - since >= (uint64_t)every)
		return WALSYNC_PASSIVE;
	return 0;
}

enum inbox_status
inbox_checkpoint_turn(struct inbox *ib, int frames, struct buf *err)
{
	struct walsync *ws = shared_file(ib);
	struct walsync_turn t;
	enum inbox_status s;
	/* A short-lived connection's process reads the whole WAL back at
	 * start (SQLite's recovery): keep it short (inbox.h). */
	int mode, every = ib->short_lived ? INBOX_SHORT_CHECKPOINT_FRAMES :
	    INBOX_CHECKPOINT_FRAMES;

	if (ws == NULL) {	/* alone: this connection's own view */
		ib->turn.frames = frames < 0 ? 0 : (uint64_t)frames;
		if ((mode = turn_mode(&ib->turn, every)) == 0)
			return INBOX_OK;
		if (ib->short_lived)	/* every turn truncates (checkpoint) */
			mode = WALSYNC_RESTART;
		s = checkpoint(ib, mode == WALSYNC_RESTART, err);
		ib->turn.last_frames = ib->turn.frames;
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
	walsync_turn_checkpoint(ws);
	s = checkpoint(ib, mode == WALSYNC_RESTART, err);
	walsync_turn_end(ws, &t, mode);
	return s;
}

enum inbox_status
inbox_maintain(struct inbox *ib, struct buf *err)
{
	if (!ib->group_commit && !ib->short_lived)
		return INBOX_OK;
	return inbox_checkpoint_turn(ib, ib->wal_frames, err);
}

/* Do the database's and the WAL's paths still name the files we write? */
static int
same_files(struct inbox *ib)
{
	struct stat sb;
	char wal[PATH_MAX + 8];

	if (stat(ib->path, &sb) == -1 || sb.st_dev != ib->db_dev ||
	    sb.st_ino != ib->db_ino)
		return 0;
	if ((size_t)snprintf(wal, sizeof wal, "%s-wal", ib->path) >= sizeof wal)
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
	return same_files(arg);
}

/*
 * Group commit, after COMMIT returned: return once a sync of the WAL that
 * began after this commit has completed — ours, or another receiver
 * process's (walsync.h).  A commit that only met duplicates is synced
 * too: the first copy may be another process's commit whose own sync has
 * not finished yet.  Returns SQLITE_OK or the sync's error.
 */
static int
make_durable(struct inbox *ib)
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
		(void)busy_wait(ib, ++count);
	}
}

static enum inbox_status
check_version(struct inbox *ib, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, version;

	if ((rc = sqlite3_prepare_v2(ib->db, "PRAGMA user_version", -1, &st,
	    NULL)) != SQLITE_OK || (rc = sqlite3_step(st)) != SQLITE_ROW) {
		sqlite3_finalize(st);
		return db_fail(ib, err, "reading the schema version", rc);
	}
	version = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (version > SCHEMA_VERSION) {
		buf_reset(err);
		(void)buf_printf(err, "%s: schema version %d is newer than this "
		    "program's %d", ib->path, version, SCHEMA_VERSION);
		return INBOX_FAILED;
	}
	return INBOX_OK;
}

/*
 * "webhook-cgi": SQLite's "unix" VFS, but a WAL file that a sync already
 * named (walsync.h, walsync_wal_named) is opened without
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

enum inbox_status
inbox_open(const char *path, const struct inbox_options *o, struct inbox **out,
    struct buf *err)
{
	struct inbox *ib;
	sqlite3_stmt *st = NULL;
	enum inbox_status s = INBOX_FAILED;
	const char *vfs = NULL;
	int rc;

	*out = NULL;
	if ((ib = calloc(1, sizeof *ib)) == NULL ||
	    (ib->path = strdup(path)) == NULL) {
		free(ib);
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", path);
		return INBOX_FAILED;
	}
	ib->busy_timeout_ns = o->busy_timeout_ms * 1000000;
	/* Two users share the inbox (the web server writes, cron drains):
	 * create it 0660 whatever the umask.  SQLite would create it 0644 &
	 * ~umask, and its -wal and -shm copy the database's mode, so the
	 * second user could only read.  An existing file is left as it is
	 * (`webhook-drain check` reports a mode that locks someone out). */
	{
		int fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0660);
		if (fd != -1) {
			(void)fchmod(fd, 0660);
			close(fd);
		}
	}
	/* Plain CGI: its shared page first, for the VFS above. */
	if (o->short_lived && !o->group_commit &&
	    walsync_open(path, &ib->role, err) == 0) {
		cgi_ws = ib->role;
		vfs = cgi_vfs_name();
	}
	rc = sqlite3_open_v2(path, &ib->db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs);
	if (rc != SQLITE_OK) {
		s = db_fail(ib, err, "cannot open", rc);
		goto out;
	}
	sqlite3_extended_result_codes(ib->db, 1);
	sqlite3_busy_handler(ib->db, busy_wait, ib);
	ib->synchronous_full = o->synchronous == CONFIG_SYNC_FULL;
	if (o->short_lived && !o->group_commit) {
		ib->short_lived = 1;
		(void)sqlite3_db_config(ib->db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE,
		    1, NULL);
	}

	/* A database from a newer version of this program is left untouched
	 * (not even switched to WAL). */
	if ((s = check_version(ib, err)) != INBOX_OK)
		goto out;
	s = INBOX_FAILED;
	/* WAL: the receiver's commits never wait on the drainer's reads.  It
	 * does not work on network filesystems; say so instead of limping. */
	if ((rc = set_wal(ib)) != SQLITE_OK) {
		s = db_fail(ib, err, "setting WAL mode", rc);
		goto out;
	}
	if (!ib->wal) {
		buf_reset(err);
		(void)buf_printf(err, "%s: the database refuses WAL mode (a "
		    "network filesystem?)", path);
		goto out;
	}
	/* FULL: a 200 promises the row is on disk (FIELD-NOTES "SQLite").
	 * journal_size_limit (96 MiB, above INBOX_RESTART_FRAMES' 64): the
	 * WAL is truncated back after a burst instead of keeping its
	 * high-water size, but not at every restart under steady load. */
	if ((rc = exec(ib, o->synchronous == CONFIG_SYNC_NORMAL ?
	    "PRAGMA synchronous = NORMAL" : "PRAGMA synchronous = FULL")) != SQLITE_OK ||
	    (rc = exec(ib, "PRAGMA journal_size_limit = 100663296")) != SQLITE_OK) {
		s = db_fail(ib, err, "setting pragmas", rc);
		goto out;
	}
	if (o->group_commit && o->synchronous == CONFIG_SYNC_FULL) {
		/*
		 * Group commit.  synchronous=OFF makes COMMIT write the WAL
		 * frames without a sync; inbox_store syncs the WAL itself once
		 * the lock is released.  The wal hook replaces auto-checkpoints
		 * (which would run unsynced, and on the request path) with
		 * inbox_maintain's, which switch back to FULL: a checkpoint
		 * must sync the database file before the WAL can be reused,
		 * or a power cut could lose checkpointed pages.  inbox_close
		 * does the same before the last-connection checkpoint.
		 */
		ib->group_commit = 1;
		/* The receiver only appends: 512 KiB of page cache holds the
		 * b-tree paths it touches; a large body's overflow pages spill
		 * to the WAL instead of staying in memory (default: 2 MiB). */
		if ((rc = exec(ib, "PRAGMA synchronous = OFF")) != SQLITE_OK ||
		    (rc = exec(ib, "PRAGMA cache_size = -512")) != SQLITE_OK) {
			s = db_fail(ib, err, "setting pragmas", rc);
			goto out;
		}
		sqlite3_wal_hook(ib->db, wal_hook, ib);
		/* Without the shared counters each process syncs for itself:
		 * slower, never wrong.  Say why once per open. */
		if (walsync_open(path, &ib->ws, err) == -1)
			log_msg("inbox: %s (each process syncs alone)", err->data);
	} else if (ib->role != NULL || walsync_open(path, &ib->role, err) == 0) {
		sqlite3_wal_hook(ib->db, role_wal_hook, ib);
	}	/* else SQLite's own auto-checkpoint, as any program's */
	if (shared_file(ib) != NULL)
		sqlite3_commit_hook(ib->db, commit_hook, ib);
	if ((s = apply_schema(ib, err)) != INBOX_OK)
		goto out;
	s = INBOX_FAILED;
	if ((rc = prepare(ib, "BEGIN IMMEDIATE", &ib->begin)) != SQLITE_OK ||
	    (rc = prepare(ib, "COMMIT", &ib->commit)) != SQLITE_OK ||
	    (rc = prepare(ib, "ROLLBACK", &ib->rollback)) != SQLITE_OK ||
	    (rc = prepare(ib,
	    "INSERT INTO events (webhook_id, body, received_at, webhook_timestamp,"
	    " secret_fp, type, created_at, created_at_raw, object_type, object_id,"
	    " updated_at, truncated, sort_at, next_at, admitted)"
	    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12,"
	    " coalesce(?7, ?3), ?3, 0)"
	    " ON CONFLICT (webhook_id) DO NOTHING", &ib->insert)) != SQLITE_OK) {
		s = db_fail(ib, err, "preparing statements", rc);
		goto out;
	}
	{
		struct stat sb;
		struct buf wal;
		if (stat(path, &sb) == 0) {
			ib->db_dev = sb.st_dev;
			ib->db_ino = sb.st_ino;
		}
		buf_init(&wal, 8192);
		if (buf_printf(&wal, "%s-wal", path) == 0 && stat(wal.data, &sb) == 0) {
			ib->wal_dev = sb.st_dev;
			ib->wal_ino = sb.st_ino;
		}
		buf_free(&wal);
	}
	*out = ib;
	return INBOX_OK;
out:
	sqlite3_finalize(st);
	inbox_close(ib);
	return s;
}

void
inbox_close(struct inbox *ib)
{
	if (ib == NULL)
		return;
	/* The last connection to close checkpoints: with full syncs. */
	if (ib->group_commit)
		(void)exec(ib, "PRAGMA synchronous = FULL");
	sqlite3_finalize(ib->begin);
	sqlite3_finalize(ib->commit);
	sqlite3_finalize(ib->rollback);
	sqlite3_finalize(ib->insert);
	sqlite3_finalize(ib->admit);
	sqlite3_close(ib->db);
	if (cgi_ws == ib->role)
		cgi_ws = NULL;
	walsync_close(ib->ws);
	walsync_close(ib->role);
	free(ib->path);
	free(ib);
}

/* Bind text or NULL (for "" too). */
static int
bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s == NULL || *s == '\0')
		return sqlite3_bind_null(st, i);
	return sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static int
bind_instant(sqlite3_stmt *st, int i, int64_t ns, char tmp[INSTANT_SIZE])
{
	if (instant_format(ns, tmp) == -1)
		return SQLITE_RANGE;
	return sqlite3_bind_text(st, i, tmp, -1, SQLITE_STATIC);
}

enum inbox_status
inbox_store(struct inbox *ib, const struct inbox_delivery *d, struct buf *err)
{
	int rc, changed = 0;

	struct stat wal = { 0 };
	char walpath[PATH_MAX + 8];

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	/* Plain CGI: the WAL this commit writes (under the write lock: it
	 * cannot be deleted meanwhile).  Once the commit synced it (and, the
	 * first time, its directory), the file is named for the next
	 * processes (walsync.h, walsync_wal_named). */
	if (ib->short_lived && ib->role != NULL &&
	    (size_t)snprintf(walpath, sizeof walpath, "%s-wal", ib->path) <
	    sizeof walpath && stat(walpath, &wal) == -1)
		wal.st_ino = 0;
	if ((rc = insert_one(ib, d, &changed)) != SQLITE_OK ||
	    (rc = commit(ib)) != SQLITE_OK)
		return txn_fail(ib, NULL, err, "storing the event", rc);
	if (wal.st_ino != 0 && ib->synchronous_full && !walsync_wal_is_named(ib->role,
	    (uint64_t)wal.st_dev, (uint64_t)wal.st_ino))
		walsync_wal_named(ib->role, (uint64_t)wal.st_dev,
		    (uint64_t)wal.st_ino);
	/* Group commit: the sync happens outside the lock. */
	if (ib->group_commit && (rc = make_durable(ib)) != SQLITE_OK)
		return db_fail(ib, err, "syncing the WAL", rc);
	return changed == 1 ? INBOX_OK : INBOX_DUPLICATE;
}

void
inbox_event_init(struct inbox_event *e)
{
	memset(e, 0, sizeof *e);
	buf_init(&e->body, SIZE_MAX / 2);
	buf_init(&e->last_output, SIZE_MAX / 2);
}

void
inbox_event_free(struct inbox_event *e)
{
	free(e->webhook_id);
	free(e->secret_fp);
	free(e->type);
	free(e->created_at_raw);
	free(e->object_type);
	free(e->object_id);
	free(e->last_error);
	buf_free(&e->body);
	buf_free(&e->last_output);
	inbox_event_init(e);
}

static char *
col_dup(sqlite3_stmt *st, int i, int *oom)
{
	const unsigned char *t = sqlite3_column_text(st, i);
	char *s;

	if (t == NULL)
		return NULL;
	if ((s = strdup((const char *)t)) == NULL)
		*oom = 1;
	return s;
}

static void
col_instant(sqlite3_stmt *st, int i, char out[INSTANT_SIZE])
{
	const unsigned char *t = sqlite3_column_text(st, i);

	out[0] = '\0';
	if (t != NULL && strlen((const char *)t) == INSTANT_LEN)
		memcpy(out, t, INSTANT_SIZE);
}

/* Fill *e from a row of EVENT_COLUMNS (+ body as column EVENT_NCOLUMNS when
 * with_body).  Returns 0, or -1 when out of memory. */
static int
read_event(sqlite3_stmt *st, struct inbox_event *e, int with_body)
{
	const unsigned char *state;
	int oom = 0;

	inbox_event_free(e);
	e->webhook_id = col_dup(st, 0, &oom);
	state = sqlite3_column_text(st, 1);
	snprintf(e->state, sizeof e->state, "%s", state ? (const char *)state : "");
	col_instant(st, 2, e->received_at);
	e->webhook_timestamp = sqlite3_column_int64(st, 3);
	e->secret_fp = col_dup(st, 4, &oom);
	e->type = col_dup(st, 5, &oom);
	col_instant(st, 6, e->created_at);
	e->created_at_raw = col_dup(st, 7, &oom);
	e->object_type = col_dup(st, 8, &oom);
	e->object_id = col_dup(st, 9, &oom);
	col_instant(st, 10, e->updated_at);
	e->truncated = sqlite3_column_int(st, 11);
	col_instant(st, 12, e->sort_at);
	e->attempts = sqlite3_column_int64(st, 13);
	e->failures = sqlite3_column_int64(st, 14);
	col_instant(st, 15, e->next_at);
	col_instant(st, 16, e->finished_at);
	e->requeued = sqlite3_column_int(st, 17);
	e->last_error = col_dup(st, 18, &oom);
	if (sqlite3_column_type(st, 19) != SQLITE_NULL &&
	    buf_append(&e->last_output, sqlite3_column_blob(st, 19),
	    (size_t)sqlite3_column_bytes(st, 19)) == -1)
		oom = 1;
	e->seq = sqlite3_column_int64(st, 20);
	e->has_body = sqlite3_column_int(st, 21);
	if (with_body && e->has_body) {
		const void *b = sqlite3_column_blob(st, EVENT_NCOLUMNS);
		int n = sqlite3_column_bytes(st, EVENT_NCOLUMNS);
		if (buf_append(&e->body, b != NULL ? b : "", (size_t)n) == -1)
			oom = 1;
	}
	return oom ? -1 : 0;
}

/*
 * "No pending event of the same object sorts before this one": among the
 * admitted rows through the hold index, and among the few not yet
 * admitted (schema.sql) by reading them all.  admitted is 0 or 1, so the
 * two together are every row: the answer never depends on admission,
 * only its cost does.  For the drainer, which admits as it goes (admit,
 * inbox_claim), one event at a time.
 */
#define HELD_BY(e, from, rid) \
	" EXISTS (SELECT 1 FROM " from \
	"   AND o.object_type = " e ".object_type" \
	"   AND o.object_id = " e ".object_id" \
	"   AND (o.sort_at, o.received_at, o." rid ") <" \
	"       (" e ".sort_at, " e ".received_at, " e ".rowid))"
#define ADMITTED_PENDING \
	"events o INDEXED BY events_object_pending" \
	" WHERE o.admitted = 1 AND o.state = 'pending'"
#define NOT_HELD(e) \
	" (" e ".object_id IS NULL OR NOT (" \
	HELD_BY(e, ADMITTED_PENDING, "rowid") " OR" \
	HELD_BY(e, "events o INDEXED BY events_unadmitted" \
	    " WHERE o.admitted = 0 AND o.state = 'pending'", "rowid") "))"

/*
 * The same for statements that evaluate the hold for many rows (list,
 * status), which do not admit: they stay read-only, and a backlog of
 * unadmitted rows (no drainer for a day) must not make them read it once
 * per row.  The statement starts WITH_UNADMITTED: the pending rows not
 * yet admitted, read once, which SQLite searches through an automatic
 * index on (object_type, object_id) — O((P + U) log U), where NOT_HELD
 * would be O(P × U) (20 000 of each: 0.07 s against 56 s).
 */
#define WITH_UNADMITTED \
	"WITH unadmitted AS MATERIALIZED (SELECT object_type, object_id," \
	" sort_at, received_at, rowid AS rid" \
	" FROM events INDEXED BY events_unadmitted" \
	" WHERE admitted = 0 AND state = 'pending' AND object_id IS NOT NULL) "
#define NOT_HELD_MANY(e) \
	" (" e ".object_id IS NULL OR NOT (" \
	HELD_BY(e, ADMITTED_PENDING, "rowid") " OR" \
	HELD_BY(e, "unadmitted o WHERE 1", "rid") "))"

/*
 * Admit up to ADMIT_CHUNK rows not yet admitted into the hold index, in
 * the caller's write transaction; *n = how many.  Returns SQLite's code.
 */
static int
admit_chunk(struct inbox *ib, int *n)
{
	int rc;

	*n = 0;
	if (ib->admit == NULL && (rc = prepare(ib,
	    "UPDATE events SET admitted = 1 WHERE rowid IN"
	    " (SELECT rowid FROM events INDEXED BY events_unadmitted"
	    "  WHERE admitted = 0 LIMIT ?1)", &ib->admit)) != SQLITE_OK)
		return rc;
	if ((rc = sqlite3_bind_int(ib->admit, 1, ADMIT_CHUNK)) != SQLITE_OK ||
	    (rc = step_done(ib->admit)) != SQLITE_OK)
		return rc;
	*n = sqlite3_changes(ib->db);
	return SQLITE_OK;
}

/*
 * Admit every row not yet admitted, ADMIT_CHUNK per transaction.  Only
 * performance depends on it (NOT_HELD), so a failure (busy past the
 * timeout, a read-only inbox) is left for the next call.  Outside any
 * transaction.
 */
static void
admit(struct inbox *ib)
{
	int n;

	ib->admitted_ns = util_mono_ns();
	do {
		if (begin(ib) != SQLITE_OK)
			break;
		if (admit_chunk(ib, &n) != SQLITE_OK || commit(ib) != SQLITE_OK) {
			rollback(ib);
			break;
		}
	} while (n == ADMIT_CHUNK);
}

enum inbox_status
inbox_next_due(struct inbox *ib, struct inbox_cursor *cur, int64_t now_ns,
    int64_t settle_ns, struct inbox_event *e, struct buf *err)
{
	static const char sql[] =
	    /* INDEXED BY: walk the pending events in hand-out order; left to
	     * itself the planner may scan and sort every pending row per
	     * event (O(n^2) over a backlog; docs/inbox-rules.md). */
	    "SELECT " EVENT_COLUMNS ", body FROM events e INDEXED BY events_pending"
	    " WHERE state = 'pending' AND next_at <= ?1"
	    " AND (requeued = 1 OR received_at <= ?2)"
	    /* The cursor: a range the index seeks to.  Before the first
	     * event it is ('', '', 0), which sorts before every instant. */
	    " AND (sort_at, received_at, rowid) > (?4, ?5, ?6)"
	    " AND" NOT_HELD("e")
	    " ORDER BY sort_at, received_at, rowid LIMIT 1";
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE], settled[INSTANT_SIZE];
	enum inbox_status s = INBOX_NOT_FOUND;
	int rc;

	/* What arrived since the last call's admission, at most once a
	 * second: NOT_HELD reads every row not yet admitted. */
	if (ib->admitted_ns == 0 ||
	    util_mono_ns() - ib->admitted_ns >= ADMIT_EVERY_NS)
		admit(ib);
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_instant(st, 1, now_ns, now)) != SQLITE_OK ||
	    (rc = bind_instant(st, 2, now_ns - settle_ns, settled)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 4, cur->sort_at, -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 5, cur->received_at, -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 6, cur->seq)) != SQLITE_OK) {
		s = db_fail(ib, err, "finding due events", rc);
		goto out;
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (read_event(st, e, 1) == -1) {
			buf_reset(err);
			(void)buf_printf(err, "%s: out of memory", ib->path);
			s = INBOX_FAILED;
			goto out;
		}
		memcpy(cur->sort_at, e->sort_at, INSTANT_SIZE);
		memcpy(cur->received_at, e->received_at, INSTANT_SIZE);
		cur->seq = e->seq;
		cur->started = 1;
		s = INBOX_OK;
	} else if (rc != SQLITE_DONE) {
		s = db_fail(ib, err, "finding due events", rc);
	}
out:
	sqlite3_finalize(st);
	return s;
}

/* The stale rule against the object's clocks; *stale 0/1.  Runs inside the
 * caller's transaction when there is one. */
static int
check_stale(struct inbox *ib, const struct inbox_event *e, int *stale)
{
	static const char sql[] =
	    "SELECT (?3 IS NOT NULL AND done_created_at IS NOT NULL"
	    "        AND ?3 < done_created_at)"
	    "    OR (?4 IS NOT NULL AND done_updated_at IS NOT NULL"
	    "        AND ?4 < done_updated_at)"
	    " FROM objects WHERE object_type = ?1 AND object_id = ?2";
	sqlite3_stmt *st = NULL;
	int rc;

	*stale = 0;
	if (e->object_id == NULL || e->object_type == NULL)
		return SQLITE_OK;
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_text(st, 1, e->object_type)) != SQLITE_OK ||
	    (rc = bind_text(st, 2, e->object_id)) != SQLITE_OK ||
	    (rc = bind_text(st, 3, e->created_at)) != SQLITE_OK ||
	    (rc = bind_text(st, 4, e->updated_at)) != SQLITE_OK)
		goto out;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*stale = sqlite3_column_int(st, 0);
		rc = SQLITE_OK;
	} else if (rc == SQLITE_DONE) {
		rc = SQLITE_OK;
	}
out:
	sqlite3_finalize(st);
	return rc;
}

enum inbox_status
inbox_is_stale(struct inbox *ib, const struct inbox_event *e, int *stale,
    struct buf *err)
{
	int rc = check_stale(ib, e, stale);

	return rc == SQLITE_OK ? INBOX_OK : db_fail(ib, err, "stale check", rc);
}

/* Run an UPDATE/INSERT/DELETE with its parameters bound by the caller's
 * callback-free protocol: prepare, bind text/int params, step. */
static int
run_stmt(struct inbox *ib, sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	(void)ib;
	return rc == SQLITE_DONE ? SQLITE_OK : rc;
}

enum inbox_status
inbox_claim(struct inbox *ib, struct inbox_event *e, int64_t now_ns,
    enum inbox_claim *claim, struct buf *err)
{
	static const char recheck[] =
	    "SELECT requeued FROM events e WHERE webhook_id = ?1"
	    " AND state = 'pending' AND" NOT_HELD("e");
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc, stale, n;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	/* Admit what arrived since the last claim, in this transaction (its
	 * sync serves both): the recheck then reads no row not yet admitted,
	 * and while deliveries keep arriving inbox_next_due only meets the
	 * few that came during one hand-out (NOT_HELD reads them all). */
	if ((rc = admit_chunk(ib, &n)) != SQLITE_OK)
		goto fail;
	if ((rc = sqlite3_prepare_v2(ib->db, recheck, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_text(st, 1, e->webhook_id)) != SQLITE_OK)
		goto fail;
	rc = sqlite3_step(st);
	if (rc == SQLITE_DONE) {
		*claim = INBOX_SKIPPED;		/* keep what admit_chunk did */
		return txn_commit(ib, st, err, "admitting events");
	}
	if (rc != SQLITE_ROW)
		goto fail;
	e->requeued = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = check_stale(ib, e, &stale)) != SQLITE_OK)
		goto fail;
	if (stale && !e->requeued) {
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "UPDATE events SET state = 'stale', finished_at = ?2"
		    " WHERE webhook_id = ?1", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
		    (rc = bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
		    (rc = run_stmt(ib, st)) != SQLITE_OK)
			goto fail;
		*claim = INBOX_MARKED_STALE;
	} else {
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "UPDATE events SET attempts = attempts + 1"
		    " WHERE webhook_id = ?1", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
		    (rc = run_stmt(ib, st)) != SQLITE_OK)
			goto fail;
		e->attempts++;
		*claim = stale ? INBOX_CLAIMED_STALE : INBOX_CLAIMED;
	}
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = commit(ib)) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return txn_fail(ib, st, err, "claiming an event", rc);
}

static int
bind_output(sqlite3_stmt *st, int i, const void *output, size_t len)
{
	if (output == NULL || len == 0)
		return sqlite3_bind_null(st, i);
	if (len > OUTPUT_KEEP) {	/* keep the tail: the end says why */
		output = (const char *)output + (len - OUTPUT_KEEP);
		len = OUTPUT_KEEP;
	}
	return sqlite3_bind_blob64(st, i, output, len, SQLITE_STATIC);
}

/* The later of two normalised instants ("" counts as none). */
static const char *
later(const char *a, const char *b)
{
	if (a[0] == '\0')
		return b;
	if (b[0] == '\0')
		return a;
	return strcmp(a, b) >= 0 ? a : b;
}

enum inbox_status
inbox_finish_stale(struct inbox *ib, const struct inbox_event *e,
    int64_t now_ns, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "UPDATE events SET state = 'stale', finished_at = ?2, requeued = 0"
	    " WHERE webhook_id = ?1 AND state = 'pending'", -1, &st,
	    NULL)) != SQLITE_OK ||
	    (rc = bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
	    (rc = bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
	    (rc = run_stmt(ib, st)) != SQLITE_OK)
		return txn_fail(ib, st, err, "marking stale", rc);
	return txn_commit(ib, st, err, "marking stale");
}

/* Bind and run the prepared insert for one delivery, inside the caller's
 * transaction; *changed 0/1. */
static int
insert_one(struct inbox *ib, const struct inbox_delivery *d, int *changed)
{
	const struct event_fields *f = d->fields;
	sqlite3_stmt *st = ib->insert;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = bind_text(st, 1, d->webhook_id)) != SQLITE_OK ||
	    (rc = sqlite3_bind_blob64(st, 2, d->body != NULL ? d->body : "",
	    d->body_len, SQLITE_STATIC)) != SQLITE_OK ||
	    /* received_at is taken inside the lock, so arrival order and
	     * commit order agree. */
	    (rc = bind_instant(st, 3, util_now_ns(), now)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 4, d->webhook_timestamp)) != SQLITE_OK ||
	    (rc = bind_text(st, 5, d->secret_fp)) != SQLITE_OK ||
	    (rc = bind_text(st, 6, f->type)) != SQLITE_OK ||
	    (rc = bind_text(st, 7, f->created_at)) != SQLITE_OK ||
	    (rc = bind_text(st, 8, f->created_at_raw)) != SQLITE_OK ||
	    (rc = bind_text(st, 9, f->object_type)) != SQLITE_OK ||
	    (rc = bind_text(st, 10, f->object_id)) != SQLITE_OK ||
	    (rc = bind_text(st, 11, f->updated_at)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int(st, 12, f->truncated)) != SQLITE_OK)
		goto out;
	rc = sqlite3_step(st);
	*changed = sqlite3_changes(ib->db);
	rc = rc == SQLITE_DONE ? SQLITE_OK : rc;
out:
	sqlite3_clear_bindings(st);
	sqlite3_reset(st);
	return rc;
}

enum inbox_status
inbox_store_batch(struct inbox *ib, const struct inbox_delivery *d, size_t n,
    const char *cursor_name, const char *updated_after, const char *page,
    int64_t *stored, int *changed_out, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	size_t i;
	int rc, changed;

	*stored = 0;
	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	for (i = 0; i < n; i++) {
		if ((rc = insert_one(ib, &d[i], &changed)) != SQLITE_OK)
			goto fail;
		*stored += changed;
		if (changed_out != NULL)
			changed_out[i] = changed;
	}
	if (cursor_name != NULL) {
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "INSERT INTO cursors (name, updated_after, page) VALUES (?1, ?2, ?3)"
		    " ON CONFLICT (name) DO UPDATE SET updated_after = excluded.updated_after,"
		    " page = excluded.page", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = bind_text(st, 1, cursor_name)) != SQLITE_OK ||
		    (rc = bind_text(st, 2, updated_after)) != SQLITE_OK ||
		    (rc = bind_text(st, 3, page)) != SQLITE_OK ||
		    (rc = run_stmt(ib, st)) != SQLITE_OK)
			goto fail;
		sqlite3_finalize(st);
		st = NULL;
	}
	if ((rc = commit(ib)) != SQLITE_OK)
		goto fail;
	if (ib->group_commit && (rc = make_durable(ib)) != SQLITE_OK)
		return db_fail(ib, err, "syncing the WAL", rc);
	if (ib->group_commit && !same_files(ib)) {
		buf_reset(err);
		(void)buf_printf(err, "%s: the database or its -wal file was moved "
		    "or deleted while open; not acknowledging into it (reopening)",
		    ib->path);
		return INBOX_FAILED;
	}
	return INBOX_OK;
fail:
	*stored = 0;
	return txn_fail(ib, st, err, "storing a batch", rc);
}

enum inbox_status
inbox_cursor_get(struct inbox *ib, const char *name, char **updated_after,
    char **page, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc, oom = 0;

	*updated_after = *page = NULL;
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT updated_after, page FROM cursors WHERE name = ?1", -1, &st,
	    NULL)) != SQLITE_OK ||
	    (rc = bind_text(st, 1, name)) != SQLITE_OK) {
		sqlite3_finalize(st);
		return db_fail(ib, err, "reading a cursor", rc);
	}
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*updated_after = col_dup(st, 0, &oom);
		*page = col_dup(st, 1, &oom);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_fail(ib, err, "reading a cursor", rc);
	if (oom) {
		free(*updated_after);
		free(*page);
		*updated_after = *page = NULL;
		buf_reset(err);
		(void)buf_printf(err, "%s: out of memory", ib->path);
		return INBOX_FAILED;
	}
	return INBOX_OK;
}

enum inbox_status
inbox_finish_done(struct inbox *ib, const struct inbox_event *e, int64_t now_ns,
    const void *output, size_t output_len, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "UPDATE events SET state = 'done', finished_at = ?2, requeued = 0,"
	    " last_error = NULL, last_output = ?3 WHERE webhook_id = ?1",
	    -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
	    (rc = bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
	    (rc = bind_output(st, 3, output, output_len)) != SQLITE_OK ||
	    (rc = run_stmt(ib, st)) != SQLITE_OK)
		goto fail;
	sqlite3_finalize(st);
	st = NULL;
	if (e->object_id != NULL && e->object_type != NULL) {
		/* Clocks only move forward: max() ignores NULLs' absence via
		 * coalesce, and a requeued old event cannot move them back. */
		if ((rc = sqlite3_prepare_v2(ib->db,
		    "INSERT INTO objects (object_type, object_id, done_created_at,"
		    " done_updated_at, done_at) VALUES (?1, ?2, ?3, ?4, ?5)"
		    " ON CONFLICT (object_type, object_id) DO UPDATE SET"
		    " done_created_at = CASE"
		    "   WHEN excluded.done_created_at IS NULL THEN done_created_at"
		    "   WHEN done_created_at IS NULL THEN excluded.done_created_at"
		    "   ELSE max(done_created_at, excluded.done_created_at) END,"
		    " done_updated_at = CASE"
		    "   WHEN excluded.done_updated_at IS NULL THEN done_updated_at"
		    "   WHEN done_updated_at IS NULL THEN excluded.done_updated_at"
		    "   ELSE max(done_updated_at, excluded.done_updated_at) END,"
		    " done_at = excluded.done_at", -1, &st, NULL)) != SQLITE_OK ||
		    (rc = bind_text(st, 1, e->object_type)) != SQLITE_OK ||
		    (rc = bind_text(st, 2, e->object_id)) != SQLITE_OK ||
		    (rc = bind_text(st, 3, later(e->created_at,
		    e->object_version))) != SQLITE_OK ||
		    (rc = bind_text(st, 4, later(e->updated_at,
		    e->object_version))) != SQLITE_OK ||
		    (rc = sqlite3_bind_text(st, 5, now, -1, SQLITE_STATIC)) != SQLITE_OK ||
		    (rc = run_stmt(ib, st)) != SQLITE_OK)
			goto fail;
		sqlite3_finalize(st);
		st = NULL;
	}
	if ((rc = commit(ib)) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return txn_fail(ib, st, err, "marking done", rc);
}

enum inbox_status
inbox_finish_failed(struct inbox *ib, const struct inbox_event *e,
    int64_t now_ns, int64_t retry_ns, int64_t max_attempts, const char *error,
    const void *output, size_t output_len, int *dead, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE], next[INSTANT_SIZE];
	int rc;

	*dead = 0;
	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "UPDATE events SET failures = failures + 1, last_error = ?2,"
	    " last_output = ?3,"
	    " state = CASE WHEN failures + 1 >= ?4 THEN 'dead' ELSE state END,"
	    " finished_at = CASE WHEN failures + 1 >= ?4 THEN ?5 ELSE NULL END,"
	    " next_at = ?6"
	    " WHERE webhook_id = ?1 AND state = 'pending'"
	    " RETURNING state = 'dead'", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_text(st, 1, e->webhook_id)) != SQLITE_OK ||
	    (rc = bind_text(st, 2, error)) != SQLITE_OK ||
	    (rc = bind_output(st, 3, output, output_len)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 4, max_attempts)) != SQLITE_OK ||
	    (rc = bind_instant(st, 5, now_ns, now)) != SQLITE_OK ||
	    (rc = bind_instant(st, 6, now_ns + retry_ns, next)) != SQLITE_OK)
		return txn_fail(ib, st, err, "recording a failure", rc);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		*dead = sqlite3_column_int(st, 0);
		rc = sqlite3_step(st);
	}
	if (rc != SQLITE_DONE)
		return txn_fail(ib, st, err, "recording a failure", rc);
	return txn_commit(ib, st, err, "recording a failure");
}

/* The operator filter as one fixed WHERE clause with optional parameters
 * (?1 … ?7), so no SQL is ever assembled from input. */
#define FILTER_WHERE \
	" WHERE (?1 IS NULL OR webhook_id = ?1)" \
	" AND (?2 IS NULL OR state = ?2)" \
	" AND (?3 IS NULL OR type GLOB ?3)" \
	" AND (?4 IS NULL OR object_type = ?4)" \
	" AND (?5 IS NULL OR object_id = ?5)" \
	" AND (?6 IS NULL OR received_at >= ?6)" \
	" AND (?7 IS NULL OR received_at < ?7)"

static int
bind_filter(sqlite3_stmt *st, const struct inbox_filter *f,
    char since[INSTANT_SIZE], char until[INSTANT_SIZE])
{
	int rc;

	if ((rc = bind_text(st, 1, f->webhook_id)) != SQLITE_OK ||
	    (rc = bind_text(st, 2, f->state)) != SQLITE_OK ||
	    (rc = bind_text(st, 3, f->type_glob)) != SQLITE_OK ||
	    (rc = bind_text(st, 4, f->object_type)) != SQLITE_OK ||
	    (rc = bind_text(st, 5, f->object_id)) != SQLITE_OK)
		return rc;
	if (f->has_since)
		rc = bind_instant(st, 6, f->since_ns, since);
	if (rc == SQLITE_OK && f->has_until)
		rc = bind_instant(st, 7, f->until_ns, until);
	return rc;
}

enum inbox_status
inbox_list(struct inbox *ib, const struct inbox_filter *f, int with_body,
    int (*fn)(const struct inbox_event *, void *), void *arg, struct buf *err)
{
	static const char sql[] =
	    WITH_UNADMITTED
	    "SELECT " EVENT_COLUMNS ", CASE WHEN ?9 THEN body END,"
	    " state = 'pending' AND NOT" NOT_HELD_MANY("e")
	    " FROM events e" FILTER_WHERE
	    " ORDER BY sort_at, received_at, rowid LIMIT ?8";
	sqlite3_stmt *st = NULL;
	struct inbox_event e;
	char since[INSTANT_SIZE], until[INSTANT_SIZE];
	enum inbox_status s = INBOX_OK;
	int rc;

	inbox_event_init(&e);
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_filter(st, f, since, until)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int64(st, 8, f->limit > 0 ? f->limit : -1)) != SQLITE_OK ||
	    (rc = sqlite3_bind_int(st, 9, with_body)) != SQLITE_OK) {
		s = db_fail(ib, err, "listing events", rc);
		goto out;
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (read_event(st, &e, with_body) == -1) {
			buf_reset(err);
			(void)buf_printf(err, "%s: out of memory", ib->path);
			s = INBOX_FAILED;
			goto out;
		}
		e.blocked = sqlite3_column_int(st, EVENT_NCOLUMNS + 1);
		if (fn(&e, arg) == -1)
			goto out;
	}
	if (rc != SQLITE_DONE)
		s = db_fail(ib, err, "listing events", rc);
out:
	inbox_event_free(&e);
	sqlite3_finalize(st);
	return s;
}

enum inbox_status
inbox_count(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char since[INSTANT_SIZE], until[INSTANT_SIZE];
	enum inbox_status s = INBOX_OK;
	int rc;

	if ((rc = sqlite3_prepare_v2(ib->db, "SELECT count(*) FROM events"
	    FILTER_WHERE, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_filter(st, f, since, until)) != SQLITE_OK ||
	    (rc = sqlite3_step(st)) != SQLITE_ROW)
		s = db_fail(ib, err, "counting events", rc);
	else
		*n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return s;
}

/* One filtered write in one transaction; *n = rows changed. */
static enum inbox_status
filtered_write(struct inbox *ib, const char *sql, const struct inbox_filter *f,
    int64_t now_ns, int64_t *n, const char *what, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char since[INSTANT_SIZE], until[INSTANT_SIZE], now[INSTANT_SIZE];
	int rc;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) != SQLITE_OK ||
	    (rc = bind_filter(st, f, since, until)) != SQLITE_OK ||
	    (sqlite3_bind_parameter_count(st) >= 8 &&
	    (rc = bind_instant(st, 8, now_ns, now)) != SQLITE_OK) ||
	    (rc = run_stmt(ib, st)) != SQLITE_OK)
		goto fail;
	*n = sqlite3_changes(ib->db);
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = commit(ib)) != SQLITE_OK)
		goto fail;
	return INBOX_OK;
fail:
	return txn_fail(ib, st, err, what, rc);
}

enum inbox_status
inbox_requeue(struct inbox *ib, const struct inbox_filter *f, int64_t now_ns,
    int64_t *n, struct buf *err)
{
	/* An event whose body retention dropped has nothing to hand out:
	 * it stays as it is (the caller says how to get it back). */
	return filtered_write(ib,
	    "UPDATE events SET state = 'pending', failures = 0, requeued = 1,"
	    " next_at = ?8, finished_at = NULL" FILTER_WHERE
	    " AND body IS NOT NULL", f, now_ns, n, "requeueing", err);
}

enum inbox_status
inbox_forget(struct inbox *ib, const struct inbox_filter *f, int64_t *n,
    struct buf *err)
{
	return filtered_write(ib, "DELETE FROM events" FILTER_WHERE, f, 0, n,
	    "forgetting", err);
}

/* One batch of a purge statement; returns rows changed or -1. */
static int64_t
purge_batch(struct inbox *ib, const char *sql, const char *cutoff, int *rc)
{
	sqlite3_stmt *st = NULL;
	int64_t n = -1;

	if ((*rc = begin(ib)) != SQLITE_OK)
		return -1;
	if ((*rc = sqlite3_prepare_v2(ib->db, sql, -1, &st, NULL)) == SQLITE_OK &&
	    (*rc = sqlite3_bind_text(st, 1, cutoff, -1, SQLITE_STATIC)) == SQLITE_OK &&
	    (*rc = sqlite3_bind_int(st, 2, INBOX_PURGE_BATCH)) == SQLITE_OK &&
	    (*rc = run_stmt(ib, st)) == SQLITE_OK) {
		n = sqlite3_changes(ib->db);
		*rc = commit(ib);
	}
	sqlite3_finalize(st);
	if (*rc != SQLITE_OK) {
		rollback(ib);
		return -1;
	}
	return n;
}

enum inbox_status
inbox_purge(struct inbox *ib, int64_t now_ns, int64_t retention_ns,
    int64_t *bodies, int64_t *rows, struct buf *err)
{
	static const char *const sql[] = {
		/* bodies of finished events past retention */
		"UPDATE events SET body = NULL, last_output = NULL"
		" WHERE rowid IN (SELECT rowid FROM events"
		"  WHERE finished_at IS NOT NULL AND finished_at < ?1"
		"  AND state IN ('done', 'stale')"
		"  AND (body IS NOT NULL OR last_output IS NOT NULL) LIMIT ?2)",
		/* ids past max(retention, 31 d) */
		"DELETE FROM events WHERE rowid IN (SELECT rowid FROM events"
		"  WHERE finished_at IS NOT NULL AND finished_at < ?1"
		"  AND state IN ('done', 'stale') LIMIT ?2)",
		/* object clocks not advanced since */
		"DELETE FROM objects WHERE (object_type, object_id) IN"
		" (SELECT object_type, object_id FROM objects"
		"  WHERE done_at < ?1 LIMIT ?2)",
	};
	char cut_body[INSTANT_SIZE], cut_ids[INSTANT_SIZE];
	int64_t keep_ids = retention_ns > INBOX_KEEP_IDS_NS ? retention_ns :
	    INBOX_KEEP_IDS_NS;
	int64_t got;
	int rc = SQLITE_OK, i;

	*bodies = *rows = 0;
	if (instant_format(now_ns - retention_ns, cut_body) == -1 ||
	    instant_format(now_ns - keep_ids, cut_ids) == -1) {
		buf_reset(err);
		(void)buf_printf(err, "%s: purge: clock out of range", ib->path);
		return INBOX_FAILED;
	}
	for (i = 0; i < 3; i++) {
		do {
			got = purge_batch(ib, sql[i], i == 0 ? cut_body : cut_ids, &rc);
			if (got < 0)
				return db_fail(ib, err, "purging", rc);
			if (i == 0)
				*bodies += got;
			else if (i == 1)
				*rows += got;
		} while (got == INBOX_PURGE_BATCH);
	}
	return INBOX_OK;
}

static void
meta_get(struct inbox *ib, const char *key, char *out, size_t outsz)
{
	sqlite3_stmt *st = NULL;

	out[0] = '\0';
	if (sqlite3_prepare_v2(ib->db, "SELECT value FROM meta WHERE key = ?1",
	    -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0) != NULL)
		snprintf(out, outsz, "%s", sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
}

enum inbox_status
inbox_status_report(struct inbox *ib, struct inbox_status_report *r,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	int rc;

	memset(r, 0, sizeof *r);
	/* One read transaction, so the figures agree with each other. */
	if ((rc = exec(ib, "BEGIN")) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT state, count(*) FROM events GROUP BY state", -1, &st,
	    NULL)) != SQLITE_OK)
		goto fail;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *s = (const char *)sqlite3_column_text(st, 0);
		int64_t n = sqlite3_column_int64(st, 1);
		if (s == NULL)
			continue;
		if (strcmp(s, "pending") == 0)
			r->pending = n;
		else if (strcmp(s, "done") == 0)
			r->done = n;
		else if (strcmp(s, "stale") == 0)
			r->stale = n;
		else if (strcmp(s, "dead") == 0)
			r->dead = n;
	}
	if (rc != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "SELECT min(received_at), sum(failures > 0) FROM events"
	    " WHERE state = 'pending'", -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	col_instant(st, 0, r->oldest_pending);
	r->waiting_retry = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	st = NULL;
	if ((rc = sqlite3_prepare_v2(ib->db,
	    WITH_UNADMITTED
	    "SELECT count(*) FROM events e WHERE state = 'pending'"
	    " AND object_id IS NOT NULL AND NOT" NOT_HELD_MANY("e"), -1, &st,
	    NULL)) != SQLITE_OK || (rc = sqlite3_step(st)) != SQLITE_ROW)
		goto fail;
	r->blocked = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	meta_get(ib, "last_run_started", r->last_run_started,
	    sizeof r->last_run_started);
	meta_get(ib, "last_run_finished", r->last_run_finished,
	    sizeof r->last_run_finished);
	meta_get(ib, "last_run_outcome", r->last_run_outcome,
	    sizeof r->last_run_outcome);
	meta_get(ib, "lock_busy_since", r->lock_busy_since,
	    sizeof r->lock_busy_since);
	(void)exec(ib, "COMMIT");
	return INBOX_OK;
fail:
	return txn_fail(ib, st, err, "status", rc);
}

enum inbox_status
inbox_note_lock(struct inbox *ib, int64_t now_ns, int busy, struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db, busy ?
	    "INSERT INTO meta (key, value) VALUES ('lock_busy_since', ?1)"
	    " ON CONFLICT (key) DO NOTHING" :
	    "DELETE FROM meta WHERE key = 'lock_busy_since'", -1, &st,
	    NULL)) != SQLITE_OK ||
	    (busy && (rc = bind_instant(st, 1, now_ns, now)) != SQLITE_OK) ||
	    (rc = run_stmt(ib, st)) != SQLITE_OK)
		return txn_fail(ib, st, err, "noting the run lock", rc);
	return txn_commit(ib, st, err, "noting the run lock");
}

enum inbox_status
inbox_probe_write(struct inbox *ib, struct buf *err)
{
	int rc;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "taking the write lock", rc);
	rc = exec(ib, "INSERT INTO meta (key, value) VALUES ('check', 1)"
	    " ON CONFLICT (key) DO UPDATE SET value = value + 1");
	{
		enum inbox_status s = rc == SQLITE_OK ? INBOX_OK :
		    db_fail(ib, err, "writing", rc);
		rollback(ib);
		return s;
	}
}

enum inbox_status
inbox_note_run(struct inbox *ib, int64_t now_ns, const char *outcome,
    struct buf *err)
{
	sqlite3_stmt *st = NULL;
	char now[INSTANT_SIZE];
	int rc;

	if ((rc = begin(ib)) != SQLITE_OK)
		return db_fail(ib, err, "begin", rc);
	if ((rc = sqlite3_prepare_v2(ib->db,
	    "INSERT INTO meta (key, value) VALUES (?1, ?2), (?3, ?4)"
	    " ON CONFLICT (key) DO UPDATE SET value = excluded.value",
	    -1, &st, NULL)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 1, outcome == NULL ? "last_run_started" :
	    "last_run_finished", -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = bind_instant(st, 2, now_ns, now)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 3, "last_run_outcome", -1,
	    SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = sqlite3_bind_text(st, 4, outcome == NULL ? "running" : outcome,
	    -1, SQLITE_STATIC)) != SQLITE_OK ||
	    (rc = run_stmt(ib, st)) != SQLITE_OK)
		return txn_fail(ib, st, err, "noting the run", rc);
	return txn_commit(ib, st, err, "noting the run");
}
