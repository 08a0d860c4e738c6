/*
 * keyname: the key of a refused config line, as an error message names
 * it -- whether it may be printed at all, and which key it was probably
 * meant to be ("tolerence: unknown key (did you mean tolerance?)").
 *
 * The keys are given as a function from 0..n-1 to their names (the
 * caller's table), so that this module holds no table of its own.  All
 * comparisons are of NUL-terminated strings; nothing is allocated.
 */
#ifndef PROGRAM_KEYNAME_H
#define PROGRAM_KEYNAME_H

#include <stddef.h>

struct keyname_table {
	const char	*(*name)(size_t i);	/* the name of key i */
	size_t		 n;
};

/*
 * Could `s` be printed as the key of a refused line?  Only when it looks
 * like a key name, so that a pasted secret is never echoed (a line split
 * at its first '=' makes "whsec_…=" a "key").  1 or 0.
 */
int	keyname_like(const char *s);

/*
 * Is `s` a key of the table, a near miss of one (keyname_near), or a
 * word as keys are written (lower-case letters and '_', 2 or more, no
 * digit: a person's guess at a key, which the message must name)?  A
 * word with digits may be a password ("hunter22"): 0.
 */
int	keyname_known_or_near(const struct keyname_table *t, const char *s);

/*
 * The index of the key an unknown `name` was probably meant to be, or -1:
 * by its start (the one key that begins with name, 4 letters at least;
 * else the longest key name begins with and continues with a letter or
 * '_': "logfile" is log), else at most 2 edits away and fewer than half
 * the key's length ("foo" is not "log"); the nearest, the first on a tie.
 * Case is ignored.
 */
long	keyname_near(const struct keyname_table *t, const char *name);

#endif
