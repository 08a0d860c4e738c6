/*
 * test_probe: lib/operator/probe.c — `check --url` against a real HTTP
 * server on 127.0.0.1 (tests/http_fixture.h) that hands each request to
 * the receiver's own request path (receive_handle over the in-memory
 * request, tests/fake_request.h) with a real SQLite inbox, as a web server
 * runs the receiver: a receiver set up right passes every step and stores
 * the two signed test events; one with another secret, a max_body too
 * small, a web server that answers by itself and nothing listening each
 * fail with the step of docs/HOSTING.md to revisit (PROBE_STEP_*).
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/operator/probe.h"
#include "lib/program/version.h"
#include "lib/receive/receive.h"
#include "lib/receive/request.h"
#include "lib/receive/site.h"
#include "tests/check_common.h"
#include "tests/check_config.h"
#include "tests/fake_request.h"
#include "tests/http_fixture.h"

static char tmpdir[] = "/tmp/webhook-test-probe-XXXXXX";

/* The receiver behind the server: its config file. */
struct receiver {
	const char	*conf;
};

/* A request's CGI parameters, "NAME=value", NULL-terminated. */
struct params {
	const char	*p[8];
	char		 text[8][1024];
	size_t		 n;
};

static void
param(struct params *ps, const char *name, const char *value)
{
	if (ps->n == NELEM(ps->p) - 1)
		return;		/* the fixture's thread: no ck_assert here */
	snprintf(ps->text[ps->n], sizeof ps->text[ps->n], "%s=%s", name, value);
	ps->p[ps->n] = ps->text[ps->n];
	ps->p[++ps->n] = NULL;
}

/*
 * A web server running the receiver for one request, as CGI does: the
 * request's method, length, type and webhook headers as parameters, its
 * body as the request's, and the receiver's "Status:" answer as the HTTP
 * answer (the fixture adds Content-Length itself).
 */
static void
serve(void *arg, const struct http_request *rq, struct http_answer *a,
    char *scratch, size_t scratchsz)
{
	static const char *const hdr[][2] = {
		{ "Content-Type", "CONTENT_TYPE" },
		{ "webhook-id", "HTTP_WEBHOOK_ID" },
		{ "webhook-timestamp", "HTTP_WEBHOOK_TIMESTAMP" },
		{ "webhook-signature", "HTTP_WEBHOOK_SIGNATURE" },
	};
	struct receiver *rc = arg;
	struct site_cache sites;
	struct receive rv;
	struct request_fake fake;
	struct request r;
	struct params ps = { { NULL }, { { 0 } }, 0 };
	char v[900], len[32], *body, *p, *eol;
	size_t i, used = 0;

	param(&ps, "REQUEST_METHOD", rq->method);
	param(&ps, "WEBHOOK_CONF", rc->conf);
	snprintf(len, sizeof len, "%zu", rq->body_len);
	param(&ps, "CONTENT_LENGTH", len);
	for (i = 0; i < NELEM(hdr); i++)
		if (http_header(rq, hdr[i][0], v, sizeof v) != NULL)
			param(&ps, hdr[i][1], v);
	memset(&fake, 0, sizeof fake);
	fake.params = ps.p;
	fake.body = rq->body;
	fake.body_len = rq->body_len;
	fake.late_at = -1;
	fake.fail_at = -1;
	site_cache_init(&sites, "/nonexistent/webhook.fcgi");
	receive_init(&rv);
	request_init_fake(&r, &fake);
	a->status = receive_handle(&rv, &sites, &r);
	receive_free(&rv);
	site_cache_free(&sites);
	/* "Status: N reason\r\n" then header lines, a blank line, the body. */
	body = strstr(fake.out, "\r\n\r\n");
	p = strstr(fake.out, "\r\n");
	scratch[0] = '\0';
	for (p = p ? p + 2 : NULL; p != NULL && body != NULL && p < body + 2;
	    p = eol + 2) {
		eol = strstr(p, "\r\n");
		if (strncasecmp(p, "Content-Length:", 15) != 0 &&
		    used + (size_t)(eol - p) + 3 < scratchsz / 2) {
			memcpy(scratch + used, p, (size_t)(eol - p) + 2);
			used += (size_t)(eol - p) + 2;
			scratch[used] = '\0';
		}
	}
	a->headers = scratch;
	snprintf(scratch + scratchsz / 2, scratchsz / 2, "%s", body ? body + 4 :
	    "");
	a->body = scratch + scratchsz / 2;
}

