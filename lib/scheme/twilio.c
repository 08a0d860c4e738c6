/*
 * twilio: Twilio's webhooks (twilio.com/docs/usage/security;
 * twilio-node src/webhooks/webhooks.ts: getExpectedTwilioSignature,
 * validateRequest, validateRequestWithBody;
 * …/usage/webhooks/webhooks-connection-overrides).
 *
 * X-Twilio-Signature is HMAC-SHA1 (the Auth Token's; HMAC-SHA256 for the
 * newer shared keys, named by X-Twilio-Webhooks-Signature-Settings) of
 * the URL Twilio called and, for a form body, each parameter's name and
 * value, sorted.  For a JSON body Twilio appends bodySHA256=<hex> to the
 * URL it was given and signs that URL alone: the configured url never
 * holds it, the request's query string does.  No time is signed.
 * I-Twilio-Idempotency-Token, outside the signature, is the id, so the
 * inbox keys it with the content, which for a form is its parameters as
 * signed (a form reordered or re-encoded is the same content).  Twilio
 * sends again only as the URL's connection overrides say (#rc=, at most
 * 5), all within 15 s.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

/* Parameters of a form body looked at: a message or a call carries
 * 20-40. */
#define FORM_PARAMS_MAX		SCHEME_FORM_PARAMS_MAX
/* The URL Twilio called, bytes + NUL: the configured one (at most 1024,
 * twilio_params_check) and the query string the request adds. */
#define URL_MAX			2048

/*
 * A body's signed content: parts[0] the URL, then each distinct decoded
 * form parameter's name and value, sorted (none when the URL carries
 * bodySHA256=, whose signature covers the URL alone).  The verifier, the
 * digest and the signer share it.
 */
struct twilio_content {
	char		*form;		/* the body's copy, decoded in place */
	void		*params;	/* the parameters, sorted */
	struct part	*parts;
	size_t		 nparts;
};

struct param {
	struct span	k, v;
};

static int
twilio_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Twilio-Signature") != NULL;
}

static int
twilio_params_check(const struct scheme_params *p, const char **why)
{
	if (p->url == NULL || (strncmp(p->url, "https://", 8) != 0 &&
	    strncmp(p->url, "http://", 7) != 0) || strlen(p->url) > 1024) {
		*why = "scheme = twilio needs url = the https:// URL given to "
		    "Twilio (at most 1024 bytes)";
		return -1;
	}
	return 0;
}

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
	return scheme_param_value(url_query(url), "&#", "bodySHA256", hash);
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

static int
body_matches(const char *url, const unsigned char *body,
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

static void
content_free(struct twilio_content *tc)
{
	free(tc->parts);
	free(tc->params);
	free(tc->form);
	memset(tc, 0, sizeof *tc);
}

static int
content(const char *url, const unsigned char *body,
    size_t body_len, struct twilio_content *tc, enum scheme_outcome *o,
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
				params[np].k.len = scheme_form_decode(tc->form + start,
				    eq - start);
				params[np].v.p = eq < end ? tc->form + eq + 1 :
				    tc->form + end;
				params[np].v.len = eq < end ?
				    scheme_form_decode(tc->form + eq + 1, end - eq - 1) : 0;
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
	content_free(tc);
	return -1;
}

static void
twilio_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "X-Twilio-Signature");
	const char *settings = scheme_hget(h, "X-Twilio-Webhooks-Signature-Settings");
	const char *why;
	struct twilio_content tc;
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
	if (scheme_param_value(settings, ",; ", "algorithm", &a)) {
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
	if (body_matches(url, body, body_len) == 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "the body does not match "
		    "the URL's bodySHA256");
		return;
	}
	if (content(url, body, body_len, &tc, &o, &why) == -1) {
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
	content_free(&tc);
}

/*
 * Twilio's signed content, digested: a form's parameters as the signature
 * takes them (sorted, decoded, each name and value after its length as 8
 * little-endian bytes), so that a form reordered or re-encoded is the
 * same content; a JSON body (bodySHA256 in the URL called, decided as the
 * verifier decides) its bytes, which that URL pins.
 */
static int
twilio_digest(const struct scheme_params *p, const struct scheme_headers *h,
    const unsigned char *body, size_t body_len, unsigned char out[32])
{
	crypto_hash_sha256_state st;
	struct twilio_content tc;
	enum scheme_outcome o;
	const char *why;
	struct span hash;
	char url[URL_MAX];
	size_t i;

	if (twilio_url(p->url != NULL ? p->url : "", h->query, url,
	    sizeof url) == -1 || twilio_body_hash(url, &hash)) {
		crypto_hash_sha256(out, body, body_len);
		return 0;
	}
	if (content("", body, body_len, &tc, &o, &why) == -1)
		return -1;
	crypto_hash_sha256_init(&st);
	for (i = 1; i < tc.nparts; i++) {
		unsigned char len[8];
		uint64_t n = tc.parts[i].len;
		int b;

		for (b = 0; b < 8; b++)
			len[b] = (unsigned char)(n >> (8 * b));
		crypto_hash_sha256_update(&st, len, sizeof len);
		crypto_hash_sha256_update(&st, tc.parts[i].p, tc.parts[i].len);
	}
	crypto_hash_sha256_final(&st, out);
	content_free(&tc);
	return 0;
}

