/*
 * scheme: the providers a shop or a developer gets webhooks from
 * (docs/providers.md), one file each in lib/scheme/, reached
 * through one table of operations filled with designated initialisers,
 * as lib/store/engine.h is for the store's engines and curl's
 * Curl_handler for its protocols.  A provider's file holds all it knows:
 * which headers its deliveries carry, how its secret is written, what is
 * signed and how (to verify and to sign), the synchronous answers it
 * wants, where its id, type, time and object are, and its sample event.
 * The default source (the config's top-level keys) is the `standard`
 * provider like any other.  Adding a provider is one file, one row in
 * lib/scheme/scheme.c's list, and its vectors.
 *
 * This layer takes a delivery's headers (through a lookup callback), its
 * query string, its body and the clock, and says whether one of the
 * configured secrets signed it, what it holds and under which key the
 * inbox keeps it.  It reads no config and stores nothing.
 *
 * Cryptography: libsodium for HMAC-SHA256/512, SHA-256, BLAKE2b and
 * Ed25519; Nettle (GnuTLS's, nettle-dev) for HMAC-SHA1, which libsodium
 * lacks and Twilio and the generic scheme need.  Nettle rather than
 * OpenSSL's libcrypto: the static receiver takes 41 small members of
 * libnettle.a (hmac, sha1, and the CPU dispatch of Debian's "fat" build,
 * which brings its AES and GHASH variants along; build-static/LINKED.txt),
 * where libcrypto's HMAC goes through its EVP provider machinery and the
 * DSO loader the Makefile's static section keeps out of the receiver.
 * Every MAC is compared in constant time after a strict, length-checked
 * decoding.
 */
#ifndef WEBHOOK_SCHEME_H
#define WEBHOOK_SCHEME_H

#include <stddef.h>
#include <stdint.h>

#include "lib/common/util.h"
#include "lib/store/event.h"

/* Largest secret, bytes, as the provider shows it (Stripe's whsec_ text is
 * 38, Paddle's pdl_ntfset_… about 70, GitHub's is the user's choice):
 * room to spare, and one bound for every copy of a key. */
#define SCHEME_SECRET_MAX	256
/* Secrets tried per delivery (a rotation needs two or three). */
#define SCHEME_SECRETS_MAX	8
/* Entries of a multi-signature header looked at (Stripe's v1=, Paddle's
 * h1=): one per active secret; more is not a sender's. */
#define SCHEME_ENTRIES_MAX	32
/* Parameters of a Twilio form body: a message or a call carries 20–40. */
#define SCHEME_FORM_PARAMS_MAX	256
/* A synchronous answer (Slack's challenge, Discord's PONG), bytes + NUL. */
#define SCHEME_ANSWER_MAX	256
/* Extracted values (id, type, time, object key), bytes + NUL: an id of
 * up to 256 bytes (Standard Webhooks' webhook-id, receive.h's
 * WEBHOOK_ID_MAX); longer is refused, never cut. */
#define SCHEME_VALUE_MAX	257
/* Default tolerance of signed timestamps, seconds, both directions. */
#define SCHEME_TOLERANCE	300

/* Providers in the table, at most (scheme_at). */
#define SCHEME_MAX		32

enum scheme_alg { SCHEME_SHA1 = 1, SCHEME_SHA256, SCHEME_SHA512 };
enum scheme_encoding { SCHEME_HEX = 1, SCHEME_BASE64 };

/*
 * A delivery's headers: get(arg, name) returns the value of the HTTP
 * header `name` (as providers spell it, "Stripe-Signature"; the lookup
 * ignores case), NUL-terminated, or NULL when absent.  Values stay valid
 * for the call they were given in.  Repeated headers come joined as the
 * web server joins them.
 */
struct scheme_headers {
	const char	*(*get)(void *arg, const char *name);
	void		*arg;
	/* The request's query string as it arrived (CGI's QUERY_STRING,
	 * without '?'), or NULL: Twilio signs the URL it called, and for a
	 * JSON body it adds bodySHA256=<hex> there (docs/providers.md). */
	const char	*query;
};

/*
 * What a source may set beside its scheme (all optional but the generic
 * scheme's header and algorithm).  scheme_params_init fills the defaults;
 * strings are borrowed, never freed here.
 */
