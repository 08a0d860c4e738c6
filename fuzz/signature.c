/*
 * fuzz/signature: lib/common/signature.c — the webhook-signature header, the
 * verifier, a configured secret line and the webhook-timestamp check.
 *
 * Input: three parts split at the first two '\n':
 *
 *	KEY-LINE '\n' HEADER '\n' CONTENT
 *
 * KEY-LINE goes to signature_key_parse; when it parses, it is tried after
 * three fixed keys (the vectors' HMAC secrets and Ed25519 public key).
 * HEADER and CONTENT (id.timestamp.body) go to signature_verify, and
 * CONTENT's timestamp (between its first two '.') to
 * signature_check_timestamp.  The seeds are the Standard Webhooks vectors
 * in this form, so mutations start from real signatures.
 *
 * Properties (abort when broken):
 * - a parsed key has 1..SIGNATURE_KEY_MAX bytes (32 for whpk_), a 16-hex
 *   fingerprint, and its own canonical base64 parses back to the same key;
 *   a refused one leaves no byte of the key behind;
 * - signature_verify agrees with a reference built from libsodium alone:
 *   for each HMAC key, "v1,<base64 of its MAC>" among the header's first
 *   SIGNATURE_ENTRIES_MAX entries (a trailing ',' dropped) verifies; for
 *   each Ed25519 key, any v1a entry that libsodium verifies; and a match
 *   names a key that has one;
 * - signature_check_timestamp agrees with plain arithmetic on a
 *   canonical decimal, for a few clocks and tolerances.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/common/signature.h"
#include "lib/common/util.h"

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)

static const char *const fixed[] = {
	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
	"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD",
	"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4=",
};
#define NFIXED	(sizeof fixed / sizeof fixed[0])

static struct signature_key keys[NFIXED + 1];

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *why;
	size_t i;

	(void)argc;
	(void)argv;
	CHECK(sodium_init() >= 0);
	for (i = 0; i < NFIXED; i++)
		CHECK(signature_key_parse(fixed[i], &keys[i], &why) == 0);
	return 0;
}

/* A copy of p[0..n) with a NUL after it; the caller frees. */
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
check_key(const char *line, struct signature_key *k)
{
	struct signature_key again;
	const char *why = NULL, *pre;
	char text[8 + sodium_base64_ENCODED_LEN(SIGNATURE_KEY_MAX,
	    sodium_base64_VARIANT_ORIGINAL)];
	static const struct signature_key zero;
	size_t i;

	if (signature_key_parse(line, k, &why) == -1) {
		/* Nothing of the refused text is left in the key. */
		CHECK(why != NULL && k->keylen == 0);
		CHECK(memcmp(k->key, zero.key, sizeof zero.key) == 0);
		return;
	}
	CHECK(k->keylen >= 1 && k->keylen <= SIGNATURE_KEY_MAX);
	CHECK(k->kind == SIGNATURE_HMAC_SHA256 || k->kind == SIGNATURE_ED25519);
	CHECK(k->kind != SIGNATURE_ED25519 || k->keylen == 32);
	CHECK(strlen(k->fingerprint) == SIGNATURE_FP_SIZE - 1);
	for (i = 0; i < SIGNATURE_FP_SIZE - 1; i++)
		CHECK(strchr("0123456789abcdef", k->fingerprint[i]) != NULL);
	pre = k->kind == SIGNATURE_ED25519 ? "whpk_" : "whsec_";
	memcpy(text, pre, strlen(pre));
	sodium_bin2base64(text + strlen(pre), sizeof text - strlen(pre),
	    k->key, k->keylen, sodium_base64_VARIANT_ORIGINAL);
	CHECK(signature_key_parse(text, &again, &why) == 0);
	CHECK(again.kind == k->kind && again.keylen == k->keylen &&
	    memcmp(again.key, k->key, k->keylen) == 0 &&
	    strcmp(again.fingerprint, k->fingerprint) == 0);
	signature_key_wipe(&again);
}

/*
 * The reference: does key k verify an entry of the header?  Entries as
 * signature.h says: split at spaces, empty ones skipped, only the first
 * SIGNATURE_ENTRIES_MAX counted, one trailing ',' dropped.
 */
