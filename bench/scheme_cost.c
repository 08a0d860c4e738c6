/*
 * scheme_cost: the CPU a delivery's check costs the receiver, per scheme
 * (bench/schemes.py runs it beside its rows).  No web server, no store:
 * the deliveries bench/run's rows send (files written by bench/signed.py
 * gen or bench/signed_schemes.py gen: "LENGTH\n" + raw HTTP request, each
 * distinct) are parsed once into headers and body, then checked as
 * lib/receive/receive.c checks them, ROUNDS times over, and the thread's
 * CPU time (CLOCK_THREAD_CPUTIME_ID) is divided by the checks:
 *
 *   standard  the default source, NAME a [source NAME]: the one path
 *             every source takes (lib/scheme/scheme.h): scheme_verify
 *             (its provider's) and scheme_event_read (its fields and key,
 *             the content's digest where the id is unsigned)
 *
 *   scheme_cost CONF NAME REQFILE [ROUNDS]
 *
 * prints one line: "NAME checks=N us_per_check=X".  Exit 1 when a check
 * fails (a delivery that does not verify is not a measurement).
 */
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "lib/scheme/scheme.h"
#include "lib/common/signature.h"
#include "lib/program/config.h"
#include "lib/store/event.h"
#include "lib/store/inbox.h"

#define MAX_HEADERS	32
#define MAX_REQS	4096

struct req {
	char		*name[MAX_HEADERS], *value[MAX_HEADERS];
	size_t		 n;
	const char	*query;		/* the request line's, or NULL */
	const char	*body;
	size_t		 body_len;
};

static const char *
get(void *arg, const char *name)
{
	const struct req *r = arg;
	size_t i;

	for (i = 0; i < r->n; i++)
		if (strcasecmp(r->name[i], name) == 0)
			return r->value[i];
	return NULL;
}

/* Split one raw request (NUL-terminated copy) into headers and body. */
static int
parse(char *raw, size_t len, struct req *r)
{
	char *p = strstr(raw, "\r\n"), *end = strstr(raw, "\r\n\r\n"), *line;

	if (p == NULL || end == NULL)
		return -1;
	r->n = 0;
	r->query = NULL;
	r->body = end + 4;
	r->body_len = len - (size_t)(end + 4 - raw);
	*end = '\0';
	/* "POST /path?query HTTP/1.1": the query, as QUERY_STRING. */
	*p = '\0';
	{
		char *q = strchr(raw, '?'), *sp;

		if (q != NULL && (sp = strchr(q, ' ')) != NULL) {
			*sp = '\0';
			r->query = q + 1;
		}
	}
	for (line = p + 2; line != NULL && *line != '\0'; ) {
		char *next = strstr(line, "\r\n"), *colon;

		if (next != NULL)
			*next = '\0';
		colon = strchr(line, ':');
		if (colon == NULL || r->n == MAX_HEADERS)
			return -1;
		*colon = '\0';
		r->name[r->n] = line;
		r->value[r->n++] = colon + 1 + (colon[1] == ' ');
		line = next != NULL ? next + 2 : NULL;
	}
	return 0;
}

static double
cpu_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* What the receiver does with a delivery between its body and the
 * store (lib/receive/receive.c): verify, then read the event. */
static int
check(const struct config_source *src, struct req *r)
{
	const struct scheme_headers h = { get, r, r->query };
	int named = strcmp(src->name, INBOX_DEFAULT_SOURCE) != 0;
	struct scheme_result res;
	struct scheme_event ev;
	const char *why;
	int rc;

	if (scheme_verify(src->scheme, &src->params, src->secrets,
	    src->nsecrets, &h, (const unsigned char *)r->body, r->body_len,
	    (int64_t)time(NULL), &res) != 0 || res.outcome != SCHEME_OK)
		return -1;
	rc = scheme_event_read(src->scheme, &src->params, &src->locate,
	    named ? src->name : NULL, &h, (const unsigned char *)r->body,
	    r->body_len, &ev, &why);
	scheme_event_free(&ev);
	return rc;
}

int
main(int argc, char **argv)
{
	struct config c;
	struct buf err = { 0 };
	const struct config_source *src = NULL;
	static struct req reqs[MAX_REQS];
	size_t nreq = 0, i, rounds = 20, k;
	FILE *f;
	double t0, t1;
	unsigned long len;

	if (argc < 4 || argc > 5) {
		fprintf(stderr, "usage: scheme_cost CONF NAME REQFILE [ROUNDS]\n");
		return 2;
	}
	if (argc == 5)
		rounds = strtoul(argv[4], NULL, 10);
	if (sodium_init() < 0 || config_load(argv[1], &c, &err) == -1) {
		fprintf(stderr, "scheme_cost: %s\n", err.data ? err.data : "init");
		return 2;
	}
	src = &c.default_source;
	if (strcmp(argv[2], "standard") != 0 &&
	    (src = config_source_find(&c, argv[2])) == NULL) {
		fprintf(stderr, "scheme_cost: no [source %s]\n", argv[2]);
		return 2;
	}
	if ((f = fopen(argv[3], "rb")) == NULL) {
		perror(argv[3]);
		return 2;
	}
	while (nreq < MAX_REQS && fscanf(f, "%lu\n", &len) == 1) {
		char *raw = malloc(len + 1);

		if (raw == NULL || fread(raw, 1, len, f) != len)
			return 2;
		raw[len] = '\0';
		if (parse(raw, len, &reqs[nreq]) == -1) {
			fprintf(stderr, "scheme_cost: request %zu unparsable\n", nreq);
			return 2;
		}
		nreq++;
	}
	fclose(f);
	if (nreq == 0)
		return 2;
	/* Once untimed (caches, lazy initialisation), then timed. */
	for (i = 0; i < nreq; i++)
		if (check(src, &reqs[i]) == -1) {
			fprintf(stderr, "scheme_cost: %s: delivery %zu does not "
			    "verify\n", argv[2], i);
			return 1;
		}
	t0 = cpu_now();
	for (k = 0; k < rounds; k++)
		for (i = 0; i < nreq; i++)
			if (check(src, &reqs[i]) == -1)
				return 1;
	t1 = cpu_now();
	printf("%s checks=%zu us_per_check=%.2f\n", argv[2], nreq * rounds,
	    (t1 - t0) * 1e6 / (double)(nreq * rounds));
	config_free(&c);
	return 0;
}
