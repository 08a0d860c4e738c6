/*
 * test_scheme_sign: lib/scheme/ (each provider's sign) — for every valid signed
 * delivery of tests/vectors/providers.json (each provider's own SDK's),
 * signing its body with its secret, timestamp and id gives the vector's
 * signature header byte for byte (one entry of it where the sender signed
 * with two secrets), and scheme_verify takes what was signed; then
 * sign → verify for every signable scheme and each of two secrets (a
 * rotation), the refusals (Discord, whpk_, a missing id or URL, values too
 * long) and the wipe.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/scheme/scheme.h"
#include "lib/scheme/sample.h"
#include "tests/check_common.h"
#include "tests/provider_vectors.h"

/* A vector's header; Svix's names stand for Standard Webhooks' ones. */
static const char *
vheader(const cJSON *headers, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, headers)
		if (strcasecmp(it->string, name) == 0 && cJSON_IsString(it))
			return it->valuestring;
	if (strncmp(name, "webhook-", 8) == 0) {
		char svix[64];

		snprintf(svix, sizeof svix, "svix-%s", name + 8);
		return vheader(headers, svix);
	}
	return NULL;
}

static const char *
signed_get(void *arg, const char *name)
{
	return scheme_signed_get(arg, name);
}

/* Is s the scheme called name? */
static int
is(const struct scheme *s, const char *name)
{
	return s != NULL && strcmp(s->name, name) == 0;
}

/* The time the vector's sender signed (its header's), else its clock. */
static int64_t
vector_time(const struct scheme *s, const struct scheme_params *p,
    const cJSON *headers, int64_t now)
{
	const char *v = NULL, *t;

	if (is(s, "standard")) {
		v = vheader(headers, "webhook-timestamp");
	} else if (is(s, "slack")) {
		v = vheader(headers, "X-Slack-Request-Timestamp");
	} else if (is(s, "stripe") || is(s, "paddle") || is(s, "mercadopago")) {
		t = vheader(headers, s->signature_header);
		v = t != NULL ? strchr(t, '=') + 1 : NULL;
	} else if (is(s, "hmac") && p->timestamp_header != NULL) {
		v = vheader(headers, p->timestamp_header);
	}
	return v != NULL ? strtoll(v, NULL, 10) : now;
}

/*
 * Vectors whose signature header is not the one a single secret's sender
 * writes, each with why; their signatures must still verify.
 */
static const struct {
	const char	*name, *why;
	int		 entry;	/* 1: ours is one entry of the vector's */
} unlike[] = {
	{ "standard_rotation_two_entries", "two secrets' entries", 1 },
	{ "stripe_rotation_second_v1", "two secrets' v1 entries", 1 },
	{ "paddle_two_h1", "two secrets' h1 entries", 1 },
	{ "twilio_url_with_default_port", "signed for the URL without its "
	    ":443; we sign the configured URL as written", 0 },
	{ "twilio_hmac_sha256", "the newer shared-key HMAC-SHA256, which "
	    "scheme_sign does not make (the Auth Token's SHA-1 only)", 0 },
	/* Mercado Pago signs a request id of its own, new for every
	 * request: ours is another, so is the MAC; the query, the form of
	 * the header and the verdict are compared. */
	{ "mercadopago_valid", "a request id of ours", 0 },
	{ "mercadopago_rotation_two_secrets", "a request id of ours", 0 },
	{ "mercadopago_no_request_id", "a request id of ours", 0 },
	{ "mercadopago_body_not_signed", "a request id of ours", 0 },
	{ "mercadopago_uppercase_id_signed_as_sent", "a request id of ours", 0 },
};

/* Is the vector one a sender signs (valid, signed, signable)? */
static int
signable(const cJSON *c, const struct scheme *s)
{
	const char *o = pv_member(c, "outcome");

	return strcmp(pv_member(c, "expected"), "valid") == 0 &&
	    (o == NULL || strcmp(o, "answer") == 0) && s != scheme_find("discord");
}

