/*
 * test_event: lib/store/event.c — the fields the inbox extracts from a body at
 * receive time (event.h; docs/DESIGN.md "The inbox"): what a full provider
 * event gives, and that odd or foreign bodies give nothing rather than
 * something wrong.
 */
#include <stdlib.h>
#include <string.h>

#include "lib/store/event.h"
#include "tests/check_common.h"

/* Extract from a copy of `body` in an exact-size allocation, so that ASan
 * sees any read past len (the body is never NUL-terminated for us). */
static void
extract(const char *id, const char *body, size_t len, struct event_fields *f)
{
	char *copy = malloc(len ? len : 1);

	ck_assert_ptr_nonnull(copy);
	memcpy(copy, body, len);
	ck_assert_int_eq(event_extract(id, copy, len, f), 0);
	free(copy);
}

static void
extract_str(const char *id, const char *body, struct event_fields *f)
{
	extract(id, body, strlen(body), f);
}

/* Nothing extracted at all. */
static void
assert_empty(const struct event_fields *f)
{
	ck_assert_ptr_null(f->type);
	ck_assert_ptr_null(f->created_at_raw);
	ck_assert_str_eq(f->created_at, "");
	ck_assert_ptr_null(f->object_type);
	ck_assert_ptr_null(f->object_id);
	ck_assert_str_eq(f->updated_at, "");
	ck_assert_int_eq(f->truncated, 0);
}

#define FULL_EVENT							\
	"{\"type\":\"invoice.paid\","					\
	"\"createdAt\":\"2026-03-01T12:00:00.123+01:00\","		\
	"\"data\":{\"object\":\"invoice\",\"id\":\"inv_8Qz\","		\
	"\"updated_at\":\"2026-03-01T10:59:59Z\","			\
	"\"object_truncated\":true,\"amount\":1200}}"

START_TEST(full_event)
{
	struct event_fields f;

	extract_str("msg_2bq", FULL_EVENT, &f);
	ck_assert_str_eq(f.type, "invoice.paid");
	ck_assert_str_eq(f.created_at_raw, "2026-03-01T12:00:00.123+01:00");
	ck_assert_str_eq(f.created_at, "2026-03-01T11:00:00.123000000Z");
	ck_assert_str_eq(f.object_type, "invoice");
	ck_assert_str_eq(f.object_id, "inv_8Qz");
	ck_assert_str_eq(f.updated_at, "2026-03-01T10:59:59.000000000Z");
	ck_assert_int_eq(f.truncated, 1);
	ck_assert_ptr_null(f.note);
	event_fields_free(&f);
}
END_TEST

START_TEST(field_forms)
{
	struct event_fields f;

	/* Whitespace, other key order, updated_at with an offset, truncated
	 * false, unrelated members around. */
	extract_str("msg_1",
	    " {\n \"data\" : { \"id\" : \"cus_1\", \"x\": [1, {\"id\": 9}],"
	    " \"updated_at\": \"2026-03-01T10:59:59.5-02:00\","
	    " \"object\": \"customer\", \"object_truncated\": false },\n"
	    " \"type\": \"customer.updated\", \"createdAt\":"
	    " \"2026-03-01T13:00:00Z\" }\n", &f);
	ck_assert_str_eq(f.type, "customer.updated");
	ck_assert_str_eq(f.created_at, "2026-03-01T13:00:00.000000000Z");
	ck_assert_str_eq(f.object_type, "customer");
	ck_assert_str_eq(f.object_id, "cus_1");
	ck_assert_str_eq(f.updated_at, "2026-03-01T12:59:59.500000000Z");
	ck_assert_int_eq(f.truncated, 0);
	ck_assert_ptr_null(f.note);
	event_fields_free(&f);

	/* object_truncated must be JSON true, not a truthy look-alike. */
	extract_str("msg_1", "{\"data\":{\"object_truncated\":\"true\"}}", &f);
	ck_assert_int_eq(f.truncated, 0);
	event_fields_free(&f);
	extract_str("msg_1", "{\"data\":{\"object_truncated\":1}}", &f);
	ck_assert_int_eq(f.truncated, 0);
	event_fields_free(&f);
}
END_TEST

