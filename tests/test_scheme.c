/*
 * test_scheme: lib/scheme/ — every vector of
 * tests/vectors/providers.json (made by each provider's own SDK:
 * tests/vectors/gen/make-provider-vectors.mjs; path in the macro
 * PROVIDER_VECTORS), one Check test per vector, plus what the vectors do
 * not reach: secrets as each provider writes them, recognition and its
 * line, malformed headers, caps, parameters and extraction.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/scheme/scheme.h"
#include "lib/scheme/mac.h"
#include "tests/check_common.h"
#include "tests/provider_vectors.h"

/* ---- headers: a JSON object, or a NULL-terminated name/value array ---- */

static const char *
json_get(void *arg, const char *name)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, (const cJSON *)arg)
		if (strcasecmp(it->string, name) == 0 && cJSON_IsString(it))
			return it->valuestring;
	return NULL;
}

static const char *
list_get(void *arg, const char *name)
{
	const char *const *l = arg;

	for (; l[0] != NULL; l += 2)
		if (strcasecmp(l[0], name) == 0)
			return l[1];
	return NULL;
}

static const char *
outcome_name(enum scheme_outcome o)
{
	static const char *const names[] = {
		[SCHEME_OK] = "ok", [SCHEME_ANSWER] = "answer",
		[SCHEME_PING] = "ping", [SCHEME_MISSING] = "missing",
		[SCHEME_OTHER] = "other_scheme", [SCHEME_MALFORMED] = "malformed",
		[SCHEME_STALE] = "stale", [SCHEME_BAD_SIGNATURE] = "bad_signature",
	};
	return (unsigned)o < NELEM(names) ? names[o] : "?";
}

/* Load a secret the test knows is good. */
static void
secret_ok(const struct scheme *s, const char *text, struct scheme_secret *k)
{
	const char *why = NULL;

	ck_assert_msg(scheme_secret_load(s, text, k, &why) == 0,
	    "%s secret refused: %s", s->name, why ? why : "?");
}

static void
secret_refused(const char *scheme, const char *text, const char *why_has)
{
	struct scheme_secret k;
	const char *why = NULL;
	static const struct scheme_secret zero;

	ck_assert_msg(scheme_secret_load(scheme_find(scheme), text, &k, &why) == -1,
	    "%s: secret accepted", scheme);
	ck_assert_ptr_nonnull(why);
	ck_assert_msg(strstr(why, why_has) != NULL, "%s: reason \"%s\"",
	    scheme, why);
	ck_assert_msg(memcmp(&k, &zero, sizeof k) == 0, "refused secret left behind");
}

/* Verify with a header list and one secret; returns the outcome. */
static enum scheme_outcome
run(const char *scheme, const struct scheme_params *pp, const char *secret,
    const char *const *hdrs, const char *body, int64_t now,
    struct scheme_result *res)
{
	const struct scheme *s = scheme_find(scheme);
	struct scheme_headers h = { list_get, (void *)hdrs, NULL };
	struct scheme_params p;
	struct scheme_secret k;
	int rc;

	ck_assert_ptr_nonnull(s);
	if (pp != NULL)
		p = *pp;
	else
		scheme_params_init(s, &p);
	secret_ok(s, secret, &k);
	rc = scheme_verify(s, &p, &k, 1, &h, (const unsigned char *)body,
	    strlen(body), now, res);
	scheme_secret_wipe(&k);
	ck_assert_int_eq(rc, res->outcome <= SCHEME_PING ? 0 : -1);
	return res->outcome;
}

/* ---- the vectors ---- */

/* ---- the providers' behaviour, as docs/providers.md writes it ---- */

/*
 * docs/providers.md "How each provider behaves" is the contract of the
 * keys (scheme_event_key): its "signed id" column must be what
 * scheme_id_signed says, its id and object columns must name the headers
 * a scheme reads them from, and every scheme has exactly one row.  Read
 * from the tree's root, where tests/run starts every test.
 */
START_TEST(behaviour_table_is_the_code)
{
	FILE *f = fopen("docs/providers.md", "r");
	char line[4096];
	int in = 0, rows[SCHEME_MAX] = { 0 };

	ck_assert_msg(f != NULL, "docs/providers.md: run from the tree's root");
	while (fgets(line, sizeof line, f) != NULL) {
		char *cell[8], *p = line;
		const struct scheme *s;
		char name[32];
		size_t n = 0, len;

		if (strncmp(line, "## ", 3) == 0)
			in = strcmp(line, "## How each provider behaves\n") == 0;
		if (!in || strncmp(line, "| `", 3) != 0)
			continue;
		while (n < 8 && (p = strstr(p, " | ")) != NULL) {
			*p = '\0';
			p += 3;
			cell[n++] = p;
		}
		ck_assert_msg(n >= 4, "%s: too few cells", line);
		len = strcspn(line + 3, "`");
		ck_assert_uint_lt(len, sizeof name);
		memcpy(name, line + 3, len);
		name[len] = '\0';
		ck_assert_msg((s = scheme_find(name)) != NULL, "%s: no scheme",
		    name);
		for (size_t k = 0; scheme_at(k) != NULL; k++)
			rows[k] += scheme_at(k) == s;
		/* cell[0]: the id; cell[1]: signed id; cell[3]: the object. */
		if (s != scheme_find("hmac"))
			ck_assert_msg((strncmp(cell[1], "yes", 3) == 0) ==
			    (scheme_id_signed(s, NULL) == 1) &&
			    (strncmp(cell[1], "yes", 3) == 0 ||
			    strncmp(cell[1], "no", 2) == 0),
			    "%s: the page says signed id \"%.20s\", the code %d",
			    name, cell[1], scheme_id_signed(s, NULL));
		if (s->object_type_header != NULL)
			ck_assert_msg(strstr(cell[3], s->object_type_header) !=
			    NULL, "%s: the object column does not name %s", name,
			    s->object_type_header);
		if (s->id_header != NULL)
			ck_assert_msg(strstr(cell[0], s->id_header) != NULL,
			    "%s: the id column does not name %s", name,
			    s->id_header);
	}
	fclose(f);
	for (size_t k = 0; scheme_at(k) != NULL; k++)
		ck_assert_msg(rows[k] == 1, "%s: %d rows", scheme_at(k)->name,
		    rows[k]);
}
END_TEST

