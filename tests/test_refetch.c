/*
 * test_refetch: lib/refetch.c without the provider — when an event needs
 * its object fetched at all, and the failures that must not hand it out:
 * no API client (said once a run, not once an event) and an API that does
 * not answer (a connection refused on 127.0.0.1).  Fetching, the stale
 * check and replacing `data` run against the provider simulator in
 * tests/e2e_api.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/refetch.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

static char tmpdir[] = "/tmp/webhook-test-refetch-XXXXXX";

/* The API token's file, in tmpdir. */
static const char *
tmpdir_token(void)
{
	static char path[sizeof tmpdir + 8];

	snprintf(path, sizeof path, "%s/token", tmpdir);
	return path;
}

/* A config with `extra`; with an api_url, a token file beside it. */
static void
load(struct config *c, const char *extra)
{
	char dir[PATH_MAX], body[PATH_MAX + 256];
	FILE *f;

	snprintf(body, sizeof body, "%s", extra);
	if (strstr(extra, "api_url") != NULL) {
		ck_assert_ptr_nonnull(f = fopen(tmpdir_token(), "w"));
		fputs("tok_123\n", f);
		ck_assert_int_eq(fclose(f), 0);
		ck_assert_int_eq(chmod(tmpdir_token(), 0600), 0);
		snprintf(body, sizeof body, "%sapi_token_file = %s\n", extra,
		    tmpdir_token());
	}
	check_config(tmpdir, body, c, dir);
}

/* A claimed event of client:7, truncated or not. */
static void
event(struct inbox_event *e, int truncated)
{
	static const char body[] = "{\"id\":\"e1\",\"type\":\"client.updated\","
	    "\"data\":{\"object\":\"client\",\"id\":\"7\",\"object_truncated\":true}}";

	inbox_event_init(e);
	e->webhook_id = strdup("e1");
	e->type = strdup("client.updated");
	e->object_type = strdup("client");
	e->object_id = strdup("7");
	e->truncated = truncated;
	ck_assert_int_eq(buf_append(&e->body, body, strlen(body)), 0);
	memcpy(e->object_version, "x", 2);	/* must be cleared */
}

struct call {
	struct buf		why, alarm;
	char			*out;
	int64_t			 retry_after_s;
	enum refetch_result	 res;
};

static void
call(struct refetch *r, const struct config *c, struct inbox_event *e,
    struct call *x)
{
	buf_init(&x->why, 4096);
	buf_init(&x->alarm, 4096);
	x->res = refetch_event(r, NULL, c, e, &x->out, &x->retry_after_s,
	    &x->why, &x->alarm);
}

static void
call_free(struct call *x)
{
	free(x->out);
	buf_free(&x->why);
	buf_free(&x->alarm);
}

START_TEST(nothing_to_fetch)
{
	struct refetch r = { NULL, 0, 0, NULL };
	struct inbox_event e;
	struct config c;
	struct call x;

	load(&c, "");
	event(&e, 0);		/* whole, and not named by `refetch` */
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_NONE);
	ck_assert_ptr_null(x.out);
	call_free(&x);
	inbox_event_free(&e);
	/* Truncated, but no API configured: handed out as stored. */
	event(&e, 1);
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_NONE);
	call_free(&x);
	/* No object key: nothing to fetch. */
	free(e.object_id);
	e.object_id = NULL;
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_NONE);
	call_free(&x);
	inbox_event_free(&e);
	refetch_close(&r);
	config_free(&c);
}
END_TEST

START_TEST(wanted_without_api_fails_and_says_so_once)
{
	struct refetch r = { NULL, 0, 0, NULL };
	struct inbox_event e;
	struct config c;
	struct call x;

	load(&c, "refetch = client.*\n");
	event(&e, 0);
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_FAILED);
	ck_assert_ptr_null(x.out);
	ck_assert_str_eq(x.why.data, "refetch: the API client is not configured");
	ck_assert(contains(x.alarm.data, "refetch: "));
	ck_assert_str_eq(e.object_version, "");
	call_free(&x);
	/* The next event of the run: the same failure, not said again. */
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_FAILED);
	ck_assert_uint_eq(x.alarm.len, 0);
	call_free(&x);
	inbox_event_free(&e);
	refetch_close(&r);
	config_free(&c);
}
END_TEST

START_TEST(api_down_fails_without_alarm)
{
	struct refetch r = { NULL, 0, 0, NULL };
	struct inbox_event e;
	struct config c;
	struct call x;

	load(&c, "api_url = http://127.0.0.1:1/v1\napi_timeout = 5s\n");
	event(&e, 1);
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_FAILED);
	ck_assert_ptr_null(x.out);
	ck_assert_msg(strncmp(x.why.data, "refetch: ", 9) == 0, "%s", x.why.data);
	ck_assert_uint_eq(x.alarm.len, 0);
	ck_assert_str_eq(e.object_version, "");
	call_free(&x);
	inbox_event_free(&e);
	refetch_close(&r);
	config_free(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("refetch");
	TCase *tc = tcase_create("refetch");

	tcase_add_test(tc, nothing_to_fetch);
	tcase_add_test(tc, wanted_without_api_fails_and_says_so_once);
	tcase_add_test(tc, api_down_fails_without_alarm);
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
