/*
 * webhook-drain: the drainer CLI (docs/DESIGN.md "The drainer", contract).
 *
 *   webhook-drain [-c FILE] [-v] run [--max-time SECONDS] [--jobs N] [--ping URL]
 *   webhook-drain status [--json] [--max-pending-age D] [--max-idle D]
 *                        [--max-failing D]
 *   webhook-drain list [FILTERS] [--limit N] [--json]
 *   webhook-drain show ID [--body] [--json]
 *   webhook-drain try ID [--record]
 *   webhook-drain requeue ID | requeue FILTERS [--yes]
 *   webhook-drain forget ID | forget FILTERS [--yes]
 *   webhook-drain purge
 *   webhook-drain send [--source NAME] URL [FILE] [--id ID]
 *   webhook-drain check [--document-root DIR] [--handler] [--url URL]
 *   webhook-drain sync RESOURCE
 *   webhook-drain recover --since T
 *   webhook-drain copy --to DATABASE [--dry-run]
 *
 * Argument parsing, output and exit codes only: each cmd_* parses, makes
 * one library call and prints what it reports: the run is lib/drain/,
 * the other commands lib/operator/, the inbox lib/store/
 * (docs/DESIGN.md "Layout").
 * Exit codes (README, one table per command): 0 success, also for a
 * requeue/forget filter that matches nothing; 1 some event failed this
 * run (or, for status, something needs a human; for try and check, the
 * handler or a check failed; for other commands, the inbox could not be
 * worked); 2 usage or config error.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <curl/curl.h>
#include <sodium.h>

#include "lib/common/util.h"
#include "lib/drain/api.h"
#include "lib/drain/drain.h"
#include "lib/drain/paging.h"
#include "lib/operator/bulk.h"
#include "lib/operator/copy.h"
#include "lib/operator/digest.h"
#include "lib/operator/present.h"
#include "lib/operator/probe.h"
#include "lib/operator/sender.h"
#include "lib/operator/setup_check.h"
#include "lib/operator/status.h"
#include "lib/operator/trial.h"
#include "lib/program/config.h"
#include "lib/program/version.h"
#include "lib/report/report.h"
#include "lib/report/runrec.h"
#include "lib/store/inbox.h"

#define EXIT_FAILED	1
#define EXIT_USAGE	2
#define NS		1000000000LL

static int verbose;
static const char *conf_arg;
/* check: the errors of a config that did not load whole (load_config). */
static int config_errors;

static void
usage(void)
{
	fprintf(stderr,
	    "usage: webhook-drain [-c FILE] [-v] COMMAND [ARGS]\n"
	    "       webhook-drain --version\n"
	    "  run [--max-time SECONDS] [--jobs N] [--ping URL] [--report DIR]\n"
	    "      [--metrics FILE]         process due events, then purge (silent on\n"
	    "                               success); --jobs: up to N handlers at once\n"
	    "                               (1-64; default: the config's jobs, 1);\n"
	    "                               --ping: POST URL (URL/fail on\n"
	    "                               failure) after the run, for a monitor;\n"
	    "                               --report/--metrics: refresh the report page\n"
	    "  report [--out DIR] [--metrics FILE]\n"
	    "                               DIR/index.html and DIR/metrics.prom (DIR: .)\n"
	    "  status [--json] [--max-pending-age D] [--max-idle D] [--max-failing D]\n"
	    "                               counts per state, oldest pending, last run;\n"
	    "                               exits 1 when something needs a human\n"
	    "  list [FILTERS] [--limit N] [--json]\n"
	    "  show ID [--body] [--json]    one event (--body: the stored bytes only)\n"
	    "  try ID [--record]            run the handler on it now, as a run would;\n"
	    "                               the inbox is not changed (--record: the\n"
	    "                               outcome is recorded as a run's)\n"
	    "  requeue ID | FILTERS [--yes] make events due again (fresh retry budget)\n"
	    "  forget ID | FILTERS [--yes]  delete records so a replay is accepted again\n"
	    "  purge                        apply retention now\n"
	    "  send [--source NAME] URL [FILE | --size N] [--id ID]\n"
	    "                               POST FILE (or stdin; on a terminal, a test\n"
	    "                               event; --size: one of N bytes) signed with\n"
	    "                               the first whsec_ secret, as the provider would;\n"
	    "                               --source: as [source NAME]'s provider signs,\n"
	    "                               with its first secret, to URL (its /NAME)\n"
	    "  check [--document-root DIR] [--handler] [--url URL]\n"
	    "                               validate the setup as this user runs it;\n"
	    "                               --handler: run it on a test event\n"
	    "                               (WEBHOOK_TEST=1); --url: probe the endpoint,\n"
	    "                               and send each [source NAME] a test to URL/NAME\n"
	    "  sync RESOURCE                store objects changed since the last sync\n"
	    "                               (API updated_after) as events, then run\n"
	    "  recover --since T            store the provider's events (30 days max)\n"
	    "                               the inbox lacks, then run\n"
	    "  copy --to DATABASE [--dry-run]\n"
	    "                               copy this inbox into another, repeatable\n"
	    "                               (docs/moving.md: moving a live inbox)\n"
	    "FILTERS: --state S (pending, retrying, done, stale, dead) --failing\n"
	    "  (= --state retrying) --type GLOB --object TYPE[:ID] --source NAME\n"
	    "  --since T --until T\n"
	    "  (T: an ISO-8601 instant, or a duration back from now such as 2h)\n"
	    "config: -c FILE, else $WEBHOOK_CONF, else webhook.conf beside this program\n");
}

