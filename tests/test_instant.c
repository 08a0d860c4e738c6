/*
 * test_instant: lib/common/instant.c — strict ISO-8601 parsing into the normalised
 * UTC form that sorts as text, and the nanosecond conversions (instant.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common/instant.h"
#include "tests/check_common.h"

/* Parse NUL-terminated s; returns the rc, out holds the result on 0. */
static int
parse(const char *s, char out[INSTANT_SIZE])
{
	return instant_parse(s, strlen(s), out);
}

/* Assert that `in` parses to `want`. */
#define PARSES(in, want) do {						\
	char out_[INSTANT_SIZE];					\
	ck_assert_msg(parse((in), out_) == 0, "refused \"%s\"", (in));	\
	ck_assert_msg(strcmp(out_, (want)) == 0,			\
	    "\"%s\" gave %s, want %s", (in), out_, (want));		\
} while (0)

/* Assert that `in` is refused. */
#define REFUSED(in) do {						\
	char out_[INSTANT_SIZE];					\
	ck_assert_msg(parse((in), out_) == -1, "took \"%s\" as %s",	\
	    (in), out_);						\
} while (0)

START_TEST(offset_orders_as_instant)
{
	char a[INSTANT_SIZE], b[INSTANT_SIZE];

	/* As text "…T10:00:00+02:00" sorts after "…T09:00:00.5Z"; as
	 * instants it is an hour earlier. */
	ck_assert_int_eq(parse("2026-03-01T10:00:00+02:00", a), 0);
	ck_assert_int_eq(parse("2026-03-01T09:00:00.5Z", b), 0);
	ck_assert_str_eq(a, "2026-03-01T08:00:00.000000000Z");
	ck_assert_str_eq(b, "2026-03-01T09:00:00.500000000Z");
	ck_assert_int_lt(strcmp(a, b), 0);
	ck_assert_uint_eq(strlen(a), INSTANT_LEN);
	ck_assert_uint_eq(strlen(b), INSTANT_LEN);
}
END_TEST

/* A table of instants in true order, written in mixed forms: sorting the
 * normalised strings with strcmp must give the same order. */
START_TEST(normalised_sorts_as_instants)
{
	static const char *in_order[] = {
		"0001-01-01T00:00:00Z",
		"1969-12-31T23:59:59.999999999Z",
		"1970-01-01T00:00:00Z",
		"1970-01-01T01:00:00.000000001+01:00",
		"2026-03-01T09:00:00-01:00",		/* 10:00Z */
		"2026-03-01T10:00:00.000000001Z",
		"2026-03-01T10:00:00.1Z",
		"2026-03-01T12:00:00.10000001+02:00",	/* 10:00:00.10000001Z */
		"2026-03-01T10:00:00.2z",
		"2026-03-01 10:00:01Z",
		"9999-12-31T23:59:59.999999999Z",
	};
	char prev[INSTANT_SIZE], cur[INSTANT_SIZE];

	ck_assert_int_eq(parse(in_order[0], prev), 0);
	for (size_t i = 1; i < NELEM(in_order); i++) {
		ck_assert_msg(parse(in_order[i], cur) == 0, "refused %s",
		    in_order[i]);
		ck_assert_msg(strcmp(prev, cur) < 0, "%s (%s) !< %s (%s)",
		    in_order[i - 1], prev, in_order[i], cur);
		memcpy(prev, cur, sizeof prev);
	}
}
END_TEST

START_TEST(equal_instants_equal_text)
{
	char a[INSTANT_SIZE], b[INSTANT_SIZE], c[INSTANT_SIZE];

	ck_assert_int_eq(parse("2026-03-01T10:00:00.5+02:00", a), 0);
	ck_assert_int_eq(parse("2026-03-01T08:00:00.500Z", b), 0);
	ck_assert_int_eq(parse("2026-03-01T03:30:00,5-04:30", c), 0);
	ck_assert_str_eq(a, b);
	ck_assert_str_eq(b, c);
}
END_TEST

START_TEST(fraction_1_to_9_digits)
{
	const char *digits = "123456789";
	char in[64], want[64];

	for (int n = 1; n <= 9; n++) {
		snprintf(in, sizeof in, "2026-03-01T10:00:00.%.*sZ", n, digits);
		snprintf(want, sizeof want, "2026-03-01T10:00:00.%.*s%.*sZ", n,
		    digits, 9 - n, "000000000");
		PARSES(in, want);
	}
	PARSES("2026-03-01T10:00:00.000000001Z", "2026-03-01T10:00:00.000000001Z");
	PARSES("2026-03-01T10:00:00.05Z", "2026-03-01T10:00:00.050000000Z");
	PARSES("2026-03-01T10:00:00.0Z", "2026-03-01T10:00:00.000000000Z");
	/* ',' is ISO-8601's other decimal sign. */
	PARSES("2026-03-01T10:00:00,25Z", "2026-03-01T10:00:00.250000000Z");
}
END_TEST

