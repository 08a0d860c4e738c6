/*
 * test_signature: lib/common/signature.c — every case of the shared golden file
 * tests/vectors/standard-webhooks.json (path in the macro VECTORS), one
 * Check test per case, plus the rules signature.h states that the vectors
 * do not reach: joined headers, several keys, the entry cap, signing,
 * fingerprints, key parsing and the timestamp window.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/common/signature.h"
#include "tests/check_common.h"

#ifndef VECTORS
#error "VECTORS must name standard-webhooks.json (the Makefile passes it)"
#endif

#define TOLERANCE	300

/* The known answer every reference library signs (vector kat_std_libs). */
#define KAT_SECRET	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define KAT_ID		"msg_p5jXN8AQM9LWM0D4loKWxJek"
#define KAT_TS		"1614265330"
#define KAT_BODY	"{\"test\": 2432232314}"
#define KAT_CONTENT	KAT_ID "." KAT_TS "." KAT_BODY
#define KAT_SIG		"g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
/* Well-formed v1 values (32 bytes) that do not match KAT_CONTENT. */
#define BAD_SIG		"Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
#define BAD_SIG2	"tFtCZ5RDCPxzWQRWXWPgrCgE2frDBe9gjpbWQxnVfsQ="
/* Another HMAC secret (vector wrong_secret) and the Ed25519 known answer. */
#define OTHER_SECRET	"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
#define ED_KEY		"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4="
#define ED_SIG		"hnO3f9T8Ytu9HwrXslvumlUpqtNVqkhqw/enGzPCXe5BdqzC" \
			"InXqYXFymVJaA7AZdpXwVLPo3mNl8EM+m7TBAg=="

/* The golden file, parsed once in main before the runner forks. */
static cJSON *vectors;
static int nvectors;
static char load_error[256];

static void
load_vectors(const char *path)
{
	FILE *fp;
	char *text = NULL;
	long size;

	if ((fp = fopen(path, "rb")) == NULL) {
		snprintf(load_error, sizeof load_error, "%s: cannot open", path);
		return;
	}
	if (fseek(fp, 0, SEEK_END) == 0 && (size = ftell(fp)) > 0 &&
	    fseek(fp, 0, SEEK_SET) == 0 && (text = malloc((size_t)size)) != NULL &&
	    fread(text, 1, (size_t)size, fp) == (size_t)size) {
		vectors = cJSON_ParseWithLength(text, (size_t)size);
		if (!cJSON_IsArray(vectors)) {
			snprintf(load_error, sizeof load_error,
			    "%s: not a JSON array", path);
			cJSON_Delete(vectors);
			vectors = NULL;
		} else {
			nvectors = cJSON_GetArraySize(vectors);
		}
	} else {
		snprintf(load_error, sizeof load_error, "%s: cannot read", path);
	}
	free(text);
	fclose(fp);
}

/* A string member of a case, or NULL when absent, null or not a string. */
static const char *
member(const cJSON *c, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, name);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* Build id "." ts "." body into a fresh allocation of exactly *len bytes. */
static unsigned char *
make_content(const char *id, const char *ts, const char *body, size_t *len)
{
	size_t il = strlen(id), tl = strlen(ts), bl = strlen(body);
	unsigned char *c;

	*len = il + 1 + tl + 1 + bl;
	if ((c = malloc(*len ? *len : 1)) == NULL)
		return NULL;
	memcpy(c, id, il);
	c[il] = '.';
	memcpy(c + il + 1, ts, tl);
	c[il + 1 + tl] = '.';
	memcpy(c + il + 2 + tl, body, bl);
	return c;
}

/* Verify one header against the KAT content under `keys`.  Returns
 * signature_verify's rc; the header is copied into an exact-size buffer so
 * that ASan sees any read past header_len. */
static int
verify_kat(const struct signature_key *keys, size_t nkeys, const char *header,
    size_t *which)
{
	size_t hl = strlen(header);
	char *h = malloc(hl ? hl : 1);
	int rc;

	ck_assert_ptr_nonnull(h);
	memcpy(h, header, hl);
	rc = signature_verify(keys, nkeys, (const unsigned char *)KAT_CONTENT,
	    strlen(KAT_CONTENT), h, hl, which);
	free(h);
	return rc;
}

