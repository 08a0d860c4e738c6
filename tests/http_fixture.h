/*
 * http_fixture: a small HTTP/1.1 server in a thread of the test, on
 * 127.0.0.1 at a port the kernel picks, for the unit tests of what talks
 * HTTP (lib/drain/api.c, lib/drain/ping.c, lib/operator/probe.c).  One
 * request per connection (it answers "Connection: close"), one connection
 * at a time; every request is recorded for the test to look at.  What it
 * answers is the test's: a list of canned answers given in turn, or a
 * function of the request.
 */
#ifndef WEBHOOK_TESTS_HTTP_FIXTURE_H
#define WEBHOOK_TESTS_HTTP_FIXTURE_H

#include <pthread.h>
#include <stddef.h>

/* Requests kept, the first ones; a request's body kept, bytes. */
#define HTTP_FIXTURE_KEEP	16
#define HTTP_FIXTURE_BODY_MAX	(1 << 20)

/* One request as it came (a request larger than the fixture reads is
 * answered 413 and recorded with what was read). */
struct http_request {
	char	 method[16];
	char	 target[2048];
	char	 head[8192];	/* header lines, "Name: value\r\n" each */
	char	*body;		/* body_len bytes, NUL after; owned */
	size_t	 body_len;
};

/* An answer: status, extra header lines ("Name: value\r\n" each; "" for
 * none), body (NULL: empty; body_len 0: strlen), after a wait of
 * delay_ms (ended early when the fixture stops). */
struct http_answer {
	int		 status;
	const char	*headers;
	const char	*body;
	size_t		 body_len;
	int		 delay_ms;
};

/* Answer rq in *a (whose strings must outlive the call: the fixture writes
 * them after it returns; `scratch` is the fixture's own room for them). */
typedef void	(*http_serve_fn)(void *arg, const struct http_request *rq,
		    struct http_answer *a, char *scratch, size_t scratchsz);

struct http_fixture {
	int		 port;
	char		 url[64];	/* "http://127.0.0.1:PORT" */
	/* What it answers: fn when set, else answers[i] for the i-th
	 * request (the last one for every later request). */
	http_serve_fn	 fn;
	void		*arg;
	const struct http_answer *answers;
	size_t		 nanswers;
	/* Private. */
	int		 listen_fd, stop[2];
	pthread_t	 thread;
	pthread_mutex_t	 mu;
	int		 requests;
	struct http_request seen[HTTP_FIXTURE_KEEP];
};

/* Start serving in a thread; set fn/arg or answers/nanswers first (the
 * rest of *h is set here).  Fails the test when it cannot. */
void	http_fixture_start(struct http_fixture *h);
/* Stop it (a request in hand is abandoned) and free what it recorded;
 * the port then refuses connections. */
void	http_fixture_stop(struct http_fixture *h);

/* How many requests came so far. */
int	http_fixture_requests(struct http_fixture *h);
/* The i-th request (from 0; i < HTTP_FIXTURE_KEEP), valid until stop. */
const struct http_request *http_fixture_request(struct http_fixture *h, int i);

/* The value of header `name` (case-insensitive) of rq, copied into out
 * (outsz bytes); NULL when absent. */
const char *http_header(const struct http_request *rq, const char *name,
	    char *out, size_t outsz);

#endif
