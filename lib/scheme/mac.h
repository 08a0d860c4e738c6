/*
 * mac: what every provider's file in lib/scheme/ shares below
 * the table — reading headers and "k=v" lists, computing and comparing
 * MACs, checking a signed timestamp, setting a verdict, and writing a
 * signed header.  PRIVATE: include it only from lib/scheme/ and
 * tests/test_scheme.c.
 *
 * Every MAC is decoded strictly (exact length, hex in either case,
 * canonical padded base64) and compared in constant time; each secret's
 * MAC is computed once per delivery, and only when some entry decodes.
 */
#ifndef WEBHOOK_SCHEME_MAC_H
#define WEBHOOK_SCHEME_MAC_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "lib/scheme/scheme.h"

/* Largest MAC of any algorithm here (HMAC-SHA512), bytes. */
#define MAC_MAX		crypto_auth_hmacsha512_BYTES
/* 10^15 s: far past any clock, and it keeps the subtractions exact. */
#define TS_MAX		1000000000000000LL

/* A piece of the signed content: a MAC is over the concatenation. */
struct part {
	const void	*p;
	size_t		 len;
};

/* A slice of a header value: one presented MAC, one parameter. */
struct span {
	const char	*p;
	size_t		 len;
};

/* ---- headers and lists ---- */

/* Header `name`, or NULL when absent or empty. */
const char *scheme_hget(const struct scheme_headers *h, const char *name);
/* Header `name` as provider s reads it (its `header` member). */
const char *scheme_header(const struct scheme *s, const struct scheme_headers *h,
	    const char *name);
/*
 * The value of the parameter named exactly `name` in a query string or a
 * header's list (entries split at any byte of `seps`, each "name=value";
 * spaces before an entry skipped), as a span into it; 0 when there is
 * none.  Names are compared whole: "xbodySHA256=" is not "bodySHA256=".
 */
int	scheme_param_value(const char *list, const char *seps, const char *name,
	    struct span *v);
/*
 * Split "k=v<sep>k=v…" (Stripe's "t=…,v1=…", Paddle's "ts=…;h1=…"):
 * `tkey`'s value once into *t (twice: -1), each `vkey` value into
 * entries[0..SCHEME_ENTRIES_MAX).  Returns 0, or -1.
 */
int	scheme_split_kv(const char *hv, char sep, const char *tkey,
	    const char *vkey, struct span *t, struct span *entries,
	    size_t *nentries);
/* Decode a form component in place ('+' a space, %XX a byte; a '%' not
 * followed by two hex digits stays).  Returns the new length. */
size_t	scheme_form_decode(char *s, size_t len);

/* ---- MACs ---- */

size_t	scheme_alg_len(enum scheme_alg alg);
/* The HMAC of parts[0..n) under key, into mac (scheme_alg_len bytes). */
void	scheme_mac_parts(enum scheme_alg alg, const struct scheme_secret *key,
	    const struct part *parts, size_t n, unsigned char *mac);
/* Decode an encoded MAC of exactly `want` bytes; 0, or -1. */
int	scheme_decode_mac(enum scheme_encoding enc, const char *s, size_t len,
	    unsigned char *out, size_t want);
/*
 * Does one of entries[0..nentries) hold the MAC of parts[0..nparts) under
 * one of keys[0..nkeys)?  0 with res->key_index set, or -1.
 */
int	scheme_match_macs(enum scheme_alg alg, enum scheme_encoding enc,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct part *parts, size_t nparts,
	    const struct span *entries, size_t nentries,
	    struct scheme_result *res);
/*
 * The one-header schemes (GitHub, Shopify, WooCommerce): hv is prefix +
 * the encoded MAC of the body; sets the verdict.
 */
void	scheme_body_mac_verify(const struct scheme_secret *keys, size_t nkeys,
	    const char *hv, const char *prefix, enum scheme_alg alg,
	    enum scheme_encoding enc, const unsigned char *body,
	    size_t body_len, struct scheme_result *res);
/*
 * A "timestamp and MAC entries" header (Stripe, Paddle): `header`'s
 * value split at `sep` into `tkey` and `vkey` entries, the MAC
 * HMAC-SHA256 hex over timestamp + joiner + body; sets the verdict.
 */
void	scheme_ts_kv_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res,
	    const char *header, char sep, const char *tkey, const char *vkey,
	    const char *joiner);

/* ---- verdicts and timestamps ---- */

void	scheme_refuse(struct scheme_result *res, enum scheme_outcome o,
	    const char *why);
void	scheme_verified(struct scheme_result *res);
/*
 * Parse a signed timestamp (decimal Unix seconds) and check it against
 * now ± tolerance (0: no window).  0 with res->signed_at set, or -1
 * having refused (MALFORMED with `header` as the reason, or STALE).
 */
int	scheme_check_time(const char *ts, size_t len, int64_t now,
	    int64_t tolerance, struct scheme_result *res, const char *header);

/* ---- secrets ---- */

/* The bytes as written: 1..SCHEME_SECRET_MAX; no edge blanks unless the
 * value was quoted (scheme_secret_load_quoted). */
int	scheme_raw_secret(const char *text, int quoted,
	    struct scheme_secret *out, const char **why);

/* ---- signing ---- */

/* The MAC of parts[0..n) under key, encoded (hex lower case, or padded
 * standard base64) after `prefix`, into v (SCHEME_HEADER_VALUE_MAX).
 * 0, or -1 when it does not fit. */
int	scheme_encoded_mac(enum scheme_alg alg, enum scheme_encoding enc,
	    const struct scheme_secret *key, const struct part *parts,
	    size_t n, const char *prefix, char *v);
/*
 * The signer of scheme_ts_kv_verify's headers (Stripe, Paddle): the
 * HMAC-SHA256 hex of ts + joiner + body, as header: tkey=ts<sep>vkey=MAC.
 * 0, or -1 when it does not fit.
 */
int	scheme_ts_kv_sign(const struct scheme_secret *key, const char *ts,
	    const unsigned char *body, size_t body_len, const char *header,
	    char sep, const char *tkey, const char *vkey, const char *joiner,
	    struct scheme_signed *out);
/* A sample event id "evt_" + 24 hex digits (Stripe's, Paddle's), into
 * out (SCHEME_SAMPLE_ID_SIZE). */
void	scheme_sample_evt_id(char *out);
/* scheme_signed_add when value is not NULL; 0 when it is. */
int	scheme_signed_opt(struct scheme_signed *out, const char *name,
	    const char *value);

#endif
