/*
 * source: a [source NAME] section of webhook.conf.  See program/source.h;
 * the contract of its keys is docs/DESIGN.md "Sources" and docs/providers.md.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/program/source.h"
#include "lib/store/inbox.h"

#define DAY	86400

/* A source's keys, each a bit of `seen`; `only` names the scheme a key
 * belongs to (NULL: every scheme): the fields of struct scheme_params
 * that one provider reads.  tests/e2e_vps.py reads this table: every key
 * is on the webhook.conf page. */
static const struct source_key {
	const char	*name;
	const char	*only;
} source_keys[] = {
	{ "scheme", NULL }, { "secret", NULL }, { "tolerance", NULL },
	{ "url", "twilio" },
	{ "header", "hmac" }, { "prefix", "hmac" }, { "algorithm", "hmac" },
	{ "encoding", "hmac" }, { "timestamp_header", "hmac" },
	{ "separator", "hmac" },
	{ "id", NULL }, { "type", NULL }, { "time", NULL }, { "object", NULL },
	{ "object_type", NULL },
};
#define NSOURCE_KEYS	(sizeof source_keys / sizeof source_keys[0])

_Static_assert(NSOURCE_KEYS <= sizeof(unsigned) * 8,
    "each source key is a bit of `seen`");

/* The message of a refusal into why; returns -1. */
static int __attribute__((format(printf, 2, 3)))
refuse(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(why, SOURCE_WHY_MAX, fmt, ap);
	va_end(ap);
	return -1;
}

int
source_open(struct config *c, const char *s, int line, char *why)
{
	struct config_source *src;
	const char *name, *close, *after = NULL;
	size_t n, i;

	if ((close = strchr(s, ']')) != NULL)
		after = close + 1 + strspn(close + 1, " \t\r");
	if (strncmp(s, "[source ", 8) != 0 || close == NULL ||
	    (*after != '\n' && *after != '\0'))
		return refuse(why, "sections are not used in this file but "
		    "[source NAME]");
	for (name = s + 8; *name == ' '; name++)
		;
	/* The line's name is printed only once it is known to be a
	 * well-formed NAME. */
	n = (size_t)(close - name);
	if (n == 0 || n > CONFIG_SOURCE_NAME_MAX ||
	    strspn(name, "abcdefghijklmnopqrstuvwxyz0123456789_-") != n)
		return refuse(why, "[source NAME]: NAME is 1 to %d of a-z, "
		    "0-9, _ and -", CONFIG_SOURCE_NAME_MAX);
	if (n == strlen(INBOX_DEFAULT_SOURCE) &&
	    memcmp(name, INBOX_DEFAULT_SOURCE, n) == 0)
		return refuse(why, "[source default]: the top-level keys are "
		    "the default source; name this one otherwise");
	for (i = 0; i < c->nsources; i++)
		if (strlen(c->sources[i].name) == n &&
		    memcmp(c->sources[i].name, name, n) == 0)
			return refuse(why, "[source %.*s]: given twice "
			    "(line %d)", (int)n, name, c->sources[i].line);
	if (c->nsources == CONFIG_SOURCES_MAX)
		return refuse(why, "more than %d [source] sections",
		    CONFIG_SOURCES_MAX);
	if (c->sources == NULL && (c->sources = calloc(CONFIG_SOURCES_MAX,
	    sizeof *c->sources)) == NULL)
		return refuse(why, "out of memory");
	src = &c->sources[c->nsources];
	memcpy(src->name, name, n);
	src->name[n] = '\0';
	src->line = line;
	return (int)c->nsources++;
}

/* A string parameter of a source, owned by it (source_free). */
static int
set_string(const struct config_source *src, const char **field, const char *v,
    char *why)
{
	char *copy;

	if ((copy = strdup(v)) == NULL)
		return refuse(why, "[source %s]: out of memory", src->name);
	*field = copy;
	return 0;
}

/* secret: taken exactly as written (GitHub's may hold spaces and quotes),
 * or byte for byte in double quotes (config_secret_unquote: WooCommerce's
 * may begin or end with a space, or hold '#' and ';'); only the
 * commonest pastes are named. */
