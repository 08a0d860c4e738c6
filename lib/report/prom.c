/*
 * report_prom: the report as Prometheus text (metrics.prom, a node_exporter
 * textfile or a static file to scrape) and as the fields the report adds to
 * `status --json` (report/report.h; docs/report.md).  Names follow the
 * ecosystem's rules: `_total` for counters, base units (`_seconds`,
 * `_bytes`), no label per event or object (their number is unbounded).
 * Counters are sums of the history, so they only grow (a scrape's rate() is
 * right across retention).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/report/report.h"
#include "lib/common/utf8.h"
#include "lib/program/version.h"

#define NS	((int64_t)1000000000)

static void
meta(FILE *f, const char *name, const char *type, const char *help)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void
counter(FILE *f, const char *name, const char *help, int64_t v)
{
	meta(f, name, "counter", help);
	fprintf(f, "%s %" PRId64 "\n", name, v);
}

static void
gauge(FILE *f, const char *name, const char *help, double v)
{
	meta(f, name, "gauge", help);
	fprintf(f, "%s %.17g\n", name, v);
}

/*
 * A label value as the text format wants it: backslash, quote and
 * newline escaped, and valid UTF-8 (common/utf8.h: U+FFFD for a stray
 * byte), since Prometheus refuses a whole scrape over one bad byte.
 */
static void
label_value(FILE *f, const char *s)
{
	char *t = utf8_fix(s), *p;

	for (p = t; p != NULL && *p != '\0'; p++) {
		if (*p == '\\' || *p == '"')
			fputc('\\', f);
		if (*p == '\n')
			fputs("\\n", f);
		else
			fputc(*p, f);
	}
	free(t);
}

static void
histogram(FILE *f, const char *name, const char *help,
    const struct history_hist *h)
{
	int64_t cum = 0;
	int i;

	meta(f, name, "histogram", help);
	for (i = 0; i < HISTORY_NBOUNDS; i++) {
		cum += h->count[i];
		fprintf(f, "%s_bucket{le=\"%g\"} %" PRId64 "\n", name,
		    (double)history_bound_ms[i] / 1000.0, cum);
	}
	cum += h->count[HISTORY_NBOUNDS];
	fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRId64 "\n", name, cum);
	fprintf(f, "%s_sum %.3f\n%s_count %" PRId64 "\n", name,
	    (double)h->sum_ms / 1000.0, name, cum);
}

void
report_prom(FILE *f, const struct report *r)
{
	const struct report_slot *a = &r->win[RW_ALL];
	const char *rs[3] = { "ok", "failures", "error" };
	int i;

	counter(f, "webhook_received_total", "Events admitted by the drainer "
	    "(stored by the receiver, sync or recover).", a->c[RC_RECEIVED]);
	meta(f, "webhook_deliveries_total", "counter",
	    "Handler hand-outs and stale skips by outcome.");
	fprintf(f, "webhook_deliveries_total{outcome=\"done\"} %" PRId64 "\n"
	    "webhook_deliveries_total{outcome=\"retry\"} %" PRId64 "\n"
	    "webhook_deliveries_total{outcome=\"dead\"} %" PRId64 "\n"
	    "webhook_deliveries_total{outcome=\"stale\"} %" PRId64 "\n",
	    a->c[RC_HANDLED], a->c[RC_RETRIED], a->c[RC_DEAD], a->c[RC_STALE]);
	counter(f, "webhook_refetches_total", "Refetches the provider's API "
	    "answered with the object (truncated events, `refetch` types).",
	    a->c[RC_REFETCHED]);
	meta(f, "webhook_drain_runs_total", "counter",
	    "Drainer runs that ran (not those that found the lock held), by result.");
	for (i = 0; i < 3; i++)
		fprintf(f, "webhook_drain_runs_total{result=\"%s\"} %" PRId64 "\n",
		    rs[i], r->runs_total[i]);
	counter(f, "webhook_drain_runs_budget_hit_total", "Drainer runs "
	    "stopped by --max-time.", r->runs_total[3]);
	meta(f, "webhook_queue_events", "gauge", "Events in the inbox by state.");
	fprintf(f, "webhook_queue_events{state=\"ready\"} %" PRId64 "\n"
	    "webhook_queue_events{state=\"waiting_retry\"} %" PRId64 "\n"
	    "webhook_queue_events{state=\"blocked\"} %" PRId64 "\n"
	    "webhook_queue_events{state=\"pending\"} %" PRId64 "\n"
	    "webhook_queue_events{state=\"dead\"} %" PRId64 "\n",
	    r->q.ready, r->st.waiting_retry, r->st.blocked, r->st.pending,
	    r->st.dead);
	/* One label per source: a config names at most 17 (bounded,
	 * unlike events or objects). */
	meta(f, "webhook_source_events", "gauge", "Events in the inbox by "
	    "source and state.");
	for (i = 0; i < r->sources.n; i++) {
		const struct inbox_source_count *c = &r->sources.s[i];
		const char *st[5] = { "pending", "waiting_retry", "done",
		    "stale", "dead" };
		const int64_t v[5] = { c->pending, c->waiting_retry, c->done,
		    c->stale, c->dead };

		for (int k = 0; k < 5; k++) {
			fputs("webhook_source_events{source=\"", f);
			label_value(f, c->source);
			fprintf(f, "\",state=\"%s\"} %" PRId64 "\n", st[k], v[k]);
		}
	}
	gauge(f, "webhook_blocked_objects", "Objects whose events wait behind "
	    "an earlier one.", (double)r->q.blocked_objects);
	gauge(f, "webhook_oldest_ready_age_seconds", "Age of the oldest event "
	    "ready to hand out (0 when none).", (double)report_oldest_ready_s(r));
	gauge(f, "webhook_last_success_timestamp_seconds", "End of the last "
	    "drainer run that did not fail, by status's rule: a run in which "
	    "every event failed failed (0: none).",
	    (double)r->last_success_ns / (double)NS);
	gauge(f, "webhook_db_size_bytes", "Size of the inbox file.",
	    (double)r->db_bytes);
	gauge(f, "webhook_db_wal_size_bytes", "Size of its -wal file.",
	    (double)r->wal_bytes);
	histogram(f, "webhook_wait_seconds", "Received to first hand-out.",
	    &a->wait);
	histogram(f, "webhook_handler_seconds", "Handler run time.", &a->handler);
	meta(f, "webhook_build_info", "gauge", "The drainer's version.");
	fputs("webhook_build_info{version=\"", f);
	label_value(f, version_number);
	fputs("\",commit=\"", f);
	label_value(f, version_commit);
	fputs("\"} 1\n", f);
}

