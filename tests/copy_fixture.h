/*
 * copy_fixture: what test_copy (two SQLite inboxes) and test_inbox_pg
 * (copies to and from PostgreSQL) share: storing events, handing them out
 * as a run would, an inbox with something of everything (fill), and every
 * row of every table read back through inbox_table_read as text (dump).
 *
 * Include it after defining `err` (struct buf) and the OK(call) macro.
 */
#ifndef WEBHOOK_TESTS_COPY_FIXTURE_H
#define WEBHOOK_TESTS_COPY_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include "lib/operator/copy.h"
#include "lib/store/event.h"
#include "lib/store/history.h"
#include "lib/store/inbox.h"
#include "lib/common/instant.h"
#include "tests/store_fixture.h"

#ifndef SEC
#define SEC	1000000000LL
#endif
#ifndef DAY
#define DAY	(86400 * SEC)
#endif
/* ---- making events ------------------------------------------------------ */

static void
store_body(struct inbox *in, const char *id, const char *created,
    const char *oid, const void *body, size_t len)
{
	enum inbox_status s = fixture_store(in, id, "client.updated", created,
	    oid != NULL ? "client" : NULL, oid, NULL, body, len, &err);

	ck_assert_msg(s == INBOX_OK || s == INBOX_DUPLICATE, "store: %s", ERR);
}

static void
store_json(struct inbox *in, const char *id, const char *created,
    const char *oid)
{
	char body[256];
	int n = snprintf(body, sizeof body, "{\"id\":\"%s\",\"createdAt\":\"%s\"}",
	    id, created ? created : "");

	store_body(in, id, created, oid, body, (size_t)n);
}

/* Store `id` from a named source (docs/DESIGN.md "Sources"). */
static void
store_from(struct inbox *in, const char *id, const char *source)
{
	struct event_fields f = { 0 };
	struct inbox_delivery d = { 0 };

	d.webhook_id = id;
	d.source = source;
	d.webhook_timestamp = 1772366400;
	d.body = "{}";
	d.body_len = 2;
	d.fields = &f;
	OK(inbox_store(in, &d, &err));
}

static int
source_cb(const struct inbox_event *e, void *arg)
{
	snprintf(arg, INBOX_SOURCE_MAX + 1, "%s", e->source);
	return 0;
}

/* The source of event `id` in `in` ("" when it is not there). */
static const char *
source_of(struct inbox *in, const char *id)
{
	static char out[INBOX_SOURCE_MAX + 1];
	struct inbox_filter f = { .webhook_id = id };

	out[0] = '\0';
	OK(inbox_list(in, &f, 0, source_cb, out, &err));
	return out;
}

/* What a hand-out of `id` ends in. */
enum verdict { V_DONE, V_FAIL, V_DEAD, V_CLAIM_ONLY };

/*
 * Hand `id` out now as a run would (next_due, claim), then record the
 * verdict at now_ns.  Returns the claim's outcome.
 */
static enum inbox_claim
hand_out(struct inbox *in, const char *id, int64_t now_ns, enum verdict v)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_claim claim = INBOX_SKIPPED;
	int64_t t = util_now_ns();
	int dead, found = 0;

	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	while (inbox_next_due(in, &cur, t, 0, 0, &e, &err) == INBOX_OK)
		if (strcmp(e.webhook_id, id) == 0) {
			found = 1;
			break;
		}
	ck_assert_msg(found, "%s not due", id);
	OK(inbox_claim(in, &e, t, &claim, &err));
	if (claim == INBOX_CLAIMED || claim == INBOX_CLAIMED_STALE) {
		if (v == V_DONE)
			OK(inbox_finish_done(in, &e, now_ns, "ok\0bin", 6, &err));
		else if (v == V_FAIL || v == V_DEAD)
			OK(fixture_fail(in, &e, now_ns, 30 * SEC,
			    v == V_DEAD ? 1 : 5, "exit 3", "boom\n", 5, &dead,
			    &err));
	}
	inbox_event_free(&e);
	return claim;
}

static void
forget(struct inbox *in, const char *id)
{
	struct inbox_filter f = { .webhook_id = id };
	int64_t n;

	OK(inbox_forget(in, &f, &n, &err));
	ck_assert_int_eq(n, 1);
}

static void
add_history(struct inbox *in, int64_t bucket_s, const char *name, int64_t n,
    int64_t run_start_ns)
{
	struct history_delta d;
	struct inbox_run_record run;

	memset(&d, 0, sizeof d);
	d.bucket_s = bucket_s;
	snprintf(d.name, sizeof d.name, "%s", name);
	d.n = n;
	memset(&run, 0, sizeof run);
	run.started_ns = run_start_ns;
	run.finished_ns = run_start_ns + SEC;
	run.done = n;
	snprintf(run.result, sizeof run.result, "ok");
	OK(inbox_history_add(in, &d, 1, &run, util_now_ns(), &err));
}

static void
set_cursor(struct inbox *in, const char *name, const char *after,
    const char *page)
{
	struct inbox_batch b;

	memset(&b, 0, sizeof b);
	b.cursor_name = name;
	b.cursor_updated_after = after;
	b.cursor_page = page;
	OK(inbox_store_batch(in, &b, &err));
}

/* An inbox with something of everything: events in every state (a body
 * with NUL bytes, an empty one, one purged), clocks, a cursor, history. */
