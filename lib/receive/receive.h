/*
 * receive: one webhook delivery taken by the status table of
 * docs/DESIGN.md "The receiver's answers", over a
 * request (lib/receive/request.h) and a site (lib/receive/site.h): method, config,
 * webhook headers, body size, body, timestamp and signature, then one
 * store under the webhook-id — and the answer.  Nothing here makes a
 * network call or runs a handler; that is webhook-drain's job.
 *
 * No process state: a harness calls receive_handle with a fake request
 * and a site cache of its own.
 */
#ifndef WEBHOOK_RECEIVE_H
#define WEBHOOK_RECEIVE_H

#include "lib/receive/request.h"
#include "lib/receive/site.h"
#include "lib/common/util.h"

/* Longest webhook-id, bytes.  Provider ids are ~30 characters; 256 leaves
 * room for any sender without letting a header become a storage problem. */
#define WEBHOOK_ID_MAX		256

/*
 * Every answer leaves within this many seconds of the request's arrival,
 * whatever body_timeout and busy_timeout allow: the body may take at most
 * min(body_timeout, this), and the wait for the database ends here too
 * (a 408 or a 503 + Retry-After).  The provider gives up at 15 s; the
 * 5 s left cover the web server's own buffering and a loaded machine.
 */
#define RECEIVE_DEADLINE_S	10

/* What one request thread keeps from request to request: buffers that
 * grow once instead of per request. */
struct receive {
	struct buf	 body;	/* the body as it arrived */
	char		*joined;	/* repeated headers' values, joined
					 * (receive.c, struct headers) */
	struct buf	 err;	/* the reason of a failure, for the log */
	char		 version[96];	/* RECEIVE_VERSION_HEADER's line */
};

/*
 * The header of a 200 (a delivery whose signature verified, so only the
 * secret's holder learns it), "X-Webhook-Inbox-Version: 0.9.0 (commit
 * 1a2b3c4d5e6f)": which program answers, for `check --url` after an
 * upgrade (docs/HOSTING.md "Upgrading").  Nothing more: no library, no
 * path, and never on a refusal, which anyone can provoke.
 */
#define RECEIVE_VERSION_HEADER	"X-Webhook-Inbox-Version"

/* Set up / free a thread's buffers (receive_free accepts a zeroed one). */
void	receive_init(struct receive *rv);
void	receive_free(struct receive *rv);

/*
 * Take request `r` through the status table with the site `sites` finds
 * for it, answer it (request_respond, once), and log a refusal with its
 * reason.  Returns the status answered: 200 (stored, a duplicate, or a
 * provider's question answered), 204 (Discord's Webhook Events PING), 400,
 * 401, 404, 405, 408, 413 or 503.  A body larger than twice REQUEST_READ_CHUNK
 * is freed afterwards, so an idle thread does not pin it.
 */
int	receive_handle(struct receive *rv, struct site_cache *sites,
	    struct request *r);

#endif
