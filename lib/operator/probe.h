/*
 * probe: `webhook-drain check --url URL` (docs/DESIGN.md "The operator's
 * tools") — the endpoint end to end, as the provider will use it: a signed
 * small body and a signed 250 KB one must be stored (200 from the receiver
 * itself; the large one takes Apache's plain-CGI branch), a wrong signature
 * refused (401), a GET refused (405).  Each failure names the quickstart
 * step to revisit (README, "Shared hosting quickstart").  The two signed
 * test events are stored like `send`'s (type webhook_inbox.test): the
 * handler gets them.
 */
#ifndef WEBHOOK_PROBE_H
#define WEBHOOK_PROBE_H

#include "lib/program/config.h"
#include "lib/operator/setup_check.h"

/* The large body, bytes: the provider's bodies reach ~260 KB. */
#define PROBE_LARGE_BODY	250000

/* Probe url with c's first whsec_ secret; each result to h->finding
 * (what: "url"), counted in *n (added to, not reset). */
void	probe_url(const struct config *c, const char *url,
	    const struct setup_hooks *h, struct setup_counts *n);

#endif
