/*
 * stripe: Stripe's webhooks (docs.stripe.com/webhooks, "Verify webhook
 * signatures manually"; stripe-node's Webhooks.signature).
 *
 * The event's id (evt_…) is in the signed body, the same on every
 * attempt; Stripe-Signature: t=<unix>,v1=<hex>[,v1=…] signs t + "." +
 * body with the whole whsec_… text as the key.  Live mode retries for up
 * to 3 days; any 2xx stops it.  Object ids are prefixed by type (cus_,
 * pi_…): unique across types; the event clock is `created`.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static int
stripe_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "Stripe-Signature") != NULL;
}

static int
stripe_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	/* Standard Webhooks' entry label, copied with a whsec_ secret. */
	if (strncmp(text, "v1,", 3) == 0) {
		*why = "starts with v1, (a signature header's label, copied "
		    "with the secret): drop the v1, and keep whsec_…";
		return -1;
	}
	if (strncmp(text, "sk_", 3) == 0 || strncmp(text, "rk_", 3) == 0 ||
	    strncmp(text, "pk_", 3) == 0) {
		*why = "that is a Stripe API key; the webhook signing secret "
		    "starts with whsec_ (Dashboard, Webhooks, the endpoint)";
		return -1;
	}
	if (strncmp(text, "whsec_", 6) != 0 || text[6] == '\0') {
		*why = "a Stripe signing secret starts with whsec_";
		return -1;
	}
	return scheme_raw_secret(text, quoted, out, why);
}

static void
stripe_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	scheme_ts_kv_verify(p, keys, nkeys, h, body, body_len, now, res,
	    "Stripe-Signature", ',', "t", "v1", ".");
}

static int
stripe_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	(void)p;
	(void)id;
	(void)type;
	(void)why;
	return scheme_ts_kv_sign(key, ts, body, body_len, "Stripe-Signature",
	    ',', "t", "v1", ".", out);
}

/* An Event object: its data.object a test object of its own. */
static int
stripe_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject(), *data, *obj = NULL;
	char oid[SCHEME_SAMPLE_ID_SIZE + 8];
	int rc = -1;

	snprintf(oid, sizeof oid, "test_%.*s", SCHEME_SAMPLE_ID_SIZE - 1, id);
	if (ev == NULL || cJSON_AddStringToObject(ev, "id", id) == NULL ||
	    cJSON_AddStringToObject(ev, "object", "event") == NULL ||
	    cJSON_AddNumberToObject(ev, "created", (double)now) == NULL ||
	    cJSON_AddBoolToObject(ev, "livemode", 0) == NULL ||
	    cJSON_AddStringToObject(ev, "type", SCHEME_SAMPLE_TYPE) == NULL ||
	    (data = cJSON_AddObjectToObject(ev, "data")) == NULL ||
	    (obj = cJSON_AddObjectToObject(data, "object")) == NULL ||
	    cJSON_AddStringToObject(obj, "id", oid) == NULL ||
	    cJSON_AddStringToObject(obj, "object", "webhook_inbox_test") == NULL)
		goto out;
	rc = sample_padded_json(ev, obj, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_stripe = {
	.name = "stripe",
	.title = "Stripe",
	.signature_header = "Stripe-Signature",
	.id_pointer = "/id",
	.type_pointer = "/type",
	.time_pointer = "/created",
	.object_pointer = "/data/object/id",
	.tolerance = SCHEME_TOLERANCE,
	.recognise = stripe_recognise,
	.secret_load = stripe_secret,
	.verify = stripe_verify,
	.sign = stripe_sign,
	.sample_id = scheme_sample_evt_id,
	.sample_body = stripe_sample_body,
};
