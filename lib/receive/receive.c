/*
 * receive: the status table of docs/DESIGN.md "The receiver's answers"
 * over one request — receive/receive.h.
 *
 * Each row of the table is one step below; the steps run in the table's
 * order and the first that refuses gives the answer.  A step returns 0 to
 * go on, or the status to refuse with, its reason in a->why for the log.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/common/instant.h"
#include "lib/program/config.h"
#include "lib/program/version.h"
#include "lib/store/event.h"
#include "lib/store/inbox.h"
#include "lib/receive/receive.h"
#include "lib/receive/request.h"
#include "lib/scheme/scheme.h"
#include "lib/common/signature.h"
#include "lib/receive/site.h"
#include "lib/common/util.h"

/* Retry-After for 503s, seconds: long enough for an operator's fix or a
 * lock to clear, short against the provider's retry schedule. */
#define RETRY_AFTER		"30"

/* A header's room when a server repeats it: Standard Webhooks' longest
 * webhook-signature (SIGNATURE_HEADER_MAX) and a byte to see it is
 * longer.  Repeated headers one request may read: a provider reads at
 * most four (Mercado Pago's and Twilio's), the default source's a
 * refusal's id too. */
#define JOINED_MAX	(SIGNATURE_HEADER_MAX + 1)
#define JOINED_SLOTS	6

/* The headers of one request, as lib/scheme/scheme.h reads them. */
struct headers {
	struct request	*r;
	/*
	 * A header a server passed more than once (Debian 12's nginx gives
	 * each line of a repeated header as its own FastCGI parameter;
	 * Apache and lighttpd join them): its values joined by a space, as
	 * the multi-entry signature headers list them, into the thread's
	 * arena (struct receive, joined: JOINED_SLOTS × (JOINED_MAX + 1)
	 * bytes, allocated once, never moved), each once per request.  So
	 * a value stays valid for the whole request, as scheme.h promises
	 * the providers, however many headers they hold at once.
	 */
	char		*arena;
	struct {
		char		 param[64];
		const char	*value;
	}		 slot[JOINED_SLOTS];
	size_t		 nslots;
};

/* One request's findings as the steps go. */
struct attempt {
	struct request	*r;
	struct site_cache *sites;
	struct site	*site;		/* a reference, from take_site */
	const struct config *conf;	/* the site's */
	/* The source the URL names (take_source): a [source NAME], or the
	 * default source, the top-level keys (docs/DESIGN.md "Sources"). */
	const struct config_source *src;
	struct scheme_result res;	/* the provider's verdict */
	struct scheme_event ev;		/* what the inbox keeps of it */
	const char	*content_type;	/* a synchronous answer's; NULL:
					 * text/plain */
	struct headers	 hs;		/* the request's, for the providers */
	/* The id the delivery claims, for a refusal's log line: its
	 * provider's id header, unverified (NULL: none readable). */
	const char	*id;
	int64_t		 started;	/* monotonic ns */
	int64_t		 body_ns;	/* the client's time sending the body */
	int64_t		 open_ns;	/* the time the inbox's opening took */
	int64_t		 content_length;	/* -1: none given */
	const char	*why;		/* a refusal's reason, for the log */
	char		 whybuf[256];	/* for a reason put together */
	const char	*text;		/* a 200's body */
};

void
receive_init(struct receive *rv)
{
	buf_init(&rv->body, 0);
	rv->joined = NULL;
	buf_init(&rv->err, BUF_ERR_MAX);
	(void)snprintf(rv->version, sizeof rv->version, "%s: %s (commit %s)\r\n",
	    RECEIVE_VERSION_HEADER, version_number, version_commit);
}

/* Set once a long-lived process said which program it is. */
static int announced;

void
receive_free(struct receive *rv)
{
	buf_free(&rv->body);
	free(rv->joined);
	rv->joined = NULL;
	buf_free(&rv->err);
}

