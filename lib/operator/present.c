/*
 * present: the drainer's ways of showing events and times (operator/present.h).
 * Moved out of webhook-drain.c so that list, show and status share them
 * and tests can read what they print.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/common/instant.h"
#include "lib/drain/paging.h"
#include "lib/operator/present.h"
#include "lib/common/util.h"
#include "lib/common/utf8.h"

#define NS	1000000000LL

const char *
present_short_time(const char *instant, char out[PRESENT_TIME_SIZE])
{
	if (instant == NULL || strlen(instant) != INSTANT_LEN) {
		snprintf(out, PRESENT_TIME_SIZE, "-");
		return out;
	}
	snprintf(out, PRESENT_TIME_SIZE, "%.19sZ", instant);
	return out;
}

const char *
present_relative(const char *instant, int64_t now_ns,
    char out[PRESENT_TIME_SIZE])
{
	int64_t ns, d;
	const char *unit = "s", *dir;

	if (instant == NULL || instant_to_ns(instant, &ns) == -1) {
		snprintf(out, PRESENT_TIME_SIZE, "never");
		return out;
	}
	d = (now_ns - ns) / NS;
	dir = d >= 0 ? "ago" : "from now";
	if (d < 0)
		d = -d;
	if (d >= 2 * 86400) {
		d /= 86400;
		unit = "d";
	} else if (d >= 2 * 3600) {
		d /= 3600;
		unit = "h";
	} else if (d >= 120) {
		d /= 60;
		unit = "m";
	}
	snprintf(out, PRESENT_TIME_SIZE, "%lld%s %s", (long long)d, unit, dir);
	return out;
}

void
present_escaped(FILE *f, const char *s, size_t len)
{
	char *out;

	if (len > PRESENT_ESCAPED_MAX)
		len = PRESENT_ESCAPED_MAX;
	/* util_escape writes at most 4 bytes per input byte ("\xHH"). */
	if ((out = malloc(len * 4 + 8)) == NULL)
		return;
	util_escape(s, len, out, len * 4 + 8);
	fputs(out, f);
	free(out);
}

void
present_text(FILE *f, const char *s)
{
	if (s == NULL)
		fputs("-", f);
	else
		present_escaped(f, s, strlen(s));
}

/*
 * One line of a handler's output for a person (operator/present.h): valid UTF-8
 * as it is (a message in German stays readable), a backslash as itself
 * (PHP namespaces, Windows paths), control bytes and bytes that are not
 * UTF-8 as \xHH, so the bytes cannot move the cursor or forge a line.
 */
static void
reading_text(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	if (len > PRESENT_ESCAPED_MAX)
		len = PRESENT_ESCAPED_MAX;
	while (i < len) {
		if (p[i] >= 0x20 && p[i] < 0x7f) {
			fputc(p[i++], f);
		} else if (p[i] >= 0x80 && (n = utf8_len(p + i, len - i)) > 0 &&
		    !(n == 2 && p[i] == 0xc2 && p[i + 1] < 0xa0)) {
			/* (U+0080..U+009F are C1 controls: escaped below) */
			fwrite(p + i, 1, n, f);
			i += n;
		} else {
			fprintf(f, "\\x%02x", p[i++]);
		}
	}
}

/* The line s[0..len) without the \r of a CRLF ending. */
static size_t
line_len(const char *s, size_t len)
{
	return len > 0 && s[len - 1] == '\r' ? len - 1 : len;
}

void
present_output(FILE *f, const char *s, size_t len)
{
	size_t i, start = 0;

	for (i = 0; i <= len; i++) {
		if (i == len || s[i] == '\n') {
			if (i > start || i < len) {
				fputs("  | ", f);
				reading_text(f, s + start, line_len(s + start,
				    i - start));
				fputc('\n', f);
			}
			start = i + 1;
		}
	}
}

void
present_output_inline(FILE *f, const char *s, size_t len)
{
	size_t i, start = 0;
	int first = 1;

	for (i = 0; i <= len; i++) {
		if (i == len || s[i] == '\n') {
			if (i > start) {
				if (!first)
					fputs(" | ", f);
				reading_text(f, s + start, line_len(s + start,
				    i - start));
				first = 0;
			}
			start = i + 1;
		}
	}
}

/*
 * Untrusted bytes as a JSON string's text: valid UTF-8 kept as it is
 * (cJSON escapes quotes and control characters), so an id such as "ü"
 * comes back from `list --json` as the id `show` and `requeue` take, and
 * a newline in the handler's output is "\n", not "\\x0a".  A byte that
 * is not UTF-8 (or a NUL) becomes "\xHH" text, as JSON needs valid
 * UTF-8.  Returns a malloc'd string (free it), or NULL when out of memory.
 */