/* What probe_url said. */
struct said {
	char	text[4096];
};

static void
finding(void *arg, const char *level, const char *what, const char *text)
{
	struct said *s = arg;
	size_t n = strlen(s->text);

	ck_assert_str_eq(what, "url");
	snprintf(s->text + n, sizeof s->text - n, "%s %s\n", level, text);
}

/* Probe url with c; what was said, and the counts. */
static void
probe(const struct config *c, const char *url, struct said *s,
    struct setup_counts *n)
{
	struct setup_hooks h = { finding, NULL, s };

	memset(s, 0, sizeof *s);
	memset(n, 0, sizeof *n);
	probe_url(c, url, &h, n);
}

/* Events of type webhook_inbox.test stored in c's inbox. */
static int64_t
stored_tests(const struct config *c)
{
	struct inbox_filter f;
	struct inbox *ib;
	struct buf err;
	int64_t n = -1;

	buf_init(&err, 4096);
	memset(&f, 0, sizeof f);
	f.type_glob = "webhook_inbox.test";
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_int_eq(inbox_count(ib, &f, &n, &err), INBOX_OK);
	inbox_close(ib);
	buf_free(&err);
	return n;
}

START_TEST(a_receiver_set_up_right_passes)
{
	struct receiver rc;
	struct http_fixture h = { .fn = serve, .arg = &rc };
	struct setup_counts n;
	struct config c;
	struct said s;
	char dir[PATH_MAX], url[128], want[1024];

	check_config(tmpdir, "", &c, dir);
	rc.conf = c.path;
	http_fixture_start(&h);
	snprintf(url, sizeof url, "%s/webhook/", h.url);
	probe(&c, url, &s, &n);
	/* The receiver here is this program: its version is the drainer's,
	 * so no warning. */
	snprintf(want, sizeof want, "ok signed small body: 200 as expected, "
	    "from webhook.fcgi %s (commit %s)\n"
	    "ok signed 250 KB body: 200 as expected, from webhook.fcgi %s "
	    "(commit %s)\n"
	    "ok wrong signature: 401 as expected\n"
	    "ok GET: 405 as expected\n", version_number, version_commit,
	    version_number, version_commit);
	ck_assert_str_eq(s.text, want);
	ck_assert_int_eq(n.fail, 0);
	ck_assert_int_eq(n.warn, 0);
	/* POST, POST, POST, GET, each to the URL; the large one whole. */
	ck_assert_int_eq(http_fixture_requests(&h), 4);
	ck_assert_str_eq(http_fixture_request(&h, 0)->target, "/webhook/");
	ck_assert_str_eq(http_fixture_request(&h, 2)->method, "POST");
	ck_assert_str_eq(http_fixture_request(&h, 3)->method, "GET");
	ck_assert_uint_ge(http_fixture_request(&h, 1)->body_len,
	    PROBE_LARGE_BODY);
	/* The two signed test events are in the inbox (a handler gets them),
	 * the wrongly signed one is not. */
	ck_assert_int_eq(stored_tests(&c), 2);
	http_fixture_stop(&h);
	config_free(&c);
}
END_TEST

START_TEST(a_receiver_with_another_secret_fails_at_edit)
{
	struct receiver rc;
	struct http_fixture h = { .fn = serve, .arg = &rc };
	struct setup_counts n;
	struct config c;
	struct said s;
	char dir[PATH_MAX], conf[PATH_MAX + 16], text[PATH_MAX + 128];

	check_config(tmpdir, "", &c, dir);
	snprintf(conf, sizeof conf, "%s/other.conf", dir);
	snprintf(text, sizeof text, "database = %s\nsecret = "
	    "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD\n", c.database);
	check_write_file(conf, text);
	ck_assert_int_eq(chmod(conf, 0600), 0);
	rc.conf = conf;
	http_fixture_start(&h);
	probe(&c, h.url, &s, &n);
	ck_assert_int_eq(n.fail, 2);
	ck_assert_msg(contains(s.text, "FAIL signed small body: 401, not 200 — "
	    "revisit " PROBE_STEP_EDIT ": the receiver checks with another "
	    "secret"), "%s",
	    s.text);
	ck_assert(contains(s.text, "FAIL signed 250 KB body: 401, not 200"));
	ck_assert(contains(s.text, "ok wrong signature: 401 as expected\n"));
	ck_assert(contains(s.text, "ok GET: 405 as expected\n"));
	ck_assert_int_eq(stored_tests(&c), 0);
	http_fixture_stop(&h);
	config_free(&c);
}
END_TEST