/* Parse a secret the test knows is good. */
static void
key_ok(const char *text, struct signature_key *k)
{
	const char *why = NULL;

	ck_assert_msg(signature_key_parse(text, k, &why) == 0,
	    "secret refused: %s", why ? why : "?");
}

/* ---- the golden file ---- */

START_TEST(vectors_loaded)
{
	ck_assert_msg(vectors != NULL, "%s", load_error);
	ck_assert_int_gt(nvectors, 0);
	for (int i = 0; i < nvectors; i++) {
		const cJSON *c = cJSON_GetArrayItem(vectors, i);
		const char *exp = member(c, "expected");

		ck_assert_msg(member(c, "name") != NULL, "case %d has no name", i);
		ck_assert_msg(exp != NULL && (strcmp(exp, "valid") == 0 ||
		    strcmp(exp, "invalid") == 0), "%s: bad expected",
		    member(c, "name"));
	}
}
END_TEST

/* One case of the golden file: the receiver's checks in its order. */
START_TEST(vector)
{
	const cJSON *c = cJSON_GetArrayItem(vectors, _i);
	const char *name = member(c, "name"), *secret = member(c, "secret");
	const char *id = member(c, "id"), *ts = member(c, "timestamp");
	const char *header = member(c, "signature_header");
	const char *body = member(c, "body"), *expected = member(c, "expected");
	const cJSON *now = cJSON_GetObjectItemCaseSensitive(c, "now");
	const char *why = NULL, *verdict, *stage;
	struct signature_key key;
	unsigned char *content = NULL;
	size_t clen, which = 99;

	ck_assert_ptr_nonnull(c);
	ck_assert_msg(name != NULL && secret != NULL && body != NULL &&
	    expected != NULL && cJSON_IsNumber(now), "case %d malformed", _i);

	if (signature_key_parse(secret, &key, &why) == -1) {
		stage = "secret refused";
		verdict = "invalid";
		ck_assert_ptr_nonnull(why);
		goto judge;
	}
	if (id == NULL || *id == '\0' || ts == NULL || *ts == '\0' ||
	    header == NULL || *header == '\0') {
		stage = "header missing or empty";
		verdict = "invalid";
		goto judge;
	}
	if (signature_check_timestamp(ts, strlen(ts), (int64_t)now->valuedouble,
	    TOLERANCE, &why) == -1) {
		stage = why;
		verdict = "invalid";
		ck_assert_ptr_nonnull(why);
		goto judge;
	}
	content = make_content(id, ts, body, &clen);
	ck_assert_ptr_nonnull(content);
	if (signature_verify(&key, 1, content, clen, header, strlen(header),
	    &which) == 0) {
		stage = "verified";
		verdict = "valid";
		ck_assert_msg(which == 0, "%s: which = %zu with one key", name,
		    which);
	} else {
		stage = "no entry verifies";
		verdict = "invalid";
	}
judge:
	free(content);
	ck_assert_msg(strcmp(verdict, expected) == 0,
	    "vector %s: expected %s, got %s (%s)", name, expected, verdict,
	    stage ? stage : "?");
}
END_TEST

/* ---- signature_verify beyond the vectors ---- */

START_TEST(joined_header_trailing_comma)
{
	struct signature_key k;
	size_t which = 99;

	key_ok(KAT_SECRET, &k);
	/* Two header lines joined by a server with ", ". */
	ck_assert_int_eq(verify_kat(&k, 1, "v1," BAD_SIG ", v1," KAT_SIG, &which), 0);
	ck_assert_uint_eq(which, 0);
	/* The stray ',' on the good entry itself. */
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG ", v1," BAD_SIG, &which), 0);
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG ",", &which), 0);
	/* Three lines joined; the match in the middle. */
	ck_assert_int_eq(verify_kat(&k, 1,
	    "v1," BAD_SIG ", v1," KAT_SIG ", v1," BAD_SIG2, &which), 0);
	/* Joined lines with no match stay invalid. */
	ck_assert_int_eq(verify_kat(&k, 1, "v1," BAD_SIG ", v1," BAD_SIG2, &which), -1);
	/* Only one stray ',' is tolerated. */
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG ",,", &which), -1);
	/* A ',' glued to the next entry is not a separator. */
	ck_assert_int_eq(verify_kat(&k, 1, "v1," BAD_SIG ",v1," KAT_SIG, &which), -1);
	signature_key_wipe(&k);
}
END_TEST

