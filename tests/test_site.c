/*
 * test_site: lib/receive/site.c — the config cache (docs/DESIGN.md
 * "Configuration"): where the config is found, that an edited config is in
 * effect from the next request on while a request holding the old one keeps
 * it, that a bad config still gives a site (answered 503) and is logged
 * once, that a config or database inside the document root is refused with
 * one log line, and that the inbox opened stores (direct and group commit).
 * Temporary files in one directory.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/program/config.h"
#include "lib/store/event.h"
#include "lib/store/inbox.h"
#include "lib/receive/site.h"
#include "lib/common/util.h"
#include "tests/check_common.h"

static char dir[] = "/tmp/webhook-test-site-XXXXXX";

#define SECRET		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

static char conf[256], db[256], logpath[256];
static struct buf err;

/* A config for test `name`, with `extra` lines. */
static void
write_conf(const char *name, const char *extra)
{
	char text[1024];

	snprintf(conf, sizeof conf, "%s/%s.conf", dir, name);
	snprintf(db, sizeof db, "%s/%s.db", dir, name);
	snprintf(logpath, sizeof logpath, "%s/%s.log", dir, name);
	snprintf(text, sizeof text, "database = %s\nsecret = %s\nlog = %s\n%s",
	    db, SECRET, logpath, extra);
	check_write_file(conf, text);
}

/* How many log lines hold `text`. */
static int
logged(const char *text)
{
	size_t len;
	char *all = util_read_file(logpath, 1 << 20, &len), *p;
	int n = 0;

	for (p = all; p != NULL && (p = strstr(p, text)) != NULL; p++)
		n++;
	free(all);
	return n;
}

static void
setup(void)
{
	buf_init(&err, BUF_ERR_MAX);
}

static void
teardown(void)
{
	buf_free(&err);
}

START_TEST(default_conf_beside_the_executable)
{
	struct site_cache c;

	site_cache_init(&c, "/home/u/public_html/webhook.fcgi");
	ck_assert_str_eq(c.default_conf, "/home/u/public_html/webhook.conf");
	site_cache_free(&c);
	site_cache_init(&c, "webhook.fcgi");
	ck_assert_str_eq(c.default_conf, "webhook.conf");
	site_cache_free(&c);
	site_cache_init(&c, NULL);
	ck_assert_str_eq(c.default_conf, "webhook.conf");
	site_cache_free(&c);
}
END_TEST

/* The request's WEBHOOK_CONF, else the environment's, else the default. */
START_TEST(conf_found_by_param_then_env_then_default)
{
	struct site_cache c;
	struct site *st;
	char self[300];

	write_conf("found", "tolerance = 11\n");
	snprintf(self, sizeof self, "%s/webhook.fcgi", dir);
	site_cache_init(&c, self);
	/* Nothing names it and none beside us: a site answering 503. */
	unsetenv("WEBHOOK_CONF");
	ck_assert_ptr_nonnull(st = site_acquire(&c, NULL, &err));
	ck_assert_int_eq(site_ready(st, NULL, 0, 0, &err), -1);
	site_release(st);
	setenv("WEBHOOK_CONF", conf, 1);
	ck_assert_ptr_nonnull(st = site_acquire(&c, "", &err));
	ck_assert_int_eq(site_ready(st, NULL, 0, 0, &err), 0);
	ck_assert_int_eq(site_config(st)->tolerance_s, 11);
	site_release(st);
	/* The parameter wins over the environment. */
	write_conf("param", "tolerance = 22\n");
	ck_assert_ptr_nonnull(st = site_acquire(&c, conf, &err));
	ck_assert_int_eq(site_config(st)->tolerance_s, 22);
	site_release(st);
	unsetenv("WEBHOOK_CONF");
	site_cache_free(&c);
}
END_TEST

START_TEST(edit_reloads_old_one_kept_while_held)
{
	struct site_cache c;
	struct site *a, *b, *again;

	write_conf("reload", "tolerance = 100\n");
	site_cache_init(&c, NULL);
	ck_assert_ptr_nonnull(a = site_acquire(&c, conf, &err));
	ck_assert_ptr_nonnull(again = site_acquire(&c, conf, &err));
	ck_assert_ptr_eq(a, again);	/* unchanged: not read again */
	site_release(again);
	/* The same size and inode, so only the times tell (a secret
	 * rotation that keeps the length).  Set a later mtime: two writes
	 * within one clock tick of the file system would share theirs. */
	write_conf("reload", "tolerance = 200\n");
	{
		struct timespec ts[2] = { { 0, UTIME_OMIT },
		    { time(NULL) + 5, 0 } };
		ck_assert_int_eq(utimensat(AT_FDCWD, conf, ts, 0), 0);
	}
	ck_assert_ptr_nonnull(b = site_acquire(&c, conf, &err));
	ck_assert_ptr_ne(a, b);
	ck_assert_int_eq(site_config(b)->tolerance_s, 200);
	/* The request that still holds the old one keeps it whole. */
	ck_assert_int_eq(site_config(a)->tolerance_s, 100);
	ck_assert_int_eq(site_ready(a, NULL, 0, 0, &err), 0);
	site_release(a);
	site_release(b);
	site_cache_free(&c);
}
END_TEST

