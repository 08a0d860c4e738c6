/*
 * probe: `webhook-drain check --url URL` (docs/DESIGN.md "The operator's
 * tools") — the endpoint end to end, as the provider will use it: a signed
 * small body and a signed 250 KB one must be stored (200 from the receiver
 * itself; the large one takes Apache's plain-CGI branch), a wrong signature
 * refused (401), a GET refused (405).  Each failure names the step of
 * docs/HOSTING.md to revisit (PROBE_STEP_*; README's quickstart numbers
 * its steps alike).  The two signed test events are stored like `send`'s
 * (type webhook_inbox.test): the handler gets them.
 */
#ifndef WEBHOOK_PROBE_H
#define WEBHOOK_PROBE_H

#include "lib/program/config.h"
#include "lib/operator/setup_check.h"

/*
 * The steps of docs/HOSTING.md a finding sends the reader back to, by
 * number and title, the one place the programs name them (probe.c,
 * webhook-drain's `send`); tests/e2e_check.py checks each against the
 * guide's "## N. Title" and README's quickstart against the guide.
 */
#define PROBE_STEP_UPLOAD	"HOSTING.md step 2 (Upload"
#define PROBE_STEP_EDIT		"HOSTING.md step 3 (Edit"
#define PROBE_STEP_TEST		"HOSTING.md step 5 (Test"

/* The large body, bytes: the provider's bodies reach ~260 KB. */
#define PROBE_LARGE_BODY	250000

/* Probe url with c's first whsec_ secret; each result to h->finding
 * (what: "url"), counted in *n (added to, not reset). */
void	probe_url(const struct config *c, const char *url,
	    const struct setup_hooks *h, struct setup_counts *n);

/*
 * Each [source NAME] of c at url + "/NAME", where the receiver takes its
 * deliveries: a test event shaped and signed as its provider's
 * (sender_post_source, its first secret) must be stored (200 from the
 * receiver itself); a 404 from the receiver means it has no such source
 * (another config, or a receiver older than this drainer).  A source
 * that cannot be signed here (Discord: a public key) is said and not
 * sent.  Results to h->finding (what: "source NAME"), counted in *n.
 */
void	probe_sources(const struct config *c, const char *url,
	    const struct setup_hooks *h, struct setup_counts *n);

#endif
