/*
 * config: docs/DESIGN.md "Configuration" (contract).  See program/config.h.
 *
 * One table, keys[], says everything about every key: its kind (how the
 * value is read), whether it may be repeated or is required, its default
 * and range in the unit stored, and which field of struct config it fills.
 * inih reads the file line by line and one handler hands each value to
 * its row; every message that names a range builds it from the row.
 */
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <ini.h>
#include <sodium.h>

#include "lib/program/config.h"
#include "lib/program/keyname.h"
#include "lib/program/source.h"
#include "lib/store/inbox.h"

/* How a value is read. */
enum kind {
	K_STRING,	/* kept exactly */
	K_PATH,		/* relative to the config file's directory */
	K_URL,		/* an http:// or https:// URL */
	/* K_SECONDS to K_COUNT: numbers, int64_t fields */
	K_SECONDS,	/* a duration (util_parse_duration), stored in seconds */
	K_MILLIS,	/* a duration in whole seconds, stored in milliseconds */
	K_BYTES,	/* a byte count (util_parse_int) */
	K_COUNT,	/* a whole number (util_parse_int) */
	K_ENUM,		/* one of the names in `text`, upper or lower case */
	K_SECRET,	/* whsec_… or whpk_…, appended to a list */
	K_RESOURCE,	/* api_resource TYPE PATH, appended to a list */
	K_GLOBS,	/* refetch GLOB…, each appended to a list */
	K_NKINDS
};

/* flags: ONCE, a second line is an error; REPEAT, each line adds to a
 * list; REQUIRED, a file without the key is refused. */
enum { ONCE = 0, REPEAT = 1, REQUIRED = 2 };

struct key {
	const char	*name;
	enum kind	 kind;
	int		 flags;
	/* Numbers and durations: in the unit stored (K_MILLIS: ms). */
	int64_t		 def, min, max;	/* lists: max is the most entries */
	size_t		 off;		/* the field: offsetof(struct config, …) */
	size_t		 count;		/* lists: the field counting entries */
	/* K_ENUM: the names, space-separated, the stored value being the
	 * position; lists: what an entry is called; durations: why the
	 * minimum, said instead of the range when a value is below it. */
	const char	*text;
};

#define F(field)	offsetof(struct config, field)
#define UPPER		"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
#define MINUTE		60
#define HOUR		3600
#define DAY		86400
/* The body is held in memory while it is verified. */
#define BODY_MAX	(64 << 20)

_Static_assert(sizeof(enum config_sync) == sizeof(int),
    "K_ENUM stores an int into an enum field");

