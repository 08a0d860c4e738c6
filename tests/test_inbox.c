/*
 * test_inbox: what only the SQLite engine has (lib/store/sqlite/): the
 * schema in the file (user_version, WAL mode) and older ones migrated,
 * opens racing on a new file, the short-lived CGI process, the write
 * lock (busy, deadlines), files truncated or replaced under a connection,
 * WAL checkpoint turns and stamps, reads that pin no snapshot, rows stored
 * unadmitted into the hold index; and that each engine's table of
 * operations is complete.  The store's contract itself, the same on both
 * engines, is test_store's.
 *
 * Every test works on real SQLite files in one mkdtemp directory, removed
 * at the end.  Events are stored through inbox_store (received_at is the
 * real clock); everything after that takes explicit now_ns values, so no
 * test sleeps to move time.  Where the table itself is what is tested
 * (user_version, journal mode, admitted rows) the test reads it with a
 * plain sqlite3 connection.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/store/event.h"
#include "lib/store/engine.h"
#include "lib/store/inbox.h"
#include "lib/store/sqlite/private.h"
#include "lib/common/instant.h"
#include "lib/store/sqlite/walsync.h"
#include "tests/check_common.h"
#include "tests/store_fixture.h"

#define SEC		1000000000LL
#define DAY		(86400 * SEC)
#define RETENTION	(7 * DAY)

/* An event clock on one day, "HH:MM:SS" (UTC). */
#define AT(hms)		("2026-03-01T" hms "Z")

static char dir[] = "/tmp/webhook-test-inbox-XXXXXX";

/* The fixture's inbox (tcases with setup/teardown). */
static char dbpath[512];
static struct inbox *ib;
static struct buf err;
static int dbcount;

#define ERR		(err.data != NULL ? err.data : "")

/* `call` returned INBOX_OK. */
#define OK(call) do {							\
	enum inbox_status s_ = (call);					\
	ck_assert_msg(s_ == INBOX_OK, "%s = %d: %s", #call, (int)s_, ERR); \
} while (0)

/* A fresh database path in dir (the process id keeps forked tests apart). */
static void
new_path(char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/inbox-%ld-%d.db", dir, (long)getpid(),
	    ++dbcount);
}

static struct inbox *
open_at(const char *path, int64_t busy_ms)
{
	struct inbox_options o = { .busy_timeout_ms = busy_ms,
	    .synchronous = INBOX_SYNC_NORMAL };
	struct inbox *p = NULL;

	OK(inbox_open(path, &o, &p, &err));
	ck_assert_ptr_nonnull(p);
	return p;
}

static void
setup(void)
{
	buf_init(&err, BUF_ERR_MAX);
	new_path(dbpath, sizeof dbpath);
	ib = open_at(dbpath, 2000);
}

static void
teardown(void)
{
	inbox_close(ib);
	ib = NULL;
	buf_free(&err);
}

static int64_t
now_ns(void)
{
	return util_now_ns();
}

/* ---- reading the table directly ---------------------------------------- */

static sqlite3 *
raw_open(const char *path)
{
	sqlite3 *db = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE |
	    SQLITE_OPEN_CREATE, NULL), SQLITE_OK);
	return db;
}

static void
raw_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);

	ck_assert_msg(rc == SQLITE_OK, "%s: %s", sql, msg ? msg : "");
	sqlite3_free(msg);
}

/* First column of the first row as text ("<null>" for NULL, "<none>" for
 * no row), copied into out. */
static const char *
raw_text(const char *path, const char *sql, char *out, size_t outsz)
{
	sqlite3 *db = raw_open(path);
	sqlite3_stmt *st = NULL;
	int rc;

	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL)
		snprintf(out, outsz, "%s", sqlite3_column_text(st, 0));
	else
		snprintf(out, outsz, rc == SQLITE_ROW ? "<null>" : "<none>");
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out;
}

static long long
raw_int(const char *path, const char *sql)
{
	char s[64];

	return strtoll(raw_text(path, sql, s, sizeof s), NULL, 10);
}

/* ---- storing ------------------------------------------------------------- */

/*
 * Store an event with the given fields (NULL = absent).  `created` and
 * `updated` are ISO-8601 as a provider sends them; they are normalised
 * as event_extract would.
 */
static enum inbox_status
store_body(const char *id, const char *type, const char *created,
    const char *otype, const char *oid, const char *updated,
    const void *body, size_t len)
{
	return fixture_store(ib, id, type, created, otype, oid, updated, body,
	    len, &err);
}

static void
store(const char *id, const char *type, const char *created,
    const char *otype, const char *oid, const char *updated)
{
	char body[256];
	int n = snprintf(body, sizeof body, "{\"id\":\"%s\"}", id);

	OK(store_body(id, type, created, otype, oid, updated, body, (size_t)n));
}

/* ---- looking ------------------------------------------------------------- */


#include "tests/handout_fixture.h"

/* ==== open ================================================================ */

START_TEST(open_creates_schema)
{
	char path[512], s[64];
	struct inbox *p;

	buf_init(&err, BUF_ERR_MAX);
	new_path(path, sizeof path);
	p = open_at(path, 2000);
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 5);
	ck_assert_str_eq(raw_text(path, "PRAGMA journal_mode", s, sizeof s),
	    "wal");
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_schema"
	    " WHERE type = 'table'"
	    " AND name IN ('events', 'objects', 'meta')"), 3);
	ib = p;
	store("kept", "x.y", NULL, NULL, NULL, NULL);
	inbox_close(p);
	ib = NULL;

	/* Reopened: the schema is not applied again, the event is there. */
	p = open_at(path, 2000);
	ib = p;
	ck_assert_str_eq(state_of("kept"), "pending");
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 5);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM events"), 1);
	inbox_close(p);
	ib = NULL;
	buf_free(&err);
}
END_TEST

