/*
 * slack: Slack's Events API (api.slack.com/apis/events-api;
 * api.slack.com/authentication/verifying-requests-from-slack).
 *
 * event_id names the event and is in the signed body; X-Slack-Signature
 * v0=<hex> is HMAC-SHA256 of "v0:" + X-Slack-Request-Timestamp + ":" +
 * body under the signing secret (hex text, used as text).  Slack retries
 * 3 times (at once, after 1 and 5 minutes) when no 2xx came within 3 s;
 * its url_verification wants its challenge back.  The clock is
 * event_time.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static int
slack_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Slack-Signature") != NULL;
}

/*
 * A verified url_verification event: copy its challenge into the answer.
 * Returns 1 when the body is one (answer set, or refused when the
 * challenge is unfit), 0 when it is an ordinary event.
 */
static int
slack_challenge(const unsigned char *body, size_t len, struct scheme_result *res)
{
	const cJSON *type, *ch;
	cJSON *j;
	size_t i, n;
	int rc = 0;

	/* The string is in every url_verification body; most events skip
	 * the parse. */
	if (memmem(body, len, "url_verification", 16) == NULL)
		return 0;
	if ((j = cJSON_ParseWithLength((const char *)body, len)) == NULL)
		return 0;
	type = cJSON_GetObjectItemCaseSensitive(j, "type");
	ch = cJSON_GetObjectItemCaseSensitive(j, "challenge");
	if (cJSON_IsString(type) &&
	    strcmp(type->valuestring, "url_verification") == 0) {
		rc = 1;
		n = cJSON_IsString(ch) ? strlen(ch->valuestring) : 0;
		/* Slack's are ~50 letters and digits; anything else is not
		 * echoed into our answer. */
		for (i = 0; i < n; i++)
			if ((unsigned char)ch->valuestring[i] <= ' ' ||
			    (unsigned char)ch->valuestring[i] >= 0x7f)
				n = 0;
		if (n == 0 || n >= sizeof res->answer) {
			scheme_refuse(res, SCHEME_MALFORMED, "url_verification without "
			    "a printable challenge");
		} else {
			memcpy(res->answer, ch->valuestring, n + 1);
			res->answer_type = "text/plain";
			scheme_refuse(res, SCHEME_ANSWER, "Slack url_verification");
		}
	}
	cJSON_Delete(j);
	return rc;
}

static void
slack_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "X-Slack-Signature");
	const char *ts = scheme_hget(h, "X-Slack-Request-Timestamp");
	struct part parts[4];
	struct span e;

	if (sig == NULL || ts == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Slack-Signature and "
		    "X-Slack-Request-Timestamp are required");
		return;
	}
	if (scheme_check_time(ts, strlen(ts), now, p->tolerance, res,
	    "X-Slack-Request-Timestamp is not a plain integer") == -1)
		return;
	if (strncmp(sig, "v0=", 3) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Slack-Signature is not v0=");
		return;
	}
	parts[0].p = "v0:";
	parts[0].len = 3;
	parts[1].p = ts;
	parts[1].len = strlen(ts);
	parts[2].p = ":";
	parts[2].len = 1;
	parts[3].p = body;
	parts[3].len = body_len;
	e.p = sig + 3;
	e.len = strlen(e.p);
	if (scheme_match_macs(SCHEME_SHA256, SCHEME_HEX, keys, nkeys, parts, 4, &e, 1,
	    res) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Slack-Signature does not verify");
		return;
	}
	if (!slack_challenge(body, body_len, res))
		scheme_verified(res);
}

static int
slack_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	struct part parts[4] = { { "v0:", 3 }, { ts, strlen(ts) }, { ":", 1 },
	    { body, body_len } };
	char v[SCHEME_HEADER_VALUE_MAX];

	(void)p;
	(void)id;
	(void)type;
	(void)why;
	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, parts, 4, "v0=",
	    v) == -1 ||
	    scheme_signed_add(out, "X-Slack-Signature", v) == -1 ||
	    scheme_signed_add(out, "X-Slack-Request-Timestamp", ts) == -1)
		return -1;
	return 0;
}

static void
slack_sample_id(char *out)
{
	char hex[13];

	sample_hex(hex, 6, 1);
	snprintf(out, SCHEME_SAMPLE_ID_SIZE, "Ev%s", hex);
}

static int
slack_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject(), *event;
	int rc = -1;

	if (ev == NULL ||
	    cJSON_AddStringToObject(ev, "token", "webhook-inbox-test") == NULL ||
	    cJSON_AddStringToObject(ev, "team_id", "T00000000") == NULL ||
	    cJSON_AddStringToObject(ev, "type", "event_callback") == NULL ||
	    cJSON_AddStringToObject(ev, "event_id", id) == NULL ||
	    cJSON_AddNumberToObject(ev, "event_time", (double)now) == NULL ||
	    (event = cJSON_AddObjectToObject(ev, "event")) == NULL ||
	    cJSON_AddStringToObject(event, "type", SCHEME_SAMPLE_TYPE) == NULL)
		goto out;
	rc = sample_padded_json(ev, event, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_slack = {
	.name = "slack",
	.title = "Slack",
	.signature_header = "X-Slack-Signature",
	.id_pointer = "/event_id",
	.type_pointer = "/event/type",
	.time_pointer = "/event_time",
	.tolerance = SCHEME_TOLERANCE,
	.recognise = slack_recognise,
	.secret_load = scheme_raw_secret,
	.verify = slack_verify,
	.sign = slack_sign,
	.sample_id = slack_sample_id,
	.sample_body = slack_sample_body,
};