START_TEST(numeric_id)
{
	static const struct { const char *json; const char *want; } ok[] = {
		{ "42", "42" }, { "0", "0" }, { "-42", "-42" }, { "42.0", "42" },
		{ "4.2e1", "42" },
		{ "9007199254740991", "9007199254740991" },	/* 2^53 - 1 */
		{ "-9007199254740991", "-9007199254740991" },
	};
	char body[256];
	struct event_fields f;

	for (size_t i = 0; i < NELEM(ok); i++) {
		snprintf(body, sizeof body,
		    "{\"type\":\"t\",\"data\":{\"object\":\"order\",\"id\":%s}}",
		    ok[i].json);
		extract_str("msg_n", body, &f);
		ck_assert_str_eq(f.object_type, "order");
		ck_assert_msg(f.object_id != NULL && strcmp(f.object_id,
		    ok[i].want) == 0, "id %s gave %s", ok[i].json,
		    f.object_id ? f.object_id : "NULL");
		ck_assert_ptr_null(f.note);
		event_fields_free(&f);
	}
}
END_TEST

START_TEST(numeric_id_not_exact)
{
	static const char *bad[] = {
		"9007199254740992",		/* 2^53 */
		"9007199254740993",		/* 2^53 + 1, read as 2^53 */
		"-9007199254740992",
		"18446744073709551616", "1e300", "-1e300", "1.5", "-0.5",
		"42.000001",
	};
	char body[256];
	struct event_fields f;

	for (size_t i = 0; i < NELEM(bad); i++) {
		snprintf(body, sizeof body,
		    "{\"type\":\"order.paid\",\"data\":{\"object\":\"order\","
		    "\"id\":%s}}", bad[i]);
		extract_str("msg_n", body, &f);
		ck_assert_msg(f.object_type == NULL && f.object_id == NULL,
		    "id %s gave an object key (%s, %s)", bad[i],
		    f.object_type ? f.object_type : "NULL",
		    f.object_id ? f.object_id : "NULL");
		ck_assert_msg(f.note != NULL, "id %s: no note", bad[i]);
		/* The rest is still extracted. */
		ck_assert_str_eq(f.type, "order.paid");
		event_fields_free(&f);
	}
}
END_TEST

START_TEST(object_key_needs_both)
{
	struct event_fields f;

	extract_str("msg_1", "{\"data\":{\"object\":\"invoice\"}}", &f);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	event_fields_free(&f);
	extract_str("msg_1", "{\"data\":{\"id\":\"inv_1\"}}", &f);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	event_fields_free(&f);
	extract_str("msg_1", "{\"data\":{\"object\":\"invoice\",\"id\":true}}", &f);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	event_fields_free(&f);
	extract_str("msg_1", "{\"data\":{\"object\":7,\"id\":\"inv_1\"}}", &f);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	event_fields_free(&f);
	/* data not an object: no data fields, the top level still counts. */
	extract_str("msg_1", "{\"type\":\"a.b\",\"data\":[{\"object\":\"x\","
	    "\"id\":\"y\"}]}", &f);
	ck_assert_str_eq(f.type, "a.b");
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	event_fields_free(&f);
}
END_TEST

START_TEST(not_json)
{
	static const char *bodies[] = {
		"hello", "type=invoice.paid&data=1", "<xml/>", "{", "{\"type\":",
		"{\"type\":\"a\",}", "\"just a string\"", "42", "null", "true",
		"{'type':'a'}",
	};
	struct event_fields f;

	for (size_t i = 0; i < NELEM(bodies); i++) {
		extract_str("msg_1", bodies[i], &f);
		assert_empty(&f);
		event_fields_free(&f);
	}
	/* Empty body. */
	extract("msg_1", "", 0, &f);
	assert_empty(&f);
	event_fields_free(&f);
}
END_TEST

