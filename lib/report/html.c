/*
 * report_html: the report as one static page (report/report.h): inline CSS and
 * SVG, no script, no external resource, narrow enough for a phone.  Every
 * string that came from the inbox goes through esc(); numbers are
 * printed by us.  Elements the tests read carry ids (t-ready, failures…).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "lib/common/utf8.h"
#include "lib/operator/present.h"
#include "lib/report/report.h"

#define NS	((int64_t)1000000000)

static const char css[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:0 auto;max-width:960px;"
    "padding:8px;color:#222}h1{font-size:20px;margin:4px 0}"
    "h2{font-size:16px;margin:18px 0 6px}.bad{color:#b00;font-weight:bold}"
    ".tiles{display:flex;flex-wrap:wrap;gap:6px}.tile{border:1px solid #ccc;"
    "border-radius:6px;padding:6px 10px;min-width:92px}.tile b{display:block;"
    "font-size:20px}.tile.bad{border-color:#b00}"
    ".chart{display:flex;flex-wrap:wrap;gap:8px;align-items:flex-start}"
    ".chart svg{flex:1 1 420px;max-width:100%;height:auto;border:1px solid #eee}"
    ".chart table{flex:0 0 auto}table{border-collapse:collapse;font-size:13px}"
    "td,th{border-bottom:1px solid #eee;padding:2px 6px;text-align:left}"
    "td.n{text-align:right}.wrap{overflow-x:auto}"
    "pre{background:#f6f6f6;padding:6px;overflow-x:auto;font-size:12px}"
    ".k1{stroke:#888}.k2{stroke:#2a2}.k3{stroke:#c22}.k4{stroke:#26c}"
    ".s1{background:#888}.s2{background:#2a2}.s3{background:#c22}.s4{background:#26c}"
    ".sw{display:inline-block;width:10px;height:10px;margin-right:4px}";

/*
 * Text from the inbox (len bytes at s), escaped for HTML content and
 * attribute values, the page's one way out for such text: control
 * characters become '?', so nothing can forge markup or lines, and a
 * byte that is not UTF-8 becomes U+FFFD (common/utf8.h), so the page is
 * valid UTF-8 whatever a provider or a handler sent.
 */
static void
esc_n(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	while (i < len) {
		switch (p[i]) {
		case '&': fputs("&amp;", f); i++; continue;
		case '<': fputs("&lt;", f); i++; continue;
		case '>': fputs("&gt;", f); i++; continue;
		case '"': fputs("&quot;", f); i++; continue;
		case '\'': fputs("&#39;", f); i++; continue;
		}
		if ((n = utf8_len(p + i, len - i)) == 0) {
			fputs(UTF8_REPLACEMENT, f);
			i++;
		} else if (n == 1 && (p[i] < 0x20 || p[i] == 0x7f)) {
			fputc('?', f);
			i++;
		} else {
			fwrite(p + i, 1, n, f);
			i += n;
		}
	}
}

static void
esc(FILE *f, const char *s)
{
	if (s != NULL)
		esc_n(f, s, strlen(s));
}

/* A shell word in single quotes, then escaped for HTML. */
static void
shell_word(FILE *f, const char *s)
{
	const char *q;

	fputs("&#39;", f);
	while (s != NULL && (q = strchr(s, '\'')) != NULL) {
		esc_n(f, s, (size_t)(q - s));
		fputs("&#39;\\&#39;&#39;", f);
		s = q + 1;
	}
	esc(f, s);
	fputs("&#39;", f);
}

/* A duration to read at a glance (exact values are in data-s attributes
 * and metrics.prom): 59s, 17m, 5.0h, 3.2d. */
static void
duration(FILE *f, int64_t s)
{
	if (s < 0)
		fputs("never", f);
	else if (s < 120)
		fprintf(f, "%" PRId64 "s", s);
	else if (s < 7200)
		fprintf(f, "%" PRId64 "m", s / 60);
	else if (s < 172800)
		fprintf(f, "%.1fh", (double)s / 3600);
	else
		fprintf(f, "%.1fd", (double)s / 86400);
}

