/*
 * test_config: lib/program/config.c — the config file of docs/DESIGN.md
 * "Configuration" (contract): defaults, every key's bounds, and errors that
 * say "file:line: key: what is wrong" and never show a secret.  Each test
 * writes its config to a fresh mkstemp file in one directory under /tmp,
 * which main removes, with anything a crashed test left, at the end.
 */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/program/config.h"
#include "tests/check_common.h"

#define KAT_SECRET	"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
#define OTHER_SECRET	"whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD"
#define ED_KEY		"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4="
#define MINIMAL		"database = /var/lib/webhook/inbox.db\n" \
			"secret = " KAT_SECRET "\n"

/* How a quoted value is written, as config.c's messages say it. */
#define QUOTE_HOW	"(secret = \" a#b\\\"c \"; inside, \\\" is a quote " \
			"and \\\\ a backslash)"

/* The directory every test's files go in (made by main). */
static char confdir[] = "/tmp/webhook-test-config-XXXXXX";

/* One load: the file's path, the result and the error text. */
struct load {
	char		path[128];
	struct config	c;
	struct buf	err;
	int		rc;
};

/* Write `len` bytes of `text` to a fresh file in `dir` and load it; the
 * file is removed before returning (the path is kept for messages). */
static void
load_in(const char *dir, const char *text, size_t len, struct load *l)
{
	int fd;

	snprintf(l->path, sizeof l->path, "%s/webhook-conf-XXXXXX", dir);
	fd = mkstemp(l->path);
	ck_assert_msg(fd != -1, "mkstemp %s", l->path);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
	buf_init(&l->err, BUF_ERR_MAX);
	l->rc = config_load(l->path, &l->c, &l->err);
	unlink(l->path);
}

static void
load(const char *text, struct load *l)
{
	load_in(confdir, text, strlen(text), l);
}

static void
load_done(struct load *l)
{
	config_free(&l->c);
	buf_free(&l->err);
}

/* The error text, "" when none was written. */
static const char *
err_text(const struct load *l)
{
	return l->err.data ? l->err.data : "";
}

/* The load succeeded. */
#define LOADED(l) ck_assert_msg((l)->rc == 0, "refused: %s", err_text(l))

/* The load failed with exactly "<path><rest>". */
#define FAILED_WITH(l, rest) do {					\
	char want_[512];						\
	snprintf(want_, sizeof want_, "%s%s", (l)->path, (rest));	\
	ck_assert_msg((l)->rc == -1, "accepted, want error %s", want_);	\
	ck_assert_msg(strcmp(err_text(l), want_) == 0,			\
	    "error \"%s\", want \"%s\"", err_text(l), want_);		\
} while (0)

/* A failed load leaves the config empty. */
static void
assert_empty_config(const struct config *c)
{
	ck_assert_ptr_null(c->path);
	ck_assert_ptr_null(c->database);
	ck_assert_ptr_null(c->handler);
	ck_assert_ptr_null(c->log);
	ck_assert_uint_eq(c->nsecrets, 0);
}

/* Does the error show any 8-byte run of `secret`? */
static int
shows_secret(const char *err, const char *secret)
{
	size_t n = strlen(secret);
	char win[9];

	for (size_t i = 0; i + 8 <= n; i++) {
		memcpy(win, secret + i, 8);
		win[8] = '\0';
		if (strstr(err, win) != NULL)
			return 1;
	}
	return 0;
}

START_TEST(defaults)
{
	struct load l;

	load(MINIMAL, &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.path, l.path);
	ck_assert_str_eq(l.c.database, "/var/lib/webhook/inbox.db");
	ck_assert_uint_eq(l.c.nsecrets, 1);
	ck_assert_int_eq(l.c.secrets[0].kind, SIGNATURE_HMAC_SHA256);
	ck_assert_uint_eq(l.c.secrets[0].keylen, 24);
	ck_assert_int_eq(l.c.tolerance_s, 300);
	ck_assert_int_eq(l.c.max_body_bytes, 1048576);
	ck_assert_int_eq(l.c.handler_timeout_s, 60);
	ck_assert_int_eq(l.c.max_attempts, 12);
	ck_assert_int_eq(l.c.retention_s, 7 * 86400);
	ck_assert_int_eq(l.c.settle_s, 2);
	ck_assert_int_eq(l.c.busy_timeout_ms, 5000);
	ck_assert_int_eq(l.c.synchronous, CONFIG_SYNC_FULL);
	ck_assert_ptr_null(l.c.handler);
	ck_assert_ptr_null(l.c.log);
	load_done(&l);
}
END_TEST

START_TEST(every_key)
{
	struct load l;

	load("# every key\n"
	    "database = /srv/inbox.db\n"
	    "secret = " KAT_SECRET "\n"
	    "tolerance = 10m\n"
	    "max_body = 2048\n"
	    "handler = /usr/local/bin/handle\n"
	    "handler_timeout = 2m\n"
	    "max_attempts = 3\n"
	    "retention = 3d\n"
	    "settle = 0\n"
	    "busy_timeout = 2s\n"
	    "synchronous = NORMAL\n"
	    "log = /var/log/webhook.log\n", &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.database, "/srv/inbox.db");
	ck_assert_int_eq(l.c.tolerance_s, 600);
	ck_assert_int_eq(l.c.max_body_bytes, 2048);
	ck_assert_str_eq(l.c.handler, "/usr/local/bin/handle");
	ck_assert_int_eq(l.c.handler_timeout_s, 120);
	ck_assert_int_eq(l.c.max_attempts, 3);
	ck_assert_int_eq(l.c.retention_s, 3 * 86400);
	ck_assert_int_eq(l.c.settle_s, 0);
	ck_assert_int_eq(l.c.busy_timeout_ms, 2000);
	ck_assert_int_eq(l.c.synchronous, CONFIG_SYNC_NORMAL);
	ck_assert_str_eq(l.c.log, "/var/log/webhook.log");
	load_done(&l);
}
END_TEST

/* Every key of docs/DESIGN.md "Configuration" and the example config, in
 * the order of the table in lib/program/config.c. */
static const char *const all_keys[] = {
	"database", "secret", "tolerance", "max_body", "handler",
	"handler_timeout", "max_attempts", "retention", "settle", "retry_base",
	"retry_max", "busy_timeout", "body_timeout", "synchronous", "log",
	"api_url", "api_token_file", "api_ca_file", "api_timeout",
	"api_resource", "refetch",
};

/* The example config, every key's line (set or commented out) in
 * effect, its placeholder secret replaced: every key is in the example,
 * and every line of it loads as written. */
START_TEST(every_key_of_the_example)
{
	FILE *f = fopen(CONF_EXAMPLE, "r");
	char line[1024], key[64];
	struct buf text;
	struct load l;
	int found[NELEM(all_keys)] = { 0 };

	ck_assert_msg(f != NULL, "%s", CONF_EXAMPLE);
	buf_init(&text, CONFIG_FILE_MAX);
	while (fgets(line, sizeof line, f) != NULL) {
		const char *kv = line[0] == '#' ? line + 1 : line;

		/* The top-level keys only: the [source NAME] examples after
		 * them have keys of their own (docs/DESIGN.md "Sources"). */
		if (strncmp(kv, "[source ", 8) == 0)
			break;
		size_t n = strspn(kv, "abcdefghijklmnopqrstuvwxyz_");

		if (n == 0 || n >= sizeof key || strncmp(kv + n, " = ", 3) != 0)
			continue;
		memcpy(key, kv, n);
		key[n] = '\0';
		for (size_t i = 0; i < NELEM(all_keys); i++)
			if (strcmp(key, all_keys[i]) == 0)
				found[i]++;
		if (strcmp(key, "secret") == 0)
			kv = "secret = " KAT_SECRET "\n";
		ck_assert_int_eq(buf_printf(&text, "%s", kv), 0);
	}
	fclose(f);
	for (size_t i = 0; i < NELEM(all_keys); i++)
		ck_assert_msg(found[i] == 1, "%s: %d lines in the example",
		    all_keys[i], found[i]);
	load(text.data, &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.handler, "/usr/bin/php /home/you/webhook/handler.php");
	ck_assert_int_eq(l.c.busy_timeout_ms, 5000);
	ck_assert_int_eq(l.c.body_timeout_s, 10);
	ck_assert_int_eq(l.c.retention_s, 7 * 86400);
	ck_assert_str_eq(l.c.api_url, "https://api.example.com/public/v1");
	ck_assert_uint_eq(l.c.nresources, 1);
	ck_assert_uint_eq(l.c.nrefetch, 2);
	load_done(&l);
	buf_free(&text);
}
END_TEST