START_TEST(json_array)
{
	struct event_fields f;

	extract_str("msg_1", "[" FULL_EVENT "]", &f);
	assert_empty(&f);
	event_fields_free(&f);
	extract_str("msg_1", "[]", &f);
	assert_empty(&f);
	event_fields_free(&f);
}
END_TEST

START_TEST(body_with_nul)
{
	static const char a[] = "{\"type\":\"invoice.paid\"}\0";
	static const char b[] = "{\"type\":\"invoice\0.paid\"}";
	static const char c[] = FULL_EVENT "\0";
	struct event_fields f;

	/* A raw NUL is never JSON: nothing extracted, wherever it is. */
	extract("msg_1", a, sizeof a - 1, &f);
	assert_empty(&f);
	event_fields_free(&f);
	extract("msg_1", b, sizeof b - 1, &f);
	assert_empty(&f);
	event_fields_free(&f);
	extract("msg_1", c, sizeof c - 1, &f);
	assert_empty(&f);
	event_fields_free(&f);
	extract("msg_1", "\0", 1, &f);
	assert_empty(&f);
	event_fields_free(&f);
}
END_TEST

/* "Non-JSON bodies are stored too; the JSON fields below are then empty."
 * JSON followed by anything but whitespace is not JSON. */
START_TEST(trailing_garbage_not_json)
{
	static const char *bodies[] = {
		FULL_EVENT "garbage",
		FULL_EVENT "{\"type\":\"other\"}",
		FULL_EVENT ",",
		"{\"type\":\"invoice.paid\"} x",
	};
	struct event_fields f;

	for (size_t i = 0; i < NELEM(bodies); i++) {
		extract_str("msg_1", bodies[i], &f);
		ck_assert_msg(f.type == NULL, "took type \"%s\" from \"%s\"",
		    f.type, bodies[i]);
		assert_empty(&f);
		event_fields_free(&f);
	}
	/* Trailing whitespace is still JSON. */
	extract_str("msg_1", FULL_EVENT " \r\n\t", &f);
	ck_assert_str_eq(f.type, "invoice.paid");
	event_fields_free(&f);
}
END_TEST

START_TEST(len_bounds_the_body)
{
	struct event_fields f;
	const size_t n = strlen(FULL_EVENT);

	/* The whole event, then every strictly shorter prefix: a cut JSON
	 * document is not JSON, and nothing is read past len (ASan). */
	extract("msg_1", FULL_EVENT, n, &f);
	ck_assert_str_eq(f.type, "invoice.paid");
	event_fields_free(&f);
	for (size_t len = 1; len < n; len++) {
		extract("msg_1", FULL_EVENT, len, &f);
		ck_assert_msg(f.type == NULL && f.object_id == NULL,
		    "prefix of %zu bytes extracted", len);
		event_fields_free(&f);
	}
}
END_TEST

START_TEST(relay_extracts_nothing)
{
	struct event_fields f;

	extract_str("in_2bq9", FULL_EVENT, &f);
	assert_empty(&f);
	ck_assert_ptr_null(f.note);
	event_fields_free(&f);
	/* Only the exact "in_" prefix is a relay. */
	extract_str("msg_in_2bq9", FULL_EVENT, &f);
	ck_assert_str_eq(f.type, "invoice.paid");
	event_fields_free(&f);
	extract_str("IN_2bq9", FULL_EVENT, &f);
	ck_assert_str_eq(f.type, "invoice.paid");
	event_fields_free(&f);
}
END_TEST

START_TEST(is_relay)
{
	ck_assert_int_ne(event_is_relay("in_x"), 0);
	ck_assert_int_ne(event_is_relay("in_"), 0);
	ck_assert_int_eq(event_is_relay("in"), 0);
	ck_assert_int_eq(event_is_relay(""), 0);
	ck_assert_int_eq(event_is_relay("msg_x"), 0);
	ck_assert_int_eq(event_is_relay("inx_1"), 0);
	ck_assert_int_eq(event_is_relay(" in_1"), 0);
}
END_TEST

