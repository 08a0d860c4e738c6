/*
 * fuzz/config: lib/program/config.c — the config file parser, inih included, by
 * config_load_text (what config_load runs on the file's text; no file is
 * written, so a run costs what parsing costs).
 *
 * Input: the file's text, whole.
 *
 * Properties (abort when broken):
 * - a loaded config has its required keys, every number within its row's
 *   range, every list within its cap, and relative paths resolved against
 *   the file's directory; it leaves no error text; each secret line it
 *   skipped (secret_skipped) is named as an error line is, below;
 * - a refused one leaves one line "FILE:LINE: …" or "FILE: …" and an
 *   empty config (but for `log`); LINE is a line of the input, and one
 *   refused as a section starts with '[';
 * - no error text holds any 8-byte run of a whsec_ secret of the input
 *   (the base64 after "whsec_"), unless those 8 bytes are also text of
 *   the input outside every secret (a key, echoed) or words the messages
 *   themselves contain (below).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/program/config.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)

/* The file's name in messages: no run of 8 base64 characters in it. */
#define PATH	"/fz/w.conf"

/*
 * Every run of 8 or more base64 characters that lib/program/config.c and
 * lib/common/signature.c print of their own (key names, words of messages, the
 * largest max_body): an error may show these whatever the secrets are.
 */
static const char vocabulary[] =
	" attempts contains crm/clients database duration environment"
	" patterns provider required resource retention sections synchronous"
	" tolerance signature standard timestamp 67108864 ";

