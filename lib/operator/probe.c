/*
 * probe: the endpoint end to end (operator/probe.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <sodium.h>

#include "lib/program/version.h"
#include "lib/drain/api.h"
#include "lib/operator/probe.h"
#include "lib/operator/sender.h"

struct probe {
	const struct config	*c;
	const char		*url;
	const struct setup_hooks *h;
	struct setup_counts	*n;
};

static void say(struct probe *p, const char *level, const char *fmt, ...)
	    __attribute__((format(printf, 3, 4)));
static void say_about(struct probe *p, const char *what, const char *level,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
vsay(struct probe *p, const char *what, const char *level, const char *fmt,
    va_list ap)
{
	char text[1024];

	vsnprintf(text, sizeof text, fmt, ap);
	if (strcmp(level, SETUP_FAIL) == 0)
		p->n->fail++;
	else if (strcmp(level, SETUP_WARN) == 0)
		p->n->warn++;
	p->h->finding(p->h->arg, level, what, text);
}

static void
say(struct probe *p, const char *level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(p, "url", level, fmt, ap);
	va_end(ap);
}

static void
say_about(struct probe *p, const char *what, const char *level,
    const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsay(p, what, level, fmt, ap);
	va_end(ap);
}

/* The step of docs/HOSTING.md an answer points at, for a request that
 * should have been stored (PROBE_STEP_*: each opens "(Title"). */
static const char *
step_for(const struct sender_answer *a)
{
	if (!a->ours && (a->status == 404 || a->status == 403))
		return PROBE_STEP_UPLOAD ": the wrapper and .htaccess in "
		    "public_html/webhook/) or " PROBE_STEP_TEST ": the URL names "
		    "public_html/webhook/webhook.fcgi)";
	if (!a->ours)
		return PROBE_STEP_UPLOAD ": the web server answered itself: the "
		    "wrapper, .htaccess, and the web server's error log)";
	if (a->status == 401)
		return PROBE_STEP_EDIT ": the receiver checks with another "
		    "secret: the wrapper's WEBHOOK_CONF names another config?)";
	if (a->status == 413)
		return PROBE_STEP_EDIT ": max_body in the receiver's config)";
	if (a->status == 503)
		return PROBE_STEP_EDIT ": the receiver is misconfigured or cannot "
		    "write its inbox: its `log` says why)";
	return PROBE_STEP_TEST ": the table of answers; the receiver's `log`)";
}

/*
 * A delivery stored: ok, with the version the receiver says
 * (X-Webhook-Inbox-Version, lib/receive/receive.h), and a warning when it
 * is not this drainer's: an upgrade half done ("Upgrading" in
 * docs/HOSTING.md: both together), or a FastCGI receiver that has not
 * taken the new file over yet (it does at its next request).
 */
static void
stored(struct probe *p, const char *what, const struct sender_answer *a)
{
	char ours[sizeof a->version];

	if (a->version[0] == '\0') {
		say(p, SETUP_OK, "%s: 200 as expected (the receiver says no "
		    "version: a build older than this drainer)", what);
		return;
	}
	say(p, SETUP_OK, "%s: 200 as expected, from webhook.fcgi %s", what,
	    a->version);
	(void)snprintf(ours, sizeof ours, "%s (commit %s)", version_number,
	    version_commit);
	if (strcmp(ours, a->version) != 0)
		say(p, SETUP_WARN, "%s: the receiver is webhook.fcgi %s, this "
		    "drainer %s: upgrade both together (HOSTING.md, Upgrading); "
		    "a FastCGI receiver takes a new file over at its next "
		    "request, so check again", what, a->version, ours);
}

/* One signed POST of `size` bytes (a sample event of the default source,
 * with `key`: NULL its own) that must be answered `want`. */
static void
signed_post(struct probe *p, const struct scheme_secret *key, int64_t size,
    const char *what, long want)
{
	const struct config_source *src = &p->c->default_source;
	struct sender_answer a;
	struct buf body, err;
	unsigned char rnd[8];
	char id[40];

	memcpy(id, "msg_probe_", 11);
	randombytes_buf(rnd, sizeof rnd);
	sodium_bin2hex(id + 10, sizeof id - 10, rnd, sizeof rnd);
	buf_init(&body, SENDER_BODY_MAX);
	buf_init(&err, BUF_ERR_MAX);
	buf_init(&a.body, 4096);
	if (scheme_sample_body(src->scheme, id, (int64_t)time(NULL), size,
	    &body) == -1)
		say(p, SETUP_FAIL, "%s: out of memory", what);
	else if (sender_post_source(p->c, src, key, p->url, id, body.data,
	    body.len, &a, &err) != SENDER_SENT)
		say(p, SETUP_FAIL, "%s: %s — " PROBE_STEP_TEST ": the URL) or "
		    "the host's firewall", what, err.data);
	else if (a.status == want && want == 200 && a.ours)
		stored(p, what, &a);
	else if (a.status == want && (a.ours || want != 200))
		say(p, SETUP_OK, "%s: %ld as expected", what, a.status);
	else
		say(p, SETUP_FAIL, "%s: %ld%s, not %ld — revisit %s", what,
		    a.status, a.ours ? "" : " from the web server itself", want,
		    want == 200 ? step_for(&a) : PROBE_STEP_EDIT ": a receiver "
		    "that stores what it cannot verify is not using your secret)");
	buf_free(&body);
	buf_free(&err);
	buf_free(&a.body);
}

