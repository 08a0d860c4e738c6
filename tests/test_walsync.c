/*
 * test_walsync: lib/store/sqlite/walsync.c — receiver processes share WAL
 * syncs (docs/durability.md "Several processes: shared syncs").  The rule
 * under test: a commit returns only after a sync that STARTED after its
 * ticket was taken has completed, its own or another process's; never waits
 * long for a slow or dead syncer; never trusts a sync that failed or a file
 * it does not recognise.  The "sync" here is a callback that counts its
 * calls in shared memory (and may sleep, fail or be killed), so each
 * scenario is exact; the real fdatasync is exercised by
 * tests/e2e_durability.py.  Files live in one mkdtemp directory.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/common/util.h"
#include "lib/store/sqlite/walsync.h"
#include "tests/check_common.h"

static char dir[] = "/tmp/webhook-test-walsync-XXXXXX";

/* Shared between the test's processes. */
struct counters {
	int	syncs;		/* sync callbacks that ran, all processes */
	int	started;	/* syncs begun (the slow syncer raises it first) */
};

static struct counters *ctr;

/* What the sync callback does, per process. */
static int sync_sleep_ms;	/* sleep this long inside the sync */
static int sync_result;		/* return this */

static int
fake_sync(void *arg)
{
	(void)arg;
	__atomic_add_fetch(&ctr->started, 1, __ATOMIC_SEQ_CST);
	if (sync_sleep_ms > 0)
		usleep((useconds_t)sync_sleep_ms * 1000);
	__atomic_add_fetch(&ctr->syncs, 1, __ATOMIC_SEQ_CST);
	return sync_result;
}

