/*
 * webhook-drain: the drainer CLI (DESIGN.md "The drainer", contract).
 *
 *   webhook-drain [-c FILE] [-v] run [--max-time SECONDS]
 *   webhook-drain status [--json] [--max-pending-age D] [--max-idle D]
 *   webhook-drain list [FILTERS] [--limit N] [--json]
 *   webhook-drain show ID [--body] [--json]
 *   webhook-drain requeue ID | requeue FILTERS [--yes]
 *   webhook-drain forget ID | forget FILTERS [--yes]
 *   webhook-drain purge
 *   webhook-drain send URL [FILE] [--id ID]
 *   webhook-drain check [--document-root DIR]
 *   webhook-drain sync RESOURCE
 *   webhook-drain recover --since T
 *
 * Argument parsing, output and exit codes only; the inbox, the handler and
 * the lock live in lib/.  Exit codes: 0 success; 1 some event failed this
 * run (or, for status, something needs a human; for other commands, the
 * inbox could not be worked); 2 usage or config error.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <sodium.h>

#include "lib/api.h"
#include "lib/config.h"
#include "lib/event.h"
#include "lib/handler.h"
#include "lib/inbox.h"
#include "lib/instant.h"
#include "lib/runlock.h"
#include "lib/signature.h"
#include "lib/util.h"
#include "lib/version.h"
#include "lib/walsync.h"

/* Largest body `send` posts, bytes: above any max_body the config takes. */
#define SEND_BODY_MAX	(64 << 20)
#define EXIT_FAILED	1
#define EXIT_USAGE	2
#define NS		1000000000LL

static int verbose;
static const char *conf_arg;

static void
usage(void)
{
	fprintf(stderr,
	    "usage: webhook-drain [-c FILE] [-v] COMMAND [ARGS]\n"
	    "       webhook-drain --version\n"
	    "  run [--max-time SECONDS]     process due events, then purge (silent on success)\n"
	    "  status [--json] [--max-pending-age D] [--max-idle D]\n"
	    "                               counts per state, oldest pending, last run;\n"
	    "                               exits 1 when something needs a human\n"
	    "  list [FILTERS] [--limit N] [--json]\n"
	    "  show ID [--body] [--json]    one event (--body: the stored bytes only)\n"
	    "  requeue ID | FILTERS [--yes] make events due again (fresh retry budget)\n"
	    "  forget ID | FILTERS [--yes]  delete records so a replay is accepted again\n"
	    "  purge                        apply retention now\n"
	    "  send URL [FILE | --size N] [--id ID]\n"
	    "                               POST FILE (or stdin; on a terminal, a test\n"
	    "                               event; --size: one of N bytes) signed with\n"
	    "                               the first whsec_ secret, as the provider would\n"
	    "  check [--document-root DIR]  validate the setup as this user runs it\n"
	    "  sync RESOURCE                store objects changed since the last sync\n"
	    "                               (API updated_after) as events, then run\n"
	    "  recover --since T            store the provider's events (30 days max)\n"
	    "                               the inbox lacks, then run\n"
	    "FILTERS: --state S --type GLOB --object TYPE[:ID] --since T --until T\n"
	    "  (T: an ISO-8601 instant, or a duration back from now such as 2h)\n"
	    "config: -c FILE, else $WEBHOOK_CONF, else webhook.conf beside this program\n");
}

/* ---- config and inbox ---------------------------------------------------- */

static int
load_config(struct config *c)
{
	static char beside[PATH_MAX];
	const char *path = conf_arg;
	struct buf err;
	int rc;

	if (path == NULL || *path == '\0')
		path = getenv("WEBHOOK_CONF");
	if (path == NULL || *path == '\0') {
		char exe[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		char *slash;
		snprintf(beside, sizeof beside, "webhook.conf");
		if (n > 0) {
			exe[n] = '\0';
			if ((slash = strrchr(exe, '/')) != NULL) {
				*slash = '\0';
				if ((size_t)snprintf(beside, sizeof beside,
				    "%s/webhook.conf", exe) >= sizeof beside)
					snprintf(beside, sizeof beside, "webhook.conf");
			}
		}
		path = beside;
	}
	buf_init(&err, 4096);
	rc = config_load(path, c, &err);
	if (rc == -1)
		fprintf(stderr, "webhook-drain: %s\n", err.data);
	buf_free(&err);
	return rc;
}

/* For commands that read or change what is there: an inbox that does not
 * exist is a wrong `database` (or nothing received yet), not one to create
 * empty and report as fine.  Returns 1 when it exists; says so when not. */
static int
inbox_exists(const struct config *c)
{
	if (access(c->database, F_OK) == 0)
		return 1;
	fprintf(stderr, "webhook-drain: no inbox at %s: nothing received yet, "
	    "or `database` in %s names the wrong file\n", c->database, c->path);
	return 0;
}

static struct inbox *
open_inbox(const struct config *c)
{
	struct inbox_options o = { c->busy_timeout_ms, c->synchronous ==
	    CONFIG_SYNC_NORMAL ? INBOX_SYNC_NORMAL : INBOX_SYNC_FULL, 0, 0 };
	struct inbox *ib = NULL;
	struct buf err;

	buf_init(&err, 4096);
	if (inbox_open(c->database, &o, &ib, &err) != INBOX_OK)
		fprintf(stderr, "webhook-drain: %s\n", err.data);
	buf_free(&err);
	return ib;
}

/* ---- formatting ---------------------------------------------------------- */

/* "2026-11-30T07:21:22Z" from a normalised instant (seconds precision). */
static const char *
short_time(const char *instant, char out[32])
{
	if (instant == NULL || strlen(instant) != INSTANT_LEN) {
		snprintf(out, 32, "-");
		return out;
	}
	snprintf(out, 32, "%.19sZ", instant);
	return out;
}

/* "3m ago" / "in 2h" for a normalised instant against now. */
static const char *
relative(const char *instant, int64_t now_ns, char out[32])
{
	int64_t ns, d;
	const char *unit = "s", *dir;

	if (instant == NULL || instant_to_ns(instant, &ns) == -1) {
		snprintf(out, 32, "never");
		return out;
	}
	d = (now_ns - ns) / NS;
	dir = d >= 0 ? "ago" : "from now";
	if (d < 0)
		d = -d;
	if (d >= 2 * 86400) {
		d /= 86400;
		unit = "d";
	} else if (d >= 2 * 3600) {
		d /= 3600;
		unit = "h";
	} else if (d >= 120) {
		d /= 60;
		unit = "m";
	}
	snprintf(out, 32, "%lld%s %s", (long long)d, unit, dir);
	return out;
}

/* Print untrusted text (ids, types, outputs) so it cannot forge lines or
 * terminal escapes. */
static void
print_escaped(FILE *f, const char *s, size_t len)
{
	char *out;

	if (len > 65536)
		len = 65536;
	if ((out = malloc(len * 4 + 8)) == NULL)
		return;
	util_escape(s, len, out, len * 4 + 8);
	fputs(out, f);
	free(out);
}

/* Handler output for `show`: its own lines, each indented, other control
 * bytes escaped. */
static void
print_output(FILE *f, const char *s, size_t len)
{
	size_t i, start = 0;

	for (i = 0; i <= len; i++) {
		if (i == len || s[i] == '\n') {
			if (i > start || i < len) {
				fputs("  | ", f);
				print_escaped(f, s + start, i - start);
				fputc('\n', f);
			}
			start = i + 1;
		}
	}
}

static void
print_s(FILE *f, const char *s)
{
	if (s == NULL)
		fputs("-", f);
	else
		print_escaped(f, s, strlen(s));
}

/* Untrusted text (ids, types) may be any bytes, and JSON strings must be
 * valid UTF-8: non-ASCII and control bytes are written as \xHH text.
 * NULL or "" becomes null. */
static void
add_text(cJSON *o, const char *k, const char *v)
{
	char t[1100];

	if (v == NULL || *v == '\0') {
		cJSON_AddNullToObject(o, k);
		return;
	}
	util_escape(v, strlen(v), t, sizeof t);
	cJSON_AddStringToObject(o, k, t);
}

static cJSON *
event_json(const struct inbox_event *e, int with_body)
{
	cJSON *o = cJSON_CreateObject();

#define STR(k, v) add_text(o, k, v)
	STR("webhook_id", e->webhook_id);
	STR("state", e->state);
	cJSON_AddBoolToObject(o, "blocked", e->blocked);
	STR("type", e->type);
	STR("created_at", e->created_at_raw);
	STR("created_at_normalised", e->created_at);
	STR("object_type", e->object_type);
	STR("object_id", e->object_id);
	STR("updated_at", e->updated_at);
	cJSON_AddBoolToObject(o, "truncated", e->truncated);
	STR("received_at", e->received_at);
	cJSON_AddNumberToObject(o, "webhook_timestamp", (double)e->webhook_timestamp);
	STR("secret_fingerprint", e->secret_fp);
	cJSON_AddNumberToObject(o, "attempts", (double)e->attempts);
	cJSON_AddNumberToObject(o, "failures", (double)e->failures);
	STR("next_attempt_at", strcmp(e->state, "pending") == 0 ? e->next_at : NULL);
	STR("finished_at", e->finished_at);
	cJSON_AddBoolToObject(o, "requeued", e->requeued);
	STR("last_error", e->last_error);
	if (e->last_output.len > 0) {
		char *t = malloc(e->last_output.len * 4 + 8);
		if (t != NULL) {
			util_escape(e->last_output.data, e->last_output.len, t,
			    e->last_output.len * 4 + 8);
			cJSON_AddStringToObject(o, "last_output", t);
			free(t);
		}
	}
	cJSON_AddBoolToObject(o, "body_kept", e->has_body);
	if (with_body && e->has_body) {
		/* JSON strings must be text: base64 keeps any bytes exact. */
		size_t n = sodium_base64_ENCODED_LEN(e->body.len,
		    sodium_base64_VARIANT_ORIGINAL);
		char *t = malloc(n);
		if (t != NULL) {
			sodium_bin2base64(t, n, (const unsigned char *)
			    (e->body.data ? e->body.data : ""), e->body.len,
			    sodium_base64_VARIANT_ORIGINAL);
			cJSON_AddStringToObject(o, "body_base64", t);
			free(t);
		}
	}
#undef STR
	return o;
}

static void
print_json(cJSON *o)
{
	char *t = cJSON_PrintUnformatted(o);

	if (t != NULL) {
		puts(t);
		free(t);
	}
	cJSON_Delete(o);
}

/* ---- filters ------------------------------------------------------------- */

/* An operator's time: an ISO-8601 instant, or a duration back from now. */
static int
parse_when(const char *s, int64_t now_ns, int64_t *out)
{
	char norm[INSTANT_SIZE];
	int64_t secs;

	if (instant_parse(s, strlen(s), norm) == 0)
		return instant_to_ns(norm, out);
	if (util_parse_duration(s, 3650LL * 86400, &secs) == 0) {
		*out = now_ns - secs * NS;
		return 0;
	}
	return -1;
}

enum {
	OPT_STATE = 256, OPT_TYPE, OPT_OBJECT, OPT_SINCE, OPT_UNTIL, OPT_LIMIT,
	OPT_JSON, OPT_YES, OPT_BODY, OPT_MAX_TIME, OPT_MAX_PENDING_AGE,
	OPT_MAX_IDLE, OPT_ID, OPT_DOCROOT, OPT_SIZE
};

static const struct option long_opts[] = {
	{ "state", required_argument, NULL, OPT_STATE },
	{ "type", required_argument, NULL, OPT_TYPE },
	{ "object", required_argument, NULL, OPT_OBJECT },
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "limit", required_argument, NULL, OPT_LIMIT },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "yes", no_argument, NULL, OPT_YES },
	{ "body", no_argument, NULL, OPT_BODY },
	{ "max-time", required_argument, NULL, OPT_MAX_TIME },
	{ "max-pending-age", required_argument, NULL, OPT_MAX_PENDING_AGE },
	{ "max-idle", required_argument, NULL, OPT_MAX_IDLE },
	{ "id", required_argument, NULL, OPT_ID },
	{ "document-root", required_argument, NULL, OPT_DOCROOT },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ NULL, 0, NULL, 0 }
};

