/*
 * woocommerce: WooCommerce's webhooks (woocommerce/woocommerce,
 * plugins/woocommerce/includes/class-wc-webhook.php: deliver,
 * get_new_delivery_id, generate_signature, deliver_ping, failed_delivery;
 * includes/admin/class-wc-admin-webhooks.php).
 *
 * X-WC-Webhook-Delivery-ID is a hash of the webhook's id and the current
 * second: two deliveries of one webhook within one second share it, and
 * there is no event id.  It is not signed (X-WC-Webhook-Signature is the
 * body's HMAC-SHA256, base64), so the inbox keys it with its content.
 * WooCommerce never sends again: 200–302 is success, and the seventh
 * failure in a row disables the webhook.  Object ids are per resource
 * (X-WC-Webhook-Resource: order, customer, product, coupon); the clock
 * is date_modified_gmt.  The secret, wp_generate_password(50, true,
 * true), may hold a space and any of !@#$%^&*()-_ []{}<>~`+=,.;:/?|.
 */
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static int
woo_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-WC-Webhook-Signature") != NULL;
}

/*
 * WooCommerce signs with wp_specialchars_decode(secret, ENT_QUOTES)
 * (WC_Webhook::generate_signature): the text its settings page shows is
 * the stored secret, and these entities in it become one byte each before
 * the HMAC.  One pass, as PHP's strtr: "&amp;lt;" is "&lt;", not "<".
 * Decimal forms with any leading zeros, hex forms ("&#x27;", 'x' and the
 * digits in any case) for the quote, double quote and ampersand only, as
 * WordPress's table has them.
 */
static size_t
woo_entity(const char *t, char *out)
{
	static const struct { const char *name; char c; } named[] = {
		{ "&quot;", '"' }, { "&lt;", '<' }, { "&gt;", '>' },
		{ "&amp;", '&' },
	};
	static const struct { const char *digits; char c; int hex; } num[] = {
		{ "39", '\'', 0 }, { "34", '"', 0 }, { "60", '<', 0 },
		{ "62", '>', 0 }, { "38", '&', 0 }, { "27", '\'', 1 },
		{ "22", '"', 1 }, { "26", '&', 1 },
	};
	size_t i, n;
	int hex;

	for (i = 0; i < sizeof named / sizeof named[0]; i++)
		if (strncmp(t, named[i].name, strlen(named[i].name)) == 0) {
			*out = named[i].c;
			return strlen(named[i].name);
		}
	if (strncmp(t, "&#", 2) != 0)
		return 0;
	hex = t[2] == 'x' || t[2] == 'X';
	n = hex ? 3 : 2;
	while (t[n] == '0')
		n++;
	for (i = 0; i < sizeof num / sizeof num[0]; i++)
		if (num[i].hex == hex && strncmp(t + n, num[i].digits, 2) == 0 &&
		    t[n + 2] == ';') {
			*out = num[i].c;
			return n + 3;
		}
	return 0;
}

static int
woo_secret(const char *text, int quoted, struct scheme_secret *out,
    const char **why)
{
	size_t i, o = 0, used;

	if (scheme_raw_secret(text, quoted, out, why) == -1)
		return -1;
	for (i = 0; text[i] != '\0'; i += used ? used : 1)
		if ((used = woo_entity(text + i, (char *)&out->key[o])) == 0)
			out->key[o++] = (unsigned char)text[i];
		else
			o++;
	sodium_memzero(out->key + o, out->len - o);
	out->len = o;
	return 0;
}

/* Is the body exactly "webhook_id=" and 1..20 digits? */
static int
woo_ping(const unsigned char *body, size_t len)
{
	size_t i;

	if (len <= 11 || len > 11 + 20 || memcmp(body, "webhook_id=", 11) != 0)
		return 0;
	for (i = 11; i < len; i++)
		if (body[i] < '0' || body[i] > '9')
			return 0;
	return 1;
}

static void
woo_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	const char *hv = scheme_hget(h, "X-WC-Webhook-Signature");

	(void)p;
	(void)now;
	if (hv == NULL) {
		if (woo_ping(body, body_len)) {
			/* Nothing is stored, so nothing is trusted: the ping
			 * only lets WooCommerce save the webhook. */
			scheme_refuse(res, SCHEME_PING, "WooCommerce's creation ping");
			return;
		}
		scheme_refuse(res, SCHEME_MISSING, "X-WC-Webhook-Signature is required");
		return;
	}
	scheme_body_mac_verify(keys, nkeys, hv, "", SCHEME_SHA256, SCHEME_BASE64,
	    body, body_len, res);
}

/* The topic ("order.updated") and its two halves, as deliver() sends. */
static int
woo_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	struct part part = { body, body_len };
	char v[SCHEME_HEADER_VALUE_MAX], res[SCHEME_HEADER_VALUE_MAX];
	size_t rl;

	(void)p;
	(void)ts;
	(void)why;
	if (scheme_encoded_mac(SCHEME_SHA256, SCHEME_BASE64, key, &part, 1, "",
	    v) == -1 ||
	    scheme_signed_add(out, "X-WC-Webhook-Signature", v) == -1 ||
	    scheme_signed_opt(out, "X-WC-Webhook-Delivery-ID", id) == -1 ||
	    scheme_signed_opt(out, "X-WC-Webhook-Topic", type) == -1)
		return -1;
	if (type == NULL || strchr(type, '.') == NULL)
		return 0;
	if ((rl = strcspn(type, ".")) >= sizeof res)
		return -1;
	memcpy(res, type, rl);
	res[rl] = '\0';
	if (scheme_signed_add(out, "X-WC-Webhook-Resource", res) == -1 ||
	    scheme_signed_add(out, "X-WC-Webhook-Event", type + rl + 1) == -1)
		return -1;
	return 0;
}

static void
woo_sample_id(char *out)
{
	sample_hex(out, 16, 0);
}

static int
woo_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject();
	char when[32];
	int rc = -1;

	sample_rfc3339(now, when);
	when[19] = '\0';	/* WooCommerce's _gmt fields carry no zone */
	if (ev == NULL || cJSON_AddStringToObject(ev, "id", id) == NULL ||
	    cJSON_AddStringToObject(ev, "status", "webhook-inbox-test") == NULL ||
	    cJSON_AddStringToObject(ev, "date_modified_gmt", when) == NULL)
		goto out;
	rc = sample_padded_json(ev, ev, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_woocommerce = {
	.name = "woocommerce",
	.title = "WooCommerce",
	.signature_header = "X-WC-Webhook-Signature",
	.id_header = "X-WC-Webhook-Delivery-ID",
	.type_header = "X-WC-Webhook-Topic",
	.time_pointer = "/date_modified_gmt",
	.object_pointer = "/id",
	.object_type_header = "X-WC-Webhook-Resource",
	.recognise = woo_recognise,
	.secret_load = woo_secret,
	.verify = woo_verify,
	.sign = woo_sign,
	.sample_id = woo_sample_id,
	.sample_body = woo_sample_body,
};
