/*
 * test_ping: lib/drain/ping.c — the heartbeat against a real HTTP server on
 * 127.0.0.1 (tests/http_fixture.h): a POST to URL after a good run, to
 * URL/fail after a failed one (a trailing slash not doubled), the body cut
 * to PING_BODY_MAX, a monitor that refuses, is not there, or does not
 * answer within PING_TIMEOUT_S.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <sodium.h>

#include "lib/drain/ping.h"
#include "tests/check_common.h"
#include "tests/check_config.h"
#include "tests/http_fixture.h"

#define SEC	1000000000LL

static char tmpdir[] = "/tmp/webhook-test-ping-XXXXXX";

static const struct http_answer ok[] = { { 200, "", "OK", 0, 0 } };

START_TEST(a_good_run_posts_its_lines)
{
	static const char body[] = "drained 3 events\nok\n";
	struct http_fixture h = { .answers = ok, .nanswers = 1 };
	const struct http_request *rq;
	struct config c;
	struct buf err;
	char url[128], dir[PATH_MAX];

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	buf_init(&err, 4096);
	snprintf(url, sizeof url, "%s/ping/abc-123", h.url);
	ck_assert_msg(ping_send(&c, url, 0, body, strlen(body), &err) == 0, "%s",
	    err.data);
	ck_assert_uint_eq(err.len, 0);
	ck_assert_int_eq(http_fixture_requests(&h), 1);
	rq = http_fixture_request(&h, 0);
	ck_assert_str_eq(rq->method, "POST");
	ck_assert_str_eq(rq->target, "/ping/abc-123");
	ck_assert_uint_eq(rq->body_len, strlen(body));
	ck_assert_str_eq(rq->body, body);
	buf_free(&err);
	config_free(&c);
	http_fixture_stop(&h);
}
END_TEST

START_TEST(a_failed_run_posts_to_fail)
{
	struct http_fixture h = { .answers = ok, .nanswers = 1 };
	struct config c;
	struct buf err;
	char url[128], dir[PATH_MAX];

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	buf_init(&err, 4096);
	snprintf(url, sizeof url, "%s/ping/abc", h.url);
	ck_assert_int_eq(ping_send(&c, url, 1, "1 failed\n", 9, &err), 0);
	snprintf(url, sizeof url, "%s/ping/abc/", h.url);
	ck_assert_int_eq(ping_send(&c, url, 1, "1 failed\n", 9, &err), 0);
	/* No body at all: an empty POST. */
	ck_assert_int_eq(ping_send(&c, url, 0, NULL, 0, &err), 0);
	ck_assert_int_eq(http_fixture_requests(&h), 3);
	ck_assert_str_eq(http_fixture_request(&h, 0)->target, "/ping/abc/fail");
	ck_assert_str_eq(http_fixture_request(&h, 1)->target, "/ping/abc/fail");
	ck_assert_str_eq(http_fixture_request(&h, 1)->body, "1 failed\n");
	ck_assert_str_eq(http_fixture_request(&h, 2)->target, "/ping/abc/");
	ck_assert_str_eq(http_fixture_request(&h, 2)->method, "POST");
	ck_assert_uint_eq(http_fixture_request(&h, 2)->body_len, 0);
	buf_free(&err);
	config_free(&c);
	http_fixture_stop(&h);
}
END_TEST

START_TEST(the_body_is_cut)
{
	struct http_fixture h = { .answers = ok, .nanswers = 1 };
	struct config c;
	struct buf err;
	char dir[PATH_MAX], *body;

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(body = malloc(3 * PING_BODY_MAX));
	memset(body, 'x', 3 * PING_BODY_MAX);
	ck_assert_int_eq(ping_send(&c, h.url, 0, body, 3 * PING_BODY_MAX, &err),
	    0);
	ck_assert_uint_eq(http_fixture_request(&h, 0)->body_len, PING_BODY_MAX);
	free(body);
	buf_free(&err);
	config_free(&c);
	http_fixture_stop(&h);
}
END_TEST

START_TEST(a_monitor_that_refuses_or_is_gone_fails)
{
	static const struct http_answer no[] = { { 404, "", "not found", 0, 0 } };
	struct http_fixture h = { .answers = no, .nanswers = 1 };
	struct config c;
	struct buf err;
	char dir[PATH_MAX], url[64];

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	buf_init(&err, 4096);
	ck_assert_int_eq(ping_send(&c, h.url, 0, "x", 1, &err), -1);
	ck_assert_str_eq(err.data, "the monitor answered 404");
	snprintf(url, sizeof url, "%s", h.url);
	http_fixture_stop(&h);
	ck_assert_int_eq(ping_send(&c, url, 0, "x", 1, &err), -1);
	ck_assert_msg(contains(err.data, "Couldn't connect"), "%s", err.data);
	/* Not http or https. */
	ck_assert_int_eq(ping_send(&c, "file:///etc/passwd", 0, "x", 1, &err),
	    -1);
	ck_assert_uint_gt(err.len, 0);
	buf_free(&err);
	config_free(&c);
}
END_TEST

/* A monitor that holds the request: given up after PING_TIMEOUT_S, not
 * when the monitor would have answered. */
START_TEST(a_monitor_that_hangs_is_given_up)
{
	static const struct http_answer hang[] = {
		{ 200, "", "late", 0, (PING_TIMEOUT_S + 20) * 1000 },
	};
	struct http_fixture h = { .answers = hang, .nanswers = 1 };
	struct config c;
	struct buf err;
	char dir[PATH_MAX];
	int64_t t0, took;

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	buf_init(&err, 4096);
	t0 = util_mono_ns();
	ck_assert_int_eq(ping_send(&c, h.url, 0, "x", 1, &err), -1);
	took = util_mono_ns() - t0;
	ck_assert_msg(contains(err.data, "Timeout"), "%s", err.data);
	ck_assert_int_ge(took, (PING_TIMEOUT_S - 1) * SEC);
	ck_assert_int_lt(took, (PING_TIMEOUT_S + 10) * SEC);
	buf_free(&err);
	config_free(&c);
	http_fixture_stop(&h);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("ping");
	TCase *tc = tcase_create("ping");

	tcase_add_test(tc, a_good_run_posts_its_lines);
	tcase_add_test(tc, a_failed_run_posts_to_fail);
	tcase_add_test(tc, the_body_is_cut);
	tcase_add_test(tc, a_monitor_that_refuses_or_is_gone_fails);
	tcase_add_test(tc, a_monitor_that_hangs_is_given_up);
	/* The hanging monitor takes PING_TIMEOUT_S by design. */
	tcase_set_timeout(tc, PING_TIMEOUT_S + 15);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return 1;
	return check_main_in_tmpdir(suite, tmpdir);
}
