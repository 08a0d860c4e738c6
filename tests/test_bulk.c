/*
 * test_bulk: lib/operator/bulk.c — `requeue` and `forget` against a real
 * SQLite inbox in a temporary directory: the dry run counts and changes
 * nothing, the real one changes exactly what the filter matches, the
 * stale count of a requeue, nothing to do, an inbox that cannot open, and
 * the sentences said to a person.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/operator/bulk.h"
#include "lib/store/event.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

#define SEC	1000000000LL

static char tmpdir[] = "/tmp/webhook-test-bulk-XXXXXX";

static void
load(struct config *c)
{
	char dir[PATH_MAX];

	check_config(tmpdir, "settle = 0\n", c, dir);
}

/* Store event `id` of client:`oid` created at 2026-03-01T`hms`Z. */
static void
deliver(const struct config *c, const char *id, const char *type,
    const char *oid, const char *hms)
{
	struct event_fields f;
	struct inbox_delivery d;
	struct inbox *ib;
	struct buf err;
	char json[512];

	snprintf(json, sizeof json, "{\"id\":\"%s\",\"type\":\"%s\","
	    "\"createdAt\":\"2026-03-01T%sZ\",\"data\":{\"object\":\"client\","
	    "\"id\":\"%s\"}}", id, type, hms, oid);
	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_int_eq(event_extract(id, json, strlen(json), &f), 0);
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = 1772366400;
	d.secret_fp = "fp";
	d.body = json;
	d.body_len = strlen(json);
	d.fields = &f;
	ck_assert_int_eq(inbox_store(ib, &d, &err), INBOX_OK);
	event_fields_free(&f);
	inbox_close(ib);
	buf_free(&err);
}

/* Hand out every due event in order and record it done, as a run whose
 * handler succeeds would. */
static void
all_done(const struct config *c)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_claim claim;
	struct inbox *ib;
	struct buf err;
	int64_t now = util_now_ns() + 10 * SEC;

	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	while (inbox_next_due(ib, &cur, now, 0, 0, &e, &err) == INBOX_OK) {
		ck_assert_int_eq(inbox_claim(ib, &e, now, &claim, &err), INBOX_OK);
		ck_assert_int_eq(claim, INBOX_CLAIMED);
		ck_assert_int_eq(inbox_finish_done(ib, &e, now, NULL, 0, &err),
		    INBOX_OK);
		inbox_event_free(&e);
	}
	inbox_event_free(&e);
	inbox_close(ib);
	buf_free(&err);
}

/* How many events are in `state` (NULL: any). */
static int64_t
count(const struct config *c, const char *state)
{
	struct inbox_filter f;
	struct inbox *ib;
	struct buf err;
	int64_t n = -1;

	buf_init(&err, 4096);
	memset(&f, 0, sizeof f);
	f.state = state;
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_int_eq(inbox_count(ib, &f, &n, &err), INBOX_OK);
	inbox_close(ib);
	buf_free(&err);
	return n;
}

