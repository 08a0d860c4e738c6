/*
 * sender: `webhook-drain send`, a webhook POSTed and signed as the provider
 * would (Standard Webhooks: webhook-id, webhook-timestamp,
 * webhook-signature "v1,<base64 HMAC-SHA256 of id.timestamp.body>"), so an
 * operator can try the whole path (web server, receiver, inbox) with one
 * command.  With --source NAME, signed as that [source NAME]'s scheme's
 * sender does (scheme_sign) with its first secret, and a sample body
 * shaped like that provider's events.  The secret is the config's; it
 * never leaves this process (GitLab's is its header: use HTTPS).
 */
#ifndef WEBHOOK_SENDER_H
#define WEBHOOK_SENDER_H

#include <stddef.h>
#include <stdint.h>

#include <stdio.h>

#include <curl/curl.h>

#include "lib/program/config.h"
#include "lib/common/signature.h"
#include "lib/common/util.h"

/* Largest body `send` posts, bytes: above any max_body the config takes. */
#define SENDER_BODY_MAX		(64 << 20)
/* Bytes of the answer kept: enough for the receiver's short answers and
 * a web server's error page's start (the provider keeps as much). */
#define SENDER_ANSWER_MAX	2048
/* Seconds a send may take: the provider's own delivery timeout. */
#define SENDER_TIMEOUT_S	15L

/* The first whsec_ (HMAC) secret of c, or NULL: Ed25519 keys in the config
 * are public keys, which cannot sign.  Points into c. */
const struct signature_key *sender_key(const struct config *c);

/*
 * A test event as the provider shapes them (type "webhook_inbox.test", a
 * fresh createdAt to the second, data.object "webhook_inbox_test" with
 * data.id = id), padded with a "filler" string to `size` bytes when it is
 * shorter (0: no padding).  Appends to body; 0, or -1 when out of memory
 * or over body's cap.
 */
int	sender_sample_body(const char *id, int64_t size, struct buf *body)
	    __attribute__((warn_unused_result));

/*
 * Read all of `in` into body (whose cap, buf_init's, bounds it).  An
 * empty input is refused: a directory reads as nothing, and so does stdin
 * under cron, and an empty event stored and acknowledged would test
 * nothing.  Returns 0, or -1 with the reason in err.
 */