START_TEST(open_refuses_newer_schema)
{
	char path[512];
	struct inbox_options o = { .busy_timeout_ms = 2000,
	    .synchronous = INBOX_SYNC_FULL };
	struct inbox *p = (struct inbox *)&o;	/* must come back NULL */
	sqlite3 *db;

	buf_init(&err, BUF_ERR_MAX);
	new_path(path, sizeof path);
	db = raw_open(path);
	raw_exec(db, "CREATE TABLE future (x); PRAGMA user_version = 99");
	sqlite3_close(db);

	ck_assert_int_eq(inbox_open(path, &o, &p, &err), INBOX_FAILED);
	ck_assert_ptr_null(p);
	ck_assert_msg(contains(ERR, path), "error \"%s\" names no path", ERR);
	ck_assert_msg(contains(ERR, "schema version 99"), "error \"%s\"", ERR);
	/* Nothing of ours was written into it. */
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 99);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM sqlite_schema"
	    " WHERE name = 'events'"), 0);
	buf_free(&err);
}
END_TEST

START_TEST(open_unopenable)
{
	char path[600];
	struct inbox_options o = { .busy_timeout_ms = 2000,
	    .synchronous = INBOX_SYNC_FULL };
	struct inbox *p = NULL;
	FILE *f;

	buf_init(&err, BUF_ERR_MAX);
	snprintf(path, sizeof path, "%s/no/such/dir/inbox.db", dir);
	ck_assert_int_eq(inbox_open(path, &o, &p, &err), INBOX_FAILED);
	ck_assert_ptr_null(p);
	ck_assert_msg(contains(ERR, path), "error \"%s\"", ERR);

	/* Not a database at all. */
	new_path(path, sizeof path);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	for (int i = 0; i < 200; i++)
		fputs("this is not an SQLite database\n", f);
	fclose(f);
	ck_assert_int_eq(inbox_open(path, &o, &p, &err), INBOX_FAILED);
	ck_assert_ptr_null(p);
	ck_assert_msg(contains(ERR, path), "error \"%s\"", ERR);
	buf_free(&err);
}
END_TEST

/*
 * REGRESSION first_open_race: a web server starts its workers at once and
 * each opens the brand-new inbox.  Switching to WAL does not go through
 * the busy handler, and the losers failed with "setting WAL mode: database
 * is locked".  Six processes block on one pipe and all open the same new
 * file when it closes; each stores one event.  Several rounds, because a
 * race does not show every time.
 */
#define RACERS	6
#define ROUNDS	5

/* One racer: wait for the pipe to close, open the new inbox, store one
 * event; exit 0 when both worked (the reason on stderr otherwise). */
static void __attribute__((noreturn))
racer(const char *path, int i, const int go[2])
{
	struct inbox_options o = { .busy_timeout_ms = 5000,
	    .synchronous = INBOX_SYNC_FULL };
	char id[32], c;

	close(go[1]);
	while (read(go[0], &c, 1) == -1 && errno == EINTR)
		;
	snprintf(id, sizeof id, "race-%d", i);
	if (inbox_open(path, &o, &ib, &err) != INBOX_OK) {
		fprintf(stderr, "racer %d: open: %s\n", i, ERR);
		_exit(1);
	}
	if (store_body(id, "race", NULL, NULL, NULL, NULL, id,
	    strlen(id)) != INBOX_OK) {
		fprintf(stderr, "racer %d: store: %s\n", i, ERR);
		_exit(2);
	}
	inbox_close(ib);
	_exit(0);
}

START_TEST(first_open_race)
{
	char path[512];

	buf_init(&err, BUF_ERR_MAX);
	for (int round = 0; round < ROUNDS; round++) {
		pid_t pids[RACERS];
		int go[2], status, failed = 0;

		new_path(path, sizeof path);
		ck_assert_int_eq(pipe(go), 0);
		for (int i = 0; i < RACERS; i++) {
			pids[i] = fork();
			ck_assert_int_ne(pids[i], -1);
			if (pids[i] == 0)
				racer(path, i, go);
		}
		close(go[0]);
		close(go[1]);	/* all go */
		for (int i = 0; i < RACERS; i++) {
			ck_assert_int_eq(waitpid(pids[i], &status, 0), pids[i]);
			if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
				failed++;
		}
		ck_assert_msg(failed == 0, "round %d: %d of %d first opens "
		    "failed (see stderr)", round, failed, RACERS);
		ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM events"),
		    RACERS);
		ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 5);
	}
	buf_free(&err);
}
END_TEST

/* Another writer holds the lock: INBOX_BUSY after about busy_timeout,
 * nothing written, and the next store works once it is released. */
