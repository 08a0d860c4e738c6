/*
 * test_report: lib/report/report.c, html.c and prom.c — one real SQLite
 * inbox in a temporary directory with an event done, one dead and one
 * ready, and a run's history saved as a drainer saves it: what
 * report_collect gathers from it, the page (its numbers, and every string
 * from the inbox escaped), the Prometheus text (counters, gauges,
 * cumulative histograms), the fields of `status --json`, and the files
 * written whole or not at all.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/program/version.h"
#include "lib/report/report.h"
#include "lib/report/runrec.h"
#include "lib/store/event.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

#define SEC	1000000000LL
#define MS	1000000LL

static char tmpdir[] = "/tmp/webhook-test-report-XXXXXX";

/* An id and an error that would be markup if a page did not escape them. */
#define EVIL_ID		"e<script>alert(1)</script>"
#define EVIL_ERROR	"exit 3: <img src=x onerror=alert(2)>"

static void
deliver_from(struct inbox *ib, const char *id, const char *oid,
    const char *source)
{
	struct event_fields f;
	struct inbox_delivery d;
	struct buf err;
	char json[512];

	snprintf(json, sizeof json, "{\"id\":\"x\",\"type\":\"client.updated\","
	    "\"createdAt\":\"2026-03-01T10:00:00Z\",\"data\":{\"object\":"
	    "\"client\",\"id\":\"%s\"}}", oid);
	buf_init(&err, 4096);
	ck_assert_int_eq(event_extract(id, json, strlen(json), &f), 0);
	memset(&d, 0, sizeof d);
	d.webhook_id = id;
	d.webhook_timestamp = 1772366400;
	d.secret_fp = "fp";
	d.body = json;
	d.body_len = strlen(json);
	d.fields = &f;
	d.source = source;
	ck_assert_int_eq(inbox_store(ib, &d, &err), INBOX_OK);
	event_fields_free(&f);
	buf_free(&err);
}

static void
deliver(struct inbox *ib, const char *id, const char *oid)
{
	deliver_from(ib, id, oid, NULL);
}

/* Claim the next due event, which must be `id`. */
static void
claim(struct inbox *ib, struct inbox_cursor *cur, struct inbox_event *e,
    int64_t now, const char *id)
{
	enum inbox_claim cl;
	struct buf err;

	buf_init(&err, 4096);
	ck_assert_int_eq(inbox_next_due(ib, cur, now, 0, 0, e, &err), INBOX_OK);
	ck_assert_str_eq(e->webhook_id, id);
	ck_assert_int_eq(inbox_claim(ib, e, now, &cl, &err), INBOX_OK);
	ck_assert_int_eq(cl, INBOX_CLAIMED);
	buf_free(&err);
}

/*
 * The inbox: e1 (client:1) done, EVIL_ID (client:2) dead at its first
 * failure, e3 (client:3) pending and ready; and the run that did it,
 * saved by runrec, finished at *run_end.
 */
static void
fill(const struct config *c, int64_t now, int64_t *run_end)
{
	struct handler_result ok, bad;
	struct inbox_cursor cur;
	struct inbox_event e1, e2;
	struct drain_result res;
	struct drain_event ev;
	struct runrec rr;
	struct inbox *ib;
	struct inbox_failure fail = { now, 10 * SEC, 1, EVIL_ERROR, NULL, 0, 0 };
	struct buf err;

	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	deliver(ib, "e1", "1");
	deliver(ib, EVIL_ID, "2");
	memset(&cur, 0, sizeof cur);
	inbox_event_init(&e1);
	inbox_event_init(&e2);
	claim(ib, &cur, &e1, now, "e1");
	ck_assert_int_eq(inbox_finish_done(ib, &e1, now, "ok\n", 3, &err),
	    INBOX_OK);
	claim(ib, &cur, &e2, now, EVIL_ID);
	ck_assert_int_eq(inbox_finish_failed(ib, &e2, &fail, &err), INBOX_OK);
	ck_assert_int_eq(fail.dead, 1);
	/* Stored after the run's cursor went by: ready for the next run. */
	deliver(ib, "e3", "3");
	inbox_close(ib);

	runrec_start(&rr, now - SEC);
	memset(&ok, 0, sizeof ok);
	ok.exited = 1;
	ok.elapsed_ns = 250 * MS;
	ev = (struct drain_event){ DRAIN_DONE, &e1, &ok, 0, 0 };
	runrec_event(&rr, &ev, now);
	memset(&bad, 0, sizeof bad);
	bad.exited = 1;
	bad.status = 3;
	bad.elapsed_ns = 40 * MS;
	snprintf(bad.error, sizeof bad.error, "%s", EVIL_ERROR);
	ev = (struct drain_event){ DRAIN_DEAD, &e2, &bad, 1, 0 };
	runrec_event(&rr, &ev, now);
	memset(&res, 0, sizeof res);
	res.n.done = 1;
	res.n.failed = 1;
	res.n.dead = 1;
	*run_end = now + SEC;
	runrec_finish(&rr, &res, *run_end);
	ck_assert_msg(runrec_save(&rr, c, &err) == 0, "%s", err.data);
	runrec_free(&rr);
	inbox_event_free(&e1);
	inbox_event_free(&e2);
	buf_free(&err);
}