static int
add_secret(struct config_source *src, const char *v, char *why)
{
	struct scheme_secret *to = &src->secrets[src->nsecrets];
	size_t vl = strlen(v);
	char q[SCHEME_SECRET_MAX + 2];
	const char *lib_why, *text = v;
	int quoted, rc = -1;

	if (src->nsecrets == SCHEME_SECRETS_MAX)
		return refuse(why, "[source %s]: secret: more than %d",
		    src->name, SCHEME_SECRETS_MAX);
	if ((quoted = config_secret_unquote(v, q, sizeof q, &lib_why)) == -1) {
		(void)refuse(why, "[source %s]: secret: %s", src->name, lib_why);
		goto out;
	}
	if (quoted)
		text = q;
	else if (vl >= 2 && v[0] == '\'' && v[vl - 1] == '\'') {
		(void)refuse(why, "[source %s]: secret: in single quotes: "
		    "drop them, or if they are the secret's, write it in "
		    "double quotes (secret = \"'...'\")", src->name);
		goto out;
	}
	if (strstr(text, "REPLACE_WITH") != NULL) {
		(void)refuse(why, "[source %s]: secret: still the example's "
		    "placeholder", src->name);
		goto out;
	}
	if ((quoted ? scheme_secret_load_quoted : scheme_secret_load)(
	    src->scheme, text, to, &lib_why) == -1) {
		(void)refuse(why, "[source %s]: secret: %s", src->name,
		    lib_why);
		goto out;
	}
	src->nsecrets++;
	rc = 0;
out:
	sodium_memzero(q, sizeof q);
	return rc;
}

/* id, type, time, object, object_type: a header name (a token, RFC
 * 9110) or a JSON pointer (starting with '/'), read when a delivery
 * comes. */