/* ---- config and inbox ---------------------------------------------------- */

static int
load_config(struct config *c, int all)
{
	static char beside[PATH_MAX];
	const char *path = conf_arg;
	char *line, *next;
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
	buf_init(&err, 64 * 1024);
	/* check reports every error of the file in one pass. */
	rc = all ? config_load_all(path, c, &err) : config_load(path, c, &err);
	/* A broken config still names its log (config.h): the operator
	 * reads the receiver's lines there too. */
	if (rc == -1 && c->log != NULL)
		log_open(c->log);
	for (line = rc == -1 ? err.data : NULL; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		fprintf(stderr, "webhook-drain: %s\n", line);
		if (*line != '\0')
			config_errors++;
		if (log_is_file())
			log_msg("config: %s", line);
	}
	buf_free(&err);
	return rc;
}

/* A missing inbox is a wrong `database` (or nothing received yet), not one
 * to create empty for a command that reads it: 1 when it exists, else 0. */
static int
inbox_exists(const struct config *c)
{
	if (!inbox_is_file(c->database) || access(c->database, F_OK) == 0)
		return 1;
	fprintf(stderr, "webhook-drain: no inbox at %s: nothing received yet, "
	    "or `database` in %s names the wrong file\n", c->database, c->path);
	return 0;
}

static struct inbox *
open_inbox(const struct config *c)
{
	struct inbox *ib;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	if ((ib = drain_inbox_open(c, &err)) == NULL)
		fprintf(stderr, "webhook-drain: %s\n", err.data);
	buf_free(&err);
	return ib;
}

/* ---- filters ------------------------------------------------------------- */

enum {
	OPT_STATE = 256, OPT_TYPE, OPT_OBJECT, OPT_SINCE, OPT_UNTIL, OPT_LIMIT,
	OPT_JSON, OPT_YES, OPT_BODY, OPT_MAX_TIME, OPT_MAX_PENDING_AGE,
	OPT_MAX_IDLE, OPT_ID, OPT_DOCROOT, OPT_SIZE, OPT_MAX_FAILING, OPT_PING,
	OPT_HANDLER, OPT_URL, OPT_REPORT, OPT_METRICS, OPT_FAILING, OPT_RECORD,
	OPT_JOBS, OPT_TO, OPT_DRY_RUN, OPT_SOURCE
};

static const struct option long_opts[] = {
	{ "state", required_argument, NULL, OPT_STATE },
	{ "failing", no_argument, NULL, OPT_FAILING },
	{ "record", no_argument, NULL, OPT_RECORD },
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
	{ "max-failing", required_argument, NULL, OPT_MAX_FAILING },
	{ "ping", required_argument, NULL, OPT_PING },
	{ "handler", no_argument, NULL, OPT_HANDLER },
	{ "url", required_argument, NULL, OPT_URL },
	{ "id", required_argument, NULL, OPT_ID },
	{ "document-root", required_argument, NULL, OPT_DOCROOT },
	{ "size", required_argument, NULL, OPT_SIZE },
	{ "report", required_argument, NULL, OPT_REPORT },
	{ "out", required_argument, NULL, OPT_REPORT },
	{ "metrics", required_argument, NULL, OPT_METRICS },
	{ "jobs", required_argument, NULL, OPT_JOBS },
	{ "to", required_argument, NULL, OPT_TO },
	{ "dry-run", no_argument, NULL, OPT_DRY_RUN },
	{ "source", required_argument, NULL, OPT_SOURCE },
	{ NULL, 0, NULL, 0 }
};

struct opts {
	struct inbox_filter	 filter;
	int			 nfilters;
	int			 json, yes, body;
	int			 handler;	/* check --handler */
	int			 record;	/* try --record */
	int64_t			 max_time;		/* seconds; 0 = none */
	int64_t			 jobs;		/* run --jobs; 0 = the config's */
	int64_t			 max_pending_age;	/* seconds */
	int64_t			 max_idle;		/* seconds */
	int64_t			 max_failing;		/* seconds */
	const char		*id;
	const char		*docroot;
	const char		*ping;		/* run --ping URL */
	const char		*url;		/* check --url URL */
	const char		*report_dir;	/* run --report, report --out */
	const char		*metrics;	/* --metrics FILE */
	const char		*to;		/* copy --to DATABASE */
	const char		*source;	/* send --source NAME */
	int			 dry_run;	/* copy --dry-run */
	int64_t			 size;		/* send --size: bytes; 0 = none */
	char			*object_buf;
	char			*args[4];		/* positional */
	int			 nargs;
};

/* One filter option (--state, --type, --object, --source, --since,
 * --until) into
 * o->filter.  0, or -1 when its value is wrong (said). */
