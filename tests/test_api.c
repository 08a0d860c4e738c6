/*
 * test_api: lib/drain/api.c — the provider API's client against a real
 * HTTP server on 127.0.0.1 (tests/http_fixture.h): the request it makes
 * (path under api_url, the bearer token, JSON asked for), every class of
 * answer mapped to its status (JSON, 404, 401/403, 429 with Retry-After,
 * 5xx, a timeout, a refused connection, an answer that is not JSON), the
 * token never in a reason, escaping, and where the CA bundle comes from.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/drain/api.h"
#include "tests/check_common.h"
#include "tests/check_config.h"
#include "tests/http_fixture.h"

#define TOKEN	"tok_s3cret_123"

static char tmpdir[] = "/tmp/webhook-test-api-XXXXXX";

/* A config for base URL `url` (NULL: no api_url) with the token in
 * tmpdir/token, api_timeout `timeout` s. */
static void
load(struct config *c, const char *url, int timeout)
{
	char dir[PATH_MAX], token[sizeof tmpdir + 8], body[PATH_MAX + 256];

	if (url == NULL) {
		check_config(tmpdir, "", c, dir);
		return;
	}
	snprintf(token, sizeof token, "%s/token", tmpdir);
	check_write_file(token, TOKEN "\n");
	ck_assert_int_eq(chmod(token, 0600), 0);
	snprintf(body, sizeof body, "api_url = %s\napi_timeout = %ds\n"
	    "api_token_file = %s\n", url, timeout, token);
	check_config(tmpdir, body, c, dir);
}

/* One GET of `path` through a fresh client of c. */
static enum api_status
get(const struct config *c, const char *path, cJSON **json, int64_t *ra,
    struct buf *err)
{
	struct api *a;
	enum api_status st;

	ck_assert_msg(api_open(c, &a, err) == 0, "%s", err->data);
	st = api_get(a, path, json, ra, err);
	api_close(a);
	return st;
}

START_TEST(get_asks_with_the_token_and_parses_json)
{
	static const struct http_answer ok[] = {
		{ 200, "Content-Type: application/json\r\n",
		    "{\"id\":\"7\",\"name\":\"Ann\"}\n", 0, 0 },
	};
	struct http_fixture h = { .answers = ok, .nanswers = 1 };
	const struct http_request *rq;
	char url[128], v[256];
	struct config c;
	struct buf err;
	cJSON *json;
	int64_t ra = -1;

	http_fixture_start(&h);
	/* Trailing slashes of api_url are not doubled. */
	snprintf(url, sizeof url, "%s/v1//", h.url);
	load(&c, url, 5);
	buf_init(&err, 4096);
	ck_assert_int_eq(get(&c, "clients/7?x=1", &json, &ra, &err), API_OK);
	ck_assert_ptr_nonnull(json);
	ck_assert_str_eq(cJSON_GetObjectItem(json, "name")->valuestring, "Ann");
	ck_assert_int_eq(ra, 0);
	cJSON_Delete(json);
	ck_assert_int_eq(http_fixture_requests(&h), 1);
	rq = http_fixture_request(&h, 0);
	ck_assert_str_eq(rq->method, "GET");
	ck_assert_str_eq(rq->target, "/v1/clients/7?x=1");
	ck_assert_str_eq(http_header(rq, "Authorization", v, sizeof v),
	    "Bearer " TOKEN);
	ck_assert_str_eq(http_header(rq, "Accept", v, sizeof v),
	    "application/json");
	ck_assert_str_eq(http_header(rq, "User-Agent", v, sizeof v),
	    "webhook-inbox");
	buf_free(&err);
	config_free(&c);
	http_fixture_stop(&h);
}
END_TEST