/* A sync of 0.2 ms, the order of a real one on an SSD. */
static int
slow_sync(void *arg)
{
	(void)arg;
	usleep(200);
	__atomic_add_fetch(&ctr->syncs, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static int
is_live(void *arg)
{
	(void)arg;
	return 1;
}

static void
db_path(char *out, size_t n, const char *name)
{
	snprintf(out, n, "%s/%s.db", dir, name);
}

static struct walsync *
open_ok(const char *db)
{
	struct walsync *ws = NULL;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	ck_assert_msg(walsync_open(db, &ws, &err) == 0, "walsync_open: %s",
	    err.data ? err.data : "");
	buf_free(&err);
	return ws;
}

static void
setup(void)
{
	ctr = mmap(NULL, sizeof *ctr, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(ctr, MAP_FAILED);
	memset(ctr, 0, sizeof *ctr);
	sync_sleep_ms = 0;
	sync_result = 0;
}

static void
wait_started(int n)
{
	int i;

	for (i = 0; i < 2000 && __atomic_load_n(&ctr->started, __ATOMIC_SEQ_CST) < n; i++)
		usleep(1000);
	ck_assert_int_ge(ctr->started, n);
}

static int64_t
ms_since(int64_t t0)
{
	return (util_mono_ns() - t0) / 1000000;
}

/* Alone, every commit gets its own sync: nothing else can cover it. */
/* The WAL's name (plain CGI): known only for the very file recorded,
 * by every handle on the page, and never for a zero record (an older
 * file, or none yet). */
START_TEST(the_wal_named_is_that_file_only)
{
	char db[256];
	struct walsync *a, *b;

	db_path(db, sizeof db, "named");
	a = open_ok(db);
	b = open_ok(db);
	ck_assert(!walsync_wal_is_named(b, 0, 0));
	ck_assert(!walsync_wal_is_named(b, 2049, 77));
	walsync_wal_named(a, 2049, 77);
	ck_assert(walsync_wal_is_named(b, 2049, 77));
	ck_assert(!walsync_wal_is_named(b, 2049, 78));	/* made anew */
	ck_assert(!walsync_wal_is_named(b, 2050, 77));	/* another disk */
	walsync_wal_named(b, 2049, 78);
	ck_assert(!walsync_wal_is_named(a, 2049, 77));
	ck_assert(walsync_wal_is_named(a, 2049, 78));
	walsync_close(a);
	walsync_close(b);
}
END_TEST

START_TEST(alone_each_commit_syncs)
{
	char db[256];
	struct walsync *ws;
	int i;

	setup();
	db_path(db, sizeof db, "alone");
	ws = open_ok(db);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_int_eq(ctr->syncs, 5);
	walsync_close(ws);
}
END_TEST

/*
 * Three processes commit while a fourth's sync runs.  That sync read the
 * counter before they committed, so it covers none of them; when it ends,
 * ONE of them syncs for all three.  Four syncs for four commits would mean
 * no sharing; three for four would mean a commit trusted a sync that began
 * before it.
 */
START_TEST(commits_during_a_sync_share_the_next)
{
	char db[256];
	struct walsync *ws;
	pid_t kids[3];
	int i, status;

	setup();
	db_path(db, sizeof db, "share");
	ws = open_ok(db);
	for (i = 0; i < 3; i++) {
		if ((kids[i] = fork()) == 0) {
			struct walsync *mine = open_ok(db);
			wait_started(1);	/* the parent's sync is running */
			_exit(walsync_commit(mine, fake_sync, is_live, NULL) == 0 ? 0 : 1);
		}
	}
	sync_sleep_ms = 100;	/* < WALSYNC_WAIT_MS: they wait for it */
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
	ck_assert_int_eq(ctr->syncs, 2);
	walsync_close(ws);
}
END_TEST

/* A syncer that hangs (here: sleeps 3 s) holds nobody up for longer than
 * WALSYNC_WAIT_MS: the others sync by themselves. */
START_TEST(a_hung_syncer_stalls_nobody)
{
	char db[256];
	struct walsync *ws;
	int64_t t0;
	pid_t kid;
	int status;

	setup();
	db_path(db, sizeof db, "hung");
	if ((kid = fork()) == 0) {
		struct walsync *mine = open_ok(db);
		sync_sleep_ms = 3000;
		(void)walsync_commit(mine, fake_sync, is_live, NULL);
		_exit(0);
	}
	ws = open_ok(db);
	wait_started(1);
	t0 = util_mono_ns();
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_int_lt(ms_since(t0), 1000);
	ck_assert_int_eq(ctr->syncs, 1);	/* ours; the child's still sleeps */
	kill(kid, SIGKILL);
	waitpid(kid, &status, 0);
	walsync_close(ws);
}
END_TEST

/* A syncer killed mid-sync: the kernel drops its lock, the next commit
 * syncs by itself (it must not count the dead one's sync as done). */
START_TEST(a_killed_syncer_covers_nobody)
{
	char db[256];
	struct walsync *ws;
	int64_t t0;
	pid_t kid;
	int status;

	setup();
	db_path(db, sizeof db, "killed");
	if ((kid = fork()) == 0) {
		struct walsync *mine = open_ok(db);
		sync_sleep_ms = 10000;
		(void)walsync_commit(mine, fake_sync, is_live, NULL);
		_exit(0);
	}
	ws = open_ok(db);
	wait_started(1);
	kill(kid, SIGKILL);
	waitpid(kid, &status, 0);
	t0 = util_mono_ns();
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_int_lt(ms_since(t0), 1000);
	ck_assert_int_eq(ctr->syncs, 1);
	walsync_close(ws);
}
END_TEST

/* A failed sync is passed on and covers nobody: the next commit syncs. */
START_TEST(a_failed_sync_covers_nobody)
{
	char db[256];
	struct walsync *ws;

	setup();
	db_path(db, sizeof db, "failed");
	ws = open_ok(db);
	sync_result = 10;	/* SQLITE_IOERR */
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 10);
	sync_result = 0;
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_int_eq(ctr->syncs, 2);
	walsync_close(ws);
}
END_TEST

/* The counters, read straight from the file (words 2 and 3). */
static uint64_t
file_word(const char *db, off_t off)
{
	char path[300];
	uint64_t v = 0;
	int fd;

	snprintf(path, sizeof path, "%s.wal-sync", db);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &v, sizeof v, off), (ssize_t)sizeof v);
	close(fd);
	return v;
}

