/*
 * utf8: valid UTF-8 out of untrusted bytes (common/utf8.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/common/utf8.h"

size_t
utf8_len(const unsigned char *p, size_t left)
{
	size_t n, i;
	uint32_t cp;

	if (left == 0)
		return 0;
	if (p[0] >= 0x01 && p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		n = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		n = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		n = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (n > left)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

int
utf8_valid(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len, i = 0, n;

	if (s == NULL)
		return 1;
	len = strlen(s);
	while (i < len) {
		if ((n = utf8_len(p + i, len - i)) == 0)
			return 0;
		i += n;
	}
	return 1;
}

char *
utf8_fix(const char *s)
{
	const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
	size_t len = strlen((const char *)p), i = 0, n;
	char *t, *o;

	if ((t = o = malloc(len * 3 + 1)) == NULL)
		return NULL;
	while (i < len) {
		if ((n = utf8_len(p + i, len - i)) > 0) {
			memcpy(o, p + i, n);
			o += n;
			i += n;
		} else {
			memcpy(o, UTF8_REPLACEMENT, 3);
			o += 3;
			i++;
		}
	}
	*o = '\0';
	return t;
}
