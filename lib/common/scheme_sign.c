/*
 * scheme_sign: each provider's sender, for `webhook-drain send --source`
 * and `check --url` (common/scheme.h, docs/providers.md).  The content
 * signed is exactly what lib/common/scheme_verify.c verifies, with the same
 * MACs (scheme_mac_parts: libsodium, Nettle for SHA-1), so a signature made
 * here is one the receiver's verifier accepts; the test vectors check it is
 * also byte for byte the one each provider's SDK makes.  Nothing here
 * allocates but Twilio's sorted form (shared with the verifier).
 */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <sodium.h>

#include "lib/common/scheme.h"
#include "lib/common/scheme_int.h"

int
scheme_signed_add(struct scheme_signed *out, const char *name,
    const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	if (out->n == SCHEME_SIGNED_HEADERS_MAX || nl == 0 ||
	    nl >= SCHEME_HEADER_NAME_MAX || vl >= SCHEME_HEADER_VALUE_MAX)
		return -1;
	memcpy(out->h[out->n].name, name, nl + 1);
	memcpy(out->h[out->n].value, value, vl + 1);
	out->n++;
	return 0;
}

const char *
scheme_signed_get(const struct scheme_signed *out, const char *name)
{
	size_t i;

	for (i = 0; i < out->n; i++)
		if (strcasecmp(out->h[i].name, name) == 0)
			return out->h[i].value;
	return NULL;
}

void
scheme_signed_wipe(struct scheme_signed *out)
{
	sodium_memzero(out, sizeof *out);
}

int
scheme_can_sign(const struct scheme *s, const struct scheme_secret *key,
    const char **why)
{
	if (s->id == SCHEME_DISCORD || key->ed25519) {
		*why = s->id == SCHEME_DISCORD ? "Discord signs with its "
		    "application's private key; the config holds only the "
		    "public key, which verifies but cannot sign" :
		    "a whpk_ secret is an Ed25519 public key: the sender signs "
		    "with its private key, which the config never holds";
		return 0;
	}
	return 1;
}

/* The MAC of parts[0..n) under key, encoded (hex lower case, or padded
 * standard base64) after `prefix`, into v (SCHEME_HEADER_VALUE_MAX). */
