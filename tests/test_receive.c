/*
 * test_receive: lib/receive/receive.c — the status table of docs/DESIGN.md
 * "The receiver's answers", one test per row and the order of the checks,
 * over the fake request (lib/receive/request.h) and a real SQLite inbox in
 * a temporary directory.  The end-to-end suites send the same through real
 * servers; these say which row broke without one.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>
#include <sqlite3.h>

#include "lib/program/version.h"
#include "lib/receive/receive.h"
#include "lib/receive/request.h"
#include "lib/common/signature.h"
#include "lib/receive/site.h"
#include "lib/common/util.h"
#include "tests/fake_request.h"
#include "tests/check_common.h"

static char dir[] = "/tmp/webhook-test-receive-XXXXXX";

#define SECRET		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define OTHER_SECRET	"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
#define MAX_BODY	200000
#define BODY		"{\"type\":\"client.updated\",\"data\":{\"object\":\"client\"}}"

/* One receiver with its own config, inbox and log, and one request. */
struct fx {
	char		 conf[256], db[256], log[256];
	struct site_cache sites;
	struct receive	 rv;
	const char	*params[16];
	size_t		 nparams;
	char		 pool[40000];	/* the params' text */
	size_t		 used;
	struct request_fake fake;
	struct request	 r;
};

/* A receiver for test `name`: its config has `extra` lines after the
 * usual database, secret, log and max_body. */
static void
fx_init(struct fx *x, const char *name, const char *extra)
{
	char text[1024];

	memset(x, 0, sizeof *x);
	snprintf(x->conf, sizeof x->conf, "%s/%s.conf", dir, name);
	snprintf(x->db, sizeof x->db, "%s/%s.db", dir, name);
	snprintf(x->log, sizeof x->log, "%s/%s.log", dir, name);
	snprintf(text, sizeof text, "database = %s\nsecret = %s\nlog = %s\n"
	    "max_body = %d\n%s", x->db, SECRET, x->log, MAX_BODY, extra);
	check_write_file(x->conf, text);
	site_cache_init(&x->sites, "/nonexistent/webhook.fcgi");
	receive_init(&x->rv);
	x->fake.late_at = -1;
	x->fake.fail_at = -1;
}

static void
fx_free(struct fx *x)
{
	receive_free(&x->rv);
	site_cache_free(&x->sites);
}

/* Add the parameter NAME=value (printf-style). */
__attribute__((format(printf, 2, 3)))
static void
param(struct fx *x, const char *fmt, ...)
{
	va_list ap;
	int n;

	ck_assert_uint_lt(x->nparams, NELEM(x->params) - 1);
	va_start(ap, fmt);
	n = vsnprintf(x->pool + x->used, sizeof x->pool - x->used, fmt, ap);
	va_end(ap);
	ck_assert(n >= 0 && (size_t)n < sizeof x->pool - x->used);
	x->params[x->nparams++] = x->pool + x->used;
	x->used += (size_t)n + 1;
}

/* "v1,…" for id.ts.body under `secret`. */
static void
sign(const char *secret, const char *id, const char *ts, const char *body,
    size_t len, char *out, size_t outsz)
{
	struct signature_key key;
	const char *why;
	struct buf content;

	ck_assert_int_eq(signature_key_parse(secret, &key, &why), 0);
	buf_init(&content, SIZE_MAX);
	ck_assert_int_eq(buf_printf(&content, "%s.%s.", id, ts), 0);
	ck_assert_int_eq(buf_append(&content, body, len), 0);
	ck_assert_int_eq(signature_sign(&key, (unsigned char *)content.data,
	    content.len, out, outsz), 0);
	buf_free(&content);
	signature_key_wipe(&key);
}

/* A POST as the provider sends it, with the body `body` (len bytes),
 * signed now, CONTENT_LENGTH given. */
static void
post(struct fx *x, const char *id, const char *body, size_t len)
{
	char ts[32], sig[128];

	snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
	sign(SECRET, id, ts, body, len, sig, sizeof sig);
	param(x, "REQUEST_METHOD=POST");
	param(x, "WEBHOOK_CONF=%s", x->conf);
	param(x, "HTTP_WEBHOOK_ID=%s", id);
	param(x, "HTTP_WEBHOOK_TIMESTAMP=%s", ts);
	param(x, "HTTP_WEBHOOK_SIGNATURE=%s", sig);
	x->fake.body = body;
	x->fake.body_len = len;
}

/* Run the request; check the status returned is the one answered. */
static int
run(struct fx *x)
{
	char line[32], version[128];
	int status;

	x->params[x->nparams] = NULL;
	x->fake.params = x->params;
	request_init_fake(&x->r, &x->fake);
	status = receive_handle(&x->rv, &x->sites, &x->r);
	snprintf(line, sizeof line, "Status: %d ", status);
	ck_assert_int_eq(x->fake.writes, 1);
	ck_assert_msg(strncmp(x->fake.out, line, strlen(line)) == 0,
	    "answer %s for status %d", x->fake.out, status);
	ck_assert(contains(x->fake.out, "X-Webhook-Inbox: receiver\r\n"));
	/* The version on a verified delivery's answer only (receive.h). */
	snprintf(version, sizeof version, "\r\nX-Webhook-Inbox-Version: %s "
	    "(commit %s)\r\n", version_number, version_commit);
	ck_assert_msg((contains(x->fake.out, version) != 0) ==
	    (status == 200 || status == 204), "%s", x->fake.out);
	ck_assert_msg(status == 200 || status == 204 ||
	    !contains(x->fake.out, version_number),
	    "%s", x->fake.out);
	return status;
}