/* The id a section names decides: a pointer reads signed bytes, a header
 * does not. */
START_TEST(id_signed_by_where_it_is)
{
	struct scheme_locate ptr = { .id = "/id" }, hdr = { .id = "X-Id" };

	ck_assert_int_eq(scheme_id_signed(scheme_find("stripe"), NULL), 1);
	ck_assert_int_eq(scheme_id_signed(scheme_find("standard"), NULL), 1);
	ck_assert_int_eq(scheme_id_signed(scheme_find("github"), NULL), 0);
	ck_assert_int_eq(scheme_id_signed(scheme_find("woocommerce"), NULL), 0);
	ck_assert_int_eq(scheme_id_signed(scheme_find("hmac"), &ptr), 1);
	ck_assert_int_eq(scheme_id_signed(scheme_find("hmac"), &hdr), 0);
	ck_assert_int_eq(scheme_id_signed(scheme_find("github"), &ptr), 1);
}
END_TEST

/* Twilio's content is its form as the signature reads it: reordered or
 * re-encoded, the same digest; another value, another. */
START_TEST(twilio_digest_of_the_form_not_its_bytes)
{
	static const char *const none[] = { NULL };
	const struct scheme *s = scheme_find("twilio");
	struct scheme_params p;
	struct scheme_headers h = { list_get, (void *)none, NULL };
	static const char a[] = "Body=Hello+world&From=%2B1415&To=%2B1800";
	static const char b[] = "To=%2b1800&From=%2B1415&Body=Hello%20world";
	static const char c[] = "To=%2B1800&From=%2B1415&Body=Hello+World";
	unsigned char da[32], db[32], dc[32];

	scheme_params_init(s, &p);
	p.url = "https://hooks.example.net/webhook.fcgi/twilio";
	ck_assert_int_eq(scheme_content_digest(s, &p, &h, (const unsigned char *)a,
	    strlen(a), da), 0);
	ck_assert_int_eq(scheme_content_digest(s, &p, &h, (const unsigned char *)b,
	    strlen(b), db), 0);
	ck_assert_int_eq(scheme_content_digest(s, &p, &h, (const unsigned char *)c,
	    strlen(c), dc), 0);
	ck_assert_mem_eq(da, db, 32);
	ck_assert(memcmp(da, dc, 32) != 0);
	/* A JSON delivery (bodySHA256 in the request's query): its bytes. */
	h.query = "bodySHA256=00";
	ck_assert_int_eq(scheme_content_digest(s, &p, &h, (const unsigned char *)a,
	    strlen(a), db), 0);
	crypto_hash_sha256(dc, (const unsigned char *)a, strlen(a));
	ck_assert_mem_eq(db, dc, 32);
}
END_TEST

/* WooCommerce signs with wp_specialchars_decode(secret, ENT_QUOTES): the
 * settings page's text "a&amp;b" is the key "a&b"; one pass only. */
START_TEST(woocommerce_secret_entities_decoded)
{
	static const struct { const char *shown, *key; } cases[] = {
		{ "a&amp;b", "a&b" }, { "&lt;x&gt;", "<x>" },
		{ "q&quot;&#039;&#39;&#x27;&#X27;", "q\"''''" },
		{ "&#0038;&#x026;&#60;", "&&<" }, { "&amp;lt;", "&lt;" },
		{ "&#x3c;&apos;&AMP;", "&#x3c;&apos;&AMP;" }, { "&", "&" },
	};
	const struct scheme *s = scheme_find("woocommerce");
	struct scheme_secret k;
	const char *why;

	for (size_t i = 0; i < NELEM(cases); i++) {
		ck_assert_int_eq(scheme_secret_load(s, cases[i].shown, &k, &why),
		    0);
		ck_assert_uint_eq(k.len, strlen(cases[i].key));
		ck_assert_msg(memcmp(k.key, cases[i].key, k.len) == 0, "%s",
		    cases[i].shown);
		scheme_secret_wipe(&k);
	}
}
END_TEST

/* Shopify's event id first (its duplicates guide), its webhook id when
 * the event id is missing. */
START_TEST(shopify_event_id_then_webhook_id)
{
	const struct scheme *s = scheme_find("shopify");
	static const char *const both[] = { "X-Shopify-Event-Id", "e-1",
	    "X-Shopify-Webhook-Id", "w-1", NULL };
	static const char *const old[] = { "X-Shopify-Webhook-Id", "w-1", NULL };
	struct scheme_headers h = { list_get, (void *)both, NULL };
	struct scheme_fields f;
	const char *why;

	ck_assert_int_eq(scheme_extract(s, NULL, &h, (const unsigned char *)"{}",
	    2, &f, &why), 0);
	ck_assert_str_eq(f.id, "e-1");
	h.arg = (void *)old;
	ck_assert_int_eq(scheme_extract(s, NULL, &h, (const unsigned char *)"{}",
	    2, &f, &why), 0);
	ck_assert_str_eq(f.id, "w-1");
}
END_TEST

