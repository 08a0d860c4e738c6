/*
 * check_config: a real config file for the tests of modules that take a
 * struct config (drain, refetch, setup_check, sender), loaded through
 * config_load as the drainer loads one, so a test cannot build a config
 * the parser would refuse.
 */
#ifndef WEBHOOK_CHECK_CONFIG_H
#define WEBHOOK_CHECK_CONFIG_H

#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include <check.h>

#include "lib/program/config.h"

/* The Standard Webhooks test secret (whsec_, HMAC). */
#define CHECK_SECRET	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

/*
 * Make a fresh directory under `parent` and in it webhook.conf (mode 0600):
 * database = DIR/inbox.db, secret = CHECK_SECRET, then `body` (lines, each
 * ending in "\n").  Load it into *c (config_free it); `dir` (PATH_MAX
 * bytes) gets the directory.  The process id is in the name: Check forks
 * every test from the same counter.
 */
static inline void
check_config(const char *parent, const char *body, struct config *c,
    char dir[PATH_MAX])
{
	static int n;
	char path[PATH_MAX + 32];
	struct buf err;
	FILE *f;

	snprintf(dir, PATH_MAX, "%s/c%ld-%d", parent, (long)getpid(), ++n);
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/webhook.conf", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "database = %s/inbox.db\nsecret = %s\n%s", dir, CHECK_SECRET,
	    body);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0600), 0);
	buf_init(&err, BUF_ERR_MAX);
	ck_assert_msg(config_load(path, c, &err) == 0, "%s", err.data);
	buf_free(&err);
}

#endif