static int
rows(const char *db)
{
	sqlite3 *h;
	sqlite3_stmt *s;
	int n;

	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT count(*) FROM events",
	    -1, &s, NULL), SQLITE_OK);
	ck_assert_int_eq(sqlite3_step(s), SQLITE_ROW);
	n = sqlite3_column_int(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(h);
	return n;
}

/* Did the log get a line with `text`? */
static int
logged(const struct fx *x, const char *text)
{
	size_t len;
	char *all = util_read_file(x->log, 1 << 20, &len);
	int yes = contains(all, text);

	free(all);
	return yes;
}

/* A receiver for test `name`, and the provider's POST of BODY with
 * webhook-id `name`. */
static void
start(struct fx *x, const char *name)
{
	fx_init(x, name, "");
	post(x, name, BODY, strlen(BODY));
}

/* Run: the answer must be `status`, with `why` in the log. */
static void
refused(struct fx *x, int status, const char *why)
{
	ck_assert_int_eq(run(x), status);
	ck_assert_msg(logged(x, why), "not logged: %s", why);
	fx_free(x);
}

START_TEST(new_event_200_stored)
{
	struct fx x;

	start(&x, "new");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "\r\n\r\nstored\n"));
	ck_assert_int_eq(x.fake.consumed, strlen(BODY));
	ck_assert(!x.fake.discarded);
	ck_assert_int_eq(rows(x.db), 1);
	fx_free(&x);
}
END_TEST

START_TEST(duplicate_200)
{
	struct fx x;

	start(&x, "dup");
	ck_assert_int_eq(run(&x), 200);
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "\r\n\r\nduplicate\n"));
	ck_assert_int_eq(rows(x.db), 1);
	fx_free(&x);
}
END_TEST

/* A FastCGI-like request: group commit through the committer, the body
 * read to the end of the stream without CONTENT_LENGTH, in small pieces. */
START_TEST(long_lived_chunked_200)
{
	struct fx x;

	start(&x, "longlived");
	x.fake.long_lived = 1;
	x.fake.body_to_eof = 1;
	x.fake.chunk = 7;
	ck_assert_int_eq(run(&x), 200);
	ck_assert_int_eq(rows(x.db), 1);
	fx_free(&x);
}
END_TEST

/* Debian 12's nginx repeats the parameter: every value is checked. */
START_TEST(repeated_signature_params_200)
{
	struct fx x;
	char ts[32], sig[128];

	fx_init(&x, "repeated", "");
	snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
	sign(OTHER_SECRET, "msg_rep", ts, BODY, strlen(BODY), sig, sizeof sig);
	param(&x, "HTTP_WEBHOOK_SIGNATURE=%s", sig);
	post(&x, "msg_rep", BODY, strlen(BODY));
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
}
END_TEST

START_TEST(not_post_405_before_anything)
{
	struct fx x;

	/* No config, no headers: the method is checked first. */
	fx_init(&x, "get", "");
	param(&x, "REQUEST_METHOD=GET");
	param(&x, "WEBHOOK_CONF=%s/none.conf", dir);
	ck_assert_int_eq(run(&x), 405);
	ck_assert(contains(x.fake.out, "\r\nAllow: POST\r\n"));
	ck_assert(x.fake.discarded);
	fx_free(&x);
}
END_TEST

START_TEST(misconfigured_503_before_headers)
{
	struct fx x;

	fx_init(&x, "badconf", "tolerance = soon\n");
	param(&x, "REQUEST_METHOD=POST");
	param(&x, "WEBHOOK_CONF=%s", x.conf);
	ck_assert_int_eq(run(&x), 503);
	ck_assert(contains(x.fake.out, "\r\nRetry-After: 30\r\n"));
	ck_assert(logged(&x, "answering 503 until it is fixed"));
	fx_free(&x);
}
END_TEST

START_TEST(database_in_docroot_503)
{
	struct fx x;

	start(&x, "docroot");
	param(&x, "DOCUMENT_ROOT=%s", dir);
	refused(&x, 503, "is inside the document root");
}
END_TEST

START_TEST(inbox_unopenable_503)
{
	struct fx x;
	char extra[1024];

	fx_init(&x, "unopenable", "");
	/* A second database line would be refused: write the file anew. */
	snprintf(extra, sizeof extra, "database = %s/no/such/dir/x.db\n"
	    "secret = %s\nlog = %s\n", dir, SECRET, x.log);
	check_write_file(x.conf, extra);
	post(&x, "msg_unopenable", BODY, strlen(BODY));
	refused(&x, 503, "inbox: ");
}
END_TEST

START_TEST(header_missing_or_empty_400)
{
	static const char *const drop[] = { "HTTP_WEBHOOK_ID=",
	    "HTTP_WEBHOOK_TIMESTAMP=", "HTTP_WEBHOOK_SIGNATURE=" };
	size_t i, j;

	for (i = 0; i < NELEM(drop); i++) {
		for (j = 0; j < 2; j++) {	/* missing, then empty */
			struct fx x;
			size_t k, n = 0;

			fx_init(&x, "missing", "");
			post(&x, "msg_missing", BODY, strlen(BODY));
			for (k = 0; k < x.nparams; k++) {
				if (strncmp(x.params[k], drop[i],
				    strlen(drop[i])) != 0)
					x.params[n++] = x.params[k];
				else if (j == 1)
					x.params[n++] = drop[i];
			}
			x.nparams = n;
			ck_assert_int_eq(run(&x), 400);
			ck_assert(contains(x.fake.out, "\r\n\r\nbad request\n"));
			fx_free(&x);
		}
	}
}
END_TEST