/* ---- the shared helpers (lib/scheme/mac.h) ---- */

/* A parameter is found by its whole name only (Twilio's bodySHA256 was
 * once found inside "xbodySHA256="), in a query or a header's list. */
START_TEST(param_value_whole_names)
{
	struct span v;

	ck_assert_int_eq(scheme_param_value("xbodySHA256=1&a=2", "&", "bodySHA256",
	    &v), 0);
	ck_assert_int_eq(scheme_param_value("a=2&bodySHA256=ff&b=3", "&",
	    "bodySHA256", &v), 1);
	ck_assert_uint_eq(v.len, 2);
	ck_assert_int_eq(memcmp(v.p, "ff", 2), 0);
	ck_assert_int_eq(scheme_param_value("key=k1, algorithm=HMAC_SHA256",
	    ",; ", "algorithm", &v), 1);
	ck_assert_uint_eq(v.len, 11);
	ck_assert_int_eq(scheme_param_value("xalgorithm=HMAC_SHA256", ",; ",
	    "algorithm", &v), 0);
	ck_assert_int_eq(scheme_param_value(NULL, "&", "a", &v), 0);
}
END_TEST

START_TEST(vectors_loaded)
{
	ck_assert_msg(pv_vectors != NULL && pv_count > 0, "%s", pv_error);
	/* Every scheme but the generic one has SDK- or doc-made vectors. */
	const struct scheme *s;

	for (size_t k = 0; (s = scheme_at(k)) != NULL; k++) {
		int n = 0;

		for (int i = 0; i < pv_count; i++) {
			const cJSON *c = cJSON_GetArrayItem(pv_vectors, i);
			const char *sc = pv_member(c, "scheme");

			if (sc != NULL && strcmp(sc, s->name) == 0 &&
			    strcmp(pv_member(c, "expected"), "valid") == 0)
				n++;
		}
		ck_assert_msg(n > 0, "no valid vector for %s", s->name);
	}
}
END_TEST

START_TEST(vector)
{
	const cJSON *c = cJSON_GetArrayItem(pv_vectors, _i);
	const char *name = pv_member(c, "name"), *expected = pv_member(c, "expected");
	const char *want = pv_member(c, "outcome"), *answer = pv_member(c, "answer");
	const char *looks = pv_member(c, "looks_like"), *id = pv_member(c, "id");
	const char *type = pv_member(c, "type"), *body = pv_member(c, "body");
	const cJSON *secrets = cJSON_GetObjectItemCaseSensitive(c, "secrets");
	const cJSON *headers = cJSON_GetObjectItemCaseSensitive(c, "headers");
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(c, "now");
	const cJSON *ki = cJSON_GetObjectItemCaseSensitive(c, "key_index");
	const cJSON *it;
	const struct scheme *s = scheme_find(pv_member(c, "scheme"));
	struct scheme_secret keys[SCHEME_SECRETS_MAX];
	/* The request's query string where the sender adds to the URL
	 * (Twilio's bodySHA256): the config's url never holds it. */
	struct scheme_headers h = { json_get, (void *)headers,
	    pv_member(c, "query") };
	struct scheme_params p;
	struct scheme_result res;
	const char *why = NULL;
	size_t nkeys = 0;
	int rc;

	ck_assert_msg(s != NULL && name != NULL && body != NULL &&
	    expected != NULL && cJSON_IsArray(secrets) &&
	    cJSON_IsObject(headers) && cJSON_IsNumber(now),
	    "vector %d malformed", _i);
	cJSON_ArrayForEach(it, secrets) {
		ck_assert(nkeys < SCHEME_SECRETS_MAX);
		secret_ok(s, it->valuestring, &keys[nkeys++]);
	}
	pv_params(c, s, &p);
	ck_assert_msg(scheme_params_check(s, &p, &why) == 0, "%s: %s", name,
	    why);
	rc = scheme_verify(s, &p, keys, nkeys, &h, (const unsigned char *)body,
	    strlen(body), (int64_t)now->valuedouble, &res);
	ck_assert_msg(strcmp(rc == 0 ? "valid" : "invalid", expected) == 0,
	    "vector %s: expected %s, got %s (%s: %s)", name, expected,
	    rc == 0 ? "valid" : "invalid", outcome_name(res.outcome),
	    res.why ? res.why : "");
	if (want != NULL)
		ck_assert_msg(strcmp(outcome_name(res.outcome), want) == 0,
		    "vector %s: outcome %s, want %s (%s)", name,
		    outcome_name(res.outcome), want, res.why ? res.why : "");
	else if (rc == 0)
		ck_assert_msg(res.outcome == SCHEME_OK, "vector %s: %s", name,
		    outcome_name(res.outcome));
	if (rc == 0 && res.outcome != SCHEME_PING)
		ck_assert_uint_eq(res.key_index,
		    (cJSON_IsNumber(ki) ? (size_t)ki->valuedouble : 0));
	if (answer != NULL)
		ck_assert_str_eq(res.answer, answer);
	if (looks != NULL) {
		ck_assert_int_eq(res.outcome, SCHEME_OTHER);
		ck_assert_str_eq(res.looks_like->name, looks);
		ck_assert_str_eq(scheme_recognise(&h)->name, looks);
	}
	/* What the inbox keeps of it (at a source "src"). */
	if (rc == 0 && (id != NULL || type != NULL)) {
		struct scheme_event ev;

		ck_assert_msg(scheme_event_read(s, &p, NULL, "src", &h,
		    (const unsigned char *)body, strlen(body), &ev, &why) == 0,
		    "%s: %s", name, why);
		if (id != NULL)
			ck_assert_str_eq(ev.id, id);
		if (type != NULL)
			ck_assert_str_eq(ev.fields.type ? ev.fields.type : "", type);
		scheme_event_free(&ev);
	}
	/* A valid delivery of a named scheme is recognised as its own. */
	if (rc == 0 && s != scheme_find("hmac") && res.outcome != SCHEME_PING)
		ck_assert_ptr_eq(scheme_recognise(&h), s);
	for (size_t k = 0; k < nkeys; k++)
		scheme_secret_wipe(&keys[k]);
}
END_TEST

