/*
 * fuzz/instant_decimal: lib/common/instant.c and the number parsers of
 * lib/common/util.c — every text from outside that becomes a time or a number:
 * instant_parse, instant_to_ns and instant_format; util_parse_decimal,
 * util_parse_int and util_parse_duration.
 *
 * Input: one byte choosing the bounds, then the text, given whole to
 * each parser (as bytes to those that take a length, up to its first NUL
 * to those that take a string).
 *
 * Properties (abort when broken):
 * - a parsed instant is 30 characters in the normalised form, parses to
 *   itself, and, within int64 nanoseconds, instant_to_ns and
 *   instant_format take it there and back; instant_to_ns accepts only
 *   what formats back to itself;
 * - util_parse_decimal takes exactly the canonical decimals 0..max (a
 *   reference with 128-bit arithmetic decides) and its value prints back
 *   as the input;
 * - util_parse_int takes exactly an optional '-' and digits within
 *   min..max, and the value is the digits' (128-bit reference);
 * - util_parse_duration's value is in 0..max, what the reference reads,
 *   and util_format_duration's text of it parses back to it.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common/instant.h"
#include "lib/common/util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)

/* Bounds the callers use (a timestamp's 10^15, config ranges, the extremes). */
static const int64_t maxes[] = {
	0, 1, 9, 10, 59, 60, 99, 100, 1000, 86400, 3650 * 86400LL,
	64 << 20, 1000000000000000LL, INT64_MAX / 10, INT64_MAX - 1, INT64_MAX,
};
#define NMAXES	(sizeof maxes / sizeof maxes[0])
static const int64_t mins[] = { 0, 1, -1, 1000, INT64_MIN, -86400 };
#define NMINS	(sizeof mins / sizeof mins[0])

static void
check_instant(const char *s, size_t len)
{
	char out[INSTANT_SIZE], again[INSTANT_SIZE], nul[INSTANT_SIZE + 1];
	int64_t ns;

	if (instant_parse(s, len, out) == 0) {
		CHECK(strlen(out) == INSTANT_LEN && out[4] == '-' &&
		    out[10] == 'T' && out[19] == '.' && out[29] == 'Z');
		CHECK(instant_parse(out, INSTANT_LEN, again) == 0);
		CHECK(memcmp(out, again, INSTANT_SIZE) == 0);
		/* Years 1678..2262 fit in int64 nanoseconds. */
		if (memcmp(out, "1678", 4) > 0 && memcmp(out, "2262", 4) < 0) {
			CHECK(instant_to_ns(out, &ns) == 0);
			CHECK(instant_format(ns, again) == 0);
			CHECK(memcmp(out, again, INSTANT_SIZE) == 0);
		}
	}
	/* instant_to_ns takes the normalised form only. */
	if (len <= INSTANT_LEN) {
		memcpy(nul, s, len);
		nul[len] = '\0';
		if (instant_to_ns(nul, &ns) == 0) {
			CHECK(instant_format(ns, again) == 0);
			CHECK(strcmp(nul, again) == 0);
		}
	}
}

/* The reference for util_parse_decimal: canonical digits, value ≤ max. */
static int
ref_decimal(const char *s, size_t len, int64_t max, int64_t *out)
{
	__int128 v = 0;
	size_t i;

	if (len == 0 || (len > 1 && s[0] == '0'))
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
		if (v > max)
			return -1;
	}
	*out = (int64_t)v;
	return 0;
}

static void
check_decimal(const char *s, size_t len, int64_t max)
{
	int64_t v = -1, want = -1;
	int rc = util_parse_decimal(s, len, max, &v);
	char text[24];

	CHECK(rc == ref_decimal(s, len, max, &want));
	if (rc == 0) {
		CHECK(v == want && v >= 0 && v <= max);
		CHECK((size_t)snprintf(text, sizeof text, "%lld",
		    (long long)v) == len && memcmp(text, s, len) == 0);
	}
}

static void
check_int(const char *s, int64_t min, int64_t max)
{
	__int128 want = 0;
	int64_t v = 0;
	int rc = util_parse_int(s, min, max, &v), ok = 1;
	size_t i = s[0] == '-';

	if (s[i] == '\0')
		ok = 0;
	for (; s[i] != '\0' && ok; i++) {
		if (s[i] < '0' || s[i] > '9')
			ok = 0;
		else if (want <= (__int128)1 << 70)
			want = want * 10 + (s[i] - '0');
	}
	if (s[0] == '-')
		want = -want;
	ok = ok && want >= min && want <= max;
	CHECK(rc == (ok ? 0 : -1));
	if (rc == 0)
		CHECK(v == want);
}

static void
check_duration(const char *s, int64_t max)
{
	__int128 want = 0;
	int64_t v = -1, again = -1, unit = 1;
	size_t n = strlen(s), i;
	int rc = util_parse_duration(s, max, &v), ok = n > 0;
	char text[32];

	if (ok) {
		switch (s[n - 1]) {
		case 's': n--; break;
		case 'm': unit = 60; n--; break;
		case 'h': unit = 3600; n--; break;
		case 'd': unit = 86400; n--; break;
		}
	}
	ok = ok && n > 0;
	for (i = 0; i < n && ok; i++) {
		if (s[i] < '0' || s[i] > '9')
			ok = 0;
		else if (want <= (__int128)1 << 70)
			want = want * 10 + (s[i] - '0');
	}
	want *= unit;
	ok = ok && want <= max;
	CHECK(rc == (ok ? 0 : -1));
	if (rc == 0) {
		CHECK(v == want && v >= 0 && v <= max);
		util_format_duration(v, text, sizeof text);
		CHECK(util_parse_duration(text, max, &again) == 0 && again == v);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int64_t max, min;
	const char *s;
	char *z;
	size_t len;

	if (size < 1)
		return 0;
	max = maxes[data[0] % NMAXES];
	min = mins[(data[0] / NMAXES) % NMINS];
	s = (const char *)data + 1;
	len = size - 1;

	check_instant(s, len);
	check_decimal(s, len, max);
	if ((z = malloc(len + 1)) == NULL)
		abort();
	memcpy(z, s, len);
	z[len] = '\0';
	check_int(z, min < max ? min : 0, max);
	check_duration(z, max);
	free(z);
	return 0;
}
