/*
 * fuzz/scheme: lib/scheme/ — every provider's header parsers,
 * verifiers, secrets, recognition and extraction.
 *
 * Input:
 *
 *	SCHEME-BYTE SECRETS '\n' (NAME ':' ' '? VALUE '\n')* '\n' BODY
 *
 * SCHEME-BYTE picks the endpoint's scheme (mod the table's size); SECRETS are
 * up to SCHEME_SECRETS_MAX secrets separated by 0x01, each loaded with
 * scheme_secret_load; then headers until an empty line, then the body.
 * Twilio's URL is its documented example's; the generic scheme is
 * X-Signature, "sha256=", SHA-256, hex; the clock is the vectors'.  The
 * seeds are tests/vectors/providers.json in this form (fuzz/make-seeds).
 *
 * Properties (abort when broken):
 * - scheme_verify returns 0 exactly for OK, ANSWER and PING; every other
 *   outcome has a reason; a verified delivery names a loaded secret; an
 *   answer is non-empty, NUL-terminated, with a type; SCHEME_OTHER names
 *   another scheme, the one scheme_recognise names;
 * - GitHub, Shopify and WooCommerce verdicts agree with a reference built
 *   from libsodium alone (HMAC-SHA256 of the body under the secret that
 *   verified, hex or base64, equal to the header);
 * - a loaded secret has 1..SCHEME_SECRET_MAX bytes and a 16-hex
 *   fingerprint; a refused one leaves nothing behind;
 * - scheme_extract's fields are short and free of control bytes;
 * - scheme_mismatch stays inside its buffer;
 * - what scheme_sign signs with a loaded secret (the body as given, any
 *   scheme that can sign) scheme_verify accepts under that secret alone
 *   (Slack's url_verification with an unfit challenge is refused after
 *   verifying, as it should be); a refused signing leaves nothing behind.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "lib/scheme/scheme.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)
#define NOW		1764806400
#define HEADERS_MAX	32

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	CHECK(sodium_init() >= 0);
	return 0;
}

struct hlist {
	char	*name[HEADERS_MAX], *value[HEADERS_MAX];
	size_t	 n;
};

static const char *
hl_get(void *arg, const char *name)
{
	const struct hlist *l = arg;
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcasecmp(l->name[i], name) == 0)
			return l->value[i];
	return NULL;
}

static char *
dupz(const uint8_t *p, size_t n)
{
	char *s = malloc(n + 1);

	CHECK(s != NULL);
	memcpy(s, p, n);
	s[n] = '\0';
	return s;
}

static void
check_secret(const struct scheme *s, const char *text, struct scheme_secret *k,
    size_t *nkeys)
{
	static const struct scheme_secret zero;
	const char *why = NULL;
	size_t i;

	if (scheme_secret_load(s, text, k, &why) == -1) {
		CHECK(why != NULL && memcmp(k, &zero, sizeof *k) == 0);
		return;
	}
	CHECK(k->len >= 1 && k->len <= SCHEME_SECRET_MAX);
	CHECK(strlen(k->fingerprint) == 16);
	for (i = 0; i < 16; i++)
		CHECK(strchr("0123456789abcdef", k->fingerprint[i]) != NULL);
	(*nkeys)++;
}

/* Reference for the body-only HMAC-SHA256 schemes: does key k sign the
 * body as header value hv says (after prefix)? */
static int
reference(const struct scheme_secret *k, const char *hv, const char *prefix,
    int hex, const uint8_t *body, size_t body_len)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	char want[sodium_base64_ENCODED_LEN(sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL) + 2 * sizeof mac];
	crypto_auth_hmacsha256_state st;
	size_t pl = strlen(prefix);

	if (strncmp(hv, prefix, pl) != 0)
		return 0;
	crypto_auth_hmacsha256_init(&st, k->key, k->len);
	crypto_auth_hmacsha256_update(&st, body, body_len);
	crypto_auth_hmacsha256_final(&st, mac);
	if (hex) {
		sodium_bin2hex(want, sizeof want, mac, sizeof mac);
		return strcasecmp(hv + pl, want) == 0;
	}
	sodium_bin2base64(want, sizeof want, mac, sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL);
	return strcmp(hv + pl, want) == 0;
}

static const char *
signed_get(void *arg, const char *name)
{
	return scheme_signed_get(arg, name);
}

