/*
 * test_sender: lib/operator/sender.c without a network — the test event `send`
 * makes up (shape, padding to the asked size), the key it signs with, and
 * the headers of its request: a signature the receiver's own check
 * (signature_verify) accepts over id.timestamp.body.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/operator/sender.h"
#include "tests/check_common.h"
#include "tests/check_config.h"

static char tmpdir[] = "/tmp/webhook-test-sender-XXXXXX";

START_TEST(picks_the_body_and_a_fresh_id)
{
	char id[SENDER_ID_SIZE], id2[SENDER_ID_SIZE];
	char path[] = "/tmp/webhook-test-sender-XXXXXX";
	struct buf body, err;
	int fd;

	ck_assert_ptr_eq(sender_new_id(id), id);
	ck_assert_int_eq(strlen(id), SENDER_ID_SIZE - 1);
	ck_assert_int_eq(strncmp(id, "msg_", 4), 0);
	ck_assert_str_ne(id, sender_new_id(id2));
	buf_init(&body, 1 << 20);
	buf_init(&err, BUF_ERR_MAX);
	/* A test event when asked, whatever the path. */
	ck_assert_int_eq(sender_pick_body("/nonexistent", 1, 0, id, &body,
	    &err), 0);
	ck_assert_ptr_nonnull(strstr(body.data, id));
	/* A file that is not there: its name and why. */
	buf_reset(&body);
	ck_assert_int_eq(sender_pick_body("/nonexistent/x", 0, 0, id, &body,
	    &err), -1);
	ck_assert_ptr_nonnull(strstr(err.data, "/nonexistent/x: No such file"));
	/* An empty file: refused, named, and the way to a test event. */
	ck_assert_int_ne(fd = mkstemp(path), -1);
	close(fd);
	ck_assert_int_eq(sender_pick_body(path, 0, 0, id, &body, &err), -1);
	ck_assert_ptr_nonnull(strstr(err.data, path));
	ck_assert_ptr_nonnull(strstr(err.data, "nothing sent (send --size N"));
	/* The file, byte for byte. */
	ck_assert_int_ne(fd = open(path, O_WRONLY), -1);
	ck_assert_int_eq(write(fd, "{\"a\":1}", 7), 7);
	close(fd);
	buf_reset(&body);
	ck_assert_int_eq(sender_pick_body(path, 0, 0, id, &body, &err), 0);
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
	ck_assert_int_eq(sender_sample_body("msg_1", 0, &b), 0);
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
	ck_assert_int_eq(sender_sample_body("msg_1", 0, &b), 0);
	base = b.len;
	buf_free(&b);
	for (i = 0; i < NELEM(sizes); i++) {
		buf_init(&b, SENDER_BODY_MAX);
		ck_assert_int_eq(sender_sample_body("msg_1", sizes[i], &b), 0);
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
	const struct signature_key *key;
	struct curl_slist *h, *it;
	struct config c;
	struct buf content;
	char dir[PATH_MAX];
	const char *want[] = { "webhook-id: msg_2", "webhook-timestamp: 1772366400",
	    "webhook-signature: v1,", "Content-Type: application/json" };
	const char *sig = NULL;
	size_t i = 0, which;

	check_config(tmpdir, "", &c, dir);
	ck_assert_ptr_nonnull(key = sender_key(&c));
	ck_assert_ptr_nonnull(h = sender_headers(key, "msg_2", 1772366400LL,
	    body, strlen(body)));
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
	curl_slist_free_all(h);
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