static const struct key keys[] = {
/*	{ name,			kind,		flags,
 *	  default, min, max,			field, count,	text }, */
	{ "database",		K_PATH,		ONCE | REQUIRED,
	  0, 0, 0,				F(database), 0,	NULL },
	{ "secret",		K_SECRET,	REPEAT | REQUIRED,
	  0, 0, SIGNATURE_KEYS_MAX,		F(secrets), F(nsecrets), "secrets" },
	{ "tolerance",		K_SECONDS,	ONCE,
	  300, 1, DAY,				F(tolerance_s), 0, NULL },
	{ "max_body",		K_BYTES,	ONCE,
	  1048576, 1, BODY_MAX,			F(max_body_bytes), 0, NULL },
	{ "handler",		K_STRING,	ONCE,
	  0, 0, 0,				F(handler), 0,	NULL },
	{ "handler_timeout",	K_SECONDS,	ONCE,
	  60, 1, DAY,				F(handler_timeout_s), 0, NULL },
	{ "max_attempts",	K_COUNT,	ONCE,
	  12, 1, 1000,				F(max_attempts), 0, NULL },
	/* run --jobs overrides it; the bound is drain/handler.h's. */
	{ "jobs",		K_COUNT,	ONCE,
	  1, 1, CONFIG_JOBS_MAX,		F(jobs), 0,	NULL },
	{ "retention",		K_SECONDS,	ONCE,
	  7 * DAY, CONFIG_RETENTION_MIN, 3650 * DAY, F(retention_s), 0,
	  "the provider's retry period: a late retry would be taken as new" },
	{ "settle",		K_SECONDS,	ONCE,
	  2, 0, HOUR,				F(settle_s), 0,	NULL },
	{ "retry_base",		K_SECONDS,	ONCE,
	  30, 1, DAY,				F(retry_base_s), 0, NULL },
	{ "retry_max",		K_SECONDS,	ONCE,
	  6 * HOUR, 1, 7 * DAY,			F(retry_max_s), 0, NULL },
	/* The provider gives up at 15 s: stay well below. */
	{ "busy_timeout",	K_MILLIS,	ONCE,
	  5000, 1000, 10000,			F(busy_timeout_ms), 0, NULL },
	/* Below the provider's 15 s: a body still arriving after that is a
	 * delivery the provider already counts as failed. */
	{ "body_timeout",	K_SECONDS,	ONCE,
	  10, 1, MINUTE,			F(body_timeout_s), 0, NULL },
	{ "synchronous",	K_ENUM,		ONCE,
	  CONFIG_SYNC_FULL, 0, 0,		F(synchronous), 0, "FULL NORMAL" },
	{ "log",		K_PATH,		ONCE,
	  0, 0, 0,				F(log), 0,	NULL },
	{ "api_url",		K_URL,		ONCE,
	  0, 0, 0,				F(api_url), 0,	NULL },
	{ "api_token_file",	K_PATH,		ONCE,
	  0, 0, 0,				F(api_token_file), 0, NULL },
	{ "api_ca_file",	K_PATH,		ONCE,
	  0, 0, 0,				F(api_ca_file), 0, NULL },
	{ "api_timeout",	K_SECONDS,	ONCE,
	  10, 1, 5 * MINUTE,			F(api_timeout_s), 0, NULL },
	{ "api_resource",	K_RESOURCE,	REPEAT,
	  0, 0, CONFIG_LIST_MAX,		F(resources), F(nresources),
	  "entries" },
	{ "refetch",		K_GLOBS,	REPEAT,
	  0, 0, CONFIG_LIST_MAX,		F(refetch), F(nrefetch), "patterns" },
};
#define NKEYS	(sizeof keys / sizeof keys[0])

/* A field of c, as the row k places it. */
#define FIELD(c, k)	((void *)((char *)(c) + (k)->off))
#define COUNT(c, k)	((size_t *)(void *)((char *)(c) + (k)->count))

/* One reading of a file. */
struct parse {
	struct config	*c;
	const char	*path;
	struct buf	*err;		/* the first error, once failed */
	int		 line;		/* the line being read, from 1 */
	int		 failed;
	int		 fail_line;	/* the line of the first error */
	struct buf	*all;		/* config_load_all: every error after
					 * the first, one line each; else NULL */
	unsigned char	 seen[NKEYS];	/* 1: the key was given */
	/* A `secret` line that cannot load is an error of its own kind
	 * (lib/program/config.h, config->secret_skipped): while `soft` is set,
	 * fail() also adds its line to `skipped`; every other error counts
	 * in `hard`. */
	int		 soft, hard;
	struct buf	 skipped;
	int		 err_hard;	/* err holds an error not soft */
	int		 hard_line;	/* the line of the first hard error */
	/* The section being read: -1 none yet (top level), -2 a refused
	 * one (its keys are skipped), else an index into c->sources. */
	int		 source;
	unsigned	 source_seen;	/* its single-valued keys given */
};

/* The table as lib/program/keyname.c reads it: refused keys' names. */
static const char *
key_name(size_t i)
{
	return keys[i].name;
}

static const struct keyname_table key_names = { key_name, NKEYS };

/*
 * Record the first error of the file, "file:line: key: what" (key NULL:
 * "file:line: what"); later ones are dropped, but reading goes on (a `log`
 * line below a typo still names where to say so).  Returns -1.
 */
static int __attribute__((format(printf, 3, 4)))
fail(struct parse *p, const char *key, const char *fmt, ...)
{
	char what[256], name[40];
	va_list ap;

	struct buf *to = p->err;

	va_start(ap, fmt);
	(void)vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (!p->soft && p->hard++ == 0)
		p->hard_line = p->line;
	else if (p->soft)
		(void)buf_printf(&p->skipped, "%s%s:%d: %s: %s", p->skipped.len ?
		    "\n" : "", p->path, p->line, key, what);
	/* config_load reports one error: the first that fails the file, so
	 * a hard error takes the place of a secret's, which may not. */
	if (p->failed && p->all == NULL && (p->soft || p->err_hard))
		return -1;
	if (p->failed && p->all != NULL) {	/* the next line of the report */
		to = p->all;
		(void)buf_printf(to, "\n");
	} else {
		p->failed = 1;
		p->fail_line = p->line;
		p->err_hard = !p->soft;
		buf_reset(p->err);
	}
	if (key == NULL)
		(void)buf_printf(to, "%s:%d: %s", p->path, p->line, what);
	else
		(void)buf_printf(to, "%s:%d: %s: %s", p->path, p->line,
		    !keyname_like(key) ? "(a line that is not key = value)" :
		    !keyname_known_or_near(&key_names, key) ?
		    "(a word that is not a key)" :
		    util_escape(key, strlen(key), name, sizeof name), what);
	return -1;
}

