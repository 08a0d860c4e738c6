/*
 * fcgi_sqlite_floor: the least a durable FastCGI receiver that keeps its
 * events in SQLite does, in webhook.fcgi's process model (bench/run's
 * "floor" row; docs/receiver-throughput.md).  One process, FLOOR_THREADS
 * request threads (default 32, as the supported setup), one SQLite WAL
 * connection written by leader/follower group commit as
 * lib/receive/committer.c does it (a delivery queued, the first thread to
 * find no commit running takes every delivery queued so far, at most 64,
 * into one BEGIN IMMEDIATE … COMMIT with synchronous = FULL, hands the lead
 * on and wakes its batch, one semaphore per thread), and a checkpoint
 * thread on a connection of its own so that no request waits for one.
 *
 * Per request it verifies the Standard Webhooks signature as the peer and
 * webhook.fcgi do (HMAC-SHA256 over id.timestamp.body, libsodium, the
 * timestamp within 300 s) and stores (webhook_id, body) into a table of
 * two columns with INSERT … ON CONFLICT DO NOTHING.  Nothing else: no
 * config file beyond its two lines, no JSON, no event fields, no second
 * table or index, no document-root or version checks, no log.
 *
 * FLOOR_PIPELINE=1 measures a design webhook.fcgi does not have: the
 * writer commits with synchronous = OFF and the leader hands the lead on
 * right after its COMMIT, then makes the batch durable with an fdatasync
 * of the WAL that began after its commit (one at a time, shared by every
 * commit before it began, as bench/bare.c's BARE_SYNC), so that the next
 * batch commits while this one syncs (docs/receiver-throughput.md).
 *
 * WEBHOOK_CONF names a file of "database = PATH" and "secret = whsec_…"
 * lines, as bench/run writes for webhook.fcgi (the first secret only).
 * Answers: 200 "stored\n"; 400 without the headers or body past 64 KiB;
 * 401 for a bad signature or stale timestamp; 503 when the commit failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <fcgiapp.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#define MAX_THREADS	64
#define BATCH		64
#define BODY_MAX	65536
#define TOLERANCE_S	300
/* WAL frames after which the checkpoint thread is woken: the size the
 * inbox's own checkpoint turn waits for (lib/store/sqlite/private.h). */
#define CHECKPOINT_FRAMES	2000

static const char ok[] = "Status: 200 OK\r\n"
    "Content-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n";
static const char bad_request[] = "Status: 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
static const char unauthorized[] = "Status: 401 Unauthorized\r\nContent-Length: 0\r\n\r\n";
static const char unavailable[] = "Status: 503 Service Unavailable\r\nContent-Length: 0\r\n\r\n";

static unsigned char key[128];
static size_t keylen;
static char dbpath[4096];

/* Group commit, under mu: a queue of waiting deliveries, each on its
 * thread's stack, and whether a leader is committing. */
struct pending {
	const char	*id;
	const char	*body;
	size_t		 len;
	int		 lead, done, failed;
	sem_t		 wake;
	struct pending	*next;
};
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct pending *head, **tail = &head;
static int busy;
static sqlite3 *writer;		/* the leader's only */

/* FLOOR_PIPELINE: the WAL's own descriptor (an fdatasync flushes the
 * file, whichever descriptor) and the syncs, under sync_mu. */
static int pipeline, wal_fd = -1;
static pthread_mutex_t sync_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t synced_cv = PTHREAD_COND_INITIALIZER;
static unsigned long committed, synced;
static int syncing, sync_failed;

/* Wait for an fdatasync of the WAL that began after commit number
 * `mine`; lead one when none is running.  0, or -1 once one failed. */
