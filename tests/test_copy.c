/*
 * test_copy: lib/operator/copy.c over lib/store/sqlite/copy.c — `webhook-drain copy`
 * between two real SQLite inboxes: every table whole and byte for byte,
 * copying twice changes nothing, which side wins for a row both have
 * (source changes win, destination changes stay, the provider's retry the
 * destination stored itself), clocks and history merged, the stale rule
 * still holding after the move, small batches, a copy killed between
 * batches and run again, and the dry run.
 *
 * Inboxes live in one mkdtemp directory, removed at the end.  "Dumps" are
 * every row of every table read back through inbox_table_read, as text.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/operator/copy.h"
#include "lib/store/event.h"
#include "lib/store/history.h"
#include "lib/store/inbox.h"
#include "lib/common/instant.h"
#include "tests/check_common.h"

#define SEC	1000000000LL
#define DAY	(86400 * SEC)

static char dir[] = "/tmp/webhook-test-copy-XXXXXX";
static struct buf err;
static struct inbox *src, *dst;
static char src_path[512], dst_path[512];
static int dbcount;

#define ERR	(err.data != NULL ? err.data : "")
#define OK(call) do {							\
	enum inbox_status s_ = (call);					\
	ck_assert_msg(s_ == INBOX_OK, "%s = %d: %s", #call, (int)s_, ERR); \
} while (0)

static struct inbox *
open_at(const char *path)
{
	struct inbox_options o = { .busy_timeout_ms = 5000,
	    .synchronous = INBOX_SYNC_NORMAL };
	struct inbox *p = NULL;

	OK(inbox_open(path, &o, &p, &err));
	return p;
}

static void
new_path(char *out, size_t outsz)
{
	snprintf(out, outsz, "%s/inbox-%ld-%d.db", dir, (long)getpid(),
	    ++dbcount);
}

static void
setup(void)
{
	buf_init(&err, BUF_ERR_MAX);
	new_path(src_path, sizeof src_path);
	new_path(dst_path, sizeof dst_path);
	src = open_at(src_path);
	dst = open_at(dst_path);
}

static void
teardown(void)
{
	inbox_close(src);
	inbox_close(dst);
	src = dst = NULL;
	buf_free(&err);
}

#include "tests/copy_fixture.h"

static struct copy_result
copy_all(void)
{
	return copy_with(src, dst, 0, 0, 0);
}

static void	raw(const char *path, const char *sql, int *out);

/* ---- the tests ---------------------------------------------------------- */

START_TEST(portable_columns_name_what_copy_reads)
{
	const struct inbox_table_info *ev = inbox_table_info(INBOX_EVENTS);

	/* copy.c reads these by position. */
	ck_assert_str_eq(ev->cols[1], "state");
	ck_assert_str_eq(ev->cols[14], "attempts");
	ck_assert_str_eq(ev->cols[21], "admitted");
	ck_assert_str_eq(inbox_table_info(INBOX_OBJECTS)->cols[2],
	    "done_created_at");
	ck_assert_str_eq(inbox_table_info(INBOX_OBJECTS)->cols[4], "done_at");
	ck_assert_str_eq(inbox_table_info(INBOX_HISTORY)->cols[5], "n");
	ck_assert_ptr_null(inbox_table_info(INBOX_NTABLES));
	/* Every column the schema has is copied: a column added later and
	 * not listed would be lost in a move. */
	for (int t = 0; t < INBOX_NTABLES; t++) {
		const struct inbox_table_info *ti = inbox_table_info(t);
		char sql[256];
		int n = -1;

		snprintf(sql, sizeof sql, "SELECT count(*) FROM "
		    "pragma_table_info('%s')", ti->name);
		raw(src_path, sql, &n);
		ck_assert_int_eq(n, ti->ncols);
		for (int i = 0; i < ti->ncols; i++) {
			snprintf(sql, sizeof sql, "SELECT count(*) FROM "
			    "pragma_table_info('%s') WHERE name = '%s'",
			    ti->name, ti->cols[i]);
			raw(src_path, sql, &n);
			ck_assert_msg(n == 1, "%s.%s", ti->name, ti->cols[i]);
		}
	}
}
END_TEST