/* Every key with a value other than its default, in one file: each lands
 * in its own field, in the unit its name says. */
START_TEST(every_key_in_the_table)
{
	struct load l;

	load("database = /srv/inbox.db\n"
	    "secret = " KAT_SECRET "\n"
	    "tolerance = 10m\n"
	    "max_body = 2048\n"
	    "handler = /bin/h\n"
	    "handler_timeout = 2m\n"
	    "max_attempts = 3\n"
	    "retention = 4d\n"
	    "settle = 5s\n"
	    "retry_base = 1m\n"
	    "retry_max = 2h\n"
	    "busy_timeout = 3s\n"
	    "body_timeout = 20s\n"
	    "synchronous = normal\n"
	    "log = /var/log/w.log\n"
	    "api_url = http://127.0.0.1:8080/v1\n"
	    "api_token_file = /etc/w/token\n"
	    "api_ca_file = /etc/w/ca.pem\n"
	    "api_timeout = 30\n"
	    "api_resource = person people\n"
	    "refetch = payment.*  invoice\n", &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.database, "/srv/inbox.db");
	ck_assert_uint_eq(l.c.nsecrets, 1);
	ck_assert_int_eq(l.c.tolerance_s, 600);
	ck_assert_int_eq(l.c.max_body_bytes, 2048);
	ck_assert_str_eq(l.c.handler, "/bin/h");
	ck_assert_int_eq(l.c.handler_timeout_s, 120);
	ck_assert_int_eq(l.c.max_attempts, 3);
	ck_assert_int_eq(l.c.retention_s, 4 * 86400);
	ck_assert_int_eq(l.c.settle_s, 5);
	ck_assert_int_eq(l.c.retry_base_s, 60);
	ck_assert_int_eq(l.c.retry_max_s, 7200);
	ck_assert_int_eq(l.c.busy_timeout_ms, 3000);
	ck_assert_int_eq(l.c.body_timeout_s, 20);
	ck_assert_int_eq(l.c.synchronous, CONFIG_SYNC_NORMAL);
	ck_assert_str_eq(l.c.log, "/var/log/w.log");
	ck_assert_str_eq(l.c.api_url, "http://127.0.0.1:8080/v1");
	ck_assert_str_eq(l.c.api_token_file, "/etc/w/token");
	ck_assert_str_eq(l.c.api_ca_file, "/etc/w/ca.pem");
	ck_assert_int_eq(l.c.api_timeout_s, 30);
	ck_assert_uint_eq(l.c.nresources, 1);
	ck_assert_str_eq(l.c.resources[0].object_type, "person");
	ck_assert_str_eq(l.c.resources[0].path, "people");
	ck_assert_uint_eq(l.c.nrefetch, 2);
	ck_assert_str_eq(l.c.refetch[0], "payment.*");
	ck_assert_str_eq(l.c.refetch[1], "invoice");
	load_done(&l);

	/* and the defaults of those MINIMAL leaves out */
	load(MINIMAL, &l);
	LOADED(&l);
	ck_assert_int_eq(l.c.retry_base_s, 30);
	ck_assert_int_eq(l.c.retry_max_s, 6 * 3600);
	ck_assert_int_eq(l.c.body_timeout_s, 10);
	ck_assert_int_eq(l.c.api_timeout_s, 10);
	ck_assert_ptr_null(l.c.api_url);
	ck_assert_uint_eq(l.c.nresources + l.c.nrefetch, 0);
	load_done(&l);
}
END_TEST

START_TEST(comments_and_blank_lines)
{
	struct load l;

	load("# a comment\n"
	    "; another\n"
	    "\n"
	    "   \n"
	    "  # indented comment\n"
	    "database=/srv/a.db\n"
	    "   secret   =   " KAT_SECRET "   \n"
	    "tolerance\t=\t60\n", &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.database, "/srv/a.db");
	ck_assert_uint_eq(l.c.nsecrets, 1);
	ck_assert_int_eq(l.c.tolerance_s, 60);
	load_done(&l);
}
END_TEST

/* A config edited on Windows and uploaded by FTP. */
START_TEST(crlf_lines)
{
	struct load l;

	load("database = /srv/a.db\r\nsecret = " KAT_SECRET "\r\n"
	    "handler = /bin/true\r\n", &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.database, "/srv/a.db");
	ck_assert_str_eq(l.c.handler, "/bin/true");
	load_done(&l);
}
END_TEST

START_TEST(repeatable_secret)
{
	struct load l;

	load("database = /srv/a.db\n"
	    "secret = " KAT_SECRET "\n"
	    "secret = " OTHER_SECRET "\n", &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 2);
	ck_assert_str_ne(l.c.secrets[0].fingerprint, l.c.secrets[1].fingerprint);
	load_done(&l);

	/* Both kinds; in file order. */
	load("secret = " ED_KEY "\n"
	    "database = /srv/a.db\n"
	    "secret = " KAT_SECRET "\n", &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 2);
	ck_assert_int_eq(l.c.secrets[0].kind, SIGNATURE_ED25519);
	ck_assert_int_eq(l.c.secrets[1].kind, SIGNATURE_HMAC_SHA256);
	load_done(&l);
}
END_TEST

START_TEST(secret_limit)
{
	struct buf text;
	struct load l;
	int i;

	buf_init(&text, 8192);
	ck_assert_int_eq(buf_printf(&text, "database = /srv/a.db\n"), 0);
	for (i = 0; i < SIGNATURE_KEYS_MAX; i++)
		ck_assert_int_eq(buf_printf(&text, "secret = whsec_AAAA%c%c%c%c\n",
		    'A' + i, 'A' + i, 'A' + i, 'A' + i), 0);
	load(text.data, &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, SIGNATURE_KEYS_MAX);
	load_done(&l);

	ck_assert_int_eq(buf_printf(&text, "secret = " KAT_SECRET "\n"), 0);
	load(text.data, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":10: secret: "), "%s", err_text(&l));
	ck_assert_msg(!shows_secret(err_text(&l), KAT_SECRET + 6), "%s",
	    err_text(&l));
	load_done(&l);
	buf_free(&text);
}
END_TEST

START_TEST(unknown_key)
{
	struct load l;

	load("# line 1\n"
	    "; line 2\n"
	    "\n"
	    "database = /srv/a.db\n"
	    "secret = " KAT_SECRET "\n"
	    "tolerence = 5\n"
	    "max_body = 10\n", &l);
	FAILED_WITH(&l, ":6: tolerence: unknown key (did you mean tolerance?)");
	assert_empty_config(&l.c);
	load_done(&l);

	/* Case matters: keys are lower case. */
	load(MINIMAL "Tolerance = 5\n", &l);
	FAILED_WITH(&l, ":3: Tolerance: unknown key (did you mean tolerance?)");
	load_done(&l);
}
END_TEST

/* A typo names the key it was probably meant to be: a letter missing,
 * extra, wrong or swapped with its neighbour; nothing when no key is
 * close.  Only a key name from the table is ever added. */
START_TEST(did_you_mean)
{
	static const struct { const char *line, *want; } cases[] = {
		{ "databse = /srv/a.db",
		  ":3: databse: unknown key (did you mean database?)" },
		{ "tolerence = 5",
		  ":3: tolerence: unknown key (did you mean tolerance?)" },
		{ "secrets = " OTHER_SECRET,
		  ":3: secrets: unknown key (did you mean secret?)" },
		{ "hnadler = /bin/true",
		  ":3: hnadler: unknown key (did you mean handler?)" },
		{ "retry_bsae = 5",
		  ":3: retry_bsae: unknown key (did you mean retry_base?)" },
		{ "max-body = 5", ":3: (a line that is not key = value): "
		  "unknown key (did you mean max_body?)" },
		/* a key's start: the key it was meant to be */
		{ "logfile = /srv/w.log",
		  ":3: logfile: unknown key (did you mean log?)" },
		{ "database_url = /srv/a.db",
		  ":3: database_url: unknown key (did you mean database?)" },
		{ "handler_time = 5",
		  ":3: handler_time: unknown key (did you mean handler_timeout?)" },
		/* far from every key: a lower-case word is named, nothing added */
		{ "colour = blue", ":3: colour: unknown key" },
		{ "nope = 1", ":3: nope: unknown key" },
		/* 2 from "log": too short; the start of several keys */
		{ "foo = 1", ":3: foo: unknown key" },
		{ "api = 1", ":3: api: unknown key" },
		{ "retry = 1", ":3: retry: unknown key" },
		/* a word with digits may be a password: not printed */
		{ "hunter22 = 1", ":3: (a word that is not a key): unknown key" },
	};
	char text[512];
	struct load l;

	for (size_t i = 0; i < NELEM(cases); i++) {
		snprintf(text, sizeof text, MINIMAL "%s\n", cases[i].line);
		load(text, &l);
		FAILED_WITH(&l, cases[i].want);
		ck_assert_msg(!shows_secret(err_text(&l), OTHER_SECRET + 6), "%s",
		    err_text(&l));
		load_done(&l);
	}
}
END_TEST