static int
durable(unsigned long mine)
{
	pthread_mutex_lock(&sync_mu);
	while (synced < mine && !sync_failed) {
		unsigned long upto;

		if (syncing) {
			pthread_cond_wait(&synced_cv, &sync_mu);
			continue;
		}
		upto = committed;
		syncing = 1;
		pthread_mutex_unlock(&sync_mu);
		if (fdatasync(wal_fd) == -1)
			sync_failed = 1;
		pthread_mutex_lock(&sync_mu);
		syncing = 0;
		synced = upto;
		pthread_cond_broadcast(&synced_cv);
	}
	pthread_mutex_unlock(&sync_mu);
	return sync_failed ? -1 : 0;
}
static sqlite3_stmt *ins, *begin, *commit, *rollback;

/* The checkpoint thread's wake-up: the writer's WAL size after a commit. */
static pthread_mutex_t ck_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ck_cv = PTHREAD_COND_INITIALIZER;
static int wal_frames;

static int
on_wal(void *arg, sqlite3 *db, const char *name, int frames)
{
	(void)arg; (void)db; (void)name;
	if (frames >= CHECKPOINT_FRAMES) {
		pthread_mutex_lock(&ck_mu);
		wal_frames = frames;
		pthread_cond_signal(&ck_cv);
		pthread_mutex_unlock(&ck_mu);
	}
	return SQLITE_OK;
}

