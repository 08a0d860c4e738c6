/*
 * test_util: lib/common/util.c — the range-checked number parsers, durations, the
 * capped byte buffer, log escaping, edit distance and small-file reading
 * (util.h holds the contracts tested).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/common/util.h"
#include "tests/check_common.h"

/* ---- util_parse_decimal ---- */

/* Parse NUL-terminated s with util_parse_decimal; returns its rc. */
static int
dec(const char *s, int64_t max, int64_t *out)
{
	return util_parse_decimal(s, strlen(s), max, out);
}

START_TEST(decimal_canonical)
{
	static const struct { const char *s; int64_t v; } ok[] = {
		{ "0", 0 }, { "1", 1 }, { "9", 9 }, { "10", 10 },
		{ "1614265330", 1614265330 }, { "1000000", 1000000 },
	};
	int64_t v;

	for (size_t i = 0; i < NELEM(ok); i++) {
		v = -1;
		ck_assert_msg(dec(ok[i].s, INT64_MAX, &v) == 0, "refused %s", ok[i].s);
		ck_assert_int_eq(v, ok[i].v);
	}
}
END_TEST

START_TEST(decimal_refused)
{
	static const char *bad[] = {
		"01", "00", "007", "-1", "+1", " 1", "1 ", "1a", "a1", "1.0",
		"1e3", "0x10", "-0", "\t1", "1\n", "١",	/* Arabic-Indic one */
	};
	int64_t v;

	for (size_t i = 0; i < NELEM(bad); i++)
		ck_assert_msg(dec(bad[i], INT64_MAX, &v) == -1, "took \"%s\"", bad[i]);
}
END_TEST

START_TEST(decimal_len_zero)
{
	int64_t v;

	ck_assert_int_eq(util_parse_decimal("", 0, INT64_MAX, &v), -1);
	/* len 0 is refused even when the bytes behind it are digits. */
	ck_assert_int_eq(util_parse_decimal("123", 0, INT64_MAX, &v), -1);
}
END_TEST