/* The refusals' answers: short fixed texts, nothing of the request. */
static const struct answer {
	int		 status;
	const char	*reason;
	const char	*header;	/* whole lines, or NULL */
	const char	*text;
} answers[] = {
	{ 400, "Bad Request", NULL, "bad request\n" },
	{ 401, "Unauthorized", NULL, "signature not accepted\n" },
	{ 404, "Not Found", NULL, "no such source\n" },
	{ 405, "Method Not Allowed", "Allow: POST\r\n", "method not allowed\n" },
	{ 408, "Request Timeout", NULL, "body too slow\n" },
	{ 413, "Content Too Large", NULL, "body too large\n" },
	/* The last: any other status is answered as this one. */
	{ 503, "Service Unavailable", "Retry-After: " RETRY_AFTER "\r\n",
	  "try again later\n" },
};

/* Answer `status` from the table and log why, naming the source and the
 * id the delivery claims (unverified: it was refused). */
static void
refuse(struct request *r, int status, const struct config_source *src,
    const char *id, const char *why)
{
	char esc[SCHEME_VALUE_MAX * 4 + 8];
	const struct answer *a = answers;
	int named = src != NULL && strcmp(src->name, INBOX_DEFAULT_SOURCE) != 0;

	request_discard_input(r);
	log_msg("refused %d %s%s%swebhook-id=%s: %s", status,
	    named ? "[source " : "", named ? src->name : "", named ? "] " : "",
	    util_escape(id, id ? strlen(id) : 0, esc, sizeof esc), why);
	while (a->status != status && a->status != 503)
		a++;
	request_respond(r, a->status, a->reason, a->header, a->text);
}

static int
check_method(struct receive *rv, struct attempt *a)
{
	const char *method = request_param(a->r, "REQUEST_METHOD");

	(void)rv;
	a->why = "method is not POST";
	return method == NULL || strcmp(method, "POST") != 0 ? 405 : 0;
}

/*
 * When the store's wait for the database ends (monotonic ns): at
 * busy_timeout after the request's arrival, and never past
 * RECEIVE_DEADLINE_S.  One wait for the queue behind other deliveries
 * (receive/committer.h), a reconnection and the store, so that a 503
 * leaves within busy_timeout, as README and docs/caps.md say, not once
 * per step (a queued delivery got its 503 after twice busy_timeout).
 * Not counted: the client's time sending the body (a slow upload is not
 * a slow database) and a successful first open of the inbox in this
 * process (a server that answered; a new PostgreSQL database's schema
 * takes a while on a loaded machine) -- an open that fails is the 503.
 */
static int64_t
db_deadline(const struct attempt *a, int64_t busy_timeout_ms)
{
	int64_t cap = a->started + RECEIVE_DEADLINE_S * (int64_t)1000000000;
	int64_t dl = a->started + a->body_ns + a->open_ns +
	    busy_timeout_ms * 1000000;

	return busy_timeout_ms <= 0 || dl > cap ? cap : dl;
}

/* The config, and the inbox it names, usable for this request. */
static int
take_site(struct receive *rv, struct attempt *a)
{
	int64_t t0;

	a->site = site_acquire(a->sites, request_param(a->r, "WEBHOOK_CONF"),
	    &rv->err);
	/* The first open in a process waits for a lock or a connection
	 * within busy_timeout (the engines bound that), and its work on a
	 * server that answered within the request's time (receive/site.h). */
	t0 = util_mono_ns();
	if (a->site == NULL || site_ready(a->site,
	    request_param(a->r, "DOCUMENT_ROOT"), a->r->long_lived,
	    a->started + RECEIVE_DEADLINE_S * (int64_t)1000000000,
	    &rv->err) == -1) {
		a->why = "not usable: see the config: or inbox: line logged "
		    "when it was read or opened";
		return 503;
	}
	a->open_ns = util_mono_ns() - t0;
	a->conf = site_config(a->site);
	/* Once per FastCGI process, at its first request with a usable
	 * config (its `log` open by now): which program runs, so that after
	 * an upgrade the log says when the new one took over.  A plain-CGI
	 * run is the file as it is: no line per request. */
	if (a->r->long_lived && !__atomic_exchange_n(&announced, 1,
	    __ATOMIC_RELAXED))
		log_msg("webhook.fcgi %s (commit %s) running as FastCGI process "
		    "%ld", version_number, version_commit, (long)getpid());
	return 0;
}

