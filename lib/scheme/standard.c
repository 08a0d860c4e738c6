/*
 * standard: Standard Webhooks (standardwebhooks.com, spec 1.0.0), which
 * Svix-run senders send under svix-* names, and the seeds' provider
 * (PROVIDER.md) — the default source's provider.
 *
 * webhook-id names the event, the same on every attempt, and is signed
 * (id.timestamp.body); webhook-timestamp is the attempt's send time, never
 * the event's clock (createdAt is).  Retries follow the spec's schedule
 * (about 3 days); any 2xx stops them.  Objects are the body's data.object
 * and data.id (lib/store/event.c).  The secret is whsec_ + base64 (the key
 * is its decoding) or whpk_ + an Ed25519 public key (signature.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/common/instant.h"
#include "lib/common/signature.h"
#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

/* Header X of the delivery's family: webhook-X when webhook-id is there,
 * else svix-X (docs/providers.md, "standard"). */
static const char *
family(const struct scheme_headers *h, const char *what)
{
	char svix[32], std[32];

	/* One family whole, the specification's first, as the receiver's
	 * default source reads them: never an id of one family with the
	 * signature of the other. */
	if ((size_t)snprintf(svix, sizeof svix, "svix-%s", what) >= sizeof svix ||
	    (size_t)snprintf(std, sizeof std, "webhook-%s", what) >= sizeof std)
		return NULL;	/* no header of the family is that long */
	return scheme_hget(h, scheme_hget(h, "webhook-id") != NULL ? std : svix);
}

/* The table's and a section's names are the specification's
 * ("webhook-id"); a Svix sender's are read under them. */
static const char *
std_header(const struct scheme_headers *h, const char *name)
{
	if (strncmp(name, "webhook-", 8) == 0)
		return family(h, name + 8);
	return scheme_hget(h, name);
}

static int
std_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "webhook-signature") != NULL ||
	    scheme_hget(h, "svix-signature") != NULL;
}

static int
std_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	struct signature_key k;

	(void)quoted;	/* base64: no blank is ever a key's */
	if (signature_key_parse(text, &k, why) == -1)
		return -1;
	memcpy(out->key, k.key, k.keylen);
	out->len = k.keylen;
	out->ed25519 = k.kind == SIGNATURE_ED25519;
	signature_key_wipe(&k);
	return 0;
}

static void
std_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	struct signature_key k[SCHEME_SECRETS_MAX];
	const char *id = family(h, "id"), *ts = family(h, "timestamp");
	const char *sig = family(h, "signature");
	struct signature_part parts[5];
	size_t i, il, tl, which, n;
	int rc;

	if (id == NULL || ts == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "webhook-id or "
		    "webhook-timestamp missing");
		return;
	}
	if (sig == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "webhook-signature missing");
		return;
	}
	/* Many entries, one per secret in a rotation; beyond the cap, not
	 * a sender's (signature.h). */
	if (strlen(sig) > SIGNATURE_HEADER_MAX) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "webhook-signature longer "
		    "than 16 KiB");
		return;
	}
	il = strlen(id);
	tl = strlen(ts);
	if (scheme_check_time(ts, tl, now, p->tolerance, res,
	    "webhook-timestamp is not a plain integer") == -1)
		return;
	/* id.timestamp.body, MACed where each lies (signature.h). */
	parts[0] = (struct signature_part){ id, il };
	parts[1] = (struct signature_part){ ".", 1 };
	parts[2] = (struct signature_part){ ts, tl };
	parts[3] = (struct signature_part){ ".", 1 };
	parts[4] = (struct signature_part){ body, body_len };
	n = nkeys > SCHEME_SECRETS_MAX ? SCHEME_SECRETS_MAX : nkeys;
	memset(k, 0, sizeof k);
	for (i = 0; i < n; i++) {
		k[i].kind = keys[i].ed25519 ? SIGNATURE_ED25519 :
		    SIGNATURE_HMAC_SHA256;
		/* std_secret loaded at most SIGNATURE_KEY_MAX bytes; the
		 * bound keeps a key loaded for another scheme in range. */
		k[i].keylen = keys[i].len <= SIGNATURE_KEY_MAX ? keys[i].len :
		    SIGNATURE_KEY_MAX;
		memcpy(k[i].key, keys[i].key, k[i].keylen);
	}
	rc = signature_verify_parts(k, n, parts, 5, sig,
	    strlen(sig), &which);
	sodium_memzero(k, sizeof k);
	if (rc != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "no signature entry verifies");
		return;
	}
	res->key_index = which;
	scheme_verified(res);
}

/* The seeds' provider's body: createdAt, data.object and data.id, its
 * updated_at and object_truncated; an inbound relay's ("in_") nothing. */
static int
std_fields(const struct scheme_headers *h, const char *id,
    const unsigned char *body, size_t len, struct event_fields *f)
{
	(void)h;
	return event_extract(id, (const char *)body, len, f);
}

static int
std_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	struct part parts[5];
	char v[SCHEME_HEADER_VALUE_MAX];

	(void)p;
	(void)type;
	if (key->ed25519) {
		*why = "a whpk_ secret is an Ed25519 public key: the sender signs "
		    "with its private key, which the config never holds";
		return -1;
	}
	if (id == NULL) {
		*why = "Standard Webhooks signs a webhook-id: none given";
		return -1;
	}
	parts[0] = (struct part){ id, strlen(id) };
	parts[1] = (struct part){ ".", 1 };
	parts[2] = (struct part){ ts, strlen(ts) };
	parts[3] = (struct part){ ".", 1 };
	parts[4] = (struct part){ body, body_len };
	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_BASE64, key, parts, 5,
	    "v1,", v) == -1 ||
	    scheme_signed_add(out, "webhook-id", id) == -1 ||
	    scheme_signed_add(out, "webhook-timestamp", ts) == -1 ||
	    scheme_signed_add(out, "webhook-signature", v) == -1)
		return -1;
	return 0;
}

/* The seeds' provider's outbound event (PROVIDER.md "A delivery"). */
static int
std_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject(), *data;
	char when[32];
	int rc = -1;

	sample_rfc3339(now, when);
	if (ev == NULL || cJSON_AddStringToObject(ev, "id", id) == NULL ||
	    cJSON_AddStringToObject(ev, "type", SCHEME_SAMPLE_TYPE) == NULL ||
	    cJSON_AddStringToObject(ev, "createdAt", when) == NULL ||
	    (data = cJSON_AddObjectToObject(ev, "data")) == NULL ||
	    cJSON_AddStringToObject(data, "object", "webhook_inbox_test") ==
	    NULL || cJSON_AddStringToObject(data, "id", id) == NULL)
		goto out;
	rc = sample_padded_json(ev, data, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_standard = {
	.name = "standard",
	.title = "Standard Webhooks",
	.signature_header = "webhook-signature",
	.id_header = "webhook-id",
	.id_header_signed = 1,
	/* type, createdAt, data.object and data.id: std_fields. */
	.tolerance = SCHEME_TOLERANCE,
	.recognise = std_recognise,
	.header = std_header,
	.secret_load = std_secret,
	.verify = std_verify,
	.fields = std_fields,
	.sign = std_sign,
	.sample_body = std_sample_body,
};
