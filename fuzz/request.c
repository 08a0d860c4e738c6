/*
 * fuzz/request: the whole request path — lib/receive/receive.c's status table over
 * a fake request (lib/receive/request.h) and a real SQLite inbox, as a plain-CGI
 * process takes one delivery: method, headers, CONTENT_LENGTH, body read
 * in chunks, timestamp, signature, extraction, store, answer.
 *
 * Input: one flag byte, then "ID\nTIMESTAMP\nSIGNATURE\nBODY" (a missing
 * part is empty).  Flags: 1 sign (the timestamp becomes now and the
 * signature a valid one over ID.TIMESTAMP.BODY, so the fuzzer reaches the
 * store), 2 give CONTENT_LENGTH, 4 a GET, 8 the body to end of stream
 * (FastCGI's chunked bodies), 16/32 the read chunk (all, 1, 7 or 4096
 * bytes), 64 CONTENT_LENGTH one byte short, 128 a named source instead
 * of the default one: PATH_INFO=/hk, a generic `hmac` source whose id is
 * the header X-Id, its signature X-Sig (hex HMAC-SHA256 of "TS.BODY"
 * with X-Ts as TS), its time and object JSON pointers into the body —
 * the receiver's source path (docs/DESIGN.md "Sources").
 *
 * Properties (abort when broken):
 * - one answer, with a status of the table (200, 400, 401, 405, 408, 413,
 *   503), never an unsigned 200 (no key forges an HMAC);
 * - every 200 names a row that is in the inbox, read back through a
 *   connection of our own: "stored" with exactly the body sent (a
 *   source's under hk/ID~TAG (TAG: 16 hex of the body's SHA-256, as
 *   X-Id is unsigned), or hk/sha256:DIGEST when X-Id is empty);
 * - a well-formed signed POST (id of 1-256 bytes without control bytes,
 *   body within max_body, CONTENT_LENGTH right or absent) gets its 200
 *   (a duplicate's too).
 *
 * The inbox lives in a temporary directory (on /dev/shm when there is
 * one), synchronous = NORMAL: no fsync per execution; its rows are
 * deleted every 4096 executions, and the directory is removed at exit
 * (a crash leaves it, for the inbox it crashed on).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/receive/receive.h"
#include "lib/receive/request.h"
#include "lib/common/signature.h"
#include "lib/receive/site.h"
#include "lib/common/util.h"
#include "tests/fake_request.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)
#define SECRET		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define MAX_BODY	65536
#define HK_SECRET	"fuzz-hmac-key"

static char conf[256], db[256];
static struct site_cache sites;
static struct receive rv;
static struct signature_key key;
static sqlite3 *check_db;
static unsigned long runs;
static char dir[] = "/dev/shm/webhook-fuzz-request-XXXXXX";

/* At exit (libFuzzer's -runs or -max_total_time): the inbox's files and
 * its directory, so that runs do not fill /dev/shm. */
static void
remove_inbox(void)
{
	static const char *const suffix[] = { "", "-wal", "-shm", ".wal-sync" };
	char path[300];

	if (check_db != NULL)
		sqlite3_close(check_db);
	for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
		snprintf(path, sizeof path, "%s%s", db, suffix[i]);
		(void)unlink(path);
	}
	(void)unlink(conf);
	(void)rmdir(dir);
}

static void
setup(void)
{
	const char *d, *why;
	FILE *f;

	/* Refusals are logged: to the config's log (/dev/null), not to
	 * libFuzzer's output. */
	log_init("fuzz-request");
	d = mkdtemp(dir);
	if (d == NULL) {
		snprintf(dir, sizeof dir, "/tmp/webhook-fuzz-request-XXXXXX");
		d = mkdtemp(dir);
	}
	CHECK(d != NULL);
	CHECK(atexit(remove_inbox) == 0);
	snprintf(conf, sizeof conf, "%s/webhook.conf", d);
	snprintf(db, sizeof db, "%s/inbox.db", d);
	CHECK((f = fopen(conf, "w")) != NULL);
	fprintf(f, "database = %s\nsecret = %s\nlog = /dev/null\n"
	    "synchronous = NORMAL\nmax_body = %d\n"
	    "[source hk]\nscheme = hmac\nheader = X-Sig\n"
	    "timestamp_header = X-Ts\nsecret = " HK_SECRET "\nid = X-Id\n"
	    "time = /t\nobject = /o\n", db, SECRET, MAX_BODY);
	CHECK(fclose(f) == 0);
	CHECK(signature_key_parse(SECRET, &key, &why) == 0);
	site_cache_init(&sites, "/nonexistent/webhook.fcgi");
	receive_init(&rv);
}

