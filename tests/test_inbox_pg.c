/*
 * test_inbox_pg: what only the PostgreSQL engine has (lib/store/
 * postgresql/), on a real server (the database WEBHOOK_TEST_DATABASE names;
 * tests/run gets one from tests/pgserver.py): duplicates that write
 * `seen`, keys that are not UTF-8, statements outlived by the schema,
 * leases between connections (a second drainer skips a leased object,
 * takes over an expired lease, and the first one's verdict is then
 * INBOX_LOST; every verdict releases its lease; a claim that waited for
 * one sees the verdict's clocks), verdicts that survive a crash of the
 * server, the schema version, synchronous_commit and replication waits,
 * an unreachable server; and copying (lib/operator/copy.c,
 * lib/store/postgresql/copy.c): SQLite to PostgreSQL and back, every
 * table and column byte for byte, the digest rule deciding which side
 * wins, small pages and the byte bound, and rows PostgreSQL cannot hold
 * left out and named.  The store's contract itself, the same on both
 * engines, is test_store's.
 *
 * Each test starts from an empty database (every table dropped, the
 * schema applied again by inbox_open).  Times after storing are explicit
 * now_ns values, as in test_store.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <libpq-fe.h>
#include <sodium.h>

#include "lib/store/event.h"
#include "lib/store/history.h"
#include "lib/store/inbox.h"
#include "lib/common/instant.h"
#include "tests/check_common.h"
#include "tests/store_fixture.h"

#define SEC		1000000000LL
#define DAY		(86400 * SEC)
#define AT(hms)		("2026-03-01T" hms "Z")

static const char *uri;
static struct inbox *ib;
static struct buf err;
/* SQLite inboxes of the copy tests (main's mkdtemp). */
static char dir[] = "/tmp/webhook-test-inbox-pg-XXXXXX";
static int nsqlite;

#define ERR		(err.data != NULL ? err.data : "")
#define OK(call) do {							\
	enum inbox_status s_ = (call);					\
	ck_assert_msg(s_ == INBOX_OK, "%s = %d: %s", #call, (int)s_, ERR); \
} while (0)

/* Run SQL on a connection of our own; the first column of the first row
 * into out ("" when none). */
static const char *
sql(const char *q, char *out, size_t outsz)
{
	PGconn *c = PQconnectdb(uri);
	PGresult *r;

	ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
	r = PQexec(c, q);
	ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK ||
	    PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", q,
	    PQresultErrorMessage(r));
	if (out != NULL)
		snprintf(out, outsz, "%s", PQresultStatus(r) == PGRES_TUPLES_OK &&
		    PQntuples(r) > 0 ? PQgetvalue(r, 0, 0) : "");
	PQclear(r);
	PQfinish(c);
	return out;
}

static long long
sql_int(const char *q)
{
	char s[64];

	return strtoll(sql(q, s, sizeof s), NULL, 10);
}

/* ALTER DATABASE (this one) `what`. */
static void
db_setting(const char *what)
{
	char q[256];

	snprintf(q, sizeof q, "DO $$ BEGIN EXECUTE format('ALTER DATABASE %%I"
	    " %s', current_database()); END $$", what);
	sql(q, NULL, 0);
}

static struct inbox *
open_lease(int64_t lease_ns)
{
	struct inbox_options o = { .busy_timeout_ms = 5000,
	    .synchronous = INBOX_SYNC_FULL, .lease_ns = lease_ns };
	struct inbox *p = NULL;

	OK(inbox_open(uri, &o, &p, &err));
	ck_assert_str_eq(inbox_backend_name(p), "postgresql");
	return p;
}

static void
setup(void)
{
	buf_init(&err, BUF_ERR_MAX);
	sql("SET client_min_messages = warning;"
	    " DROP VIEW IF EXISTS events_held; DROP TABLE IF EXISTS events,"
	    " objects, meta, cursors, history, runs, seen, leases, copied CASCADE",
	    NULL,
	    0);
	db_setting("RESET ALL");
	ib = open_lease(0);
}

static void
teardown(void)
{
	inbox_close(ib);
	ib = NULL;
	buf_free(&err);
}

/* Store an event (NULL fields absent); created/updated as a provider sends
 * them. */
static enum inbox_status
store_in(struct inbox *to, const char *id, const char *type,
    const char *created, const char *otype, const char *oid,
    const char *updated)
{
	char body[256];
	int n = snprintf(body, sizeof body, "{\"id\":\"%s\"}", id);

	return fixture_store(to, id, type, created, otype, oid, updated, body,
	    (size_t)n, &err);
}

static void
store(const char *id, const char *type, const char *created,
    const char *otype, const char *oid, const char *updated)
{
	OK(store_in(ib, id, type, created, otype, oid, updated));
}

/* The ids inbox_next_due hands out now (+1 day: settle passed), each
 * claimed with `c` and finished done unless it is `fail_id` (failed,
 * retried in an hour).  Written into out, space-separated. */