struct opts {
	struct inbox_filter	 filter;
	int			 nfilters;
	int			 json, yes, body;
	int64_t			 max_time;		/* seconds; 0 = none */
	int64_t			 max_pending_age;	/* seconds */
	int64_t			 max_idle;		/* seconds */
	const char		*id;
	const char		*docroot;
	int64_t			 size;		/* send --size: bytes; 0 = none */
	char			*object_buf;
	char			*args[4];		/* positional */
	int			 nargs;
};

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	int64_t now = util_now_ns();
	int ch;

	memset(o, 0, sizeof *o);
	o->max_pending_age = 3600;
	o->max_idle = 15 * 60;
	/* 0, not 1: glibc then starts afresh after main's "+c:vh" scan and
	 * takes options after positional arguments too (show ID --json). */
	optind = 0;
	while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
		/* An empty value is a typo or an unset shell variable, never "any":
		 * for forget that would mean every event. */
		if (optarg != NULL && *optarg == '\0') {
			fprintf(stderr, "webhook-drain: an option has an empty value\n");
			return -1;
		}
		switch (ch) {
		case OPT_STATE:
			if (strcmp(optarg, "pending") && strcmp(optarg, "done") &&
			    strcmp(optarg, "stale") && strcmp(optarg, "dead")) {
				fprintf(stderr, "webhook-drain: --state: one of "
				    "pending, done, stale, dead\n");
				return -1;
			}
			o->filter.state = optarg;
			o->nfilters++;
			break;
		case OPT_TYPE:
			o->filter.type_glob = optarg;
			o->nfilters++;
			break;
		case OPT_OBJECT: {
			char *colon;
			free(o->object_buf);
			if ((o->object_buf = strdup(optarg)) == NULL)
				return -1;
			if ((colon = strchr(o->object_buf, ':')) != NULL) {
				*colon = '\0';
				o->filter.object_id = colon + 1;
				if (colon[1] == '\0' || colon == o->object_buf) {
					fprintf(stderr, "webhook-drain: --object: "
					    "TYPE or TYPE:ID, neither empty\n");
					return -1;
				}
			}
			o->filter.object_type = o->object_buf;
			o->nfilters++;
			break;
		}
		case OPT_SINCE:
		case OPT_UNTIL:
			if (parse_when(optarg, now, ch == OPT_SINCE ?
			    &o->filter.since_ns : &o->filter.until_ns) == -1) {
				fprintf(stderr, "webhook-drain: %s: not an ISO-8601 "
				    "instant or a duration\n", optarg);
				return -1;
			}
			if (ch == OPT_SINCE)
				o->filter.has_since = 1;
			else
				o->filter.has_until = 1;
			o->nfilters++;
			break;
		case OPT_LIMIT:
			if (util_parse_int(optarg, 1, INT64_MAX, &o->filter.limit) == -1) {
				fprintf(stderr, "webhook-drain: --limit: a positive number\n");
				return -1;
			}
			break;
		case OPT_JSON:
			o->json = 1;
			break;
		case OPT_YES:
			o->yes = 1;
			break;
		case OPT_BODY:
			o->body = 1;
			break;
		case OPT_ID:
			o->id = optarg;
			break;
		case OPT_SIZE:
			if (util_parse_int(optarg, 1, SEND_BODY_MAX, &o->size) == -1) {
				fprintf(stderr, "webhook-drain: --size: a byte count "
				    "from 1 to %d\n", SEND_BODY_MAX);
				return -1;
			}
			break;
		case OPT_DOCROOT:
			o->docroot = optarg;
			break;
		case OPT_MAX_TIME:
		case OPT_MAX_PENDING_AGE:
		case OPT_MAX_IDLE: {
			int64_t v;
			if (util_parse_duration(optarg, 3650LL * 86400, &v) == -1 ||
			    v < 1) {
				fprintf(stderr, "webhook-drain: %s: not a duration\n",
				    optarg);
				return -1;
			}
			if (ch == OPT_MAX_TIME)
				o->max_time = v;
			else if (ch == OPT_MAX_PENDING_AGE)
				o->max_pending_age = v;
			else
				o->max_idle = v;
			break;
		}
		default:
			return -1;
		}
	}
	for (; optind < argc; optind++) {
		if (o->nargs == 4)
			return -1;
		if (argv[optind][0] == '\0') {
			fprintf(stderr, "webhook-drain: an empty argument (an unset "
			    "variable?)\n");
			return -1;
		}
		o->args[o->nargs++] = argv[optind];
	}
	return 0;
}

/* ---- run ----------------------------------------------------------------- */

/* Exponential backoff with jitter: retry_base × 2^(failures so far), at most
 * retry_max, times a random factor in [0.75, 1.25) so a burst of failures
 * does not come back in lockstep. */
static int64_t
retry_delay(const struct config *c, int64_t failures)
{
	int64_t d = c->retry_base_s;
	int64_t i;

	for (i = 0; i < failures && d < c->retry_max_s; i++)
		d *= 2;
	if (d > c->retry_max_s)
		d = c->retry_max_s;
	return d * NS * (750 + (int64_t)randombytes_uniform(500)) / 1000;
}

struct run_counts {
	int64_t	done, stale, failed, dead, skipped;
};

/* What one run keeps for its API calls. */
struct run_api {
	struct api	*api;		/* opened on first need */
	int		 open_failed;	/* said once per run */
	int64_t		 pause_until;	/* monotonic ns: the API asked us to wait */
};

/* The outcome of preparing what the handler gets for an event. */
enum refetch_result {
	REFETCH_NONE,		/* hand out the stored body */
	REFETCH_OK,		/* hand out the event with the fetched object */
	REFETCH_GONE,		/* 404: hand out the stored body, say it is gone */
	REFETCH_STALE,		/* the fetched object is older than what was done */
	REFETCH_FAILED		/* try again later (*retry_after_s may say when) */
};

/*
 * For a truncated event, or one matching `refetch`: GET the object and build
 * the body the handler gets — the stored event with `data` replaced by the
 * object (PROVIDER.md "Quando vier object_truncated, busque o objeto").
 * Without api_url a truncated event goes out as stored (WEBHOOK_TRUNCATED
 * tells the handler).  *out gets the new body (free it); e->object_version
 * the object's updated_at; why a short reason on failure.
 */
static enum refetch_result
refetch(struct inbox *ib, const struct config *c, struct run_api *ra,
    struct inbox_event *e, char **out, int64_t *retry_after_s, struct buf *why)
{
	char path[1024];
	struct buf url, err;
	cJSON *obj = NULL, *body = NULL;
	const cJSON *id, *upd;
	enum refetch_result res = REFETCH_FAILED;
	enum api_status as;
	int stale = 0;

	*out = NULL;
	*retry_after_s = 0;
	if ((!e->truncated && !config_wants_refetch(c, e->type, e->object_type)) ||
	    e->object_type == NULL || e->object_id == NULL ||
	    (c->api_url == NULL && !config_wants_refetch(c, e->type,
	    e->object_type)))
		return REFETCH_NONE;
	buf_init(&url, 4096);
	buf_init(&err, 4096);
	buf_reset(why);
	if (ra->api == NULL) {
		if (ra->open_failed || api_open(c, &ra->api, &err) == -1) {
			if (!ra->open_failed)
				fprintf(stderr, "webhook-drain: refetch: %s\n", err.data);
			ra->open_failed = 1;
			(void)buf_printf(why, "refetch: the API client is not configured");
			goto out;
		}
	}
	if (ra->pause_until > util_mono_ns()) {
		*retry_after_s = (ra->pause_until - util_mono_ns()) / NS + 1;
		(void)buf_printf(why, "refetch: the API asked us to wait");
		goto out;
	}
	if (config_resource_path(c, e->object_type, path, sizeof path) == -1 ||
	    buf_append(&url, path, strlen(path)) == -1 ||
	    buf_append(&url, "/", 1) == -1 ||
	    api_escape(ra->api, e->object_id, &url) == -1) {
		(void)buf_printf(why, "refetch: resource path too long");
		goto out;
	}
	as = api_get(ra->api, url.data, &obj, retry_after_s, &err);
	if (as == API_NOT_FOUND) {
		res = REFETCH_GONE;
		goto out;
	}
	if (as != API_OK) {
		if (as == API_RETRY && *retry_after_s > 0)
			ra->pause_until = util_mono_ns() + *retry_after_s * NS;
		if (as == API_AUTH)
			fprintf(stderr, "webhook-drain: refetch: %s\n", err.data);
		(void)buf_printf(why, "refetch: %s", err.data);
		goto out;
	}
	/* The object must be the one asked for. */
	id = cJSON_GetObjectItemCaseSensitive(obj, "id");
	if (!cJSON_IsObject(obj) || id == NULL ||
	    !((cJSON_IsString(id) && strcmp(id->valuestring, e->object_id) == 0) ||
	    (cJSON_IsNumber(id) && (double)strtoll(e->object_id, NULL, 10) ==
	    id->valuedouble))) {
		(void)buf_printf(why, "refetch: GET %s: not the object asked for",
		    url.data);
		goto out;
	}
	upd = cJSON_GetObjectItemCaseSensitive(obj, "updated_at");
	e->object_version[0] = '\0';
	if (cJSON_IsString(upd) && instant_parse(upd->valuestring,
	    strlen(upd->valuestring), e->object_version) == -1)
		e->object_version[0] = '\0';
	if (e->object_version[0] != '\0' && !e->requeued) {
		/* Objects from the API carry updated_at as both clocks. */
		struct inbox_event probe = *e;
		memcpy(probe.created_at, e->object_version, INSTANT_SIZE);
		memcpy(probe.updated_at, e->object_version, INSTANT_SIZE);
		if (inbox_is_stale(ib, &probe, &stale, &err) != INBOX_OK) {
			(void)buf_printf(why, "%s", err.data);
			goto out;
		}
		if (stale) {
			res = REFETCH_STALE;
			goto out;
		}
	}
	body = cJSON_ParseWithLength(e->body.data ? e->body.data : "", e->body.len);
	if (!cJSON_IsObject(body)) {
		(void)buf_printf(why, "refetch: the stored event is not a JSON object");
		goto out;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(body, "data");
	cJSON_AddItemToObject(body, "data", obj);
	obj = NULL;	/* now owned by body */
	if ((*out = cJSON_PrintUnformatted(body)) == NULL) {
		(void)buf_printf(why, "refetch: out of memory");
		goto out;
	}
	res = REFETCH_OK;
out:
	if (res != REFETCH_OK)
		e->object_version[0] = '\0';
	cJSON_Delete(obj);
	cJSON_Delete(body);
	buf_free(&url);
	buf_free(&err);
	return res;
}

/* Hand one claimed event to the handler and record the verdict.  Returns 0,
 * or -1 when the inbox could not record it (the event stays pending and is
 * handed out again: at least once). */
static int
hand_out(struct inbox *ib, const struct config *c, struct run_api *ra,
    struct inbox_event *e, int stale, struct run_counts *n)
{
	struct handler_result r;
	struct handler_env env[16];
	char attempt[32], idesc[1100];
	struct buf err, why;
	enum refetch_result rf;
	int64_t retry_after_s = 0, delay;
	char *fetched = NULL;
	int dead = 0, rc = 0;
	size_t nenv = 0;

