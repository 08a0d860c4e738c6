/*
 * config: DESIGN.md "Configuration" read with inih.  See config.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ini.h>
#include <sodium.h>

#include "config.h"

struct parse {
	struct config	*c;
	char		 key[80];	/* key of the first error, escaped (inih's
					 * buffer is gone once parsing ends) */
	const char	*what;	/* static text of the first error */
	int		 seen_handler, seen_database, seen_log, seen_api_url,
			 seen_token, seen_ca;
	char		 seen_keys[512];	/* " key key …" of single-valued keys */
};

static int
fail(struct parse *p, const char *key, const char *what)
{
	if (p->what == NULL) {
		/* Quote the key only when it looks like a key name: inih splits
		 * "whsec_…=" at its base64 padding, so a line holding only a
		 * secret would otherwise be printed as a "key". */
		size_t n = strlen(key), i;
		int plain = n > 0 && n <= 32 && strncmp(key, "whsec_", 6) != 0 &&
		    strncmp(key, "whpk_", 5) != 0;
		for (i = 0; i < n && plain; i++)
			plain = (key[i] >= 'a' && key[i] <= 'z') || key[i] == '_' ||
			    (key[i] >= 'A' && key[i] <= 'Z') ||
			    (key[i] >= '0' && key[i] <= '9');
		if (plain)
			util_escape(key, n, p->key, sizeof p->key);
		else
			snprintf(p->key, sizeof p->key, "(a line that is not key = value)");
		p->what = what;
	}
	return 0;	/* inih: error on this line */
}

static int
set_string(struct parse *p, char **dst, int *seen, const char *key,
    const char *value)
{
	if (*seen)
		return fail(p, key, "given twice");
	*seen = 1;
	if ((*dst = strdup(value)) == NULL)
		return fail(p, key, "out of memory");
	return 1;
}

