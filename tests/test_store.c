/*
 * test_store: the store's contract (lib/store/inbox.h; docs/DESIGN.md "The
 * inbox", "The store contract", "The drainer"), written once and run
 * against each engine: every test here is registered for SQLite and for
 * PostgreSQL (one TCase per group and engine, named "sqlite/..." and
 * "postgresql/..."), and speaks to the store through inbox.h only — no
 * sqlite3 handle, no libpq, no table read but inbox_table_read's portable
 * form.  What only one engine has (SQLite's WAL, checkpoints, locks,
 * migrations, files moved under it; PostgreSQL's leases, claim races,
 * server crashes) stays in test_inbox and test_inbox_pg.
 *
 * Each test starts from an empty inbox: a new SQLite file in this
 * program's mkdtemp directory, or the PostgreSQL database
 * WEBHOOK_TEST_DATABASE names with every table dropped (the fixture's own
 * libpq connection; inbox_open applies the schema again).  Without
 * WEBHOOK_TEST_DATABASE the PostgreSQL half is not registered and a line
 * "test_store: N skipped" says so (tests/run counts it; it runs this
 * program under tests/pgserver.py, so make test always has the server).
 *
 * Events are stored through inbox_store (received_at is the real clock);
 * everything after that takes explicit now_ns values, so no test sleeps
 * to move time.
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
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
#define RETENTION	(7 * DAY)

/* An event clock on one day, "HH:MM:SS" (UTC). */
#define AT(hms)		("2026-03-01T" hms "Z")

enum engine { ENG_SQLITE, ENG_PG };
static const char *const engine_names[] = { "sqlite", "postgresql" };

static char dir[] = "/tmp/webhook-test-store-XXXXXX";
static const char *pg_uri;	/* WEBHOOK_TEST_DATABASE, or NULL */

/* The fixture's inbox and the engine it is on (set by the setup). */
static enum engine engine;
static struct inbox *ib;
static struct buf err;
static int dbcount;

#define ERR		(err.data != NULL ? err.data : "")

/* `call` returned INBOX_OK. */
#define OK(call) do {							\
	enum inbox_status s_ = (call);					\
	ck_assert_msg(s_ == INBOX_OK, "%s = %d: %s", #call, (int)s_, ERR); \
} while (0)

/* ---- a fresh inbox on each engine ---------------------------------------- */

/* Run `q` on a libpq connection of the fixture's own. */
static void
pg_exec(const char *q)
{
	PGconn *c = PQconnectdb(pg_uri);
	PGresult *r;

	ck_assert_msg(PQstatus(c) == CONNECTION_OK, "%s", PQerrorMessage(c));
	r = PQexec(c, q);
	ck_assert_msg(PQresultStatus(r) == PGRES_COMMAND_OK ||
	    PQresultStatus(r) == PGRES_TUPLES_OK, "%s: %s", q,
	    PQresultErrorMessage(r));
	PQclear(r);
	PQfinish(c);
}

static void
setup_sqlite(void)
{
	struct inbox_options o = { .busy_timeout_ms = 2000,
	    .synchronous = INBOX_SYNC_NORMAL };
	char path[512];

	engine = ENG_SQLITE;
	buf_init(&err, BUF_ERR_MAX);
	/* The process id keeps the forked tests apart. */
	snprintf(path, sizeof path, "%s/inbox-%ld-%d.db", dir, (long)getpid(),
	    ++dbcount);
	OK(inbox_open(path, &o, &ib, &err));
	ck_assert_str_eq(inbox_backend_name(ib), "sqlite");
}