/* A broken config still names its log file, from any line (the receiver
 * says what is wrong there, not on the web server's stderr); relative to
 * the file like every path; everything else is left empty. */
START_TEST(broken_config_keeps_its_log)
{
	struct load l;
	const char *slash;

	load("database = /srv/a.db\n"
	    "secret = " KAT_SECRET "\n"
	    "databse = /srv/typo.db\n"
	    "log = hook.log\n", &l);
	FAILED_WITH(&l, ":3: databse: unknown key (did you mean database?)");
	ck_assert_ptr_nonnull(l.c.log);
	slash = strrchr(l.c.log, '/');
	ck_assert_ptr_nonnull(slash);
	ck_assert_str_eq(slash, "/hook.log");
	ck_assert_ptr_null(l.c.database);
	ck_assert_uint_eq(l.c.nsecrets, 0);
	load_done(&l);

	load("database = /srv/a.db\nsecret = whsec_x\n", &l);
	ck_assert_ptr_null(l.c.log);
	load_done(&l);
}
END_TEST

START_TEST(retention_floor)
{
	struct load l;

	load(MINIMAL "retention = 2d\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(strncmp(err_text(&l), l.path, strlen(l.path)) == 0 &&
	    contains(err_text(&l), ":3: retention: ") &&
	    contains(err_text(&l), "3d"), "%s", err_text(&l));
	load_done(&l);

	/* One second short of 3 days. */
	load(MINIMAL "retention = 259199\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: retention: "), "%s",
	    err_text(&l));
	load_done(&l);

	load(MINIMAL "retention = 72h\n", &l);
	LOADED(&l);
	ck_assert_int_eq(l.c.retention_s, 3 * 86400);
	load_done(&l);

	load(MINIMAL "retention = 7days\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: retention: "), "%s",
	    err_text(&l));
	load_done(&l);
}
END_TEST

START_TEST(bad_secret_never_shown)
{
	static const char *bad[] = {
		"whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLaSw",	/* URL-safe */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaS!",
		"whpk_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",	/* 24 bytes */
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw MfKQ9r8GKYqrTwjU",
		"MfKQ9r8G KYqrTwjU PD8ILPZI",
		"hunter2hunter2hunter2",
	};
	char text[512];
	struct load l;

	for (size_t i = 0; i < NELEM(bad); i++) {
		snprintf(text, sizeof text, "database = /srv/a.db\n"
		    "# the secret\nsecret = %s\n", bad[i]);
		load(text, &l);
		ck_assert_msg(l.rc == -1, "took secret %s", bad[i]);
		ck_assert_msg(contains(err_text(&l), ":3: secret: "), "%s",
		    err_text(&l));
		ck_assert_msg(!shows_secret(err_text(&l), bad[i]),
		    "error shows the secret: %s", err_text(&l));
		load_done(&l);
	}
}
END_TEST

/*
 * One secret line that cannot load is not the whole config's failure
 * while another secret loads (docs/signing-secrets.md): the good ones verify, the
 * bad line is named in secret_skipped (never its value) for the
 * receiver's log and check.  Either order; several bad lines; any other
 * error still fails the file, and is the one reported.
 */
START_TEST(bad_secret_skipped_beside_a_good_one)
{
	static const char *bad = "whsec_MfKQ9r8GKYqrTwjU-D8ILPZIo2LaLaSw";
	char text[1024], want[512];
	struct load l;

	snprintf(text, sizeof text, "database = /srv/a.db\nsecret = %s\n"
	    "secret = " KAT_SECRET "\n", bad);
	load(text, &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 1);
	ck_assert_ptr_nonnull(l.c.secret_skipped);
	snprintf(want, sizeof want, "%s:2: secret: not standard base64 (or "
	    "longer than 128 bytes)", l.path);
	ck_assert_str_eq(l.c.secret_skipped, want);
	ck_assert(!shows_secret(l.c.secret_skipped, bad));
	load_done(&l);

	snprintf(text, sizeof text, "database = /srv/a.db\nsecret = "
	    KAT_SECRET "\nsecret = %s\nsecret = \"%s\"\nsecret = "
	    OTHER_SECRET "\n", bad, bad);
	load(text, &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 2);
	ck_assert(contains(l.c.secret_skipped, ":3: secret: not standard "));
	ck_assert(contains(l.c.secret_skipped, "\n"));
	/* Quoted, the value is its content: refused for what it is. */
	ck_assert(contains(l.c.secret_skipped, ":4: secret: not standard "));
	load_done(&l);

	/* Every secret loads: nothing skipped. */
	load(MINIMAL, &l);
	LOADED(&l);
	ck_assert_ptr_null(l.c.secret_skipped);
	load_done(&l);

	/* Another error fails the file, and is the error reported. */
	snprintf(text, sizeof text, "database = /srv/a.db\nsecret = %s\n"
	    "secret = " KAT_SECRET "\nmax_body = lots\n", bad);
	load(text, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":4: max_body: "), "%s",
	    err_text(&l));
	load_done(&l);
	snprintf(text, sizeof text, "database = /srv/a.db\nsecret = %s\n"
	    "secret = " KAT_SECRET "\njust words\n", bad);
	load(text, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":4: not a key = value line"),
	    "%s", err_text(&l));
	load_done(&l);
}
END_TEST

START_TEST(required_keys)
{
	struct load l;

	load("secret = " KAT_SECRET "\n", &l);
	FAILED_WITH(&l, ": database: required");
	assert_empty_config(&l.c);
	ck_assert_msg(!shows_secret(err_text(&l), KAT_SECRET + 6), "%s",
	    err_text(&l));
	load_done(&l);

	load("database = /srv/a.db\nhandler = /bin/true\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(strncmp(err_text(&l), l.path, strlen(l.path)) == 0 &&
	    strncmp(err_text(&l) + strlen(l.path), ": secret: required", 18) == 0,
	    "%s", err_text(&l));
	assert_empty_config(&l.c);
	load_done(&l);

	load("", &l);
	ck_assert_int_eq(l.rc, -1);
	load_done(&l);
}
END_TEST

START_TEST(relative_paths)
{
	char dir[128], want[192];
	struct load l;

	snprintf(dir, sizeof dir, "%s/sub-XXXXXX", confdir);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	load_in(dir, "database = inbox.db\nsecret = " KAT_SECRET "\n"
	    "log = logs/webhook.log\n", strlen("database = inbox.db\nsecret = "
	    KAT_SECRET "\nlog = logs/webhook.log\n"), &l);
	rmdir(dir);
	LOADED(&l);
	snprintf(want, sizeof want, "%s/inbox.db", dir);
	ck_assert_str_eq(l.c.database, want);
	snprintf(want, sizeof want, "%s/logs/webhook.log", dir);
	ck_assert_str_eq(l.c.log, want);
	load_done(&l);

	/* "data/x.db" relative to the file's directory; an absolute path
	 * unchanged. */
	load("database = data/x.db\nsecret = " KAT_SECRET "\n", &l);
	LOADED(&l);
	snprintf(want, sizeof want, "%s/data/x.db", confdir);
	ck_assert_str_eq(l.c.database, want);
	load_done(&l);
	load("database = /abs/x.db\nsecret = " KAT_SECRET "\n", &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.database, "/abs/x.db");
	load_done(&l);
}
END_TEST

START_TEST(handler_kept_exactly)
{
	static const char *handler =
	    "/usr/bin/env FOO=a;b sh -c 'echo \"#1\"; exit 0' # not a comment ; nor this";
	char text[512];
	struct load l;

	snprintf(text, sizeof text, MINIMAL "handler = %s\n", handler);
	load(text, &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.handler, handler);
	load_done(&l);

	/* '=' inside a value belongs to the value. */
	load(MINIMAL "handler = env A=1 B==2 /bin/h\n", &l);
	LOADED(&l);
	ck_assert_str_eq(l.c.handler, "env A=1 B==2 /bin/h");
	load_done(&l);
}
END_TEST

/*
 * Regression (fuzz/regress/config/long-line-*): inih reads a line longer
 * than its first buffer (255 bytes) in pieces, and each piece was counted
 * as a line and checked for a '[': a handler with "[ -f …" at byte 255
 * was refused as a section, and every error after a long line named the
 * wrong line (and was reported as "not a key = value line").
 */
