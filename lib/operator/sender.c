/*
 * sender: the signed test POST of `webhook-drain send` (operator/sender.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/drain/api.h"
#include "lib/common/instant.h"
#include "lib/operator/sender.h"

const struct signature_key *
sender_key(const struct config *c)
{
	size_t i;

	for (i = 0; i < c->nsecrets; i++)
		if (c->secrets[i].kind == SIGNATURE_HMAC_SHA256)
			return &c->secrets[i];
	return NULL;
}

int
sender_sample_body(const char *id, int64_t size, struct buf *body)
{
	char now[INSTANT_SIZE], *text = NULL;
	cJSON *ev = cJSON_CreateObject(), *data;
	size_t base;
	int rc = -1;

	if (ev == NULL || instant_format(util_now_ns(), now) == -1)
		goto out;
	now[19] = 'Z';		/* to the second, as the provider sends it */
	now[20] = '\0';
	cJSON_AddStringToObject(ev, "id", id);
	cJSON_AddStringToObject(ev, "type", "webhook_inbox.test");
	cJSON_AddStringToObject(ev, "createdAt", now);
	data = cJSON_AddObjectToObject(ev, "data");
	cJSON_AddStringToObject(data, "object", "webhook_inbox_test");
	cJSON_AddStringToObject(data, "id", id);
	cJSON_AddStringToObject(data, "filler", "");
	if ((text = cJSON_PrintUnformatted(ev)) == NULL)
		goto out;
	base = strlen(text);
	if (size > (int64_t)base) {
		char *fill = malloc((size_t)size - base + 1);
		if (fill == NULL)
			goto out;
		memset(fill, 'x', (size_t)size - base);
		fill[size - (int64_t)base] = '\0';
		cJSON_ReplaceItemInObject(data, "filler", cJSON_CreateString(fill));
		free(fill);
		free(text);
		if ((text = cJSON_PrintUnformatted(ev)) == NULL)
			goto out;
	}
	rc = buf_append(body, text, strlen(text));
out:
	free(text);
	cJSON_Delete(ev);
	return rc;
}

struct curl_slist *
sender_headers(const struct signature_key *key, const char *id,
    int64_t timestamp, const void *body, size_t len)
{
	struct curl_slist *h = NULL, *t;
	struct buf content, line;
	char sig[128];
	int ok = 0;

	buf_init(&content, (size_t)SENDER_BODY_MAX + 1024);
	buf_init(&line, 1024);
	if (buf_printf(&content, "%s.%lld.", id, (long long)timestamp) == -1 ||
	    buf_append(&content, body ? body : "", len) == -1 ||
	    signature_sign(key, (const unsigned char *)content.data,
	    content.len, sig, sizeof sig) == -1)
		goto out;
#define HDR(...) do { buf_reset(&line);					\
	if (buf_printf(&line, __VA_ARGS__) == -1 ||			\
	    (t = curl_slist_append(h, line.data)) == NULL)		\
		goto out;						\
	h = t; } while (0)
	HDR("webhook-id: %s", id);
	HDR("webhook-timestamp: %lld", (long long)timestamp);
	HDR("webhook-signature: %s", sig);
	HDR("Content-Type: application/json");
#undef HDR
	ok = 1;
out:
	buf_free(&content);
	buf_free(&line);
	if (!ok) {
		curl_slist_free_all(h);
		h = NULL;
	}
	return h;
}

static size_t
answer_sink(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	/* Keep at most SENDER_ANSWER_MAX bytes, like the provider's log. */
	if (b->len < SENDER_ANSWER_MAX && buf_append(b, p, size * n <
	    SENDER_ANSWER_MAX - b->len ? size * n : SENDER_ANSWER_MAX - b->len) == -1)
		return 0;	/* curl reports the write error */
	return size * n;
}

/* Did the answer carry the receiver's mark (lib/receive/request.c,
 * request_respond), and which version did it say (receive.h)?  The
 * version is kept only as the receiver writes it: letters, digits and
 * " .()_+-" (a proxy's header is not printed). */
static size_t
answer_header(char *p, size_t size, size_t n, void *arg)
{
	static const char mark[] = "x-webhook-inbox:",
	    ver[] = "x-webhook-inbox-version:";
	struct sender_answer *a = arg;
	size_t len = size * n, i, k = 0;

	if (len >= sizeof mark - 1 && strncasecmp(p, mark, sizeof mark - 1) == 0)
		a->ours = 1;
	if (len >= sizeof ver - 1 && strncasecmp(p, ver, sizeof ver - 1) == 0) {
		for (i = sizeof ver - 1; i < len && p[i] == ' '; i++)
			;
		for (; i < len && p[i] != '\r' && p[i] != '\n'; i++) {
			if (k + 1 >= sizeof a->version ||
			    (!isalnum((unsigned char)p[i]) &&
			    strchr(" .()_+-", p[i]) == NULL)) {
				k = 0;
				break;
			}
			a->version[k++] = p[i];
		}
		a->version[k] = '\0';
	}
	return len;
}