static char *
json_text(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	char *t = malloc(len * 4 + 1), *o = t;
	size_t i = 0, n;

	if (t == NULL)
		return NULL;
	while (i < len) {
		if ((n = utf8_len(p + i, len - i)) > 0) {
			memcpy(o, p + i, n);
			o += n;
			i += n;
		} else {
			snprintf(o, 5, "\\x%02x", p[i++]);
			o += 4;
		}
	}
	*o = '\0';
	return t;
}

/* Untrusted text (ids, types): NULL or "" becomes null.  Ids and types
 * are capped by the receiver far below anything that matters here. */
static void
add_text(cJSON *o, const char *k, const char *v)
{
	char *t;

	if (v == NULL || *v == '\0') {
		cJSON_AddNullToObject(o, k);
		return;
	}
	if ((t = json_text(v, strlen(v))) != NULL)
		cJSON_AddStringToObject(o, k, t);
	free(t);
}

/* Bytes of any kind as a JSON string: text as above, or base64 (exact). */
static void
add_bytes(cJSON *o, const char *k, const char *p, size_t len, int base64)
{
	size_t n = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
	char *t = base64 ? malloc(n) : json_text(p, len);

	if (t == NULL)
		return;
	if (base64)
		sodium_bin2base64(t, n, (const unsigned char *)(p ? p : ""), len,
		    sodium_base64_VARIANT_ORIGINAL);
	cJSON_AddStringToObject(o, k, t);
	free(t);
}

cJSON *
present_event_json(const struct inbox_event *e, int with_body)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	add_text(o, "webhook_id", e->webhook_id);
	add_text(o, "source", e->source[0] ? e->source : INBOX_DEFAULT_SOURCE);
	add_text(o, "state", e->state);
	cJSON_AddBoolToObject(o, "blocked", e->blocked);
	add_text(o, "type", e->type);
	add_text(o, "created_at", e->created_at_raw);
	add_text(o, "created_at_normalised", e->created_at);
	add_text(o, "object_type", e->object_type);
	add_text(o, "object_id", e->object_id);
	add_text(o, "updated_at", e->updated_at);
	cJSON_AddBoolToObject(o, "truncated", e->truncated);
	add_text(o, "received_at", e->received_at);
	cJSON_AddNumberToObject(o, "webhook_timestamp", (double)e->webhook_timestamp);
	add_text(o, "secret_fingerprint", e->secret_fp);
	cJSON_AddNumberToObject(o, "attempts", (double)e->attempts);
	cJSON_AddNumberToObject(o, "failures", (double)e->failures);
	add_text(o, "next_attempt_at", strcmp(e->state, "pending") == 0 ?
	    e->next_at : NULL);
	add_text(o, "finished_at", e->finished_at);
	cJSON_AddBoolToObject(o, "requeued", e->requeued);
	add_text(o, "last_error", e->last_error);
	if (e->last_output.len > 0)
		add_bytes(o, "last_output", e->last_output.data,
		    e->last_output.len, 0);
	cJSON_AddBoolToObject(o, "body_kept", e->has_body);
	/* JSON strings must be text: base64 keeps any bytes exact. */
	if (with_body && e->has_body)
		add_bytes(o, "body_base64", e->body.data, e->body.len, 1);
	return o;
}

void
present_json_to(FILE *f, cJSON *o)
{
	char *t = o != NULL ? cJSON_PrintUnformatted(o) : NULL;

	if (t != NULL) {
		fputs(t, f);
		fputc('\n', f);
		free(t);
	}
	cJSON_Delete(o);
}

void
present_json(cJSON *o)
{
	present_json_to(stdout, o);
}

int
present_parse_when(const char *s, int64_t now_ns, int64_t *out)
{
	char norm[INSTANT_SIZE];
	int64_t secs;

	if (instant_parse(s, strlen(s), norm) == 0)
		return instant_to_ns(norm, out);
	if (util_parse_duration(s, 3650LL * 86400, &secs) == 0) {
		*out = now_ns - secs * NS;
		return 0;
	}
	return -1;
}

void
present_list_header(FILE *f)
{
	fprintf(f, "received              state    att  id type object "
	    "event-clock  [retry | blocked]\n");
}

