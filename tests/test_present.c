/*
 * test_present: lib/operator/present.c — how the drainer shows times and events
 * (present.h): the short and relative times at their unit boundaries,
 * escaping of untrusted bytes, the handler output's indented lines, the
 * JSON form of an event and an operator's --since/--until.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "lib/drain/drain.h"
#include "lib/common/instant.h"
#include "lib/operator/present.h"
#include "tests/check_common.h"

#define SEC	1000000000LL

/* What fn printed, through a memory stream (free it). */
#define CAPTURE(out, call) do {						\
	size_t len_;							\
	FILE *f = open_memstream(&(out), &len_);			\
	ck_assert_ptr_nonnull(f);					\
	call;								\
	fclose(f);							\
} while (0)

START_TEST(short_time_cuts_to_seconds)
{
	char out[PRESENT_TIME_SIZE], norm[INSTANT_SIZE];

	ck_assert_int_eq(instant_parse("2026-11-30T07:21:22.123+00:00", 29,
	    norm), 0);
	ck_assert_str_eq(present_short_time(norm, out), "2026-11-30T07:21:22Z");
	ck_assert_str_eq(present_short_time(NULL, out), "-");
	ck_assert_str_eq(present_short_time("2026-11-30", out), "-");
}
END_TEST

START_TEST(relative_switches_units_at_two)
{
	static const struct {
		int64_t		ago_s;
		const char	*want;
	} cases[] = {
		{ 0, "0s ago" }, { 119, "119s ago" }, { 120, "2m ago" },
		{ 2 * 3600 - 1, "119m ago" }, { 2 * 3600, "2h ago" },
		{ 2 * 86400 - 1, "47h ago" }, { 2 * 86400, "2d ago" },
		{ -90, "90s from now" }, { -3 * 86400, "3d from now" },
	};
	char out[PRESENT_TIME_SIZE], at[INSTANT_SIZE];
	int64_t now = 1772366400LL * SEC;
	size_t i;

	ck_assert_int_eq(instant_format(now, at), 0);
	for (i = 0; i < NELEM(cases); i++)
		ck_assert_str_eq(present_relative(at, now + cases[i].ago_s * SEC,
		    out), cases[i].want);
	ck_assert_str_eq(present_relative(NULL, now, out), "never");
	ck_assert_str_eq(present_relative("yesterday", now, out), "never");
}
END_TEST

START_TEST(escaped_cannot_forge_lines)
{
	char *out = NULL;

	CAPTURE(out, present_escaped(f, "a\nb\x1b[2J", 8));
	ck_assert_ptr_null(strchr(out, '\n'));
	ck_assert_ptr_null(strchr(out, '\x1b'));
	ck_assert(contains(out, "a"));
	free(out);
	CAPTURE(out, present_text(f, NULL));
	ck_assert_str_eq(out, "-");
	free(out);
}
END_TEST

START_TEST(output_indents_each_line)
{
	char *out = NULL;

	CAPTURE(out, present_output(f, "one\ntwo\n", 8));
	ck_assert_str_eq(out, "  | one\n  | two\n");
	free(out);
	/* A last line without its newline, and an empty line within. */
	CAPTURE(out, present_output(f, "a\n\nb", 4));
	ck_assert_str_eq(out, "  | a\n  | \n  | b\n");
	free(out);
	CAPTURE(out, present_output(f, "", 0));
	ck_assert_str_eq(out, "");
	free(out);
}
END_TEST

/* docs/DESIGN.md "The operator's tools": the output decoded for reading,
 * never a literal \x0a. */
START_TEST(output_is_decoded_for_reading)
{
	char *out = NULL;

	/* UTF-8 and backslashes as they are; a CRLF ending is a newline. */
	CAPTURE(out, present_output(f, "Fehler: \xc3\xbc App\\Foo\r\nx", 21));
	ck_assert_str_eq(out, "  | Fehler: \xc3\xbc App\\Foo\n  | x\n");
	free(out);
	/* Control bytes (ESC, a C1 control, a lone CR), invalid UTF-8 and
	 * a NUL as \xHH text. */
	CAPTURE(out, present_output(f, "a\x1b[2J\xc2\x9b\rb\xff\xc3\0c\n", 14));
	ck_assert_str_eq(out, "  | a\\x1b[2J\\xc2\\x9b\\x0db\\xff\\xc3\\x00c\n");
	free(out);
	/* One line: the lines joined, no newline, no \x0a. */
	CAPTURE(out, present_output_inline(f, "one\n\ntwo\r\n", 10));
	ck_assert_str_eq(out, "one | two");
	free(out);
}
END_TEST