/* schema-pg.sql, as linked into the programs (lib/store/schema.S). */
extern const char schema_pg_sql[];

/*
 * The columns of `table` in schema-pg.sql, space-separated into out: each
 * line of its CREATE TABLE indented by exactly four spaces names one
 * (constraints and continued lines are not).
 */
static void
pg_columns(const char *table, char *out, size_t outsz)
{
	char head[64];
	const char *p, *end, *nl;
	size_t n;

	out[0] = '\0';
	snprintf(head, sizeof head, "CREATE TABLE %s (\n", table);
	p = strstr(schema_pg_sql, head);
	ck_assert_msg(p != NULL, "schema-pg.sql: no table %s", table);
	p += strlen(head);
	end = strstr(p, "\n);");
	ck_assert_ptr_nonnull(end);
	for (; p < end; p = nl + 1) {
		nl = strchr(p, '\n');
		if (strncmp(p, "    ", 4) != 0 || p[4] == ' ' || p[4] == '-' ||
		    strncmp(p + 4, "PRIMARY KEY", 11) == 0)
			continue;
		n = strcspn(p + 4, " ");
		snprintf(out + strlen(out), outsz - strlen(out), "%s%.*s",
		    out[0] ? " " : "", (int)n, p + 4);
	}
}

START_TEST(every_postgresql_column_is_copied_too)
{
	/* The PostgreSQL inbox (schema-pg.sql) has the same columns, but
	 * events.seq, its arrival order where SQLite has the rowid (each
	 * inbox numbers its own arrivals). */
	for (int t = 0; t < INBOX_NTABLES; t++) {
		const struct inbox_table_info *ti = inbox_table_info(t);
		char got[1024], want[1024] = "";

		pg_columns(ti->name, got, sizeof got);
		for (int i = 0; i < ti->ncols; i++)
			snprintf(want + strlen(want), sizeof want - strlen(want),
			    "%s%s", i ? " " : "", ti->cols[i]);
		if (t == INBOX_EVENTS) {
			/* seq, wherever it is (source, of version 5, comes
			 * after it: the migration adds it last). */
			char *seq = strstr(got, " seq");

			ck_assert_msg(seq != NULL && (seq[4] == ' ' ||
			    seq[4] == '\0'), "events: no seq in %s", got);
			memmove(seq, seq + 4, strlen(seq + 4) + 1);
		}
		ck_assert_str_eq(got, want);
	}
	/* And the copy records, as on SQLite. */
	{
		char got[256];
		pg_columns("copied", got, sizeof got);
		ck_assert_str_eq(got, "tbl key digest");
	}
}
END_TEST

START_TEST(everything_copied_byte_for_byte)
{
	struct copy_result r;

	fill(src);
	store_from(src, "stripe/evt_1", "stripe");
	r = copy_all();
	assert_same(src, dst, 0);
	ck_assert_int_eq(r.t[INBOX_EVENTS].read, 9);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 9);
	/* The source travels with the event (assert_same: every column). */
	ck_assert_str_eq(source_of(dst, "stripe/evt_1"), "stripe");
	ck_assert_str_eq(source_of(dst, "e-bin"), "default");
	ck_assert_int_eq(r.t[INBOX_OBJECTS].written, 2);	/* client:2, 5 */
	ck_assert_int_eq(r.t[INBOX_CURSORS].written, 1);
	ck_assert_int_ge(r.t[INBOX_HISTORY].written, 2);	/* handled, received */
	ck_assert_int_eq(r.t[INBOX_HISTORY].written, r.t[INBOX_HISTORY].read);
	ck_assert_int_eq(r.t[INBOX_RUNS].written, 1);
	ASSERT_STATE(dst, "e-dead", "dead");
	ASSERT_STATE(dst, "e-old", "stale");
	/* The copy hands out what the source would: the retry, when due. */
	ck_assert_int_eq(hand_out(dst, "e-pending", util_now_ns(), V_DONE),
	    INBOX_CLAIMED);
}
END_TEST