/* inih handler: one key = value.  Returns 1 to go on, 0 for an error. */
static int
on_pair(void *user, const char *section, const char *name, const char *value)
{
	struct parse *p = user;
	struct config *c = p->c;
	const char *why;
	int64_t v;

	if (section[0] != '\0')
		return fail(p, name, "sections are not used in this file");
	if (value == NULL || value[0] == '\0')
		return fail(p, name, "empty value");

	/* Every key but secret, api_resource and refetch is given once: a
	 * second line is a mistake whichever of the two was meant. */
	if (strcmp(name, "secret") != 0 && strcmp(name, "api_resource") != 0 &&
	    strcmp(name, "refetch") != 0 && strlen(name) < 64) {
		char needle[70];
		snprintf(needle, sizeof needle, " %s ", name);
		if (strstr(p->seen_keys, needle) != NULL)
			return fail(p, name, "given twice");
		if (strlen(p->seen_keys) + strlen(needle) < sizeof p->seen_keys) {
			if (p->seen_keys[0] == '\0')
				p->seen_keys[0] = ' ';
			strncat(p->seen_keys, needle + 1,
			    sizeof p->seen_keys - strlen(p->seen_keys) - 1);
		}
	}
#define KEY(k) (strcmp(name, k) == 0)
	if (KEY("database"))
		return set_string(p, &c->database, &p->seen_database, "database",
		    value);
	if (KEY("handler"))
		return set_string(p, &c->handler, &p->seen_handler, "handler",
		    value);
	if (KEY("log"))
		return set_string(p, &c->log, &p->seen_log, "log", value);
	if (KEY("secret")) {
		if (strpbrk(value, " \t") != NULL)
			return fail(p, "secret", "contains a space: a comment must "
			    "be on a line of its own");
		if (c->nsecrets == SIGNATURE_KEYS_MAX)
			return fail(p, "secret", "more than 8 secrets");
		if (signature_key_parse(value, &c->secrets[c->nsecrets],
		    &why) == -1)
			return fail(p, "secret", why);
		c->nsecrets++;
		return 1;
	}
	if (KEY("tolerance")) {
		if (util_parse_duration(value, 86400, &c->tolerance_s) == -1 ||
		    c->tolerance_s < 1)
			return fail(p, "tolerance",
			    "not a duration between 1s and 1d");
		return 1;
	}
	if (KEY("max_body")) {
		/* 64 MiB: the body is held in memory while it is verified. */
		if (util_parse_int(value, 1, 64 << 20, &c->max_body_bytes) == -1)
			return fail(p, "max_body",
			    "not a byte count between 1 and 67108864");
		return 1;
	}
	if (KEY("handler_timeout")) {
		if (util_parse_duration(value, 86400, &c->handler_timeout_s) == -1 ||
		    c->handler_timeout_s < 1)
			return fail(p, "handler_timeout",
			    "not a duration between 1s and 1d");
		return 1;
	}
	if (KEY("max_attempts")) {
		if (util_parse_int(value, 1, 1000, &c->max_attempts) == -1)
			return fail(p, "max_attempts",
			    "not a whole number between 1 and 1000");
		return 1;
	}
	if (KEY("retention")) {
		if (util_parse_duration(value, 3650 * 86400LL, &c->retention_s) == -1)
			return fail(p, "retention", "not a duration (e.g. 7d)");
		if (c->retention_s < CONFIG_RETENTION_MIN)
			return fail(p, "retention", "below 3d, the provider's "
			    "retry period: a late retry would be taken as new");
		return 1;
	}
	if (KEY("settle")) {
		if (util_parse_duration(value, 3600, &c->settle_s) == -1)
			return fail(p, "settle", "not a duration between 0s and 1h");
		return 1;
	}
	if (KEY("retry_base")) {
		if (util_parse_duration(value, 86400, &c->retry_base_s) == -1 ||
		    c->retry_base_s < 1)
			return fail(p, "retry_base", "not a duration between 1s and 1d");
		return 1;
	}
	if (KEY("retry_max")) {
		if (util_parse_duration(value, 7 * 86400, &c->retry_max_s) == -1 ||
		    c->retry_max_s < 1)
			return fail(p, "retry_max", "not a duration between 1s and 7d");
		return 1;
	}
	if (KEY("api_url")) {
		if (strncmp(value, "https://", 8) != 0 &&
		    strncmp(value, "http://", 7) != 0)
			return fail(p, "api_url", "not an http:// or https:// URL");
		return set_string(p, &c->api_url, &p->seen_api_url, "api_url",
		    value);
	}
	if (KEY("api_token_file"))
		return set_string(p, &c->api_token_file, &p->seen_token,
		    "api_token_file", value);
	if (KEY("api_ca_file"))
		return set_string(p, &c->api_ca_file, &p->seen_ca, "api_ca_file",
		    value);
	if (KEY("api_timeout")) {
		if (util_parse_duration(value, 300, &c->api_timeout_s) == -1 ||
		    c->api_timeout_s < 1)
			return fail(p, "api_timeout", "not a duration between 1s and 5m");
		return 1;
	}
	if (KEY("api_resource")) {
		const char *sp = strchr(value, ' ');
		struct config_resource *r;
		if (sp == NULL || sp == value || sp[1] == '\0' ||
		    strchr(sp + 1, ' ') != NULL)
			return fail(p, "api_resource", "not TYPE PATH (e.g. "
			    "\"client crm/clients\")");
		if (c->nresources == CONFIG_LIST_MAX)
			return fail(p, "api_resource", "more than 32 entries");
		r = &c->resources[c->nresources];
		if ((r->object_type = strndup(value, (size_t)(sp - value))) == NULL ||
		    (r->path = strdup(sp + 1)) == NULL)
			return fail(p, "api_resource", "out of memory");
		c->nresources++;
		return 1;
	}
	if (KEY("refetch")) {
		/* One or more globs separated by spaces. */
		const char *q = value;
		while (*q != '\0') {
			size_t n = strcspn(q, " ");
			if (n > 0) {
				if (c->nrefetch == CONFIG_LIST_MAX)
					return fail(p, "refetch", "more than 32 patterns");
				if ((c->refetch[c->nrefetch++] = strndup(q, n)) == NULL)
					return fail(p, "refetch", "out of memory");
			}
			q += n;
			while (*q == ' ')
				q++;
		}
		return 1;
	}
	if (KEY("body_timeout")) {
		/* Below the provider's 15 s: a body still arriving after that
		 * is a delivery the provider already counts as failed. */
		if (util_parse_duration(value, 60, &c->body_timeout_s) == -1 ||
		    c->body_timeout_s < 1)
			return fail(p, "body_timeout", "not a duration between 1s and 1m");
		return 1;
	}
	if (KEY("busy_timeout")) {
		/* Seconds; the provider gives up at 15 s, so stay well below. */
		if (util_parse_duration(value, 10, &v) == -1 || v < 1)
			return fail(p, "busy_timeout",
			    "not a duration between 1s and 10s");
		c->busy_timeout_ms = v * 1000;
		return 1;
	}
	if (KEY("synchronous")) {
		if (strcmp(value, "FULL") == 0 || strcmp(value, "full") == 0)
			c->synchronous = CONFIG_SYNC_FULL;
		else if (strcmp(value, "NORMAL") == 0 || strcmp(value, "normal") == 0)
			c->synchronous = CONFIG_SYNC_NORMAL;
		else
			return fail(p, "synchronous", "neither FULL nor NORMAL");
		return 1;
	}
#undef KEY
	return fail(p, name, "unknown key");
}