START_TEST(id_too_long_400)
{
	struct fx x;
	char id[WEBHOOK_ID_MAX + 2];

	memset(id, 'a', sizeof id - 1);
	id[sizeof id - 1] = '\0';
	fx_init(&x, "longid", "");
	post(&x, id, BODY, strlen(BODY));
	ck_assert_int_eq(run(&x), 400);
	ck_assert(logged(&x, "the id is longer than 256 bytes"));
	/* The longest accepted id is stored. */
	id[WEBHOOK_ID_MAX] = '\0';
	fx_free(&x);
	fx_init(&x, "longid", "");
	post(&x, id, BODY, strlen(BODY));
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
}
END_TEST

START_TEST(signature_header_too_long_401)
{
	static char filler[SIGNATURE_HEADER_MAX];
	struct fx x;

	/* A valid entry, behind more than 16 KiB of others: not cut. */
	memset(filler, 'x', sizeof filler - 1);
	filler[sizeof filler - 1] = '\0';
	fx_init(&x, "longsig", "");
	param(&x, "HTTP_WEBHOOK_SIGNATURE=v1,%s", filler);
	post(&x, "msg_longsig", BODY, strlen(BODY));
	refused(&x, 401, "webhook-signature longer than 16 KiB");
}
END_TEST

START_TEST(content_length_not_a_number_400)
{
	struct fx x;

	start(&x, "clnan");
	param(&x, "CONTENT_LENGTH=12x");
	refused(&x, 400, "CONTENT_LENGTH is not a number");
}
END_TEST

/* Refused by CONTENT_LENGTH before a byte is read. */
START_TEST(content_length_over_max_body_413)
{
	struct fx x;

	start(&x, "clbig");
	param(&x, "CONTENT_LENGTH=%d", MAX_BODY + 1);
	ck_assert_int_eq(run(&x), 413);
	ck_assert(contains(x.fake.out, "\r\n\r\nbody too large\n"));
	ck_assert(x.fake.discarded);
	ck_assert_int_eq(rows(x.db), 0);
	fx_free(&x);
}
END_TEST

/* Without CONTENT_LENGTH (chunked): refused while reading. */
START_TEST(body_over_max_body_413)
{
	static char big[MAX_BODY + 1];
	struct fx x;

	memset(big, 'b', sizeof big);
	fx_init(&x, "bodybig", "");
	post(&x, "msg_bodybig", big, sizeof big);
	x.fake.body_to_eof = 1;
	refused(&x, 413, "body over max_body");
}
END_TEST

START_TEST(body_too_slow_408)
{
	struct fx x;

	start(&x, "slow");
	x.fake.body_to_eof = 1;
	x.fake.late_at = 5;
	ck_assert_int_eq(run(&x), 408);
	ck_assert(contains(x.fake.out, "\r\n\r\nbody too slow\n"));
	ck_assert_int_eq(rows(x.db), 0);
	fx_free(&x);
}
END_TEST

START_TEST(body_read_error_400)
{
	struct fx x;

	start(&x, "readerr");
	x.fake.fail_at = 5;
	refused(&x, 400, "body could not be read to its end");
}
END_TEST

START_TEST(body_shorter_than_content_length_400)
{
	struct fx x;

	start(&x, "short");
	param(&x, "CONTENT_LENGTH=%zu", strlen(BODY) + 1);
	refused(&x, 400, "body length differs from CONTENT_LENGTH");
}
END_TEST

START_TEST(timestamp_not_plain_or_outside_401)
{
	static const char *const bad[] = { "0123", "-5", "12a", "1000000000" };
	size_t i;

	for (i = 0; i < NELEM(bad); i++) {
		struct fx x;
		char sig[128];

		fx_init(&x, "ts", "");
		sign(SECRET, "msg_ts", bad[i], BODY, strlen(BODY), sig,
		    sizeof sig);
		param(&x, "REQUEST_METHOD=POST");
		param(&x, "WEBHOOK_CONF=%s", x.conf);
		param(&x, "HTTP_WEBHOOK_ID=msg_ts");
		param(&x, "HTTP_WEBHOOK_TIMESTAMP=%s", bad[i]);
		param(&x, "HTTP_WEBHOOK_SIGNATURE=%s", sig);
		x.fake.body = BODY;
		x.fake.body_len = strlen(BODY);
		ck_assert_int_eq(run(&x), 401);
		ck_assert(contains(x.fake.out, "signature not accepted\n"));
		fx_free(&x);
	}
}
END_TEST

START_TEST(no_entry_verifies_401)
{
	struct fx x;
	char body[] = BODY;

	fx_init(&x, "forged", "");
	post(&x, "msg_forged", body, strlen(body));
	body[2] = 'T';		/* signed before, changed after */
	ck_assert_int_eq(run(&x), 401);
	ck_assert(logged(&x, "no signature entry verifies"));
	ck_assert_int_eq(rows(x.db), 0);
	fx_free(&x);
}
END_TEST