static void
ms(FILE *f, int64_t v)
{
	if (v < 0)
		fputs("–", f);
	else if (v < 1000)
		fprintf(f, "%" PRId64 " ms", v);
	else
		duration(f, v / 1000);
}

static void
tile(FILE *f, const char *id, const char *label, int64_t n, int bad)
{
	fprintf(f, "<div class=\"tile%s\" id=\"t-%s\"><b>%" PRId64
	    "</b>%s</div>\n", bad ? " bad" : "", id, n, label);
}

/* An instant of the page: "2026-12-04 14:05 UTC" (minutes: the page is
 * made every minute at most). */
static void
instant(FILE *f, int64_t t_ns)
{
	char t[INSTANT_SIZE];

	(void)instant_format(t_ns, t);
	fprintf(f, "%.10s %.5s UTC", t, t + 11);
}

static void
header(FILE *f, const struct report *r)
{
	char now[INSTANT_SIZE];
	const struct inbox_run_record *last = &r->last_run;
	int64_t age = report_last_success_age_s(r);
	int stale = age < 0 || age > r->max_idle_s;

	(void)instant_format(r->now_ns, now);
	fputs("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">"
	    "<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">"
	    "<title>webhook inbox</title><style>", f);
	fputs(css, f);
	fputs("</style></head><body>\n<h1>webhook inbox</h1>\n<p>Generated at "
	    "<span id=\"generated-at\">", f);
	esc(f, now);
	fprintf(f, "</span> for <code>");
	esc(f, r->database);
	fputs("</code>. <span id=\"history-since\">", f);
	if (r->first_s == INT64_MAX)
		fputs("No history yet: charts fill in as drainer runs finish.", f);
	else {
		fputs("History since ", f);
		instant(f, r->first_s * NS);
		fputs(": charts start there.", f);
	}
	/* The last run as `status` judges it (status_run_failed), then the
	 * last one that did not fail: a run in which every event failed is
	 * no success. */
	fputs("</span><br>Last run: <span id=\"last-run\"", f);
	if (last->started_ns == 0)
		fputs(" data-failed=\"0\">never", f);
	else {
		fprintf(f, " class=\"%s\" data-failed=\"%d\" data-age-s=\"%"
		    PRId64 "\">", r->last_run_failed ? "bad" : "",
		    r->last_run_failed, (r->now_ns - last->finished_ns) / NS);
		fputs(r->last_run_failed ? "failed" : "ok", f);
		fprintf(f, " (%" PRId64 " done, %" PRId64 " failed), ", last->done,
		    last->failed);
		duration(f, (r->now_ns - last->finished_ns) / NS);
		fputs(" ago", f);
	}
	fprintf(f, "</span>. Last successful run: <span id=\"last-success\" "
	    "class=\"%s\" data-age-s=\"%" PRId64 "\">", stale ? "bad" : "", age);
	duration(f, age);
	fputs(age >= 0 ? " ago" : "", f);
	if (stale)
		fputs(r->last_run_failed && last->started_ns != 0 &&
		    (r->now_ns - last->started_ns) / NS <= r->max_idle_s ?
		    " — runs happen but fail: webhook-drain status" :
		    " — cron looks dead (no successful run within --max-idle)", f);
	fputs("</span></p>\n", f);
}