static void
setup_pg(void)
{
	struct inbox_options o = { .busy_timeout_ms = 5000,
	    .synchronous = INBOX_SYNC_FULL };

	engine = ENG_PG;
	buf_init(&err, BUF_ERR_MAX);
	/* As test_inbox_pg isolates its tests: every table dropped, the
	 * schema applied again by inbox_open (tests run one at a time). */
	pg_exec("SET client_min_messages = warning;"
	    " DROP VIEW IF EXISTS events_held; DROP TABLE IF EXISTS events,"
	    " objects, meta, cursors, history, runs, seen, leases, copied"
	    " CASCADE");
	OK(inbox_open(pg_uri, &o, &ib, &err));
	ck_assert_str_eq(inbox_backend_name(ib), "postgresql");
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

static const char *
fmt(int64_t ns, char out[INSTANT_SIZE])
{
	ck_assert_int_eq(instant_format(ns, out), 0);
	return out;
}

/* ---- storing ------------------------------------------------------------- */

static enum inbox_status
store_body(const char *id, const char *type, const char *created,
    const char *otype, const char *oid, const char *updated,
    const void *body, size_t len)
{
	return fixture_store(ib, id, type, created, otype, oid, updated, body,
	    len, &err);
}

/* Store an event with the given fields (NULL = absent); `created` and
 * `updated` as a provider sends them. */
static void
store(const char *id, const char *type, const char *created,
    const char *otype, const char *oid, const char *updated)
{
	char body[256];
	int n = snprintf(body, sizeof body, "{\"id\":\"%s\"}", id);

	OK(store_body(id, type, created, otype, oid, updated, body, (size_t)n));
}

/* Store a JSON body with what event_extract finds in it. */
static void
store_json(const char *id, const char *json)
{
	struct event_fields f;
	struct inbox_delivery d;

	ck_assert_int_eq(event_extract(id, json, strlen(json), &f), 0);
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = 1772366400;
	d.body = json;
	d.body_len = strlen(json);
	d.fields = &f;
	OK(inbox_store(ib, &d, &err));
	event_fields_free(&f);
}

/* ---- looking ------------------------------------------------------------- */


static int64_t
count(const struct inbox_filter *f)
{
	int64_t n = -1;

	OK(inbox_count(ib, f, &n, &err));
	return n;
}

static int
count_cb(const struct inbox_event *e, void *arg)
{
	(void)e;
	(*(int *)arg)++;
	return 0;
}

static int
body_cb(const struct inbox_event *e, void *arg)
{
	*(int64_t *)arg += e->has_body;
	return 0;
}

/* Events that still have a body, whatever their state. */
static int64_t
bodies_kept(void)
{
	struct inbox_filter all = { 0 };
	int64_t n = 0;

	OK(inbox_list(ib, &all, 0, body_cb, &n, &err));
	return n;
}

/* ---- the objects' clocks, as inbox_table_read gives them ----------------- */

struct objects_read {
	const char	*otype, *oid;	/* the object wanted (NULL: none) */
	int64_t		 rows;
	char		 clocks[2 * INSTANT_SIZE + 16];	/* "created updated" */
};

static void
value_text(const struct inbox_value *v, char *out, size_t outsz)
{
	if (v->type == INBOX_V_NULL)
		snprintf(out, outsz, "<null>");
	else {
		ck_assert_int_eq(v->type, INBOX_V_TEXT);
		snprintf(out, outsz, "%.*s", (int)v->len, (const char *)v->p);
	}
}

static int
value_is(const struct inbox_value *v, const char *s)
{
	return v->type == INBOX_V_TEXT && v->len == strlen(s) &&
	    memcmp(v->p, s, v->len) == 0;
}

static int
objects_cb(const struct inbox_value *rows, size_t n, void *arg)
{
	const struct inbox_table_info *ti = inbox_table_info(INBOX_OBJECTS);
	struct objects_read *o = arg;
	char a[INSTANT_SIZE + 8], b[INSTANT_SIZE + 8];

	for (size_t i = 0; i < n; i++) {
		const struct inbox_value *row = rows + i * (size_t)ti->ncols;

		o->rows++;
		if (o->otype == NULL || !value_is(&row[0], o->otype) ||
		    !value_is(&row[1], o->oid))
			continue;
		value_text(&row[2], a, sizeof a);
		value_text(&row[3], b, sizeof b);
		snprintf(o->clocks, sizeof o->clocks, "%s %s", a, b);
	}
	return 0;
}

static void
objects_read(struct objects_read *o)
{
	const struct inbox_table_info *ti = inbox_table_info(INBOX_OBJECTS);
	struct inbox_page pg = { .t = INBOX_OBJECTS, .max_rows = 100000,
	    .max_bytes = (size_t)1 << 30 };

	/* The columns this reads, by name: the portable form's contract. */
	ck_assert_int_ge(ti->ncols, 4);
	ck_assert_str_eq(ti->cols[0], "object_type");
	ck_assert_str_eq(ti->cols[1], "object_id");
	ck_assert_str_eq(ti->cols[2], "done_created_at");
	ck_assert_str_eq(ti->cols[3], "done_updated_at");
	snprintf(o->clocks, sizeof o->clocks, "<none>");
	o->rows = 0;
	OK(inbox_table_read(ib, &pg, objects_cb, o, &err));
	ck_assert_int_eq(pg.full, 0);	/* one page: every row read */
	ck_assert_uint_lt(pg.n, pg.max_rows);
}

/* How many objects have clocks kept. */
static int64_t
objects_count(void)
{
	struct objects_read o = { 0 };

	objects_read(&o);
	return o.rows;
}

/* The object's clocks, "done_created_at done_updated_at" ("<null>" for
 * one not set, "<none>" for no such object). */
static const char *
object_clocks(const char *otype, const char *oid)
{
	static struct objects_read o;

	o.otype = otype;
	o.oid = oid;
	objects_read(&o);
	return o.clocks;
}

/* ---- handing out --------------------------------------------------------- */

#include "tests/handout_fixture.h"

static int64_t
requeue(const char *id, int64_t now)
{
	struct inbox_filter f = { .webhook_id = id };
	int64_t n = -1;

	OK(inbox_requeue(ib, &f, now, &n, &err));
	return n;
}

static int64_t
forget(const char *id)
{
	struct inbox_filter f = { .webhook_id = id };
	int64_t n = -1;

	OK(inbox_forget(ib, &f, &n, &err));
	return n;
}

/* ==== store =============================================================== */

START_TEST(store_and_duplicate)
{
	static const unsigned char body[] = {
		'{', '"', 'a', '"', ':', '"', 0, 1, 0xff, 0xfe, '"', '}', 0,
		0, '\n', 't', 'a', 'i', 'l', 0
	};
	struct inbox_filter all = { 0 };
	struct snap s;
	char before[INSTANT_SIZE], after[INSTANT_SIZE];

	fmt(now_ns(), before);
	ck_assert_int_eq(store_body("msg_1", "invoice.paid",
	    "2026-03-01T12:00:00.5+01:00", "invoice", "inv_1",
	    "2026-03-01T10:00:00Z", body, sizeof body), INBOX_OK);
	fmt(now_ns(), after);
	ck_assert_int_eq(store_body("msg_1", "other.type", NULL, NULL, NULL,
	    NULL, "different", 9), INBOX_DUPLICATE);
	ck_assert_int_eq(store_body("msg_1", "other.type", NULL, NULL, NULL,
	    NULL, "different", 9), INBOX_DUPLICATE);
	ck_assert_int_eq(count(&all), 1);

	/* The duplicates changed nothing of the first. */
	get("msg_1", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.has_body, 1);
	ck_assert_uint_eq(s.body.len, sizeof body);
	ck_assert(memcmp(s.body.data, body, sizeof body) == 0);
	ck_assert_str_eq(s.type, "invoice.paid");
	ck_assert_str_eq(s.created_at, "2026-03-01T11:00:00.500000000Z");
	ck_assert_str_eq(s.created_at_raw, "2026-03-01T12:00:00.5+01:00");
	ck_assert_str_eq(s.sort_at, s.created_at);
	ck_assert_str_eq(s.object_type, "invoice");
	ck_assert_str_eq(s.object_id, "inv_1");
	ck_assert_str_eq(s.updated_at, "2026-03-01T10:00:00.000000000Z");
	ck_assert_str_eq(s.secret_fp, "fp0123");
	ck_assert_int_eq(s.webhook_timestamp, 1772366400);
	ck_assert_int_eq(s.attempts, 0);
	ck_assert_int_eq(s.failures, 0);
	ck_assert_int_eq(s.requeued, 0);
	ck_assert_str_eq(s.finished_at, "");
	ck_assert_msg(strcmp(s.received_at, before) >= 0 &&
	    strcmp(s.received_at, after) <= 0, "received_at %s not in [%s, %s]",
	    s.received_at, before, after);
	snap_free(&s);
}
END_TEST

START_TEST(store_empty_and_clockless)
{
	struct snap s;

	/* No clock: sorts by its arrival.  An empty body is a body. */
	OK(store_body("empty", NULL, NULL, NULL, NULL, NULL, NULL, 0));
	get("empty", &s);
	ck_assert_str_eq(s.created_at, "");
	ck_assert_str_eq(s.sort_at, s.received_at);
	ck_assert_str_eq(s.type, "<null>");
	ck_assert_str_eq(s.object_type, "<null>");
	ck_assert_int_eq(s.has_body, 1);
	ck_assert_uint_eq(s.body.len, 0);
	snap_free(&s);
}
END_TEST

/* A batch in one transaction: the new ones stored, a duplicate left as
 * it is (changed says which), the cursor recorded with it; a cursor never
 * set reads as NULLs. */
START_TEST(store_batch_and_cursor)
{
	struct event_fields f = { 0 };
	struct inbox_delivery d[3];
	int changed[3];
	struct inbox_batch b = { .d = d, .n = 3, .cursor_name = "sync:clients",
	    .cursor_updated_after = "2026-01-01T00:00:00Z",
	    .cursor_page = "p2", .changed = changed };
	struct inbox_filter all = { 0 };
	char *ua = NULL, *page = NULL;
	int i;

	store("d1", "t", NULL, NULL, NULL, NULL);
	memset(d, 0, sizeof d);
	for (i = 0; i < 3; i++) {
		d[i].webhook_id = i == 0 ? "d1" : i == 1 ? "d2" : "d3";
		d[i].body = "{}";
		d[i].body_len = 2;
		d[i].fields = &f;
	}
	OK(inbox_store_batch(ib, &b, &err));
	ck_assert_int_eq(b.stored, 2);
	ck_assert_int_eq(changed[0], 0);
	ck_assert_int_eq(changed[1], 1);
	ck_assert_int_eq(changed[2], 1);
	ck_assert_str_eq(list_ids(&all), "d1,d2,d3");
	OK(inbox_cursor_get(ib, "sync:clients", &ua, &page, &err));
	ck_assert_str_eq(ua, "2026-01-01T00:00:00Z");
	ck_assert_str_eq(page, "p2");
	free(ua);
	free(page);
	OK(inbox_cursor_get(ib, "sync:none", &ua, &page, &err));
	ck_assert_ptr_null(ua);
	ck_assert_ptr_null(page);
}
END_TEST

/* ==== sources (docs/DESIGN.md "Sources") ================================= */

/* Store `id` from `source` (NULL: the default) with a body naming both;
 * returns inbox_store's status. */
static enum inbox_status
store_src(const char *id, const char *source, const char *type)
{
	struct event_fields f = { 0 };
	struct inbox_delivery d = { 0 };
	char body[256];
	int n = snprintf(body, sizeof body, "{\"id\":\"%s\",\"src\":\"%s\"}",
	    id, source != NULL ? source : "-");

	f.type = (char *)type;
	d.webhook_id = id;
	d.source = source;
	d.webhook_timestamp = 1772366400;
	d.body = body;
	d.body_len = (size_t)n;
	d.fields = &f;
	return inbox_store(ib, &d, &err);
}

/* Each event's source read back on every path: list, next_due, dead. */
START_TEST(source_stored_and_read_back)
{
	int64_t t = now_ns() + 60 * SEC;
	struct inbox_event e;
	struct snap s;

	OK(store_src("plain", NULL, "t"));
	OK(store_src("empty", "", "t"));
	OK(store_src("named", INBOX_DEFAULT_SOURCE, "t"));
	OK(store_src("stripe/evt_1", "stripe", "t"));
	get("plain", &s);
	ck_assert_str_eq(s.source, "default");
	snap_free(&s);
	get("empty", &s);
	ck_assert_str_eq(s.source, "default");
	snap_free(&s);
	get("named", &s);
	ck_assert_str_eq(s.source, "default");
	snap_free(&s);
	get("stripe/evt_1", &s);
	ck_assert_str_eq(s.source, "stripe");
	snap_free(&s);

	inbox_event_init(&e);
	take("stripe/evt_1", t, &e);
	ck_assert_str_eq(e.source, "stripe");
	take("plain", t, &e);
	ck_assert_str_eq(e.source, "default");
	inbox_event_free(&e);
}
END_TEST

/* Duplicates are found per source: the same id again from the same source
 * is a duplicate; from another source it is refused (INBOX_FAILED,
 * naming both), nothing written, the first row as it was. */
START_TEST(source_duplicate_and_conflict)
{
	struct inbox_filter all = { 0 };
	struct snap s;

	OK(store_src("stripe/evt_1", "stripe", "first"));
	ck_assert_int_eq(store_src("stripe/evt_1", "stripe", "again"),
	    INBOX_DUPLICATE);
	/* A default-source sender whose own id looks like stripe's. */
	ck_assert_int_eq(store_src("stripe/evt_1", NULL, "other"),
	    INBOX_FAILED);
	ck_assert_msg(contains(ERR, "webhook-id stripe/evt_1") &&
	    contains(ERR, "source default") && contains(ERR, "source stripe"),
	    "error \"%s\"", ERR);
	/* The caller reopens after INBOX_FAILED; this connection still
	 * works (nothing was left open). */
	get("stripe/evt_1", &s);
	ck_assert_str_eq(s.source, "stripe");
	ck_assert_str_eq(s.type, "first");
	ck_assert_uint_eq(s.body.len, strlen("{\"id\":\"stripe/evt_1\","
	    "\"src\":\"stripe\"}"));
	ck_assert(memcmp(s.body.data, "{\"id\":\"stripe/evt_1\",\"src\":"
	    "\"stripe\"}", s.body.len) == 0);
	snap_free(&s);

	/* The other way round: a default id met by a named source. */
	OK(store_src("x1", NULL, "first"));
	ck_assert_int_eq(store_src("x1", "github", "other"), INBOX_FAILED);
	ck_assert_msg(contains(ERR, "webhook-id x1") &&
	    contains(ERR, "source github") && contains(ERR, "source default"),
	    "error \"%s\"", ERR);
	get("x1", &s);
	ck_assert_str_eq(s.source, "default");
	ck_assert_str_eq(s.type, "first");
	snap_free(&s);
	ck_assert_int_eq(store_src("x1", NULL, "again"), INBOX_DUPLICATE);
	ck_assert_int_eq(count(&all), 2);

	/* A name longer than the store holds is refused, not truncated. */
	ck_assert_int_eq(store_src("long", "a-source-name-longer-than-32-bytes",
	    "t"), INBOX_FAILED);
	ck_assert_int_eq(count(&all), 2);
}
END_TEST

/* In a batch, another source's id is refused alone (changed -1, its
 * reason in err), the others stored as without it; with changed NULL it
 * fails the batch, nothing stored. */
START_TEST(source_conflict_in_a_batch)
{
	struct event_fields f = { 0 };
	struct inbox_delivery d[4];
	int changed[4] = { 9, 9, 9, 9 };
	struct inbox_batch b = { .d = d, .n = 4, .changed = changed };
	struct inbox_filter all = { 0 };
	struct snap s;
	int i;

	OK(store_src("gh/1", "gh", "t"));
	memset(d, 0, sizeof d);
	for (i = 0; i < 4; i++) {
		d[i].body = "{}";
		d[i].body_len = 2;
		d[i].fields = &f;
	}
	d[0].webhook_id = "gh/2";
	d[0].source = "gh";
	d[1].webhook_id = "gh/1";	/* there, from gh: not ours */
	d[2].webhook_id = "gh/1";	/* there, from gh: a duplicate */
	d[2].source = "gh";
	d[3].webhook_id = "plain";
	OK(inbox_store_batch(ib, &b, &err));
	ck_assert_int_eq(b.stored, 2);
	ck_assert_int_eq(changed[0], 1);
	ck_assert_int_eq(changed[1], -1);
	ck_assert_int_eq(changed[2], 0);
	ck_assert_int_eq(changed[3], 1);
	ck_assert_msg(contains(ERR, "webhook-id gh/1") &&
	    contains(ERR, "source default") && contains(ERR, "source gh"),
	    "error \"%s\"", ERR);
	ck_assert_str_eq(list_ids(&all), "gh/1,gh/2,plain");
	get("gh/1", &s);
	ck_assert_str_eq(s.source, "gh");
	snap_free(&s);
	get("plain", &s);
	ck_assert_str_eq(s.source, "default");
	snap_free(&s);

	/* changed NULL: the caller cannot be told which; nothing stored. */
	d[0].webhook_id = "gh/3";
	d[3].webhook_id = "plain2";
	b.changed = NULL;
	ck_assert_int_eq(inbox_store_batch(ib, &b, &err), INBOX_FAILED);
	ck_assert_int_eq(b.stored, 0);
	ck_assert_msg(contains(ERR, "webhook-id gh/1"), "error \"%s\"", ERR);
	ck_assert_str_eq(list_ids(&all), "gh/1,gh/2,plain");
}
END_TEST

/* The filter's source: list, count, requeue, forget. */
START_TEST(source_filter)
{
	int64_t t = now_ns() + 60 * SEC, n = -1;
	struct inbox_filter f = { 0 };

	OK(store_src("a", NULL, "t"));
	OK(store_src("stripe/b", "stripe", "t"));
	OK(store_src("gh/c", "gh", "t"));
	OK(store_src("stripe/d", "stripe", "t"));
	f.source = "stripe";
	ck_assert_str_eq(list_ids(&f), "stripe/b,stripe/d");
	ck_assert_int_eq(count(&f), 2);
	f.source = "default";
	ck_assert_str_eq(list_ids(&f), "a");
	ck_assert_int_eq(count(&f), 1);
	f.source = "";			/* any */
	ck_assert_int_eq(count(&f), 4);
	f.source = "none";
	ck_assert_int_eq(count(&f), 0);
	f.source = "stripe";
	f.webhook_id = "gh/c";		/* both must match */
	ck_assert_int_eq(count(&f), 0);
	f.webhook_id = NULL;

	ck_assert_str_eq(drain(t, "", 5), "a,stripe/b,gh/c,stripe/d");
	f.state = "done";
	OK(inbox_requeue(ib, &f, t, &n, &err));
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(state_of("stripe/b"), "pending");
	ck_assert_str_eq(state_of("stripe/d"), "pending");
	ck_assert_str_eq(state_of("a"), "done");
	ck_assert_str_eq(state_of("gh/c"), "done");

	f.state = NULL;
	f.source = "gh";
	OK(inbox_forget(ib, &f, &n, &err));
	ck_assert_int_eq(n, 1);
	f.source = NULL;
	ck_assert_str_eq(list_ids(&f), "a,stripe/b,stripe/d");
}
END_TEST

struct sources_seen {
	char	line[512];
	int	calls, stop_after;
};

static int
sources_cb(const struct inbox_source_count *c, void *arg)
{
	struct sources_seen *ss = arg;
	size_t len = strlen(ss->line);

	snprintf(ss->line + len, sizeof ss->line - len, "%s%s %lld/%lld/%lld/"
	    "%lld/%lld", len ? ";" : "", c->source, (long long)c->pending,
	    (long long)c->done, (long long)c->stale, (long long)c->dead,
	    (long long)c->waiting_retry);
	return ++ss->calls == ss->stop_after ? -1 : 0;
}

/* Per source, in name order: pending/done/stale/dead/waiting_retry. */
START_TEST(count_sources_figures)
{
	int64_t t = now_ns() + 60 * SEC;
	struct sources_seen ss = { "", 0, 0 };

	OK(inbox_count_sources(ib, sources_cb, &ss, &err));
	ck_assert_int_eq(ss.calls, 0);

	OK(store_src("zeta/1", "zeta", "t"));
	OK(store_src("a1", NULL, "t"));
	OK(store_src("a2", NULL, "t"));
	OK(store_src("b-x/1", "b-x", "t"));
	OK(store_src("b_x/1", "b_x", "t"));
	OK(store_src("b_x/2", "b_x", "t"));
	/* zeta/1 and b_x/2 fail once (waiting), a2 dies, the rest done. */
	ck_assert_str_eq(drain(t, ",zeta/1,b_x/2,a2,", 5),
	    "zeta/1!,a1,a2!,b-x/1,b_x/1,b_x/2!");
	{
		struct inbox_event e;
		int dead = 0;

		inbox_event_init(&e);
		take("a2", t + 120 * SEC, &e);
		ck_assert_int_eq(claim(&e, t + 120 * SEC), INBOX_CLAIMED);
		OK(fixture_fail(ib, &e, t + 120 * SEC, SEC, 2, "exit 1", NULL,
		    0, &dead, &err));
		ck_assert_int_eq(dead, 1);
		inbox_event_free(&e);
	}
	OK(store_src("b-x/2", "b-x", "t"));	/* pending, never tried */
	OK(inbox_count_sources(ib, sources_cb, &ss, &err));
	/* Byte order: '-' < '_' < letters. */
	ck_assert_str_eq(ss.line, "b-x 1/1/0/0/0;b_x 1/1/0/0/1;"
	    "default 0/1/0/1/0;zeta 1/0/0/0/1");
	ck_assert_int_eq(ss.calls, 4);

	/* fn's -1 stops it. */
	memset(&ss, 0, sizeof ss);
	ss.stop_after = 2;
	OK(inbox_count_sources(ib, sources_cb, &ss, &err));
	ck_assert_int_eq(ss.calls, 2);
	ck_assert_str_eq(ss.line, "b-x 1/1/0/0/0;b_x 1/1/0/0/1");
}
END_TEST

/* ==== due: order, settle, hold ============================================ */

START_TEST(order_by_instant)
{
	char minus[INSTANT_SIZE], plus[INSTANT_SIZE], json[256];
	struct inbox_filter all = { 0 };
	int64_t t = now_ns();

	/* As text, "12:00+01:00" > "11:30Z" > "06:59:59.5-04:00"; as
	 * instants 11:00 < 11:30 and 10:59:59.5 first. */
	store_json("a", "{\"type\":\"t\","
	    "\"createdAt\":\"2026-03-01T12:00:00+01:00\"}");
	store_json("b", "{\"type\":\"t\","
	    "\"createdAt\":\"2026-03-01T11:30:00Z\"}");
	snprintf(json, sizeof json, "{\"type\":\"t\",\"createdAt\":\"%s\"}",
	    fmt(t + 3600 * SEC, plus));
	store_json("g", json);		/* an hour ahead of its arrival */
	store_json("e", "{\"type\":\"no clock\"}");
	store_json("c", "{\"createdAt\":\"2026-03-01T06:59:59.5-04:00\"}");
	/* The same instant as b, arrived later: after b. */
	store_json("d", "{\"createdAt\":\"2026-03-01T11:30:00.000+00:00\"}");
	snprintf(json, sizeof json, "{\"type\":\"t\",\"createdAt\":\"%s\"}",
	    fmt(t - 3600 * SEC, minus));
	store_json("f", json);		/* an hour before e arrived */
	store_json("h", "not json at all");	/* no clock, after e */

	ck_assert_str_eq(due(now_ns() + 60 * SEC, 0), "c,a,b,d,f,e,h,g");
	ck_assert_str_eq(list_ids(&all), "c,a,b,d,f,e,h,g");
}
END_TEST

START_TEST(settle)
{
	int64_t t;

	store("fresh", "t", AT("10:00:00"), NULL, NULL, NULL);
	t = now_ns();
	ck_assert_str_eq(due(t, 60 * SEC), "");
	ck_assert_str_eq(due(t + 59 * SEC, 60 * SEC), "");
	ck_assert_str_eq(due(t + 61 * SEC, 60 * SEC), "fresh");
	ck_assert_str_eq(due(t, 0), "fresh");

	/* Requeued: due at once, settle or not. */
	ck_assert_int_eq(requeue("fresh", t), 1);
	ck_assert_str_eq(due(t, 60 * SEC), "fresh");
	/* ... but not before the instant it was requeued for. */
	ck_assert_str_eq(due(t - SEC, 60 * SEC), "");
}
END_TEST

/*
 * docs/DESIGN.md "Per-object order under failure": an event waiting for a
 * retry holds back the later events of its own object (pending, shown
 * blocked), never those of other objects; once done they follow in order.
 */
START_TEST(per_object_hold)
{
	struct inbox_filter all = { 0 };
	struct inbox_status_report r;
	int64_t t = now_ns() + 60 * SEC;
	struct snap s;

	store("X1", "t", AT("10:00:00"), "invoice", "X", NULL);
	store("X2", "t", AT("11:00:00"), "invoice", "X", NULL);
	store("Y1", "t", AT("10:30:00"), "invoice", "Y", NULL);
	store("X3", "t", AT("12:00:00"), "invoice", "X", NULL);
	/* The same id, another object type: another object. */
	store("Z", "t", AT("10:45:00"), "customer", "X", NULL);

	/* Only the first pending event of an object is due. */
	ck_assert_str_eq(due(t, 0), "X1,Y1,Z");
	ck_assert_str_eq(list_ids(&all), "X1,Y1,Z,X2!,X3!");

	ck_assert_str_eq(drain(t, ",X1,", 5), "X1!,Y1,Z");
	get("X1", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.failures, 1);
	ck_assert_int_eq(s.attempts, 1);
	ck_assert_int_eq(s.blocked, 0);
	snap_free(&s);
	ck_assert_str_eq(list_ids(&all), "X1,Y1,Z,X2!,X3!");
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.pending, 3);
	ck_assert_int_eq(r.done, 2);
	ck_assert_int_eq(r.waiting_retry, 1);
	ck_assert_int_eq(r.blocked, 2);

	/* Another object's new event is not held. */
	store("W", "t", AT("13:00:00"), "invoice", "Y", NULL);
	ck_assert_str_eq(due(t, 0), "W");
	ck_assert_str_eq(due(t + 59 * SEC, 0), "W");
	ck_assert_str_eq(due(t + 60 * SEC, 0), "X1,W");

	/* X1 done: X2, X3 follow in order, in the same run. */
	ck_assert_str_eq(drain(t + 60 * SEC, "", 5), "X1,X2,X3,W");
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.pending, 0);
	ck_assert_int_eq(r.done, 6);
	ck_assert_int_eq(r.blocked, 0);
}
END_TEST

