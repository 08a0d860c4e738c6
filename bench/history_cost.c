/*
 * history_cost: what the run's history (docs/report.md "Cost":
 * lib/report/runrec.c's counters and histograms per event, one transaction
 * after the run) adds to a drainer run, per event.  The same work twice:
 * drain_run on EVENTS pending events (handler `true`, one object each, so
 * none waits for another), once with the history hooks webhook-drain
 * installs (runrec_event per outcome, runrec_finish and runrec_save after
 * the run), once without any hook.  Each round starts from a fresh inbox of
 * the same events; the two ways alternate, ROUNDS times each, and the
 * median is kept.
 *
 * Measured: CPU (user + system) of this process and of its children (the
 * handlers), per event; and the history's own share, the thread CPU time
 * spent inside the runrec calls (CLOCK_THREAD_CPUTIME_ID around each),
 * which no handler's noise touches.
 *
 * Usage: history_cost DIR [EVENTS [ROUNDS]]   (defaults 2000, 3)
 * Prints "with EVENTS cpu_us_per_event", "without EVENTS cpu_us_per_event",
 * "history EVENTS cpu_us_per_event" (medians), one line each.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/program/config.h"
#include "lib/drain/drain.h"
#include "lib/store/event.h"
#include "lib/store/inbox.h"
#include "lib/report/runrec.h"
#include "lib/common/util.h"

#define MAXROUNDS	15
#define BATCH		64

static double
usec(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

/* CPU µs of this process and its waited-for children so far. */
static double
cpu_now(void)
{
	struct rusage s, c;

	getrusage(RUSAGE_SELF, &s);
	getrusage(RUSAGE_CHILDREN, &c);
	return usec(&s.ru_utime) + usec(&s.ru_stime) + usec(&c.ru_utime) +
	    usec(&c.ru_stime);
}

static double
thread_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

struct hist {
	struct runrec	rec;
	double		us;	/* thread CPU inside runrec calls */
};

static void
on_event(void *arg, const struct drain_event *ev)
{
	struct hist *h = arg;
	double t = thread_us();

	runrec_event(&h->rec, ev, util_now_ns());
	h->us += thread_us() - t;
}

/* n pending events, one object each, into a fresh inbox at db. */
static int
fill(const char *db, int n, struct buf *err)
{
	static char body[512];
	struct inbox_options o = { 5000, INBOX_SYNC_NORMAL, 0, 0, 0, 0, 0 };
	struct event_fields f[BATCH];
	struct inbox_delivery d[BATCH];
	char ids[BATCH][40];
	struct inbox *ib;
	int i, k, len, rc = 0;

	unlink(db);
	if (inbox_open(db, &o, &ib, err) != INBOX_OK)
		return -1;
	for (i = 0; i < n && rc == 0; i += BATCH) {
		struct inbox_batch b;
		int m = n - i < BATCH ? n - i : BATCH;

		memset(&b, 0, sizeof b);
		for (k = 0; k < m; k++) {
			snprintf(ids[k], sizeof ids[k], "msg_hist%09d", i + k);
			len = snprintf(body, sizeof body, "{\"type\":\"client.updated"
			    "\",\"createdAt\":\"2026-11-30T10:00:00.000Z\",\"data\":"
			    "{\"object\":\"client\",\"id\":\"cli_%09d\"}}", i + k);
			if (event_extract(ids[k], body, (size_t)len, &f[k]) == -1)
				return -1;
			d[k] = (struct inbox_delivery){ .webhook_id = ids[k],
			    .webhook_timestamp = 1764496800, .secret_fp = "fp",
			    .body = body, .body_len = (size_t)len,
			    .fields = &f[k] };
			/* body is reused: store this one before the next */
			b.d = &d[k];
			b.n = 1;
			if (inbox_store_batch(ib, &b, err) != INBOX_OK)
				rc = -1;
			event_fields_free(&f[k]);
			if (rc)
				break;
		}
	}
	inbox_close(ib);
	return rc;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

int
main(int argc, char **argv)
{
	static struct hist h;
	double with[MAXROUNDS], without[MAXROUNDS], own[MAXROUNDS];
	struct drain_result res;
	struct config c;
	struct buf err, conf, db;
	FILE *f;
	int n, rounds, r, way;

	if (argc < 2 || argc > 4) {
		fprintf(stderr, "usage: history_cost DIR [EVENTS [ROUNDS]]\n");
		return 2;
	}
	/* As webhook-drain: a handler that exits without reading its stdin
	 * must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	n = argc > 2 ? atoi(argv[2]) : 2000;
	rounds = argc > 3 ? atoi(argv[3]) : 3;
	if (n < 1 || rounds < 1 || rounds > MAXROUNDS || sodium_init() < 0)
		return 2;
	buf_init(&err, BUF_ERR_MAX);
	buf_init(&conf, 8192);
	buf_init(&db, 8192);
	if (buf_printf(&conf, "%s/history.conf", argv[1]) == -1 ||
	    buf_printf(&db, "%s/history.db", argv[1]) == -1 ||
	    (f = fopen(conf.data, "w")) == NULL)
		return 1;
	fprintf(f, "database = %s\nsecret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
	    "handler = true\nsettle = 0s\nsynchronous = NORMAL\n", db.data);
	fclose(f);
	if (config_load(conf.data, &c, &err) == -1) {
		fprintf(stderr, "history_cost: %s\n", err.data);
		return 1;
	}
	for (r = 0; r < rounds; r++) {
		for (way = 0; way < 2; way++) {
			struct drain_hooks hk = { way ? on_event : NULL, NULL, &h };
			double c0, t;

			if (fill(db.data, n, &err) == -1) {
				fprintf(stderr, "history_cost: %s\n", err.data);
				return 1;
			}
			memset(&h, 0, sizeof h);
			c0 = cpu_now();
			if (way) {
				t = thread_us();
				runrec_start(&h.rec, util_now_ns());
				h.us += thread_us() - t;
			}
			if (drain_run(&c, NULL, &hk, &res) != DRAIN_RAN ||
			    res.n.done != n) {
				fprintf(stderr, "history_cost: the run did not hand "
				    "out every event\n");
				return 1;
			}
			if (way) {
				t = thread_us();
				runrec_finish(&h.rec, &res, util_now_ns());
				if (runrec_save(&h.rec, &c, &err) == -1) {
					fprintf(stderr, "history_cost: %s\n", err.data);
					return 1;
				}
				runrec_free(&h.rec);
				h.us += thread_us() - t;
				with[r] = (cpu_now() - c0) / n;
				own[r] = h.us / n;
			} else {
				without[r] = (cpu_now() - c0) / n;
			}
		}
	}
	qsort(with, (size_t)rounds, sizeof with[0], cmp);
	qsort(without, (size_t)rounds, sizeof without[0], cmp);
	qsort(own, (size_t)rounds, sizeof own[0], cmp);
	printf("with %d %.1f\nwithout %d %.1f\nhistory %d %.2f\n", n,
	    with[rounds / 2], n, without[rounds / 2], n, own[rounds / 2]);
	config_free(&c);
	buf_free(&err);
	buf_free(&conf);
	buf_free(&db);
	return 0;
}
