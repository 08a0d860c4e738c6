/*
 * scheme: the providers' signature schemes (common/scheme.h,
 * docs/providers.md): the MAC and result helpers every verifier uses, the
 * secrets as each scheme reads them, the table, the public calls and the
 * default fields' extraction.  Each provider's own recognition and
 * verification are lib/common/scheme_verify.c, through scheme_int.h.
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
#include "lib/common/scheme_int.h"
#include "lib/common/signature.h"
#include "lib/common/util.h"


const char *
scheme_hget(const struct scheme_headers *h, const char *name)
{
	const char *v = h->get(h->arg, name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

/* ---- MACs ---- */

size_t
scheme_alg_len(enum scheme_alg alg)
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
 * and length pairs) under key, into mac (scheme_alg_len(alg) bytes).
 */

void
scheme_mac_parts(enum scheme_alg alg, const struct scheme_secret *key,
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
int
scheme_decode_mac(enum scheme_encoding enc, const char *s, size_t len,
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

int
scheme_match_macs(enum scheme_alg alg, enum scheme_encoding enc,
    const struct scheme_secret *keys, size_t nkeys, const struct part *parts,
    size_t nparts, const struct span *entries, size_t nentries,
    struct scheme_result *res)
{
	unsigned char macs[SCHEME_SECRETS_MAX][MAC_MAX], sig[MAC_MAX];
	size_t mlen = scheme_alg_len(alg), e, k;
	int computed = 0, found = -1;

	if (nkeys > SCHEME_SECRETS_MAX)
		nkeys = SCHEME_SECRETS_MAX;
	for (e = 0; e < nentries && found == -1; e++) {
		if (scheme_decode_mac(enc, entries[e].p, entries[e].len, sig, mlen) != 0)
			continue;
		if (!computed) {
			for (k = 0; k < nkeys; k++)
				scheme_mac_parts(alg, &keys[k], parts, nparts, macs[k]);
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

void
scheme_refuse(struct scheme_result *res, enum scheme_outcome o, const char *why)
{
	res->outcome = o;
	res->why = why;
}

/*
 * Parse a signed timestamp and check it against now ± tolerance (0: no
 * window).  Returns 0 and sets res->signed_at, or -1 having refused.
 */
int
scheme_check_time(const char *ts, size_t len, int64_t now, int64_t tolerance,
    struct scheme_result *res, const char *header)
{
	int64_t t;

	if (util_parse_decimal(ts, len, TS_MAX, &t) == -1) {
		scheme_refuse(res, SCHEME_MALFORMED, header);
		return -1;
	}
	res->signed_at = t;
	if (tolerance > 0 && (now - t > tolerance || t - now > tolerance)) {
		scheme_refuse(res, SCHEME_STALE, "signed timestamp outside tolerance");
		return -1;
	}
	return 0;
}

void
scheme_verified(struct scheme_result *res)
{
	res->outcome = SCHEME_OK;
	res->why = NULL;
}


/* ---- secrets ---- */

/* The bytes as written: 1..SCHEME_SECRET_MAX; no edge blanks unless the
 * value was quoted (scheme_secret_load_quoted). */
static int
raw_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
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
	if (!quoted && (text[0] == ' ' || text[0] == '\t' ||
	    text[len - 1] == ' ' || text[len - 1] == '\t')) {
		*why = "secret begins or ends with a blank: if the blank is the "
		    "secret's, write the value in double quotes "
		    "(secret = \" …\")";
		return -1;
	}
	memcpy(out->key, text, len);
	out->len = len;
	return 0;
}

/*
 * WooCommerce signs with wp_specialchars_decode(secret, ENT_QUOTES)
 * (WC_Webhook::generate_signature): the text its settings page shows is
 * the stored secret, and these entities in it become one byte each before
 * the HMAC.  One pass, as PHP's strtr: "&amp;lt;" is "&lt;", not "<".
 * Decimal forms with any leading zeros, hex forms ("&#x27;", 'x' and the
 * digits in any case) for the quote, double quote and ampersand only, as
 * WordPress's table has them.
 */
static size_t
woo_entity(const char *t, char *out)
{
	static const struct { const char *name; char c; } named[] = {
		{ "&quot;", '"' }, { "&lt;", '<' }, { "&gt;", '>' },
		{ "&amp;", '&' },
	};
	static const struct { const char *digits; char c; int hex; } num[] = {
		{ "39", '\'', 0 }, { "34", '"', 0 }, { "60", '<', 0 },
		{ "62", '>', 0 }, { "38", '&', 0 }, { "27", '\'', 1 },
		{ "22", '"', 1 }, { "26", '&', 1 },
	};
	size_t i, n;
	int hex;

	for (i = 0; i < sizeof named / sizeof named[0]; i++)
		if (strncmp(t, named[i].name, strlen(named[i].name)) == 0) {
			*out = named[i].c;
			return strlen(named[i].name);
		}
	if (strncmp(t, "&#", 2) != 0)
		return 0;
	hex = t[2] == 'x' || t[2] == 'X';
	n = hex ? 3 : 2;
	while (t[n] == '0')
		n++;
	for (i = 0; i < sizeof num / sizeof num[0]; i++)
		if (num[i].hex == hex && strncmp(t + n, num[i].digits, 2) == 0 &&
		    t[n + 2] == ';') {
			*out = num[i].c;
			return n + 3;
		}
	return 0;
}

static int
woo_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	size_t i, o = 0, used;

	if (raw_secret(text, quoted, out, why) == -1)
		return -1;
	for (i = 0; text[i] != '\0'; i += used ? used : 1)
		if ((used = woo_entity(text + i, (char *)&out->key[o])) == 0)
			out->key[o++] = (unsigned char)text[i];
		else
			o++;
	sodium_memzero(out->key + o, out->len - o);
	out->len = o;
	return 0;
}

static int
stripe_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	/* Standard Webhooks' entry label, copied with a whsec_ secret. */
	if (strncmp(text, "v1,", 3) == 0) {
		*why = "starts with v1, (a signature header's label, copied "
		    "with the secret): drop the v1, and keep whsec_…";
		return -1;
	}
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
	return raw_secret(text, quoted, out, why);
}

static int
paddle_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	if (strncmp(text, "pdl_", 4) == 0 && strstr(text, "apikey") != NULL) {
		*why = "that is a Paddle API key; the notification secret "
		    "starts with pdl_ntfset_";
		return -1;
	}
	return raw_secret(text, quoted, out, why);
}

static int
discord_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	size_t binlen;
	const char *end;

	(void)quoted;	/* hex digits: no blank is ever a key's */

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

/* ---- the table ---- */

static const struct scheme schemes[SCHEME_COUNT] = {
	[SCHEME_STANDARD] = { .id = SCHEME_STANDARD, .name = "standard",
	    .title = "Standard Webhooks", .signature_header = "webhook-signature",
	    .id_header = "webhook-id", .id_header_signed = 1,
	    .type_pointer = "/type", .time_header = "webhook-timestamp",
	    .tolerance = SCHEME_TOLERANCE, .recognise = scheme_std_recognise,
	    .secret_load = std_secret, .verify = scheme_std_verify },
	[SCHEME_STRIPE] = { .id = SCHEME_STRIPE, .name = "stripe",
	    .title = "Stripe", .signature_header = "Stripe-Signature",
	    .id_pointer = "/id", .type_pointer = "/type",
	    .time_pointer = "/created", .object_pointer = "/data/object/id",
	    .tolerance = SCHEME_TOLERANCE, .recognise = scheme_stripe_recognise,
	    .secret_load = stripe_secret, .verify = scheme_stripe_verify },
	[SCHEME_GITHUB] = { .id = SCHEME_GITHUB, .name = "github",
	    .title = "GitHub", .signature_header = "X-Hub-Signature-256",
	    .id_header = "X-GitHub-Delivery", .type_header = "X-GitHub-Event",
	    .recognise = scheme_github_recognise, .secret_load = raw_secret,
	    .verify = scheme_github_verify },
	/* The event's id first: Shopify's own guide finds duplicates by
	 * X-Shopify-Event-Id; X-Shopify-Webhook-Id where it is missing. */
	[SCHEME_SHOPIFY] = { .id = SCHEME_SHOPIFY, .name = "shopify",
	    .title = "Shopify", .signature_header = "X-Shopify-Hmac-Sha256",
	    .id_header = "X-Shopify-Event-Id",
	    .id_header_fallback = "X-Shopify-Webhook-Id",
	    .type_header = "X-Shopify-Topic",
	    .time_header = "X-Shopify-Triggered-At", .time_pointer = "/updated_at",
	    .object_pointer = "/admin_graphql_api_id",
	    .recognise = scheme_shopify_recognise, .secret_load = raw_secret,
	    .verify = scheme_shopify_verify },
	/* Ids per resource type: order 2200 and customer 2200 are two
	 * objects (X-WC-Webhook-Resource, which every delivery carries:
	 * WC_Webhook::deliver). */
	[SCHEME_WOOCOMMERCE] = { .id = SCHEME_WOOCOMMERCE, .name = "woocommerce",
	    .title = "WooCommerce", .signature_header = "X-WC-Webhook-Signature",
	    .id_header = "X-WC-Webhook-Delivery-ID",
	    .type_header = "X-WC-Webhook-Topic",
	    .time_pointer = "/date_modified_gmt", .object_pointer = "/id",
	    .object_type_header = "X-WC-Webhook-Resource",
	    .recognise = scheme_woo_recognise, .secret_load = woo_secret,
	    .verify = scheme_woo_verify },
	[SCHEME_SLACK] = { .id = SCHEME_SLACK, .name = "slack", .title = "Slack",
	    .signature_header = "X-Slack-Signature", .id_pointer = "/event_id",
	    .type_pointer = "/event/type", .time_pointer = "/event_time",
	    .tolerance = SCHEME_TOLERANCE, .recognise = scheme_slack_recognise,
	    .secret_load = raw_secret, .verify = scheme_slack_verify },
	[SCHEME_PADDLE] = { .id = SCHEME_PADDLE, .name = "paddle",
	    .title = "Paddle Billing", .signature_header = "Paddle-Signature",
	    .id_pointer = "/event_id", .type_pointer = "/event_type",
	    .time_pointer = "/occurred_at", .object_pointer = "/data/id",
	    .tolerance = SCHEME_TOLERANCE, .recognise = scheme_paddle_recognise,
	    .secret_load = paddle_secret, .verify = scheme_paddle_verify },
	[SCHEME_DISCORD] = { .id = SCHEME_DISCORD, .name = "discord",
	    .title = "Discord", .signature_header = "X-Signature-Ed25519",
	    .id_pointer = "/id", .type_pointer = "/event/type",
	    .time_pointer = "/event/timestamp",
	    .recognise = scheme_discord_recognise, .secret_load = discord_secret,
	    .verify = scheme_discord_verify },
	[SCHEME_GITLAB] = { .id = SCHEME_GITLAB, .name = "gitlab",
	    .title = "GitLab", .signature_header = "X-Gitlab-Token",
	    .id_header = "X-Gitlab-Event-UUID", .type_header = "X-Gitlab-Event",
	    .recognise = scheme_gitlab_recognise, .secret_load = raw_secret,
	    .verify = scheme_gitlab_verify },
	[SCHEME_TWILIO] = { .id = SCHEME_TWILIO, .name = "twilio",
	    .title = "Twilio", .signature_header = "X-Twilio-Signature",
	    .id_header = "I-Twilio-Idempotency-Token",
	    .recognise = scheme_twilio_recognise, .secret_load = raw_secret,
	    .verify = scheme_twilio_verify,
	    .content_digest = scheme_twilio_digest },
	[SCHEME_HMAC] = { .id = SCHEME_HMAC, .name = "hmac",
	    .title = "a generic HMAC", .signature_header = "(configured)",
	    .tolerance = SCHEME_TOLERANCE,
	    .recognise = scheme_never_recognised, .secret_load = raw_secret,
	    .verify = scheme_hmac_verify },
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
		if (scheme_alg_len(p->alg) == 0 || (p->encoding != SCHEME_HEX &&
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

/* scheme_secret_load, scheme_secret_load_quoted. */
static int
secret_load(const struct scheme *s, const char *text, int quoted,
    struct scheme_secret *out, const char **why)
{
	unsigned char fp[8];

	memset(out, 0, sizeof *out);
	if (s->secret_load(text, quoted, out, why) == -1) {
		scheme_secret_wipe(out);
		return -1;
	}
	crypto_generichash(fp, sizeof fp, out->key, out->len, NULL, 0);
	sodium_bin2hex(out->fingerprint, sizeof out->fingerprint, fp, sizeof fp);
	return 0;
}

int
scheme_secret_load(const struct scheme *s, const char *text,
    struct scheme_secret *out, const char **why)
{
	return secret_load(s, text, 0, out, why);
}

int
scheme_secret_load_quoted(const struct scheme *s, const char *text,
    struct scheme_secret *out, const char **why)
{
	return secret_load(s, text, 1, out, why);
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
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "no secret configured");
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
		return scheme_std_header(h, name + 8);
	if (s->id == SCHEME_SHOPIFY && strncmp(name, "X-", 2) == 0)
		return scheme_shopify_header(h, name + 2);
	return scheme_hget(h, name);
}

/* The body as JSON, for the pointers: NULL when it is not JSON, or
 * holds an escaped NUL (`nul` set: cJSON would cut a value there and
 * "a\u0000x" would read as "a", merging two ids or two objects). */
struct body_json {
	const cJSON	*j;
	int		 nul;
	int		 unread;	/* looked like JSON, cJSON refused it */
};

static int
field(const struct scheme *s, const struct scheme_headers *h,
    const struct body_json *b, const char *header, const char *ptr, char *out,
    const char **why)
{
	const char *v;
	const cJSON *x;
	char num[32];

	out[0] = '\0';
	if (header != NULL && (v = lookup(s, h, header)) != NULL)
		return put(out, v, strlen(v), why);
	if (ptr == NULL)
		return 0;
	if (b->nul) {
		*why = "the body holds a \\u0000 escape: its JSON fields cannot "
		    "be read whole";
		return -1;
	}
	if (b->unread) {
		*why = "the body looks like JSON that cannot be read (nested "
		    "too deep?): its fields are left out";
		return 0;
	}
	if (b->j == NULL || (x = pointer(b->j, ptr)) == NULL)
		return 0;
	if (cJSON_IsString(x))
		return put(out, x->valuestring, strlen(x->valuestring), why);
	/* Whole numbers only, below 2^53 (Stripe's created, Slack's
	 * event_time): beyond, a double holds no exact integer and two ids
	 * would read as one. */
	if (cJSON_IsNumber(x) && x->valuedouble >= 0 &&
	    x->valuedouble < 9007199254740992.0 &&
	    x->valuedouble == (double)(int64_t)x->valuedouble) {
		snprintf(num, sizeof num, "%lld", (long long)x->valuedouble);
		return put(out, num, strlen(num), why);
	}
	if (cJSON_IsNull(x))
		return 0;
	*why = "a field is neither a string nor a whole number from 0 to 2^53";
	return -1;
}

/* Where a field is: the source's place when it names one (a pointer when
 * it starts with '/', else a header), or the scheme's pair. */
static int
locate(const struct scheme *s, const struct scheme_headers *h,
    const struct body_json *b, const char *over, const char *header,
    const char *ptr, char *out, const char **why)
{
	if (over != NULL)
		return over[0] == '/' ? field(s, h, b, NULL, over, out, why) :
		    field(s, h, b, over, NULL, out, why);
	return field(s, h, b, header, ptr, out, why);
}

/* Is `over` (NULL) or the default a pointer, so the body must be parsed? */
static int
wants_body(const char *over, const char *ptr)
{
	return over != NULL ? over[0] == '/' : ptr != NULL;
}

int
scheme_extract(const struct scheme *s, const struct scheme_locate *over,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, struct scheme_fields *out, const char **why)
{
	static const struct scheme_locate none;
	struct body_json b = { NULL, 0, 0 };
	cJSON *j = NULL;
	const char *note = NULL;
	int rc = -1;

	if (over == NULL)
		over = &none;
	memset(out, 0, sizeof *out);
	*why = NULL;
	if (wants_body(over->id, s->id_pointer) ||
	    wants_body(over->type, s->type_pointer) ||
	    wants_body(over->time, s->time_pointer) ||
	    wants_body(over->object, s->object_pointer) ||
	    wants_body(over->object_type, s->object_type_pointer)) {
		size_t i = 0;

		b.nul = util_json_has_escaped_nul((const char *)body, body_len);
		if (!b.nul)
			b.j = j = cJSON_ParseWithLength((const char *)body,
			    body_len);
		while (i < body_len && strchr(" \t\r\n", body[i]) != NULL)
			i++;
		b.unread = !b.nul && j == NULL && i < body_len &&
		    (body[i] == '{' || body[i] == '[');
	}
	/* Only the id refuses: cut, it could merge two deliveries.  Any
	 * other field that cannot be kept whole is left out and noted. */
	if (locate(s, h, &b, over->id, s->id_header, s->id_pointer, out->id,
	    why) == 0 && (over->id != NULL || out->id[0] != '\0' ||
	    s->id_header_fallback == NULL || locate(s, h, &b, NULL,
	    s->id_header_fallback, NULL, out->id, why) == 0)) {
		rc = 0;
		note = *why;
		if (locate(s, h, &b, over->type, s->type_header,
		    s->type_pointer, out->type, why) == -1)
			out->type[0] = '\0';
		if (locate(s, h, &b, over->time, s->time_header,
		    s->time_pointer, out->time, why) == -1)
			out->time[0] = '\0';
		if (locate(s, h, &b, over->object, NULL, s->object_pointer,
		    out->object, why) == -1)
			out->object[0] = '\0';
		if (locate(s, h, &b, over->object_type, s->object_type_header,
		    s->object_type_pointer, out->object_type, why) == -1)
			out->object_type[0] = '\0';
		/* "order.updated", "orders/create": the resource alone. */
		out->object_type[strcspn(out->object_type, "./")] = '\0';
		if (*why == NULL)
			*why = note;
	}
	cJSON_Delete(j);
	return rc;
}

int
scheme_id_signed(const struct scheme *s, const struct scheme_locate *over)
{
	if (over != NULL && over->id != NULL)
		return over->id[0] == '/';
	return s->id_header == NULL ? s->id_pointer != NULL :
	    s->id_header_signed;
}

int
scheme_content_digest(const struct scheme *s, const struct scheme_headers *h,
    const unsigned char *body, size_t body_len, unsigned char out[32])
{
	if (s->content_digest != NULL)
		return s->content_digest(h, body, body_len, out);
	crypto_hash_sha256(out, body, body_len);
	return 0;
}

char *
scheme_event_key(const struct scheme *s, const struct scheme_locate *over,
    const char *name, const struct scheme_fields *f,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, char *out, size_t outsz)
{
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof sum + 1];
	int n;

	if (f->id[0] == '\0') {
		crypto_hash_sha256(sum, body, body_len);
		sodium_bin2hex(hex, sizeof hex, sum, sizeof sum);
		n = snprintf(out, outsz, "%s/sha256:%s", name, hex);
	} else if (scheme_id_signed(s, over)) {
		n = snprintf(out, outsz, "%s/%s", name, f->id);
	} else {
		if (scheme_content_digest(s, h, body, body_len, sum) == -1)
			return NULL;
		sodium_bin2hex(hex, sizeof hex, sum, SCHEME_CONTENT_TAG_BYTES);
		n = snprintf(out, outsz, "%s/%s~%s", name, f->id, hex);
	}
	return n < 0 || (size_t)n >= outsz ? NULL : out;
}
