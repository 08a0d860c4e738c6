/*
 * scheme: the providers' signature schemes.  See common/scheme.h and
 * docs/providers.md; each verifier below names the provider document it
 * follows.  The pattern of every HMAC scheme: find the header, check its
 * form strictly (exact lengths, canonical encodings), check the timestamp
 * window before any MAC is computed, then compute one MAC per secret and
 * compare in constant time against each presented entry.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <nettle/hmac.h>
#include <nettle/sha1.h>
#include <sodium.h>

#include "lib/common/scheme.h"
#include "lib/common/signature.h"
#include "lib/common/util.h"

/* Largest MAC of any algorithm here (HMAC-SHA512), bytes. */
#define MAC_MAX		crypto_auth_hmacsha512_BYTES
/* 10^15 s: far past any clock, and it keeps the subtractions exact. */
#define TS_MAX		1000000000000000LL

static const char *
hget(const struct scheme_headers *h, const char *name)
{
	const char *v = h->get(h->arg, name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* ---- MACs ---- */

static size_t
alg_len(enum scheme_alg alg)
{
	switch (alg) {
	case SCHEME_SHA1:	return SHA1_DIGEST_SIZE;
	case SCHEME_SHA256:	return crypto_auth_hmacsha256_BYTES;
	case SCHEME_SHA512:	return crypto_auth_hmacsha512_BYTES;
	}
	return 0;
}

/*
 * HMAC of the concatenation parts[0..n) (NULL-terminated list of pointer
 * and length pairs) under key, into mac (alg_len(alg) bytes).
 */
struct part {
	const void	*p;
	size_t		 len;
};

static void
mac_parts(enum scheme_alg alg, const struct scheme_secret *key,
    const struct part *parts, size_t n, unsigned char *mac)
{
	size_t i;

	switch (alg) {
	case SCHEME_SHA1: {
		struct hmac_sha1_ctx c;

		hmac_sha1_set_key(&c, key->len, key->key);
		for (i = 0; i < n; i++)
			hmac_sha1_update(&c, parts[i].len, parts[i].p);
		hmac_sha1_digest(&c, SHA1_DIGEST_SIZE, mac);
		sodium_memzero(&c, sizeof c);
		break;
	}
	case SCHEME_SHA256: {
		crypto_auth_hmacsha256_state st;

		crypto_auth_hmacsha256_init(&st, key->key, key->len);
		for (i = 0; i < n; i++)
			crypto_auth_hmacsha256_update(&st, parts[i].p,
			    parts[i].len);
		crypto_auth_hmacsha256_final(&st, mac);
		sodium_memzero(&st, sizeof st);
		break;
	}
	case SCHEME_SHA512: {
		crypto_auth_hmacsha512_state st;

		crypto_auth_hmacsha512_init(&st, key->key, key->len);
		for (i = 0; i < n; i++)
			crypto_auth_hmacsha512_update(&st, parts[i].p,
			    parts[i].len);
		crypto_auth_hmacsha512_final(&st, mac);
		sodium_memzero(&st, sizeof st);
		break;
	}
	}
}

/* Decode an encoded MAC of exactly `want` bytes: hex (either case) or
 * canonical padded standard base64.  Returns 0, or -1. */
static int
decode_mac(enum scheme_encoding enc, const char *s, size_t len,
    unsigned char *out, size_t want)
{
	size_t binlen;
	const char *end;

	if (enc == SCHEME_HEX) {
		if (len != 2 * want)
			return -1;
		if (sodium_hex2bin(out, want, s, len, NULL, &binlen, &end) != 0 ||
		    binlen != want || end != s + len)
			return -1;
		return 0;
	}
	return signature_b64_decode(s, len, out, want, 0) == (long)want ? 0 : -1;
}

/*
 * The common core: entries[0..nentries) are encoded MACs; the content is
 * parts[0..nparts).  On a match sets res->key_index and returns 0; else -1.
 * Each secret's MAC is computed once, and only when some entry decodes.
 */
struct span {
	const char	*p;
	size_t		 len;
};

static int
match_macs(enum scheme_alg alg, enum scheme_encoding enc,
    const struct scheme_secret *keys, size_t nkeys, const struct part *parts,
    size_t nparts, const struct span *entries, size_t nentries,
    struct scheme_result *res)
{
	unsigned char macs[SCHEME_SECRETS_MAX][MAC_MAX], sig[MAC_MAX];
	size_t mlen = alg_len(alg), e, k;
	int computed = 0, found = -1;

	if (nkeys > SCHEME_SECRETS_MAX)
		nkeys = SCHEME_SECRETS_MAX;
	for (e = 0; e < nentries && found == -1; e++) {
		if (decode_mac(enc, entries[e].p, entries[e].len, sig, mlen) != 0)
			continue;
		if (!computed) {
			for (k = 0; k < nkeys; k++)
				mac_parts(alg, &keys[k], parts, nparts, macs[k]);
			computed = 1;
		}
		for (k = 0; k < nkeys; k++)
			if (sodium_memcmp(macs[k], sig, mlen) == 0 && found == -1)
				found = (int)k;
	}
	sodium_memzero(macs, sizeof macs);
	if (found == -1)
		return -1;
	res->key_index = (size_t)found;
	return 0;
}

/* ---- results ---- */

static void
refuse(struct scheme_result *res, enum scheme_outcome o, const char *why)
{
	res->outcome = o;
	res->why = why;
}

/*
 * Parse a signed timestamp and check it against now ± tolerance (0: no
 * window).  Returns 0 and sets res->signed_at, or -1 having refused.
 */
static int
check_time(const char *ts, size_t len, int64_t now, int64_t tolerance,
    struct scheme_result *res, const char *header)
{
	int64_t t;

	if (util_parse_decimal(ts, len, TS_MAX, &t) == -1) {
		refuse(res, SCHEME_MALFORMED, header);
		return -1;
	}
	res->signed_at = t;
	if (tolerance > 0 && (now - t > tolerance || t - now > tolerance)) {
		refuse(res, SCHEME_STALE, "signed timestamp outside tolerance");
		return -1;
	}
	return 0;
}

static void
verified(struct scheme_result *res)
{
	res->outcome = SCHEME_OK;
	res->why = NULL;
}

/* ---- standard (standardwebhooks.com; Svix's svix-* names) ---- */

/* svix-X first, as the svix library reads them, else webhook-X. */
static const char *
std_header(const struct scheme_headers *h, const char *what)
{
	char svix[32], std[32];
	const char *v;

	snprintf(svix, sizeof svix, "svix-%s", what);
	snprintf(std, sizeof std, "webhook-%s", what);
	if ((v = hget(h, svix)) != NULL)
		return v;
	return hget(h, std);
}

static int
std_recognise(const struct scheme_headers *h)
{
	return std_header(h, "signature") != NULL;
}

static int
std_secret(const char *text, struct scheme_secret *out, const char **why)
{
	struct signature_key k;

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
	const char *id = std_header(h, "id"), *ts = std_header(h, "timestamp");
	const char *sig = std_header(h, "signature");
	unsigned char *content;
	size_t i, il, tl, which, n;
	int rc;

	if (id == NULL || ts == NULL || sig == NULL) {
		refuse(res, SCHEME_MISSING, "webhook-id, webhook-timestamp and "
		    "webhook-signature (or svix-*) are required");
		return;
	}
	il = strlen(id);
	tl = strlen(ts);
	if (check_time(ts, tl, now, p->tolerance, res,
	    "webhook-timestamp is not a plain integer") == -1)
		return;
	if (body_len > SIZE_MAX - il - tl - 2 ||
	    (content = malloc(il + tl + 2 + body_len + 1)) == NULL) {
		refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
		return;
	}
	memcpy(content, id, il);
	content[il] = '.';
	memcpy(content + il + 1, ts, tl);
	content[il + 1 + tl] = '.';
	if (body_len > 0)
		memcpy(content + il + tl + 2, body, body_len);
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
	rc = signature_verify(k, n, content, il + tl + 2 + body_len, sig,
	    strlen(sig), &which);
	sodium_memzero(k, sizeof k);
	free(content);
	if (rc != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "no webhook-signature entry verifies");
		return;
	}
	res->key_index = which;
	verified(res);
}

/* ---- secrets ---- */

/* The bytes as written: 1..SCHEME_SECRET_MAX, no edge blanks. */
static int
raw_secret(const char *text, struct scheme_secret *out, const char **why)
{
	size_t len = strlen(text);

	if (len == 0) {
		*why = "empty secret";
		return -1;
	}
	if (len > SCHEME_SECRET_MAX) {
		*why = "secret longer than 256 bytes";
		return -1;
	}
	if (text[0] == ' ' || text[0] == '\t' || text[len - 1] == ' ' ||
	    text[len - 1] == '\t') {
		*why = "secret begins or ends with a blank (a paste mistake?)";
		return -1;
	}
	memcpy(out->key, text, len);
	out->len = len;
	return 0;
}

static int
stripe_secret(const char *text, struct scheme_secret *out, const char **why)
{
	if (strncmp(text, "sk_", 3) == 0 || strncmp(text, "rk_", 3) == 0 ||
	    strncmp(text, "pk_", 3) == 0) {
		*why = "that is a Stripe API key; the webhook signing secret "
		    "starts with whsec_ (Dashboard, Webhooks, the endpoint)";
		return -1;
	}
	if (strncmp(text, "whsec_", 6) != 0 || text[6] == '\0') {
		*why = "a Stripe signing secret starts with whsec_";
		return -1;
	}
	return raw_secret(text, out, why);
}

static int
paddle_secret(const char *text, struct scheme_secret *out, const char **why)
{
	if (strncmp(text, "pdl_", 4) == 0 && strstr(text, "apikey") != NULL) {
		*why = "that is a Paddle API key; the notification secret "
		    "starts with pdl_ntfset_";
		return -1;
	}
	return raw_secret(text, out, why);
}

static int
discord_secret(const char *text, struct scheme_secret *out, const char **why)
{
	size_t binlen;
	const char *end;

	if (strlen(text) != 2 * crypto_sign_ed25519_PUBLICKEYBYTES ||
	    sodium_hex2bin(out->key, crypto_sign_ed25519_PUBLICKEYBYTES, text,
	    strlen(text), NULL, &binlen, &end) != 0 ||
	    binlen != crypto_sign_ed25519_PUBLICKEYBYTES || *end != '\0') {
		*why = "a Discord public key is 64 hex digits "
		    "(General Information, Public Key)";
		return -1;
	}
	out->len = binlen;
	out->ed25519 = 1;
	return 0;
}

/* ---- stripe (docs.stripe.com/webhooks#verify-manually) ---- */

/*
 * Split a header "k=v<sep>k=v…" and hand each (key, value) to the caller's
 * arrays: `tkey` once into *t (twice is malformed), `vkey` into entries.
 * Spaces before an item are skipped (proxies join with ", ").  Returns 0,
 * or -1 for a repeated timestamp.
 */
static int
split_kv(const char *hv, char sep, const char *tkey, const char *vkey,
    struct span *t, struct span *entries, size_t *nentries)
{
	size_t tk = strlen(tkey), vk = strlen(vkey);
	const char *p = hv, *end, *eq;

	t->p = NULL;
	t->len = 0;
	*nentries = 0;
	while (*p != '\0') {
		while (*p == ' ')
			p++;
		if ((end = strchr(p, sep)) == NULL)
			end = p + strlen(p);
		eq = memchr(p, '=', (size_t)(end - p));
		if (eq != NULL) {
			size_t kl = (size_t)(eq - p);

			if (kl == tk && memcmp(p, tkey, tk) == 0) {
				if (t->p != NULL)
					return -1;
				t->p = eq + 1;
				t->len = (size_t)(end - eq - 1);
			} else if (kl == vk && memcmp(p, vkey, vk) == 0 &&
			    *nentries < SCHEME_ENTRIES_MAX) {
				entries[*nentries].p = eq + 1;
				entries[(*nentries)++].len = (size_t)(end - eq - 1);
			}
		}
		p = *end == '\0' ? end : end + 1;
	}
	return 0;
}

/* Stripe and Paddle: "t.body" / "ts:body" signed with the whole secret. */
static void
ts_kv_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res,
    const char *header, char sep, const char *tkey, const char *vkey,
    const char *joiner)
{
	struct span t, entries[SCHEME_ENTRIES_MAX];
	struct part parts[3];
	const char *hv = hget(h, header);
	size_t n;

	if (hv == NULL) {
		refuse(res, SCHEME_MISSING, header);
		return;
	}
	if (split_kv(hv, sep, tkey, vkey, &t, entries, &n) == -1 ||
	    t.p == NULL) {
		refuse(res, SCHEME_MALFORMED, "signature header without one timestamp");
		return;
	}
	if (n == 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "signature header without a "
		    "signature entry");
		return;
	}
	if (check_time(t.p, t.len, now, p->tolerance, res,
	    "signature header's timestamp is not a plain integer") == -1)
		return;
	parts[0].p = t.p;
	parts[0].len = t.len;
	parts[1].p = joiner;
	parts[1].len = 1;
	parts[2].p = body;
	parts[2].len = body_len;
	if (match_macs(SCHEME_SHA256, SCHEME_HEX, keys, nkeys, parts, 3,
	    entries, n, res) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "no signature entry verifies");
		return;
	}
	verified(res);
}