struct scheme_params {
	/* The generic `hmac` scheme: the signature header, a prefix before
	 * the MAC ("sha256="), its algorithm and encoding, and an optional
	 * timestamp header whose value is signed before the body, joined by
	 * `separator` (NULL: "."). */
	const char		*header;
	const char		*prefix;
	enum scheme_alg		 alg;
	enum scheme_encoding	 encoding;
	const char		*timestamp_header;
	const char		*separator;
	/* Seconds a signed timestamp may differ from now, either way; 0 turns
	 * the check off (Discord signs a timestamp but sets no window). */
	int64_t			 tolerance;
	/* Twilio signs the URL it was given, query string included: the
	 * receiver's public URL for this source (docs/providers.md). */
	const char		*url;
};

/* One configured secret, decoded as its scheme reads it. */
struct scheme_secret {
	unsigned char	key[SCHEME_SECRET_MAX];	/* wiped by scheme_secret_wipe */
	size_t		len;
	int		ed25519;	/* a public key (Discord; standard whpk_) */
	/* First 8 bytes of BLAKE2b(key), hex: names the secret in logs
	 * without revealing it (as signature.h's). */
	char		fingerprint[17];
};

enum scheme_outcome {
	SCHEME_OK = 0,		/* verified: store it */
	SCHEME_ANSWER,		/* verified, and the provider wants `answer`
				 * back now, not stored (Slack's
				 * url_verification, Discord's PING) */
	SCHEME_PING,		/* an unsigned set-up ping a provider sends
				 * before it has a secret to sign with
				 * (WooCommerce's "webhook_id=N"): 200, not
				 * stored */
	SCHEME_MISSING,		/* the scheme's headers are absent or empty */
	SCHEME_OTHER,		/* absent, and the headers are another
				 * scheme's: `looks_like` says whose */
	SCHEME_MALFORMED,	/* a header is there but not in the scheme's
				 * form (a timestamp that is no integer…) */
	SCHEME_STALE,		/* the signed timestamp is outside tolerance */
	SCHEME_BAD_SIGNATURE	/* nothing verifies under any secret */
};

struct scheme_result {
	enum scheme_outcome	 outcome;
	/* A static reason for every outcome but SCHEME_OK; names headers,
	 * never contains a byte of the request or a secret. */
	const char		*why;
	size_t			 key_index;	/* the secret that verified */
	int64_t			 signed_at;	/* the signed timestamp, or -1 */
	const struct scheme	*looks_like;	/* for SCHEME_OTHER */
	/* SCHEME_ANSWER: the body to answer with and its Content-Type;
	 * answer_type NULL: no body at all, 204 No Content (Discord's
	 * Webhook Events PING). */
	char			 answer[SCHEME_ANSWER_MAX];
	const char		*answer_type;
};

/* The scheme called `name` (exact, lower case), or NULL. */
const struct scheme *scheme_find(const char *name);
/* The i-th scheme of the table (the default source's `standard` first),
 * or NULL past the last: `for (i = 0; (s = scheme_at(i)); i++)`. */
const struct scheme *scheme_at(size_t i);

/*
 * Fill `p` with scheme s's defaults (its tolerance; for `hmac`, sha256,
 * hex and "." — the header stays NULL and must be set).
 */
void	scheme_params_init(const struct scheme *s, struct scheme_params *p);
/*
 * Is `p` complete for s?  `hmac` needs a header; Twilio a URL that starts
 * with http:// or https://.  Returns 0, or -1 with *why static.
 */
int	scheme_params_check(const struct scheme *s, const struct scheme_params *p,
	    const char **why) __attribute__((warn_unused_result));

/*
 * Take one configured secret exactly as the provider's dashboard shows it
 * (docs/providers.md "Secrets"), in the form its provider's file reads:
 * Stripe's whole whsec_… text is the key, Standard Webhooks' whsec_ +
 * base64 is decoded, an API key pasted instead is refused by name, and so
 * is a standard or stripe secret pasted with the signature header's label
 * ("v1,whsec_…").  Any NUL-free text of 1..SCHEME_SECRET_MAX bytes is a
 * secret there; a leading or trailing space or tab is refused (a paste
 * mistake: the message says to quote the value when the blank is the
 * secret's).  Returns 0 and fills *out, or -1 with *why static (never
 * containing the secret) and *out wiped.
 */
int	scheme_secret_load(const struct scheme *s, const char *text,
	    struct scheme_secret *out, const char **why)
	    __attribute__((warn_unused_result));
/*
 * The same for the content of a quoted value (docs/DESIGN.md
 * "Configuration", config_unquote): its leading and trailing blanks are
 * the secret's (WooCommerce's wp_generate_password makes such secrets),
 * so they are kept.
 */