static void
file_set(const char *db, off_t off, uint64_t v)
{
	char path[300];
	int fd;

	snprintf(path, sizeof path, "%s.wal-sync", db);
	fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, &v, sizeof v, off), (ssize_t)sizeof v);
	close(fd);
}

#define COMMITTED	8
#define SYNCED		16

/*
 * What a sync records for the others: the tickets taken before it began,
 * and only when it succeeded, on the WAL at the database's path, with the
 * counter not gone backwards meanwhile.  (The positive case first: it is
 * what makes the negative ones mean something.)
 */
static int
not_live(void *arg)
{
	(void)arg;
	return 0;
}

static const char *reset_db;

/* A sync during which the file is zeroed, as when it is truncated and
 * another process re-creates it. */
static int
sync_while_file_reset(void *arg)
{
	(void)arg;
	file_set(reset_db, COMMITTED, 0);
	file_set(reset_db, SYNCED, 0);
	__atomic_add_fetch(&ctr->syncs, 1, __ATOMIC_SEQ_CST);
	return 0;
}

START_TEST(a_sync_records_the_tickets_before_it)
{
	char db[256];
	struct walsync *ws;

	setup();
	db_path(db, sizeof db, "records");
	ws = open_ok(db);
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_uint_eq(file_word(db, COMMITTED), 1);
	ck_assert_uint_eq(file_word(db, SYNCED), 1);
	walsync_close(ws);
}
END_TEST

START_TEST(a_dead_wal_records_nothing)
{
	char db[256];
	struct walsync *ws;

	setup();
	db_path(db, sizeof db, "deadwal");
	ws = open_ok(db);
	ck_assert_int_eq(walsync_commit(ws, fake_sync, not_live, NULL), 0);
	ck_assert_int_eq(ctr->syncs, 1);	/* synced for itself */
	ck_assert_uint_eq(file_word(db, SYNCED), 0);
	walsync_close(ws);
}
END_TEST

START_TEST(a_failed_sync_records_nothing)
{
	char db[256];
	struct walsync *ws;

	setup();
	db_path(db, sizeof db, "failwal");
	ws = open_ok(db);
	sync_result = 10;	/* SQLITE_IOERR */
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 10);
	ck_assert_uint_eq(file_word(db, SYNCED), 0);
	walsync_close(ws);
}
END_TEST

START_TEST(a_counter_gone_backwards_records_nothing)
{
	char db[256];
	struct walsync *ws;
	int i;

	setup();
	db_path(db, sizeof db, "reset");
	reset_db = db;
	ws = open_ok(db);
	for (i = 0; i < 100; i++)
		ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	/* Ticket 101; the file is zeroed during its sync: recording 101
	 * would cover the next 100 tickets, none of them synced. */
	ck_assert_int_eq(walsync_commit(ws, sync_while_file_reset, is_live, NULL), 0);
	ck_assert_uint_eq(file_word(db, SYNCED), 0);
	ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_int_eq(ctr->syncs, 102);
	walsync_close(ws);
}
END_TEST

/*
 * Liveness under contention: three processes commit 400 times each with a
 * 0.2 ms sync.  No commit may sleep for a wake-up that already happened:
 * a waiter that read the generation counter before the syncer bumped it
 * but found the lock still held used to sleep out the whole
 * WALSYNC_WAIT_MS.  Every commit must end well before that (the bound is
 * WALSYNC_WAIT_MS itself, far above a healthy commit's time here, so only
 * a missed wake-up, not a slow machine, reaches it).
 */
