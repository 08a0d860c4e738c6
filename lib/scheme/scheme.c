/*
 * scheme: the table of providers and the calls through it
 * (lib/scheme/scheme.h, docs/providers.md): finding one, verifying with
 * it, reading a delivery's fields and the key the inbox keeps it under,
 * signing and sampling as it does.  Nothing here knows one provider from
 * another: each is its file's row.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/common/instant.h"
#include "lib/common/util.h"
#include "lib/store/inbox.h"
#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

/* ---- the table: one line each, the default source's first ---- */

extern const struct scheme scheme_standard, scheme_stripe, scheme_github,
    scheme_shopify, scheme_woocommerce, scheme_slack, scheme_paddle,
    scheme_discord, scheme_gitlab, scheme_twilio, scheme_hmac,
    scheme_mercadopago;

/* Recognition tries them in this order (scheme_recognise). */
static const struct scheme *const schemes[] = {
	&scheme_standard,
	&scheme_stripe,
	&scheme_github,
	&scheme_shopify,
	&scheme_woocommerce,
	&scheme_slack,
	&scheme_paddle,
	&scheme_discord,
	&scheme_gitlab,
	&scheme_twilio,
	&scheme_mercadopago,
	&scheme_hmac,
};
#define NSCHEMES	(sizeof schemes / sizeof schemes[0])

_Static_assert(NSCHEMES <= SCHEME_MAX, "SCHEME_MAX is the table's bound");

const struct scheme *
scheme_at(size_t i)
{
	return i < NSCHEMES ? schemes[i] : NULL;
}

const struct scheme *
scheme_find(const char *name)
{
	size_t i;

	for (i = 0; i < NSCHEMES; i++)
		if (strcmp(schemes[i]->name, name) == 0)
			return schemes[i];
	return NULL;
}

void
scheme_params_init(const struct scheme *s, struct scheme_params *p)
{
	memset(p, 0, sizeof *p);
	p->tolerance = s->tolerance;
	p->alg = SCHEME_SHA256;
	p->encoding = SCHEME_HEX;
	p->separator = ".";
}

int
scheme_params_check(const struct scheme *s, const struct scheme_params *p,
    const char **why)
{
	if (p->tolerance < 0 || p->tolerance > 86400 * 366) {
		*why = "tolerance must be 0 (off) .. a year";
		return -1;
	}
	return s->params_check != NULL ? s->params_check(p, why) : 0;
}

/* ---- secrets ---- */

/* scheme_secret_load, scheme_secret_load_quoted. */
static int
secret_load(const struct scheme *s, const char *text, int quoted,
    struct scheme_secret *out, const char **why)
{
	unsigned char fp[8];

	memset(out, 0, sizeof *out);
	if (s->secret_load(text, quoted, out, why) == -1) {
		scheme_secret_wipe(out);
		return -1;
	}
	crypto_generichash(fp, sizeof fp, out->key, out->len, NULL, 0);
	sodium_bin2hex(out->fingerprint, sizeof out->fingerprint, fp, sizeof fp);
	return 0;
}

int
scheme_secret_load(const struct scheme *s, const char *text,
    struct scheme_secret *out, const char **why)
{
	return secret_load(s, text, 0, out, why);
}

int
scheme_secret_load_quoted(const struct scheme *s, const char *text,
    struct scheme_secret *out, const char **why)
{
	return secret_load(s, text, 1, out, why);
}

void
scheme_secret_wipe(struct scheme_secret *k)
{
	sodium_memzero(k, sizeof *k);
}

/* ---- verifying ---- */

const struct scheme *
scheme_recognise(const struct scheme_headers *h)
{
	size_t i;

	for (i = 0; i < NSCHEMES; i++)
		if (schemes[i]->recognise(h))
			return schemes[i];
	return NULL;
}

int
scheme_verify(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_secret *keys, size_t nkeys,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const struct scheme *other;

	memset(res, 0, sizeof *res);
	res->signed_at = -1;
	res->outcome = SCHEME_BAD_SIGNATURE;
	res->why = "not verified";
	if (nkeys == 0) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "no secret configured");
		return -1;
	}
	s->verify(p, keys, nkeys, h, body, body_len, now, res);
	if (res->outcome == SCHEME_MISSING &&
	    (other = scheme_recognise(h)) != NULL && other != s) {
		res->outcome = SCHEME_OTHER;
		res->looks_like = other;
		res->why = "the headers are another provider's";
	}
	return res->outcome == SCHEME_OK || res->outcome == SCHEME_ANSWER ||
	    res->outcome == SCHEME_PING ? 0 : -1;
}