START_TEST(busy_then_ok)
{
	char path[512];
	struct inbox *p;
	sqlite3 *other;
	int64_t t0, waited;

	buf_init(&err, BUF_ERR_MAX);
	new_path(path, sizeof path);
	p = open_at(path, 200);
	ib = p;
	other = raw_open(path);
	raw_exec(other, "BEGIN IMMEDIATE");

	t0 = util_mono_ns();
	ck_assert_int_eq(store_body("b1", NULL, NULL, NULL, NULL, NULL, "x", 1),
	    INBOX_BUSY);
	waited = util_mono_ns() - t0;
	ck_assert_msg(waited >= 150 * 1000000LL, "gave up after %lld ms",
	    (long long)(waited / 1000000));
	ck_assert_msg(contains(ERR, path), "error \"%s\"", ERR);
	ck_assert_int_eq(inbox_note_run(ib, now_ns(), NULL, &err), INBOX_BUSY);

	raw_exec(other, "ROLLBACK");
	/* OK, not DUPLICATE: the busy store wrote nothing. */
	OK(store_body("b1", NULL, NULL, NULL, NULL, NULL, "x", 1));
	ck_assert_str_eq(state_of("b1"), "pending");
	sqlite3_close(other);
	inbox_close(p);
	ib = NULL;
	buf_free(&err);
}
END_TEST

/* docs/DESIGN.md "The store contract", deadlines: the delivery's deadline
 * ends the wait for the lock whatever busy_timeout allows (10 s here), for
 * one store and for a batch (its earliest deadline: the requests queued
 * behind it keep their time). */
START_TEST(busy_ends_at_deadline)
{
	char path[512];
	struct inbox *p;
	sqlite3 *other;
	struct event_fields f;
	struct inbox_delivery d[2];
	int changed[2];
	struct inbox_batch b = { .d = d, .n = 2, .changed = changed };
	int64_t t0, waited;

	buf_init(&err, BUF_ERR_MAX);
	new_path(path, sizeof path);
	p = open_at(path, 10000);
	other = raw_open(path);
	raw_exec(other, "BEGIN IMMEDIATE");
	memset(&f, 0, sizeof f);
	memset(d, 0, sizeof d);
	d[0].webhook_id = "dl1";
	d[1].webhook_id = "dl2";
	d[0].secret_fp = d[1].secret_fp = "fp";
	d[0].body = d[1].body = "x";
	d[0].body_len = d[1].body_len = 1;
	d[0].fields = d[1].fields = &f;

	t0 = util_mono_ns();
	d[0].deadline = t0 + 300000000;
	ck_assert_int_eq(inbox_store(p, &d[0], &err), INBOX_BUSY);
	waited = util_mono_ns() - t0;
	ck_assert_msg(waited < 3000000000LL, "waited %lld ms past the deadline",
	    (long long)(waited / 1000000));

	t0 = util_mono_ns();
	d[0].deadline = t0 + 20 * 1000000000LL;
	d[1].deadline = t0 + 300000000;
	ck_assert_int_eq(inbox_store_batch(p, &b, &err), INBOX_BUSY);
	waited = util_mono_ns() - t0;
	ck_assert_msg(waited < 3000000000LL, "batch waited %lld ms",
	    (long long)(waited / 1000000));

	raw_exec(other, "ROLLBACK");
	sqlite3_close(other);
	inbox_close(p);
	buf_free(&err);
}
END_TEST

/* docs/durability.md "An inbox replaced under a running receiver": an inbox
 * truncated in place under an open connection (`: > inbox.db`, a restore
 * gone wrong) is noticed before the answer: INBOX_FAILED saying so, never
 * INBOX_OK into a file that no longer holds the inbox; a fresh open then
 * works. */
START_TEST(truncated_under_us_refused)
{
	char path[512];
	struct inbox *p;

	buf_init(&err, BUF_ERR_MAX);
	new_path(path, sizeof path);
	p = open_at(path, 1000);
	ib = p;
	OK(store_body("t1", NULL, NULL, NULL, NULL, NULL, "x", 1));
	ck_assert_int_eq(truncate(path, 0), 0);
	ck_assert_int_eq(store_body("t2", NULL, NULL, NULL, NULL, NULL, "x", 1),
	    INBOX_FAILED);
	ck_assert_msg(contains(ERR, "truncated"), "error \"%s\"", ERR);
	inbox_close(p);
	ib = NULL;
	buf_free(&err);
}
END_TEST

/*
 * A plain-CGI process: inbox_process_short_lived before anything opens
 * SQLite, then one short_lived connection stores durably.  In a child, so
 * that SQLite starts there with the setting (sqlite3_config only works
 * before SQLite initialises).  With it, SQLite keeps no memory statistics:
 * the memory in use reads 0 with a connection open.
 */
START_TEST(short_lived_process_stores)
{
	char path[512];
	pid_t pid;
	int status;

	new_path(path, sizeof path);
	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		struct inbox_options o = { .busy_timeout_ms = 5000,
		    .synchronous = INBOX_SYNC_FULL, .short_lived = 1 };
		sqlite3_int64 cur = -1, hi = -1;

		buf_init(&err, BUF_ERR_MAX);
		(void)sqlite3_shutdown();	/* nothing open in this child */
		inbox_process_short_lived();
		if (inbox_open(path, &o, &ib, &err) != INBOX_OK) {
			fprintf(stderr, "open: %s\n", ERR);
			_exit(1);
		}
		if (store_body("cgi-1", "x.y", NULL, NULL, NULL, NULL, "{}", 2)
		    != INBOX_OK) {
			fprintf(stderr, "store: %s\n", ERR);
			_exit(2);
		}
		if (sqlite3_status64(SQLITE_STATUS_MEMORY_USED, &cur, &hi, 0) !=
		    SQLITE_OK || cur != 0) {
			fprintf(stderr, "memory statistics kept: %lld\n",
			    (long long)cur);
			_exit(3);
		}
		inbox_close(ib);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "child status %d (see stderr)", status);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM events"
	    " WHERE webhook_id = 'cgi-1'"), 1);
}
END_TEST

/* ==== version 2: rows the drainer has not admitted yet =================== */

