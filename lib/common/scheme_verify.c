/*
 * scheme_verify: each provider's recognition and verification, for the
 * table in lib/common/scheme.c (lib/common/scheme_int.h).  Each section
 * names the provider document it follows.  The pattern of every HMAC
 * scheme: find the header, check its form strictly (exact lengths,
 * canonical encodings), check the timestamp window before any MAC is
 * computed, then compute one MAC per secret and compare in constant time
 * against each presented entry.
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

/* ---- standard (standardwebhooks.com; Svix's svix-* names) ---- */

/* Header X of the delivery's family: webhook-X when webhook-id is there,
 * else svix-X (docs/providers.md, "standard"). */
const char *
scheme_std_header(const struct scheme_headers *h, const char *what)
{
	char svix[32], std[32];

	/* One family whole, the specification's first, as the receiver's
	 * default source reads them: never an id of one family with the
	 * signature of the other. */
	snprintf(svix, sizeof svix, "svix-%s", what);
	snprintf(std, sizeof std, "webhook-%s", what);
	return scheme_hget(h, scheme_hget(h, "webhook-id") != NULL ? std : svix);
}

int
scheme_std_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "webhook-signature") != NULL ||
	    scheme_hget(h, "svix-signature") != NULL;
}

void
scheme_std_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	struct signature_key k[SCHEME_SECRETS_MAX];
	const char *id = scheme_std_header(h, "id"), *ts = scheme_std_header(h, "timestamp");
	const char *sig = scheme_std_header(h, "signature");
	unsigned char *content;
	size_t i, il, tl, which, n;
	int rc;

	if (id == NULL || ts == NULL || sig == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "webhook-id, webhook-timestamp and "
		    "webhook-signature (or svix-*) are required");
		return;
	}
	il = strlen(id);
	tl = strlen(ts);
	if (scheme_check_time(ts, tl, now, p->tolerance, res,
	    "webhook-timestamp is not a plain integer") == -1)
		return;
	if (body_len > SIZE_MAX - il - tl - 2 ||
	    (content = malloc(il + tl + 2 + body_len + 1)) == NULL) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
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
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "no webhook-signature entry verifies");
		return;
	}
	res->key_index = which;
	scheme_verified(res);
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
	const char *hv = scheme_hget(h, header);
	size_t n;

	if (hv == NULL) {
		scheme_refuse(res, SCHEME_MISSING, header);
		return;
	}
	if (split_kv(hv, sep, tkey, vkey, &t, entries, &n) == -1 ||
	    t.p == NULL) {
		scheme_refuse(res, SCHEME_MALFORMED, "signature header without one timestamp");
		return;
	}
	if (n == 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "signature header without a "
		    "signature entry");
		return;
	}
	if (scheme_check_time(t.p, t.len, now, p->tolerance, res,
	    "signature header's timestamp is not a plain integer") == -1)
		return;
	parts[0].p = t.p;
	parts[0].len = t.len;
	parts[1].p = joiner;
	parts[1].len = 1;
	parts[2].p = body;
	parts[2].len = body_len;
	if (scheme_match_macs(SCHEME_SHA256, SCHEME_HEX, keys, nkeys, parts, 3,
	    entries, n, res) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "no signature entry verifies");
		return;
	}
	scheme_verified(res);
}

int
scheme_stripe_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "Stripe-Signature") != NULL;
}

void
scheme_stripe_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	ts_kv_verify(p, keys, nkeys, h, body, body_len, now, res,
	    "Stripe-Signature", ',', "t", "v1", ".");
}

/* ---- paddle Billing (developer.paddle.com/webhooks/signature-verification) ---- */

int
scheme_paddle_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "Paddle-Signature") != NULL;
}

void
scheme_paddle_verify(const struct scheme_params *p, const struct scheme_secret *keys,
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
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "signature without its prefix");
		return;
	}
	e.p = hv + pl;
	e.len = strlen(e.p);
	if (scheme_match_macs(alg, enc, keys, nkeys, &part, 1, &e, 1, res) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "the signature does not verify");
		return;
	}
	scheme_verified(res);
}

/* docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries */
int
scheme_github_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Hub-Signature-256") != NULL ||
	    scheme_hget(h, "X-Hub-Signature") != NULL;
}