/* A config, its inbox filled, and the report collected at now. */
static struct report *
collected(struct config *c, int64_t *now, int64_t *run_end)
{
	struct report *r;
	struct inbox *ib;
	struct buf err;
	char dir[PATH_MAX];

	check_config(tmpdir, "settle = 0\n", c, dir);
	/* The run, a minute after the deliveries: all of them are due, on
	 * however busy a machine. */
	*now = util_now_ns() + 60 * SEC;
	fill(c, *now, run_end);
	*now += 2 * SEC;
	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(r = malloc(sizeof *r));
	ck_assert_ptr_nonnull(ib = drain_inbox_open(c, &err));
	ck_assert_msg(report_collect(ib, c->database, *now, 900, NULL, r,
	    &err) == 0, "%s", err.data);
	inbox_close(ib);
	buf_free(&err);
	return r;
}

START_TEST(collect_gathers_the_queue_history_and_runs)
{
	struct report *r;
	struct config c;
	int64_t now, run_end, i;

	r = collected(&c, &now, &run_end);
	ck_assert_int_eq(r->now_ns, now);
	ck_assert_str_eq(r->database, c.database);
	ck_assert_int_gt(r->db_bytes, 0);
	/* The queue now. */
	ck_assert_int_eq(r->st.done, 1);
	ck_assert_int_eq(r->st.dead, 1);
	ck_assert_int_eq(r->st.pending, 1);
	ck_assert_int_eq(r->q.ready, 1);
	ck_assert_int_ge(report_oldest_ready_s(r), 0);
	ck_assert_int_le(report_oldest_ready_s(r), 120);
	/* The history, in every window: 2 received (counted as a run admits
	 * them: e3 came after the run's last look), 1 handled, 1 failed and
	 * dead. */
	for (i = 0; i < RW_N; i++) {
		ck_assert_int_eq(r->win[i].c[RC_RECEIVED], 2);
		ck_assert_int_eq(r->win[i].c[RC_HANDLED], 1);
		ck_assert_int_eq(r->win[i].c[RC_FAILED], 1);
		ck_assert_int_eq(r->win[i].c[RC_DEAD], 1);
		ck_assert_int_eq(r->win[i].c[RC_RETRIED], 0);
	}
	ck_assert_int_eq(history_hist_total(&r->win[RW_1H].handler), 2);
	ck_assert_int_eq(r->win[RW_1H].handler.sum_ms, 290);
	/* The same counts in the newest 5-minute bucket and day. */
	ck_assert_int_eq(r->fine[REPORT_FINE_N - 1].c[RC_HANDLED] +
	    r->fine[REPORT_FINE_N - 2].c[RC_HANDLED], 1);
	ck_assert_int_eq(r->days[REPORT_DAYS_N - 1].c[RC_RECEIVED] +
	    r->days[REPORT_DAYS_N - 2].c[RC_RECEIVED], 2);
	/* Failures by class, per type, the dead letter. */
	ck_assert_int_eq(r->nclasses, 1);
	ck_assert_str_eq(r->classes[0].name, "exit 3");
	ck_assert_int_eq(r->classes[0].n[RW_24H], 1);
	ck_assert_int_eq(r->ntypes, 1);
	ck_assert_str_eq(r->types[0].name, "client.updated");
	ck_assert_int_eq(r->types[0].handled[RW_24H], 1);
	ck_assert_int_eq(r->types[0].failed[RW_24H], 1);
	ck_assert_int_eq(r->ndead, 1);
	ck_assert_str_eq(r->dead[0].id, EVIL_ID);
	ck_assert_str_eq(r->dead[0].object, "client:2");
	ck_assert_str_eq(r->dead[0].error, EVIL_ERROR);
	ck_assert_int_eq(r->dead[0].attempts, 1);
	ck_assert_int_eq(r->nblocked, 0);
	/* The run. */
	ck_assert_int_eq(r->nruns, 1);
	ck_assert_str_eq(r->runs[0].result, "failures");
	ck_assert_int_eq(r->runs_total[1], 1);
	ck_assert_int_eq(r->runs_total[0] + r->runs_total[2] + r->runs_total[3], 0);
	ck_assert_int_eq(r->runs_per_day[REPORT_DAYS_N - 1] +
	    r->runs_per_day[REPORT_DAYS_N - 2], 1);
	ck_assert_int_eq(r->last_success_ns, run_end);
	ck_assert_int_eq(report_last_success_age_s(r), (now - run_end) / SEC);
	free(r);
	config_free(&c);
}
END_TEST

