/*
 * history: the bucket math of the inbox's history (docs/report.md): fixed
 * time buckets, fixed histogram buckets, quantiles read back from them, and the
 * run's batch of increments that the drainer writes in one transaction at
 * the end of a run (inbox_history_add).  No I/O here: each engine's
 * history.c stores it, lib/report/report.c reads it.  It sits with the
 * store, whose tables it shapes, so that the store depends on nothing of
 * the report.
 *
 * Why fixed buckets: counters and histograms summed per 5-minute bucket
 * cost a few rows per run whatever the traffic, survive retention (which
 * deletes event rows), merge by addition (a day is the sum of its 288
 * buckets), and map one to one onto Prometheus histograms.
 */
#ifndef WEBHOOK_HISTORY_H
#define WEBHOOK_HISTORY_H

#include <stddef.h>
#include <stdint.h>

/* The fine buckets: 5 minutes, kept 35 days (a 30-day chart reads them
 * alone); older ones are folded into days (HISTORY_DAY_S) and kept. */
#define HISTORY_FINE_S		300
#define HISTORY_DAY_S		86400
#define HISTORY_FINE_KEEP_S	(35LL * 86400)
/* Drain runs kept for the strip of runs: 35 days. */
#define HISTORY_RUNS_KEEP_S	(35LL * 86400)

/* Histogram upper bounds, ms (the last bucket is +Inf): from 10 ms (a
 * fast handler) to a day (an event waiting out a long outage). */
#define HISTORY_NBOUNDS		15
#define HISTORY_NBUCKETS	(HISTORY_NBOUNDS + 1)
extern const int64_t history_bound_ms[HISTORY_NBOUNDS];
/* Special idx values of a histogram's rows: its sum and its max, ms. */
#define HISTORY_IDX_SUM		(-1)
#define HISTORY_IDX_MAX		(-2)

/* Start of the bucket of width width_s that holds t_s (Unix s), floor
 * also for times before the epoch. */
int64_t	history_bucket_s(int64_t t_s, int64_t width_s);

/* Histogram bucket of a value in ms (negative counts as 0). */
int	history_index(int64_t value_ms);

/* One histogram read back: counts per bucket (not cumulative), sum, max. */
struct history_hist {
	int64_t	count[HISTORY_NBUCKETS];
	int64_t	sum_ms;
	int64_t	max_ms;
};
void	history_hist_add(struct history_hist *h, int64_t value_ms);
int64_t	history_hist_total(const struct history_hist *h);
/*
 * The q-quantile (0 < q ≤ 1), ms: the upper bound of the bucket where the
 * cumulative count reaches q × total — an upper estimate, never above the
 * max seen (so p100 is the max).  -1 when the histogram is empty.
 */
int64_t	history_hist_quantile_ms(const struct history_hist *h, double q);

/* One increment: bucket (fine), metric name, label, idx (0 for a counter),
 * amount (for idx HISTORY_IDX_MAX, a value to keep the max of). */
struct history_delta {
	int64_t	bucket_s;
	char	name[16];
	char	label[64];
	int	idx;
	int64_t	n;
};

/* A run's increments, merged by key; grows as needed. */
struct history_batch {
	struct history_delta	*d;
	size_t			 n, cap;
	int			 oom;	/* an increment was lost: memory */
};
void	history_batch_init(struct history_batch *b);
void	history_batch_free(struct history_batch *b);	/* then reusable */
/* Add n to a counter at t_s (Unix s).  label NULL: ''; labels are cut at
 * 63 bytes. */
void	history_count(struct history_batch *b, int64_t t_s, const char *name,
	    const char *label, int64_t n);
/* Add one value (ms) to a histogram at t_s: its bucket, sum and max. */
void	history_observe(struct history_batch *b, int64_t t_s, const char *name,
	    const char *label, int64_t value_ms);

/*
 * An error class for failures-by-class: the reason up to its first ':'
 * ("exit 3", "killed by signal 9", "timed out after 60 s", "could not
 * start: sh: …" → "could not start"), at most outsz - 1 bytes, "unknown"
 * when empty.  Handler reasons are few and fixed in form (drain/handler.c), so
 * the classes stay few.
 */
void	history_error_class(const char *error, char *out, size_t outsz);

#endif