char *
scheme_mismatch(const struct scheme *endpoint, const struct scheme *looks,
    char *out, size_t outsz)
{
	snprintf(out, outsz, "this looks like %s's %s; this endpoint is %s: "
	    "add a [source …] with scheme = %s", looks->title,
	    looks->signature_header, endpoint->title, looks->name);
	return out;
}

/* ---- a delivery's fields ---- */

/* Follow an RFC 6901 pointer through objects and arrays. */
static const cJSON *
pointer(const cJSON *j, const char *ptr)
{
	char tok[128];

	while (j != NULL && *ptr == '/') {
		size_t n = 0;

		ptr++;
		while (*ptr != '\0' && *ptr != '/' && n + 1 < sizeof tok) {
			if (ptr[0] == '~' && ptr[1] == '1') {
				tok[n++] = '/';
				ptr += 2;
			} else if (ptr[0] == '~' && ptr[1] == '0') {
				tok[n++] = '~';
				ptr += 2;
			} else {
				tok[n++] = *ptr++;
			}
		}
		tok[n] = '\0';
		if (cJSON_IsArray(j)) {
			int64_t ix;

			if (util_parse_decimal(tok, n, 1000000, &ix) == -1)
				return NULL;
			j = cJSON_GetArrayItem(j, (int)ix);
		} else {
			j = cJSON_GetObjectItemCaseSensitive(j, tok);
		}
	}
	return *ptr == '\0' ? j : NULL;
}

/* What put() says; scheme_extract says of which field. */
static const char too_long[] = "longer than 256 bytes";
static const char control[] = "holds a control character";

/* Copy v (len bytes) into out, refusing what cannot be kept whole. */
static int
put(char *out, const char *v, size_t len, const char **why)
{
	size_t i;

	if (len >= SCHEME_VALUE_MAX) {
		*why = too_long;
		return -1;
	}
	for (i = 0; i < len; i++)
		if ((unsigned char)v[i] < 0x20 || v[i] == 0x7f) {
			*why = control;
			return -1;
		}
	memcpy(out, v, len);
	out[len] = '\0';
	return 0;
}

/* The body as JSON, for the pointers: NULL when it is not JSON, or
 * holds an escaped NUL (`nul` set: cJSON would cut a value there and
 * "a\u0000x" would read as "a", merging two ids or two objects). */
struct body_json {
	const cJSON	*j;
	int		 nul;
	int		 unread;	/* looked like JSON, cJSON refused it */
};

static int
field(const struct scheme *s, const struct scheme_headers *h,
    const struct body_json *b, const char *header, const char *ptr, char *out,
    const char **why)
{
	const char *v;
	const cJSON *x;
	char num[32];

	out[0] = '\0';
	if (header != NULL && (v = scheme_header(s, h, header)) != NULL)
		return put(out, v, strlen(v), why);
	if (ptr == NULL)
		return 0;
	if (b->nul) {
		*why = "the body holds a \\u0000 escape: its JSON fields cannot "
		    "be read whole";
		return -1;
	}
	if (b->unread) {
		*why = "the body looks like JSON that cannot be read (nested "
		    "too deep?): its fields are left out";
		return 0;
	}
	if (b->j == NULL || (x = pointer(b->j, ptr)) == NULL)
		return 0;
	if (cJSON_IsString(x))
		return put(out, x->valuestring, strlen(x->valuestring), why);
	/* Whole numbers only, below 2^53 (Stripe's created, Slack's
	 * event_time): beyond, a double holds no exact integer and two ids
	 * would read as one. */
	if (cJSON_IsNumber(x) && x->valuedouble >= 0 &&
	    x->valuedouble < 9007199254740992.0 &&
	    x->valuedouble == (double)(int64_t)x->valuedouble) {
		snprintf(num, sizeof num, "%lld", (long long)x->valuedouble);
		return put(out, num, strlen(num), why);
	}
	if (cJSON_IsNull(x))
		return 0;
	*why = "a field is neither a string nor a whole number from 0 to 2^53";
	return -1;
}

