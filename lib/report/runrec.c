/*
 * runrec: a run's events as history (report/runrec.h).
 */
#include <stdio.h>
#include <string.h>

#include "lib/report/runrec.h"

#define NS	1000000000LL
#define MS	1000000LL

void
runrec_start(struct runrec *r, int64_t now_ns)
{
	memset(r, 0, sizeof *r);
	history_batch_init(&r->b);
	r->run.started_ns = now_ns;
}

/* The handler's part of a hand-out: its time, and the wait before it. */
static void
handed_out(struct runrec *r, const struct drain_event *ev, int64_t now_ns)
{
	const struct inbox_event *e = ev->e;
	int64_t t_s = now_ns / NS, elapsed = ev->r != NULL ? ev->r->elapsed_ns : 0;
	int64_t received_ns;

	r->run.claimed++;
	if (ev->r != NULL && elapsed > 0)
		history_observe(&r->b, t_s, "handler", e->type, elapsed / MS);
	/* The first hand-out only: a retry's wait is the backoff's. */
	if (e->attempts == 1 && instant_to_ns(e->received_at, &received_ns) == 0)
		history_observe(&r->b, t_s, "wait", NULL,
		    (now_ns - elapsed - received_ns) / MS);
}

void
runrec_event(struct runrec *r, const struct drain_event *ev, int64_t now_ns)
{
	const struct inbox_event *e = ev->e;
	int64_t t_s = now_ns / NS;
	char cls[64];

	/* Every answer of the API with the object, whatever came of it. */
	if (ev->refetched) {
		r->run.refetched++;
		history_count(&r->b, t_s, "refetched", NULL, 1);
	}
	switch (ev->outcome) {
	case DRAIN_DONE:
		handed_out(r, ev, now_ns);
		history_count(&r->b, t_s, "handled", NULL, 1);
		history_count(&r->b, t_s, "type_handled", e->type, 1);
		break;
	case DRAIN_RETRY:
	case DRAIN_DEAD:
		handed_out(r, ev, now_ns);
		history_error_class(ev->r != NULL ? ev->r->error : NULL, cls,
		    sizeof cls);
		history_count(&r->b, t_s, "failed", cls, 1);
		history_count(&r->b, t_s, "type_failed", e->type, 1);
		history_count(&r->b, t_s, ev->outcome == DRAIN_DEAD ? "dead" :
		    "retried", NULL, 1);
		if (ev->outcome == DRAIN_RETRY)
			r->run.retried++;
		break;
	case DRAIN_STALE_FETCHED:
		r->run.claimed++;
		history_count(&r->b, t_s, "stale", NULL, 1);
		break;
	case DRAIN_STALE:
		history_count(&r->b, t_s, "stale", NULL, 1);
		break;
	}
}

void
runrec_finish(struct runrec *r, const struct drain_result *res, int64_t now_ns)
{
	r->run.finished_ns = now_ns;
	r->run.done = res->n.done;
	r->run.failed = res->n.failed;
	r->run.dead = res->n.dead;
	r->run.stale = res->n.stale;
	r->run.budget_hit = res->max_time_reached;
	snprintf(r->run.result, sizeof r->run.result, "%s", res->broken ?
	    "error" : res->n.failed ? "failures" : "ok");
	/* Counted in history too: `runs` keeps 35 days, and a counter in
	 * metrics.prom must never go down. */
	history_count(&r->b, now_ns / NS, "run", r->run.result, 1);
	if (res->max_time_reached)
		history_count(&r->b, now_ns / NS, "run_budget_hit", NULL, 1);
}

int
runrec_save(struct runrec *r, const struct config *c, struct buf *err)
{
	struct inbox *ib;
	int rc = 0;

	if ((ib = drain_inbox_open(c, err)) == NULL)
		return -1;
	if (inbox_history_add(ib, r->b.d, r->b.n, &r->run, r->run.finished_ns,
	    err) != INBOX_OK)
		rc = -1;
	inbox_close(ib);
	return rc;
}

void
runrec_free(struct runrec *r)
{
	history_batch_free(&r->b);
}