/* A relative path in the file is relative to the file's own directory, not
 * to whatever directory the web server or cron started us in. */
static int
resolve_against(const char *file, char **p)
{
	const char *slash = strrchr(file, '/');
	size_t dirlen, len = strlen(*p);
	char *full;

	if ((*p)[0] == '/' || slash == NULL)
		return 0;
	dirlen = (size_t)(slash - file) + 1;
	if ((full = malloc(dirlen + len + 1)) == NULL)
		return -1;
	memcpy(full, file, dirlen);
	memcpy(full + dirlen, *p, len + 1);
	free(*p);
	*p = full;
	return 0;
}

/* K_STRING, K_PATH, K_URL. */
static int
set_string(struct parse *p, const struct key *k, const char *v)
{
	char **dst = FIELD(p->c, k);

	if (k->kind == K_URL && strncmp(v, "https://", 8) != 0 &&
	    strncmp(v, "http://", 7) != 0)
		return fail(p, k->name, "not an http:// or https:// URL");
	/* `database` is a file, or a PostgreSQL inbox's libpq URI: that is
	 * no path to resolve. */
	if (k->kind == K_PATH && strcmp(k->name, "database") == 0 &&
	    !inbox_is_file(v)) {
#ifndef WEBHOOK_POSTGRESQL
		return fail(p, k->name, "a PostgreSQL inbox, but this binary "
		    "was built without PostgreSQL (inbox backends: sqlite; "
		    "`--version` says which a binary has)");
#else
		if ((*dst = strdup(v)) == NULL)
			return fail(p, k->name, "out of memory");
		return 0;
#endif
	}
	/* A libpq key=value string is no file name (it would become a SQLite
	 * file named after it, password and all); the value is not echoed. */
	if (k->kind == K_PATH && strcmp(k->name, "database") == 0 &&
	    util_is_conninfo(v))
		return fail(p, k->name, "a libpq key=value connection string: "
		    "write a PostgreSQL inbox as a URI, postgresql://user@host/"
		    "dbname (the password in a passfile, not here; "
		    "docs/postgresql.md)");
	if ((*dst = strdup(v)) == NULL ||
	    (k->kind == K_PATH && resolve_against(p->path, dst) == -1))
		return fail(p, k->name, "out of memory");
	return 0;
}

/* K_SECONDS, K_MILLIS, K_BYTES, K_COUNT: within the row's min and max. */
static int
set_number(struct parse *p, const struct key *k, const char *v)
{
	int64_t *dst = FIELD(p->c, k);
	int64_t scale = k->kind == K_MILLIS ? 1000 : 1, n;
	char lo[24], hi[24];

	if (k->kind == K_BYTES || k->kind == K_COUNT) {
		if (util_parse_int(v, k->min, k->max, dst) == 0)
			return 0;
		return fail(p, k->name, "not a %s between %lld and %lld",
		    k->kind == K_BYTES ? "byte count" : "whole number",
		    (long long)k->min, (long long)k->max);
	}
	if (util_parse_duration(v, k->max / scale, &n) == 0 &&
	    n * scale >= k->min) {
		*dst = n * scale;
		return 0;
	}
	(void)util_format_duration(k->min / scale, lo, sizeof lo);
	(void)util_format_duration(k->max / scale, hi, sizeof hi);
	if (k->text != NULL && util_parse_duration(v, k->max / scale, &n) == 0)
		return fail(p, k->name, "below %s, %s", lo, k->text);
	return fail(p, k->name, "not a duration between %s and %s", lo, hi);
}