START_TEST(event_json_escapes_and_keeps_body)
{
	struct inbox_event e;
	cJSON *o;
	const cJSON *v;
	unsigned char raw[3];
	size_t rawlen;

	inbox_event_init(&e);
	e.webhook_id = strdup("msg_\x01x");
	memcpy(e.state, "pending", 8);
	e.type = strdup("");
	e.has_body = 1;
	ck_assert_int_eq(buf_append(&e.body, "\0\xff\n", 3), 0);
	ck_assert_ptr_nonnull(o = present_event_json(&e, 1));
	v = cJSON_GetObjectItemCaseSensitive(o, "webhook_id");
	ck_assert(cJSON_IsString(v));
	/* docs/DESIGN.md "The operator's tools": the id round-trips (the
	 * printed JSON escapes the control byte as \u0001, so no line is
	 * forged on the way). */
	ck_assert_str_eq(v->valuestring, "msg_\x01x");
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "type")));
	ck_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(o, "object_id")));
	v = cJSON_GetObjectItemCaseSensitive(o, "body_base64");
	ck_assert(cJSON_IsString(v));
	ck_assert_int_eq(sodium_base642bin(raw, sizeof raw, v->valuestring,
	    strlen(v->valuestring), NULL, &rawlen, NULL,
	    sodium_base64_VARIANT_ORIGINAL), 0);
	ck_assert_uint_eq(rawlen, 3);
	ck_assert_mem_eq(raw, "\0\xff\n", 3);
	cJSON_Delete(o);
	/* Without with_body, no body; body_kept says it is there. */
	ck_assert_ptr_nonnull(o = present_event_json(&e, 0));
	ck_assert_ptr_null(cJSON_GetObjectItemCaseSensitive(o, "body_base64"));
	ck_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "body_kept")));
	cJSON_Delete(o);
	inbox_event_free(&e);
}
END_TEST

/* docs/DESIGN.md "The operator's tools": non-ASCII ids as real UTF-8, the
 * output's newlines as "\n" (not "\\x0a"), bytes that are not UTF-8 as \xHH
 * text. */
START_TEST(event_json_keeps_utf8_and_escapes_the_rest)
{
	struct inbox_event e;
	cJSON *o;
	char *t;

	inbox_event_init(&e);
	e.webhook_id = strdup("msg_\xc3\xbc");
	memcpy(e.state, "dead", 5);
	ck_assert_int_eq(buf_append(&e.last_output, "line 52\n\xff\xc3", 10), 0);
	ck_assert_ptr_nonnull(o = present_event_json(&e, 0));
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "webhook_id")->
	    valuestring, "msg_\xc3\xbc");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o, "last_output")->
	    valuestring, "line 52\n\\xff\\xc3");
	ck_assert_ptr_nonnull(t = cJSON_PrintUnformatted(o));
	ck_assert_ptr_null(strstr(t, "\\\\x0a"));
	ck_assert_ptr_null(strchr(t, '\n'));
	free(t);
	cJSON_Delete(o);
	inbox_event_free(&e);
}
END_TEST

START_TEST(parse_when_instant_or_duration)
{
	int64_t now = 1772366400LL * SEC, t;

	ck_assert_int_eq(present_parse_when("2h", now, &t), 0);
	ck_assert_int_eq(t, now - 7200 * SEC);
	ck_assert_int_eq(present_parse_when("2026-03-01T12:00:00Z", now, &t), 0);
	ck_assert_int_eq(t, 1772366400LL * SEC);
	ck_assert_int_eq(present_parse_when("2026-03-01T13:00:00+01:00", now,
	    &t), 0);
	ck_assert_int_eq(t, 1772366400LL * SEC);
	ck_assert_int_eq(present_parse_when("yesterday", now, &t), -1);
	ck_assert_int_eq(present_parse_when("", now, &t), -1);
	ck_assert_int_eq(present_parse_when("3651d", now, &t), -1);
}
END_TEST