static int
stripe_recognise(const struct scheme_headers *h)
{
	return hget(h, "Stripe-Signature") != NULL;
}

static void
stripe_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	ts_kv_verify(p, keys, nkeys, h, body, body_len, now, res,
	    "Stripe-Signature", ',', "t", "v1", ".");
}

/* ---- paddle Billing (developer.paddle.com/webhooks/signature-verification) ---- */

static int
paddle_recognise(const struct scheme_headers *h)
{
	return hget(h, "Paddle-Signature") != NULL;
}

static void
paddle_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	ts_kv_verify(p, keys, nkeys, h, body, body_len, now, res,
	    "Paddle-Signature", ';', "ts", "h1", ":");
}

/* ---- body-only HMACs: GitHub, Shopify, WooCommerce ---- */

/* One header holding prefix + the encoded MAC of the body. */
static void
body_mac_verify(const struct scheme_secret *keys, size_t nkeys,
    const char *hv, const char *prefix, enum scheme_alg alg,
    enum scheme_encoding enc, const unsigned char *body, size_t body_len,
    struct scheme_result *res)
{
	struct part part = { body, body_len };
	struct span e;
	size_t pl = strlen(prefix);

	if (strncmp(hv, prefix, pl) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "signature without its prefix");
		return;
	}
	e.p = hv + pl;
	e.len = strlen(e.p);
	if (match_macs(alg, enc, keys, nkeys, &part, 1, &e, 1, res) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "the signature does not verify");
		return;
	}
	verified(res);
}

/* docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries */
static int
github_recognise(const struct scheme_headers *h)
{
	return hget(h, "X-Hub-Signature-256") != NULL ||
	    hget(h, "X-Hub-Signature") != NULL;
}

static void
github_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = hget(h, "X-Hub-Signature-256");

	(void)p;
	(void)now;
	if (hv == NULL) {
		/* The SHA-1 X-Hub-Signature alone is not enough: GitHub
		 * always sends the SHA-256 one when a secret is set. */
		refuse(res, SCHEME_MISSING, "X-Hub-Signature-256 is required "
		    "(is a secret set on the GitHub webhook?)");
		return;
	}
	body_mac_verify(keys, nkeys, hv, "sha256=", SCHEME_SHA256, SCHEME_HEX,
	    body, body_len, res);
}

/* shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook;
 * the newer "events" deliveries drop the X- prefix. */
static const char *
shopify_header(const struct scheme_headers *h, const char *name)
{
	char x[64];
	const char *v;

	snprintf(x, sizeof x, "X-%s", name);
	if ((v = hget(h, x)) != NULL)
		return v;
	return hget(h, name);
}

static int
shopify_recognise(const struct scheme_headers *h)
{
	return shopify_header(h, "Shopify-Hmac-Sha256") != NULL;
}

static void
shopify_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = shopify_header(h, "Shopify-Hmac-Sha256");

	(void)p;
	(void)now;
	if (hv == NULL) {
		refuse(res, SCHEME_MISSING, "X-Shopify-Hmac-Sha256 is required");
		return;
	}
	body_mac_verify(keys, nkeys, hv, "", SCHEME_SHA256, SCHEME_BASE64,
	    body, body_len, res);
}