void
scheme_github_verify(const struct scheme_params *p, const struct scheme_secret *keys,
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
	body_mac_verify(keys, nkeys, hv, "sha256=", SCHEME_SHA256, SCHEME_HEX,
	    body, body_len, res);
}

/* shopify.dev/docs/apps/build/webhooks/subscribe/https#step-5-verify-the-webhook;
 * the newer "events" deliveries drop the X- prefix. */
const char *
scheme_shopify_header(const struct scheme_headers *h, const char *name)
{
	char x[64];
	const char *v;

	snprintf(x, sizeof x, "X-%s", name);
	if ((v = scheme_hget(h, x)) != NULL)
		return v;
	return scheme_hget(h, name);
}

int
scheme_shopify_recognise(const struct scheme_headers *h)
{
	return scheme_shopify_header(h, "Shopify-Hmac-Sha256") != NULL;
}

void
scheme_shopify_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = scheme_shopify_header(h, "Shopify-Hmac-Sha256");

	(void)p;
	(void)now;
	if (hv == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Shopify-Hmac-Sha256 is required");
		return;
	}
	body_mac_verify(keys, nkeys, hv, "", SCHEME_SHA256, SCHEME_BASE64,
	    body, body_len, res);
}

/* WooCommerce's WC_Webhook (includes/class-wc-webhook.php):
 * generate_signature, and deliver_ping's unsigned "webhook_id=N". */
int
scheme_woo_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-WC-Webhook-Signature") != NULL;
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

void
scheme_woo_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = scheme_hget(h, "X-WC-Webhook-Signature");

	(void)p;
	(void)now;
	if (hv == NULL) {
		if (woo_ping(body, body_len)) {
			/* Nothing is stored, so nothing is trusted: the ping
			 * only lets WooCommerce save the webhook. */
			scheme_refuse(res, SCHEME_PING, "WooCommerce's creation ping");
			return;
		}
		scheme_refuse(res, SCHEME_MISSING, "X-WC-Webhook-Signature is required");
		return;
	}
	body_mac_verify(keys, nkeys, hv, "", SCHEME_SHA256, SCHEME_BASE64,
	    body, body_len, res);
}

/* ---- slack (api.slack.com/authentication/verifying-requests-from-slack) ---- */

int
scheme_slack_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Slack-Signature") != NULL;
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
			scheme_refuse(res, SCHEME_MALFORMED, "url_verification without "
			    "a printable challenge");
		} else {
			memcpy(res->answer, ch->valuestring, n + 1);
			res->answer_type = "text/plain";
			scheme_refuse(res, SCHEME_ANSWER, "Slack url_verification");
		}
	}
	cJSON_Delete(j);
	return rc;
}

void
scheme_slack_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "X-Slack-Signature");
	const char *ts = scheme_hget(h, "X-Slack-Request-Timestamp");
	struct part parts[4];
	struct span e;

	if (sig == NULL || ts == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Slack-Signature and "
		    "X-Slack-Request-Timestamp are required");
		return;
	}
	if (scheme_check_time(ts, strlen(ts), now, p->tolerance, res,
	    "X-Slack-Request-Timestamp is not a plain integer") == -1)
		return;
	if (strncmp(sig, "v0=", 3) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Slack-Signature is not v0=");
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
	if (scheme_match_macs(SCHEME_SHA256, SCHEME_HEX, keys, nkeys, parts, 4, &e, 1,
	    res) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Slack-Signature does not verify");
		return;
	}
	if (!slack_challenge(body, body_len, res))
		scheme_verified(res);
}

/* ---- discord (discord.com/developers/docs/interactions/overview) ---- */

int
scheme_discord_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Signature-Ed25519") != NULL;
}

