/*
 * commit_cost: what one stored delivery costs the inbox alone, by batch
 * size (the analysis in bench/RESULTS.md).  No web server, no
 * FastCGI, no signature: deliveries shaped like bench/signed.py's (1 KiB
 * body, ids in two ascending runs, one of 100000 clients at random) go
 * through the receiver's own path, lib/store/sqlite/engine.c's inbox_store_batch, in
 * batches of N, and the process's CPU time (getrusage: user + system) is
 * divided by the rows stored.  Two ways:
 *
 *   durable   group commit with synchronous = FULL, as webhook.fcgi runs:
 *             COMMIT, then one fdatasync of the WAL per batch
 *   no sync   synchronous = NORMAL without group commit: in WAL mode
 *             COMMIT does not sync at all (a power cut may lose it) —
 *             the difference is what the per-batch sync costs
 *   minimal   not the inbox: SQLite alone, the same ids and bodies into a
 *             table of two columns (webhook_id TEXT PRIMARY KEY, body),
 *             no sync, SQLite's own autocheckpoint — a floor for any
 *             receiver that keeps deliveries unique in SQLite, whatever
 *             its table (the inbox's has 21 columns and three more
 *             indexes, docs/DESIGN.md "The inbox")
 *
 * Checkpoints run every INBOX_WAL_CHECKPOINT_FRAMES (lib/store/sqlite/private.h), as webhook.fcgi's
 * checkpointer does, and are counted.  Each (way, N) starts from a fresh
 * database filled with `prefill` rows first (not counted).
 *
 * And what a delivery costs before it is stored: verifying its signature
 * (lib/common/signature.c, HMAC-SHA256 of id.timestamp.body, the bench's 1 KiB
 * bodies; VERIFY_ROUNDS rounds), in µs of CPU.
 *
 * And the disk's floor for any durable acknowledgement: the wall time of a
 * 4 KiB write and fdatasync of a file that does not grow, as a WAL that
 * SQLite reuses is written (SYNC_ROUNDS rounds, after 50 not counted).
 *
 * Usage: commit_cost DIR [ROWS [PREFILL]]   (defaults 20000, 20000)
 * Prints one line per (way, N): "way N us_per_row user_us sys_us", then
 * "verify ROUNDS us_per_verification", "sync ROUNDS mean_us p50_us p99_us".
 */
#include <fcntl.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "lib/store/event.h"
#include "lib/store/inbox.h"
#include "lib/common/signature.h"

#define BODY	1024
#define MAXN	64
#define SYNC_ROUNDS	1000
#define VERIFY_ROUNDS	100000

static double
usec(const struct timeval *tv)
{
	return (double)tv->tv_sec * 1e6 + (double)tv->tv_usec;
}

static char ids[MAXN][48], bodies[MAXN][BODY + 1];

/* One result line: "way N us_per_row user_us sys_us" for `rows` rows
 * stored between the two getrusage readings. */
static void
print_cost(const char *way, int n, const struct rusage *r0,
    const struct rusage *r1, long rows)
{
	double user = usec(&r1->ru_utime) - usec(&r0->ru_utime);
	double sys = usec(&r1->ru_stime) - usec(&r0->ru_stime);

	printf("%s %d %.1f %.1f %.1f\n", way, n, (user + sys) / (double)rows,
	    user / (double)rows, sys / (double)rows);
	fflush(stdout);
}

/* Delivery i of the next batch: an id and a 1 KiB body like signed.py's. */
static void
make(int i, long *seq)
{
	long s = ++*seq;
	int len;

	snprintf(ids[i], sizeof ids[i], "msg_bench%02ld%09ld", s % 2, s);
	len = snprintf(bodies[i], sizeof bodies[i], "{\"type\":\"client.updated\","
	    "\"createdAt\":\"2026-11-30T10:00:00.000Z\",\"data\":{\"object\":"
	    "\"client\",\"id\":\"cli_%08d\",\"updated_at\":"
	    "\"2026-11-29T10:00:00.000Z\",\"notes\":\"", rand() % 100000);
	memset(bodies[i] + len, 'x', (size_t)(BODY - len - 3));
	memcpy(bodies[i] + BODY - 3, "\"}}", 3);
}