START_TEST(vector_signs_as_the_sdk)
{
	const cJSON *c = cJSON_GetArrayItem(pv_vectors, _i);
	const char *name = pv_member(c, "name"), *body = pv_member(c, "body");
	const cJSON *secrets = cJSON_GetObjectItemCaseSensitive(c, "secrets");
	const cJSON *headers = cJSON_GetObjectItemCaseSensitive(c, "headers");
	const cJSON *ki = cJSON_GetObjectItemCaseSensitive(c, "key_index");
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(c, "now");
	const struct scheme *s = scheme_find(pv_member(c, "scheme"));
	struct scheme_secret keys[SCHEME_SECRETS_MAX];
	struct scheme_signed out;
	struct scheme_headers h = { signed_get, &out, NULL };
	struct scheme_params p;
	struct scheme_result res;
	const char *why = NULL, *want, *got, *id, *type = NULL;
	size_t nkeys = 0, k, u;
	int64_t t;
	const cJSON *it;

	ck_assert_ptr_nonnull(s);
	if (!signable(c, s))
		return;		/* counted in signed_vectors_counted */
	cJSON_ArrayForEach(it, secrets) {
		ck_assert_int_eq(scheme_secret_load(s, it->valuestring,
		    &keys[nkeys], &why), 0);
		nkeys++;
	}
	k = cJSON_IsNumber(ki) ? (size_t)ki->valuedouble : 0;
	pv_params(c, s, &p);
	t = vector_time(s, &p, headers, (int64_t)now->valuedouble);
	id = s->id_header != NULL ? vheader(headers, s->id_header) : NULL;
	if (id == NULL)
		id = pv_member(c, "id");
	if (s->type_header != NULL)
		type = vheader(headers, s->type_header);
	ck_assert_msg(scheme_sign(s, &p, &keys[k], (const unsigned char *)body,
	    strlen(body), t, id, type, NULL, &out, &why) == 0, "%s: %s", name, why);
	/* The signature header: the SDK's, byte for byte. */
	want = vheader(headers, s == scheme_find("hmac") ? p.header :
	    s->signature_header);
	got = scheme_signed_get(&out, s == scheme_find("hmac") ? p.header :
	    s->signature_header);
	ck_assert_msg(want != NULL && got != NULL, "%s: no signature header",
	    name);
	for (u = 0; u < NELEM(unlike); u++)
		if (strcmp(unlike[u].name, name) == 0)
			break;
	if (u == NELEM(unlike)) {
		ck_assert_msg(strcmp(got, want) == 0, "%s: signed\n  %s\n"
		    "the SDK's\n  %s", name, got, want);
	} else if (unlike[u].entry) {
		/* Ours is one of the entries: the last after the
		 * timestamp's separator, or the whole for standard. */
		const char *e = s == scheme_find("stripe") ? strrchr(got, ',') + 1 :
		    s == scheme_find("paddle") ? strrchr(got, ';') + 1 : got;

		ck_assert_msg(strstr(want, e) != NULL, "%s: %s not in %s", name,
		    e, want);
		ck_assert_int_eq(strncmp(want, got, (size_t)(e - got)), 0);
	}
	/* The other headers the vector has too: the same values. */
	for (u = 0; u < out.n; u++) {
		const char *v = vheader(headers, out.h[u].name);

		/* Not compared: the send time, and what names one delivery
		 * or one shop rather than the event (Shopify's webhook id
		 * and shop domain). */
		if (v != NULL && strcmp(out.h[u].name, "X-Shopify-Triggered-At") &&
		    strcmp(out.h[u].name, "X-Shopify-Webhook-Id") &&
		    strcmp(out.h[u].name, "X-Shopify-Shop-Domain") &&
		    strcmp(out.h[u].name, "x-request-id") &&
		    strcmp(out.h[u].name, s->signature_header))
			ck_assert_msg(strcmp(v, out.h[u].value) == 0,
			    "%s: %s: %s, the SDK's %s", name, out.h[u].name,
			    out.h[u].value, v);
	}
	if ((want = vheader(headers, "Content-Type")) != NULL)
		ck_assert_str_eq(out.content_type, want);
	/* What the sender adds to the URL it calls (Twilio's bodySHA256):
	 * the query the vector's request carried. */
	ck_assert_str_eq(out.query, pv_member(c, "query") != NULL ?
	    pv_member(c, "query") : "");
	/* And the verifier takes it, under the secret that signed it, from
	 * the URL the sender calls. */
	h.query = out.query[0] != '\0' ? out.query : NULL;
	ck_assert_msg(scheme_verify(s, &p, keys, nkeys, &h,
	    (const unsigned char *)body, strlen(body),
	    (int64_t)now->valuedouble, &res) == 0, "%s: %s", name, res.why);
	ck_assert_uint_eq(res.key_index, k);
	scheme_signed_wipe(&out);
	for (k = 0; k < nkeys; k++)
		scheme_secret_wipe(&keys[k]);
}
END_TEST