/* A body over twice the read chunk is not kept by an idle thread. */
START_TEST(large_body_not_pinned)
{
	static char big[3 * REQUEST_READ_CHUNK];
	struct fx x;

	memset(big, ' ', sizeof big);
	fx_init(&x, "pin", "");
	post(&x, "msg_pin", big, sizeof big);
	ck_assert_int_eq(run(&x), 200);
	ck_assert_uint_eq(x.rv.body.size, 0);
	fx_free(&x);
}
END_TEST


/* ---- named sources (docs/DESIGN.md "Sources", docs/providers.md) ---- */

#define GH_SECRET	"It's a Secret to Everybody"
#define SOURCES \
	"[source gh]\nscheme = github\nsecret = " GH_SECRET "\n" \
	"[source st]\nscheme = stripe\n" \
	"secret = whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b3\n" \
	"[source slack]\nscheme = slack\n" \
	"secret = 8f742231b10e8888abcd99yyyzzz85a5\n" \
	"[source gl]\nscheme = gitlab\nsecret = tok-1\n" \
	"[source woo]\nscheme = woocommerce\nsecret = w\n" \
	"[source tw]\nscheme = twilio\nsecret = " TW_TOKEN "\n" \
	"url = https://hooks.example.net/webhook.fcgi/twilio\n"
/* tests/vectors/providers.json, twilio_json_body_sha256: signed by
 * twilio-node (getExpectedTwilioSignature over the URL it calls). */
#define TW_TOKEN	"9f8e7d6c5b4a39281706f5e4d3c2b1a0"

/* Lowercase hex HMAC-SHA256 of `msg` under `key` (any length). */
static void
hmac_hex(const char *key, const char *msg, size_t len, char out[65])
{
	crypto_auth_hmacsha256_state st;
	unsigned char mac[crypto_auth_hmacsha256_BYTES];

	crypto_auth_hmacsha256_init(&st, (const unsigned char *)key,
	    strlen(key));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)msg, len);
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2hex(out, 65, mac, sizeof mac);
}

/* A POST to the receiver's URL + path (PATH_INFO), no webhook-* headers. */
static void
post_to(struct fx *x, const char *path, const char *body)
{
	param(x, "REQUEST_METHOD=POST");
	param(x, "WEBHOOK_CONF=%s", x->conf);
	if (path != NULL)
		param(x, "PATH_INFO=%s", path);
	x->fake.body = body;
	x->fake.body_len = strlen(body);
}

/* GitHub's delivery `delivery` of body, signed with GH_SECRET. */
static void
github(struct fx *x, const char *path, const char *delivery, const char *body)
{
	char mac[65];

	hmac_hex(GH_SECRET, body, strlen(body), mac);
	post_to(x, path, body);
	param(x, "HTTP_X_HUB_SIGNATURE_256=sha256=%s", mac);
	param(x, "HTTP_X_GITHUB_DELIVERY=%s", delivery);
	param(x, "HTTP_X_GITHUB_EVENT=issues");
}

/* The one text column `col` of the event `id`, or "(none)". */
static const char *
column(const char *db, const char *col, const char *id)
{
	static char out[512];
	char sql[256];
	sqlite3 *h;
	sqlite3_stmt *s;

	snprintf(sql, sizeof sql, "SELECT %s FROM events WHERE webhook_id = ?",
	    col);
	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, sql, -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	snprintf(out, sizeof out, "(none)");
	if (sqlite3_step(s) == SQLITE_ROW)
		snprintf(out, sizeof out, "%s", sqlite3_column_type(s, 0) ==
		    SQLITE_NULL ? "NULL" : (const char *)sqlite3_column_text(s, 0));
	sqlite3_finalize(s);
	sqlite3_close(h);
	return out;
}

/* How many events' ids start with `prefix` (SQL LIKE, no wildcards in
 * it), and the last such id in *id (static). */
static int
ids_like(const char *db, const char *prefix, const char **id)
{
	static char out[512];
	char pat[300];
	sqlite3 *h;
	sqlite3_stmt *s;
	int n = 0;

	snprintf(pat, sizeof pat, "%s%%", prefix);
	ck_assert_int_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL),
	    SQLITE_OK);
	ck_assert_int_eq(sqlite3_prepare_v2(h, "SELECT webhook_id FROM events"
	    " WHERE webhook_id LIKE ?1 ORDER BY rowid", -1, &s, NULL), SQLITE_OK);
	sqlite3_bind_text(s, 1, pat, -1, SQLITE_STATIC);
	out[0] = '\0';
	while (sqlite3_step(s) == SQLITE_ROW) {
		snprintf(out, sizeof out, "%s", sqlite3_column_text(s, 0));
		n++;
	}
	sqlite3_finalize(s);
	sqlite3_close(h);
	if (id != NULL)
		*id = out;
	return n;
}

/* WooCommerce's delivery of `body` as its webhook sends it: the delivery
 * id it builds from the webhook and the second, the topic and its halves,
 * base64 HMAC-SHA256 under the secret "w". */
static void
woo(struct fx *x, const char *delivery, const char *topic, const char *body)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	char b64[sodium_base64_ENCODED_LEN(sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL)];

	crypto_auth_hmacsha256_state st;

	crypto_auth_hmacsha256_init(&st, (const unsigned char *)"w", 1);
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)body,
	    strlen(body));
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2base64(b64, sizeof b64, mac, sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL);
	post_to(x, "/woo", body);
	param(x, "HTTP_X_WC_WEBHOOK_SIGNATURE=%s", b64);
	param(x, "HTTP_X_WC_WEBHOOK_DELIVERY_ID=%s", delivery);
	param(x, "HTTP_X_WC_WEBHOOK_TOPIC=%s", topic);
	param(x, "HTTP_X_WC_WEBHOOK_RESOURCE=%.*s", (int)strcspn(topic, "."),
	    topic);
}

