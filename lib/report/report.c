/*
 * report: gathering the report's numbers from the inbox, and writing its
 * files atomically (report/report.h).  Rendering is report/html.c and
 * report/prom.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/drain/drain.h"
#include "lib/report/report.h"

#define NS	((int64_t)1000000000)

const char *const report_counter_name[RC_N] = {
	"received", "handled", "failed", "retried", "dead", "stale",
	"refetched"
};

static const int64_t window_s[RW_N] = { 3600, 86400, 7 * 86400, INT64_MAX };

static int
counter_of(const char *name)
{
	int i;

	for (i = 0; i < RC_N; i++)
		if (strcmp(name, report_counter_name[i]) == 0)
			return i;
	return -1;
}

static void
hist_row(struct history_hist *h, int idx, int64_t n)
{
	if (idx >= 0 && idx < HISTORY_NBUCKETS)
		h->count[idx] += n;
	else if (idx == HISTORY_IDX_SUM)
		h->sum_ms += n;
	else if (idx == HISTORY_IDX_MAX && n > h->max_ms)
		h->max_ms = n;
}

static void
slot_row(struct report_slot *s, const struct inbox_history_row *row)
{
	int c = counter_of(row->name);

	if (c >= 0)
		s->c[c] += row->n;
	else if (strcmp(row->name, "wait") == 0)
		hist_row(&s->wait, row->idx, row->n);
	else if (strcmp(row->name, "handler") == 0)
		hist_row(&s->handler, row->idx, row->n);
}

/* The class or type entry named `name`, added when there is room. */
static void *
entry(void *arr, int *n, size_t size, const char *name)
{
	char *p = arr;
	int i;

	for (i = 0; i < *n; i++)
		if (strcmp(p + (size_t)i * size, name) == 0)
			return p + (size_t)i * size;
	if (*n == REPORT_ROWS_MAX)
		return NULL;
	p += (size_t)(*n)++ * size;
	memset(p, 0, size);
	snprintf(p, 64, "%s", name);	/* name is each entry's first member */
	return p;
}

static void
labelled_row(struct report *r, const struct inbox_history_row *row, int w)
{
	struct report_class *cl;
	struct report_type *t;

	if (strcmp(row->name, "failed") == 0 && (cl = entry(r->classes,
	    &r->nclasses, sizeof *cl, row->label)) != NULL)
		cl->n[w] += row->n;
	if (strncmp(row->name, "type_", 5) == 0 && (t = entry(r->types,
	    &r->ntypes, sizeof *t, row->label)) != NULL) {
		if (strcmp(row->name, "type_handled") == 0)
			t->handled[w] += row->n;
		else
			t->failed[w] += row->n;
	}
	if (strcmp(row->name, "handler") == 0 && w == RW_7D &&
	    (t = entry(r->types, &r->ntypes, sizeof *t, row->label)) != NULL)
		hist_row(&t->handler7d, row->idx, row->n);
}

static int
history_row(const struct inbox_history_row *row, void *arg)
{
	struct report *r = arg;
	int64_t now_s = r->now_ns / NS, cur = history_bucket_s(now_s,
	    HISTORY_FINE_S), d;
	int w;

	if (row->bucket_s < r->first_s)
		r->first_s = row->bucket_s;
	if (strcmp(row->name, "run") == 0)
		r->runs_total[strcmp(row->label, "ok") == 0 ? 0 :
		    strcmp(row->label, "failures") == 0 ? 1 : 2] += row->n;
	if (strcmp(row->name, "run_budget_hit") == 0)
		r->runs_total[3] += row->n;
	if (row->width_s == HISTORY_FINE_S && row->bucket_s >= r->fine0_s &&
	    (d = (row->bucket_s - r->fine0_s) / HISTORY_FINE_S) < REPORT_FINE_N)
		slot_row(&r->fine[d], row);
	if (row->bucket_s >= r->day0_s && (d = (row->bucket_s - r->day0_s) /
	    HISTORY_DAY_S) < REPORT_DAYS_N)
		slot_row(&r->days[d], row);
	/* A window of W seconds: the W / 300 buckets ending with the current
	 * one (day buckets only in "all": they are older than 35 days). */
	for (w = 0; w < RW_N; w++) {
		if (w != RW_ALL && (row->width_s != HISTORY_FINE_S ||
		    row->bucket_s < cur - window_s[w] + HISTORY_FINE_S))
			continue;
		slot_row(&r->win[w], row);
		labelled_row(r, row, w);
	}
	return 0;
}