/* One header's values being joined into its slot of the arena. */
struct join {
	char	*out;
	size_t	 len;
};

/* Append " " v, as much as fits: a joined header past its room is kept
 * at its room's length, which every verifier refuses as too long. */
static int
join_value(void *arg, const char *v)
{
	struct join *j = arg;
	size_t n = strlen(v);

	if (j->len > 0 && j->len < JOINED_MAX)
		j->out[j->len++] = ' ';
	if (n > JOINED_MAX - j->len)
		n = JOINED_MAX - j->len;
	memcpy(j->out + j->len, v, n);
	j->len += n;
	return j->len < JOINED_MAX ? 0 : -1;
}

/* A parameter's first value and how many it has: one pass. */
struct seen {
	const char	*first;
	int		 count;
};

static int
count_value(void *arg, const char *v)
{
	struct seen *sn = arg;

	if (sn->count++ == 0)
		sn->first = v;
	return 0;
}

/* A header by its HTTP name ("Stripe-Signature"): the CGI parameter
 * HTTP_STRIPE_SIGNATURE; a repeated one joined (struct headers).  A
 * repeated header longer than JOINED_MAX is given cut there: every
 * verifier refuses a header of that length.  Past JOINED_SLOTS repeated
 * headers in one request (or with no arena), a repeated one's first
 * value. */
static const char *
header_of(void *arg, const char *name)
{
	struct headers *hs = arg;
	char param[64] = "HTTP_";
	struct seen sn = { NULL, 0 };
	struct join j;
	size_t i, n = 5;

	for (i = 0; name[i] != '\0' && n + 1 < sizeof param; i++)
		param[n++] = name[i] == '-' ? '_' :
		    (char)toupper((unsigned char)name[i]);
	if (name[i] != '\0')
		return NULL;
	param[n] = '\0';
	(void)request_param_each(hs->r, param, count_value, &sn);
	if (sn.count < 2)
		return sn.first;
	for (i = 0; i < hs->nslots; i++)
		if (strcmp(hs->slot[i].param, param) == 0)
			return hs->slot[i].value;
	if (hs->arena == NULL || hs->nslots == JOINED_SLOTS)
		return sn.first;
	j.out = hs->arena + hs->nslots * (JOINED_MAX + 1);
	j.len = 0;
	(void)request_param_each(hs->r, param, join_value, &j);
	j.out[j.len] = '\0';
	memcpy(hs->slot[hs->nslots].param, param, n + 1);
	hs->slot[hs->nslots].value = j.out;
	return hs->slot[hs->nslots++].value;
}

/* The request as lib/scheme/scheme.h reads it: headers and query. */
static struct scheme_headers
headers_of(struct attempt *a)
{
	struct scheme_headers h = { header_of, &a->hs,
	    request_param(a->r, "QUERY_STRING") };

	return h;
}

/* The id the delivery claims, before anything is verified: for the log
 * line of a refusal (docs/DESIGN.md "The receiver's answers"). */
static void
claim_id(struct attempt *a)
{
	const struct scheme_headers h = headers_of(a);

	a->id = scheme_claimed_id(a->src->scheme, &a->src->locate, &h);
}

/*
 * The source the URL names (docs/DESIGN.md "Sources"): no PATH_INFO, ""
 * or "/" is the default source; "/NAME", a trailing '/' allowed, the
 * [source NAME] section.  Anything else, and a default source a file of
 * sections alone does not have, is 404: a URL nobody configured.
 */