void
scheme_discord_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "X-Signature-Ed25519");
	const char *ts = scheme_hget(h, "X-Signature-Timestamp");
	unsigned char s[crypto_sign_ed25519_BYTES], *msg;
	size_t tl, k;
	int found = -1;
	cJSON *j;

	if (sig == NULL || ts == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Signature-Ed25519 and "
		    "X-Signature-Timestamp are required");
		return;
	}
	if (p->tolerance > 0 && scheme_check_time(ts, strlen(ts), now, p->tolerance,
	    res, "X-Signature-Timestamp is not a plain integer") == -1)
		return;
	if (scheme_decode_mac(SCHEME_HEX, sig, strlen(sig), s, sizeof s) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Signature-Ed25519 is not "
		    "128 hex digits");
		return;
	}
	tl = strlen(ts);
	if (body_len > SIZE_MAX - tl - 1 ||
	    (msg = malloc(tl + body_len + 1)) == NULL) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
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
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Signature-Ed25519 does not verify");
		return;
	}
	res->key_index = (size_t)found;
	/*
	 * Two kinds of Discord endpoint sign alike (docs/providers.md):
	 * Webhook Events, whose PING is type 0 and wants 204 with no body,
	 * and whose events are type 1 with an `event` object (stored); and
	 * Interactions, whose PING is type 1 without one and wants
	 * {"type":1} back (a PONG).
	 */
	if ((j = cJSON_ParseWithLength((const char *)body, body_len)) != NULL) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
		int token = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j,
		    "token"));
		int event = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j,
		    "event"));

		if (cJSON_IsNumber(t) && t->valuedouble == 1 && !event) {
			memcpy(res->answer, "{\"type\":1}", 11);
			res->answer_type = "application/json";
			scheme_refuse(res, SCHEME_ANSWER, "Discord PING");
		} else if (cJSON_IsNumber(t) && t->valuedouble == 0 && !token) {
			res->answer[0] = '\0';
			res->answer_type = NULL;	/* 204 No Content */
			scheme_refuse(res, SCHEME_ANSWER, "Discord PING");
		}
		cJSON_Delete(j);
		if (res->outcome == SCHEME_ANSWER)
			return;
	}
	scheme_verified(res);
}

/* ---- gitlab (docs.gitlab.com/user/project/integrations/webhooks) ---- */

int
scheme_gitlab_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Gitlab-Token") != NULL ||
	    scheme_hget(h, "X-Gitlab-Event") != NULL;
}

void
scheme_gitlab_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	unsigned char got[32], want[32];
	const char *tok = scheme_hget(h, "X-Gitlab-Token");
	size_t k;
	int found = -1;

	(void)p;
	(void)body;
	(void)body_len;
	(void)now;
	if (tok == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Gitlab-Token is required "
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
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Gitlab-Token does not match");
		return;
	}
	res->key_index = (size_t)found;
	scheme_verified(res);
}

/* ---- twilio (twilio.com/docs/usage/security) ---- */

int
scheme_twilio_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Twilio-Signature") != NULL;
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
 * added when it has none: the two forms twilio's validateRequest tries.
 * The host is what follows a user:password@, whose ':' is no port. */
