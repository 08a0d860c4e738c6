/*
 * http_fixture: the tests' HTTP server (tests/http_fixture.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <check.h>

#include "tests/http_fixture.h"

/* How long a client may take to send its request, ms: a test's client is
 * in the same process, so only a broken one takes long. */
#define READ_MS		10000

/* Wait until fd is readable or the fixture is told to stop; 1 readable,
 * 0 stopped or ms passed (-1: no limit). */
static int
wait_readable(struct http_fixture *h, int fd, int ms)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { h->stop[0], POLLIN, 0 } };
	int n;

	do
		n = poll(p, 2, ms);
	while (n == -1 && errno == EINTR);
	if (n <= 0 || (p[1].revents & (POLLIN | POLLHUP)))
		return 0;
	return 1;
}

static void
send_all(int fd, const char *p, size_t n)
{
	ssize_t k;

	while (n > 0) {
		if ((k = send(fd, p, n, MSG_NOSIGNAL)) <= 0) {
			if (k == -1 && errno == EINTR)
				continue;
			return;		/* the client left: nothing to do */
		}
		p += k;
		n -= (size_t)k;
	}
}

/* Read one request from fd into rq; 0, or -1 (the client left, or too
 * large: then *too_large). */
static int
read_request(struct http_fixture *h, int fd, struct http_request *rq,
    int *too_large)
{
	char *buf, *end, *p, *line;
	size_t cap = 16384 + HTTP_FIXTURE_BODY_MAX, len = 0, want = 0, hlen;
	ssize_t k;
	int rc = -1;

	*too_large = 0;
	memset(rq, 0, sizeof *rq);
	if ((buf = malloc(cap + 1)) == NULL)
		return -1;
	/* The head. */
	while ((end = len ? memmem(buf, len, "\r\n\r\n", 4) : NULL) == NULL) {
		if (len == 16384 || !wait_readable(h, fd, READ_MS) ||
		    (k = recv(fd, buf + len, 16384 - len, 0)) <= 0)
			goto out;
		len += (size_t)k;
	}
	hlen = (size_t)(end - buf) + 4;
	buf[hlen - 2] = '\0';
	if (sscanf(buf, "%15s %2047s", rq->method, rq->target) != 2 ||
	    (line = strstr(buf, "\r\n")) == NULL)
		goto out;
	snprintf(rq->head, sizeof rq->head, "%s", line + 2);
	for (p = rq->head; (p = strcasestr(p, "content-length:")) != NULL; p++)
		if (p == rq->head || p[-1] == '\n')
			want = strtoul(p + 15, NULL, 10);
	if (want > HTTP_FIXTURE_BODY_MAX) {
		*too_large = 1;
		want = 0;
	}
	/* libcurl asks before a large body; say yes at once rather than let
	 * it wait a second for nothing. */
	if (strcasestr(rq->head, "expect: 100-continue") != NULL)
		send_all(fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	/* The body. */
	len -= hlen;
	memmove(buf, buf + hlen, len);
	while (len < want) {
		if (!wait_readable(h, fd, READ_MS) ||
		    (k = recv(fd, buf + len, want - len, 0)) <= 0)
			goto out;
		len += (size_t)k;
	}
	buf[want] = '\0';
	rq->body = buf;
	rq->body_len = want;
	buf = NULL;
	rc = 0;
out:
	free(buf);
	return rc;
}

static void
answer(struct http_fixture *h, int fd, const struct http_request *rq,
    int too_large)
{
	static const struct http_answer none = { 500, "", "no answer", 0, 0 };
	struct http_answer a = { 200, "", NULL, 0, 0 };
	char head[4096], *scratch;
	size_t blen;
	int i, n;

	if ((scratch = malloc(65536)) == NULL)
		return;
	pthread_mutex_lock(&h->mu);
	i = h->requests++;
	pthread_mutex_unlock(&h->mu);
	if (too_large)
		a = (struct http_answer){ 413, "", "too large", 0, 0 };
	else if (h->fn != NULL)
		h->fn(h->arg, rq, &a, scratch, 65536);
	else if (h->nanswers > 0)
		a = h->answers[(size_t)i < h->nanswers ? (size_t)i :
		    h->nanswers - 1];
	else
		a = none;
	if (a.delay_ms > 0)
		(void)wait_readable(h, -1, a.delay_ms);
	blen = a.body == NULL ? 0 : a.body_len ? a.body_len : strlen(a.body);
	n = snprintf(head, sizeof head, "HTTP/1.1 %d Test\r\nContent-Length: "
	    "%zu\r\nConnection: close\r\n%s\r\n", a.status, blen,
	    a.headers ? a.headers : "");
	if (n > 0 && (size_t)n < sizeof head) {
		send_all(fd, head, (size_t)n);
		if (strcmp(rq->method, "HEAD") != 0)
			send_all(fd, a.body ? a.body : "", blen);
	}
	free(scratch);
}

static void *
serve(void *arg)
{
	struct http_fixture *h = arg;
	struct http_request rq;
	int fd, too_large, i;

	while (wait_readable(h, h->listen_fd, -1)) {
		if ((fd = accept4(h->listen_fd, NULL, NULL, SOCK_CLOEXEC)) == -1)
			continue;
		if (read_request(h, fd, &rq, &too_large) == 0) {
			pthread_mutex_lock(&h->mu);
			i = h->requests;
			if (i < HTTP_FIXTURE_KEEP) {
				h->seen[i] = rq;
				rq.body = NULL;
			}
			pthread_mutex_unlock(&h->mu);
			answer(h, fd, i < HTTP_FIXTURE_KEEP ? &h->seen[i] : &rq,
			    too_large);
			free(rq.body);
		}
		/* The client reads to the end: close after the answer. */
		shutdown(fd, SHUT_WR);
		close(fd);
	}
	return NULL;
}

void
http_fixture_start(struct http_fixture *h)
{
	struct sockaddr_in sa;
	socklen_t salen = sizeof sa;

	memset(h->seen, 0, sizeof h->seen);
	h->requests = 0;
	ck_assert_int_eq(pthread_mutex_init(&h->mu, NULL), 0);
	ck_assert_int_eq(pipe2(h->stop, O_CLOEXEC), 0);
	ck_assert_int_ne(h->listen_fd = socket(AF_INET, SOCK_STREAM |
	    SOCK_CLOEXEC, 0), -1);
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(h->listen_fd, (struct sockaddr *)&sa, sizeof sa), 0);
	ck_assert_int_eq(listen(h->listen_fd, 16), 0);
	ck_assert_int_eq(getsockname(h->listen_fd, (struct sockaddr *)&sa,
	    &salen), 0);
	h->port = ntohs(sa.sin_port);
	snprintf(h->url, sizeof h->url, "http://127.0.0.1:%d", h->port);
	ck_assert_int_eq(pthread_create(&h->thread, NULL, serve, h), 0);
}