START_TEST(copying_twice_changes_nothing)
{
	struct copy_result r;
	struct buf a, b;
	int t;

	fill(src);
	(void)copy_all();
	buf_init(&a, SIZE_MAX / 2);
	buf_init(&b, SIZE_MAX / 2);
	dump(dst, &a, 0);
	r = copy_all();
	dump(dst, &b, 0);
	ck_assert(a.len == b.len && memcmp(a.data, b.data, a.len) == 0);
	for (t = 0; t < INBOX_NTABLES; t++) {
		ck_assert_int_eq(r.t[t].written, 0);
		ck_assert_int_eq(r.t[t].same, r.t[t].read);
	}
	buf_free(&a);
	buf_free(&b);
}
END_TEST

START_TEST(source_changes_since_the_copy_win)
{
	struct copy_result r;

	fill(src);
	(void)copy_all();
	/* The source's drainer goes on until the cut-over; a new event arrives. */
	ck_assert_int_eq(hand_out(src, "e-pending", util_now_ns(), V_DONE),
	    INBOX_CLAIMED);
	store_json(src, "e-new", "2026-03-01T11:00:00Z", "6");
	r = copy_all();
	ASSERT_STATE(dst, "e-pending", "done");
	ASSERT_STATE(dst, "e-new", "pending");
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 2);
	ck_assert_int_eq(r.t[INBOX_EVENTS].kept, 0);
	/* e-pending's object got a clock at the source: it came along. */
	ck_assert_int_eq(r.t[INBOX_OBJECTS].written, 1);
	assert_same(src, dst, 1);
}
END_TEST

START_TEST(destination_changes_since_the_copy_stay)
{
	struct copy_result r;

	fill(src);
	(void)copy_all();
	/* The destination's drainer hands e-pending out; an operator
	 * forgets e-bin there, requeues e-dead. */
	ck_assert_int_eq(hand_out(dst, "e-pending", util_now_ns(), V_DONE),
	    INBOX_CLAIMED);
	forget(dst, "e-bin");
	{
		struct inbox_filter f = { .webhook_id = "e-dead" };
		int64_t n;
		OK(inbox_requeue(dst, &f, util_now_ns(), &n, &err));
		ck_assert_int_eq(n, 1);
	}
	r = copy_all();
	ASSERT_STATE(dst, "e-pending", "done");
	ASSERT_STATE(dst, "e-bin", "");
	ASSERT_STATE(dst, "e-dead", "pending");
	ck_assert_int_eq(r.t[INBOX_EVENTS].kept, 3);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 0);
	/* The done clock the destination moved forward stays forward. */
	ck_assert_int_eq(r.t[INBOX_OBJECTS].written, 0);
}
END_TEST

START_TEST(provider_retry_stored_at_the_destination)
{
	/* "x" arrived at the source, was done there; the provider's retry
	 * of it (the 200 lost at the switch) reached the destination. */
	store_json(src, "x", "2026-03-01T10:00:00Z", "1");
	store_json(src, "y", "2026-03-01T10:00:00Z", "2");
	ck_assert_int_eq(hand_out(src, "x", util_now_ns(), V_DONE), INBOX_CLAIMED);
	ck_assert_int_eq(hand_out(src, "y", util_now_ns(), V_DONE), INBOX_CLAIMED);
	store_json(dst, "x", "2026-03-01T10:00:00Z", "1");
	store_json(dst, "y", "2026-03-01T10:00:00Z", "2");
	/* y the destination has already handed out (at least once: twice). */
	ck_assert_int_eq(hand_out(dst, "y", util_now_ns(), V_FAIL), INBOX_CLAIMED);
	(void)copy_all();
	ASSERT_STATE(dst, "x", "done");		/* not handed out again */
	ASSERT_STATE(dst, "y", "pending");	/* the destination's own */
}
END_TEST