/* run --jobs (docs/jobs.md) relies on this: a claimed event whose
 * verdict is not recorded yet (its handler runs) is still pending, so it
 * holds the later events of its object, and only those; once its verdict
 * is recorded the next one is due. */
START_TEST(in_flight_holds_its_object)
{
	int64_t t = now_ns() + 60 * SEC;
	struct inbox_event a1, a2;

	store("A1", "t", AT("10:00:00"), "invoice", "A", NULL);
	store("A2", "t", AT("10:10:00"), "invoice", "A", NULL);
	store("B1", "t", AT("10:05:00"), "invoice", "B", NULL);
	store("N1", "t", AT("10:06:00"), NULL, NULL, NULL);
	inbox_event_init(&a1);
	inbox_event_init(&a2);
	take("A1", t, &a1);
	ck_assert_int_eq(claim(&a1, t), INBOX_CLAIMED);
	/* A1 in flight: found again itself (the run passes over it), A2
	 * held, B1 and the object-less N1 due. */
	ck_assert_str_eq(due(t, 0), "A1,B1,N1");
	OK(inbox_finish_done(ib, &a1, t, NULL, 0, &err));
	ck_assert_str_eq(due(t, 0), "B1,N1,A2");
	/* The same with A2 in flight: A3 waits for it. */
	store("A3", "t", AT("10:20:00"), "invoice", "A", NULL);
	take("A2", t, &a2);
	ck_assert_int_eq(claim(&a2, t), INBOX_CLAIMED);
	ck_assert_str_eq(due(t, 0), "B1,N1,A2");
	OK(inbox_finish_done(ib, &a2, t, NULL, 0, &err));
	ck_assert_str_eq(due(t, 0), "B1,N1,A3");
	inbox_event_free(&a1);
	inbox_event_free(&a2);
}
END_TEST

