/*
 * test_sender: lib/operator/sender.c without a network — the test event `send`
 * makes up (shape, padding to the asked size), the key it signs with, and
 * the headers of its request to the default source: a signature the
 * receiver's own check (signature_verify) accepts over id.timestamp.body.  And send --source:
 * each provider's test event (the fields the receiver's scheme_extract
 * finds by the scheme's defaults), ids as each provider writes them, the
 * headers of a [source NAME] that its scheme's verifier accepts, and the
 * refusals (an unknown NAME lists the configured ones; Discord).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/scheme/scheme.h"
#include "lib/operator/sender.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

static char tmpdir[] = "/tmp/webhook-test-sender-XXXXXX";

START_TEST(picks_the_body_and_a_fresh_id)
{
	const struct scheme *std = scheme_find("standard");
	char id[SCHEME_SAMPLE_ID_SIZE], id2[SCHEME_SAMPLE_ID_SIZE];
	char path[] = "/tmp/webhook-test-sender-XXXXXX";
	struct buf body, err;
	int fd;

	ck_assert_ptr_eq(scheme_sample_id(std, id), id);
	ck_assert_int_eq(strlen(id), 28);
	ck_assert_int_eq(strncmp(id, "msg_", 4), 0);
	ck_assert_str_ne(id, scheme_sample_id(std, id2));
	buf_init(&body, 1 << 20);
	buf_init(&err, BUF_ERR_MAX);
	/* A test event when asked, whatever the path. */
	ck_assert_int_eq(sender_pick_body("/nonexistent", 1, 0, id, std, &body,
	    &err), 0);
	ck_assert_ptr_nonnull(strstr(body.data, id));
	/* A file that is not there: its name and why. */
	buf_reset(&body);
	ck_assert_int_eq(sender_pick_body("/nonexistent/x", 0, 0, id, std, &body,
	    &err), -1);
	ck_assert_ptr_nonnull(strstr(err.data, "/nonexistent/x: No such file"));
	/* An empty file: refused, named, and the way to a test event. */
	ck_assert_int_ne(fd = mkstemp(path), -1);
	close(fd);
	ck_assert_int_eq(sender_pick_body(path, 0, 0, id, std, &body, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.data, path));
	ck_assert_ptr_nonnull(strstr(err.data, "nothing sent (send --size N"));
	/* The file, byte for byte. */
	ck_assert_int_ne(fd = open(path, O_WRONLY), -1);
	ck_assert_int_eq(write(fd, "{\"a\":1}", 7), 7);
	close(fd);
	buf_reset(&body);
	ck_assert_int_eq(sender_pick_body(path, 0, 0, id, std, &body, &err), 0);
	ck_assert_int_eq(body.len, 7);
	ck_assert_int_eq(memcmp(body.data, "{\"a\":1}", 7), 0);
	unlink(path);
	buf_free(&body);
	buf_free(&err);
}
END_TEST

START_TEST(sample_body_is_a_test_event)
{
	struct buf b;
	cJSON *ev;
	const cJSON *data;

	buf_init(&b, SENDER_BODY_MAX);
	ck_assert_int_eq(scheme_sample_body(scheme_find("standard"), "msg_1",
	    (int64_t)time(NULL), 0, &b), 0);
	ck_assert_ptr_nonnull(ev = cJSON_ParseWithLength(b.data, b.len));
	ck_assert_str_eq(cJSON_GetObjectItem(ev, "id")->valuestring, "msg_1");
	ck_assert_str_eq(cJSON_GetObjectItem(ev, "type")->valuestring,
	    "webhook_inbox.test");
	/* To the second, as the provider sends it. */
	ck_assert_uint_eq(strlen(cJSON_GetObjectItem(ev, "createdAt")->valuestring),
	    20);
	data = cJSON_GetObjectItem(ev, "data");
	ck_assert_str_eq(cJSON_GetObjectItem(data, "object")->valuestring,
	    "webhook_inbox_test");
	ck_assert_str_eq(cJSON_GetObjectItem(data, "id")->valuestring, "msg_1");
	ck_assert_str_eq(cJSON_GetObjectItem(data, "filler")->valuestring, "");
	cJSON_Delete(ev);
	buf_free(&b);
}
END_TEST