/* ---- secrets ---- */

START_TEST(secrets_as_shown)
{
	struct scheme_secret k;

	/* GitHub's documented secret: spaces and a quote, bytes as written. */
	secret_ok(scheme_find("github"), "It's a Secret to Everybody", &k);
	ck_assert_uint_eq(k.len, 26);
	ck_assert_mem_eq(k.key, "It's a Secret to Everybody", 26);
	ck_assert_uint_eq(strlen(k.fingerprint), 16);
	/* Stripe: the whole whsec_ string is the key. */
	secret_ok(scheme_find("stripe"), "whsec_abc", &k);
	ck_assert_uint_eq(k.len, 9);
	ck_assert_mem_eq(k.key, "whsec_abc", 9);
	/* Standard Webhooks: the base64 after whsec_ (the known answer's). */
	secret_ok(scheme_find("standard"), "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &k);
	ck_assert_uint_eq(k.len, 24);
	ck_assert(!k.ed25519);
	/* Slack: hex text, used as text (not decoded). */
	secret_ok(scheme_find("slack"), "8f742231b10e8888abcd99yyyzzz85a5", &k);
	ck_assert_uint_eq(k.len, 32);
	/* Discord: 64 hex digits, a public key. */
	secret_ok(scheme_find("discord"),
	    "197F6B23E16C8532C6ABC838FACD5EA789BE0C76B2920334039BFA8B3D368D61", &k);
	ck_assert_uint_eq(k.len, 32);
	ck_assert(k.ed25519);
	scheme_secret_wipe(&k);
}
END_TEST

/* A quoted value's content keeps its edge blanks (WooCommerce's
 * wp_generate_password makes 1 in 50 so); unquoted, they stay a paste
 * mistake whose message says to quote; the header's "v1," label pasted
 * with a whsec_ secret is named. */
START_TEST(secret_quoted_keeps_its_blanks)
{
	struct scheme_secret k;
	const char *why = NULL;

	ck_assert_int_eq(scheme_secret_load_quoted(scheme_find("woocommerce"),
	    " Kx7#p2; \"q\" ", &k, &why), 0);
	ck_assert_uint_eq(k.len, 13);
	ck_assert_mem_eq(k.key, " Kx7#p2; \"q\" ", 13);
	ck_assert_int_eq(scheme_secret_load_quoted(scheme_find("github"),
	    "\tx ", &k, &why), 0);
	ck_assert_uint_eq(k.len, 3);
	/* Quoting is no licence for a form the scheme refuses. */
	ck_assert_int_eq(scheme_secret_load_quoted(scheme_find("standard"),
	    " whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", &k, &why), -1);
	ck_assert_int_eq(scheme_secret_load_quoted(scheme_find("github"), "",
	    &k, &why), -1);
	secret_refused("woocommerce", "x ", "write the value in double quotes");
	secret_refused("standard", "v1,whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	    "starts with v1, (the webhook-signature header's label, copied "
	    "with the secret): drop the v1,");
	secret_refused("standard", "v1a,whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZ"
	    "TInDBbOir4=", "drop the v1a,");
	secret_refused("stripe", "v1,whsec_abc", "drop the v1, and keep "
	    "whsec_");
	scheme_secret_wipe(&k);
}
END_TEST

START_TEST(secrets_refused)
{
	char big[SCHEME_SECRET_MAX + 2];

	secret_refused("stripe", "sk_live_abc", "API key");
	secret_refused("stripe", "rk_test_abc", "API key");
	secret_refused("stripe", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_");
	secret_refused("stripe", "whsec_", "whsec_");
	secret_refused("paddle", "pdl_live_apikey_01abc", "API key");
	secret_refused("github", "", "empty");
	secret_refused("github", " secret", "blank");
	secret_refused("slack", "secret\t", "blank");
	secret_refused("discord", "197f6b23", "64 hex");
	secret_refused("discord",
	    "197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d6g", "64 hex");
	secret_refused("standard", "whsec_!!!!", "base64");
	memset(big, 'a', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	secret_refused("github", big, "256");
	big[SCHEME_SECRET_MAX] = '\0';
	{
		struct scheme_secret k;

		secret_ok(scheme_find("github"), big, &k);
		ck_assert_uint_eq(k.len, SCHEME_SECRET_MAX);
		scheme_secret_wipe(&k);
	}
}
END_TEST

/* ---- recognition ---- */

START_TEST(recognise_each)
{
	static const struct { const char *header, *scheme; } cases[] = {
		{ "webhook-signature", "standard" },
		{ "svix-signature", "standard" },
		{ "Stripe-Signature", "stripe" },
		{ "X-Hub-Signature-256", "github" },
		{ "X-Hub-Signature", "github" },
		{ "X-Shopify-Hmac-Sha256", "shopify" },
		{ "Shopify-Hmac-Sha256", "shopify" },
		{ "X-WC-Webhook-Signature", "woocommerce" },
		{ "X-Slack-Signature", "slack" },
		{ "Paddle-Signature", "paddle" },
		{ "X-Signature-Ed25519", "discord" },
		{ "X-Gitlab-Token", "gitlab" },
		{ "X-Gitlab-Event", "gitlab" },
		{ "X-Twilio-Signature", "twilio" },
	};
	for (size_t i = 0; i < NELEM(cases); i++) {
		const char *l[] = { cases[i].header, "x", NULL };
		struct scheme_headers h = { list_get, (void *)l, NULL };
		const struct scheme *s = scheme_recognise(&h);

		ck_assert_msg(s != NULL && strcmp(s->name, cases[i].scheme) == 0,
		    "%s: %s", cases[i].header, s ? s->name : "none");
	}
	{
		/* Nothing, or an empty value: nobody's. */
		const char *l[] = { "Stripe-Signature", "", "Content-Type", "a/b", NULL };
		struct scheme_headers h = { list_get, (void *)l, NULL };

		ck_assert_ptr_null(scheme_recognise(&h));
	}
}
END_TEST

START_TEST(mismatch_line)
{
	char line[256];

	ck_assert_str_eq(scheme_mismatch(scheme_find("standard"),
	    scheme_find("stripe"), line, sizeof line),
	    "this looks like Stripe's Stripe-Signature; this endpoint is "
	    "Standard Webhooks: add a [source …] with scheme = stripe");
	/* Cut, never overrun. */
	ck_assert_uint_eq(strlen(scheme_mismatch(scheme_find("github"),
	    scheme_find("slack"), line, 10)), 9);
}
END_TEST

START_TEST(table_consistent)
{
	const struct scheme *s;
	size_t k;

	/* Every row names itself once and fills what scheme.h requires; the
	 * default source's provider is the first. */
	ck_assert_str_eq(scheme_at(0)->name, "standard");
	for (k = 0; (s = scheme_at(k)) != NULL; k++) {
		ck_assert_ptr_eq(scheme_find(s->name), s);
		ck_assert_ptr_nonnull(s->title);
		ck_assert_ptr_nonnull(s->signature_header);
		ck_assert_ptr_nonnull(s->recognise);
		ck_assert_ptr_nonnull(s->secret_load);
		ck_assert_ptr_nonnull(s->verify);
		ck_assert_msg(s->sign != NULL || s->unsignable != NULL,
		    "%s: neither a signer nor the reason it has none", s->name);
	}
	ck_assert_uint_le(k, SCHEME_MAX);
	ck_assert_ptr_null(scheme_find("Stripe"));
	ck_assert_ptr_null(scheme_find(""));
}
END_TEST

/* ---- forms the vectors do not reach ---- */

#define NOW	1764806400
/* HMAC-SHA256("whsec_k", "1764806400.{}") and ("whsec_k", "1764806400:{}") */
static char stripe_sig[65], paddle_sig[65];

static void
hex_hmac(const char *key, const char *msg, char out[65])
{
	unsigned char mac[32];

	crypto_auth_hmacsha256_state st;
	crypto_auth_hmacsha256_init(&st, (const unsigned char *)key, strlen(key));
	crypto_auth_hmacsha256_update(&st, (const unsigned char *)msg, strlen(msg));
	crypto_auth_hmacsha256_final(&st, mac);
	sodium_bin2hex(out, 65, mac, sizeof mac);
}

START_TEST(stripe_forms)
{
	struct scheme_result r;
	char h[4096];

	hex_hmac("whsec_k", "1764806400.{}", stripe_sig);
	snprintf(h, sizeof h, "t=1764806400,v1=%s", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_OK);
		ck_assert_int_eq(r.signed_at, 1764806400);
		/* 300 s either way, not 301. */
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW + 300, &r), SCHEME_OK);
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW + 301, &r), SCHEME_STALE);
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW - 301, &r), SCHEME_STALE);
	}
	/* Two timestamps: malformed. */
	snprintf(h, sizeof h, "t=1764806400,t=1764806400,v1=%s", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_MALFORMED);
	}
	/* No timestamp; a timestamp that is no integer. */
	snprintf(h, sizeof h, "v1=%s", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_MALFORMED);
	}
	snprintf(h, sizeof h, "t=+1764806400,v1=%s", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_MALFORMED);
	}
	/* Joined by a proxy with ", "; upper-case hex is the same MAC. */
	snprintf(h, sizeof h, "t=1764806400, v1=%s", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_OK);
		for (char *c = h; *c != '\0'; c++)
			if (*c >= 'a' && *c <= 'f')
				*c = (char)(*c - 'a' + 'A');
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_OK);
	}
	/* A truncated MAC, one hex digit short, or with a byte appended. */
	snprintf(h, sizeof h, "t=1764806400,v1=%.63s", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_BAD_SIGNATURE);
	}
	snprintf(h, sizeof h, "t=1764806400,v1=%s00", stripe_sig);
	{
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_BAD_SIGNATURE);
	}
	/* Only the first SCHEME_ENTRIES_MAX v1 entries are looked at. */
	{
		size_t n = (size_t)snprintf(h, sizeof h, "t=1764806400");
		for (int i = 0; i < SCHEME_ENTRIES_MAX; i++)
			n += (size_t)snprintf(h + n, sizeof h - n, ",v1=%064d", 0);
		snprintf(h + n, sizeof h - n, ",v1=%s", stripe_sig);
		const char *l[] = { "Stripe-Signature", h, NULL };
		ck_assert_int_eq(run("stripe", NULL, "whsec_k", l, "{}", NOW, &r), SCHEME_BAD_SIGNATURE);
	}
}
END_TEST

