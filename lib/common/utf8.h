/*
 * utf8: valid UTF-8 for every page and file we write from untrusted bytes
 * (event types, object ids, handler errors…).  An HTML page, a JSON
 * document and Prometheus text must each be valid UTF-8: a browser shows
 * a page with a stray byte in whatever way it likes, JSON parsers refuse
 * it, Prometheus drops the whole scrape.  Bytes that are not UTF-8 become
 * U+FFFD (the replacement character), one per byte, as the WHATWG decoder
 * would show them, so what is shown is what a reader's decoder shows.
 */
#ifndef WEBHOOK_UTF8_H
#define WEBHOOK_UTF8_H

#include <stddef.h>

/* U+FFFD in UTF-8, 3 bytes. */
#define UTF8_REPLACEMENT	"\xef\xbf\xbd"

/*
 * Bytes of the valid UTF-8 sequence at p (left ≥ 1 bytes readable), or 0
 * when none starts there: no overlong forms, no surrogates, nothing past
 * U+10FFFF, and no NUL (a NUL ends our strings).
 */
size_t	utf8_len(const unsigned char *p, size_t left);

/* 1 when the NUL-terminated s is valid UTF-8 (NULL counts as valid). */
int	utf8_valid(const char *s);

/*
 * A copy of the NUL-terminated s (NULL: "") in which every byte that does
 * not start a valid sequence is U+FFFD; malloc'd (free it), NULL when out
 * of memory.  At most 3 × strlen(s) + 1 bytes.
 */
char	*utf8_fix(const char *s);

#endif