static void
tiles(FILE *f, const struct report *r)
{
	const struct report_slot *h = &r->win[RW_1H], *d = &r->win[RW_24H];
	int64_t oldest = r->q.ready > 0 ? report_oldest_ready_s(r) : -1;

	fputs("<div class=\"tiles\">\n", f);
	tile(f, "ready", "ready", r->q.ready, 0);
	tile(f, "retry", "waiting for retry", r->st.waiting_retry, 0);
	tile(f, "blocked", "blocked objects", r->q.blocked_objects, 0);
	tile(f, "dead", "dead", r->st.dead, r->st.dead > 0);
	fprintf(f, "<div class=\"tile%s\" id=\"t-oldest\" data-s=\"%" PRId64
	    "\"><b>", oldest > r->max_idle_s ? " bad" : "", oldest);
	if (oldest < 0)
		fputs("–", f);
	else
		duration(f, oldest);
	fputs("</b>oldest ready</div>\n", f);
	tile(f, "received-1h", "received 1 h", h->c[RC_RECEIVED], 0);
	tile(f, "handled-1h", "handled 1 h", h->c[RC_HANDLED], 0);
	tile(f, "failed-1h", "failed 1 h", h->c[RC_FAILED], h->c[RC_FAILED] > 0);
	tile(f, "received-24h", "received 24 h", d->c[RC_RECEIVED], 0);
	tile(f, "handled-24h", "handled 24 h", d->c[RC_HANDLED], 0);
	tile(f, "failed-24h", "failed 24 h", d->c[RC_FAILED], 0);
	/* Answers of the API with the object (truncated events, `refetch`). */
	tile(f, "refetched-24h", "refetched 24 h", d->c[RC_REFETCHED], 0);
	fputs("<div class=\"tile\" id=\"t-duplicates\"><b>n/a</b>duplicates "
	    "(not counted: docs/report.md)</div>\n</div>\n", f);
}

/* Series of one chart: k names, each n values, drawn from index `from`
 * (before it nothing was recorded: report.h's first_s); a value < 0 is
 * no data (an empty histogram) and breaks its line.  cls 1..4 the colour. */
struct chart {
	const char	*id, *title, *unit;	/* unit "ms": values are ms */
	int		 k, n, sums;		/* sums: show totals beside */
	const char	*name[4];
	int		 cls[4];
	const int64_t	*v[4];
	int		 from;
	int		 bound;	/* values are upper bounds: shown "≤" */
};

#define CW	600
#define CH	120

static void
chart_value(FILE *f, const struct chart *c, int64_t v, int bound)
{
	if (v < 0)
		fputs("–", f);
	else if (c->unit != NULL) {
		fputs(bound && c->bound ? "≤ " : "", f);
		ms(f, v);
	} else
		fprintf(f, "%" PRId64, v);
}

/* Where point i of a chart, of value v, goes in its SVG (max: the top). */
static double
point_x(const struct chart *c, int i)
{
	/* 2 px in from each side: a dot at either end shows whole. */
	return c->n > 1 ? 2 + (double)i * (CW - 4) / (c->n - 1) : 2.0;
}

static double
point_y(int64_t v, int64_t max)
{
	return CH + 2 - (double)v * CH / (double)max;
}

static void
chart(FILE *f, const struct chart *c)
{
	int64_t max = 1, tot, m;
	int i, j, s, seen;

	for (s = 0; s < c->k; s++)
		for (i = c->from; i < c->n; i++)
			if (c->v[s][i] > max)
				max = c->v[s][i];
	fprintf(f, "<h3>%s</h3><div class=\"chart\" id=\"%s\" data-from=\"%d\">"
	    "<svg viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"%s\">",
	    c->title, c->id, c->from, CW, CH + 4, c->title);
	for (s = 0; s < c->k; s++)
		for (i = c->from; i < c->n; i = j) {
			/* One line per run of values with data; a run of one
			 * (a history one bucket long) is a dot, or it would
			 * not show. */
			for (; i < c->n && c->v[s][i] < 0; i++)
				;
			for (j = i; j < c->n && c->v[s][j] >= 0; j++)
				;
			if (j - i == 1)
				fprintf(f, "<circle class=\"k%d\" fill=\"none\" "
				    "stroke-width=\"1.5\" r=\"2.5\" cx=\"%.1f\" "
				    "cy=\"%.1f\"/>", c->cls[s], point_x(c, i),
				    point_y(c->v[s][i], max));
			else if (j - i > 1) {
				fprintf(f, "<polyline class=\"k%d\" fill=\"none\" "
				    "stroke-width=\"1.5\" points=\"", c->cls[s]);
				for (; i < j; i++)
					fprintf(f, "%.1f,%.1f ", point_x(c, i),
					    point_y(c->v[s][i], max));
				fputs("\"/>", f);
			}
		}
	fputs("</svg><table><tr><th></th><th>", f);
	fputs(c->sums ? "total" : "last", f);
	fputs("</th><th>max</th></tr>", f);
	for (s = 0; s < c->k; s++) {
		for (tot = c->sums ? 0 : -1, m = -1, seen = 0, i = c->from;
		    i < c->n; i++) {
			if (c->v[s][i] < 0)
				continue;
			seen = 1;
			tot = c->sums ? tot + c->v[s][i] : c->v[s][i];
			if (c->v[s][i] > m)
				m = c->v[s][i];
		}
		fprintf(f, "<tr><td><span class=\"sw s%d\"></span>%s</td>"
		    "<td class=\"n\">", c->cls[s], c->name[s]);
		chart_value(f, c, seen ? tot : -1, s < 2);
		fputs("</td><td class=\"n\">", f);
		chart_value(f, c, m, s < 2);
		fputs("</td></tr>", f);
	}
	fputs("</table></div>\n", f);
}