/* Once the failing event is dead the object moves on; a requeued event
 * that fails again holds its object like any other. */
START_TEST(dead_releases_hold)
{
	struct inbox_filter all = { 0 };
	int64_t t = now_ns() + 60 * SEC;

	store("D1", "t", AT("10:00:00"), "order", "D", NULL);
	store("D2", "t", AT("11:00:00"), "order", "D", NULL);
	store("E1", "t", AT("10:30:00"), "order", "E", NULL);

	ck_assert_str_eq(drain(t, ",D1,", 2), "D1!,E1");
	ck_assert_str_eq(drain(t + 60 * SEC, ",D1,", 2), "D1+,D2");
	ck_assert_str_eq(state_of("D1"), "dead");
	ck_assert_str_eq(state_of("D2"), "done");

	/* Requeued, it is older than D2 (stale, handed out anyway), fails
	 * with a fresh budget, and holds the object's next event. */
	ck_assert_int_eq(requeue("D1", t + 120 * SEC), 1);
	ck_assert_str_eq(drain(t + 120 * SEC, ",D1,", 2), "D1^!");
	ck_assert_str_eq(state_of("D1"), "pending");
	store("D3", "t", AT("12:00:00"), "order", "D", NULL);
	ck_assert_str_eq(due(t + 120 * SEC, 0), "");
	ck_assert_str_eq(list_ids(&all), "D1,E1,D2,D3!");
}
END_TEST

static int
received_cb(const struct inbox_history_row *r, void *arg)
{
	if (strcmp(r->name, "received") == 0)
		*(int64_t *)arg += r->n;
	return 0;
}

/* docs/report.md: the drainer's look at the due events counts the events
 * received since in the history (`received`), each once. */
START_TEST(next_due_counts_received)
{
	int64_t t = now_ns() + 60 * SEC, n = 0;

	store("a1", "t", AT("10:00:01"), "client", "1", NULL);
	store("a2", "t", AT("10:00:02"), "client", "1", NULL);
	store("b1", "t", AT("10:00:03"), "client", "2", NULL);
	store("n1", "t", NULL, NULL, NULL, NULL);
	ck_assert_str_eq(drain(t, ",a1,", 5), "a1!,b1,n1");
	ck_assert_str_eq(drain(t + 60 * SEC, "", 5), "a1,a2");
	OK(inbox_history_read(ib, INT64_MIN, received_cb, &n, &err));
	ck_assert_int_eq(n, 4);
}
END_TEST

/* ==== claim and the stale rule =========================================== */

START_TEST(claim_outcomes)
{
	struct inbox_event e, k;
	int64_t t = now_ns() + 60 * SEC;
	struct snap s;

	inbox_event_init(&e);
	inbox_event_init(&k);

	/* Claimed: one hand-out counted, in *e and in the row. */
	store("c1", "t", AT("10:00:00"), "thing", "C", NULL);
	take("c1", t, &e);
	ck_assert_int_eq(e.attempts, 0);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	ck_assert_int_eq(e.attempts, 1);
	get("c1", &s);
	ck_assert_int_eq(s.attempts, 1);
	ck_assert_str_eq(s.state, "pending");
	snap_free(&s);

	/* No longer pending: skipped, nothing counted. */
	OK(inbox_finish_done(ib, &e, t, NULL, 0, &err));
	ck_assert_int_eq(claim(&e, t), INBOX_SKIPPED);
	get("c1", &s);
	ck_assert_int_eq(s.attempts, 1);
	ck_assert_str_eq(s.state, "done");
	snap_free(&s);

	/* Held since it was read: an earlier event of its object arrived. */
	store("k2", "t", AT("11:00:00"), "thing", "K", NULL);
	take("k2", t, &k);
	store("k1", "t", AT("10:00:00"), "thing", "K", NULL);
	ck_assert_int_eq(claim(&k, t), INBOX_SKIPPED);
	get("k2", &s);
	ck_assert_int_eq(s.attempts, 0);
	ck_assert_str_eq(s.state, "pending");
	snap_free(&s);

	/* Forgotten since it was read. */
	take("k1", t, &e);
	ck_assert_int_eq(forget("k1"), 1);
	ck_assert_int_eq(claim(&e, t), INBOX_SKIPPED);
	/* k2 is first of its object again. */
	ck_assert_int_eq(claim(&k, t), INBOX_CLAIMED);

	inbox_event_free(&e);
	inbox_event_free(&k);
}
END_TEST

/*
 * docs/DESIGN.md "Stale rule": stale when strictly older than what was done
 * for the object by either clock (created_at against the newest event
 * clock done, updated_at against the newest object version done); an
 * event with one clock is judged by that one; equal is not stale; no
 * clock, never stale.  Each case has an object of its own: first an
 * event with the `done` clocks is done, then the candidate is claimed.
 */
struct stale_case {
	const char	*done_created, *done_updated;
	const char	*created, *updated;
	int		 stale;
};

static const struct stale_case stale_cases[] = {
	/* created_at only */
	{ AT("10:00:00"), AT("10:00:00"), AT("09:59:59"), NULL, 1 },
	{ AT("10:00:00"), AT("10:00:00"), AT("10:00:00"), NULL, 0 },
	{ AT("10:00:00"), AT("10:00:00"), AT("10:00:01"), NULL, 0 },
	/* updated_at only */
	{ AT("10:00:00"), AT("10:00:00"), NULL, AT("09:59:59"), 1 },
	{ AT("10:00:00"), AT("10:00:00"), NULL, AT("10:00:00"), 0 },
	{ AT("10:00:00"), AT("10:00:00"), NULL, AT("10:00:01"), 0 },
	/* both: older by either is stale */
	{ AT("10:00:00"), AT("10:00:00"), AT("11:00:00"), AT("09:00:00"), 1 },
	{ AT("10:00:00"), AT("10:00:00"), AT("09:00:00"), AT("11:00:00"), 1 },
	{ AT("10:00:00"), AT("10:00:00"), AT("10:00:00"), AT("10:00:00"), 0 },
	{ AT("10:00:00"), AT("10:00:00"), AT("11:00:00"), AT("11:00:00"), 0 },
	/* no clock: never stale */
	{ AT("10:00:00"), AT("10:00:00"), NULL, NULL, 0 },
	/* the object has only one clock done: the other cannot judge */
	{ AT("10:00:00"), NULL, NULL, AT("09:00:00"), 0 },
	{ AT("10:00:00"), NULL, AT("09:00:00"), AT("09:00:00"), 1 },
	{ NULL, AT("10:00:00"), AT("09:00:00"), NULL, 0 },
	{ NULL, AT("10:00:00"), AT("09:00:00"), AT("09:00:00"), 1 },
	/* instants, not text: 12:00+01:00 is 11:00Z, before 11:30Z */
	{ "2026-03-01T12:00:00+01:00", NULL, AT("11:30:00"), NULL, 0 },
	{ "2026-03-01T12:00:00+01:00", NULL, AT("10:30:00"), NULL, 1 },
	{ NULL, "2026-03-01T10:00:00-02:00", NULL, AT("11:59:59.999"), 1 },
	/* fractions: one nanosecond older is older; equal is equal */
	{ AT("10:00:00.5"), NULL, AT("10:00:00.499999999"), NULL, 1 },
	{ AT("10:00:00.5"), NULL, "2026-03-01T10:00:00.500+00:00", NULL, 0 },
};

