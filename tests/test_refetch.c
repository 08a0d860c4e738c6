/*
 * test_refetch: lib/drain/refetch.c without the provider — when an event needs
 * its object fetched at all, and the failures that must not hand it out:
 * no API client (said once a run, not once an event) and an API that does
 * not answer (a connection refused on 127.0.0.1, or one that holds the
 * request while the caller's waiter is served).  Fetching, the stale
 * check and replacing `data` run against the provider simulator in
 * tests/e2e_api.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <sodium.h>

#include "lib/drain/api.h"
#include "lib/drain/refetch.h"
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
	buf_init(&x->why, BUF_ERR_MAX);
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
	/* A named source's object is another provider's: never fetched
	 * from this API, even when `refetch` names it. */
	snprintf(e.source, sizeof e.source, "stripe");
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_NONE);
	call_free(&x);
	e.source[0] = '\0';
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

/* The run's waiter (api.h) while the API holds the request: a listener
 * on 127.0.0.1 that never answers (the kernel completes the connection;
 * no one reads).  Its descriptor is served in the same poll (a byte
 * waiting in a pipe is seen), its due instant wakes the wait, and the
 * refetch still fails at api_timeout. */
struct waited {
	int	pipe[2];
	int	serves, readable;
};

static size_t
waited_fds(void *arg, struct pollfd *p, size_t max, int64_t *due_ns)
{
	struct waited *w = arg;

	ck_assert_uint_ge(max, 2);
	p[0] = (struct pollfd){ w->pipe[0], POLLIN, 0 };
	p[1] = (struct pollfd){ -1, POLLIN, 0 };	/* skipped */
	*due_ns = util_mono_ns() + 100 * 1000000LL;
	return 2;
}

static void
waited_serve(void *arg, struct pollfd *p, size_t n)
{
	struct waited *w = arg;
	char ch;

	ck_assert_uint_eq(n, 2);
	w->serves++;
	if (p[0].revents & POLLIN) {
		ck_assert_int_eq(read(w->pipe[0], &ch, 1), 1);
		w->readable++;
	}
	ck_assert_int_eq(p[1].revents, 0);
}

START_TEST(waiter_served_while_the_api_holds_the_request)
{
	struct waited w = { { -1, -1 }, 0, 0 };
	struct api_waiter aw = { waited_fds, waited_serve, &w };
	struct refetch r = { NULL, 0, 0, &aw };
	struct sockaddr_in sa;
	socklen_t salen = sizeof sa;
	struct inbox_event e;
	struct config c;
	struct call x;
	char extra[256];
	int ls;

	ck_assert_int_ne(ls = socket(AF_INET, SOCK_STREAM, 0), -1);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(ls, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(ls, 4), 0);
	ck_assert_int_eq(getsockname(ls, (struct sockaddr *)&sa, &salen), 0);
	snprintf(extra, sizeof extra, "api_url = http://127.0.0.1:%d/v1\n"
	    "api_timeout = 2s\n", ntohs(sa.sin_port));
	load(&c, extra);
	ck_assert_int_eq(pipe(w.pipe), 0);
	ck_assert_int_eq(write(w.pipe[1], "x", 1), 1);
	event(&e, 1);
	call(&r, &c, &e, &x);
	ck_assert_int_eq(x.res, REFETCH_FAILED);
	ck_assert_msg(strncmp(x.why.data, "refetch: ", 9) == 0, "%s", x.why.data);
	ck_assert_int_eq(w.readable, 1);
	/* The byte's wake, then the due instant's, more than once in 2 s. */
	ck_assert_int_ge(w.serves, 3);
	call_free(&x);
	inbox_event_free(&e);
	refetch_close(&r);
	config_free(&c);
	close(w.pipe[0]);
	close(w.pipe[1]);
	close(ls);
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
	tcase_add_test(tc, waiter_served_while_the_api_holds_the_request);
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
