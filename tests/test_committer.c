/*
 * test_committer: lib/receive/committer.c — group commit inside one process
 * (docs/durability.md).  Many threads store distinct deliveries (and some
 * duplicates) at once through one committer on a real SQLite file; every
 * call must report its own delivery's outcome, every new delivery must be
 * stored exactly once, and the inbox must pass integrity_check.
 *
 * A lead hand-off racing a thread's look at its own role once left a
 * semaphore post behind that later woke that thread as a second leader on
 * the same connection: "cannot start a transaction within a transaction",
 * a corrupt inbox, a crash — about once in 200,000 deliveries.  The storm
 * hits that window only by chance (`make tsan` builds it with
 * ThreadSanitizer, which reports the unsynchronised read behind it on
 * every hand-off; tests/run runs that build too); handoff_in_the_window
 * puts a hand-off in it every time, through the committer's test points.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

/* The committer itself, with its test points on (lib/receive/committer.c): this
 * program's committer_* are these, not the library's. */
#define COMMITTER_TEST_POINTS
#include "lib/receive/committer.c"
#include "lib/store/event.h"
#include "lib/store/inbox.h"
#include "lib/common/util.h"
#include "tests/check_common.h"

static char dir[] = "/tmp/webhook-test-committer-XXXXXX";

#define THREADS		16
#define PER_THREAD	400

struct worker {
	struct committer *cm;
	int		 id;
	int		 ok, dup, bad;	/* outcomes seen */
	char		 first_err[256];
};

static void *
worker_main(void *arg)
{
	struct worker *w = arg;
	struct event_fields f;
	struct buf err;
	int i;

	buf_init(&err, 256);
	memset(&f, 0, sizeof f);
	for (i = 0; i < PER_THREAD; i++) {
		struct inbox_delivery d;
		char id[64], body[128];
		/* Every 10th delivery repeats a webhook-id another thread
		 * stores too: the provider's duplicates. */
		int dup = i % 10 == 9;
		int n;

		if (dup)
			snprintf(id, sizeof id, "msg_shared_%d", i);
		else
			snprintf(id, sizeof id, "msg_t%d_%d", w->id, i);
		n = snprintf(body, sizeof body, "{\"type\":\"test\",\"n\":%d}", i);
		memset(&d, 0, sizeof d);
		d.webhook_id = id;
		d.webhook_timestamp = 1772366400;
		d.secret_fp = "fp";
		d.body = body;
		d.body_len = (size_t)n;
		d.fields = &f;
		switch (committer_store(w->cm, &d, &err)) {
		case INBOX_OK:
			w->ok++;
			break;
		case INBOX_DUPLICATE:
			w->dup++;
			break;
		default:
			if (w->bad++ == 0)
				snprintf(w->first_err, sizeof w->first_err, "%s",
				    err.data != NULL ? err.data : "?");
			break;
		}
	}
	buf_free(&err);
	return NULL;
}