/* Split off the next '\n'-ended part of [*p, end) into a C string. */
static char *
part(const uint8_t **p, const uint8_t *end, int last)
{
	const uint8_t *nl = last ? NULL : memchr(*p, '\n', (size_t)(end - *p));
	size_t n = (size_t)((nl != NULL ? nl : end) - *p);
	char *s = malloc(n + 1);

	CHECK(s != NULL);
	memcpy(s, *p, n);
	s[n] = '\0';
	*p = nl != NULL ? nl + 1 : end;
	return s;
}

/* The body stored under `id`: 1 with *out and *len set, 0 when no row.
 * `other_source` (may be NULL) is set to 1 when the row is not the hk
 * source's, else 0. */
static int
stored_body(const char *id, char **out, size_t *len, int *other_source)
{
	sqlite3_stmt *st;
	const unsigned char *src;
	int found = 0;

	if (other_source != NULL)
		*other_source = 0;

	/* This connection must never checkpoint: a checkpoint that is not
	 * the inbox's own (stamped in .wal-sync) is a stranger's write to
	 * the database file, which a receiver answers with one 503 and a
	 * reopen (docs/durability.md) -- right, but not a well-formed
	 * delivery's 200.  Its DELETE every 4096 runs did just that. */
	if (check_db == NULL) {
		/* No inbox yet (the receiver creates it on its first signed
		 * delivery; a GET or a bad signature never does): no row. */
		if (access(db, F_OK) != 0)
			return 0;
		CHECK(sqlite3_open_v2(db, &check_db, SQLITE_OPEN_READWRITE,
		    NULL) == SQLITE_OK);
		CHECK(sqlite3_exec(check_db, "PRAGMA wal_autocheckpoint = 0",
		    NULL, NULL, NULL) == SQLITE_OK);
	}
	sqlite3_busy_timeout(check_db, 5000);
	CHECK(sqlite3_prepare_v2(check_db, "SELECT body, source FROM events "
	    "WHERE webhook_id = ?1", -1, &st, NULL) == SQLITE_OK);
	sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		found = 1;
		src = sqlite3_column_text(st, 1);
		if (other_source != NULL)
			*other_source = src == NULL ||
			    strcmp((const char *)src, "hk") != 0;
		*len = (size_t)sqlite3_column_bytes(st, 0);
		*out = malloc(*len + 1);
		CHECK(*out != NULL);
		if (*len > 0)
			memcpy(*out, sqlite3_column_blob(st, 0), *len);
	}
	sqlite3_finalize(st);
	return found;
}

static int
plain_id(const char *id)
{
	size_t n = strlen(id);

	if (n == 0 || n > WEBHOOK_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)id[i] < 0x20 || id[i] == 0x7f)
			return 0;
	return 1;
}

/* Hex HMAC-SHA256 of "ts.body" under HK_SECRET: the hk source's. */
static void
hk_sign(const char *ts, const char *body, size_t blen, char out[65])
{
	crypto_auth_hmacsha256_state st;
	unsigned char mac[crypto_auth_hmacsha256_BYTES];

	crypto_auth_hmacsha256_init(&st, (const unsigned char *)HK_SECRET,
	    strlen(HK_SECRET));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)ts, strlen(ts));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)".", 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)body, blen);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2hex(out, 65, mac, sizeof mac);
}