START_TEST(second_key_verifies)
{
	struct signature_key keys[3];
	size_t which = 99;

	key_ok(OTHER_SECRET, &keys[0]);
	key_ok(KAT_SECRET, &keys[1]);
	ck_assert_int_eq(verify_kat(keys, 2, "v1," KAT_SIG, &which), 0);
	ck_assert_uint_eq(which, 1);
	/* Reversed order: the index follows the key. */
	which = 99;
	ck_assert_int_eq(verify_kat(keys + 1, 1, "v1," KAT_SIG, &which), 0);
	ck_assert_uint_eq(which, 0);
	/* Only the other key: nothing verifies. */
	ck_assert_int_eq(verify_kat(keys, 1, "v1," KAT_SIG, &which), -1);
	/* An Ed25519 key first, HMAC second, a mixed header. */
	key_ok(ED_KEY, &keys[0]);
	key_ok(OTHER_SECRET, &keys[1]);
	key_ok(KAT_SECRET, &keys[2]);
	which = 99;
	ck_assert_int_eq(verify_kat(keys, 3, "v1," KAT_SIG, &which), 0);
	ck_assert_uint_eq(which, 2);
	which = 99;
	ck_assert_int_eq(verify_kat(keys, 3, "v1," BAD_SIG " v1a," ED_SIG, &which), 0);
	ck_assert_uint_eq(which, 0);
	/* No keys at all. */
	ck_assert_int_eq(verify_kat(keys, 0, "v1," KAT_SIG, &which), -1);
	for (int i = 0; i < 3; i++)
		signature_key_wipe(&keys[i]);
}
END_TEST

/* A header of `nbad` copies of `bad` (space-separated, each followed by
 * `sep`), then the good entry. */
static char *
header_after(int nbad, const char *bad, const char *sep)
{
	size_t bl = strlen(bad), sl = strlen(sep);
	size_t n = (size_t)nbad * (bl + sl) + strlen("v1," KAT_SIG) + 1;
	char *h = malloc(n), *p = h;

	ck_assert_ptr_nonnull(h);
	for (int i = 0; i < nbad; i++) {
		memcpy(p, bad, bl);
		memcpy(p + bl, sep, sl);
		p += bl + sl;
	}
	memcpy(p, "v1," KAT_SIG, strlen("v1," KAT_SIG) + 1);
	return h;
}

/* The known-answer signature with its '/' replaced by each high byte
 * (libsodium 1.0.18 decodes 0x80-0xFF as '/'): never verifies, while the
 * untouched one does.  The canonical form is the contract, not the MAC. */
START_TEST(high_bytes_not_slash)
{
	struct signature_key k;
	char header[] = "v1," KAT_SIG;
	char *slash = strchr(header + 3, '/');
	size_t which;

	ck_assert_ptr_nonnull(slash);
	key_ok(KAT_SECRET, &k);
	ck_assert_int_eq(verify_kat(&k, 1, header, &which), 0);
	for (int c = 0x80; c <= 0xff; c++) {
		*slash = (char)c;
		ck_assert_msg(verify_kat(&k, 1, header, &which) == -1,
		    "byte 0x%02x verified as '/'", c);
	}
	signature_key_wipe(&k);
}
END_TEST