/* Read the whole file, refusing more than CONFIG_FILE_MAX bytes. */
static char *
slurp(const char *path, const char **what)
{
	struct stat st;
	char *text = NULL;
	size_t got = 0;
	ssize_t n;
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		*what = strerror(errno);
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		*what = "not a regular file";
		goto out;
	}
	if (st.st_size > CONFIG_FILE_MAX) {
		*what = "larger than 64 KiB";
		goto out;
	}
	if ((text = malloc((size_t)st.st_size + 1)) == NULL) {
		*what = "out of memory";
		goto out;
	}
	while (got < (size_t)st.st_size &&
	    (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	text[got] = '\0';
	if (memchr(text, '\0', got) != NULL) {
		*what = "contains a NUL byte";
		free(text);
		text = NULL;
	}
out:
	close(fd);
	return text;
}

/* The number of the first line whose first non-blank is '[', or 0. */
static int
section_line(const char *text)
{
	int line = 1, start = 1;

	for (; *text != '\0'; text++) {
		if (*text == '\n') {
			line++;
			start = 1;
		} else if (start && *text == '[') {
			return line;
		} else if (*text != ' ' && *text != '\t' && *text != '\r') {
			start = 0;
		}
	}
	return 0;
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

int
config_load(const char *path, struct config *c, struct buf *err)
{
	struct parse p;
	const char *what = NULL;
	char *text = NULL;
	int line, rc = -1;

	memset(c, 0, sizeof *c);
	c->tolerance_s = 300;
	c->max_body_bytes = 1048576;
	c->handler_timeout_s = 60;
	c->max_attempts = 12;
	c->retention_s = 7 * 86400;
	c->settle_s = 2;
	c->retry_base_s = 30;
	c->retry_max_s = 6 * 3600;
	c->api_timeout_s = 10;
	c->busy_timeout_ms = 5000;
	c->body_timeout_s = 10;
	c->synchronous = CONFIG_SYNC_FULL;
	memset(&p, 0, sizeof p);
	p.c = c;
	buf_reset(err);

	if ((c->path = strdup(path)) == NULL) {
		(void)buf_printf(err, "%s: out of memory", path);
		goto out;
	}
	if ((text = slurp(path, &what)) == NULL) {
		(void)buf_printf(err, "%s: cannot read: %s", path, what);
		goto out;
	}
	/* inih reports a section line only when a key follows it; this file
	 * has no sections, so refuse any line that opens one. */
	if ((line = section_line(text)) != 0) {
		(void)buf_printf(err, "%s:%d: sections are not used in this file",
		    path, line);
		goto out;
	}
	/* Debian's inih takes these at run time: exact values, and a line
	 * buffer as large as the largest file so no line is ever cut. */
	ini_allow_multiline = 0;
	ini_allow_inline_comments = 0;
	ini_use_stack = 0;
	ini_allow_realloc = 1;
	ini_max_line = CONFIG_FILE_MAX + 3;
	ini_initial_alloc = 256;
	/* Every line is read, also after an error (only the first is
	 * reported): a `log` line below a typo still names where to say so. */
	ini_stop_on_first_error = 0;
	line = ini_parse_string(text, on_pair, &p);
	if (line != 0 || p.what != NULL) {
		if (line == -2)
			(void)buf_printf(err, "%s: out of memory", path);
		else if (p.what != NULL)
			(void)buf_printf(err, "%s:%d: %s: %s", path, line, p.key,
			    p.what);
		else
			(void)buf_printf(err, "%s:%d: not a key = value line",
			    path, line);
		goto out;
	}
	if (c->database == NULL) {
		(void)buf_printf(err, "%s: database: required", path);
		goto out;
	}
	if (c->nsecrets == 0) {
		(void)buf_printf(err, "%s: secret: required (at least one "
		    "whsec_… or whpk_…)", path);
		goto out;
	}
	if (resolve_against(path, &c->database) == -1 ||
	    (c->log != NULL && resolve_against(path, &c->log) == -1) ||
	    (c->api_token_file != NULL &&
	    resolve_against(path, &c->api_token_file) == -1) ||
	    (c->api_ca_file != NULL &&
	    resolve_against(path, &c->api_ca_file) == -1)) {
		(void)buf_printf(err, "%s: out of memory", path);
		goto out;
	}
	rc = 0;
out:
	if (text != NULL) {
		sodium_memzero(text, strlen(text));	/* it held secrets */
		free(text);
	}
	if (rc == -1) {
		/* Keep `log`: the caller reports the error where the operator
		 * looks (config.h). */
		char *log = c->log;
		c->log = NULL;
		config_free(c);
		c->log = log;
		if (c->log != NULL && resolve_against(path, &c->log) == -1) {
			free(c->log);
			c->log = NULL;
		}
	}
	return rc;
}

void
config_free(struct config *c)
{
	size_t i;

	free(c->path);
	free(c->database);
	free(c->handler);
	free(c->log);
	free(c->api_url);
	free(c->api_token_file);
	free(c->api_ca_file);
	for (i = 0; i < c->nresources; i++) {
		free(c->resources[i].object_type);
		free(c->resources[i].path);
	}
	for (i = 0; i < c->nrefetch; i++)
		free(c->refetch[i]);
	for (i = 0; i < SIGNATURE_KEYS_MAX; i++)
		signature_key_wipe(&c->secrets[i]);
	memset(c, 0, sizeof *c);
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