static cJSON *
window_json(const struct report_slot *s)
{
	cJSON *o = cJSON_CreateObject();
	int i;

	if (o == NULL)
		return NULL;
	for (i = 0; i < RC_N; i++)
		cJSON_AddNumberToObject(o, report_counter_name[i], (double)s->c[i]);
	cJSON_AddNumberToObject(o, "wait_p95_ms",
	    (double)history_hist_quantile_ms(&s->wait, 0.95));
	cJSON_AddNumberToObject(o, "handler_p95_ms",
	    (double)history_hist_quantile_ms(&s->handler, 0.95));
	return o;
}

void
report_status_json(cJSON *o, const struct report *r,
    const struct status_attention *a)
{
	cJSON *q, *w, *h, *reasons;
	int i;

	cJSON_AddNumberToObject(o, "version", REPORT_JSON_VERSION);
	cJSON_AddNumberToObject(o, "last_success_age_s",
	    (double)report_last_success_age_s(r));
	if ((q = cJSON_AddObjectToObject(o, "queue")) != NULL) {
		cJSON_AddNumberToObject(q, "ready", (double)r->q.ready);
		cJSON_AddNumberToObject(q, "waiting_retry", (double)r->st.waiting_retry);
		cJSON_AddNumberToObject(q, "blocked", (double)r->st.blocked);
		cJSON_AddNumberToObject(q, "pending", (double)r->st.pending);
		cJSON_AddNumberToObject(q, "done", (double)r->st.done);
		cJSON_AddNumberToObject(q, "stale", (double)r->st.stale);
		cJSON_AddNumberToObject(q, "dead", (double)r->st.dead);
	}
	cJSON_AddNumberToObject(o, "oldest_ready_age_s",
	    (double)report_oldest_ready_s(r));
	cJSON_AddNumberToObject(o, "blocked_objects", (double)r->q.blocked_objects);
	if ((w = cJSON_AddObjectToObject(o, "windows")) != NULL) {
		cJSON_AddItemToObject(w, "1h", window_json(&r->win[RW_1H]));
		cJSON_AddItemToObject(w, "24h", window_json(&r->win[RW_24H]));
	}
	status_json_sources(o, &r->sources);
	cJSON_AddNumberToObject(o, "db_bytes", (double)r->db_bytes);
	cJSON_AddNumberToObject(o, "wal_bytes", (double)r->wal_bytes);
	if ((h = cJSON_AddObjectToObject(o, "health")) != NULL) {
		cJSON_AddBoolToObject(h, "ok", a->n == 0);
		reasons = cJSON_AddArrayToObject(h, "reasons");
		for (i = 0; reasons != NULL && i < a->n; i++)
			cJSON_AddItemToArray(reasons, status_json_text(a->line[i]));
	}
}