static int
run_row(const struct inbox_run_record *run, void *arg)
{
	struct report *r = arg;
	int64_t d = (run->started_ns / NS - r->day0_s) / HISTORY_DAY_S;

	if (run->started_ns / NS < r->first_s)
		r->first_s = run->started_ns / NS;
	if (d >= 0 && d < REPORT_DAYS_N)
		r->runs_per_day[d]++;
	/* `status`'s rule (status_run_failed): a run in which every event
	 * failed is no success, however it ended. */
	if (!status_run_failed(run->result, run->done) &&
	    run->finished_ns > r->last_success_ns)
		r->last_success_ns = run->finished_ns;
	if (run->started_ns >= r->last_run.started_ns) {	/* oldest first */
		r->last_run = *run;
		r->last_run_failed = status_run_failed(run->result, run->done);
	}
	if (run->started_ns < r->now_ns - 86400 * NS) {
		if (run->finished_ns > r->run_before_ns)
			r->run_before_ns = run->finished_ns;
	} else if (r->nruns < REPORT_RUNS_MAX)
		r->runs[r->nruns++] = *run;
	return 0;
}

static void
object_text(char *out, size_t outsz, const char *type, const char *id)
{
	snprintf(out, outsz, "%s:%s", type ? type : "", id ? id : "");
}

static int
blocked_row(const struct inbox_blocked *b, void *arg)
{
	struct report *r = arg;
	struct report_blocked *o = &r->blocked[r->nblocked++];

	object_text(o->object, sizeof o->object, b->object_type, b->object_id);
	snprintf(o->head, sizeof o->head, "%s", b->webhook_id ? b->webhook_id : "");
	snprintf(o->next_at, sizeof o->next_at, "%s", b->next_at ? b->next_at : "");
	snprintf(o->error, sizeof o->error, "%s", b->last_error ? b->last_error : "");
	o->attempts = b->attempts;
	o->behind = b->behind;
	return r->nblocked < REPORT_ROWS_MAX ? 0 : -1;
}

/* A dead letter, newest first (inbox_dead_latest). */
static int
dead_row(const struct inbox_event *e, const char *first_error, void *arg)
{
	struct report *r = arg;
	struct report_dead *o = &r->dead[r->ndead++];

	snprintf(o->id, sizeof o->id, "%s", e->webhook_id);
	snprintf(o->type, sizeof o->type, "%s", e->type ? e->type : "");
	object_text(o->object, sizeof o->object, e->object_type, e->object_id);
	snprintf(o->died_at, sizeof o->died_at, "%s", e->finished_at);
	snprintf(o->error, sizeof o->error, "%s", e->last_error ? e->last_error : "");
	snprintf(o->first_error, sizeof o->first_error, "%s",
	    first_error ? first_error : "");
	o->attempts = e->attempts;
	return r->ndead < REPORT_ROWS_MAX ? 0 : -1;
}

static int64_t
file_size(const char *path, const char *suffix)
{
	char p[PATH_MAX + 8];
	struct stat sb;

	if ((size_t)snprintf(p, sizeof p, "%s%s", path, suffix) >= sizeof p ||
	    stat(p, &sb) == -1)
		return 0;
	return (int64_t)sb.st_size;
}

int
report_collect(struct inbox *ib, const char *database, int64_t now_ns,
    int64_t max_idle_s, const struct inbox_status_report *known,
    struct report *r, struct buf *err)
{
	int64_t now_s = now_ns / NS;

