/*
 * test_setup_check: lib/operator/setup_check.c — the findings of `check` on a
 * temporary directory: a good setup has no failure, a missing handler, a
 * handler that is not executable, a missing script, files inside the
 * document root and a config readable by everyone are found; and the
 * handler command's program and script as check reads them; each
 * [source NAME] is listed with its scheme and number of secrets.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/operator/setup_check.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

static char tmpdir[] = "/tmp/webhook-test-setup-XXXXXX";
static char confdir[PATH_MAX];	/* the last check_config's */

/* Every finding, one "LEVEL what: text\n" line each. */
struct seen {
	struct buf	lines;
	int		problems;
};

static void
on_finding(void *arg, const char *level, const char *what, const char *text)
{
	struct seen *s = arg;

	ck_assert_int_eq(buf_printf(&s->lines, "%s %s: %s\n", level, what,
	    text), 0);
}

static void
on_problem(void *arg, const char *line)
{
	struct seen *s = arg;

	(void)line;
	s->problems++;
}

static void
check(const struct config *c, const char *docroot, struct seen *s,
    struct setup_counts *n)
{
	struct setup_hooks h = { on_finding, on_problem, s };

	buf_init(&s->lines, 1 << 20);
	s->problems = 0;
	setup_check(c, docroot, &h, n);
}