/* No run yet: no success, and no ready event has no age. */
START_TEST(an_empty_inbox_has_no_last_success)
{
	struct report *r;
	struct inbox *ib;
	struct config c;
	struct buf err;
	char dir[PATH_MAX];

	check_config(tmpdir, "", &c, dir);
	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(r = malloc(sizeof *r));
	ck_assert_ptr_nonnull(ib = drain_inbox_open(&c, &err));
	ck_assert_int_eq(report_collect(ib, c.database, util_now_ns(), 900, NULL,
	    r, &err), 0);
	ck_assert_int_eq(report_last_success_age_s(r), -1);
	ck_assert_int_eq(report_oldest_ready_s(r), 0);
	ck_assert_int_eq(r->nruns, 0);
	ck_assert_int_eq(r->win[RW_ALL].c[RC_RECEIVED], 0);
	inbox_close(ib);
	free(r);
	buf_free(&err);
	config_free(&c);
}
END_TEST

static char *
render(void (*fn)(FILE *, const struct report *), const struct report *r)
{
	char *out = NULL;
	size_t len;
	FILE *f;

	ck_assert_ptr_nonnull(f = open_memstream(&out, &len));
	fn(f, r);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_uint_eq(strlen(out), len);
	return out;
}

START_TEST(html_shows_the_numbers_and_escapes_the_inbox)
{
	struct report *r;
	struct config c;
	int64_t now, run_end;
	char *out;

	r = collected(&c, &now, &run_end);
	out = render(report_html, r);
	ck_assert_int_eq(strncmp(out, "<!DOCTYPE html>", 15), 0);
	ck_assert(contains(out, "</body></html>\n"));
	ck_assert(contains(out, "id=\"t-ready\"><b>1</b>ready"));
	ck_assert(contains(out, "id=\"t-dead\"><b>1</b>dead"));
	ck_assert(contains(out, "id=\"t-received-1h\"><b>2</b>"));
	ck_assert(contains(out, "id=\"t-handled-24h\"><b>1</b>"));
	ck_assert(contains(out, "id=\"t-failed-1h\"><b>1</b>"));
	/* The dead letter, its id and error escaped; nothing of either
	 * reaches the page as markup. */
	ck_assert(contains(out, "<td>e&lt;script&gt;alert(1)&lt;/script&gt;</td>"));
	ck_assert(contains(out, "exit 3: &lt;img src=x onerror=alert(2)&gt;"));
	ck_assert(!contains(out, "<script"));
	ck_assert(!contains(out, "<img"));
	ck_assert(contains(out, "<td>client.updated</td>"));
	ck_assert(contains(out,
	    "webhook-drain list --type &#39;client.updated&#39;\n"));
	/* A run within --max-idle: cron is alive. */
	ck_assert(!contains(out, "cron looks dead"));
	free(out);
	/* Too long ago, it looks dead. */
	r->now_ns = run_end + 3600 * SEC;
	out = render(report_html, r);
	ck_assert(contains(out, "cron looks dead"));
	free(out);
	free(r);
	config_free(&c);
}
END_TEST

/* The value of the sample line `name` (with its labels) in prom text. */
static double
sample(const char *text, const char *name)
{
	const char *p = text;
	size_t n = strlen(name);

	for (; p != NULL && *p != '\0'; p = strchr(p, '\n'), p = p ? p + 1 : p)
		if (strncmp(p, name, n) == 0 && p[n] == ' ')
			return strtod(p + n + 1, NULL);
	ck_abort_msg("no sample %s", name);
	return -1;
}