void
http_fixture_stop(struct http_fixture *h)
{
	int i;

	ck_assert_int_eq(close(h->stop[1]), 0);	/* POLLHUP: stop */
	ck_assert_int_eq(pthread_join(h->thread, NULL), 0);
	close(h->stop[0]);
	close(h->listen_fd);
	for (i = 0; i < HTTP_FIXTURE_KEEP; i++)
		free(h->seen[i].body);
	memset(h->seen, 0, sizeof h->seen);
	pthread_mutex_destroy(&h->mu);
}

int
http_fixture_requests(struct http_fixture *h)
{
	int n;

	pthread_mutex_lock(&h->mu);
	n = h->requests;
	pthread_mutex_unlock(&h->mu);
	return n;
}

const struct http_request *
http_fixture_request(struct http_fixture *h, int i)
{
	ck_assert_int_lt(i, http_fixture_requests(h));
	ck_assert_int_lt(i, HTTP_FIXTURE_KEEP);
	return &h->seen[i];
}

const char *
http_header(const struct http_request *rq, const char *name, char *out,
    size_t outsz)
{
	size_t n = strlen(name);
	const char *p, *v, *eol;

	for (p = rq->head; *p != '\0'; p = eol + 2) {
		if ((eol = strstr(p, "\r\n")) == NULL)
			return NULL;	/* every line ends in CRLF */
		if (strncasecmp(p, name, n) == 0 && p[n] == ':') {
			for (v = p + n + 1; *v == ' ' || *v == '\t'; v++)
				;
			snprintf(out, outsz, "%.*s", (int)(eol - v), v);
			return out;
		}
	}
	return NULL;
}