void
present_event_line(FILE *f, const struct inbox_event *e, int64_t now_ns)
{
	char a[PRESENT_TIME_SIZE], b[PRESENT_TIME_SIZE];

	fprintf(f, "%s  %-7s  %3lld  ", present_short_time(e->received_at, a),
	    e->state, (long long)e->attempts);
	present_text(f, e->webhook_id);
	fputc(' ', f);
	present_text(f, e->type);
	fputc(' ', f);
	if (e->object_type != NULL) {
		present_text(f, e->object_type);
		fputc(':', f);
		present_text(f, e->object_id);
	} else {
		fputc('-', f);
	}
	fprintf(f, " %s", e->created_at[0] ?
	    present_short_time(e->created_at, b) : "-");
	if (strcmp(e->state, "pending") == 0) {
		if (e->blocked)
			fprintf(f, "  blocked");
		else if (e->failures > 0)
			fprintf(f, "  retry %s", present_relative(e->next_at, now_ns, b));
	}
	fputc('\n', f);
}

/* Field after field, in the order `show` has always printed them. */
void
present_event_card(FILE *f, const struct inbox_event *e, int64_t now_ns)
{
	char a[PRESENT_TIME_SIZE], b[PRESENT_TIME_SIZE];

	fprintf(f, "webhook-id:    ");
	present_text(f, e->webhook_id);
	fprintf(f, "\nstate:         %s", e->state);
	if (strcmp(e->state, "pending") == 0 && e->blocked)
		fprintf(f, " (blocked behind an earlier pending event of its object)");
	else if (strcmp(e->state, "pending") == 0 && e->failures > 0)
		fprintf(f, " (next attempt %s, %s)", present_short_time(e->next_at, a),
		    present_relative(e->next_at, now_ns, b));
	if (e->requeued)
		fprintf(f, " (requeued by an operator)");
	fprintf(f, "\ntype:          ");
	present_text(f, e->type);
	fprintf(f, "\nobject:        ");
	if (e->object_type) {
		present_text(f, e->object_type);
		fputc(' ', f);
		present_text(f, e->object_id);
	} else {
		fputc('-', f);
	}
	fprintf(f, "\ncreated-at:    ");
	present_text(f, e->created_at_raw);
	if (e->created_at[0])
		fprintf(f, "  (%s)", e->created_at);
	fprintf(f, "\nupdated-at:    %s\n", e->updated_at[0] ? e->updated_at : "-");
	fprintf(f, "truncated:     %s\n", e->truncated ? "yes" : "no");
	fprintf(f, "source:        ");
	present_text(f, e->source[0] ? e->source : INBOX_DEFAULT_SOURCE);
	fprintf(f, "\nreceived-at:   %s (%s)\n", e->received_at,
	    present_relative(e->received_at, now_ns, a));
	fprintf(f, "sent-at:       %lld (webhook-timestamp)\n",
	    (long long)e->webhook_timestamp);
	fprintf(f, "verified-by:   secret ");
	present_text(f, e->secret_fp);
	fprintf(f, "\nattempts:      %lld (%lld failures since received or "
	    "requeued)\n",
	    (long long)e->attempts, (long long)e->failures);
	fprintf(f, "finished-at:   %s\n", e->finished_at[0] ? e->finished_at : "-");
	fprintf(f, "last-error:    ");
	present_text(f, e->last_error);
	fprintf(f, "\nlast-output:");
	if (e->last_output.len > 0) {
		fputc('\n', f);
		present_output(f, e->last_output.data, e->last_output.len);
	} else {
		fprintf(f, "   -\n");
	}
	if (e->has_body)
		fprintf(f, "body:          %zu bytes (webhook-drain show --body ID)\n",
		    e->body.len);
	else
		fprintf(f, "body:          dropped by retention\n");
}

/* One message per outcome, each worded as the drainer always has: cron
 * mails them and operators grep for them. */