int	scheme_secret_load_quoted(const struct scheme *s, const char *text,
	    struct scheme_secret *out, const char **why)
	    __attribute__((warn_unused_result));
void	scheme_secret_wipe(struct scheme_secret *k);

/*
 * Verify one delivery for scheme s: `keys[0..nkeys)` loaded for s
 * (nkeys ≤ SCHEME_SECRETS_MAX), the body as received, `now` in Unix
 * seconds.  Fills *res; returns 0 for SCHEME_OK, SCHEME_ANSWER and
 * SCHEME_PING (the delivery is answered 2xx), -1 for the refusals.
 * When the scheme's own headers are absent, recognition names another
 * scheme whose headers are there (SCHEME_OTHER).
 */
int	scheme_verify(const struct scheme *s, const struct scheme_params *p,
	    const struct scheme_secret *keys, size_t nkeys,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, int64_t now, struct scheme_result *res)
	    __attribute__((warn_unused_result));

/*
 * The scheme whose signature header this delivery carries, or NULL; the
 * generic `hmac` scheme is never recognised (its header is configured).
 * When several match (a sender that sends two), the table's order decides.
 */
const struct scheme *scheme_recognise(const struct scheme_headers *h);

/*
 * The line that refuses a delivery of scheme `looks` at an endpoint of
 * scheme `endpoint`, into out (cut to outsz, NUL-terminated): "this looks
 * like Stripe's Stripe-Signature; this endpoint is Standard Webhooks: add a
 * [source …] with scheme = stripe".  Returns out.
 */
char	*scheme_mismatch(const struct scheme *endpoint,
	    const struct scheme *looks, char *out, size_t outsz);

/* What scheme_extract found; each value NUL-terminated, "" when absent. */
struct scheme_fields {
	char	id[SCHEME_VALUE_MAX];
	/* The object's resource type, cut at its first '.' or '/' ("order"
	 * of "order.updated"); "" when the scheme and section name none. */
	char	object_type[SCHEME_VALUE_MAX];
	char	type[SCHEME_VALUE_MAX];
	char	time[SCHEME_VALUE_MAX];	/* as sent: Unix seconds or RFC 3339 */
	char	object[SCHEME_VALUE_MAX];
};

/*
 * Where a source finds a field instead of its scheme's default
 * (docs/providers.md "Fields"): an HTTP header's name ("X-Request-Id"),
 * or, starting with '/', a JSON pointer into the body (RFC 6901,
 * "/data/object/id").  NULL: the scheme's default.  Borrowed strings.
 */
struct scheme_locate {
	const char	*id, *type, *time, *object, *object_type;
};

/*
 * Is the id scheme_extract reads for s (with `over`, NULL: none) covered
 * by the signature?  1 when it is read from the body (every scheme signs
 * its body) or from a header the scheme signs (Standard Webhooks'
 * webhook-id); 0 when it comes from a header outside the signed bytes
 * (GitHub's X-GitHub-Delivery, WooCommerce's X-WC-Webhook-Delivery-ID…):
 * then the id alone does not prove two deliveries are one event
 * (docs/providers.md "Ids").
 */
int	scheme_id_signed(const struct scheme *s, const struct scheme_locate *over);

/*
 * The id a delivery of s claims in a header (the section's `id =` header,
 * else the provider's id header), before anything is verified: for a
 * refusal's log line.  NULL when the id is in the body or absent.  The
 * value is the request's (valid while it is).
 */
const char *scheme_claimed_id(const struct scheme *s,
	    const struct scheme_locate *over, const struct scheme_headers *h);

/* Bytes of a content tag in an event key: the first 8 of the signed
 * content's SHA-256, as 16 lowercase hex digits (scheme_event_key). */
#define SCHEME_CONTENT_TAG_BYTES	8

/*
 * The inbox id of a verified delivery of source `name` (scheme s, its
 * section's `over`), whose fields scheme_extract gave in f
 * (docs/providers.md "Ids"); the rule is that a duplicate is only ever a
 * delivery that is provably the same event:
 *   - the signature covers the id (scheme_id_signed): "NAME/" + the id;
 *   - it does not (a header outside the signed bytes): "NAME/" + the id +
 *     "~" + SCHEME_CONTENT_TAG_BYTES of scheme_content_digest in hex, so
 *     the same id with other content is another event (WooCommerce's
 *     per-second ids, GitHub's GUID shared by the hooks of one event, a
 *     captured delivery replayed under a future id) and a true resend
 *     still one;
 *   - no id: "NAME/sha256:" + the body's SHA-256 in hex.
 * Into out (outsz bytes, at least INBOX_SOURCE_MAX + SCHEME_VALUE_MAX +
 * 90 to hold any).  Returns out, or NULL when out of memory or out is too
 * small.
 */