START_TEST(sample_body_pads_to_size)
{
	static const int64_t sizes[] = { 1, 150, 151, 4096, 300000 };
	struct buf b;
	size_t i, base;

	buf_init(&b, SENDER_BODY_MAX);
	ck_assert_int_eq(scheme_sample_body(scheme_find("standard"), "msg_1",
	    (int64_t)time(NULL), 0, &b), 0);
	base = b.len;
	buf_free(&b);
	for (i = 0; i < NELEM(sizes); i++) {
		buf_init(&b, SENDER_BODY_MAX);
		ck_assert_int_eq(scheme_sample_body(scheme_find("standard"),
		    "msg_1", (int64_t)time(NULL), sizes[i], &b), 0);
		/* Shorter than the event itself: the event as it is. */
		ck_assert_uint_eq(b.len, (size_t)sizes[i] > base ?
		    (size_t)sizes[i] : base);
		buf_free(&b);
	}
}
END_TEST

START_TEST(signs_with_the_first_whsec)
{
	static const char body[] = "{\"id\":\"msg_2\"}";
	const struct config_source *src;
	struct curl_slist *h, *it;
	struct config c;
	struct buf content, to, err;
	char dir[PATH_MAX];
	const char *want[] = { "webhook-id: msg_2", "webhook-timestamp: 1772366400",
	    "webhook-signature: v1,", "Content-Type: application/json" };
	const char *sig = NULL, *why;
	size_t i = 0, which;

	check_config(tmpdir, "", &c, dir);
	buf_init(&err, BUF_ERR_MAX);
	buf_init(&to, 4096);
	/* No --source: the default source, its first whsec_ secret. */
	ck_assert_ptr_nonnull(src = sender_source(&c, NULL, &err));
	ck_assert_str_eq(src->name, "default");
	ck_assert_ptr_nonnull(h = sender_source_headers(src, NULL, "msg_2",
	    1772366400LL, "https://h/webhook.fcgi", body, strlen(body), &to,
	    &why));
	ck_assert_str_eq(to.data, "https://h/webhook.fcgi");
	for (it = h; it != NULL; it = it->next, i++) {
		ck_assert_uint_lt(i, NELEM(want));
		ck_assert_msg(strncmp(it->data, want[i], strlen(want[i])) == 0,
		    "%s", it->data);
		if (i == 2)
			sig = it->data + strlen("webhook-signature: ");
	}
	ck_assert_uint_eq(i, NELEM(want));
	buf_init(&content, 4096);
	ck_assert_int_eq(buf_printf(&content, "msg_2.1772366400.%s", body), 0);
	ck_assert_int_eq(signature_verify(c.secrets, c.nsecrets,
	    (const unsigned char *)content.data, content.len, sig, strlen(sig),
	    &which), 0);
	ck_assert_uint_eq(which, 0);
	buf_free(&content);
	buf_free(&to);
	buf_free(&err);
	curl_slist_free_all(h);
	config_free(&c);
}
END_TEST


/* ---- send --source ---- */

/* A config with a source of every scheme (Discord's a public key). */
static const char sources_conf[] =
    "[source std]\nscheme = standard\n"
    "secret = whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\n"
    "[source stripe]\nscheme = stripe\nsecret = whsec_first\n"
    "secret = whsec_second\n"
    "[source gh]\nscheme = github\nsecret = It's a Secret to Everybody\n"
    "[source shop]\nscheme = shopify\nsecret = shpss_1\n"
    "[source woo]\nscheme = woocommerce\nsecret = x$N<D]7u\n"
    "[source slack]\nscheme = slack\nsecret = 8f742231b10e8888abcd99yyyzzz85a5\n"
    "[source paddle]\nscheme = paddle\nsecret = pdl_ntfset_1\n"
    "[source gl]\nscheme = gitlab\nsecret = glwh-7Yq2 x!\n"
    "[source tw]\nscheme = twilio\nsecret = 12345\n"
    "url = https://hooks.example.net/webhook.fcgi/tw\n"
    "[source generic]\nscheme = hmac\nsecret = k\nheader = X-Sig\n"
    "prefix = sha256=\ntimestamp_header = X-Time\nid = X-Request-Id\n"
    "type = X-Event\n"
    "[source disc]\nscheme = discord\n"
    "secret = 197f6b23e16c8532c6abc838facd5ea789be0c76b2920334039bfa8b3d368d61\n";