START_TEST(no_commit_sleeps_past_a_finished_sync)
{
	char db[256];
	pid_t kids[3];
	int i, status, slow = 0;

	setup();
	db_path(db, sizeof db, "liveness");
	for (i = 0; i < 3; i++) {
		if ((kids[i] = fork()) == 0) {
			struct walsync *mine = open_ok(db);
			int n, late = 0;

			sync_sleep_ms = 0;
			for (n = 0; n < 400; n++) {
				int64_t t0;

				usleep(200);	/* work between commits */
				t0 = util_mono_ns();
				if (walsync_commit(mine, slow_sync, is_live, NULL) != 0)
					_exit(2);
				if (ms_since(t0) >= WALSYNC_WAIT_MS)
					late++;
			}
			_exit(late > 0 ? 1 : 0);
		}
	}
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(waitpid(kids[i], &status, 0), kids[i]);
		ck_assert(WIFEXITED(status));
		ck_assert_int_ne(WEXITSTATUS(status), 2);
		slow += WEXITSTATUS(status);
	}
	ck_assert_msg(slow == 0, "%d of 3 processes had a commit wait %d ms "
	    "or more for a sync that had already ended", slow, WALSYNC_WAIT_MS);
	ck_assert_int_gt(ctr->syncs, 0);
	ck_assert_int_lt(ctr->syncs, 1200);	/* and they did share */
}
END_TEST

/* A damaged file that claims more is synced than was ever committed
 * covers nobody: each commit syncs. */
START_TEST(synced_beyond_committed_is_not_trusted)
{
	char db[256];
	struct walsync *ws;
	int i;

	setup();
	db_path(db, sizeof db, "damaged");
	ws = open_ok(db);
	file_set(db, SYNCED, 1000000);
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(walsync_commit(ws, fake_sync, is_live, NULL), 0);
	ck_assert_int_eq(ctr->syncs, 3);
	walsync_close(ws);
}
END_TEST

/* A commit as lib/store/sqlite/wal.c's hooks report it: the generation read when it
 * began (commit hook), then its frames (WAL hook). */
static void
commit_frames(struct walsync *ws, int frames)
{
	walsync_written(ws, walsync_write_gen(ws), frames);
}

/* A turn whose checkpoint ran (or was attempted) in `mode`. */
static void
ran(struct walsync *ws, struct walsync_turn *t, int mode)
{
	walsync_turn_checkpoint(ws);
	walsync_turn_end(ws, t, mode);
}

/* Checkpoints wait for a commit that began after the last one ended
 * (SQLite's WAL-reset race, walsync.h): none on a fresh file, one after a
 * commit, then none again until the next commit. */
START_TEST(a_checkpoint_needs_a_commit_since_the_last)
{
	char db[256];
	struct walsync *ws;
	struct walsync_turn t;

	setup();
	db_path(db, sizeof db, "gate");
	ws = open_ok(db);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 0);	/* nothing written */
	commit_frames(ws, 2100);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 1);
	ck_assert(t.open);
	ck_assert_uint_eq(t.frames, 2100);
	ck_assert_int_eq(t.last_mode, 0);
	ran(ws, &t, WALSYNC_PASSIVE);

	walsync_peek(ws, &t);
	ck_assert(!t.open);
	ck_assert_uint_eq(t.last_frames, 2100);
	ck_assert_int_eq(t.last_mode, WALSYNC_PASSIVE);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 0);
	commit_frames(ws, 2200);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 1);
	/* A turn that ran nothing leaves the gate as it was. */
	walsync_turn_end(ws, &t, 0);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 1);
	ran(ws, &t, WALSYNC_RESTART);
	walsync_peek(ws, &t);
	ck_assert(!t.open);
	ck_assert_int_eq(t.last_mode, WALSYNC_RESTART);
	walsync_close(ws);
}
END_TEST

/* A commit that began before a checkpoint ended and wrote its frames
 * after does not open the gate: its frames may be the ones that
 * checkpoint copied.  A slower writer's older generation does not close
 * a gate a newer commit opened. */
START_TEST(a_commit_begun_before_the_checkpoint_ended_does_not_count)
{
	char db[256];
	struct walsync *a, *b;
	struct walsync_turn t;
	uint64_t early, late;

	setup();
	db_path(db, sizeof db, "straddle");
	a = open_ok(db);
	b = open_ok(db);
	commit_frames(b, 3000);
	early = walsync_write_gen(b);		/* b begins a commit */
	ck_assert_int_eq(walsync_turn_begin(a, &t), 1);
	ran(a, &t, WALSYNC_PASSIVE);
	walsync_written(b, early, 3010);	/* ... and ends it after */
	ck_assert_int_eq(walsync_turn_begin(a, &t), 0);
	late = walsync_write_gen(b);
	walsync_written(b, late, 3020);
	walsync_written(a, early, 3015);	/* a slow writer reports late */
	ck_assert_int_eq(walsync_turn_begin(a, &t), 1);
	ran(a, &t, WALSYNC_PASSIVE);
	walsync_close(a);
	walsync_close(b);
}
END_TEST