/* Where a field is: the source's place when it names one (a pointer when
 * it starts with '/', else a header), or the scheme's pair. */
static int
locate(const struct scheme *s, const struct scheme_headers *h,
    const struct body_json *b, const char *over, const char *header,
    const char *ptr, char *out, const char **why)
{
	if (over != NULL)
		return over[0] == '/' ? field(s, h, b, NULL, over, out, why) :
		    field(s, h, b, over, NULL, out, why);
	return field(s, h, b, header, ptr, out, why);
}

/* Is `over` (NULL) or the default a pointer, so the body must be parsed? */
static int
wants_body(const char *over, const char *ptr)
{
	return over != NULL ? over[0] == '/' : ptr != NULL;
}

int
scheme_extract(const struct scheme *s, const struct scheme_locate *over,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, struct scheme_fields *out, const char **why)
{
	static const struct scheme_locate none;
	struct body_json b = { NULL, 0, 0 };
	cJSON *j = NULL;
	const char *note = NULL;
	int rc = -1;

	if (over == NULL)
		over = &none;
	memset(out, 0, sizeof *out);
	*why = NULL;
	if (wants_body(over->id, s->id_pointer) ||
	    wants_body(over->type, s->type_pointer) ||
	    wants_body(over->time, s->time_pointer) ||
	    wants_body(over->object, s->object_pointer) ||
	    wants_body(over->object_type, s->object_type_pointer)) {
		size_t i = 0;

		b.nul = util_json_has_escaped_nul((const char *)body, body_len);
		if (!b.nul)
			b.j = j = cJSON_ParseWithLength((const char *)body,
			    body_len);
		while (i < body_len && strchr(" \t\r\n", body[i]) != NULL)
			i++;
		b.unread = !b.nul && j == NULL && i < body_len &&
		    (body[i] == '{' || body[i] == '[');
	}
	/* Only the id refuses: cut, it could merge two deliveries.  Any
	 * other field that cannot be kept whole is left out and noted. */
	if (locate(s, h, &b, over->id, s->id_header, s->id_pointer, out->id,
	    why) == 0 && (over->id != NULL || out->id[0] != '\0' ||
	    s->id_header_fallback == NULL || locate(s, h, &b, NULL,
	    s->id_header_fallback, NULL, out->id, why) == 0)) {
		rc = 0;
		note = *why;
		if (locate(s, h, &b, over->type, s->type_header,
		    s->type_pointer, out->type, why) == -1)
			out->type[0] = '\0';
		if (locate(s, h, &b, over->time, s->time_header,
		    s->time_pointer, out->time, why) == -1)
			out->time[0] = '\0';
		if (locate(s, h, &b, over->object, NULL, s->object_pointer,
		    out->object, why) == -1)
			out->object[0] = '\0';
		if (locate(s, h, &b, over->object_type, s->object_type_header,
		    s->object_type_pointer, out->object_type, why) == -1)
			out->object_type[0] = '\0';
		/* "order.updated", "orders/create": the resource alone. */
		out->object_type[strcspn(out->object_type, "./")] = '\0';
		if (*why == too_long || *why == control)
			*why = "a type, time or object that is too long or holds a "
			    "control character is left out";
		if (*why == NULL)
			*why = note;
	} else if (*why == too_long) {
		*why = "the id is longer than 256 bytes";
	} else if (*why == control) {
		*why = "the id holds a control character";
	}
	cJSON_Delete(j);
	return rc;
}

int
scheme_id_signed(const struct scheme *s, const struct scheme_locate *over)
{
	if (over != NULL && over->id != NULL)
		return over->id[0] == '/' && !s->body_unsigned;
	return s->id_header == NULL ? s->id_pointer != NULL &&
	    !s->body_unsigned : s->id_header_signed;
}

const char *
scheme_claimed_id(const struct scheme *s, const struct scheme_locate *over,
    const struct scheme_headers *h)
{
	const char *v;

	if (over != NULL && over->id != NULL)
		return over->id[0] == '/' ? NULL : scheme_header(s, h, over->id);
	if (s->id_header == NULL)
		return NULL;
	if ((v = scheme_header(s, h, s->id_header)) == NULL &&
	    s->id_header_fallback != NULL)
		v = scheme_header(s, h, s->id_header_fallback);
	return v;
}

