/*
 * ping: one healthchecks-style request after a run (drain/ping.h).
 */
#include <stdio.h>
#include <string.h>

#include <curl/curl.h>

#include "lib/drain/api.h"
#include "lib/drain/ping.h"

/* The monitor's answer is not read: only its status matters. */
static size_t
discard(char *p, size_t size, size_t n, void *arg)
{
	(void)p;
	(void)arg;
	return size * n;
}

int
ping_send(const struct config *c, const char *url, int failed,
    const char *body, size_t len, struct buf *err)
{
	char detail[CURL_ERROR_SIZE] = "";
	struct buf target;
	CURL *curl = NULL;
	CURLcode cc;
	long status = 0;
	int rc = -1;

	buf_init(&target, 8192);
	buf_reset(err);
	/* healthchecks.io: URL/fail signals a failure; a trailing slash in
	 * the URL is not doubled. */
	if (buf_printf(&target, "%s%s", url, !failed ? "" :
	    url[0] && url[strlen(url) - 1] == '/' ? "fail" : "/fail") == -1) {
		(void)buf_printf(err, "URL too long");
		goto out;
	}
	if ((curl = curl_easy_init()) == NULL) {
		(void)buf_printf(err, "libcurl failed to initialise");
		goto out;
	}
	api_curl_setup(curl, c);
	curl_easy_setopt(curl, CURLOPT_URL, target.data);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body ? body : "");
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)
	    (len > PING_BODY_MAX ? PING_BODY_MAX : len));
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, (long)PING_TIMEOUT_S);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, discard);
	curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
	if ((cc = curl_easy_perform(curl)) != CURLE_OK) {
		(void)buf_printf(err, "%s%s%s", curl_easy_strerror(cc),
		    detail[0] ? ": " : "", detail);
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (status < 200 || status > 299) {
		(void)buf_printf(err, "the monitor answered %ld", status);
		goto out;
	}
	rc = 0;
out:
	if (curl != NULL)
		curl_easy_cleanup(curl);
	buf_free(&target);
	return rc;
}
