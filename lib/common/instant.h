/*
 * instant: event clocks as comparable instants.
 *
 * docs/DESIGN.md "Order": times are compared as instants (ISO-8601 with
 * fractional seconds and any offset), never as text.  We store every
 * instant in one normalised text form, UTC with nanoseconds,
 *
 *	YYYY-MM-DDTHH:MM:SS.nnnnnnnnnZ		(INSTANT_LEN = 30 characters)
 *
 * which sorts as text exactly as the instants sort, so SQLite's ORDER BY and
 * comparisons work on it directly, and an operator reading the table with
 * the sqlite3 shell can read it too.
 */
#ifndef WEBHOOK_INSTANT_H
#define WEBHOOK_INSTANT_H

#include <stddef.h>
#include <stdint.h>

#define INSTANT_LEN	30
#define INSTANT_SIZE	(INSTANT_LEN + 1)

/*
 * Parse an RFC 3339 / ISO-8601 date-time: "YYYY-MM-DD" then 'T', 't' or a
 * space, "HH:MM:SS" (second 60 allowed, counted as the next second), an
 * optional '.' or ',' with 1 or more digits (digits past the ninth are
 * truncated: nanosecond resolution), then "Z", "z", "+HH:MM", "-HH:MM",
 * "+HHMM" or "+HH".  No offset at all is read as UTC (common in JSON APIs).
 * `s` has `len` bytes, not necessarily NUL-terminated.  The result, in UTC,
 * must lie in years 0001..9999.
 *
 * Writes the normalised form into out (INSTANT_SIZE bytes, NUL-terminated)
 * and returns 0; returns -1 on anything else, leaving out undefined.
 * No library parses this grammar strictly (strptime skips spaces and takes
 * short fields); calendar arithmetic is left to timegm(3).
 */
int	instant_parse(const char *s, size_t len, char out[INSTANT_SIZE])
	    __attribute__((warn_unused_result));

/*
 * Format `ns` nanoseconds since the Unix epoch (may be negative) in the
 * normalised form.  Returns 0, or -1 when outside years 0001..9999.
 */
int	instant_format(int64_t ns, char out[INSTANT_SIZE]);

/* The normalised instant back to nanoseconds since the epoch.  Returns 0, or
 * -1 when `s` is not in the normalised form. */
int	instant_to_ns(const char *s, int64_t *ns);

/* The later of two normalised instants ("" counts as none, so the other
 * one wins); normalised instants order as text.  Returns a or b.  What
 * an object's clocks advance to when a handed-out event carried the
 * object at a version (object_version) newer or older than its own
 * clocks: tests/test_store.c, "refetch_version_advances_clocks", fails
 * on either engine when the comparison is turned around. */
const char *instant_later(const char *a, const char *b);

#endif