/* A TEXT value as a C string ("" for NULL); the page's text is
 * NUL-terminated (inbox_copy.c keeps one more byte). */
static const char *
txt(const struct inbox_value *v)
{
	return v->type == INBOX_V_TEXT ? (const char *)v->p : "";
}

static int
objects_row(const struct inbox_value *rows, size_t n, void *arg)
{
	struct buf *b = arg;
	size_t i;

	for (i = 0; i < n; i++)
		(void)buf_printf(b, "%s=%s,%s;", txt(&rows[i * 5 + 1]),
		    txt(&rows[i * 5 + 2]), txt(&rows[i * 5 + 3]));
	return 0;
}

static int
received_n(const struct inbox_history_row *row, void *arg)
{
	if (strcmp(row->name, "received") == 0)
		*(int64_t *)arg += row->n;
	return 0;
}

static int
history_n(const struct inbox_history_row *row, void *arg)
{
	if (strcmp(row->name, "handled") == 0)
		*(int64_t *)arg = row->n;
	return 0;
}

START_TEST(clocks_and_history_merge_forward)
{
	struct buf b;
	struct inbox_page pg = { .t = INBOX_OBJECTS, .max_rows = 10,
	    .max_bytes = SIZE_MAX };
	int64_t handled = -1, bucket = 1772366400;

	/* Object 1: the source's clock is later; object 2: the destination's. */
	store_body(src, "s1", "2026-03-01T12:00:00Z", "1", "{}", 2);
	store_body(src, "s2", "2026-03-01T08:00:00Z", "2", "{}", 2);
	store_body(dst, "d1", "2026-03-01T09:00:00Z", "1", "{}", 2);
	store_body(dst, "d2", "2026-03-01T13:00:00Z", "2", "{}", 2);
	ck_assert_int_eq(hand_out(src, "s1", util_now_ns(), V_DONE), INBOX_CLAIMED);
	ck_assert_int_eq(hand_out(src, "s2", util_now_ns(), V_DONE), INBOX_CLAIMED);
	ck_assert_int_eq(hand_out(dst, "d1", util_now_ns(), V_DONE), INBOX_CLAIMED);
	ck_assert_int_eq(hand_out(dst, "d2", util_now_ns(), V_DONE), INBOX_CLAIMED);
	add_history(src, bucket, "handled", 7, util_now_ns() - 100 * SEC);
	add_history(dst, bucket, "handled", 3, util_now_ns() - 50 * SEC);
	(void)copy_all();
	buf_init(&b, 4096);
	OK(inbox_table_read(dst, &pg, objects_row, &b, &err));
	ck_assert_str_eq(b.data, "1=2026-03-01T12:00:00.000000000Z,;"
	    "2=2026-03-01T13:00:00.000000000Z,;");
	OK(inbox_history_read(dst, INT64_MIN, history_n, &handled, &err));
	ck_assert_int_eq(handled, 7);
	/* Both runs are there. */
	{
		struct buf d;
		buf_init(&d, SIZE_MAX / 2);
		dump(dst, &d, 0);
		ck_assert_int_eq((int)(strstr(d.data, "runs:") != NULL), 1);
		ck_assert_ptr_nonnull(strstr(strstr(d.data, "runs:") + 1, "runs:"));
		buf_free(&d);
	}
	buf_free(&b);
}
END_TEST

START_TEST(stale_rule_holds_after_the_move)
{
	store_json(src, "new", "2026-03-01T12:00:00Z", "42");
	ck_assert_int_eq(hand_out(src, "new", util_now_ns(), V_DONE), INBOX_CLAIMED);
	(void)copy_all();
	/* An older event of the object arrives at the destination. */
	store_json(dst, "late", "2026-03-01T11:00:00Z", "42");
	ck_assert_int_eq(hand_out(dst, "late", util_now_ns(), V_DONE),
	    INBOX_MARKED_STALE);
}
END_TEST

static int batches;

static void
count_batch(void *arg, enum inbox_table t, const struct copy_count *c)
{
	(void)arg;
	(void)t;
	(void)c;
	batches++;
}