	memset(r, 0, sizeof *r);
	r->now_ns = now_ns;
	r->max_idle_s = max_idle_s;
	r->first_s = INT64_MAX;
	inbox_database_name(database, r->database, sizeof r->database);
	r->fine0_s = history_bucket_s(now_s, HISTORY_FINE_S) -
	    (REPORT_FINE_N - 1) * HISTORY_FINE_S;
	r->day0_s = history_bucket_s(now_s, HISTORY_DAY_S) -
	    (REPORT_DAYS_N - 1) * HISTORY_DAY_S;
	r->db_bytes = file_size(database, "");
	r->wal_bytes = file_size(database, "-wal");
	if (known != NULL)
		r->st = *known;
	if ((known == NULL && inbox_status_report(ib, &r->st, err) != INBOX_OK) ||
	    inbox_queue_now(ib, now_ns, &r->q, err) != INBOX_OK ||
	    inbox_history_read(ib, INT64_MIN, history_row, r, err) != INBOX_OK ||
	    inbox_runs_read(ib, INT64_MIN, run_row, r, err) != INBOX_OK ||
	    inbox_blocked_list(ib, REPORT_ROWS_MAX, blocked_row, r, err) != INBOX_OK ||
	    inbox_dead_latest(ib, REPORT_ROWS_MAX, dead_row, r, err) != INBOX_OK ||
	    status_sources_read(ib, &r->sources, err) == -1)
		return -1;
	return 0;
}

int64_t
report_last_success_age_s(const struct report *r)
{
	if (r->last_success_ns == 0)
		return -1;
	return (r->now_ns - r->last_success_ns) / NS;
}

int64_t
report_oldest_ready_s(const struct report *r)
{
	int64_t t;

	if (r->q.oldest_ready[0] == '\0' || instant_to_ns(r->q.oldest_ready,
	    &t) == -1 || t > r->now_ns)
		return 0;
	return (r->now_ns - t) / NS;
}

int
report_write_file(const char *path, const struct report *r,
    void (*fn)(FILE *, const struct report *), struct buf *err)
{
	char tmp[PATH_MAX];
	FILE *f = NULL;
	int fd;

	if ((size_t)snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid())
	    >= sizeof tmp) {
		errno = ENAMETOOLONG;
		goto fail;
	}
	/* Readable by the web server's user (the directory is what is
	 * protected: docs/HOSTING.md). */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)) == -1)
		goto fail;
	if ((f = fdopen(fd, "w")) == NULL) {
		close(fd);
		goto fail;
	}
	fn(f, r);
	if (fflush(f) == EOF || ferror(f) || fsync(fileno(f)) == -1)
		goto fail;
	if (fclose(f) == EOF) {
		f = NULL;
		goto fail;
	}
	f = NULL;
	if (rename(tmp, path) == -1)
		goto fail;
	return 0;
fail:
	buf_reset(err);
	(void)buf_printf(err, "%s: %s", path, strerror(errno));
	if (f != NULL)
		fclose(f);
	(void)unlink(tmp);
	return -1;
}

int
report_refresh(const struct config *c, const char *dir,
    const char *metrics_path, int64_t max_idle_s, struct buf *err)
{
	struct report *r = NULL;
	struct inbox *ib = NULL;
	char path[PATH_MAX];
	int rc = -1;

	if ((r = malloc(sizeof *r)) == NULL) {
		buf_reset(err);
		(void)buf_printf(err, "report: out of memory");
		return -1;
	}
	if ((ib = drain_inbox_open(c, err)) == NULL ||
	    report_collect(ib, c->database, util_now_ns(), max_idle_s, NULL,
	    r, err) == -1)
		goto out;
	status_sources_configured(&r->sources, c);
	/* The directory is the report's: made when missing (docs/report.md),
	 * as cron's first run with --report finds it. */
	if (dir != NULL && mkdir(dir, 0755) == -1 && errno != EEXIST) {
		buf_reset(err);
		(void)buf_printf(err, "%s: %s", dir, strerror(errno));
		goto out;
	}
	if (dir != NULL && ((size_t)snprintf(path, sizeof path, "%s/index.html",
	    dir) >= sizeof path || report_write_file(path, r, report_html,
	    err) == -1))
		goto out;
	if (metrics_path == NULL && dir != NULL) {
		(void)snprintf(path, sizeof path, "%s/metrics.prom", dir);
		metrics_path = path;
	}
	if (metrics_path != NULL && report_write_file(metrics_path, r,
	    report_prom, err) == -1)
		goto out;
	rc = 0;
out:
	inbox_close(ib);
	free(r);
	return rc;
}
