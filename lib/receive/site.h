/*
 * site: the receiver's config and the inbox it names, shared by the
 * request threads of a process (docs/DESIGN.md "Configuration").
 *
 * The config is found through WEBHOOK_CONF as a FastCGI/CGI parameter,
 * then the process environment, then webhook.conf beside the executable,
 * and re-read when the file changed — one stat per request, because
 * shared-hosting users cannot restart workers and a secret rotation is an
 * edit.  A new site replaces the current one; requests still using the old
 * one keep it alive (a reference each).  A bad config is logged once, when
 * it is read.  Before a request may use a site, site_ready refuses a
 * config or database inside the document root (anyone could download
 * them) and opens the inbox.
 */
#ifndef WEBHOOK_SITE_H
#define WEBHOOK_SITE_H

#include <limits.h>
#include <pthread.h>

#include "lib/program/config.h"
#include "lib/store/inbox.h"
#include "lib/common/util.h"

struct site;

/* The current site of a process (or of a test: nothing here is global). */
struct site_cache {
	pthread_mutex_t	 mu;		/* guards current and every site's refs */
	struct site	*current;
	char		 default_conf[PATH_MAX];	/* webhook.conf beside us */
};

/*
 * Set `c` up empty, the default config being webhook.conf in the
 * directory of `self_path` (the path we were started as: a symlink's own
 * directory, not its target's; "webhook.conf" in the working directory
 * when it has no '/' or is too long).
 */
void	site_cache_init(struct site_cache *c, const char *self_path);
/* Drop the current site (freed once no request holds it).  No
 * site_acquire may run; `c` may be site_cache_init'ed again. */
void	site_cache_free(struct site_cache *c);

/*
 * The site for one request, with a reference (site_release it).  `conf`
 * is the WEBHOOK_CONF parameter of the request (NULL or "" when it has
 * none).  The site is the current one unless the path differs or its
 * file changed (inode, size, mtime, ctime), in which case the config is
 * read again (errors in `err` and the log) and becomes current.  Returns
 * NULL only when out of memory.  Thread-safe.
 */
struct site *site_acquire(struct site_cache *c, const char *conf,
	    struct buf *err) __attribute__((warn_unused_result));
/* Drop a reference; the last frees the site, its config and its inbox.
 * Accepts NULL. */
void	site_release(struct site *st);

/*
 * Can a request under document root `docroot` (NULL or "": none) go on
 * with `st`: its config loaded, neither the config file nor the database
 * inside the document root (checked once per document root), the inbox
 * open — with group commit (lib/receive/committer.h) when `long_lived`, else one
 * direct connection for this process's one request?  Returns 0, or -1
 * with the reason logged (once per document root for a docroot refusal,
 * every time for an inbox that does not open).  Thread-safe.
 * `deadline` (monotonic ns, util_mono_ns; 0: none) is the request's: the
 * first open, which takes the write lock to check the schema, waits for
 * a lock no longer than it (inbox_options.deadline), whatever
 * busy_timeout allows — a request that meets a held lock at the open
 * answers 503 in its time, as one that meets it at the store does.
 * Requests waiting meanwhile for the same site wait behind that open,
 * which ends by the earlier deadline.
 */
int	site_ready(struct site *st, const char *docroot, int long_lived,
	    int64_t deadline, struct buf *err) __attribute__((warn_unused_result));

/* The config of a site (valid while the reference is held). */
const struct config *site_config(const struct site *st);

/*
 * Store one verified delivery in the inbox site_ready opened (with the
 * same `long_lived`).  Returns when it is durable, as inbox_store /
 * committer_store; `err` is the caller's own buffer.
 */
enum inbox_status site_store(struct site *st, int long_lived,
	    const struct inbox_delivery *d, struct buf *err)
	    __attribute__((warn_unused_result));

/* Plain CGI, after the answer went out: let the current site's inbox take
 * a checkpoint turn (inbox_maintain), logging a failure. */
void	site_maintain(struct site_cache *c);

#endif