START_TEST(created_at_unparseable)
{
	static const char *bad[] = {
		"\"yesterday\"", "\"2026-02-30T10:00:00Z\"", "\"\"",
		"\"2026-03-01T10:00:00Zjunk\"",
	};
	char body[256];
	struct event_fields f;

	for (size_t i = 0; i < NELEM(bad); i++) {
		snprintf(body, sizeof body, "{\"type\":\"a.b\",\"createdAt\":%s,"
		    "\"data\":{\"object\":\"o\",\"id\":\"1\"}}", bad[i]);
		extract_str("msg_1", body, &f);
		ck_assert_msg(f.created_at[0] == '\0', "createdAt %s gave %s",
		    bad[i], f.created_at);
		ck_assert_msg(f.note != NULL, "createdAt %s: no note", bad[i]);
		/* As sent, and the rest of the event is still extracted. */
		ck_assert_ptr_nonnull(f.created_at_raw);
		ck_assert_mem_eq(f.created_at_raw, bad[i] + 1, strlen(bad[i]) - 2);
		ck_assert_str_eq(f.type, "a.b");
		ck_assert_str_eq(f.object_id, "1");
		event_fields_free(&f);
	}
	/* Not a string at all. */
	extract_str("msg_1", "{\"type\":\"a.b\",\"createdAt\":1772362800}", &f);
	ck_assert_str_eq(f.created_at, "");
	ck_assert_ptr_nonnull(f.note);
	ck_assert_str_eq(f.type, "a.b");
	event_fields_free(&f);
	/* Absent: no clock, and nothing odd to note. */
	extract_str("msg_1", "{\"type\":\"a.b\"}", &f);
	ck_assert_str_eq(f.created_at, "");
	ck_assert_ptr_null(f.created_at_raw);
	ck_assert_ptr_null(f.note);
	event_fields_free(&f);
}
END_TEST

START_TEST(updated_at_unparseable)
{
	struct event_fields f;

	extract_str("msg_1", "{\"type\":\"a.b\",\"createdAt\":\"2026-03-01T10:00:00Z\","
	    "\"data\":{\"object\":\"o\",\"id\":\"1\",\"updated_at\":\"soon\"}}", &f);
	ck_assert_str_eq(f.updated_at, "");
	ck_assert_ptr_nonnull(f.note);
	ck_assert_str_eq(f.created_at, "2026-03-01T10:00:00.000000000Z");
	ck_assert_str_eq(f.object_id, "1");
	event_fields_free(&f);
}
END_TEST

/* pre + n 'x's + post, NUL-terminated; the caller frees. */
static char *
body_with_long(const char *pre, size_t n, const char *post)
{
	size_t pl = strlen(pre), ql = strlen(post);
	char *body = malloc(pl + n + ql + 1);

	ck_assert_ptr_nonnull(body);
	memcpy(body, pre, pl);
	memset(body + pl, 'x', n);
	memcpy(body + pl + n, post, ql + 1);
	return body;
}