/* A connection that dies during its checkpoint may have copied every
 * frame back: the next asker ends that turn and takes none, and only a
 * commit that begins after that reopens the gate. */
START_TEST(a_checkpointer_killed_mid_checkpoint_closes_the_gate)
{
	char db[256];
	struct walsync *ws;
	struct walsync_turn t;
	uint64_t during;
	pid_t kid;
	int status;

	setup();
	db_path(db, sizeof db, "killed");
	ws = open_ok(db);
	commit_frames(ws, 2500);
	if ((kid = fork()) == 0) {
		struct walsync *c = open_ok(db);
		struct walsync_turn u;
		if (walsync_turn_begin(c, &u) != 1)
			_exit(1);
		walsync_turn_checkpoint(c);
		raise(SIGKILL);		/* before walsync_turn_end */
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFSIGNALED(status));
	during = walsync_write_gen(ws);		/* began while it ran */
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 0);	/* ends it */
	walsync_written(ws, during, 2510);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 0);
	commit_frames(ws, 2520);
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 1);
	ran(ws, &t, WALSYNC_PASSIVE);
	walsync_close(ws);
}
END_TEST

/* One checkpoint turn at a time, across handles and processes; the role
 * is given up at the end of each turn (an idle process must not keep it:
 * nobody else could checkpoint) and when its holder dies. */