	buf_init(&err, 4096);
	buf_init(&why, 4096);
	snprintf(attempt, sizeof attempt, "%lld", (long long)e->attempts);
	env[nenv++] = (struct handler_env){ "WEBHOOK_ID", e->webhook_id };
	env[nenv++] = (struct handler_env){ "WEBHOOK_TYPE", e->type };
	env[nenv++] = (struct handler_env){ "WEBHOOK_CREATED_AT", e->created_at_raw };
	env[nenv++] = (struct handler_env){ "WEBHOOK_OBJECT", e->object_type };
	env[nenv++] = (struct handler_env){ "WEBHOOK_OBJECT_ID", e->object_id };
	env[nenv++] = (struct handler_env){ "WEBHOOK_ATTEMPT", attempt };
	/* Extension: set when an operator's requeue hands out an event that is
	 * older than what was already done for its object. */
	env[nenv++] = (struct handler_env){ "WEBHOOK_STALE", stale ? "1" : NULL };
	/* The API token is the drainer's, not the handler's to print. */
	env[nenv++] = (struct handler_env){ "WEBHOOK_API_TOKEN", NULL };
	util_escape(e->webhook_id, strlen(e->webhook_id), idesc, sizeof idesc);

	rf = refetch(ib, c, ra, e, &fetched, &retry_after_s, &why);
	env[nenv++] = (struct handler_env){ "WEBHOOK_REFETCHED",
	    rf == REFETCH_OK ? "1" : NULL };
	env[nenv++] = (struct handler_env){ "WEBHOOK_OBJECT_GONE",
	    rf == REFETCH_GONE ? "1" : NULL };
	env[nenv++] = (struct handler_env){ "WEBHOOK_TRUNCATED",
	    e->truncated && rf != REFETCH_OK ? "1" : NULL };
	if (rf == REFETCH_STALE) {
		if (inbox_finish_stale(ib, e, util_now_ns(), &err) != INBOX_OK) {
			fprintf(stderr, "webhook-drain: %s: %s\n", idesc, err.data);
			rc = -1;
		} else {
			n->stale++;
			if (verbose)
				printf("stale   %s (the API's object is older than what "
				    "was done)\n", idesc);
		}
		goto out;
	}
	if (rf == REFETCH_FAILED) {
		/* Not handed out; it counts as a failed attempt (a long API
		 * outage ends in `dead`, which an operator can requeue). */
		memset(&r, 0, sizeof r);
		snprintf(r.error, sizeof r.error, "%s", why.data ? why.data : "refetch failed");
		goto failed;
	}
	if (handler_run(c->handler, fetched != NULL ? fetched :
	    (e->body.data ? e->body.data : ""), fetched != NULL ? strlen(fetched) :
	    e->body.len, env, nenv, c->handler_timeout_s * NS, &r, &err) == -1) {
		snprintf(r.error, sizeof r.error, "could not start: %s", err.data);
		r.exited = 0;
		r.output_len = 0;
	}
	if (handler_ok(&r)) {
		if (inbox_finish_done(ib, e, util_now_ns(), r.output, r.output_len,
		    &err) != INBOX_OK) {
			fprintf(stderr, "webhook-drain: %s: handled, but not "
			    "recorded (it will be handed out again): %s\n", idesc,
			    err.data);
			rc = -1;
			goto out;
		}
		n->done++;
		if (verbose)
			printf("done    %s (attempt %lld, %.3f s)\n", idesc,
			    (long long)e->attempts, (double)r.elapsed_ns / 1e9);
		goto out;
	}
failed:
	n->failed++;
	delay = retry_delay(c, e->failures);
	if (retry_after_s * NS > delay)	/* the API's Retry-After is a floor */
		delay = retry_after_s * NS;
	if (inbox_finish_failed(ib, e, util_now_ns(), delay, c->max_attempts,
	    r.error, r.output, r.output_len, &dead, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s: failed (%s), and the failure "
		    "was not recorded: %s\n", idesc, r.error, err.data);
		rc = -1;
		goto out;
	}
	/* Cron mails whatever we print: say it on the first failure and on
	 * death, not at every retry in between. */
	if (dead) {
		n->dead++;
		fprintf(stderr, "webhook-drain: %s is dead after %lld failures "
		    "(last: %s); see 'webhook-drain show %s', then requeue or "
		    "forget it\n", idesc, (long long)(e->failures + 1), r.error,
		    idesc);
	} else if (e->failures == 0) {
		fprintf(stderr, "webhook-drain: %s failed (%s); it will be "
		    "retried with backoff, up to %lld attempts. Output tail: ",
		    idesc, r.error, (long long)c->max_attempts);
		print_escaped(stderr, r.output, r.output_len > 300 ? 300 : r.output_len);
		fputc('\n', stderr);
	} else if (verbose) {
		printf("retry   %s (%s; failure %lld of %lld)\n", idesc, r.error,
		    (long long)(e->failures + 1), (long long)c->max_attempts);
	}
out:
	free(fetched);
	buf_free(&err);
	buf_free(&why);
	return rc;
}

static int
cmd_run(const struct config *c, struct opts *o)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	struct run_counts n;
	struct run_api ra = { NULL, 0, 0 };
	struct inbox *ib = NULL;
	struct buf err;
	int64_t start = util_mono_ns(), bodies = 0, rows = 0;
	enum inbox_status s;
	char outcome[64];
	int lock, rc = EXIT_FAILED, broken = 0;