START_TEST(small_batches_and_byte_bound_copy_the_same)
{
	struct copy_options o = { 0, 2, 1 };	/* 2 rows, or 1 byte: 1 row */
	struct copy_hooks h = { count_batch, NULL };
	struct copy_result r;

	fill(src);
	batches = 0;
	ck_assert_msg(copy_run(src, dst, &o, &h, &r, &err) == 0, "%s", ERR);
	assert_same(src, dst, 0);
	/* 8 events of a byte or more: one batch each. */
	ck_assert_int_ge(batches, 8 + 2 + 1 + 1 + 1);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 8);
}
END_TEST

/* Die at the third batch, as a copy killed mid-way. */
static void
die_at_third(void *arg, enum inbox_table t, const struct copy_count *c)
{
	(void)arg;
	(void)c;
	if (t == INBOX_EVENTS && ++batches == 3)
		_exit(9);
}

START_TEST(killed_between_batches_then_run_again)
{
	struct copy_options o = { 0, 2, 0 };
	struct copy_hooks h = { die_at_third, NULL };
	struct copy_result r;
	pid_t pid;
	int status;

	fill(src);
	inbox_close(dst);
	dst = NULL;
	if ((pid = fork()) == 0) {
		/* Connections of its own: none crosses the fork. */
		struct inbox *s = open_at(src_path), *d = open_at(dst_path);
		batches = 0;
		if (copy_run(s, d, &o, &h, &r, &err) == -1)
			_exit(1);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 9);
	dst = open_at(dst_path);
	r = copy_with(src, dst, 2, 0, 0);
	/* Three batches of two were there already. */
	ck_assert_int_eq(r.t[INBOX_EVENTS].same, 6);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 2);
	assert_same(src, dst, 0);
}
END_TEST

START_TEST(dry_run_counts_and_writes_nothing)
{
	struct copy_result r;
	struct buf before, after;

	fill(src);
	store_json(dst, "only-here", NULL, NULL);
	buf_init(&before, SIZE_MAX / 2);
	buf_init(&after, SIZE_MAX / 2);
	dump(dst, &before, 0);
	r = copy_with(src, dst, 0, 0, 1);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 8);
	dump(dst, &after, 0);
	ck_assert(before.len == after.len &&
	    memcmp(before.data, after.data, before.len) == 0);
	/* Into no destination at all: every row would be new. */
	r = copy_with(src, NULL, 0, 0, 1);
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 8);
	ck_assert_int_ge(r.t[INBOX_HISTORY].written, 2);
	buf_free(&before);
	buf_free(&after);
}
END_TEST

START_TEST(digest_tells_rows_apart_but_not_admission)
{
	/* Room for every column of events (the digest reads ncols). */
	struct inbox_value a[32], b[32];
	unsigned char da[COPY_DIGEST_LEN], dbb[COPY_DIGEST_LEN];
	int k;

	ck_assert_int_le(inbox_table_info(INBOX_EVENTS)->ncols, 32);
	memset(a, 0, sizeof a);
	for (k = 0; k < 32; k++)
		a[k].type = INBOX_V_NULL;
	a[0].type = INBOX_V_TEXT;
	a[0].p = "ab";
	a[0].len = 2;
	a[21].type = INBOX_V_INT;
	a[21].i = 0;
	memcpy(b, a, sizeof b);
	b[21].i = 1;	/* admitted: not part of the digest */
	copy_digest(INBOX_EVENTS, a, da);
	copy_digest(INBOX_EVENTS, b, dbb);
	ck_assert_mem_eq(da, dbb, COPY_DIGEST_LEN);
	/* "ab" + NULL differs from "a" + "b", and text from blob. */
	b[0].len = 1;
	b[1].type = INBOX_V_TEXT;
	b[1].p = "b";
	b[1].len = 1;
	copy_digest(INBOX_EVENTS, b, dbb);
	ck_assert(memcmp(da, dbb, COPY_DIGEST_LEN) != 0);
	memcpy(b, a, sizeof b);
	b[0].type = INBOX_V_BLOB;
	copy_digest(INBOX_EVENTS, b, dbb);
	ck_assert(memcmp(da, dbb, COPY_DIGEST_LEN) != 0);
}
END_TEST