/* The inbox id a 200 of the hk source names. */
static void
hk_key(const char *id, const char *body, size_t blen, char *out, size_t outsz)
{
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof sum + 1];

	crypto_hash_sha256(sum, (const unsigned char *)body, blen);
	if (*id != '\0') {
		/* X-Id is a header no signature covers: the id and the
		 * first 8 bytes of the body's digest (docs/providers.md
		 * "Ids"). */
		sodium_bin2hex(hex, sizeof hex, sum, 8);
		snprintf(out, outsz, "hk/%s~%s", id, hex);
		return;
	}
	sodium_bin2hex(hex, sizeof hex, sum, sizeof sum);
	snprintf(out, outsz, "hk/sha256:%s", hex);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t chunks[] = { 0, 1, 7, 4096 };
	const uint8_t *p = data + 1, *end = data + size;
	char *id, *ts, *sig, *body, cl[32], tsnow[32], good[128];
	char p_conf[300], p_id[300 + WEBHOOK_ID_MAX], p_ts[4200];
	char p_sig[4200], p_cl[64], rowid[400];
	const char *params[10];
	struct request_fake fake;
	struct request r;
	struct buf content;
	size_t blen, np = 0, slen;
	char *got;
	int flags, status, sign_it, well_formed, source, taken;

	if (size == 0)
		return 0;
	if (conf[0] == '\0')
		setup();
	flags = data[0];
	id = part(&p, end, 0);
	ts = part(&p, end, 0);
	sig = part(&p, end, 0);
	blen = (size_t)(end - p);
	body = part(&p, end, 1);
	sign_it = (flags & 1) != 0;
	source = (flags & 128) != 0;
	if (sign_it && source) {
		snprintf(tsnow, sizeof tsnow, "%lld", (long long)time(NULL));
		free(ts);
		CHECK((ts = strdup(tsnow)) != NULL);
		hk_sign(ts, body, blen, good);
		free(sig);
		CHECK((sig = strdup(good)) != NULL);
	} else if (sign_it) {
		snprintf(tsnow, sizeof tsnow, "%lld", (long long)time(NULL));
		free(ts);
		CHECK((ts = strdup(tsnow)) != NULL);
		buf_init(&content, SIZE_MAX);
		CHECK(buf_printf(&content, "%s.%s.", id, ts) == 0);
		CHECK(buf_append(&content, body, blen) == 0);
		CHECK(signature_sign(&key, (unsigned char *)content.data,
		    content.len, good, sizeof good) == 0);
		buf_free(&content);
		free(sig);
		CHECK((sig = strdup(good)) != NULL);
	}

	params[np++] = (flags & 4) ? "REQUEST_METHOD=GET" : "REQUEST_METHOD=POST";
	snprintf(p_conf, sizeof p_conf, "WEBHOOK_CONF=%s", conf);
	params[np++] = p_conf;
	snprintf(p_id, sizeof p_id, "HTTP_%s=%.*s", source ? "X_ID" :
	    "WEBHOOK_ID", WEBHOOK_ID_MAX + 8, id);
	params[np++] = p_id;
	snprintf(p_ts, sizeof p_ts, "HTTP_%s=%.4096s", source ? "X_TS" :
	    "WEBHOOK_TIMESTAMP", ts);
	params[np++] = p_ts;
	snprintf(p_sig, sizeof p_sig, "HTTP_%s=%.4096s", source ? "X_SIG" :
	    "WEBHOOK_SIGNATURE", sig);
	params[np++] = p_sig;
	if (source)
		params[np++] = "PATH_INFO=/hk";
	if (flags & 2) {
		snprintf(cl, sizeof cl, "%zu", (flags & 64) && blen > 0 ?
		    blen - 1 : blen);
		snprintf(p_cl, sizeof p_cl, "CONTENT_LENGTH=%s", cl);
		params[np++] = p_cl;
	}
	params[np] = NULL;

	memset(&fake, 0, sizeof fake);
	fake.params = params;
	fake.body = body;
	fake.body_len = blen;
	fake.chunk = chunks[(flags >> 4) & 3];
	fake.late_at = -1;
	fake.fail_at = -1;
	fake.body_to_eof = (flags & 8) != 0;
	request_init_fake(&r, &fake);
	status = receive_handle(&rv, &sites, &r);
	/* As plain CGI does after its answer: the inbox's own checkpoint
	 * turn.  Without it nothing checkpoints (a short-lived connection
	 * leaves that to inbox_maintain, the check connection must not), and
	 * the WAL grew by ~1.5 GB per million runs until tmpfs was full. */
	site_maintain(&sites);

	CHECK(fake.writes == 1);
	CHECK(status == 200 || status == 400 || status == 401 ||
	    status == 405 || status == 408 || status == 413 || status == 503);
	if (!sign_it)
		CHECK(status != 200);
	if (source)
		hk_key(id, body, blen, rowid, sizeof rowid);
	else
		snprintf(rowid, sizeof rowid, "%s", id);
	taken = 0;
	if (stored_body(rowid, &got, &slen, &taken)) {
		if (status == 200 && strstr(fake.out, "stored\n") != NULL)
			CHECK(slen == blen && memcmp(got, body, blen) == 0);
		free(got);
	} else
		CHECK(status != 200);
	/* Without CONTENT_LENGTH the body is what the stream holds. */
	/* A source's X-Id may be empty (the body's digest is the id) and
	 * is at most 255 bytes (scheme.h, SCHEME_VALUE_MAX). */
	/* A default-source id "hk/…" may be the hk source's already, and an
	 * hk id x may find "hk/x" taken by an earlier default-source event
	 * (the run before stored it, signed): either is the documented 503,
	 * not a lost 200 (docs/DESIGN.md "Sources"). */
	well_formed = sign_it && !(flags & 4) && (source ? (*id == '\0' ||
	    (plain_id(id) && strlen(id) < 256)) && !taken : plain_id(id) &&
	    strncmp(id, "hk/", 3) != 0) &&
	    blen <= MAX_BODY && (!(flags & 2) || !(flags & 64) || blen == 0);
	if (well_formed)
		CHECK(status == 200);

	if (++runs % 4096 == 0 && check_db != NULL)
		CHECK(sqlite3_exec(check_db, "DELETE FROM events", NULL, NULL,
		    NULL) == SQLITE_OK);
	free(id);
	free(ts);
	free(sig);
	free(body);
	return 0;
}