/* WooCommerce's WC_Webhook (includes/class-wc-webhook.php):
 * generate_signature, and deliver_ping's unsigned "webhook_id=N". */
static int
woo_recognise(const struct scheme_headers *h)
{
	return hget(h, "X-WC-Webhook-Signature") != NULL;
}

/* Is the body exactly "webhook_id=" and 1..20 digits? */
static int
woo_ping(const unsigned char *body, size_t len)
{
	size_t i;

	if (len <= 11 || len > 11 + 20 || memcmp(body, "webhook_id=", 11) != 0)
		return 0;
	for (i = 11; i < len; i++)
		if (body[i] < '0' || body[i] > '9')
			return 0;
	return 1;
}

static void
woo_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = hget(h, "X-WC-Webhook-Signature");

	(void)p;
	(void)now;
	if (hv == NULL) {
		if (woo_ping(body, body_len)) {
			/* Nothing is stored, so nothing is trusted: the ping
			 * only lets WooCommerce save the webhook. */
			refuse(res, SCHEME_PING, "WooCommerce's creation ping");
			return;
		}
		refuse(res, SCHEME_MISSING, "X-WC-Webhook-Signature is required");
		return;
	}
	body_mac_verify(keys, nkeys, hv, "", SCHEME_SHA256, SCHEME_BASE64,
	    body, body_len, res);
}

/* ---- slack (api.slack.com/authentication/verifying-requests-from-slack) ---- */

static int
slack_recognise(const struct scheme_headers *h)
{
	return hget(h, "X-Slack-Signature") != NULL;
}

/*
 * A verified url_verification event: copy its challenge into the answer.
 * Returns 1 when the body is one (answer set, or refused when the
 * challenge is unfit), 0 when it is an ordinary event.
 */
static int
slack_challenge(const unsigned char *body, size_t len, struct scheme_result *res)
{
	const cJSON *type, *ch;
	cJSON *j;
	size_t i, n;
	int rc = 0;

	/* The string is in every url_verification body; most events skip
	 * the parse. */
	if (memmem(body, len, "url_verification", 16) == NULL)
		return 0;
	if ((j = cJSON_ParseWithLength((const char *)body, len)) == NULL)
		return 0;
	type = cJSON_GetObjectItemCaseSensitive(j, "type");
	ch = cJSON_GetObjectItemCaseSensitive(j, "challenge");
	if (cJSON_IsString(type) &&
	    strcmp(type->valuestring, "url_verification") == 0) {
		rc = 1;
		n = cJSON_IsString(ch) ? strlen(ch->valuestring) : 0;
		/* Slack's are ~50 letters and digits; anything else is not
		 * echoed into our answer. */
		for (i = 0; i < n; i++)
			if ((unsigned char)ch->valuestring[i] <= ' ' ||
			    (unsigned char)ch->valuestring[i] >= 0x7f)
				n = 0;
		if (n == 0 || n >= sizeof res->answer) {
			refuse(res, SCHEME_MALFORMED, "url_verification without "
			    "a printable challenge");
		} else {
			memcpy(res->answer, ch->valuestring, n + 1);
			res->answer_type = "text/plain";
			refuse(res, SCHEME_ANSWER, "Slack url_verification");
		}
	}
	cJSON_Delete(j);
	return rc;
}

static void
slack_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = hget(h, "X-Slack-Signature");
	const char *ts = hget(h, "X-Slack-Request-Timestamp");
	struct part parts[4];
	struct span e;

	if (sig == NULL || ts == NULL) {
		refuse(res, SCHEME_MISSING, "X-Slack-Signature and "
		    "X-Slack-Request-Timestamp are required");
		return;
	}
	if (check_time(ts, strlen(ts), now, p->tolerance, res,
	    "X-Slack-Request-Timestamp is not a plain integer") == -1)
		return;
	if (strncmp(sig, "v0=", 3) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "X-Slack-Signature is not v0=");
		return;
	}
	parts[0].p = "v0:";
	parts[0].len = 3;
	parts[1].p = ts;
	parts[1].len = strlen(ts);
	parts[2].p = ":";
	parts[2].len = 1;
	parts[3].p = body;
	parts[3].len = body_len;
	e.p = sig + 3;
	e.len = strlen(e.p);
	if (match_macs(SCHEME_SHA256, SCHEME_HEX, keys, nkeys, parts, 4, &e, 1,
	    res) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "X-Slack-Signature does not verify");
		return;
	}
	if (!slack_challenge(body, body_len, res))
		verified(res);
}

/* ---- discord (discord.com/developers/docs/interactions/overview) ---- */

static int
discord_recognise(const struct scheme_headers *h)
{
	return hget(h, "X-Signature-Ed25519") != NULL;
}

