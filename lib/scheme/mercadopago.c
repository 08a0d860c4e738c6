/*
 * mercadopago: Mercado Pago's Webhooks (mercadopago.com developers
 * "Notificaciones > Webhooks", "Validar origen de la notificación"; the
 * npm package mercadopago, WebhookSignatureValidator).
 *
 * x-signature: ts=<unix seconds>,v1=<hex> is HMAC-SHA256, under the
 * application's secret signature as text, of the manifest
 * "id:<data.id>;request-id:<x-request-id>;ts:<ts>;", where data.id is the
 * request's query parameter and a part whose value is absent is left
 * out.  The body is *not* signed: it is a thin notice ({"action":
 * "payment.updated", "data": {"id": …}, "id": <notification id>, "type":
 * "payment", …}) naming what to fetch from the API.  So the id the inbox
 * keys it by (the body's notification id) carries a tag of the body, the
 * object is the signed data.id with the query's type, and a handler
 * fetches that object before it acts.  Mercado Pago waits 22 s for a 200
 * or 201 and sends again on a schedule over about 4 days.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/common/instant.h"
#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

/* A query parameter's value, decoded, into out (outsz); 1 when it is
 * there and fits, 0 when absent, empty or too long. */
static int
query_param(const struct scheme_headers *h, const char *name, char *out,
    size_t outsz)
{
	struct span v;
	size_t n;

	if (!scheme_param_value(h->query, "&", name, &v) || v.len == 0 ||
	    v.len >= outsz)
		return 0;
	memcpy(out, v.p, v.len);
	n = scheme_form_decode(out, v.len);
	out[n] = '\0';
	return n > 0;
}

static int
mp_recognise(const struct scheme_headers *h)
{
	const char *v = scheme_hget(h, "x-signature");

	/* x-signature is a common name; Mercado Pago's holds ts= and v1=. */
	return v != NULL && strstr(v, "ts=") != NULL && strstr(v, "v1=") != NULL;
}

/*
 * The signed manifest, as Mercado Pago's SDK builds it: each part present
 * only when its value is (data.id trimmed, as the SDK trims it).  A ';'
 * in a value would let one manifest read as another (an id that carries
 * the request-id part in it): refused, -1, as too long is.
 */
static int
manifest(const struct scheme_headers *h, const struct span *ts, char *out,
    size_t outsz)
{
	char id[SCHEME_VALUE_MAX], *p = id;
	const char *rid = scheme_hget(h, "x-request-id");
	int has_id = query_param(h, "data.id", id, sizeof id), n;
	size_t l;

	if (has_id) {
		while (*p == ' ')
			p++;
		for (l = strlen(p); l > 0 && p[l - 1] == ' '; l--)
			p[l - 1] = '\0';
		has_id = *p != '\0';
	}
	if ((has_id && strchr(p, ';') != NULL) ||
	    (rid != NULL && strchr(rid, ';') != NULL))
		return -1;
	n = snprintf(out, outsz, "%s%s%s%s%s%sts:%.*s;", has_id ? "id:" : "",
	    has_id ? p : "", has_id ? ";" : "", rid != NULL ? "request-id:" : "",
	    rid != NULL ? rid : "", rid != NULL ? ";" : "", (int)ts->len, ts->p);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

static void
mp_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *sig = scheme_hget(h, "x-signature");
	struct span t, entries[SCHEME_ENTRIES_MAX];
	struct part part;
	char m[2 * SCHEME_VALUE_MAX + 128];
	size_t n;

	(void)body;
	(void)body_len;
	if (sig == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "x-signature is required");
		return;
	}
	if (scheme_split_kv(sig, ',', "ts", "v1", &t, entries, &n) == -1 ||
	    t.p == NULL) {
		scheme_refuse(res, SCHEME_MALFORMED, "x-signature without one ts");
		return;
	}
	if (n == 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "x-signature without v1");
		return;
	}
	if (scheme_check_time(t.p, t.len, now, p->tolerance, res,
	    "x-signature's ts is not a plain integer") == -1)
		return;
	if (manifest(h, &t, m, sizeof m) == -1) {
		scheme_refuse(res, SCHEME_MALFORMED, "x-request-id too long, or it "
		    "or data.id holds a ';'");
		return;
	}
	part = (struct part){ m, strlen(m) };
	if (scheme_match_macs(SCHEME_SHA256, SCHEME_HEX, keys, nkeys, &part, 1,
	    entries, n, res) != 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "x-signature does not "
		    "verify for data.id, x-request-id and ts");
		return;
	}
	scheme_verified(res);
}

/* The object is the signed data.id of the query, of the query's type;
 * the type and time are the body's (unsigned) action and date_created. */