START_TEST(signed_vectors_counted)
{
	const struct scheme *sc;
	int n = 0, per[SCHEME_MAX] = { 0 };

	ck_assert_int_gt(pv_count, 0);
	for (int i = 0; i < pv_count; i++) {
		const cJSON *c = cJSON_GetArrayItem(pv_vectors, i);
		const struct scheme *s = scheme_find(pv_member(c, "scheme"));

		if (signable(c, s)) {
			n++;
			for (size_t k = 0; scheme_at(k) != NULL; k++)
				per[k] += scheme_at(k) == s;
		}
	}
	/* Every scheme that signs has a vector signed here. */
	for (size_t k = 0; (sc = scheme_at(k)) != NULL; k++)
		if (sc->sign != NULL)
			ck_assert_msg(per[k] > 0, "no signed vector for %s",
			    sc->name);
	ck_assert_int_ge(n, 25);
}
END_TEST

/* ---- round trips ---- */

/* A secret as each scheme's dashboard shows one. */
static const char *
secret_text(const char * id, int second)
{
	if (strcmp(id, "standard") == 0)
		return second ? "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD" :
		    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
	if (strcmp(id, "stripe") == 0)
		return second ? "whsec_second" : "whsec_first";
	if (strcmp(id, "paddle") == 0)
		return second ? "pdl_ntfset_second" : "pdl_ntfset_first";
	return second ? "second secret" : "first secret";
}

static void
round_trip(const char * id, const struct scheme_params *pp,
    const char *body, const char *content_type)
{
	const struct scheme *s = scheme_find(id);
	struct scheme_secret keys[2];
	struct scheme_signed out;
	struct scheme_headers h = { signed_get, &out, NULL };
	struct scheme_params p;
	struct scheme_result res;
	const char *why;
	int64_t now = 1764806400;

	if (pp != NULL)
		p = *pp;
	else
		scheme_params_init(s, &p);
	for (int k = 0; k < 2; k++)
		ck_assert_int_eq(scheme_secret_load(s, secret_text(id, k),
		    &keys[k], &why), 0);
	for (size_t k = 0; k < 2; k++) {
		/* Signed with each secret; verified with both configured. */
		ck_assert_msg(scheme_sign(s, &p, &keys[k],
		    (const unsigned char *)body, strlen(body), now - 5,
		    "id_1", "thing.happened", NULL, &out, &why) == 0, "%s: %s",
		    s->name, why);
		ck_assert_str_eq(out.content_type, content_type);
		h.query = out.query[0] != '\0' ? out.query : NULL;
		ck_assert_msg(scheme_verify(s, &p, keys, 2, &h,
		    (const unsigned char *)body, strlen(body), now, &res) == 0,
		    "%s key %zu: %s", s->name, k, res.why);
		ck_assert_int_eq(res.outcome, SCHEME_OK);
		ck_assert_uint_eq(res.key_index, k);
		ck_assert_ptr_eq(scheme_recognise(&h), strcmp(id, "hmac") == 0 ? NULL : s);
		/* A byte more in the body: refused (GitLab signs no body). */
		if (strcmp(id, "gitlab") != 0)
			ck_assert_int_eq(scheme_verify(s, &p, keys, 2, &h,
			    (const unsigned char *)body, strlen(body) - 1, now,
			    &res), -1);
		scheme_signed_wipe(&out);
	}
	/* Only the other secret configured: refused, for a signing scheme. */
	ck_assert_int_eq(scheme_sign(s, &p, &keys[0], (const unsigned char *)body,
	    strlen(body), now, "id_1", "t", NULL, &out, &why), 0);
	ck_assert_int_eq(scheme_verify(s, &p, &keys[1], 1, &h,
	    (const unsigned char *)body, strlen(body), now, &res), -1);
	ck_assert_int_eq(res.outcome, SCHEME_BAD_SIGNATURE);
	scheme_signed_wipe(&out);
	scheme_secret_wipe(&keys[0]);
	scheme_secret_wipe(&keys[1]);
}