START_TEST(long_line_counts_once)
{
	char handler[1024], text[2048];
	struct load l;
	size_t lens[] = { 255, 256, 511, 512, 1000 }, i, pad;

	for (i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		/* "handler = " then padding, then "[ -f x ]" at byte lens[i]. */
		pad = lens[i] - strlen("handler = ");
		memset(handler, 'a', pad);
		snprintf(handler + pad, sizeof handler - pad, "[ -f x ] && true");
		snprintf(text, sizeof text, MINIMAL "handler = %s\n", handler);
		load(text, &l);
		ck_assert_msg(l.rc == 0, "[ at %zu: refused: %s", lens[i],
		    err_text(&l));
		ck_assert_str_eq(l.c.handler, handler);
		load_done(&l);

		snprintf(text, sizeof text, MINIMAL "handler = %s\ntolerence = 5\n",
		    handler);
		load(text, &l);
		FAILED_WITH(&l, ":4: tolerence: unknown key (did you mean tolerance?)");
		load_done(&l);
	}
}
END_TEST

START_TEST(no_inline_comments)
{
	struct load l;

	/* Values are exact, so a trailing comment makes a number bad. */
	load(MINIMAL "tolerance = 30 # half a minute\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: tolerance: "), "%s",
	    err_text(&l));
	load_done(&l);
	load(MINIMAL "max_attempts = 5 ; five\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: max_attempts: "), "%s",
	    err_text(&l));
	load_done(&l);
}
END_TEST

/*
 * A secret in double quotes is its content, byte for byte: blanks at its
 * edges (inih drops those around the value, never inside the quotes),
 * '#' and ';' (inline comments are off: a ';' after a blank inside the
 * quotes reaches us), \" and \\.  Issue: a WooCommerce secret that
 * began with a space could not be written, and answered 401 forever.
 */
START_TEST(quoted_secret_byte_for_byte)
{
	static const char woo[] = " Kx7#p2; \"q\" ";	/* 13 bytes */
	const struct config_source *src;
	struct load l;
	char fp[SIGNATURE_FP_SIZE];

	load(MINIMAL "[source woo]\nscheme = woocommerce\n"
	    "secret = \" Kx7#p2; \\\"q\\\" \"\n"
	    "secret =\t\"a ;b #c \\\\ \"  \r\n"
	    "secret = \"It's\"\n"
	    "[source gh]\nscheme = github\n"
	    "secret = It's a Secret to Everybody\n", &l);
	LOADED(&l);
	src = config_source_find(&l.c, "woo");
	ck_assert_ptr_nonnull(src);
	ck_assert_uint_eq(src->nsecrets, 3);
	ck_assert_uint_eq(src->secrets[0].len, sizeof woo - 1);
	ck_assert_mem_eq(src->secrets[0].key, woo, sizeof woo - 1);
	ck_assert_uint_eq(src->secrets[1].len, 10);
	ck_assert_mem_eq(src->secrets[1].key, "a ;b #c \\ ", 10);
	ck_assert_uint_eq(src->secrets[2].len, 4);
	ck_assert_mem_eq(src->secrets[2].key, "It's", 4);
	/* Unquoted values are as before. */
	src = config_source_find(&l.c, "gh");
	ck_assert_uint_eq(src->secrets[0].len, 26);
	load_done(&l);

	/* The top-level secret (the default source) may be quoted too:
	 * the same key as unquoted. */
	load(MINIMAL, &l);
	LOADED(&l);
	memcpy(fp, l.c.secrets[0].fingerprint, sizeof fp);
	load_done(&l);
	load("database = /srv/a.db\nsecret = \"" KAT_SECRET "\"\n", &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 1);
	ck_assert_str_eq(l.c.secrets[0].fingerprint, fp);
	load_done(&l);
}
END_TEST

/* A quote that does not make a quoted value is refused with how to write
 * one; the top level and a section alike; never the value. */
START_TEST(quoted_secret_malformed)
{
	static const struct {
		const char	*value, *why;
	} bad[] = {
		{ "\"abc", "a quote left open: a quoted value ends with \" "
		  QUOTE_HOW },
		{ "\"abc\\\"", "a quote left open: a quoted value ends with "
		  "\" " QUOTE_HOW },
		{ "\"", "a quote left open: a quoted value ends with \" "
		  QUOTE_HOW },
		{ "\"a\\bc\"", "a backslash in quotes before another byte "
		  "than \" or \\ " QUOTE_HOW },
		{ "\"ab\"c\"", "bytes after the closing quote: a quote inside "
		  "is written \\\" " QUOTE_HOW },
		{ "\"ab\" # note", "bytes after the closing quote: a quote "
		  "inside is written \\\" " QUOTE_HOW },
	};
	char text[512], want[320];
	struct load l;
	size_t i;

	for (i = 0; i < NELEM(bad); i++) {
		snprintf(text, sizeof text, "database = /srv/a.db\n"
		    "secret = %s\n", bad[i].value);
		load(text, &l);
		snprintf(want, sizeof want, ":2: secret: %s", bad[i].why);
		FAILED_WITH(&l, want);
		load_done(&l);
		snprintf(text, sizeof text, MINIMAL "[source a]\n"
		    "scheme = hmac\nheader = X-Sig\nsecret = %s\n",
		    bad[i].value);
		load(text, &l);
		snprintf(want, sizeof want, ":6: [source a]: secret: %s",
		    bad[i].why);
		FAILED_WITH(&l, want);
		load_done(&l);
	}
	/* Content the default source cannot take is refused for what it
	 * is; blanks inside the quotes of a whsec_ are named. */
	load("database = /srv/a.db\nsecret = \" " KAT_SECRET "\"\n", &l);
	FAILED_WITH(&l, ":2: secret: a blank in its quotes: a whsec_… or "
	    "whpk_… secret has none");
	load_done(&l);
	load("database = /srv/a.db\nsecret = \"\"\n", &l);
	FAILED_WITH(&l, ":2: secret: empty secret");
	load_done(&l);
	load("database = /srv/a.db\nsecret = '" KAT_SECRET "'\n", &l);
	FAILED_WITH(&l, ":2: secret: in single quotes: values are written "
	    "without them, or in double quotes (secret = whsec_...)");
	load_done(&l);
	/* The v1, of a webhook-signature entry pasted with the secret. */
	load("database = /srv/a.db\nsecret = v1," KAT_SECRET "\n", &l);
	FAILED_WITH(&l, ":2: secret: starts with v1, (the webhook-signature "
	    "header's label, copied with the secret): drop the v1, and keep "
	    "whsec_…");
	load_done(&l);
}
END_TEST

/* Review finding: inih split a line holding only a padded secret at its
 * '=', and the "key" was printed.  A secret never appears in an error. */
START_TEST(secret_never_quoted_as_a_key)
{
	static const char *const lines[] = {
		"whsec_Q9+kKL9l6/aeWWBWkMnHsTZSFPyyd6698JXacBA2Dv0=\n",
		"secret whsec_Q9+kKL9l6/aeWWBWkMnHsTZSFPyyd6698JXacBA2Dv0 = x\n",
		"whsec_shortsecret = 1\n",
	};
	struct load l;
	size_t i;

	for (i = 0; i < NELEM(lines); i++) {
		char text[512];
		snprintf(text, sizeof text, MINIMAL "%s", lines[i]);
		load(text, &l);
		ck_assert_int_eq(l.rc, -1);
		ck_assert_msg(!contains(err_text(&l), "Q9+kKL9") &&
		    !contains(err_text(&l), "shortsecret"), "%s", err_text(&l));
		ck_assert_msg(contains(err_text(&l), ":3: "), "%s", err_text(&l));
		load_done(&l);
	}
}
END_TEST

/* A token pasted without its prefix does not look like a key name either
 * (mixed case, digits), so it is not quoted; a word is, in any case. */
START_TEST(pasted_token_never_quoted)
{
	static const struct { const char *line, *token; } pasted[] = {
		{ "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw==", "MfKQ9r8GKYqrTwjU" },
		{ "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw = 1", "MfKQ9r8GKYqrTwjU" },
		{ "MfKQ9r8GKYqr: x", "MfKQ9r8GKYqr" },
		{ "0123456789abcdef0123456789abcdef=", "0123456789abcdef" },
		{ "whsec_shortsecret=", "shortsecret" },
	};
	/* Key-like words: printed only as a near miss of a key. */
	static const struct { const char *word, *want; } words[] = {
		{ "TOLERANCE", ":3: TOLERANCE: unknown key (did you mean tolerance?)" },
		{ "Max_body", ":3: Max_body: unknown key (did you mean max_body?)" },
		{ "retry2", ":3: (a word that is not a key): unknown key" },
		{ "hunter22", ":3: (a word that is not a key): unknown key" },
	};
	char text[512];
	struct load l;

	for (size_t i = 0; i < NELEM(pasted); i++) {
		snprintf(text, sizeof text, MINIMAL "%s\n", pasted[i].line);
		load(text, &l);
		ck_assert_int_eq(l.rc, -1);
		ck_assert_msg(contains(err_text(&l),
		    ":3: (a line that is not key = value): "), "%s", err_text(&l));
		ck_assert_msg(!shows_secret(err_text(&l), pasted[i].token), "%s",
		    err_text(&l));
		load_done(&l);
	}
	for (size_t i = 0; i < NELEM(words); i++) {
		snprintf(text, sizeof text, MINIMAL "%s = 5\n", words[i].word);
		load(text, &l);
		ck_assert_msg(contains(err_text(&l), words[i].want), "%s",
		    err_text(&l));
		load_done(&l);
	}
}
END_TEST

