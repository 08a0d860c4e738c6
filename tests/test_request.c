/*
 * test_request: lib/request.c — the answer's bytes, the plain-CGI
 * implementation (environment, stdin, stdout: each test runs in its own
 * forked process, so redirecting them is its own business), and the fake
 * that the receive tests and harnesses stand on.  The FastCGI one runs
 * behind real servers in the end-to-end suites.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/request.h"
#include "lib/util.h"
#include "tests/check_common.h"

static char dir[] = "/tmp/webhook-test-request-XXXXXX";

/* A far deadline (monotonic ns). */
#define LATER	(util_mono_ns() + 60 * (int64_t)1000000000)

static void
fake_init(struct request *r, struct request_fake *f,
    const char *const *params, const char *body)
{
	memset(f, 0, sizeof *f);
	f->params = params;
	f->body = body;
	f->body_len = body ? strlen(body) : 0;
	f->late_at = -1;
	f->fail_at = -1;
	request_init_fake(r, f);
}

START_TEST(respond_head_and_text)
{
	struct request r;
	struct request_fake f;

	fake_init(&r, &f, NULL, NULL);
	request_respond(&r, 405, "Method Not Allowed", "Allow: POST\r\n",
	    "method not allowed\n");
	ck_assert_str_eq(f.out, "Status: 405 Method Not Allowed\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 19\r\n"
	    "X-Webhook-Inbox: receiver\r\nAllow: POST\r\n\r\n"
	    "method not allowed\n");
	ck_assert_int_eq(f.writes, 1);
}
END_TEST

static int
collect(void *arg, const char *v)
{
	struct buf *b = arg;

	return buf_printf(b, "[%s]", v);
}

static int
first_only(void *arg, const char *v)
{
	(void)v;
	++*(int *)arg;
	return -1;
}

START_TEST(fake_params_first_and_every)
{
	static const char *const p[] = { "A=1", "AB=2", "A=3", "B=", NULL };
	struct request r;
	struct request_fake f;
	struct buf b;
	int n = 0;

	fake_init(&r, &f, p, NULL);
	ck_assert_str_eq(request_param(&r, "A"), "1");
	ck_assert_str_eq(request_param(&r, "AB"), "2");
	ck_assert_str_eq(request_param(&r, "B"), "");
	ck_assert_ptr_null(request_param(&r, "C"));
	buf_init(&b, 100);
	ck_assert_int_eq(request_param_each(&r, "A", collect, &b), 0);
	ck_assert_str_eq(b.data, "[1][3]");
	buf_free(&b);
	/* A callback's -1 stops the walk and is returned. */
	ck_assert_int_eq(request_param_each(&r, "A", first_only, &n), -1);
	ck_assert_int_eq(n, 1);
}
END_TEST

START_TEST(fake_reads_in_chunks_then_fails_as_told)
{
	struct request r;
	struct request_fake f;
	char buf[16];

	fake_init(&r, &f, NULL, "0123456789");
	f.chunk = 4;
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 4);
	ck_assert_int_eq(request_read(&r, buf, 2, LATER), 2);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 4);
	ck_assert_int_eq(memcmp(buf, "6789", 4), 0);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 0);

	fake_init(&r, &f, NULL, "0123456789");
	f.late_at = 3;
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER), 3);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER),
	    REQUEST_READ_LATE);

	fake_init(&r, &f, NULL, "0123456789");
	f.fail_at = 0;
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, LATER),
	    REQUEST_READ_ERROR);

	/* Like FastCGI, a stream read past its deadline is late. */
	fake_init(&r, &f, NULL, "0123456789");
	f.body_to_eof = 1;
	request_init_fake(&r, &f);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, util_mono_ns() - 1),
	    REQUEST_READ_LATE);
}
END_TEST

START_TEST(discard_once_and_not_after_the_body)
{
	struct request r;
	struct request_fake f;

	fake_init(&r, &f, NULL, "body");
	request_discard_input(&r);
	ck_assert(f.discarded);
	ck_assert_int_eq(f.consumed, 4);
	f.discarded = 0;
	request_discard_input(&r);
	ck_assert(!f.discarded);

	fake_init(&r, &f, NULL, "body");
	r.body_read = 1;
	request_discard_input(&r);
	ck_assert(!f.discarded);
}
END_TEST

/* stdin from a file holding `text`; stdout to DIR/NAME.out. */
static void
cgi_files(const char *name, const char *text)
{
	char in[256], out[256];

	snprintf(in, sizeof in, "%s/%s.in", dir, name);
	snprintf(out, sizeof out, "%s/%s.out", dir, name);
	check_write_file(in, text);
	ck_assert_ptr_nonnull(freopen(in, "r", stdin));
	ck_assert_ptr_nonnull(freopen(out, "w", stdout));
}