START_TEST(stale_rule)
{
	const struct stale_case *c = &stale_cases[_i];
	int64_t t = now_ns() + 60 * SEC;
	char oid[32], did[32], eid[32];
	struct inbox_event e;
	struct snap s;
	int stale = -1;

	snprintf(oid, sizeof oid, "obj%d", _i);
	snprintf(did, sizeof did, "done%d", _i);
	snprintf(eid, sizeof eid, "cand%d", _i);
	store(did, "t", c->done_created, "thing", oid, c->done_updated);
	done(did, t);
	store(eid, "t", c->created, "thing", oid, c->updated);

	inbox_event_init(&e);
	take(eid, t, &e);
	OK(inbox_is_stale(ib, &e, &stale, &err));
	ck_assert_msg(stale == c->stale, "case %d: inbox_is_stale %d, want %d",
	    _i, stale, c->stale);
	ck_assert_msg(claim(&e, t) == (c->stale ? INBOX_MARKED_STALE :
	    INBOX_CLAIMED), "case %d: claim, want %s", _i,
	    c->stale ? "MARKED_STALE" : "CLAIMED");
	inbox_event_free(&e);

	get(eid, &s);
	if (c->stale) {
		char at[INSTANT_SIZE];
		ck_assert_str_eq(s.state, "stale");
		ck_assert_int_eq(s.attempts, 0);
		ck_assert_str_eq(s.finished_at, fmt(t, at));
		ck_assert_str_eq(due(t, 0), "");
	} else {
		ck_assert_str_eq(s.state, "pending");
		ck_assert_int_eq(s.attempts, 1);
	}
	snap_free(&s);
}
END_TEST

START_TEST(no_object_never_stale)
{
	int64_t t = now_ns() + 60 * SEC;

	/* Events without an object key have no clocks to be judged by. */
	store("n1", "t", AT("10:00:00"), NULL, NULL, AT("10:00:00"));
	done("n1", t);
	store("n0", "t", AT("09:00:00"), NULL, NULL, AT("09:00:00"));
	ck_assert_int_eq(take_claim("n0", t, 0), INBOX_CLAIMED);
	/* Half an object key is no key. */
	store("h1", "t", AT("10:00:00"), "thing", NULL, NULL);
	done("h1", t);
	store("h0", "t", AT("09:00:00"), "thing", NULL, NULL);
	ck_assert_int_eq(take_claim("h0", t, 0), INBOX_CLAIMED);
	/* ... so no clocks were kept for any of them. */
	ck_assert_int_eq(objects_count(), 0);
}
END_TEST

/* Requeue hands a stale event out anyway; its done does not move the
 * object's clocks back. */
START_TEST(requeue_stale_and_clocks_never_back)
{
	int64_t t = now_ns() + 60 * SEC;
	struct snap sn;
	struct inbox_event e;
	int stale = -1;

	store("new", "t", AT("11:00:00"), "order", "P", AT("11:00:00"));
	done("new", t);
	store("old", "t", AT("10:00:00"), "order", "P", AT("10:00:00"));
	ck_assert_int_eq(take_claim("old", t, 0), INBOX_MARKED_STALE);

	ck_assert_int_eq(requeue("old", t + SEC), 1);
	get("old", &sn);
	ck_assert_str_eq(sn.state, "pending");
	ck_assert_int_eq(sn.requeued, 1);
	ck_assert_int_eq(sn.failures, 0);
	ck_assert_str_eq(sn.finished_at, "");
	snap_free(&sn);

	inbox_event_init(&e);
	take("old", t + SEC, &e);
	OK(inbox_is_stale(ib, &e, &stale, &err));
	ck_assert_int_eq(stale, 1);
	ck_assert_int_eq(claim(&e, t + SEC), INBOX_CLAIMED_STALE);
	ck_assert_int_eq(e.attempts, 1);
	OK(inbox_finish_done(ib, &e, t + SEC, NULL, 0, &err));
	inbox_event_free(&e);
	get("old", &sn);
	ck_assert_str_eq(sn.state, "done");
	ck_assert_int_eq(sn.requeued, 0);
	snap_free(&sn);

	/* The clocks stay at 11:00. */
	ck_assert_str_eq(object_clocks("order", "P"),
	    "2026-03-01T11:00:00.000000000Z 2026-03-01T11:00:00.000000000Z");
	store("mid", "t", AT("10:30:00"), "order", "P", NULL);
	ck_assert_int_eq(take_claim("mid", t + 2 * SEC, 0), INBOX_MARKED_STALE);
	store("mid2", "t", NULL, "order", "P", AT("10:30:00"));
	ck_assert_int_eq(take_claim("mid2", t + 2 * SEC, 0),
	    INBOX_MARKED_STALE);
	store("same", "t", AT("11:00:00"), "order", "P", NULL);
	ck_assert_int_eq(take_claim("same", t + 2 * SEC, 0), INBOX_CLAIMED);
}
END_TEST

/*
 * A handed-out event that carried the object as the API returned it
 * (object_version, the drainer's refetch) advances both of the object's
 * clocks to the later of its own clocks and that version: a newer version
 * moves them past the event's, an older one leaves the event's.
 * Regression: turning that comparison around (it then picks the earlier)
 * passed every other test.
 */
/* Take, claim and finish `id` as done with the object as the API served
 * it at `version` (ISO-8601); returns the object's clocks afterwards. */
static const char *
done_at_version(const char *id, const char *oid, const char *version,
    int64_t t)
{
	struct inbox_event e;

	inbox_event_init(&e);
	take(id, t, &e);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	ck_assert_int_eq(instant_parse(version, strlen(version),
	    e.object_version), 0);
	OK(inbox_finish_done(ib, &e, t, NULL, 0, &err));
	inbox_event_free(&e);
	return object_clocks("order", oid);
}

START_TEST(refetch_version_advances_clocks)
{
	int64_t t = now_ns() + 60 * SEC;

	/* The API served the object at 12:00, newer than the 10:00 event. */
	store("r1", "t", AT("10:00:00"), "order", "R", AT("10:00:00"));
	ck_assert_str_eq(done_at_version("r1", "R", AT("12:00:00"), t),
	    "2026-03-01T12:00:00.000000000Z 2026-03-01T12:00:00.000000000Z");
	/* So an 11:00 event of it, late, is stale by either clock. */
	store("r2", "t", AT("11:00:00"), "order", "R", NULL);
	ck_assert_int_eq(take_claim("r2", t, 0), INBOX_MARKED_STALE);
	store("r3", "t", NULL, "order", "R", AT("11:00:00"));
	ck_assert_int_eq(take_claim("r3", t, 0), INBOX_MARKED_STALE);

	/* Served at 09:00, older than the 11:00 event: the event's clocks. */
	store("q1", "t", AT("11:00:00"), "order", "Q", AT("11:00:00"));
	ck_assert_str_eq(done_at_version("q1", "Q", AT("09:00:00"), t),
	    "2026-03-01T11:00:00.000000000Z 2026-03-01T11:00:00.000000000Z");
	store("q2", "t", AT("10:00:00"), "order", "Q", NULL);
	ck_assert_int_eq(take_claim("q2", t, 0), INBOX_MARKED_STALE);
}
END_TEST

START_TEST(clocks_advance_per_clock)
{
	int64_t t = now_ns() + 60 * SEC;

	/* Each clock moves forward on its own; a missing one leaves it. */
	store("a", "t", AT("10:00:00"), "o", "1", AT("12:00:00"));
	done("a", t);
	store("b", "t", AT("11:00:00"), "o", "1", NULL);
	done("b", t);
	ck_assert_str_eq(object_clocks("o", "1"),
	    "2026-03-01T11:00:00.000000000Z 2026-03-01T12:00:00.000000000Z");
	store("c", "t", NULL, "o", "1", AT("12:30:00"));
	done("c", t);
	ck_assert_str_eq(object_clocks("o", "1"),
	    "2026-03-01T11:00:00.000000000Z 2026-03-01T12:30:00.000000000Z");
	/* An object with one clock done keeps the other unset. */
	store("d", "t", AT("10:00:00"), "o", "2", NULL);
	done("d", t);
	ck_assert_str_eq(object_clocks("o", "2"),
	    "2026-03-01T10:00:00.000000000Z <null>");
	ck_assert_int_eq(objects_count(), 2);
}
END_TEST

/* ==== retries, requeue, forget ============================================ */