/* Two WooCommerce deliveries of one webhook within one second share their
 * delivery id (WC_Webhook::get_new_delivery_id hashes the webhook's id and
 * the second) and WooCommerce never resends: both are stored, each under
 * the id and its content's tag; an identical resend is still one event. */
START_TEST(woocommerce_same_id_other_body_both_stored)
{
	const char *id;
	struct fx x;

	fx_init(&x, "woo-ids", SOURCES);
	woo(&x, "5f2a", "order.updated", "{\"id\":3301,"
	    "\"date_modified_gmt\":\"2026-12-07T10:00:00\"}");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	fx_free(&x);
	fx_init(&x, "woo-ids", SOURCES);
	woo(&x, "5f2a", "order.updated", "{\"id\":3302,"
	    "\"date_modified_gmt\":\"2026-12-07T10:00:00\"}");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	fx_free(&x);
	ck_assert_int_eq(ids_like(x.db, "woo/5f2a~", &id), 2);
	ck_assert_str_eq(column(x.db, "object_id", id), "3302");
	/* The same bytes again: provably the same event. */
	fx_init(&x, "woo-ids", SOURCES);
	woo(&x, "5f2a", "order.updated", "{\"id\":3302,"
	    "\"date_modified_gmt\":\"2026-12-07T10:00:00\"}");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "duplicate\n"));
	fx_free(&x);
	ck_assert_int_eq(rows(x.db), 2);
}
END_TEST

/* WooCommerce's ids are per resource type: customer 2200 and order 2200
 * are two objects with two clocks, so a newer customer.updated does not
 * make an older order.updated stale. */
START_TEST(woocommerce_objects_keyed_by_resource)
{
	const char *id;
	struct fx x;

	fx_init(&x, "woo-obj", SOURCES);
	woo(&x, "a1", "customer.updated", "{\"id\":2200,"
	    "\"date_modified_gmt\":\"2026-12-07T10:05:00\"}");
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
	fx_init(&x, "woo-obj", SOURCES);
	woo(&x, "b2", "order.updated", "{\"id\":2200,"
	    "\"date_modified_gmt\":\"2026-12-07T10:00:00\"}");
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
	ck_assert_int_eq(ids_like(x.db, "woo/a1~", &id), 1);
	ck_assert_str_eq(column(x.db, "object_type", id), "woo/customer");
	ck_assert_str_eq(column(x.db, "object_id", id), "2200");
	ck_assert_int_eq(ids_like(x.db, "woo/b2~", &id), 1);
	ck_assert_str_eq(column(x.db, "object_type", id), "woo/order");
	ck_assert_str_eq(column(x.db, "object_id", id), "2200");
}
END_TEST

/* GitHub gives every hook and App that gets one event the same
 * X-GitHub-Delivery, with its own body (github/docs#32822): two validly
 * signed bodies under one GUID are two events. */
START_TEST(github_shared_guid_other_body_stored)
{
	struct fx x;

	fx_init(&x, "gh-guid", SOURCES);
	github(&x, "/gh", "72d3162e", "{\"action\":\"opened\",\"hook_id\":1}");
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
	fx_init(&x, "gh-guid", SOURCES);
	github(&x, "/gh", "72d3162e", "{\"action\":\"opened\",\"hook_id\":2}");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	fx_free(&x);
	ck_assert_int_eq(ids_like(x.db, "gh/72d3162e~", NULL), 2);
}
END_TEST

/* A captured delivery resent under the id of a future one (the id is a
 * header outside the signed bytes, and GitHub signs no time) takes
 * nothing from it: the real delivery, when it comes, is stored. */
START_TEST(replay_under_future_id_takes_nothing)
{
	const char *captured = "{\"action\":\"closed\",\"number\":1}";
	struct fx x;

	fx_init(&x, "replay", SOURCES);
	github(&x, "/gh", "d-1", captured);
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
	fx_init(&x, "replay", SOURCES);
	github(&x, "/gh", "d-2", captured);	/* the replay */
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
	fx_init(&x, "replay", SOURCES);
	github(&x, "/gh", "d-2", "{\"action\":\"opened\",\"number\":2}");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	fx_free(&x);
	ck_assert_int_eq(ids_like(x.db, "gh/d-2~", NULL), 2);
	ck_assert_int_eq(rows(x.db), 3);
}
END_TEST

/* Twilio's JSON delivery: it appends ?bodySHA256=<hex> to the URL it was
 * given and signs that; the config holds the URL as given, the request's
 * query string the rest.  twilio-node's vector, through the receiver. */
