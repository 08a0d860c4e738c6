/*
 * signature: Standard Webhooks v1 (HMAC-SHA256) and v1a (Ed25519) with
 * libsodium.  See common/signature.h.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/common/signature.h"
#include "lib/common/util.h"

/*
 * Is s[0..len) made of the standard base64 alphabet, with '=' only as the
 * last one or two bytes?  libsodium 1.0.18 (Debian 12) decodes any byte
 * 0x80-0xFF as '/', so without this a signature with '/' replaced by a
 * high byte still verified and "whsec_\x80\x80\x80\x80" loaded as a key.
 */
static int
b64_alphabet(const char *s, size_t len)
{
	size_t i, body = len;

	while (body > 0 && len - body < 2 && s[body - 1] == '=')
		body--;
	for (i = 0; i < body; i++) {
		unsigned char c = (unsigned char)s[i];
		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		    (c >= '0' && c <= '9') || c == '+' || c == '/'))
			return 0;
	}
	return 1;
}

long
signature_b64_decode(const char *s, size_t len, unsigned char *bin, size_t binmax,
    int allow_unpadded)
{
	size_t binlen;
	const char *end;

	if (!b64_alphabet(s, len))
		return -1;
	if (sodium_base642bin(bin, binmax, s, len, NULL, &binlen, &end,
	    sodium_base64_VARIANT_ORIGINAL) == 0 && end == s + len)
		return (long)binlen;
	if (allow_unpadded &&
	    sodium_base642bin(bin, binmax, s, len, NULL, &binlen, &end,
	    sodium_base64_VARIANT_ORIGINAL_NO_PADDING) == 0 && end == s + len)
		return (long)binlen;
	return -1;
}

/* Longest secret text decoded: SIGNATURE_KEY_MAX bytes in base64. */
#define KEY_TEXT_MAX	(4 * ((SIGNATURE_KEY_MAX + 2) / 3))

/*
 * A secret's base64 as the reference libraries decode it: the spare bits
 * of its last character -- the 4 or 2 low bits beyond the last whole
 * byte, which a canonical encoder leaves zero -- are ignored (Python's
 * base64.b64decode, the JS libraries' @stablelib/base64).  Copies s[0..len)
 * into out with those bits cleared; *spare set to 1 when any was set.
 * Only the last data character can hold spare bits, and only when the
 * data characters are 2 or 3 past a multiple of 4; any other length is
 * left for the strict decoder to refuse.  -1 when longer than out.
 */
