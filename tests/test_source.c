/*
 * test_source: lib/program/source.c -- one [source NAME] section of
 * webhook.conf (docs/DESIGN.md "Sources"): its section line, its keys, the
 * check after the file, its free.  The file-level view (line numbers,
 * the first error of a file) is test_config's.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/program/source.h"
#include "tests/check_common.h"

#define GH_SECRET	"It's a Secret to Everybody"

/* A config with no sources, for source_open to add to. */
static void
empty(struct config *c)
{
	memset(c, 0, sizeof *c);
}

static void
drop(struct config *c)
{
	for (size_t i = 0; c->sources != NULL && i < c->nsources; i++)
		source_free(&c->sources[i]);
	free(c->sources);
	memset(c, 0, sizeof *c);
}

/* source_set that must succeed. */
static void
set_ok(struct config_source *src, unsigned *seen, const char *k,
    const char *v)
{
	char why[SOURCE_WHY_MAX] = "";

	ck_assert_msg(source_set(src, seen, k, v, why) == 0, "%s = %s: %s",
	    k, v, why);
}

/* source_set that must fail with exactly `want`. */
static void
set_fails(struct config_source *src, unsigned *seen, const char *k,
    const char *v, const char *want)
{
	char why[SOURCE_WHY_MAX] = "";

	ck_assert_int_eq(source_set(src, seen, k, v, why), -1);
	ck_assert_str_eq(why, want);
}

START_TEST(open_names)
{
	static const struct {
		const char	*line, *why;
	} bad[] = {
		{ "[source Stripe]", "[source NAME]: NAME is 1 to 32 of a-z, "
		  "0-9, _ and -" },
		{ "[source ]", "[source NAME]: NAME is 1 to 32 of a-z, 0-9, _ "
		  "and -" },
		{ "[source a/b]", "[source NAME]: NAME is 1 to 32 of a-z, 0-9, "
		  "_ and -" },
		{ "[source aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa]", "[source NAME]: "
		  "NAME is 1 to 32 of a-z, 0-9, _ and -" },
		{ "[source default]", "[source default]: the top-level keys are "
		  "the default source; name this one otherwise" },
		{ "[sources a]", "sections are not used in this file but "
		  "[source NAME]" },
		{ "[source a] x", "sections are not used in this file but "
		  "[source NAME]" },
		{ "[source a", "sections are not used in this file but "
		  "[source NAME]" },
	};
	struct config c;
	char why[SOURCE_WHY_MAX];

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source stripe]\n", 3, why), 0);
	ck_assert_int_eq(source_open(&c, "[source  my-erp_2] \r\n", 9, why), 1);
	ck_assert_uint_eq(c.nsources, 2);
	ck_assert_str_eq(c.sources[0].name, "stripe");
	ck_assert_int_eq(c.sources[0].line, 3);
	ck_assert_str_eq(c.sources[1].name, "my-erp_2");
	ck_assert_int_eq(source_open(&c, "[source stripe]", 12, why), -1);
	ck_assert_str_eq(why, "[source stripe]: given twice (line 3)");
	for (size_t i = 0; i < NELEM(bad); i++) {
		ck_assert_int_eq(source_open(&c, bad[i].line, 1, why), -1);
		ck_assert_str_eq(why, bad[i].why);
	}
	ck_assert_uint_eq(c.nsources, 2);
	drop(&c);
}
END_TEST

START_TEST(open_capped)
{
	struct config c;
	char line[64], why[SOURCE_WHY_MAX];
	int i;

	empty(&c);
	for (i = 0; i < CONFIG_SOURCES_MAX; i++) {
		snprintf(line, sizeof line, "[source s%d]", i);
		ck_assert_int_eq(source_open(&c, line, i + 1, why), i);
	}
	ck_assert_int_eq(source_open(&c, "[source one-more]", 99, why), -1);
	ck_assert_str_eq(why, "more than 16 [source] sections");
	drop(&c);
}
END_TEST