START_TEST(failures_and_death)
{
	int64_t t = now_ns() + 60 * SEC;
	char at[INSTANT_SIZE];
	struct inbox_event e;
	enum inbox_status st;
	struct snap s;
	int dead = -1;
	char big[10000];

	inbox_event_init(&e);
	store("f", "t", AT("10:00:00"), "order", "F", NULL);

	take("f", t, &e);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	OK(fixture_fail(ib, &e, t, 30 * SEC, 3, "exit 3", "oops\n", 5,
	    &dead, &err));
	ck_assert_int_eq(dead, 0);
	get("f", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.failures, 1);
	ck_assert_int_eq(s.attempts, 1);
	ck_assert_str_eq(s.next_at, fmt(t + 30 * SEC, at));
	ck_assert_str_eq(s.finished_at, "");
	ck_assert_str_eq(s.last_error, "exit 3");
	ck_assert_uint_eq(s.output.len, 5);
	ck_assert(memcmp(s.output.data, "oops\n", 5) == 0);
	snap_free(&s);

	/* Due again exactly at next_at. */
	ck_assert_str_eq(due(t + 30 * SEC - 1, 0), "");
	ck_assert_str_eq(due(t + 30 * SEC, 0), "f");

	take("f", t + 30 * SEC, &e);
	ck_assert_int_eq(claim(&e, t + 30 * SEC), INBOX_CLAIMED);
	memset(big, 'z', sizeof big);
	memcpy(big + sizeof big - 4, "end\n", 4);
	OK(fixture_fail(ib, &e, t + 30 * SEC, 60 * SEC, 3, "exit 4",
	    big, sizeof big, &dead, &err));
	ck_assert_int_eq(dead, 0);
	get("f", &s);
	ck_assert_int_eq(s.failures, 2);
	ck_assert_str_eq(s.last_error, "exit 4");
	/* The output kept is a tail of what was given. */
	ck_assert_uint_gt(s.output.len, 4);
	ck_assert_uint_le(s.output.len, sizeof big);
	ck_assert(memcmp(s.output.data, big + sizeof big - s.output.len,
	    s.output.len) == 0);
	snap_free(&s);

	take("f", t + 90 * SEC, &e);
	ck_assert_int_eq(claim(&e, t + 90 * SEC), INBOX_CLAIMED);
	OK(fixture_fail(ib, &e, t + 90 * SEC, 60 * SEC, 3,
	    "killed by signal 9", NULL, 0, &dead, &err));
	ck_assert_int_eq(dead, 1);
	get("f", &s);
	ck_assert_str_eq(s.state, "dead");
	ck_assert_int_eq(s.failures, 3);
	ck_assert_int_eq(s.attempts, 3);
	ck_assert_str_eq(s.finished_at, fmt(t + 90 * SEC, at));
	ck_assert_str_eq(s.last_error, "killed by signal 9");
	snap_free(&s);
	ck_assert_str_eq(due(t + 1000 * SEC, 0), "");

	/*
	 * A verdict for an event no longer pending changes nothing and says
	 * INBOX_LOST on both engines (inbox.h, the finish_* calls).
	 */
	st = fixture_fail(ib, &e, t + 100 * SEC, 60 * SEC, 3, "late", NULL, 0,
	    &dead, &err);
	ck_assert_msg(st == INBOX_LOST, "late verdict: %d: %s", (int)st, ERR);
	ck_assert_int_eq(inbox_finish_done(ib, &e, t + 100 * SEC, NULL, 0, &err),
	    INBOX_LOST);
	ck_assert_int_eq(inbox_finish_stale(ib, &e, t + 100 * SEC, &err),
	    INBOX_LOST);
	ck_assert_int_eq(dead, 0);
	get("f", &s);
	ck_assert_int_eq(s.failures, 3);
	ck_assert_str_eq(s.state, "dead");
	ck_assert_str_eq(s.last_error, "killed by signal 9");
	snap_free(&s);

	/* Requeue: a fresh budget; attempts go on counting. */
	ck_assert_int_eq(requeue("f", t + 200 * SEC), 1);
	get("f", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.failures, 0);
	ck_assert_int_eq(s.attempts, 3);
	ck_assert_int_eq(s.requeued, 1);
	ck_assert_str_eq(s.next_at, fmt(t + 200 * SEC, at));
	ck_assert_str_eq(s.finished_at, "");
	snap_free(&s);
	take("f", t + 200 * SEC, &e);
	ck_assert_int_eq(claim(&e, t + 200 * SEC), INBOX_CLAIMED);
	ck_assert_int_eq(e.attempts, 4);
	OK(fixture_fail(ib, &e, t + 200 * SEC, 60 * SEC, 3, "exit 1",
	    NULL, 0, &dead, &err));
	ck_assert_int_eq(dead, 0);
	get("f", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.failures, 1);
	snap_free(&s);
	inbox_event_free(&e);
}
END_TEST

START_TEST(max_attempts_one)
{
	int64_t t = now_ns() + 60 * SEC;

	store("once", "t", NULL, NULL, NULL, NULL);
	ck_assert_str_eq(drain(t, ",once,", 1), "once+");
	ck_assert_str_eq(state_of("once"), "dead");
}
END_TEST

START_TEST(requeue_filters)
{
	struct inbox_filter f = { .state = "done" };
	int64_t t = now_ns() + 60 * SEC, n = -1;

	store("r1", "a.b", NULL, NULL, NULL, NULL);
	store("r2", "a.c", NULL, NULL, NULL, NULL);
	store("r3", "x.y", NULL, NULL, NULL, NULL);
	ck_assert_str_eq(drain(t, "", 5), "r1,r2,r3");
	ck_assert_int_eq(requeue("none-such", t), 0);
	f.type_glob = "a.*";
	OK(inbox_requeue(ib, &f, t, &n, &err));
	ck_assert_int_eq(n, 2);
	ck_assert_str_eq(state_of("r1"), "pending");
	ck_assert_str_eq(state_of("r2"), "pending");
	ck_assert_str_eq(state_of("r3"), "done");
	ck_assert_str_eq(due(t, 0), "r1,r2");
}
END_TEST

/* forget deletes the id, not the object's clocks: a replay goes out again
 * if still the newest, is stale if newer ones were done. */
START_TEST(forget_keeps_clocks)
{
	int64_t t = now_ns() + 60 * SEC;
	struct inbox_filter all = { 0 };

	store("n", "t", AT("11:00:00"), "order", "R", NULL);
	done("n", t);
	ck_assert_int_eq(forget("n"), 1);
	ck_assert_int_eq(forget("n"), 0);
	ck_assert_int_eq(count(&all), 0);
	ck_assert_str_eq(object_clocks("order", "R"),
	    "2026-03-01T11:00:00.000000000Z <null>");

	/* The replay is accepted again and, equal to the clock, goes out. */
	ck_assert_int_eq(store_body("n", "t", AT("11:00:00"), "order", "R",
	    NULL, "n", 1), INBOX_OK);
	ck_assert_int_eq(take_claim("n", t, 1), INBOX_CLAIMED);
	/* An older one is stale: the clock survived the forget. */
	ck_assert_int_eq(forget("n"), 1);
	store("o", "t", AT("10:00:00"), "order", "R", NULL);
	ck_assert_int_eq(take_claim("o", t, 0), INBOX_MARKED_STALE);
}
END_TEST

/*
 * An operator forgets an event while its handler runs, and the provider's
 * replay of it is stored before the verdict: the verdict is not recorded
 * on the replay (another event, received later), which is handed out as
 * new; a done verdict still advances the object's clocks (the handler
 * applied that version).  A failed one changes nothing at all.
 */
START_TEST(verdict_after_forget_and_replay)
{
	struct timespec ms = { 0, 2 * 1000000 };
	int64_t t = now_ns() + 60 * SEC;
	struct inbox_event e;
	struct snap s;
	int dead = 1;

	inbox_event_init(&e);
	store("r", "t", AT("11:00:00"), "order", "R", NULL);
	take("r", t, &e);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	ck_assert_int_eq(forget("r"), 1);
	nanosleep(&ms, NULL);		/* a later received_at for the replay */
	store("r", "t", AT("11:00:00"), "order", "R", NULL);
	ck_assert_int_eq(inbox_finish_done(ib, &e, t, "ok", 2, &err),
	    INBOX_LOST);
	get("r", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.attempts, 0);
	snap_free(&s);
	ck_assert_str_eq(object_clocks("order", "R"),
	    "2026-03-01T11:00:00.000000000Z <null>");
	/* The replay, equal to the clock, goes out. */
	ck_assert_int_eq(take_claim("r", t, 0), INBOX_CLAIMED);
	inbox_event_free(&e);

	/* The same with a failure: nothing recorded, nothing moved. */
	inbox_event_init(&e);
	store("f", "t", AT("12:00:00"), "order", "F", NULL);
	take("f", t, &e);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	ck_assert_int_eq(forget("f"), 1);
	nanosleep(&ms, NULL);
	store("f", "t", AT("12:00:00"), "order", "F", NULL);
	ck_assert_int_eq(fixture_fail(ib, &e, t, SEC, 1, "exit 1", NULL, 0,
	    &dead, &err), INBOX_LOST);
	ck_assert_int_eq(dead, 0);
	ck_assert_int_eq(inbox_finish_stale(ib, &e, t, &err), INBOX_LOST);
	get("f", &s);
	ck_assert_str_eq(s.state, "pending");
	ck_assert_int_eq(s.failures, 0);
	snap_free(&s);
	ck_assert_str_eq(object_clocks("order", "F"), "<none>");
	inbox_event_free(&e);
}
END_TEST

/* ==== list, count ========================================================= */

START_TEST(list_filters)
{
	struct timespec ms = { 0, 2 * 1000000 };
	int64_t t = now_ns() + 60 * SEC, mid;

	store("p1", "payment.succeeded", AT("10:00:00"), "payment", "1", NULL);
	store("p2", "payment.failed", AT("10:01:00"), "payment", "2", NULL);
	store("i1", "invoice.paid", AT("10:02:00"), "invoice", "1", NULL);
	/* received_at comes from the real clock: a mark between arrivals. */
	nanosleep(&ms, NULL);
	mid = now_ns();
	nanosleep(&ms, NULL);
	store("i2", "invoice.paid", AT("10:03:00"), "invoice", "1", NULL);
	store("c1", NULL, AT("10:04:00"), NULL, NULL, NULL);
	done("p2", t);

#define LIST(want, ...) do {						\
	struct inbox_filter f_ = { __VA_ARGS__ };			\
	const char *w_ = (want);					\
	int64_t n_ = 0;							\
	ck_assert_str_eq(list_ids(&f_), w_);				\
	for (const char *p_ = w_; *p_; p_++)				\
		n_ += *p_ == ',';					\
	ck_assert_int_eq(count(&f_), *w_ ? n_ + 1 : 0);			\
} while (0)

	LIST("p1,p2,i1,i2!,c1", .limit = 0);
	LIST("p1,i1,i2!,c1", .state = "pending");
	LIST("p2", .state = "done");
	LIST("", .state = "dead");
	LIST("p1,p2", .type_glob = "payment.*");
	LIST("i1,i2!", .type_glob = "*.paid");
	LIST("", .type_glob = "payment");
	LIST("i1,i2!", .object_type = "invoice", .object_id = "1");
	LIST("p1,p2", .object_type = "payment");
	LIST("p1,i1,i2!", .object_id = "1");
	LIST("i2!,c1", .since_ns = mid, .has_since = 1);
	LIST("p1,p2,i1", .until_ns = mid, .has_until = 1);
	LIST("", .since_ns = mid, .until_ns = mid, .has_since = 1,
	    .has_until = 1);
	/* The epoch is a real bound, not "unset". */
	LIST("", .until_ns = 0, .has_until = 1);
	LIST("i2!", .webhook_id = "i2");
	LIST("p1", .type_glob = "payment.*", .state = "pending");