/* A curl header list as scheme_headers (name: value lines). */
static const char *
slist_get(void *arg, const char *name)
{
	const struct curl_slist *it;
	size_t nl = strlen(name);

	for (it = arg; it != NULL; it = it->next)
		if (strncasecmp(it->data, name, nl) == 0 &&
		    it->data[nl] == ':' && it->data[nl + 1] == ' ')
			return it->data + nl + 2;
	return NULL;
}

START_TEST(source_bodies_are_each_providers_events)
{
	static const struct {
		const char *	 id;
		const char	*type;	/* what the scheme's default finds */
		int		 object, time;
	} cases[] = {
		{ "stripe", SCHEME_SAMPLE_TYPE, 1, 1 },
		{ "paddle", SCHEME_SAMPLE_TYPE, 1, 1 },
		{ "slack", SCHEME_SAMPLE_TYPE, 0, 1 },
		{ "github", "", 0, 0 },
		{ "gitlab", "", 0, 0 },
		{ "shopify", "", 1, 1 },
		{ "woocommerce", "", 1, 1 },
		{ "standard", SCHEME_SAMPLE_TYPE, 1, 1 },
	};
	struct scheme_headers h = { slist_get, NULL, NULL };
	struct scheme_fields f;
	struct scheme_event ev;
	const char *why;
	struct buf b;
	cJSON *j;

	for (size_t i = 0; i < NELEM(cases); i++) {
		const struct scheme *s = scheme_find(cases[i].id);
		char id[SCHEME_SAMPLE_ID_SIZE];
		struct scheme_params p;

		scheme_params_init(s, &p);
		scheme_sample_id(s, id);
		buf_init(&b, SENDER_BODY_MAX);
		ck_assert_int_eq(scheme_sample_body(s, id, 1764806400, 0, &b), 0);
		ck_assert_msg((j = cJSON_ParseWithLength(b.data, b.len)) != NULL,
		    "%s: not JSON", s->name);
		cJSON_Delete(j);
		/* What the receiver keeps of it, at a source "src". */
		ck_assert_int_eq(scheme_event_read(s, &p, NULL, "src", &h,
		    (const unsigned char *)b.data, b.len, &ev, &why), 0);
		/* Where the provider keeps its id in the body, the id is
		 * there; the header providers' ids come in headers. */
		if (s->id_header == NULL)
			ck_assert_str_eq(ev.id, id);
		ck_assert_str_eq(ev.fields.type ? ev.fields.type : "",
		    cases[i].type);
		ck_assert_msg((ev.fields.object_id != NULL) == cases[i].object,
		    "%s: object \"%s\"", s->name, ev.fields.object_id);
		ck_assert_msg((ev.fields.created_at[0] != '\0') == cases[i].time,
		    "%s: time \"%s\"", s->name, ev.fields.created_at);
		scheme_event_free(&ev);
		/* Padded to the size asked, still JSON. */
		buf_reset(&b);
		ck_assert_int_eq(scheme_sample_body(s, id, 1764806400, 5000, &b), 0);
		ck_assert_uint_eq(b.len, 5000);
		ck_assert_ptr_nonnull(j = cJSON_ParseWithLength(b.data, b.len));
		cJSON_Delete(j);
		buf_free(&b);
	}
	/* Stripe's: an evt_ event with created and data.object.id. */
	buf_init(&b, SENDER_BODY_MAX);
	ck_assert_int_eq(scheme_sample_body(scheme_find("stripe"), "evt_1",
	    1764806400, 0, &b), 0);
	ck_assert_int_eq(scheme_extract(scheme_find("stripe"), NULL, &h,
	    (const unsigned char *)b.data, b.len, &f, &why), 0);
	ck_assert_str_eq(f.id, "evt_1");
	ck_assert_str_eq(f.time, "1764806400");
	ck_assert_str_eq(f.object, "test_evt_1");
	/* Slack's: an event_callback (not a url_verification). */
	buf_reset(&b);
	ck_assert_int_eq(scheme_sample_body(scheme_find("slack"), "Ev1",
	    1764806400, 0, &b), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "\"type\":\"event_callback\""));
	/* Twilio's: a form with the id as MessageSid, padded exactly, an id
	 * that needs encoding encoded. */
	buf_reset(&b);
	ck_assert_int_eq(scheme_sample_body(scheme_find("twilio"), "SM1 &x",
	    0, 0, &b), 0);
	ck_assert_ptr_nonnull(strstr(b.data, "&MessageSid=SM1%20%26x&"));
	ck_assert_ptr_null(strchr(b.data, '{'));
	buf_reset(&b);
	ck_assert_int_eq(scheme_sample_body(scheme_find("twilio"), "SM1", 0,
	    4000, &b), 0);
	ck_assert_uint_eq(b.len, 4000);
	ck_assert_ptr_nonnull(strstr(b.data, "&Filler=xxx"));
	buf_free(&b);
}
END_TEST