START_TEST(a_max_body_too_small_fails_the_large_one)
{
	struct receiver rc;
	struct http_fixture h = { .fn = serve, .arg = &rc };
	struct setup_counts n;
	struct config c;
	struct said s;
	char dir[PATH_MAX];

	check_config(tmpdir, "max_body = 100000\n", &c, dir);
	rc.conf = c.path;
	http_fixture_start(&h);
	probe(&c, h.url, &s, &n);
	ck_assert_int_eq(n.fail, 1);
	ck_assert_msg(contains(s.text, "FAIL signed 250 KB body: 413, not 200 — "
	    "revisit " PROBE_STEP_EDIT ": max_body in the receiver's config)"),
	    "%s", s.text);
	ck_assert(contains(s.text, "ok signed small body: 200 as expected, "));
	ck_assert_int_eq(stored_tests(&c), 1);
	http_fixture_stop(&h);
	config_free(&c);
}
END_TEST

/* The web server answers by itself (no X-Webhook-Inbox): not ours. */
START_TEST(a_web_server_answering_itself_fails_at_upload)
{
	static const struct http_answer page[] = {
		{ 404, "Content-Type: text/html\r\n", "<h1>Not Found</h1>", 0, 0 },
	};
	struct http_fixture h = { .answers = page, .nanswers = 1 };
	struct setup_counts n;
	struct config c;
	struct said s;
	char dir[PATH_MAX];

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	probe(&c, h.url, &s, &n);
	ck_assert_int_eq(n.fail, 4);
	ck_assert_msg(contains(s.text, "FAIL signed small body: 404 from the web "
	    "server itself, not 200 — revisit " PROBE_STEP_UPLOAD ": the "
	    "wrapper and .htaccess in public_html/webhook/) or " PROBE_STEP_TEST
	    ": the URL names public_html/webhook/webhook.fcgi)\n"), "%s",
	    s.text);
	ck_assert(contains(s.text, "FAIL wrong signature: 404 from the web "
	    "server itself, not 401"));
	ck_assert(contains(s.text, "FAIL GET: 404, not 405 — revisit "
	    PROBE_STEP_UPLOAD));
	http_fixture_stop(&h);
	config_free(&c);
}
END_TEST

START_TEST(nothing_listening_or_no_secret_fails)
{
	struct http_fixture h = { .answers = NULL, .nanswers = 0 };
	struct setup_counts n;
	struct config c;
	struct said s;
	char dir[PATH_MAX], url[64];
	size_t keep;

	check_config(tmpdir, "", &c, dir);
	http_fixture_start(&h);
	snprintf(url, sizeof url, "%s", h.url);
	http_fixture_stop(&h);
	probe(&c, url, &s, &n);
	ck_assert_int_eq(n.fail, 4);
	ck_assert_msg(contains(s.text, "FAIL signed small body: ") &&
	    contains(s.text, " — " PROBE_STEP_TEST ": the URL) or the host's "
	    "firewall\n"),
	    "%s", s.text);
	ck_assert(contains(s.text, "FAIL GET: "));
	/* A config with no whsec_ secret cannot sign: one failure, nothing
	 * sent. */
	keep = c.default_source.nsecrets;
	c.default_source.nsecrets = 0;
	probe(&c, url, &s, &n);
	c.default_source.nsecrets = keep;
	ck_assert_int_eq(n.fail, 1);
	ck_assert(contains(s.text, "FAIL no whsec_ secret in "));
	config_free(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("probe");
	TCase *tc = tcase_create("probe");

	tcase_add_test(tc, a_receiver_set_up_right_passes);
	tcase_add_test(tc, a_receiver_with_another_secret_fails_at_edit);
	tcase_add_test(tc, a_max_body_too_small_fails_the_large_one);
	tcase_add_test(tc, a_web_server_answering_itself_fails_at_upload);
	tcase_add_test(tc, nothing_listening_or_no_secret_fails);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0 || curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
		return 1;
	log_init("test_probe");
	return check_main_in_tmpdir(suite, tmpdir);
}