	if (c->handler == NULL) {
		fprintf(stderr, "webhook-drain: %s: handler: required for run\n",
		    c->path);
		return EXIT_USAGE;
	}
	/* No inbox yet: nothing was received; say nothing (cron). */
	if (access(c->database, F_OK) == -1 && errno == ENOENT) {
		if (verbose)
			printf("no inbox at %s yet: nothing received\n", c->database);
		return 0;
	}
	buf_init(&err, 4096);
	lock = runlock_try(c->database, &err);
	if (lock == -2) {	/* another run is working: nothing to say */
		/* ...here; but remember it, so that status can tell a lock
		 * held for hours (a handler's escaped daemon) from a dead cron. */
		if ((ib = open_inbox(c)) != NULL &&
		    inbox_note_lock(ib, util_now_ns(), 1, &err) != INBOX_OK)
			fprintf(stderr, "webhook-drain: %s\n", err.data);
		inbox_close(ib);
		if (verbose)
			printf("another run holds the lock (a run in progress, or a "
			    "handler started by a killed run, or a process such a "
			    "handler left behind); nothing done\n");
		buf_free(&err);
		return 0;
	}
	if (lock == -1) {
		fprintf(stderr, "webhook-drain: lock: %s\n", err.data);
		buf_free(&err);
		return EXIT_FAILED;
	}
	if ((ib = open_inbox(c)) == NULL)
		goto out;
	memset(&n, 0, sizeof n);
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e);
	/* Handlers run in the config file's directory: a relative path in
	 * `handler` means what it means for every other path in the file. */
	{
		char dir[PATH_MAX];
		const char *slash = strrchr(c->path, '/');
		if (slash != NULL && (size_t)(slash - c->path) < sizeof dir) {
			memcpy(dir, c->path, (size_t)(slash - c->path));
			dir[slash - c->path] = '\0';
			if (chdir(dir[0] ? dir : "/") == -1)
				fprintf(stderr, "webhook-drain: cannot enter %s: %s\n",
				    dir, strerror(errno));
		}
	}
	if (inbox_note_run(ib, util_now_ns(), NULL, &err) != INBOX_OK ||
	    inbox_note_lock(ib, util_now_ns(), 0, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		goto out;
	}
	for (;;) {
		enum inbox_claim claim;

		if (o->max_time > 0 && util_mono_ns() - start >= o->max_time * NS) {
			if (verbose)
				printf("stopping: --max-time %lld s reached\n",
				    (long long)o->max_time);
			break;
		}
		s = inbox_next_due(ib, &cur, util_now_ns(), c->settle_s * NS, &e, &err);
		if (s == INBOX_NOT_FOUND)
			break;
		if (s != INBOX_OK || inbox_claim(ib, &e, util_now_ns(), &claim,
		    &err) != INBOX_OK) {
			fprintf(stderr, "webhook-drain: %s\n", err.data);
			broken = 1;
			break;
		}
		switch (claim) {
		case INBOX_SKIPPED:
			n.skipped++;
			break;
		case INBOX_MARKED_STALE:
			n.stale++;
			if (verbose) {
				printf("stale   ");
				print_s(stdout, e.webhook_id);
				printf(" (older than what was done for ");
				print_s(stdout, e.object_type);
				putchar(' ');
				print_s(stdout, e.object_id);
				printf(")\n");
			}
			break;
		case INBOX_CLAIMED:
		case INBOX_CLAIMED_STALE:
			if (hand_out(ib, c, &ra, &e, claim == INBOX_CLAIMED_STALE,
			    &n) == -1)
				broken = 1;
			break;
		}
		if (broken)
			break;
	}
	inbox_event_free(&e);
	if (!broken && inbox_purge(ib, util_now_ns(), c->retention_s * NS, &bodies,
	    &rows, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: retention: %s\n", err.data);
		broken = 1;
	}
	snprintf(outcome, sizeof outcome, "%s: %lld done, %lld stale, %lld failed",
	    broken ? "error" : n.failed ? "failures" : "ok", (long long)n.done,
	    (long long)n.stale, (long long)n.failed);
	if (inbox_note_run(ib, util_now_ns(), outcome, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		broken = 1;
	}
	if (verbose)
		printf("run: %lld done, %lld stale, %lld failed (%lld dead); "
		    "retention dropped %lld bodies, %lld records\n",
		    (long long)n.done, (long long)n.stale, (long long)n.failed,
		    (long long)n.dead, (long long)bodies, (long long)rows);
	rc = broken || n.failed ? EXIT_FAILED : 0;
out:
	api_close(ra.api);
	inbox_close(ib);
	runlock_release(lock);
	buf_free(&err);
	return rc;
}

/* ---- status, list, show -------------------------------------------------- */

static int
cmd_status(const struct config *c, struct opts *o)
{
	struct inbox_status_report r;
	struct inbox *ib;
	struct buf err;
	int64_t now = util_now_ns(), t;
	char a[32], b[32], problems[4][PATH_MAX + 200];
	int np = 0, i;

	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, 4096);
	if (inbox_status_report(ib, &r, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		buf_free(&err);
		inbox_close(ib);
		return EXIT_FAILED;
	}
	buf_free(&err);
	inbox_close(ib);

	if (r.dead > 0)
		snprintf(problems[np++], sizeof problems[0], "%lld dead event%s: "
		    "webhook-drain list --state dead", (long long)r.dead,
		    r.dead == 1 ? "" : "s");
	if (r.oldest_pending[0] && instant_to_ns(r.oldest_pending, &t) == 0 &&
	    now - t > o->max_pending_age * NS)
		snprintf(problems[np++], sizeof problems[0], "oldest pending event "
		    "received %s (over --max-pending-age %llds)",
		    relative(r.oldest_pending, now, a), (long long)o->max_pending_age);
	if (r.lock_busy_since[0] && instant_to_ns(r.lock_busy_since, &t) == 0 &&
	    now - t > o->max_idle * NS) {
		snprintf(problems[np++], sizeof problems[0], "every run since %s "
		    "found the run lock held: a handler, or a process it left "
		    "behind (setsid, a daemon), still holds %s.drain-lock; see "
		    "`fuser -v %s.drain-lock`", relative(r.lock_busy_since, now, a),
		    c->database, c->database);
	} else if (r.last_run_started[0] == '\0') {
		if (r.pending > 0)
			snprintf(problems[np++], sizeof problems[0], "no drainer run "
			    "recorded yet: is the crontab line installed?");
	} else if (instant_to_ns(r.last_run_started, &t) == 0 &&
	    now - t > o->max_idle * NS) {
		snprintf(problems[np++], sizeof problems[0], "the last drainer run "
		    "started %s (over --max-idle %llds): is cron running it?",
		    relative(r.last_run_started, now, a), (long long)o->max_idle);
	}

	if (o->json) {
		cJSON *j = cJSON_CreateObject(), *arr;
		cJSON_AddNumberToObject(j, "pending", (double)r.pending);
		cJSON_AddNumberToObject(j, "waiting_retry", (double)r.waiting_retry);
		cJSON_AddNumberToObject(j, "blocked", (double)r.blocked);
		cJSON_AddNumberToObject(j, "done", (double)r.done);
		cJSON_AddNumberToObject(j, "stale", (double)r.stale);
		cJSON_AddNumberToObject(j, "dead", (double)r.dead);
		if (r.oldest_pending[0])
			cJSON_AddStringToObject(j, "oldest_pending_received_at",
			    r.oldest_pending);
		else
			cJSON_AddNullToObject(j, "oldest_pending_received_at");
		if (r.last_run_started[0])
			cJSON_AddStringToObject(j, "last_run_started", r.last_run_started);
		else
			cJSON_AddNullToObject(j, "last_run_started");
		if (r.last_run_finished[0])
			cJSON_AddStringToObject(j, "last_run_finished", r.last_run_finished);
		else
			cJSON_AddNullToObject(j, "last_run_finished");
		cJSON_AddStringToObject(j, "last_run_outcome", r.last_run_outcome);
		arr = cJSON_AddArrayToObject(j, "attention");
		for (i = 0; i < np; i++)
			cJSON_AddItemToArray(arr, cJSON_CreateString(problems[i]));
		print_json(j);
	} else {
		printf("pending  %lld", (long long)r.pending);
		if (r.waiting_retry || r.blocked)
			printf(" (%lld waiting for a retry, %lld blocked behind an "
			    "earlier event of their object)", (long long)r.waiting_retry,
			    (long long)r.blocked);
		printf("\ndone     %lld\nstale    %lld\ndead     %lld\n",
		    (long long)r.done, (long long)r.stale, (long long)r.dead);
		printf("oldest pending: %s\n", r.oldest_pending[0] ?
		    relative(r.oldest_pending, now, a) : "none");
		if (r.last_run_started[0])
			printf("last run: started %s (%s), %s\n",
			    short_time(r.last_run_started, b),
			    relative(r.last_run_started, now, a),
			    r.last_run_outcome[0] ? r.last_run_outcome : "?");
		else
			printf("last run: never\n");
		for (i = 0; i < np; i++)
			printf("attention: %s\n", problems[i]);
		if (np == 0)
			printf("ok\n");
	}
	return np > 0 ? EXIT_FAILED : 0;
}

struct list_ctx {
	int	json;
	int64_t	now;
	int64_t	n;
};

static int
list_one(const struct inbox_event *e, void *arg)
{
	struct list_ctx *lc = arg;
	char a[32], b[32];

	lc->n++;
	if (lc->json) {
		print_json(event_json(e, 0));
		return 0;
	}
	printf("%s  %-7s  %3lld  ", short_time(e->received_at, a), e->state,
	    (long long)e->attempts);
	print_s(stdout, e->webhook_id);
	putchar(' ');
	print_s(stdout, e->type);
	putchar(' ');
	if (e->object_type != NULL) {
		print_s(stdout, e->object_type);
		putchar(':');
		print_s(stdout, e->object_id);
	} else {
		putchar('-');
	}
	printf(" %s", e->created_at[0] ? short_time(e->created_at, b) : "-");
	if (strcmp(e->state, "pending") == 0) {
		if (e->blocked)
			printf("  blocked");
		else if (e->failures > 0)
			printf("  retry %s", relative(e->next_at, lc->now, b));
	}
	putchar('\n');
	return 0;
}

static int
cmd_list(const struct config *c, struct opts *o)
{
	struct list_ctx lc = { o->json, util_now_ns(), 0 };
	struct inbox *ib;
	struct buf err;
	int rc = 0;

	if (o->nargs > 0) {
		usage();
		return EXIT_USAGE;
	}
	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, 4096);
	if (inbox_list(ib, &o->filter, 0, list_one, &lc, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	inbox_close(ib);
	return rc;
}

static int
show_one(const struct inbox_event *e, void *arg)
{
	struct list_ctx *lc = arg;
	char a[32], b[32];

	lc->n++;
	if (lc->json == 2) {	/* --body: the stored bytes, nothing else */
		if (e->has_body && e->body.len > 0)
			fwrite(e->body.data, 1, e->body.len, stdout);
		return -1;
	}
	if (lc->json) {
		print_json(event_json(e, 1));
		return -1;
	}
	printf("webhook-id:    ");
	print_s(stdout, e->webhook_id);
	printf("\nstate:         %s", e->state);
	if (strcmp(e->state, "pending") == 0 && e->blocked)
		printf(" (blocked behind an earlier pending event of its object)");
	else if (strcmp(e->state, "pending") == 0 && e->failures > 0)
		printf(" (next attempt %s, %s)", short_time(e->next_at, a),
		    relative(e->next_at, lc->now, b));
	if (e->requeued)
		printf(" (requeued by an operator)");
	printf("\ntype:          ");
	print_s(stdout, e->type);
	printf("\nobject:        ");
	if (e->object_type) {
		print_s(stdout, e->object_type);
		putchar(' ');
		print_s(stdout, e->object_id);
	} else {
		putchar('-');
	}
	printf("\ncreated-at:    ");
	print_s(stdout, e->created_at_raw);
	if (e->created_at[0])
		printf("  (%s)", e->created_at);
	printf("\nupdated-at:    %s\n", e->updated_at[0] ? e->updated_at : "-");
	printf("truncated:     %s\n", e->truncated ? "yes" : "no");
	printf("received-at:   %s (%s)\n", e->received_at,
	    relative(e->received_at, lc->now, a));
	printf("sent-at:       %lld (webhook-timestamp)\n",
	    (long long)e->webhook_timestamp);
	printf("verified-by:   secret ");
	print_s(stdout, e->secret_fp);
	printf("\nattempts:      %lld (%lld failures since received or requeued)\n",
	    (long long)e->attempts, (long long)e->failures);
	printf("finished-at:   %s\n", e->finished_at[0] ? e->finished_at : "-");
	printf("last-error:    ");
	print_s(stdout, e->last_error);
	printf("\nlast-output:");
	if (e->last_output.len > 0) {
		putchar('\n');
		print_output(stdout, e->last_output.data, e->last_output.len);
	} else {
		printf("   -\n");
	}
	if (e->has_body)
		printf("body:          %zu bytes (webhook-drain show --body ID)\n",
		    e->body.len);
	else
		printf("body:          dropped by retention\n");
	return -1;
}

static int
cmd_show(const struct config *c, struct opts *o)
{
	struct list_ctx lc = { o->body ? 2 : o->json, util_now_ns(), 0 };
	struct inbox_filter f;
	struct inbox *ib;
	struct buf err;
	int rc = 0;

	if (o->nargs != 1) {
		usage();
		return EXIT_USAGE;
	}
	memset(&f, 0, sizeof f);
	f.webhook_id = o->args[0];
	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, 4096);
	if (inbox_list(ib, &f, 1, show_one, &lc, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
	} else if (lc.n == 0) {
		fprintf(stderr, "webhook-drain: no event ");
		print_s(stderr, o->args[0]);
		fputc('\n', stderr);
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	inbox_close(ib);
	return rc;
}

/* ---- requeue, forget, purge ---------------------------------------------- */

struct stale_ctx {
	struct inbox	*ib;
	int64_t		 stale;
	int64_t		 failed;
};

static int
count_stale(const struct inbox_event *e, void *arg)
{
	struct stale_ctx *sc = arg;
	struct buf err;
	int stale = 0;

	buf_init(&err, 1024);
	if (inbox_is_stale(sc->ib, e, &stale, &err) != INBOX_OK)
		sc->failed = 1;
	sc->stale += stale;
	buf_free(&err);
	return 0;
}

static int
cmd_requeue_forget(const struct config *c, struct opts *o, int requeue)
{
	const char *verb = requeue ? "requeue" : "forget";
	struct stale_ctx sc;
	struct inbox *ib;
	struct buf err;
	int64_t n = 0;
	int rc = 0;

	if (o->nargs == 1 && o->nfilters == 0) {
		o->filter.webhook_id = o->args[0];
		o->yes = 1;	/* one named event: act */
	} else if (o->nargs != 0 || o->nfilters == 0) {
		fprintf(stderr, "webhook-drain: %s takes one ID, or filters "
		    "(--state, --type, --object, --since, --until)\n", verb);
		return EXIT_USAGE;
	}
	if (requeue && o->filter.state == NULL && o->filter.webhook_id == NULL) {
		/* Requeueing done events in bulk is rarely meant; be explicit. */
		fprintf(stderr, "webhook-drain: requeue with filters needs --state\n");
		return EXIT_USAGE;
	}
	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, 4096);
	memset(&sc, 0, sizeof sc);
	sc.ib = ib;
	if (inbox_count(ib, &o->filter, &n, &err) != INBOX_OK ||
	    (requeue && inbox_list(ib, &o->filter, 0, count_stale, &sc,
	    &err) != INBOX_OK)) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
		goto out;
	}
	if (n == 0) {
		fprintf(stderr, "webhook-drain: no matching event\n");
		rc = EXIT_FAILED;
		goto out;
	}
	if (!o->yes) {
		printf("would %s %lld event%s", verb, (long long)n, n == 1 ? "" : "s");
		if (sc.stale)
			printf(" (%lld older than what was already done for their "
			    "object: they would be handed out anyway)",
			    (long long)sc.stale);
		printf("; run again with --yes\n");
		goto out;
	}
	if ((requeue ? inbox_requeue(ib, &o->filter, util_now_ns(), &n, &err) :
	    inbox_forget(ib, &o->filter, &n, &err)) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
		goto out;
	}
	printf("%s %lld event%s", requeue ? "requeued" : "forgot", (long long)n,
	    n == 1 ? "" : "s");
	if (requeue && sc.stale)
		printf("; %lld %s older than what was already done for %s object "
		    "and will be handed out anyway (WEBHOOK_STALE=1)",
		    (long long)sc.stale, sc.stale == 1 ? "is" : "are",
		    sc.stale == 1 ? "its" : "their");
	if (!requeue)
		printf("; a replay is now accepted as new, and handed out if it is "
		    "still the newest for its object");
	putchar('\n');
out:
	buf_free(&err);
	inbox_close(ib);
	return rc;
}

static int
cmd_purge(const struct config *c)
{
	struct inbox *ib;
	struct buf err;
	int64_t bodies, rows;
	int rc = 0;

	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, 4096);
	if (inbox_purge(ib, util_now_ns(), c->retention_s * NS, &bodies, &rows,
	    &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
	} else {
		printf("dropped %lld bodies, %lld records\n", (long long)bodies,
		    (long long)rows);
	}
	buf_free(&err);
	inbox_close(ib);
	return rc;
}

/* ---- send ---------------------------------------------------------------- */

static size_t
curl_sink(char *p, size_t size, size_t n, void *arg)
{
	struct buf *b = arg;

	/* Show at most 2 KB of the answer, like the provider's delivery log. */
	if (b->len < 2048 && buf_append(b, p, size * n < 2048 - b->len ?
	    size * n : 2048 - b->len) == -1)
		return 0;	/* curl reports the write error */
	return size * n;
}

/* Did the answer carry the receiver's mark (webhook.fcgi.c, respond)? */
static size_t
curl_header(char *p, size_t size, size_t n, void *arg)
{
	static const char mark[] = "x-webhook-inbox:";
	int *ours = arg;

	if (size * n >= sizeof mark - 1 &&
	    strncasecmp(p, mark, sizeof mark - 1) == 0)
		*ours = 1;
	return size * n;
}

/* A test event as the provider shapes them (type webhook_inbox.test, a
 * fresh createdAt), padded with a "filler" string to `size` bytes when it
 * is shorter.  Returns 0, or -1 when out of memory. */
static int
sample_body(const char *id, int64_t size, struct buf *body)
{
	char now[INSTANT_SIZE], *text = NULL;
	cJSON *ev = cJSON_CreateObject(), *data;
	size_t base;
	int rc = -1;

	if (ev == NULL || instant_format(util_now_ns(), now) == -1)
		goto out;
	now[19] = 'Z';		/* to the second, as the provider sends it */
	now[20] = '\0';
	cJSON_AddStringToObject(ev, "id", id);
	cJSON_AddStringToObject(ev, "type", "webhook_inbox.test");
	cJSON_AddStringToObject(ev, "createdAt", now);
	data = cJSON_AddObjectToObject(ev, "data");
	cJSON_AddStringToObject(data, "object", "webhook_inbox_test");
	cJSON_AddStringToObject(data, "id", id);
	cJSON_AddStringToObject(data, "filler", "");
	if ((text = cJSON_PrintUnformatted(ev)) == NULL)
		goto out;
	base = strlen(text);
	if (size > (int64_t)base) {
		char *fill = malloc((size_t)size - base + 1);
		if (fill == NULL)
			goto out;
		memset(fill, 'x', (size_t)size - base);
		fill[size - (int64_t)base] = '\0';
		cJSON_ReplaceItemInObject(data, "filler", cJSON_CreateString(fill));
		free(fill);
		free(text);
		if ((text = cJSON_PrintUnformatted(ev)) == NULL)
			goto out;
	}
	rc = buf_append(body, text, strlen(text));
out:
	free(text);
	cJSON_Delete(ev);
	return rc;
}

static int
cmd_send(const struct config *c, struct opts *o)
{
	const struct signature_key *key = NULL;
	struct curl_slist *h = NULL;
	struct buf body, content, answer, line;
	char sig[128], idbuf[64], tsbuf[32];
	const char *id = o->id;
	FILE *in = stdin;
	CURL *curl = NULL;
	long status = 0;
	size_t i, n;
	int rc = EXIT_FAILED, ours = 0, sample;
	char chunk[65536];

	if (o->size > 0 && o->nargs == 2) {
		fprintf(stderr, "webhook-drain: send: FILE or --size, not both\n");
		return EXIT_USAGE;
	}
	if (o->nargs < 1 || o->nargs > 2) {
		usage();
		return EXIT_USAGE;
	}
	for (i = 0; i < c->nsecrets && key == NULL; i++)
		if (c->secrets[i].kind == SIGNATURE_HMAC_SHA256)
			key = &c->secrets[i];
	if (key == NULL) {
		fprintf(stderr, "webhook-drain: send needs a whsec_ secret in %s\n",
		    c->path);
		return EXIT_USAGE;
	}
	buf_init(&body, SEND_BODY_MAX);
	buf_init(&content, (size_t)SEND_BODY_MAX + 1024);
	buf_init(&answer, 4096);
	buf_init(&line, 1024);
	if (id == NULL) {
		unsigned char rnd[12];
		randombytes_buf(rnd, sizeof rnd);
		memcpy(idbuf, "msg_", 4);
		sodium_bin2hex(idbuf + 4, sizeof idbuf - 4, rnd, sizeof rnd);
		id = idbuf;
	}
	/* No FILE: stdin, unless it is a terminal (a person trying the
	 * setup): then a test event, as with --size. */
	sample = o->size > 0 || (o->nargs == 1 && isatty(STDIN_FILENO));
	if (sample && sample_body(id, o->size, &body) == -1) {
		fprintf(stderr, "webhook-drain: out of memory\n");
		goto out;
	}
	if (!sample && o->nargs == 2 && strcmp(o->args[1], "-") != 0 &&
	    (in = fopen(o->args[1], "rb")) == NULL) {
		fprintf(stderr, "webhook-drain: %s: %s\n", o->args[1], strerror(errno));
		goto out;
	}
	while (!sample && (n = fread(chunk, 1, sizeof chunk, in)) > 0)
		if (buf_append(&body, chunk, n) == -1) {
			fprintf(stderr, "webhook-drain: body larger than 64 MiB\n");
			goto out;
		}
	/* A directory reads as nothing, and so does stdin under cron: an
	 * empty event stored and acknowledged would test nothing. */
	if (!sample && (ferror(in) || body.len == 0)) {
		fprintf(stderr, "webhook-drain: %s: %s; nothing sent (send --size "
		    "N URL sends a test event)\n", in == stdin ? "stdin" :
		    o->args[1], ferror(in) ? strerror(errno) : "empty");
		goto out;
	}
	snprintf(tsbuf, sizeof tsbuf, "%lld", (long long)time(NULL));
	if (buf_printf(&content, "%s.%s.", id, tsbuf) == -1 ||
	    buf_append(&content, body.data ? body.data : "", body.len) == -1 ||
	    signature_sign(key, (const unsigned char *)content.data, content.len,
	    sig, sizeof sig) == -1) {
		fprintf(stderr, "webhook-drain: cannot sign\n");
		goto out;
	}
	if ((curl = curl_easy_init()) == NULL)
		goto out;
#define HDR(...) do { buf_reset(&line); (void)buf_printf(&line, __VA_ARGS__); \
	h = curl_slist_append(h, line.data); } while (0)
	HDR("webhook-id: %s", id);
	HDR("webhook-timestamp: %s", tsbuf);
	HDR("webhook-signature: %s", sig);
	HDR("Content-Type: application/json");
#undef HDR
	api_curl_setup(curl, c);
	curl_easy_setopt(curl, CURLOPT_URL, o->args[0]);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data ? body.data : "");
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 15L);	/* the provider's limit */
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, curl_sink);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
	curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, curl_header);
	curl_easy_setopt(curl, CURLOPT_HEADERDATA, &ours);
	{
		char detail[CURL_ERROR_SIZE] = "";
		CURLcode cc;

		curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, detail);
		if ((cc = curl_easy_perform(curl)) != CURLE_OK) {
			const char *ca = api_ca_bundle(c);
			fprintf(stderr, "webhook-drain: send to %s failed: %s%s%s\n",
			    o->args[0], curl_easy_strerror(cc),
			    detail[0] ? ": " : "", detail);
			if (cc == CURLE_PEER_FAILED_VERIFICATION ||
			    cc == CURLE_SSL_CACERT_BADFILE)
				fprintf(stderr, "webhook-drain: the certificate was "
				    "checked against %s (api_ca_file in %s sets "
				    "another)\n", ca ? ca : "no CA bundle (none "
				    "found where distributions keep one)", c->path);
			goto out;
		}
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	while (answer.len > 0 && (answer.data[answer.len - 1] == '\n' ||
	    answer.data[answer.len - 1] == '\r'))
		answer.len--;
	printf("%ld webhook-id=%s ", status, id);
	if (ours)
		print_escaped(stdout, answer.data ? answer.data : "",
		    answer.len > 200 ? 200 : answer.len);
	else	/* a web server's page: its status says enough */
		printf("(not webhook.fcgi's answer: the web server answered "
		    "itself, the receiver never ran; HOSTING.md, step 5)");
	putchar('\n');
	rc = ours && status >= 200 && status < 300 ? 0 : EXIT_FAILED;