static int
url_port_variant(const char *url, char *out, size_t outsz)
{
	const char *host, *end, *colon, *at;
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
	while ((at = memchr(host, '@', (size_t)(end - host))) != NULL)
		host = at + 1;
	colon = memchr(host, ':', (size_t)(end - host));
	if (colon != NULL)
		n = snprintf(out, outsz, "%.*s%s", (int)(colon - url), url, end);
	else
		n = snprintf(out, outsz, "%.*s:%s%s", (int)(end - url), url,
		    port, end);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

/*
 * The value of the parameter named exactly `name` in a query string or a
 * header's list (entries split at any byte of `seps`, each "name=value"),
 * as a span into it; 0 when there is none.  Names are compared whole:
 * "xbodySHA256=" is not "bodySHA256=".
 */
static int
param_value(const char *list, const char *seps, const char *name,
    struct span *v)
{
	size_t nl = strlen(name);

	while (list != NULL && *list != '\0') {
		size_t len = strcspn(list, seps);

		if (len > nl && strncmp(list, name, nl) == 0 && list[nl] == '=') {
			v->p = list + nl + 1;
			v->len = len - nl - 1;
			return 1;
		}
		list += len;
		list += *list != '\0';
	}
	return 0;
}

/* The query string of url (after its first '?', up to a '#'), or NULL. */
static const char *
url_query(const char *url)
{
	const char *q = strchr(url, '?');

	return q != NULL ? q + 1 : NULL;
}

/* Does url carry bodySHA256= (Twilio's JSON bodies)?  Then *hash is its
 * value. */
static int
twilio_body_hash(const char *url, struct span *hash)
{
	return param_value(url_query(url), "&#", "bodySHA256", hash);
}

/*
 * The URL Twilio called: the configured one, its query string replaced by
 * the request's when the request has one (Twilio appends bodySHA256 to
 * the URL it was given, so no configured URL can hold it).  Into out;
 * 0, or -1 when it does not fit.
 */
static int
twilio_url(const char *url, const char *query, char *out, size_t outsz)
{
	int n;

	if (query == NULL || *query == '\0')
		n = snprintf(out, outsz, "%s", url);
	else
		n = snprintf(out, outsz, "%.*s?%s", (int)strcspn(url, "?#"),
		    url, query);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

int
scheme_twilio_body_matches(const char *url, const unsigned char *body,
    size_t body_len)
{
	unsigned char d[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof d + 1];
	struct span want;

	if (!twilio_body_hash(url, &want))
		return -1;
	crypto_hash_sha256(d, body, body_len);
	sodium_bin2hex(hex, sizeof hex, d, sizeof d);
	return want.len == 64 && sodium_memcmp(hex, want.p, 64) == 0;
}

int
scheme_twilio_content(const char *url, const unsigned char *body,
    size_t body_len, struct scheme_twilio *tc, enum scheme_outcome *o,
    const char **why)
{
	struct param *params = NULL;
	struct span hash;
	size_t np = 0, i, start;

	memset(tc, 0, sizeof *tc);
	*o = SCHEME_BAD_SIGNATURE;
	if (!twilio_body_hash(url, &hash) && body_len > 0) {
		if ((tc->form = malloc(body_len)) == NULL ||
		    (params = calloc(SCHEME_FORM_PARAMS_MAX, sizeof *params)) == NULL) {
			*why = "out of memory";
			goto fail;
		}
		tc->params = params;
		memcpy(tc->form, body, body_len);
		for (start = 0; start <= body_len; ) {
			size_t end = start, eq;

			while (end < body_len && tc->form[end] != '&')
				end++;
			if (end > start) {
				if (np == SCHEME_FORM_PARAMS_MAX) {
					*o = SCHEME_MALFORMED;
					*why = "more form parameters than a "
					    "Twilio request has";
					goto fail;
				}
				for (eq = start; eq < end && tc->form[eq] != '='; eq++)
					;
				params[np].k.p = tc->form + start;
				params[np].k.len = form_decode(tc->form + start,
				    eq - start);
				params[np].v.p = eq < end ? tc->form + eq + 1 :
				    tc->form + end;
				params[np].v.len = eq < end ?
				    form_decode(tc->form + eq + 1, end - eq - 1) : 0;
				np++;
			}
			start = end + 1;
		}
		/* twilio-node sorts the names, and each name's distinct values
		 * (byte order here, UTF-16 order there: the same for every
		 * character below U+E000). */
		qsort(params, np, sizeof *params, param_cmp);
	}
	if ((tc->parts = calloc(1 + 2 * (np ? np : 1), sizeof *tc->parts)) == NULL) {
		*why = "out of memory";
		goto fail;
	}
	tc->nparts = 1;
	for (i = 0; i < np; i++) {
		if (i > 0 && param_cmp(&params[i], &params[i - 1]) == 0)
			continue;
		tc->parts[tc->nparts].p = params[i].k.p;
		tc->parts[tc->nparts++].len = params[i].k.len;
		tc->parts[tc->nparts].p = params[i].v.p;
		tc->parts[tc->nparts++].len = params[i].v.len;
	}
	tc->parts[0].p = url;
	tc->parts[0].len = strlen(url);
	return 0;
fail:
	scheme_twilio_free(tc);
	return -1;
}

void
scheme_twilio_free(struct scheme_twilio *tc)
{
	free(tc->parts);
	free(tc->params);
	free(tc->form);
	memset(tc, 0, sizeof *tc);
}

void
scheme_twilio_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "X-Twilio-Signature");
	const char *settings = scheme_hget(h, "X-Twilio-Webhooks-Signature-Settings");
	const char *why;
	struct scheme_twilio tc;
	enum scheme_outcome o;
	struct span e, a;
	enum scheme_alg alg = SCHEME_SHA1;
	char url[2048], other[2048];
	int rc;

	(void)now;
	if (sig == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Twilio-Signature is required");
		return;
	}
	if (p->url == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "twilio needs the URL it was given "
		    "(the source's url)");
		return;
	}
	if (twilio_url(p->url, h->query, url, sizeof url) == -1) {
		scheme_refuse(res, SCHEME_MALFORMED, "the request's query string "
		    "is longer than a Twilio URL");
		return;
	}
	/* The newer shared-key signatures name their algorithm; without the
	 * header it is the Auth Token's HMAC-SHA1. */
	if (param_value(settings, ",; ", "algorithm", &a)) {
		if (a.len == 11 && strncasecmp(a.p, "HMAC_SHA256", 11) == 0)
			alg = SCHEME_SHA256;
		else if (!(a.len == 9 && strncasecmp(a.p, "HMAC_SHA1", 9) == 0)) {
			scheme_refuse(res, SCHEME_MALFORMED, "unknown Twilio signature "
			    "algorithm");
			return;
		}
	}
	/* JSON bodies: the URL carries the body's SHA-256, hex; the
	 * signature covers the URL alone. */
	if (scheme_twilio_body_matches(url, body, body_len) == 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "the body does not match "
		    "the URL's bodySHA256");
		return;
	}
	if (scheme_twilio_content(url, body, body_len, &tc, &o, &why) == -1) {
		scheme_refuse(res, o, why);
		return;
	}
	e.p = sig;
	e.len = strlen(sig);
	rc = scheme_match_macs(alg, SCHEME_BASE64, keys, nkeys, tc.parts,
	    tc.nparts, &e, 1, res);
	if (rc != 0 && url_port_variant(url, other, sizeof other) == 0) {
		tc.parts[0].p = other;
		tc.parts[0].len = strlen(other);
		rc = scheme_match_macs(alg, SCHEME_BASE64, keys, nkeys, tc.parts,
		    tc.nparts, &e, 1, res);
	}
	if (rc != 0)
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Twilio-Signature does not "
		    "verify for the configured URL");
	else
		scheme_verified(res);
	scheme_twilio_free(&tc);
}