static void
raw(const char *path, const char *sql, int *out)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	ck_assert_int_eq(sqlite3_open(path, &db), SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_ne(sqlite3_step(st), SQLITE_ERROR);
	if (out != NULL)
		*out = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	sqlite3_close(db);
}

START_TEST(a_version_3_destination_is_migrated_then_copied_into)
{
	int v = 0, n = 0;

	/* A version-3 inbox: this one without what versions 4 and 5
	 * added. */
	fill(src);
	inbox_close(dst);
	dst = NULL;
	raw(dst_path, "DROP TABLE copied", NULL);
	raw(dst_path, "ALTER TABLE events DROP COLUMN failing_since", NULL);
	raw(dst_path, "ALTER TABLE events DROP COLUMN source", NULL);
	raw(dst_path, "PRAGMA user_version = 3", NULL);
	raw(dst_path, "PRAGMA user_version", &v);
	ck_assert_int_eq(v, 3);
	dst = open_at(dst_path);
	raw(dst_path, "PRAGMA user_version", &v);
	ck_assert_int_eq(v, 5);
	(void)copy_all();
	assert_same(src, dst, 0);
	raw(dst_path, "SELECT count(*) FROM copied WHERE tbl = 'events'", &n);
	ck_assert_int_eq(n, 8);
}
END_TEST

/* An events row's digest as version 4 of `copied` recorded it (before
 * events.source): the 24 columns then, but admitted, each as its type,
 * its integer or length (8 bytes, big-endian), its bytes. */
static void
v4_digest(const struct inbox_value *row, unsigned char out[COPY_DIGEST_LEN])
{
	crypto_generichash_state s;
	unsigned char head[9];
	uint64_t x;
	int i, k;

	crypto_generichash_init(&s, NULL, 0, COPY_DIGEST_LEN);
	for (i = 0; i < 24; i++) {
		if (i == 21)
			continue;
		x = row[i].type == INBOX_V_INT ? (uint64_t)row[i].i :
		    (uint64_t)row[i].len;
		head[0] = (unsigned char)row[i].type;
		for (k = 0; k < 8; k++)
			head[1 + k] = (unsigned char)(x >> (56 - 8 * k));
		crypto_generichash_update(&s, head, sizeof head);
		if ((row[i].type == INBOX_V_TEXT || row[i].type == INBOX_V_BLOB) &&
		    row[i].len > 0)
			crypto_generichash_update(&s, row[i].p, row[i].len);
	}
	crypto_generichash_final(&s, out, COPY_DIGEST_LEN);
}

/* A version-4 inbox copied (opened, so migrated first): its events are
 * the default source's at the destination; a named source's travel as
 * they are, and a digest tells two sources' rows apart. */