static int
store(struct inbox *ib, int n, long *seq, int checkpointing, struct buf *err)
{
	struct event_fields f[MAXN];
	struct inbox_delivery d[MAXN] = { { 0 } };
	int changed[MAXN], i, rc = 0;
	struct inbox_batch b = { .d = d, .n = (size_t)n, .changed = changed };

	for (i = 0; i < n; i++) {
		make(i, seq);
		if (event_extract(ids[i], bodies[i], BODY, &f[i]) == -1)
			return -1;
		d[i] = (struct inbox_delivery){ .webhook_id = ids[i],
		    .webhook_timestamp = 1764496800, .secret_fp = "fp",
		    .body = bodies[i], .body_len = BODY, .fields = &f[i] };
	}
	if (inbox_store_batch(ib, &b, err) != INBOX_OK || b.stored != n)
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

	buf_init(&err, BUF_ERR_MAX);
	buf_init(&path, 8192);
	if (buf_printf(&path, "%s/cost-%s-%d.db", dir, way, n) == -1)
		goto out;
	memset(&o, 0, sizeof o);
	o.busy_timeout_ms = 5000;
	o.synchronous = durable ? INBOX_SYNC_FULL : INBOX_SYNC_NORMAL;
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
	print_cost(way, n, &r0, &r1, done);
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

/* The same batches into a two-column table through SQLite alone. */
static int
minimal_batch(sqlite3 *db, sqlite3_stmt *ins, int n, long *seq)
{
	int i;

	if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
		return -1;
	for (i = 0; i < n; i++) {
		make(i, seq);
		if (sqlite3_bind_text(ins, 1, ids[i], -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_blob(ins, 2, bodies[i], BODY, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_step(ins) != SQLITE_DONE || sqlite3_reset(ins) != SQLITE_OK)
			return -1;
	}
	return sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}

static int
run_minimal(const char *dir, int n, long rows, long prefill)
{
	struct rusage r0, r1;
	sqlite3 *db = NULL;
	sqlite3_stmt *ins = NULL;
	struct buf path;
	long seq = 0, done;
	int rc = -1;

	buf_init(&path, 8192);
	if (buf_printf(&path, "%s/cost-minimal-%d.db", dir, n) == -1 ||
	    sqlite3_open(path.data, &db) != SQLITE_OK ||
	    sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
	    "CREATE TABLE e (webhook_id TEXT PRIMARY KEY, body BLOB);", NULL, NULL,
	    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "INSERT INTO e (webhook_id, body) VALUES (?1, ?2)"
	    " ON CONFLICT (webhook_id) DO NOTHING", -1, &ins, NULL) != SQLITE_OK)
		goto out;
	for (done = 0; done < prefill; done += MAXN)
		if (minimal_batch(db, ins, MAXN, &seq) == -1)
			goto out;
	getrusage(RUSAGE_SELF, &r0);
	for (done = 0; done < rows; done += n)
		if (minimal_batch(db, ins, n, &seq) == -1)
			goto out;
	getrusage(RUSAGE_SELF, &r1);
	print_cost("minimal", n, &r0, &r1, done);
	rc = 0;
out:
	if (rc != 0)
		fprintf(stderr, "commit_cost: minimal: %s\n",
		    db != NULL ? sqlite3_errmsg(db) : "cannot open");
	sqlite3_finalize(ins);
	sqlite3_close(db);
	buf_free(&path);
	return rc;
}

/* CPU per signature verification of one bench-shaped delivery. */
static int
verify_cost(void)
{
	/* The Standard Webhooks documentation's example secret. */
	static const char secret[] = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	static unsigned char content[48 + 16 + BODY];
	struct signature_key key;
	struct rusage r0, r1;
	const char *why;
	char header[64];
	long seq = 0;
	size_t len, which;
	int i, n;

	if (signature_key_parse(secret, &key, &why) == -1) {
		fprintf(stderr, "commit_cost: %s\n", why);
		return -1;
	}
	make(0, &seq);
	n = snprintf((char *)content, sizeof content, "%s.1764496800.", ids[0]);
	memcpy(content + n, bodies[0], BODY);
	len = (size_t)n + BODY;
	if (signature_sign(&key, content, len, header, sizeof header) == -1)
		return -1;
	getrusage(RUSAGE_SELF, &r0);
	for (i = 0; i < VERIFY_ROUNDS; i++)
		if (signature_verify(&key, 1, content, len, header, strlen(header),
		    &which) == -1) {
			fprintf(stderr, "commit_cost: the signature does not verify\n");
			return -1;
		}
	getrusage(RUSAGE_SELF, &r1);
	signature_key_wipe(&key);
	printf("verify %d %.2f\n", VERIFY_ROUNDS,
	    (usec(&r1.ru_utime) - usec(&r0.ru_utime) + usec(&r1.ru_stime) -
	    usec(&r0.ru_stime)) / VERIFY_ROUNDS);
	return 0;
}

static int
cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Wall time of pwrite(4 KiB) + fdatasync into a file of fixed size. */
static int
sync_latency(const char *dir)
{
	static double t[SYNC_ROUNDS];
	static char page[4096];
	struct buf path;
	double sum = 0;
	int fd = -1, i, rc = -1;

	buf_init(&path, 8192);
	if (buf_printf(&path, "%s/cost-sync", dir) == -1 ||
	    (fd = open(path.data, O_RDWR | O_CREAT | O_TRUNC, 0600)) == -1 ||
	    posix_fallocate(fd, 0, (off_t)sizeof page * 64) != 0 || fsync(fd) == -1)
		goto out;
	memset(page, 'w', sizeof page);
	for (i = -50; i < SYNC_ROUNDS; i++) {
		struct timespec a, b;

		clock_gettime(CLOCK_MONOTONIC, &a);
		if (pwrite(fd, page, sizeof page, (off_t)sizeof page *
		    ((i + 50) % 64)) != (ssize_t)sizeof page || fdatasync(fd) == -1)
			goto out;
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (i >= 0) {
			t[i] = (double)(b.tv_sec - a.tv_sec) * 1e6 +
			    (double)(b.tv_nsec - a.tv_nsec) / 1e3;
			sum += t[i];
		}
	}
	qsort(t, SYNC_ROUNDS, sizeof t[0], cmp_double);
	printf("sync %d %.1f %.1f %.1f\n", SYNC_ROUNDS, sum / SYNC_ROUNDS,
	    t[SYNC_ROUNDS / 2], t[SYNC_ROUNDS * 99 / 100]);
	rc = 0;
out:
	if (rc != 0)
		perror("commit_cost: sync");
	if (fd != -1)
		close(fd);
	if (path.data != NULL)
		unlink(path.data);
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
	if (sodium_init() < 0) {
		fprintf(stderr, "commit_cost: libsodium failed to initialise\n");
		return 1;
	}
	srand(12345);
	for (i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		if (run(argv[1], "durable", 1, sizes[i], rows, prefill) == -1 ||
		    run(argv[1], "nosync", 0, sizes[i], rows, prefill) == -1 ||
		    run_minimal(argv[1], sizes[i], rows, prefill) == -1)
			return 1;
	return verify_cost() == -1 || sync_latency(argv[1]) == -1;
}
