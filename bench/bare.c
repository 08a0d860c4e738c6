/*
 * bare: the benchmark's ceilings.  A FastCGI responder that does only what
 * every responder must: accept a request, read its body to the end, answer
 * 200 with the same short body webhook.fcgi sends ("stored\n").  No config,
 * no signature, no database.  bench/run builds it into build/bench/bare and
 * runs it behind the same lighttpd setup as webhook.fcgi, so the ratio of
 * the two is what verifying and storing costs.
 *
 * BARE_THREADS request threads serve requests (default 1; 8 with
 * BARE_SYNC, webhook.fcgi's default).
 *
 * With BARE_SYNC set (a path prefix) it is also durable, and nothing more:
 * the request threads write
 * each body (all of a bench body; of a longer one its last chunk read, up
 * to READ_CHUNK bytes) into the process's own file BARE_SYNC.PID, which
 * does not grow (SYNC_SLOTS slots reused in turn, as SQLite reuses its
 * WAL), and answer only after an fdatasync that began after their write.
 * Writes that arrive while a sync runs share the next one (group commit,
 * as webhook.fcgi's committer does).  The ceiling of a durable receiver
 * with this server and process model on this disk, without verifying,
 * parsing or SQLite (bench/README.md's goals, against the disk).
 */
#include <fcgiapp.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Bytes read per FCGX_GetStr call, as the receiver's REQUEST_READ_CHUNK
 * (lib/receive/request.h). */
#define READ_CHUNK	65536
#define SYNC_SLOTS	64
#define MAX_THREADS	64

static const char answer[] = "Status: 200 OK\r\n"
    "Content-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n";
static const char failed[] = "Status: 503 Service Unavailable\r\n"
    "Content-Length: 0\r\n\r\n";

/* The durable mode's file and group commit, under mu. */
static int sync_fd = -1;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t synced_cv = PTHREAD_COND_INITIALIZER;
static unsigned long written;	/* writes done, numbered from 1 */
static unsigned long synced;	/* every write up to this one is synced */
static int syncing;		/* a thread is in fdatasync */
static int sync_failed;

/* Write len bytes and wait for a sync that began after the write.
 * Returns 0, or -1 when a write or sync failed (then answer 503). */
static int
durable(const char *data, int len)
{
	unsigned long mine;
	int rc = 0;

	pthread_mutex_lock(&mu);
	if (pwrite(sync_fd, data, (size_t)len,
	    (off_t)READ_CHUNK * (off_t)(written % SYNC_SLOTS)) != len)
		rc = -1;
	mine = ++written;
	while (rc == 0 && synced < mine && !sync_failed) {
		if (syncing) {
			pthread_cond_wait(&synced_cv, &mu);
			continue;
		}
		/* Lead: one sync for every write done so far. */
		unsigned long upto = written;

		syncing = 1;
		pthread_mutex_unlock(&mu);
		rc = fdatasync(sync_fd);
		pthread_mutex_lock(&mu);
		syncing = 0;
		if (rc == 0)
			synced = upto;
		else
			sync_failed = 1;	/* as SQLite: never trust the file again */
		pthread_cond_broadcast(&synced_cv);
	}
	if (sync_failed)
		rc = -1;
	pthread_mutex_unlock(&mu);
	return rc;
}

static void *
serve(void *arg)
{
	static char chunks[MAX_THREADS][READ_CHUNK];
	char *chunk = chunks[(long)arg];
	FCGX_Request req;

	if (FCGX_InitRequest(&req, 0, 0) != 0)
		return NULL;
	while (FCGX_Accept_r(&req) >= 0) {
		int got, last = 0;

		while ((got = FCGX_GetStr(chunk, READ_CHUNK, req.in)) > 0)
			last = got;
		if (sync_fd != -1 && durable(chunk, last) == -1)
			FCGX_PutStr(failed, (int)sizeof failed - 1, req.out);
		else
			FCGX_PutStr(answer, (int)sizeof answer - 1, req.out);
		FCGX_Finish_r(&req);
	}
	return NULL;
}

int
main(void)
{
	const char *sync = getenv("BARE_SYNC"), *t = getenv("BARE_THREADS");
	pthread_t th[MAX_THREADS];
	long i, n = 1;

	if (sync != NULL && *sync != '\0')
		n = 8;
	if (t != NULL && *t != '\0')
		n = strtol(t, NULL, 10);
	if (n < 1 || n > MAX_THREADS) {
		fprintf(stderr, "bare: BARE_THREADS from 1 to %d\n", MAX_THREADS);
		return 1;
	}
	if (sync != NULL && *sync != '\0') {
		char path[4096];

		if ((size_t)snprintf(path, sizeof path, "%s.%ld", sync,
		    (long)getpid()) >= sizeof path ||
		    (sync_fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) == -1 ||
		    posix_fallocate(sync_fd, 0, (off_t)READ_CHUNK * SYNC_SLOTS) != 0 ||
		    fsync(sync_fd) == -1) {
			perror("bare: BARE_SYNC");
			return 1;
		}
	}
	if (FCGX_Init() != 0)
		return 1;
	if (n == 1) {
		serve((void *)0);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, serve, (void *)i) != 0)
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