START_TEST(forget_counts_first_then_deletes_what_matches)
{
	struct inbox_filter f;
	struct config c;
	struct buf err;
	int64_t n, stale;

	load(&c);
	deliver(&c, "e1", "client.updated", "1", "10:00:00");
	deliver(&c, "e2", "client.created", "2", "10:00:01");
	deliver(&c, "e3", "invoice.paid", "3", "10:00:02");
	buf_init(&err, 4096);
	memset(&f, 0, sizeof f);
	f.type_glob = "client.*";
	/* The dry run: counted, nothing changed. */
	ck_assert_int_eq(bulk_apply(&c, &f, 0, 0, &n, &stale, &err), BULK_DONE);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(stale, 0);
	ck_assert_int_eq(count(&c, NULL), 3);
	/* With --yes: the two are gone, the third stays. */
	ck_assert_int_eq(bulk_apply(&c, &f, 0, 1, &n, &stale, &err), BULK_DONE);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(count(&c, NULL), 1);
	/* Again: nothing matches any more. */
	ck_assert_int_eq(bulk_apply(&c, &f, 0, 1, &n, &stale, &err), BULK_NONE);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(count(&c, NULL), 1);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(requeue_makes_done_events_pending_and_counts_the_stale)
{
	struct inbox_filter f;
	struct config c;
	struct buf err;
	int64_t n, stale;

	load(&c);
	/* Two events of client:7, the older first, and one of client:8. */
	deliver(&c, "e1", "client.updated", "7", "10:00:00");
	deliver(&c, "e2", "client.updated", "7", "11:00:00");
	deliver(&c, "e3", "client.updated", "8", "10:30:00");
	all_done(&c);
	ck_assert_int_eq(count(&c, "done"), 3);
	buf_init(&err, 4096);
	memset(&f, 0, sizeof f);
	f.object_id = "7";
	/* Dry run: both of client:7; e1 is older than what was done for
	 * its object (e2). */
	ck_assert_int_eq(bulk_apply(&c, &f, 1, 0, &n, &stale, &err), BULK_DONE);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(stale, 1);
	ck_assert_int_eq(count(&c, "pending"), 0);
	ck_assert_int_eq(bulk_apply(&c, &f, 1, 1, &n, &stale, &err), BULK_DONE);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(stale, 1);
	ck_assert_int_eq(count(&c, "pending"), 2);
	ck_assert_int_eq(count(&c, "done"), 1);
	/* A filter that matches nothing. */
	f.object_id = "9";
	ck_assert_int_eq(bulk_apply(&c, &f, 1, 1, &n, &stale, &err), BULK_NONE);
	ck_assert_int_eq(n, 0);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(an_inbox_that_cannot_open_fails_with_its_reason)
{
	struct inbox_filter f;
	struct config c;
	struct buf err;
	int64_t n = 5, stale = 5;

	load(&c);
	free(c.database);
	ck_assert_ptr_nonnull(c.database = strdup("/nonexistent/dir/inbox.db"));
	buf_init(&err, 4096);
	memset(&f, 0, sizeof f);
	ck_assert_int_eq(bulk_apply(&c, &f, 1, 1, &n, &stale, &err), BULK_FAILED);
	ck_assert_int_eq(n, 0);
	ck_assert_int_eq(stale, 0);
	ck_assert_msg(contains(err.data, "/nonexistent/dir"), "%s", err.data);
	buf_free(&err);
	config_free(&c);
}
END_TEST

static char *
printed(int requeue, int acted, int64_t n, int64_t stale)
{
	char *out = NULL;
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	bulk_print(f, requeue, acted, n, stale);
	ck_assert_int_eq(fclose(f), 0);
	return out;
}

START_TEST(print_says_what_was_or_would_be_done)
{
	static const struct {
		int		requeue, acted;
		int64_t		n, stale;
		const char	*want;
	} cases[] = {
		{ 1, 0, 3, 0, "would requeue 3 events; run again with --yes\n" },
		{ 0, 0, 1, 0, "would forget 1 event; run again with --yes\n" },
		{ 1, 0, 2, 1, "would requeue 2 events (1 older than what was "
		    "already done for their object: they would be handed out "
		    "anyway); run again with --yes\n" },
		{ 1, 1, 3, 0, "requeued 3 events\n" },
		{ 1, 1, 3, 1, "requeued 3 events; 1 is older than what was "
		    "already done for its object and will be handed out anyway "
		    "(WEBHOOK_STALE=1)\n" },
		{ 1, 1, 3, 2, "requeued 3 events; 2 are older than what was "
		    "already done for their object and will be handed out "
		    "anyway (WEBHOOK_STALE=1)\n" },
		{ 0, 1, 1, 0, "forgot 1 event; a replay is now accepted as new, "
		    "and handed out if it is still the newest for its object\n" },
	};
	size_t i;
	char *out;

	for (i = 0; i < NELEM(cases); i++) {
		out = printed(cases[i].requeue, cases[i].acted, cases[i].n,
		    cases[i].stale);
		ck_assert_str_eq(out, cases[i].want);
		free(out);
	}
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("bulk");
	TCase *tc = tcase_create("bulk");

	tcase_add_test(tc, forget_counts_first_then_deletes_what_matches);
	tcase_add_test(tc, requeue_makes_done_events_pending_and_counts_the_stale);
	tcase_add_test(tc, an_inbox_that_cannot_open_fails_with_its_reason);
	tcase_add_test(tc, print_says_what_was_or_would_be_done);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(suite, tmpdir);
}