static size_t
discard(char *d, size_t size, size_t nm, void *arg)
{
	(void)d;
	(void)arg;
	return size * nm;
}

/* A GET must be refused with 405: anything else is not our receiver. */
static void
get_refused(struct probe *p)
{
	char detail[CURL_ERROR_SIZE] = "";
	CURL *curl;
	long status = 0;

	if ((curl = curl_easy_init()) == NULL) {
		say(p, SETUP_FAIL, "GET: libcurl failed to initialise");
		return;
	}
	api_curl_setup(curl, p->c);
	curl_easy_setopt(curl, CURLOPT_URL, p->url);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, SENDER_TIMEOUT_S);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
	if (curl_easy_perform(curl) != CURLE_OK)
		say(p, SETUP_FAIL, "GET: %s — " PROBE_STEP_TEST ": the URL)",
		    detail);
	else if (curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status),
	    status == 405)
		say(p, SETUP_OK, "GET: 405 as expected");
	else
		say(p, SETUP_FAIL, "GET: %ld, not 405 — revisit "
		    PROBE_STEP_UPLOAD ": the URL does not reach the receiver: "
		    ".htaccess and the wrapper)", status);
	curl_easy_cleanup(curl);
}

void
probe_url(const struct config *c, const char *url,
    const struct setup_hooks *h, struct setup_counts *n)
{
	struct probe p = { c, url, h, n };
	const struct scheme_secret *key;
	struct scheme_secret wrong;
	const char *why;

	if (c->default_source.nsecrets == 0 && c->nsources > 0) {
		/* Sections alone: the bare URL has no source to probe (it
		 * answers 404); each source is probed at URL/NAME. */
		say(&p, SETUP_OK, "no default source (no top-level secret): %s "
		    "itself is not probed, its sources are", url);
		return;
	}
	if ((key = sender_signing_key(&c->default_source, &why)) == NULL) {
		say(&p, SETUP_FAIL, "no whsec_ secret in %s to sign with", c->path);
		return;
	}
	signed_post(&p, NULL, 0, "signed small body", 200);
	signed_post(&p, NULL, PROBE_LARGE_BODY, "signed 250 KB body", 200);
	/* A key nobody configured: the receiver must refuse it. */
	memset(&wrong, 0, sizeof wrong);
	wrong.len = 32;
	randombytes_buf(wrong.key, wrong.len);
	signed_post(&p, &wrong, 0, "wrong signature", 401);
	scheme_secret_wipe(&wrong);
	get_refused(&p);
}

/* One source's signed test at url/NAME. */
static void
source_post(struct probe *p, const struct config_source *src)
{
	struct sender_answer a;
	struct buf body, err, url;
	char what[CONFIG_SOURCE_NAME_MAX + 8], id[SCHEME_SAMPLE_ID_SIZE];
	const char *why;
	size_t ul = strlen(p->url);

	snprintf(what, sizeof what, "source %s", src->name);
	if (sender_signing_key(src, &why) == NULL) {
		say_about(p, what, SETUP_OK, "%s: not sent — %s", src->scheme->title,
		    src->nsecrets == 0 ? "it has no secret" : why);
		return;
	}
	buf_init(&body, SENDER_BODY_MAX);
	buf_init(&err, BUF_ERR_MAX);
	buf_init(&url, 4096);
	buf_init(&a.body, 4096);
	/* The receiver's URL + "/NAME": where it takes this source. */
	if (buf_printf(&url, "%.*s/%s", (int)(ul > 0 && p->url[ul - 1] == '/' ?
	    ul - 1 : ul), p->url, src->name) == -1 ||
	    scheme_sample_body(src->scheme, scheme_sample_id(src->scheme, id),
	    (int64_t)time(NULL), 0, &body) == -1)
		say_about(p, what, SETUP_FAIL, "out of memory");
	else if (sender_post_source(p->c, src, NULL, url.data, id, body.data,
	    body.len, &a, &err) != SENDER_SENT)
		say_about(p, what, SETUP_FAIL, "%s: %s — " PROBE_STEP_TEST
		    ": the URL) or the host's firewall", url.data, err.data);
	else if (a.status == 200 && a.ours)
		say_about(p, what, SETUP_OK, "%s signed as %s: 200 as expected",
		    url.data, src->scheme->title);
	else if (a.status == 404 && a.ours)
		say_about(p, what, SETUP_FAIL, "%s: 404 from the receiver: it "
		    "has no [source %s] — its config (the wrapper's "
		    "WEBHOOK_CONF) is another, or it is older than this "
		    "drainer: upgrade both together", url.data, src->name);
	else if (a.status == 401 && a.ours)
		say_about(p, what, SETUP_FAIL, "%s: 401: the receiver checks "
		    "[source %s] with another secret — revisit "
		    PROBE_STEP_EDIT ": the wrapper's WEBHOOK_CONF names another "
		    "config?)", url.data, src->name);
	else
		say_about(p, what, SETUP_FAIL, "%s: %ld%s, not 200 — revisit %s",
		    url.data, a.status, a.ours ? "" : " from the web server "
		    "itself", step_for(&a));
	buf_free(&body);
	buf_free(&err);
	buf_free(&url);
	buf_free(&a.body);
}

void
probe_sources(const struct config *c, const char *url,
    const struct setup_hooks *h, struct setup_counts *n)
{
	struct probe p = { c, url, h, n };
	size_t i;

	for (i = 0; i < c->nsources; i++)
		source_post(&p, &c->sources[i]);
}