void
present_drain_event(FILE *out, FILE *err, const struct drain_event *ev,
    int64_t max_attempts, int verbose)
{
	const struct inbox_event *e = ev->e;
	char idesc[UTIL_IDESC_SIZE];

	util_escape(e->webhook_id, strlen(e->webhook_id), idesc, sizeof idesc);
	switch (ev->outcome) {
	case DRAIN_DONE:
		if (verbose)
			fprintf(out, "done    %s (attempt %lld, %.3f s)\n", idesc,
			    (long long)e->attempts, (double)ev->r->elapsed_ns / 1e9);
		break;
	case DRAIN_STALE:
		if (verbose) {
			fprintf(out, "stale   ");
			present_text(out, e->webhook_id);
			fprintf(out, " (older than what was done for ");
			present_text(out, e->object_type);
			fputc(' ', out);
			present_text(out, e->object_id);
			fprintf(out, ")\n");
		}
		break;
	case DRAIN_STALE_FETCHED:
		if (verbose)
			fprintf(out, "stale   %s (the API's object is older than what "
			    "was done)\n", idesc);
		break;
	case DRAIN_DEAD:
		fprintf(err, "webhook-drain: %s is dead after %lld failures "
		    "(last: %s); see 'webhook-drain show %s', then requeue or "
		    "forget it\n", idesc, (long long)ev->failures, ev->r->error,
		    idesc);
		break;
	case DRAIN_RETRY:
		if (ev->failures == 1) {
			fprintf(err, "webhook-drain: %s failed (%s); it will be "
			    "retried with backoff, up to %lld attempts. Output "
			    "tail: ", idesc, ev->r->error, (long long)max_attempts);
			present_output_inline(err, ev->r->output,
			    ev->r->output_len > 300 ? 300 : ev->r->output_len);
			fputc('\n', err);
		} else if (verbose) {
			fprintf(out, "retry   %s (%s; failure %lld of %lld)\n", idesc,
			    ev->r->error, (long long)ev->failures,
			    (long long)max_attempts);
		}
		break;
	}
}

void
present_progress(FILE *f, const struct paging_progress *p, const char *what,
    const char *at)
{
	double secs = (double)(util_mono_ns() - p->start) / 1e9;
	int64_t at_ns;
	char eta[32] = "";

	if (at != NULL && instant_to_ns(at, &at_ns) == 0 && at_ns > p->from_ns &&
	    p->to_ns > p->from_ns && secs > 0.5) {
		double done = (double)(at_ns - p->from_ns) / (double)(p->to_ns - p->from_ns);
		if (done > 0.01 && done < 1)
			snprintf(eta, sizeof eta, ", ETA %.0fs", secs / done - secs);
	}
	fprintf(f, "\r%s: %lld pages, %lld items (%lld new), %.0f/s%s   ",
	    what, (long long)p->pages, (long long)p->items, (long long)p->stored,
	    secs > 0 ? (double)p->items / secs : 0.0, eta);
	fflush(f);
}

struct list_ctx {
	FILE	*out;
	int	 mode;		/* json (list) or present_show_mode (show) */
	int64_t	 now;
	int64_t	 n;
};

static int
list_one(const struct inbox_event *e, void *arg)
{
	struct list_ctx *lc = arg;

	lc->n++;
	if (lc->mode)
		present_json_to(lc->out, present_event_json(e, 0));
	else
		present_event_line(lc->out, e, lc->now);
	return 0;
}

int
present_list(FILE *out, struct inbox *ib, const struct inbox_filter *f,
    int json, int tty, int64_t now_ns, struct buf *err)
{
	struct list_ctx lc = { out, json, now_ns, 0 };
	struct inbox_filter page = *f;
	int64_t total = 0;

	if (tty && page.limit == 0)
		page.limit = PRESENT_LIST_PAGE;
	if (tty)
		present_list_header(out);
	if (inbox_list(ib, &page, 0, list_one, &lc, err) != INBOX_OK ||
	    (tty && inbox_count(ib, &page, &total, err) != INBOX_OK))
		return -1;
	if (tty && total > lc.n)
		fprintf(out, "... and %lld more (--limit N shows more; a pipe gets "
		    "them all)\n", (long long)(total - lc.n));
	return 0;
}

/* show's callback: the one event, then stop. */
static int
show_one(const struct inbox_event *e, void *arg)
{
	struct list_ctx *lc = arg;

	lc->n++;
	if (lc->mode == PRESENT_SHOW_BODY) {
		if (e->has_body && e->body.len > 0)
			fwrite(e->body.data, 1, e->body.len, lc->out);
	} else if (lc->mode == PRESENT_SHOW_JSON) {
		present_json_to(lc->out, present_event_json(e, 1));
	} else {
		present_event_card(lc->out, e, lc->now);
	}
	return -1;
}

int
present_show(FILE *out, struct inbox *ib, const char *id,
    enum present_show_mode mode, int64_t now_ns, int *found, struct buf *err)
{
	struct list_ctx lc = { out, (int)mode, now_ns, 0 };
	struct inbox_filter f;

	memset(&f, 0, sizeof f);
	f.webhook_id = id;
	if (inbox_list(ib, &f, 1, show_one, &lc, err) != INBOX_OK)
		return -1;
	*found = lc.n > 0;
	return 0;
}
