/*
 * config: the one INI-style file of docs/DESIGN.md "Configuration" (contract).
 *
 * `key = value` lines, whole-line `#` or `;` comments.  The top-level keys
 * come first; then `[source NAME]` sections may follow, each a sender with
 * its own signature scheme and secrets (docs/providers.md), no other
 * sections.  Values
 * are taken exactly (no inline comments: a handler command may contain
 * ';'); a `secret` may be written in double quotes, byte for byte
 * (config_secret_unquote).  Unknown keys are errors.  Every key, with its
 * kind, default and range, is one row of the table in program/config.c;
 * field names carry their unit (_s seconds, _ms milliseconds, _bytes).
 */
#ifndef WEBHOOK_CONFIG_H
#define WEBHOOK_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "lib/scheme/scheme.h"
#include "lib/common/signature.h"
#include "lib/common/util.h"

/* Largest config file, bytes: a config is a few hundred bytes, and it is
 * read into memory whole (lines of any length within it). */
#define CONFIG_FILE_MAX	(64 * 1024)
/* Shortest retention: the provider retries for up to 3 days. */
#define CONFIG_RETENTION_MIN	(3 * 86400)

enum config_sync { CONFIG_SYNC_FULL = 0, CONFIG_SYNC_NORMAL = 1 };

/* api_resource and refetch entries: a handful per provider. */
#define CONFIG_LIST_MAX	32
/* Most handlers one run hands events to at once (`jobs`, run --jobs):
 * drain/handler.h's HANDLER_JOBS_MAX, the most one poll serves. */
#define CONFIG_JOBS_MAX	64
/* Longest API token read from api_token_file, bytes. */
#define CONFIG_TOKEN_MAX	4096

/* api_resource = TYPE PATH: the API path of an object kind. */
struct config_resource {
	char	*object_type;	/* e.g. "client"; owned */
	char	*path;		/* e.g. "clients" or "crm/clients"; owned */
};

/* [source NAME] sections: a shop's or a developer's handful of senders. */
#define CONFIG_SOURCES_MAX	16
/* A source's NAME: a-z, 0-9, '_' and '-', the last segment of its URL. */
#define CONFIG_SOURCE_NAME_MAX	32

/*
 * One [source NAME] section: a sender, its scheme, its secrets as the
 * provider shows them (loaded for the scheme: scheme_secret_load), and
 * the scheme's parameters (scheme_params_init's defaults, then the
 * section's keys; the strings they point to are owned here).
 */
struct config_source {
	char			 name[CONFIG_SOURCE_NAME_MAX + 1];
	const struct scheme	*scheme;
	struct scheme_params	 params;
	struct scheme_locate	 locate;	/* id =, type =, time =, object = */
	struct scheme_secret	 secrets[SCHEME_SECRETS_MAX];
	size_t			 nsecrets;
	int			 line;	/* of its [source] line */
};

struct config {
	char			*path;		/* the file read; owned */
	char			*database;	/* owned */
	struct signature_key	 secrets[SIGNATURE_KEYS_MAX];
	size_t			 nsecrets;
	/* `secret` lines that could not load while another did (owned; NULL
	 * when every one loaded): "file:line: secret: why" each, '\n' between,
	 * never a value.  Such a line is skipped, not fatal: the secrets that
	 * loaded still verify (deliveries signed only with the skipped one
	 * get 401), the receiver logs each line when it loads the config,
	 * and `check` names each as a failure (docs/signing-secrets.md). */
	char			*secret_skipped;
	/* Defaults and ranges: the table in program/config.c
	 * (docs/DESIGN.md "Configuration"). */
	int64_t			 tolerance_s;	/* |now - webhook-timestamp| */
	int64_t			 max_body_bytes;	/* largest body taken */
	char			*handler;	/* owned; NULL when unset */
	int64_t			 handler_timeout_s;
	int64_t			 max_attempts;	/* failures before `dead` */
	int64_t			 jobs;		/* handlers at once in a run,
						 * 1..CONFIG_JOBS_MAX */
	int64_t			 retention_s;	/* bodies kept after finishing */
	int64_t			 settle_s;	/* wait before a new event is due */
	int64_t			 retry_base_s;	/* before the 1st retry */
	int64_t			 retry_max_s;	/* longest wait between retries */
	int64_t			 busy_timeout_ms;	/* SQLite's unit */
	int64_t			 body_timeout_s;	/* to read a body */
	enum config_sync	 synchronous;
	char			*log;		/* owned; NULL = stderr */
	/* The provider's API (drainer only; PROVIDER.md "Webhooks do not
	 * replace synchronisation"). */
	char			*api_url;	/* base, e.g. https://…/public/v1 */
	char			*api_token_file;	/* read by config_api_token */
	char			*api_ca_file;	/* CA bundle for https (PEM); NULL:
						 * api_ca_bundle() looks for the system's */
	int64_t			 api_timeout_s;	/* per request */
	struct config_resource	 resources[CONFIG_LIST_MAX];
	size_t			 nresources;
	/* refetch = GLOB…: object kinds or event types always refetched */
	char			*refetch[CONFIG_LIST_MAX];
	size_t			 nrefetch;
	/* [source NAME] sections, in file order; NULL when none (the
	 * top-level secrets are the default source, Standard Webhooks). */
	struct config_source	*sources;	/* owned, CONFIG_SOURCES_MAX */
	/* The top-level keys as the source "default", scheme standard:
	 * its secrets are `secrets` (nsecrets 0 in a file of sections
	 * alone).  Set by config_load; wiped by config_free. */
	struct config_source	 default_source;
	size_t			 nsources;
};