out:
	if (in != NULL && in != stdin)
		fclose(in);
	curl_slist_free_all(h);
	if (curl != NULL)
		curl_easy_cleanup(curl);
	buf_free(&body);
	buf_free(&content);
	buf_free(&answer);
	buf_free(&line);
	return rc;
}

/* ---- check --------------------------------------------------------------- */

struct findings {
	int	fail, warn;
};

static void
finding(struct findings *f, const char *level, const char *what,
    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* One line per finding: "ok   what: detail", "WARN …", "FAIL …"; a fix
 * follows on the same line after "—" where there is one. */
static void
finding(struct findings *f, const char *level, const char *what,
    const char *fmt, ...)
{
	va_list ap;

	if (strcmp(level, "FAIL") == 0)
		f->fail++;
	else if (strcmp(level, "WARN") == 0)
		f->warn++;
	printf("%-4s %s: ", level, what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* The program a shell command starts: the first word after any VAR=value
 * assignments, or NULL when the command is too shell-ish to tell. */
static char *
handler_program(const char *cmd)
{
	const char *p = cmd;

	for (;;) {
		size_t n;
		while (*p == ' ' || *p == '\t')
			p++;
		n = strcspn(p, " \t");
		if (n == 0)
			return NULL;
		if (memchr(p, '=', n) != NULL && p[0] != '=' && p[0] != '/') {
			p += n;		/* VAR=value */
			continue;
		}
		if (strcspn(p, "'\"$`\\(){};|&<>") < n)
			return NULL;
		return strndup(p, n);
	}
}

/* The script an interpreter runs ("php /x/h.php", "sh ./h.sh"): the first
 * argument after the program when it looks like a path; NULL otherwise. */
static char *
handler_script(const char *cmd)
{
	char *prog = handler_program(cmd);
	const char *p;
	size_t n;

	if (prog == NULL)
		return NULL;
	p = strstr(cmd, prog) + strlen(prog);
	free(prog);
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, " \t");
	if (n == 0 || *p == '-' || strcspn(p, "'\"$`\\(){};|&<>") < n ||
	    memchr(p, '/', n) == NULL)
		return NULL;
	return strndup(p, n);
}

/* Is `prog` (a path, or a name looked up in PATH) executable by us? */
static int
executable(const char *prog, char *found, size_t foundsz)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int ok = 0;

	if (strchr(prog, '/') != NULL) {
		snprintf(found, foundsz, "%s", prog);
		return access(prog, X_OK) == 0;
	}
	if ((copy = strdup(path ? path : "/usr/bin:/bin")) == NULL)
		return 0;
	for (dir = strtok_r(copy, ":", &save); dir != NULL && !ok;
	    dir = strtok_r(NULL, ":", &save)) {
		snprintf(found, foundsz, "%s/%s", dir, prog);
		ok = access(found, X_OK) == 0;
	}
	free(copy);
	return ok;
}

/* The counter page beside the inbox (lib/walsync.h), which this user's
 * processes must be able to share with the others'. */
static void
check_walsync(struct findings *f, const char *database, struct buf *err)
{
	struct walsync *ws = NULL;

	if (walsync_open(database, &ws, err) == 0)
		finding(f, "ok", "wal-sync", "%s.wal-sync is shared", database);
	else
		finding(f, "FAIL", "wal-sync", "%s — without it each process "
		    "syncs the WAL alone and checkpoints outside the schedule "
		    "that avoids SQLite's WAL-reset race (README, \"Two "
		    "users\"): chmod 660 it and give both users its group, or "
		    "remove it while no receiver runs", err->data);
	walsync_close(ws);
}

/*
 * check [--document-root DIR]: the setup as this user runs it, one finding
 * per line with how to fix it.  Exit 0 when nothing failed (warnings may
 * remain), 1 when something failed, 2 when the config does not load.
 */
static int
cmd_check(const struct config *c, struct opts *o)
{
	struct findings f = { 0, 0 };
	struct inbox *ib = NULL;
	struct buf err;
	struct stat sb;
	char *prog, found[PATH_MAX], dir[PATH_MAX];
	const char *slash;
	size_t i, nhmac = 0, ned = 0;

	buf_init(&err, 4096);
	finding(&f, "ok", "config", "%s loads", c->path);
	/* Judge relative handler paths where `run` runs them. */
	{
		const char *cslash = strrchr(c->path, '/');
		if (cslash != NULL && (size_t)(cslash - c->path) < sizeof dir) {
			memcpy(dir, c->path, (size_t)(cslash - c->path));
			dir[cslash - c->path] = '\0';
			if (chdir(dir[0] ? dir : "/") == -1)
				finding(&f, "WARN", "config", "cannot enter %s", dir);
		}
	}
	if (stat(c->path, &sb) == 0 && (sb.st_mode & S_IROTH))
		finding(&f, "WARN", "config", "%s is readable by every user and "
		    "holds the secret — chmod o-rwx %s", c->path, c->path);
	for (i = 0; i < c->nsecrets; i++) {
		if (c->secrets[i].kind == SIGNATURE_HMAC_SHA256)
			nhmac++;
		else
			ned++;
		finding(&f, "ok", "secret", "%s, fingerprint %s (as shown by "
		    "`list --json`)", c->secrets[i].kind == SIGNATURE_HMAC_SHA256 ?
		    "whsec_ HMAC-SHA256 (v1)" : "whpk_ Ed25519 public key (v1a)",
		    c->secrets[i].fingerprint);
	}
	if (c->max_body_bytes < 270000)
		finding(&f, "WARN", "max_body", "%lld bytes: the provider's bodies "
		    "reach ~260 KB — raise max_body to at least 300000",
		    (long long)c->max_body_bytes);

	if (o->docroot != NULL) {
		if (util_path_inside(o->docroot, c->path))
			finding(&f, "FAIL", "config", "%s is inside the document root "
			    "%s, where anyone can download it — move it outside and "
			    "point WEBHOOK_CONF at it", c->path, o->docroot);
		if (util_path_inside(o->docroot, c->database))
			finding(&f, "FAIL", "database", "%s is inside the document "
			    "root %s — move it outside and update `database`",
			    c->database, o->docroot);
		if (f.fail == 0)
			finding(&f, "ok", "document root", "config and database are "
			    "outside %s", o->docroot);
	}

	/* The database: opens (creating it if needed), WAL, writable. */
	if ((slash = strrchr(c->database, '/')) != NULL &&
	    (size_t)(slash - c->database) < sizeof dir) {
		memcpy(dir, c->database, (size_t)(slash - c->database));
		dir[slash - c->database] = '\0';
		if (dir[0] == '\0')
			snprintf(dir, sizeof dir, "/");
		if (stat(dir, &sb) == -1)
			finding(&f, "FAIL", "database", "its directory %s: %s — create "
			    "it (mkdir -m 2770 %s)", dir, strerror(errno), dir);
		else if (access(dir, W_OK | X_OK) == -1)
			finding(&f, "FAIL", "database", "this user cannot create files "
			    "in %s (SQLite needs to create the -wal and -shm files "
			    "there) — chmod g+w, or add this user to its group", dir);
		else if (sb.st_uid == geteuid() && (sb.st_mode & 077) == 0)
			finding(&f, "ok", "database", "%s is this user's alone: "
			    "the one-user setup (suEXEC runs the receiver as "
			    "you, as cron runs the drainer)", dir);
		else if (!(sb.st_mode & S_ISGID) || !(sb.st_mode & S_IWGRP))
			finding(&f, "WARN", "database", "%s is not a setgid, group-"
			    "writable directory: if the web server and cron run as "
			    "different users, the second one gets \"attempt to write "
			    "a readonly database\" — chmod 2770 %s and use one group",
			    dir, dir);
	}
	if ((ib = open_inbox(c)) == NULL) {
		finding(&f, "FAIL", "database", "%s does not open (above) — check "
		    "the path and permissions; WAL needs a local filesystem, not "
		    "NFS", c->database);
	} else {
		finding(&f, "ok", "database", "%s opens in WAL mode", c->database);
		if (inbox_probe_write(ib, &err) != INBOX_OK)
			finding(&f, "FAIL", "database", "this user cannot write it: %s "
			    "— give the web server's and the cron user one group, "
			    "chmod g+rw the database and its -wal and -shm files",
			    err.data);
		else
			finding(&f, "ok", "database", "writable by this user");
		inbox_close(ib);
		check_walsync(&f, c->database, &err);
	}

	/* The handler. */
	if (c->handler == NULL) {
		finding(&f, "FAIL", "handler", "not set: `run` has nothing to hand "
		    "events to — set handler = /path/to/your/script");
	} else if ((prog = handler_program(c->handler)) == NULL) {
		finding(&f, "WARN", "handler", "a shell construct; not checked — "
		    "run it by hand: echo '{}' | sh -c '<handler>'");
	} else {
		char *script = handler_script(c->handler);
		if (executable(prog, found, sizeof found))
			finding(&f, "ok", "handler", "%s is executable", found);
		else
			finding(&f, "FAIL", "handler", "%s is not an executable file "
			    "for this user — chmod +x it, or name its interpreter "
			    "(handler = /usr/bin/php /path/handler.php)", prog);
		/* "php /path/handler.php": the script must be there too. */
		if (script != NULL && access(script, R_OK) == -1)
			finding(&f, "FAIL", "handler", "%s: %s — the script the "
			    "handler runs is missing or unreadable for this user",
			    script, strerror(errno));
		free(script);
		free(prog);
	}

	/* The API, when configured. */
	if (c->api_url != NULL) {
		char *token = config_api_token(c, &err);
		if (token == NULL) {
			finding(&f, "FAIL", "api", "%s — put the token in a file only "
			    "the cron user can read", err.data);
		} else {
			sodium_memzero(token, strlen(token));
			free(token);
			finding(&f, "ok", "api", "%s, token readable", c->api_url);
			if (strncmp(c->api_url, "https://", 8) == 0) {
				const char *ca = api_ca_bundle(c);
				if (ca == NULL)
					finding(&f, "FAIL", "api", "no CA bundle found "
					    "where distributions keep one: https "
					    "cannot be verified — set api_ca_file = "
					    "/path/to/ca-bundle.crt");
				else if (access(ca, R_OK) == -1)
					finding(&f, "FAIL", "api", "%s: %s — fix "
					    "api_ca_file", ca, strerror(errno));
				else
					finding(&f, "ok", "api", "certificates "
					    "checked against %s", ca);
			}
			if (c->api_token_file != NULL &&
			    stat(c->api_token_file, &sb) == 0 &&
			    (sb.st_mode & (S_IRGRP | S_IROTH)))
				finding(&f, "WARN", "api", "%s is readable by others "
				    "— chmod 600 %s", c->api_token_file,
				    c->api_token_file);
		}
	}
	printf("%d failed, %d warnings\n", f.fail, f.warn);
	buf_free(&err);
	return f.fail ? EXIT_FAILED : 0;
}

/* ---- sync, recover -------------------------------------------------------- */

/* Objects per page we ask for. */
#define API_PAGE	100
/* Waits for a Retry-After within sync/recover, and how long at most. */
#define API_TRIES	5
#define API_WAIT_MAX	300

/* Progress on a terminal only: nothing on a pipe or under cron. */
struct progress {
	int	 on;
	int64_t	 start;		/* monotonic ns */
	int64_t	 from_ns;	/* the clock range being walked, for an ETA */
	int64_t	 to_ns;
	int64_t	 pages, items, stored;
};

static void
progress_show(struct progress *p, const char *what, const char *at)
{
	double secs = (double)(util_mono_ns() - p->start) / 1e9;
	int64_t at_ns;
	char eta[32] = "";

	if (!p->on)
		return;
	if (at != NULL && instant_to_ns(at, &at_ns) == 0 && at_ns > p->from_ns &&
	    p->to_ns > p->from_ns && secs > 0.5) {
		double done = (double)(at_ns - p->from_ns) / (double)(p->to_ns - p->from_ns);
		if (done > 0.01 && done < 1)
			snprintf(eta, sizeof eta, ", ETA %.0fs", secs / done - secs);
	}
	fprintf(stderr, "\r%s: %lld pages, %lld items (%lld new), %.0f/s%s   ",
	    what, (long long)p->pages, (long long)p->items, (long long)p->stored,
	    secs > 0 ? (double)p->items / secs : 0.0, eta);
	fflush(stderr);
}

/* GET with a few polite waits on Retry-After (a CLI run can afford them). */
static enum api_status
api_get_patiently(struct api *a, const char *path, cJSON **json, struct buf *err)
{
	enum api_status as = API_RETRY;
	int64_t ra;
	int i;

	for (i = 0; i < API_TRIES; i++) {
		as = api_get(a, path, json, &ra, err);
		if (as != API_RETRY)
			return as;
		if (ra <= 0)
			ra = 1LL << i;
		if (ra > API_WAIT_MAX)
			break;
		if (verbose)
			printf("waiting %llds: %s\n", (long long)ra, err->data);
		sleep((unsigned)ra);
	}
	return as;
}

/* A page's "data" array and "next_cursor" (a string or null). */
static int
page_parts(cJSON *page, const cJSON **data, const char **next)
{
	const cJSON *nc;

	*data = cJSON_GetObjectItemCaseSensitive(page, "data");
	nc = cJSON_GetObjectItemCaseSensitive(page, "next_cursor");
	*next = cJSON_IsString(nc) && nc->valuestring[0] ? nc->valuestring : NULL;
	return cJSON_IsArray(*data) && (nc == NULL || cJSON_IsNull(nc) ||
	    cJSON_IsString(nc)) ? 0 : -1;
}

/* One page's worth of deliveries: bodies and fields owned here. */
struct batch {
	struct inbox_delivery	d[API_PAGE * 5];
	struct event_fields	f[API_PAGE * 5];
	char			*bodies[API_PAGE * 5];
	char			 ids[API_PAGE * 5][64];
	size_t			 n;
};

static void
batch_free(struct batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		event_fields_free(&b->f[i]);
		free(b->bodies[i]);
	}
	b->n = 0;
}