#undef LIST
	{
		/* limit applies to list (count counts them all). */
		struct inbox_filter f = { .limit = 2 };
		ck_assert_str_eq(list_ids(&f), "p1,p2");
		ck_assert_int_eq(count(&f), 5);
	}
}
END_TEST

/* Shell-style globs (inbox.h, inbox_filter.type_glob): `.` is a dot, `?`
 * one character, classes and negated classes; then forget and status. */
START_TEST(type_globs_forget_and_status)
{
	struct inbox_filter f = { 0 };
	struct inbox_status_report r;
	int listed = 0;

	store("p1", "payment.created", NULL, NULL, NULL, NULL);
	store("p2", "payment.failed", NULL, NULL, NULL, NULL);
	store("c1", "client.updated", NULL, NULL, NULL, NULL);
	store("c2", "clientXupdated", NULL, NULL, NULL, NULL);
	f.type_glob = "payment.*";
	ck_assert_int_eq(count(&f), 2);
	f.type_glob = "client.updated";	/* the dot is a dot */
	ck_assert_int_eq(count(&f), 1);
	ck_assert_str_eq(list_ids(&f), "c1");
	f.type_glob = "[cp]*.??????d";
	ck_assert_int_eq(count(&f), 2);	/* client.updated, payment.created */
	ck_assert_str_eq(list_ids(&f), "p1,c1");
	f.type_glob = "[^p]*";
	OK(inbox_list(ib, &f, 0, count_cb, &listed, &err));
	ck_assert_int_eq(listed, 2);
	ck_assert_str_eq(list_ids(&f), "c1,c2");
	f.type_glob = NULL;
	f.state = "pending";
	f.limit = 3;
	listed = 0;
	OK(inbox_list(ib, &f, 1, count_cb, &listed, &err));
	ck_assert_int_eq(listed, 3);
	f.limit = 0;
	f.state = NULL;
	ck_assert_int_eq(forget("c2"), 1);
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.pending, 3);
	ck_assert_int_eq(r.done, 0);
	ck_assert_str_ne(r.oldest_pending, "");
	OK(inbox_probe_write(ib, &err));
	/* The probe wrote nothing. */
	ck_assert_int_eq(count(&f), 3);
}
END_TEST

static int
stop_cb(const struct inbox_event *e, void *arg)
{
	int *calls = arg;

	(void)e;
	(*calls)++;
	return -1;
}

START_TEST(list_bodies_and_stop)
{
	struct inbox_filter f = { .webhook_id = "b" };
	struct snap s;
	int calls = 0;

	OK(store_body("b", NULL, NULL, NULL, NULL, NULL, "body\0bytes", 10));
	store("c", NULL, NULL, NULL, NULL, NULL);

	/* Without bodies: has_body says one is there, none is loaded. */
	memset(&s, 0, sizeof s);
	buf_init(&s.body, SIZE_MAX / 2);
	buf_init(&s.output, SIZE_MAX / 2);
	OK(inbox_list(ib, &f, 0, snap_cb, &s, &err));
	ck_assert_int_eq(s.found, 1);
	ck_assert_int_eq(s.has_body, 1);
	ck_assert_uint_eq(s.body.len, 0);
	snap_free(&s);
	get("b", &s);
	ck_assert_uint_eq(s.body.len, 10);
	ck_assert(memcmp(s.body.data, "body\0bytes", 10) == 0);
	snap_free(&s);

	f.webhook_id = NULL;
	OK(inbox_list(ib, &f, 0, stop_cb, &calls, &err));
	ck_assert_int_eq(calls, 1);
}
END_TEST

/* ==== purge =============================================================== */