static void *
checkpointer(void *arg)
{
	sqlite3 *db = NULL;

	(void)arg;
	if (sqlite3_open_v2(dbpath, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return NULL;
	sqlite3_busy_timeout(db, 5000);
	for (;;) {
		pthread_mutex_lock(&ck_mu);
		while (wal_frames < CHECKPOINT_FRAMES)
			pthread_cond_wait(&ck_cv, &ck_mu);
		wal_frames = 0;
		pthread_mutex_unlock(&ck_mu);
		/* PASSIVE blocks no writer; once it has copied every frame the
		 * next commit starts the WAL from its beginning again. */
		(void)sqlite3_wal_checkpoint_v2(db, NULL,
		    SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
	}
	return NULL;
}

/* The leader's work: one transaction and one sync for the batch. */
static int
commit_batch(struct pending *batch)
{
	struct pending *p;
	int rc = sqlite3_step(begin) == SQLITE_DONE ? 0 : -1;

	sqlite3_reset(begin);
	for (p = batch; rc == 0 && p != NULL; p = p->next) {
		if (sqlite3_bind_text(ins, 1, p->id, -1, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_bind_blob(ins, 2, p->body, (int)p->len, SQLITE_STATIC) != SQLITE_OK ||
		    sqlite3_step(ins) != SQLITE_DONE)
			rc = -1;
		sqlite3_reset(ins);
	}
	sqlite3_clear_bindings(ins);
	if (rc == 0 && sqlite3_step(commit) != SQLITE_DONE)
		rc = -1;
	sqlite3_reset(commit);
	if (rc == -1) {
		(void)sqlite3_step(rollback);
		sqlite3_reset(rollback);
	}
	return rc;
}

/* Store one delivery with whoever else is waiting; 0 once durable. */
static int
store(struct pending *me)
{
	struct pending *batch, *p, *last = NULL, *next;
	int n = 0, rc, lead = 0;

	pthread_mutex_lock(&mu);
	*tail = me;
	tail = &me->next;
	if (!busy)
		busy = lead = 1;
	pthread_mutex_unlock(&mu);
	/* Decided under the lock: a hand-off may set me->lead after the
	 * unlock, and its post must then be waited for, or it would wake
	 * this thread's next delivery at once (committer.c says the same). */
	if (!lead)
		while (sem_wait(&me->wake) == -1 && errno == EINTR)
			;
	if (me->done)
		return me->failed ? -1 : 0;

	pthread_mutex_lock(&mu);
	batch = head;
	for (p = batch; p != NULL && n < BATCH; p = p->next, n++)
		last = p;
	head = last->next;
	if (head == NULL)
		tail = &head;
	last->next = NULL;
	pthread_mutex_unlock(&mu);

	rc = commit_batch(batch);
	if (pipeline) {
		unsigned long mine;
		char wal[sizeof dbpath + 4];

		/* The WAL exists once a commit wrote it: opened by the leader,
		 * which alone runs here while it holds the lead. */
		if (wal_fd == -1) {
			snprintf(wal, sizeof wal, "%s-wal", dbpath);
			wal_fd = open(wal, O_RDONLY | O_CLOEXEC);
		}
		pthread_mutex_lock(&sync_mu);
		mine = ++committed;
		pthread_mutex_unlock(&sync_mu);
		/* Hand the lead on before the sync: the next batch commits
		 * while this one's sync runs. */
		pthread_mutex_lock(&mu);
		if ((next = head) != NULL)
			next->lead = 1;
		else
			busy = 0;
		pthread_mutex_unlock(&mu);
		if (next != NULL)
			sem_post(&next->wake);
		if (rc == 0 && (wal_fd == -1 || durable(mine) == -1))
			rc = -1;
		for (p = batch; p != NULL; p = next) {
			next = p->next;
			p->failed = rc == -1;
			p->done = 1;
			if (p != me)
				sem_post(&p->wake);
		}
		return rc;
	}

	pthread_mutex_lock(&mu);
	if ((next = head) != NULL)
		next->lead = 1;
	else
		busy = 0;
	pthread_mutex_unlock(&mu);
	if (next != NULL)
		sem_post(&next->wake);
	for (p = batch; p != NULL; p = next) {
		next = p->next;
		p->failed = rc == -1;
		p->done = 1;
		if (p != me)
			sem_post(&p->wake);
	}
	return rc;
}

/* The first v1 entry that matches the HMAC of id.ts.body. */
static int
verified(const char *id, const char *ts, const char *sig, const char *body,
    size_t len)
{
	crypto_auth_hmacsha256_state st;
	unsigned char mac[crypto_auth_hmacsha256_BYTES], got[64];
	char entry[128];
	size_t n;
	long t;
	char *end;

	t = strtol(ts, &end, 10);
	if (*end != '\0' || labs((long)time(NULL) - t) > TOLERANCE_S)
		return 0;
	crypto_auth_hmacsha256_init(&st, key, keylen);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)id, strlen(id));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)".", 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)ts, strlen(ts));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)".", 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, len);
	crypto_auth_hmacsha256_final(&st, mac);
	while (*sig != '\0') {
		size_t w = strcspn(sig, " ");

		if (w > 3 && w < sizeof entry && strncmp(sig, "v1,", 3) == 0) {
			memcpy(entry, sig + 3, w - 3);
			entry[w - 3] = '\0';
			if (sodium_base642bin(got, sizeof got, entry, w - 3, NULL,
			    &n, NULL, sodium_base64_VARIANT_ORIGINAL) == 0 &&
			    n == sizeof mac && sodium_memcmp(got, mac, sizeof mac) == 0)
				return 1;
		}
		sig += w;
		sig += strspn(sig, " ");
	}
	return 0;
}

static void *
serve(void *arg)
{
	static char bodies[MAX_THREADS][BODY_MAX + 1];
	char *body = bodies[(long)arg];
	struct pending me;
	FCGX_Request req;

	if (FCGX_InitRequest(&req, 0, 0) != 0 || sem_init(&me.wake, 0, 0) != 0)
		return NULL;
	while (FCGX_Accept_r(&req) >= 0) {
		const char *id = FCGX_GetParam("HTTP_WEBHOOK_ID", req.envp);
		const char *ts = FCGX_GetParam("HTTP_WEBHOOK_TIMESTAMP", req.envp);
		const char *sig = FCGX_GetParam("HTTP_WEBHOOK_SIGNATURE", req.envp);
		const char *answer = ok;
		size_t len = 0;
		int got;

		while (len <= BODY_MAX && (got = FCGX_GetStr(body + len,
		    (int)(BODY_MAX + 1 - len), req.in)) > 0)
			len += (size_t)got;
		if (id == NULL || ts == NULL || sig == NULL || len > BODY_MAX)
			answer = bad_request;
		else if (!verified(id, ts, sig, body, len))
			answer = unauthorized;
		else {
			me.id = id;
			me.body = body;
			me.len = len;
			me.lead = me.done = me.failed = 0;
			me.next = NULL;
			if (store(&me) == -1)
				answer = unavailable;
		}
		FCGX_PutStr(answer, (int)strlen(answer), req.out);
		FCGX_Finish_r(&req);
	}
	return NULL;
}