START_TEST(source_ids_as_each_provider_writes_them)
{
	static const struct { const char * id; const char *prefix; size_t len; }
	    cases[] = {
		{ "stripe", "evt_", 28 }, { "paddle", "evt_", 28 },
		{ "slack", "Ev", 14 }, { "github", "", 36 },
		{ "gitlab", "", 36 }, { "shopify", "", 36 },
		{ "woocommerce", "", 32 }, { "twilio", "SM", 34 },
		{ "standard", "msg_", 28 }, { "hmac", "msg_", 28 },
	};
	char a[SCHEME_SAMPLE_ID_SIZE], b2[SCHEME_SAMPLE_ID_SIZE];

	for (size_t i = 0; i < NELEM(cases); i++) {
		const struct scheme *s = scheme_find(cases[i].id);

		scheme_sample_id(s, a);
		ck_assert_msg(strlen(a) == cases[i].len && strncmp(a,
		    cases[i].prefix, strlen(cases[i].prefix)) == 0, "%s: %s",
		    s->name, a);
		ck_assert_str_ne(a, scheme_sample_id(s, b2));
	}
	/* A UUID: 8-4-4-4-12, version 4. */
	scheme_sample_id(scheme_find("github"), a);
	ck_assert(a[8] == '-' && a[13] == '-' && a[14] == '4' && a[18] == '-' &&
	    a[23] == '-');
	ck_assert_int_eq(sender_url_names_source("https://h/webhook.fcgi/gh", "gh"), 1);
	ck_assert_int_eq(sender_url_names_source("https://h/webhook.fcgi/gh/", "gh"), 1);
	ck_assert_int_eq(sender_url_names_source("https://h/w/tw?x=1", "tw"), 1);
	ck_assert_int_eq(sender_url_names_source("https://h/webhook.fcgi", "gh"), 0);
	ck_assert_int_eq(sender_url_names_source("https://h/xgh", "gh"), 0);
	ck_assert_int_eq(sender_url_names_source("gh", "gh"), 0);
}
END_TEST