int
scheme_content_digest(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, unsigned char out[32])
{
	if (s->content_digest != NULL)
		return s->content_digest(p, h, body, body_len, out);
	crypto_hash_sha256(out, body, body_len);
	return 0;
}

char *
scheme_event_key(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_locate *over, const char *name,
    const struct scheme_fields *f, const struct scheme_headers *h,
    const unsigned char *body, size_t body_len, char *out, size_t outsz)
{
	unsigned char sum[crypto_hash_sha256_BYTES];
	char hex[2 * sizeof sum + 1];
	int n;

	if (f->id[0] == '\0') {
		crypto_hash_sha256(sum, body, body_len);
		sodium_bin2hex(hex, sizeof hex, sum, sizeof sum);
		n = snprintf(out, outsz, "%s/sha256:%s", name, hex);
	} else if (scheme_id_signed(s, over)) {
		n = snprintf(out, outsz, "%s/%s", name, f->id);
	} else {
		if (scheme_content_digest(s, p, h, body, body_len, sum) == -1)
			return NULL;
		sodium_bin2hex(hex, sizeof hex, sum, SCHEME_CONTENT_TAG_BYTES);
		n = snprintf(out, outsz, "%s/%s~%s", name, f->id, hex);
	}
	return n < 0 || (size_t)n >= outsz ? NULL : out;
}

/* ---- signing, as each provider's sender does ---- */

int
scheme_signed_add(struct scheme_signed *out, const char *name,
    const char *value)
{
	size_t nl = strlen(name), vl = strlen(value);

	if (out->n == SCHEME_SIGNED_HEADERS_MAX || nl == 0 ||
	    nl >= SCHEME_HEADER_NAME_MAX || vl >= SCHEME_HEADER_VALUE_MAX)
		return -1;
	memcpy(out->h[out->n].name, name, nl + 1);
	memcpy(out->h[out->n].value, value, vl + 1);
	out->n++;
	return 0;
}

const char *
scheme_signed_get(const struct scheme_signed *out, const char *name)
{
	size_t i;

	for (i = 0; i < out->n; i++)
		if (strcasecmp(out->h[i].name, name) == 0)
			return out->h[i].value;
	return NULL;
}

void
scheme_signed_wipe(struct scheme_signed *out)
{
	sodium_memzero(out, sizeof *out);
}

int
scheme_can_sign(const struct scheme *s, const struct scheme_secret *key,
    const char **why)
{
	if (s->sign == NULL) {
		*why = s->unsignable != NULL ? s->unsignable :
		    "this provider cannot be signed here";
		return 0;
	}
	if (key->ed25519) {
		*why = "a whpk_ secret is an Ed25519 public key: the sender signs "
		    "with its private key, which the config never holds";
		return 0;
	}
	return 1;
}

int
scheme_sign(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_secret *key, const unsigned char *body,
    size_t body_len, int64_t timestamp, const char *id, const char *type,
    const char *query, struct scheme_signed *out, const char **why)
{
	char ts[24];
	int rc = -1;

	memset(out, 0, sizeof *out);
	out->content_type = "application/json";
	if (!scheme_can_sign(s, key, why))
		return -1;
	if (timestamp < 0 || timestamp >= TS_MAX) {
		*why = "timestamp out of range";
		return -1;
	}
	*why = "a header would not fit";
	if (query != NULL && (size_t)snprintf(out->query, sizeof out->query,
	    "%s", query) >= sizeof out->query)
		goto out;
	snprintf(ts, sizeof ts, "%lld", (long long)timestamp);
	rc = s->sign(p, key, body != NULL ? body : (const unsigned char *)"",
	    body_len, ts, id, type, out, why);
out:
	if (rc == -1) {
		scheme_signed_wipe(out);
		out->content_type = "application/json";
	}
	return rc;
}

/* ---- samples ---- */

const char *
scheme_sample_id(const struct scheme *s, char *out)
{
	char hex[25];

	if (s->sample_id != NULL) {
		s->sample_id(out);
		return out;
	}
	sample_hex(hex, 12, 0);
	snprintf(out, SCHEME_SAMPLE_ID_SIZE, "msg_%s", hex);
	return out;
}

int
scheme_sample_body(const struct scheme *s, const char *id, int64_t now,
    int64_t size, struct buf *body)
{
	return (s->sample_body != NULL ? s->sample_body :
	    scheme_standard.sample_body)(id, now, size, body);
}

