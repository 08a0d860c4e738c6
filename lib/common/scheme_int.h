/*
 * scheme_int: what lib/common/scheme.c (the table, secrets, the public
 * calls, extraction) and lib/common/scheme_verify.c (each provider's
 * recognition and verification) share.  PRIVATE: include it only from
 * those two files and tests/test_scheme.c.
 */
#ifndef WEBHOOK_SCHEME_INT_H
#define WEBHOOK_SCHEME_INT_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "lib/common/scheme.h"

/* Largest MAC of any algorithm here (HMAC-SHA512), bytes. */
#define MAC_MAX		crypto_auth_hmacsha512_BYTES
/* 10^15 s: far past any clock, and it keeps the subtractions exact. */
#define TS_MAX		1000000000000000LL

/* A piece of the signed content: HMAC over the concatenation of parts. */
struct part {
	const void	*p;
	size_t		 len;
};

/* A slice of a header value: one presented MAC. */
struct span {
	const char	*p;
	size_t		 len;
};

/* ---- scheme.c: MACs and results ---- */
const char *scheme_hget(const struct scheme_headers *h, const char *name);
size_t scheme_alg_len(enum scheme_alg alg);
void scheme_mac_parts(enum scheme_alg alg, const struct scheme_secret *key,
	    const struct part *parts, size_t n, unsigned char *mac);
int scheme_decode_mac(enum scheme_encoding enc, const char *s, size_t len,
	    unsigned char *out, size_t want);
int scheme_match_macs(enum scheme_alg alg, enum scheme_encoding enc,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct part *parts, size_t nparts,
	    const struct span *entries, size_t nentries,
	    struct scheme_result *res);
void scheme_refuse(struct scheme_result *res, enum scheme_outcome o,
	    const char *why);
int scheme_check_time(const char *ts, size_t len, int64_t now,
	    int64_t tolerance, struct scheme_result *res, const char *header);
void scheme_verified(struct scheme_result *res);

/* ---- scheme_verify.c: each scheme's recognition and verification ---- */
/* A header under the other names its senders use: svix-X before
 * webhook-X (`what` is X); Shopify's with or without its X- prefix. */
const char *scheme_std_header(const struct scheme_headers *h,
	    const char *what);
const char *scheme_shopify_header(const struct scheme_headers *h,
	    const char *name);
int scheme_std_recognise(const struct scheme_headers *h);
void scheme_std_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_stripe_recognise(const struct scheme_headers *h);
void scheme_stripe_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_paddle_recognise(const struct scheme_headers *h);
void scheme_paddle_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_github_recognise(const struct scheme_headers *h);
void scheme_github_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_shopify_recognise(const struct scheme_headers *h);
void scheme_shopify_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_woo_recognise(const struct scheme_headers *h);
void scheme_woo_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_slack_recognise(const struct scheme_headers *h);
void scheme_slack_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_discord_recognise(const struct scheme_headers *h);
void scheme_discord_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_gitlab_recognise(const struct scheme_headers *h);
void scheme_gitlab_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
int scheme_twilio_recognise(const struct scheme_headers *h);
void scheme_twilio_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);
/*
 * Twilio's signed content for a body: parts[0] the URL, then each
 * distinct decoded form parameter's name and value, sorted (none when the
 * URL carries bodySHA256=, whose signature covers the URL alone).  The
 * verifier and scheme_sign share it.  Returns 0 (free with
 * scheme_twilio_free), or -1 with *o and *why (static) set.
 */
struct scheme_twilio {
	char		*form;		/* the body's copy, decoded in place */
	void		*params;	/* the parameters, sorted */
	struct part	*parts;
	size_t		 nparts;
};
int scheme_twilio_content(const char *url, const unsigned char *body,
	    size_t body_len, struct scheme_twilio *tc, enum scheme_outcome *o,
	    const char **why);
void scheme_twilio_free(struct scheme_twilio *tc);
/* 1 when url's bodySHA256= is body's SHA-256, 0 when another's, -1 when
 * the URL has none. */
int scheme_twilio_body_matches(const char *url, const unsigned char *body,
	    size_t body_len);
/* Twilio's content_digest (struct scheme). */
int scheme_twilio_digest(const struct scheme_headers *h,
	    const unsigned char *body, size_t body_len, unsigned char out[32]);
int scheme_never_recognised(const struct scheme_headers *h);
void scheme_hmac_verify(const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res);

#endif
