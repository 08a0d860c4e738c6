/*
 * handout_fixture: the drainer's hand-out as the store tests drive it —
 * due ids in order, a run without a handler, a claim, a verdict — over
 * the public store API (lib/store/inbox.h), and what a test reads back of
 * an event, shared by the contract suite
 * (test_store.c) and the SQLite engine's own (test_inbox.c).
 *
 * The including file defines, before including it: `ib` (the open
 * struct inbox *), `err` (a struct buf), and the ERR and OK macros.
 */
#ifndef WEBHOOK_TESTS_HANDOUT_FIXTURE_H
#define WEBHOOK_TESTS_HANDOUT_FIXTURE_H

#include <stdio.h>
#include <string.h>

#include <check.h>

#include "lib/store/inbox.h"
#include "tests/store_fixture.h"

/* ---- looking: one event, the ids a filter lists ---- */

/* What a test wants to see of one event (copied out of inbox_list). */
struct snap {
	int	 found;
	char	 id[128], state[8], type[64], created_at_raw[64];
	char	 source[INBOX_SOURCE_MAX + 1];
	char	 object_type[64], object_id[64], secret_fp[64];
	char	 received_at[INSTANT_SIZE], created_at[INSTANT_SIZE];
	char	 updated_at[INSTANT_SIZE], sort_at[INSTANT_SIZE];
	char	 next_at[INSTANT_SIZE], finished_at[INSTANT_SIZE];
	char	 last_error[160];
	int64_t	 attempts, failures, webhook_timestamp;
	int	 requeued, has_body, blocked, truncated;
	struct buf body, output;
};

static void
cp(char *dst, size_t dsz, const char *src)
{
	snprintf(dst, dsz, "%s", src != NULL ? src : "<null>");
}

static int
snap_cb(const struct inbox_event *e, void *arg)
{
	struct snap *s = arg;

	s->found++;
	cp(s->id, sizeof s->id, e->webhook_id);
	cp(s->state, sizeof s->state, e->state);
	cp(s->source, sizeof s->source, e->source);
	cp(s->type, sizeof s->type, e->type);
	cp(s->created_at_raw, sizeof s->created_at_raw, e->created_at_raw);
	cp(s->object_type, sizeof s->object_type, e->object_type);
	cp(s->object_id, sizeof s->object_id, e->object_id);
	cp(s->secret_fp, sizeof s->secret_fp, e->secret_fp);
	cp(s->received_at, sizeof s->received_at, e->received_at);
	cp(s->created_at, sizeof s->created_at, e->created_at);
	cp(s->updated_at, sizeof s->updated_at, e->updated_at);
	cp(s->sort_at, sizeof s->sort_at, e->sort_at);
	cp(s->next_at, sizeof s->next_at, e->next_at);
	cp(s->finished_at, sizeof s->finished_at, e->finished_at);
	cp(s->last_error, sizeof s->last_error, e->last_error);
	s->attempts = e->attempts;
	s->failures = e->failures;
	s->webhook_timestamp = e->webhook_timestamp;
	s->requeued = e->requeued;
	s->has_body = e->has_body;
	s->blocked = e->blocked;
	s->truncated = e->truncated;
	buf_reset(&s->body);
	buf_reset(&s->output);
	ck_assert_int_eq(buf_append(&s->body, e->body.data ? e->body.data : "",
	    e->body.len), 0);
	ck_assert_int_eq(buf_append(&s->output, e->last_output.data ?
	    e->last_output.data : "", e->last_output.len), 0);
	return 0;
}

static void
get(const char *id, struct snap *s)
{
	struct inbox_filter f = { .webhook_id = id };

	memset(s, 0, sizeof *s);
	buf_init(&s->body, SIZE_MAX / 2);
	buf_init(&s->output, SIZE_MAX / 2);
	OK(inbox_list(ib, &f, 1, snap_cb, s, &err));
	ck_assert_msg(s->found == 1, "%s: found %d", id, s->found);
}

static void
snap_free(struct snap *s)
{
	buf_free(&s->body);
	buf_free(&s->output);
}

static const char *
state_of(const char *id)
{
	static struct snap s;

	get(id, &s);
	snap_free(&s);
	return s.state;
}

/* Ids listed by inbox_list, "a,b!,c" ("!" = blocked). */
static int
ids_cb(const struct inbox_event *e, void *arg)
{
	struct buf *b = arg;

	ck_assert_int_eq(buf_printf(b, "%s%s%s", b->len ? "," : "",
	    e->webhook_id, e->blocked ? "!" : ""), 0);
	return 0;
}