/* POST body with the headers h (consumed: freed here). */
static enum sender_status
post(const struct config *c, struct curl_slist *h, const char *url,
    const void *body, size_t len, struct sender_answer *a, struct buf *err)
{
	char detail[CURL_ERROR_SIZE] = "";
	enum sender_status st = SENDER_FAILED;
	CURL *curl = NULL;
	CURLcode cc;

	if ((curl = curl_easy_init()) == NULL) {
		(void)buf_printf(err, "libcurl failed to initialise");
		goto out;
	}
	api_curl_setup(curl, c);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, SENDER_TIMEOUT_S);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, answer_sink);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &a->body);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, answer_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, a);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
	if ((cc = curl_easy_perform(curl)) != CURLE_OK) {
		(void)buf_printf(err, "%s%s%s", curl_easy_strerror(cc),
		    detail[0] ? ": " : "", detail);
		if (cc == CURLE_PEER_FAILED_VERIFICATION ||
		    cc == CURLE_SSL_CACERT_BADFILE)
			st = SENDER_CERT_FAILED;
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &a->status);
	while (a->body.len > 0 && (a->body.data[a->body.len - 1] == '\n' ||
	    a->body.data[a->body.len - 1] == '\r'))
		a->body.len--;
	st = SENDER_SENT;
out:
	/* GitLab's header is its secret: wipe the list's copies. */
	for (struct curl_slist *it = h; it != NULL; it = it->next)
		sodium_memzero(it->data, strlen(it->data));
	curl_slist_free_all(h);
	if (curl != NULL)
		curl_easy_cleanup(curl);
	return st;
}

static void
answer_reset(struct sender_answer *a, struct buf *err)
{
	a->status = 0;
	a->ours = 0;
	a->version[0] = '\0';
	buf_reset(err);
}

enum sender_status
sender_post(const struct config *c, const struct signature_key *key,
    const char *url, const char *id, const void *body, size_t len,
    struct sender_answer *a, struct buf *err)
{
	struct curl_slist *h;

	answer_reset(a, err);
	if ((h = sender_headers(key, id, (int64_t)time(NULL), body, len)) == NULL) {
		(void)buf_printf(err, "cannot sign");
		return SENDER_UNSIGNED;
	}
	return post(c, h, url, body, len, a, err);
}

enum sender_status
sender_post_source(const struct config *c, const struct config_source *src,
    const char *url, const char *id, const void *body, size_t len,
    struct sender_answer *a, struct buf *err)
{
	struct curl_slist *h;
	const char *why;

	answer_reset(a, err);
	if ((h = sender_source_headers(src, id, (int64_t)time(NULL), body, len,
	    &why)) == NULL) {
		(void)buf_printf(err, "cannot sign as [source %s]: %s", src->name,
		    why);
		return SENDER_UNSIGNED;
	}
	return post(c, h, url, body, len, a, err);
}

/* ---- send --source ---- */

const struct config_source *
sender_source(const struct config *c, const char *name, struct buf *err)
{
	const struct config_source *src = config_source_find(c, name);
	const char *why;
	size_t i;

	buf_reset(err);
	if (src == NULL) {
		if (c->nsources == 0) {
			(void)buf_printf(err, "no [source %s] in %s: it has no "
			    "[source] sections", name, c->path);
			return NULL;
		}
		(void)buf_printf(err, "no [source %s] in %s; its sources:", name,
		    c->path);
		for (i = 0; i < c->nsources; i++)
			(void)buf_printf(err, "%s %s", i ? "," : "",
			    c->sources[i].name);
		return NULL;
	}
	if (src->nsecrets == 0 || !scheme_can_sign(src->scheme,
	    &src->secrets[0], &why)) {
		(void)buf_printf(err, "[source %s] (scheme = %s) cannot be signed "
		    "here: %s", src->name, src->scheme->name, src->nsecrets == 0 ?
		    "it has no secret" : why);
		return NULL;
	}
	return src;
}

int
sender_url_names_source(const char *url, const char *name)
{
	size_t end = strcspn(url, "?#"), nl = strlen(name);

	if (end > 0 && url[end - 1] == '/')
		end--;
	return end > nl && url[end - nl - 1] == '/' &&
	    memcmp(url + end - nl, name, nl) == 0;
}