START_TEST(purge_retention)
{
	int64_t t = now_ns() + 60 * SEC, bodies = -1, rows = -1, dead_ns;
	struct inbox_filter all = { 0 };
	struct snap s;
	int dead = 0;
	struct inbox_event e;

	store("d1", "t", AT("11:00:00"), "order", "A", NULL);
	done("d1", t);
	store("s1", "t", AT("10:00:00"), "order", "A", NULL);
	ck_assert_int_eq(take_claim("s1", t, 0), INBOX_MARKED_STALE);
	store("k1", "t", NULL, NULL, NULL, NULL);
	inbox_event_init(&e);
	take("k1", t, &e);
	ck_assert_int_eq(claim(&e, t), INBOX_CLAIMED);
	OK(fixture_fail(ib, &e, t, SEC, 1, "exit 1", "out", 3, &dead,
	    &err));
	ck_assert_int_eq(dead, 1);
	inbox_event_free(&e);
	store("p1", "t", NULL, NULL, NULL, NULL);

	/* Finished exactly `retention` ago: kept. */
	OK(inbox_purge(ib, t + RETENTION, RETENTION, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, 0);
	ck_assert_int_eq(rows, 0);
	get("d1", &s);
	ck_assert_int_eq(s.has_body, 1);
	ck_assert_uint_eq(s.output.len, 3);	/* "ok\n" */
	snap_free(&s);

	/* A nanosecond later: done and stale bodies (and outputs) go. */
	OK(inbox_purge(ib, t + RETENTION + 1, RETENTION, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, 2);
	ck_assert_int_eq(rows, 0);
	get("d1", &s);
	ck_assert_int_eq(s.has_body, 0);
	ck_assert_uint_eq(s.body.len, 0);
	ck_assert_uint_eq(s.output.len, 0);
	snap_free(&s);
	get("s1", &s);
	ck_assert_int_eq(s.has_body, 0);
	snap_free(&s);
	get("k1", &s);
	ck_assert_int_eq(s.has_body, 1);
	ck_assert_uint_eq(s.output.len, 3);
	snap_free(&s);
	get("p1", &s);
	ck_assert_int_eq(s.has_body, 1);
	snap_free(&s);
	ck_assert_int_eq(bodies_kept(), 2);
	OK(inbox_purge(ib, t + RETENTION + 1, RETENTION, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, 0);

	/* Rows and object clocks after max(retention, 31 days). */
	OK(inbox_purge(ib, t + INBOX_KEEP_IDS_NS, RETENTION, &bodies, &rows,
	    &err));
	ck_assert_int_eq(rows, 0);
	ck_assert_int_eq(objects_count(), 1);
	OK(inbox_purge(ib, t + INBOX_KEEP_IDS_NS + 1, RETENTION, &bodies, &rows,
	    &err));
	ck_assert_int_eq(rows, 2);
	ck_assert_int_eq(bodies, 0);
	ck_assert_str_eq(list_ids(&all), "k1,p1");
	ck_assert_int_eq(objects_count(), 0);

	/* Dead never goes, not even its body. */
	dead_ns = t + 3650 * DAY;
	OK(inbox_purge(ib, dead_ns, RETENTION, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, 0);
	ck_assert_int_eq(rows, 0);
	get("k1", &s);
	ck_assert_str_eq(s.state, "dead");
	ck_assert_int_eq(s.has_body, 1);
	snap_free(&s);
}
END_TEST

START_TEST(purge_long_retention)
{
	int64_t t = now_ns() + 60 * SEC, bodies = -1, rows = -1;
	int64_t ret = 40 * DAY;

	store("d", "t", NULL, "order", "L", NULL);
	done("d", t);
	/* Past 31 days but within retention: nothing goes. */
	OK(inbox_purge(ib, t + 32 * DAY, ret, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, 0);
	ck_assert_int_eq(rows, 0);
	ck_assert_int_eq(objects_count(), 1);
	OK(inbox_purge(ib, t + ret + 1, ret, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, 1);
	ck_assert_int_eq(rows, 1);
	ck_assert_int_eq(objects_count(), 0);
}
END_TEST

/* An object's clocks stay while it was done recently, even after the rows
 * of its older events went. */
START_TEST(purge_keeps_recent_clocks)
{
	int64_t t = now_ns() + 60 * SEC, bodies = -1, rows = -1;

	store("b1", "t", AT("10:00:00"), "order", "B", NULL);
	done("b1", t);
	store("b2", "t", AT("11:00:00"), "order", "B", NULL);
	done("b2", t + 20 * DAY);
	OK(inbox_purge(ib, t + INBOX_KEEP_IDS_NS + 1, RETENTION, &bodies, &rows,
	    &err));
	ck_assert_int_eq(rows, 1);
	ck_assert_str_eq(state_of("b2"), "done");
	ck_assert_int_eq(objects_count(), 1);
	store("b0", "t", AT("10:30:00"), "order", "B", NULL);
	ck_assert_int_eq(take_claim("b0", t + 32 * DAY, 0), INBOX_MARKED_STALE);
}
END_TEST

/* Three purge batches' worth: two full, one not. */
#define MANY		(2 * INBOX_PURGE_BATCH + 1)
/* drain()'s line for them: "m0000,m0001,…". */
#define MANY_IDS_LEN	(MANY * 6 - 1)

/* Store events m0000… (MANY of them) in one transaction (a commit each
 * would be most of the test's time on a database server), each of an
 * object of its own when `objects`. */
static void
store_many(int objects)
{
	static struct event_fields f[MANY];
	static struct inbox_delivery d[MANY];
	static char ids[MANY][16];
	struct inbox_batch b = { .d = d, .n = MANY };

	memset(f, 0, sizeof f);
	memset(d, 0, sizeof d);
	for (int i = 0; i < MANY; i++) {
		snprintf(ids[i], sizeof ids[i], "m%04d", i);
		f[i].type = "t";
		ck_assert_int_eq(instant_parse(AT("10:00:00"), 20,
		    f[i].created_at), 0);
		f[i].created_at_raw = (char *)AT("10:00:00");
		if (objects) {
			f[i].object_type = "order";
			f[i].object_id = ids[i] + 1;
		}
		d[i].webhook_id = ids[i];
		d[i].webhook_timestamp = 1772366400;
		d[i].body = ids[i];
		d[i].body_len = strlen(ids[i]);
		d[i].fields = &f[i];
	}
	OK(inbox_store_batch(ib, &b, &err));
	ck_assert_int_eq(b.stored, MANY);
}

/* More finished rows than one batch (INBOX_PURGE_BATCH): all go.  The
 * verdicts as the drainer records them: one run hands them all out. */
START_TEST(purge_batches)
{
	int64_t t = now_ns() + 60 * SEC, bodies = -1, rows = -1;
	struct inbox_filter all = { 0 };

	ck_assert_int_gt(MANY, 2 * INBOX_PURGE_BATCH);
	store_many(1);
	ck_assert_int_eq(strlen(drain(t, "", 5)), MANY_IDS_LEN);
	store("still", "t", NULL, NULL, NULL, NULL);
	ck_assert_int_eq(count(&all), MANY + 1);
	ck_assert_int_eq(objects_count(), MANY);

	OK(inbox_purge(ib, t + RETENTION + 1, RETENTION, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, MANY);
	ck_assert_int_eq(rows, 0);
	ck_assert_int_eq(bodies_kept(), 1);

	OK(inbox_purge(ib, t + INBOX_KEEP_IDS_NS + 1, RETENTION, &bodies, &rows,
	    &err));
	ck_assert_int_eq(bodies, 0);
	ck_assert_int_eq(rows, MANY);
	ck_assert_str_eq(list_ids(&all), "still");
	ck_assert_int_eq(objects_count(), 0);
}
END_TEST

START_TEST(purge_batches_one_pass)
{
	int64_t t = now_ns() + 60 * SEC, bodies = -1, rows = -1;
	struct inbox_filter all = { 0 };

	/* Bodies and rows in the same purge, both over several batches. */
	store_many(0);
	ck_assert_int_eq(strlen(drain(t, "", 5)), MANY_IDS_LEN);
	OK(inbox_purge(ib, t + 100 * DAY, RETENTION, &bodies, &rows, &err));
	ck_assert_int_eq(bodies, MANY);
	ck_assert_int_eq(rows, MANY);
	ck_assert_int_eq(count(&all), 0);
}
END_TEST

/* ==== status ============================================================== */

START_TEST(status_counts)
{
	struct inbox_status_report r;
	struct snap s;
	int64_t t = now_ns() + 60 * SEC;

	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.pending + r.done + r.stale + r.dead, 0);
	ck_assert_int_eq(r.waiting_retry + r.blocked, 0);
	ck_assert_str_eq(r.oldest_pending, "");
	ck_assert_str_eq(r.last_run_started, "");
	ck_assert_str_eq(r.last_run_finished, "");

	store("f", "t", AT("09:00:00"), NULL, NULL, NULL);
	ck_assert_str_eq(drain(t, ",f,", 1), "f+");		/* dead */
	store("b", "t", AT("10:00:00"), "o", "X", NULL);	/* fails */
	store("c", "t", AT("11:00:00"), "o", "X", NULL);	/* blocked */
	store("d", "t", AT("12:00:00"), "o", "Y", NULL);	/* done */
	done("d", t);
	store("e", "t", AT("11:00:00"), "o", "Y", NULL);	/* stale */
	ck_assert_str_eq(drain(t, ",b,", 5), "b!,e~");
	store("a", "t", NULL, NULL, NULL, NULL);		/* pending */

	OK(inbox_status_report(ib, &r, &err));
	ck_assert_int_eq(r.pending, 3);
	ck_assert_int_eq(r.done, 1);
	ck_assert_int_eq(r.stale, 1);
	ck_assert_int_eq(r.dead, 1);
	ck_assert_int_eq(r.waiting_retry, 1);
	ck_assert_int_eq(r.blocked, 1);
	/* The oldest pending by arrival: b, though it sorts after a. */
	get("b", &s);
	ck_assert_str_eq(r.oldest_pending, s.received_at);
	snap_free(&s);
}
END_TEST

START_TEST(note_run)
{
	struct inbox_status_report r;
	int64_t t1 = 1772366400 * SEC, t2 = t1 + 5 * SEC + 7;
	char a[INSTANT_SIZE], b[INSTANT_SIZE];

	OK(inbox_note_run(ib, t1, NULL, &err));
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_str_eq(r.last_run_started, fmt(t1, a));
	ck_assert_str_eq(r.last_run_finished, "");
	ck_assert_str_eq(r.last_run_outcome, "running");

	OK(inbox_note_run(ib, t2, "3 done, 1 failed", &err));
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_str_eq(r.last_run_started, fmt(t1, a));
	ck_assert_str_eq(r.last_run_finished, fmt(t2, b));
	ck_assert_str_eq(r.last_run_outcome, "3 done, 1 failed");

	/* The next run starts: the previous finish stays until it ends. */
	OK(inbox_note_run(ib, t2 + SEC, NULL, &err));
	OK(inbox_status_report(ib, &r, &err));
	ck_assert_str_eq(r.last_run_started, fmt(t2 + SEC, a));
	ck_assert_str_eq(r.last_run_finished, fmt(t2, b));
	ck_assert_str_eq(r.last_run_outcome, "running");
}
END_TEST

/* ==== history ============================================================= */

static int
hist_cb(const struct inbox_history_row *r, void *arg)
{
	if (strcmp(r->name, "done") == 0)
		*(int64_t *)arg += r->n;
	return 0;
}

static int
run_cb(const struct inbox_run_record *r, void *arg)
{
	ck_assert_str_eq(r->result, "ok");
	ck_assert_int_eq(r->done, 3);
	(*(int *)arg)++;
	return 0;
}

/* Increments add up (folded into days or not: the sum), a run recorded
 * with them is read back. */
START_TEST(history_and_runs)
{
	struct history_delta d = { .bucket_s = 1772366400 / 300 * 300,
	    .name = "done", .label = "", .idx = 0, .n = 3 };
	struct inbox_run_record run = { .started_ns = util_now_ns() - SEC,
	    .finished_ns = util_now_ns(), .done = 3, .result = "ok" };
	int64_t sum = 0;
	int runs = 0;

	OK(inbox_history_add(ib, &d, 1, &run, util_now_ns(), &err));
	OK(inbox_history_add(ib, &d, 1, NULL, util_now_ns(), &err));
	OK(inbox_history_read(ib, INT64_MIN, hist_cb, &sum, &err));
	ck_assert_int_eq(sum, 6);
	OK(inbox_runs_read(ib, 0, run_cb, &runs, &err));
	ck_assert_int_eq(runs, 1);
}
END_TEST

/* ==== registration ======================================================== */

/* Tests registered per engine (a loop test counts each of its cases). */
static int ntests;

static TCase *
group(Suite *s, const char *eng, const char *name, void (*setup)(void),
    int timeout)
{
	/* Check keeps the name's pointer: names that outlive the run. */
	static char names[16][64];
	static size_t used;
	TCase *tc;

	if (used >= NELEM(names))	/* not in a test: no ck_assert */
		abort();
	snprintf(names[used], sizeof names[used], "%s/%s", eng, name);
	tc = tcase_create(names[used++]);
	tcase_add_checked_fixture(tc, setup, teardown);
	if (timeout > 0)
		tcase_set_timeout(tc, timeout);
	suite_add_tcase(s, tc);
	return tc;
}

#define ADD(tc, t)	do { tcase_add_test(tc, t); ntests++; } while (0)

/* Every contract test, in TCases for the engine whose setup opens a
 * fresh inbox. */
static void
add_engine(Suite *s, enum engine en, void (*setup)(void))
{
	const char *eng = engine_names[en];
	TCase *tc;

	ntests = 0;
	tc = group(s, eng, "store", setup, 0);
	ADD(tc, store_and_duplicate);
	ADD(tc, store_empty_and_clockless);
	ADD(tc, store_batch_and_cursor);

	tc = group(s, eng, "sources", setup, 0);
	ADD(tc, source_stored_and_read_back);
	ADD(tc, source_duplicate_and_conflict);
	ADD(tc, source_conflict_in_a_batch);
	ADD(tc, source_filter);
	ADD(tc, count_sources_figures);

	tc = group(s, eng, "due", setup, 0);
	ADD(tc, order_by_instant);
	ADD(tc, settle);
	ADD(tc, per_object_hold);
	ADD(tc, in_flight_holds_its_object);
	ADD(tc, dead_releases_hold);
	ADD(tc, next_due_counts_received);

	tc = group(s, eng, "stale", setup, 0);
	ADD(tc, claim_outcomes);
	tcase_add_loop_test(tc, stale_rule, 0, (int)NELEM(stale_cases));
	ntests += (int)NELEM(stale_cases);
	ADD(tc, no_object_never_stale);
	ADD(tc, requeue_stale_and_clocks_never_back);
	ADD(tc, refetch_version_advances_clocks);
	ADD(tc, clocks_advance_per_clock);

	tc = group(s, eng, "verdicts", setup, 0);
	ADD(tc, failures_and_death);
	ADD(tc, max_attempts_one);
	ADD(tc, requeue_filters);
	ADD(tc, forget_keeps_clocks);
	ADD(tc, verdict_after_forget_and_replay);

	tc = group(s, eng, "list", setup, 0);
	ADD(tc, list_filters);
	ADD(tc, type_globs_forget_and_status);
	ADD(tc, list_bodies_and_stop);
	ADD(tc, status_counts);
	ADD(tc, note_run);
	ADD(tc, history_and_runs);

	tc = group(s, eng, "purge", setup, 60);
	ADD(tc, purge_retention);
	ADD(tc, purge_long_retention);
	ADD(tc, purge_keeps_recent_clocks);
	ADD(tc, purge_batches);
	ADD(tc, purge_batches_one_pass);
}

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");

	add_engine(s, ENG_SQLITE, setup_sqlite);
	if (pg_uri != NULL)
		add_engine(s, ENG_PG, setup_pg);
	else
		/* Not silently passed: tests/run counts this line's number
		 * as skipped. */
		printf("test_store: %d skipped (postgresql: "
		    "WEBHOOK_TEST_DATABASE is not set; run it under "
		    "python3 tests/pgserver.py --)\n", ntests);
	fflush(stdout);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	pg_uri = getenv("WEBHOOK_TEST_DATABASE");
	if (pg_uri != NULL && *pg_uri == '\0')
		pg_uri = NULL;
	return check_main_in_tmpdir(store_suite, dir);
}