static int
encoded_mac(enum scheme_alg alg, enum scheme_encoding enc,
    const struct scheme_secret *key, const struct part *parts, size_t n,
    const char *prefix, char *v)
{
	unsigned char mac[MAC_MAX];
	size_t pl = strlen(prefix), ml = scheme_alg_len(alg);
	size_t need = enc == SCHEME_HEX ? 2 * ml + 1 :
	    sodium_base64_ENCODED_LEN(ml, sodium_base64_VARIANT_ORIGINAL);

	if (ml == 0 || pl + need > SCHEME_HEADER_VALUE_MAX)
		return -1;
	scheme_mac_parts(alg, key, parts, n, mac);
	memcpy(v, prefix, pl);
	if (enc == SCHEME_HEX)
		sodium_bin2hex(v + pl, need, mac, ml);
	else
		sodium_bin2base64(v + pl, need, mac, ml,
		    sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(mac, sizeof mac);
	return 0;
}

/* Add name: value when value is not NULL. */
static int
opt_add(struct scheme_signed *out, const char *name, const char *value)
{
	return value == NULL ? 0 : scheme_signed_add(out, name, value);
}

int
scheme_sign(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_secret *key, const unsigned char *body,
    size_t body_len, int64_t timestamp, const char *id, const char *type,
    struct scheme_signed *out, const char **why)
{
	struct scheme_twilio tc = { 0 };
	struct part parts[5];
	enum scheme_outcome o;
	char ts[24], v[SCHEME_HEADER_VALUE_MAX], v2[SCHEME_HEADER_VALUE_MAX];
	const char *pre, *sep;
	size_t tl;
	int rc = -1, hashed;

	memset(out, 0, sizeof *out);
	out->content_type = "application/json";
	*why = "a header would not fit";
	if (!scheme_can_sign(s, key, why))
		return -1;
	if (timestamp < 0 || timestamp >= TS_MAX) {
		*why = "timestamp out of range";
		return -1;
	}
	tl = (size_t)snprintf(ts, sizeof ts, "%lld", (long long)timestamp);
	if (body == NULL)
		body = (const unsigned char *)"";
	switch (s->id) {
	case SCHEME_STANDARD:
		if (id == NULL) {
			*why = "Standard Webhooks signs a webhook-id: none given";
			return -1;
		}
		parts[0] = (struct part){ id, strlen(id) };
		parts[1] = (struct part){ ".", 1 };
		parts[2] = (struct part){ ts, tl };
		parts[3] = (struct part){ ".", 1 };
		parts[4] = (struct part){ body, body_len };
		if (encoded_mac(SCHEME_SHA256, SCHEME_BASE64, key, parts, 5, "v1,",
		    v) == -1)
			goto out;
		if (scheme_signed_add(out, "webhook-id", id) == -1 ||
		    scheme_signed_add(out, "webhook-timestamp", ts) == -1 ||
		    scheme_signed_add(out, "webhook-signature", v) == -1)
			goto out;
		break;
	case SCHEME_STRIPE:
	case SCHEME_PADDLE:
		parts[0] = (struct part){ ts, tl };
		parts[1] = (struct part){ s->id == SCHEME_STRIPE ? "." : ":", 1 };
		parts[2] = (struct part){ body, body_len };
		if (encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, parts, 3, "", v2) == -1)
			goto out;
		snprintf(v, sizeof v, s->id == SCHEME_STRIPE ? "t=%s,v1=%s" :
		    "ts=%s;h1=%s", ts, v2);
		if (scheme_signed_add(out, s->signature_header, v) == -1)
			goto out;
		break;
	case SCHEME_GITHUB:
		parts[0] = (struct part){ body, body_len };
		if (encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, parts, 1,
		    "sha256=", v) == -1 ||
		    encoded_mac(SCHEME_SHA1, SCHEME_HEX, key, parts, 1, "sha1=",
		    v2) == -1 ||
		    scheme_signed_add(out, "X-Hub-Signature-256", v) == -1 ||
		    scheme_signed_add(out, "X-Hub-Signature", v2) == -1 ||
		    opt_add(out, "X-GitHub-Delivery", id) == -1 ||
		    opt_add(out, "X-GitHub-Event", type) == -1)
			goto out;
		break;
	case SCHEME_SHOPIFY:
	case SCHEME_WOOCOMMERCE: {
		int shop = s->id == SCHEME_SHOPIFY;

		parts[0] = (struct part){ body, body_len };
		if (encoded_mac(SCHEME_SHA256, SCHEME_BASE64, key, parts, 1, "",
		    v) == -1 ||
		    scheme_signed_add(out, s->signature_header, v) == -1 ||
		    opt_add(out, shop ? "X-Shopify-Event-Id" :
		    "X-WC-Webhook-Delivery-ID", id) == -1 ||
		    opt_add(out, shop ? "X-Shopify-Topic" : "X-WC-Webhook-Topic",
		    type) == -1)
			goto out;
		if (shop) {
			time_t t = (time_t)timestamp;
			struct tm tm;

			/* What @shopify/shopify-api's validate requires beside
			 * the HMAC: the shop, the API version, the delivery's
			 * own id (one delivery: the event's id here). */
			if (gmtime_r(&t, &tm) == NULL ||
			    strftime(v2, sizeof v2, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0 ||
			    scheme_signed_add(out, "X-Shopify-Triggered-At", v2) == -1 ||
			    opt_add(out, "X-Shopify-Webhook-Id", id) == -1 ||
			    scheme_signed_add(out, "X-Shopify-Shop-Domain",
			    "webhook-inbox-send.myshopify.com") == -1 ||
			    scheme_signed_add(out, "X-Shopify-API-Version",
			    SCHEME_SHOPIFY_API_VERSION) == -1)
				goto out;
		} else if (type != NULL && strchr(type, '.') != NULL) {
			/* WooCommerce names the topic's two halves too: the
			 * resource keys the object (docs/providers.md). */
			size_t rl = strcspn(type, ".");

			if (rl >= sizeof v2)
				goto out;
			memcpy(v2, type, rl);
			v2[rl] = '\0';
			if (scheme_signed_add(out, "X-WC-Webhook-Resource", v2) == -1 ||
			    scheme_signed_add(out, "X-WC-Webhook-Event",
			    type + rl + 1) == -1)
				goto out;
		}
		break;
	}
	case SCHEME_SLACK:
		parts[0] = (struct part){ "v0:", 3 };
		parts[1] = (struct part){ ts, tl };
		parts[2] = (struct part){ ":", 1 };
		parts[3] = (struct part){ body, body_len };
		if (encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, parts, 4, "v0=",
		    v) == -1 ||
		    scheme_signed_add(out, "X-Slack-Signature", v) == -1 ||
		    scheme_signed_add(out, "X-Slack-Request-Timestamp", ts) == -1)
			goto out;
		break;
	case SCHEME_GITLAB:
		/* GitLab sends the secret token itself (docs/providers.md). */
		if (key->len >= SCHEME_HEADER_VALUE_MAX ||
		    memchr(key->key, '\0', key->len) != NULL)
			goto out;
		memcpy(v, key->key, key->len);
		v[key->len] = '\0';
		if (scheme_signed_add(out, "X-Gitlab-Token", v) == -1 ||
		    opt_add(out, "X-Gitlab-Event-UUID", id) == -1 ||
		    opt_add(out, "X-Gitlab-Event", type) == -1)
			goto out;
		break;
	case SCHEME_TWILIO:
		if (p->url == NULL) {
			*why = "twilio signs the URL it was given: the source's "
			    "url is required";
			goto out;
		}
		/* A bodySHA256 URL signs the URL alone, for a JSON body that
		 * must be the one hashed there. */
		if ((hashed = scheme_twilio_body_matches(p->url, body,
		    body_len)) == 0) {
			*why = "the url's bodySHA256 is another body's";
			goto out;
		}
		if (hashed == -1)
			out->content_type = "application/x-www-form-urlencoded";
		if (scheme_twilio_content(p->url, body, body_len, &tc, &o,
		    why) == -1)
			goto out;
		*why = "a header would not fit";
		if (encoded_mac(SCHEME_SHA1, SCHEME_BASE64, key, tc.parts,
		    tc.nparts, "", v) == -1 ||
		    scheme_signed_add(out, "X-Twilio-Signature", v) == -1 ||
		    opt_add(out, "I-Twilio-Idempotency-Token", id) == -1)
			goto out;
		break;
	case SCHEME_HMAC: {
		size_t n = 0;

		if (p->header == NULL) {
			*why = "scheme = hmac needs a signature header";
			goto out;
		}
		pre = p->prefix != NULL ? p->prefix : "";
		sep = p->separator != NULL ? p->separator : ".";
		if (p->timestamp_header != NULL) {
			parts[n++] = (struct part){ ts, tl };
			parts[n++] = (struct part){ sep, strlen(sep) };
		}
		parts[n++] = (struct part){ body, body_len };
		if (encoded_mac(p->alg, p->encoding, key, parts, n, pre, v) == -1 ||
		    scheme_signed_add(out, p->header, v) == -1 ||
		    opt_add(out, p->timestamp_header, p->timestamp_header ?
		    ts : NULL) == -1)
			goto out;
		break;
	}
	case SCHEME_DISCORD:
	case SCHEME_COUNT:
		*why = "this scheme cannot be signed";
		goto out;
	}
	rc = 0;
out:
	scheme_twilio_free(&tc);
	sodium_memzero(v, sizeof v);
	if (rc == -1) {
		scheme_signed_wipe(out);
		out->content_type = "application/json";
	}
	return rc;
}
