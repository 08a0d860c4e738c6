/*
 * digest: one run's failures as one message (operator/digest.h).
 */
#include <stdlib.h>
#include <string.h>

#include "lib/operator/digest.h"
#include "lib/drain/ping.h"
#include "lib/operator/present.h"
#include "lib/common/util.h"

void
digest_init(struct digest *d)
{
	memset(d, 0, sizeof *d);
}

/* The output's last DIGEST_TAIL_MAX bytes: where a stack trace ends. */
static void
tail_of(const struct handler_result *r, const char **p, size_t *len)
{
	*len = r->output_len > DIGEST_TAIL_MAX ? DIGEST_TAIL_MAX : r->output_len;
	*p = r->output + (r->output_len - *len);
}

/* The group an event's failure belongs to, made when there is room;
 * NULL when the groups are full and none matches. */
static struct digest_group *
group_for(struct digest *d, enum digest_kind kind,
    const struct handler_result *r)
{
	struct digest_group *g;
	const char *tail;
	size_t len;
	int i;

	tail_of(r, &tail, &len);
	for (i = 0; i < d->ngroups; i++) {
		g = &d->g[i];
		if (g->kind == kind && strcmp(g->error, r->error) == 0 &&
		    g->tail_len == len && memcmp(g->tail, tail, len) == 0)
			return g;
	}
	if (d->ngroups == DIGEST_GROUPS_MAX)
		return NULL;
	g = &d->g[d->ngroups++];
	g->kind = kind;
	snprintf(g->error, sizeof g->error, "%s", r->error);
	memcpy(g->tail, tail, len);
	g->tail_len = len;
	return g;
}

void
digest_add(struct digest *d, const struct drain_event *ev)
{
	struct digest_group *g;
	enum digest_kind kind = DIGEST_DEAD;

	switch (ev->outcome) {
	case DRAIN_DONE:
		d->done++;
		return;
	case DRAIN_STALE:
	case DRAIN_STALE_FETCHED:
		d->stale++;
		return;
	case DRAIN_RETRY:
		if (ev->failures != 1) {	/* reported when it first failed */
			d->retried++;
			return;
		}
		d->first++;
		kind = DIGEST_FIRST;
		break;
	case DRAIN_DEAD:
		d->dead++;
		break;
	}
	if ((g = group_for(d, kind, ev->r)) == NULL) {
		d->other++;
		return;
	}
	if (g->n == 0)
		g->failures = ev->failures;
	if (g->n < DIGEST_IDS_SHOWN)
		util_escape(ev->e->webhook_id, strlen(ev->e->webhook_id),
		    g->ids[g->n], DIGEST_ID_SIZE);
	g->n++;
}

int
digest_has_news(const struct digest *d)
{
	return d->first > 0 || d->dead > 0;
}

void
digest_quote(const char *s, char *out, size_t outsz)
{
	size_t i, o = 0;

	if (s[0] != '\0' && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:@%+,") == strlen(s)) {
		snprintf(out, outsz, "%s", s);
		return;
	}
	/* 'it'\''s': a quote closes, an escaped quote, a quote reopens. */
	for (i = 0; s[i] != '\0' && o + 6 < outsz; i++) {
		if (o == 0)
			out[o++] = '\'';
		if (s[i] == '\'') {
			memcpy(out + o, "'\\''", 4);
			o += 4;
		} else {
			out[o++] = s[i];
		}
	}
	if (o == 0)
		out[o++] = '\'';
	out[o++] = '\'';
	out[o] = '\0';
}

/* "a, b, c and 197 more" */
static void
print_ids(FILE *f, const struct digest_group *g)
{
	int64_t i, shown = g->n < DIGEST_IDS_SHOWN ? g->n : DIGEST_IDS_SHOWN;

	for (i = 0; i < shown; i++)
		fprintf(f, "%s%s", i == 0 ? "" : i + 1 == shown && g->n == shown ?
		    " and " : ", ", g->ids[i]);
	if (g->n > shown)
		fprintf(f, " and %lld more", (long long)(g->n - shown));
}