static int
parse_filter(int ch, const char *arg, int64_t now, struct opts *o)
{
	char *colon;

	switch (ch) {
	case OPT_FAILING:	/* what is failing now: --state retrying */
		arg = "retrying";
		/* FALLTHROUGH */
	case OPT_STATE:
		if (o->filter.state != NULL && strcmp(o->filter.state, arg)) {
			fprintf(stderr, "webhook-drain: one state at a time "
			    "(--failing is --state retrying)\n");
			return -1;
		}
		if (strcmp(arg, "pending") && strcmp(arg, "done") &&
		    strcmp(arg, "stale") && strcmp(arg, "dead") &&
		    strcmp(arg, "retrying")) {
			fprintf(stderr, "webhook-drain: --state: one of "
			    "pending, retrying, done, stale, dead\n");
			return -1;
		}
		o->filter.state = arg;
		break;
	case OPT_TYPE:
		o->filter.type_glob = arg;
		break;
	case OPT_SOURCE:	/* a filter, and send's source to sign as */
		o->filter.source = o->source = arg;
		break;
	case OPT_OBJECT:
		free(o->object_buf);
		if ((o->object_buf = strdup(arg)) == NULL)
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
		break;
	default:	/* OPT_SINCE, OPT_UNTIL */
		if (present_parse_when(arg, now, ch == OPT_SINCE ?
		    &o->filter.since_ns : &o->filter.until_ns) == -1) {
			fprintf(stderr, "webhook-drain: %s: not an ISO-8601 "
			    "instant or a duration\n", arg);
			return -1;
		}
		if (ch == OPT_SINCE)
			o->filter.has_since = 1;
		else
			o->filter.has_until = 1;
	}
	o->nfilters++;
	return 0;
}

/* One of the other options.  0, or -1 when its value is wrong (said). */
static int
parse_option(int ch, const char *arg, struct opts *o)
{
	int64_t v;

	switch (ch) {
	case OPT_LIMIT:
		if (util_parse_int(arg, 1, INT64_MAX, &o->filter.limit) == -1) {
			fprintf(stderr, "webhook-drain: --limit: a positive number\n");
			return -1;
		}
		return 0;
	case OPT_JSON:
		o->json = 1;
		return 0;
	case OPT_YES:
		o->yes = 1;
		return 0;
	case OPT_BODY:
		o->body = 1;
		return 0;
	case OPT_HANDLER:
		o->handler = 1;
		return 0;
	case OPT_RECORD:
		o->record = 1;
		return 0;
	case OPT_ID:
		o->id = arg;
		return 0;
	case OPT_SIZE:
		if (util_parse_int(arg, 1, SENDER_BODY_MAX, &o->size) == -1) {
			fprintf(stderr, "webhook-drain: --size: a byte count "
			    "from 1 to %d\n", SENDER_BODY_MAX);
			return -1;
		}
		return 0;
	case OPT_DOCROOT:
		o->docroot = arg;
		return 0;
	case OPT_PING:
		o->ping = arg;
		return 0;
	case OPT_URL:
		o->url = arg;
		return 0;
	case OPT_REPORT:
		o->report_dir = arg;
		return 0;
	case OPT_METRICS:
		o->metrics = arg;
		return 0;
	case OPT_JOBS:
		if (util_parse_int(arg, 1, CONFIG_JOBS_MAX, &o->jobs) == -1) {
			fprintf(stderr, "webhook-drain: --jobs: a number from 1 "
			    "to %d\n", CONFIG_JOBS_MAX);
			return -1;
		}
		return 0;
	case OPT_TO:
		o->to = arg;
		return 0;
	case OPT_DRY_RUN:
		o->dry_run = 1;
		return 0;
	case OPT_MAX_TIME:
	case OPT_MAX_PENDING_AGE:
	case OPT_MAX_IDLE:
	case OPT_MAX_FAILING:
		if (util_parse_duration(arg, 3650LL * 86400, &v) == -1 || v < 1) {
			fprintf(stderr, "webhook-drain: %s: not a duration\n", arg);
			return -1;
		}
		if (ch == OPT_MAX_TIME)
			o->max_time = v;
		else if (ch == OPT_MAX_PENDING_AGE)
			o->max_pending_age = v;
		else if (ch == OPT_MAX_FAILING)
			o->max_failing = v;
		else
			o->max_idle = v;
		return 0;
	}
	return -1;
}

static int
parse_opts(int argc, char **argv, struct opts *o)
{
	int64_t now = util_now_ns();
	int ch, rc;

	memset(o, 0, sizeof *o);
	o->max_pending_age = 3600;
	o->max_idle = 15 * 60;
	o->max_failing = 15 * 60;
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
		if (ch == OPT_STATE || ch == OPT_FAILING || ch == OPT_TYPE ||
		    ch == OPT_OBJECT || ch == OPT_SOURCE ||
		    ch == OPT_SINCE || ch == OPT_UNTIL)
			rc = parse_filter(ch, optarg, now, o);
		else
			rc = parse_option(ch, optarg, o);
		if (rc == -1)
			return -1;
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

/* What the run reports, as cron should mail it: problems always; for
 * events, what present_drain_event says with and without -v. */
static void
run_problem(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "webhook-drain: %s\n", line);
	/* Both programs append to `log` (docs/DESIGN.md "Configuration"). */
	if (log_is_file())
		log_msg("%s", line);
}

/* What run's hooks carry: the config, the digest and the run's history. */
struct run_ctx {
	const struct config	*c;
	struct digest		 d;
	struct runrec		 rec;
};

/* Every failed attempt's line goes to `log` (docs/DESIGN.md
 * "Configuration"), a later run's as "retry ID (why; failure N of M)";
 * cron's mail, the digest, says an event's first failure only
 * (docs/HOSTING.md "Where to look"). */
static void
log_event(const struct drain_event *ev, int64_t max_attempts)
{
	char *text = NULL, *line, *save = NULL;
	size_t len = 0;
	FILE *f;

	if ((f = open_memstream(&text, &len)) == NULL)
		return;
	present_drain_event(f, f, ev, max_attempts, ev->outcome == DRAIN_RETRY);
	fclose(f);
	for (line = strtok_r(text, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save))
		log_msg("%s", strncmp(line, "webhook-drain: ", 15) == 0 ?
		    line + 15 : line);
	free(text);
}