/* The two lines of WEBHOOK_CONF this program reads. */
static int
read_conf(const char *path)
{
	char line[4096], *v, *e;
	FILE *f = fopen(path, "r");

	if (f == NULL)
		return -1;
	while (fgets(line, sizeof line, f) != NULL) {
		if ((v = strchr(line, '=')) == NULL)
			continue;
		for (e = v + 1; *e == ' '; e++)
			;
		e[strcspn(e, " \r\n")] = '\0';
		if (strncmp(line, "database ", 9) == 0)
			snprintf(dbpath, sizeof dbpath, "%s", e);
		else if (strncmp(line, "secret ", 7) == 0 && keylen == 0 &&
		    strncmp(e, "whsec_", 6) == 0 &&
		    sodium_base642bin(key, sizeof key, e + 6, strlen(e + 6), NULL,
		    &keylen, NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
			keylen = 0;
	}
	fclose(f);
	return dbpath[0] != '\0' && keylen > 0 ? 0 : -1;
}

int
main(void)
{
	const char *conf = getenv("WEBHOOK_CONF"), *t = getenv("FLOOR_THREADS");
	pthread_t th[MAX_THREADS], ck;
	long i, n = t != NULL ? strtol(t, NULL, 10) : 32;

	if (n < 1 || n > MAX_THREADS || conf == NULL || sodium_init() < 0 ||
	    read_conf(conf) == -1) {
		fprintf(stderr, "fcgi_sqlite_floor: WEBHOOK_CONF with database "
		    "and a whsec_ secret; FLOOR_THREADS 1 to %d\n", MAX_THREADS);
		return 1;
	}
	if (sqlite3_open(dbpath, &writer) != SQLITE_OK ||
	    sqlite3_exec(writer, "PRAGMA journal_mode = WAL;"
	    "PRAGMA wal_autocheckpoint = 0;"
	    "CREATE TABLE IF NOT EXISTS events (webhook_id TEXT PRIMARY KEY,"
	    " body BLOB NOT NULL)", NULL, NULL, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(writer, "INSERT INTO events (webhook_id, body) "
	    "VALUES (?, ?) ON CONFLICT DO NOTHING", -1, &ins, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(writer, "BEGIN IMMEDIATE", -1, &begin, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(writer, "COMMIT", -1, &commit, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(writer, "ROLLBACK", -1, &rollback, NULL) != SQLITE_OK) {
		fprintf(stderr, "fcgi_sqlite_floor: %s: %s\n", dbpath,
		    sqlite3_errmsg(writer));
		return 1;
	}
	pipeline = getenv("FLOOR_PIPELINE") != NULL &&
	    strcmp(getenv("FLOOR_PIPELINE"), "1") == 0;
	if (sqlite3_exec(writer, pipeline ? "PRAGMA synchronous = OFF" :
	    "PRAGMA synchronous = FULL", NULL, NULL, NULL) != SQLITE_OK)
		return 1;
	sqlite3_busy_timeout(writer, 5000);
	sqlite3_wal_hook(writer, on_wal, NULL);
	if (FCGX_Init() != 0 ||
	    pthread_create(&ck, NULL, checkpointer, NULL) != 0)
		return 1;
	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, serve, (void *)i) != 0)
			return 1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}