START_TEST(bad_conf_503_logged_once_until_fixed)
{
	struct site_cache c;
	struct site *st;
	int i;

	write_conf("bad", "tolerance = soon\n");
	site_cache_init(&c, NULL);
	for (i = 0; i < 3; i++) {
		ck_assert_ptr_nonnull(st = site_acquire(&c, conf, &err));
		ck_assert_int_eq(site_ready(st, NULL, 0, 0, &err), -1);
		site_release(st);
	}
	ck_assert_int_eq(logged("answering 503 until it is fixed"), 1);
	write_conf("bad", "tolerance = 60\n");
	ck_assert_ptr_nonnull(st = site_acquire(&c, conf, &err));
	ck_assert_int_eq(site_ready(st, NULL, 0, 0, &err), 0);
	site_release(st);
	site_cache_free(&c);
}
END_TEST

START_TEST(database_in_docroot_refused_logged_once)
{
	struct site_cache c;
	struct site *st;
	char docroot[300];

	write_conf("dbroot", "");
	site_cache_init(&c, NULL);
	ck_assert_ptr_nonnull(st = site_acquire(&c, conf, &err));
	/* The directory holds config and database: the config is named. */
	ck_assert_int_eq(site_ready(st, dir, 0, 0, &err), -1);
	ck_assert_int_eq(site_ready(st, dir, 0, 0, &err), -1);
	ck_assert_int_eq(logged("the config file is inside the document root"),
	    1);
	site_release(st);
	site_cache_free(&c);

	/* Config outside, database inside. */
	snprintf(docroot, sizeof docroot, "%s/www", dir);
	ck_assert_int_eq(mkdir(docroot, 0700), 0);
	write_conf("dbroot2", "");
	{
		char text[1024];
		snprintf(text, sizeof text, "database = %s/inbox.db\n"
		    "secret = %s\nlog = %s\n", docroot, SECRET, logpath);
		check_write_file(conf, text);
	}
	site_cache_init(&c, NULL);
	ck_assert_ptr_nonnull(st = site_acquire(&c, conf, &err));
	ck_assert_int_eq(site_ready(st, docroot, 0, 0, &err), -1);
	ck_assert_int_eq(logged("the database is inside the document root"), 1);
	/* Another document root, with neither inside: fine. */
	ck_assert_int_eq(site_ready(st, "/nonexistent-docroot", 0, 0, &err), 0);
	site_release(st);
	site_cache_free(&c);
}
END_TEST

static void
store_twice(int long_lived)
{
	struct site_cache c;
	struct site *st;
	struct inbox_delivery d;
	struct event_fields f;

	write_conf(long_lived ? "storelong" : "store", "");
	site_cache_init(&c, NULL);
	ck_assert_ptr_nonnull(st = site_acquire(&c, conf, &err));
	ck_assert_int_eq(site_ready(st, "", long_lived, 0, &err), 0);
	memset(&f, 0, sizeof f);
	memset(&d, 0, sizeof d);
	d.webhook_id = "msg_site";
	d.webhook_timestamp = 1772366400;
	d.secret_fp = site_config(st)->secrets[0].fingerprint;
	d.body = "{}";
	d.body_len = 2;
	d.fields = &f;
	ck_assert_int_eq(site_store(st, long_lived, &d, &err), INBOX_OK);
	ck_assert_int_eq(site_store(st, long_lived, &d, &err), INBOX_DUPLICATE);
	site_release(st);
	if (!long_lived)
		site_maintain(&c);
	site_cache_free(&c);
}

START_TEST(stores_direct)
{
	store_twice(0);
}
END_TEST

START_TEST(stores_group_commit)
{
	store_twice(1);
}
END_TEST

static Suite *
site_suite(void)
{
	Suite *s = suite_create("site");
	TCase *tc = tcase_create("cache");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, default_conf_beside_the_executable);
	tcase_add_test(tc, conf_found_by_param_then_env_then_default);
	tcase_add_test(tc, edit_reloads_old_one_kept_while_held);
	tcase_add_test(tc, bad_conf_503_logged_once_until_fixed);
	tcase_add_test(tc, database_in_docroot_refused_logged_once);
	tcase_add_test(tc, stores_direct);
	tcase_add_test(tc, stores_group_commit);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	log_init("test_site");
	return check_main_in_tmpdir(site_suite, dir);
}