static void
discord_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = hget(h, "X-Signature-Ed25519");
	const char *ts = hget(h, "X-Signature-Timestamp");
	unsigned char s[crypto_sign_ed25519_BYTES], *msg;
	size_t tl, k;
	int found = -1;
	cJSON *j;

	if (sig == NULL || ts == NULL) {
		refuse(res, SCHEME_MISSING, "X-Signature-Ed25519 and "
		    "X-Signature-Timestamp are required");
		return;
	}
	if (p->tolerance > 0 && check_time(ts, strlen(ts), now, p->tolerance,
	    res, "X-Signature-Timestamp is not a plain integer") == -1)
		return;
	if (decode_mac(SCHEME_HEX, sig, strlen(sig), s, sizeof s) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "X-Signature-Ed25519 is not "
		    "128 hex digits");
		return;
	}
	tl = strlen(ts);
	if (body_len > SIZE_MAX - tl - 1 ||
	    (msg = malloc(tl + body_len + 1)) == NULL) {
		refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
		return;
	}
	memcpy(msg, ts, tl);
	if (body_len > 0)
		memcpy(msg + tl, body, body_len);
	for (k = 0; k < nkeys && k < SCHEME_SECRETS_MAX && found == -1; k++)
		if (keys[k].ed25519 && crypto_sign_ed25519_verify_detached(s,
		    msg, tl + body_len, keys[k].key) == 0)
			found = (int)k;
	free(msg);
	if (found == -1) {
		refuse(res, SCHEME_BAD_SIGNATURE, "X-Signature-Ed25519 does not verify");
		return;
	}
	res->key_index = (size_t)found;
	/* A PING (type 1) wants {"type":1} back (a PONG), not storing. */
	if ((j = cJSON_ParseWithLength((const char *)body, body_len)) != NULL) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");

		if (cJSON_IsNumber(t) && t->valuedouble == 1) {
			memcpy(res->answer, "{\"type\":1}", 11);
			res->answer_type = "application/json";
			refuse(res, SCHEME_ANSWER, "Discord PING");
		}
		cJSON_Delete(j);
		if (res->outcome == SCHEME_ANSWER)
			return;
	}
	verified(res);
}

/* ---- gitlab (docs.gitlab.com/user/project/integrations/webhooks) ---- */

static int
gitlab_recognise(const struct scheme_headers *h)
{
	return hget(h, "X-Gitlab-Token") != NULL ||
	    hget(h, "X-Gitlab-Event") != NULL;
}

static void
gitlab_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	unsigned char got[32], want[32];
	const char *tok = hget(h, "X-Gitlab-Token");
	size_t k;
	int found = -1;

	(void)p;
	(void)body;
	(void)body_len;
	(void)now;
	if (tok == NULL) {
		refuse(res, SCHEME_MISSING, "X-Gitlab-Token is required "
		    "(is a secret token set on the GitLab webhook?)");
		return;
	}
	/* The token is the secret itself: compare digests, in constant
	 * time and without its length showing. */
	crypto_generichash(got, sizeof got, (const unsigned char *)tok,
	    strlen(tok), NULL, 0);
	for (k = 0; k < nkeys && k < SCHEME_SECRETS_MAX; k++) {
		crypto_generichash(want, sizeof want, keys[k].key, keys[k].len,
		    NULL, 0);
		if (crypto_verify_32(got, want) == 0 && found == -1)
			found = (int)k;
	}
	sodium_memzero(want, sizeof want);
	if (found == -1) {
		refuse(res, SCHEME_BAD_SIGNATURE, "X-Gitlab-Token does not match");
		return;
	}
	res->key_index = (size_t)found;
	verified(res);
}

/* ---- twilio (twilio.com/docs/usage/security) ---- */

static int
twilio_recognise(const struct scheme_headers *h)
{
	return hget(h, "X-Twilio-Signature") != NULL;
}

static int
hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Decode one form component in place ('+' is a space; a '%' not followed
 * by two hex digits stays, as Node's querystring leaves it).  Returns the
 * new length. */
static size_t
form_decode(char *s, size_t len)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		if (s[i] == '+') {
			s[o++] = ' ';
		} else if (s[i] == '%' && i + 2 < len &&
		    hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			s[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			s[o++] = s[i];
		}
	}
	return o;
}

struct param {
	struct span	k, v;
};

static int
span_cmp(const struct span *a, const struct span *b)
{
	size_t n = a->len < b->len ? a->len : b->len;
	int c = memcmp(a->p, b->p, n);

	if (c != 0)
		return c;
	return a->len < b->len ? -1 : a->len > b->len;
}

static int
param_cmp(const void *a, const void *b)
{
	const struct param *x = a, *y = b;
	int c = span_cmp(&x->k, &y->k);

	return c != 0 ? c : span_cmp(&x->v, &y->v);
}

/* The URL with its port removed (any port), or with the default port
 * added when it has none: the two forms twilio's validateRequest tries. */
