/*
 * store_fixture: one event into an inbox as the receiver stores it, for
 * the unit tests of both backends (test_store, test_inbox, test_inbox_pg,
 * and the copy tests through copy_fixture.h).
 */
#ifndef WEBHOOK_TESTS_STORE_FIXTURE_H
#define WEBHOOK_TESTS_STORE_FIXTURE_H

#include <string.h>

#include <check.h>

#include "lib/store/event.h"
#include "lib/store/inbox.h"
#include "lib/common/instant.h"

/*
 * Store event `id` in `in` with the fields given (NULL: absent) and the
 * body[0..len).  `created` and `updated` are ISO-8601 as a provider sends
 * them, normalised as event_extract would (a bad one fails the test).
 * Returns inbox_store's status, with its reason in *why.
 */
static inline enum inbox_status
fixture_store(struct inbox *in, const char *id, const char *type,
    const char *created, const char *otype, const char *oid,
    const char *updated, const void *body, size_t len, struct buf *why)
{
	struct event_fields f;
	struct inbox_delivery d;

	memset(&f, 0, sizeof f);
	f.type = (char *)type;
	if (created != NULL) {
		ck_assert_msg(instant_parse(created, strlen(created),
		    f.created_at) == 0, "bad test instant %s", created);
		f.created_at_raw = (char *)created;
	}
	f.object_type = (char *)otype;
	f.object_id = (char *)oid;
	if (updated != NULL)
		ck_assert_msg(instant_parse(updated, strlen(updated),
		    f.updated_at) == 0, "bad test instant %s", updated);
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = 1772366400;
	d.secret_fp = "fp0123";
	d.body = body;
	d.body_len = len;
	d.fields = &f;
	return inbox_store(in, &d, why);
}

/*
 * inbox_finish_failed with the verdict's fields as arguments, as the
 * tests write them in one line; *dead (when not NULL) as the verdict
 * tells it.
 */
static inline enum inbox_status
fixture_fail(struct inbox *in, const struct inbox_event *e, int64_t now_ns,
    int64_t retry_ns, int64_t max_attempts, const char *error,
    const void *output, size_t output_len, int *dead, struct buf *why)
{
	struct inbox_failure f = { .now_ns = now_ns, .retry_ns = retry_ns,
	    .max_attempts = max_attempts, .error = error, .output = output,
	    .output_len = output_len };
	enum inbox_status s = inbox_finish_failed(in, e, &f, why);

	if (dead != NULL)
		*dead = f.dead;
	return s;
}

#endif