static void
print_group(FILE *f, const struct digest_group *g, int64_t max_attempts)
{
	fprintf(f, "webhook-drain: ");
	print_ids(f, g);
	if (g->kind == DIGEST_FIRST)
		fprintf(f, " failed (%s); %s retried with backoff, up to %lld "
		    "attempts.", g->error, g->n == 1 ? "it will be" : "they will be",
		    (long long)max_attempts);
	else
		fprintf(f, " %s dead after %lld failures (last: %s).",
		    g->n == 1 ? "is" : "are", (long long)g->failures, g->error);
	if (g->tail_len == 0) {
		fprintf(f, " No output.\n");
		return;
	}
	fprintf(f, " Output tail:\n");
	present_output(f, g->tail, g->tail_len);
}

/* The commands that fix and go on, for the first group's first event. */
static void
print_next(FILE *f, const struct digest *d, const char *config_path)
{
	char q[1024];		/* one quoted argument (digest_quote cuts) */
	char c[sizeof q + 8] = "";	/* " -c " and a quoted path */

	if (config_path != NULL) {
		digest_quote(config_path, q, sizeof q);
		snprintf(c, sizeof c, " -c %s", q);
	}
	fprintf(f, "webhook-drain: next steps:\n");
	if (d->ngroups > 0) {
		digest_quote(d->g[0].ids[0], q, sizeof q);
		fprintf(f, "  webhook-drain%s show %s      # the event, its "
		    "error and output\n", c, q);
		fprintf(f, "  webhook-drain%s try %s       # run the handler on it "
		    "now (after a fix), changing nothing\n", c, q);
	}
	if (d->first > 0)
		fprintf(f, "  webhook-drain%s requeue --state retrying --yes  # "
		    "once fixed: retry now, not at the next backoff\n", c);
	if (d->dead > 0)
		fprintf(f, "  webhook-drain%s requeue --state dead --yes      # "
		    "once fixed: hand the dead ones out again\n", c);
	fprintf(f, "  webhook-drain%s status\n", c);
}

void
digest_print(FILE *f, const struct digest *d, const char *config_path,
    int64_t max_attempts)
{
	int i;

	if (!digest_has_news(d))
		return;
	fprintf(f, "webhook-drain: run: %lld done, %lld stale, %lld failed for "
	    "the first time, %lld failed again, %lld now dead\n",
	    (long long)d->done, (long long)d->stale, (long long)d->first,
	    (long long)d->retried, (long long)d->dead);
	for (i = 0; i < d->ngroups; i++)
		print_group(f, &d->g[i], max_attempts);
	if (d->other > 0)
		fprintf(f, "webhook-drain: %lld more event%s failed with other "
		    "errors (list --state retrying, list --state dead)\n",
		    (long long)d->other, d->other == 1 ? "" : "s");
	print_next(f, d, config_path);
}

/* --ping: the monitor hears of every run. */
static void
ping_outcome(FILE *f, const struct config *c, const char *url, int failed,
    const char *text)
{
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	if (ping_send(c, url, failed, text, strlen(text), &err) == -1)
		fprintf(f, "webhook-drain: ping %s: %s (the run's outcome is not "
		    "affected)\n", url, err.data);
	buf_free(&err);
}

void
digest_report(FILE *f, const struct digest *d, const struct config *c,
    const char *ping_url, const struct drain_result *res)
{
	char *text = NULL, line[200];
	size_t len = 0;
	FILE *m = open_memstream(&text, &len);
	int failed = res == NULL || res->broken || res->n.failed;

	if (m != NULL) {
		digest_print(m, d, c->path, c->max_attempts);
		fclose(m);
		fputs(text, f);
	}
	if (ping_url != NULL) {
		if (res == NULL)
			snprintf(line, sizeof line, "error: the run did not start\n");
		else
			snprintf(line, sizeof line, "%s: %lld done, %lld stale, "
			    "%lld failed\n", res->broken ? "error" : failed ?
			    "failures" : "ok", (long long)res->n.done,
			    (long long)res->n.stale, (long long)res->n.failed);
		ping_outcome(f, c, ping_url, failed, text && len ? text : line);
	}
	free(text);
}