/* Every class of answer, each from a fresh server and client. */
START_TEST(answers_map_to_statuses)
{
	static const struct {
		struct http_answer	a;
		enum api_status		want;
		int64_t			retry_after;
		const char		*why;	/* in err; NULL: err empty */
	} cases[] = {
		{ { 200, "", "[1, 2]\r\n\t ", 0, 0 }, API_OK, 0, NULL },
		{ { 404, "", "{}", 0, 0 }, API_NOT_FOUND, 0, "GET x/1: 404" },
		{ { 401, "", "no", 0, 0 }, API_AUTH, 0, "api_token_file" },
		{ { 403, "", "no", 0, 0 }, API_AUTH, 0, "refused the token" },
		{ { 429, "Retry-After: 7\r\n", "", 0, 0 }, API_RETRY, 7,
		    "GET x/1: 429" },
		{ { 503, "", "", 0, 0 }, API_RETRY, 0, "GET x/1: 503" },
		{ { 500, "", "", 0, 0 }, API_RETRY, 0, "GET x/1: 500" },
		{ { 408, "", "", 0, 0 }, API_RETRY, 0, "GET x/1: 408" },
		{ { 400, "", "{}", 0, 0 }, API_BAD, 0, "unexpected status 400" },
		{ { 302, "Location: /elsewhere\r\n", "", 0, 0 }, API_BAD, 0,
		    "unexpected status 302" },
		{ { 200, "", "<html>oops</html>", 0, 0 }, API_BAD, 0,
		    "the answer is not JSON" },
		{ { 200, "", "{\"a\":1} trailing", 0, 0 }, API_BAD, 0,
		    "the answer is not JSON" },
		{ { 200, "", "", 0, 0 }, API_BAD, 0, "the answer is not JSON" },
	};
	struct config c;
	struct buf err;
	cJSON *json;
	int64_t ra;
	size_t i;

	buf_init(&err, 4096);
	for (i = 0; i < NELEM(cases); i++) {
		struct http_fixture h = { .answers = &cases[i].a, .nanswers = 1 };

		http_fixture_start(&h);
		load(&c, h.url, 5);
		ra = -1;
		ck_assert_msg(get(&c, "x/1", &json, &ra, &err) == cases[i].want,
		    "case %zu: %s", i, err.data);
		ck_assert_msg((json != NULL) == (cases[i].want == API_OK),
		    "case %zu", i);
		cJSON_Delete(json);
		ck_assert_int_eq(ra, cases[i].retry_after);
		if (cases[i].why != NULL)
			ck_assert_msg(contains(err.data, cases[i].why),
			    "case %zu: %s", i, err.data);
		else
			ck_assert_uint_eq(err.len, 0);
		ck_assert(!contains(err.data, TOKEN));
		config_free(&c);
		http_fixture_stop(&h);
	}
	buf_free(&err);
}
END_TEST

/* A server that does not answer within api_timeout, and one that is not
 * there: try later. */
START_TEST(no_answer_is_retry)
{
	static const struct http_answer slow[] = {
		{ 200, "", "{}", 0, 10000 },
	};
	struct http_fixture h = { .answers = slow, .nanswers = 1 };
	struct config c;
	struct buf err;
	cJSON *json;
	int64_t ra, t0;
	char url[64];

	buf_init(&err, 4096);
	http_fixture_start(&h);
	load(&c, h.url, 1);
	t0 = util_mono_ns();
	ck_assert_int_eq(get(&c, "x", &json, &ra, &err), API_RETRY);
	ck_assert_ptr_null(json);
	/* api_timeout, not the server's 10 s. */
	ck_assert_int_lt(util_mono_ns() - t0, 8 * 1000000000LL);
	ck_assert_msg(contains(err.data, "GET x: Timeout"), "%s", err.data);
	config_free(&c);
	/* The same port once the server is gone: refused. */
	snprintf(url, sizeof url, "%s", h.url);
	http_fixture_stop(&h);
	load(&c, url, 5);
	ck_assert_int_eq(get(&c, "x", &json, &ra, &err), API_RETRY);
	ck_assert_msg(contains(err.data, "GET x: Couldn't connect"), "%s",
	    err.data);
	config_free(&c);
	buf_free(&err);
}
END_TEST

/* One client, several requests: each answer its own (the body of the
 * last one is not kept into the next). */