START_TEST(good_setup_has_no_failure)
{
	struct setup_counts n;
	struct config c;
	struct seen s;

	check_config(tmpdir, "handler = /bin/true\nmax_body = 1048576\n",
	    &c, confdir);
	check(&c, NULL, &s, &n);
	ck_assert_msg(n.fail == 0, "%s", s.lines.data);
	ck_assert(contains(s.lines.data, "ok config: "));
	ck_assert(contains(s.lines.data, "ok database: writable by this user"));
	ck_assert(contains(s.lines.data, "ok handler: /bin/true is executable"));
	ck_assert(contains(s.lines.data, "ok wal-sync: "));
	ck_assert(contains(s.lines.data, "ok secret: whsec_ HMAC-SHA256 (v1)"));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

START_TEST(each_source_is_listed)
{
	struct setup_counts n;
	struct config c;
	struct seen s;

	check_config(tmpdir, "handler = /bin/true\nmax_body = 1048576\n"
	    "[source stripe]\nscheme = stripe\nsecret = whsec_a\n"
	    "secret = whsec_b\n"
	    "[source disc]\nscheme = discord\nsecret = "
	    "197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d61\n",
	    &c, confdir);
	check(&c, NULL, &s, &n);
	ck_assert_msg(n.fail == 0, "%s", s.lines.data);
	ck_assert_msg(contains(s.lines.data, "ok source: stripe: Stripe (scheme "
	    "= stripe), 2 secrets, first fingerprint "), "%s", s.lines.data);
	ck_assert(contains(s.lines.data, "; the receiver takes it at its URL + "
	    "/stripe\n"));
	ck_assert(contains(s.lines.data, "ok source: disc: Discord (scheme = "
	    "discord), 1 secret, "));
	buf_free(&s.lines);
	config_free(&c);
	/* No sections: no source lines. */
	check_config(tmpdir, "handler = /bin/true\n", &c, confdir);
	check(&c, NULL, &s, &n);
	ck_assert(!contains(s.lines.data, " source: "));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

/* A key shorter than 16 bytes is a warning, not a failure, named by
 * source and fingerprint, never shown: the default source's whsec_AAAA
 * (3 bytes) and a source's; a public key and long keys are not. */
START_TEST(short_secret_warns)
{
	struct setup_counts n;
	struct config c;
	struct seen s;
	char want[256];

	check_config(tmpdir, "handler = /bin/true\nmax_body = 1048576\n"
	    "secret = whsec_AAAA\n"
	    "[source gh]\nscheme = github\nsecret = \"qzx7w  \"\n"
	    "secret = It's a Secret to Everybody\n"
	    "[source disc]\nscheme = discord\nsecret = "
	    "197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d61\n",
	    &c, confdir);
	check(&c, NULL, &s, &n);
	ck_assert_msg(n.fail == 0, "%s", s.lines.data);
	ck_assert_int_eq(n.warn, 2);
	snprintf(want, sizeof want, "WARN secret: source default: fingerprint "
	    "%s: the key is 3 bytes, shorter than 16 — a cut paste? compare "
	    "the line with the provider's dashboard\n",
	    c.secrets[1].fingerprint);
	ck_assert_msg(contains(s.lines.data, want), "%s", s.lines.data);
	snprintf(want, sizeof want, "WARN secret: source gh: fingerprint %s: "
	    "the key is 7 bytes, shorter than 16",
	    c.sources[0].secrets[0].fingerprint);
	ck_assert_msg(contains(s.lines.data, want), "%s", s.lines.data);
	ck_assert(!contains(s.lines.data, "qzx7w"));
	ck_assert(!contains(s.lines.data, "AAAA"));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

START_TEST(missing_handler_fails)
{
	struct setup_counts n;
	struct config c;
	struct seen s;

	check_config(tmpdir, "", &c, confdir);
	check(&c, NULL, &s, &n);
	ck_assert_int_eq(n.fail, 1);
	ck_assert(contains(s.lines.data, "FAIL handler: not set"));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

/* A config with errors (no database among them): the keys that loaded
 * are still checked, the missing database is said, nothing is created. */
START_TEST(partial_config_checks_what_loaded)
{
	struct setup_hooks h;
	struct setup_counts n;
	struct config c;
	struct seen s;
	struct buf err;
	char dir[PATH_MAX], path[PATH_MAX + 32];
	FILE *f;

	snprintf(dir, sizeof dir, "%s/partial%ld", tmpdir, (long)getpid());
	ck_assert_int_eq(mkdir(dir, 0700), 0);
	snprintf(path, sizeof path, "%s/webhook.conf", dir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fprintf(f, "databse = %s/inbox.db\nsecret = %s\nhandler = %s/nosuch\n"
	    "max_body = lots\n", dir, CHECK_SECRET, dir);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0600), 0);
	buf_init(&err, BUF_ERR_MAX);
	ck_assert_int_eq(config_load_all(path, &c, &err), -1);
	ck_assert_ptr_nonnull(c.path);
	ck_assert_ptr_null(c.database);
	buf_init(&s.lines, 1 << 20);
	h = (struct setup_hooks){ on_finding, on_problem, &s };
	setup_check_partial(&c, 3, NULL, &h, &n);
	ck_assert(contains(s.lines.data, "FAIL config: "));
	ck_assert(contains(s.lines.data, "3 errors (above)"));
	ck_assert(contains(s.lines.data, "FAIL database: not set"));
	ck_assert(contains(s.lines.data, "ok secret: whsec_ HMAC-SHA256"));
	ck_assert(contains(s.lines.data, "FAIL handler: "));
	ck_assert(contains(s.lines.data, "/nosuch is not an executable"));
	ck_assert_int_eq(n.fail, 3);
	ck_assert_ptr_null(strstr(s.lines.data, "ok config: "));
	snprintf(path, sizeof path, "%s/inbox.db", dir);
	ck_assert_int_eq(access(path, F_OK), -1);
	buf_free(&s.lines);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(relative_handler_judged_beside_the_config)
{
	char path[PATH_MAX + 16];
	struct setup_counts n;
	struct config c;
	struct seen s;
	FILE *f;

	check_config(tmpdir, "handler = ./h.sh\n", &c, confdir);
	snprintf(path, sizeof path, "%s/h.sh", confdir);
	ck_assert_ptr_nonnull(f = fopen(path, "w"));
	fclose(f);		/* there, but not executable */
	ck_assert_int_eq(chdir("/"), 0);
	check(&c, NULL, &s, &n);
	ck_assert(contains(s.lines.data, "FAIL handler: ./h.sh is not an "
	    "executable file"));
	buf_free(&s.lines);
	ck_assert_int_eq(chmod(path, 0700), 0);
	ck_assert_int_eq(chdir("/"), 0);
	check(&c, NULL, &s, &n);
	ck_assert(contains(s.lines.data, "ok handler: ./h.sh is executable"));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

START_TEST(missing_script_fails)
{
	struct setup_counts n;
	struct config c;
	struct seen s;

	check_config(tmpdir, "handler = /bin/sh /nonexistent/handler.sh\n",
	    &c, confdir);
	check(&c, NULL, &s, &n);
	ck_assert(contains(s.lines.data, "FAIL handler: /nonexistent/handler.sh: "));
	ck_assert_int_eq(n.fail, 1);
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

START_TEST(inside_document_root_fails_and_small_max_body_warns)
{
	struct setup_counts n;
	struct config c;
	struct seen s;

	check_config(tmpdir, "handler = /bin/true\nmax_body = 100000\n",
	    &c, confdir);
	check(&c, tmpdir, &s, &n);
	ck_assert_int_eq(n.fail, 2);
	ck_assert(contains(s.lines.data, "FAIL config: "));
	ck_assert(contains(s.lines.data, "FAIL database: "));
	ck_assert(!contains(s.lines.data, "ok document root"));
	ck_assert(contains(s.lines.data, "WARN max_body: 100000 bytes"));
	ck_assert_int_ge(n.warn, 1);
	buf_free(&s.lines);
	check(&c, "/nonexistent-docroot", &s, &n);
	ck_assert(contains(s.lines.data, "ok document root: config and database "
	    "are outside /nonexistent-docroot"));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

START_TEST(world_readable_config_warns)
{
	struct setup_counts n;
	struct config c;
	struct seen s;

	check_config(tmpdir, "handler = /bin/true\n", &c, confdir);
	ck_assert_int_eq(chmod(c.path, 0644), 0);
	check(&c, NULL, &s, &n);
	ck_assert(contains(s.lines.data, "WARN config: "));
	ck_assert(contains(s.lines.data, "chmod o-rwx"));
	buf_free(&s.lines);
	config_free(&c);
}
END_TEST

START_TEST(handler_program_and_script)
{
	static const struct {
		const char	*cmd, *prog, *script;	/* NULL: none */
	} cases[] = {
		{ "/usr/bin/php /x/h.php", "/usr/bin/php", "/x/h.php" },
		{ "FOO=1 BAR=2 sh ./h.sh arg", "sh", "./h.sh" },
		{ "  /x/run  ", "/x/run", NULL },
		{ "php -f /x/h.php", "php", NULL },
		{ "python3 handler.py", "python3", NULL },
		{ "/x/h.sh | tee log", "/x/h.sh", NULL },
		{ "sh -c 'exit 0'", "sh", NULL },
		{ "$HOME/h.sh", NULL, NULL },
		{ "(cd /x && ./h)", NULL, NULL },
		{ "", NULL, NULL },
		{ "A=1", NULL, NULL },
	};
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		char *p = setup_handler_program(cases[i].cmd);
		char *s = setup_handler_script(cases[i].cmd);
		if (cases[i].prog == NULL)
			ck_assert_msg(p == NULL, "%s: %s", cases[i].cmd, p);
		else
			ck_assert_msg(p != NULL && strcmp(p, cases[i].prog) == 0,
			    "%s: %s", cases[i].cmd, p ? p : "(null)");
		if (cases[i].script == NULL)
			ck_assert_msg(s == NULL, "%s: %s", cases[i].cmd, s);
		else
			ck_assert_msg(s != NULL && strcmp(s, cases[i].script) == 0,
			    "%s: %s", cases[i].cmd, s ? s : "(null)");
		free(p);
		free(s);
	}
}
END_TEST

START_TEST(executable_searches_path)
{
	char found[PATH_MAX];

	ck_assert_int_eq(setenv("PATH", "/nonexistent:/bin:/usr/bin", 1), 0);
	ck_assert_int_eq(setup_executable("sh", found, sizeof found), 1);
	ck_assert_str_eq(found, "/bin/sh");
	ck_assert_int_eq(setup_executable("no-such-program-here", found,
	    sizeof found), 0);
	ck_assert_int_eq(setup_executable("/bin/sh", found, sizeof found), 1);
	ck_assert_int_eq(setup_executable("/etc/passwd", found, sizeof found), 0);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("setup_check");
	TCase *tc = tcase_create("setup_check");

	tcase_add_test(tc, good_setup_has_no_failure);
	tcase_add_test(tc, missing_handler_fails);
	tcase_add_test(tc, each_source_is_listed);
	tcase_add_test(tc, short_secret_warns);
	tcase_add_test(tc, partial_config_checks_what_loaded);
	tcase_add_test(tc, relative_handler_judged_beside_the_config);
	tcase_add_test(tc, missing_script_fails);
	tcase_add_test(tc, inside_document_root_fails_and_small_max_body_warns);
	tcase_add_test(tc, world_readable_config_warns);
	tcase_add_test(tc, handler_program_and_script);
	tcase_add_test(tc, executable_searches_path);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main_in_tmpdir(suite, tmpdir);
}