static int
take_source(struct receive *rv, struct attempt *a)
{
	const char *pi = request_param(a->r, "PATH_INFO");
	char name[CONFIG_SOURCE_NAME_MAX + 1], esc[CONFIG_SOURCE_NAME_MAX * 4 + 8];
	size_t n;

	(void)rv;
	if (pi == NULL || pi[0] == '\0' || strcmp(pi, "/") == 0) {
		a->why = "no default source: the config has [source NAME] "
		    "sections only, each at the receiver's URL + /NAME";
		a->src = &a->conf->default_source;
		if (a->src->nsecrets == 0)
			return 404;
		claim_id(a);
		return 0;
	}
	n = strlen(pi);
	if (n > 1 && pi[n - 1] == '/')
		n--;
	if (pi[0] == '/' && n - 1 <= CONFIG_SOURCE_NAME_MAX) {
		memcpy(name, pi + 1, n - 1);
		name[n - 1] = '\0';
		if ((a->src = config_source_find(a->conf, name)) != NULL) {
			claim_id(a);
			return 0;
		}
	}
	snprintf(a->whybuf, sizeof a->whybuf, "the URL's path after the "
	    "receiver, %s, names no [source] of this config",
	    util_escape(pi, strlen(pi) < CONFIG_SOURCE_NAME_MAX + 2 ?
	    strlen(pi) : CONFIG_SOURCE_NAME_MAX + 2, esc, sizeof esc));
	a->why = a->whybuf;
	return 404;
}

/* CONTENT_LENGTH, when given, is refused over max_body before reading. */
static int
check_length(struct receive *rv, struct attempt *a)
{
	const char *cl = request_param(a->r, "CONTENT_LENGTH");

	(void)rv;
	if (cl == NULL || *cl == '\0')
		return 0;
	if (util_parse_decimal(cl, strlen(cl), INT64_MAX, &a->content_length)
	    == -1) {
		a->why = "CONTENT_LENGTH is not a number";
		return 400;
	}
	if (a->content_length > a->conf->max_body_bytes) {
		a->why = "CONTENT_LENGTH over max_body";
		return 413;
	}
	return 0;
}

/* Read the body to its end into rv->body, behind the `prefix` bytes
 * already there.  Returns 0; 1 when it passes max_body (413); 2 when it is
 * not in by `deadline` (408); -1 on a read error. */
static int
read_body(struct receive *rv, struct request *r, size_t prefix,
    int64_t max_body, int64_t content_length, int64_t deadline)
{
	size_t max = (size_t)max_body;
	char chunk[REQUEST_READ_CHUNK];
	int rc = 0;

	for (;;) {
		size_t got = rv->body.len - prefix, want = sizeof chunk;
		int n;

		/* A stream that need not end after the body: read exactly
		 * CONTENT_LENGTH when there is one. */
		if (!r->body_to_eof && content_length >= 0) {
			if (got >= (size_t)content_length)
				break;
			if (want > (size_t)content_length - got)
				want = (size_t)content_length - got;
		}
		n = request_read(r, chunk, want, deadline);
		if (n == REQUEST_READ_LATE || n < 0) {
			rc = n == REQUEST_READ_LATE ? 2 : -1;
			break;
		}
		if (n == 0)
			break;
		if ((size_t)n > max - got) {
			rc = 1;
			break;
		}
		if (buf_append(&rv->body, chunk, (size_t)n) == -1) {
			rc = -1;
			break;
		}
	}
	request_read_done(r);
	return rc;
}