START_TEST(a_client_serves_many_requests)
{
	static const struct http_answer seq[] = {
		{ 200, "", "{\"n\":1}", 0, 0 },
		{ 404, "", "", 0, 0 },
		{ 200, "", "{\"n\":3}", 0, 0 },
	};
	struct http_fixture h = { .answers = seq, .nanswers = 3 };
	struct config c;
	struct buf err;
	struct api *a;
	cJSON *json;
	int64_t ra;

	http_fixture_start(&h);
	load(&c, h.url, 5);
	buf_init(&err, 4096);
	ck_assert_int_eq(api_open(&c, &a, &err), 0);
	ck_assert_int_eq(api_get(a, "a", &json, &ra, &err), API_OK);
	ck_assert_int_eq(cJSON_GetObjectItem(json, "n")->valueint, 1);
	cJSON_Delete(json);
	ck_assert_int_eq(api_get(a, "b", &json, &ra, &err), API_NOT_FOUND);
	ck_assert_int_eq(api_get(a, "c", &json, &ra, &err), API_OK);
	ck_assert_int_eq(cJSON_GetObjectItem(json, "n")->valueint, 3);
	cJSON_Delete(json);
	ck_assert_int_eq(http_fixture_requests(&h), 3);
	ck_assert_str_eq(http_fixture_request(&h, 1)->target, "/b");
	api_close(a);
	buf_free(&err);
	config_free(&c);
	http_fixture_stop(&h);
}
END_TEST

START_TEST(open_needs_url_and_token)
{
	struct config c;
	struct buf err;
	struct api *a = (struct api *)&c;

	buf_init(&err, 4096);
	load(&c, NULL, 0);
	ck_assert_int_eq(api_open(&c, &a, &err), -1);
	ck_assert_ptr_null(a);
	ck_assert_msg(contains(err.data, "api_url: required"), "%s", err.data);
	config_free(&c);
	/* A URL but no token file. */
	{
		char dir[PATH_MAX];

		check_config(tmpdir, "api_url = http://127.0.0.1:1/v1\n", &c, dir);
	}
	unsetenv("WEBHOOK_API_TOKEN");
	ck_assert_int_eq(api_open(&c, &a, &err), -1);
	ck_assert_ptr_null(a);
	ck_assert_uint_gt(err.len, 0);
	config_free(&c);
	api_close(NULL);
	buf_free(&err);
}
END_TEST

START_TEST(escape_makes_one_segment)
{
	struct config c;
	struct buf err, out;
	struct api *a;

	load(&c, "http://127.0.0.1:1", 5);
	buf_init(&err, 4096);
	buf_init(&out, 4096);
	ck_assert_int_eq(api_open(&c, &a, &err), 0);
	ck_assert_int_eq(api_escape(a, "a b/c?d&e=\xc3\xbc", &out), 0);
	ck_assert_str_eq(out.data, "a%20b%2Fc%3Fd%26e%3D%C3%BC");
	buf_reset(&out);
	ck_assert_int_eq(api_escape(a, "2026-03-01T10:00:00.5Z", &out), 0);
	ck_assert_str_eq(out.data, "2026-03-01T10%3A00%3A00.5Z");
	api_close(a);
	buf_free(&out);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(ca_bundle_from_config_then_environment)
{
	struct config c;
	const char *found;
	char dir[PATH_MAX];

	check_config(tmpdir, "api_ca_file = /srv/ca.pem\n", &c, dir);
	setenv("SSL_CERT_FILE", "/env/ca.pem", 1);
	ck_assert_str_eq(api_ca_bundle(&c), "/srv/ca.pem");
	config_free(&c);
	check_config(tmpdir, "", &c, dir);
	ck_assert_str_eq(api_ca_bundle(&c), "/env/ca.pem");
	/* Neither: a readable file where distributions keep theirs, or
	 * none. */
	unsetenv("SSL_CERT_FILE");
	found = api_ca_bundle(&c);
	if (found != NULL)
		ck_assert_int_eq(access(found, R_OK), 0);
	setenv("SSL_CERT_FILE", "", 1);
	ck_assert(api_ca_bundle(&c) == found);
	config_free(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("api");

	tcase_add_test(tc, get_asks_with_the_token_and_parses_json);
	tcase_add_test(tc, answers_map_to_statuses);
	tcase_add_test(tc, no_answer_is_retry);
	tcase_add_test(tc, a_client_serves_many_requests);
	tcase_add_test(tc, open_needs_url_and_token);
	tcase_add_test(tc, escape_makes_one_segment);
	tcase_add_test(tc, ca_bundle_from_config_then_environment);
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