/* Every outcome goes to the digest, printed once at the end, and to the
 * run's history; -v keeps the per-event lines as they happen. */
static void
run_event(void *arg, const struct drain_event *ev)
{
	struct run_ctx *rc = arg;

	digest_add(&rc->d, ev);
	runrec_event(&rc->rec, ev, util_now_ns());
	if (verbose)
		present_drain_event(stdout, stderr, ev, rc->c->max_attempts, 1);
	if (log_is_file())
		log_event(ev, rc->c->max_attempts);
}

/* After a run: its history, then the report and metrics when asked.  A
 * failure is said (cron mails it) and makes the run's exit 1. */
static int
run_record(const struct config *c, struct opts *o, struct run_ctx *rc,
    const struct drain_result *res)
{
	struct buf err;
	int bad = 0;

	buf_init(&err, BUF_ERR_MAX);
	runrec_finish(&rc->rec, res, util_now_ns());
	if (runrec_save(&rc->rec, c, &err) == -1) {
		fprintf(stderr, "webhook-drain: history: %s\n", err.data);
		bad = 1;
	}
	if ((o->report_dir != NULL || o->metrics != NULL) && report_refresh(c,
	    o->report_dir, o->metrics, o->max_idle, &err) == -1) {
		fprintf(stderr, "webhook-drain: report: %s\n", err.data);
		bad = 1;
	}
	buf_free(&err);
	return bad;
}

/* Set by SIGTERM and SIGINT during a run: claim no more events, let the
 * running handlers finish (or time out), record them, end as usual. */
static volatile sig_atomic_t run_stop;

static void
on_stop_signal(int sig)
{
	run_stop = sig;
}

static int
cmd_run(const struct config *c, struct opts *o)
{
	static struct run_ctx rx;	/* the digest is a few tens of KB */
	struct drain_hooks h = { run_event, run_problem, &rx };
	struct drain_limits lim = { o->max_time, (int)o->jobs, &run_stop };
	struct drain_result res;
	struct sigaction sa;
	int rc;

	if (c->handler == NULL) {
		fprintf(stderr, "webhook-drain: %s: handler: required for run\n",
		    c->path);
		return EXIT_USAGE;
	}
	/* No inbox yet: nothing was received; say nothing (cron). */
	if (inbox_is_file(c->database) && access(c->database, F_OK) == -1 &&
	    errno == ENOENT) {
		if (verbose)
			printf("no inbox at %s yet: nothing received\n", c->database);
		return 0;
	}
	/*
	 * A run allocates and frees the same few buffers per event; glibc's
	 * default gives the heap's top back (brk) and unmaps large blocks at
	 * every free, and on a VM each such unmap is a TLB shootdown: perf
	 * put a fifth of the drainer's own time there
	 * (docs/drain-throughput.md).  Keep them for the run.
	 */
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
	mallopt(M_MMAP_THRESHOLD, 64 << 20);
	rx.c = c;
	digest_init(&rx.d);
	runrec_start(&rx.rec, util_now_ns());
	/* SA_RESTART: the inbox's and the API's calls carry on; the wait for
	 * handlers returns on the signal all the same (poll never restarts). */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	rc = drain_run(c, &lim, &h, &res);
	if (rc == DRAIN_RAN && run_record(c, o, &rx, &res))
		res.broken = 1;
	runrec_free(&rx.rec);
	switch (rc) {
	case DRAIN_LOCKED:	/* another run is working: nothing to say */
		if (verbose)
			printf("another run holds the lock (a run in progress, or a "
			    "handler started by a killed run, or a process such a "
			    "handler left behind); nothing done\n");
		return 0;
	case DRAIN_NOT_STARTED:
		digest_report(stderr, &rx.d, c, o->ping, NULL);
		return EXIT_FAILED;
	case DRAIN_RAN:
		break;
	}
	digest_report(stderr, &rx.d, c, o->ping, &res);
	if (verbose && res.max_time_reached)
		printf("stopping: --max-time %lld s reached\n",
		    (long long)o->max_time);
	if (verbose && res.stopped)
		printf("stopping: %s received; the handlers running were let "
		    "finish\n", run_stop == SIGINT ? "SIGINT" : "SIGTERM");
	if (verbose && res.jobs > 1)
		printf("run: up to %d handlers at once\n", res.jobs);
	if (verbose)
		printf("run: %lld done, %lld stale, %lld failed (%lld dead); "
		    "retention dropped %lld bodies, %lld records\n",
		    (long long)res.n.done, (long long)res.n.stale,
		    (long long)res.n.failed, (long long)res.n.dead,
		    (long long)res.bodies, (long long)res.rows);
	return res.broken || res.n.failed ? EXIT_FAILED : 0;
}

/* ---- status, list, show -------------------------------------------------- */

/* `status --json`: the report's fields (docs/report.md) added to j; on a
 * failure to gather them, j as it was, and the reason on stderr. */