/* The body, whole, into rv->body. */
static int
take_body(struct receive *rv, struct attempt *a)
{
	static const int status[] = { 0, 413, 408 };
	static const char *const why[] = { NULL, "body over max_body",
	    "body not received within body_timeout (at most "
	    "RECEIVE_DEADLINE_S, 10 s, from the request's arrival)" };
	int64_t t0;
	int rc;

	buf_reset(&rv->body);
	rv->body.cap = (size_t)a->conf->max_body_bytes;
	a->why = "out of memory";
	/* The empty append allocates: the body, an empty one too, is then
	 * never a null pointer (the providers add offsets to it). */
	if (buf_append(&rv->body, "", 0) == -1)
		return 503;
	/* A known length is allocated once: a 1 MiB body costs 1 MiB. */
	if (a->content_length > 0 &&
	    buf_reserve(&rv->body, (size_t)a->content_length) == -1)
		return 503;
	t0 = util_mono_ns();
	rc = read_body(rv, a->r, 0, a->conf->max_body_bytes,
	    a->content_length, a->started + (a->conf->body_timeout_s <
	    RECEIVE_DEADLINE_S ? a->conf->body_timeout_s : RECEIVE_DEADLINE_S) *
	    (int64_t)1000000000);
	a->body_ns = util_mono_ns() - t0;
	if (rc == -1) {
		a->why = "body could not be read to its end";
		return 400;
	}
	if (rc != 0) {
		a->why = why[rc];
		return status[rc];
	}
	a->r->body_read = 1;
	if (a->content_length >= 0 &&
	    rv->body.len != (size_t)a->content_length) {
		a->why = "body length differs from CONTENT_LENGTH";
		return 400;
	}
	return 0;
}

/*
 * A named source's delivery, verified by its scheme (lib/scheme/scheme.h):
 * the outcomes map to the status table (docs/providers.md "Outcomes");
 * a provider's synchronous question (Slack's url_verification, Discord's
 * PING) is answered here, 200 and not stored, and so is WooCommerce's
 * unsigned creation ping.
 */
static int
verify(struct receive *rv, struct attempt *a)
{
	const struct scheme_headers h = headers_of(a);
	const struct config_source *src = a->src;
	char line[200];

	if (scheme_verify(src->scheme, &src->params, src->secrets,
	    src->nsecrets, &h, (const unsigned char *)rv->body.data,
	    rv->body.len, (int64_t)time(NULL), &a->res) == 0) {
		if (a->res.outcome == SCHEME_OK)
			return 0;
		if (a->res.outcome == SCHEME_ANSWER &&
		    a->res.answer_type == NULL) {
			a->text = "";
			log_msg("answered [source %s] the provider's ping with 204 "
			    "(nothing stored)", src->name);
			return 204;
		} else if (a->res.outcome == SCHEME_ANSWER) {
			a->text = a->res.answer;
			a->content_type = a->res.answer_type;
		} else {
			a->text = "ping\n";
		}
		log_msg("answered [source %s] %s", src->name,
		    a->res.outcome == SCHEME_ANSWER ? "the provider's "
		    "verification request (nothing stored)" : "an unsigned "
		    "set-up ping (nothing stored)");
		return 200;
	}
	a->why = a->res.why;
	switch (a->res.outcome) {
	case SCHEME_OTHER:
		snprintf(a->whybuf, sizeof a->whybuf, "%s", scheme_mismatch(
		    src->scheme, a->res.looks_like, line,
		    sizeof line));
		a->why = a->whybuf;
		/* The id the delivery claims is its own provider's. */
		a->id = scheme_claimed_id(a->res.looks_like, NULL, &h);
		return 400;
	case SCHEME_MISSING:
		return 400;
	default:
		return 401;
	}
}

/* The event as the inbox keeps it (lib/scheme/scheme.h,
 * scheme_event_read), then one durable store: 200 once it is on disk. */