/* Add one event (a JSON object we serialise: there is no signature to keep
 * byte-exact) under webhook_id. */
static int
batch_add(struct batch *b, const char *webhook_id, cJSON *event)
{
	size_t i = b->n;

	if (i == sizeof b->d / sizeof b->d[0] ||
	    (b->bodies[i] = cJSON_PrintUnformatted(event)) == NULL)
		return -1;
	snprintf(b->ids[i], sizeof b->ids[i], "%s", webhook_id);
	if (event_extract(b->ids[i], b->bodies[i], strlen(b->bodies[i]),
	    &b->f[i]) == -1) {
		free(b->bodies[i]);
		return -1;
	}
	b->d[i].webhook_id = b->ids[i];
	b->d[i].webhook_timestamp = (int64_t)time(NULL);
	b->d[i].secret_fp = "api";	/* not a webhook: it came from the API */
	b->d[i].body = b->bodies[i];
	b->d[i].body_len = strlen(b->bodies[i]);
	b->d[i].fields = &b->f[i];
	b->n++;
	return 0;
}

/* The stable id of a synced object version: the same version synced twice
 * is one event, deduplicated like any delivery. */
static void
sync_id(const char *kind, const char *id, const char *version, char out[64])
{
	unsigned char h[12];
	char hex[25];
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, sizeof h);
	crypto_generichash_update(&st, (const unsigned char *)kind, strlen(kind) + 1);
	crypto_generichash_update(&st, (const unsigned char *)id, strlen(id) + 1);
	crypto_generichash_update(&st, (const unsigned char *)version, strlen(version));
	crypto_generichash_final(&st, h, sizeof h);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	snprintf(out, 64, "sync_%s", hex);
}