/* The first of n slots of width_s starting at slot0_s that the history
 * covers (report.h's first_s); n when none does. */
static int
first_slot(const struct report *r, int64_t slot0_s, int64_t width_s, int n)
{
	int64_t d;

	if (r->first_s == INT64_MAX)
		return n;
	d = (history_bucket_s(r->first_s, width_s) - slot0_s) / width_s;
	return d < 0 ? 0 : d > n ? n : (int)d;
}

/* Flow and backlog of n slots from `from` (derived backlog: report/report.h). */
static void
flow_charts(FILE *f, const struct report *r, const struct report_slot *sl,
    int n, int from, const char *span)
{
	int64_t v[6][REPORT_FINE_N];
	int64_t pending = r->st.pending, dead = r->st.dead;
	char id[32], title[64], id2[32], title2[64];
	int i;

	for (i = n - 1; i >= from; i--) {
		v[0][i] = sl[i].c[RC_RECEIVED];
		v[1][i] = sl[i].c[RC_HANDLED];
		v[2][i] = sl[i].c[RC_FAILED];
		v[3][i] = pending < 0 ? 0 : pending;
		v[4][i] = dead < 0 ? 0 : dead;
		pending += sl[i].c[RC_RECEIVED] - sl[i].c[RC_HANDLED] -
		    sl[i].c[RC_DEAD] - sl[i].c[RC_STALE];
		dead -= sl[i].c[RC_DEAD];
	}
	snprintf(id, sizeof id, "flow-%s", span);
	snprintf(title, sizeof title, "Received, handled, failed (%s)", span);
	chart(f, &(struct chart){ id, title, NULL, 3, n, 1,
	    { "received", "handled", "failed" }, { 1, 2, 3 },
	    { v[0], v[1], v[2] }, from, 0 });
	snprintf(id2, sizeof id2, "backlog-%s", span);
	snprintf(title2, sizeof title2, "Backlog by state (%s, derived)", span);
	chart(f, &(struct chart){ id2, title2, NULL, 2, n, 0,
	    { "pending", "dead" }, { 4, 3 }, { v[3], v[4] }, from, 0 });
}

/*
 * Wait and handler time p50/p95/max, merging `per` slots a point, from
 * slot `from`.  The quantiles come from fixed buckets (lib/store/history.h):
 * what is known is the bucket's upper bound, or the max seen when lower,
 * so they are shown as "≤ N", never as if measured; the max is measured.
 */
