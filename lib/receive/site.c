/*
 * site: the config cache with hot reload, the document-root refusals and
 * the inbox a config names — receive/site.h.
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/receive/committer.h"
#include "lib/program/config.h"
#include "lib/store/inbox.h"
#include "lib/receive/site.h"
#include "lib/common/util.h"

/* One loaded config and what hangs off it. */
struct site {
	struct site_cache *cache;	/* whose mutex guards refs */
	int		 refs;		/* under cache->mu */
	char		*conf_path;
	struct stat	 conf_st;	/* identity of the file when read */
	int		 conf_ok;
	struct config	 conf;
	pthread_mutex_t	 mu;		/* guards what follows */
	char		*docroot;	/* DOCUMENT_ROOT the checks ran for */
	const char	*docroot_problem;	/* NULL: both outside it */
	struct committer *cm;		/* long-lived: group commit */
	struct inbox	*ib;		/* one request: one direct commit */
};

void
site_cache_init(struct site_cache *c, const char *self_path)
{
	const char *slash = self_path != NULL ? strrchr(self_path, '/') : NULL;

	pthread_mutex_init(&c->mu, NULL);
	c->current = NULL;
	snprintf(c->default_conf, sizeof c->default_conf, "webhook.conf");
	if (slash != NULL && (size_t)(slash - self_path) +
	    sizeof "/webhook.conf" <= sizeof c->default_conf) {
		memcpy(c->default_conf, self_path, (size_t)(slash - self_path));
		memcpy(c->default_conf + (slash - self_path), "/webhook.conf",
		    sizeof "/webhook.conf");
	}
}

void
site_cache_free(struct site_cache *c)
{
	struct site *st;

	pthread_mutex_lock(&c->mu);
	st = c->current;
	c->current = NULL;
	pthread_mutex_unlock(&c->mu);
	site_release(st);
	pthread_mutex_destroy(&c->mu);
}

void
site_release(struct site *st)
{
	int last;

	if (st == NULL)
		return;
	pthread_mutex_lock(&st->cache->mu);
	last = --st->refs == 0;
	pthread_mutex_unlock(&st->cache->mu);
	if (!last)
		return;
	committer_close(st->cm);
	inbox_close(st->ib);
	config_free(&st->conf);
	free(st->conf_path);
	free(st->docroot);
	pthread_mutex_destroy(&st->mu);
	free(st);
}

/* Is the file still the one that was read?  An edit changes mtime and
 * ctime, a replacement by rename the inode. */
static int
same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
	    a->st_ctim.tv_sec == b->st_ctim.tv_sec &&
	    a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

/* Each `secret` line the config skipped (lib/program/config.h), one log line
 * each, once per load: the other secrets verify, so the receiver goes on
 * answering, but a delivery signed only with that secret gets 401. */
static void
log_skipped_secrets(const struct config *c)
{
	const char *p = c->secret_skipped, *nl;

	while (p != NULL && *p != '\0') {
		nl = strchr(p, '\n');
		log_msg("config: %.*s (this secret is not used; %zu other%s "
		    "verif%s -- `webhook-drain check` names it)",
		    (int)(nl ? nl - p : (ptrdiff_t)strlen(p)), p, c->nsecrets,
		    c->nsecrets == 1 ? "" : "s", c->nsecrets == 1 ? "ies" : "y");
		p = nl ? nl + 1 : NULL;
	}
}

/* A new site for the config at `path` (identity `sb`), with the cache's
 * reference; NULL when out of memory.  Called under c->mu. */
static struct site *
site_load(struct site_cache *c, const char *path, const struct stat *sb,
    struct buf *err)
{
	struct site *st;

	if ((st = calloc(1, sizeof *st)) == NULL ||
	    (st->conf_path = strdup(path)) == NULL) {
		free(st);
		return NULL;
	}
	pthread_mutex_init(&st->mu, NULL);
	st->cache = c;
	st->conf_st = *sb;
	st->refs = 1;		/* current's own reference */
	st->conf_ok = config_load(path, &st->conf, err) == 0;
	/* A broken config still names its log file (program/config.h); when it
	 * names none, the log stays where it was, never the web server's
	 * stderr instead of the file being read. */
	if (st->conf_ok || st->conf.log != NULL)
		log_open(st->conf.log);
	if (!st->conf_ok)
		log_msg("config: %s (answering 503 until it is fixed)",
		    err->data);
	else
		log_skipped_secrets(&st->conf);
	return st;
}