START_TEST(entry_cap)
{
	struct signature_key k;
	size_t which;
	char *h;

	key_ok(KAT_SECRET, &k);
	/* The good entry is the 32nd: examined. */
	h = header_after(SIGNATURE_ENTRIES_MAX - 1, "v1," BAD_SIG, " ");
	ck_assert_int_eq(verify_kat(&k, 1, h, &which), 0);
	free(h);
	/* The good entry is the 33rd: past the cap. */
	h = header_after(SIGNATURE_ENTRIES_MAX, "v1," BAD_SIG, " ");
	ck_assert_int_eq(verify_kat(&k, 1, h, &which), -1);
	free(h);
	h = header_after(1000, "v1," BAD_SIG, " ");
	ck_assert_int_eq(verify_kat(&k, 1, h, &which), -1);
	free(h);
	/* Entries that are not signatures count too ("whatever the entries
	 * look like"). */
	h = header_after(SIGNATURE_ENTRIES_MAX, "x", " ");
	ck_assert_int_eq(verify_kat(&k, 1, h, &which), -1);
	free(h);
	h = header_after(SIGNATURE_ENTRIES_MAX, "v2," BAD_SIG, ", ");
	ck_assert_int_eq(verify_kat(&k, 1, h, &which), -1);
	free(h);
	/* Empty entries (runs of spaces) are skipped, not counted. */
	h = header_after(SIGNATURE_ENTRIES_MAX - 1, "v1," BAD_SIG, "     ");
	ck_assert_int_eq(verify_kat(&k, 1, h, &which), 0);
	free(h);
	signature_key_wipe(&k);
}
END_TEST

START_TEST(header_len_respected)
{
	static const char full[] = "v1," KAT_SIG " junk-after";
	struct signature_key k;
	size_t which;

	key_ok(KAT_SECRET, &k);
	/* Only header_len bytes are the header. */
	ck_assert_int_eq(signature_verify(&k, 1,
	    (const unsigned char *)KAT_CONTENT, strlen(KAT_CONTENT), full,
	    strlen("v1," KAT_SIG), &which), 0);
	/* One byte short: the signature is cut, nothing verifies. */
	ck_assert_int_eq(signature_verify(&k, 1,
	    (const unsigned char *)KAT_CONTENT, strlen(KAT_CONTENT), full,
	    strlen("v1," KAT_SIG) - 1, &which), -1);
	ck_assert_int_eq(signature_verify(&k, 1,
	    (const unsigned char *)KAT_CONTENT, strlen(KAT_CONTENT), full, 0,
	    &which), -1);
	/* Every prefix of a header, in an exact-size buffer (for ASan). */
	for (size_t n = 0; n < strlen("v1," KAT_SIG); n++) {
		char *h = malloc(n ? n : 1);

		ck_assert_ptr_nonnull(h);
		memcpy(h, full, n);
		ck_assert_int_eq(signature_verify(&k, 1,
		    (const unsigned char *)KAT_CONTENT, strlen(KAT_CONTENT), h,
		    n, &which), -1);
		free(h);
	}
	signature_key_wipe(&k);
}
END_TEST

START_TEST(labels_exact)
{
	struct signature_key k;
	size_t which;

	key_ok(KAT_SECRET, &k);
	ck_assert_int_eq(verify_kat(&k, 1, "V1," KAT_SIG, &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v1 ," KAT_SIG, &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v10," KAT_SIG, &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v1a," KAT_SIG, &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, ",v1," KAT_SIG, &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v1=" KAT_SIG, &which), -1);
	/* The value must be canonical padded standard base64. */
	ck_assert_int_eq(verify_kat(&k, 1,
	    "v1,g0hM9SsE-OTPJTGt_tmIKtSyZlE3uFJELVlNIOLJ1OE=", &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1,
	    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OF=", &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG "=", &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG "AAAA", &which), -1);
	/* Leading and trailing spaces around the one good entry are fine. */
	ck_assert_int_eq(verify_kat(&k, 1, "   v1," KAT_SIG "   ", &which), 0);
	signature_key_wipe(&k);
}
END_TEST

START_TEST(ed25519_entry)
{
	struct signature_key k;
	size_t which = 99;

	key_ok(ED_KEY, &k);
	ck_assert_int_eq(k.kind, SIGNATURE_ED25519);
	ck_assert_uint_eq(k.keylen, 32);
	ck_assert_int_eq(verify_kat(&k, 1, "v1a," ED_SIG, &which), 0);
	ck_assert_uint_eq(which, 0);
	ck_assert_int_eq(verify_kat(&k, 1, "v1a," ED_SIG ",", &which), 0);
	ck_assert_int_eq(verify_kat(&k, 1, "v1," BAD_SIG ", v1a," ED_SIG, &which), 0);
	/* An Ed25519 key never verifies a v1 entry, nor v1 with its bytes. */
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG, &which), -1);
	ck_assert_int_eq(verify_kat(&k, 1, "v1," ED_SIG, &which), -1);
	signature_key_wipe(&k);
}
END_TEST