static cJSON *
status_json_more(const struct config *c, cJSON *j,
    const struct inbox_status_report *st, const struct status_attention *at)
{
	struct report *rep;
	struct inbox *ib;
	struct buf err;

	if (j == NULL || (rep = malloc(sizeof *rep)) == NULL)
		return j;
	buf_init(&err, BUF_ERR_MAX);
	if ((ib = open_inbox(c)) != NULL) {
		if (report_collect(ib, c->database, util_now_ns(), 0, st, rep,
		    &err) == 0) {
			status_sources_configured(&rep->sources, c);
			report_status_json(j, rep, at);
		}
		else
			fprintf(stderr, "webhook-drain: %s\n", err.data);
	}
	inbox_close(ib);
	buf_free(&err);
	free(rep);
	return j;
}

static int
cmd_status(const struct config *c, struct opts *o)
{
	struct inbox_status_report r;
	struct status_sources ss;
	struct status_attention at;
	struct inbox *ib;
	struct buf err;
	int64_t now = util_now_ns();
	enum inbox_status s;
	char dbname[1024];

	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	if ((s = inbox_status_report(ib, &r, &err)) != INBOX_OK ||
	    (!o->json && status_sources_read(ib, &ss, &err) == -1)) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		s = INBOX_FAILED;
	}
	buf_free(&err);
	inbox_close(ib);
	if (s != INBOX_OK)
		return EXIT_FAILED;
	if (!o->json)
		status_sources_configured(&ss, c);
	inbox_database_name(c->database, dbname, sizeof dbname);
	status_attention(&r, now, o->max_pending_age, o->max_idle, dbname,
	    c->retry_max_s, c->settle_s, &at);
	status_failing(&r, now, o->max_failing, &at);
	if (o->json)
		present_json(status_json_more(c, status_json(&r, &at), &r, &at));
	else
		status_print(stdout, &r, &ss, &at, now);
	return at.n > 0 ? EXIT_FAILED : 0;
}

/*
 * list: on a terminal, a header and a bounded page (PRESENT_LIST_PAGE
 * events unless --limit) with how many more; on a pipe, every event, as
 * scripts have always had them.
 */
/* --source NAME that the config does not name: said, not refused (a
 * source removed from the config may still have events; a typo has
 * none, and an empty answer alone would look like "nothing there"). */
static void
note_unknown_source(const struct config *c, const struct opts *o)
{
	const char *n = o->filter.source;

	if (n != NULL && strcmp(n, INBOX_DEFAULT_SOURCE) != 0 &&
	    config_source_find(c, n) == NULL)
		fprintf(stderr, "webhook-drain: note: %s has no [source %s]; "
		    "only events stored under that name match\n", c->path, n);
}

static int
cmd_list(const struct config *c, struct opts *o)
{
	struct inbox *ib;
	struct buf err;
	int rc = 0;

	note_unknown_source(c, o);

	if (o->nargs > 0) {
		usage();
		return EXIT_USAGE;
	}
	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	if (present_list(stdout, ib, &o->filter, o->json, !o->json &&
	    isatty(STDOUT_FILENO), util_now_ns(), &err) == -1) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	inbox_close(ib);
	return rc;
}

static int
cmd_show(const struct config *c, struct opts *o)
{
	struct inbox *ib;
	struct buf err;
	int rc = 0, found = 0;

	if (o->nargs != 1) {
		usage();
		return EXIT_USAGE;
	}
	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	if (present_show(stdout, ib, o->args[0], o->body ? PRESENT_SHOW_BODY :
	    o->json ? PRESENT_SHOW_JSON : PRESENT_SHOW_CARD, util_now_ns(),
	    &found, &err) == -1) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
	} else if (!found) {
		fprintf(stderr, "webhook-drain: no event ");
		present_text(stderr, o->args[0]);
		fputc('\n', stderr);
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	inbox_close(ib);
	return rc;
}

/* ---- try ----------------------------------------------------------------- */

/*
 * try ID [--record]: the handler on one stored event, now, as a run would
 * give it; nothing in the inbox changes unless --record, which records
 * the outcome as a run would (trial.h).  Exit 0 when the handler
 * succeeded (or --record found it stale), 1 when it failed, the event is
 * not there, or --record could not act, 2 usage or config.
 */
static int
cmd_try(const struct config *c, struct opts *o)
{
	struct handler_result r;
	struct trial_info info;
	struct buf err;
	enum trial_status st;

	if (o->nargs != 1) {
		usage();
		return EXIT_USAGE;
	}
	if (c->handler == NULL) {
		fprintf(stderr, "webhook-drain: %s: handler: required for try\n",
		    c->path);
		return EXIT_USAGE;
	}
	if (!inbox_exists(c))
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	st = trial_event(c, o->args[0], o->record, &r, &info, &err);
	trial_print(stdout, stderr, o->args[0], st, &r, &info, &err);
	buf_free(&err);
	if (st == TRIAL_RAN && info.recorded == TRIAL_REC_STALE)
		return 0;	/* as a run: stale is no failure */
	return st == TRIAL_RAN && handler_ok(&r) ? 0 : EXIT_FAILED;
}

/* ---- requeue, forget, purge ---------------------------------------------- */