START_TEST(round_trips_each_scheme_and_rotation)
{
	static const char json[] = "{\"id\":\"evt_1\",\"type\":\"a.b\"}";
	struct scheme_params p;

	round_trip("standard", NULL, json, "application/json");
	round_trip("stripe", NULL, json, "application/json");
	round_trip("github", NULL, json, "application/json");
	round_trip("shopify", NULL, json, "application/json");
	round_trip("woocommerce", NULL, json, "application/json");
	round_trip("slack", NULL, json, "application/json");
	round_trip("paddle", NULL, json, "application/json");
	round_trip("gitlab", NULL, json, "application/json");
	scheme_params_init(scheme_find("twilio"), &p);
	p.url = "https://hooks.example.net/webhook.fcgi/twilio?x=1";
	round_trip("twilio", &p,
	    "MessageSid=SM1&Body=Gr%C3%BC%C3%9Fe+%26+100%25&From=%2B1&Body=a",
	    "application/x-www-form-urlencoded");
	for (int alg = SCHEME_SHA1; alg <= SCHEME_SHA512; alg++)
		for (int enc = SCHEME_HEX; enc <= SCHEME_BASE64; enc++) {
			scheme_params_init(scheme_find("hmac"), &p);
			p.header = "X-Sig";
			p.prefix = alg == SCHEME_SHA256 ? "sha256=" : NULL;
			p.alg = (enum scheme_alg)alg;
			p.encoding = (enum scheme_encoding)enc;
			p.timestamp_header = enc == SCHEME_HEX ? "X-Time" : NULL;
			p.separator = alg == SCHEME_SHA512 ? ":" : NULL;
			round_trip("hmac", &p, json, "application/json");
		}
}
END_TEST

