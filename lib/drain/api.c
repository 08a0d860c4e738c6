/*
 * api: libcurl GETs against the provider's API.  See drain/api.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "lib/drain/api.h"

struct api {
	CURLM			*multi;		/* holds curl during a request */
	CURL			*curl;
	const struct api_waiter	*waiter;	/* NULL: none */
	struct curl_slist	*headers;
	char			*base;
	int64_t			 timeout;
	struct buf		 body;
	struct buf		 url;
	char			 detail[CURL_ERROR_SIZE];	/* curl's */
};

/* Where distributions keep the system's CA bundle, commonest first. */
static const char *const ca_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",	/* Debian, Ubuntu, Alpine, Arch */
	"/etc/pki/tls/certs/ca-bundle.crt",	/* RHEL, AlmaLinux, CloudLinux, Fedora */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem",	/* RHEL 7 and later */
	"/etc/ssl/ca-bundle.pem",		/* openSUSE, SLES */
	"/var/lib/ca-certificates/ca-bundle.pem",	/* older SUSE */
	"/etc/ssl/cert.pem",			/* Alpine, Void */
};

const char *
api_ca_bundle(const struct config *c)
{
	const char *env = getenv("SSL_CERT_FILE");
	size_t i;

	if (c->api_ca_file != NULL)
		return c->api_ca_file;
	if (env != NULL && *env != '\0')
		return env;
	for (i = 0; i < sizeof ca_bundles / sizeof ca_bundles[0]; i++)
		if (access(ca_bundles[i], R_OK) == 0)
			return ca_bundles[i];
	return NULL;
}

void
api_curl_setup(CURL *curl, const struct config *c)
{
	const char *ca = api_ca_bundle(c);

	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (ca != NULL)
		curl_easy_setopt(curl, CURLOPT_CAINFO, ca);
}

static size_t
sink(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	if (buf_append(b, p, size * n) == -1)
		return 0;	/* over API_BODY_MAX: curl reports a write error */
	return size * n;
}

int
api_open(const struct config *c, struct api **out, struct buf *err)
{
	struct api *a = NULL;
	struct buf auth;
	char *token = NULL;
	size_t n;

	*out = NULL;
	buf_init(&auth, CONFIG_TOKEN_MAX + 64);
	if (c->api_url == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "%s: api_url: required to talk to the "
		    "provider's API", c->path);
		goto fail;
	}
	if ((token = config_api_token(c, err)) == NULL)
		goto fail;
	if ((a = calloc(1, sizeof *a)) == NULL || (a->base = strdup(c->api_url)) == NULL)
		goto oom;
	n = strlen(a->base);
	while (n > 0 && a->base[n - 1] == '/')
		a->base[--n] = '\0';
	a->timeout = c->api_timeout_s;
	buf_init(&a->body, API_BODY_MAX);
	buf_init(&a->url, 16384);
	if ((a->curl = curl_easy_init()) == NULL ||
	    (a->multi = curl_multi_init()) == NULL)
		goto oom;
	if (buf_printf(&auth, "Authorization: Bearer %s", token) == -1 ||
	    (a->headers = curl_slist_append(NULL, auth.data)) == NULL ||
	    (a->headers = curl_slist_append(a->headers,
	    "Accept: application/json")) == NULL)
		goto oom;
	curl_easy_setopt(a->curl, CURLOPT_HTTPHEADER, a->headers);
	curl_easy_setopt(a->curl, CURLOPT_USERAGENT, "webhook-inbox");
	api_curl_setup(a->curl, c);
	curl_easy_setopt(a->curl, CURLOPT_ERRORBUFFER, a->detail);
	curl_easy_setopt(a->curl, CURLOPT_TIMEOUT, (long)a->timeout);
	curl_easy_setopt(a->curl, CURLOPT_CONNECTTIMEOUT,
	    (long)(a->timeout < 10 ? a->timeout : 10));
	curl_easy_setopt(a->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(a->curl, CURLOPT_WRITEFUNCTION, sink);
	curl_easy_setopt(a->curl, CURLOPT_WRITEDATA, &a->body);
	curl_easy_setopt(a->curl, CURLOPT_ACCEPT_ENCODING, "");
	sodium_memzero(auth.data, auth.len);
	buf_free(&auth);
	sodium_memzero(token, strlen(token));
	free(token);
	*out = a;
	return 0;
oom:
	buf_reset(err);
	(void)buf_printf(err, "api: out of memory");
fail:
	if (auth.data != NULL)
		sodium_memzero(auth.data, auth.len);
	buf_free(&auth);
	if (token != NULL) {
		sodium_memzero(token, strlen(token));
		free(token);
	}
	api_close(a);
	return -1;
}

void
api_close(struct api *a)
{
	struct curl_slist *h;

	if (a == NULL)
		return;
	/* The first header holds the token. */
	for (h = a->headers; h != NULL; h = h->next)
		sodium_memzero(h->data, strlen(h->data));
	curl_slist_free_all(a->headers);
	if (a->curl != NULL)
		curl_easy_cleanup(a->curl);
	if (a->multi != NULL)
		curl_multi_cleanup(a->multi);
	free(a->base);
	buf_free(&a->body);
	buf_free(&a->url);
	free(a);
}

void
api_set_waiter(struct api *a, const struct api_waiter *w)
{
	a->waiter = w;
}

/* How long one wait may last, ms: until the waiter's due instant (or
 * this cap without one; libcurl shortens it for its own timeouts). */
#define WAIT_CAP_MS	1000

/* One wait on curl's sockets and the waiter's descriptors, then the
 * waiter served.  CURLM_OK or curl's error. */