/* K_ENUM: a name of k->text, as written there or all in lower case. */
static int
set_enum(struct parse *p, const struct key *k, const char *v)
{
	int *dst = FIELD(p->c, k), at;
	const char *w = k->text, *sp;
	size_t n;

	for (at = 0; *w != '\0'; at++, w += n + (w[n] == ' ')) {
		n = strcspn(w, " ");
		if (strlen(v) == n && (strncmp(v, w, n) == 0 ||
		    (strncasecmp(v, w, n) == 0 && strpbrk(v, UPPER) == NULL))) {
			*dst = at;
			return 0;
		}
	}
	if ((sp = strchr(k->text, ' ')) != NULL && strchr(sp + 1, ' ') == NULL)
		return fail(p, k->name, "neither %.*s nor %s",
		    (int)(sp - k->text), k->text, sp + 1);
	return fail(p, k->name, "not one of %s", k->text);
}

/*
 * Does v start with a prefix that is not ours ("whsek_…", "whsce_…")?
 * 2 to 6 letters or digits then '_': standard base64 has no '_', so no
 * bare secret starts so, and without this the typo is reported as "not
 * standard base64".  The prefix is not printed (the secret's start).
 */
static int
wrong_prefix(const char *v)
{
	size_t n = 0;

	if (strncmp(v, "whsec_", 6) == 0 || strncmp(v, "whpk_", 5) == 0)
		return 0;
	while (n < 7 && isalnum((unsigned char)v[n]))
		n++;
	return n >= 2 && n <= 6 && v[n] == '_';
}

/* The messages of a quoted value that is not one: each says how to
 * write it. */
#define QUOTE_HOW	"(secret = \" a#b\\\"c \"; inside, \\\" is a quote " \
			"and \\\\ a backslash)"

int
config_secret_unquote(const char *v, char *out, size_t outsz,
    const char **why)
{
	size_t o = 0;

	if (*v != '"')
		return 0;
	for (v++; *v != '"'; v++) {
		if (*v == '\0' || (*v == '\\' && v[1] == '\0')) {
			*why = "a quote left open: a quoted value ends with \" "
			    QUOTE_HOW;
			return -1;
		}
		if (*v == '\\' && v[1] != '"' && v[1] != '\\') {
			*why = "a backslash in quotes before another byte than "
			    "\" or \\ " QUOTE_HOW;
			return -1;
		}
		if (*v == '\\')
			v++;
		if (o + 1 >= outsz) {
			*why = "longer than the longest secret (256 bytes) in "
			    "its quotes";
			return -1;
		}
		out[o++] = *v;
	}
	if (v[1] != '\0') {
		*why = "bytes after the closing quote: a quote inside is "
		    "written \\\" " QUOTE_HOW;
		return -1;
	}
	out[o] = '\0';
	return 1;
}

/* K_SECRET: one whsec_… or whpk_…, quoted or not, never shown in a
 * message.  A value that cannot load fails softly (struct parse): the
 * config still loads when another secret does (lib/program/config.h). */
static int
add_secret(struct parse *p, const struct key *k, const char *v)
{
	struct signature_key *list = FIELD(p->c, k);
	size_t *n = COUNT(p->c, k);
	char q[SCHEME_SECRET_MAX + 2];
	const char *why, *text = v;
	int rc = 0, quoted;

	if (*n == (size_t)k->max)
		return fail(p, k->name, "more than %lld %s", (long long)k->max,
		    k->text);
	p->soft = 1;
	if ((quoted = config_secret_unquote(v, q, sizeof q, &why)) == -1) {
		rc = fail(p, k->name, "%s", why);
		goto out;
	}
	if (quoted)
		text = q;
	if (strpbrk(text, " \t") != NULL)
		rc = fail(p, k->name, quoted ? "a blank in its quotes: a "
		    "whsec_… or whpk_… secret has none" : "contains a space: a "
		    "comment must be on a line of its own");
	/* The commonest pastes get their name, not "not base64". */
	else if (*text == '\'')
		rc = fail(p, k->name, "in single quotes: values are written "
		    "without them, or in double quotes (secret = whsec_...)");
	else if (strstr(text, "REPLACE_WITH") != NULL)
		rc = fail(p, k->name, "still the example's placeholder: paste "
		    "the endpoint secret from the provider's dashboard");
	else if (wrong_prefix(text))
		rc = fail(p, k->name, "its prefix is not whsec_ (nor whpk_ for "
		    "a public key): a typo? paste the secret as the dashboard "
		    "shows it");
	else if (signature_key_parse(text, &list[*n], &why) == -1)
		rc = fail(p, k->name, "%s", why);
	else
		(*n)++;
out:
	sodium_memzero(q, sizeof q);
	p->soft = 0;
	return rc;
}