START_TEST(fraction_over_9_truncated)
{
	/* Truncated, not rounded: .9999999999 stays in the same second. */
	PARSES("2026-03-01T10:00:00.1234567891Z", "2026-03-01T10:00:00.123456789Z");
	PARSES("2026-03-01T10:00:00.9999999999Z", "2026-03-01T10:00:00.999999999Z");
	PARSES("2026-03-01T23:59:59.99999999999999999999999999999+00:00",
	    "2026-03-01T23:59:59.999999999Z");
	PARSES("2026-03-01T10:00:00.0000000009Z", "2026-03-01T10:00:00.000000000Z");
}
END_TEST

START_TEST(fraction_malformed)
{
	REFUSED("2026-03-01T10:00:00.Z");
	REFUSED("2026-03-01T10:00:00.");
	REFUSED("2026-03-01T10:00:00,Z");
	REFUSED("2026-03-01T10:00:00.5.5Z");
	REFUSED("2026-03-01T10:00:00.a5Z");
	REFUSED("2026-03-01T10:00:00..5Z");
	REFUSED("2026-03-01T10:00.5Z");		/* no seconds */
}
END_TEST

START_TEST(offsets)
{
	PARSES("2026-03-01T10:00:00Z", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00z", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00+00:00", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00-00:00", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00+02:00", "2026-03-01T08:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00-05:30", "2026-03-01T15:30:00.000000000Z");
	PARSES("2026-03-01T10:00:00+0530", "2026-03-01T04:30:00.000000000Z");
	PARSES("2026-03-01T10:00:00-0530", "2026-03-01T15:30:00.000000000Z");
	PARSES("2026-03-01T10:00:00+05", "2026-03-01T05:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00-05", "2026-03-01T15:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00+23:59", "2026-02-28T10:01:00.000000000Z");
	PARSES("2026-03-01T10:00:00.25+01:15", "2026-03-01T08:45:00.250000000Z");
}
END_TEST

START_TEST(offsets_cross_dates)
{
	/* Forward over a year end, backward over a leap day. */
	PARSES("2026-12-31T23:00:00-02:00", "2027-01-01T01:00:00.000000000Z");
	PARSES("2024-03-01T00:30:00+01:00", "2024-02-29T23:30:00.000000000Z");
	PARSES("2023-03-01T00:30:00+01:00", "2023-02-28T23:30:00.000000000Z");
	PARSES("2000-01-01T00:00:00+14", "1999-12-31T10:00:00.000000000Z");
}
END_TEST

START_TEST(offsets_malformed)
{
	REFUSED("2026-03-01T10:00:00+");
	REFUSED("2026-03-01T10:00:00+2");
	REFUSED("2026-03-01T10:00:00+2:00");
	REFUSED("2026-03-01T10:00:00+02:");
	REFUSED("2026-03-01T10:00:00+02:0");
	REFUSED("2026-03-01T10:00:00+020");
	REFUSED("2026-03-01T10:00:00+02:00:00");
	REFUSED("2026-03-01T10:00:00+24:00");
	REFUSED("2026-03-01T10:00:00+02:60");
	REFUSED("2026-03-01T10:00:00+0260");
	REFUSED("2026-03-01T10:00:00 +02:00");
	REFUSED("2026-03-01T10:00:00UTC");
	REFUSED("2026-03-01T10:00:00GMT+2");
	REFUSED("2026-03-01T10:00:00ZZ");
	REFUSED("2026-03-01T10:00:00Z+01:00");
	REFUSED("2026-03-01T10:00:00+0200Z");
	REFUSED("2026-03-01T10:00:00*02:00");
}
END_TEST