struct site *
site_acquire(struct site_cache *c, const char *path, struct buf *err)
{
	struct site *st, *old = NULL;
	struct stat sb;

	if (path == NULL || *path == '\0')
		path = getenv("WEBHOOK_CONF");
	if (path == NULL || *path == '\0')
		path = c->default_conf;
	if (stat(path, &sb) == -1)
		memset(&sb, 0, sizeof sb);
	pthread_mutex_lock(&c->mu);
	st = c->current;
	if (st == NULL || strcmp(st->conf_path, path) != 0 ||
	    !same_file(&sb, &st->conf_st)) {
		if ((st = site_load(c, path, &sb, err)) == NULL) {
			pthread_mutex_unlock(&c->mu);
			return NULL;
		}
		old = c->current;
		c->current = st;
	}
	st->refs++;
	pthread_mutex_unlock(&c->mu);
	site_release(old);	/* drop current's reference to the old one */
	return st;
}

/* Under st->mu: judge the document root `docroot` once (logged once). */
static void
check_docroot(struct site *st, const char *docroot)
{
	free(st->docroot);
	st->docroot = strdup(docroot);
	st->docroot_problem = NULL;
	if (*docroot != '\0' && util_path_inside(docroot, st->conf.path))
		st->docroot_problem = "the config file";
	else if (*docroot != '\0' && inbox_is_file(st->conf.database) &&
	    util_path_inside(docroot, st->conf.database))
		st->docroot_problem = "the database";
	if (st->docroot_problem != NULL)
		log_msg("config: %s is inside the document root %s, where "
		    "anyone can download it; move it outside and point "
		    "WEBHOOK_CONF / database at the new place (answering "
		    "503 until then)", st->docroot_problem, docroot);
}

int
site_ready(struct site *st, const char *docroot, int long_lived,
    int64_t deadline, struct buf *err)
{
	struct inbox_options io;
	int rc = 0;

	if (!st->conf_ok)
		return -1;
	if (docroot == NULL)
		docroot = "";
	pthread_mutex_lock(&st->mu);
	if (st->docroot == NULL || strcmp(st->docroot, docroot) != 0)
		check_docroot(st, docroot);
	if (st->docroot == NULL || st->docroot_problem != NULL) {
		rc = -1;
		goto out;
	}
	memset(&io, 0, sizeof io);
	io.busy_timeout_ms = st->conf.busy_timeout_ms;
	io.synchronous = st->conf.synchronous == CONFIG_SYNC_NORMAL ?
	    INBOX_SYNC_NORMAL : INBOX_SYNC_FULL;
	/* A FastCGI worker lives for many requests: group commit
	 * (docs/durability.md).  Plain CGI commits and syncs at once. */
	io.group_commit = long_lived;
	io.short_lived = !long_lived;
	io.deadline = deadline;		/* the open only (store/inbox.h) */
	if (long_lived && st->cm == NULL &&
	    committer_open(st->conf.database, &io, &st->cm, err) != INBOX_OK) {
		log_msg("inbox: %s", err->data);
		rc = -1;
	} else if (!long_lived && st->ib == NULL &&
	    inbox_open(st->conf.database, &io, &st->ib, err) != INBOX_OK) {
		log_msg("inbox: %s", err->data);
		rc = -1;
	}
out:
	pthread_mutex_unlock(&st->mu);
	return rc;
}

const struct config *
site_config(const struct site *st)
{
	return &st->conf;
}

enum inbox_status
site_store(struct site *st, int long_lived, const struct inbox_delivery *d,
    struct buf *err)
{
	if (long_lived)
		return committer_store(st->cm, d, err);
	return inbox_store(st->ib, d, err);
}

void
site_maintain(struct site_cache *c)
{
	struct buf err;

	if (c->current == NULL || c->current->ib == NULL)
		return;
	buf_init(&err, 1024);
	if (inbox_maintain(c->current->ib, &err) != INBOX_OK)
		log_msg("inbox: %s", err.data);
	buf_free(&err);
}