static void
drain_ids(struct inbox *c, const char *fail_id, int64_t now, char *out,
    size_t outsz)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_claim claim;
	enum inbox_status s;
	int dead;

	out[0] = '\0';
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	while ((s = inbox_next_due(c, &cur, now, 0, 0, &e, &err)) == INBOX_OK) {
		OK(inbox_claim(c, &e, now, &claim, &err));
		if (claim == INBOX_SKIPPED)
			continue;
		snprintf(out + strlen(out), outsz - strlen(out), "%s%s%s",
		    out[0] ? " " : "", e.webhook_id,
		    claim == INBOX_MARKED_STALE ? "(stale)" :
		    claim == INBOX_CLAIMED_STALE ? "(claimed stale)" : "");
		if (claim == INBOX_MARKED_STALE)
			continue;
		if (fail_id != NULL && strcmp(e.webhook_id, fail_id) == 0)
			OK(fixture_fail(c, &e, now, 3600 * SEC, 5, "boom",
			    NULL, 0, &dead, &err));
		else
			OK(inbox_finish_done(c, &e, now, "ok", 2, &err));
	}
	ck_assert_msg(s == INBOX_NOT_FOUND, "next_due = %d: %s", (int)s, ERR);
	inbox_event_free(&e);
}

START_TEST(store_and_duplicate_writes)
{
	store("a", "t", AT("10:00:00"), "client", "1", NULL);
	ck_assert_int_eq(store_in(ib, "a", "t", AT("10:00:00"), "client", "1",
	    NULL), INBOX_DUPLICATE);
	ck_assert_int_eq(store_in(ib, "a", "t", AT("10:00:00"), "client", "1",
	    NULL), INBOX_DUPLICATE);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"), 1);
	/* Each duplicate wrote (its commit then waits for the WAL flush). */
	ck_assert_int_eq(sql_int("SELECT duplicates FROM seen"), 2);
	ck_assert_int_eq(sql_int("SELECT value::int FROM meta"
	    " WHERE key = 'schema_version'"), inbox_schema_version());
	ck_assert_int_eq(sql_int("SELECT admitted FROM events"), 0);
}
END_TEST

/* An id stored from another source: refused, and nothing written, not
 * even to `seen` (no 200 follows, so no commit needs to wait). */
START_TEST(another_sources_id_writes_nothing)
{
	struct event_fields f = { 0 };
	struct inbox_delivery d = { .webhook_id = "stripe/evt_1",
	    .source = "stripe", .body = "{}", .body_len = 2, .fields = &f };
	char got[128];

	OK(inbox_store(ib, &d, &err));
	d.source = NULL;
	ck_assert_int_eq(inbox_store(ib, &d, &err), INBOX_FAILED);
	ck_assert_ptr_nonnull(strstr(ERR, "already stored from source stripe"));
	ck_assert_int_eq(sql_int("SELECT count(*) FROM seen"), 0);
	/* In a batch, whose transaction commits the others. */
	{
		struct inbox_delivery two[2] = { d, d };
		int changed[2];
		struct inbox_batch b = { .d = two, .n = 2, .changed = changed };

		two[1].webhook_id = "new";
		OK(inbox_store_batch(ib, &b, &err));
		ck_assert_int_eq(changed[0], -1);
		ck_assert_int_eq(changed[1], 1);
	}
	ck_assert_int_eq(sql_int("SELECT count(*) FROM seen"), 0);
	ck_assert_str_eq(sql("SELECT string_agg(webhook_id || '=' || source,"
	    " ',' ORDER BY webhook_id) FROM events", got, sizeof got),
	    "new=default,stripe/evt_1=stripe");
	/* The same source again: a duplicate, which writes `seen`. */
	d.source = "stripe";
	ck_assert_int_eq(inbox_store(ib, &d, &err), INBOX_DUPLICATE);
	ck_assert_int_eq(sql_int("SELECT duplicates FROM seen"), 1);
}
END_TEST

START_TEST(keys_that_are_not_utf8_never_stand_in_for_another)
{
	/* "a\xff" (a byte) would once be stored as the text a\xff, which
	 * is also the ASCII id "a\\xff": its duplicate acknowledged
	 * unstored.  Now the first is refused (503), the second stored. */
	ck_assert_int_eq(store_in(ib, "a\xff", "t", AT("10:00:00"), NULL,
	    NULL, NULL), INBOX_FAILED);
	ck_assert_ptr_nonnull(strstr(err.data, "not valid UTF-8"));
	inbox_close(ib);
	ib = open_lease(0);
	ck_assert_int_eq(store_in(ib, "a\\xff", "t", AT("10:00:00"), NULL,
	    NULL, NULL), INBOX_OK);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"), 1);
	/* Two objects whose ids differ only in bytes that are not UTF-8
	 * must not share a key (one's clocks judging the other stale): no
	 * key at all. */
	store("o1", "t", AT("10:00:01"), "client", "x\xfe", NULL);
	store("o2", "t", AT("10:00:02"), "client", "x\xfd", NULL);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events WHERE"
	    " object_id IS NULL AND object_type IS NULL"), 3);
}
END_TEST

/*
 * What PostgreSQL keeps beside the contract (test_store runs the order,
 * the hold and the stale rule on both engines): the claim's lease is gone
 * after every verdict (failed, done, marked stale, claimed stale), and the
 * events_held view shows the events held behind a failed one.
 */
