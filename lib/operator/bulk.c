/*
 * bulk: requeue and forget (operator/bulk.h).
 */
#include "lib/operator/bulk.h"
#include "lib/drain/drain.h"

enum bulk_status
bulk_apply(const struct config *c, const struct inbox_filter *f, int requeue,
    int act, int64_t *n, int64_t *stale, struct buf *err)
{
	enum bulk_status st = BULK_FAILED;
	struct inbox *ib;

	*n = *stale = 0;
	if ((ib = drain_inbox_open(c, err)) == NULL)
		return BULK_FAILED;
	if (inbox_count(ib, f, n, err) != INBOX_OK ||
	    (requeue && drain_count_stale(ib, f, stale, err) != 0))
		goto out;
	if (*n == 0) {
		st = BULK_NONE;
		goto out;
	}
	if (act && (requeue ? inbox_requeue(ib, f, util_now_ns(), n, err) :
	    inbox_forget(ib, f, n, err)) != INBOX_OK)
		goto out;
	st = BULK_DONE;
out:
	inbox_close(ib);
	return st;
}

void
bulk_print(FILE *f, int requeue, int acted, int64_t n, int64_t stale)
{
	const char *s = n == 1 ? "" : "s";

	if (!acted) {
		fprintf(f, "would %s %lld event%s", requeue ? "requeue" : "forget",
		    (long long)n, s);
		if (stale)
			fprintf(f, " (%lld older than what was already done for "
			    "their object: they would be handed out anyway)",
			    (long long)stale);
		fprintf(f, "; run again with --yes\n");
		return;
	}
	fprintf(f, "%s %lld event%s", requeue ? "requeued" : "forgot",
	    (long long)n, s);
	if (requeue && stale)
		fprintf(f, "; %lld %s older than what was already done for %s "
		    "object and will be handed out anyway (WEBHOOK_STALE=1)",
		    (long long)stale, stale == 1 ? "is" : "are",
		    stale == 1 ? "its" : "their");
	if (!requeue)
		fprintf(f, "; a replay is now accepted as new, and handed out if "
		    "it is still the newest for its object");
	fputc('\n', f);
}