static int
store(struct receive *rv, struct attempt *a)
{
	const struct scheme_headers h = headers_of(a);
	const struct config_source *src = a->src;
	int named = strcmp(src->name, INBOX_DEFAULT_SOURCE) != 0;
	struct inbox_delivery d;
	enum inbox_status s;
	const char *why;
	int rc;

	if ((rc = scheme_event_read(src->scheme, &src->params, &src->locate,
	    named ? src->name : NULL, &h, (const unsigned char *)rv->body.data,
	    rv->body.len, &a->ev, &why)) != 0) {
		a->why = why;
		return rc == -2 ? 503 : 400;
	}
	a->id = a->ev.key;
	if (a->ev.fields.note != NULL) {
		char esc[SCHEME_KEY_MAX * 4 + 8];

		log_msg("note webhook-id=%s: %s", util_escape(a->id,
		    strlen(a->id), esc, sizeof esc), a->ev.fields.note);
	}
	memset(&d, 0, sizeof d);
	d.webhook_id = a->ev.key;
	d.source = src->name;
	d.webhook_timestamp = a->res.signed_at >= 0 ? a->res.signed_at :
	    (int64_t)time(NULL);
	d.secret_fp = src->secrets[a->res.key_index].fingerprint;
	d.body = rv->body.data;
	d.body_len = rv->body.len;
	d.fields = &a->ev.fields;
	/* The one wait for the database, queued behind other deliveries
	 * included (receive/committer.h). */
	d.deadline = db_deadline(a, a->conf->busy_timeout_ms);
	s = site_store(a->site, a->r->long_lived, &d, &rv->err);
	if (s == INBOX_OK || s == INBOX_DUPLICATE) {
		a->text = s == INBOX_OK ? "stored\n" : "duplicate\n";
		return 200;
	}
	a->why = rv->err.data;
	return 503;
}

/* docs/DESIGN.md "The receiver's answers", in its order. */
static int (*const steps[])(struct receive *, struct attempt *) = {
	check_method,		/* 405 */
	take_site,		/* 503: misconfigured, inbox unopenable */
	take_source,		/* 404: the URL names no source */
	check_length,		/* 400, 413 by CONTENT_LENGTH */
	take_body,		/* 413, 408, 400; 503 out of memory */
	verify,			/* 401, 400 the provider's headers missing;
				 * 200, 204 a provider's ping answered */
	store,			/* 400 a source's id unusable; 200 new
				 * or duplicate, 503 */
};

int
receive_handle(struct receive *rv, struct site_cache *sites, struct request *r)
{
	struct attempt a;
	size_t i;
	int status = 0;

	memset(&a, 0, sizeof a);
	a.r = r;
	a.sites = sites;
	a.started = util_mono_ns();
	a.content_length = -1;
	a.hs.r = r;
	/* Allocated at the first request, kept for the thread's life:
	 * JOINED_SLOTS × 16 KiB, touched only by a repeated header. */
	if (rv->joined == NULL)
		rv->joined = malloc(JOINED_SLOTS * (JOINED_MAX + 1));
	a.hs.arena = rv->joined;
	/* Until the URL names a source, a refusal names the id a default
	 * source's delivery claims (webhook-id, svix-id). */
	{
		const struct scheme_headers h = headers_of(&a);

		a.id = scheme_claimed_id(scheme_find("standard"), NULL, &h);
	}
	for (i = 0; status == 0 && i < sizeof steps / sizeof steps[0]; i++)
		status = steps[i](rv, &a);
	if (status == 200)
		request_respond_typed(r, 200, "OK", a.content_type ?
		    a.content_type : "text/plain", rv->version, a.text);
	else if (status == 204)
		request_respond_typed(r, 204, "No Content", "text/plain",
		    rv->version, "");
	else
		refuse(r, status, a.src, a.id, a.why);
	scheme_event_free(&a.ev);
	site_release(a.site);
	/* A 1 MiB body should not pin 1 MiB per idle worker. */
	if (rv->body.size > 2 * REQUEST_READ_CHUNK) {
		buf_free(&rv->body);
		buf_init(&rv->body, 0);
	}
	return status;
}