static CURLMcode
wait_once(struct api *a)
{
	struct pollfd p[API_WAIT_FDS_MAX];
	struct curl_waitfd w[API_WAIT_FDS_MAX];
	const struct api_waiter *wt = a->waiter;
	int64_t due = -1, now;
	size_t n = 0, i;
	CURLMcode mc;
	int ms = WAIT_CAP_MS;

	if (wt != NULL) {
		n = wt->fds(wt->arg, p, API_WAIT_FDS_MAX, &due);
		if (n > API_WAIT_FDS_MAX)
			n = API_WAIT_FDS_MAX;
	}
	if (due >= 0) {
		now = util_mono_ns();
		/* Round up: waking a little late beats spinning early. */
		ms = due <= now ? 0 : (due - now + 999999) / 1000000 >
		    WAIT_CAP_MS ? WAIT_CAP_MS : (int)((due - now + 999999) /
		    1000000);
	}
	for (i = 0; i < n; i++) {
		w[i].fd = p[i].fd;
		w[i].events = (short)((p[i].events & POLLIN ? CURL_WAIT_POLLIN :
		    0) | (p[i].events & POLLOUT ? CURL_WAIT_POLLOUT : 0));
		w[i].revents = 0;
	}
	mc = curl_multi_poll(a->multi, w, (unsigned)n, ms, NULL);
	for (i = 0; i < n; i++)
		p[i].revents = (short)((w[i].revents & CURL_WAIT_POLLIN ? POLLIN :
		    0) | (w[i].revents & CURL_WAIT_POLLOUT ? POLLOUT : 0));
	if (wt != NULL)
		wt->serve(wt->arg, p, n);
	return mc;
}

/* curl_easy_perform, but through the multi handle and our own waits. */
static CURLcode
perform(struct api *a)
{
	CURLcode cc = CURLE_FAILED_INIT;
	CURLMcode mc;
	CURLMsg *msg;
	int running = 1, left;

	if ((mc = curl_multi_add_handle(a->multi, a->curl)) != CURLM_OK)
		goto out;
	while ((mc = curl_multi_perform(a->multi, &running)) == CURLM_OK &&
	    running > 0)
		if ((mc = wait_once(a)) != CURLM_OK)
			break;
	while ((msg = curl_multi_info_read(a->multi, &left)) != NULL)
		if (msg->msg == CURLMSG_DONE && msg->easy_handle == a->curl)
			cc = msg->data.result;
	curl_multi_remove_handle(a->multi, a->curl);
out:
	if (mc != CURLM_OK && a->detail[0] == '\0')
		snprintf(a->detail, sizeof a->detail, "%s",
		    curl_multi_strerror(mc));
	return cc;
}

int
api_escape(struct api *a, const char *s, struct buf *out)
{
	char *e = curl_easy_escape(a->curl, s, 0);
	int rc;

	if (e == NULL)
		return -1;
	rc = buf_append(out, e, strlen(e));
	curl_free(e);
	return rc;
}

enum api_status
api_get(struct api *a, const char *path, cJSON **json, int64_t *retry_after,
    struct buf *err)
{
	const char *end = NULL;
	curl_off_t ra = 0;
	long status = 0;
	CURLcode cc;

	*json = NULL;
	*retry_after = 0;
	buf_reset(err);
	buf_reset(&a->body);
	buf_reset(&a->url);
	if (buf_printf(&a->url, "%s/%s", a->base, path) == -1) {
		(void)buf_printf(err, "api: URL too long");
		return API_BAD;
	}
	curl_easy_setopt(a->curl, CURLOPT_URL, a->url.data);
	a->detail[0] = '\0';
	cc = perform(a);
	if (cc != CURLE_OK) {
		/* curl's own words say which certificate check failed. */
		(void)buf_printf(err, "GET %s: %s%s%s", path, curl_easy_strerror(cc),
		    a->detail[0] ? ": " : "", a->detail);
		/* An answer over API_BODY_MAX is no transient trouble. */
		return cc == CURLE_WRITE_ERROR ? API_BAD : API_RETRY;
	}
	curl_easy_getinfo(a->curl, CURLINFO_RESPONSE_CODE, &status);
	if (curl_easy_getinfo(a->curl, CURLINFO_RETRY_AFTER, &ra) == CURLE_OK &&
	    ra > 0)
		*retry_after = (int64_t)ra;
	if (status == 404) {
		(void)buf_printf(err, "GET %s: 404", path);
		return API_NOT_FOUND;
	}
	if (status == 401 || status == 403) {
		(void)buf_printf(err, "GET %s: %ld: the API refused the token "
		    "(api_token_file / WEBHOOK_API_TOKEN)", path, status);
		return API_AUTH;
	}
	if (status == 429 || status == 408 || status >= 500) {
		(void)buf_printf(err, "GET %s: %ld", path, status);
		return API_RETRY;
	}
	if (status < 200 || status > 299) {
		(void)buf_printf(err, "GET %s: unexpected status %ld", path, status);
		return API_BAD;
	}
	*json = cJSON_ParseWithLengthOpts(a->body.data ? a->body.data : "",
	    a->body.len, &end, 0);
	if (*json != NULL)
		for (; end < a->body.data + a->body.len; end++)
			if (*end != ' ' && *end != '\t' && *end != '\n' &&
			    *end != '\r') {
				cJSON_Delete(*json);
				*json = NULL;
				break;
			}
	if (*json == NULL) {
		(void)buf_printf(err, "GET %s: the answer is not JSON", path);
		return API_BAD;
	}
	return API_OK;
}