/* First column of the first row as text, read on a connection of its own. */
static const char *
query_text(const char *path, const char *sql, char *out, size_t outsz)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;

	ck_assert_int_eq(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(st), SQLITE_ROW);
	snprintf(out, outsz, "%s", (const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(db);
	return out;
}

static void
storm(enum inbox_sync sync, const char *name)
{
	struct inbox_options o = { 10000, sync, 1, 0, 0, 0, 0 };
	struct worker w[THREADS];
	pthread_t t[THREADS];
	struct committer *cm = NULL;
	struct buf err;
	char path[256], text[64];
	int i, ok = 0, dup = 0, bad = 0;

	snprintf(path, sizeof path, "%s/%s.db", dir, name);
	buf_init(&err, 256);
	ck_assert_msg(committer_open(path, &o, &cm, &err) == INBOX_OK, "%s",
	    err.data);
	for (i = 0; i < THREADS; i++) {
		memset(&w[i], 0, sizeof w[i]);
		w[i].cm = cm;
		w[i].id = i;
		ck_assert_int_eq(pthread_create(&t[i], NULL, worker_main, &w[i]), 0);
	}
	for (i = 0; i < THREADS; i++) {
		pthread_join(t[i], NULL);
		ok += w[i].ok;
		dup += w[i].dup;
		bad += w[i].bad;
		ck_assert_msg(w[i].bad == 0, "thread %d: %d failed, first: %s",
		    i, w[i].bad, w[i].first_err);
	}
	committer_close(cm);
	buf_free(&err);

	/* Each thread's own ids are new; of the THREADS copies of each shared
	 * id exactly one is new. */
	ck_assert_int_eq(bad, 0);
	ck_assert_int_eq(ok + dup, THREADS * PER_THREAD);
	ck_assert_int_eq(dup, (THREADS - 1) * (PER_THREAD / 10));
	ck_assert_int_eq(atoi(query_text(path, "SELECT count(*) FROM events",
	    text, sizeof text)), ok);
	ck_assert_str_eq(query_text(path, "PRAGMA integrity_check", text,
	    sizeof text), "ok");
}

/*
 * The hand-off race, made to happen: a thread queues behind a leader and,
 * before it looks at its role, the leader hands it the lead (role LEAD,
 * then a post on its semaphore).  It must still wait for that post: a
 * thread that leads without taking it returns with the post left on its
 * semaphore, and its next wait as a follower returns at once, with no
 * role, as a second leader on the writer connection.
 */
enum who { ANYONE, FIRST, SECOND };
static _Thread_local enum who who;
static sem_t first_committed, second_queued, first_returned;
static enum role second_role_queued, second_role_looked;
static int second_led;

static void
wait_sem(sem_t *s)
{
	while (sem_wait(s) == -1)
		;
}

/* Called by the committer at its test points, in every thread; acts in the
 * two threads of handoff_in_the_window only. */
static void
committer_test_point(enum test_point tp, struct pending *me)
{
	if (who == FIRST && tp == TP_COMMITTED) {
		/* The first leader committed its batch of one: let the second
		 * thread queue behind it, then hand it the lead. */
		sem_post(&first_committed);
		wait_sem(&second_queued);
	} else if (who == SECOND && tp == TP_QUEUED) {
		/* Queued, mutex released, role not looked at yet: the leader
		 * hands off now, and returns (its post made), before we go on. */
		second_role_queued = me->role;
		sem_post(&second_queued);
		wait_sem(&first_returned);
		second_role_looked = me->role;
	} else if (who == SECOND && tp == TP_COMMITTED) {
		second_led = 1;
	}
}

struct racer {
	struct committer	*cm;
	enum who		 who;
	const char		*id;
	enum inbox_status	 status;
	int			 posts_left;	/* on the thread's semaphore, after */
	char			 err[256];
};

static void *
racer_main(void *arg)
{
	struct racer *r = arg;
	struct event_fields f;
	struct inbox_delivery d;
	struct buf err;
	static const char body[] = "{\"type\":\"test\"}";

	who = r->who;
	if (who == SECOND)
		wait_sem(&first_committed);
	buf_init(&err, 256);
	memset(&f, 0, sizeof f);
	memset(&d, 0, sizeof d);
	d.webhook_id = r->id;
	d.webhook_timestamp = 1772366400;
	d.secret_fp = "fp";
	d.body = body;
	d.body_len = sizeof body - 1;
	d.fields = &f;
	r->status = committer_store(r->cm, &d, &err);
	snprintf(r->err, sizeof r->err, "%s", err.data != NULL ? err.data : "");
	if (who == FIRST)
		sem_post(&first_returned);
	/* This thread's own semaphore (lib/receive/committer.c, thread_wake). */
	if (sem_getvalue(&thread_wake, &r->posts_left) == -1)
		r->posts_left = -1;
	buf_free(&err);
	return NULL;
}

START_TEST(handoff_in_the_window)
{
	struct inbox_options o = { 10000, INBOX_SYNC_FULL, 1, 0, 0, 0, 0 };
	struct racer first = { NULL, FIRST, "msg_first", INBOX_FAILED, 0, "" };
	struct racer second = { NULL, SECOND, "msg_second", INBOX_FAILED, 0, "" };
	struct committer *cm = NULL;
	pthread_t t1, t2;
	struct buf err;
	char path[256], text[64];

	snprintf(path, sizeof path, "%s/handoff.db", dir);
	buf_init(&err, 256);
	ck_assert_msg(committer_open(path, &o, &cm, &err) == INBOX_OK, "%s",
	    err.data);
	ck_assert_int_eq(sem_init(&first_committed, 0, 0), 0);
	ck_assert_int_eq(sem_init(&second_queued, 0, 0), 0);
	ck_assert_int_eq(sem_init(&first_returned, 0, 0), 0);
	first.cm = second.cm = cm;
	ck_assert_int_eq(pthread_create(&t1, NULL, racer_main, &first), 0);
	ck_assert_int_eq(pthread_create(&t2, NULL, racer_main, &second), 0);
	pthread_join(t1, NULL);
	pthread_join(t2, NULL);
	committer_close(cm);
	buf_free(&err);

	ck_assert_msg(first.status == INBOX_OK, "first: %s", first.err);
	ck_assert_msg(second.status == INBOX_OK, "second: %s", second.err);
	/* The interleaving happened as scripted: queued as a follower, handed
	 * the lead before it looked, and led its own batch. */
	ck_assert_int_eq(second_role_queued, WAIT);
	ck_assert_int_eq(second_role_looked, LEAD);
	ck_assert_int_eq(second_led, 1);
	/* The hand-off's post was taken: nothing left to wake the thread's
	 * next wait early. */
	ck_assert_msg(second.posts_left == 0, "the thread that was handed the "
	    "lead in the window returned with %d post(s) left on its semaphore: "
	    "its next wait would return at once, as a second leader",
	    second.posts_left);
	ck_assert_int_eq(first.posts_left, 0);
	ck_assert_int_eq(atoi(query_text(path, "SELECT count(*) FROM events",
	    text, sizeof text)), 2);
	ck_assert_str_eq(query_text(path, "PRAGMA integrity_check", text,
	    sizeof text), "ok");
}
END_TEST

START_TEST(storm_full)
{
	storm(INBOX_SYNC_FULL, "full");
}
END_TEST

START_TEST(storm_normal)
{
	storm(INBOX_SYNC_NORMAL, "normal");
}
END_TEST

/* An id already another source's (docs/DESIGN.md "Sources"): that
 * delivery fails, nothing written; a batch answers it alone. */
START_TEST(other_sources_id_fails_alone)
{
	struct inbox_options o = { 10000, INBOX_SYNC_FULL, 1, 0, 0, 0, 0 };
	struct committer *cm = NULL;
	struct event_fields f;
	struct inbox_delivery d;
	struct buf err;
	char path[256], text[64];

	snprintf(path, sizeof path, "%s/sources.db", dir);
	buf_init(&err, 256);
	memset(&f, 0, sizeof f);
	ck_assert_msg(committer_open(path, &o, &cm, &err) == INBOX_OK, "%s",
	    err.data);
	memset(&d, 0, sizeof d);
	d.webhook_id = "gh/d-1";
	d.webhook_timestamp = 1772366400;
	d.secret_fp = "fp";
	d.body = "{}";
	d.body_len = 2;
	d.fields = &f;
	ck_assert_int_eq(committer_store(cm, &d, &err), INBOX_OK);
	d.source = "gh";
	d.body = "{\"x\":1}";
	d.body_len = 7;
	ck_assert_int_eq(committer_store(cm, &d, &err), INBOX_FAILED);
	ck_assert_msg(strstr(err.data, "another source") != NULL, "%s",
	    err.data);
	/* The same source again is a duplicate as ever, and the committer
	 * still stores. */
	d.source = NULL;
	ck_assert_int_eq(committer_store(cm, &d, &err), INBOX_DUPLICATE);
	d.webhook_id = "gh/d-2";
	d.source = "gh";
	ck_assert_int_eq(committer_store(cm, &d, &err), INBOX_OK);
	committer_close(cm);
	ck_assert_str_eq(query_text(path, "SELECT group_concat(webhook_id || "
	    "'=' || source || ':' || body, ' ') FROM (SELECT * FROM events "
	    "ORDER BY webhook_id)", text, sizeof text),
	    "gh/d-1=default:{} gh/d-2=gh:{\"x\":1}");
	buf_free(&err);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("committer");
	TCase *tc = tcase_create("storm");

	tcase_add_test(tc, other_sources_id_fails_alone);
	TCase *race = tcase_create("race");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, storm_full);
	tcase_add_test(tc, storm_normal);
	suite_add_tcase(s, tc);
	tcase_add_test(race, handoff_in_the_window);
	suite_add_tcase(s, race);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(suite, dir);
}
