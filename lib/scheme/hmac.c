/*
 * hmac: the generic scheme, for a sender that signs its body with a shared
 * secret in a header of its own (docs/providers.md "hmac"): the section
 * names the header, a prefix before the MAC, the algorithm (sha1, sha256,
 * sha512) and encoding (hex, base64), and an optional timestamp header
 * signed before the body.  Its id is the section's `id =`: a pointer into
 * the signed body, or a header that nothing signs.  Never recognised: its
 * header is whatever the section says.
 */
#include <string.h>

#include "lib/scheme/mac.h"

static int
hmac_recognise(const struct scheme_headers *h)
{
	(void)h;
	return 0;
}

static int
hmac_params_check(const struct scheme_params *p, const char **why)
{
	if (p->header == NULL || p->header[0] == '\0') {
		*why = "scheme = hmac needs a signature header";
		return -1;
	}
	if (scheme_alg_len(p->alg) == 0 || (p->encoding != SCHEME_HEX &&
	    p->encoding != SCHEME_BASE64)) {
		*why = "scheme = hmac needs algorithm sha1, sha256 or sha512 and "
		    "encoding hex or base64";
		return -1;
	}
	return 0;
}

static void
hmac_verify(const struct scheme_params *p, const struct scheme_secret *keys,
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

static int
hmac_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	const char *pre = p->prefix != NULL ? p->prefix : "";
	const char *sep = p->separator != NULL ? p->separator : ".";
	struct part parts[3];
	char v[SCHEME_HEADER_VALUE_MAX];
	size_t n = 0;

	(void)id;
	(void)type;
	if (p->header == NULL) {
		*why = "scheme = hmac needs a signature header";
		return -1;
	}
	if (p->timestamp_header != NULL) {
		parts[n++] = (struct part){ ts, strlen(ts) };
		parts[n++] = (struct part){ sep, strlen(sep) };
	}
	parts[n++] = (struct part){ body, body_len };
	if (scheme_encoded_mac(p->alg, p->encoding, key, parts, n, pre, v) == -1 ||
	    scheme_signed_add(out, p->header, v) == -1 ||
	    scheme_signed_opt(out, p->timestamp_header, p->timestamp_header ?
	    ts : NULL) == -1)
		return -1;
	return 0;
}

const struct scheme scheme_hmac = {
	.name = "hmac",
	.title = "a generic HMAC",
	.signature_header = "(configured)",
	.tolerance = SCHEME_TOLERANCE,
	.recognise = hmac_recognise,
	.secret_load = scheme_raw_secret,
	.params_check = hmac_params_check,
	.verify = hmac_verify,
	.sign = hmac_sign,
};