int	sender_read_body(FILE *in, struct buf *body, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * The body `send` posts, into body: a test event for `id` when `sample`
 * (the caller's: --size N, or no FILE on a terminal), padded to `size` —
 * shaped as scheme s's provider's (sender_source_body) when s is not
 * NULL; else the file `path` read whole (NULL or "-": stdin).  Returns 0,
 * or -1 with the reason in err (a file's name first).
 */
int	sender_pick_body(const char *path, int sample, int64_t size,
	    const char *id, const struct scheme *s, struct buf *body,
	    struct buf *err)
	    __attribute__((warn_unused_result));

/* ---- send --source NAME: a [source NAME] as its provider sends ---- */

/* The type of every test event, in the body or the provider's type
 * header: a handler can tell a test from a provider's event. */
#define SENDER_TEST_TYPE	"webhook_inbox.test"
/* A provider id, bytes + NUL (a UUID is 36). */
#define SENDER_SOURCE_ID_SIZE	48

/*
 * The source `name` of c, ready to sign with its first secret.  Returns
 * it, or NULL with err saying why: no such source (and the names c has,
 * or that it has none), or a scheme that cannot sign (Discord's public
 * key: scheme_can_sign's reason).
 */
const struct config_source *sender_source(const struct config *c,
	    const char *name, struct buf *err);

/*
 * Does url's path (before any ? or #) end in "/" name (a '/' after it
 * allowed)?  The receiver takes [source NAME]'s deliveries there.  1 or 0.
 */
int	sender_url_names_source(const char *url, const char *name);

/*
 * A fresh id as scheme s's provider writes them, into out: evt_ + 24 hex
 * (Stripe, Paddle), Ev + 12 (Slack), a UUID (GitHub's X-GitHub-Delivery,
 * GitLab's, Shopify's), 32 hex (WooCommerce), SM + 32 hex (a Twilio
 * MessageSid), msg_ + 24 hex (standard, hmac).  Returns out.
 */
const char *sender_source_id(const struct scheme *s,
	    char out[SENDER_SOURCE_ID_SIZE]);

/*
 * A test event shaped like scheme s's provider's, for id, at `now` (Unix
 * seconds), of type SENDER_TEST_TYPE where the body carries a type:
 *   stripe       an event: id, object "event", created, type,
 *                data.object.id
 *   paddle       event_id, event_type, occurred_at, data.id
 *   slack        an event_callback: event_id, event_time, event.type
 *   github       JSON with id (the id is X-GitHub-Delivery's too)
 *   gitlab       object_kind, event_name and id
 *   shopify      id, admin_graphql_api_id, updated_at
 *   woocommerce  id, status, date_modified_gmt
 *   twilio       a form body: AccountSid, MessageSid = id, From, To,
 *                Body… (x-www-form-urlencoded)
 *   standard, hmac   sender_sample_body's event
 * padded by a "filler" string (Twilio: a Filler parameter) to `size`
 * bytes when shorter (0: none).  Appends to body; 0, or -1 when out of
 * memory or over body's cap.
 */
int	sender_source_body(const struct scheme *s, const char *id, int64_t now,
	    int64_t size, struct buf *body) __attribute__((warn_unused_result));

/*
 * The request's headers for body sent by src at `timestamp` as delivery
 * `id`: scheme_sign's with src's first secret, then the source's own id
 * and type headers when its `id =` or `type =` names a header (the id,
 * SENDER_TEST_TYPE), then Content-Type.  Returns the list
 * (curl_slist_free_all it), or NULL with *why static.
 */
struct curl_slist *sender_source_headers(const struct config_source *src,
	    const char *id, int64_t timestamp, const void *body, size_t len,
	    const char **why);

/* A fresh webhook-id for `send` ("msg_" and 24 random hex digits, NUL)
 * into out; returns out. */
#define SENDER_ID_SIZE	29
const char *sender_new_id(char out[SENDER_ID_SIZE]);

/*
 * The request's headers for body (len bytes) sent at `timestamp` (seconds
 * since the epoch) as webhook `id`: webhook-id, webhook-timestamp,
 * webhook-signature and Content-Type, in that order.  Returns the list
 * (curl_slist_free_all it), or NULL when signing or memory failed.
 */
struct curl_slist *sender_headers(const struct signature_key *key,
	    const char *id, int64_t timestamp, const void *body, size_t len);

enum sender_status {
	SENDER_SENT,		/* an answer came: see sender_answer */
	SENDER_UNSIGNED,	/* not sent: signing failed (out of memory) */
	SENDER_FAILED,		/* no answer (err says why) */
	SENDER_CERT_FAILED	/* no answer: the certificate did not verify
				 * against api_ca_bundle(c) */
};

struct sender_answer {
	long		status;		/* HTTP status */
	int		ours;		/* the receiver answered (its
					 * X-Webhook-Inbox header), not the
					 * web server by itself */
	struct buf	body;		/* at most SENDER_ANSWER_MAX bytes,
					 * trailing CR/LF removed; the caller
					 * buf_inits and frees it */
	char		version[64];	/* its X-Webhook-Inbox-Version
					 * (lib/receive/receive.h), "" when
					 * none or not plain text */
};

/*
 * POST body (len bytes) to url, signed with key as webhook `id` at the
 * current time, with TLS trust and protocols as the API client's
 * (api_curl_setup) and a SENDER_TIMEOUT_S deadline.  Fills *a for
 * SENDER_SENT; err gets curl's reason otherwise.
 */
enum sender_status sender_post(const struct config *c,
	    const struct signature_key *key, const char *url, const char *id,
	    const void *body, size_t len, struct sender_answer *a,
	    struct buf *err);

/* The same, signed as src's sender does (sender_source_headers) at the
 * current time; SENDER_UNSIGNED with err's reason when it cannot be. */
/*
 * The inbox id the receiver stores this delivery of src under, as it
 * will read it (docs/DESIGN.md "Sources"): "NAME/" + the scheme's id —
 * `id` where the scheme (or the section's `id =`) takes it from a header,
 * else the body's own (a FILE's `id` member for Stripe) — or "NAME/
 * sha256:HEX" of the body when it has none.  Into out (outsz bytes);
 * returns out, or NULL when the id would be refused (the receiver's 400).
 */
char	*sender_source_inbox_id(const struct config_source *src,
	    const char *id, const void *body, size_t len, char *out,
	    size_t outsz);

enum sender_status sender_post_source(const struct config *c,
	    const struct config_source *src, const char *url, const char *id,
	    const void *body, size_t len, struct sender_answer *a,
	    struct buf *err);

#endif
