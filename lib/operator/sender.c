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
#include "lib/store/inbox.h"




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
	a->query[0] = '\0';
	buf_reset(err);
}


enum sender_status
sender_post_source(const struct config *c, const struct config_source *src,
    const struct scheme_secret *key, const char *url, const char *id,
    const void *body, size_t len, struct sender_answer *a, struct buf *err)
{
	struct curl_slist *h;
	struct buf to;
	const char *why;
	enum sender_status st;

	answer_reset(a, err);
	buf_init(&to, 8192);
	if ((h = sender_source_headers(src, key, id, (int64_t)time(NULL), url,
	    body, len, &to, &why)) == NULL) {
		(void)buf_printf(err, "cannot sign as [source %s]: %s", src->name,
		    why);
		buf_free(&to);
		return SENDER_UNSIGNED;
	}
	snprintf(a->query, sizeof a->query, "%s", strchr(to.data, '?') != NULL ?
	    strchr(to.data, '?') + 1 : "");
	st = post(c, h, to.data, body, len, a, err);
	buf_free(&to);
	return st;
}

/* ---- send --source ---- */

const struct config_source *
sender_source(const struct config *c, const char *name, struct buf *err)
{
	const struct config_source *src;
	const char *why = NULL;
	size_t i;

	buf_reset(err);
	if (name == NULL) {
		src = &c->default_source;
		if (src->nsecrets == 0 || sender_signing_key(src, &why) == NULL) {
			(void)buf_printf(err, "send needs a whsec_ secret in %s%s",
			    c->path, c->nsources > 0 ? " (its [source NAME] "
			    "sections: send --source NAME URL/NAME)" : "");
			return NULL;
		}
		return src;
	}
	if ((src = config_source_find(c, name)) == NULL) {
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
	if (sender_signing_key(src, &why) == NULL) {
		(void)buf_printf(err, "[source %s] (scheme = %s) cannot be signed "
		    "here: %s", src->name, src->scheme->name, src->nsecrets == 0 ?
		    "it has no secret" : why);
		return NULL;
	}
	return src;
}

const struct scheme_secret *
sender_signing_key(const struct config_source *src, const char **why)
{
	size_t i;

	*why = "it has no secret";
	for (i = 0; i < src->nsecrets; i++)
		if (scheme_can_sign(src->scheme, &src->secrets[i], why))
			return &src->secrets[i];
	return NULL;
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







struct curl_slist *
sender_source_headers(const struct config_source *src,
    const struct scheme_secret *key, const char *id, int64_t timestamp,
    const char *url, const void *body, size_t len, struct buf *to,
    const char **why)
{
	struct scheme_signed sg;
	struct curl_slist *h = NULL, *t;
	const char *hid = src->locate.id, *htype = src->locate.type;
	const char *q = strchr(url, '?');
	char line[SCHEME_HEADER_NAME_MAX + SCHEME_HEADER_VALUE_MAX + 4];
	size_t i, end = strcspn(url, "?#");
	int ok = 0;

	if (key == NULL && (key = sender_signing_key(src, why)) == NULL)
		return NULL;
	if (scheme_sign(src->scheme, &src->params, key, body, len, timestamp,
	    id, SCHEME_SAMPLE_TYPE, q != NULL ? q + 1 : NULL, &sg, why) == -1)
		return NULL;
	/* The URL called: the given one, its query as the provider's
	 * (Twilio appends bodySHA256 for a JSON body). */
	*why = "out of memory";
	buf_reset(to);
	if (buf_printf(to, "%.*s%s%s", (int)end, url, sg.query[0] ? "?" : "",
	    sg.query) == -1)
		goto out;
	/* A source that finds its id or type in a header of its own gets it
	 * (hmac senders name theirs: docs/providers.md "Fields"). */
	*why = "a header would not fit";
	if (hid != NULL && hid[0] != '/' && scheme_signed_get(&sg, hid) == NULL &&
	    scheme_signed_add(&sg, hid, id) == -1)
		goto out;
	if (htype != NULL && htype[0] != '/' &&
	    scheme_signed_get(&sg, htype) == NULL &&
	    scheme_signed_add(&sg, htype, SCHEME_SAMPLE_TYPE) == -1)
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
		if (scheme_sample_body(s, id, (int64_t)time(NULL), size, body) == 0)
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




/* The request send makes, as the receiver reads it: the id under the
 * header it is read from, the URL's query. */
struct sent {
	const char	*name, *value;
};

static const char *
sent_get(void *arg, const char *name)
{
	const struct sent *sh = arg;

	return sh->name != NULL && strcasecmp(sh->name, name) == 0 ?
	    sh->value : NULL;
}

char *
sender_source_inbox_id(const struct config_source *src, const char *id,
    const char *query, const void *body, size_t len, char *out, size_t outsz)
{
	const struct scheme *s = src->scheme;
	struct sent sh = { NULL, id };
	struct scheme_headers h = { sent_get, &sh, query != NULL &&
	    query[0] != '\0' ? query : NULL };
	struct scheme_event ev;
	const char *why;
	char *rc = NULL;

	if (src->locate.id != NULL)
		sh.name = src->locate.id[0] == '/' ? NULL : src->locate.id;
	else
		sh.name = s->id_header;
	if (scheme_event_read(s, &src->params, &src->locate,
	    strcmp(src->name, INBOX_DEFAULT_SOURCE) != 0 ? src->name : NULL, &h,
	    body, len, &ev, &why) == 0 && (size_t)snprintf(out, outsz, "%s",
	    ev.key) < outsz)
		rc = out;
	scheme_event_free(&ev);
	return rc;
}