static void
fill(struct inbox *in)
{
	int64_t now = util_now_ns();

	store_body(in, "e-bin", "2026-03-01T10:00:00Z", "1", "a\0b\xff", 4);
	store_body(in, "e-empty", NULL, NULL, "", 0);
	store_json(in, "e-pending", "2026-03-01T10:00:05Z", "9");
	store_json(in, "e-done", "2026-03-01T10:00:01Z", "2");
	store_json(in, "e-dead", "2026-03-01T10:00:02Z", "3");
	store_json(in, "e-retry", "2026-03-01T10:00:03Z", "4");
	store_json(in, "e-purged", "2026-03-01T10:00:04Z", "5");
	ck_assert_int_eq(hand_out(in, "e-done", now, V_DONE), INBOX_CLAIMED);
	/* Older than what was done for its object, arriving after. */
	store_json(in, "e-old", "2026-03-01T09:00:00Z", "2");
	ck_assert_int_eq(hand_out(in, "e-dead", now, V_DEAD), INBOX_CLAIMED);
	ck_assert_int_eq(hand_out(in, "e-retry", now, V_FAIL), INBOX_CLAIMED);
	ck_assert_int_eq(hand_out(in, "e-old", now, V_DONE),
	    INBOX_MARKED_STALE);
	/* Done ten days ago, then retention: the body goes, the row stays. */
	ck_assert_int_eq(hand_out(in, "e-purged", now - 10 * DAY, V_DONE),
	    INBOX_CLAIMED);
	{
		int64_t bodies, rows;
		OK(inbox_purge(in, now, 7 * DAY, &bodies, &rows, &err));
		ck_assert_int_eq(bodies, 1);
	}
	set_cursor(in, "sync:clients", "2026-03-01T00:00:00Z", "page-7");
	add_history(in, 1772366400 - 1772366400 % 300, "handled", 5, now - 60 * SEC);
}

/* ---- looking ------------------------------------------------------------ */

static void
dump_value(struct buf *b, const struct inbox_value *v)
{
	size_t i;

	switch (v->type) {
	case INBOX_V_NULL:
		(void)buf_printf(b, " NULL");
		break;
	case INBOX_V_INT:
		(void)buf_printf(b, " %lld", (long long)v->i);
		break;
	default:
		(void)buf_printf(b, " %c:", v->type == INBOX_V_TEXT ? 't' : 'b');
		for (i = 0; i < v->len; i++)
			(void)buf_printf(b, "%02x",
			    ((const unsigned char *)v->p)[i]);
	}
}

struct dumper {
	struct buf		*b;
	enum inbox_table	 t;
	int			 skip;	/* a column left out, or -1 */
};

static int
dump_page(const struct inbox_value *rows, size_t n, void *arg)
{
	struct dumper *d = arg;
	const struct inbox_table_info *ti = inbox_table_info(d->t);
	size_t i;
	int k;

	for (i = 0; i < n; i++) {
		(void)buf_printf(d->b, "%s:", ti->name);
		for (k = 0; k < ti->ncols; k++)
			if (k != d->skip)
				dump_value(d->b, &rows[i * (size_t)ti->ncols + k]);
		(void)buf_printf(d->b, "\n");
	}
	return 0;
}

/* Every row of every table as text (one read; the tables are small).
 * skip_admitted: leave events.admitted out (it says only whether history
 * counted the row yet, which copying may settle either way). */
static void
dump(struct inbox *in, struct buf *b, int skip_admitted)
{
	struct dumper d = { b, 0, -1 };
	struct inbox_page pg;
	int t, k;

	buf_reset(b);
	for (t = 0; t < INBOX_NTABLES; t++) {
		const struct inbox_table_info *ti = inbox_table_info(t);
		d.t = t;
		d.skip = -1;
		for (k = 0; skip_admitted && t == INBOX_EVENTS && k < ti->ncols; k++)
			if (strcmp(ti->cols[k], "admitted") == 0)
				d.skip = k;
		pg = (struct inbox_page){ .t = t, .max_rows = 100000,
		    .max_bytes = SIZE_MAX };
		OK(inbox_table_read(in, &pg, dump_page, &d, &err));
	}
}

static void
assert_same(struct inbox *a, struct inbox *b, int skip_admitted)
{
	struct buf da, db;

	buf_init(&da, SIZE_MAX / 2);
	buf_init(&db, SIZE_MAX / 2);
	dump(a, &da, skip_admitted);
	dump(b, &db, skip_admitted);
	ck_assert_msg(da.len > 0, "empty dump");
	ck_assert_msg(da.len == db.len && memcmp(da.data, db.data, da.len) == 0,
	    "dumps differ:\n--- a\n%s--- b\n%s", da.data, db.data);
	buf_free(&da);
	buf_free(&db);
}

/* One event's state column, or "" when it is not there. */
static void
state_of(struct inbox *in, const char *id, char out[16])
{
	struct inbox_filter f = { .webhook_id = id };
	int64_t n = 0;
	const char *states[] = { "pending", "done", "stale", "dead" };
	size_t i;

	out[0] = '\0';
	for (i = 0; i < NELEM(states); i++) {
		f.state = states[i];
		OK(inbox_count(in, &f, &n, &err));
		if (n == 1)
			snprintf(out, 16, "%s", states[i]);
	}
}

#define ASSERT_STATE(in, id, want) do {					\
	char st_[16];							\
	state_of(in, id, st_);						\
	ck_assert_str_eq(st_, want);					\
} while (0)

static struct copy_result
copy_with(struct inbox *from, struct inbox *to, size_t rows, size_t bytes,
    int dry)
{
	struct copy_options o = { dry, rows, bytes };
	struct copy_result r;

	ck_assert_msg(copy_run(from, to, &o, NULL, &r, &err) == 0, "copy: %s",
	    ERR);
	return r;
}

#endif