static int
cmd_requeue_forget(const struct config *c, struct opts *o, int requeue)
{
	const char *verb = requeue ? "requeue" : "forget";
	enum bulk_status st;
	struct buf err;
	int64_t n = 0, stale = 0;
	int rc = 0;

	if (o->nargs == 1 && o->nfilters == 0) {
		o->filter.webhook_id = o->args[0];
		o->yes = 1;	/* one named event: act */
	} else if (o->nargs != 0 || o->nfilters == 0) {
		fprintf(stderr, "webhook-drain: %s takes one ID, or filters "
		    "(--state, --type, --object, --source, --since, --until)\n", verb);
		return EXIT_USAGE;
	}
	if (requeue && o->filter.state == NULL && o->filter.webhook_id == NULL) {
		/* Requeueing done events in bulk is rarely meant; be explicit. */
		fprintf(stderr, "webhook-drain: requeue with filters needs --state\n");
		return EXIT_USAGE;
	}
	note_unknown_source(c, o);
	if (!inbox_exists(c))
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	st = bulk_apply(c, &o->filter, requeue, o->yes, &n, &stale, &err);
	if (st == BULK_FAILED) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_FAILED;
	} else if (st == BULK_NONE) {
		/* Nothing to do is no failure: exit 1 means "some event
		 * failed" (docs/DESIGN.md "The drainer"), and a script
		 * requeueing what is dead finds nothing on a good day.  A
		 * named event that is not there is another matter: the id
		 * is wrong. */
		fprintf(stderr, "webhook-drain: no %s\n", o->filter.webhook_id ?
		    "such event" : "matching event; nothing to do");
		rc = o->filter.webhook_id ? EXIT_FAILED : 0;
	} else {
		bulk_print(stdout, requeue, o->yes, n, stale);
	}
	buf_free(&err);
	return rc;
}

