/*
 * signature: Standard Webhooks verification (standardwebhooks.com,
 * "Signature scheme"; PROVIDER.md "A delivery").
 *
 * The signed content is the bytes  webhook-id "." webhook-timestamp "." body.
 * A `whsec_` secret verifies `v1,` entries (HMAC-SHA256, base64 MAC); a
 * `whpk_` public key verifies `v1a,` entries (Ed25519, base64 signature).
 * Every configured key is tried against every entry; one match is enough.
 * All cryptography and base64 is libsodium's.
 */
#ifndef WEBHOOK_SIGNATURE_H
#define WEBHOOK_SIGNATURE_H

#include <stddef.h>
#include <stdint.h>

enum signature_kind {
	SIGNATURE_HMAC_SHA256 = 1,	/* whsec_…, "v1" */
	SIGNATURE_ED25519 = 2		/* whpk_…, "v1a" */
};

/* Largest HMAC key we take, bytes (provider secrets are 24..64 bytes). */
/* Longest webhook-signature (all lines joined), bytes: 32 entries of a v1a
 * signature are under 4 KiB.  Longer is refused with 401, not truncated. */
#define SIGNATURE_HEADER_MAX	16384
#define SIGNATURE_KEY_MAX	128
/* Keys tried per request: a rotation needs two or three; more is a config
 * mistake, and each HMAC key costs a pass over the body. */
#define SIGNATURE_KEYS_MAX	8
/* Entries of a webhook-signature header we look at (a header carries one
 * per active secret; a few during a rotation). */
#define SIGNATURE_ENTRIES_MAX	32
/* Hex digits of a key fingerprint, plus NUL. */
#define SIGNATURE_FP_SIZE	17

struct signature_key {
	enum signature_kind	kind;
	unsigned char		key[SIGNATURE_KEY_MAX];	/* wiped by signature_key_wipe */
	size_t			keylen;
	/* A stable name for the key that reveals nothing of it: the first 8
	 * bytes of BLAKE2b(key), hex.  Stays the same when the config's lines
	 * move, so an operator can see which secret verified an event. */
	char			fingerprint[SIGNATURE_FP_SIZE];
	/* 1: the text's last character carried non-zero spare bits, which
	 * were ignored (signature_key_parse); `check` warns about it. */
	int			spare_bits;
};

/*
 * Parse one configured `secret` value (docs/DESIGN.md "Configuration"):
 * "whsec_" + standard base64 (padded or not; the prefix is optional) of
 * 1..SIGNATURE_KEY_MAX bytes, or "whpk_" + standard base64 of a 32-byte
 * Ed25519 public key.  URL-safe alphabets and stray characters are
 * refused (vectors: secret_urlsafe_alphabet, …).  Non-zero spare bits in
 * the last character (the bits past the last whole byte) are ignored, as
 * the reference libraries ignore them (Python's base64.b64decode, the JS
 * standardwebhooks and svix): "…LaLaS" loads as "…LaLaQ" does, and
 * out->spare_bits says so.  Signature entries stay strict
 * (signature_verify).  A text that starts with an entry's label, "v1,"
 * or "v1a," (copied from a webhook-signature header), is refused by name.
 * Returns 0 and fills *out, or -1 with *why set to a static reason that
 * never contains the value.
 */
int	signature_key_parse(const char *text, struct signature_key *out,
	    const char **why) __attribute__((warn_unused_result));
void	signature_key_wipe(struct signature_key *k);

/*
 * Verify.  `content` is the signed content (id.timestamp.body), `content_len`
 * bytes.  `header` is the webhook-signature value (`header_len` bytes);
 * several header lines or FastCGI parameters are passed joined by ' '.
 * Entries are separated by one or more spaces; empty entries are skipped;
 * one trailing ',' on an entry is dropped (servers join repeated headers
 * with ", "); the label must be exactly "v1" or "v1a" and the value
 * canonical padded standard base64 of 32 (v1) or 64 (v1a) bytes; other
 * entries are skipped.  At most SIGNATURE_ENTRIES_MAX entries are examined.
 *
 * Returns 0 when an entry verifies under one of keys[0..nkeys) (nkeys ≤
 * SIGNATURE_KEYS_MAX), storing that
 * key's index in *which; -1 otherwise.  MACs are compared in constant time.
 */
int	signature_verify(const struct signature_key *keys, size_t nkeys,
	    const unsigned char *content, size_t content_len,
	    const char *header, size_t header_len, size_t *which)
	    __attribute__((warn_unused_result));

/* A piece of signed content. */
struct signature_part {
	const void	*p;
	size_t		 len;
};

/*
 * signature_verify over the concatenation of parts[0..nparts) (Standard
 * Webhooks' id, ".", timestamp, ".", body), without copying it for the
 * HMACs; an Ed25519 entry, which signs the bytes themselves, gets one
 * copy, made the first time one is tried.  Returns as signature_verify
 * (-1 too when that copy finds no memory).
 */
int	signature_verify_parts(const struct signature_key *keys, size_t nkeys,
	    const struct signature_part *parts, size_t nparts,
	    const char *header, size_t header_len, size_t *which)
	    __attribute__((warn_unused_result));

/*
 * Check a webhook-timestamp header value: a plain decimal integer of Unix
 * seconds (no sign, no leading zero), within `tolerance` seconds of `now`
 * in either direction (|now - ts| > tolerance is refused; the reference
 * libraries' rule).  Returns 0, or -1 with *why set to a static reason.
 */
int	signature_check_timestamp(const char *ts, size_t len, int64_t now,
	    int64_t tolerance, const char **why)
	    __attribute__((warn_unused_result));

/*
 * Sign as a provider does, for our `sign` tool and tests: writes
 * "v1,<base64 HMAC>" for an HMAC key into out (outsz ≥ 48).  Returns 0, or
 * -1 for a key that cannot sign (a whpk_ public key).
 */
int	signature_sign(const struct signature_key *key,
	    const unsigned char *content, size_t content_len,
	    char *out, size_t outsz) __attribute__((warn_unused_result));

/*
 * Decode standard base64 s[0..len) into bin (binmax bytes): padded, or
 * also unpadded when allow_unpadded; every byte must belong to the
 * alphabet and be consumed (libsodium alone lets a high byte pass as '/').
 * Returns the decoded length, or -1.  Shared with lib/scheme/mac.c.
 */
long	signature_b64_decode(const char *s, size_t len, unsigned char *bin,
	    size_t binmax, int allow_unpadded) __attribute__((warn_unused_result));

#endif