/* K_RESOURCE: "TYPE PATH", one space between. */
static int
add_resource(struct parse *p, const struct key *k, const char *v)
{
	struct config_resource *list = FIELD(p->c, k), *r;
	size_t *n = COUNT(p->c, k);
	const char *sp = strchr(v, ' ');

	if (sp == NULL || sp == v || sp[1] == '\0' || strchr(sp + 1, ' ') != NULL)
		return fail(p, k->name, "not TYPE PATH (e.g. \"client "
		    "crm/clients\")");
	if (*n == (size_t)k->max)
		return fail(p, k->name, "more than %lld %s", (long long)k->max,
		    k->text);
	r = &list[*n];
	(*n)++;	/* counted now, so config_free frees a half-made entry */
	if ((r->object_type = strndup(v, (size_t)(sp - v))) == NULL ||
	    (r->path = strdup(sp + 1)) == NULL)
		return fail(p, k->name, "out of memory");
	return 0;
}

/* K_GLOBS: one or more globs separated by spaces. */
static int
add_globs(struct parse *p, const struct key *k, const char *v)
{
	char **list = FIELD(p->c, k);
	size_t *n = COUNT(p->c, k), len;

	while (*v != '\0') {
		if ((len = strcspn(v, " ")) > 0) {
			if (*n == (size_t)k->max)
				return fail(p, k->name, "more than %lld %s",
				    (long long)k->max, k->text);
			if ((list[*n] = strndup(v, len)) == NULL)
				return fail(p, k->name, "out of memory");
			(*n)++;
		}
		v += len;
		while (*v == ' ')
			v++;
	}
	return 0;
}

/* How each kind is read: 0, or -1 after fail(). */
static int (*const setters[])(struct parse *, const struct key *,
    const char *) = {
	[K_STRING] = set_string, [K_PATH] = set_string, [K_URL] = set_string,
	[K_SECONDS] = set_number, [K_MILLIS] = set_number,
	[K_BYTES] = set_number, [K_COUNT] = set_number,
	[K_ENUM] = set_enum, [K_SECRET] = add_secret,
	[K_RESOURCE] = add_resource, [K_GLOBS] = add_globs,
};
_Static_assert(sizeof setters / sizeof setters[0] == K_NKINDS,
    "a setter for every kind");

/* One `name = value` line, by its row of keys[]: 0, or -1 after fail(). */
static int
set_key(struct parse *p, const char *name, const char *v)
{
	const struct key *k = NULL;
	size_t i;
	long near;

	if (*v == '\0')
		return fail(p, name, "empty value");
	for (i = 0; i < NKEYS && k == NULL; i++)
		if (strcmp(name, keys[i].name) == 0)
			k = &keys[i];
	if (k == NULL && (near = keyname_near(&key_names, name)) != -1)
		return fail(p, name, "unknown key (did you mean %s?)",
		    keys[near].name);
	if (k == NULL)
		return fail(p, name, "unknown key");
	i = (size_t)(k - keys);
	/* A second line of a single-valued key is a mistake whichever of
	 * the two was meant. */
	if (!(k->flags & REPEAT) && p->seen[i] > 0)
		return fail(p, name, "given twice");
	p->seen[i] = 1;
	return setters[k->kind](p, k, v);
}

/* ---- [source NAME] sections: lib/program/source.c ---- */

/* A section line (s at its '['): "[source NAME]" opens a source, whose
 * lines follow; anything else is refused and its lines skipped. */
static void
section_line(struct parse *p, const char *s)
{
	char why[SOURCE_WHY_MAX];

	p->source_seen = 0;
	if ((p->source = source_open(p->c, s, p->line, why)) < 0) {
		p->source = -2;
		(void)fail(p, NULL, "%s", why);
	}
}

/* One `name = value` line of the section being read. */
static int
set_source_key(struct parse *p, const char *name, const char *v)
{
	struct config_source *src = &p->c->sources[p->source];
	char why[SOURCE_WHY_MAX];
	size_t i;
	int rc;

	if ((rc = source_set(src, &p->source_seen, name, v, why)) == -1)
		return fail(p, NULL, "%s", why);
	if (rc == SOURCE_UNKNOWN_KEY) {
		/* A top-level key below a section belongs to the section. */
		for (i = 0; i < NKEYS; i++)
			if (strcmp(name, keys[i].name) == 0)
				return fail(p, NULL, "[source %s]: %s: not a "
				    "source's key (top-level keys go above the "
				    "first section)", src->name, name);
		return fail(p, NULL, "[source %s]: unknown key", src->name);
	}
	return 0;
}