/* Rows of `path` not yet admitted into the hold index. */
static long long
unadmitted(const char *path)
{
	return raw_int(path, "SELECT count(*) FROM events WHERE admitted = 0");
}

static void
set_admitted(const char *path, const char *id, int admitted)
{
	char sql[256];
	sqlite3 *db = raw_open(path);

	snprintf(sql, sizeof sql, "UPDATE events SET admitted = %d"
	    " WHERE webhook_id = '%s'", admitted, id);
	raw_exec(db, sql);
	sqlite3_close(db);
}

/*
 * The hold is exact whether the holding row, the held row, both or
 * neither are admitted: the receiver stores rows unadmitted, and a
 * drainer, list or status that cannot admit them (the lock is busy)
 * still gives the answers of version 1.  Each case holds the write lock
 * in another connection so that no admission happens, and checks the
 * rows really were unadmitted while it looked.
 */
START_TEST(hold_counts_rows_not_yet_admitted)
{
	static const struct { int x1, x2; } cases[] = {
		{ 1, 0 }, { 0, 1 }, { 0, 0 }, { 1, 1 },
	};
	struct inbox_filter all = { 0 };
	struct inbox_status_report r;
	int64_t t = now_ns() + 60 * SEC;
	sqlite3 *lock;

	inbox_close(ib);
	ib = open_at(dbpath, 0);	/* busy: admission gives up at once */
	store("X1", "t", AT("10:00:00"), "invoice", "X", NULL);
	store("X2", "t", AT("11:00:00"), "invoice", "X", NULL);
	store("Y1", "t", AT("10:30:00"), "invoice", "Y", NULL);
	ck_assert_int_eq(unadmitted(dbpath), 3);	/* as the receiver stores */
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		set_admitted(dbpath, "X1", cases[i].x1);
		set_admitted(dbpath, "X2", cases[i].x2);
		set_admitted(dbpath, "Y1", 0);
		lock = raw_open(dbpath);
		raw_exec(lock, "BEGIN IMMEDIATE");
		ck_assert_msg(strcmp(due(t, 0), "X1,Y1") == 0,
		    "case %zu: due %s", i, due(t, 0));
		ck_assert_str_eq(list_ids(&all), "X1,Y1,X2!");
		OK(inbox_status_report(ib, &r, &err));
		ck_assert_int_eq(r.blocked, 1);
		raw_exec(lock, "ROLLBACK");
		sqlite3_close(lock);
		ck_assert_int_eq(unadmitted(dbpath),
		    1 + !cases[i].x1 + !cases[i].x2);
	}

	/* A claim re-checks the hold in its own transaction: an earlier
	 * event of the object that arrived after the drainer read X2 (and
	 * is not admitted) makes it skip. */
	{
		struct inbox_event e;

		set_admitted(dbpath, "X1", 1);
		set_admitted(dbpath, "X2", 1);
		done("X1", t);
		inbox_event_init(&e);
		take("X2", t, &e);
		store("X0", "t", AT("09:00:00"), "invoice", "X", NULL);
		ck_assert_int_eq(raw_int(dbpath, "SELECT admitted FROM events"
		    " WHERE webhook_id = 'X0'"), 0);
		ck_assert_int_eq(claim(&e, t), INBOX_SKIPPED);
		inbox_event_free(&e);
		/* ... and the claim admitted it, though it claimed nothing. */
		ck_assert_int_eq(unadmitted(dbpath), 0);
	}

	/* Unlocked: status and list only read (Y2 stays unadmitted, and
	 * counts); the drainer's next claim admits it (X0's, which finds X0
	 * older than X1, done: stale). */
	store("Y2", "t", AT("11:30:00"), "invoice", "Y", NULL);
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.blocked, 2);		/* X2 behind X0, Y2 behind Y1 */
	ck_assert_str_eq(list_ids(&all), "X0,X1,Y1,X2!,Y2!");
	ck_assert_int_eq(unadmitted(dbpath), 1);
	ck_assert_int_eq(take_claim("X0", t, 1), INBOX_MARKED_STALE);
	ck_assert_int_eq(unadmitted(dbpath), 0);
	ck_assert_str_eq(due(t, 0), "Y1,X2");
	ck_assert_str_eq(list_ids(&all), "X0,X1,Y1,X2,Y2!");
}
END_TEST

/* The drainer's first look admits what is there, in chunks of fewer rows
 * than this (each its own transaction), later looks admit what arrived
 * since at most once a second, and a claim admits at once; status only
 * reads. */
START_TEST(drainer_admits_in_chunks)
{
	char id[32];
	int64_t t = now_ns() + 60 * SEC;
	struct inbox_status_report r;

	for (int i = 0; i < 1234; i++) {
		snprintf(id, sizeof id, "ev%04d", i);
		/* 100 objects: each event holds the next ones of its object. */
		store(id, "t", AT("10:00:00"), "thing", id + 4, NULL);
	}
	ck_assert_int_eq(unadmitted(dbpath), 1234);
	ck_assert_int_eq(strlen(due(t, 0)), 100 * 7 - 1);
	ck_assert_int_eq(unadmitted(dbpath), 0);
	/* Within the second: a new row stays unadmitted, and is held. */
	store("late", "t", AT("10:00:00"), "thing", "07", NULL);
	ck_assert_int_eq(strlen(due(t, 0)), 100 * 7 - 1);
	ck_assert_int_eq(unadmitted(dbpath), 1);
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(unadmitted(dbpath), 1);
	ck_assert_int_eq(r.pending, 1235);
	ck_assert_int_eq(r.blocked, 1235 - 100);
	done("ev0000", t);
	ck_assert_int_eq(unadmitted(dbpath), 0);
}
END_TEST