START_TEST(a_version_4_source_copies_as_default)
{
	struct inbox_value a[32], b[32];
	unsigned char da[COPY_DIGEST_LEN], dbb[COPY_DIGEST_LEN];
	const struct inbox_table_info *ti = inbox_table_info(INBOX_EVENTS);
	int v = 0, k;

	store_json(src, "old1", "2026-03-01T10:00:00Z", "1");
	inbox_close(src);
	src = NULL;
	raw(src_path, "ALTER TABLE events DROP COLUMN source", NULL);
	raw(src_path, "PRAGMA user_version = 4", NULL);
	src = open_at(src_path);
	raw(src_path, "PRAGMA user_version", &v);
	ck_assert_int_eq(v, 5);
	store_from(src, "gh/1", "gh");
	(void)copy_all();
	assert_same(src, dst, 0);
	ck_assert_str_eq(source_of(dst, "old1"), "default");
	ck_assert_str_eq(source_of(dst, "gh/1"), "gh");

	/* The digest: the source is part of the row. */
	ck_assert_str_eq(ti->cols[24], "source");
	for (k = 0; k < 32; k++)
		a[k] = (struct inbox_value){ .type = INBOX_V_NULL };
	a[0] = (struct inbox_value){ INBOX_V_TEXT, 0, "x/1", 3 };
	a[24] = (struct inbox_value){ INBOX_V_TEXT, 0, "gh", 2 };
	memcpy(b, a, sizeof b);
	b[24] = (struct inbox_value){ INBOX_V_TEXT, 0, "stripe", 6 };
	copy_digest(INBOX_EVENTS, a, da);
	copy_digest(INBOX_EVENTS, b, dbb);
	ck_assert(memcmp(da, dbb, COPY_DIGEST_LEN) != 0);
	b[24] = (struct inbox_value){ INBOX_V_TEXT, 0, "default", 7 };
	copy_digest(INBOX_EVENTS, b, dbb);
	ck_assert(memcmp(da, dbb, COPY_DIGEST_LEN) != 0);
	/* A default row's digest is the one version 4 recorded for it: a
	 * copy into an inbox made before sources still knows its rows as
	 * unchanged since copied. */
	v4_digest(b, da);
	ck_assert_mem_eq(da, dbb, COPY_DIGEST_LEN);
	v4_digest(a, da);
	copy_digest(INBOX_EVENTS, a, dbb);
	ck_assert(memcmp(da, dbb, COPY_DIGEST_LEN) != 0);
}
END_TEST

START_TEST(admission_at_the_source_after_the_copy_comes_along)
{
	struct copy_result r;
	int64_t received = 0;

	/* Copied unadmitted (history has not counted it), then the source's
	 * drainer admits it and counts it: the destination must not count
	 * it again when its own drainer admits it. */
	store_json(src, "a", "2026-03-01T10:00:00Z", "1");
	(void)copy_all();
	store_json(src, "b", "2026-03-01T10:00:00Z", "2");
	ck_assert_int_eq(hand_out(src, "b", util_now_ns(), V_CLAIM_ONLY),
	    INBOX_CLAIMED);		/* admits a and b */
	r = copy_all();
	assert_same(src, dst, 0);	/* admitted included */
	ck_assert_int_eq(r.t[INBOX_EVENTS].written, 1);	/* b */
	ck_assert_int_eq(r.t[INBOX_EVENTS].same, 1);	/* a, its mark set */
	ck_assert_int_eq(hand_out(dst, "a", util_now_ns(), V_DONE), INBOX_CLAIMED);
	OK(inbox_history_read(dst, INT64_MIN, received_n, &received, &err));
	ck_assert_int_eq(received, 2);
}
END_TEST

static Suite *
copy_suite(void)
{
	Suite *s = suite_create("copy");
	TCase *tc = tcase_create("copy");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, portable_columns_name_what_copy_reads);
	tcase_add_test(tc, every_postgresql_column_is_copied_too);
	tcase_add_test(tc, everything_copied_byte_for_byte);
	tcase_add_test(tc, copying_twice_changes_nothing);
	tcase_add_test(tc, source_changes_since_the_copy_win);
	tcase_add_test(tc, destination_changes_since_the_copy_stay);
	tcase_add_test(tc, provider_retry_stored_at_the_destination);
	tcase_add_test(tc, clocks_and_history_merge_forward);
	tcase_add_test(tc, stale_rule_holds_after_the_move);
	tcase_add_test(tc, small_batches_and_byte_bound_copy_the_same);
	tcase_add_test(tc, killed_between_batches_then_run_again);
	tcase_add_test(tc, dry_run_counts_and_writes_nothing);
	tcase_add_test(tc, digest_tells_rows_apart_but_not_admission);
	tcase_add_test(tc, a_version_3_destination_is_migrated_then_copied_into);
	tcase_add_test(tc, a_version_4_source_copies_as_default);
	tcase_add_test(tc, admission_at_the_source_after_the_copy_comes_along);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(copy_suite, dir);
}