/* ---- signing ---- */

START_TEST(sign_known_answer)
{
	struct signature_key k;
	char out[64];

	key_ok(KAT_SECRET, &k);
	ck_assert_int_eq(signature_sign(&k, (const unsigned char *)KAT_CONTENT,
	    strlen(KAT_CONTENT), out, sizeof out), 0);
	ck_assert_str_eq(out, "v1," KAT_SIG);
	signature_key_wipe(&k);
}
END_TEST

START_TEST(sign_round_trip)
{
	char secret[6 + 200], out[64];
	unsigned char raw[SIGNATURE_KEY_MAX], content[300];
	struct signature_key k;
	size_t which;

	for (size_t klen = 1; klen <= SIGNATURE_KEY_MAX; klen += 9) {
		randombytes_buf(raw, klen);
		randombytes_buf(content, sizeof content);
		memcpy(secret, "whsec_", 6);
		sodium_bin2base64(secret + 6, sizeof secret - 6, raw, klen,
		    sodium_base64_VARIANT_ORIGINAL);
		key_ok(secret, &k);
		ck_assert_uint_eq(k.keylen, klen);
		ck_assert_mem_eq(k.key, raw, klen);
		ck_assert_int_eq(signature_sign(&k, content, sizeof content, out,
		    sizeof out), 0);
		ck_assert_uint_eq(strlen(out), 3 + 44);
		ck_assert_int_eq(signature_verify(&k, 1, content, sizeof content,
		    out, strlen(out), &which), 0);
		/* One changed byte of content: no longer verifies. */
		content[klen % sizeof content] ^= 1;
		ck_assert_int_eq(signature_verify(&k, 1, content, sizeof content,
		    out, strlen(out), &which), -1);
		signature_key_wipe(&k);
	}
}
END_TEST

START_TEST(sign_refusals)
{
	struct signature_key k;
	char out[64];

	key_ok(ED_KEY, &k);
	memset(out, 'x', sizeof out);
	ck_assert_int_eq(signature_sign(&k, (const unsigned char *)"a", 1, out,
	    sizeof out), -1);
	signature_key_wipe(&k);

	key_ok(KAT_SECRET, &k);
	/* "v1," + 44 base64 characters + NUL is 48. */
	ck_assert_int_eq(signature_sign(&k, (const unsigned char *)KAT_CONTENT,
	    strlen(KAT_CONTENT), out, 48), 0);
	ck_assert_str_eq(out, "v1," KAT_SIG);
	ck_assert_int_eq(signature_sign(&k, (const unsigned char *)KAT_CONTENT,
	    strlen(KAT_CONTENT), out, 47), -1);
	signature_key_wipe(&k);
}
END_TEST

/* ---- keys ---- */

static int
is_hex16(const char *s)
{
	if (strlen(s) != 16)
		return 0;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return 0;
	return 1;
}

