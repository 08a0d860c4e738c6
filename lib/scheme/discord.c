/*
 * discord: Discord's Webhook Events and Interactions
 * (docs.discord.com developers/events/webhook-events,
 * developers/interactions/overview).
 *
 * An Interaction's id is in the signed body; a Webhook Event has none
 * (the inbox keys it by the body's digest).  X-Signature-Ed25519 is the
 * Ed25519 signature of X-Signature-Timestamp + body under the
 * application's key, whose public half (64 hex digits) is the config's:
 * the config can verify, never sign.  Webhook Events are sent again when
 * no 204 came within 3 s; their PING wants 204, an Interactions PING a
 * PONG.  Snowflake ids are unique; the clock is event.timestamp.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/scheme/mac.h"

static int
discord_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Signature-Ed25519") != NULL;
}

static int
discord_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	size_t binlen;
	const char *end;

	(void)quoted;	/* hex digits: no blank is ever a key's */
	if (strlen(text) != 2 * crypto_sign_ed25519_PUBLICKEYBYTES ||
	    sodium_hex2bin(out->key, crypto_sign_ed25519_PUBLICKEYBYTES, text,
	    strlen(text), NULL, &binlen, &end) != 0 ||
	    binlen != crypto_sign_ed25519_PUBLICKEYBYTES || *end != '\0') {
		*why = "a Discord public key is 64 hex digits "
		    "(General Information, Public Key)";
		return -1;
	}
	out->len = binlen;
	out->ed25519 = 1;
	return 0;
}

static void
discord_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "X-Signature-Ed25519");
	const char *ts = scheme_hget(h, "X-Signature-Timestamp");
	unsigned char s[crypto_sign_ed25519_BYTES], *msg;
	size_t tl, k;
	int found = -1;
	cJSON *j;

	if (sig == NULL || ts == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Signature-Ed25519 and "
		    "X-Signature-Timestamp are required");
		return;
	}
	if (p->tolerance > 0 && scheme_check_time(ts, strlen(ts), now, p->tolerance,
	    res, "X-Signature-Timestamp is not a plain integer") == -1)
		return;
	if (scheme_decode_mac(SCHEME_HEX, sig, strlen(sig), s, sizeof s) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Signature-Ed25519 is not "
		    "128 hex digits");
		return;
	}
	tl = strlen(ts);
	if (body_len > SIZE_MAX - tl - 1 ||
	    (msg = malloc(tl + body_len + 1)) == NULL) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "out of memory");
		return;
	}
	memcpy(msg, ts, tl);
	if (body_len > 0)
		memcpy(msg + tl, body, body_len);
	for (k = 0; k < nkeys && k < SCHEME_SECRETS_MAX && found == -1; k++)
		if (keys[k].ed25519 && crypto_sign_ed25519_verify_detached(s,
		    msg, tl + body_len, keys[k].key) == 0)
			found = (int)k;
	free(msg);
	if (found == -1) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Signature-Ed25519 does not verify");
		return;
	}
	res->key_index = (size_t)found;
	/*
	 * Two kinds of Discord endpoint sign alike (docs/providers.md):
	 * Webhook Events, whose PING is type 0 and wants 204 with no body,
	 * and whose events are type 1 with an `event` object (stored); and
	 * Interactions, whose PING is type 1 without one and wants
	 * {"type":1} back (a PONG).
	 */
	if ((j = cJSON_ParseWithLength((const char *)body, body_len)) != NULL) {
		const cJSON *t = cJSON_GetObjectItemCaseSensitive(j, "type");
		int token = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(j,
		    "token"));
		int event = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(j,
		    "event"));

		if (cJSON_IsNumber(t) && t->valuedouble == 1 && !event) {
			memcpy(res->answer, "{\"type\":1}", 11);
			res->answer_type = "application/json";
			scheme_refuse(res, SCHEME_ANSWER, "Discord PING");
		} else if (cJSON_IsNumber(t) && t->valuedouble == 0 && !token) {
			res->answer[0] = '\0';
			res->answer_type = NULL;	/* 204 No Content */
			scheme_refuse(res, SCHEME_ANSWER, "Discord PING");
		}
		cJSON_Delete(j);
		if (res->outcome == SCHEME_ANSWER)
			return;
	}
	scheme_verified(res);
}

const struct scheme scheme_discord = {
	.name = "discord",
	.title = "Discord",
	.signature_header = "X-Signature-Ed25519",
	.id_pointer = "/id",
	.type_pointer = "/event/type",
	.time_pointer = "/event/timestamp",
	.recognise = discord_recognise,
	.secret_load = discord_secret,
	.verify = discord_verify,
	.unsignable = "Discord signs with its application's private key; the "
	    "config holds only the public key, which verifies but cannot sign",
};