/* A pending event of client:7 that failed once, as the inbox gives it. */
static void
pending_event(struct inbox_event *e)
{
	inbox_event_init(e);
	e->webhook_id = strdup("msg_1");
	memcpy(e->state, "pending", 8);
	e->type = strdup("client.updated");
	e->object_type = strdup("client");
	e->object_id = strdup("7");
	e->attempts = 1;
	e->failures = 1;
	ck_assert_int_eq(instant_format(1772366400LL * SEC, e->received_at), 0);
	ck_assert_int_eq(instant_format(1772366400LL * SEC, e->created_at), 0);
	ck_assert_int_eq(instant_format(1772366520LL * SEC, e->next_at), 0);
}

START_TEST(event_line_for_list)
{
	struct inbox_event e;
	char *out = NULL;

	pending_event(&e);
	CAPTURE(out, present_event_line(f, &e, 1772366400LL * SEC));
	ck_assert_str_eq(out, "2026-03-01T12:00:00Z  pending    1  msg_1 "
	    "client.updated client:7 2026-03-01T12:00:00Z  retry 2m from now\n");
	free(out);
	e.blocked = 1;
	free(e.object_type);
	e.object_type = NULL;
	CAPTURE(out, present_event_line(f, &e, 1772366400LL * SEC));
	ck_assert(contains(out, " - 2026-03-01T12:00:00Z  blocked\n"));
	free(out);
	inbox_event_free(&e);
}
END_TEST

START_TEST(event_card_for_show)
{
	struct inbox_event e;
	char *out = NULL;

	pending_event(&e);
	ck_assert_int_eq(buf_append(&e.last_output, "line 1\nline 2", 13), 0);
	CAPTURE(out, present_event_card(f, &e, 1772366400LL * SEC));
	ck_assert(contains(out, "webhook-id:    msg_1\nstate:         pending "
	    "(next attempt 2026-03-01T12:02:00Z, 2m from now)\n"));
	ck_assert(contains(out, "\nobject:        client 7\n"));
	ck_assert(contains(out, "\nlast-output:\n  | line 1\n  | line 2\n"));
	ck_assert(contains(out, "\nbody:          dropped by retention\n"));
	free(out);
	inbox_event_free(&e);
}
END_TEST

START_TEST(drain_event_says_first_failure_and_death_only)
{
	struct handler_result r;
	struct inbox_event e;
	struct drain_event ev = { DRAIN_RETRY, &e, &r, 1, 0 };
	char *out = NULL, *err = NULL;
	size_t outlen, errlen;
	FILE *o, *x;

	pending_event(&e);
	memset(&r, 0, sizeof r);
	snprintf(r.error, sizeof r.error, "exit 3");
	memcpy(r.output, "oops\n", 5);
	r.output_len = 5;
	/* The first failure, even without -v; later ones only with it. */
	ck_assert_ptr_nonnull(o = open_memstream(&out, &outlen));
	ck_assert_ptr_nonnull(x = open_memstream(&err, &errlen));
	present_drain_event(o, x, &ev, 12, 0);
	ev.failures = 2;
	present_drain_event(o, x, &ev, 12, 0);
	present_drain_event(o, x, &ev, 12, 1);
	ev.outcome = DRAIN_DEAD;
	ev.failures = 12;
	present_drain_event(o, x, &ev, 12, 0);
	ev.outcome = DRAIN_DONE;
	present_drain_event(o, x, &ev, 12, 0);
	fclose(o);
	fclose(x);
	ck_assert_str_eq(out, "retry   msg_1 (exit 3; failure 2 of 12)\n");
	ck_assert_str_eq(err, "webhook-drain: msg_1 failed (exit 3); it will be "
	    "retried with backoff, up to 12 attempts. Output tail: oops\n"
	    "webhook-drain: msg_1 is dead after 12 failures (last: exit 3); see "
	    "'webhook-drain show msg_1', then requeue or forget it\n");
	free(out);
	free(err);
	inbox_event_free(&e);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("present");
	TCase *tc = tcase_create("present");

	tcase_add_test(tc, short_time_cuts_to_seconds);
	tcase_add_test(tc, relative_switches_units_at_two);
	tcase_add_test(tc, escaped_cannot_forge_lines);
	tcase_add_test(tc, output_indents_each_line);
	tcase_add_test(tc, output_is_decoded_for_reading);
	tcase_add_test(tc, event_json_escapes_and_keeps_body);
	tcase_add_test(tc, event_json_keeps_utf8_and_escapes_the_rest);
	tcase_add_test(tc, parse_when_instant_or_duration);
	tcase_add_test(tc, event_line_for_list);
	tcase_add_test(tc, event_card_for_show);
	tcase_add_test(tc, drain_event_says_first_failure_and_death_only);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main(suite());
}
