/*
 * shopify: Shopify's webhooks (shopify.dev …/webhooks/verify-deliveries,
 * …/webhooks/ignore-duplicates, …/webhooks/delivery-structure; changelog
 * "updates to webhook retry mechanism").
 *
 * X-Shopify-Event-Id names the event (the duplicates guide's key; one
 * delivery per subscription carries it), X-Shopify-Webhook-Id one
 * delivery; neither is signed (X-Shopify-Hmac-Sha256 is the body's
 * HMAC-SHA256, base64, under the app's client secret), so the inbox keys
 * the id with its content.  Shopify retries 8 times over 4 h with the
 * original payload; a 2xx within 5 s stops it.  Objects carry their type
 * (admin_graphql_api_id, gid://shopify/Order/…); the clock is
 * X-Shopify-Triggered-At, else the body's updated_at.  The newer "events"
 * deliveries drop the X- prefix of every header.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static const char *
unprefixed(const struct scheme_headers *h, const char *name)
{
	char x[64];
	const char *v;

	snprintf(x, sizeof x, "X-%s", name);
	if ((v = scheme_hget(h, x)) != NULL)
		return v;
	return scheme_hget(h, name);
}

/* The table's names are X-Shopify-*; a delivery may drop the X-. */
static const char *
shopify_header(const struct scheme_headers *h, const char *name)
{
	return strncmp(name, "X-", 2) == 0 ? unprefixed(h, name + 2) :
	    scheme_hget(h, name);
}

static int
shopify_recognise(const struct scheme_headers *h)
{
	return unprefixed(h, "Shopify-Hmac-Sha256") != NULL;
}

static void
shopify_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = unprefixed(h, "Shopify-Hmac-Sha256");

	(void)p;
	(void)now;
	if (hv == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Shopify-Hmac-Sha256 is required");
		return;
	}
	scheme_body_mac_verify(keys, nkeys, hv, "", SCHEME_SHA256, SCHEME_BASE64,
	    body, body_len, res);
}

/* What @shopify/shopify-api's validate requires beside the HMAC: the
 * shop, the API version, and the delivery's own id (one delivery here:
 * the event's id). */
static int
shopify_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	struct part part = { body, body_len };
	char v[SCHEME_HEADER_VALUE_MAX], at[32];
	int64_t t;

	(void)p;
	(void)why;
	if (util_parse_decimal(ts, strlen(ts), INT64_MAX, &t) == -1)
		return -1;
	sample_rfc3339(t, at);
	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_BASE64, key, &part, 1, "",
	    v) == -1 ||
	    scheme_signed_add(out, "X-Shopify-Hmac-Sha256", v) == -1 ||
	    scheme_signed_opt(out, "X-Shopify-Event-Id", id) == -1 ||
	    scheme_signed_opt(out, "X-Shopify-Topic", type) == -1 ||
	    scheme_signed_add(out, "X-Shopify-Triggered-At", at) == -1 ||
	    scheme_signed_opt(out, "X-Shopify-Webhook-Id", id) == -1 ||
	    scheme_signed_add(out, "X-Shopify-Shop-Domain",
	    "webhook-inbox-send.myshopify.com") == -1 ||
	    scheme_signed_add(out, "X-Shopify-API-Version",
	    SCHEME_SHOPIFY_API_VERSION) == -1)
		return -1;
	return 0;
}

static int
shopify_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject();
	char when[32];
	int rc = -1;

	sample_rfc3339(now, when);
	if (ev == NULL || cJSON_AddStringToObject(ev, "id", id) == NULL ||
	    cJSON_AddStringToObject(ev, "admin_graphql_api_id",
	    "gid://shopify/WebhookInboxTest/1") == NULL ||
	    cJSON_AddStringToObject(ev, "updated_at", when) == NULL)
		goto out;
	rc = sample_padded_json(ev, ev, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_shopify = {
	.name = "shopify",
	.title = "Shopify",
	.signature_header = "X-Shopify-Hmac-Sha256",
	.id_header = "X-Shopify-Event-Id",
	.id_header_fallback = "X-Shopify-Webhook-Id",
	.type_header = "X-Shopify-Topic",
	.time_header = "X-Shopify-Triggered-At",
	.time_pointer = "/updated_at",
	.object_pointer = "/admin_graphql_api_id",
	.recognise = shopify_recognise,
	.header = shopify_header,
	.secret_load = scheme_raw_secret,
	.verify = shopify_verify,
	.sign = shopify_sign,
	.sample_id = sample_uuid,
	.sample_body = shopify_sample_body,
};