START_TEST(every_verdict_releases_its_lease)
{
	struct inbox_filter f = { .webhook_id = "old" };
	char got[256];
	int64_t now = util_now_ns() + DAY, n;

	store("a1", "t", AT("10:00:01"), "client", "1", NULL);
	store("a2", "t", AT("10:00:02"), "client", "1", NULL);
	store("a3", "t", AT("10:00:03"), "client", "1", NULL);
	store("b1", "t", AT("10:00:02"), "client", "2", NULL);
	drain_ids(ib, "a1", now, got, sizeof got);
	ck_assert_str_eq(got, "a1 b1");
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events_held"), 2);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);
	drain_ids(ib, NULL, now + 3601 * SEC, got, sizeof got);
	ck_assert_str_eq(got, "a1 a2 a3");
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events_held"), 0);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);

	store("old", "t", AT("10:00:00"), "client", "1", NULL);
	drain_ids(ib, NULL, now, got, sizeof got);
	ck_assert_str_eq(got, "old(stale)");
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);
	OK(inbox_requeue(ib, &f, now, &n, &err));
	ck_assert_int_eq(n, 1);
	drain_ids(ib, NULL, now + SEC, got, sizeof got);
	ck_assert_str_eq(got, "old(claimed stale)");
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);
}
END_TEST