static int cmd_run(const struct config *c, struct opts *o);

/*
 * Walk a paginated list of the API (PROVIDER-API.md: {"data": [...],
 * "next_cursor": …}): GET `base` (a path with its query), then base +
 * "&cursor=" + each next_cursor, handing every page's array to fn, which
 * returns 0 to go on.  `page` is where to start (NULL: the first page).
 * Returns 0 when the last page was handled, -1 after a failure (said).
 */
typedef int (*page_fn)(const cJSON *data, const char *next, void *arg);

static int
walk_pages(struct api *a, const char *what, const char *base, const char *page,
    page_fn fn, void *arg)
{
	struct buf path, err;
	cJSON *json = NULL;
	char *cursor = NULL;
	int rc = -1;

	buf_init(&path, 16384);
	buf_init(&err, 4096);
	if (page != NULL && (cursor = strdup(page)) == NULL)
		goto out;
	for (;;) {
		const cJSON *data;
		const char *next;

		buf_reset(&path);
		if (buf_append(&path, base, strlen(base)) == -1 ||
		    (cursor != NULL && (buf_printf(&path, "&cursor=") == -1 ||
		    api_escape(a, cursor, &path) == -1))) {
			fprintf(stderr, "webhook-drain: %s: query too long\n", what);
			goto out;
		}
		cJSON_Delete(json);
		json = NULL;
		if (api_get_patiently(a, path.data, &json, &err) != API_OK ||
		    page_parts(json, &data, &next) == -1) {
			fprintf(stderr, "webhook-drain: %s: %s\n", what, err.len ?
			    err.data : "the page is not {data, next_cursor}");
			goto out;
		}
		if (fn(data, next, arg) == -1)
			goto out;
		/* An API that hands back the cursor it was given would page
		 * forever. */
		if (next != NULL && cursor != NULL && strcmp(next, cursor) == 0) {
			fprintf(stderr, "webhook-drain: %s: the API returned the same "
			    "next_cursor again; stopping\n", what);
			goto out;
		}
		free(cursor);
		cursor = NULL;
		if (next == NULL)
			break;
		if ((cursor = strdup(next)) == NULL)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(json);
	free(cursor);
	buf_free(&path);
	buf_free(&err);
	return rc;
}

/* What sync and recover share while they walk. */
struct walk {
	const char	*what;		/* "sync clients", "recover" */
	struct inbox	*ib;
	struct batch	*b;
	struct progress	 pr;
	/* sync only */
	const char	*cursor_name;
	const char	*after;		/* updated_after of this query */
	char		*max_raw;	/* newest updated_at seen, as sent */
	char		 max_norm[INSTANT_SIZE];
};

/* Store one page's batch (with the cursor, for sync) in one transaction. */
static int
walk_store(struct walk *w, const char *after, const char *next, int nitems,
    const char *at)
{
	struct inbox_batch store = { .d = w->b->d, .n = w->b->n,
	    .cursor_name = w->cursor_name, .cursor_updated_after = after,
	    .cursor_page = next };
	struct buf err;
	int64_t stored = 0;
	int rc = 0;

	buf_init(&err, 4096);
	if (inbox_store_batch(w->ib, &store, &err) == INBOX_OK) {
		stored = store.stored;
	} else {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = -1;
	}
	batch_free(w->b);
	buf_free(&err);
	if (rc == -1)
		return -1;
	w->pr.pages++;
	w->pr.stored += stored;
	progress_show(&w->pr, w->what, at);
	if (verbose)
		printf("page %lld: %d items, %lld new\n", (long long)w->pr.pages,
		    nitems, (long long)stored);
	return 0;
}

/* sync: each object becomes a synthetic event. */
static int
sync_page(const cJSON *data, const char *next, void *arg)
{
	struct walk *w = arg;
	const cJSON *it;
	char type[300];

	cJSON_ArrayForEach(it, data) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(it, "object");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *upd = cJSON_GetObjectItemCaseSensitive(it, "updated_at");
		char idtext[300], norm[INSTANT_SIZE], wid[64];
		cJSON *ev;
		int bad;

		w->pr.items++;
		if (!cJSON_IsString(kind) || !cJSON_IsString(upd) ||
		    instant_parse(upd->valuestring, strlen(upd->valuestring),
		    norm) == -1 || !(cJSON_IsString(id) || cJSON_IsNumber(id)) ||
		    strlen(kind->valuestring) > 256) {
			fprintf(stderr, "webhook-drain: %s: skipped an object without "
			    "object, id or updated_at\n", w->what);
			continue;
		}
		if (cJSON_IsString(id))
			snprintf(idtext, sizeof idtext, "%s", id->valuestring);
		else
			snprintf(idtext, sizeof idtext, "%.0f", id->valuedouble);
		sync_id(kind->valuestring, idtext, norm, wid);
		snprintf(type, sizeof type, "%s.synced", kind->valuestring);
		/* The object's updated_at is the event clock and the object
		 * version: both clocks (DESIGN.md "Stale rule"). */
		if ((ev = cJSON_CreateObject()) == NULL)
			return -1;
		cJSON_AddStringToObject(ev, "id", wid);
		cJSON_AddStringToObject(ev, "type", type);
		cJSON_AddStringToObject(ev, "createdAt", upd->valuestring);
		cJSON_AddItemReferenceToObject(ev, "data", (cJSON *)it);
		bad = batch_add(w->b, wid, ev) == -1;
		cJSON_Delete(ev);
		if (bad) {
			fprintf(stderr, "webhook-drain: %s: out of memory\n", w->what);
			return -1;
		}
		if (strcmp(norm, w->max_norm) > 0) {
			memcpy(w->max_norm, norm, INSTANT_SIZE);
			free(w->max_raw);
			if ((w->max_raw = strdup(upd->valuestring)) == NULL)
				return -1;
		}
	}
	/* The cursor moves with the page, in the same transaction: a killed
	 * sync resumes at the first page not stored.  Within a query, follow
	 * next_cursor; after its last page, the next query starts after the
	 * newest updated_at seen. */
	return walk_store(w, next != NULL ? w->after :
	    (w->max_raw != NULL ? w->max_raw : w->after), next,
	    cJSON_GetArraySize(data), w->max_norm[0] ? w->max_norm : NULL);
}