/* hex of n random bytes into out (2n + 1 bytes), upper case when asked. */
static void
random_hex(char *out, size_t n, int upper)
{
	unsigned char rnd[16];
	size_t i;

	randombytes_buf(rnd, n);
	sodium_bin2hex(out, 2 * n + 1, rnd, n);
	for (i = 0; upper && out[i] != '\0'; i++)
		out[i] = (char)toupper((unsigned char)out[i]);
}

const char *
sender_source_id(const struct scheme *s, char out[SENDER_SOURCE_ID_SIZE])
{
	char hex[33];

	switch (s->id) {
	case SCHEME_STRIPE:
	case SCHEME_PADDLE:
		random_hex(hex, 12, 0);
		snprintf(out, SENDER_SOURCE_ID_SIZE, "evt_%s", hex);
		break;
	case SCHEME_SLACK:
		random_hex(hex, 6, 1);
		snprintf(out, SENDER_SOURCE_ID_SIZE, "Ev%s", hex);
		break;
	case SCHEME_GITHUB:
	case SCHEME_GITLAB:
	case SCHEME_SHOPIFY:
		random_hex(hex, 16, 0);
		/* A version 4 UUID, as those senders write them. */
		hex[12] = '4';
		hex[16] = "89ab"[hex[16] % 4];
		snprintf(out, SENDER_SOURCE_ID_SIZE, "%.8s-%.4s-%.4s-%.4s-%.12s",
		    hex, hex + 8, hex + 12, hex + 16, hex + 20);
		break;
	case SCHEME_WOOCOMMERCE:
		random_hex(hex, 16, 0);
		snprintf(out, SENDER_SOURCE_ID_SIZE, "%s", hex);
		break;
	case SCHEME_TWILIO:
		random_hex(hex, 16, 0);
		snprintf(out, SENDER_SOURCE_ID_SIZE, "SM%s", hex);
		break;
	default:
		random_hex(hex, 12, 0);
		snprintf(out, SENDER_SOURCE_ID_SIZE, "msg_%s", hex);
		break;
	}
	return out;
}

/* An RFC 3339 instant of Unix seconds, to the second, into out (32). */
static void
rfc3339(int64_t now, char out[32])
{
	time_t t = (time_t)now;
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "1970-01-01T00:00:00Z");
}

/*
 * Print ev, its `holder` object's "filler" string grown so the whole is
 * `size` bytes when it is shorter; append it to body.
 */
static int
padded_json(cJSON *ev, cJSON *holder, int64_t size, struct buf *body)
{
	char *text = NULL, *fill;
	size_t base;
	int rc = -1;

	if (cJSON_AddStringToObject(holder, "filler", "") == NULL ||
	    (text = cJSON_PrintUnformatted(ev)) == NULL)
		goto out;
	base = strlen(text);
	if (size > (int64_t)base) {
		if ((fill = malloc((size_t)size - base + 1)) == NULL)
			goto out;
		memset(fill, 'x', (size_t)size - base);
		fill[size - (int64_t)base] = '\0';
		cJSON_ReplaceItemInObject(holder, "filler",
		    cJSON_CreateString(fill));
		free(fill);
		free(text);
		if ((text = cJSON_PrintUnformatted(ev)) == NULL)
			goto out;
	}
	rc = buf_append(body, text, strlen(text));
out:
	free(text);
	return rc;
}

/* Twilio's form: an incoming message's parameters (percent-encoded where
 * a form needs it), then a Filler parameter to `size` bytes. */