static void
latency_charts(FILE *f, const struct report_slot *sl, int n, int from,
    int per, const char *span)
{
	int64_t v[6][REPORT_DAYS_N < 24 ? 24 : REPORT_DAYS_N];
	struct history_hist w, h;
	char id[2][32], title[2][64];
	int i, j, pts = n / per;

	for (i = 0; i < pts; i++) {
		memset(&w, 0, sizeof w);
		memset(&h, 0, sizeof h);
		for (j = i * per; j < (i + 1) * per; j++) {
			int b;
			for (b = 0; b < HISTORY_NBUCKETS; b++) {
				w.count[b] += sl[j].wait.count[b];
				h.count[b] += sl[j].handler.count[b];
			}
			w.max_ms = w.max_ms > sl[j].wait.max_ms ? w.max_ms : sl[j].wait.max_ms;
			h.max_ms = h.max_ms > sl[j].handler.max_ms ? h.max_ms : sl[j].handler.max_ms;
		}
		v[0][i] = history_hist_quantile_ms(&w, 0.5);
		v[1][i] = history_hist_quantile_ms(&w, 0.95);
		v[2][i] = history_hist_total(&w) > 0 ? w.max_ms : -1;
		v[3][i] = history_hist_quantile_ms(&h, 0.5);
		v[4][i] = history_hist_quantile_ms(&h, 0.95);
		v[5][i] = history_hist_total(&h) > 0 ? h.max_ms : -1;
	}
	snprintf(id[0], sizeof id[0], "wait-%s", span);
	snprintf(title[0], sizeof title[0], "Wait, received to first hand-out (%s)", span);
	snprintf(id[1], sizeof id[1], "handler-%s", span);
	snprintf(title[1], sizeof title[1], "Handler time (%s)", span);
	for (i = 0; i < 2; i++)
		chart(f, &(struct chart){ id[i], title[i], "ms", 3, pts, 0,
		    { "p50", "p95", "max" }, { 2, 4, 3 },
		    { v[i * 3], v[i * 3 + 1], v[i * 3 + 2] }, from / per, 1 });
}

/* One bar per run over the last 24 h: where a run is missing, cron was. */
static void
runs_strip(FILE *f, const struct report *r)
{
	int64_t t0 = r->now_ns - 86400 * NS, gap = 0, prev, maxn = 1;
	int i, budget = 0, errors = 0;

	/* Gaps are between recorded runs: before the first run ever there
	 * was no cron to miss (an inbox a minute old has no 24 h gap). */
	prev = r->run_before_ns != 0 ? (r->run_before_ns > t0 ?
	    r->run_before_ns : t0) : r->nruns > 0 ? r->runs[0].started_ns : 0;

	for (i = 0; i < r->nruns; i++)
		if (r->runs[i].claimed > maxn)
			maxn = r->runs[i].claimed;
	fputs("<h3>Drain runs (24 h)</h3><div class=\"chart\" id=\"runs-24h\">"
	    "<svg viewBox=\"0 0 600 44\" role=\"img\" aria-label=\"drain runs\">", f);
	for (i = 0; i < r->nruns; i++) {
		const struct inbox_run_record *u = &r->runs[i];
		double x = (double)(u->started_ns - t0) * CW / (86400.0 * NS);
		double hgt = 4 + 36.0 * (double)u->claimed / (double)maxn;
		int cls = status_run_failed(u->result, u->done) ? 3 :
		    u->budget_hit ? 4 : 2;

		budget += u->budget_hit;
		errors += cls == 3;
		if (u->started_ns - prev > gap)
			gap = u->started_ns - prev;
		prev = u->finished_ns;
		fprintf(f, "<rect class=\"k%d\" x=\"%.1f\" y=\"%.1f\" width=\"1.5\" "
		    "height=\"%.1f\"/>", cls, x, 42 - hgt, hgt);
	}
	if (prev != 0 && r->now_ns - prev > gap)
		gap = r->now_ns - prev;
	fprintf(f, "</svg><table><tr><td>runs</td><td class=\"n\" id=\"runs-n\">%d"
	    "</td></tr><tr><td><span class=\"sw s4\"></span>budget hit</td>"
	    "<td class=\"n\">%d</td></tr><tr><td><span class=\"sw s3\"></span>"
	    "failed</td><td class=\"n\">%d</td></tr><tr><td>longest gap</td>"
	    "<td class=\"n\" id=\"runs-gap\" data-s=\"%" PRId64 "\">", r->nruns,
	    budget, errors, prev != 0 ? (int64_t)(gap / NS) : -1);
	if (prev != 0)
		duration(f, (int64_t)(gap / NS));
	else
		fputs("– (no run recorded)", f);
	fputs("</td></tr></table></div>\n", f);
}