static int
cmd_purge(const struct config *c, struct opts *o)
{
	struct inbox *ib;
	struct buf err;
	int64_t bodies, rows;
	int rc = 0;

	(void)o;
	if (!inbox_exists(c) || (ib = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
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

/*
 * send [--source NAME] URL [FILE | --size N] [--id ID]: one signed POST
 * (lib/operator/sender.h) — as Standard Webhooks with the first whsec_
 * secret, or as [source NAME]'s provider signs with its first secret.
 */
static int
cmd_send(const struct config *c, struct opts *o)
{
	const struct config_source *src;
	struct sender_answer a;
	enum sender_status st;
	struct buf body, err;
	char idbuf[SCHEME_SAMPLE_ID_SIZE], inbox_id[SCHEME_KEY_MAX];
	const char *id = o->id, *ca;
	int rc = EXIT_FAILED;

	if (o->size > 0 && o->nargs == 2) {
		fprintf(stderr, "webhook-drain: send: FILE or --size, not both\n");
		return EXIT_USAGE;
	}
	if (o->nargs < 1 || o->nargs > 2) {
		usage();
		return EXIT_USAGE;
	}
	buf_init(&body, SENDER_BODY_MAX);
	buf_init(&err, BUF_ERR_MAX);
	buf_init(&a.body, 4096);
	/* No --source: the default source, the top-level keys. */
	if ((src = sender_source(c, o->source, &err)) == NULL) {
		fprintf(stderr, "webhook-drain: %s%s\n", o->source != NULL ?
		    "send: " : "", err.data);
		rc = EXIT_USAGE;
		goto out;
	}
	if (o->source != NULL && !sender_url_names_source(o->args[0], src->name))
		fprintf(stderr, "webhook-drain: note: %s does not end in "
		    "/%s, the path the receiver takes [source %s] at\n",
		    o->args[0], src->name, src->name);
	if (id == NULL)
		id = scheme_sample_id(src->scheme, idbuf);
	if (sender_pick_body(o->nargs == 2 ? o->args[1] : NULL, o->size > 0 ||
	    (o->nargs == 1 && isatty(STDIN_FILENO)), o->size, id, src->scheme,
	    &body, &err) == -1) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		goto out;
	}
	st = sender_post_source(c, src, NULL, o->args[0], id, body.data,
	    body.len, &a, &err);
	if (st == SENDER_UNSIGNED) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		goto out;
	}
	if (st != SENDER_SENT) {
		fprintf(stderr, "webhook-drain: send to %s failed: %s\n",
		    o->args[0], err.data);
		if (st == SENDER_CERT_FAILED) {
			ca = api_ca_bundle(c);
			fprintf(stderr, "webhook-drain: the certificate was checked "
			    "against %s (api_ca_file in %s sets another)\n", ca ? ca :
			    "no CA bundle (none found where distributions keep one)",
			    c->path);
		}
		goto out;
	}
	/* What list and show will call it, the body's own id included (a
	 * FILE's), not the one made up here. */
	if (o->source != NULL)
		printf("%ld source=%s id=%s ", a.status, src->name,
		    sender_source_inbox_id(src, id, a.query, body.data,
		    body.len, inbox_id, sizeof inbox_id) ? inbox_id : "(refused)");
	else
		printf("%ld webhook-id=%s ", a.status, id);
	if (a.ours)
		present_escaped(stdout, a.body.data ? a.body.data : "",
		    a.body.len > 200 ? 200 : a.body.len);
	else	/* a web server's page: its status says enough */
		printf("(not webhook.fcgi's answer: the web server answered "
		    "itself, the receiver never ran; " PROBE_STEP_TEST "))");
	putchar('\n');
	rc = a.ours && a.status >= 200 && a.status < 300 ? 0 : EXIT_FAILED;
out:
	buf_free(&body);
	buf_free(&err);
	buf_free(&a.body);
	return rc;
}

/* ---- check --------------------------------------------------------------- */

/* One line per finding: "ok   what: detail", "WARN …", "FAIL …"; a fix
 * follows on the same line after "—" where there is one. */
static void
check_finding(void *arg, const char *level, const char *what, const char *text)
{
	(void)arg;
	printf("%-4s %s: %s\n", level, what, text);
}

/*
 * check [--document-root DIR] [--handler] [--url URL]: the setup as this
 * user runs it, one finding per line with how to fix it; --handler also
 * runs the handler on a synthetic event (WEBHOOK_TEST=1), --url probes
 * the endpoint end to end and sends each [source NAME] a signed test at
 * URL/NAME (lib/operator/probe.h).  Exit 0 when nothing
 * failed (warnings may remain), 1 when something failed, 2 when the
 * config does not load.
 */
static int
cmd_check(const struct config *c, struct opts *o)
{
	struct setup_hooks h = { check_finding, run_problem, NULL };
	struct setup_counts n;
	struct handler_result r;
	struct buf err;

	setup_check_partial(c, config_errors, o->docroot, &h, &n);
	if (o->url != NULL) {
		probe_url(c, o->url, &h, &n);
		probe_sources(c, o->url, &h, &n);
	}
	if (o->handler && c->handler != NULL) {
		buf_init(&err, BUF_ERR_MAX);
		printf("handler on a test event (WEBHOOK_TEST=1):\n");
		if (trial_synthetic(c, &r, &err) == -1) {
			printf("FAIL handler: could not start: %s\n", err.data);
			n.fail++;
		} else {
			trial_print_result(stdout, &r);
			n.fail += !handler_ok(&r);
		}
		buf_free(&err);
	}
	printf("%d failed, %d warnings\n", n.fail, n.warn);
	if (config_errors > 0)
		return EXIT_USAGE;	/* a config error, as before */
	return n.fail ? EXIT_FAILED : 0;
}

/* ---- sync, recover ------------------------------------------------------- */

/* Progress on a terminal only: nothing on a pipe or under cron. */
static int progress_on;

static void
walk_detail(void *arg, const char *line)
{
	(void)arg;
	if (verbose)
		printf("%s\n", line);
}

static void
walk_progress(void *arg, const struct paging_progress *p, const char *what,
    const char *at)
{
	(void)arg;
	if (progress_on)
		present_progress(stderr, p, what, at);
}

static const struct paging_hooks walk_hooks = {
	run_problem, walk_detail, walk_progress, NULL
};

/* Open what a walk needs; 0, or an exit code. */
static int
walk_open(const struct config *c, struct api **a, struct inbox **ib)
{
	struct buf err;
	int rc = 0;

	progress_on = isatty(STDERR_FILENO) && !verbose;
	buf_init(&err, BUF_ERR_MAX);
	if (api_open(c, a, &err) == -1) {
		fprintf(stderr, "webhook-drain: %s\n", err.data);
		rc = EXIT_USAGE;
	} else if ((*ib = open_inbox(c)) == NULL) {
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	return rc;
}

/* After a walk: the new events are handed out now (cron's next run would
 * too). */
static int
walk_done(const struct config *c, struct opts *o, int rc, struct api *a,
    struct inbox *ib)
{
	api_close(a);
	inbox_close(ib);
	if (rc == 0 && c->handler != NULL)
		rc = cmd_run(c, o);
	return rc;
}

/*
 * sync RESOURCE: objects changed since the last sync, stored as events
 * (lib/drain/paging.h), then a run hands them out.
 */
static int
cmd_sync(const struct config *c, struct opts *o)
{
	struct paging_progress p;
	struct api *a = NULL;
	struct inbox *ib = NULL;
	int rc;

	if (o->nargs != 1) {
		usage();
		return EXIT_USAGE;
	}
	if (strlen(o->args[0]) > PAGING_RESOURCE_MAX ||
	    strstr(o->args[0], "..") != NULL) {
		fprintf(stderr, "webhook-drain: sync: not a resource name\n");
		return EXIT_USAGE;
	}
	if ((rc = walk_open(c, &a, &ib)) == 0) {
		rc = EXIT_FAILED;
		if (paging_sync(a, ib, o->args[0], &walk_hooks, &p) == 0) {
			if (progress_on)	/* the progress line ends */
				fputc('\n', stderr);
			if (verbose || progress_on)
				printf("sync %s: %lld objects, %lld new events\n",
				    o->args[0], (long long)p.items,
				    (long long)p.stored);
			rc = 0;
		}
	}
	return walk_done(c, o, rc, a, ib);
}

/*
 * recover --since T: the provider's events from T (30 days back at most)
 * that the inbox lacks, stored under their own ids, then a run.
 */
static int
cmd_recover(const struct config *c, struct opts *o)
{
	struct paging_progress p;
	struct api *a = NULL;
	struct inbox *ib = NULL;
	int64_t now = util_now_ns(), since_ns = o->filter.since_ns;
	int rc;

	if (o->nargs != 0 || !o->filter.has_since) {
		fprintf(stderr, "webhook-drain: recover needs --since TIME (an "
		    "ISO-8601 instant, or a duration back from now such as 3d)\n");
		return EXIT_USAGE;
	}
	if (now - since_ns > PAGING_RECOVER_MAX_NS) {
		since_ns = now - PAGING_RECOVER_MAX_NS;
		fprintf(stderr, "webhook-drain: recover: the provider keeps 30 days "
		    "of events; starting 30 days back\n");
	}
	if ((rc = walk_open(c, &a, &ib)) == 0) {
		rc = EXIT_FAILED;
		if (paging_recover(a, ib, since_ns, &walk_hooks, &p) == 0) {
			if (progress_on)	/* the progress line ends */
				fputc('\n', stderr);
			if (verbose || progress_on)
				printf("recover: %lld events listed, %lld were "
				    "missing and are now stored\n",
				    (long long)p.items, (long long)p.stored);
			rc = 0;
		}
	}
	return walk_done(c, o, rc, a, ib);
}

/* ---- copy ---------------------------------------------------------------- */

static void
copy_progress(void *arg, enum inbox_table t, const struct copy_count *n)
{
	(void)arg;
	if (progress_on)
		fprintf(stderr, "\rcopy: %s: %lld read, %lld written\033[K",
		    inbox_table_info(t)->name, (long long)n->read,
		    (long long)n->written);
}

/*
 * copy --to DATABASE [--dry-run]: this inbox's contents into another
 * (lib/operator/copy.h; docs/moving.md for the cut-over).  A dry run into a
 * destination that does not exist yet creates nothing.
 */
static int
cmd_copy(const struct config *c, struct opts *o)
{
	struct copy_options co = { o->dry_run, 0, 0 };
	struct copy_hooks h = { copy_progress, NULL };
	struct copy_result r;
	struct inbox *src = NULL, *dst = NULL;
	struct buf err;
	int rc = EXIT_FAILED;

	if (o->nargs || o->to == NULL) {
		fprintf(stderr, "webhook-drain: copy needs --to DATABASE (the "
		    "inbox to copy into)\n");
		return EXIT_USAGE;
	}
	if (!inbox_exists(c) || (src = open_inbox(c)) == NULL)
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	progress_on = isatty(STDERR_FILENO) && !verbose;
	switch (copy_open_destination(c, o->to, o->dry_run, &dst, &err)) {
	case 1:
		fprintf(stderr, "webhook-drain: copy: %s is this config's own "
		    "inbox\n", o->to);
		rc = EXIT_USAGE;
		goto out;
	case -1:
		fprintf(stderr, "webhook-drain: copy: %s\n", err.data);
		goto out;
	}
	if (copy_run(src, dst, &co, &h, &r, &err) == 0)
		rc = 0;
	if (progress_on)
		fputc('\n', stderr);
	copy_print(stdout, &r, o->dry_run);
	if (rc != 0)
		fprintf(stderr, "webhook-drain: copy: %s\n", err.data);
out:
	inbox_close(dst);
	inbox_close(src);
	buf_free(&err);
	return rc;
}

/* ---- main ---------------------------------------------------------------- */

static int
cmd_requeue(const struct config *c, struct opts *o)
{
	return cmd_requeue_forget(c, o, 1);
}

static int
cmd_forget(const struct config *c, struct opts *o)
{
	return cmd_requeue_forget(c, o, 0);
}

/* `report`: the page and the metrics, without a run (docs/report.md). */
static int
cmd_report(const struct config *c, struct opts *o)
{
	struct buf err;
	int rc = 0;

	if (o->nargs) {
		usage();
		return EXIT_USAGE;
	}
	if (!inbox_exists(c))
		return EXIT_FAILED;
	buf_init(&err, BUF_ERR_MAX);
	if (report_refresh(c, o->report_dir ? o->report_dir : ".", o->metrics,
	    o->max_idle, &err) == -1) {
		fprintf(stderr, "webhook-drain: report: %s\n", err.data);
		rc = EXIT_FAILED;
	}
	buf_free(&err);
	return rc;
}

static int
cmd_run_only(const struct config *c, struct opts *o)
{
	if (o->nargs) {
		usage();
		return EXIT_USAGE;
	}
	return cmd_run(c, o);
}

/* The commands: the word, then what runs it. */
static const struct command {
	const char	*name;
	int		(*fn)(const struct config *, struct opts *);
} commands[] = {
	{ "run", cmd_run_only },
	{ "status", cmd_status },
	{ "list", cmd_list },
	{ "show", cmd_show },
	{ "try", cmd_try },
	{ "requeue", cmd_requeue },
	{ "forget", cmd_forget },
	{ "purge", cmd_purge },
	{ "send", cmd_send },
	{ "check", cmd_check },
	{ "sync", cmd_sync },
	{ "recover", cmd_recover },
	{ "report", cmd_report },
	{ "copy", cmd_copy },
};

int
main(int argc, char **argv)
{
	const struct command *cmd = NULL;
	struct config c;
	struct opts o;
	size_t k;
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
	for (k = 0; k < sizeof commands / sizeof commands[0]; k++)
		if (strcmp(argv[optind], commands[k].name) == 0)
			cmd = &commands[k];
	if (cmd == NULL) {
		fprintf(stderr, "webhook-drain: unknown command '%s'\n", argv[optind]);
		usage();
		return EXIT_USAGE;
	}
	argc -= optind;
	argv += optind;
	if (parse_opts(argc, argv, &o) == -1) {
		usage();
		free(o.object_buf);
		return EXIT_USAGE;
	}
	if (load_config(&c, cmd->fn == cmd_check) == -1) {
		/* check goes on with the keys that loaded (every finding in
		 * one pass: docs/DESIGN.md "The operator's tools"); with an
		 * unreadable file, or for another command, the config error
		 * is the answer. */
		if (cmd->fn != cmd_check || c.path == NULL) {
			free(o.object_buf);
			config_free(&c);
			return EXIT_USAGE;
		}
		printf("the config has errors (above); the checks that can "
		    "still run:\n");
	}
	log_open(c.log);
	rc = cmd->fn(&c, &o);
	free(o.object_buf);
	config_free(&c);
	return rc;
}