static char *
read_text(const char *path)
{
	FILE *f = fopen(path, "r");
	struct buf b;
	char chunk[4096];
	size_t n;

	ck_assert_msg(f != NULL, "%s: %s", path, strerror(errno));
	buf_init(&b, 1 << 20);
	while ((n = fread(chunk, 1, sizeof chunk, f)) > 0)
		ck_assert_int_eq(buf_append(&b, chunk, n), 0);
	fclose(f);
	return b.data;		/* NUL-terminated; freed by the caller */
}

/* "name|sql" of every index, and the events columns, as one string. */
static const char *
schema_shape(const char *path, char *out, size_t outsz)
{
	return raw_text(path, "SELECT group_concat(x, ';') FROM ("
	    " SELECT name || '|' || sql AS x FROM sqlite_schema"
	    "  WHERE type = 'index' AND sql IS NOT NULL"
	    " UNION ALL SELECT name || ' ' || type || ' ' || \"notnull\" || ' '"
	    "  || coalesce(dflt_value, '-') FROM pragma_table_info('events')"
	    " ORDER BY 1)", out, outsz);
}

/*
 * An inbox of version 1 (tests/schema-v1.sql, as released) is migrated on
 * open: the same indexes and columns as a new one, its rows admitted, and
 * a version-1 receiver still running (its INSERT has no admitted column)
 * stores admitted rows that hold as before.
 */
START_TEST(migrates_version_1)
{
	char path[512], fresh[512], a[8192], b[8192];
	char *v1 = read_text(SCHEMA_V1);
	sqlite3 *db;
	int64_t t = now_ns() + 60 * SEC;
	struct inbox *p;

	new_path(path, sizeof path);
	db = raw_open(path);
	raw_exec(db, "PRAGMA journal_mode = WAL");
	raw_exec(db, v1);
	raw_exec(db, "PRAGMA user_version = 1");
	raw_exec(db, "INSERT INTO events (webhook_id, received_at,"
	    " webhook_timestamp, object_type, object_id, sort_at, next_at)"
	    " VALUES ('A1', '2026-03-01T09:00:00.000000000Z', 1, 'o', 'A',"
	    " '2026-03-01T10:00:00.000000000Z', '2026-03-01T09:00:00.000000000Z'),"
	    " ('A2', '2026-03-01T09:00:01.000000000Z', 1, 'o', 'A',"
	    " '2026-03-01T11:00:00.000000000Z', '2026-03-01T09:00:01.000000000Z')");
	free(v1);

	p = open_at(path, 2000);
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 5);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM events"
	    " WHERE admitted = 1"), 2);
	new_path(fresh, sizeof fresh);
	inbox_close(open_at(fresh, 2000));
	ck_assert_str_eq(schema_shape(path, a, sizeof a),
	    schema_shape(fresh, b, sizeof b));
	ck_assert_str_eq(raw_text(path, "PRAGMA integrity_check", a, sizeof a),
	    "ok");

	/* A version-1 receiver's insert, after the migration. */
	raw_exec(db, "INSERT INTO events (webhook_id, received_at,"
	    " webhook_timestamp, object_type, object_id, sort_at, next_at)"
	    " VALUES ('A0', '2026-03-01T09:00:02.000000000Z', 1, 'o', 'A',"
	    " '2026-03-01T08:00:00.000000000Z', '2026-03-01T09:00:02.000000000Z')");
	sqlite3_close(db);
	ck_assert_int_eq(unadmitted(path), 0);
	inbox_close(ib);
	ib = p;
	ck_assert_str_eq(due(t, 0), "A0");
	ck_assert_str_eq(drain(t, "", 5), "A0,A1,A2");
	inbox_close(p);
	ib = open_at(dbpath, 2000);	/* for teardown */
}
END_TEST

/*
 * An inbox of version 3 gains events.failing_since on open (the same
 * columns as a new one); a failure sets it once, a requeue clears it,
 * and status's oldest_failing counts from it (from the arrival for a
 * row that failed before the migration).
 */
START_TEST(migrates_version_3_failing_since)
{
	char path[512], fresh[512], a[8192], b[8192];
	struct inbox_status_report r;
	struct inbox_event e;
	struct inbox_filter f;
	sqlite3 *db;
	int64_t t = now_ns() + 60 * SEC, n;
	int dead;
	struct inbox *p;

	new_path(path, sizeof path);
	inbox_close(open_at(path, 2000));
	db = raw_open(path);
	/* Version 3: without what version 4 added (a column, a table) and
	 * version 5 (a column). */
	raw_exec(db, "ALTER TABLE events DROP COLUMN failing_since;"
	    " ALTER TABLE events DROP COLUMN source;"
	    " DROP TABLE copied; PRAGMA user_version = 3");
	sqlite3_close(db);
	p = open_at(path, 2000);
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 5);
	new_path(fresh, sizeof fresh);
	inbox_close(open_at(fresh, 2000));
	ck_assert_str_eq(schema_shape(path, a, sizeof a),
	    schema_shape(fresh, b, sizeof b));
	inbox_close(ib);
	ib = p;

	/* Received at t0, first failure at t, a second at t + 60 s. */
	store("fs1", "t", AT("10:00:00"), "thing", "F", NULL);
	inbox_event_init(&e);
	take("fs1", t, &e);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	OK(fixture_fail(ib, &e, t, SEC, 5, "exit 1", NULL, 0, &dead,
	    &err));
	e.failures = 1;
	OK(fixture_fail(ib, &e, t + 60 * SEC, SEC, 5, "exit 1", NULL, 0,
	    &dead, &err));
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.waiting_retry, 1);
	ck_assert_int_eq(instant_format(t, b), 0);
	ck_assert_str_eq(r.oldest_failing, b);
	/* Requeued: its count starts again. */
	memset(&f, 0, sizeof f);
	f.webhook_id = "fs1";
	OK(inbox_requeue(ib, &f, t + 120 * SEC, &n, &err));
	ck_assert_int_eq(raw_int(path, "SELECT failing_since IS NULL FROM events"
	    " WHERE webhook_id = 'fs1'"), 1);
	/* A row that failed before the migration: its arrival. */
	db = raw_open(path);
	raw_exec(db, "UPDATE events SET failures = 1 WHERE webhook_id = 'fs1'");
	sqlite3_close(db);
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_str_eq(r.oldest_failing, raw_text(path, "SELECT received_at"
	    " FROM events WHERE webhook_id = 'fs1'", a, sizeof a));
	inbox_event_free(&e);
	inbox_close(p);
	ib = open_at(dbpath, 2000);	/* for teardown */
}
END_TEST