char	*scheme_event_key(const struct scheme *s, const struct scheme_params *p,
	    const struct scheme_locate *over, const char *name,
	    const struct scheme_fields *f, const struct scheme_headers *h,
	    const unsigned char *body, size_t body_len, char *out,
	    size_t outsz);

/* An inbox id's room, bytes + NUL: a source's name, '/', an id, '~' and
 * a content tag, or "sha256:" and a digest (scheme_event_key). */
#define SCHEME_KEY_MAX		(32 + 1 + SCHEME_VALUE_MAX + 72)

/* A verified delivery as the inbox keeps it (scheme_event_read). */
struct scheme_event {
	char			 id[SCHEME_VALUE_MAX];	/* the provider's; "" */
	char			 key[SCHEME_KEY_MAX];	/* the inbox id */
	struct event_fields	 fields;	/* owned: scheme_event_free */
};

/*
 * Read a verified delivery of provider s as the inbox keeps it: its id
 * and key (scheme_event_key), its type, its time as the event clock,
 * its object (docs/DESIGN.md "Sources").  `source` is the section's NAME,
 * or NULL for the default source, whose key is the bare id and whose
 * object is the bare type and id (as the inbox has always kept them);
 * a named source's object type is "NAME/" + the provider's resource
 * ("woo/order"), or NAME where the provider's ids are unique across
 * types.  The provider's own `fields` (Standard Webhooks') first, then
 * the section's `over` places; a type, time or object that cannot be
 * kept whole is left out and noted in ev->fields.note.
 * Returns 0; -1 with *why static when the id cannot be read whole (400:
 * cut, it could merge two events); -2 when out of memory (503).  ev is
 * initialised either way: scheme_event_free it.
 */
int	scheme_event_read(const struct scheme *s, const struct scheme_params *p,
	    const struct scheme_locate *over, const char *source,
	    const struct scheme_headers *h, const unsigned char *body,
	    size_t body_len, struct scheme_event *ev, const char **why)
	    __attribute__((warn_unused_result));
void	scheme_event_free(struct scheme_event *ev);

/*
 * The SHA-256 of the signed content of a delivery of scheme s, into out:
 * two deliveries with the same digest carry the same signed content,
 * whatever the encoding (a Twilio form's parameters reordered); the
 * body's own SHA-256 for every scheme that signs its bytes.  0, or -1
 * when out of memory.
 */
int	scheme_content_digest(const struct scheme *s,
	    const struct scheme_params *p, const struct scheme_headers *h,
	    const unsigned char *body, size_t body_len, unsigned char out[32])
	    __attribute__((warn_unused_result));

/*
 * The fields of a verified delivery: where `over` (NULL: none) names a
 * place, from there only; else scheme s's defaults, each from its header
 * when the scheme names one and it is present, else from the JSON body at
 * its pointer (a string, or an integer written in decimal).
 * Returns 0, or -1 with *why static when the id is longer than
 * SCHEME_VALUE_MAX - 1 or holds a control byte (never cut: an id that
 * loses its tail would merge deliveries).  Any other field that cannot be
 * kept whole is left "" and returns 0 with *why set to a static note
 * (else *why is NULL): a delivery is never refused for its type, time or
 * object.  A body that is not JSON just yields nothing from pointers.
 */
int	scheme_extract(const struct scheme *s, const struct scheme_locate *over,
	    const struct scheme_headers *h,
	    const unsigned char *body, size_t body_len, struct scheme_fields *out,
	    const char **why) __attribute__((warn_unused_result));

/* ---- signing, as each provider's sender does ---- */

/* Headers a signed delivery carries: the most any scheme sends (GitHub:
 * two signatures, delivery, event) and a source's own id and type
 * headers (scheme_signed_add). */
#define SCHEME_SIGNED_HEADERS_MAX	10
/* The Admin API version send --source shopify names (X-Shopify-API-Version):
 * a stable one Shopify supported when this was written. */
#define SCHEME_SHOPIFY_API_VERSION	"2025-10"
/* A header's name, bytes + NUL: the providers' are < 40; a configured
 * one (hmac's header) longer is refused. */