START_TEST(inline_comment_and_repeated_keys)
{
	struct load l;

	load("database = /x/inbox.db\nsecret = " KAT_SECRET "   # rotation\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":2: secret: contains a space"),
	    "%s", err_text(&l));
	load_done(&l);
	load(MINIMAL "max_body = 5\nmax_body = 6\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":4: max_body: given twice"), "%s",
	    err_text(&l));
	load_done(&l);
}
END_TEST

START_TEST(sections_refused)
{
	struct load l;

	load("[webhook]\n" MINIMAL, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":1: sections are not used"),
	    "%s", err_text(&l));
	assert_empty_config(&l.c);
	load_done(&l);
	/* A section line with no key after it is refused too. */
	load(MINIMAL "  [trailing]\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: sections are not used"),
	    "%s", err_text(&l));
	load_done(&l);

	load(MINIMAL "[extra]\nhandler = /bin/true\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: sections are not used"),
	    "%s", err_text(&l));
	load_done(&l);
}
END_TEST


/* [source NAME] sections (docs/providers.md): each sender with its scheme
 * and its secrets exactly as the provider shows them. */
START_TEST(sources_loaded)
{
	const struct config_source *st, *gh, *hm, *tw;
	struct load l;

	load(MINIMAL
	    "\n[source stripe]\n"
	    "scheme = stripe\n"
	    "secret = whsec_5f0c3d9a7be4e1c2b8a6d4f0e9c7a5b3\n"
	    "secret = whsec_0123456789abcdef0123456789abcdef\n"
	    "tolerance = 10m\n"
	    "[source gh]\n"
	    "scheme = github\n"
	    "secret = It's a Secret to Everybody\n"
	    "[source my-erp]\n"
	    "scheme = hmac\n"
	    "header = X-Signature\n"
	    "prefix = sha256=\n"
	    "algorithm = sha512\n"
	    "encoding = base64\n"
	    "timestamp_header = X-Time\n"
	    "separator = :\n"
	    "secret = k\n"
	    "[source twilio]\n"
	    "scheme = twilio\n"
	    "url = https://hooks.example.net/webhook.fcgi/twilio\n"
	    "secret = 9f8e7d6c5b4a39281706f5e4d3c2b1a0\n"
	    "id = I-Twilio-Idempotency-Token\n"
	    "type = /EventType\n", &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsources, 4);
	/* The top-level secret stays the default source's. */
	ck_assert_uint_eq(l.c.nsecrets, 1);
	st = config_source_find(&l.c, "stripe");
	ck_assert_ptr_nonnull(st);
	ck_assert_ptr_eq(st->scheme, scheme_find("stripe"));
	ck_assert_uint_eq(st->nsecrets, 2);
	/* Stripe's key is the whole whsec_ text. */
	ck_assert_uint_eq(st->secrets[0].len, 38);
	ck_assert_mem_eq(st->secrets[0].key, "whsec_5f0c", 10);
	ck_assert_int_eq(st->params.tolerance, 600);
	ck_assert_int_eq(st->line, 4);
	gh = config_source_find(&l.c, "gh");
	ck_assert_ptr_nonnull(gh);
	ck_assert_uint_eq(gh->secrets[0].len, 26);
	ck_assert_mem_eq(gh->secrets[0].key, "It's a Secret to Everybody", 26);
	ck_assert_int_eq(gh->params.tolerance, 0);
	hm = config_source_find(&l.c, "my-erp");
	ck_assert_ptr_nonnull(hm);
	ck_assert_str_eq(hm->params.header, "X-Signature");
	ck_assert_str_eq(hm->params.prefix, "sha256=");
	ck_assert_int_eq(hm->params.alg, SCHEME_SHA512);
	ck_assert_int_eq(hm->params.encoding, SCHEME_BASE64);
	ck_assert_str_eq(hm->params.timestamp_header, "X-Time");
	ck_assert_str_eq(hm->params.separator, ":");
	tw = config_source_find(&l.c, "twilio");
	ck_assert_ptr_nonnull(tw);
	ck_assert_str_eq(tw->params.url,
	    "https://hooks.example.net/webhook.fcgi/twilio");
	/* Fields: a header name or a JSON pointer, kept as written. */
	ck_assert_str_eq(tw->locate.id, "I-Twilio-Idempotency-Token");
	ck_assert_str_eq(tw->locate.type, "/EventType");
	ck_assert_ptr_null(tw->locate.time);
	ck_assert_ptr_null(st->locate.id);
	ck_assert_ptr_null(config_source_find(&l.c, "shopify"));
	load_done(&l);
}
END_TEST

/* A file of sections alone has no default source: no top-level secret is
 * asked for (docs/DESIGN.md "Sources"). */
START_TEST(sources_only)
{
	struct load l;

	load("database = /tmp/inbox.db\n"
	    "handler = /bin/true\n"
	    "[source gh]\n"
	    "scheme = github\n"
	    "secret = x\n", &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 0);
	ck_assert_uint_eq(l.c.nsources, 1);
	load_done(&l);
	/* Without any section the secret stays required. */
	load("database = /tmp/inbox.db\nhandler = /bin/true\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), "secret: required"), "%s",
	    err_text(&l));
	load_done(&l);
}
END_TEST

/* Each mistake in a source, refused with its line and never its secret. */
START_TEST(sources_refused)
{
	static const struct {
		const char	*text;
		const char	*want;	/* the error after "<path>" */
	} cases[] = {
		{ "[source stripe]\nsecret = whsec_abc\n",
		  ":4: [source stripe]: secret: put scheme = first" },
		{ "[source stripe]\nscheme = strype\n",
		  ":4: [source stripe]: scheme: not one of standard stripe "
		  "github shopify woocommerce slack paddle discord gitlab "
		  "twilio mercadopago hmac" },
		{ "[source stripe]\nscheme = stripe\nsecret = sk_live_51AbCdEfGh\n",
		  ":5: [source stripe]: secret: that is a Stripe API key; the "
		  "webhook signing secret starts with whsec_ (Dashboard, "
		  "Webhooks, the endpoint)" },
		{ "[source stripe]\nscheme = stripe\n",
		  ":3: [source stripe]: secret: required (as the provider's "
		  "dashboard shows it)" },
		{ "[source stripe]\n",
		  ":3: [source stripe]: scheme: required" },
		{ "[source a]\nscheme = github\nsecret = x\n[source a]\n",
		  ":6: [source a]: given twice (line 3)" },
		{ "[source Stripe]\n",
		  ":3: [source NAME]: NAME is 1 to 32 of a-z, 0-9, _ and -" },
		{ "[source]\n",
		  ":3: sections are not used in this file but [source NAME]" },
		{ "[source a] x\n",
		  ":3: sections are not used in this file but [source NAME]" },
		{ "[source a]\nscheme = stripe\nheader = X-Sig\n",
		  ":5: [source a]: header: only for scheme = hmac" },
		{ "[source a]\nscheme = github\nurl = https://x/\n",
		  ":5: [source a]: url: only for scheme = twilio" },
		{ "[source a]\nscheme = hmac\nsecret = k\n",
		  ":3: [source a]: scheme = hmac needs a signature header" },
		{ "[source a]\nscheme = twilio\nsecret = k\n",
		  ":3: [source a]: scheme = twilio needs url = the https:// URL "
		  "given to Twilio (at most 1024 bytes)" },
		{ "[source a]\nscheme = github\nscheme = github\n",
		  ":5: [source a]: scheme: given twice" },
		{ "[source a]\nscheme = github\nhandler = /bin/true\n",
		  ":5: [source a]: handler: not a source's key (top-level keys "
		  "go above the first section)" },
		{ "[source a]\nscheme = github\nwhsec_abcdefgh = x\n",
		  ":5: [source a]: unknown key" },
		{ "[source a]\nscheme = github\nsecret = \"abc\n",
		  ":5: [source a]: secret: a quote left open: a quoted value "
		  "ends with \" " QUOTE_HOW },
		{ "[source a]\nscheme = github\nsecret = 'abc'\n",
		  ":5: [source a]: secret: in single quotes: drop them, or if "
		  "they are the secret's, write it in double quotes "
		  "(secret = \"'...'\")" },
		{ "[source a]\nscheme = standard\nsecret = v1,whsec_"
		  "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n",
		  ":5: [source a]: secret: starts with v1, (the "
		  "webhook-signature header's label, copied with the secret): "
		  "drop the v1, and keep whsec_…" },
		{ "[source a]\nscheme = stripe\nsecret = v1,whsec_abc\n",
		  ":5: [source a]: secret: starts with v1, (a signature "
		  "header's label, copied with the secret): drop the v1, and "
		  "keep whsec_…" },
		{ "[source a]\nscheme = hmac\nalgorithm = md5\n",
		  ":5: [source a]: algorithm: not one of sha1 sha256 sha512" },
		{ "[source a]\nscheme = slack\ntolerance = 2d\n",
		  ":5: [source a]: tolerance: not a duration of 0 (no window) "
		  "to 1d" },
		{ "[source default]\n",
		  ":3: [source default]: the top-level keys are the default "
		  "source; name this one otherwise" },
		{ "[source a]\nscheme = github\nid = X Id\n",
		  ":5: [source a]: id: neither a header name nor a JSON "
		  "pointer (\"/data/id\")" },
		{ "[source a]\nscheme = github\nobject = \n",
		  ":5: [source a]: object: empty value" },
		{ "[source a]\nscheme = discord\nsecret = abcd\n",
		  ":5: [source a]: secret: a Discord public key is 64 hex "
		  "digits (General Information, Public Key)" },
	};
	struct load l;
	char text[1024];

	for (size_t i = 0; i < NELEM(cases); i++) {
		snprintf(text, sizeof text, "%s%s", MINIMAL, cases[i].text);
		load(text, &l);
		ck_assert_msg(l.rc == -1, "case %zu loaded", i);
		FAILED_WITH(&l, cases[i].want);
		ck_assert_msg(!contains(err_text(&l), "51AbCdEfGh"),
		    "a secret in: %s", err_text(&l));
		load_done(&l);
	}
}
END_TEST