/*
 * An inbox of version 4 (events without source) gains events.source on
 * open (the same columns as a new one): its rows, and those a version-4
 * receiver still running stores (its INSERT leaves the column out), are
 * the default source's.
 */
START_TEST(migrates_version_4_sources)
{
	char path[512], fresh[512], a[8192], b[8192];
	struct snap s;
	sqlite3 *db;
	struct inbox *p;

	new_path(path, sizeof path);
	inbox_close(open_at(path, 2000));
	db = raw_open(path);
	raw_exec(db, "ALTER TABLE events DROP COLUMN source;"
	    " PRAGMA user_version = 4");
	raw_exec(db, "INSERT INTO events (webhook_id, received_at,"
	    " webhook_timestamp, sort_at, next_at)"
	    " VALUES ('old1', '2026-03-01T09:00:00.000000000Z', 1,"
	    " '2026-03-01T09:00:00.000000000Z', '2026-03-01T09:00:00.000000000Z'),"
	    " ('stripe/old2', '2026-03-01T09:00:01.000000000Z', 1,"
	    " '2026-03-01T09:00:01.000000000Z', '2026-03-01T09:00:01.000000000Z')");
	sqlite3_close(db);
	p = open_at(path, 2000);
	ck_assert_int_eq(raw_int(path, "PRAGMA user_version"), 5);
	ck_assert_int_eq(raw_int(path, "SELECT count(*) FROM events"
	    " WHERE source = 'default'"), 2);
	new_path(fresh, sizeof fresh);
	inbox_close(open_at(fresh, 2000));
	ck_assert_str_eq(schema_shape(path, a, sizeof a),
	    schema_shape(fresh, b, sizeof b));
	ck_assert_ptr_nonnull(strstr(a, "source TEXT 1 'default'"));
	/* A version-4 receiver's insert, after the migration. */
	db = raw_open(path);
	raw_exec(db, "INSERT INTO events (webhook_id, received_at,"
	    " webhook_timestamp, sort_at, next_at)"
	    " VALUES ('v4', '2026-03-01T09:00:02.000000000Z', 1,"
	    " '2026-03-01T09:00:02.000000000Z', '2026-03-01T09:00:02.000000000Z')");
	sqlite3_close(db);
	inbox_close(ib);
	ib = p;
	get("stripe/old2", &s);
	ck_assert_str_eq(s.source, "default");
	snap_free(&s);
	get("v4", &s);
	ck_assert_str_eq(s.source, "default");
	snap_free(&s);
	inbox_close(p);
	ib = open_at(dbpath, 2000);	/* for teardown */
}
END_TEST

/* ==== WAL checkpoints and stamps ======================================= */

/*
 * A receiver's group-commit connection on the fixture's inbox (*w, now
 * also `ib`) and a handle on its shared page (*ws), with events of 8 KiB
 * bodies (ids PREFIX00000 on; *n of them) stored until a checkpoint turn
 * is due.  Returns the body (free it).
 */
static char *
filled_for_a_turn(const char *prefix, struct inbox **w, struct walsync **ws,
    int *n)
{
	struct inbox_options g = { .busy_timeout_ms = 2000,
	    .synchronous = INBOX_SYNC_FULL, .group_commit = 1, .short_lived = 0 };
	char id[64], *body;
	int i;

	OK(inbox_open(dbpath, &g, w, &err));
	ck_assert_int_eq(walsync_open(dbpath, ws, &err), 0);
	body = calloc(1, 8192);
	ck_assert_ptr_nonnull(body);
	memset(body, 'x', 8191);
	ib = *w;
	for (i = 0; inbox_wal_frames(*w) < INBOX_WAL_CHECKPOINT_FRAMES; i++) {
		snprintf(id, sizeof id, "%s%05d", prefix, i);
		OK(store_body(id, "t", NULL, NULL, NULL, NULL, body, 8191));
	}
	*n = i;
	return body;
}

/*
 * Checkpoint turns (inbox_wal_checkpoint_turn; SQLite's WAL-reset race,
 * walsync.h "Checkpoints"), through real connections: every commit opens
 * the gate (commit hook + WAL hook), a checkpoint closes it, a turn with no
 * commit since runs nothing — on a receiver's group-commit connection and
 * on a plain one (the drainer's, the fixture's).
 */