/* After the file: each source is complete; errors name its [source]
 * line. */
static void
check_sources(struct parse *p)
{
	char why[SOURCE_WHY_MAX];
	size_t i;

	for (i = 0; i < p->c->nsources; i++) {
		p->line = p->c->sources[i].line;
		if (source_check(&p->c->sources[i], why) == -1)
			(void)fail(p, NULL, "%s", why);
	}
}

/*
 * inih reads the lines (docs/DESIGN.md "Configuration": `key = value`,
 * whole-line `#`/`;` comments, blanks around keys and values dropped, a
 * UTF-8 BOM skipped);
 * it reads them through read_line, which counts them, so that each error
 * names its own line, and refuses a section line as it passes (inih
 * reports one only when a key follows it).
 */
struct reader {
	struct parse	*p;
	const char	*next;	/* the rest of the text */
	const char	*end;	/* its end (no NUL needed there) */
	int		 mid_line;	/* the last piece ended inside a line */
};

static char *
read_line(char *str, int num, void *stream)
{
	struct reader *r = stream;
	const char *s, *nl;
	size_t n;

	if (r->next == r->end)
		return NULL;
	nl = memchr(r->next, '\n', (size_t)(r->end - r->next));
	n = nl != NULL ? (size_t)(nl - r->next) + 1 : (size_t)(r->end - r->next);
	/* inih asks for a line in pieces, its buffer growing from
	 * ini_initial_alloc up to ini_max_line (above CONFIG_FILE_MAX, so a
	 * line always fits in the end): only a piece that starts a line
	 * counts one and may be a section. */
	if (n > (size_t)num - 1)
		n = (size_t)num - 1;
	memcpy(str, r->next, n);
	str[n] = '\0';
	r->next += n;
	if (!r->mid_line) {
		r->p->line++;
		for (s = str; *s == ' ' || *s == '\t'; s++)
			;
		if (*s == '[')
			section_line(r->p, s);
	}
	r->mid_line = n > 0 && str[n - 1] != '\n';
	return str;
}

/* inih's handler: one `name = value`.  1 to go on, 0 for an error (every
 * line is read also after one: only the first is reported). */
static int
on_pair(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;

	int hard = p->hard;

	if (section[0] != '\0') {
		if (p->source < 0)	/* its section line was refused */
			return 0;
		return set_source_key(p, name, value != NULL ? value : "") == 0;
	}
	/* A secret's soft error is no error to inih: the line it reports is
	 * then a hard error's, ours or its own. */
	return set_key(p, name, value != NULL ? value : "") == 0 ||
	    p->hard == hard;
}

static int parse_text(const char *, const char *, size_t, struct config *,
	    struct buf *, struct buf *);

static int
load(const char *path, struct config *c, struct buf *err, struct buf *all)
{
	char *text;
	size_t len = 0;
	int rc;

	if ((text = util_read_file(path, CONFIG_FILE_MAX, &len)) == NULL) {
		memset(c, 0, sizeof *c);
		buf_reset(err);
		if (errno == EFBIG)
			(void)buf_printf(err, "%s: cannot read: larger than %d KiB",
			    path, CONFIG_FILE_MAX / 1024);
		else
			(void)buf_printf(err, "%s: cannot read: %s", path,
			    errno == EINVAL ? "not a regular file" : errno == EILSEQ ?
			    "contains a NUL byte" : strerror(errno));
		return -1;
	}
	rc = parse_text(path, text, len, c, err, all);
	sodium_memzero(text, len);	/* it held secrets */
	free(text);
	return rc;
}

int
config_load_text(const char *path, const char *text, size_t len,
    struct config *c, struct buf *err)
{
	return parse_text(path, text, len, c, err, NULL);
}

/* config_load_text, with every error after the first appended to `all`
 * when it is not NULL (config_load_all). */
static int
parse_text(const char *path, const char *text, size_t len,
    struct config *c, struct buf *err, struct buf *all)
{
	struct parse p;
	struct reader rd;
	const struct key *k;
	char *log;
	int line;
	int rc = -1;