START_TEST(no_offset_is_utc)
{
	char a[INSTANT_SIZE], b[INSTANT_SIZE];

	PARSES("2026-03-01T10:00:00", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01T10:00:00.75", "2026-03-01T10:00:00.750000000Z");
	ck_assert_int_eq(parse("2026-03-01T10:00:00", a), 0);
	ck_assert_int_eq(parse("2026-03-01T10:00:00Z", b), 0);
	ck_assert_str_eq(a, b);
}
END_TEST

START_TEST(separators)
{
	PARSES("2026-03-01t10:00:00Z", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01 10:00:00Z", "2026-03-01T10:00:00.000000000Z");
	PARSES("2026-03-01 10:00:00.5+01:00", "2026-03-01T09:00:00.500000000Z");
	REFUSED("2026-03-01_10:00:00Z");
	REFUSED("2026-03-0110:00:00Z");
	REFUSED("2026-03-01  10:00:00Z");
	REFUSED("2026-03-01\t10:00:00Z");
	REFUSED("2026-03-01T10-00-00Z");
	REFUSED("2026/03/01T10:00:00Z");
	REFUSED("20260301T100000Z");		/* basic format */
}
END_TEST

START_TEST(leap_second)
{
	PARSES("2016-12-31T23:59:60Z", "2017-01-01T00:00:00.000000000Z");
	PARSES("2016-12-31T23:59:60.5Z", "2017-01-01T00:00:00.500000000Z");
	PARSES("2016-12-31T23:59:60+00:00", "2017-01-01T00:00:00.000000000Z");
	PARSES("2026-06-30T12:30:60Z", "2026-06-30T12:31:00.000000000Z");
	REFUSED("2016-12-31T23:59:61Z");
	REFUSED("2016-12-31T23:59:99Z");
}
END_TEST

START_TEST(invalid_dates)
{
	REFUSED("2026-02-30T00:00:00Z");
	REFUSED("2026-02-29T00:00:00Z");	/* not a leap year */
	REFUSED("1900-02-29T00:00:00Z");	/* century, not leap */
	REFUSED("2026-04-31T00:00:00Z");
	REFUSED("2026-13-01T00:00:00Z");
	REFUSED("2026-00-01T00:00:00Z");
	REFUSED("2026-01-00T00:00:00Z");
	REFUSED("2026-01-32T00:00:00Z");
	REFUSED("2026-03-01T24:00:00Z");
	REFUSED("2026-03-01T23:60:00Z");
	REFUSED("0000-01-01T00:00:00Z");
	PARSES("2024-02-29T00:00:00Z", "2024-02-29T00:00:00.000000000Z");
	PARSES("2000-02-29T12:00:00Z", "2000-02-29T12:00:00.000000000Z");
	PARSES("2026-12-31T23:59:59Z", "2026-12-31T23:59:59.000000000Z");
}
END_TEST

START_TEST(malformed_fields)
{
	REFUSED("226-03-01T10:00:00Z");
	REFUSED("20260-03-01T10:00:00Z");
	REFUSED("2026-3-01T10:00:00Z");
	REFUSED("2026-03-1T10:00:00Z");
	REFUSED("2026-03-01T1:00:00Z");
	REFUSED("2026-03-01T10:0:00Z");
	REFUSED("2026-03-01T10:00:0Z");
	REFUSED("2026-+3-01T10:00:00Z");
	REFUSED("2026- 3-01T10:00:00Z");
	REFUSED("+2026-03-01T10:00:00Z");
	REFUSED("-2026-03-01T10:00:00Z");
	REFUSED("2026-03-01");
	REFUSED("2026-03-01T");
	REFUSED("2026-03-01T10:00");
	REFUSED("2026-03-01T10:00Z");
	REFUSED("1772362800");
	REFUSED("yesterday");
}
END_TEST

START_TEST(trailing_garbage)
{
	REFUSED("2026-03-01T10:00:00Z ");
	REFUSED("2026-03-01T10:00:00Zx");
	REFUSED("2026-03-01T10:00:00+02:00x");
	REFUSED("2026-03-01T10:00:00.5 ");
	REFUSED("2026-03-01T10:00:00 ");
	REFUSED(" 2026-03-01T10:00:00Z");
	REFUSED("2026-03-01T10:00:00Z\n");
}
END_TEST

START_TEST(empty_and_len)
{
	static const char s[] = "2026-03-01T10:00:00Zgarbage";
	char out[INSTANT_SIZE];

	ck_assert_int_eq(instant_parse("", 0, out), -1);
	ck_assert_int_eq(instant_parse(s, 0, out), -1);
	/* Only len bytes are the input: the garbage after them is not. */
	ck_assert_int_eq(instant_parse(s, 20, out), 0);
	ck_assert_str_eq(out, "2026-03-01T10:00:00.000000000Z");
	ck_assert_int_eq(instant_parse(s, 21, out), -1);
	/* Cut short anywhere: refused, never read past len. */
	for (size_t n = 1; n < 19; n++) {
		char *copy = malloc(n);	/* exactly n bytes, for ASan */

		ck_assert_ptr_nonnull(copy);
		memcpy(copy, "2026-03-01T10:00:00", n);
		ck_assert_msg(instant_parse(copy, n, out) == -1, "len %zu", n);
		free(copy);
	}
	/* An embedded NUL is not part of any form. */
	ck_assert_int_eq(instant_parse("2026-03-01T10:00:00\0Z", 21, out), -1);
}
END_TEST

START_TEST(year_range)
{
	PARSES("0001-01-01T00:00:00Z", "0001-01-01T00:00:00.000000000Z");
	PARSES("9999-12-31T23:59:59.999999999Z", "9999-12-31T23:59:59.999999999Z");
	PARSES("0001-01-01T01:00:00+01:00", "0001-01-01T00:00:00.000000000Z");
	PARSES("9999-12-31T22:59:59-01:00", "9999-12-31T23:59:59.000000000Z");
	/* In range as written, out of range in UTC. */
	REFUSED("0001-01-01T00:30:00+01:00");
	REFUSED("0001-01-01T00:00:00.5+00:01");
	REFUSED("9999-12-31T23:30:00-01:00");
	REFUSED("9999-12-31T23:59:60Z");
}
END_TEST

/* ---- instant_format / instant_to_ns ---- */

START_TEST(format_known)
{
	char out[INSTANT_SIZE];

	ck_assert_int_eq(instant_format(0, out), 0);
	ck_assert_str_eq(out, "1970-01-01T00:00:00.000000000Z");
	ck_assert_int_eq(instant_format(1500000000123456789LL, out), 0);
	ck_assert_str_eq(out, "2017-07-14T02:40:00.123456789Z");
	ck_assert_int_eq(instant_format(1772362800LL * 1000000000, out), 0);
	ck_assert_str_eq(out, "2026-03-01T11:00:00.000000000Z");
	ck_assert_int_eq(instant_format(INT64_MAX, out), 0);
	ck_assert_str_eq(out, "2262-04-11T23:47:16.854775807Z");
}
END_TEST

START_TEST(format_negative)
{
	char out[INSTANT_SIZE];

	ck_assert_int_eq(instant_format(-1, out), 0);
	ck_assert_str_eq(out, "1969-12-31T23:59:59.999999999Z");
	ck_assert_int_eq(instant_format(-1000000000, out), 0);
	ck_assert_str_eq(out, "1969-12-31T23:59:59.000000000Z");
	ck_assert_int_eq(instant_format(-1000000001, out), 0);
	ck_assert_str_eq(out, "1969-12-31T23:59:58.999999999Z");
	ck_assert_int_eq(instant_format(-999999999, out), 0);
	ck_assert_str_eq(out, "1969-12-31T23:59:59.000000001Z");
	ck_assert_int_eq(instant_format(-86400LL * 1000000000, out), 0);
	ck_assert_str_eq(out, "1969-12-31T00:00:00.000000000Z");
	ck_assert_int_eq(instant_format(INT64_MIN, out), 0);
	ck_assert_str_eq(out, "1677-09-21T00:12:43.145224192Z");
}
END_TEST

START_TEST(round_trip)
{
	static const int64_t ns[] = {
		0, 1, -1, 999999999, -999999999, 1000000000, -1000000000,
		-1000000001, 1500000000123456789LL, -1500000000123456789LL,
		1772362800LL * 1000000000, 951782400LL * 1000000000 + 5,
		-8000000000000000000LL,		/* 1716 */
		9200000000000000000LL,		/* 2261 */
	};
	char out[INSTANT_SIZE], again[INSTANT_SIZE];
	int64_t back;

	for (size_t i = 0; i < NELEM(ns); i++) {
		ck_assert_int_eq(instant_format(ns[i], out), 0);
		back = 0;
		ck_assert_msg(instant_to_ns(out, &back) == 0, "%s refused", out);
		ck_assert_msg(back == ns[i], "%lld -> %s -> %lld",
		    (long long)ns[i], out, (long long)back);
		/* The normalised form parses to itself. */
		ck_assert_int_eq(instant_parse(out, strlen(out), again), 0);
		ck_assert_str_eq(again, out);
	}
}
END_TEST

START_TEST(parse_then_to_ns)
{
	char out[INSTANT_SIZE];
	int64_t ns;

	ck_assert_int_eq(parse("2026-03-01T12:00:00.123+01:00", out), 0);
	ck_assert_int_eq(instant_to_ns(out, &ns), 0);
	ck_assert(ns == 1772362800LL * 1000000000 + 123000000);
	ck_assert_int_eq(parse("1969-12-31T23:59:59.5Z", out), 0);
	ck_assert_int_eq(instant_to_ns(out, &ns), 0);
	ck_assert(ns == -500000000);
}
END_TEST

START_TEST(to_ns_refuses_non_normalised)
{
	int64_t ns;

	ck_assert_int_eq(instant_to_ns(NULL, &ns), -1);
	ck_assert_int_eq(instant_to_ns("", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00Z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00.5Z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00.000000000", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00.000000000z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00.0000000000Z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00.000000000Z ", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-03-01T10:00:00.00000+0000", &ns), -1);
	ck_assert_int_eq(instant_to_ns("2026-02-30T10:00:00.000000000Z", &ns), -1);
	/* 30 characters ending in Z, but not the form instant_format writes. */
	ck_assert_msg(instant_to_ns("2026-03-01 10:00:00.000000000Z", &ns) == -1,
	    "took a space separator");
	ck_assert_msg(instant_to_ns("2026-03-01T10:00:00,000000000Z", &ns) == -1,
	    "took a ',' decimal sign");
	ck_assert_msg(instant_to_ns("2026-03-01t10:00:00.000000000Z", &ns) == -1,
	    "took a 't' separator");
}
END_TEST

START_TEST(to_ns_out_of_int64)
{
	int64_t ns;

	/* Normalised, but past what int64 nanoseconds hold (1678..2262). */
	ck_assert_int_eq(instant_to_ns("3000-01-01T00:00:00.000000000Z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("1600-01-01T00:00:00.000000000Z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("9999-12-31T23:59:59.999999999Z", &ns), -1);
	ck_assert_int_eq(instant_to_ns("0001-01-01T00:00:00.000000000Z", &ns), -1);
}
END_TEST

START_TEST(format_whole_int64_range)
{
	/* instant_format cannot leave years 0001..9999 with int64 ns, so the
	 * range is checked through instant_parse's results above; here the
	 * whole int64 range formats as 30 characters. */
	static const int64_t ns[] = { INT64_MIN, INT64_MIN + 1, -1, 0, INT64_MAX };
	char out[INSTANT_SIZE];

	for (size_t i = 0; i < NELEM(ns); i++) {
		memset(out, 'x', sizeof out);
		ck_assert_int_eq(instant_format(ns[i], out), 0);
		ck_assert_uint_eq(strlen(out), INSTANT_LEN);
		ck_assert_int_eq(out[INSTANT_LEN - 1], 'Z');
	}
}
END_TEST

START_TEST(later_of_two)
{
	const char *a = "2026-11-30T08:00:00.000000000Z";
	const char *b = "2026-11-30T08:00:00.000000001Z";

	ck_assert_ptr_eq(instant_later(a, b), b);
	ck_assert_ptr_eq(instant_later(b, a), b);
	ck_assert_ptr_eq(instant_later("", a), a);
	ck_assert_ptr_eq(instant_later(a, ""), a);
	ck_assert_str_eq(instant_later("", ""), "");
}
END_TEST

static Suite *
instant_suite(void)
{
	Suite *s = suite_create("instant");
	TCase *tc;

	tc = tcase_create("parse");
	tcase_add_test(tc, offset_orders_as_instant);
	tcase_add_test(tc, normalised_sorts_as_instants);
	tcase_add_test(tc, equal_instants_equal_text);
	tcase_add_test(tc, fraction_1_to_9_digits);
	tcase_add_test(tc, fraction_over_9_truncated);
	tcase_add_test(tc, fraction_malformed);
	tcase_add_test(tc, offsets);
	tcase_add_test(tc, offsets_cross_dates);
	tcase_add_test(tc, offsets_malformed);
	tcase_add_test(tc, no_offset_is_utc);
	tcase_add_test(tc, separators);
	tcase_add_test(tc, leap_second);
	tcase_add_test(tc, invalid_dates);
	tcase_add_test(tc, malformed_fields);
	tcase_add_test(tc, trailing_garbage);
	tcase_add_test(tc, empty_and_len);
	tcase_add_test(tc, year_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("format");
	tcase_add_test(tc, format_known);
	tcase_add_test(tc, format_negative);
	tcase_add_test(tc, round_trip);
	tcase_add_test(tc, parse_then_to_ns);
	tcase_add_test(tc, to_ns_refuses_non_normalised);
	tcase_add_test(tc, to_ns_out_of_int64);
	tcase_add_test(tc, format_whole_int64_range);
	tcase_add_test(tc, later_of_two);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(instant_suite());
}