START_TEST(checkpoint_turns_follow_commits)
{
	struct inbox *plain = ib, *w = NULL;
	struct walsync *ws = NULL;
	struct walsync_turn t;
	char id[64], *body;
	int i;

	body = filled_for_a_turn("msg_turn", &w, &ws, &i);
	walsync_peek(ws, &t);
	ck_assert(t.open);
	ck_assert_uint_eq(t.frames, (uint64_t)inbox_wal_frames(w));
	ck_assert_int_eq(t.last_mode, 0);

	OK(inbox_maintain(w, &err));		/* the turn is due: it runs */
	walsync_peek(ws, &t);
	ck_assert(!t.open);
	ck_assert_int_eq(t.last_mode, WALSYNC_PASSIVE);
	ck_assert_uint_eq(t.last_frames, (uint64_t)inbox_wal_frames(w));

	/* Due by size (the WAL is twice the threshold), but no commit since
	 * the last checkpoint: nothing runs. */
	for (; inbox_wal_frames(w) < 2 * INBOX_WAL_CHECKPOINT_FRAMES + 100; i++) {
		snprintf(id, sizeof id, "msg_turn%05d", i);
		OK(store_body(id, "t", NULL, NULL, NULL, NULL, body, 8191));
	}
	ck_assert_int_eq(walsync_turn_begin(ws, &t), 1);	/* as if it ran */
	walsync_turn_checkpoint(ws);
	walsync_turn_end(ws, &t, WALSYNC_PASSIVE);
	walsync_peek(ws, &t);
	ck_assert(!t.open);
	OK(inbox_maintain(w, &err));
	walsync_peek(ws, &t);
	ck_assert(!t.open);
	ck_assert_uint_eq(t.last_frames, t.frames);	/* untouched */

	/* A duplicate writes no frame: the gate stays shut. */
	ck_assert_int_eq(store_body("msg_turn00000", "t", NULL, NULL, NULL,
	    NULL, body, 8191), INBOX_DUPLICATE);
	walsync_peek(ws, &t);
	ck_assert(!t.open);
	/* A commit on the plain connection opens it. */
	ib = plain;
	store("msg_turn_plain", "t", NULL, NULL, NULL, NULL);
	walsync_peek(ws, &t);
	ck_assert(t.open);

	walsync_close(ws);
	inbox_close(w);
	free(body);
}
END_TEST

/* Write `data` over the start of the file at `path` without truncating
 * it (dd conv=notrunc), in a child: closing a descriptor of the database
 * in this process would drop SQLite's locks on it. */