/*
 * The URL the sender calls is the configured one with the target's query
 * string; a JSON body's adds bodySHA256=<hex>, as Twilio does (out->query
 * tells the sender).  A form body: the URL and the sorted parameters.
 */
static int
twilio_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	struct twilio_content tc = { 0 };
	unsigned char d[crypto_hash_sha256_BYTES];
	char url[URL_MAX], hex[2 * sizeof d + 1], v[SCHEME_HEADER_VALUE_MAX];
	enum scheme_outcome o;
	int rc = -1, json;

	(void)ts;
	(void)type;
	if (p->url == NULL) {
		*why = "twilio signs the URL it was given: the source's url is "
		    "required";
		return -1;
	}
	json = body_len > 0 && (body[0] == '{' || body[0] == '[');
	if (json) {
		crypto_hash_sha256(d, body, body_len);
		sodium_bin2hex(hex, sizeof hex, d, sizeof d);
		size_t ql = strlen(out->query);

		if ((size_t)snprintf(out->query + ql, sizeof out->query - ql,
		    "%sbodySHA256=%s", ql > 0 ? "&" : "", hex) >=
		    sizeof out->query - ql)
			return -1;
	} else {
		out->content_type = "application/x-www-form-urlencoded";
	}
	if (twilio_url(p->url, out->query, url, sizeof url) == -1 ||
	    content(url, body, body_len, &tc, &o, why) == -1)
		goto out;
	*why = "a header would not fit";
	if (scheme_encoded_mac(SCHEME_SHA1, SCHEME_BASE64, key, tc.parts,
	    tc.nparts, "", v) == -1 ||
	    scheme_signed_add(out, "X-Twilio-Signature", v) == -1 ||
	    scheme_signed_opt(out, "I-Twilio-Idempotency-Token", id) == -1)
		goto out;
	rc = 0;
out:
	content_free(&tc);
	return rc;
}

static void
twilio_sample_id(char *out)
{
	char hex[33];

	sample_hex(hex, 16, 0);
	snprintf(out, SCHEME_SAMPLE_ID_SIZE, "SM%s", hex);
}

/* Twilio's form: an incoming message's parameters (percent-encoded where
 * a form needs it), then a Filler parameter to `size` bytes. */
static int
twilio_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	char *enc;
	size_t start = body->len, i;
	int rc;

	(void)now;
	/* The id is the caller's (--id): encode what a form must. */
	if ((enc = malloc(3 * strlen(id) + 1)) == NULL)
		return -1;
	for (i = 0; *id != '\0'; id++) {
		unsigned char ch = (unsigned char)*id;

		if (isalnum(ch) || strchr("-_.~", ch) != NULL) {
			enc[i++] = (char)ch;
		} else {
			snprintf(enc + i, 4, "%%%02X", ch);
			i += 3;
		}
	}
	enc[i] = '\0';
	rc = buf_printf(body, "AccountSid=AC00000000000000000000000000000000"
	    "&ApiVersion=2010-04-01&Body=webhook-inbox+test&From=%%2B15005550006"
	    "&MessageSid=%s&NumMedia=0&SmsStatus=received&To=%%2B15005550006",
	    enc);
	free(enc);
	if (rc == -1)
		return -1;
	if (size > (int64_t)(body->len - start + 8)) {
		size_t n = (size_t)size - (body->len - start) - 8;

		if (buf_append(body, "&Filler=", 8) == -1)
			return -1;
		while (n > 0) {
			static const char xs[] = "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx";
			size_t k = n < sizeof xs - 1 ? n : sizeof xs - 1;

			if (buf_append(body, xs, k) == -1)
				return -1;
			n -= k;
		}
	}
	return 0;
}

const struct scheme scheme_twilio = {
	.name = "twilio",
	.title = "Twilio",
	.signature_header = "X-Twilio-Signature",
	.id_header = "I-Twilio-Idempotency-Token",
	.recognise = twilio_recognise,
	.secret_load = scheme_raw_secret,
	.params_check = twilio_params_check,
	.verify = twilio_verify,
	.content_digest = twilio_digest,
	.sign = twilio_sign,
	.sample_id = twilio_sample_id,
	.sample_body = twilio_sample_body,
};
