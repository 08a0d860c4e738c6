/*
 * paddle: Paddle Billing's notifications
 * (developer.paddle.com/webhooks/signature-verification,
 * how-webhooks-work, respond-to-webhooks).
 *
 * event_id (evt_…) names the event and is in the signed body
 * (notification_id names one destination's delivery of it);
 * Paddle-Signature: ts=<unix>;h1=<hex>[;h1=…] signs ts + ":" + body with
 * the destination's whole pdl_ntfset_… secret.  Live mode retries 60
 * times over 3 days; a 200 within 5 s stops it.  Ids are prefixed by
 * type (sub_, ctm_…); the clock is occurred_at.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static int
paddle_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "Paddle-Signature") != NULL;
}

static int
paddle_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	if (strncmp(text, "pdl_", 4) == 0 && strstr(text, "apikey") != NULL) {
		*why = "that is a Paddle API key; the notification secret "
		    "starts with pdl_ntfset_";
		return -1;
	}
	return scheme_raw_secret(text, quoted, out, why);
}

static void
paddle_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	scheme_ts_kv_verify(p, keys, nkeys, h, body, body_len, now, res,
	    "Paddle-Signature", ';', "ts", "h1", ":");
}

static int
paddle_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	(void)p;
	(void)id;
	(void)type;
	(void)why;
	return scheme_ts_kv_sign(key, ts, body, body_len, "Paddle-Signature",
	    ';', "ts", "h1", ":", out);
}

static int
paddle_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject(), *data;
	char when[32], oid[SCHEME_SAMPLE_ID_SIZE + 8];
	int rc = -1;

	sample_rfc3339(now, when);
	snprintf(oid, sizeof oid, "test_%.*s", SCHEME_SAMPLE_ID_SIZE - 1, id);
	if (ev == NULL || cJSON_AddStringToObject(ev, "event_id", id) == NULL ||
	    cJSON_AddStringToObject(ev, "event_type", SCHEME_SAMPLE_TYPE) ==
	    NULL || cJSON_AddStringToObject(ev, "occurred_at", when) == NULL ||
	    (data = cJSON_AddObjectToObject(ev, "data")) == NULL ||
	    cJSON_AddStringToObject(data, "id", oid) == NULL)
		goto out;
	rc = sample_padded_json(ev, data, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_paddle = {
	.name = "paddle",
	.title = "Paddle Billing",
	.signature_header = "Paddle-Signature",
	.id_pointer = "/event_id",
	.type_pointer = "/event_type",
	.time_pointer = "/occurred_at",
	.object_pointer = "/data/id",
	.tolerance = SCHEME_TOLERANCE,
	.recognise = paddle_recognise,
	.secret_load = paddle_secret,
	.verify = paddle_verify,
	.sign = paddle_sign,
	.sample_id = scheme_sample_evt_id,
	.sample_body = paddle_sample_body,
};