START_TEST(twilio_json_body_sha256_stored)
{
	static const char body[] = "{\"ParentAccountSid\":\"AC0\","
	    "\"Payload\":\"{}\"}";
	struct fx x;

	fx_init(&x, "tw-json", SOURCES);
	post_to(&x, "/tw", body);
	param(&x, "QUERY_STRING=bodySHA256=d87b19e6bb74f9fa009461bc8b023355ba"
	    "82078b1bf67a6b199fded07c1b0fc9");
	param(&x, "CONTENT_TYPE=application/json");
	param(&x, "HTTP_X_TWILIO_SIGNATURE=s+GgJIHuy1KiikdutyfwZN6YbkY=");
	param(&x, "HTTP_I_TWILIO_IDEMPOTENCY_TOKEN=tok-1");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	fx_free(&x);
	ck_assert_int_eq(ids_like(x.db, "tw/tok-1~", NULL), 1);
	/* Another body under the same query: the hash pins the body. */
	fx_init(&x, "tw-json", SOURCES);
	post_to(&x, "/tw", "{\"ParentAccountSid\":\"AC1\",\"Payload\":\"{}\"}");
	param(&x, "QUERY_STRING=bodySHA256=d87b19e6bb74f9fa009461bc8b023355ba"
	    "82078b1bf67a6b199fded07c1b0fc9");
	param(&x, "HTTP_X_TWILIO_SIGNATURE=s+GgJIHuy1KiikdutyfwZN6YbkY=");
	ck_assert_int_eq(run(&x), 401);
	fx_free(&x);
}
END_TEST

/* A source's delivery is stored under NAME/ + the provider's id, once;
 * the same id at the default source is another event. */
START_TEST(source_stored_under_its_name)
{
	const char *body = "{\"action\":\"opened\"}", *id;
	struct fx x;

	fx_init(&x, "src", SOURCES);
	github(&x, "/gh", "d-1", body);
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	/* GitHub's id lies outside the signed bytes: the content's tag
	 * follows it (docs/providers.md "Ids"). */
	ck_assert_int_eq(ids_like(x.db, "gh/d-1~", &id), 1);
	ck_assert_str_eq(column(x.db, "type", id), "issues");
	ck_assert_str_eq(column(x.db, "source", id), "gh");
	fx_free(&x);
	/* A redelivery, and the URL with a trailing '/'. */
	fx_init(&x, "src", SOURCES);
	github(&x, "/gh/", "d-1", body);
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "duplicate\n"));
	fx_free(&x);
	fx_init(&x, "src", SOURCES);
	post(&x, "d-1", BODY, strlen(BODY));
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	ck_assert_str_eq(column(x.db, "source", "d-1"), "default");
	ck_assert_int_eq(rows(x.db), 2);
	fx_free(&x);
}
END_TEST

/* An empty body at a source (no "id.ts." prefix before it): signed,
 * stored as the empty body it is.  The body buffer was a null pointer
 * then, and store() added an offset to it (UBSan, fuzz/request). */
START_TEST(source_empty_body_stored)
{
	const char *id;
	struct fx x;

	fx_init(&x, "src", SOURCES);
	github(&x, "/gh", "d-empty", "");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	ck_assert_int_eq(ids_like(x.db, "gh/d-empty~", &id), 1);
	ck_assert_str_eq(column(x.db, "length(body)", id), "0");
	fx_free(&x);
}
END_TEST

/* A URL nobody configured: 404, nothing read or stored. */
START_TEST(unknown_source_404)
{
	static const char *paths[] = { "/nope", "/gh/x", "gh", "/GH",
	    "/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa" };
	struct fx x;

	for (size_t i = 0; i < NELEM(paths); i++) {
		fx_init(&x, "nosrc", SOURCES);
		github(&x, paths[i], "d-1", "{}");
		ck_assert_int_eq(run(&x), 404);
		ck_assert(logged(&x, "names no [source] of this config"));
		fx_free(&x);
	}
	ck_assert_int_eq(access("nosrc.db", F_OK), -1);
}
END_TEST

/* A file of sections alone: the bare URL has no source. */
START_TEST(sources_only_bare_url_404)
{
	char text[1024];
	struct fx x;

	fx_init(&x, "only", "");
	snprintf(text, sizeof text, "database = %s\nlog = %s\n%s", x.db,
	    x.log, SOURCES);
	check_write_file(x.conf, text);
	post(&x, "m-1", BODY, strlen(BODY));
	ck_assert_int_eq(run(&x), 404);
	ck_assert(logged(&x, "no default source"));
	fx_free(&x);
	fx_init(&x, "only", "");
	check_write_file(x.conf, text);
	github(&x, "/gh", "d-2", "{}");
	ck_assert_int_eq(run(&x), 200);
	fx_free(&x);
}
END_TEST

/* Slack's url_verification is answered with its challenge once signed,
 * never stored; unsigned, it is refused like anything else. */
START_TEST(slack_challenge_answered)
{
	const char *body = "{\"type\":\"url_verification\",\"challenge\":"
	    "\"ch4llenge\",\"token\":\"x\"}";
	char ts[32], content[256], mac[65];
	struct fx x;

	snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
	snprintf(content, sizeof content, "v0:%s:%s", ts, body);
	hmac_hex("8f742231b10e8888abcd99yyyzzz85a5", content, strlen(content),
	    mac);
	fx_init(&x, "slack", SOURCES);
	post_to(&x, "/slack", body);
	param(&x, "HTTP_X_SLACK_SIGNATURE=v0=%s", mac);
	param(&x, "HTTP_X_SLACK_REQUEST_TIMESTAMP=%s", ts);
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "Content-Type: text/plain\r\n"));
	ck_assert_msg(contains(x.fake.out, "\r\n\r\nch4llenge"), "%s",
	    x.fake.out);
	ck_assert(logged(&x, "verification request (nothing stored)"));
	ck_assert_int_eq(access(x.db, F_OK) == 0 ? rows(x.db) : 0, 0);
	fx_free(&x);
	fx_init(&x, "slack", SOURCES);
	post_to(&x, "/slack", body);
	param(&x, "HTTP_X_SLACK_SIGNATURE=v0=%064d", 0);
	param(&x, "HTTP_X_SLACK_REQUEST_TIMESTAMP=%s", ts);
	ck_assert_int_eq(run(&x), 401);
	ck_assert(!contains(x.fake.out, "ch4llenge"));
	fx_free(&x);
}
END_TEST

