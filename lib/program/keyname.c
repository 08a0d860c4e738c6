/*
 * keyname: what a refused config line's key is printed as.  See
 * program/keyname.h.
 */
#include <ctype.h>
#include <string.h>
#include <strings.h>

#include "lib/common/util.h"
#include "lib/program/keyname.h"

/* Key names are short words: letters, digits and '_', no whsec_ or whpk_
 * anywhere (a key typed against a pasted secret), at most 2 digits and no
 * lower-to-upper case change (a random token has both). */
int
keyname_like(const char *s)
{
	size_t n = strlen(s), i, digits = 0;

	if (n == 0 || n > 32 || strstr(s, "whsec_") != NULL ||
	    strstr(s, "whpk_") != NULL)
		return 0;
	for (i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (!isalnum(ch) && ch != '_')
			return 0;
		if (i > 0 && isupper(ch) && islower((unsigned char)s[i - 1]))
			return 0;
		digits += isdigit(ch) != 0;
	}
	return digits <= 2;
}

/* A secret or token is none of these: base64 and hex have digits or
 * capitals. */
int
keyname_known_or_near(const struct keyname_table *t, const char *s)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		if (strcmp(s, t->name(i)) == 0)
			return 1;
	if (keyname_near(t, s) != -1)
		return 1;
	for (i = 0; s[i] != '\0'; i++)
		if (!islower((unsigned char)s[i]) && s[i] != '_')
			return 0;
	return i >= 2;
}

/* By its start: "handler_time" is handler_timeout (the only key that
 * begins so), "database_url" is database (the longest key it begins
 * with). */
static long
prefix_key(const struct keyname_table *t, const char *name)
{
	long best = -1;
	size_t i, n = strlen(name), kn;
	int many = 0;

	if (n >= 4)
		for (i = 0; i < t->n; i++)
			if (strlen(t->name(i)) > n &&
			    strncasecmp(t->name(i), name, n) == 0) {
				many += best != -1;
				best = (long)i;
			}
	if (best != -1 && !many)
		return best;
	best = -1;
	for (i = 0; i < t->n; i++) {
		kn = strlen(t->name(i));
		if (kn >= 3 && kn < n && strncasecmp(t->name(i), name, kn) == 0 &&
		    (isalpha((unsigned char)name[kn]) || name[kn] == '_') &&
		    (best == -1 || kn > strlen(t->name((size_t)best))))
			best = (long)i;
	}
	return best;
}

long
keyname_near(const struct keyname_table *t, const char *name)
{
	long best;
	int bestd = 3, d;
	size_t i, n = strlen(name), kn, diff;

	if ((best = prefix_key(t, name)) != -1)
		return best;
	for (i = 0; i < t->n; i++) {
		/* The distance is at least the difference in length: a name
		 * that cannot be near is not compared (every line of a
		 * garbled file comes here, twice). */
		kn = strlen(t->name(i));
		diff = n > kn ? n - kn : kn - n;
		if (diff >= (size_t)bestd || diff * 2 >= kn)
			continue;
		d = util_distance(name, t->name(i));
		if (d < bestd && (size_t)d * 2 < kn) {
			best = (long)i;
			bestd = d;
		}
	}
	return best;
}