START_TEST(headers_as_each_sender_names_them)
{
	static const struct {
		const char *	 id;
		const char	*names[8];
	} cases[] = {
		{ "standard", { "webhook-id", "webhook-timestamp",
		    "webhook-signature" } },
		{ "stripe", { "Stripe-Signature" } },
		{ "github", { "X-Hub-Signature-256", "X-Hub-Signature",
		    "X-GitHub-Delivery", "X-GitHub-Event" } },
		{ "shopify", { "X-Shopify-Hmac-Sha256", "X-Shopify-Event-Id",
		    "X-Shopify-Topic", "X-Shopify-Triggered-At",
		    "X-Shopify-Webhook-Id", "X-Shopify-Shop-Domain",
		    "X-Shopify-API-Version" } },
		{ "woocommerce", { "X-WC-Webhook-Signature",
		    "X-WC-Webhook-Delivery-ID", "X-WC-Webhook-Topic",
		    "X-WC-Webhook-Resource", "X-WC-Webhook-Event" } },
		{ "slack", { "X-Slack-Signature",
		    "X-Slack-Request-Timestamp" } },
		{ "paddle", { "Paddle-Signature" } },
		{ "gitlab", { "X-Gitlab-Token", "X-Gitlab-Event-UUID",
		    "X-Gitlab-Event" } },
	};
	struct scheme_signed out;
	struct scheme_params p;
	struct scheme_secret k;
	const char *why;

	for (size_t i = 0; i < NELEM(cases); i++) {
		const struct scheme *s = scheme_find(cases[i].id);
		size_t n = 0;

		scheme_params_init(s, &p);
		ck_assert_int_eq(scheme_secret_load(s, secret_text(s->name, 0), &k,
		    &why), 0);
		ck_assert_int_eq(scheme_sign(s, &p, &k, (const unsigned char *)"{}",
		    2, 1764806400, "id_9", "order.updated", NULL, &out, &why), 0);
		while (n < NELEM(cases[i].names) && cases[i].names[n] != NULL) {
			ck_assert_str_eq(out.h[n].name, cases[i].names[n]);
			n++;
		}
		ck_assert_uint_eq(out.n, n);
		scheme_secret_wipe(&k);
	}
	/* Values: Stripe's and Paddle's forms, Shopify's instant, GitHub's
	 * SHA-1 twin, GitLab's token. */
	scheme_params_init(scheme_find("stripe"), &p);
	ck_assert_int_eq(scheme_secret_load(scheme_find("stripe"), "whsec_k",
	    &k, &why), 0);
	ck_assert_int_eq(scheme_sign(scheme_find("stripe"), &p, &k,
	    (const unsigned char *)"{}", 2, 1764806400, NULL, NULL, NULL, &out, &why), 0);
	ck_assert_int_eq(strncmp(out.h[0].value, "t=1764806400,v1=", 16), 0);
	ck_assert_uint_eq(strlen(out.h[0].value), 16 + 64);
	ck_assert_int_eq(scheme_sign(scheme_find("paddle"), &p, &k,
	    (const unsigned char *)"{}", 2, 1764806400, NULL, NULL, NULL, &out, &why), 0);
	ck_assert_int_eq(strncmp(out.h[0].value, "ts=1764806400;h1=", 17), 0);
	ck_assert_int_eq(scheme_sign(scheme_find("shopify"), &p, &k,
	    (const unsigned char *)"{}", 2, 1764806400, NULL, NULL, NULL, &out, &why), 0);
	ck_assert_str_eq(scheme_signed_get(&out, "x-shopify-triggered-at"),
	    "2025-12-04T00:00:00Z");
	/* No id or type given: their headers are left out. */
	ck_assert_ptr_null(scheme_signed_get(&out, "X-Shopify-Webhook-Id"));
	ck_assert_int_eq(scheme_sign(scheme_find("github"), &p, &k,
	    (const unsigned char *)"Hello, World!", 13, 0, NULL, NULL, NULL, &out,
	    &why), 0);
	ck_assert_int_eq(strncmp(scheme_signed_get(&out, "X-Hub-Signature"),
	    "sha1=", 5), 0);
	ck_assert_uint_eq(strlen(scheme_signed_get(&out, "X-Hub-Signature")), 45);
	ck_assert_int_eq(scheme_sign(scheme_find("gitlab"), &p, &k,
	    (const unsigned char *)"{}", 2, 0, NULL, NULL, NULL, &out, &why), 0);
	ck_assert_str_eq(scheme_signed_get(&out, "X-Gitlab-Token"), "whsec_k");
	scheme_signed_wipe(&out);
	ck_assert_uint_eq(out.n, 0);
	ck_assert_str_eq(out.h[0].value, "");
	scheme_secret_wipe(&k);
}
END_TEST