START_TEST(paddle_forms)
{
	struct scheme_result r;
	char h[512];

	hex_hmac("pdl_ntfset_k", "1764806400:{}", paddle_sig);
	snprintf(h, sizeof h, "ts=1764806400;h1=%s", paddle_sig);
	{
		const char *l[] = { "Paddle-Signature", h, NULL };
		ck_assert_int_eq(run("paddle", NULL, "pdl_ntfset_k", l, "{}", NOW, &r), SCHEME_OK);
		/* Stripe's separator is not Paddle's. */
		ck_assert_int_eq(run("paddle", NULL, "pdl_ntfset_k", l, "{} ", NOW, &r), SCHEME_BAD_SIGNATURE);
	}
	snprintf(h, sizeof h, "ts=1764806400;v1=%s", paddle_sig);
	{
		const char *l[] = { "Paddle-Signature", h, NULL };
		ck_assert_int_eq(run("paddle", NULL, "pdl_ntfset_k", l, "{}", NOW, &r), SCHEME_BAD_SIGNATURE);
	}
}
END_TEST

START_TEST(missing_and_empty)
{
	struct scheme_result r;
	const char *none[] = { "Content-Type", "application/json", NULL };
	const char *empty[] = { "X-Hub-Signature-256", "", NULL };

	ck_assert_int_eq(run("github", NULL, "s", none, "{}", NOW, &r), SCHEME_MISSING);
	ck_assert_ptr_nonnull(r.why);
	ck_assert_int_eq(run("github", NULL, "s", empty, "{}", NOW, &r), SCHEME_MISSING);
	ck_assert_int_eq(run("slack", NULL, "s", none, "{}", NOW, &r), SCHEME_MISSING);
	ck_assert_int_eq(run("discord", NULL,
	    "197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d61",
	    none, "{}", NOW, &r), SCHEME_MISSING);
	/* Twilio without the URL it signs. */
	{
		const char *l[] = { "X-Twilio-Signature", "abc=", NULL };
		ck_assert_int_eq(run("twilio", NULL, "t", l, "a=b", NOW, &r), SCHEME_MISSING);
	}
	/* No secret at all. */
	{
		const struct scheme *s = scheme_find("github");
		struct scheme_headers h = { list_get, (void *)empty, NULL };
		struct scheme_params p;

		scheme_params_init(s, &p);
		ck_assert_int_eq(scheme_verify(s, &p, NULL, 0, &h,
		    (const unsigned char *)"{}", 2, NOW, &r), -1);
	}
}
END_TEST