/* The most sections, and one more. */
START_TEST(sources_capped)
{
	struct buf text;
	struct load l;

	buf_init(&text, CONFIG_FILE_MAX);
	ck_assert_int_eq(buf_printf(&text, "%s", MINIMAL), 0);
	for (int i = 0; i < CONFIG_SOURCES_MAX; i++)
		ck_assert_int_eq(buf_printf(&text, "[source s%d]\nscheme = "
		    "gitlab\nsecret = t%d\n", i, i), 0);
	load(text.data, &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsources, CONFIG_SOURCES_MAX);
	load_done(&l);
	ck_assert_int_eq(buf_printf(&text, "[source extra]\n"), 0);
	load(text.data, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), "more than 16 [source] sections"),
	    "%s", err_text(&l));
	load_done(&l);
	buf_free(&text);
}
END_TEST

/* A file of exactly `size` bytes: MINIMAL, then one comment line. */
static char *
file_of_size(size_t size)
{
	char *text = malloc(size + 1);
	size_t m = strlen(MINIMAL);

	ck_assert_ptr_nonnull(text);
	ck_assert_uint_gt(size, m + 2);
	memcpy(text, MINIMAL, m);
	text[m] = '#';
	memset(text + m + 1, 'x', size - m - 2);
	text[size - 1] = '\n';
	text[size] = '\0';
	return text;
}

