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
 *
 * Argument parsing, output and exit codes only; the inbox, the handler and
 * the lock live in lib/.  Exit codes: 0 success; 1 some event failed this
 * run (or, for status, something needs a human; for other commands, the
 * inbox could not be worked); 2 usage or config error.
 */
#include <errno.h>
#include <getopt.h>
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

#include "lib/config.h"
#include "lib/handler.h"
#include "lib/inbox.h"
#include "lib/instant.h"
#include "lib/runlock.h"
#include "lib/signature.h"
#include "lib/util.h"

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
	    "  run [--max-time SECONDS]     process due events, then purge (silent on success)\n"
	    "  status [--json] [--max-pending-age D] [--max-idle D]\n"
	    "                               counts per state, oldest pending, last run;\n"
	    "                               exits 1 when something needs a human\n"
	    "  list [FILTERS] [--limit N] [--json]\n"
	    "  show ID [--body] [--json]    one event (--body: the stored bytes only)\n"
	    "  requeue ID | FILTERS [--yes] make events due again (fresh retry budget)\n"
	    "  forget ID | FILTERS [--yes]  delete records so a replay is accepted again\n"
	    "  purge                        apply retention now\n"
	    "  send URL [FILE] [--id ID]    POST FILE (or stdin) signed with the first\n"
	    "                               whsec_ secret, as the provider would\n"
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

static struct inbox *
open_inbox(const struct config *c)
{
	struct inbox_options o = { c->busy_timeout, c->synchronous, 0 };
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

static cJSON *
event_json(const struct inbox_event *e, int with_body)
{
	cJSON *o = cJSON_CreateObject();

#define STR(k, v) do { if ((v) != NULL && *(v) != '\0') \
	cJSON_AddStringToObject(o, k, v); else cJSON_AddNullToObject(o, k); } while (0)
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
	OPT_MAX_IDLE, OPT_ID
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
	optind = 1;
	while ((ch = getopt_long(argc, argv, "", long_opts, NULL)) != -1) {
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
	int64_t d = c->retry_base;
	int64_t i;

	for (i = 0; i < failures && d < c->retry_max; i++)
		d *= 2;
	if (d > c->retry_max)
		d = c->retry_max;
	return d * NS * (750 + (int64_t)randombytes_uniform(500)) / 1000;
}

struct run_counts {
	int64_t	done, stale, failed, dead, skipped;
};

/* Hand one claimed event to the handler and record the verdict.  Returns 0,
 * or -1 when the inbox could not record it (the event stays pending and is
 * handed out again: at least once). */
static int
hand_out(struct inbox *ib, const struct config *c, struct inbox_event *e,
    int stale, struct run_counts *n)
{
	struct handler_result r;
	struct handler_env env[8];
	char attempt[32], idesc[1100];
	struct buf err;
	int dead = 0, rc = 0;
	size_t nenv = 0;

	buf_init(&err, 4096);
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
	util_escape(e->webhook_id, strlen(e->webhook_id), idesc, sizeof idesc);

	if (handler_run(c->handler, e->body.data ? e->body.data : "", e->body.len,
	    env, nenv, c->handler_timeout * NS, &r, &err) == -1) {
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
	n->failed++;
	if (inbox_finish_failed(ib, e, util_now_ns(),
	    retry_delay(c, e->failures), c->max_attempts, r.error, r.output,
	    r.output_len, &dead, &err) != INBOX_OK) {
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
	buf_free(&err);
	return rc;
}

static int
cmd_run(const struct config *c, struct opts *o)
{
	struct inbox_cursor cur;
	struct inbox_event e;
	struct run_counts n;
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
	buf_init(&err, 4096);
	lock = runlock_try(c->database, &err);
	if (lock == -2) {	/* another run is working: nothing to say */
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
	if (inbox_note_run(ib, util_now_ns(), NULL, &err) != INBOX_OK) {
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
		s = inbox_next_due(ib, &cur, util_now_ns(), c->settle * NS, &e, &err);
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
			if (hand_out(ib, c, &e, claim == INBOX_CLAIMED_STALE, &n) == -1)
				broken = 1;
			break;
		}
		if (broken)
			break;
	}
	inbox_event_free(&e);
	if (!broken && inbox_purge(ib, util_now_ns(), c->retention * NS, &bodies,
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
	char a[32], b[32], problems[3][160];
	int np = 0, i;

	if ((ib = open_inbox(c)) == NULL)
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
	if (r.last_run_started[0] == '\0') {
		if (r.pending > 0)
			snprintf(problems[np++], sizeof problems[0], "no drainer run "
			    "recorded yet: is the crontab line installed?");
	} else if (instant_to_ns(r.last_run_started, &t) == 0 &&
	    now - t > o->max_idle * NS) {
		snprintf(problems[np++], sizeof problems[0], "no drainer run for %s "
		    "(over --max-idle %llds): is cron running it?",
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
	if ((ib = open_inbox(c)) == NULL)
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
	if ((ib = open_inbox(c)) == NULL)
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
	if ((ib = open_inbox(c)) == NULL)
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

	if ((ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, 4096);
	if (inbox_purge(ib, util_now_ns(), c->retention * NS, &bodies, &rows,
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
	int rc = EXIT_FAILED;
	char chunk[65536];

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
	buf_init(&body, (size_t)64 << 20);
	buf_init(&content, (size_t)65 << 20);
	buf_init(&answer, 4096);
	buf_init(&line, 1024);
	if (o->nargs == 2 && strcmp(o->args[1], "-") != 0 &&
	    (in = fopen(o->args[1], "rb")) == NULL) {
		fprintf(stderr, "webhook-drain: %s: %s\n", o->args[1], strerror(errno));
		goto out;
	}
	while ((n = fread(chunk, 1, sizeof chunk, in)) > 0)
		if (buf_append(&body, chunk, n) == -1) {
			fprintf(stderr, "webhook-drain: body larger than 64 MiB\n");
			goto out;
		}
	if (id == NULL) {
		unsigned char rnd[12];
		randombytes_buf(rnd, sizeof rnd);
		memcpy(idbuf, "msg_", 4);
		sodium_bin2hex(idbuf + 4, sizeof idbuf - 4, rnd, sizeof rnd);
		id = idbuf;
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
	curl_easy_setopt(curl, CURLOPT_URL, o->args[0]);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body.data ? body.data : "");
	curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body.len);
	curl_easy_setopt(curl, CURLOPT_TIMEOUT, 15L);	/* the provider's limit */
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, curl_sink);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
	if (curl_easy_perform(curl) != CURLE_OK) {
		fprintf(stderr, "webhook-drain: send to %s failed\n", o->args[0]);
		goto out;
	}
	curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	while (answer.len > 0 && (answer.data[answer.len - 1] == '\n' ||
	    answer.data[answer.len - 1] == '\r'))
		answer.len--;
	printf("%ld webhook-id=%s ", status, id);
	print_escaped(stdout, answer.data ? answer.data : "", answer.len);
	putchar('\n');
	rc = status >= 200 && status < 300 ? 0 : EXIT_FAILED;
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

/* ---- main ---------------------------------------------------------------- */

int
main(int argc, char **argv)
{
	struct config c;
	struct opts o;
	const char *cmd;
	int ch, rc;

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
	else {
		fprintf(stderr, "webhook-drain: unknown command '%s'\n", cmd);
		usage();
		rc = EXIT_USAGE;
	}
	free(o.object_buf);
	config_free(&c);
	return rc;
}