START_TEST(prom_counts_and_gauges)
{
	char build[256], *out, *line, *save;
	struct report *r;
	struct config c;
	int64_t now, run_end;
	double prev;
	int i, lines = 0;

	r = collected(&c, &now, &run_end);
	out = render(report_prom, r);
	ck_assert(sample(out, "webhook_received_total") == 2);
	ck_assert(sample(out, "webhook_deliveries_total{outcome=\"done\"}") == 1);
	ck_assert(sample(out, "webhook_deliveries_total{outcome=\"dead\"}") == 1);
	ck_assert(sample(out, "webhook_deliveries_total{outcome=\"retry\"}") == 0);
	ck_assert(sample(out, "webhook_drain_runs_total{result=\"failures\"}") == 1);
	ck_assert(sample(out, "webhook_drain_runs_total{result=\"ok\"}") == 0);
	ck_assert(sample(out, "webhook_queue_events{state=\"ready\"}") == 1);
	ck_assert(sample(out, "webhook_queue_events{state=\"dead\"}") == 1);
	ck_assert(sample(out, "webhook_queue_events{state=\"pending\"}") == 1);
	ck_assert(sample(out, "webhook_last_success_timestamp_seconds") ==
	    (double)run_end / 1e9);
	ck_assert(sample(out, "webhook_db_size_bytes") == (double)r->db_bytes);
	/* The handler histogram: 40 ms and 250 ms, cumulative. */
	ck_assert(sample(out, "webhook_handler_seconds_bucket{le=\"0.01\"}") == 0);
	ck_assert(sample(out, "webhook_handler_seconds_bucket{le=\"+Inf\"}") == 2);
	ck_assert(sample(out, "webhook_handler_seconds_count") == 2);
	ck_assert(sample(out, "webhook_handler_seconds_sum") == 0.29);
	for (prev = 0, i = 0; i < HISTORY_NBOUNDS; i++) {
		char name[128];
		double v;

		snprintf(name, sizeof name, "webhook_handler_seconds_bucket{le=\"%g\"}",
		    (double)history_bound_ms[i] / 1000.0);
		v = sample(out, name);
		ck_assert(v >= prev);
		prev = v;
	}
	snprintf(build, sizeof build, "webhook_build_info{version=\"%s\","
	    "commit=\"%s\"}", version_number, version_commit);
	ck_assert(sample(out, build) == 1);
	/* Every line a comment or "name[{labels}] number". */
	for (line = strtok_r(out, "\n", &save); line != NULL;
	    line = strtok_r(NULL, "\n", &save), lines++) {
		char *sp = strrchr(line, ' '), *end;

		if (strncmp(line, "# HELP ", 7) == 0 ||
		    strncmp(line, "# TYPE ", 7) == 0)
			continue;
		ck_assert_msg(sp != NULL && strncmp(line, "webhook_", 8) == 0,
		    "%s", line);
		(void)strtod(sp + 1, &end);
		ck_assert_msg(*end == '\0' && end != sp + 1, "%s", line);
	}
	ck_assert_int_gt(lines, 40);
	free(out);
	free(r);
	config_free(&c);
}
END_TEST

START_TEST(status_json_adds_its_fields)
{
	struct status_attention a;
	struct report *r;
	struct config c;
	int64_t now, run_end;
	cJSON *o, *q, *w, *h;

	r = collected(&c, &now, &run_end);
	ck_assert_ptr_nonnull(o = cJSON_CreateObject());
	memset(&a, 0, sizeof a);
	a.n = 1;
	snprintf(a.line[0], sizeof a.line[0], "1 dead event");
	report_status_json(o, r, &a);
	ck_assert_int_eq(cJSON_GetObjectItem(o, "version")->valueint,
	    REPORT_JSON_VERSION);
	ck_assert_int_eq(cJSON_GetObjectItem(o, "last_success_age_s")->valueint,
	    (now - run_end) / SEC);
	ck_assert_ptr_nonnull(q = cJSON_GetObjectItem(o, "queue"));
	ck_assert_int_eq(cJSON_GetObjectItem(q, "ready")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(q, "done")->valueint, 1);
	ck_assert_int_eq(cJSON_GetObjectItem(q, "dead")->valueint, 1);
	ck_assert_ptr_nonnull(w = cJSON_GetObjectItem(o, "windows"));
	ck_assert_ptr_nonnull(w = cJSON_GetObjectItem(w, "1h"));
	ck_assert_int_eq(cJSON_GetObjectItem(w, "received")->valueint, 2);
	ck_assert_int_eq(cJSON_GetObjectItem(w, "handled")->valueint, 1);
	ck_assert_int_ge(cJSON_GetObjectItem(w, "handler_p95_ms")->valueint, 250);
	ck_assert_ptr_nonnull(h = cJSON_GetObjectItem(o, "health"));
	ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(h, "ok")));
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(h, "reasons")), 1);
	ck_assert_str_eq(cJSON_GetArrayItem(cJSON_GetObjectItem(h, "reasons"),
	    0)->valuestring, "1 dead event");
	cJSON_Delete(o);
	free(r);
	config_free(&c);
}
END_TEST