/*
 * Twilio's signed content, digested: a form's parameters as the signature
 * takes them (sorted, decoded, each name and value length-prefixed), so
 * that a form reordered or re-encoded is the same content; a JSON body
 * (bodySHA256 in the request's query) its bytes, which the URL pins.
 */
int
scheme_twilio_digest(const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, unsigned char out[32])
{
	crypto_hash_sha256_state st;
	struct scheme_twilio tc;
	enum scheme_outcome o;
	const char *why;
	struct span hash;
	size_t i;

	if (param_value(h->query, "&#", "bodySHA256", &hash)) {
		crypto_hash_sha256(out, body, body_len);
		return 0;
	}
	if (scheme_twilio_content("", body, body_len, &tc, &o, &why) == -1)
		return -1;
	crypto_hash_sha256_init(&st);
	for (i = 1; i < tc.nparts; i++) {
		uint64_t len = tc.parts[i].len;

		crypto_hash_sha256_update(&st, (const unsigned char *)&len,
		    sizeof len);
		crypto_hash_sha256_update(&st, tc.parts[i].p, tc.parts[i].len);
	}
	crypto_hash_sha256_final(&st, out);
	scheme_twilio_free(&tc);
	return 0;
}

/* ---- hmac, the generic scheme ---- */

int
scheme_never_recognised(const struct scheme_headers *h)
{
	(void)h;
	return 0;
}

void
scheme_hmac_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig, *ts = NULL, *pre = p->prefix != NULL ? p->prefix : "";
	const char *sep = p->separator != NULL ? p->separator : ".";
	struct part parts[3];
	struct span e;
	size_t n = 0;

	if (p->header == NULL || (sig = scheme_hget(h, p->header)) == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "the configured signature header "
		    "is required");
		return;
	}
	if (p->timestamp_header != NULL) {
		if ((ts = scheme_hget(h, p->timestamp_header)) == NULL) {
			scheme_refuse(res, SCHEME_MISSING, "the configured timestamp "
			    "header is required");
			return;
		}
		if (scheme_check_time(ts, strlen(ts), now, p->tolerance, res,
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
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "signature without its prefix");
		return;
	}
	e.p = sig + strlen(pre);
	e.len = strlen(e.p);
	if (scheme_match_macs(p->alg, p->encoding, keys, nkeys, parts, n, &e, 1,
	    res) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "the signature does not verify");
		return;
	}
	scheme_verified(res);
}

