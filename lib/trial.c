/*
 * trial: the handler run outside a run (trial.h).
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "drain.h"
#include "present.h"
#include "trial.h"

#define NS	1000000000LL

struct found {
	struct inbox_event	e;
	int			n;
};

/* inbox_list's callback: keep a copy of the one event (with its body). */
static int
keep_one(const struct inbox_event *e, void *arg)
{
	struct found *f = arg;
	struct inbox_event *k = &f->e;

	f->n++;
	memcpy(k->state, e->state, sizeof k->state);
	k->webhook_id = strdup(e->webhook_id);
	k->type = e->type ? strdup(e->type) : NULL;
	k->created_at_raw = e->created_at_raw ? strdup(e->created_at_raw) : NULL;
	k->object_type = e->object_type ? strdup(e->object_type) : NULL;
	k->object_id = e->object_id ? strdup(e->object_id) : NULL;
	memcpy(k->created_at, e->created_at, sizeof k->created_at);
	memcpy(k->updated_at, e->updated_at, sizeof k->updated_at);
	k->truncated = e->truncated;
	k->attempts = e->attempts;
	k->requeued = e->requeued;
	k->blocked = e->blocked;
	k->has_body = e->has_body;
	if (e->has_body && buf_append(&k->body, e->body.data ? e->body.data :
	    "", e->body.len) == -1)
		return -1;
	return k->webhook_id == NULL ? -1 : 0;
}

/* The event, its staleness (judged now, as a claim would). */
static enum trial_status
load(const struct config *c, const char *id, struct found *f, int *stale,
    struct buf *err)
{
	struct inbox_filter flt;
	struct inbox *ib;
	enum trial_status st = TRIAL_FAILED;

	memset(&flt, 0, sizeof flt);
	flt.webhook_id = id;
	if ((ib = drain_inbox_open(c, err)) == NULL)
		return TRIAL_FAILED;
	if (inbox_list(ib, &flt, 1, keep_one, f, err) != INBOX_OK)
		goto out;
	if (f->n == 0) {
		st = TRIAL_NO_EVENT;
		goto out;
	}
	if (f->e.webhook_id == NULL) {
		buf_printf(err, "out of memory");
		goto out;
	}
	if (inbox_is_stale(ib, &f->e, stale, err) != INBOX_OK)
		goto out;
	st = f->e.has_body ? TRIAL_RAN : TRIAL_NO_BODY;
out:
	inbox_close(ib);
	return st;
}

enum trial_status
trial_event(const struct config *c, const char *id, struct handler_result *r,
    struct trial_info *info, struct buf *err)
{
	struct handler_env env[DRAIN_HANDLER_ENV_MAX];
	struct found f;
	char attempt[32], dir[PATH_MAX];
	enum trial_status st;
	size_t nenv;
	int stale = 0;

	memset(info, 0, sizeof *info);
	memset(&f, 0, sizeof f);
	inbox_event_init(&f.e);
	if ((st = load(c, id, &f, &stale, err)) != TRIAL_RAN)
		goto out;
	memcpy(info->state, f.e.state, sizeof info->state);
	info->stale = stale;
	info->blocked = f.e.blocked;
	info->truncated = f.e.truncated;
	info->attempt = (long long)f.e.attempts + 1;
	snprintf(attempt, sizeof attempt, "%lld", info->attempt);
	/* As a run: WEBHOOK_STALE only for a requeued event handed out
	 * although stale; a truncated one without its refetch. */
	nenv = drain_handler_env(&f.e, stale && f.e.requeued, REFETCH_NONE,
	    attempt, env);
	if (drain_enter_config_dir(c->path, dir, sizeof dir) == -1) {
		buf_printf(err, "cannot enter %s", dir);
		st = TRIAL_FAILED;
		goto out;
	}
	if (handler_run(c->handler, f.e.body.data ? f.e.body.data : "",
	    f.e.body.len, env, nenv, c->handler_timeout_s * NS, r, err) == -1)
		st = TRIAL_FAILED;
out:
	inbox_event_free(&f.e);
	return st;
}

int
trial_synthetic(const struct config *c, struct handler_result *r,
    struct buf *err)
{
	static const char body[] = "{\"type\":\"webhook_inbox.test\","
	    "\"createdAt\":\"2026-01-01T00:00:00Z\",\"data\":{\"object\":"
	    "\"test\",\"id\":\"test_1\"}}";
	const struct handler_env env[] = {
		{ "WEBHOOK_ID", "test_webhook_inbox_check" },
		{ "WEBHOOK_TYPE", "webhook_inbox.test" },
		{ "WEBHOOK_CREATED_AT", "2026-01-01T00:00:00Z" },
		{ "WEBHOOK_OBJECT", "test" },
		{ "WEBHOOK_OBJECT_ID", "test_1" },
		{ "WEBHOOK_ATTEMPT", "1" },
		{ "WEBHOOK_TEST", "1" },
		{ "WEBHOOK_API_TOKEN", NULL },
	};
	char dir[PATH_MAX];

	if (drain_enter_config_dir(c->path, dir, sizeof dir) == -1) {
		buf_printf(err, "cannot enter %s", dir);
		return -1;
	}
	return handler_run(c->handler, body, sizeof body - 1, env,
	    sizeof env / sizeof env[0], c->handler_timeout_s * NS, r, err);
}

void
trial_print_result(FILE *out, const struct handler_result *r)
{
	if (r->output_len > 0)
		present_output(out, r->output, r->output_len);
	else
		fprintf(out, "  (no output)\n");
	if (handler_ok(r))
		fprintf(out, "exit 0 after %.3f s: a run would mark it done\n",
		    (double)r->elapsed_ns / 1e9);
	else
		fprintf(out, "%s after %.3f s: a run would count a failure\n",
		    r->error, (double)r->elapsed_ns / 1e9);
}

void
trial_print(FILE *out, FILE *errf, const char *id, enum trial_status st,
    const struct handler_result *r, const struct trial_info *info,
    const struct buf *err)
{
	switch (st) {
	case TRIAL_RAN:
		fprintf(out, "%s event, WEBHOOK_ATTEMPT=%lld%s%s%s; handler "
		    "output:\n", info->state, info->attempt, info->stale ?
		    " (a run would not hand it out: older than what was done "
		    "for its object)" : "", info->blocked ? " (a run holds it "
		    "behind an earlier event of its object)" : "",
		    info->truncated ? " (truncated: a run would refetch it "
		    "first; try gives the stored body)" : "");
		trial_print_result(out, r);
		fprintf(out, "the inbox is unchanged\n");
		break;
	case TRIAL_NO_EVENT:
	case TRIAL_NO_BODY:
		fprintf(errf, "webhook-drain: %s ", st == TRIAL_NO_EVENT ?
		    "no event" : "retention dropped the body of");
		present_text(errf, id);
		fputc('\n', errf);
		break;
	case TRIAL_FAILED:
		fprintf(errf, "webhook-drain: %s\n", err->data ? err->data : "?");
		break;
	}
}
