/*
 * util: the small helpers every module needs — range-checked number
 * parsing, durations, a growable byte buffer with a cap, log lines with
 * untrusted text escaped, small files read whole, edit distance.  Nothing
 * here knows about webhooks.
 */
#ifndef WEBHOOK_UTIL_H
#define WEBHOOK_UTIL_H

#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#define WARN_UNUSED __attribute__((warn_unused_result))

/*
 * Parse a plain decimal integer: ASCII digits only, no sign, no spaces, no
 * leading zero unless the number is "0" (the canonical form that Standard
 * Webhooks signs; see vectors "timestamp_leading_zero").  `s` need not be
 * NUL-terminated; `len` is its length in bytes.  On success stores the value
 * (0 ≤ value ≤ max) in *out and returns 0; returns -1 for anything else,
 * including overflow and len == 0.
 */
int util_parse_decimal(const char *s, size_t len, int64_t max, int64_t *out) WARN_UNUSED;

/*
 * Parse a config integer: optional leading '-', digits, nothing after.
 * Returns 0 and stores into *out when min ≤ value ≤ max, else -1.
 */
int util_parse_int(const char *s, int64_t min, int64_t max, int64_t *out) WARN_UNUSED;

/*
 * Parse a duration as docs/DESIGN.md "Configuration" defines it: whole seconds,
 * or a number followed by one unit of s, m, h, d ("90s", "15m", "36h",
 * "7d").  Stores seconds (0 ≤ seconds ≤ max_seconds) in *out; returns 0, or
 * -1 when malformed or out of range.
 */
int util_parse_duration(const char *s, int64_t max_seconds, int64_t *out) WARN_UNUSED;
/*
 * A duration as a config would say it, the inverse of util_parse_duration:
 * in the largest of d, h, m that divides it, else in s ("7d", "90s", "0s").
 * Writes into out (size outsz, 24 is enough); returns out.
 */
char	*util_format_duration(int64_t seconds, char *out, size_t outsz);

/*
 * Read the whole of a small regular file: returns it NUL-terminated (the
 * caller frees it) with its length in *len, or NULL with errno: open's or
 * read's, EINVAL when it is not a regular file, EFBIG when it is larger
 * than `max` bytes, EILSEQ when it holds a NUL byte (text never does).
 * What was read is wiped before a failure returns (it may hold secrets).
 */
char	*util_read_file(const char *path, size_t max, size_t *len);

/*
 * A growable byte buffer that refuses to grow past `cap` bytes (curl's
 * dynbuf idea).  Always NUL-terminated one byte past `len` so text users
 * can print it, but `len` is the truth: bodies may contain NUL bytes.
 */
struct buf {
	char	*data;	/* owned; NULL until the first append */
	size_t	 len;	/* bytes in use, excluding the terminating NUL */
	size_t	 size;	/* bytes allocated */
	size_t	 cap;	/* most bytes `len` may reach */
};

void	buf_init(struct buf *b, size_t cap);
/*
 * The cap of a buffer that holds one reason for a failure (the `err` of
 * most calls): one line of a log or of cron's mail, naming a path or a
 * URL and quoting a library's own words.  Longer ones are cut (buf_printf
 * stops at the cap), never grown without bound by a hostile input.
 */
#define BUF_ERR_MAX	4096
/* Append n bytes.  Returns 0, or -1 when it would pass cap (buffer unchanged)
 * or on allocation failure (errno ENOMEM); callers tell them apart by errno
 * (E2BIG for the cap). */
int	buf_append(struct buf *b, const void *p, size_t n) WARN_UNUSED;
/* Append formatted text; 0 or -1 like buf_append.  Not warn_unused: it
 * also builds best-effort error messages, where a cut message is fine. */