	memset(c, 0, sizeof *c);
	for (k = keys; k < keys + NKEYS; k++)
		if (k->kind == K_ENUM)
			*(int *)FIELD(c, k) = (int)k->def;
		else if (k->kind >= K_SECONDS && k->kind <= K_COUNT)
			*(int64_t *)FIELD(c, k) = k->def;
	memset(&p, 0, sizeof p);
	p.c = c;
	p.path = path;
	p.err = err;
	p.all = all;
	buf_init(&p.skipped, CONFIG_FILE_MAX);
	p.source = -1;
	buf_reset(err);

	if ((c->path = strdup(path)) == NULL) {
		(void)buf_printf(err, "%s: out of memory", path);
		goto out;
	}
	/* What util_read_file refuses in a file, refused in a text too. */
	if (len > CONFIG_FILE_MAX) {
		(void)buf_printf(err, "%s: cannot read: larger than %d KiB",
		    path, CONFIG_FILE_MAX / 1024);
		goto out;
	}
	if (memchr(text, '\0', len) != NULL) {
		(void)buf_printf(err, "%s: cannot read: contains a NUL byte", path);
		goto out;
	}
	/* Debian's inih takes its options at run time: exact values (no
	 * inline comments, no continuation lines), a line buffer as large as
	 * the largest file, every line read after an error.  Inline comments
	 * on would cut a quoted secret at a ';' after a blank
	 * (config_secret_unquote; test_config quoted_secret_byte_for_byte). */
	ini_allow_multiline = 0;
	ini_allow_inline_comments = 0;
	ini_use_stack = 0;
	ini_allow_realloc = 1;
	ini_max_line = CONFIG_FILE_MAX + 3;
	ini_initial_alloc = 256;
	ini_stop_on_first_error = 0;
	rd.p = &p;
	rd.next = text;
	rd.end = text + len;
	rd.mid_line = 0;
	line = ini_parse_stream(read_line, &rd, on_pair, &p);
	if (line == -2) {
		(void)buf_printf(err, "%s: out of memory", path);
		goto out;
	}
	/* A line that is not key = value (inih's own error, with no call of
	 * on_pair) before any error of ours is the first error. */
	/* inih's own error (a line that is not key = value, which reaches no
	 * on_pair) when it is not the line of our first hard error: inih
	 * reports the first line that failed, so an earlier one is its own. */
	if (line > 0 && (p.hard == 0 || line < p.hard_line) &&
	    (!p.failed || line < p.fail_line || !p.err_hard)) {
		buf_reset(err);
		(void)buf_printf(err, "%s:%d: not a key = value line", path, line);
		goto out;
	}
	/* Only secret lines failed and another secret loaded: the config
	 * loads; the lines that did not are kept for the receiver's log and
	 * check (lib/program/config.h, secret_skipped). */
	if (p.failed && p.hard == 0 && c->nsecrets > 0) {
		if ((c->secret_skipped = strdup(p.skipped.data ?
		    p.skipped.data : "")) == NULL) {
			buf_reset(err);
			(void)buf_printf(err, "%s: out of memory", path);
			goto out;
		}
		p.failed = 0;
		buf_reset(err);
		if (all != NULL)
			buf_reset(all);
	}
	if (p.failed && all == NULL)
		goto out;
	check_sources(&p);
	if (p.failed && all == NULL)
		goto out;
	for (k = keys; k < keys + NKEYS; k++)
		/* A file of [source] sections alone has no default source:
		 * its URL without /NAME answers 404 (docs/DESIGN.md
		 * "Sources"). */
		if ((k->flags & REQUIRED) && p.seen[k - keys] == 0 &&
		    !(k->kind == K_SECRET && c->nsources > 0)) {
			(void)buf_printf(p.failed ? all : err, "%s%s: %s: required%s",
			    p.failed ? "\n" : "", path, k->name,
			    k->kind == K_SECRET ? " (at least one whsec_… or "
			    "whpk_…)" : "");
			p.failed = 1;
			if (all == NULL)
				goto out;
		}
	if (p.failed)
		goto out;
	source_default(&c->default_source, c->secrets, c->nsecrets,
	    c->tolerance_s);
	rc = 0;
out:
	buf_free(&p.skipped);
	if (rc == -1 && all == NULL) {
		/* Keep `log`: the caller reports the error where the operator
		 * looks (program/config.h).  config_load_all keeps every key that
		 * loaded, for check's other findings. */
		log = c->log;
		c->log = NULL;
		config_free(c);
		c->log = log;
	}
	return rc;
}

