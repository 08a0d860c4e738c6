/*
 * instant: strict ISO-8601 parsing and the normalised UTC form.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/common/instant.h"

/* Read exactly n ASCII digits at s[*i]; advance *i.  -1 when not digits. */
static int
digits(const char *s, size_t len, size_t *i, int n, int *out)
{
	int v = 0;

	if (*i + (size_t)n > len)
		return -1;
	for (int k = 0; k < n; k++) {
		char c = s[*i + (size_t)k];
		if (c < '0' || c > '9')
			return -1;
		v = v * 10 + (c - '0');
	}
	*i += (size_t)n;
	*out = v;
	return 0;
}

static int
expect(const char *s, size_t len, size_t *i, char c)
{
	if (*i >= len || s[*i] != c)
		return -1;
	(*i)++;
	return 0;
}

static int
is_leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Parse into seconds since the epoch (UTC) and nanoseconds. */
static int
parse(const char *s, size_t len, int64_t *secs_out, long *frac_out)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	size_t i = 0;
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	long frac = 0;
	struct tm tm;

	if (digits(s, len, &i, 4, &y) || expect(s, len, &i, '-') ||
	    digits(s, len, &i, 2, &mo) || expect(s, len, &i, '-') ||
	    digits(s, len, &i, 2, &d))
		return -1;
	if (i >= len || (s[i] != 'T' && s[i] != 't' && s[i] != ' '))
		return -1;
	i++;
	if (digits(s, len, &i, 2, &h) || expect(s, len, &i, ':') ||
	    digits(s, len, &i, 2, &mi) || expect(s, len, &i, ':') ||
	    digits(s, len, &i, 2, &sec))
		return -1;
	if (y < 1 || mo < 1 || mo > 12 || d < 1 ||
	    d > mdays[mo - 1] + (mo == 2 && is_leap(y)) ||
	    h > 23 || mi > 59 || sec > 60)
		return -1;
	if (i < len && (s[i] == '.' || s[i] == ',')) {
		int n = 0;
		i++;
		while (i < len && s[i] >= '0' && s[i] <= '9') {
			if (n < 9)
				frac = frac * 10 + (s[i] - '0');
			n++;
			i++;
		}
		if (n == 0)
			return -1;
		for (; n < 9; n++)
			frac *= 10;
	}
	if (i < len && (s[i] == 'Z' || s[i] == 'z')) {
		i++;
	} else if (i < len && (s[i] == '+' || s[i] == '-')) {
		sign = s[i] == '-' ? -1 : 1;
		i++;
		if (digits(s, len, &i, 2, &oh))
			return -1;
		if (i < len && s[i] == ':') {
			i++;
			if (digits(s, len, &i, 2, &om))
				return -1;
		} else if (i < len) {
			if (digits(s, len, &i, 2, &om))
				return -1;
		}
		if (oh > 23 || om > 59)
			return -1;
	}
	if (i != len)
		return -1;

	memset(&tm, 0, sizeof tm);
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = sec;		/* 60 rolls into the next minute */
	*secs_out = (int64_t)timegm(&tm) - (int64_t)sign * (oh * 3600 + om * 60);
	*frac_out = frac;
	return 0;
}

/* Years 1..9999 in seconds: the range the normalised form can write. */
#define MIN_SECS	(-62135596800LL)	/* 0001-01-01T00:00:00Z */
#define MAX_SECS	(253402300799LL)	/* 9999-12-31T23:59:59Z */

static int
format(int64_t secs, long frac, char out[INSTANT_SIZE])
{
	time_t t = (time_t)secs;
	struct tm u;
	char tmp[64];
	int n;

	if (secs < MIN_SECS || secs > MAX_SECS || gmtime_r(&t, &u) == NULL)
		return -1;
	n = snprintf(tmp, sizeof tmp, "%04d-%02d-%02dT%02d:%02d:%02d.%09ldZ",
	    u.tm_year + 1900, u.tm_mon + 1, u.tm_mday, u.tm_hour, u.tm_min,
	    u.tm_sec, frac);
	if (n != INSTANT_LEN)
		return -1;
	memcpy(out, tmp, INSTANT_SIZE);
	return 0;
}

int
instant_parse(const char *s, size_t len, char out[INSTANT_SIZE])
{
	int64_t secs;
	long frac;

	if (parse(s, len, &secs, &frac) == -1)
		return -1;
	return format(secs, frac, out);
}

int
instant_format(int64_t ns, char out[INSTANT_SIZE])
{
	int64_t secs = ns / 1000000000, rem = ns % 1000000000;

	if (rem < 0) {
		rem += 1000000000;
		secs--;
	}
	return format(secs, (long)rem, out);
}

int
instant_to_ns(const char *s, int64_t *ns)
{
	char again[INSTANT_SIZE];
	int64_t secs;
	long frac;

	/* Only the normalised form: it must format back to itself. */
	if (s == NULL || strlen(s) != INSTANT_LEN ||
	    parse(s, INSTANT_LEN, &secs, &frac) == -1 ||
	    format(secs, frac, again) == -1 || memcmp(again, s, INSTANT_SIZE) != 0)
		return -1;
	/* int64 nanoseconds reach years 1678..2262. */
	if (secs > INT64_MAX / 1000000000 - 1 || secs < INT64_MIN / 1000000000 + 1)
		return -1;
	*ns = secs * 1000000000 + frac;
	return 0;
}

const char *
instant_later(const char *a, const char *b)
{
	if (a[0] == '\0')
		return b;
	if (b[0] == '\0')
		return a;
	return strcmp(a, b) >= 0 ? a : b;
}
