/*
 * present: how the drainer shows events and times to a person or a script
 * (docs/DESIGN.md "The drainer": list, show, status).  Every string that came
 * from outside (ids, types, handler output) goes through util_escape here,
 * so a hostile body cannot forge lines or send terminal escapes; JSON
 * output stays valid UTF-8 for the same reason.
 */
#ifndef WEBHOOK_PRESENT_H
#define WEBHOOK_PRESENT_H

#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "lib/store/inbox.h"

/* lib/drain/drain.h, lib/drain/paging.h: what a run and a walk report. */
struct drain_event;
struct paging_progress;

/* Characters of the short forms below, with their NUL. */
#define PRESENT_TIME_SIZE	32
/* Bytes of untrusted text printed at most by present_escaped (a longer
 * text is cut): a handler's output tail is 4 KB, an id 64 bytes. */
#define PRESENT_ESCAPED_MAX	65536

/* "2026-11-30T07:21:22Z" from a normalised instant (to the second), "-"
 * when `instant` is NULL or not normalised.  Returns out. */
const char *present_short_time(const char *instant,
	    char out[PRESENT_TIME_SIZE]);

/* "3m ago" / "2h from now" for a normalised instant against now_ns (ns
 * since the epoch); "never" when NULL or unparsable.  Units switch at two
 * of the larger unit (119 s, then 2m ... 47h, then 2d).  Returns out. */
const char *present_relative(const char *instant, int64_t now_ns,
	    char out[PRESENT_TIME_SIZE]);

/* Write the first len (at most PRESENT_ESCAPED_MAX) bytes of s to f, control
 * and non-ASCII bytes as \xHH text.  Out of memory: prints nothing. */
void	present_escaped(FILE *f, const char *s, size_t len);

/* NUL-terminated s escaped as above; "-" for NULL. */
void	present_text(FILE *f, const char *s);

/* A handler's output for a person (`show`, `try`, the run's digest):
 * each of its lines as "  | line\n" (a CRLF ending is a newline too); a
 * last line without its newline is shown too.  Decoded for reading:
 * valid UTF-8 and backslashes as they are, control bytes (but the
 * newlines) and bytes that are not UTF-8 as \xHH text; never a literal
 * "\x0a" for a newline.  At most PRESENT_ESCAPED_MAX bytes of a line. */
void	present_output(FILE *f, const char *s, size_t len);

/* The same on one line (a log line, the first failure's line): the
 * output's non-empty lines joined by " | ", no newline written. */
void	present_output_inline(FILE *f, const char *s, size_t len);

/*
 * One event as a JSON object (`list --json`, `show --json`): every column
 * of the contract; untrusted text as its own UTF-8 (so ids round-trip to
 * show, requeue and forget; cJSON escapes control characters), bytes
 * that are not UTF-8 as \xHH text; "" and NULL as null; with
 * with_body and a kept body, "body_base64" holds the exact bytes.  Returns
 * a new object (cJSON_Delete it) or NULL when out of memory.
 */
cJSON	*present_event_json(const struct inbox_event *e, int with_body);

/* Print o unformatted on one line of stdout, then cJSON_Delete it (NULL
 * accepted: prints nothing). */
void	present_json(cJSON *o);
/* The same on f. */
void	present_json_to(FILE *f, cJSON *o);

/* Events `list` shows on a terminal without --limit: a screenful or two
 * (5,050 lines helped nobody); a pipe gets them all. */
#define PRESENT_LIST_PAGE	50

/* The column names above present_event_line's lines (on a terminal). */
void	present_list_header(FILE *f);

/*
 * `list`: the events f matches in ib, one present_event_line each, or
 * one JSON object a line (json).  tty: a person reads it: a header, at
 * most PRESENT_LIST_PAGE events unless f->limit says otherwise, then how
 * many more.  Returns 0, or -1 with the inbox's reason in err.
 */
int	present_list(FILE *out, struct inbox *ib, const struct inbox_filter *f,
	    int json, int tty, int64_t now_ns, struct buf *err)
	    __attribute__((warn_unused_result));

/* How `show` prints its event. */
enum present_show_mode {
	PRESENT_SHOW_CARD,	/* present_event_card */
	PRESENT_SHOW_JSON,	/* present_event_json, with the body */
	PRESENT_SHOW_BODY	/* the stored bytes, nothing else */
};

/* `show ID`: the event, as mode says; *found 0 when there is none.
 * Returns 0, or -1 with the inbox's reason in err. */
int	present_show(FILE *out, struct inbox *ib, const char *id,
	    enum present_show_mode mode, int64_t now_ns, int *found,
	    struct buf *err) __attribute__((warn_unused_result));

/* One event as a line of `list`: received (to the second), state,
 * attempts, id, type, object TYPE:ID, event clock, and for a pending
 * event "blocked" or when its retry is due. */
void	present_event_line(FILE *f, const struct inbox_event *e, int64_t now_ns);

/* One event as `show` prints it: one "field:" line each, the handler's
 * output indented below last-output, the body's size (not its bytes). */
void	present_event_card(FILE *f, const struct inbox_event *e, int64_t now_ns);

/*
 * What a run says of one event (lib/drain/drain.h), as cron should mail it: the
 * first failure (with the output's tail) and a death always, on err; done,
 * stale and later retries only when verbose, on out.  max_attempts is the
 * config's, for "failure N of M".
 */
void	present_drain_event(FILE *out, FILE *err, const struct drain_event *ev,
	    int64_t max_attempts, int verbose);

/* A walk's progress (lib/drain/paging.h) as one line that rewrites itself ("\r"):
 * pages, items, new events, items a second, and an ETA from how far the
 * newest clock `at` (may be NULL) is through the walked range. */
void	present_progress(FILE *f, const struct paging_progress *p,
	    const char *what, const char *at);

/*
 * An operator's time (--since, --until): an ISO-8601 instant, or a
 * duration back from now_ns such as "2h" (at most 3650 days).  Returns 0
 * with *out in ns since the epoch, or -1 when it is neither.
 */
int	present_parse_when(const char *s, int64_t now_ns, int64_t *out)
	    __attribute__((warn_unused_result));

#endif