int
config_load(const char *path, struct config *c, struct buf *err)
{
	return load(path, c, err, NULL);
}

int
config_load_all(const char *path, struct config *c, struct buf *err)
{
	struct buf more;
	int rc;

	buf_init(&more, 64 * 1024);
	if ((rc = load(path, c, err, &more)) == -1 && more.len > 0 &&
	    buf_append(err, more.data, more.len) == -1)
		(void)buf_printf(err, "\n(more errors)");
	buf_free(&more);
	return rc;
}

void
config_free(struct config *c)
{
	const struct key *k;
	size_t i;

	free(c->path);
	free(c->secret_skipped);
	for (k = keys; k < keys + NKEYS; k++)
		if (k->kind == K_STRING || k->kind == K_PATH || k->kind == K_URL)
			free(*(char **)FIELD(c, k));
	for (i = 0; i < c->nresources; i++) {
		free(c->resources[i].object_type);
		free(c->resources[i].path);
	}
	for (i = 0; i < c->nrefetch; i++)
		free(c->refetch[i]);
	for (i = 0; i < SIGNATURE_KEYS_MAX; i++)
		signature_key_wipe(&c->secrets[i]);
	for (i = 0; c->sources != NULL && i < CONFIG_SOURCES_MAX; i++)
		source_free(&c->sources[i]);
	for (i = 0; i < SCHEME_SECRETS_MAX; i++)
		scheme_secret_wipe(&c->default_source.secrets[i]);
	memset(&c->default_source, 0, sizeof c->default_source);
	free(c->sources);
	memset(c, 0, sizeof *c);
}

const struct config_source *
config_source_find(const struct config *c, const char *name)
{
	size_t i;

	for (i = 0; i < c->nsources; i++)
		if (strcmp(c->sources[i].name, name) == 0)
			return &c->sources[i];
	return NULL;
}

int
config_resource_path(const struct config *c, const char *object_type,
    char *out, size_t outsz)
{
	size_t i;
	int n;

	for (i = 0; i < c->nresources; i++)
		if (strcmp(c->resources[i].object_type, object_type) == 0) {
			n = snprintf(out, outsz, "%s", c->resources[i].path);
			return n < 0 || (size_t)n >= outsz ? -1 : 0;
		}
	n = snprintf(out, outsz, "%ss", object_type);
	return n < 0 || (size_t)n >= outsz ? -1 : 0;
}

int
config_wants_refetch(const struct config *c, const char *type,
    const char *object_type)
{
	size_t i;

	for (i = 0; i < c->nrefetch; i++)
		if ((type != NULL && fnmatch(c->refetch[i], type, 0) == 0) ||
		    (object_type != NULL &&
		    fnmatch(c->refetch[i], object_type, 0) == 0))
			return 1;
	return 0;
}

char *
config_api_token(const struct config *c, struct buf *err)
{
	const char *env = getenv("WEBHOOK_API_TOKEN");
	char *t;
	size_t n;
	FILE *f;

	buf_reset(err);
	if (c->api_token_file == NULL) {
		if (env == NULL || *env == '\0' || strlen(env) > CONFIG_TOKEN_MAX) {
			(void)buf_printf(err, "%s: api_token_file: not set, and "
			    "WEBHOOK_API_TOKEN is not in the environment", c->path);
			return NULL;
		}
		return strdup(env);
	}
	if ((f = fopen(c->api_token_file, "re")) == NULL) {
		(void)buf_printf(err, "%s: api_token_file: %s: %s", c->path,
		    c->api_token_file, strerror(errno));
		return NULL;
	}
	if ((t = calloc(1, CONFIG_TOKEN_MAX + 2)) == NULL) {
		fclose(f);
		return NULL;
	}
	n = fread(t, 1, CONFIG_TOKEN_MAX + 1, f);
	fclose(f);
	while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == '\r' ||
	    t[n - 1] == ' ' || t[n - 1] == '\t'))
		t[--n] = '\0';
	if (n == 0 || n > CONFIG_TOKEN_MAX || strcspn(t, "\r\n") != n) {
		sodium_memzero(t, CONFIG_TOKEN_MAX + 2);
		free(t);
		(void)buf_printf(err, "%s: api_token_file: %s: empty, longer than "
		    "4 KiB, or more than one line", c->path, c->api_token_file);
		return NULL;
	}
	return t;
}