START_TEST(woocommerce_ping_exact)
{
	struct scheme_result r;
	const char *none[] = { "Content-Type", "application/x-www-form-urlencoded", NULL };

	ck_assert_int_eq(run("woocommerce", NULL, "s", none, "webhook_id=1", NOW, &r), SCHEME_PING);
	ck_assert_int_eq(run("woocommerce", NULL, "s", none, "webhook_id=", NOW, &r), SCHEME_MISSING);
	ck_assert_int_eq(run("woocommerce", NULL, "s", none, "webhook_id=12345678901234567890", NOW, &r), SCHEME_PING);
	ck_assert_int_eq(run("woocommerce", NULL, "s", none, "webhook_id=123456789012345678901", NOW, &r), SCHEME_MISSING);
	ck_assert_int_eq(run("woocommerce", NULL, "s", none, "{\"id\":1}", NOW, &r), SCHEME_MISSING);
}
END_TEST

START_TEST(slack_challenge_unfit)
{
	struct scheme_result r;
	char sig[70], mac[65];
	const char *body = "{\"type\":\"url_verification\",\"challenge\":\"a b\"}";
	char base[256];

	snprintf(base, sizeof base, "v0:1764806400:%s", body);
	hex_hmac("slk", base, mac);
	snprintf(sig, sizeof sig, "v0=%s", mac);
	{
		const char *l[] = { "X-Slack-Signature", sig,
		    "X-Slack-Request-Timestamp", "1764806400", NULL };
		ck_assert_int_eq(run("slack", NULL, "slk", l, body, NOW, &r), SCHEME_MALFORMED);
		/* An unsigned url_verification gets no answer. */
		ck_assert_int_eq(run("slack", NULL, "other", l, body, NOW, &r), SCHEME_BAD_SIGNATURE);
		ck_assert_str_eq(r.answer, "");
	}
}
END_TEST

START_TEST(params)
{
	const struct scheme *h = scheme_find("hmac"), *t = scheme_find("twilio");
	struct scheme_params p;
	const char *why;

	scheme_params_init(h, &p);
	ck_assert_int_eq(scheme_params_check(h, &p, &why), -1);
	p.header = "X-Sig";
	ck_assert_int_eq(scheme_params_check(h, &p, &why), 0);
	p.alg = (enum scheme_alg)9;
	ck_assert_int_eq(scheme_params_check(h, &p, &why), -1);
	scheme_params_init(t, &p);
	ck_assert_int_eq(scheme_params_check(t, &p, &why), -1);
	p.url = "ftp://x/";
	ck_assert_int_eq(scheme_params_check(t, &p, &why), -1);
	p.url = "https://hooks.example.net/webhook.fcgi/twilio";
	ck_assert_int_eq(scheme_params_check(t, &p, &why), 0);
	p.tolerance = -1;
	ck_assert_int_eq(scheme_params_check(t, &p, &why), -1);
	/* Defaults: timestamped schemes 300 s; Discord none. */
	scheme_params_init(scheme_find("stripe"), &p);
	ck_assert_int_eq(p.tolerance, SCHEME_TOLERANCE);
	scheme_params_init(scheme_find("discord"), &p);
	ck_assert_int_eq(p.tolerance, 0);
}
END_TEST