/* Names in dir other than `a` and `b` (a temporary file left behind). */
static int
strays(const char *dir, const char *a, const char *b)
{
	struct dirent *de;
	DIR *d;
	int n = 0;

	ck_assert_ptr_nonnull(d = opendir(dir));
	while ((de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, a) != 0 && strcmp(de->d_name, b) != 0)
			n++;
	closedir(d);
	return n;
}

static char *
slurp(const char *path)
{
	char *s;
	long n;
	FILE *f;

	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	rewind(f);
	ck_assert_ptr_nonnull(s = calloc(1, (size_t)n + 1));
	ck_assert_int_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return s;
}

START_TEST(refresh_writes_both_files_whole)
{
	char out[PATH_MAX + 16], path[PATH_MAX + 64], *s;
	struct report *r;
	struct config c;
	struct buf err;
	struct stat sb;
	int64_t now, run_end;
	mode_t mask;

	r = collected(&c, &now, &run_end);
	free(r);
	buf_init(&err, 4096);
	snprintf(out, sizeof out, "%s.out", c.database);
	ck_assert_int_eq(mkdir(out, 0700), 0);
	ck_assert_msg(report_refresh(&c, out, NULL, 900, &err) == 0, "%s",
	    err.data);
	snprintf(path, sizeof path, "%s/index.html", out);
	s = slurp(path);
	ck_assert(contains(s, "id=\"t-dead\"><b>1</b>dead"));
	ck_assert(contains(s, "</body></html>\n"));
	free(s);
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_int_eq(sb.st_mode & 0777, 0644);
	snprintf(path, sizeof path, "%s/metrics.prom", out);
	s = slurp(path);
	ck_assert(sample(s, "webhook_received_total") == 2);
	free(s);
	ck_assert_int_eq(strays(out, "index.html", "metrics.prom"), 0);
	/* The metrics alone, elsewhere. */
	snprintf(path, sizeof path, "%s/other.prom", out);
	ck_assert_int_eq(report_refresh(&c, NULL, path, 900, &err), 0);
	s = slurp(path);
	ck_assert(contains(s, "webhook_build_info{"));
	free(s);
	ck_assert_int_eq(unlink(path), 0);
	/* A directory that is not there is made (0755) as cron's first run
	 * finds it; one whose parent is not there: the reason, nothing
	 * made. */
	snprintf(path, sizeof path, "%s/new", out);
	ck_assert_int_eq(report_refresh(&c, path, NULL, 900, &err), 0);
	ck_assert_int_eq(stat(path, &sb), 0);
	mask = umask(022);
	umask(mask);
	ck_assert_int_eq(sb.st_mode & 0777, 0755 & ~mask);
	ck_assert_int_eq(strays(path, "index.html", "metrics.prom"), 0);
	snprintf(path, sizeof path, "%s/new/index.html", out);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof path, "%s/new/metrics.prom", out);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof path, "%s/new", out);
	ck_assert_int_eq(rmdir(path), 0);
	snprintf(path, sizeof path, "%s/missing/dir", out);
	ck_assert_int_eq(report_refresh(&c, path, NULL, 900, &err), -1);
	ck_assert_msg(contains(err.data, path), "%s", err.data);
	ck_assert_msg(contains(err.data, "No such file"), "%s", err.data);
	ck_assert_int_eq(strays(out, "index.html", "metrics.prom"), 0);
	buf_free(&err);
	config_free(&c);
}
END_TEST

static void
half_then_fail(FILE *f, const struct report *r)
{
	(void)r;
	fputs("half", f);
	/* The descriptor gone: the flush fails, as on a full disk. */
	close(fileno(f));
}