#define SCHEME_HEADER_NAME_MAX		64
/* A header's value, bytes + NUL: HMAC-SHA512 in base64 is 88, GitLab's
 * token is a whole secret (SCHEME_SECRET_MAX), an hmac prefix is the
 * config's; longer is refused, never cut. */
#define SCHEME_HEADER_VALUE_MAX		512

struct scheme_signed {
	struct {
		char	name[SCHEME_HEADER_NAME_MAX];
		char	value[SCHEME_HEADER_VALUE_MAX];
	}		 h[SCHEME_SIGNED_HEADERS_MAX];
	size_t		 n;
	/* The body's type as the provider sends it: Twilio's form bodies
	 * application/x-www-form-urlencoded, the rest (and Twilio's
	 * bodySHA256 bodies) application/json.  Static. */
	const char	*content_type;
	/* The query string the sender's request must carry (without '?'),
	 * "" for the URL's own: Twilio appends bodySHA256=<hex> for a JSON
	 * body and signs that. */
	char		 query[SCHEME_HEADER_VALUE_MAX];
};

/*
 * Can scheme s sign with key?  1, or 0 with *why static: Discord's and a
 * standard whpk_ key are Ed25519 public keys — the provider signs with a
 * private key the config never holds.
 */
int	scheme_can_sign(const struct scheme *s, const struct scheme_secret *key,
	    const char **why);

/*
 * Sign body (body_len bytes) as scheme s's sender does, with one secret
 * loaded for s (scheme_secret_load) and p (scheme_params_init plus the
 * source's keys; scheme_params_check'ed), at `timestamp` (Unix seconds;
 * signed where the scheme signs a time, and Shopify's
 * X-Shopify-Triggered-At), as delivery `id` and of event `type` where
 * the scheme sends them in headers (NULL: header left out; `standard`
 * requires an id), to a URL whose query string is `query` (NULL: none;
 * Twilio signs it, and out->query says what it must become).  The
 * headers, each provider's file says which, in its order, go into *out:
 * Returns 0, or -1 with *why static (never holding a byte of the secret)
 * and *out emptied: a key that cannot sign (scheme_can_sign), a value
 * that would not fit, a Twilio body that does not match its URL.
 * *out may hold the secret (GitLab's token): scheme_signed_wipe it.
 */
int	scheme_sign(const struct scheme *s, const struct scheme_params *p,
	    const struct scheme_secret *key, const unsigned char *body,
	    size_t body_len, int64_t timestamp, const char *id,
	    const char *type, const char *query, struct scheme_signed *out,
	    const char **why) __attribute__((warn_unused_result));

/* Append one more header (a source's configured id or type header).
 * 0, or -1 when full or a name or value does not fit. */
int	scheme_signed_add(struct scheme_signed *out, const char *name,
	    const char *value) __attribute__((warn_unused_result));

/* The value of header `name` (case ignored) in *out, or NULL. */
const char *scheme_signed_get(const struct scheme_signed *out,
	    const char *name);

void	scheme_signed_wipe(struct scheme_signed *out);


/* ---- one provider: its row of the table ---- */

/*
 * What a provider's file in lib/scheme/ fills in, with
 * designated initialisers; lib/scheme/scheme.c's list names each once.
 * NULL members take the behaviour their comment gives; the rest are
 * required (tests/test_scheme.c checks every row).
 */
struct scheme {
	const char	*name;		/* the config's `scheme = NAME` */
	const char	*title;		/* for people: "Stripe" */
	const char	*signature_header; /* what recognition names */
	/* Where the defaults are: a header (HTTP name) or a JSON pointer
	 * (RFC 6901) into the body; NULL when the provider has none. */
	const char	*id_header, *id_pointer;
	const char	*type_header, *type_pointer;
	const char	*time_header, *time_pointer;
	const char	*object_pointer;
	/* The object's resource type, where the provider's object ids are
	 * per type (WooCommerce's order 2200 and customer 2200): a header,
	 * else a pointer; the value's part before its first '.' or '/'
	 * ("order.updated" -> "order").  NULL both: ids are unique across
	 * types (Stripe's cus_…, Paddle's ctm_…) or carry it (Shopify's
	 * gid://shopify/Order/…). */
	const char	*object_type_header, *object_type_pointer;
	/* Does the signature cover id_header?  Only Standard Webhooks signs
	 * its id; every other provider's id header lies outside the signed
	 * bytes, so it alone proves nothing (scheme_id_signed). */
	int		 id_header_signed;
	/* A second id header, read when id_header is absent (Shopify's
	 * X-Shopify-Webhook-Id behind its X-Shopify-Event-Id). */
	const char	*id_header_fallback;
	int64_t		 tolerance;	/* default; 0: no timestamp window */