static void
table_failures(FILE *f, const struct report *r)
{
	int i;

	fputs("<h2>Failures by error class</h2><div class=\"wrap\"><table "
	    "id=\"failures\"><tr><th>class</th><th>1 h</th><th>24 h</th>"
	    "<th>7 d</th></tr>\n", f);
	for (i = 0; i < r->nclasses; i++) {
		const struct report_class *c = &r->classes[i];
		if (c->n[RW_7D] == 0)
			continue;
		fputs("<tr><td>", f);
		esc(f, c->name);
		fprintf(f, "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">%"
		    PRId64 "</td><td class=\"n\">%" PRId64 "</td></tr>\n",
		    c->n[RW_1H], c->n[RW_24H], c->n[RW_7D]);
	}
	fputs("</table></div><pre>webhook-drain list --state pending   "
	    "# failed events waiting for their retry (and the rest of the queue)\n"
	    "webhook-drain list --state dead</pre>\n", f);
}

static void
table_blocked(FILE *f, const struct report *r)
{
	char when[PRESENT_TIME_SIZE];
	int i;

	fputs("<h2>Blocked objects</h2><div class=\"wrap\"><table id=\"blocked\">"
	    "<tr><th>object</th><th>head event</th><th>attempts</th>"
	    "<th>next try</th><th>queued behind</th><th>last error</th></tr>\n", f);
	for (i = 0; i < r->nblocked; i++) {
		const struct report_blocked *b = &r->blocked[i];
		fputs("<tr><td>", f);
		esc(f, b->object);
		fputs("</td><td>", f);
		esc(f, b->head);
		fprintf(f, "</td><td class=\"n\">%" PRId64 "</td><td>", b->attempts);
		esc(f, present_short_time(b->next_at, when));
		fprintf(f, "</td><td class=\"n\">%" PRId64 "</td><td>", b->behind);
		esc(f, b->error);
		fputs("</td></tr>\n", f);
	}
	fputs("</table></div><pre>", f);
	if (r->nblocked == 0)
		fputs("# no blocked object", f);
	for (i = 0; i < r->nblocked; i++) {
		fputs("webhook-drain requeue --state pending --object ", f);
		shell_word(f, r->blocked[i].object);
		fputs(" --yes\n", f);
	}
	fputs("</pre>\n", f);
}

static void
table_dead(FILE *f, const struct report *r)
{
	char when[PRESENT_TIME_SIZE];
	int i;

	fprintf(f, "<h2>Latest dead letters</h2><div class=\"wrap\"><table "
	    "id=\"dead\"><tr><th>event</th><th>type</th><th>object</th>"
	    "<th>attempts</th><th>died</th><th>first error</th>"
	    "<th>last error</th></tr>\n");
	for (i = 0; i < r->ndead; i++) {
		const struct report_dead *d = &r->dead[i];
		fputs("<tr><td>", f);
		esc(f, d->id);
		fputs("</td><td>", f);
		esc(f, d->type);
		fputs("</td><td>", f);
		esc(f, d->object);
		fprintf(f, "</td><td class=\"n\">%" PRId64 "</td><td>", d->attempts);
		esc(f, present_short_time(d->died_at, when));
		fputs("</td><td>", f);
		esc(f, d->first_error[0] ? d->first_error : "–");
		fputs("</td><td>", f);
		esc(f, d->error);
		fputs("</td></tr>\n", f);
	}
	fprintf(f, "</table></div><pre>webhook-drain requeue --state dead --yes"
	    "   # all %" PRId64 " dead letters</pre>\n", r->st.dead);
}