static int
clear_spare_bits(const char *s, size_t len, char *out, size_t outsz,
    int *spare)
{
	static const char alphabet[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t data = len;
	const char *at;
	unsigned mask, v;

	*spare = 0;
	if (len > outsz)
		return -1;
	memcpy(out, s, len);
	while (data > 0 && len - data < 2 && out[data - 1] == '=')
		data--;
	if (data == 0 || (data % 4 != 2 && data % 4 != 3))
		return 0;
	if ((at = memchr(alphabet, out[data - 1], 64)) == NULL)
		return 0;	/* not the alphabet: refused by the decoder */
	v = (unsigned)(at - alphabet);
	mask = data % 4 == 2 ? 0x0f : 0x03;
	if (v & mask) {
		*spare = 1;
		out[data - 1] = alphabet[v & ~mask];
	}
	return 0;
}

int
signature_key_parse(const char *text, struct signature_key *out,
    const char **why)
{
	char canon[KEY_TEXT_MAX];
	unsigned char fp[8];
	size_t len;
	int spare;
	long n;

	memset(out, 0, sizeof *out);
	/* The webhook-signature header's entry label, copied with the
	 * secret from a delivery's headers: named, not "not base64". */
	if (strncmp(text, "v1,", 3) == 0 || strncmp(text, "v1a,", 4) == 0) {
		*why = text[2] == ',' ? "starts with v1, (the "
		    "webhook-signature header's label, copied with the "
		    "secret): drop the v1, and keep whsec_…" : "starts with "
		    "v1a, (the webhook-signature header's label, copied with "
		    "the secret): drop the v1a, and keep whpk_…";
		return -1;
	}
	if (strncmp(text, "whpk_", 5) == 0) {
		text += 5;
		out->kind = SIGNATURE_ED25519;
	} else {
		if (strncmp(text, "whsec_", 6) == 0)
			text += 6;
		out->kind = SIGNATURE_HMAC_SHA256;
	}
	len = strlen(text);
	if (len == 0) {
		*why = "empty secret";
		return -1;
	}
	/* Longer than KEY_TEXT_MAX: more than SIGNATURE_KEY_MAX bytes. */
	n = clear_spare_bits(text, len, canon, sizeof canon, &spare) == -1 ? -1 :
	    signature_b64_decode(canon, len, out->key, sizeof out->key, 1);
	sodium_memzero(canon, sizeof canon);
	if (n <= 0) {
		*why = n == 0 ? "secret decodes to nothing" :
		    "not standard base64 (or longer than 128 bytes)";
		goto fail;
	}
	if (out->kind == SIGNATURE_ED25519 &&
	    n != crypto_sign_ed25519_PUBLICKEYBYTES) {
		*why = "whpk_ public key is not 32 bytes";
		goto fail;
	}
	out->keylen = (size_t)n;
	out->spare_bits = spare;
	crypto_generichash(fp, sizeof fp, out->key, out->keylen, NULL, 0);
	sodium_bin2hex(out->fingerprint, sizeof out->fingerprint, fp, sizeof fp);
	return 0;
fail:
	signature_key_wipe(out);
	return -1;
}

void
signature_key_wipe(struct signature_key *k)
{
	sodium_memzero(k, sizeof *k);
}

/* The content as one buffer, for an Ed25519 entry (the signature is over
 * the bytes, not a hash state): made once, the first time one needs it. */
static const unsigned char *
whole(const struct signature_part *parts, size_t nparts, unsigned char **buf,
    size_t *len)
{
	size_t i, n = 0;

	if (*buf != NULL || nparts == 1) {
		*len = nparts == 1 ? parts[0].len : *len;
		return nparts == 1 ? parts[0].p : *buf;
	}
	for (i = 0; i < nparts; i++) {
		if (parts[i].len > SIZE_MAX - n - 1)
			return NULL;
		n += parts[i].len;
	}
	if ((*buf = malloc(n + 1)) == NULL)
		return NULL;
	for (*len = 0, i = 0; i < nparts; i++) {
		if (parts[i].len > 0)
			memcpy(*buf + *len, parts[i].p, parts[i].len);
		*len += parts[i].len;
	}
	return *buf;
}

int
signature_verify_parts(const struct signature_key *keys, size_t nkeys,
    const struct signature_part *parts, size_t nparts, const char *header,
    size_t header_len, size_t *which)
{
	/* HMACs computed lazily, once per key, only if a v1 entry appears. */
	unsigned char macs[SIGNATURE_KEYS_MAX][crypto_auth_hmacsha256_BYTES];
	unsigned char have_mac[SIGNATURE_KEYS_MAX] = { 0 };
	unsigned char sig[crypto_sign_ed25519_BYTES], *buf = NULL;
	const unsigned char *content;
	size_t i = 0, entries = 0, k, p, content_len = 0;
	int found = -1;

	if (nkeys > SIGNATURE_KEYS_MAX)
		nkeys = SIGNATURE_KEYS_MAX;	/* config refuses more */
	while (i < header_len && found == -1 && entries < SIGNATURE_ENTRIES_MAX) {
		size_t start, end, comma;
		int v1a;
		long n;

		while (i < header_len && header[i] == ' ')
			i++;
		start = i;
		while (i < header_len && header[i] != ' ')
			i++;
		end = i;
		if (end == start)
			continue;
		entries++;
		if (header[end - 1] == ',')
			end--;
		for (comma = start; comma < end && header[comma] != ','; comma++)
			;
		if (comma == end)
			continue;
		if (comma - start == 2 && memcmp(header + start, "v1", 2) == 0)
			v1a = 0;
		else if (comma - start == 3 && memcmp(header + start, "v1a", 3) == 0)
			v1a = 1;
		else
			continue;
		n = signature_b64_decode(header + comma + 1, end - comma - 1, sig,
		    sizeof sig, 0);
		if (n != (v1a ? crypto_sign_ed25519_BYTES : crypto_auth_hmacsha256_BYTES))
			continue;
		for (k = 0; k < nkeys && found == -1; k++) {
			if (!v1a && keys[k].kind == SIGNATURE_HMAC_SHA256) {
				if (!have_mac[k]) {
					crypto_auth_hmacsha256_state st;

					crypto_auth_hmacsha256_init(&st,
					    keys[k].key, keys[k].keylen);
					for (p = 0; p < nparts; p++)
						crypto_auth_hmacsha256_update(&st,
						    parts[p].p, parts[p].len);
					crypto_auth_hmacsha256_final(&st, macs[k]);
					sodium_memzero(&st, sizeof st);
					have_mac[k] = 1;
				}
				if (crypto_verify_32(macs[k], sig) == 0)
					found = (int)k;
			} else if (v1a && keys[k].kind == SIGNATURE_ED25519 &&
			    (content = whole(parts, nparts, &buf,
			    &content_len)) != NULL &&
			    crypto_sign_ed25519_verify_detached(sig, content,
			    content_len, keys[k].key) == 0) {
				found = (int)k;
			}
		}
	}
	sodium_memzero(macs, sizeof macs);
	free(buf);
	if (found == -1)
		return -1;
	*which = (size_t)found;
	return 0;
}

int
signature_verify(const struct signature_key *keys, size_t nkeys,
    const unsigned char *content, size_t content_len,
    const char *header, size_t header_len, size_t *which)
{
	const struct signature_part part = { content, content_len };

	return signature_verify_parts(keys, nkeys, &part, 1, header,
	    header_len, which);
}

int
signature_check_timestamp(const char *ts, size_t len, int64_t now,
    int64_t tolerance, const char **why)
{
	int64_t t;

	/* 10^15 s is far past any clock; it keeps the subtraction exact. */
	if (util_parse_decimal(ts, len, 1000000000000000LL, &t) == -1) {
		*why = "webhook-timestamp is not a plain integer";
		return -1;
	}
	if (now - t > tolerance) {
		*why = "webhook-timestamp too old";
		return -1;
	}
	if (t - now > tolerance) {
		*why = "webhook-timestamp too new";
		return -1;
	}
	return 0;
}

int
signature_sign(const struct signature_key *key, const unsigned char *content,
    size_t content_len, char *out, size_t outsz)
{
	unsigned char mac[crypto_auth_hmacsha256_BYTES];
	crypto_auth_hmacsha256_state st;

	if (key->kind != SIGNATURE_HMAC_SHA256 ||
	    outsz < 3 + sodium_base64_ENCODED_LEN(sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL))
		return -1;
	crypto_auth_hmacsha256_init(&st, key->key, key->keylen);
	crypto_auth_hmacsha256_update(&st, content, content_len);
	crypto_auth_hmacsha256_final(&st, mac);
	memcpy(out, "v1,", 3);
	sodium_bin2base64(out + 3, outsz - 3, mac, sizeof mac,
	    sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(&st, sizeof st);
	sodium_memzero(mac, sizeof mac);
	return 0;
}