static int
mp_fields(const struct scheme_headers *h, const char *id,
    const unsigned char *body, size_t len, struct event_fields *f)
{
	char oid[SCHEME_VALUE_MAX], type[SCHEME_VALUE_MAX];
	const cJSON *x;
	cJSON *j;
	int rc = -1;

	(void)id;
	memset(f, 0, sizeof *f);
	if (query_param(h, "data.id", oid, sizeof oid) &&
	    ((f->object_id = strdup(oid)) == NULL ||
	    (f->object_type = strdup(query_param(h, "type", type, sizeof type) ?
	    type : "")) == NULL))
		return -1;
	if ((j = cJSON_ParseWithLength((const char *)body, len)) == NULL)
		return 0;
	x = cJSON_GetObjectItemCaseSensitive(j, "action");
	if (cJSON_IsString(x) && strlen(x->valuestring) < SCHEME_VALUE_MAX &&
	    (f->type = strdup(x->valuestring)) == NULL)
		goto out;
	x = cJSON_GetObjectItemCaseSensitive(j, "date_created");
	if (cJSON_IsString(x) && strlen(x->valuestring) < SCHEME_VALUE_MAX) {
		if ((f->created_at_raw = strdup(x->valuestring)) == NULL)
			goto out;
		if (instant_parse(x->valuestring, strlen(x->valuestring),
		    f->created_at) == -1) {
			f->created_at[0] = '\0';
			f->note = "date_created is not an ISO-8601 instant: "
			    "ordered by arrival";
		}
	}
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/* The body's data.id and type go in the query, as Mercado Pago calls;
 * a fresh x-request-id; the manifest signed as the verifier builds it. */
static int
mp_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	char m[2 * SCHEME_VALUE_MAX + 128], mac[SCHEME_HEADER_VALUE_MAX];
	char v[SCHEME_HEADER_VALUE_MAX], rid[37];
	const cJSON *oid, *kind;
	struct part part;
	cJSON *j;
	size_t ql;
	int rc = -1, n;

	(void)p;
	(void)id;
	(void)type;
	*why = "the body has no data.id to name in the URL";
	if ((j = cJSON_ParseWithLength((const char *)body, body_len)) == NULL)
		return -1;
	oid = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j,
	    "data"), "id");
	kind = cJSON_GetObjectItemCaseSensitive(j, "type");
	/* Plain ids only: what a query carries without encoding. */
	if (!cJSON_IsString(oid) || oid->valuestring[0] == '\0' ||
	    strpbrk(oid->valuestring, "&=%+ #;") != NULL)
		goto out;
	*why = "a header would not fit";
	sample_uuid(rid);
	/* After the query the URL called has, as Twilio's is added. */
	ql = strlen(out->query);
	if ((size_t)snprintf(out->query + ql, sizeof out->query - ql,
	    "%sdata.id=%s&type=%s", ql > 0 ? "&" : "", oid->valuestring,
	    cJSON_IsString(kind) && strpbrk(kind->valuestring, "&=%+ #") ==
	    NULL ? kind->valuestring : "payment") >= sizeof out->query - ql ||
	    (n = snprintf(m, sizeof m, "id:%s;request-id:%s;ts:%s;",
	    oid->valuestring, rid, ts)) < 0 || (size_t)n >= sizeof m)
		goto out;
	part = (struct part){ m, (size_t)n };
	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_HEX, key, &part, 1, "",
	    mac) == -1 || (size_t)snprintf(v, sizeof v, "ts=%s,v1=%s", ts, mac) >=
	    sizeof v || scheme_signed_add(out, "x-signature", v) == -1 ||
	    scheme_signed_add(out, "x-request-id", rid) == -1)
		goto out;
	rc = 0;
out:
	cJSON_Delete(j);
	return rc;
}

/* A notification id: a number of 11 digits, as Mercado Pago's are. */
static void
mp_sample_id(char *out)
{
	unsigned char r[8];
	uint64_t n = 0;
	size_t i;

	randombytes_buf(r, sizeof r);
	for (i = 0; i < sizeof r; i++)
		n = n << 8 | r[i];
	snprintf(out, SCHEME_SAMPLE_ID_SIZE, "%llu",
	    (unsigned long long)(10000000000ULL + n % 90000000000ULL));
}

static int
mp_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject(), *data;
	char when[32], oid[SCHEME_SAMPLE_ID_SIZE + 8];
	int rc = -1;

	sample_rfc3339(now, when);
	snprintf(oid, sizeof oid, "test%.*s", SCHEME_SAMPLE_ID_SIZE - 1, id);
	if (ev == NULL ||
	    cJSON_AddStringToObject(ev, "action", SCHEME_SAMPLE_TYPE) == NULL ||
	    cJSON_AddStringToObject(ev, "api_version", "v1") == NULL ||
	    (data = cJSON_AddObjectToObject(ev, "data")) == NULL ||
	    cJSON_AddStringToObject(data, "id", oid) == NULL ||
	    cJSON_AddStringToObject(ev, "date_created", when) == NULL ||
	    cJSON_AddNumberToObject(ev, "id", strtod(id, NULL)) == NULL ||
	    cJSON_AddBoolToObject(ev, "live_mode", 0) == NULL ||
	    cJSON_AddStringToObject(ev, "type", "webhook_inbox_test") == NULL)
		goto out;
	rc = sample_padded_json(ev, ev, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_mercadopago = {
	.name = "mercadopago",
	.title = "Mercado Pago",
	.signature_header = "x-signature",
	.id_pointer = "/id",
	.body_unsigned = 1,
	.tolerance = SCHEME_TOLERANCE,
	.recognise = mp_recognise,
	.secret_load = scheme_raw_secret,
	.verify = mp_verify,
	.fields = mp_fields,
	.sign = mp_sign,
	.sample_id = mp_sample_id,
	.sample_body = mp_sample_body,
};