START_TEST(extract_defaults)
{
	const char *body = "{\"id\":\"evt_1\",\"created\":1764806397,"
	    "\"type\":\"payment_intent.succeeded\",\"data\":{\"object\":"
	    "{\"id\":\"pi_1\"}}}";
	const char *l[] = { NULL };
	struct scheme_headers h = { list_get, (void *)l, NULL };
	struct scheme_fields f;
	const char *why;

	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)body, strlen(body), &f, &why), 0);
	ck_assert_str_eq(f.id, "evt_1");
	ck_assert_str_eq(f.time, "1764806397");
	ck_assert_str_eq(f.type, "payment_intent.succeeded");
	ck_assert_str_eq(f.object, "pi_1");
	/* Not JSON: nothing, and no error. */
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)"a=b", 3, &f, &why), 0);
	ck_assert_str_eq(f.id, "");
	ck_assert_ptr_null(why);
	/* A fractional number, or one from 2^53 on, is no id: refused, as a
	 * cut one would be (two ids would read as one); as a time, left out
	 * and noted. */
	body = "{\"id\":1.5}";
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)body, strlen(body), &f, &why), -1);
	body = "{\"id\":9007199254740993}";
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)body, strlen(body), &f, &why), -1);
	body = "{\"id\":9007199254740991,\"created\":1e300,\"data\":"
	    "{\"object\":{\"id\":[1]}}}";
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)body, strlen(body), &f, &why), 0);
	ck_assert_str_eq(f.id, "9007199254740991");
	ck_assert_str_eq(f.time, "");
	ck_assert_str_eq(f.object, "");
	ck_assert_ptr_nonnull(why);
	/* An escaped NUL: cJSON would read "evt_a\u0000x" as "evt_a", so
	 * no field is read from such a body, and the id refuses. */
	body = "{\"id\":\"evt_a\\u0000x\"}";
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)body, strlen(body), &f, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "u0000"));
	body = "{\"id\":\"evt_a\",\"type\":\"t\\u0000x\"}";
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)body, strlen(body), &f, &why), -1);
	/* A header id is not the body's: taken, the body's fields left out
	 * and noted. */
	{
		const char *l4[] = { "X-GitHub-Delivery", "d-9", "X-GitHub-Event",
		    "push", NULL };
		struct scheme_headers h4 = { list_get, (void *)l4, NULL };
		struct scheme_locate o4 = { .object = "/o" };

		body = "{\"o\":\"a\\u0000b\"}";
		ck_assert_int_eq(scheme_extract(scheme_find("github"), &o4, &h4,
		    (const unsigned char *)body, strlen(body), &f, &why), 0);
		ck_assert_str_eq(f.id, "d-9");
		ck_assert_str_eq(f.object, "");
		ck_assert_ptr_nonnull(why);
	}
	/* JSON nested past cJSON's limit: no fields, noted (the body's
	 * digest becomes the id). */
	{
		static char deep[5000];
		size_t n = 0;

		n += (size_t)snprintf(deep, sizeof deep, "{\"id\":\"evt_d\",\"x\":");
		while (n < 4000)
			deep[n++] = '[';
		deep[n] = '\0';
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
		    (const unsigned char *)deep, n, &f, &why), 0);
		ck_assert_str_eq(f.id, "");
		ck_assert_ptr_nonnull(why);
	}
	/* Too long, or a control character: refused, not cut. */
	{
		char big[400];

		snprintf(big, sizeof big, "{\"id\":\"%0300d\"}", 0);
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
		    (const unsigned char *)big, strlen(big), &f, &why), -1);
		body = "{\"id\":\"a\\u0001b\"}";
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
		    (const unsigned char *)body, strlen(body), &f, &why), -1);
		/* Any other field is left out and noted, never a refusal. */
		snprintf(big, sizeof big, "{\"id\":\"e\",\"type\":\"%0300d\","
		    "\"created\":5,\"data\":{\"object\":{\"id\":\"a\\nb\"}}}",
		    0);
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
		    (const unsigned char *)big, strlen(big), &f, &why), 0);
		ck_assert_str_eq(f.id, "e");
		ck_assert_str_eq(f.type, "");
		ck_assert_str_eq(f.time, "5");
		ck_assert_str_eq(f.object, "");
		ck_assert_ptr_nonnull(why);
		body = "{\"id\":\"e\"}";
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
		    (const unsigned char *)body, strlen(body), &f, &why), 0);
		ck_assert_ptr_null(why);
	}
	/* Headers win over the body; svix-* names count for standard, one
	 * family at a time. */
	{
		const char *l2[] = { "svix-id", "msg_1", "webhook-timestamp", "1764806400", NULL };
		struct scheme_headers h2 = { list_get, (void *)l2, NULL };

		body = "{\"type\":\"a.b\"}";
		ck_assert_int_eq(scheme_extract(scheme_find("standard"), NULL, &h2,
		    (const unsigned char *)body, strlen(body), &f, &why), 0);
		ck_assert_str_eq(f.id, "msg_1");
		/* Standard Webhooks' type, time and object are its body's
		 * (lib/store/event.c), never webhook-timestamp: the send
		 * time orders nothing (PROVIDER.md). */
		ck_assert_str_eq(f.type, "");
		ck_assert_str_eq(f.time, "");
	}
	/* A source's places win over the scheme's: a header by name, a
	 * pointer by its '/', and an absent place yields nothing rather than
	 * falling back to the default. */
	{
		const char *l3[] = { "X-Request-Id", "req_9", NULL };
		struct scheme_headers h3 = { list_get, (void *)l3, NULL };
		struct scheme_locate over = { "X-Request-Id", NULL,
		    "/data/object/updated", "/data/object/customer", NULL };

		body = "{\"id\":\"evt_1\",\"created\":5,\"type\":\"t\","
		    "\"data\":{\"object\":{\"id\":\"pi_1\",\"updated\":7,"
		    "\"customer\":\"cus_3\"}}}";
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), &over,
		    &h3, (const unsigned char *)body, strlen(body), &f, &why), 0);
		ck_assert_str_eq(f.id, "req_9");
		ck_assert_str_eq(f.type, "t");
		ck_assert_str_eq(f.time, "7");
		ck_assert_str_eq(f.object, "cus_3");
		over.id = "X-Absent";
		ck_assert_int_eq(scheme_extract(scheme_find("stripe"), &over,
		    &h3, (const unsigned char *)body, strlen(body), &f, &why), 0);
		ck_assert_str_eq(f.id, "");
		/* github has no pointer of its own: an override still parses
		 * the body. */
		over = (struct scheme_locate){ .object = "/repository/id" };
		body = "{\"repository\":{\"id\":42}}";
		ck_assert_int_eq(scheme_extract(scheme_find("github"), &over,
		    &h3, (const unsigned char *)body, strlen(body), &f, &why), 0);
		ck_assert_str_eq(f.object, "42");
	}
}
END_TEST