static void
write_over(const char *path, const void *data, size_t len)
{
	pid_t kid;
	int status;

	if ((kid = fork()) == 0) {
		int fd = open(path, O_WRONLY);
		_exit(fd == -1 || write(fd, data, len) != (ssize_t)len);
	}
	ck_assert_int_eq(waitpid(kid, &status, 0), kid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/*
 * Stamps (walsync.h, "Stamps"; docs/durability.md "An inbox replaced under
 * a running receiver"): a checkpoint turn stamps the file as it left it,
 * and another connection that saw the file before it takes the change for
 * that checkpoint's, not a stranger's (no false refusal).  Then a copy of
 * the file from before the checkpoint written over it in place with the
 * size and the mtime as they were (a coarse filesystem): found by the probe
 * — both connections refuse, and a reopened one stores again.
 */
START_TEST(a_copy_with_the_same_mtime_is_found)
{
	struct inbox *plain = ib, *w = NULL;
	struct walsync *ws = NULL;
	struct walsync_stamp st;
	struct timespec times[2];
	struct stat before, after;
	char *body, *old;
	size_t oldlen;
	FILE *f;
	int i;

	body = filled_for_a_turn("msg_stamp", &w, &ws, &i);
	ck_assert_int_eq(stat(dbpath, &before), 0);
	old = malloc((size_t)before.st_size + 1);
	ck_assert_ptr_nonnull(old);
	ck_assert_ptr_nonnull(f = fopen(dbpath, "rb"));
	oldlen = fread(old, 1, (size_t)before.st_size, f);
	fclose(f);	/* a read-only stdio handle: see write_over */

	OK(inbox_maintain(w, &err));		/* the turn runs, and stamps */
	ck_assert_int_eq(stat(dbpath, &after), 0);
	ck_assert_int_eq(walsync_stamp_get(ws, (uint64_t)after.st_ino, &st), 1);
	ck_assert_uint_eq(st.size, (uint64_t)after.st_size);
	ck_assert(st.sec == after.st_mtim.tv_sec && st.nsec == after.st_mtim.tv_nsec);
	ck_assert_uint_gt(st.pgno, 1);		/* the last frame's page */

	ib = plain;	/* saw the file before the checkpoint: not refused */
	store("msg_stamp_plain", "t", NULL, NULL, NULL, NULL);
	ib = w;
	OK(store_body("msg_stamp_w", "t", NULL, NULL, NULL, NULL, "{}", 2));

	write_over(dbpath, old, oldlen);
	times[0] = after.st_atim;
	times[1] = after.st_mtim;
	ck_assert_int_eq(utimensat(AT_FDCWD, dbpath, times, 0), 0);
	ck_assert_int_eq(stat(dbpath, &before), 0);
	ck_assert(before.st_size == after.st_size &&
	    before.st_mtim.tv_nsec == after.st_mtim.tv_nsec);

	ck_assert_int_eq(store_body("msg_stamp_x1", "t", NULL, NULL, NULL, NULL,
	    "{}", 2), INBOX_FAILED);
	ck_assert_msg(contains(ERR, "replaced or truncated in place"), "%s", ERR);
	ib = plain;	/* the other connection too: the epoch moved */
	ck_assert_int_eq(store_body("msg_stamp_x2", "t", NULL, NULL, NULL, NULL,
	    "{}", 2), INBOX_FAILED);
	inbox_close(w);
	inbox_close(plain);
	ib = open_at(dbpath, 2000);	/* reopened on the file as it is */
	store("msg_stamp_again", "t", NULL, NULL, NULL, NULL);
	walsync_close(ws);
	free(body);
	free(old);
}
END_TEST

/* docs/DESIGN.md "The store contract": a reader blocked on its output holds
 * no snapshot.  In every callback of a list longer than a page, another
 * connection's TRUNCATE checkpoint completes (busy = 0): the read
 * transaction ended before the rows were handed out.  Every event comes,
 * once, in order. */
struct pin_check {
	sqlite3	*other;
	int	 n, pinned;
	char	 last[32];
};

static int
pin_cb(const struct inbox_event *e, void *arg)
{
	struct pin_check *pc = arg;
	sqlite3_stmt *st = NULL;

	ck_assert_int_lt(strcmp(pc->last, e->webhook_id), 0);
	snprintf(pc->last, sizeof pc->last, "%s", e->webhook_id);
	pc->n++;
	if (pc->n % 97 != 1)
		return 0;
	ck_assert_int_eq(sqlite3_prepare_v2(pc->other,
	    "PRAGMA wal_checkpoint(TRUNCATE)", -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	if (sqlite3_column_int(st, 0) != 0)
		pc->pinned++;
	sqlite3_finalize(st);
	return 0;
}

START_TEST(list_pins_no_snapshot)
{
	struct inbox_filter all;
	struct pin_check pc;
	char id[32];
	int i;

	for (i = 0; i < 600; i++) {
		snprintf(id, sizeof id, "p%04d", i);
		store(id, "t", AT("10:00:00"), NULL, NULL, NULL);
	}
	memset(&all, 0, sizeof all);
	memset(&pc, 0, sizeof pc);
	pc.other = raw_open(dbpath);
	OK(inbox_list(ib, &all, 0, pin_cb, &pc, &err));
	sqlite3_close(pc.other);
	ck_assert_int_eq(pc.n, 600);
	ck_assert_int_eq(pc.pinned, 0);
	/* --limit across pages. */
	all.limit = 300;
	memset(&pc, 0, sizeof pc);
	pc.other = raw_open(dbpath);
	OK(inbox_list(ib, &all, 0, pin_cb, &pc, &err));
	sqlite3_close(pc.other);
	ck_assert_int_eq(pc.n, 300);
}
END_TEST

/*
 * Every operation of each engine's table is filled in (store/engine.h):
 * designated initialisers leave a forgotten one NULL, which would crash
 * only when that call is first made.  Every member after `name` is a
 * function pointer; upkeep_* are NULL in an engine that needs none.
 */
static void
assert_engine_complete(const struct inbox_engine *en, int has_upkeep)
{
	typedef void (*fnptr)(void);
	const size_t first = offsetof(struct inbox_engine, open);
	const size_t up0 = offsetof(struct inbox_engine, upkeep_start);
	const size_t up1 = offsetof(struct inbox_engine, upkeep_stop);
	size_t off;
	fnptr f;

	ck_assert_uint_eq((sizeof *en - first) % sizeof f, 0);
	for (off = first; off < sizeof *en; off += sizeof f) {
		memcpy(&f, (const char *)en + off, sizeof f);
		if (off >= up0 && off <= up1 && !has_upkeep)
			ck_assert_msg(f == NULL, "%s: upkeep member at %zu set "
			    "without upkeep_start", en->name, off);
		else
			ck_assert_msg(f != NULL, "%s: the operation at offset "
			    "%zu is missing from its table", en->name, off);
	}
}

START_TEST(engine_tables_are_complete)
{
	assert_engine_complete(&inbox_sqlite_engine, 1);
#ifdef WEBHOOK_POSTGRESQL
	assert_engine_complete(&inbox_pg_engine, 0);
#endif
}
END_TEST

static Suite *
inbox_suite(void)
{
	Suite *s = suite_create("inbox");
	TCase *tc;

	tc = tcase_create("open");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, engine_tables_are_complete);
	tcase_add_test(tc, open_creates_schema);
	tcase_add_test(tc, open_refuses_newer_schema);
	tcase_add_test(tc, open_unopenable);
	tcase_add_test(tc, first_open_race);
	tcase_add_test(tc, short_lived_process_stores);
	tcase_add_test(tc, busy_then_ok);
	tcase_add_test(tc, busy_ends_at_deadline);
	tcase_add_test(tc, truncated_under_us_refused);
	suite_add_tcase(s, tc);

	/* The WAL: checkpoint turns, stamps, readers that pin no snapshot. */
	tc = tcase_create("wal");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, checkpoint_turns_follow_commits);
	tcase_add_test(tc, a_copy_with_the_same_mtime_is_found);
	tcase_add_test(tc, list_pins_no_snapshot);
	suite_add_tcase(s, tc);

	/* Rows stored unadmitted, and older schemas migrated. */
	tc = tcase_create("admit");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, hold_counts_rows_not_yet_admitted);
	tcase_add_test(tc, drainer_admits_in_chunks);
	tcase_add_test(tc, migrates_version_1);
	tcase_add_test(tc, migrates_version_3_failing_since);
	tcase_add_test(tc, migrates_version_4_sources);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(inbox_suite, dir);
}
