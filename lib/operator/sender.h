/*
 * sender: `webhook-drain send`, a webhook POSTed and signed as a source's
 * provider sends it (lib/scheme/scheme.h, scheme_sign), so an operator
 * can try the whole path (web server, receiver, inbox) with one command:
 * the default source (the top-level keys) as Standard Webhooks, or a
 * [source NAME] with --source, each with its first secret that can sign
 * and a sample body shaped like that provider's events
 * (scheme_sample_body).  The secret is the config's; it never leaves this
 * process (GitLab's is its header: use HTTPS).
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

/*
 * Read all of `in` into body (whose cap, buf_init's, bounds it).  An
 * empty input is refused: a directory reads as nothing, and so does stdin
 * under cron, and an empty event stored and acknowledged would test
 * nothing.  Returns 0, or -1 with the reason in err.
 */
int	sender_read_body(FILE *in, struct buf *body, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * The body `send` posts, into body: scheme s's sample event for `id`
 * (scheme_sample_body) when `sample` (the caller's: --size N, or no FILE
 * on a terminal), padded to `size`; else the file `path` read whole
 * (NULL or "-": stdin).  Returns 0,
 * or -1 with the reason in err (a file's name first).
 */
int	sender_pick_body(const char *path, int sample, int64_t size,
	    const char *id, const struct scheme *s, struct buf *body,
	    struct buf *err)
	    __attribute__((warn_unused_result));

/* ---- send --source NAME: a [source NAME] as its provider sends ---- */

/*
 * The source `name` of c (NULL: the default source), ready to sign.
 * Returns it, or NULL with err saying why: no such source (and the names
 * c has, or that it has none), no default source, or no secret that can
 * sign (Discord's public key: scheme_can_sign's reason).
 */
const struct config_source *sender_source(const struct config *c,
	    const char *name, struct buf *err);

/* src's first secret that can sign (a whpk_ one cannot), or NULL with
 * *why static. */
const struct scheme_secret *sender_signing_key(const struct config_source *src,
	    const char **why);

/*
 * Does url's path (before any ? or #) end in "/" name (a '/' after it
 * allowed)?  The receiver takes [source NAME]'s deliveries there.  1 or 0.
 */
int	sender_url_names_source(const char *url, const char *name);

/*
 * The request's headers for body sent by src to `url` at `timestamp` as
 * delivery `id`: scheme_sign's with `key` (NULL: sender_signing_key's),
 * then the source's own id and type headers when its `id =` or `type =`
 * names a header (the id, SCHEME_SAMPLE_TYPE), then Content-Type; the
 * URL to call into *to (url with the query the provider's sender puts
 * there: Twilio's bodySHA256).  Returns the list (curl_slist_free_all
 * it), or NULL with *why static.
 */
struct curl_slist *sender_source_headers(const struct config_source *src,
	    const struct scheme_secret *key, const char *id, int64_t timestamp,
	    const char *url, const void *body, size_t len, struct buf *to,
	    const char **why);

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
	/* The query string of the URL called (without '?'; "" none): the
	 * given URL's, with what the provider's sender adds (Twilio's
	 * bodySHA256, Mercado Pago's data.id). */
	char		query[SCHEME_HEADER_VALUE_MAX + 2048];
};

/*
 * The inbox id the receiver stores this delivery of src under, sent to a
 * URL whose query string is `query` (sender_answer's, NULL none), as it
 * will read it (scheme_event_read): the id where the provider (or
 * the section's `id =`) takes it from a header, else the body's own (a
 * FILE's `id` member for Stripe), with the source's name and a content
 * tag as docs/providers.md "Ids" says.  Into out (outsz bytes, at least
 * SCHEME_KEY_MAX); returns out, or NULL when the id would be refused
 * (the receiver's 400).
 */
char	*sender_source_inbox_id(const struct config_source *src,
	    const char *id, const char *query, const void *body, size_t len,
	    char *out, size_t outsz);

/*
 * POST body (len bytes) to url as src's sender does
 * (sender_source_headers, `key` NULL: its first that can sign) as
 * delivery `id` at the current time, with TLS trust and protocols as the
 * API client's (api_curl_setup) and a SENDER_TIMEOUT_S deadline.  Fills
 * *a for SENDER_SENT; SENDER_UNSIGNED or err with curl's reason
 * otherwise.
 */
enum sender_status sender_post_source(const struct config *c,
	    const struct config_source *src, const struct scheme_secret *key,
	    const char *url, const char *id, const void *body, size_t len,
	    struct sender_answer *a, struct buf *err);

#endif