static int
twilio_form(const char *id, int64_t size, struct buf *body)
{
	char *enc;
	size_t start = body->len, i;
	int rc;

	/* The id is the caller's (--id): encode what a form must. */
	if ((enc = malloc(3 * strlen(id) + 1)) == NULL)
		return -1;
	for (i = 0; *id != '\0'; id++) {
		unsigned char ch = (unsigned char)*id;

		if (isalnum(ch) || strchr("-_.~", ch) != NULL) {
			enc[i++] = (char)ch;
		} else {
			snprintf(enc + i, 4, "%%%02X", ch);
			i += 3;
		}
	}
	enc[i] = '\0';
	rc = buf_printf(body, "AccountSid=AC00000000000000000000000000000000"
	    "&ApiVersion=2010-04-01&Body=webhook-inbox+test&From=%%2B15005550006"
	    "&MessageSid=%s&NumMedia=0&SmsStatus=received&To=%%2B15005550006",
	    enc);
	free(enc);
	if (rc == -1)
		return -1;
	if (size > (int64_t)(body->len - start + 8)) {
		size_t n = (size_t)size - (body->len - start) - 8;

		if (buf_append(body, "&Filler=", 8) == -1)
			return -1;
		while (n > 0) {
			static const char xs[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
			size_t k = n < sizeof xs - 1 ? n : sizeof xs - 1;

			if (buf_append(body, xs, k) == -1)
				return -1;
			n -= k;
		}
	}
	return 0;
}

int
sender_source_body(const struct scheme *s, const char *id, int64_t now,
    int64_t size, struct buf *body)
{
	cJSON *ev = NULL, *o, *holder;
	char when[32], obj[SENDER_SOURCE_ID_SIZE + 8];
	int rc = -1;

	if (s->id == SCHEME_STANDARD || s->id == SCHEME_HMAC ||
	    s->id == SCHEME_DISCORD)
		return sender_sample_body(id, size, body);
	if (s->id == SCHEME_TWILIO)
		return twilio_form(id, size, body);
	rfc3339(now, when);
	snprintf(obj, sizeof obj, "test_%.*s", SENDER_SOURCE_ID_SIZE - 1, id);
	if ((ev = holder = cJSON_CreateObject()) == NULL)
		goto out;
	switch (s->id) {
	case SCHEME_STRIPE:
		cJSON_AddStringToObject(ev, "id", id);
		cJSON_AddStringToObject(ev, "object", "event");
		cJSON_AddNumberToObject(ev, "created", (double)now);
		cJSON_AddBoolToObject(ev, "livemode", 0);
		cJSON_AddStringToObject(ev, "type", SENDER_TEST_TYPE);
		o = cJSON_AddObjectToObject(ev, "data");
		holder = cJSON_AddObjectToObject(o, "object");
		cJSON_AddStringToObject(holder, "id", obj);
		cJSON_AddStringToObject(holder, "object", "webhook_inbox_test");
		break;
	case SCHEME_PADDLE:
		cJSON_AddStringToObject(ev, "event_id", id);
		cJSON_AddStringToObject(ev, "event_type", SENDER_TEST_TYPE);
		cJSON_AddStringToObject(ev, "occurred_at", when);
		holder = cJSON_AddObjectToObject(ev, "data");
		cJSON_AddStringToObject(holder, "id", obj);
		break;
	case SCHEME_SLACK:
		cJSON_AddStringToObject(ev, "token", "webhook-inbox-test");
		cJSON_AddStringToObject(ev, "team_id", "T00000000");
		cJSON_AddStringToObject(ev, "type", "event_callback");
		cJSON_AddStringToObject(ev, "event_id", id);
		cJSON_AddNumberToObject(ev, "event_time", (double)now);
		holder = cJSON_AddObjectToObject(ev, "event");
		cJSON_AddStringToObject(holder, "type", SENDER_TEST_TYPE);
		break;
	case SCHEME_GITLAB:
		cJSON_AddStringToObject(ev, "object_kind", "webhook_inbox_test");
		cJSON_AddStringToObject(ev, "event_name", SENDER_TEST_TYPE);
		cJSON_AddStringToObject(ev, "id", id);
		break;
	case SCHEME_SHOPIFY:
		cJSON_AddStringToObject(ev, "id", id);
		cJSON_AddStringToObject(ev, "admin_graphql_api_id",
		    "gid://shopify/WebhookInboxTest/1");
		cJSON_AddStringToObject(ev, "updated_at", when);
		break;
	case SCHEME_WOOCOMMERCE:
		cJSON_AddStringToObject(ev, "id", id);
		cJSON_AddStringToObject(ev, "status", "webhook-inbox-test");
		/* WooCommerce's _gmt fields carry no zone letter. */
		when[19] = '\0';
		cJSON_AddStringToObject(ev, "date_modified_gmt", when);
		break;
	default:	/* github */
		cJSON_AddStringToObject(ev, "id", id);
		cJSON_AddStringToObject(ev, "action", "webhook_inbox_test");
		break;
	}
	if (holder == NULL)
		goto out;
	rc = padded_json(ev, holder, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

struct curl_slist *
sender_source_headers(const struct config_source *src, const char *id,
    int64_t timestamp, const void *body, size_t len, const char **why)
{
	struct scheme_signed sg;
	struct curl_slist *h = NULL, *t;
	const char *hid = src->locate.id, *htype = src->locate.type;
	char line[SCHEME_HEADER_NAME_MAX + SCHEME_HEADER_VALUE_MAX + 4];
	size_t i;
	int ok = 0;

	if (src->nsecrets == 0) {
		*why = "no secret";
		return NULL;
	}
	if (scheme_sign(src->scheme, &src->params, &src->secrets[0], body, len,
	    timestamp, id, SENDER_TEST_TYPE, &sg, why) == -1)
		return NULL;
	/* A source that finds its id or type in a header of its own gets it
	 * (hmac senders name theirs: docs/providers.md "Fields"). */
	*why = "a header would not fit";
	if (hid != NULL && hid[0] != '/' && scheme_signed_get(&sg, hid) == NULL &&
	    scheme_signed_add(&sg, hid, id) == -1)
		goto out;
	if (htype != NULL && htype[0] != '/' &&
	    scheme_signed_get(&sg, htype) == NULL &&
	    scheme_signed_add(&sg, htype, SENDER_TEST_TYPE) == -1)
		goto out;
	for (i = 0; i <= sg.n; i++) {
		if (i < sg.n)
			snprintf(line, sizeof line, "%s: %s", sg.h[i].name,
			    sg.h[i].value);
		else
			snprintf(line, sizeof line, "Content-Type: %s",
			    sg.content_type);
		if ((t = curl_slist_append(h, line)) == NULL) {
			*why = "out of memory";
			goto out;
		}
		h = t;
	}
	ok = 1;
out:
	sodium_memzero(line, sizeof line);
	scheme_signed_wipe(&sg);
	if (!ok) {
		for (t = h; t != NULL; t = t->next)
			sodium_memzero(t->data, strlen(t->data));
		curl_slist_free_all(h);
		h = NULL;
	}
	return h;
}

int
sender_read_body(FILE *in, struct buf *body, struct buf *err)
{
	char chunk[65536];
	size_t n;

	while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
		if (buf_append(body, chunk, n) == -1) {
			(void)buf_printf(err, "body larger than %zu bytes",
			    body->cap);
			return -1;
		}
	if (ferror(in)) {
		(void)buf_printf(err, "%s", strerror(errno));
		return -1;
	}
	if (body->len == 0) {
		(void)buf_printf(err, "empty");
		return -1;
	}
	return 0;
}

int
sender_pick_body(const char *path, int sample, int64_t size, const char *id,
    const struct scheme *s, struct buf *body, struct buf *err)
{
	FILE *in = stdin;
	const char *name = "stdin";
	int rc;

	if (sample) {
		if ((s != NULL ? sender_source_body(s, id, (int64_t)time(NULL),
		    size, body) : sender_sample_body(id, size, body)) == 0)
			return 0;
		buf_reset(err);
		(void)buf_printf(err, "out of memory");
		return -1;
	}
	if (path != NULL && strcmp(path, "-") != 0) {
		name = path;
		if ((in = fopen(path, "rb")) == NULL) {
			buf_reset(err);
			(void)buf_printf(err, "%s: %s", path, strerror(errno));
			return -1;
		}
	}
	if ((rc = sender_read_body(in, body, err)) == -1) {
		char why[512];

		snprintf(why, sizeof why, "%s", err->data ? err->data : "");
		buf_reset(err);
		(void)buf_printf(err, "%s: %s; nothing sent (send --size N URL "
		    "sends a test event)", name, why);
	}
	if (in != stdin)
		fclose(in);
	return rc;
}

const char *
sender_new_id(char out[SENDER_ID_SIZE])
{
	unsigned char rnd[12];

	randombytes_buf(rnd, sizeof rnd);
	memcpy(out, "msg_", 4);
	sodium_bin2hex(out + 4, SENDER_ID_SIZE - 4, rnd, sizeof rnd);
	return out;
}

/* The headers send --source sends, as far as ids go: `id` under the
 * header the id is read from, nothing else. */
struct id_header {
	const char	*name, *value;
};

static const char *
id_header_get(void *arg, const char *name)
{
	const struct id_header *ih = arg;

	return ih->name != NULL && strcasecmp(ih->name, name) == 0 ?
	    ih->value : NULL;
}

char *
sender_source_inbox_id(const struct config_source *src, const char *id,
    const void *body, size_t len, char *out, size_t outsz)
{
	const struct scheme *s = src->scheme;
	struct id_header ih = { NULL, id };
	const struct scheme_headers h = { id_header_get, &ih, NULL };
	struct scheme_fields f;
	const char *why;

	if (src->locate.id != NULL)
		ih.name = src->locate.id[0] == '/' ? NULL : src->locate.id;
	else
		ih.name = s->id == SCHEME_STANDARD ? "webhook-id" : s->id_header;
	if (scheme_extract(s, &src->locate, &h, body, len, &f, &why) == -1)
		return NULL;
	return scheme_event_key(s, &src->locate, src->name, &f, &h, body, len,
	    out, outsz);
}