/* One Discord delivery of body, signed by sk, to [source dc]; the
 * status answered. */
static int
discord(struct fx *x, const unsigned char *pk, const unsigned char *sk,
    const char *body)
{
	unsigned char sig[crypto_sign_BYTES];
	char pkhex[2 * crypto_sign_PUBLICKEYBYTES + 1], sighex[2 * sizeof sig + 1];
	char extra[256], msg[512], ts[32];

	sodium_bin2hex(pkhex, sizeof pkhex, pk, crypto_sign_PUBLICKEYBYTES);
	snprintf(ts, sizeof ts, "%lld", (long long)time(NULL));
	snprintf(msg, sizeof msg, "%s%s", ts, body);
	crypto_sign_detached(sig, NULL, (const unsigned char *)msg, strlen(msg),
	    sk);
	sodium_bin2hex(sighex, sizeof sighex, sig, sizeof sig);
	snprintf(extra, sizeof extra, "[source dc]\nscheme = discord\n"
	    "secret = %s\n", pkhex);
	fx_init(x, "discord", extra);
	post_to(x, "/dc", body);
	param(x, "HTTP_X_SIGNATURE_ED25519=%s", sighex);
	param(x, "HTTP_X_SIGNATURE_TIMESTAMP=%s", ts);
	return run(x);
}

/* Discord's two endpoints (docs/providers.md): an Interactions PING (type
 * 1 with a token) gets its PONG as JSON; a Webhook Events PING (type 0)
 * gets 204 and no body; neither is stored.  A Webhook Event (type 1, no
 * token) is stored, with its event's type and timestamp. */
START_TEST(discord_ping_answered)
{
	unsigned char pk[crypto_sign_PUBLICKEYBYTES], sk[crypto_sign_SECRETKEYBYTES];
	const char *event = "{\"version\":1,\"application_id\":\"7\",\"type\":"
	    "1,\"event\":{\"type\":\"APPLICATION_AUTHORIZED\",\"timestamp\":"
	    "\"2024-10-18T14:42:53.064834\",\"data\":{}}}";
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[65], id[96];
	struct fx x;

	crypto_sign_keypair(pk, sk);
	ck_assert_int_eq(discord(&x, pk, sk, "{\"type\":1,\"id\":\"1\","
	    "\"token\":\"t\",\"version\":1}"), 200);
	ck_assert_msg(contains(x.fake.out, "Content-Type: application/json\r\n"),
	    "%s", x.fake.out);
	ck_assert_msg(contains(x.fake.out, "\r\n\r\n{\"type\":1}"), "%s",
	    x.fake.out);
	ck_assert_int_eq(access(x.db, F_OK) == 0 ? rows(x.db) : 0, 0);
	fx_free(&x);
	ck_assert_int_eq(discord(&x, pk, sk, "{\"version\":1,\"application_id\":"
	    "\"7\",\"type\":0}"), 204);
	ck_assert_msg(strncmp(x.fake.out, "Status: 204 No Content\r\n", 24) == 0,
	    "%s", x.fake.out);
	ck_assert(!contains(x.fake.out, "Content-Length"));
	ck_assert_int_eq(access(x.db, F_OK) == 0 ? rows(x.db) : 0, 0);
	fx_free(&x);
	ck_assert_int_eq(discord(&x, pk, sk, event), 200);
	ck_assert(contains(x.fake.out, "stored\n"));
	crypto_hash_sha256(sum, (const unsigned char *)event, strlen(event));
	sodium_bin2hex(hex, sizeof hex, sum, sizeof sum);
	snprintf(id, sizeof id, "dc/sha256:%s", hex);
	ck_assert_str_eq(column(x.db, "type", id), "APPLICATION_AUTHORIZED");
	ck_assert_str_eq(column(x.db, "created_at", id),
	    "2024-10-18T14:42:53.064834000Z");
	fx_free(&x);
}
END_TEST

/* WooCommerce's unsigned creation ping: 200, nothing stored. */
START_TEST(woocommerce_ping_200)
{
	struct fx x;

	fx_init(&x, "woo", SOURCES);
	post_to(&x, "/woo", "webhook_id=12");
	param(&x, "CONTENT_TYPE=application/x-www-form-urlencoded");
	ck_assert_int_eq(run(&x), 200);
	ck_assert(contains(x.fake.out, "ping\n"));
	ck_assert_int_eq(access(x.db, F_OK) == 0 ? rows(x.db) : 0, 0);
	fx_free(&x);
}
END_TEST

/* Another provider's headers at a source: 400 and the line that says
 * what to configure. */
