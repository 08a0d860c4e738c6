/*
 * github: GitHub's webhooks (docs.github.com webhook-events-and-payloads
 * "Delivery headers", validating-webhook-deliveries,
 * handling-failed-webhook-deliveries; github/docs#32822).
 *
 * X-GitHub-Delivery names the *event*: every hook and App that gets it
 * gets the same GUID, with its own body, and a redelivery keeps it.  No
 * header is signed (X-Hub-Signature-256 is the body's HMAC-SHA256, hex)
 * and no time is, so the id alone proves nothing: the inbox keys it with
 * its content (scheme_event_key).  GitHub does not send again by itself;
 * a 2xx within 10 s is success.  The secret is any text.
 */
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static int
github_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Hub-Signature-256") != NULL ||
	    scheme_hget(h, "X-Hub-Signature") != NULL;
}

static void
github_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = scheme_hget(h, "X-Hub-Signature-256");

	(void)p;
	(void)now;
	if (hv == NULL) {
		/* The SHA-1 X-Hub-Signature alone is not enough: GitHub
		 * always sends the SHA-256 one when a secret is set. */
		scheme_refuse(res, SCHEME_MISSING, "X-Hub-Signature-256 is required "
		    "(is a secret set on the GitHub webhook?)");
		return;
	}
	scheme_body_mac_verify(keys, nkeys, hv, "sha256=", SCHEME_SHA256, SCHEME_HEX,
	    body, body_len, res);
}

/* Both signatures, as GitHub still sends the SHA-1 one. */
static int
github_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	struct part part = { body, body_len };
	char v[SCHEME_HEADER_VALUE_MAX], v1[SCHEME_HEADER_VALUE_MAX];

	(void)p;
	(void)ts;
	(void)why;
	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, &part, 1,
	    "sha256=", v) == -1 ||
	    scheme_encoded_mac(SCHEME_SHA1, SCHEME_HEX, key, &part, 1, "sha1=",
	    v1) == -1 ||
	    scheme_signed_add(out, "X-Hub-Signature-256", v) == -1 ||
	    scheme_signed_add(out, "X-Hub-Signature", v1) == -1 ||
	    scheme_signed_opt(out, "X-GitHub-Delivery", id) == -1 ||
	    scheme_signed_opt(out, "X-GitHub-Event", type) == -1)
		return -1;
	return 0;
}

static int
github_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject();
	int rc = -1;

	(void)now;
	if (ev == NULL || cJSON_AddStringToObject(ev, "id", id) == NULL ||
	    cJSON_AddStringToObject(ev, "action", "webhook_inbox_test") == NULL)
		goto out;
	rc = sample_padded_json(ev, ev, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_github = {
	.name = "github",
	.title = "GitHub",
	.signature_header = "X-Hub-Signature-256",
	.id_header = "X-GitHub-Delivery",
	.type_header = "X-GitHub-Event",
	.recognise = github_recognise,
	.secret_load = scheme_raw_secret,
	.verify = github_verify,
	.sign = github_sign,
	.sample_id = sample_uuid,
	.sample_body = github_sample_body,
};
