/*
 * commit_cost: what one stored delivery costs the inbox alone, by batch
 * size (issue 5's analysis in bench/RESULTS.md).  No web server, no
 * FastCGI, no signature: deliveries shaped like bench/signed.py's (1 KiB
 * body, ids in two ascending runs, one of 100000 clients at random) go
 * through the receiver's own path, lib/inbox.c's inbox_store_batch, in
 * batches of N, and the process's CPU time (getrusage: user + system) is
 * divided by the rows stored.  Two ways:
 *
 *   durable   group commit with synchronous = FULL, as webhook.fcgi runs:
 *             COMMIT, then one fdatasync of the WAL per batch
 *   no sync   synchronous = NORMAL without group commit: in WAL mode
 *             COMMIT does not sync at all (a power cut may lose it) —
 *             the difference is what the per-batch sync costs
 *
 * Checkpoints run every INBOX_CHECKPOINT_FRAMES, as webhook.fcgi's
 * checkpointer does, and are counted.  Each (way, N) starts from a fresh
 * database filled with `prefill` rows first (not counted).
 *
 * Usage: commit_cost DIR [ROWS [PREFILL]]   (defaults 20000, 20000)
 * Prints one line per (way, N): "way N us_per_row user_us sys_us".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/event.h"
#include "lib/inbox.h"

#define BODY	1024
#define MAXN	64

static double
usec(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

static int
store(struct inbox *ib, int n, long *seq, int checkpointing, struct buf *err)
{
	static char ids[MAXN][48], bodies[MAXN][BODY + 1];
	struct event_fields f[MAXN];
	struct inbox_delivery d[MAXN] = { { 0 } };
	int changed[MAXN], i, rc = 0;
	int64_t stored;

	for (i = 0; i < n; i++) {
		long s = ++*seq;
		int len;

		snprintf(ids[i], sizeof ids[i], "msg_bench%02ld%09ld", s % 2, s);
		len = snprintf(bodies[i], sizeof bodies[i], "{\"type\":\"client.updated\","
		    "\"createdAt\":\"2026-11-30T10:00:00.000Z\",\"data\":{\"object\":"
		    "\"client\",\"id\":\"cli_%08d\",\"updated_at\":"
		    "\"2026-11-29T10:00:00.000Z\",\"notes\":\"", rand() % 100000);
		memset(bodies[i] + len, 'x', (size_t)(BODY - len - 3));
		memcpy(bodies[i] + BODY - 3, "\"}}", 3);
		if (event_extract(ids[i], bodies[i], BODY, &f[i]) == -1)
			return -1;
		d[i] = (struct inbox_delivery){ ids[i], 1764496800, "fp", bodies[i],
		    BODY, &f[i] };
	}
	if (inbox_store_batch(ib, d, (size_t)n, NULL, NULL, NULL, &stored,
	    changed, err) != INBOX_OK || stored != n)
		rc = -1;
	for (i = 0; i < n; i++)
		event_fields_free(&f[i]);
	if (rc == 0 && checkpointing)
		rc = inbox_maintain(ib, err) == INBOX_OK ? 0 : -1;
	return rc;
}

static int
run(const char *dir, const char *way, int durable, int n, long rows,
    long prefill)
{
	struct inbox_options o;
	struct rusage r0, r1;
	struct inbox *ib;
	struct buf err, path;
	long seq = 0, done;
	int rc = -1;

	buf_init(&err, 4096);
	buf_init(&path, 8192);
	if (buf_printf(&path, "%s/cost-%s-%d.db", dir, way, n) == -1)
		goto out;
	memset(&o, 0, sizeof o);
	o.busy_timeout_ms = 5000;
	o.synchronous = durable ? CONFIG_SYNC_FULL : CONFIG_SYNC_NORMAL;
	o.group_commit = durable;
	if (inbox_open(path.data, &o, &ib, &err) != INBOX_OK) {
		fprintf(stderr, "commit_cost: %s\n", err.data);
		goto out;
	}
	for (done = 0; done < prefill; done += MAXN)
		if (store(ib, MAXN, &seq, durable, &err) == -1)
			goto fail;
	getrusage(RUSAGE_SELF, &r0);
	for (done = 0; done < rows; done += n)
		if (store(ib, n, &seq, durable, &err) == -1)
			goto fail;
	getrusage(RUSAGE_SELF, &r1);
	printf("%s %d %.1f %.1f %.1f\n", way, n,
	    (usec(&r1.ru_utime) - usec(&r0.ru_utime) + usec(&r1.ru_stime) -
	    usec(&r0.ru_stime)) / (double)done,
	    (usec(&r1.ru_utime) - usec(&r0.ru_utime)) / (double)done,
	    (usec(&r1.ru_stime) - usec(&r0.ru_stime)) / (double)done);
	fflush(stdout);
	rc = 0;
fail:
	if (rc != 0)
		fprintf(stderr, "commit_cost: %s\n", err.data ? err.data : "failed");
	inbox_close(ib);
out:
	buf_free(&err);
	buf_free(&path);
	return rc;
}

int
main(int argc, char **argv)
{
	static const int sizes[] = { 1, 4, 8, 32, 64 };
	long rows = argc > 2 ? atol(argv[2]) : 20000;
	long prefill = argc > 3 ? atol(argv[3]) : 20000;
	size_t i;

	if (argc < 2 || rows <= 0 || prefill < 0) {
		fprintf(stderr, "usage: commit_cost DIR [ROWS [PREFILL]]\n");
		return 2;
	}
	srand(12345);
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (run(argv[1], "durable", 1, sizes[i], rows, prefill) == -1 ||
		    run(argv[1], "nosync", 0, sizes[i], rows, prefill) == -1)
			return 1;
	return 0;
}