	/* Is this delivery of this provider (its signature header there)? */
	int		(*recognise)(const struct scheme_headers *h);
	/* A header of this provider's by the name the table and the
	 * section use, under the other names its senders give it (Svix's
	 * svix-*, Shopify's without X-); NULL: as named. */
	const char	*(*header)(const struct scheme_headers *h,
			    const char *name);
	/* As scheme_secret_load (quoted 0) or scheme_secret_load_quoted
	 * (1), for this provider's secrets. */
	int		(*secret_load)(const char *text, int quoted,
			    struct scheme_secret *out, const char **why);
	/* What this provider needs of a section beyond the common keys
	 * (Twilio's url, hmac's header), as scheme_params_check; NULL:
	 * nothing. */
	int		(*params_check)(const struct scheme_params *p,
			    const char **why);
	/* As scheme_verify, once the secrets are known to be this
	 * provider's; res comes zeroed with outcome BAD_SIGNATURE. */
	void		(*verify)(const struct scheme_params *p,
			    const struct scheme_secret *keys, size_t nkeys,
			    const struct scheme_headers *h,
			    const unsigned char *body, size_t body_len,
			    int64_t now, struct scheme_result *res);
	/* The SHA-256 of what the signature covers, in a form that two
	 * encodings of the same signed content share (Twilio's form: its
	 * sorted, decoded parameters); NULL: the body's bytes.  0, or -1
	 * when out of memory. */
	int		(*content_digest)(const struct scheme_params *p,
			    const struct scheme_headers *h,
			    const unsigned char *body, size_t body_len,
			    unsigned char out[32]);
	/* The fields as this provider shapes its delivery, where the
	 * defaults above cannot say it all (Standard Webhooks' createdAt,
	 * data.object, data.object_truncated and relays: lib/store/event.c;
	 * Mercado Pago's signed data.id in the query), for the delivery
	 * `id`; NULL: the defaults.  Fills *f (event_fields_free); 0, or -1
	 * when out of memory. */
	int		(*fields)(const struct scheme_headers *h, const char *id,
			    const unsigned char *body, size_t len,
			    struct event_fields *f);
	/* Is the body outside the signature?  Only Mercado Pago signs no
	 * body (its manifest is data.id, the request id and ts): an id read
	 * from its body proves nothing (scheme_id_signed). */
	int		 body_unsigned;

	/* Sign as this provider's sender does (scheme_sign's contract);
	 * NULL: the config cannot sign for it, `unsignable` says why. */
	int		(*sign)(const struct scheme_params *p,
			    const struct scheme_secret *key,
			    const unsigned char *body, size_t body_len,
			    const char *ts, const char *id, const char *type,
			    struct scheme_signed *out, const char **why);
	const char	*unsignable;
	/* A new id as this provider writes them (evt_…, a UUID), into out
	 * (SCHEME_SAMPLE_ID_SIZE); NULL: "msg_" + 24 hex digits. */
	void		(*sample_id)(char *out);
	/* Its sample event for `send --source` and `check`: a body shaped
	 * like its events, of event type SCHEME_SAMPLE_TYPE, as delivery
	 * `id` at `now` (Unix seconds), grown to `size` bytes when shorter;
	 * appended to body.  NULL: Standard Webhooks' shape.  0, or -1. */
	int		(*sample_body)(const char *id, int64_t now, int64_t size,
			    struct buf *body);
};

/* A sample id's room, bytes + NUL. */
#define SCHEME_SAMPLE_ID_SIZE	64
/* The event type every sample event carries: a handler can tell a test
 * from a real event by it. */
#define SCHEME_SAMPLE_TYPE	"webhook_inbox.test"

/*
 * A new id as scheme s's sender writes them, into out
 * (SCHEME_SAMPLE_ID_SIZE).  Returns out.
 */
const char *scheme_sample_id(const struct scheme *s, char *out);
/*
 * Scheme s's sample event (struct scheme, sample_body) appended to body:
 * 0, or -1 when out of memory or past body's cap.
 */
int	scheme_sample_body(const struct scheme *s, const char *id, int64_t now,
	    int64_t size, struct buf *body) __attribute__((warn_unused_result));

#endif