START_TEST(source_headers_verify_as_the_receiver_checks)
{
	struct config c;
	char dir[PATH_MAX];
	struct buf err, b, to;
	size_t i, n = 0;

	check_config(tmpdir, sources_conf, &c, dir);
	buf_init(&err, BUF_ERR_MAX);
	for (i = 0; i < c.nsources; i++) {
		const struct config_source *src;
		struct scheme_headers h;
		struct scheme_result res;
		struct curl_slist *hl;
		char id[SCHEME_SAMPLE_ID_SIZE];
		const char *why = NULL;

		if (c.sources[i].scheme == scheme_find("discord"))
			continue;
		ck_assert_ptr_nonnull(src = sender_source(&c, c.sources[i].name,
		    &err));
		scheme_sample_id(src->scheme, id);
		buf_init(&b, SENDER_BODY_MAX);
		ck_assert_int_eq(scheme_sample_body(src->scheme, id,
		    (int64_t)time(NULL), 300, &b), 0);
		buf_init(&to, 4096);
		hl = sender_source_headers(src, NULL, id, (int64_t)time(NULL),
		    "https://hooks.example.net/webhook.fcgi/x", b.data, b.len,
		    &to, &why);
		ck_assert_msg(hl != NULL, "%s: %s", src->name, why);
		h.get = slist_get;
		h.arg = hl;
		h.query = strchr(to.data, '?') ? strchr(to.data, '?') + 1 : NULL;
		ck_assert_msg(scheme_verify(src->scheme, &src->params,
		    src->secrets, src->nsecrets, &h, (const unsigned char *)b.data,
		    b.len, (int64_t)time(NULL), &res) == 0, "%s: %s", src->name,
		    res.why);
		ck_assert_int_eq(res.outcome, SCHEME_OK);
		ck_assert_uint_eq(res.key_index, 0);	/* the first secret */
		ck_assert_str_eq(slist_get(hl, "Content-Type"),
		    src->scheme == scheme_find("twilio") ?
		    "application/x-www-form-urlencoded" : "application/json");
		/* The id where the receiver looks for it by default, or where
		 * the source says (the hmac source's X-Request-Id). */
		{
			struct scheme_fields f;

			ck_assert_int_eq(scheme_extract(src->scheme, &src->locate,
			    &h, (const unsigned char *)b.data, b.len, &f, &why), 0);
			ck_assert_msg(strcmp(f.id, id) == 0, "%s: id \"%s\", "
			    "sent %s", src->name, f.id, id);
		}
		curl_slist_free_all(hl);
		buf_free(&b);
		buf_free(&to);
		n++;
	}
	ck_assert_uint_eq(n, 10);
	buf_free(&err);
	config_free(&c);
}
END_TEST

START_TEST(source_refusals_say_why)
{
	struct config c;
	char dir[PATH_MAX];
	struct buf err;

	check_config(tmpdir, sources_conf, &c, dir);
	buf_init(&err, BUF_ERR_MAX);
	ck_assert_ptr_null(sender_source(&c, "strpe", &err));
	ck_assert_msg(strstr(err.data, "no [source strpe]") != NULL &&
	    strstr(err.data, "its sources: std, stripe, gh, shop, woo, slack, "
	    "paddle, gl, tw, generic, disc") != NULL, "%s", err.data);
	ck_assert_ptr_null(sender_source(&c, "disc", &err));
	ck_assert_msg(strstr(err.data, "[source disc] (scheme = discord) cannot "
	    "be signed here: Discord signs with its application's private key")
	    != NULL, "%s", err.data);
	config_free(&c);
	check_config(tmpdir, "", &c, dir);
	ck_assert_ptr_null(sender_source(&c, "stripe", &err));
	ck_assert_ptr_nonnull(strstr(err.data, "it has no [source] sections"));
	buf_free(&err);
	config_free(&c);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("sender");
	TCase *tc = tcase_create("sender");

	tcase_add_test(tc, picks_the_body_and_a_fresh_id);
	tcase_add_test(tc, sample_body_is_a_test_event);
	tcase_add_test(tc, sample_body_pads_to_size);
	tcase_add_test(tc, signs_with_the_first_whsec);
	tcase_add_test(tc, source_bodies_are_each_providers_events);
	tcase_add_test(tc, source_ids_as_each_provider_writes_them);
	tcase_add_test(tc, source_headers_verify_as_the_receiver_checks);
	tcase_add_test(tc, source_refusals_say_why);
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