/* Every key of a generic hmac source, then the check. */
START_TEST(hmac_keys)
{
	struct config c;
	struct config_source *s;
	unsigned seen = 0;
	char why[SOURCE_WHY_MAX];

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source erp]", 1, why), 0);
	s = &c.sources[0];
	set_ok(s, &seen, "scheme", "hmac");
	ck_assert_ptr_eq(s->scheme, scheme_find("hmac"));
	/* Before its header: the scheme's own check names what is missing. */
	set_ok(s, &seen, "secret", "k1");
	ck_assert_int_eq(source_check(s, why), -1);
	ck_assert_str_eq(why, "[source erp]: scheme = hmac needs a signature "
	    "header");
	set_ok(s, &seen, "header", "X-Sig");
	set_ok(s, &seen, "prefix", "sha512=");
	set_ok(s, &seen, "algorithm", "sha512");
	set_ok(s, &seen, "encoding", "base64");
	set_ok(s, &seen, "timestamp_header", "X-Ts");
	set_ok(s, &seen, "separator", ":");
	set_ok(s, &seen, "tolerance", "10m");
	set_ok(s, &seen, "id", "/data/id");
	set_ok(s, &seen, "type", "X-Event");
	set_ok(s, &seen, "time", "/created");
	set_ok(s, &seen, "object", "/data/object/id");
	set_ok(s, &seen, "secret", "k2");	/* repeatable: rotation */
	ck_assert_int_eq(source_check(s, why), 0);
	ck_assert_str_eq(s->params.header, "X-Sig");
	ck_assert_str_eq(s->params.prefix, "sha512=");
	ck_assert_int_eq(s->params.alg, SCHEME_SHA512);
	ck_assert_int_eq(s->params.encoding, SCHEME_BASE64);
	ck_assert_str_eq(s->params.timestamp_header, "X-Ts");
	ck_assert_str_eq(s->params.separator, ":");
	ck_assert_int_eq(s->params.tolerance, 600);
	ck_assert_str_eq(s->locate.id, "/data/id");
	ck_assert_str_eq(s->locate.type, "X-Event");
	ck_assert_str_eq(s->locate.time, "/created");
	ck_assert_str_eq(s->locate.object, "/data/object/id");
	ck_assert_uint_eq(s->nsecrets, 2);
	source_free(s);
	ck_assert_ptr_null(s->params.header);
	ck_assert_uint_eq(s->nsecrets, 0);
	ck_assert_str_eq(s->name, "");
	drop(&c);
}
END_TEST

/* Each mistake of a line, refused with the source and the key named. */
START_TEST(keys_refused)
{
	struct config c;
	struct config_source *s;
	unsigned seen = 0;
	char why[SOURCE_WHY_MAX];
	int i;

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source gh]", 1, why), 0);
	s = &c.sources[0];
	set_fails(s, &seen, "secret", GH_SECRET, "[source gh]: secret: put "
	    "scheme = first");
	set_fails(s, &seen, "scheme", "gihtub", "[source gh]: scheme: not one "
	    "of standard stripe github shopify woocommerce slack paddle "
	    "discord gitlab twilio mercadopago hmac");
	set_fails(s, &seen, "scheme", "", "[source gh]: scheme: empty value");
	/* A refused scheme line still counts as given (a file reports its
	 * first error only): the next one starts a new section's count. */
	seen = 0;
	ck_assert_int_eq(source_set(s, &seen, "database", "x", why),
	    SOURCE_UNKNOWN_KEY);
	ck_assert_int_eq(source_set(s, &seen, "nope", "x", why),
	    SOURCE_UNKNOWN_KEY);
	set_ok(s, &seen, "scheme", "github");
	set_fails(s, &seen, "scheme", "github", "[source gh]: scheme: given "
	    "twice");
	set_fails(s, &seen, "header", "X-Sig", "[source gh]: header: only for "
	    "scheme = hmac");
	set_fails(s, &seen, "url", "https://x/", "[source gh]: url: only for "
	    "scheme = twilio");
	set_fails(s, &seen, "tolerance", "2d", "[source gh]: tolerance: not a "
	    "duration of 0 (no window) to 1d");
	set_fails(s, &seen, "id", "X Delivery", "[source gh]: id: neither a "
	    "header name nor a JSON pointer (\"/data/id\")");
	set_fails(s, &seen, "secret", "\"" GH_SECRET, "[source gh]: "
	    "secret: a quote left open: a quoted value ends with \" "
	    "(secret = \" a#b\\\"c \"; inside, \\\" is a quote and \\\\ a "
	    "backslash)");
	set_fails(s, &seen, "secret", "'" GH_SECRET "'", "[source gh]: "
	    "secret: in single quotes: drop them, or if they are the "
	    "secret's, write it in double quotes (secret = \"'...'\")");
	set_fails(s, &seen, "secret", "REPLACE_WITH_YOURS", "[source gh]: "
	    "secret: still the example's placeholder");
	ck_assert_int_eq(source_check(s, why), -1);
	ck_assert_str_eq(why, "[source gh]: secret: required (as the "
	    "provider's dashboard shows it)");
	for (i = 0; i < SCHEME_SECRETS_MAX; i++)
		set_ok(s, &seen, "secret", GH_SECRET);
	set_fails(s, &seen, "secret", GH_SECRET, "[source gh]: secret: more "
	    "than 8");
	ck_assert_int_eq(source_check(s, why), 0);
	drop(&c);

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source st]", 1, why), 0);
	ck_assert_int_eq(source_check(&c.sources[0], why), -1);
	ck_assert_str_eq(why, "[source st]: scheme: required");
	drop(&c);
}
END_TEST