/* ---- a delivery as the inbox keeps it ---- */

/* An event time as a provider writes it: Unix seconds (Stripe's created,
 * Slack's event_time) or an ISO-8601 instant (Shopify, Paddle); "" none.
 * 0, or -1 when it is neither. */
static int
instant_of(const char *t, char out[INSTANT_SIZE])
{
	int64_t sec;

	out[0] = '\0';
	if (t[0] == '\0')
		return 0;
	if (util_parse_decimal(t, strlen(t), INT64_MAX / 1000000000, &sec) == 0)
		return instant_format(sec * 1000000000, out);
	return instant_parse(t, strlen(t), out);
}

/* *dst = a copy of v ("" or NULL: NULL), the old one freed; 0 or -1. */
static int
own(char **dst, const char *v)
{
	free(*dst);
	*dst = NULL;
	return v == NULL || v[0] == '\0' || (*dst = strdup(v)) != NULL ? 0 : -1;
}

/* The time `t` as the event's clock, or a note when it is not one. */
static int
set_time(struct event_fields *f, const char *t)
{
	if (own(&f->created_at_raw, t) == -1)
		return -1;
	if (instant_of(t, f->created_at) == -1) {
		f->created_at[0] = '\0';
		f->note = "the event time is neither Unix seconds nor an "
		    "ISO-8601 instant: ordered by arrival";
	}
	return 0;
}

/* The object type a named source keeps: "NAME/" + the resource, or NAME
 * when the provider gives none (ids unique across its types). */
static int
source_object_type(struct event_fields *f, const char *source,
    const char *resource)
{
	char *t = NULL;

	if (resource == NULL || resource[0] == '\0')
		t = strdup(source);
	else if (asprintf(&t, "%s/%s", source, resource) == -1)
		t = NULL;
	free(f->object_type);
	f->object_type = t;
	return t == NULL ? -1 : 0;
}

int
scheme_event_read(const struct scheme *s, const struct scheme_params *p,
    const struct scheme_locate *over, const char *source,
    const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, struct scheme_event *ev, const char **why)
{
	static const struct scheme_locate none;
	struct scheme_fields sf;
	struct event_fields *f = &ev->fields;
	const char *note = NULL;
	int rc = -1;

	memset(ev, 0, sizeof *ev);
	if (over == NULL)
		over = &none;
	if (scheme_extract(s, over, h, body, body_len, &sf, why) == -1)
		return -1;
	note = *why;
	*why = "out of memory";
	rc = -2;
	memcpy(ev->id, sf.id, sizeof ev->id);
	if ((source == NULL ? (size_t)snprintf(ev->key, sizeof ev->key, "%s",
	    sf.id) >= sizeof ev->key : scheme_event_key(s, p, over, source, &sf,
	    h, body, body_len, ev->key, sizeof ev->key) == NULL))
		goto out;
	/* The provider's own reading of its body, then the section's. */
	if (s->fields != NULL) {
		if (s->fields(h, sf.id, body, body_len, f) == -1)
			goto out;
		if (source != NULL && f->object_id != NULL &&
		    source_object_type(f, source, f->object_type) == -1)
			goto out;
	} else {
		if (own(&f->type, sf.type) == -1 || set_time(f, sf.time) == -1)
			goto out;
		if (sf.object[0] != '\0' && (own(&f->object_id, sf.object) == -1 ||
		    source_object_type(f, source != NULL ? source :
		    INBOX_DEFAULT_SOURCE, sf.object_type) == -1))
			goto out;
	}
	if (s->fields != NULL && over->type != NULL &&
	    own(&f->type, sf.type) == -1)
		goto out;
	if (s->fields != NULL && over->time != NULL && set_time(f, sf.time) == -1)
		goto out;
	if (s->fields != NULL && over->object != NULL &&
	    (own(&f->object_id, sf.object) == -1 || (sf.object[0] != '\0' &&
	    source_object_type(f, source != NULL ? source :
	    INBOX_DEFAULT_SOURCE, sf.object_type) == -1)))
		goto out;
	if (f->note == NULL)
		f->note = note;
	*why = NULL;
	rc = 0;
out:
	return rc;
}

void
scheme_event_free(struct scheme_event *ev)
{
	event_fields_free(&ev->fields);
}