int	buf_printf(struct buf *b, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* Make room for `n` more bytes in one allocation (no doubling), so a body
 * of known length costs its length, not up to twice that.  0 or -1. */
int	buf_reserve(struct buf *b, size_t n) WARN_UNUSED;
void	buf_reset(struct buf *b);	/* len = 0, keeps the allocation */
void	buf_free(struct buf *b);	/* frees; b may be reused after buf_init */

/*
 * Copy at most `len` bytes of untrusted text into `out` (size `outsz` ≥ 8)
 * for a log line: printable ASCII kept, anything else as \xHH, cut with
 * "..." when it does not fit (a log line is a summary, not a record).
 * Returns out.
 */
char	*util_escape(const char *s, size_t len, char *out, size_t outsz);
/* The `out` size that holds n untrusted bytes escaped whole (each byte
 * at worst \xHH) with the NUL. */
#define UTIL_ESCAPED_SIZE(n)	(4 * (n) + 1)
/* An event's id escaped for a message: a webhook-id of the most bytes the
 * receiver accepts (WEBHOOK_ID_MAX, 256) escaped whole; longer ids (a
 * sync's, a copied inbox's) are cut with "...". */
#define UTIL_IDESC_SIZE		UTIL_ESCAPED_SIZE(256)

/*
 * Edit distance between two short strings, case ignored: insertions,
 * deletions, substitutions and swaps of two neighbours cost 1 each
 * (optimal string alignment), for "did you mean" suggestions.  Strings
 * longer than UTIL_DISTANCE_MAX bytes are not compared: returns INT_MAX.
 */
/* Longer than any config key name; the table stays small on the stack. */
#define UTIL_DISTANCE_MAX	32
int	util_distance(const char *a, const char *b);

/*
 * Log lines: "2026-11-30T07:15:07Z webhook.fcgi[123]: message".  They go to
 * the file given to log_open (appended, created 0660 for the two users that
 * share it), or stderr when none
 * or when it cannot be opened (then that failure is logged to stderr once).
 * A message is always one line: its control bytes (\n, \r, ...) are
 * written as \xHH, its trailing line ends dropped, whatever a library's
 * text held.  Never pass secrets or bodies; pass ids through util_escape
 * (it escapes backslashes too, which this does not).  Safe to
 * call from several threads; log_open may run while others log (call
 * log_init first, once, before any thread starts).
 */
void	log_init(const char *progname);
void	log_open(const char *path);	/* NULL or "" means stderr */
void	log_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Do log lines go to a file (the config's `log`), not stderr?  A CLI
 * that prints a problem on stderr for the operator (cron's mail) logs it
 * too only then, so stderr does not get it twice. */
int	log_is_file(void);
void	log_vmsg(const char *fmt, va_list ap) __attribute__((format(printf, 1, 0)));

/*
 * The file `path` names, as every opener here reaches it (the inbox, the
 * document-root guard, `check`): realpath(3) of the path when it exists;
 * else realpath(3) of its directory, then its last name.  The kernel and
 * SQLite disagree on "DIR/missing/../inbox.db" (SQLite drops
 * "missing/.." by itself, open(2) fails on it), so a path whose directory
 * does not resolve, or whose last name is "", "." or "..", is refused
 * rather than guessed: -1 (errno ENOENT, EINVAL or ENAMETOOLONG).  Writes
 * the result (NUL-terminated, < PATH_MAX bytes) into `out`.
 */
int	util_path_resolve(const char *path, char out[PATH_MAX])
	    __attribute__((warn_unused_result));

/*
 * Is `path` inside directory `dir` (or `dir` itself)?  `dir` is resolved
 * with realpath(3), `path` with util_path_resolve, so symlinks and ".."
 * do not hide it; a path that does not exist yet is judged by its
 * directory.  Returns 1 or 0: 0 when `dir` cannot be resolved; when
 * `path` cannot, 1 if it has a ".." component (SQLite would resolve it
 * textually: it cannot be shown to be outside), else 0 (no opener of ours
 * opens it: util_path_resolve refuses it).
 */
int	util_path_inside(const char *dir, const char *path);

/* Does `database` look like a libpq key=value connection string
 * ("host=db dbname=inbox user=webhook"): at its start or after a space, a
 * libpq connection keyword followed by '=' (spaces allowed between)?  A
 * lexical test only: `database` takes a path or a postgresql:// URI
 * (store/inbox.h, inbox_is_file), and such a string is refused
 * (docs/postgresql.md, "Connecting"), never taken as a file's name (it
 * would become a SQLite file named after the whole string, password and
 * all).  A URI has no such word after a space. */
int	util_is_conninfo(const char *database);

/* Wall clock, nanoseconds since the epoch (CLOCK_REALTIME, which libfaketime
 * moves in tests). */
int64_t	util_now_ns(void);
/* Monotonic clock in nanoseconds, for timeouts and measurements. */
int64_t	util_mono_ns(void);

/*
 * Does the JSON text s (len bytes) hold an escaped NUL (a backslash-u-0000
 * escape) inside a string?  cJSON decodes it into its NUL-terminated
 * strings, so a value would be cut short there and "a\u0000x" read as
 * "a": whoever reads ids or object keys with cJSON asks first.  1 or 0.
 */
int	util_json_has_escaped_nul(const char *s, size_t len);

#endif