static int
b64char(unsigned char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
	    (c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
}

/* Does the window w (8 bytes) occur in data outside the secret runs
 * (in_secret[i] nonzero for the bytes of one)? */
static int
outside_secrets(const uint8_t *data, size_t size, const unsigned char *in_secret,
    const char *w)
{
	size_t i, j;

	const uint8_t *at = data, *hit;

	while ((hit = memmem(at, size - (size_t)(at - data), w, 8)) != NULL) {
		i = (size_t)(hit - data);
		for (j = i; j < i + 8 && !in_secret[j]; j++)
			;
		if (j == i + 8)
			return 1;
		at = hit + 1;
	}
	return 0;
}

static void
check_secrets(const uint8_t *data, size_t size, const char *err)
{
	static const char prefix[] = "whsec_";
	unsigned char *in_secret;
	const uint8_t *p;
	size_t i, start, end;
	char w[9];

	if (memmem(data, size, prefix, 6) == NULL)
		return;
	if ((in_secret = calloc(1, size + 1)) == NULL)
		abort();
	for (p = data; (p = memmem(p, size - (size_t)(p - data), prefix, 6)) !=
	    NULL; p++)
		for (end = (size_t)(p - data) + 6; end < size &&
		    b64char(data[end]); end++)
			in_secret[end] = 1;
	for (i = 0; i + 6 <= size; i++) {
		if (data[i] != 'w' || memcmp(data + i, prefix, 6) != 0)
			continue;
		start = i + 6;
		for (end = start; end < size && b64char(data[end]); end++)
			;
		for (p = data + start; p + 8 <= data + end; p++) {
			memcpy(w, p, 8);
			w[8] = '\0';
			if (strstr(err, w) != NULL && strstr(vocabulary, w) == NULL &&
			    !outside_secrets(data, size, in_secret, w))
				abort();
		}
	}
	free(in_secret);
}

/*
 * An error that names a line names one of the input's lines (from 1), and
 * one refusing a section names a line that starts with one (after
 * blanks).
 */
static void
check_line(const uint8_t *data, size_t size, const char *err)
{
	const char *at = err + strlen(PATH ":");
	const uint8_t *p = data, *end = data + size, *nl;
	long line = 0, l;
	char *stop;

	if (*at < '0' || *at > '9')
		return;		/* "FILE: …", no line */
	line = strtol(at, &stop, 10);
	CHECK(*stop == ':' && line >= 1);
	for (l = 1; l < line; l++) {
		nl = memchr(p, '\n', (size_t)(end - p));
		CHECK(nl != NULL && nl + 1 < end);	/* line `line` exists */
		p = nl + 1;
	}
	if (strstr(err, "sections are not used") != NULL) {
		while (p < end && (*p == ' ' || *p == '\t'))
			p++;
		CHECK(p < end && *p == '[');
	}
}

/* Relative paths are resolved against the file's directory. */
static void
check_path(const char *p)
{
	CHECK(p == NULL || p[0] == '/');
}

static void
check_loaded(const struct config *c)
{
	size_t i;

	CHECK(c->path != NULL && strcmp(c->path, PATH) == 0);
	CHECK(c->database != NULL);
	check_path(c->database);
	check_path(c->log);
	check_path(c->api_token_file);
	check_path(c->api_ca_file);
	/* No top-level secret only for a file of [source] sections. */
	CHECK((c->nsecrets >= 1 || c->nsources >= 1) &&
	    c->nsecrets <= SIGNATURE_KEYS_MAX);
	for (i = 0; i < c->nsecrets; i++)
		CHECK(c->secrets[i].keylen >= 1 &&
		    c->secrets[i].keylen <= SIGNATURE_KEY_MAX);
	CHECK(c->tolerance_s >= 1 && c->tolerance_s <= 86400);
	CHECK(c->max_body_bytes >= 1 && c->max_body_bytes <= (64 << 20));
	CHECK(c->handler_timeout_s >= 1 && c->handler_timeout_s <= 86400);
	CHECK(c->max_attempts >= 1 && c->max_attempts <= 1000);
	CHECK(c->retention_s >= CONFIG_RETENTION_MIN &&
	    c->retention_s <= 3650 * 86400LL);
	CHECK(c->settle_s >= 0 && c->settle_s <= 3600);
	CHECK(c->retry_base_s >= 1 && c->retry_base_s <= 86400);
	CHECK(c->retry_max_s >= 1 && c->retry_max_s <= 7 * 86400);
	CHECK(c->busy_timeout_ms >= 1000 && c->busy_timeout_ms <= 10000 &&
	    c->busy_timeout_ms % 1000 == 0);
	CHECK(c->body_timeout_s >= 1 && c->body_timeout_s <= 60);
	CHECK(c->synchronous == CONFIG_SYNC_FULL ||
	    c->synchronous == CONFIG_SYNC_NORMAL);
	CHECK(c->api_timeout_s >= 1 && c->api_timeout_s <= 300);
	CHECK(c->api_url == NULL || strncmp(c->api_url, "http://", 7) == 0 ||
	    strncmp(c->api_url, "https://", 8) == 0);
	CHECK(c->nresources <= CONFIG_LIST_MAX);
	for (i = 0; i < c->nresources; i++)
		CHECK(c->resources[i].object_type[0] != '\0' &&
		    strchr(c->resources[i].object_type, ' ') == NULL &&
		    c->resources[i].path[0] != '\0' &&
		    strchr(c->resources[i].path, ' ') == NULL);
	CHECK(c->nrefetch <= CONFIG_LIST_MAX);
	for (i = 0; i < c->nrefetch; i++)
		CHECK(c->refetch[i][0] != '\0' &&
		    strchr(c->refetch[i], ' ') == NULL);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config c;
	struct buf err;
	const char *e;
	int rc;

	buf_init(&err, BUF_ERR_MAX);
	rc = config_load_text(PATH, (const char *)data, size, &c, &err);
	e = err.data != NULL ? err.data : "";
	if (rc == 0) {
		CHECK(e[0] == '\0');
		check_loaded(&c);
		/* Secret lines skipped beside a loaded one: each an error
		 * line of its own, as safe as one. */
		for (const char *l = c.secret_skipped, *nl; l != NULL;
		    l = nl != NULL ? nl + 1 : NULL) {
			nl = strchr(l, '\n');
			CHECK(strncmp(l, PATH ":", strlen(PATH ":")) == 0);
			CHECK(strstr(l, ": secret: ") != NULL);
			check_line(data, size, l);
		}
		if (c.secret_skipped != NULL)
			check_secrets(data, size, c.secret_skipped);
	} else {
		CHECK(rc == -1);
		CHECK(strncmp(e, PATH ":", strlen(PATH ":")) == 0);
		CHECK(strchr(e, '\n') == NULL);
		CHECK(c.path == NULL && c.database == NULL && c.handler == NULL &&
		    c.nsecrets == 0 && c.nresources == 0 && c.nrefetch == 0);
		check_path(c.log);
		check_line(data, size, e);
		check_secrets(data, size, e);
	}
	config_free(&c);
	buf_free(&err);
	return 0;
}
