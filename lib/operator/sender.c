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

enum sender_status
sender_post(const struct config *c, const struct signature_key *key,
    const char *url, const char *id, const void *body, size_t len,
    struct sender_answer *a, struct buf *err)
{
	char detail[CURL_ERROR_SIZE] = "";
	struct curl_slist *h;
	enum sender_status st = SENDER_FAILED;
	CURL *curl = NULL;
	CURLcode cc;

	a->status = 0;
	a->ours = 0;
	a->version[0] = '\0';
	buf_reset(err);
	if ((h = sender_headers(key, id, (int64_t)time(NULL), body, len)) == NULL) {
		(void)buf_printf(err, "cannot sign");
		return SENDER_UNSIGNED;
	}
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
	curl_slist_free_all(h);
	if (curl != NULL)
		curl_easy_cleanup(curl);
	return st;
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
    struct buf *body, struct buf *err)
{
	FILE *in = stdin;
	const char *name = "stdin";
	int rc;

	if (sample) {
		if (sender_sample_body(id, size, body) == 0)
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