START_TEST(twilio_form_edges)
{
	/* Twilio's documented example, with the parameters in another order,
	 * a stray '&', an undecodable '%' and a parameter without '=' — the
	 * signature covers decoded, sorted name+value pairs. */
	static const char url[] = "https://mycompany.com/myapp.php?foo=1&bar=2";
	const char *l[] = { "X-Twilio-Signature", "0/KCTR6DLpKmkAf8muzZqo1nDgQ=", NULL };
	struct scheme_params p;
	struct scheme_result r;

	scheme_params_init(scheme_find("twilio"), &p);
	p.url = url;
	ck_assert_int_eq(run("twilio", &p, "12345", l,
	    "To=%2B18005551212&From=%2B12349013030&&Digits=1234&Caller=%2B12349013030&CallSid=CA1234567890ABCDE",
	    NOW, &r), SCHEME_OK);
	ck_assert_int_eq(run("twilio", &p, "12345", l,
	    "To=%2B18005551212&From=%2B12349013030&Digits=1234&Caller=%2B12349013030&CallSid=CA1234567890ABCDE&X",
	    NOW, &r), SCHEME_BAD_SIGNATURE);
	/* More parameters than the cap: refused as malformed. */
	{
		char *big = malloc(SCHEME_FORM_PARAMS_MAX * 4 + 8);
		size_t n = 0;

		ck_assert_ptr_nonnull(big);
		for (int i = 0; i <= SCHEME_FORM_PARAMS_MAX; i++) {
			memcpy(big + n, "a=b&", 4);
			n += 4;
		}
		big[n] = '\0';
		ck_assert_int_eq(run("twilio", &p, "12345", l, big, NOW, &r), SCHEME_MALFORMED);
		free(big);
	}
}
END_TEST

static Suite *
scheme_suite(void)
{
	Suite *s = suite_create("scheme");
	TCase *tc;

	tc = tcase_create("vectors");
	tcase_add_test(tc, vectors_loaded);
	tcase_add_test(tc, behaviour_table_is_the_code);
	tcase_add_test(tc, id_signed_by_where_it_is);
	tcase_add_test(tc, twilio_digest_of_the_form_not_its_bytes);
	tcase_add_test(tc, woocommerce_secret_entities_decoded);
	tcase_add_test(tc, shopify_event_id_then_webhook_id);
	tcase_add_test(tc, param_value_whole_names);
	tcase_add_loop_test(tc, vector, 0, pv_count);
	suite_add_tcase(s, tc);

	tc = tcase_create("secrets");
	tcase_add_test(tc, secrets_as_shown);
	tcase_add_test(tc, secrets_refused);
	tcase_add_test(tc, secret_quoted_keeps_its_blanks);
	suite_add_tcase(s, tc);

	tc = tcase_create("recognition");
	tcase_add_test(tc, recognise_each);
	tcase_add_test(tc, mismatch_line);
	tcase_add_test(tc, table_consistent);
	suite_add_tcase(s, tc);

	tc = tcase_create("forms");
	tcase_add_test(tc, stripe_forms);
	tcase_add_test(tc, paddle_forms);
	tcase_add_test(tc, missing_and_empty);
	tcase_add_test(tc, woocommerce_ping_exact);
	tcase_add_test(tc, slack_challenge_unfit);
	tcase_add_test(tc, twilio_form_edges);
	tcase_add_test(tc, params);
	tcase_add_test(tc, extract_defaults);
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
	rc = check_main(scheme_suite());
	cJSON_Delete(pv_root);
	return rc;
}