START_TEST(fingerprints)
{
	struct signature_key a, a2, a3, b, e;

	key_ok(KAT_SECRET, &a);
	key_ok(KAT_SECRET, &a2);
	key_ok(KAT_SECRET + 6, &a3);	/* the same key without the prefix */
	key_ok(OTHER_SECRET, &b);
	key_ok(ED_KEY, &e);
	ck_assert_msg(is_hex16(a.fingerprint), "%s", a.fingerprint);
	ck_assert_msg(is_hex16(b.fingerprint), "%s", b.fingerprint);
	ck_assert_msg(is_hex16(e.fingerprint), "%s", e.fingerprint);
	ck_assert_str_eq(a.fingerprint, a2.fingerprint);
	ck_assert_str_eq(a.fingerprint, a3.fingerprint);
	ck_assert_str_ne(a.fingerprint, b.fingerprint);
	ck_assert_str_ne(a.fingerprint, e.fingerprint);
	ck_assert_str_ne(b.fingerprint, e.fingerprint);
	/* It reveals nothing of the key: not a hex prefix of the key bytes. */
	{
		char hex[2 * 8 + 1];

		sodium_bin2hex(hex, sizeof hex, a.key, 8);
		ck_assert_str_ne(a.fingerprint, hex);
	}
	signature_key_wipe(&a);
	signature_key_wipe(&a2);
	signature_key_wipe(&a3);
	signature_key_wipe(&b);
	signature_key_wipe(&e);
}
END_TEST

START_TEST(key_padded_unpadded_same)
{
	struct signature_key a, b;

	/* 3 bytes need no padding; 4 bytes need "==". */
	key_ok("whsec_AQIDBA==", &a);
	key_ok("whsec_AQIDBA", &b);
	ck_assert_uint_eq(a.keylen, 4);
	ck_assert_uint_eq(b.keylen, 4);
	ck_assert_mem_eq(a.key, "\x01\x02\x03\x04", 4);
	ck_assert_mem_eq(b.key, a.key, 4);
	ck_assert_str_eq(a.fingerprint, b.fingerprint);
	ck_assert_int_eq(a.kind, SIGNATURE_HMAC_SHA256);
	signature_key_wipe(&a);
	signature_key_wipe(&b);
}
END_TEST

/*
 * Secrets whose last character carries non-zero spare bits load as the
 * reference libraries load them (Python's base64.b64decode; the JS
 * standardwebhooks and svix, @stablelib/base64, checked with both): the
 * spare bits ignored.  The known answers are what those libraries sign
 * KAT_CONTENT with under each secret.  spare_bits says it, for `check`.
 */
START_TEST(key_spare_bits_as_the_references)
{
	static const struct {
		const char	*secret;
		const char	*key_hex;
		const char	*header;
		int		 spare;
	} cases[] = {
		/* 23 bytes: 2 spare bits, 'S' (010010) holds "10". */
		{ "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS=",
		  "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4",
		  "v1,LVOXivKoo4FWasi/IaHvzhE/u+7/cu2AME+zS/nXqzk=", 1 },
		{ "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS",
		  "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4",
		  "v1,LVOXivKoo4FWasi/IaHvzhE/u+7/cu2AME+zS/nXqzk=", 1 },
		/* 25 bytes: 4 spare bits, 'r' (101011) holds "1011". */
		{ "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr",
		  "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b006",
		  "v1,yK2tMbA6BHPrMEJ1lLv7UlJJbgFoqGenJkiajZ29evg=", 1 },
		{ "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBr==",
		  "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b006",
		  "v1,yK2tMbA6BHPrMEJ1lLv7UlJJbgFoqGenJkiajZ29evg=", 1 },
		/* Its canonical form: the same key, no spare bits. */
		{ "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwBg",
		  "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b006",
		  "v1,yK2tMbA6BHPrMEJ1lLv7UlJJbgFoqGenJkiajZ29evg=", 0 },
		{ KAT_SECRET,
		  "31f290f6bf06298aab4f08d43c3f082cf648a362da2da4b0",
		  "v1," KAT_SIG, 0 },
		{ "whsec_QR==", "41", NULL, 1 },
	};

	for (size_t i = 0; i < NELEM(cases); i++) {
		struct signature_key k;
		char hex[2 * SIGNATURE_KEY_MAX + 1];
		size_t which = 99;

		key_ok(cases[i].secret, &k);
		sodium_bin2hex(hex, sizeof hex, k.key, k.keylen);
		ck_assert_msg(strcmp(hex, cases[i].key_hex) == 0, "%s: key %s",
		    cases[i].secret, hex);
		ck_assert_int_eq(k.spare_bits, cases[i].spare);
		if (cases[i].header != NULL) {
			ck_assert_msg(verify_kat(&k, 1, cases[i].header, &which)
			    == 0, "%s does not verify", cases[i].secret);
			ck_assert_uint_eq(which, 0);
		}
		signature_key_wipe(&k);
	}
}
END_TEST