/* The [source NAME] section called `name`, or NULL. */
const struct config_source *config_source_find(const struct config *c,
	    const char *name);

/*
 * The API path for an object kind: its api_resource entry, else the kind
 * plus "s" ("client" → "clients").  Writes into out (size outsz); returns
 * 0, or -1 when it does not fit.
 */
int	config_resource_path(const struct config *c, const char *object_type,
	    char *out, size_t outsz);

/*
 * The API token, read when needed (the receiver never needs it, and its
 * user need not be able to read the file): api_token_file's one line, else
 * the environment's WEBHOOK_API_TOKEN.  Returns a string the caller wipes
 * (sodium_memzero) and frees, or NULL with the reason in err (which never
 * holds the token).
 */
char	*config_api_token(const struct config *c, struct buf *err);

/* Does a refetch pattern match this event type or object kind?  1 or 0. */
int	config_wants_refetch(const struct config *c, const char *type,
	    const char *object_type);

/*
 * Read and validate `path`.  On success returns 0 and *c holds the values
 * (free with config_free).  On failure returns -1, `err` holds one line
 * "file:line: key: what is wrong" (or "file: …" when no line applies) —
 * never a secret's value — and *c is empty but for c->log when the file
 * names one (any line of it: the error goes where the operator reads;
 * config_free it).  `database` and at least one
 * usable `secret` are required; `handler` is checked by the drainer.
 * A `secret` line that cannot load fails the file only when no other
 * secret loads; else it is skipped and named in c->secret_skipped.
 */
int	config_load(const char *path, struct config *c, struct buf *err)
	    __attribute__((warn_unused_result));
/*
 * The same from the file's text, `len` bytes at `text` (no NUL needed
 * after them; one among them is refused, as config_load refuses it in a
 * file): config_load reads the file and calls this.  `path` is only the
 * name in messages and what relative paths are relative to.  For the
 * fuzz target and tests, which need no file.
 */
int	config_load_text(const char *path, const char *text, size_t len,
	    struct config *c, struct buf *err)
	    __attribute__((warn_unused_result));

/* As config_load, but on failure err holds every error of the file, one
 * "file:line: key: what" line each, in file order (`check`: one pass
 * reports them all, docs/DESIGN.md "The operator's tools"), then the
 * required keys that are missing;
 * and c keeps every key that loaded (the defaults, or NULL, for the
 * others; c->path NULL when the file could not be read), so that check
 * can go on with the findings that do not need the rest.  config_free c
 * whatever the result. */
int	config_load_all(const char *path, struct config *c, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * A `secret` value as inih hands it over (docs/DESIGN.md "Configuration"):
 * one that starts with '"' is a quoted string, which ends at its closing
 * '"', the value's last byte; inside, \" is a quote and \\ a backslash,
 * every other byte is itself (blanks, '#', ';', '\'').  inih has dropped
 * the blanks around the whole value, never those inside the quotes (no
 * inline comments: parse_text's options).  Returns 0 when v is not quoted
 * (out untouched); 1 with the content in out, NUL-terminated, at most
 * outsz - 1 bytes; or -1 with *why static, saying how to write one (a
 * quote left open, a backslash before another byte, bytes after the
 * closing quote, longer than outsz - 1).  Neither v nor the content is
 * ever in *why; the caller wipes out (a secret).
 */
int	config_secret_unquote(const char *v, char *out, size_t outsz,
	    const char **why) __attribute__((warn_unused_result));

/* Release everything, wiping secrets.  Accepts a zeroed or freed config. */
void	config_free(struct config *c);

#endif
