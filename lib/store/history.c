/*
 * history: fixed time and histogram buckets (store/history.h).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/store/history.h"

const int64_t history_bound_ms[HISTORY_NBOUNDS] = {
	10, 50, 100, 500, 1000, 2000, 5000, 10000, 30000, 60000,
	300000, 900000, 3600000, 21600000, 86400000
};

int64_t
history_bucket_s(int64_t t_s, int64_t width_s)
{
	int64_t r = t_s % width_s;

	return r < 0 ? t_s - r - width_s : t_s - r;
}

int
history_index(int64_t value_ms)
{
	int i;

	for (i = 0; i < HISTORY_NBOUNDS; i++)
		if (value_ms <= history_bound_ms[i])
			return i;
	return HISTORY_NBOUNDS;
}

void
history_hist_add(struct history_hist *h, int64_t value_ms)
{
	if (value_ms < 0)
		value_ms = 0;
	h->count[history_index(value_ms)]++;
	h->sum_ms += value_ms;
	if (value_ms > h->max_ms)
		h->max_ms = value_ms;
}

int64_t
history_hist_total(const struct history_hist *h)
{
	int64_t t = 0;
	int i;

	for (i = 0; i < HISTORY_NBUCKETS; i++)
		t += h->count[i];
	return t;
}

int64_t
history_hist_quantile_ms(const struct history_hist *h, double q)
{
	int64_t total = history_hist_total(h), cum = 0, bound;
	double want = q * (double)total;
	int i;

	if (total == 0)
		return -1;
	for (i = 0; i < HISTORY_NBUCKETS; i++) {
		cum += h->count[i];
		if ((double)cum >= want && h->count[i] > 0)
			break;
	}
	if (i >= HISTORY_NBOUNDS)
		return h->max_ms;
	bound = history_bound_ms[i];
	/* The bucket's bound may exceed anything seen: the max is tighter. */
	return bound < h->max_ms ? bound : h->max_ms;
}

void
history_batch_init(struct history_batch *b)
{
	memset(b, 0, sizeof *b);
}

void
history_batch_free(struct history_batch *b)
{
	free(b->d);
	history_batch_init(b);
}

/* The delta with this key, added (zero) when missing; NULL out of memory. */
static struct history_delta *
find(struct history_batch *b, int64_t bucket_s, const char *name,
    const char *label, int idx)
{
	struct history_delta *d;
	size_t i;

	for (i = 0; i < b->n; i++) {
		d = &b->d[i];
		if (d->bucket_s == bucket_s && d->idx == idx &&
		    strcmp(d->name, name) == 0 && strcmp(d->label, label) == 0)
			return d;
	}
	if (b->n == b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 64;
		struct history_delta *nd = realloc(b->d, cap * sizeof *nd);
		if (nd == NULL) {
			b->oom = 1;
			return NULL;
		}
		b->d = nd;
		b->cap = cap;
	}
	d = &b->d[b->n++];
	memset(d, 0, sizeof *d);
	d->bucket_s = bucket_s;
	d->idx = idx;
	/* Names are ours and short; labels are cut to fit. */
	strncpy(d->name, name, sizeof d->name - 1);
	strncpy(d->label, label, sizeof d->label - 1);
	return d;
}

void
history_count(struct history_batch *b, int64_t t_s, const char *name,
    const char *label, int64_t n)
{
	struct history_delta *d = find(b, history_bucket_s(t_s, HISTORY_FINE_S),
	    name, label ? label : "", 0);

	if (d != NULL)
		d->n += n;
}

void
history_observe(struct history_batch *b, int64_t t_s, const char *name,
    const char *label, int64_t value_ms)
{
	int64_t bucket = history_bucket_s(t_s, HISTORY_FINE_S);
	struct history_delta *d;

	if (label == NULL)
		label = "";
	if (value_ms < 0)
		value_ms = 0;
	if ((d = find(b, bucket, name, label, history_index(value_ms))) != NULL)
		d->n++;
	if ((d = find(b, bucket, name, label, HISTORY_IDX_SUM)) != NULL)
		d->n += value_ms;
	if ((d = find(b, bucket, name, label, HISTORY_IDX_MAX)) != NULL &&
	    value_ms > d->n)
		d->n = value_ms;
}

void
history_error_class(const char *error, char *out, size_t outsz)
{
	size_t n = 0;

	if (outsz == 0)
		return;
	if (error != NULL)
		while (error[n] != '\0' && error[n] != ':' && error[n] != '\n' &&
		    n < outsz - 1)
			n++;
	while (n > 0 && error[n - 1] == ' ')
		n--;
	if (n == 0) {
		strncpy(out, "unknown", outsz - 1);
		out[outsz - 1] = '\0';
		return;
	}
	memcpy(out, error, n);
	out[n] = '\0';
}