/* recover: each event is stored under its own id. */
static int
recover_page(const cJSON *data, const char *next, void *arg)
{
	struct walk *w = arg;
	const cJSON *it;
	char last[INSTANT_SIZE] = "";

	(void)next;
	cJSON_ArrayForEach(it, data) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *ca = cJSON_GetObjectItemCaseSensitive(it, "createdAt");

		w->pr.items++;
		if (!cJSON_IsString(id) || id->valuestring[0] == '\0' ||
		    strlen(id->valuestring) > 63) {
			fprintf(stderr, "webhook-drain: recover: skipped an event "
			    "without a usable id\n");
			continue;
		}
		if (batch_add(w->b, id->valuestring, (cJSON *)it) == -1) {
			fprintf(stderr, "webhook-drain: recover: out of memory\n");
			return -1;
		}
		if (cJSON_IsString(ca) && instant_parse(ca->valuestring,
		    strlen(ca->valuestring), last) == -1)
			last[0] = '\0';
	}
	return walk_store(w, NULL, NULL, cJSON_GetArraySize(data),
	    last[0] ? last : NULL);
}

/* Open what a walk needs; 0, or an exit code. */
static int
walk_open(const struct config *c, struct walk *w, struct api **a)
{
	struct buf err;
	int rc = 0;

	w->pr.on = isatty(STDERR_FILENO) && !verbose;
	w->pr.start = util_mono_ns();
	w->pr.to_ns = util_now_ns();
	buf_init(&err, 4096);
	if ((w->b = calloc(1, sizeof *w->b)) == NULL) {
		rc = EXIT_FAILED;
	} else if (api_open(c, a, &err) == -1) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_USAGE;
	} else if ((w->ib = open_inbox(c)) == NULL) {
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	return rc;
}

static void
walk_close(struct walk *w, struct api *a)
{
	if (w->b != NULL)
		batch_free(w->b);
	free(w->b);
	free(w->max_raw);
	api_close(a);
	inbox_close(w->ib);
}

/*
 * sync RESOURCE: page through GET RESOURCE?updated_after=… from the cursor
 * stored in the inbox; each object becomes a synthetic event (type
 * "<object>.synced", a stable id, event clock = its updated_at) stored with
 * the cursor in one transaction per page; then a run hands them out.
 */
static int
cmd_sync(const struct config *c, struct opts *o)
{
	char *after = NULL, *page = NULL, cname[300], what[300];
	struct walk w;
	struct api *a = NULL;
	struct buf err, base;
	int rc;

	if (o->nargs != 1) {
		usage();
		return EXIT_USAGE;
	}
	if (strlen(o->args[0]) > 256 || strstr(o->args[0], "..") != NULL) {
		fprintf(stderr, "webhook-drain: sync: not a resource name\n");
		return EXIT_USAGE;
	}
	memset(&w, 0, sizeof w);
	snprintf(cname, sizeof cname, "sync:%s", o->args[0]);
	snprintf(what, sizeof what, "sync %s", o->args[0]);
	w.what = what;
	w.cursor_name = cname;
	buf_init(&err, 4096);
	buf_init(&base, 8192);
	if ((rc = walk_open(c, &w, &a)) != 0)
		goto out;
	rc = EXIT_FAILED;
	if (inbox_cursor_get(w.ib, cname, &after, &page, &err) != INBOX_OK) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		goto out;
	}
	w.after = after;
	if (after != NULL) {
		char norm[INSTANT_SIZE];
		if (instant_parse(after, strlen(after), norm) == 0)
			(void)instant_to_ns(norm, &w.pr.from_ns);
	}
	if (buf_printf(&base, "%s?limit=%d", o->args[0], API_PAGE) == -1 ||
	    (after != NULL && (buf_printf(&base, "&updated_after=") == -1 ||
	    api_escape(a, after, &base) == -1)) ||
	    walk_pages(a, what, base.data, page, sync_page, &w) == -1)
		goto out;
	if (w.pr.on)
		fputc('\n', stderr);
	if (verbose || w.pr.on)
		printf("%s: %lld objects, %lld new events\n", what,
		    (long long)w.pr.items, (long long)w.pr.stored);
	rc = 0;
out:
	walk_close(&w, a);
	free(after);
	free(page);
	buf_free(&err);
	buf_free(&base);
	/* Hand the new events out now (cron's next run would too). */
	if (rc == 0 && c->handler != NULL)
		rc = cmd_run(c, o);
	return rc;
}

/* The provider's events list reaches 30 days back (PROVIDER.md). */
#define RECOVER_MAX_NS	(30LL * 86400 * NS)

/*
 * recover --since T: read the provider's events list from T and store every
 * event the inbox lacks under its own webhook-id (so a later retry of it is
 * a duplicate); then a run hands them out in order.
 */
static int
cmd_recover(const struct config *c, struct opts *o)
{
	char since[INSTANT_SIZE];
	struct walk w;
	struct api *a = NULL;
	struct buf base;
	int64_t now = util_now_ns(), since_ns = o->filter.since_ns;
	int rc;

	if (o->nargs != 0 || !o->filter.has_since) {
		fprintf(stderr, "webhook-drain: recover needs --since TIME (an "
		    "ISO-8601 instant, or a duration back from now such as 3d)\n");
		return EXIT_USAGE;
	}
	if (now - since_ns > RECOVER_MAX_NS) {
		since_ns = now - RECOVER_MAX_NS;
		fprintf(stderr, "webhook-drain: recover: the provider keeps 30 days "
		    "of events; starting 30 days back\n");
	}
	if (instant_format(since_ns, since) == -1)
		return EXIT_USAGE;
	memset(&w, 0, sizeof w);
	w.what = "recover";
	buf_init(&base, 8192);
	if ((rc = walk_open(c, &w, &a)) != 0)
		goto out;
	w.pr.from_ns = since_ns;
	w.pr.to_ns = now;
	rc = EXIT_FAILED;
	if (buf_printf(&base, "events?limit=%d&since=", API_PAGE) == -1 ||
	    api_escape(a, since, &base) == -1 ||
	    walk_pages(a, "recover", base.data, NULL, recover_page, &w) == -1)
		goto out;
	if (w.pr.on)
		fputc('\n', stderr);
	if (verbose || w.pr.on)
		printf("recover: %lld events listed, %lld were missing and are now "
		    "stored\n", (long long)w.pr.items, (long long)w.pr.stored);
	rc = 0;
out:
	walk_close(&w, a);
	buf_free(&base);
	if (rc == 0 && c->handler != NULL)
		rc = cmd_run(c, o);
	return rc;
}

/* ---- main ---------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	struct config c;
	struct opts o;
	const char *cmd;
	int ch, rc;

	if (argc == 2 && strcmp(argv[1], "--help") == 0) {
		usage();
		return 0;
	}
	if (argc == 2 && (strcmp(argv[1], "--version") == 0 ||
	    strcmp(argv[1], "-V") == 0)) {
		version_print(stdout, "webhook-drain");
		printf("libcurl: %s\n", curl_version());
		return 0;
	}
	log_init("webhook-drain");
	/* A handler that exits without reading its stdin must not kill us. */
	signal(SIGPIPE, SIG_IGN);
	if (sodium_init() < 0) {
		fprintf(stderr, "webhook-drain: libsodium failed to initialise\n");
		return EXIT_FAILED;
	}
	/* Global options stop at the command word. */
	while ((ch = getopt(argc, argv, "+c:vh")) != -1) {
		switch (ch) {
		case 'c':
			conf_arg = optarg;
			break;
		case 'v':
			verbose = 1;
			break;
		case 'h':
			usage();
			return 0;
		default:
			usage();
			return EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage();
		return EXIT_USAGE;
	}
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	{
		static const char *const known[] = { "run", "status", "list", "show",
		    "requeue", "forget", "purge", "send", "check", "sync", "recover" };
		size_t k;
		for (k = 0; k < sizeof known / sizeof known[0]; k++)
			if (strcmp(cmd, known[k]) == 0)
				break;
		if (k == sizeof known / sizeof known[0]) {
			fprintf(stderr, "webhook-drain: unknown command '%s'\n", cmd);
			usage();
			return EXIT_USAGE;
		}
	}
	if (parse_opts(argc, argv, &o) == -1) {
		usage();
		free(o.object_buf);
		return EXIT_USAGE;
	}
	if (load_config(&c) == -1) {
		free(o.object_buf);
		return EXIT_USAGE;
	}
	log_open(c.log);
	if (strcmp(cmd, "run") == 0)
		rc = o.nargs ? (usage(), EXIT_USAGE) : cmd_run(&c, &o);
	else if (strcmp(cmd, "status") == 0)
		rc = cmd_status(&c, &o);
	else if (strcmp(cmd, "list") == 0)
		rc = cmd_list(&c, &o);
	else if (strcmp(cmd, "show") == 0)
		rc = cmd_show(&c, &o);
	else if (strcmp(cmd, "requeue") == 0)
		rc = cmd_requeue_forget(&c, &o, 1);
	else if (strcmp(cmd, "forget") == 0)
		rc = cmd_requeue_forget(&c, &o, 0);
	else if (strcmp(cmd, "purge") == 0)
		rc = cmd_purge(&c);
	else if (strcmp(cmd, "send") == 0)
		rc = cmd_send(&c, &o);
	else if (strcmp(cmd, "check") == 0)
		rc = cmd_check(&c, &o);
	else if (strcmp(cmd, "sync") == 0)
		rc = cmd_sync(&c, &o);
	else if (strcmp(cmd, "recover") == 0)
		rc = cmd_recover(&c, &o);
	else {
		fprintf(stderr, "webhook-drain: unknown command '%s'\n", cmd);
		usage();
		rc = EXIT_USAGE;
	}
	free(o.object_buf);
	config_free(&c);
	return rc;
}