START_TEST(file_size_cap)
{
	struct load l;
	char *text;

	text = file_of_size(CONFIG_FILE_MAX);
	load_in(confdir, text, CONFIG_FILE_MAX, &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 1);
	load_done(&l);
	free(text);

	text = file_of_size(CONFIG_FILE_MAX + 1);
	load_in(confdir, text, CONFIG_FILE_MAX + 1, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(strncmp(err_text(&l), l.path, strlen(l.path)) == 0 &&
	    contains(err_text(&l), "64 KiB"), "%s", err_text(&l));
	assert_empty_config(&l.c);
	load_done(&l);
	free(text);
}
END_TEST

START_TEST(empty_value)
{
	struct load l;

	load(MINIMAL "log =\n", &l);
	FAILED_WITH(&l, ":3: log: empty value");
	load_done(&l);
	load("database =    \nsecret = " KAT_SECRET "\n", &l);
	FAILED_WITH(&l, ":1: database: empty value");
	load_done(&l);
	load(MINIMAL "secret =\n", &l);
	FAILED_WITH(&l, ":3: secret: empty value");
	load_done(&l);
}
END_TEST

START_TEST(malformed_lines)
{
	struct load l;

	load(MINIMAL "just some words\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: "), "%s", err_text(&l));
	load_done(&l);

	load(MINIMAL "database = /srv/other.db\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), ":3: database: "), "%s",
	    err_text(&l));
	load_done(&l);

	load_in(confdir, MINIMAL "handler = a\0b\n",
	    strlen(MINIMAL) + strlen("handler = a") + 3, &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_msg(contains(err_text(&l), "NUL"), "%s", err_text(&l));
	load_done(&l);
}
END_TEST

START_TEST(value_bounds)
{
	static const struct { const char *line; const char *key; } bad[] = {
		{ "tolerance = 0", "tolerance" },
		{ "tolerance = 2d", "tolerance" },
		{ "tolerance = -5", "tolerance" },
		{ "max_body = 0", "max_body" },
		{ "max_body = 67108865", "max_body" },
		{ "max_body = 1MiB", "max_body" },
		{ "handler_timeout = 0", "handler_timeout" },
		{ "handler_timeout = 2d", "handler_timeout" },
		{ "max_attempts = 0", "max_attempts" },
		{ "max_attempts = 1001", "max_attempts" },
		{ "max_attempts = 3.5", "max_attempts" },
		{ "settle = 2h", "settle" },
		{ "settle = fast", "settle" },
		{ "busy_timeout = 0", "busy_timeout" },
		{ "busy_timeout = 11", "busy_timeout" },
		{ "busy_timeout = 5000", "busy_timeout" },
		{ "synchronous = OFF", "synchronous" },
		{ "synchronous = Full", "synchronous" },
	};
	char text[512], where[64];
	struct load l;

	for (size_t i = 0; i < NELEM(bad); i++) {
		snprintf(text, sizeof text, MINIMAL "%s\n", bad[i].line);
		snprintf(where, sizeof where, ":3: %s: ", bad[i].key);
		load(text, &l);
		ck_assert_msg(l.rc == -1, "took \"%s\"", bad[i].line);
		ck_assert_msg(contains(err_text(&l), where), "\"%s\": %s",
		    bad[i].line, err_text(&l));
		load_done(&l);
	}

	load(MINIMAL "max_body = 67108864\nmax_attempts = 1000\n"
	    "tolerance = 1d\nsettle = 1h\nbusy_timeout = 10s\n"
	    "synchronous = full\n", &l);
	LOADED(&l);
	ck_assert_int_eq(l.c.max_body_bytes, 67108864);
	ck_assert_int_eq(l.c.max_attempts, 1000);
	ck_assert_int_eq(l.c.tolerance_s, 86400);
	ck_assert_int_eq(l.c.settle_s, 3600);
	ck_assert_int_eq(l.c.busy_timeout_ms, 10000);
	ck_assert_int_eq(l.c.synchronous, CONFIG_SYNC_FULL);
	load_done(&l);
}
END_TEST

/* Each number's range, as the table in lib/program/config.c has it: min and max
 * load (stored in the field's unit), min-1 and max+1 are refused with a
 * message naming the range. */
START_TEST(ranges_from_the_table)
{
	static const struct {
		const char *key, *below, *min, *max, *above;
		size_t field;		/* an int64_t of struct config */
		int64_t min_v, max_v;	/* min and max as stored */
		const char *what;	/* the message after "key: " */
	} r[] = {
		{ "tolerance", "0", "1", "1d", "86401",
		  offsetof(struct config, tolerance_s), 1, 86400,
		  "not a duration between 1s and 1d" },
		{ "handler_timeout", "0s", "1s", "24h", "1441m",
		  offsetof(struct config, handler_timeout_s), 1, 86400,
		  "not a duration between 1s and 1d" },
		{ "settle", "-1", "0", "60m", "3601",
		  offsetof(struct config, settle_s), 0, 3600,
		  "not a duration between 0s and 1h" },
		{ "retry_base", "0", "1", "86400", "86401s",
		  offsetof(struct config, retry_base_s), 1, 86400,
		  "not a duration between 1s and 1d" },
		{ "retry_max", "0", "1", "7d", "604801",
		  offsetof(struct config, retry_max_s), 1, 7 * 86400,
		  "not a duration between 1s and 7d" },
		{ "busy_timeout", "0", "1", "10s", "11",
		  offsetof(struct config, busy_timeout_ms), 1000, 10000,
		  "not a duration between 1s and 10s" },
		{ "body_timeout", "0", "1", "1m", "61",
		  offsetof(struct config, body_timeout_s), 1, 60,
		  "not a duration between 1s and 1m" },
		{ "api_timeout", "0", "1", "5m", "301",
		  offsetof(struct config, api_timeout_s), 1, 300,
		  "not a duration between 1s and 5m" },
		{ "max_body", "0", "1", "67108864", "67108865",
		  offsetof(struct config, max_body_bytes), 1, 67108864,
		  "not a byte count between 1 and 67108864" },
		{ "max_attempts", "0", "1", "1000", "1001",
		  offsetof(struct config, max_attempts), 1, 1000,
		  "not a whole number between 1 and 1000" },
		{ "retention", "259199", "3d", "3650d", "3651d",
		  offsetof(struct config, retention_s), 3 * 86400, 3650 * 86400LL,
		  "not a duration between 3d and 3650d" },
	};
	char text[512], want[256];
	struct load l;

	for (size_t i = 0; i < NELEM(r); i++) {
		const char *ok[] = { r[i].min, r[i].max };
		const char *bad[] = { r[i].below, r[i].above };
		int64_t ok_v[] = { r[i].min_v, r[i].max_v };

		for (size_t j = 0; j < 2; j++) {
			snprintf(text, sizeof text, MINIMAL "%s = %s\n", r[i].key,
			    ok[j]);
			load(text, &l);
			LOADED(&l);
			ck_assert_msg(*(int64_t *)(void *)((char *)&l.c +
			    r[i].field) == ok_v[j], "%s = %s", r[i].key, ok[j]);
			load_done(&l);

			snprintf(text, sizeof text, MINIMAL "%s = %s\n", r[i].key,
			    bad[j]);
			/* retention below its floor says why, not the range */
			if (j == 0 && strcmp(r[i].key, "retention") == 0)
				snprintf(want, sizeof want, ":3: retention: below 3d, "
				    "the provider's retry period: a late retry would "
				    "be taken as new");
			else
				snprintf(want, sizeof want, ":3: %s: %s", r[i].key,
				    r[i].what);
			load(text, &l);
			FAILED_WITH(&l, want);
			load_done(&l);
		}
	}
}
END_TEST

/* A single-valued key given twice is refused on its second line, also
 * with the same value; the three lists take any number of lines. */
START_TEST(given_twice)
{
	static const struct { const char *key, *value; } once[] = {
		{ "database", "/srv/a.db" }, { "tolerance", "5m" },
		{ "max_body", "1024" }, { "handler", "/bin/h" },
		{ "handler_timeout", "1m" }, { "max_attempts", "3" },
		{ "retention", "7d" }, { "settle", "2s" }, { "retry_base", "30s" },
		{ "retry_max", "6h" }, { "busy_timeout", "5s" },
		{ "body_timeout", "10s" }, { "synchronous", "FULL" },
		{ "log", "w.log" }, { "api_url", "https://a.example/v1" },
		{ "api_token_file", "token" }, { "api_ca_file", "ca.pem" },
		{ "api_timeout", "10" },
	};
	char text[512], want[64];
	struct load l;

	for (size_t i = 0; i < NELEM(once); i++) {
		int db = strcmp(once[i].key, "database") == 0;

		snprintf(text, sizeof text, "secret = " KAT_SECRET "\n%s"
		    "%s = %s\n%s = %s\n", db ? "" : "database = /srv/a.db\n",
		    once[i].key, once[i].value, once[i].key, once[i].value);
		snprintf(want, sizeof want, ":%d: %s: given twice", db ? 3 : 4,
		    once[i].key);
		load(text, &l);
		FAILED_WITH(&l, want);
		load_done(&l);
	}
	load(MINIMAL "secret = " OTHER_SECRET "\n"
	    "api_resource = person people\napi_resource = child children\n"
	    "refetch = a\nrefetch = b c\n", &l);
	LOADED(&l);
	ck_assert_uint_eq(l.c.nsecrets, 2);
	ck_assert_uint_eq(l.c.nresources, 2);
	ck_assert_uint_eq(l.c.nrefetch, 3);
	load_done(&l);
}
END_TEST

/* Whatever line a secret is pasted into, after any key or none, set or
 * refused: no error ever shows any 8 bytes of it. */
/* `database` is a path or a postgresql:// URI: a libpq key=value string
 * is refused (it would become a SQLite file named after it, password and
 * all), saying which form to write, without the value; a path with '='
 * in it, and a URI with key=value parameters, stay what they are. */
START_TEST(database_conninfo_refused)
{
	static const char *const conninfos[] = {
		"host=db.internal dbname=inbox user=webhook password=PWsecret1",
		"dbname=inbox password=PWsecret1",
		"password = PWsecret1 host=/run/postgresql",
		"inbox.db sslmode=require password=PWsecret1",
	};
	char text[512];
	struct load l;

	for (size_t i = 0; i < NELEM(conninfos); i++) {
		snprintf(text, sizeof text, "database = %s\nsecret = "
		    KAT_SECRET "\n", conninfos[i]);
		load(text, &l);
		FAILED_WITH(&l, ":1: database: a libpq key=value connection "
		    "string: write a PostgreSQL inbox as a URI, "
		    "postgresql://user@host/dbname (the password in a "
		    "passfile, not here; docs/postgresql.md)");
		ck_assert_ptr_null(strstr(err_text(&l), "PWsecret1"));
		load_done(&l);
	}
	load("database = /srv/host=a/in=box.db\nsecret = " KAT_SECRET "\n", &l);
	ck_assert_int_eq(l.rc, 0);
	ck_assert_str_eq(l.c.database, "/srv/host=a/in=box.db");
	load_done(&l);
	load("database = postgresql:///inbox?host=/run/pg&user=webhook\n"
	    "secret = " KAT_SECRET "\n", &l);
	ck_assert_int_eq(l.rc, 0);
	load_done(&l);
}
END_TEST

START_TEST(no_secret_in_any_error)
{
	static const char *const secrets[] = {
		"whsec_Q9+kKL9l6/aeWWBWkMnHsTZSFPyyd6698JXacBA2Dv0=",
		"whpk_1SiA4o9hyqTCpIqC5V9HUakiiaeACeqfZTInDBbOir4=",
		"whsec_AAAABBBBCCCCDDDD",	/* short, and a word to key_like */
	};
	/* line = before KEY between SECRET after */
	static const struct { const char *before, *between, *after; } shapes[] = {
		{ "", " = ", "" }, { "", " ", "" }, { "", ": ", "" },
		{ "", " = x ", "" }, { "", " = ", " x" }, { "", "=", "=" },
		{ "", "", "" }, { "", "", " = 1" }, { "[", "", "]" },
		{ "", " = ", "\r" }, { "\xEF\xBB\xBF", " = ", "" },
	};
	char text[512];
	struct load l;

	for (size_t s = 0; s < NELEM(secrets); s++) {
		const char *body = strchr(secrets[s], '_') + 1;

		for (size_t k = 0; k <= NELEM(all_keys); k++)
			for (size_t f = 0; f < NELEM(shapes); f++) {
				snprintf(text, sizeof text, MINIMAL "%s%s%s%s%s\n",
				    shapes[f].before,
				    k < NELEM(all_keys) ? all_keys[k] : "",
				    shapes[f].between, secrets[s], shapes[f].after);
				load(text, &l);
				ck_assert_msg(!shows_secret(err_text(&l), body) &&
				    !shows_secret(err_text(&l), secrets[s]), "%s: %s",
				    text, err_text(&l));
				load_done(&l);
			}
	}
}
END_TEST

START_TEST(unreadable)
{
	struct config c;
	struct buf err;

	buf_init(&err, BUF_ERR_MAX);
	ck_assert_int_eq(config_load("/nonexistent/webhook.conf", &c, &err), -1);
	ck_assert_msg(strncmp(err.data, "/nonexistent/webhook.conf: ", 27) == 0,
	    "%s", err.data);
	assert_empty_config(&c);
	ck_assert_int_eq(config_load("/tmp", &c, &err), -1);
	ck_assert_msg(strncmp(err.data, "/tmp: ", 6) == 0 &&
	    contains(err.data, "regular file"), "%s", err.data);
	assert_empty_config(&c);
	/* Freeing a zeroed, then a freed, config is harmless. */
	config_free(&c);
	config_free(&c);
	buf_free(&err);
}
END_TEST

START_TEST(error_buffer_reused)
{
	struct load l;
	struct config c;

	/* A later load's error replaces the earlier one's. */
	load(MINIMAL "nope = 1\n", &l);
	ck_assert_int_eq(l.rc, -1);
	ck_assert_int_eq(config_load("/nonexistent/x.conf", &c, &l.err), -1);
	ck_assert_msg(strncmp(err_text(&l), "/nonexistent/x.conf: ", 21) == 0,
	    "%s", err_text(&l));
	ck_assert_msg(!contains(err_text(&l), "nope"), "%s", err_text(&l));
	load_done(&l);
}
END_TEST

/* config_load_text, config_load's parse without the file: the text's
 * length is the truth (no NUL after it needed), and what a file is
 * refused for, a text is refused for, with the same words. */
START_TEST(load_text)
{
	static const char text[] = MINIMAL "tolerance = 60\nnot a line";
	size_t len = strlen(MINIMAL) + strlen("tolerance = 60\n");
	struct config c;
	struct buf err;
	char *big;

	buf_init(&err, BUF_ERR_MAX);
	ck_assert_int_eq(config_load_text("/etc/w.conf", text, len, &c, &err), 0);
	ck_assert_str_eq(c.path, "/etc/w.conf");
	ck_assert_int_eq(c.tolerance_s, 60);
	config_free(&c);
	/* One byte less: the last line is cut, "tolerance = 6". */
	ck_assert_int_eq(config_load_text("/etc/w.conf", text, len - 2, &c, &err), 0);
	ck_assert_int_eq(c.tolerance_s, 6);
	config_free(&c);

	ck_assert_int_eq(config_load_text("/etc/w.conf", MINIMAL "handler = a\0b\n",
	    strlen(MINIMAL) + 14, &c, &err), -1);
	ck_assert_str_eq(err.data, "/etc/w.conf: cannot read: contains a NUL byte");
	ck_assert_ptr_null(c.path);

	big = malloc(CONFIG_FILE_MAX + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, '#', CONFIG_FILE_MAX + 1);
	ck_assert_int_eq(config_load_text("/etc/w.conf", big, CONFIG_FILE_MAX + 1,
	    &c, &err), -1);
	ck_assert_msg(contains(err.data, "larger than 64 KiB"), "%s", err.data);
	free(big);
	buf_free(&err);
}
END_TEST

/* A typo in a secret's prefix is said as such, not as "not standard
 * base64", and shows nothing of the secret. */
START_TEST(wrong_secret_prefix)
{
	static const char *const prefixes[] = { "whsek_", "whsce_", "Whsec_",
	    "wh_", "whpk1_" };
	char text[512];
	struct load l;

	char want[512];

	for (size_t i = 0; i < NELEM(prefixes); i++) {
		/* The only secret: the config does not load. */
		snprintf(text, sizeof text, "database = /srv/a.db\nsecret = %s%s\n",
		    prefixes[i], OTHER_SECRET + 6);
		load(text, &l);
		FAILED_WITH(&l, ":2: secret: its prefix is not whsec_ (nor whpk_ "
		    "for a public key): a typo? paste the secret as the dashboard "
		    "shows it");
		ck_assert_msg(!shows_secret(err_text(&l), OTHER_SECRET + 6), "%s",
		    err_text(&l));
		load_done(&l);
		/* Beside one that loads: skipped, named the same way
		 * (docs/signing-secrets.md). */
		snprintf(text, sizeof text, MINIMAL "secret = %s%s\n", prefixes[i],
		    OTHER_SECRET + 6);
		load(text, &l);
		LOADED(&l);
		snprintf(want, sizeof want, "%s:3: secret: its prefix is not whsec_ "
		    "(nor whpk_ for a public key): a typo? paste the secret as the "
		    "dashboard shows it", l.path);
		ck_assert_str_eq(l.c.secret_skipped, want);
		load_done(&l);
	}
	/* A bare base64 secret (no '_' in base64) is still read. */
	snprintf(text, sizeof text, MINIMAL "secret = %s\n", OTHER_SECRET + 6);
	load(text, &l);
	ck_assert_msg(l.rc == 0, "%s", err_text(&l));
	load_done(&l);
}
END_TEST

/* check reports every error in one pass (docs/DESIGN.md "The operator's
 * tools"), in file order, then the missing required keys; config_load still
 * gives the first only. */
START_TEST(load_all_reports_every_error)
{
	static const char text[] = "tolerence = 5\n"
	    "secret = \"" KAT_SECRET "\n"
	    "max_body = lots\n"
	    "secret = whsec_REPLACE_WITH_YOUR_SECRET\n";
	struct config c;
	struct buf err;
	char path[128], want[2048];
	int fd;

	snprintf(path, sizeof path, "%s/webhook-conf-XXXXXX", confdir);
	ck_assert_int_ne(fd = mkstemp(path), -1);
	ck_assert_int_eq(write(fd, text, sizeof text - 1),
	    (ssize_t)sizeof text - 1);
	ck_assert_int_eq(close(fd), 0);
	buf_init(&err, 64 * 1024);
	ck_assert_int_eq(config_load_all(path, &c, &err), -1);
	snprintf(want, sizeof want,
	    "%s:1: tolerence: unknown key (did you mean tolerance?)\n"
	    "%s:2: secret: a quote left open: a quoted value ends with \" "
	    QUOTE_HOW "\n"
	    "%s:3: max_body: not a byte count between 1 and 67108864\n"
	    "%s:4: secret: still the example's placeholder: paste the endpoint "
	    "secret from the provider's dashboard\n"
	    "%s: database: required", path, path, path, path, path);
	ck_assert_str_eq(err.data, want);
	ck_assert_ptr_null(strstr(err.data, KAT_SECRET + 6));
	config_free(&c);
	buf_reset(&err);
	ck_assert_int_eq(config_load(path, &c, &err), -1);
	ck_assert_ptr_null(strchr(err.data, '\n'));
	config_free(&c);
	buf_free(&err);
	unlink(path);
}
END_TEST

static Suite *
config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc;

	tc = tcase_create("values");
	tcase_add_test(tc, defaults);
	tcase_add_test(tc, every_key);
	tcase_add_test(tc, comments_and_blank_lines);
	tcase_add_test(tc, crlf_lines);
	tcase_add_test(tc, repeatable_secret);
	tcase_add_test(tc, secret_limit);
	tcase_add_test(tc, relative_paths);
	tcase_add_test(tc, handler_kept_exactly);
	tcase_add_test(tc, long_line_counts_once);
	tcase_add_test(tc, value_bounds);
	tcase_add_test(tc, every_key_of_the_example);
	tcase_add_test(tc, every_key_in_the_table);
	tcase_add_test(tc, ranges_from_the_table);
	tcase_add_test(tc, load_text);
	suite_add_tcase(s, tc);

	tc = tcase_create("errors");
	tcase_add_test(tc, unknown_key);
	tcase_add_test(tc, load_all_reports_every_error);
	tcase_add_test(tc, did_you_mean);
	tcase_add_test(tc, broken_config_keeps_its_log);
	tcase_add_test(tc, retention_floor);
	tcase_add_test(tc, bad_secret_never_shown);
	tcase_add_test(tc, bad_secret_skipped_beside_a_good_one);
	tcase_add_test(tc, required_keys);
	tcase_add_test(tc, no_inline_comments);
	tcase_add_test(tc, quoted_secret_byte_for_byte);
	tcase_add_test(tc, quoted_secret_malformed);
	tcase_add_test(tc, sections_refused);
	tcase_add_test(tc, sources_loaded);
	tcase_add_test(tc, sources_refused);
	tcase_add_test(tc, sources_only);
	tcase_add_test(tc, sources_capped);
	tcase_add_test(tc, file_size_cap);
	tcase_add_test(tc, empty_value);
	tcase_add_test(tc, malformed_lines);
	tcase_add_test(tc, unreadable);
	tcase_add_test(tc, error_buffer_reused);
	tcase_add_test(tc, secret_never_quoted_as_a_key);
	tcase_add_test(tc, pasted_token_never_quoted);
	tcase_add_test(tc, wrong_secret_prefix);
	tcase_add_test(tc, inline_comment_and_repeated_keys);
	tcase_add_test(tc, given_twice);
	tcase_add_test(tc, no_secret_in_any_error);
	tcase_add_test(tc, database_conninfo_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main_in_tmpdir(config_suite, confdir);
}
