/*
 * report: the operator's view without a daemon (docs/report.md): what the
 * inbox holds now and its history, gathered once (report_collect) and
 * written as a static page (index.html), Prometheus text (metrics.prom) and
 * the extra fields of `status --json`.  Files are written atomically (a
 * temporary file in the same directory, then rename), so a web server or
 * node_exporter never reads half of one.
 *
 * Nothing here reads an event's body: a page may be seen by someone who
 * must not see personal data.  Every string from the inbox (ids, types,
 * object ids, errors) is escaped for HTML (report/html.c).
 *
 * Numbers come from history's counters (never from COUNT(*) over rows
 * that retention deletes) except the queue now (pending, dead, ready,
 * blocked: rows that retention never deletes while they are in that
 * state).  Backlog over time is derived: pending then = pending now −
 * received since + finished since (requeue and forget are not in it).
 */
#ifndef WEBHOOK_REPORT_H
#define WEBHOOK_REPORT_H

#include <limits.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "lib/program/config.h"
#include "lib/store/history.h"
#include "lib/store/inbox.h"
#include "lib/operator/status.h"

/* The counters a bucket or window holds. */
enum report_counter {
	RC_RECEIVED, RC_HANDLED, RC_FAILED, RC_RETRIED, RC_DEAD, RC_STALE,
	RC_REFETCHED,
	RC_N
};
extern const char *const report_counter_name[RC_N];

struct report_slot {
	int64_t			c[RC_N];
	struct history_hist	wait, handler;
};

/* Charts: 24 h of 5-minute buckets, 30 days of days, ending now. */
#define REPORT_FINE_N	288
#define REPORT_DAYS_N	30
/* Table rows at most (a page, not a dump). */
#define REPORT_ROWS_MAX	20
#define REPORT_RUNS_MAX	2000

/* Windows of the tiles and tables. */
enum report_window { RW_1H, RW_24H, RW_7D, RW_ALL, RW_N };

struct report_class {		/* failures by error class */
	char	name[64];
	int64_t	n[RW_N];
};
struct report_type {		/* per event type */
	char			name[64];
	int64_t			handled[RW_N], failed[RW_N];
	struct history_hist	handler7d;
};
struct report_blocked {
	char	object[200], head[128], next_at[INSTANT_SIZE], error[160];
	int64_t	attempts, behind;
};
struct report_dead {
	char	id[128], type[64], object[200], died_at[INSTANT_SIZE],
		error[160], first_error[160];
	int64_t	attempts;
};

struct report {
	int64_t			 now_ns;
	char			 database[PATH_MAX];
	struct inbox_status_report st;
	struct status_sources	 sources;	/* events by source, now */
	struct inbox_queue	 q;
	int64_t			 db_bytes, wal_bytes;
	int64_t			 fine0_s, day0_s;	/* first bucket starts */
	struct report_slot	 fine[REPORT_FINE_N], days[REPORT_DAYS_N];
	struct report_slot	 win[RW_N];
	struct report_class	 classes[REPORT_ROWS_MAX];
	int			 nclasses;
	struct report_type	 types[REPORT_ROWS_MAX];
	int			 ntypes;
	struct report_blocked	 blocked[REPORT_ROWS_MAX];
	int			 nblocked;
	struct report_dead	 dead[REPORT_ROWS_MAX];
	int			 ndead;
	struct inbox_run_record	 runs[REPORT_RUNS_MAX];	/* last 24 h */
	int			 nruns;
	int64_t			 runs_total[4];	/* ok, failures, error, budget hit:
						 * history's counters */
	int64_t			 runs_per_day[REPORT_DAYS_N];
	int64_t			 last_success_ns;	/* 0: none */
	struct inbox_run_record	 last_run;	/* started_ns 0: none */
	int			 last_run_failed;	/* status_run_failed */
	/* What the history covers: the start of its first bucket or its
	 * first recorded run, Unix s (INT64_MAX: nothing recorded).  Charts
	 * draw only from there: before it nothing was recorded, which is
	 * not zero (docs/report.md). */
	int64_t			 first_s;
	/* End of the last run that started before the strip of runs (24 h),
	 * ns; 0: none, so the strip's first gap starts at its first run. */
	int64_t			 run_before_ns;
	int64_t			 max_idle_s;	/* cron looks dead past this */
};

/*
 * Gather everything from an open inbox at now_ns; `known`, when not NULL,
 * is the inbox_status_report the caller already has (it scans every row:
 * `status --json` need not pay it twice).  *r is large (keep it on the
 * heap).  Returns 0, or -1 with the reason in err.
 */
int	report_collect(struct inbox *ib, const char *database, int64_t now_ns,
	    int64_t max_idle_s, const struct inbox_status_report *known,
	    struct report *r, struct buf *err)
	    __attribute__((warn_unused_result));

/* The page and the metrics, to a stream. */
void	report_html(FILE *f, const struct report *r);
void	report_prom(FILE *f, const struct report *r);

/*
 * The fields the report adds to `status --json` (docs/report.md), into o
 * (status_json's object: its keys stay as they were): "version"
 * (REPORT_JSON_VERSION, raised when a key changes meaning or goes), queue
 * by state, oldest ready age, blocked objects, windows 1h/24h with p95s,
 * file sizes, and "health" {ok, reasons} from the attention lines.
 * docs/status.schema.json is the schema.
 */
#define REPORT_JSON_VERSION	1
void	report_status_json(cJSON *o, const struct report *r,
	    const struct status_attention *a);

/* Seconds the oldest ready event has been ready; 0 when none. */
int64_t	report_oldest_ready_s(const struct report *r);

/* Age of the last successful run (one status_run_failed does not call
 * failed), s; -1: none. */
int64_t	report_last_success_age_s(const struct report *r);

/*
 * Write path atomically with fn: path.tmp.PID, fsync, rename.  0, or -1
 * with the reason in err (the temporary file removed).
 */
int	report_write_file(const char *path, const struct report *r,
	    void (*fn)(FILE *, const struct report *), struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * `report --out DIR` and `run --report DIR`: open the inbox, collect,
 * write DIR/index.html and the metrics (metrics_path, or DIR/metrics.prom
 * when NULL; dir NULL: the metrics alone); max_idle_s as status's
 * --max-idle.  DIR is made (mode 0755, its parent must exist) when
 * missing.  0, or -1 with the reason.
 */
int	report_refresh(const struct config *c, const char *dir,
	    const char *metrics_path, int64_t max_idle_s, struct buf *err)
	    __attribute__((warn_unused_result));

#endif