/* A write that fails leaves the old file as it was, and no temporary. */
START_TEST(write_file_replaces_only_when_whole)
{
	char dir[PATH_MAX], path[PATH_MAX + 16], *s;
	struct report *r;
	struct config c;
	struct buf err;

	check_config(tmpdir, "", &c, dir);
	ck_assert_ptr_nonnull(r = calloc(1, sizeof *r));
	buf_init(&err, 4096);
	snprintf(path, sizeof path, "%s/metrics.prom", dir);
	check_write_file(path, "old\n");
	ck_assert_int_eq(report_write_file(path, r, half_then_fail, &err), -1);
	ck_assert_msg(contains(err.data, path), "%s", err.data);
	s = slurp(path);
	ck_assert_str_eq(s, "old\n");
	free(s);
	ck_assert_int_eq(strays(dir, "metrics.prom", "webhook.conf"), 0);
	ck_assert_int_eq(report_write_file(path, r, report_prom, &err), 0);
	s = slurp(path);
	ck_assert(contains(s, "webhook_received_total 0\n"));
	free(s);
	ck_assert_int_eq(strays(dir, "metrics.prom", "webhook.conf"), 0);
	free(r);
	buf_free(&err);
	config_free(&c);
}
END_TEST

/* Events by source (docs/DESIGN.md "Sources"): a table on the page with
 * each source's list command, a gauge per source and state, a "sources"
 * array in status --json; an inbox of the default source alone shows no
 * table, as before sources. */
START_TEST(sources_on_page_metrics_and_json)
{
	struct report *r;
	struct inbox *ib;
	struct config c;
	struct buf err;
	char dir[PATH_MAX], *out;
	cJSON *j, *arr;

	check_config(tmpdir, "settle = 0\n", &c, dir);
	buf_init(&err, 4096);
	ck_assert_ptr_nonnull(r = malloc(sizeof *r));
	ck_assert_ptr_nonnull(ib = drain_inbox_open(&c, &err));
	deliver(ib, "d1", "1");
	ck_assert_int_eq(report_collect(ib, c.database, util_now_ns(), 900,
	    NULL, r, &err), 0);
	out = render(report_html, r);
	ck_assert(!contains(out, "id=\"sources\""));
	free(out);
	deliver(ib, "d2", "2");
	deliver_from(ib, "stripe/evt_1", "9", "stripe");
	ck_assert_int_eq(report_collect(ib, c.database, util_now_ns(), 900,
	    NULL, r, &err), 0);
	inbox_close(ib);
	out = render(report_html, r);
	ck_assert(contains(out, "<table id=\"sources\">"));
	ck_assert(contains(out, "<tr><td>stripe</td><td class=\"n\">1</td>"));
	ck_assert(contains(out, "<tr><td>default</td><td class=\"n\">2</td>"));
	ck_assert(contains(out, "webhook-drain list --source &#39;stripe&#39;\n"));
	free(out);
	out = render(report_prom, r);
	ck_assert(sample(out, "webhook_source_events{source=\"stripe\","
	    "state=\"pending\"}") == 1);
	ck_assert(sample(out, "webhook_source_events{source=\"default\","
	    "state=\"pending\"}") == 2);
	ck_assert(sample(out, "webhook_source_events{source=\"default\","
	    "state=\"dead\"}") == 0);
	free(out);
	ck_assert_ptr_nonnull(j = cJSON_CreateObject());
	report_status_json(j, r, &(struct status_attention){ 0 });
	arr = cJSON_GetObjectItem(j, "sources");
	ck_assert_int_eq(cJSON_GetArraySize(arr), 2);
	ck_assert_str_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 1),
	    "source")->valuestring, "stripe");
	ck_assert_int_eq(cJSON_GetObjectItem(cJSON_GetArrayItem(arr, 0),
	    "pending")->valueint, 2);
	cJSON_Delete(j);
	free(r);
	buf_free(&err);
	config_free(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("report");

	tcase_add_test(tc, collect_gathers_the_queue_history_and_runs);
	tcase_add_test(tc, an_empty_inbox_has_no_last_success);
	tcase_add_test(tc, sources_on_page_metrics_and_json);
	tcase_add_test(tc, html_shows_the_numbers_and_escapes_the_inbox);
	tcase_add_test(tc, prom_counts_and_gauges);
	tcase_add_test(tc, status_json_adds_its_fields);
	tcase_add_test(tc, refresh_writes_both_files_whole);
	tcase_add_test(tc, write_file_replaces_only_when_whole);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(suite, tmpdir);
}