START_TEST(second_drainer_skips_a_leased_object)
{
	struct inbox *other = open_lease(0);
	struct inbox_cursor cur;
	struct inbox_event e, e2;
	enum inbox_claim claim;
	int64_t now = util_now_ns() + DAY;

	store("x1", "t", AT("10:00:01"), "client", "7", NULL);
	store("y1", "t", AT("10:00:02"), "client", "8", NULL);
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	inbox_event_init(&e2);
	OK(inbox_next_due(ib, &cur, now, 0, 0, &e, &err));
	ck_assert_str_eq(e.webhook_id, "x1");
	OK(inbox_claim(ib, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	/* The other drainer sees x1 due (still pending) but cannot claim it;
	 * y1, another object, it can. */
	memset(&cur, 0, sizeof cur);
	OK(inbox_next_due(other, &cur, now, 0, 0, &e2, &err));
	ck_assert_str_eq(e2.webhook_id, "x1");
	OK(inbox_claim(other, &e2, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_SKIPPED);
	OK(inbox_next_due(other, &cur, now, 0, 0, &e2, &err));
	ck_assert_str_eq(e2.webhook_id, "y1");
	OK(inbox_claim(other, &e2, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 2);
	OK(inbox_finish_done(other, &e2, now, NULL, 0, &err));
	OK(inbox_finish_done(ib, &e, now, NULL, 0, &err));
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE state = 'done' AND attempts = 1"), 2);
	inbox_event_free(&e);
	inbox_event_free(&e2);
	inbox_close(other);
}
END_TEST

/* A claim of an event that is no longer pending (done by another drainer
 * after it was found due) takes the lease and gives it back. */
START_TEST(claim_that_finds_nothing_leaves_no_lease)
{
	struct inbox *other = open_lease(0);
	struct inbox_cursor cur;
	struct inbox_event e, e2;
	enum inbox_claim claim;
	int64_t now = util_now_ns() + DAY;

	store("n1", "t", AT("10:00:01"), "client", "3", NULL);
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	inbox_event_init(&e2);
	OK(inbox_next_due(ib, &cur, now, 0, 0, &e, &err));
	memset(&cur, 0, sizeof cur);
	OK(inbox_next_due(other, &cur, now, 0, 0, &e2, &err));
	OK(inbox_claim(other, &e2, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	OK(inbox_finish_done(other, &e2, now, NULL, 0, &err));
	OK(inbox_claim(ib, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_SKIPPED);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);
	ck_assert_int_eq(sql_int("SELECT attempts FROM events"), 1);
	inbox_event_free(&e);
	inbox_event_free(&e2);
	inbox_close(other);
}
END_TEST

/*
 * A claim that waits for the lease while another drainer's verdict
 * releases it must see that verdict: the object's clocks it advanced make
 * an older event stale.  (A claim written as one statement would judge
 * with the snapshot it took before the wait, and hand the older event
 * out after the newer one.)  The verdict is played here by a connection of
 * the test's, holding the lease row locked until the claim waits for it.
 */
START_TEST(claim_that_waited_for_a_verdict_sees_its_clocks)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_claim claim;
	int64_t now = util_now_ns() + DAY;
	PGconn *v = PQconnectdb(uri);
	PGresult *r;
	pid_t child;
	int status;

	ck_assert_int_eq(PQstatus(v), CONNECTION_OK);
	store("a2", "t", AT("10:00:05"), "client", "5", AT("09:00:05"));
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	OK(inbox_next_due(ib, &cur, now, 0, 0, &e, &err));
	OK(inbox_claim(ib, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	/* Sent before a2, arrived after it was handed out: first now. */
	store("a1", "t", AT("10:00:01"), "client", "5", AT("09:00:01"));
	r = PQexec(v, "BEGIN; SELECT 1 FROM leases FOR UPDATE");
	ck_assert_int_eq(PQresultStatus(r), PGRES_TUPLES_OK);
	PQclear(r);
	if ((child = fork()) == 0) {
		struct inbox *other = open_lease(0);
		struct inbox_event e2;

		inbox_event_init(&e2);
		memset(&cur, 0, sizeof cur);
		if (inbox_next_due(other, &cur, now, 0, 0, &e2, &err) !=
		    INBOX_OK || strcmp(e2.webhook_id, "a1") != 0)
			_exit(2);
		if (inbox_claim(other, &e2, now, &claim, &err) != INBOX_OK)
			_exit(3);
		_exit(claim == INBOX_MARKED_STALE ? 0 : 10 + (int)claim);
	}
	while (sql_int("SELECT count(*) FROM pg_stat_activity WHERE"
	    " datname = current_database() AND wait_event_type = 'Lock'") == 0) {
		ck_assert_msg(waitpid(child, &status, WNOHANG) == 0,
		    "the claim ended without waiting: exit %d",
		    WEXITSTATUS(status));
		usleep(10000);
	}
	/* The verdict on a2, as inbox_finish_done writes it. */
	r = PQexec(v, "DELETE FROM leases;"
	    " UPDATE events SET state = 'done' WHERE webhook_id = 'a2';"
	    " INSERT INTO objects (object_type, object_id, done_updated_at,"
	    "  done_at) VALUES ('client', '5', '2026-03-01T09:00:05.000000000Z',"
	    "  '2026-03-01T10:00:00.000000000Z'); COMMIT");
	ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK, "%s",
	    PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(v);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "the claim after the wait: exit %d", WEXITSTATUS(status));
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE webhook_id = 'a1' AND state = 'stale'"), 1);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM leases"), 0);
	inbox_event_free(&e);
}
END_TEST

/*
 * A verdict that returned is on disk: the server crashed right after it
 * (stopped -m immediate: what it had not flushed is gone) still has it.
 * A dead letter stays dead; a done event stays done, and the object's
 * clocks it advanced make an older event of the object, stored before
 * the verdict, stale.  The first drainer's leases are 1 ms long, so that a
 * verdict lost with its lease back would show at once.
 */
START_TEST(verdicts_survive_a_crash_of_the_server)
{
	const char *crash = getenv("WEBHOOK_TEST_PG_CRASH");
	struct inbox *first = open_lease(1000000), *after;
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_claim claim;
	int64_t now = util_now_ns() + DAY;
	int dead;

	ck_assert_msg(crash != NULL, "WEBHOOK_TEST_PG_CRASH is not set: run "
	    "this under tests/pgserver.py");
	inbox_event_init(&e);
	store("d1", "t", AT("10:00:00"), "client", "5", NULL);
	memset(&cur, 0, sizeof cur);
	OK(inbox_next_due(first, &cur, now, 0, 0, &e, &err));
	OK(inbox_claim(first, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	OK(fixture_fail(first, &e, now, SEC, 1, "boom", NULL, 0, &dead,
	    &err));
	ck_assert_int_eq(dead, 1);
	ck_assert_int_eq(system(crash), 0);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE webhook_id = 'd1' AND state = 'dead'"), 1);
	inbox_close(first);
	inbox_close(ib);	/* their connections died with the server */
	ib = open_lease(0);

	first = open_lease(1000000);
	store("a2", "t", AT("10:00:05"), "client", "6", AT("09:00:05"));
	memset(&cur, 0, sizeof cur);
	OK(inbox_next_due(first, &cur, now, 0, 0, &e, &err));
	ck_assert_str_eq(e.webhook_id, "a2");
	OK(inbox_claim(first, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	/* Sent before a2, stored while its handler ran. */
	store("a1", "t", AT("10:00:01"), "client", "6", AT("09:00:01"));
	OK(inbox_finish_done(first, &e, now, NULL, 0, &err));
	ck_assert_int_eq(system(crash), 0);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE webhook_id = 'a2' AND state = 'done'"), 1);
	after = open_lease(0);
	memset(&cur, 0, sizeof cur);
	OK(inbox_next_due(after, &cur, now, 0, 0, &e, &err));
	ck_assert_str_eq(e.webhook_id, "a1");
	OK(inbox_claim(after, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_MARKED_STALE);
	inbox_event_free(&e);
	inbox_close(first);
	inbox_close(after);
}
END_TEST

START_TEST(expired_lease_taken_over_and_the_late_verdict_is_lost)
{
	struct inbox *first = open_lease(1000000);	/* 1 ms */
	struct inbox *second = open_lease(0);
	struct inbox_cursor cur;
	struct inbox_event e, e2;
	enum inbox_claim claim;
	int64_t now = util_now_ns() + DAY;
	int dead;

	store("z1", "t", NULL, "client", "9", NULL);
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	inbox_event_init(&e2);
	OK(inbox_next_due(first, &cur, now, 0, 0, &e, &err));
	OK(inbox_claim(first, &e, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	/* Expired by the server's clock. */
	while (sql_int("SELECT count(*) FROM leases WHERE expires_at > now()"))
		usleep(2000);
	memset(&cur, 0, sizeof cur);
	OK(inbox_next_due(second, &cur, now, 0, 0, &e2, &err));
	OK(inbox_claim(second, &e2, now, &claim, &err));
	ck_assert_int_eq(claim, INBOX_CLAIMED);
	ck_assert_int_eq(e2.attempts, 2);
	/* The first drainer's verdicts now record nothing. */
	ck_assert_int_eq(inbox_finish_done(first, &e, now, NULL, 0, &err),
	    INBOX_LOST);
	ck_assert_ptr_nonnull(strstr(ERR, "lease"));
	ck_assert_int_eq(fixture_fail(first, &e, now, SEC, 5, "x", NULL,
	    0, &dead, &err), INBOX_LOST);
	ck_assert_int_eq(inbox_finish_stale(first, &e, now, &err), INBOX_LOST);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE state = 'pending' AND failures = 0"), 1);
	OK(inbox_finish_done(second, &e2, now, NULL, 0, &err));
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE state = 'done'"), 1);
	inbox_event_free(&e);
	inbox_event_free(&e2);
	inbox_close(first);
	inbox_close(second);
}
END_TEST

static int
count_cb(const struct inbox_event *e, void *arg)
{
	(void)e;
	(*(int *)arg)++;
	return 0;
}

/*
 * Nothing is prepared by name (docs/postgresql.md, "Poolers"): a schema
 * changed under an open connection (an operator's ALTER) is simply what
 * the next statement sees.  A statement prepared once per connection was
 * refused on it for good after such a change ("cached plan must not
 * change result type").
 */
START_TEST(schema_changed_under_a_connection_is_seen)
{
	struct inbox_filter f = { 0 };
	int listed = 0;

	store("a", "payment.created", NULL, NULL, NULL, NULL);
	OK(inbox_list(ib, &f, 0, count_cb, &listed, &err));
	OK(inbox_list(ib, &f, 0, count_cb, &listed, &err));
	ck_assert_int_eq(listed, 2);
	sql("ALTER TABLE events ALTER COLUMN attempts TYPE numeric", NULL, 0);
	listed = 0;
	OK(inbox_list(ib, &f, 0, count_cb, &listed, &err));
	ck_assert_int_eq(listed, 1);
}
END_TEST

/* events' columns as the catalog has them, in order: name, type,
 * nullable, default, collation. */
static const char *
events_shape(char *out, size_t outsz)
{
	return sql("SELECT string_agg(column_name || ' ' || data_type || ' '"
	    " || is_nullable || ' ' || coalesce(column_default, '-') || ' '"
	    " || coalesce(collation_name, '-'), ';' ORDER BY ordinal_position)"
	    " FROM information_schema.columns WHERE table_schema ="
	    " current_schema() AND table_name = 'events'", out, outsz);
}

/*
 * An inbox of version 4 (events without source) is migrated on open:
 * version 5, its rows the default source's, the same columns as a new
 * inbox's, in the same order; a version-4 receiver's insert (no source)
 * stores a default row after it.
 */
START_TEST(migrates_version_4_sources)
{
	char migrated[4096], fresh[4096], got[256];
	struct inbox *p;

	store("a", "t", AT("10:00:00"), "client", "1", NULL);
	store("b", "t", AT("10:01:00"), NULL, NULL, NULL);
	inbox_close(ib);
	ib = NULL;
	sql("ALTER TABLE events DROP COLUMN source;"
	    " UPDATE meta SET value = '4' WHERE key = 'schema_version'",
	    NULL, 0);
	ib = open_lease(0);
	ck_assert_int_eq(sql_int("SELECT value::int FROM meta"
	    " WHERE key = 'schema_version'"), 5);
	ck_assert_str_eq(sql("SELECT string_agg(webhook_id || '=' || source,"
	    " ',' ORDER BY webhook_id) FROM events", got, sizeof got),
	    "a=default,b=default");
	/* Opened again: nothing more to do. */
	p = open_lease(0);
	inbox_close(p);
	sql("INSERT INTO events (webhook_id, received_at, webhook_timestamp,"
	    " sort_at, next_at) VALUES ('v4', '2026-03-01T09:00:00.000000000Z',"
	    " 1, '2026-03-01T09:00:00.000000000Z',"
	    " '2026-03-01T09:00:00.000000000Z')", NULL, 0);
	ck_assert_str_eq(sql("SELECT source FROM events WHERE webhook_id ="
	    " 'v4'", got, sizeof got), "default");
	events_shape(migrated, sizeof migrated);

	inbox_close(ib);
	ib = NULL;
	teardown();
	setup();
	events_shape(fresh, sizeof fresh);
	ck_assert_str_eq(migrated, fresh);
	ck_assert_ptr_nonnull(strstr(fresh, "source text NO 'default'::text C"));
}
END_TEST

START_TEST(newer_schema_refused)
{
	struct inbox_options o = { .busy_timeout_ms = 5000 };
	struct inbox *p = NULL;

	sql("UPDATE meta SET value = '99' WHERE key = 'schema_version'", NULL, 0);
	ck_assert_int_eq(inbox_open(uri, &o, &p, &err), INBOX_FAILED);
	ck_assert_ptr_null(p);
	ck_assert_ptr_nonnull(strstr(ERR, "schema version 99 is newer"));
}
END_TEST

START_TEST(synchronous_commit_raised_to_on)
{
	struct inbox_server_facts f;
	struct inbox *p;

	db_setting("SET synchronous_commit = off");
	p = open_lease(0);
	OK(inbox_server_facts(p, &f, &err));
	ck_assert_str_eq(f.sync_default, "off");
	ck_assert_str_eq(f.sync_effective, "on");
	ck_assert_int_eq(f.schema_version, inbox_schema_version());
	ck_assert_ptr_nonnull(strstr(f.server_version, "15"));
	inbox_close(p);
	db_setting("RESET synchronous_commit");
}
END_TEST

/*
 * A commit waiting for a synchronous standby (one that never comes: every
 * commit waits) whose wait is cancelled: PostgreSQL commits locally and
 * only warns.  The store must fail (503), not acknowledge.
 */
START_TEST(cancelled_replication_wait_is_no_acknowledgement)
{
	struct inbox_options o = { .busy_timeout_ms = 10000 };
	struct inbox *p = NULL;
	char s[64];
	pid_t child;
	int status;

	sql("ALTER SYSTEM SET synchronous_standby_names = 'ghost'", NULL, 0);
	sql("SELECT pg_reload_conf()", NULL, 0);
	while (strcmp(sql("SHOW synchronous_standby_names", s, sizeof s),
	    "ghost") != 0)
		usleep(10000);
	/* Commits wait only once the checkpointer has read the new setting
	 * too (sync_standbys_defined), later on a busy machine: until a
	 * probe's commit waits, and then cancel that wait. */
	for (;;) {
		PGconn *c = PQconnectdb(uri);
		PGresult *r;
		int waited = 0;

		ck_assert_int_eq(PQstatus(c), CONNECTION_OK);
		ck_assert_int_eq(PQsendQuery(c, "SET application_name = 'probe';"
		    " INSERT INTO meta (key, value) VALUES ('probe', 'x')"
		    " ON CONFLICT (key) DO UPDATE SET value = 'y'"), 1);
		while (PQisBusy(c)) {
			if (sql_int("SELECT count(*) FROM pg_stat_activity WHERE"
			    " application_name = 'probe' AND wait_event = 'SyncRep'")
			    > 0) {
				waited = 1;
				PQrequestCancel(c);
			}
			usleep(10000);
			ck_assert_int_eq(PQconsumeInput(c), 1);
		}
		while ((r = PQgetResult(c)) != NULL)
			PQclear(r);
		PQfinish(c);
		if (waited)
			break;
	}
	OK(inbox_open(uri, &o, &p, &err));
	if ((child = fork()) == 0) {
		/* Cancel the store's wait once it waits. */
		while (sql_int("SELECT count(*) FROM pg_stat_activity WHERE"
		    " application_name = 'webhook-inbox' AND wait_event = 'SyncRep'")
		    == 0)
			usleep(10000);
		sql("SELECT pg_cancel_backend(pid) FROM pg_stat_activity WHERE"
		    " application_name = 'webhook-inbox' AND wait_event = 'SyncRep'",
		    NULL, 0);
		_exit(0);
	}
	ck_assert_int_eq(store_in(p, "w1", "t", NULL, NULL, NULL, NULL),
	    INBOX_FAILED);
	ck_assert_msg(strstr(ERR, "warned") != NULL, "%s", ERR);
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	inbox_close(p);
	sql("ALTER SYSTEM RESET synchronous_standby_names", NULL, 0);
	sql("SELECT pg_reload_conf()", NULL, 0);
	while (strcmp(sql("SHOW synchronous_standby_names", s, sizeof s), "") != 0)
		usleep(10000);
	/* Committed locally all the same: the retry is a duplicate. */
	ck_assert_int_eq(store_in(ib, "w1", "t", NULL, NULL, NULL, NULL),
	    INBOX_DUPLICATE);
}
END_TEST

START_TEST(unreachable_fails_then_backs_off)
{
	struct inbox_options o = { .busy_timeout_ms = 1000 };
	struct inbox *p = NULL;
	char name[512];
	const char *bad = "postgresql:///x?host=/nonexistent-dir&user=u&password=pw";

	ck_assert_int_eq(inbox_open(bad, &o, &p, &err), INBOX_FAILED);
	ck_assert_ptr_null(p);
	ck_assert_ptr_null(strstr(ERR, "pw"));
	ck_assert_ptr_nonnull(strstr(ERR, "host=/nonexistent-dir"));
	/* The next attempt within the backoff does not try. */
	ck_assert_int_eq(inbox_open(bad, &o, &p, &err), INBOX_BUSY);
	ck_assert_ptr_nonnull(strstr(ERR, "trying again"));
	inbox_database_name(bad, name, sizeof name);
	ck_assert_ptr_null(strstr(name, "pw"));
	ck_assert_ptr_nonnull(strstr(name, "dbname=x"));
}
END_TEST

/* ---- copying to and from PostgreSQL ------------------------------------ */

#include "tests/copy_fixture.h"

/* A new SQLite inbox in the test directory. */
static struct inbox *
open_sqlite(void)
{
	struct inbox_options o = { .busy_timeout_ms = 5000,
	    .synchronous = INBOX_SYNC_NORMAL };
	struct inbox *p = NULL;
	char path[512];

	snprintf(path, sizeof path, "%s/inbox-%ld-%d.db", dir, (long)getpid(),
	    ++nsqlite);
	OK(inbox_open(path, &o, &p, &err));
	return p;
}

START_TEST(copy_to_postgresql_and_back_byte_for_byte)
{
	struct inbox *src = open_sqlite(), *back = open_sqlite();
	struct copy_result r;
	int t;

	fill(src);
	store_from(src, "stripe/evt_1", "stripe");
	r = copy_with(src, ib, 0, 0, 0);
	/* Every table, every column, each value of the same type and bytes
	 * (a body with NUL and 0xff bytes, an empty one, a purged one; an
	 * event's source). */
	assert_same(src, ib, 0);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 9);
	ck_assert_int_eq(r.t[INBOX_RUNS].written, 1);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM copied"), 9 + 1);
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"
	    " WHERE webhook_id = 'stripe/evt_1' AND source = 'stripe'"), 1);
	ASSERT_STATE(ib, "e-dead", "dead");
	ASSERT_STATE(ib, "e-old", "stale");
	/* Twice: nothing written. */
	r = copy_with(src, ib, 0, 0, 0);
	for (t = 0; t < INBOX_NTABLES; t++) {
		ck_assert_int_eq(r.t[t].written, 0);
		ck_assert_int_eq(r.t[t].same, r.t[t].read);
	}
	/* And back into a new SQLite inbox: the same again. */
	(void)copy_with(ib, back, 0, 0, 0);
	assert_same(src, back, 0);
	ck_assert_str_eq(source_of(back, "stripe/evt_1"), "stripe");
	/* The copy on PostgreSQL hands out what the source would. */
	ck_assert_int_eq(hand_out(ib, "e-pending", util_now_ns(), V_DONE),
	    INBOX_CLAIMED);
	inbox_close(src);
	inbox_close(back);
}
END_TEST

START_TEST(copy_pages_of_two_rows_and_one_byte)
{
	struct inbox *src = open_sqlite(), *back = open_sqlite();
	struct copy_result r;

	fill(src);
	/* 2 rows a page, cut after the first byte: a page a row, either way. */
	r = copy_with(src, ib, 2, 1, 0);
	assert_same(src, ib, 0);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 8);
	r = copy_with(ib, back, 2, 1, 0);
	ck_assert_int_eq(r.t[INBOX_EVENTS].read, 8);
	ck_assert_int_eq(r.t[INBOX_HISTORY].written, r.t[INBOX_HISTORY].read);
	assert_same(src, back, 0);
	inbox_close(src);
	inbox_close(back);
}
END_TEST

START_TEST(copy_digest_rule_decides_on_postgresql)
{
	struct inbox *src = open_sqlite();
	struct inbox_filter f = { .webhook_id = "e-dead" };
	struct copy_result r;
	int64_t n;

	fill(src);
	(void)copy_with(src, ib, 0, 0, 0);
	/* At the source after the copy: e-pending done, e-new arrives. */
	ck_assert_int_eq(hand_out(src, "e-pending", util_now_ns(), V_DONE),
	    INBOX_CLAIMED);
	store_json(src, "e-new", "2026-03-01T11:00:00Z", "6");
	/* At the destination: e-dead requeued, e-bin forgotten, and the
	 * provider's retry of e-done (done at the source) stored anew. */
	OK(inbox_requeue(ib, &f, util_now_ns(), &n, &err));
	ck_assert_int_eq(n, 1);
	forget(ib, "e-bin");
	forget(ib, "e-done");
	store_json(ib, "e-done", "2026-03-01T10:00:01Z", "2");
	r = copy_with(src, ib, 0, 0, 0);
	ASSERT_STATE(ib, "e-pending", "done");	/* the source's change */
	ASSERT_STATE(ib, "e-new", "pending");
	ASSERT_STATE(ib, "e-dead", "pending");	/* the destination's */
	ASSERT_STATE(ib, "e-bin", "");		/* stays deleted */
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 2);
	ck_assert_int_eq(r.t[INBOX_EVENTS].kept, 3);	/* e-dead, e-bin, e-done */
	/* e-done: copied, deleted, stored again untouched: the record says
	 * copied then deleted, so the destination's row stays, pending. */
	ASSERT_STATE(ib, "e-done", "pending");
	inbox_close(src);
}
END_TEST

START_TEST(copy_provider_retry_takes_the_source_state)
{
	struct inbox *src = open_sqlite();

	/* Never copied before: the destination's untouched retry (pending,
	 * no attempts) takes the source's row, done. */
	store_json(src, "x", "2026-03-01T10:00:00Z", "1");
	ck_assert_int_eq(hand_out(src, "x", util_now_ns(), V_DONE),
	    INBOX_CLAIMED);
	store_json(ib, "x", "2026-03-01T10:00:00Z", "1");
	(void)copy_with(src, ib, 0, 0, 0);
	ASSERT_STATE(ib, "x", "done");
	inbox_close(src);
}
END_TEST

START_TEST(copy_leaves_out_and_names_what_postgresql_cannot_hold)
{
	struct inbox *src = open_sqlite();
	struct copy_options o = { 0, 0, 0 };
	struct copy_result r;

	store_json(src, "good", "2026-03-01T10:00:00Z", "1");
	store_json(src, "bad\xff\x01id", "2026-03-01T10:00:00Z", "2");
	store_json(src, "bad-object", "2026-03-01T10:00:00Z", "3\xc3");
	ck_assert_int_eq(copy_run(src, ib, &o, NULL, &r, &err), -1);
	ck_assert_int_eq(r.t[INBOX_EVENTS].read, 3);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 1);
	ck_assert_int_eq(r.t[INBOX_EVENTS].left_out, 2);
	/* Named, escaped, with the reason; the rest copied. */
	ck_assert_msg(strstr(ERR, "events bad\\xff\\x01id") != NULL, "%s", ERR);
	ck_assert_msg(strstr(ERR, "events bad-object") != NULL, "%s", ERR);
	ck_assert_msg(strstr(ERR, "not valid UTF-8") != NULL, "%s", ERR);
	ck_assert_msg(strstr(r.left_out, "bad\\xff") != NULL, "%s",
	    r.left_out);
	ASSERT_STATE(ib, "good", "pending");
	ck_assert_int_eq(sql_int("SELECT count(*) FROM events"), 1);
	/* The dry run says so too, writing nothing. */
	o.dry = 1;
	ck_assert_int_eq(copy_run(src, ib, &o, NULL, &r, &err), -1);
	ck_assert_int_eq(r.t[INBOX_EVENTS].left_out, 2);
	ck_assert_int_eq(r.t[INBOX_EVENTS].same, 1);
	inbox_close(src);
}
END_TEST

START_TEST(holds_knows_every_column_type)
{
	/* inbox_table_holds against the server's catalog: each column takes
	 * a value of its type only, an integer column's 32-bit bound too. */
	struct inbox_value row[32];
	static char all[16384];
	char q[256], type[64];
	const char *at;
	struct buf why;
	int t, k;

	buf_init(&why, 1024);
	/* ",table.column=type," for every column, in one query. */
	sql("SELECT ',' || string_agg(table_name || '.' || column_name || '='"
	    " || data_type, ',') || ',' FROM information_schema.columns"
	    " WHERE table_schema = current_schema()", all, sizeof all);
	for (t = 0; t < INBOX_NTABLES; t++) {
		const struct inbox_table_info *ti = inbox_table_info(t);
		for (k = 0; k < ti->ncols; k++) {
			memset(row, 0, sizeof row);
			snprintf(q, sizeof q, ",%s.%s=", ti->name, ti->cols[k]);
			ck_assert_msg((at = strstr(all, q)) != NULL, "%s", q);
			at += strlen(q);
			snprintf(type, sizeof type, "%.*s", (int)strcspn(at, ","),
			    at);
			if (strcmp(type, "bigint") == 0 ||
			    strcmp(type, "integer") == 0) {
				row[k].type = INBOX_V_INT;
				row[k].i = 1LL << 31;
				ck_assert_int_eq(inbox_table_holds(ib, t, row, &why),
				    strcmp(type, "bigint") == 0);
				row[k].i = 1;
			} else {
				ck_assert_msg(strcmp(type, "text") == 0 ||
				    strcmp(type, "bytea") == 0, "%s.%s: %s",
				    ti->name, ti->cols[k], type);
				row[k].type = strcmp(type, "text") == 0 ?
				    INBOX_V_TEXT : INBOX_V_BLOB;
				row[k].p = "a";
				row[k].len = 1;
			}
			ck_assert_msg(inbox_table_holds(ib, t, row, &why) == 1,
			    "%s.%s: %s", ti->name, ti->cols[k], why.data);
			row[k].type = row[k].type == INBOX_V_INT ? INBOX_V_TEXT :
			    INBOX_V_INT;
			ck_assert_int_eq(inbox_table_holds(ib, t, row, &why), 0);
			ck_assert_ptr_nonnull(strstr(why.data, ti->cols[k]));
		}
	}
	buf_free(&why);
}
END_TEST

static Suite *
inbox_pg_suite(void)
{
	Suite *s = suite_create("inbox_pg");
	TCase *tc = tcase_create("contract");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, store_and_duplicate_writes);
	tcase_add_test(tc, another_sources_id_writes_nothing);
	tcase_add_test(tc, schema_changed_under_a_connection_is_seen);
	tcase_add_test(tc, keys_that_are_not_utf8_never_stand_in_for_another);
	tcase_add_test(tc, every_verdict_releases_its_lease);
	tcase_add_test(tc, second_drainer_skips_a_leased_object);
	tcase_add_test(tc, expired_lease_taken_over_and_the_late_verdict_is_lost);
	tcase_add_test(tc, claim_that_finds_nothing_leaves_no_lease);
	tcase_add_test(tc, claim_that_waited_for_a_verdict_sees_its_clocks);
	tcase_add_test(tc, verdicts_survive_a_crash_of_the_server);
	tcase_add_test(tc, newer_schema_refused);
	tcase_add_test(tc, migrates_version_4_sources);
	tcase_add_test(tc, synchronous_commit_raised_to_on);
	tcase_add_test(tc, unreachable_fails_then_backs_off);
	tcase_add_test(tc, cancelled_replication_wait_is_no_acknowledgement);
	tcase_add_test(tc, copy_to_postgresql_and_back_byte_for_byte);
	tcase_add_test(tc, copy_pages_of_two_rows_and_one_byte);
	tcase_add_test(tc, copy_digest_rule_decides_on_postgresql);
	tcase_add_test(tc, copy_provider_retry_takes_the_source_state);
	tcase_add_test(tc, copy_leaves_out_and_names_what_postgresql_cannot_hold);
	tcase_add_test(tc, holds_knows_every_column_type);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	if ((uri = getenv("WEBHOOK_TEST_DATABASE")) == NULL) {
		fprintf(stderr, "test_inbox_pg: WEBHOOK_TEST_DATABASE: a "
		    "PostgreSQL URI, e.g. python3 tests/pgserver.py -- %s\n",
		    "build/tests/test_inbox_pg");
		return 1;
	}
	return check_main_in_tmpdir(inbox_pg_suite, dir);
}