static int
url_port_variant(const char *url, char *out, size_t outsz)
{
	const char *host, *end, *colon;
	const char *port;
	int n;

	if (strncmp(url, "https://", 8) == 0) {
		host = url + 8;
		port = "443";
	} else if (strncmp(url, "http://", 7) == 0) {
		host = url + 7;
		port = "80";
	} else {
		return -1;
	}
	end = host + strcspn(host, "/?#");
	colon = memchr(host, ':', (size_t)(end - host));
	if (colon != NULL)
		n = snprintf(out, outsz, "%.*s%s", (int)(colon - url), url, end);
	else
		n = snprintf(out, outsz, "%.*s:%s%s", (int)(end - url), url,
		    port, end);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

static void
twilio_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = hget(h, "X-Twilio-Signature");
	const char *settings = hget(h, "X-Twilio-Webhooks-Signature-Settings");
	const char *bodyhash;
	struct param *params = NULL;
	struct part *parts = NULL;
	struct span e;
	enum scheme_alg alg = SCHEME_SHA1;
	char *form = NULL, other[2048];
	size_t np = 0, nparts, i, start;
	int rc;

	(void)now;
	if (sig == NULL) {
		refuse(res, SCHEME_MISSING, "X-Twilio-Signature is required");
		return;
	}
	if (p->url == NULL) {
		refuse(res, SCHEME_MISSING, "twilio needs the URL it was given "
		    "(the source's url)");
		return;
	}
	/* The newer shared-key signatures name their algorithm; without the
	 * header it is the Auth Token's HMAC-SHA1. */
	if (settings != NULL && strstr(settings, "algorithm=") != NULL) {
		const char *a = strstr(settings, "algorithm=") + 10;
		size_t al = strcspn(a, ", ");

		if (al == 11 && strncasecmp(a, "HMAC_SHA256", 11) == 0)
			alg = SCHEME_SHA256;
		else if (!(al == 9 && strncasecmp(a, "HMAC_SHA1", 9) == 0)) {
			refuse(res, SCHEME_MALFORMED, "unknown Twilio signature "
			    "algorithm");
			return;
		}
	}
	bodyhash = strstr(p->url, "bodySHA256=");
	if (bodyhash != NULL) {
		/* JSON bodies: the URL carries the body's SHA-256, hex; the
		 * signature covers the URL alone. */
		unsigned char d[crypto_hash_sha256_BYTES];
		char hex[2 * sizeof d + 1];

		crypto_hash_sha256(d, body, body_len);
		sodium_bin2hex(hex, sizeof hex, d, sizeof d);
		bodyhash += 11;
		if (strcspn(bodyhash, "&#") != 64 ||
		    sodium_memcmp(hex, bodyhash, 64) != 0) {
			refuse(res, SCHEME_BAD_SIGNATURE, "the body does not match "
			    "the URL's bodySHA256");
			return;
		}
	} else if (body_len > 0) {
		if ((form = malloc(body_len)) == NULL ||
		    (params = calloc(SCHEME_FORM_PARAMS_MAX, sizeof *params)) == NULL) {
			refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
			goto out;
		}
		memcpy(form, body, body_len);
		for (start = 0; start <= body_len; ) {
			size_t end = start, eq;

			while (end < body_len && form[end] != '&')
				end++;
			if (end > start) {
				if (np == SCHEME_FORM_PARAMS_MAX) {
					refuse(res, SCHEME_MALFORMED, "more form "
					    "parameters than a Twilio request has");
					goto out;
				}
				for (eq = start; eq < end && form[eq] != '='; eq++)
					;
				params[np].k.p = form + start;
				params[np].k.len = form_decode(form + start,
				    eq - start);
				params[np].v.p = eq < end ? form + eq + 1 : form + end;
				params[np].v.len = eq < end ?
				    form_decode(form + eq + 1, end - eq - 1) : 0;
				np++;
			}
			start = end + 1;
		}
		/* twilio-node sorts the names, and each name's distinct values
		 * (byte order here, UTF-16 order there: the same for every
		 * character below U+E000). */
		qsort(params, np, sizeof *params, param_cmp);
	}
	if ((parts = calloc(1 + 2 * (np ? np : 1), sizeof *parts)) == NULL) {
		refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
		goto out;
	}
	nparts = 1;
	for (i = 0; i < np; i++) {
		if (i > 0 && param_cmp(&params[i], &params[i - 1]) == 0)
			continue;
		parts[nparts].p = params[i].k.p;
		parts[nparts++].len = params[i].k.len;
		parts[nparts].p = params[i].v.p;
		parts[nparts++].len = params[i].v.len;
	}
	e.p = sig;
	e.len = strlen(sig);
	parts[0].p = p->url;
	parts[0].len = strlen(p->url);
	rc = match_macs(alg, SCHEME_BASE64, keys, nkeys, parts, nparts, &e, 1, res);
	if (rc != 0 && url_port_variant(p->url, other, sizeof other) == 0) {
		parts[0].p = other;
		parts[0].len = strlen(other);
		rc = match_macs(alg, SCHEME_BASE64, keys, nkeys, parts, nparts,
		    &e, 1, res);
	}
	if (rc != 0)
		refuse(res, SCHEME_BAD_SIGNATURE, "X-Twilio-Signature does not "
		    "verify for the configured URL");
	else
		verified(res);
out:
	free(parts);
	free(params);
	free(form);
}

/* ---- hmac, the generic scheme ---- */

static int
never(const struct scheme_headers *h)
{
	(void)h;
	return 0;
}

static void
hmac_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig, *ts = NULL, *pre = p->prefix != NULL ? p->prefix : "";
	const char *sep = p->separator != NULL ? p->separator : ".";
	struct part parts[3];
	struct span e;
	size_t n = 0;

	if (p->header == NULL || (sig = hget(h, p->header)) == NULL) {
		refuse(res, SCHEME_MISSING, "the configured signature header "
		    "is required");
		return;
	}
	if (p->timestamp_header != NULL) {
		if ((ts = hget(h, p->timestamp_header)) == NULL) {
			refuse(res, SCHEME_MISSING, "the configured timestamp "
			    "header is required");
			return;
		}
		if (check_time(ts, strlen(ts), now, p->tolerance, res,
		    "the timestamp header is not a plain integer") == -1)
			return;
		parts[n].p = ts;
		parts[n++].len = strlen(ts);
		parts[n].p = sep;
		parts[n++].len = strlen(sep);
	}
	parts[n].p = body;
	parts[n++].len = body_len;
	if (strncmp(sig, pre, strlen(pre)) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "signature without its prefix");
		return;
	}
	e.p = sig + strlen(pre);
	e.len = strlen(e.p);
	if (match_macs(p->alg, p->encoding, keys, nkeys, parts, n, &e, 1,
	    res) != 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "the signature does not verify");
		return;
	}
	verified(res);
}

/* ---- the table ---- */