static char *
cgi_output(const char *name)
{
	char out[256];
	size_t len;

	fflush(stdout);
	snprintf(out, sizeof out, "%s/%s.out", dir, name);
	return util_read_file(out, 1 << 16, &len);
}

START_TEST(cgi_params_from_the_environment)
{
	struct request r;
	struct buf b;

	setenv("HTTP_WEBHOOK_SIGNATURE", "v1,abc", 1);
	unsetenv("HTTP_WEBHOOK_ID");
	request_init_cgi(&r);
	ck_assert(!r.long_lived && !r.body_to_eof);
	ck_assert_str_eq(request_param(&r, "HTTP_WEBHOOK_SIGNATURE"), "v1,abc");
	ck_assert_ptr_null(request_param(&r, "HTTP_WEBHOOK_ID"));
	buf_init(&b, 100);
	ck_assert_int_eq(request_param_each(&r, "HTTP_WEBHOOK_SIGNATURE",
	    collect, &b), 0);
	ck_assert_str_eq(b.data, "[v1,abc]");
	buf_reset(&b);
	ck_assert_int_eq(request_param_each(&r, "HTTP_WEBHOOK_ID", collect, &b),
	    0);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
}
END_TEST

/* A deadline far enough not to matter. */
static int64_t
later(void)
{
	return util_mono_ns() + 30 * (int64_t)1000000000;
}

START_TEST(cgi_reads_stdin_writes_stdout)
{
	struct request r;
	char buf[16], *out;

	cgi_files("rw", "hello");
	request_init_cgi(&r);
	ck_assert_int_eq(request_read(&r, buf, 3, later()), 3);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 2);
	ck_assert_int_eq(memcmp(buf, "lo", 2), 0);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 0);
	request_respond(&r, 200, "OK", NULL, "stored\n");
	out = cgi_output("rw");
	ck_assert_str_eq(out, "Status: 200 OK\r\nContent-Type: text/plain\r\n"
	    "Content-Length: 7\r\nX-Webhook-Inbox: receiver\r\n\r\nstored\n");
	free(out);
}
END_TEST

START_TEST(cgi_read_error)
{
	struct request r;
	char buf[16];

	request_init_cgi(&r);
	close(0);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()),
	    REQUEST_READ_ERROR);
}
END_TEST

/* Issue 21 item 1: plain CGI has the request's deadline too.  A client
 * that sends nothing more (a pipe kept open, nothing written) gets
 * REQUEST_READ_LATE at the deadline, not a process held until the web
 * server's own timeout. */
START_TEST(cgi_read_deadline)
{
	struct request r;
	char buf[16];
	int p[2];
	int64_t t0;

	ck_assert_int_eq(pipe(p), 0);
	ck_assert_int_eq(dup2(p[0], 0), 0);
	close(p[0]);
	ck_assert_int_eq(write(p[1], "ab", 2), 2);
	request_init_cgi(&r);
	t0 = util_mono_ns();
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, t0 + 200000000), 2);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, t0 + 200000000),
	    REQUEST_READ_LATE);
	ck_assert_int_ge(util_mono_ns() - t0, 190000000);
	close(p[1]);
}
END_TEST

/* Discarding reads CONTENT_LENGTH bytes, not what follows on stdin. */
START_TEST(cgi_discard_up_to_content_length)
{
	struct request r;
	char buf[16];

	cgi_files("discard", "0123456789");
	setenv("CONTENT_LENGTH", "6", 1);
	request_init_cgi(&r);
	request_discard_input(&r);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 4);
	ck_assert_int_eq(memcmp(buf, "6789", 4), 0);

	/* No CONTENT_LENGTH: to the end. */
	cgi_files("discard2", "0123456789");
	unsetenv("CONTENT_LENGTH");
	request_init_cgi(&r);
	request_discard_input(&r);
	ck_assert_int_eq(request_read(&r, buf, sizeof buf, later()), 0);
}
END_TEST

static Suite *
request_suite(void)
{
	Suite *s = suite_create("request");
	TCase *tc = tcase_create("request");

	tcase_add_test(tc, respond_head_and_text);
	tcase_add_test(tc, fake_params_first_and_every);
	tcase_add_test(tc, fake_reads_in_chunks_then_fails_as_told);
	tcase_add_test(tc, discard_once_and_not_after_the_body);
	tcase_add_test(tc, cgi_params_from_the_environment);
	tcase_add_test(tc, cgi_reads_stdin_writes_stdout);
	tcase_add_test(tc, cgi_read_error);
	tcase_add_test(tc, cgi_read_deadline);
	tcase_add_test(tc, cgi_discard_up_to_content_length);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(request_suite, dir);
}