/* Signature entries stay strict: the KAT signature with spare bits set in
 * its last character ('E' 000100 -> 'F' 000101) is not the signature. */
START_TEST(entry_spare_bits_refused)
{
	struct signature_key k;
	size_t which;

	key_ok(KAT_SECRET, &k);
	ck_assert_int_eq(verify_kat(&k, 1, "v1," KAT_SIG, &which), 0);
	ck_assert_int_eq(verify_kat(&k, 1,
	    "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OF=", &which), -1);
	signature_key_wipe(&k);
}
END_TEST

START_TEST(key_refused)
{
	static const char *bad[] = {
		"", "whsec_", "whpk_", "whsec_=", "whsec_====",
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw ",
		" whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"whsec_MfKQ9r8GKYqrTwjU\nPD8ILPZIo2LaLaSw",
		"whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLaSw",	/* URL-safe */
		"whsec_MfKQ9r8GKYqrTwjU_D8ILPZIo2LaLaSw",
		"whsec_whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"whsec_A",			/* 6 bits: no whole byte */
		"whsec_AQIDBA=",		/* half the padding */
		"whsec_not!base64",
		"WHSEC_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		/* Bytes 0x80-0xFF: libsodium 1.0.18 read them as '/'. */
		"whsec_\x80\x80\x80\x80",
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS\xff",
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\xc3\xa9",
		/* whpk_ must be exactly 32 bytes. */
		"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOig==",	/* 31 */
		"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4A",	/* 33 */
		"whpk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	};
	struct signature_key k;

	for (size_t i = 0; i < NELEM(bad); i++) {
		const char *why = NULL;

		ck_assert_msg(signature_key_parse(bad[i], &k, &why) == -1,
		    "took \"%s\"", bad[i]);
		ck_assert_msg(why != NULL && *why != '\0', "no reason for \"%s\"",
		    bad[i]);
		/* The reason never carries the value. */
		if (strlen(bad[i]) > 6)
			ck_assert_msg(!contains(why, bad[i] + 6),
			    "reason \"%s\" shows the secret", why);
	}
}
END_TEST

START_TEST(key_max_length)
{
	unsigned char raw[SIGNATURE_KEY_MAX + 1];
	char text[6 + 200];
	struct signature_key k;
	const char *why = NULL;

	memset(raw, 0xa5, sizeof raw);
	memcpy(text, "whsec_", 6);
	sodium_bin2base64(text + 6, sizeof text - 6, raw, SIGNATURE_KEY_MAX,
	    sodium_base64_VARIANT_ORIGINAL);
	key_ok(text, &k);
	ck_assert_uint_eq(k.keylen, SIGNATURE_KEY_MAX);
	signature_key_wipe(&k);
	sodium_bin2base64(text + 6, sizeof text - 6, raw, SIGNATURE_KEY_MAX + 1,
	    sodium_base64_VARIANT_ORIGINAL);
	ck_assert_int_eq(signature_key_parse(text, &k, &why), -1);
	ck_assert_ptr_nonnull(why);
}
END_TEST

START_TEST(key_wipe)
{
	static const unsigned char zero[sizeof(struct signature_key)];
	struct signature_key k;

	key_ok(KAT_SECRET, &k);
	ck_assert_uint_gt(k.keylen, 0);
	signature_key_wipe(&k);
	ck_assert_mem_eq(&k, zero, sizeof k);
}
END_TEST

/* ---- timestamps ---- */

START_TEST(timestamp_window)
{
	const int64_t now = 1614265330;
	const char *why;

	why = NULL;
	ck_assert_int_eq(signature_check_timestamp("1614265030", 10, now, 300, &why), 0);
	ck_assert_int_eq(signature_check_timestamp("1614265630", 10, now, 300, &why), 0);
	ck_assert_int_eq(signature_check_timestamp("1614265330", 10, now, 300, &why), 0);
	ck_assert_int_eq(signature_check_timestamp("1614265029", 10, now, 300, &why), -1);
	ck_assert_ptr_nonnull(why);
	why = NULL;
	ck_assert_int_eq(signature_check_timestamp("1614265631", 10, now, 300, &why), -1);
	ck_assert_ptr_nonnull(why);
	/* Tolerance 0: only now itself. */
	ck_assert_int_eq(signature_check_timestamp("1614265330", 10, now, 0, &why), 0);
	ck_assert_int_eq(signature_check_timestamp("1614265331", 10, now, 0, &why), -1);
	/* Huge values never overflow into "within tolerance". */
	ck_assert_int_eq(signature_check_timestamp("9223372036854775807", 19,
	    now, 300, &why), -1);
	ck_assert_int_eq(signature_check_timestamp("99999999999999999999", 20,
	    now, 300, &why), -1);
	ck_assert_int_eq(signature_check_timestamp("0", 1, now, 300, &why), -1);
	ck_assert_int_eq(signature_check_timestamp("0", 1, 0, 300, &why), 0);
}
END_TEST

START_TEST(timestamp_form)
{
	static const char *bad[] = {
		"", "-1614265330", "+1614265330", " 1614265330", "1614265330 ",
		"01614265330", "1614265330.0", "1.6e9", "0x60378b32",
		"1614265330000",
	};
	const int64_t now = 1614265330;
	const char *why;

	for (size_t i = 0; i < NELEM(bad); i++) {
		why = NULL;
		ck_assert_msg(signature_check_timestamp(bad[i], strlen(bad[i]),
		    now, 300, &why) == -1, "took \"%s\"", bad[i]);
		ck_assert_ptr_nonnull(why);
	}
	/* Only len bytes count. */
	ck_assert_int_eq(signature_check_timestamp("1614265330xyz", 10, now,
	    300, &why), 0);
}
END_TEST

static Suite *
signature_suite(void)
{
	Suite *s = suite_create("signature");
	TCase *tc;

	tc = tcase_create("vectors");
	tcase_add_test(tc, vectors_loaded);
	tcase_add_loop_test(tc, vector, 0, nvectors);
	suite_add_tcase(s, tc);

	tc = tcase_create("verify");
	tcase_add_test(tc, joined_header_trailing_comma);
	tcase_add_test(tc, second_key_verifies);
	tcase_add_test(tc, entry_cap);
	tcase_add_test(tc, high_bytes_not_slash);
	tcase_add_test(tc, header_len_respected);
	tcase_add_test(tc, labels_exact);
	tcase_add_test(tc, ed25519_entry);
	suite_add_tcase(s, tc);

	tc = tcase_create("sign");
	tcase_add_test(tc, sign_known_answer);
	tcase_add_test(tc, sign_round_trip);
	tcase_add_test(tc, sign_refusals);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys");
	tcase_add_test(tc, fingerprints);
	tcase_add_test(tc, key_padded_unpadded_same);
	tcase_add_test(tc, key_refused);
	tcase_add_test(tc, key_spare_bits_as_the_references);
	tcase_add_test(tc, entry_spare_bits_refused);
	tcase_add_test(tc, key_max_length);
	tcase_add_test(tc, key_wipe);
	suite_add_tcase(s, tc);

	tc = tcase_create("timestamp");
	tcase_add_test(tc, timestamp_window);
	tcase_add_test(tc, timestamp_form);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	int rc;

	if (sodium_init() < 0)
		return 1;
	load_vectors(VECTORS);
	rc = check_main(signature_suite());
	cJSON_Delete(vectors);
	return rc;
}