static const struct scheme schemes[SCHEME_COUNT] = {
	[SCHEME_STANDARD] = { SCHEME_STANDARD, "standard", "Standard Webhooks",
	    "webhook-signature", "webhook-id", NULL, NULL, "/type",
	    "webhook-timestamp", NULL, NULL, SCHEME_TOLERANCE,
	    std_recognise, std_secret, std_verify },
	[SCHEME_STRIPE] = { SCHEME_STRIPE, "stripe", "Stripe",
	    "Stripe-Signature", NULL, "/id", NULL, "/type", NULL, "/created",
	    "/data/object/id", SCHEME_TOLERANCE,
	    stripe_recognise, stripe_secret, stripe_verify },
	[SCHEME_GITHUB] = { SCHEME_GITHUB, "github", "GitHub",
	    "X-Hub-Signature-256", "X-GitHub-Delivery", NULL, "X-GitHub-Event",
	    NULL, NULL, NULL, NULL, 0,
	    github_recognise, raw_secret, github_verify },
	[SCHEME_SHOPIFY] = { SCHEME_SHOPIFY, "shopify", "Shopify",
	    "X-Shopify-Hmac-Sha256", "X-Shopify-Webhook-Id", NULL,
	    "X-Shopify-Topic", NULL, "X-Shopify-Triggered-At", "/updated_at",
	    "/admin_graphql_api_id", 0,
	    shopify_recognise, raw_secret, shopify_verify },
	[SCHEME_WOOCOMMERCE] = { SCHEME_WOOCOMMERCE, "woocommerce", "WooCommerce",
	    "X-WC-Webhook-Signature", "X-WC-Webhook-Delivery-ID", NULL,
	    "X-WC-Webhook-Topic", NULL, NULL, "/date_modified_gmt", "/id", 0,
	    woo_recognise, raw_secret, woo_verify },
	[SCHEME_SLACK] = { SCHEME_SLACK, "slack", "Slack",
	    "X-Slack-Signature", NULL, "/event_id", NULL, "/event/type", NULL,
	    "/event_time", NULL, SCHEME_TOLERANCE,
	    slack_recognise, raw_secret, slack_verify },
	[SCHEME_PADDLE] = { SCHEME_PADDLE, "paddle", "Paddle Billing",
	    "Paddle-Signature", NULL, "/event_id", NULL, "/event_type", NULL,
	    "/occurred_at", "/data/id", SCHEME_TOLERANCE,
	    paddle_recognise, paddle_secret, paddle_verify },
	[SCHEME_DISCORD] = { SCHEME_DISCORD, "discord", "Discord",
	    "X-Signature-Ed25519", NULL, "/id", NULL, "/type", NULL, NULL, NULL,
	    0, discord_recognise, discord_secret, discord_verify },
	[SCHEME_GITLAB] = { SCHEME_GITLAB, "gitlab", "GitLab",
	    "X-Gitlab-Token", "X-Gitlab-Event-UUID", NULL, "X-Gitlab-Event",
	    NULL, NULL, NULL, NULL, 0,
	    gitlab_recognise, raw_secret, gitlab_verify },
	[SCHEME_TWILIO] = { SCHEME_TWILIO, "twilio", "Twilio",
	    "X-Twilio-Signature", "I-Twilio-Idempotency-Token", NULL, NULL,
	    NULL, NULL, NULL, NULL, 0,
	    twilio_recognise, raw_secret, twilio_verify },
	[SCHEME_HMAC] = { SCHEME_HMAC, "hmac", "a generic HMAC",
	    "(configured)", NULL, NULL, NULL, NULL, NULL, NULL, NULL,
	    SCHEME_TOLERANCE, never, raw_secret, hmac_verify },
};

const struct scheme *
scheme_find(const char *name)
{
	size_t i;

	for (i = 0; i < SCHEME_COUNT; i++)
		if (strcmp(schemes[i].name, name) == 0)
			return &schemes[i];
	return NULL;
}

const struct scheme *
scheme_get(enum scheme_id id)
{
	return (unsigned)id < SCHEME_COUNT ? &schemes[id] : NULL;
}

void
scheme_params_init(const struct scheme *s, struct scheme_params *p)
{
	memset(p, 0, sizeof *p);
	p->tolerance = s->tolerance;
	p->alg = SCHEME_SHA256;
	p->encoding = SCHEME_HEX;
	p->separator = ".";
}

int
scheme_params_check(const struct scheme *s, const struct scheme_params *p,
    const char **why)
{
	if (p->tolerance < 0 || p->tolerance > 86400 * 366) {
		*why = "tolerance must be 0 (off) .. a year";
		return -1;
	}
	if (s->id == SCHEME_HMAC) {
		if (p->header == NULL || p->header[0] == '\0') {
			*why = "scheme = hmac needs a signature header";
			return -1;
		}
		if (alg_len(p->alg) == 0 || (p->encoding != SCHEME_HEX &&
		    p->encoding != SCHEME_BASE64)) {
			*why = "scheme = hmac needs algorithm sha1, sha256 or "
			    "sha512 and encoding hex or base64";
			return -1;
		}
	}
	if (s->id == SCHEME_TWILIO && (p->url == NULL ||
	    (strncmp(p->url, "https://", 8) != 0 &&
	    strncmp(p->url, "http://", 7) != 0) || strlen(p->url) > 1024)) {
		*why = "scheme = twilio needs url = the https:// URL given to "
		    "Twilio (at most 1024 bytes)";
		return -1;
	}
	return 0;
}

int
scheme_secret_load(const struct scheme *s, const char *text,
    struct scheme_secret *out, const char **why)
{
	unsigned char fp[8];

	memset(out, 0, sizeof *out);
	if (s->secret_load(text, out, why) == -1) {
		scheme_secret_wipe(out);
		return -1;
	}
	crypto_generichash(fp, sizeof fp, out->key, out->len, NULL, 0);
	sodium_bin2hex(out->fingerprint, sizeof out->fingerprint, fp, sizeof fp);
	return 0;
}