START_TEST(long_fields_left_out)
{
	struct event_fields f;
	char *body;

	/* EVENT_FIELD_MAX bytes are kept ... */
	body = body_with_long("{\"type\":\"", EVENT_FIELD_MAX,
	    "\",\"data\":{\"object\":\"o\",\"id\":\"1\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_ptr_nonnull(f.type);
	ck_assert_uint_eq(strlen(f.type), EVENT_FIELD_MAX);
	ck_assert_ptr_null(f.note);
	event_fields_free(&f);
	free(body);
	/* ... one more is left out, with a note, and the rest still comes. */
	body = body_with_long("{\"type\":\"", EVENT_FIELD_MAX + 1,
	    "\",\"data\":{\"object\":\"o\",\"id\":\"1\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_ptr_null(f.type);
	ck_assert_ptr_nonnull(f.note);
	ck_assert_str_eq(f.object_id, "1");
	event_fields_free(&f);
	free(body);

	body = body_with_long("{\"type\":\"t\",\"data\":{\"object\":\"",
	    EVENT_FIELD_MAX, "\",\"id\":\"1\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_ptr_nonnull(f.object_type);
	ck_assert_uint_eq(strlen(f.object_type), EVENT_FIELD_MAX);
	ck_assert_str_eq(f.object_id, "1");
	event_fields_free(&f);
	free(body);
	body = body_with_long("{\"type\":\"t\",\"data\":{\"object\":\"",
	    EVENT_FIELD_MAX + 1, "\",\"id\":\"1\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	ck_assert_ptr_nonnull(f.note);
	ck_assert_str_eq(f.type, "t");
	event_fields_free(&f);
	free(body);

	body = body_with_long("{\"type\":\"t\",\"data\":{\"object\":\"o\",\"id\":\"",
	    EVENT_FIELD_MAX, "\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_str_eq(f.object_type, "o");
	ck_assert_ptr_nonnull(f.object_id);
	ck_assert_uint_eq(strlen(f.object_id), EVENT_FIELD_MAX);
	event_fields_free(&f);
	free(body);
	body = body_with_long("{\"type\":\"t\",\"data\":{\"object\":\"o\",\"id\":\"",
	    EVENT_FIELD_MAX + 1, "\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	ck_assert_ptr_nonnull(f.note);
	ck_assert_str_eq(f.type, "t");
	event_fields_free(&f);
	free(body);
	body = body_with_long("{\"type\":\"t\",\"data\":{\"object\":\"o\",\"id\":\"",
	    100000, "\"}}");
	extract_str("msg_1", body, &f);
	ck_assert_ptr_null(f.object_id);
	ck_assert_ptr_nonnull(f.note);
	event_fields_free(&f);
	free(body);
}
END_TEST

START_TEST(fields_free)
{
	struct event_fields f;

	extract_str("msg_1", FULL_EVENT, &f);
	event_fields_free(&f);
	ck_assert_ptr_null(f.type);
	ck_assert_ptr_null(f.created_at_raw);
	ck_assert_ptr_null(f.object_type);
	ck_assert_ptr_null(f.object_id);
	/* Freeing a released set again is harmless (ASan watches). */
	event_fields_free(&f);
}
END_TEST

/* Bodies over EVENT_EXTRACT_MAX are stored without fields (memory bound);
 * one byte less still gets them. */
START_TEST(extract_size_bound)
{
	const char *head = "{\"type\":\"client.updated\",\"createdAt\":"
	    "\"2026-11-30T10:00:00Z\",\"data\":{\"object\":\"client\","
	    "\"id\":\"c1\",\"pad\":\"";
	size_t hl = strlen(head), n;
	struct event_fields f;
	char *body;

	for (n = EVENT_EXTRACT_MAX; n <= EVENT_EXTRACT_MAX + 1; n++) {
		ck_assert_ptr_nonnull(body = malloc(n));
		memcpy(body, head, hl);
		memset(body + hl, 'x', n - hl - 4);
		memcpy(body + n - 4, "\"}}\n", 4);
		ck_assert_int_eq(event_extract("msg_big", body, n, &f), 0);
		if (n == EVENT_EXTRACT_MAX) {
			ck_assert_str_eq(f.type, "client.updated");
			ck_assert_str_eq(f.object_id, "c1");
		} else {
			ck_assert_ptr_null(f.type);
			ck_assert_ptr_null(f.object_id);
			ck_assert_str_eq(f.created_at, "");
			ck_assert_ptr_nonnull(f.note);
		}
		event_fields_free(&f);
		free(body);
	}
}
END_TEST

/* docs/DESIGN.md "The inbox": with duplicate keys the handler's JSON (PHP,
 * Python, JavaScript) keeps the LAST value; the extracted fields must be
 * those. */
START_TEST(duplicate_keys_last_wins)
{
	struct event_fields f;

	extract_str("msg_dup",
	    "{\"type\":\"a.first\",\"createdAt\":\"2026-03-01T00:00:00Z\","
	    "\"data\":{\"object\":\"invoice\",\"id\":\"inv_1\"},"
	    "\"type\":\"a.last\",\"createdAt\":\"2026-03-02T00:00:00Z\","
	    "\"data\":{\"object\":\"customer\",\"id\":\"cus_1\",\"id\":\"cus_2\","
	    "\"updated_at\":\"2026-03-01T00:00:00Z\","
	    "\"updated_at\":\"2026-03-03T00:00:00Z\"}}", &f);
	ck_assert_str_eq(f.type, "a.last");
	ck_assert_str_eq(f.created_at_raw, "2026-03-02T00:00:00Z");
	ck_assert_str_eq(f.created_at, "2026-03-02T00:00:00.000000000Z");
	ck_assert_str_eq(f.object_type, "customer");
	ck_assert_str_eq(f.object_id, "cus_2");
	ck_assert_str_eq(f.updated_at, "2026-03-03T00:00:00.000000000Z");
	event_fields_free(&f);
}
END_TEST

/* docs/DESIGN.md "The inbox": an escaped NUL would cut a value short
 * ("inv_1\u0000x" and "inv_1" one object): such a body gets no fields and a
 * note. */
START_TEST(escaped_nul_no_fields)
{
	static const char *const bodies[] = {
		"{\"type\":\"t\",\"data\":{\"object\":\"invoice\","
		"\"id\":\"inv_1\\u0000x\"}}",
		"{\"type\":\"t\",\"data\":{\"object\":\"invoice\","
		"\"id\\u0000\":\"inv_2\",\"id\":\"inv_1\"}}",
		"{\"type\":\"t\\\\\\u0000\",\"data\":{}}",
	};
	struct event_fields f;
	size_t i;

	for (i = 0; i < sizeof bodies / sizeof bodies[0]; i++) {
		extract_str("msg_nul", bodies[i], &f);
		assert_empty(&f);
		ck_assert_ptr_nonnull(f.note);
		ck_assert_ptr_nonnull(strstr(f.note, "u0000"));
		event_fields_free(&f);
	}
}
END_TEST

/* An escaped backslash followed by the text u0000 is no NUL: extracted. */
START_TEST(escaped_backslash_then_u0000)
{
	struct event_fields f;

	extract_str("msg_bs", "{\"type\":\"a\\\\u0000\",\"data\":"
	    "{\"object\":\"o\",\"id\":\"x\"}}", &f);
	ck_assert_str_eq(f.type, "a\\u0000");
	ck_assert_str_eq(f.object_id, "x");
	ck_assert_ptr_null(f.note);
	event_fields_free(&f);
}
END_TEST

static Suite *
event_suite(void)
{
	Suite *s = suite_create("event");
	TCase *tc;

	tc = tcase_create("extract");
	tcase_add_test(tc, full_event);
	tcase_add_test(tc, field_forms);
	tcase_add_test(tc, numeric_id);
	tcase_add_test(tc, numeric_id_not_exact);
	tcase_add_test(tc, object_key_needs_both);
	tcase_add_test(tc, created_at_unparseable);
	tcase_add_test(tc, updated_at_unparseable);
	tcase_add_test(tc, long_fields_left_out);
	tcase_add_test(tc, fields_free);
	tcase_add_test(tc, duplicate_keys_last_wins);
	tcase_add_test(tc, escaped_nul_no_fields);
	tcase_add_test(tc, escaped_backslash_then_u0000);
	suite_add_tcase(s, tc);

	tc = tcase_create("not_an_event");
	tcase_add_test(tc, not_json);
	tcase_add_test(tc, json_array);
	tcase_add_test(tc, body_with_nul);
	tcase_add_test(tc, trailing_garbage_not_json);
	tcase_add_test(tc, len_bounds_the_body);
	tcase_add_test(tc, relay_extracts_nothing);
	tcase_add_test(tc, is_relay);
	tcase_add_test(tc, extract_size_bound);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(event_suite());
}
