/*
 * mac: the helpers every provider's file shares (lib/scheme/mac.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <nettle/hmac.h>
#include <nettle/sha1.h>
#include <sodium.h>

#include "lib/common/signature.h"
#include "lib/common/util.h"
#include "lib/scheme/mac.h"

/* ---- headers and lists ---- */

const char *
scheme_hget(const struct scheme_headers *h, const char *name)
{
	const char *v = h->get(h->arg, name);

	return v != NULL && v[0] != '\0' ? v : NULL;
}

const char *
scheme_header(const struct scheme *s, const struct scheme_headers *h,
    const char *name)
{
	return s->header != NULL ? s->header(h, name) : scheme_hget(h, name);
}

int
scheme_param_value(const char *list, const char *seps, const char *name,
    struct span *v)
{
	size_t nl = strlen(name);

	while (list != NULL && *list != '\0') {
		size_t len;

		while (*list == ' ')
			list++;
		len = strcspn(list, seps);
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

int
scheme_split_kv(const char *hv, char sep, const char *tkey, const char *vkey,
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

size_t
scheme_form_decode(char *s, size_t len)
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

void
scheme_body_mac_verify(const struct scheme_secret *keys, size_t nkeys,
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

void
scheme_ts_kv_verify(const struct scheme_params *p, const struct scheme_secret *keys,
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
	if (scheme_split_kv(hv, sep, tkey, vkey, &t, entries, &n) == -1 ||
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

/* ---- verdicts and timestamps ---- */

void
scheme_refuse(struct scheme_result *res, enum scheme_outcome o, const char *why)
{
	res->outcome = o;
	res->why = why;
}

void
scheme_verified(struct scheme_result *res)
{
	res->outcome = SCHEME_OK;
	res->why = NULL;
}

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

/* ---- secrets ---- */

int
scheme_raw_secret(const char *text, int quoted, struct scheme_secret *out,
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

/* ---- signing ---- */

int
scheme_encoded_mac(enum scheme_alg alg, enum scheme_encoding enc,
    const struct scheme_secret *key, const struct part *parts, size_t n,
    const char *prefix, char *v)
{
	unsigned char mac[MAC_MAX];
	size_t pl = strlen(prefix), ml = scheme_alg_len(alg);
	size_t need = enc == SCHEME_HEX ? 2 * ml + 1 :
	    sodium_base64_ENCODED_LEN(ml, sodium_base64_VARIANT_ORIGINAL);

	if (ml == 0 || pl + need > SCHEME_HEADER_VALUE_MAX)
		return -1;
	scheme_mac_parts(alg, key, parts, n, mac);
	memcpy(v, prefix, pl);
	if (enc == SCHEME_HEX)
		sodium_bin2hex(v + pl, need, mac, ml);
	else
		sodium_bin2base64(v + pl, need, mac, ml,
		    sodium_base64_VARIANT_ORIGINAL);
	sodium_memzero(mac, sizeof mac);
	return 0;
}

int
scheme_signed_opt(struct scheme_signed *out, const char *name,
    const char *value)
{
	return value == NULL ? 0 : scheme_signed_add(out, name, value);
}

int
scheme_ts_kv_sign(const struct scheme_secret *key, const char *ts,
    const unsigned char *body, size_t body_len, const char *header,
    char sep, const char *tkey, const char *vkey, const char *joiner,
    struct scheme_signed *out)
{
	struct part parts[3] = { { ts, strlen(ts) }, { joiner, strlen(joiner) },
	    { body, body_len } };
	char mac[SCHEME_HEADER_VALUE_MAX], v[SCHEME_HEADER_VALUE_MAX];

	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, parts, 3, "",
	    mac) == -1 || (size_t)snprintf(v, sizeof v, "%s=%s%c%s=%s", tkey, ts,
	    sep, vkey, mac) >= sizeof v)
		return -1;
	return scheme_signed_add(out, header, v);
}

void
scheme_sample_evt_id(char *out)
{
	unsigned char r[12];
	char hex[25];

	randombytes_buf(r, sizeof r);
	sodium_bin2hex(hex, sizeof hex, r, sizeof r);
	snprintf(out, SCHEME_SAMPLE_ID_SIZE, "evt_%s", hex);
}