void
scheme_secret_wipe(struct scheme_secret *k)
{
	sodium_memzero(k, sizeof *k);
}

const struct scheme *
scheme_recognise(const struct scheme_headers *h)
{
	size_t i;

	for (i = 0; i < SCHEME_COUNT; i++)
		if (schemes[i].recognise(h))
			return &schemes[i];
	return NULL;
}

int
scheme_verify(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_secret *keys, size_t nkeys,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const struct scheme *other;

	memset(res, 0, sizeof *res);
	res->signed_at = -1;
	res->outcome = SCHEME_BAD_SIGNATURE;
	res->why = "not verified";
	if (nkeys == 0) {
		refuse(res, SCHEME_BAD_SIGNATURE, "no secret configured");
		return -1;
	}
	s->verify(p, keys, nkeys, h, body, body_len, now, res);
	if (res->outcome == SCHEME_MISSING &&
	    (other = scheme_recognise(h)) != NULL && other != s) {
		res->outcome = SCHEME_OTHER;
		res->looks_like = other->id;
		res->why = "the headers are another provider's";
	}
	return res->outcome == SCHEME_OK || res->outcome == SCHEME_ANSWER ||
	    res->outcome == SCHEME_PING ? 0 : -1;
}

char *
scheme_mismatch(const struct scheme *endpoint, const struct scheme *looks,
    char *out, size_t outsz)
{
	snprintf(out, outsz, "this looks like %s's %s; this endpoint is %s: "
	    "add a [source …] with scheme = %s", looks->title,
	    looks->signature_header, endpoint->title, looks->name);
	return out;
}

/* ---- extraction ---- */

/* Follow an RFC 6901 pointer through objects and arrays. */
static const cJSON *
pointer(const cJSON *j, const char *ptr)
{
	char tok[128];

	while (j != NULL && *ptr == '/') {
		size_t n = 0;

		ptr++;
		while (*ptr != '\0' && *ptr != '/' && n + 1 < sizeof tok) {
			if (ptr[0] == '~' && ptr[1] == '1') {
				tok[n++] = '/';
				ptr += 2;
			} else if (ptr[0] == '~' && ptr[1] == '0') {
				tok[n++] = '~';
				ptr += 2;
			} else {
				tok[n++] = *ptr++;
			}
		}
		tok[n] = '\0';
		if (cJSON_IsArray(j)) {
			int64_t ix;

			if (util_parse_decimal(tok, n, 1000000, &ix) == -1)
				return NULL;
			j = cJSON_GetArrayItem(j, (int)ix);
		} else {
			j = cJSON_GetObjectItemCaseSensitive(j, tok);
		}
	}
	return *ptr == '\0' ? j : NULL;
}

/* Copy v (len bytes) into out, refusing what cannot be kept whole. */
static int
put(char *out, const char *v, size_t len, const char **why)
{
	size_t i;

	if (len >= SCHEME_VALUE_MAX) {
		*why = "an extracted value is longer than 255 bytes";
		return -1;
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			*why = "an extracted value holds a control character";
			return -1;
		}
	memcpy(out, v, len);
	out[len] = '\0';
	return 0;
}

/* A default header of scheme s, under the other names the scheme's
 * senders use (svix-* for webhook-*, Shopify's events without X-). */
static const char *
lookup(const struct scheme *s, const struct scheme_headers *h,
    const char *name)
{
	if (s->id == SCHEME_STANDARD && strncmp(name, "webhook-", 8) == 0)
		return std_header(h, name + 8);
	if (s->id == SCHEME_SHOPIFY && strncmp(name, "X-", 2) == 0)
		return shopify_header(h, name + 2);
	return hget(h, name);
}

static int
field(const struct scheme *s, const struct scheme_headers *h, const cJSON *j,
    const char *header, const char *ptr, char *out, const char **why)
{
	const char *v;
	const cJSON *x;
	char num[32];

	out[0] = '\0';
	if (header != NULL && (v = lookup(s, h, header)) != NULL)
		return put(out, v, strlen(v), why);
	if (ptr == NULL || j == NULL || (x = pointer(j, ptr)) == NULL)
		return 0;
	if (cJSON_IsString(x))
		return put(out, x->valuestring, strlen(x->valuestring), why);
	/* Integers only (Stripe's created, Slack's event_time): a double
	 * beyond 2^53 is not an id anyone can trust. */
	if (cJSON_IsNumber(x) && x->valuedouble >= 0 &&
	    x->valuedouble <= 9007199254740992.0 &&
	    x->valuedouble == (double)(int64_t)x->valuedouble) {
		snprintf(num, sizeof num, "%lld", (long long)x->valuedouble);
		return put(out, num, strlen(num), why);
	}
	return 0;
}

int
scheme_extract(const struct scheme *s, const struct scheme_headers *h,
    const unsigned char *body, size_t body_len, struct scheme_fields *out,
    const char **why)
{
	cJSON *j = NULL;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (s->id_pointer != NULL || s->type_pointer != NULL ||
	    s->time_pointer != NULL || s->object_pointer != NULL)
		j = cJSON_ParseWithLength((const char *)body, body_len);
	if (field(s, h, j, s->id_header, s->id_pointer, out->id, why) == 0 &&
	    field(s, h, j, s->type_header, s->type_pointer, out->type, why) == 0 &&
	    field(s, h, j, s->time_header, s->time_pointer, out->time, why) == 0 &&
	    field(s, h, j, NULL, s->object_pointer, out->object, why) == 0)
		rc = 0;
	cJSON_Delete(j);
	return rc;
}