START_TEST(refusals)
{
	static const char *discord_pk =
	    "197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d61";
	const struct scheme *d = scheme_find("discord");
	const struct scheme *std = scheme_find("standard");
	const struct scheme *h = scheme_find("hmac");
	const struct scheme *tw = scheme_find("twilio");
	struct scheme_signed out;
	struct scheme_params p;
	struct scheme_secret k;
	const char *why = NULL;
	char big[600];

	/* Discord: a public key cannot sign, and says so. */
	scheme_params_init(d, &p);
	ck_assert_int_eq(scheme_secret_load(d, discord_pk, &k, &why), 0);
	ck_assert_int_eq(scheme_can_sign(d, &k, &why), 0);
	ck_assert_ptr_nonnull(strstr(why, "private key"));
	why = NULL;
	ck_assert_int_eq(scheme_sign(d, &p, &k, (const unsigned char *)"{}", 2,
	    0, "i", NULL, NULL, &out, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "Discord"));
	ck_assert_uint_eq(out.n, 0);
	/* A whpk_ key is one too. */
	scheme_params_init(std, &p);
	ck_assert_int_eq(scheme_secret_load(std,
	    "whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4=", &k, &why), 0);
	ck_assert_int_eq(scheme_sign(std, &p, &k, (const unsigned char *)"{}", 2,
	    0, "i", NULL, NULL, &out, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "whpk_"));
	/* Standard Webhooks signs its id: none is refused. */
	ck_assert_int_eq(scheme_secret_load(std,
	    "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &k, &why), 0);
	ck_assert_int_eq(scheme_can_sign(std, &k, &why), 1);
	ck_assert_int_eq(scheme_sign(std, &p, &k, (const unsigned char *)"{}", 2,
	    0, NULL, NULL, NULL, &out, &why), -1);
	ck_assert_int_eq(scheme_sign(std, &p, &k, (const unsigned char *)"{}", 2,
	    -1, "i", NULL, NULL, &out, &why), -1);
	/* hmac: a header name or prefix that does not fit is refused, not
	 * cut. */
	scheme_params_init(h, &p);
	ck_assert_int_eq(scheme_sign(h, &p, &k, (const unsigned char *)"{}", 2,
	    0, NULL, NULL, NULL, &out, &why), -1);
	memset(big, 'X', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	p.header = "X-Sig";
	p.prefix = big;
	ck_assert_int_eq(scheme_sign(h, &p, &k, (const unsigned char *)"{}", 2,
	    0, NULL, NULL, NULL, &out, &why), -1);
	ck_assert_uint_eq(out.n, 0);
	big[SCHEME_HEADER_NAME_MAX] = '\0';
	p.prefix = NULL;
	p.header = big;
	ck_assert_int_eq(scheme_sign(h, &p, &k, (const unsigned char *)"{}", 2,
	    0, NULL, NULL, NULL, &out, &why), -1);
	big[SCHEME_HEADER_NAME_MAX - 1] = '\0';
	ck_assert_int_eq(scheme_sign(h, &p, &k, (const unsigned char *)"{}", 2,
	    0, NULL, NULL, NULL, &out, &why), 0);
	/* Twilio: the URL it signs is required; a JSON body's URL gets its
	 * bodySHA256 (SHA-256("{}")) as Twilio adds it, after the query the
	 * URL called has, and the URL alone is signed. */
	scheme_params_init(tw, &p);
	ck_assert_int_eq(scheme_sign(tw, &p, &k, (const unsigned char *)"a=b", 3,
	    0, NULL, NULL, NULL, &out, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "url"));
	p.url = "https://h.example/t";
	ck_assert_int_eq(scheme_sign(tw, &p, &k, (const unsigned char *)"{}", 2,
	    0, NULL, NULL, "x=1", &out, &why), 0);
	ck_assert_str_eq(out.content_type, "application/json");
	ck_assert_str_eq(out.query, "x=1&bodySHA256="
	    "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a");
	ck_assert_uint_eq(out.n, 1);
	/* A form: its parameters signed, the query left as it was. */
	ck_assert_int_eq(scheme_sign(tw, &p, &k, (const unsigned char *)"a=b", 3,
	    0, NULL, NULL, NULL, &out, &why), 0);
	ck_assert_str_eq(out.content_type, "application/x-www-form-urlencoded");
	ck_assert_str_eq(out.query, "");
	scheme_secret_wipe(&k);
}
END_TEST

/* The parts of sample events: a version 4 UUID, an instant to the
 * second, a JSON event grown to the size asked. */
START_TEST(sample_parts)
{
	char u[37], t[32];
	cJSON *ev = cJSON_CreateObject();
	struct buf b;

	sample_uuid(u);
	ck_assert_uint_eq(strlen(u), 36);
	ck_assert(u[8] == '-' && u[13] == '-' && u[14] == '4' &&
	    strchr("89ab", u[19]) != NULL);
	sample_rfc3339(1764806400, t);
	ck_assert_str_eq(t, "2025-12-04T00:00:00Z");
	buf_init(&b, 1 << 20);
	ck_assert_int_eq(sample_padded_json(ev, ev, 500, &b), 0);
	ck_assert_uint_eq(b.len, 500);
	buf_free(&b);
	cJSON_Delete(ev);
}
END_TEST

static Suite *
sign_suite(void)
{
	Suite *s = suite_create("scheme_sign");
	TCase *tc;

	tc = tcase_create("vectors");
	tcase_add_test(tc, signed_vectors_counted);
	tcase_add_loop_test(tc, vector_signs_as_the_sdk, 0, pv_count);
	suite_add_tcase(s, tc);
	tc = tcase_create("round trips");
	tcase_add_test(tc, round_trips_each_scheme_and_rotation);
	tcase_add_test(tc, headers_as_each_sender_names_them);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, sample_parts);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	int rc;

	if (sodium_init() < 0)
		return 1;
	pv_load(PROVIDER_VECTORS);
	rc = check_main(sign_suite());
	cJSON_Delete(pv_root);
	return rc;
}