START_TEST(foreign_headers_at_source_400)
{
	struct fx x;

	fx_init(&x, "foreign", SOURCES);
	post_to(&x, "/gh", "{}");
	param(&x, "HTTP_STRIPE_SIGNATURE=t=1,v1=00");
	refused(&x, 400, "[source gh] webhook-id=-: this looks like Stripe's "
	    "Stripe-Signature; this endpoint is GitHub: add a [source …] with "
	    "scheme = stripe");
	fx_init(&x, "foreign", SOURCES);
	post_to(&x, "/gh", "{}");
	refused(&x, 400, "[source gh] webhook-id=-: ");
}
END_TEST

/* Stripe's own clock orders: `created` is the event time, its object is
 * kept under the source's name; an old signature is refused. */
START_TEST(stripe_fields_and_window)
{
	const char *body = "{\"id\":\"evt_1\",\"created\":1764806397,\"type\":"
	    "\"invoice.paid\",\"data\":{\"object\":{\"id\":\"in_7\"}}}";
	const char *key = "whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b3";
	char content[512], mac[65];
	long long ts;
	struct fx x;

	for (int old = 0; old < 2; old++) {
		ts = (long long)time(NULL) - (old ? 3600 : 0);
		snprintf(content, sizeof content, "%lld.%s", ts, body);
		hmac_hex(key, content, strlen(content), mac);
		fx_init(&x, "stripe", SOURCES);
		post_to(&x, "/st", body);
		param(&x, "HTTP_STRIPE_SIGNATURE=t=%lld,v1=%s", ts, mac);
		ck_assert_int_eq(run(&x), old ? 401 : 200);
		fx_free(&x);
	}
	ck_assert_str_eq(column(x.db, "created_at", "st/evt_1"),
	    "2025-12-03T23:59:57.000000000Z");
	ck_assert_str_eq(column(x.db, "created_at_raw", "st/evt_1"),
	    "1764806397");
	ck_assert_str_eq(column(x.db, "object_type", "st/evt_1"), "st");
	ck_assert_str_eq(column(x.db, "object_id", "st/evt_1"), "in_7");
	ck_assert_str_eq(column(x.db, "type", "st/evt_1"), "invoice.paid");
}
END_TEST

/* No id anywhere (a GitLab hook without its UUID): the body's SHA-256 is
 * the id, so the same bytes again are a duplicate. */
START_TEST(no_id_body_digest)
{
	const char *body = "{\"object_kind\":\"push\"}";
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[65], id[128];
	struct fx x;

	crypto_hash_sha256(sum, (const unsigned char *)body, strlen(body));
	sodium_bin2hex(hex, sizeof hex, sum, sizeof sum);
	snprintf(id, sizeof id, "gl/sha256:%s", hex);
	for (int i = 0; i < 2; i++) {
		fx_init(&x, "gl", SOURCES);
		post_to(&x, "/gl", body);
		param(&x, "HTTP_X_GITLAB_TOKEN=tok-1");
		ck_assert_int_eq(run(&x), 200);
		ck_assert(contains(x.fake.out, i ? "duplicate\n" : "stored\n"));
		fx_free(&x);
	}
	ck_assert_str_eq(column(x.db, "webhook_id", id), id);
}
END_TEST

static Suite *
receive_suite(void)
{
	Suite *s = suite_create("receive");
	TCase *tc = tcase_create("status table");

	tcase_add_test(tc, new_event_200_stored);
	tcase_add_test(tc, duplicate_200);
	tcase_add_test(tc, long_lived_chunked_200);
	tcase_add_test(tc, repeated_signature_params_200);
	tcase_add_test(tc, not_post_405_before_anything);
	tcase_add_test(tc, misconfigured_503_before_headers);
	tcase_add_test(tc, database_in_docroot_503);
	tcase_add_test(tc, inbox_unopenable_503);
	tcase_add_test(tc, header_missing_or_empty_400);
	tcase_add_test(tc, id_too_long_400);
	tcase_add_test(tc, signature_header_too_long_401);
	tcase_add_test(tc, content_length_not_a_number_400);
	tcase_add_test(tc, content_length_over_max_body_413);
	tcase_add_test(tc, body_over_max_body_413);
	tcase_add_test(tc, body_too_slow_408);
	tcase_add_test(tc, body_read_error_400);
	tcase_add_test(tc, body_shorter_than_content_length_400);
	tcase_add_test(tc, timestamp_not_plain_or_outside_401);
	tcase_add_test(tc, no_entry_verifies_401);
	tcase_add_test(tc, large_body_not_pinned);
	suite_add_tcase(s, tc);
	tc = tcase_create("sources");
	tcase_add_test(tc, source_stored_under_its_name);
	tcase_add_test(tc, source_empty_body_stored);
	tcase_add_test(tc, woocommerce_same_id_other_body_both_stored);
	tcase_add_test(tc, woocommerce_objects_keyed_by_resource);
	tcase_add_test(tc, github_shared_guid_other_body_stored);
	tcase_add_test(tc, replay_under_future_id_takes_nothing);
	tcase_add_test(tc, twilio_json_body_sha256_stored);
	tcase_add_test(tc, unknown_source_404);
	tcase_add_test(tc, sources_only_bare_url_404);
	tcase_add_test(tc, slack_challenge_answered);
	tcase_add_test(tc, discord_ping_answered);
	tcase_add_test(tc, woocommerce_ping_200);
	tcase_add_test(tc, foreign_headers_at_source_400);
	tcase_add_test(tc, stripe_fields_and_window);
	tcase_add_test(tc, no_id_body_digest);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	log_init("test_receive");
	return check_main_in_tmpdir(receive_suite, dir);
}