/* Sign body with each loaded secret; the verifier must take it. */
static void
sign_round_trip(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_secret *keys, size_t nkeys, const uint8_t *body,
    size_t len)
{
	static struct scheme_signed out;
	struct scheme_headers h = { signed_get, &out, NULL };
	struct scheme_result res;
	const char *why = NULL;
	size_t i;

	for (i = 0; i < nkeys; i++) {
		if (scheme_sign(s, p, &keys[i], body, len, NOW, "fuzz_id", "t", NULL,
		    &out, &why) == -1) {
			CHECK(why != NULL && out.n == 0);
			continue;
		}
		/* From the URL the sender calls (Twilio's bodySHA256). */
		h.query = out.query[0] != '\0' ? out.query : NULL;
		if (scheme_verify(s, p, &keys[i], 1, &h, body, len, NOW,
		    &res) == 0)
			CHECK(res.outcome != SCHEME_PING);
		else
			CHECK(s == scheme_find("slack") &&
			    res.outcome == SCHEME_MALFORMED);
		scheme_signed_wipe(&out);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct scheme_secret keys[SCHEME_SECRETS_MAX];
	struct hlist hl = { .n = 0 };
	struct scheme_headers h = { hl_get, &hl, NULL };
	struct scheme_params p;
	struct scheme_result res;
	struct scheme_fields f;
	const struct scheme *s, *rec;
	const uint8_t *end = data + size, *q, *nl, *body;
	const char *why;
	char *secrets, *tok, *save, line[160];
	size_t nkeys = 0, i, n;
	int rc;

	if (size < 2)
		return 0;
	for (n = 0; scheme_at(n) != NULL; n++)
		;
	s = scheme_at(data[0] % n);
	q = data + 1;
	if ((nl = memchr(q, '\n', (size_t)(end - q))) == NULL)
		return 0;
	secrets = dupz(q, (size_t)(nl - q));
	for (tok = strtok_r(secrets, "\x01", &save); tok != NULL &&
	    nkeys < SCHEME_SECRETS_MAX; tok = strtok_r(NULL, "\x01", &save))
		check_secret(s, tok, &keys[nkeys], &nkeys);
	free(secrets);

	/* Headers until an empty line (or the end). */
	q = nl + 1;
	while (q < end && *q != '\n' && hl.n < HEADERS_MAX) {
		const uint8_t *colon, *v;

		if ((nl = memchr(q, '\n', (size_t)(end - q))) == NULL)
			nl = end;
		if ((colon = memchr(q, ':', (size_t)(nl - q))) != NULL) {
			v = colon + 1;
			if (v < nl && *v == ' ')
				v++;
			hl.name[hl.n] = dupz(q, (size_t)(colon - q));
			hl.value[hl.n++] = dupz(v, (size_t)(nl - v));
		}
		q = nl < end ? nl + 1 : end;
	}
	body = q < end ? q + 1 : end;

	scheme_params_init(s, &p);
	p.url = "https://mycompany.com/myapp.php?foo=1&bar=2";
	p.header = "X-Signature";
	p.prefix = "sha256=";
	rc = scheme_verify(s, &p, keys, nkeys, &h, body, (size_t)(end - body),
	    NOW, &res);
	CHECK((rc == 0) == (res.outcome == SCHEME_OK ||
	    res.outcome == SCHEME_ANSWER || res.outcome == SCHEME_PING));
	if (res.outcome != SCHEME_OK)
		CHECK(res.why != NULL);
	if (res.outcome == SCHEME_OK || res.outcome == SCHEME_ANSWER)
		CHECK(res.key_index < nkeys);
	if (res.outcome == SCHEME_ANSWER) {
		CHECK(memchr(res.answer, '\0', sizeof res.answer) != NULL);
		CHECK(res.answer[0] != '\0' && res.answer_type != NULL);
	}
	rec = scheme_recognise(&h);
	if (res.outcome == SCHEME_OTHER)
		CHECK(rec != NULL && rec != s && rec == res.looks_like);

	/* The body-only HMAC schemes against the reference. */
	if (s == scheme_find("github") || s == scheme_find("shopify") ||
	    s == scheme_find("woocommerce")) {
		const char *hv = s == scheme_find("github") ?
		    hl_get(&hl, "X-Hub-Signature-256") :
		    s == scheme_find("shopify") ?
		    (hl_get(&hl, "X-Shopify-Hmac-Sha256") != NULL &&
		    hl_get(&hl, "X-Shopify-Hmac-Sha256")[0] != '\0' ?
		    hl_get(&hl, "X-Shopify-Hmac-Sha256") :
		    hl_get(&hl, "Shopify-Hmac-Sha256")) :
		    hl_get(&hl, "X-WC-Webhook-Signature");
		int any = 0;

		for (i = 0; hv != NULL && hv[0] != '\0' && i < nkeys; i++)
			any |= reference(&keys[i], hv, s == scheme_find("github") ?
			    "sha256=" : "", s == scheme_find("github"), body,
			    (size_t)(end - body));
		if (res.outcome != SCHEME_PING)
			CHECK(any == (res.outcome == SCHEME_OK));
		if (res.outcome == SCHEME_OK)
			CHECK(reference(&keys[res.key_index], hv,
			    s == scheme_find("github") ? "sha256=" : "",
			    s == scheme_find("github"), body, (size_t)(end - body)));
	}

	if (scheme_extract(s, NULL, &h, body, (size_t)(end - body), &f, &why) == 0) {
		const char *const fields[] = { f.id, f.type, f.time, f.object };

		for (i = 0; i < 4; i++) {
			size_t len = strlen(fields[i]), j;

			CHECK(len < SCHEME_VALUE_MAX);
			for (j = 0; j < len; j++)
				CHECK((unsigned char)fields[i][j] >= 0x20 &&
				    fields[i][j] != 0x7f);
		}
	} else {
		CHECK(why != NULL);
	}
	sign_round_trip(s, &p, keys, nkeys, body, (size_t)(end - body));
	if (rec != NULL) {
		memset(line, 'x', sizeof line);
		scheme_mismatch(s, rec, line, sizeof line - 8);
		CHECK(memchr(line, '\0', sizeof line - 8) != NULL);
		CHECK(line[sizeof line - 1] == 'x');
	}

	for (i = 0; i < hl.n; i++) {
		free(hl.name[i]);
		free(hl.value[i]);
	}
	for (i = 0; i < nkeys; i++)
		scheme_secret_wipe(&keys[i]);
	return 0;
}