START_TEST(one_checkpointer_at_a_time)
{
	char db[256];
	struct walsync *a, *b;
	struct walsync_turn t;
	pid_t kid;
	int status;

	setup();
	db_path(db, sizeof db, "role");
	a = open_ok(db);
	b = open_ok(db);
	commit_frames(a, 2000);
	ck_assert_int_eq(walsync_turn_begin(a, &t), 1);
	ck_assert_int_eq(walsync_turn_begin(b, &t), 0);	/* a's turn */
	if ((kid = fork()) == 0) {
		struct walsync *c = open_ok(db);
		struct walsync_turn u;
		_exit(walsync_turn_begin(c, &u) == 0 ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ran(a, &t, WALSYNC_PASSIVE);
	commit_frames(a, 4000);
	ck_assert_int_eq(walsync_turn_begin(b, &t), 1);	/* a gave it up */
	ran(b, &t, WALSYNC_PASSIVE);

	/* A holder that dies mid-turn gives the role back with it. */
	commit_frames(a, 6000);
	if ((kid = fork()) == 0) {
		struct walsync *c = open_ok(db);
		struct walsync_turn u;
		if (walsync_turn_begin(c, &u) != 1)
			_exit(1);
		raise(SIGKILL);
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(walsync_turn_begin(b, &t), 1);
	ran(b, &t, WALSYNC_PASSIVE);
	walsync_close(a);
	walsync_close(b);
}
END_TEST

/* Stamps (walsync.h): current only in the epoch and for the inode they
 * were written for, read by every handle; a finding moves the epoch once
 * however many connections make it; void clears. */
START_TEST(a_stamp_is_current_in_its_epoch_for_its_file)
{
	char db[256];
	struct walsync *a, *b;
	struct walsync_stamp s = { .sec = 1700000000, .nsec = 123, .size = 8192,
	    .pgno = 7, .hash = 0xfeedULL }, got;
	uint64_t e;

	db_path(db, sizeof db, "stamp");
	a = open_ok(db);
	b = open_ok(db);
	ck_assert_int_eq(walsync_stamp_get(b, 42, &got), 0);	/* never */
	e = walsync_epoch(a);
	walsync_stamp_set(a, e, 42, &s);
	ck_assert_int_eq(walsync_stamp_get(b, 42, &got), 1);
	ck_assert(got.sec == s.sec && got.nsec == s.nsec && got.size == s.size &&
	    got.pgno == s.pgno && got.hash == s.hash);
	ck_assert_int_eq(walsync_stamp_get(b, 43, &got), 0);	/* another file */
	/* Two connections find the same copy: one step. */
	walsync_epoch_bump(a, e);
	walsync_epoch_bump(b, e);
	ck_assert(walsync_epoch(b) == e + 1);
	ck_assert_int_eq(walsync_stamp_get(b, 42, &got), 0);	/* old epoch */
	walsync_stamp_set(b, e + 1, 42, &s);
	ck_assert_int_eq(walsync_stamp_get(a, 42, &got), 1);
	walsync_stamp_void(a);
	ck_assert_int_eq(walsync_stamp_get(b, 42, &got), 0);
	walsync_close(a);
	walsync_close(b);
}
END_TEST

/* A checkpointer killed mid-checkpoint may have written the file without
 * stamping it: the turn that ends its checkpoint voids the stamp, so that
 * nobody takes its pages for a stranger's. */
START_TEST(a_checkpointer_killed_mid_checkpoint_voids_the_stamp)
{
	char db[256];
	struct walsync *a;
	struct walsync_stamp s = { .sec = 1, .size = 4096, .pgno = 1 }, got;
	struct walsync_turn t;
	pid_t kid;
	int status;

	setup();
	db_path(db, sizeof db, "stampdead");
	a = open_ok(db);
	walsync_stamp_set(a, walsync_epoch(a), 42, &s);
	commit_frames(a, 2000);
	if ((kid = fork()) == 0) {
		struct walsync *c = open_ok(db);
		struct walsync_turn u;
		if (walsync_turn_begin(c, &u) != 1)
			_exit(1);
		walsync_turn_checkpoint(c);
		raise(SIGKILL);
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFSIGNALED(status));
	ck_assert_int_eq(walsync_stamp_get(a, 42, &got), 1);
	ck_assert_int_eq(walsync_turn_begin(a, &t), 0);	/* ends it */
	ck_assert_int_eq(walsync_stamp_get(a, 42, &got), 0);
	walsync_close(a);
}
END_TEST

/* The role outside a turn: one holder at a time, turns included. */
START_TEST(the_role_is_tried_not_waited_for)
{
	char db[256];
	struct walsync *a, *b;
	struct walsync_turn t;

	setup();
	db_path(db, sizeof db, "roletry");
	a = open_ok(db);
	b = open_ok(db);
	ck_assert_int_eq(walsync_role_try(a), 1);
	ck_assert_int_eq(walsync_role_try(b), 0);
	commit_frames(b, 2000);
	ck_assert_int_eq(walsync_turn_begin(b, &t), 0);
	walsync_role_release(a);
	ck_assert_int_eq(walsync_role_try(b), 1);
	walsync_role_release(b);
	walsync_close(a);
	walsync_close(b);
}
END_TEST

/* A file that is not ours is refused with its name; NULL syncs alone. */
START_TEST(a_foreign_file_is_refused)
{
	char db[256], path[300];
	struct walsync *ws = NULL;
	struct buf err;
	int fd;

	setup();
	db_path(db, sizeof db, "foreign");
	snprintf(path, sizeof path, "%s.wal-sync", db);
	fd = open(path, O_WRONLY | O_CREAT, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not ours", 8), 8);
	close(fd);
	buf_init(&err, BUF_ERR_MAX);
	ck_assert_int_eq(walsync_open(db, &ws, &err), -1);
	ck_assert_ptr_null(ws);
	ck_assert_msg(strstr(err.data, "wal-sync") != NULL, "%s", err.data);
	buf_free(&err);
	ck_assert_int_eq(walsync_commit(NULL, fake_sync, is_live, NULL), 0);
	ck_assert_int_eq(ctr->syncs, 1);
}
END_TEST

/* Created 0660 whatever the umask: the other user's receivers share it. */
START_TEST(created_group_writable)
{
	char db[256], path[300];
	struct walsync *ws;
	struct stat sb;
	mode_t old;

	setup();
	db_path(db, sizeof db, "mode");
	old = umask(077);
	ws = open_ok(db);
	umask(old);
	snprintf(path, sizeof path, "%s.wal-sync", db);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0660);
	walsync_close(ws);
}
END_TEST

/* The file as it is already (the page allocated, 0660): opening it again
 * changes nothing about the inode.  A chmod or fallocate at every open
 * would change its ctime: an inode update each plain-CGI request paid. */
START_TEST(an_existing_file_is_left_as_it_is)
{
	char db[256], path[300];
	struct walsync *ws;
	struct buf err;
	struct stat before, after;

	setup();
	db_path(db, sizeof db, "again");
	ws = open_ok(db);
	walsync_close(ws);
	snprintf(path, sizeof path, "%s.wal-sync", db);
	ck_assert_int_eq(stat(path, &before), 0);
	usleep(30000);		/* past the coarse clock inode times use */
	buf_init(&err, BUF_ERR_MAX);
	ck_assert_msg(walsync_open_real(db, &ws, &err) == 0, "%s", err.data);
	buf_free(&err);
	ck_assert_int_eq(stat(path, &after), 0);
	ck_assert_int_eq(after.st_ctim.tv_sec, before.st_ctim.tv_sec);
	ck_assert_int_eq(after.st_ctim.tv_nsec, before.st_ctim.tv_nsec);
	ck_assert_int_eq(after.st_mode & 0777, 0660);
	walsync_close(ws);
}
END_TEST

/* A file left 0600 (another umask, an older version) gets the group's
 * share; one left sparse (sized, never allocated) gets its page. */
START_TEST(an_existing_file_is_completed)
{
	char db[256], path[300];
	struct walsync *ws;
	struct stat sb;
	int fd;

	setup();
	db_path(db, sizeof db, "sparse");
	snprintf(path, sizeof path, "%s.wal-sync", db);
	fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fchmod(fd, 0600), 0);
	ck_assert_int_eq(ftruncate(fd, 4096), 0);
	close(fd);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_blocks, 0);
	ws = open_ok(db);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0660);
	ck_assert_int_ge((long long)sb.st_blocks * 512, 4096);
	walsync_close(ws);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("walsync");
	TCase *tc = tcase_create("walsync");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, the_wal_named_is_that_file_only);
	tcase_add_test(tc, alone_each_commit_syncs);
	tcase_add_test(tc, commits_during_a_sync_share_the_next);
	tcase_add_test(tc, a_hung_syncer_stalls_nobody);
	tcase_add_test(tc, a_killed_syncer_covers_nobody);
	tcase_add_test(tc, a_failed_sync_covers_nobody);
	tcase_add_test(tc, a_sync_records_the_tickets_before_it);
	tcase_add_test(tc, a_dead_wal_records_nothing);
	tcase_add_test(tc, a_failed_sync_records_nothing);
	tcase_add_test(tc, a_counter_gone_backwards_records_nothing);
	tcase_add_test(tc, no_commit_sleeps_past_a_finished_sync);
	tcase_add_test(tc, synced_beyond_committed_is_not_trusted);
	tcase_add_test(tc, a_checkpoint_needs_a_commit_since_the_last);
	tcase_add_test(tc, a_commit_begun_before_the_checkpoint_ended_does_not_count);
	tcase_add_test(tc, a_checkpointer_killed_mid_checkpoint_closes_the_gate);
	tcase_add_test(tc, one_checkpointer_at_a_time);
	tcase_add_test(tc, a_stamp_is_current_in_its_epoch_for_its_file);
	tcase_add_test(tc, a_checkpointer_killed_mid_checkpoint_voids_the_stamp);
	tcase_add_test(tc, the_role_is_tried_not_waited_for);
	tcase_add_test(tc, a_foreign_file_is_refused);
	tcase_add_test(tc, created_group_writable);
	tcase_add_test(tc, an_existing_file_is_left_as_it_is);
	tcase_add_test(tc, an_existing_file_is_completed);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(suite, dir);
}