START_TEST(decimal_uses_len_not_nul)
{
	int64_t v = -1;

	/* "12345" read as its first 3 bytes; the rest must not count. */
	ck_assert_int_eq(util_parse_decimal("12345", 3, INT64_MAX, &v), 0);
	ck_assert_int_eq(v, 123);
	/* Garbage past len does not matter; garbage inside does. */
	ck_assert_int_eq(util_parse_decimal("42xyz", 2, INT64_MAX, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(util_parse_decimal("42xyz", 3, INT64_MAX, &v), -1);
	/* A NUL inside len is not a digit. */
	ck_assert_int_eq(util_parse_decimal("4\0" "2", 3, INT64_MAX, &v), -1);
}
END_TEST

START_TEST(decimal_max)
{
	int64_t v = -1;

	ck_assert_int_eq(dec("100", 100, &v), 0);
	ck_assert_int_eq(v, 100);
	ck_assert_int_eq(dec("101", 100, &v), -1);
	ck_assert_int_eq(dec("1000", 100, &v), -1);
	ck_assert_int_eq(dec("99", 100, &v), 0);
	ck_assert_int_eq(v, 99);
	ck_assert_int_eq(dec("0", 0, &v), 0);
	ck_assert_int_eq(v, 0);
}
END_TEST

/* max below 9: the value is still bounded by max (0 ≤ value ≤ max). */
START_TEST(decimal_max_below_one_digit)
{
	int64_t v = -1;

	ck_assert_int_eq(dec("5", 5, &v), 0);
	ck_assert_int_eq(v, 5);
	v = -1;
	ck_assert_msg(dec("7", 5, &v) == -1,
	    "util_parse_decimal(\"7\", max 5) accepted, stored %lld", (long long)v);
	ck_assert_msg(dec("9", 1, &v) == -1,
	    "util_parse_decimal(\"9\", max 1) accepted, stored %lld", (long long)v);
	ck_assert_msg(dec("1", 0, &v) == -1,
	    "util_parse_decimal(\"1\", max 0) accepted, stored %lld", (long long)v);
}
END_TEST

START_TEST(decimal_overflow)
{
	int64_t v = -1;

	ck_assert_int_eq(dec("9223372036854775807", INT64_MAX, &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(dec("9223372036854775808", INT64_MAX, &v), -1);
	ck_assert_int_eq(dec("9223372036854775810", INT64_MAX, &v), -1);
	ck_assert_int_eq(dec("18446744073709551616", INT64_MAX, &v), -1);
	ck_assert_int_eq(dec("99999999999999999999999999", INT64_MAX, &v), -1);
	/* The timestamp check's cap, 10^15. */
	ck_assert_int_eq(dec("1000000000000000", 1000000000000000LL, &v), 0);
	ck_assert(v == 1000000000000000LL);
	ck_assert_int_eq(dec("1000000000000001", 1000000000000000LL, &v), -1);
}
END_TEST

/* ---- util_parse_int ---- */

START_TEST(int_ok)
{
	int64_t v = 0;

	ck_assert_int_eq(util_parse_int("42", 0, 100, &v), 0);
	ck_assert_int_eq(v, 42);
	ck_assert_int_eq(util_parse_int("-5", -10, 10, &v), 0);
	ck_assert_int_eq(v, -5);
	ck_assert_int_eq(util_parse_int("0", 0, 0, &v), 0);
	ck_assert_int_eq(v, 0);
	ck_assert_int_eq(util_parse_int("007", 0, 10, &v), 0);
	ck_assert_int_eq(v, 7);
	ck_assert_int_eq(util_parse_int("9223372036854775807", INT64_MIN,
	    INT64_MAX, &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(util_parse_int("-9223372036854775808", INT64_MIN,
	    INT64_MAX, &v), 0);
	ck_assert(v == INT64_MIN);
}
END_TEST

START_TEST(int_refused)
{
	static const char *bad[] = {
		"", "-", "+5", " 5", "5 ", "5x", "0x10", "1e3", "1.5", "- 5",
		"--5", "\t5", "5\n", "9223372036854775808",
		"-9223372036854775809", "99999999999999999999",
	};
	int64_t v;

	for (size_t i = 0; i < NELEM(bad); i++)
		ck_assert_msg(util_parse_int(bad[i], INT64_MIN, INT64_MAX, &v) == -1,
		    "took \"%s\"", bad[i]);
	ck_assert_int_eq(util_parse_int(NULL, 0, 10, &v), -1);
}
END_TEST

START_TEST(int_range)
{
	int64_t v;

	ck_assert_int_eq(util_parse_int("1", 1, 1000, &v), 0);
	ck_assert_int_eq(util_parse_int("1000", 1, 1000, &v), 0);
	ck_assert_int_eq(util_parse_int("0", 1, 1000, &v), -1);
	ck_assert_int_eq(util_parse_int("1001", 1, 1000, &v), -1);
	ck_assert_int_eq(util_parse_int("-1", 0, 1000, &v), -1);
	ck_assert_int_eq(util_parse_int("-11", -10, 10, &v), -1);
}
END_TEST

/* ---- util_parse_duration ---- */

START_TEST(duration_units)
{
	static const struct { const char *s; int64_t v; } ok[] = {
		{ "0", 0 }, { "0s", 0 }, { "90", 90 }, { "90s", 90 },
		{ "15m", 900 }, { "36h", 129600 }, { "7d", 604800 },
		{ "1d", 86400 }, { "05m", 300 }, { "00", 0 },
	};
	int64_t v;

	for (size_t i = 0; i < NELEM(ok); i++) {
		v = -1;
		ck_assert_msg(util_parse_duration(ok[i].s, INT64_MAX, &v) == 0,
		    "refused \"%s\"", ok[i].s);
		ck_assert_msg(v == ok[i].v, "\"%s\" gave %lld, want %lld",
		    ok[i].s, (long long)v, (long long)ok[i].v);
	}
}
END_TEST

START_TEST(duration_bad)
{
	static const char *bad[] = {
		"", "s", "m", "d", "5x", "5S", "5M", "5D", "5H", "5 s", " 5s",
		"5s ", "-5s", "+5s", "5ss", "5sm", "1.5h", "1h30m", "5w",
		"5y", "s5", "0x5", "ten",
	};
	int64_t v;

	for (size_t i = 0; i < NELEM(bad); i++)
		ck_assert_msg(util_parse_duration(bad[i], INT64_MAX, &v) == -1,
		    "took \"%s\"", bad[i]);
	ck_assert_int_eq(util_parse_duration(NULL, INT64_MAX, &v), -1);
}
END_TEST

START_TEST(duration_max)
{
	int64_t v = -1;

	ck_assert_int_eq(util_parse_duration("3600", 3600, &v), 0);
	ck_assert_int_eq(v, 3600);
	ck_assert_int_eq(util_parse_duration("60m", 3600, &v), 0);
	ck_assert_int_eq(v, 3600);
	ck_assert_int_eq(util_parse_duration("1h", 3600, &v), 0);
	ck_assert_int_eq(v, 3600);
	ck_assert_int_eq(util_parse_duration("3601", 3600, &v), -1);
	ck_assert_int_eq(util_parse_duration("3601s", 3600, &v), -1);
	ck_assert_int_eq(util_parse_duration("61m", 3600, &v), -1);
	ck_assert_int_eq(util_parse_duration("2h", 3600, &v), -1);
	ck_assert_int_eq(util_parse_duration("1d", 3600, &v), -1);
	/* A small max (busy_timeout's 10 s). */
	ck_assert_int_eq(util_parse_duration("10s", 10, &v), 0);
	ck_assert_int_eq(v, 10);
	ck_assert_int_eq(util_parse_duration("11s", 10, &v), -1);
	ck_assert_int_eq(util_parse_duration("1m", 10, &v), -1);
}
END_TEST

START_TEST(duration_overflow)
{
	int64_t v = -1;

	/* INT64_MAX / 86400 = 106751991167300 whole days fit; one more does not. */
	ck_assert_int_eq(util_parse_duration("106751991167300d", INT64_MAX, &v), 0);
	ck_assert(v == 106751991167300LL * 86400);
	ck_assert_int_eq(util_parse_duration("106751991167301d", INT64_MAX, &v), -1);
	ck_assert_int_eq(util_parse_duration("9223372036854775807d", INT64_MAX, &v), -1);
	ck_assert_int_eq(util_parse_duration("9223372036854775807h", INT64_MAX, &v), -1);
	ck_assert_int_eq(util_parse_duration("9223372036854775807m", INT64_MAX, &v), -1);
	ck_assert_int_eq(util_parse_duration("9223372036854775807", INT64_MAX, &v), 0);
	ck_assert(v == INT64_MAX);
	ck_assert_int_eq(util_parse_duration("9223372036854775808s", INT64_MAX, &v), -1);
	ck_assert_int_eq(util_parse_duration("99999999999999999999999d", INT64_MAX, &v), -1);
}
END_TEST

/* ---- util_format_duration ---- */

START_TEST(duration_format)
{
	static const struct { int64_t s; const char *text; } cases[] = {
		{ 0, "0s" }, { 1, "1s" }, { 59, "59s" }, { 60, "1m" },
		{ 90, "90s" }, { 300, "5m" }, { 3600, "1h" }, { 5400, "90m" },
		{ 86400, "1d" }, { 90000, "25h" }, { 604800, "7d" },
		{ 3650 * 86400LL, "3650d" },
	};
	char out[24];
	int64_t v;

	for (size_t i = 0; i < NELEM(cases); i++) {
		ck_assert_str_eq(util_format_duration(cases[i].s, out, sizeof out),
		    cases[i].text);
		/* what it writes reads back as the same duration */
		ck_assert_int_eq(util_parse_duration(out, INT64_MAX, &v), 0);
		ck_assert(v == cases[i].s);
	}
}
END_TEST

/* ---- util_distance ---- */

START_TEST(distance_edits)
{
	static const struct { const char *a, *b; int d; } cases[] = {
		{ "database", "database", 0 },
		{ "Tolerance", "tolerance", 0 },	/* case ignored */
		{ "databse", "database", 1 },		/* a deletion */
		{ "secrets", "secret", 1 },		/* an insertion */
		{ "tolerence", "tolerance", 1 },	/* a substitution */
		{ "hnadler", "handler", 1 },		/* a swap of neighbours */
		{ "retyr_bsae", "retry_base", 2 },
		{ "", "log", 3 }, { "log", "", 3 }, { "", "", 0 },
		{ "colour", "tolerance", 7 },
	};

	for (size_t i = 0; i < NELEM(cases); i++)
		ck_assert_msg(util_distance(cases[i].a, cases[i].b) == cases[i].d,
		    "%s/%s: %d, want %d", cases[i].a, cases[i].b,
		    util_distance(cases[i].a, cases[i].b), cases[i].d);
}
END_TEST

START_TEST(distance_long_strings)
{
	char longer[UTIL_DISTANCE_MAX + 2];

	memset(longer, 'a', sizeof longer - 1);
	longer[sizeof longer - 1] = '\0';
	ck_assert_int_eq(util_distance(longer, "a"), INT_MAX);
	ck_assert_int_eq(util_distance("a", longer), INT_MAX);
	longer[UTIL_DISTANCE_MAX] = '\0';
	ck_assert_int_eq(util_distance(longer, longer), 0);
}
END_TEST

/* ---- util_read_file ---- */

/* A fresh file under /tmp holding `len` bytes of `text`; its path in
 * `path` (size 64).  The caller unlinks it. */
static void
temp_file(char *path, const char *text, size_t len)
{
	int fd;

	snprintf(path, 64, "/tmp/webhook-test-util-XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ne(fd, -1);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	ck_assert_int_eq(close(fd), 0);
}

START_TEST(read_file_whole)
{
	char path[64], *t;
	size_t len = 99;

	temp_file(path, "a = b\n", 6);
	t = util_read_file(path, 6, &len);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t, "a = b\n");
	ck_assert_uint_eq(len, 6);
	free(t);
	/* one byte over the cap */
	errno = 0;
	ck_assert_ptr_null(util_read_file(path, 5, &len));
	ck_assert_int_eq(errno, EFBIG);
	unlink(path);

	temp_file(path, "", 0);
	t = util_read_file(path, 0, &len);
	ck_assert_ptr_nonnull(t);
	ck_assert_str_eq(t, "");
	ck_assert_uint_eq(len, 0);
	free(t);
	unlink(path);
}
END_TEST

START_TEST(read_file_refused)
{
	char path[64];
	size_t len;

	temp_file(path, "a\0b\n", 4);
	errno = 0;
	ck_assert_ptr_null(util_read_file(path, 100, &len));
	ck_assert_int_eq(errno, EILSEQ);
	unlink(path);
	errno = 0;
	ck_assert_ptr_null(util_read_file(path, 100, &len));
	ck_assert_int_eq(errno, ENOENT);
	errno = 0;
	ck_assert_ptr_null(util_read_file("/tmp", 100, &len));
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

/* ---- struct buf ---- */

START_TEST(buf_cap_enforced)
{
	struct buf b;
	char *before;

	buf_init(&b, 10);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(buf_append(&b, "0123456789", 10), 0);
	ck_assert_uint_eq(b.len, 10);
	before = b.data;

	errno = 0;
	ck_assert_int_eq(buf_append(&b, "x", 1), -1);
	ck_assert_int_eq(errno, E2BIG);
	/* Unchanged: same bytes, same length, still terminated. */
	ck_assert_uint_eq(b.len, 10);
	ck_assert_ptr_eq(b.data, before);
	ck_assert_mem_eq(b.data, "0123456789", 11);

	/* Zero bytes at the cap are fine. */
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_uint_eq(b.len, 10);
	buf_free(&b);
}
END_TEST

START_TEST(buf_cap_first_append)
{
	struct buf b;

	buf_init(&b, 4);
	errno = 0;
	ck_assert_int_eq(buf_append(&b, "hello", 5), -1);
	ck_assert_int_eq(errno, E2BIG);
	ck_assert_uint_eq(b.len, 0);
	/* Partial fill then one byte too many. */
	ck_assert_int_eq(buf_append(&b, "ab", 2), 0);
	errno = 0;
	ck_assert_int_eq(buf_append(&b, "cde", 3), -1);
	ck_assert_int_eq(errno, E2BIG);
	ck_assert_uint_eq(b.len, 2);
	ck_assert_str_eq(b.data, "ab");
	ck_assert_int_eq(buf_append(&b, "cd", 2), 0);
	ck_assert_str_eq(b.data, "abcd");
	buf_free(&b);
}
END_TEST

START_TEST(buf_cap_huge_n)
{
	struct buf b;
	char one = 'x';

	/* n near SIZE_MAX must be refused by the cap, not wrap len + n. */
	buf_init(&b, 100);
	ck_assert_int_eq(buf_append(&b, &one, 1), 0);
	errno = 0;
	ck_assert_int_eq(buf_append(&b, &one, SIZE_MAX), -1);
	ck_assert_int_eq(errno, E2BIG);
	errno = 0;
	ck_assert_int_eq(buf_append(&b, &one, SIZE_MAX - 1), -1);
	ck_assert_int_eq(errno, E2BIG);
	ck_assert_uint_eq(b.len, 1);

	/* The same with cap SIZE_MAX: len + n would wrap. */
	buf_free(&b);
	buf_init(&b, SIZE_MAX);
	ck_assert_int_eq(buf_append(&b, &one, 1), 0);
	errno = 0;
	ck_assert_int_eq(buf_append(&b, &one, SIZE_MAX), -1);
	ck_assert_int_eq(errno, E2BIG);
	buf_free(&b);
}
END_TEST

START_TEST(buf_nul_terminated)
{
	struct buf b;

	buf_init(&b, 1 << 20);
	ck_assert_int_eq(buf_append(&b, "abc", 3), 0);
	ck_assert_uint_eq(b.len, 3);
	ck_assert_int_eq(b.data[3], '\0');
	ck_assert_str_eq(b.data, "abc");
	ck_assert_int_eq(buf_append(&b, "def", 2), 0);
	ck_assert_str_eq(b.data, "abcde");
	ck_assert_uint_eq(b.len, 5);
	ck_assert(b.size > b.len);

	/* An empty append to an empty buffer still leaves a string. */
	buf_free(&b);
	buf_init(&b, 8);
	ck_assert_int_eq(buf_append(&b, "", 0), 0);
	ck_assert_ptr_nonnull(b.data);
	ck_assert_str_eq(b.data, "");
	buf_free(&b);
}
END_TEST

START_TEST(buf_binary_body)
{
	static const char body[] = "{\"a\":\0\"b\"}\0\xff\x01";
	const size_t n = sizeof body - 1;	/* 14 bytes, two NULs inside */
	struct buf b;

	buf_init(&b, 1 << 20);
	ck_assert_int_eq(buf_append(&b, body, n), 0);
	ck_assert_uint_eq(b.len, n);
	ck_assert_mem_eq(b.data, body, n);
	ck_assert_int_eq(b.data[n], '\0');
	/* len, not strlen, is the truth. */
	ck_assert_uint_eq(strlen(b.data), 5);
	ck_assert_int_eq(buf_append(&b, "\0", 1), 0);
	ck_assert_uint_eq(b.len, n + 1);
	ck_assert_int_eq(b.data[n], '\0');
	buf_free(&b);
}
END_TEST

START_TEST(buf_grows)
{
	struct buf b;
	char chunk[97];
	size_t i, total = 0;

	buf_init(&b, 100000);
	for (i = 0; i < 2000; i++) {
		memset(chunk, 'a' + (int)(i % 26), sizeof chunk);
		if (total + sizeof chunk > b.cap) {
			errno = 0;
			ck_assert_int_eq(buf_append(&b, chunk, sizeof chunk), -1);
			ck_assert_int_eq(errno, E2BIG);
			break;
		}
		ck_assert_int_eq(buf_append(&b, chunk, sizeof chunk), 0);
		total += sizeof chunk;
	}
	ck_assert_uint_eq(b.len, total);
	ck_assert_uint_eq(total, 100000 / 97 * 97);
	/* Every chunk landed where it belongs. */
	for (i = 0; i < total; i++)
		ck_assert_int_eq(b.data[i], 'a' + (int)((i / 97) % 26));
	ck_assert_int_eq(b.data[total], '\0');
	/* Filling the remainder exactly reaches the cap. */
	memset(chunk, 'z', sizeof chunk);
	ck_assert_int_eq(buf_append(&b, chunk, 100000 - total), 0);
	ck_assert_uint_eq(b.len, 100000);
	ck_assert_int_eq(b.data[100000], '\0');
	buf_free(&b);
}
END_TEST

START_TEST(buf_printf_formats)
{
	struct buf b;
	char big[600];

	buf_init(&b, 4096);
	ck_assert_int_eq(buf_printf(&b, "%s:%d: %s", "f.conf", 12, "bad"), 0);
	ck_assert_str_eq(b.data, "f.conf:12: bad");
	ck_assert_uint_eq(b.len, strlen("f.conf:12: bad"));
	/* Longer than buf_printf's small stack buffer. */
	memset(big, 'q', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	ck_assert_int_eq(buf_printf(&b, "<%s>", big), 0);
	ck_assert_uint_eq(b.len, strlen("f.conf:12: bad") + 2 + 599);
	ck_assert_int_eq(b.data[b.len - 1], '>');
	ck_assert_int_eq(b.data[strlen("f.conf:12: bad")], '<');
	ck_assert_int_eq(b.data[b.len], '\0');
	buf_free(&b);

	/* The cap holds for formatted text too. */
	buf_init(&b, 5);
	errno = 0;
	ck_assert_int_eq(buf_printf(&b, "%d", 123456), -1);
	ck_assert_int_eq(errno, E2BIG);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_int_eq(buf_printf(&b, "%d", 12345), 0);
	ck_assert_str_eq(b.data, "12345");
	buf_free(&b);
}
END_TEST

START_TEST(buf_reset_keeps_allocation)
{
	struct buf b;
	char *data;
	size_t size;

	buf_init(&b, 1000);
	ck_assert_int_eq(buf_append(&b, "hello", 5), 0);
	data = b.data;
	size = b.size;
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	ck_assert_ptr_eq(b.data, data);
	ck_assert_uint_eq(b.size, size);
	ck_assert_str_eq(b.data, "");
	ck_assert_int_eq(buf_append(&b, "xy", 2), 0);
	ck_assert_str_eq(b.data, "xy");
	buf_free(&b);
	ck_assert_ptr_null(b.data);
	ck_assert_uint_eq(b.len, 0);
	/* Reset of a never-used buffer, free twice, reuse after init. */
	buf_init(&b, 10);
	buf_reset(&b);
	ck_assert_uint_eq(b.len, 0);
	buf_free(&b);
	buf_free(&b);
	buf_init(&b, 10);
	ck_assert_int_eq(buf_append(&b, "ok", 2), 0);
	ck_assert_str_eq(b.data, "ok");
	buf_free(&b);
}
END_TEST

/* ---- util_escape ---- */

START_TEST(escape_printable)
{
	char out[64];

	ck_assert_str_eq(util_escape("msg_2Ab9", 8, out, sizeof out), "msg_2Ab9");
	ck_assert_ptr_eq(util_escape("x", 1, out, sizeof out), out);
	ck_assert_str_eq(util_escape(" ~!", 3, out, sizeof out), " ~!");
	ck_assert_str_eq(util_escape("anything", 0, out, sizeof out), "");
	/* Only len bytes are read. */
	ck_assert_str_eq(util_escape("abcdef", 3, out, sizeof out), "abc");
}
END_TEST

START_TEST(escape_nonprintable)
{
	char out[64];

	ck_assert_str_eq(util_escape("a\nb", 3, out, sizeof out), "a\\x0ab");
	ck_assert_str_eq(util_escape("\r\t", 2, out, sizeof out), "\\x0d\\x09");
	ck_assert_str_eq(util_escape("a\0b", 3, out, sizeof out), "a\\x00b");
	ck_assert_str_eq(util_escape("\x7f\x80\xff", 3, out, sizeof out),
	    "\\x7f\\x80\\xff");
	ck_assert_str_eq(util_escape("\x1b[31m", 5, out, sizeof out),
	    "\\x1b[31m");
	/* UTF-8 is bytes to a log line. */
	ck_assert_str_eq(util_escape("\xc3\xa9", 2, out, sizeof out),
	    "\\xc3\\xa9");
	/* The backslash itself is escaped, so \x in a log line is always ours. */
	ck_assert_str_eq(util_escape("a\\x0a", 5, out, sizeof out),
	    "a\\x5cx0a");
	ck_assert_str_eq(util_escape(NULL, 3, out, sizeof out), "-");
}
END_TEST

START_TEST(escape_truncates)
{
	char out[8];
	char in[100];
	size_t n;

	memset(in, 'a', sizeof in);
	util_escape(in, sizeof in, out, sizeof out);
	n = strlen(out);
	ck_assert_uint_lt(n, sizeof out);
	ck_assert_uint_ge(n, 3);
	ck_assert_str_eq(out + n - 3, "...");
	ck_assert_mem_eq(out, "aaaa", n - 3);

	/* An escape is never split: it goes whole or is replaced by "...". */
	util_escape("\x01\x02\x03", 3, out, sizeof out);
	ck_assert_str_eq(out, "\\x01...");
}
END_TEST

/* Whatever the input and size, the output is terminated inside outsz, is a
 * prefix of the full escape, and is cut only with "...". */
START_TEST(escape_bounds)
{
	static const char in[] = "ab\x01" "cd\\ef\xff" "ghijklmnopqrstuvwxyz";
	const size_t len = sizeof in - 1;
	char full[256], out[64 + 8];

	util_escape(in, len, full, sizeof full);
	ck_assert_uint_eq(strlen(full), len + 3 * 3);	/* 3 escapes of 4 */
	for (size_t outsz = 8; outsz <= 64; outsz++) {
		size_t n;

		memset(out, '#', sizeof out);
		util_escape(in, len, out, outsz);
		n = strlen(out);
		ck_assert_msg(n < outsz, "outsz %zu: wrote %zu", outsz, n + 1);
		ck_assert_int_eq(out[outsz], '#');	/* nothing past outsz */
		if (strcmp(out, full) == 0)
			continue;
		ck_assert_msg(n >= 3 && strcmp(out + n - 3, "...") == 0,
		    "outsz %zu: cut without \"...\": %s", outsz, out);
		ck_assert_msg(strncmp(out, full, n - 3) == 0,
		    "outsz %zu: %s is not a prefix of %s", outsz, out, full);
	}
	/* Large enough: the whole escape. */
	util_escape(in, len, out, 64);
	ck_assert_str_eq(out, full);
}
END_TEST

/* "cut with '...' when it does not fit": text that fits exactly is whole. */
START_TEST(escape_exact_fit_not_cut)
{
	char out[8];

	util_escape("abcdefg", 7, out, sizeof out);
	ck_assert_msg(strcmp(out, "abcdefg") == 0,
	    "7 printable bytes into outsz 8 gave \"%s\"", out);
	util_escape("ab\n", 3, out, sizeof out);	/* "ab\x0a" = 6 chars */
	ck_assert_str_eq(out, "ab\\x0a");
}
END_TEST

/* docs/DESIGN.md "Configuration", refusals: one path resolution for the
 * guard and the open.  DIR/missing/../x does not resolve (SQLite would read
 * it as DIR/x, open(2) fails on it): refused, and counted as inside any
 * directory. */
START_TEST(path_resolve_and_inside)
{
	char tmpl[] = "/tmp/test_util_path.XXXXXX", sub[PATH_MAX * 2],
	    p[PATH_MAX * 2], out[PATH_MAX], real[PATH_MAX],
	    other[PATH_MAX * 2];
	char *d = mkdtemp(tmpl);

	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(realpath(d, real));
	snprintf(sub, sizeof sub, "%s/docroot", d);
	ck_assert_int_eq(mkdir(sub, 0755), 0);

	/* Not there yet: its directory, then the name. */
	snprintf(p, sizeof p, "%s/docroot/./inbox.db", d);
	ck_assert_int_eq(util_path_resolve(p, out), 0);
	snprintf(other, sizeof other, "%s/docroot/inbox.db", real);
	ck_assert_str_eq(out, other);
	ck_assert_int_eq(util_path_inside(sub, p), 1);

	/* ".." through a directory that exists: resolved, outside. */
	snprintf(p, sizeof p, "%s/docroot/../inbox.db", d);
	ck_assert_int_eq(util_path_resolve(p, out), 0);
	snprintf(other, sizeof other, "%s/inbox.db", real);
	ck_assert_str_eq(out, other);
	ck_assert_int_eq(util_path_inside(sub, p), 0);

	/* ".." after a missing directory: refused, and inside. */
	snprintf(p, sizeof p, "%s/docroot/missing/../inbox.db", d);
	errno = 0;
	ck_assert_int_eq(util_path_resolve(p, out), -1);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_int_eq(util_path_inside(sub, p), 1);

	/* No file name. */
	snprintf(p, sizeof p, "%s/docroot/..", d);
	ck_assert_int_eq(util_path_resolve(p, out) == 0 ||
	    errno == EINVAL, 1);
	snprintf(p, sizeof p, "%s/nodir/", d);
	ck_assert_int_eq(util_path_resolve(p, out), -1);

	rmdir(sub);
	rmdir(d);
}
END_TEST

/* docs/DESIGN.md "Configuration", `log`: the drainer logs its problems to
 * `log` too, only when it is a file (stderr would get them twice). */
START_TEST(log_is_file_follows_log_open)
{
	char path[] = "/tmp/test_util_log.XXXXXX";
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	close(fd);
	log_init("test_util");
	ck_assert_int_eq(log_is_file(), 0);
	log_open(path);
	ck_assert_int_eq(log_is_file(), 1);
	log_open(NULL);
	ck_assert_int_eq(log_is_file(), 0);
	unlink(path);
}
END_TEST

/* The whole of file `path` (at most 4 KiB), "" when it is missing. */
static const char *
slurp(const char *path)
{
	static char buf[4096];
	FILE *f = fopen(path, "r");
	size_t n = 0;

	if (f != NULL) {
		n = fread(buf, 1, sizeof buf - 1, f);
		fclose(f);
	}
	buf[n] = '\0';
	return buf;
}

/* logrotate renames the file and creates a new one (`create`) or leaves
 * the path empty (`nocreate`): the next line goes to the path, each line
 * exactly once, with no reopen asked for. */
START_TEST(log_follows_a_rotated_file)
{
	char dir[] = "/tmp/test_util_rot.XXXXXX", path[256], old[256], o2[256];
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/webhook.log", dir);
	snprintf(old, sizeof old, "%s/webhook.log.1", dir);
	snprintf(o2, sizeof o2, "%s/webhook.log.2", dir);
	log_init("test_util");
	log_open(path);
	log_msg("line one");
	ck_assert_int_eq(rename(path, old), 0);		/* nocreate */
	log_msg("line two");
	ck_assert_ptr_nonnull(strstr(slurp(old), "line one"));
	ck_assert_ptr_null(strstr(slurp(old), "line two"));
	ck_assert_ptr_nonnull(strstr(slurp(path), "line two"));
	ck_assert_ptr_null(strstr(slurp(path), "line one"));
	ck_assert_int_eq(rename(old, o2), 0);
	ck_assert_int_eq(rename(path, old), 0);		/* create */
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
	log_msg("line three");
	ck_assert_ptr_nonnull(strstr(slurp(path), "line three"));
	ck_assert_ptr_null(strstr(slurp(old), "line three"));
	/* The path's own file now: an unchanged one is not reopened. */
	log_msg("line four");
	ck_assert_ptr_nonnull(strstr(slurp(path), "line three"));
	ck_assert_ptr_nonnull(strstr(slurp(path), "line four"));
	log_open(NULL);
	unlink(path);
	unlink(old);
	unlink(o2);
	rmdir(dir);
}
END_TEST

/* Read the file at path whole into out (NUL-terminated); its length. */
static size_t
slurp_into(const char *path, char *out, size_t outsz)
{
	FILE *f = fopen(path, "r");
	size_t n;

	ck_assert_ptr_nonnull(f);
	n = fread(out, 1, outsz - 1, f);
	out[n] = '\0';
	fclose(f);
	return n;
}

/* How many times c occurs in s. */
static int
count_char(const char *s, char c)
{
	int n = 0;

	for (; *s != '\0'; s++)
		n += *s == c;
	return n;
}

/* README "Logs": one line per event, whatever a library's message holds
 * (libpq's refusals carry "\nHINT: ...\n"; a handler's error may hold \r). */
START_TEST(log_line_is_one_line)
{
	char path[] = "/tmp/test_util_log.XXXXXX", text[8192], big[3000];
	int fd = mkstemp(path);
	size_t n;

	ck_assert_int_ge(fd, 0);
	close(fd);
	log_init("test_util");
	log_open(path);
	log_msg("store: %s", "ERROR:  refused\nHINT:  do this\r\nDETAIL: x\n");
	log_msg("tab\tesc\x1b[31m del\x7f kept: \\x0a caf\xc3\xa9");
	memset(big, '\n', sizeof big - 1);
	big[sizeof big - 2] = 'E';	/* not a trailing line end: kept */
	big[sizeof big - 1] = '\0';
	big[0] = 'B';
	log_msg("%s", big);
	log_open(NULL);
	n = slurp_into(path, text, sizeof text);
	unlink(path);
	ck_assert_int_eq(count_char(text, '\n'), 3);
	ck_assert_int_eq(count_char(text, '\r'), 0);
	ck_assert_uint_eq(text[n - 1], '\n');
	ck_assert_ptr_nonnull(strstr(text, "]: store: ERROR:  refused\\x0aHINT:  "
	    "do this\\x0d\\x0aDETAIL: x\n"));
	/* Other control bytes too; a backslash and UTF-8 are left alone. */
	ck_assert_ptr_nonnull(strstr(text, "]: tab\\x09esc\\x1b[31m del\\x7f "
	    "kept: \\x0a caf\xc3\xa9\n"));
	/* All line ends, escaped, outgrow the line: cut visibly, still one. */
	ck_assert_ptr_nonnull(strstr(text, "]: B\\x0a\\x0a"));
	ck_assert_ptr_nonnull(strstr(text, "\\x0a...\n"));
	ck_assert_uint_le(strlen(strstr(text, "]: B")), 2048);
}
END_TEST

static Suite *
util_suite(void)
{
	Suite *s = suite_create("util");
	TCase *tc;

	tc = tcase_create("parse_decimal");
	tcase_add_test(tc, decimal_canonical);
	tcase_add_test(tc, path_resolve_and_inside);
	tcase_add_test(tc, log_is_file_follows_log_open);
	tcase_add_test(tc, log_follows_a_rotated_file);
	tcase_add_test(tc, log_line_is_one_line);
	tcase_add_test(tc, decimal_refused);
	tcase_add_test(tc, decimal_len_zero);
	tcase_add_test(tc, decimal_uses_len_not_nul);
	tcase_add_test(tc, decimal_max);
	tcase_add_test(tc, decimal_max_below_one_digit);
	tcase_add_test(tc, decimal_overflow);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse_int");
	tcase_add_test(tc, int_ok);
	tcase_add_test(tc, int_refused);
	tcase_add_test(tc, int_range);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse_duration");
	tcase_add_test(tc, duration_units);
	tcase_add_test(tc, duration_bad);
	tcase_add_test(tc, duration_max);
	tcase_add_test(tc, duration_overflow);
	tcase_add_test(tc, duration_format);
	suite_add_tcase(s, tc);

	tc = tcase_create("distance");
	tcase_add_test(tc, distance_edits);
	tcase_add_test(tc, distance_long_strings);
	suite_add_tcase(s, tc);

	tc = tcase_create("read_file");
	tcase_add_test(tc, read_file_whole);
	tcase_add_test(tc, read_file_refused);
	suite_add_tcase(s, tc);

	tc = tcase_create("buf");
	tcase_add_test(tc, buf_cap_enforced);
	tcase_add_test(tc, buf_cap_first_append);
	tcase_add_test(tc, buf_cap_huge_n);
	tcase_add_test(tc, buf_nul_terminated);
	tcase_add_test(tc, buf_binary_body);
	tcase_add_test(tc, buf_grows);
	tcase_add_test(tc, buf_printf_formats);
	tcase_add_test(tc, buf_reset_keeps_allocation);
	suite_add_tcase(s, tc);

	tc = tcase_create("escape");
	tcase_add_test(tc, escape_printable);
	tcase_add_test(tc, escape_nonprintable);
	tcase_add_test(tc, escape_truncates);
	tcase_add_test(tc, escape_bounds);
	tcase_add_test(tc, escape_exact_fit_not_cut);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return check_main(util_suite());
}