static void
table_types(FILE *f, const struct report *r)
{
	int i;

	fputs("<h2>Event types</h2><div class=\"wrap\"><table id=\"types\">"
	    "<tr><th>type</th><th>handled 24 h</th><th>failed 24 h</th>"
	    "<th>handled 7 d</th><th>failed 7 d</th><th>handler p95 7 d</th>"
	    "</tr>\n", f);
	for (i = 0; i < r->ntypes; i++) {
		const struct report_type *t = &r->types[i];
		if (t->handled[RW_7D] + t->failed[RW_7D] == 0)
			continue;
		fputs("<tr><td>", f);
		esc(f, t->name[0] ? t->name : "(none)");
		fprintf(f, "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">%"
		    PRId64 "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">%"
		    PRId64 "</td><td class=\"n\">", t->handled[RW_24H],
		    t->failed[RW_24H], t->handled[RW_7D], t->failed[RW_7D]);
		if (history_hist_total(&t->handler7d) > 0)
			fputs("≤ ", f);
		ms(f, history_hist_quantile_ms(&t->handler7d, 0.95));
		fputs("</td></tr>\n", f);
	}
	fputs("</table></div><pre>", f);
	for (i = 0; i < r->ntypes; i++) {
		if (r->types[i].name[0] == '\0')
			continue;
		fputs("webhook-drain list --type ", f);
		shell_word(f, r->types[i].name);
		fputs("\n", f);
	}
	fputs("</pre>\n", f);
}

/* Events by source (docs/DESIGN.md "Sources"), now: only when there is a
 * [source NAME]'s row; each with its list command. */
static void
table_sources(FILE *f, const struct report *r)
{
	const struct status_sources *ss = &r->sources;
	int i;

	if (!status_sources_named(ss))
		return;
	fputs("<h2>Sources</h2><div class=\"wrap\"><table id=\"sources\">"
	    "<tr><th>source</th><th>pending</th><th>retrying</th><th>done</th>"
	    "<th>stale</th><th>dead</th></tr>\n", f);
	for (i = 0; i < ss->n; i++) {
		const struct inbox_source_count *c = &ss->s[i];

		fputs("<tr><td>", f);
		esc(f, c->source);
		fprintf(f, "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">%"
		    PRId64 "</td><td class=\"n\">%" PRId64 "</td><td class=\"n\">%"
		    PRId64 "</td><td class=\"n\">%" PRId64 "</td></tr>\n",
		    c->pending, c->waiting_retry, c->done, c->stale, c->dead);
	}
	fputs("</table></div><pre>", f);
	for (i = 0; i < ss->n; i++) {
		fputs("webhook-drain list --source ", f);
		shell_word(f, ss->s[i].source);
		fputs("\n", f);
	}
	fputs("</pre>\n", f);
}

void
report_html(FILE *f, const struct report *r)
{
	int fine0 = first_slot(r, r->fine0_s, HISTORY_FINE_S, REPORT_FINE_N),
	    day0 = first_slot(r, r->day0_s, HISTORY_DAY_S, REPORT_DAYS_N);

	header(f, r);
	tiles(f, r);
	fputs("<h2>Last 24 hours (5-minute buckets)</h2>\n", f);
	flow_charts(f, r, r->fine, REPORT_FINE_N, fine0, "24h");
	latency_charts(f, r->fine, REPORT_FINE_N, fine0, 12, "24h");
	runs_strip(f, r);
	fputs("<h2>Last 30 days (days)</h2>\n", f);
	flow_charts(f, r, r->days, REPORT_DAYS_N, day0, "30d");
	latency_charts(f, r->days, REPORT_DAYS_N, day0, 1, "30d");
	chart(f, &(struct chart){ "runs-30d", "Drain runs per day (30 d)", NULL,
	    1, REPORT_DAYS_N, 1, { "runs" }, { 2 }, { r->runs_per_day }, day0, 0 });
	table_sources(f, r);
	table_failures(f, r);
	table_blocked(f, r);
	table_dead(f, r);
	table_types(f, r);
	fputs("<p>Bodies are never shown. Counts come from the drainer's "
	    "history (kept beyond retention); duplicates are not counted "
	    "(the receiver writes nothing for them).</p></body></html>\n", f);
}