static const char *
list_ids(const struct inbox_filter *f)
{
	static char out[4096];
	struct buf b;

	buf_init(&b, sizeof out - 1);
	ck_assert_int_eq(buf_printf(&b, "%s", ""), 0);
	OK(inbox_list(ib, f, 0, ids_cb, &b, &err));
	snprintf(out, sizeof out, "%s", b.data);
	buf_free(&b);
	return out;
}

/* ---- handing out ---- */

/* Ids inbox_next_due hands out from a fresh cursor (without claiming). */
static const char *
due(int64_t now, int64_t settle)
{
	static char out[4096];
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_status s;
	size_t len = 0;

	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	out[0] = '\0';
	while ((s = inbox_next_due(ib, &cur, now, settle, 0, &e, &err)) ==
	    INBOX_OK) {
		ck_assert_uint_lt(len + strlen(e.webhook_id) + 2, sizeof out);
		len += (size_t)snprintf(out + len, sizeof out - len, "%s%s",
		    len ? "," : "", e.webhook_id);
	}
	ck_assert_msg(s == INBOX_NOT_FOUND, "inbox_next_due: %d: %s", s, ERR);
	inbox_event_free(&e);
	return out;
}

/* Find `id` among the due events at `now` (settle 0), as the drainer would
 * meet it. */
static void
take(const char *id, int64_t now, struct inbox_event *e)
{
	struct inbox_cursor cur;
	enum inbox_status s;

	memset(&cur, 0, sizeof cur);
	for (;;) {
		s = inbox_next_due(ib, &cur, now, 0, 0, e, &err);
		ck_assert_msg(s == INBOX_OK, "%s is not due (%d: %s)", id, s,
		    ERR);
		if (strcmp(e->webhook_id, id) == 0)
			return;
	}
}

static enum inbox_claim
claim(struct inbox_event *e, int64_t now)
{
	enum inbox_claim c = INBOX_SKIPPED;

	OK(inbox_claim(ib, e, now, &c, &err));
	return c;
}

/* Take and claim `id` at `now`, and mark it done if `finish` and it was
 * handed out; returns the claim. */
static enum inbox_claim
take_claim(const char *id, int64_t now, int finish)
{
	struct inbox_event e;
	enum inbox_claim c;

	inbox_event_init(&e);
	take(id, now, &e);
	c = claim(&e, now);
	if (finish && (c == INBOX_CLAIMED || c == INBOX_CLAIMED_STALE))
		OK(inbox_finish_done(ib, &e, now, "ok\n", 3, &err));
	inbox_event_free(&e);
	return c;
}

static void
done(const char *id, int64_t now)
{
	ck_assert_int_eq(take_claim(id, now, 1), INBOX_CLAIMED);
}

/*
 * A drainer run at `now` without the handler: every due event in order,
 * claimed, then done — or failed when its id is in `fail` (",a,b,").
 * Returns what happened: "id" done, "id!" failed, "id+" failed and died,
 * "id~" marked stale, "id?" skipped; "^" after an id claimed though stale.
 */
static const char *
drain(int64_t now, const char *fail, int64_t max_attempts)
{
	static char out[16384];
	struct inbox_cursor cur;
	struct inbox_event e;
	enum inbox_status s;
	enum inbox_claim c;
	char key[160];
	size_t len = 0;
	int dead;

	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	out[0] = '\0';
	while ((s = inbox_next_due(ib, &cur, now, 0, 0, &e, &err)) == INBOX_OK) {
		const char *mark = "";

		c = claim(&e, now);
		snprintf(key, sizeof key, ",%s,", e.webhook_id);
		if (c == INBOX_MARKED_STALE) {
			mark = "~";
		} else if (c == INBOX_SKIPPED) {
			mark = "?";
		} else if (strstr(fail, key) != NULL) {
			OK(fixture_fail(ib, &e, now, 60 * SEC,
			    max_attempts, "exit 1", "no\n", 3, &dead, &err));
			mark = c == INBOX_CLAIMED_STALE ? (dead ? "^+" : "^!") :
			    (dead ? "+" : "!");
		} else {
			OK(inbox_finish_done(ib, &e, now, NULL, 0, &err));
			mark = c == INBOX_CLAIMED_STALE ? "^" : "";
		}
		len += (size_t)snprintf(out + len, sizeof out - len, "%s%s%s",
		    len ? "," : "", e.webhook_id, mark);
		ck_assert_uint_lt(len, sizeof out - 1);
	}
	ck_assert_msg(s == INBOX_NOT_FOUND, "inbox_next_due: %d: %s", s, ERR);
	inbox_event_free(&e);
	return out;
}

#endif