/* A refused secret is never in the message: the scheme says what is
 * wrong with it, not what it is. */
START_TEST(secret_never_in_why)
{
	static const char *const secrets[] = {
		"sk_live_51AbCdEfGhIjKlMnOp", "Xq7lvT1oJ0mSe9Z4a2",
		"whsec_5f0c3d9a 7be4e1c2 ",
	};
	struct config c;
	unsigned seen = 0;
	char why[SOURCE_WHY_MAX];

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source st]", 1, why), 0);
	set_ok(&c.sources[0], &seen, "scheme", "stripe");
	for (size_t i = 0; i < NELEM(secrets); i++) {
		memset(why, 0, sizeof why);
		ck_assert_int_eq(source_set(&c.sources[0], &seen, "secret",
		    secrets[i], why), -1);
		ck_assert_msg(strncmp(why, "[source st]: secret: ", 21) == 0,
		    "%s", why);
		ck_assert_msg(strstr(why, secrets[i]) == NULL, "%s", why);
	}
	drop(&c);
}
END_TEST

/* A quoted secret is its content, byte for byte, whatever the scheme
 * does with it next (WooCommerce decodes its entities); edge blanks are
 * kept only when quoted. */
START_TEST(secret_quoted)
{
	struct config c;
	struct config_source *s;
	unsigned seen = 0;
	char why[SOURCE_WHY_MAX];

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source woo]", 1, why), 0);
	s = &c.sources[0];
	set_ok(s, &seen, "scheme", "woocommerce");
	set_ok(s, &seen, "secret", "\" a&amp;b\\\\\\\"# \"");
	ck_assert_uint_eq(s->secrets[0].len, 8);
	ck_assert_mem_eq(s->secrets[0].key, " a&b\\\"# ", 8);
	set_fails(s, &seen, "secret", "\"ab\\c\"", "[source woo]: secret: "
	    "a backslash in quotes before another byte than \" or \\ "
	    "(secret = \" a#b\\\"c \"; inside, \\\" is a quote and \\\\ a "
	    "backslash)");
	set_fails(s, &seen, "secret", "\"ab\"c", "[source woo]: secret: "
	    "bytes after the closing quote: a quote inside is written \\\" "
	    "(secret = \" a#b\\\"c \"; inside, \\\" is a quote and \\\\ a "
	    "backslash)");
	/* What inih hands over unquoted has no edge blank; one that did is
	 * told to quote. */
	set_fails(s, &seen, "secret", "ab ", "[source woo]: secret: secret "
	    "begins or ends with a blank: if the blank is the secret's, write "
	    "the value in double quotes (secret = \" …\")");
	ck_assert_uint_eq(s->nsecrets, 1);
	drop(&c);

	/* A standard or stripe secret with the header's v1, before it. */
	empty(&c);
	seen = 0;
	ck_assert_int_eq(source_open(&c, "[source st]", 1, why), 0);
	s = &c.sources[0];
	set_ok(s, &seen, "scheme", "stripe");
	set_fails(s, &seen, "secret", "v1,whsec_abc", "[source st]: secret: "
	    "starts with v1, (a signature header's label, copied with the "
	    "secret): drop the v1, and keep whsec_…");
	set_ok(s, &seen, "secret", "\"whsec_abc\"");
	ck_assert_mem_eq(s->secrets[0].key, "whsec_abc", 9);
	drop(&c);
}
END_TEST

/* twilio needs the URL it signs. */
START_TEST(twilio_needs_url)
{
	struct config c;
	struct config_source *s;
	unsigned seen = 0;
	char why[SOURCE_WHY_MAX];

	empty(&c);
	ck_assert_int_eq(source_open(&c, "[source tw]", 1, why), 0);
	s = &c.sources[0];
	set_ok(s, &seen, "scheme", "twilio");
	set_ok(s, &seen, "secret", "12345678901234567890123456789012");
	ck_assert_int_eq(source_check(s, why), -1);
	ck_assert_msg(strncmp(why, "[source tw]: scheme = twilio needs url",
	    38) == 0, "%s", why);
	set_ok(s, &seen, "url", "https://shop.example/webhook/tw");
	ck_assert_int_eq(source_check(s, why), 0);
	ck_assert_str_eq(s->params.url, "https://shop.example/webhook/tw");
	drop(&c);
}
END_TEST

static Suite *
source_suite(void)
{
	Suite *s = suite_create("source");
	TCase *tc = tcase_create("section");

	tcase_add_test(tc, open_names);
	tcase_add_test(tc, open_capped);
	tcase_add_test(tc, hmac_keys);
	tcase_add_test(tc, keys_refused);
	tcase_add_test(tc, secret_never_in_why);
	tcase_add_test(tc, secret_quoted);
	tcase_add_test(tc, twilio_needs_url);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(source_suite());
}