static int
set_locate(struct config_source *src, const char *key, const char *v,
    char *why)
{
	struct scheme_locate *l = &src->locate;
	size_t vl = strlen(v);

	if (v[0] != '/' && (vl > 64 || strspn(v, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_") != vl))
		return refuse(why, "[source %s]: %s: neither a header name nor "
		    "a JSON pointer (\"/data/id\")", src->name, key);
	return set_string(src, strcmp(key, "id") == 0 ? &l->id :
	    strcmp(key, "type") == 0 ? &l->type :
	    strcmp(key, "time") == 0 ? &l->time :
	    strcmp(key, "object") == 0 ? &l->object : &l->object_type, v, why);
}

/* "scheme: not one of standard stripe …", the table's names in order. */
static int
scheme_unknown(const struct config_source *src, char *why)
{
	char names[SCHEME_MAX * 16] = "";
	const struct scheme *s;
	size_t i, n = 0;

	for (i = 0; (s = scheme_at(i)) != NULL && n < sizeof names; i++)
		n += (size_t)snprintf(names + n, sizeof names - n, " %s",
		    s->name);
	return refuse(why, "[source %s]: scheme: not one of%s", src->name,
	    names);
}

int
source_set(struct config_source *src, unsigned *seen, const char *name,
    const char *v, char *why)
{
	const struct source_key *k = NULL;
	struct scheme_params *sp = &src->params;
	size_t i;
	int64_t n;

	for (i = 0; i < NSOURCE_KEYS && k == NULL; i++)
		if (strcmp(name, source_keys[i].name) == 0)
			k = &source_keys[i];
	if (k == NULL)
		return SOURCE_UNKNOWN_KEY;
	if (*v == '\0')
		return refuse(why, "[source %s]: %s: empty value", src->name,
		    k->name);
	i = (size_t)(k - source_keys);
	if (strcmp(k->name, "scheme") != 0) {
		if (src->scheme == NULL)
			return refuse(why, "[source %s]: %s: put scheme = "
			    "first", src->name, k->name);
		if (k->only != NULL && strcmp(src->scheme->name, k->only) != 0)
			return refuse(why, "[source %s]: %s: only for scheme = "
			    "%s", src->name, k->name, k->only);
	}
	if (strcmp(k->name, "secret") == 0)	/* repeatable: rotation */
		return add_secret(src, v, why);
	if (*seen & (1u << i))
		return refuse(why, "[source %s]: %s: given twice", src->name,
		    k->name);
	*seen |= 1u << i;
	if (strcmp(k->name, "scheme") == 0) {
		if ((src->scheme = scheme_find(v)) == NULL)
			return scheme_unknown(src, why);
		scheme_params_init(src->scheme, sp);
		/* NULL means "." (scheme.h); every string here is owned. */
		sp->separator = NULL;
		return 0;
	}
	if (strcmp(k->name, "tolerance") == 0) {
		if (util_parse_duration(v, DAY, &n) == -1)
			return refuse(why, "[source %s]: tolerance: not a "
			    "duration of 0 (no window) to 1d", src->name);
		sp->tolerance = n;
		return 0;
	}
	if (strcmp(k->name, "algorithm") == 0) {
		sp->alg = strcmp(v, "sha1") == 0 ? SCHEME_SHA1 :
		    strcmp(v, "sha256") == 0 ? SCHEME_SHA256 :
		    strcmp(v, "sha512") == 0 ? SCHEME_SHA512 : 0;
		if (sp->alg == 0)
			return refuse(why, "[source %s]: algorithm: not one "
			    "of sha1 sha256 sha512", src->name);
		return 0;
	}
	if (strcmp(k->name, "encoding") == 0) {
		sp->encoding = strcmp(v, "hex") == 0 ? SCHEME_HEX :
		    strcmp(v, "base64") == 0 ? SCHEME_BASE64 : 0;
		if (sp->encoding == 0)
			return refuse(why, "[source %s]: encoding: neither hex "
			    "nor base64", src->name);
		return 0;
	}
	if (strcmp(k->name, "id") == 0 || strcmp(k->name, "type") == 0 ||
	    strcmp(k->name, "time") == 0 || strcmp(k->name, "object") == 0 ||
	    strcmp(k->name, "object_type") == 0)
		return set_locate(src, k->name, v, why);
	return set_string(src, strcmp(k->name, "url") == 0 ? &sp->url :
	    strcmp(k->name, "header") == 0 ? &sp->header :
	    strcmp(k->name, "prefix") == 0 ? &sp->prefix :
	    strcmp(k->name, "timestamp_header") == 0 ? &sp->timestamp_header :
	    &sp->separator, v, why);
}

int
source_check(const struct config_source *src, char *why)
{
	const char *lib_why;

	if (src->scheme == NULL)
		return refuse(why, "[source %s]: scheme: required", src->name);
	if (src->nsecrets == 0)
		return refuse(why, "[source %s]: secret: required (as the "
		    "provider's dashboard shows it)", src->name);
	if (scheme_params_check(src->scheme, &src->params, &lib_why) == -1)
		return refuse(why, "[source %s]: %s", src->name, lib_why);
	return 0;
}

void
source_free(struct config_source *src)
{
	struct scheme_params *sp = &src->params;
	size_t j;

	/* The parameters' strings are the source's own copies (set_string). */
	free((char *)sp->url);
	free((char *)sp->header);
	free((char *)sp->prefix);
	free((char *)sp->timestamp_header);
	free((char *)sp->separator);
	free((char *)src->locate.id);
	free((char *)src->locate.type);
	free((char *)src->locate.time);
	free((char *)src->locate.object);
	free((char *)src->locate.object_type);
	for (j = 0; j < SCHEME_SECRETS_MAX; j++)
		scheme_secret_wipe(&src->secrets[j]);
	memset(src, 0, sizeof *src);
}

void
source_default(struct config_source *d, const struct signature_key *keys,
    size_t nkeys, int64_t tolerance_s)
{
	size_t i;

	snprintf(d->name, sizeof d->name, "%s", INBOX_DEFAULT_SOURCE);
	d->scheme = scheme_find("standard");
	scheme_params_init(d->scheme, &d->params);
	d->params.tolerance = tolerance_s;
	for (i = 0; i < nkeys && i < SCHEME_SECRETS_MAX; i++) {
		struct scheme_secret *s = &d->secrets[i];

		memcpy(s->key, keys[i].key, keys[i].keylen);
		s->len = keys[i].keylen;
		s->ed25519 = keys[i].kind == SIGNATURE_ED25519;
		memcpy(s->fingerprint, keys[i].fingerprint,
		    sizeof s->fingerprint);
	}
	d->nsecrets = i;
}
