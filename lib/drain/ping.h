/*
 * ping: the heartbeat of `webhook-drain run --ping URL` (docs/DESIGN.md
 * "The operator's tools").  The owner's cron mail says nothing when cron
 * itself stops; an external monitor (healthchecks.io and the like) that
 * expects a request after every run does.  The request follows that
 * convention: a POST to URL after a good run, to URL/fail after a run with
 * failures, the body the first lines of what the run printed.  It is
 * bounded in time and never changes the run's outcome: a monitor that is
 * down must not make the drainer fail or wait.
 */
#ifndef WEBHOOK_PING_H
#define WEBHOOK_PING_H

#include <stddef.h>

#include "lib/program/config.h"
#include "lib/common/util.h"

/* The whole request, connection included, in seconds: cron runs every
 * minute, and a run must not wait long on a monitor. */
#define PING_TIMEOUT_S		5
/* Bytes of the body at most: the digest's first lines are enough for a
 * monitor's log; the mail has the rest. */
#define PING_BODY_MAX		2048

/*
 * POST body (len bytes, cut to PING_BODY_MAX) to url, or to url + "/fail"
 * when failed.  http and https only (api_curl_setup, with c's CA trust).
 * Returns 0 when the monitor answered 2xx, -1 otherwise with the reason
 * in err.
 */
int	ping_send(const struct config *c, const char *url, int failed,
	    const char *body, size_t len, struct buf *err)
	    __attribute__((warn_unused_result));

#endif