static int
reference(const struct signature_key *k, const unsigned char *content,
    size_t content_len, const char *h, size_t hlen)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	unsigned char sig[crypto_sign_ed25519_BYTES];
	char want[3 + sodium_base64_ENCODED_LEN(sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL)];
	size_t i = 0, start, end, entries = 0, binlen;
	const char *b64end;

	if (k->kind == SIGNATURE_HMAC_SHA256) {
		crypto_auth_hmacsha256_state st;

		crypto_auth_hmacsha256_init(&st, k->key, k->keylen);
		crypto_auth_hmacsha256_update(&st, content, content_len);
		crypto_auth_hmacsha256_final(&st, mac);
		memcpy(want, "v1,", 3);
		sodium_bin2base64(want + 3, sizeof want - 3, mac, sizeof mac,
		    sodium_base64_VARIANT_ORIGINAL);
	}
	while (i < hlen && entries < SIGNATURE_ENTRIES_MAX) {
		while (i < hlen && h[i] == ' ')
			i++;
		if (i == hlen)
			break;
		start = i;
		while (i < hlen && h[i] != ' ')
			i++;
		end = i;
		entries++;
		if (h[end - 1] == ',')
			end--;
		if (k->kind == SIGNATURE_HMAC_SHA256) {
			if (end - start == strlen(want) &&
			    memcmp(h + start, want, end - start) == 0)
				return 1;
			continue;
		}
		/* v1a: canonical padded base64 of 64 bytes is 88 characters;
		 * libsodium decodes a high byte as '/', so the alphabet is
		 * checked here too. */
		if (end - start != 4 + 88 || memcmp(h + start, "v1a,", 4) != 0)
			continue;
		for (size_t j = start + 4; j < end; j++) {
			unsigned char c = (unsigned char)h[j];
			if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
			    (c >= '0' && c <= '9') || c == '+' || c == '/' ||
			    (c == '=' && j >= end - 2)))
				goto next;
		}
		if (sodium_base642bin(sig, sizeof sig, h + start + 4, 88, NULL,
		    &binlen, &b64end, sodium_base64_VARIANT_ORIGINAL) == 0 &&
		    b64end == h + end && binlen == sizeof sig &&
		    crypto_sign_ed25519_verify_detached(sig, content, content_len,
		    k->key) == 0)
			return 1;
next:		;
	}
	return 0;
}

static void
check_timestamp(const char *ts, size_t len)
{
	static const int64_t nows[] = { 0, 1614265330, 1700000000,
	    253402300799LL };
	static const int64_t tols[] = { 1, 300, 86400 };
	int canonical = len > 0 && len <= 16 && (len == 1 || ts[0] != '0');
	int64_t t = 0;
	const char *why;
	size_t i, j;

	for (i = 0; i < len && canonical; i++) {
		if (ts[i] < '0' || ts[i] > '9')
			canonical = 0;
		else
			t = t * 10 + (ts[i] - '0');
	}
	if (t > 1000000000000000LL)
		canonical = 0;
	for (i = 0; i < sizeof nows / sizeof nows[0]; i++)
		for (j = 0; j < sizeof tols / sizeof tols[0]; j++) {
			int want = canonical && t - nows[i] <= tols[j] &&
			    nows[i] - t <= tols[j];
			int rc = signature_check_timestamp(ts, len, nows[i],
			    tols[j], &why);
			CHECK(rc == (want ? 0 : -1));
		}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl1, *nl2, *end = data + size, *content, *dot1, *dot2;
	const char *header;
	size_t header_len, content_len, nkeys = NFIXED, which = SIZE_MAX, k;
	char *line;
	int rc, any = 0;

	if ((nl1 = memchr(data, '\n', size)) == NULL)
		return 0;
	line = dupz(data, (size_t)(nl1 - data));
	check_key(line, &keys[NFIXED]);
	if (keys[NFIXED].keylen > 0)
		nkeys++;
	free(line);

	header = (const char *)nl1 + 1;
	if ((nl2 = memchr(header, '\n', (size_t)(end - nl1 - 1))) == NULL)
		nl2 = end;
	header_len = (size_t)((const char *)nl2 - header);
	content = nl2 < end ? nl2 + 1 : end;
	content_len = (size_t)(end - content);

	rc = signature_verify(keys, nkeys, content, content_len, header,
	    header_len, &which);
	for (k = 0; k < nkeys; k++)
		any |= reference(&keys[k], content, content_len, header,
		    header_len);
	CHECK(rc == (any ? 0 : -1));
	if (rc == 0)
		CHECK(which < nkeys && reference(&keys[which], content,
		    content_len, header, header_len));

	if ((dot1 = memchr(content, '.', content_len)) != NULL &&
	    (dot2 = memchr(dot1 + 1, '.', (size_t)(end - dot1 - 1))) != NULL)
		check_timestamp((const char *)dot1 + 1, (size_t)(dot2 - dot1 - 1));
	signature_key_wipe(&keys[NFIXED]);
	return 0;
}
