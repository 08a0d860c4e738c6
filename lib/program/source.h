/*
 * source: one [source NAME] section of webhook.conf (docs/DESIGN.md
 * "Sources", docs/providers.md) -- its section line, its `key = value`
 * lines, the check once the file is read, and its free.
 *
 * lib/program/config.c reads the file and calls these for each section
 * line and each line below one; the struct is config.h's config_source.
 * A message in `why` (SOURCE_WHY_MAX bytes, always NUL-terminated) names
 * the source and the key but never the file or the line: config.c adds
 * those.  A value is never echoed in a message (it may be a secret).
 */
#ifndef PROGRAM_SOURCE_H
#define PROGRAM_SOURCE_H

#include <stddef.h>

#include "lib/program/config.h"

#define SOURCE_WHY_MAX	256

/*
 * A section line, `s` at its '[' (blanks before it already skipped, the
 * line's '\n' may follow): "[source NAME]" adds c->sources[n] (allocated
 * on the first, CONFIG_SOURCES_MAX in all) with `line` as its line and
 * returns n; anything else, a NAME out of its alphabet, "default", a NAME
 * given twice or one too many returns -1 with why.
 */
int	source_open(struct config *c, const char *s, int line, char *why);

/*
 * One `name = value` line of the section `src`.  `seen` holds the
 * section's single-valued keys given so far (0 after source_open).
 * Returns 0; SOURCE_UNKNOWN_KEY when `name` is no source's key (the
 * caller says whether it is a top-level key, which it knows); or -1 with
 * why (an empty value, a key before `scheme =`, a key of another scheme,
 * a key given twice, a value the key does not take, a secret the scheme
 * cannot load, out of memory).  The strings set are owned by `src`.
 */
#define SOURCE_UNKNOWN_KEY	1
int	source_set(struct config_source *src, unsigned *seen, const char *name,
	    const char *value, char *why);

/* Once the file is read: src has its scheme, a secret, and what its
 * scheme needs (scheme_params_check).  0, or -1 with why. */
int	source_check(const struct config_source *src, char *why);

/* Free what source_set allocated and wipe the secrets; src is then all
 * zeroes. */
void	source_free(struct config_source *src);

/*
 * The config's top-level keys as the source "default", scheme standard
 * (docs/DESIGN.md "Sources"), into d: the receiver verifies, reads and
 * keys its deliveries through the same calls as any section's.  Its
 * secrets are keys[0..nkeys) as the config loaded them (the same bytes,
 * the same fingerprints); its window tolerance_s.  config_free wipes it.
 */
void	source_default(struct config_source *d,
	    const struct signature_key *keys, size_t nkeys, int64_t tolerance_s);

#endif
