/*
 * sample: what the providers' sample events (struct scheme, sample_id and
 * sample_body) are made of — random ids in each provider's form, an
 * instant, and a JSON event grown to a size.  PRIVATE: include it only
 * from lib/scheme/ and tests/test_scheme_sign.c.
 */
#ifndef WEBHOOK_SCHEME_SAMPLE_H
#define WEBHOOK_SCHEME_SAMPLE_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "lib/common/util.h"

/* Hex of n (≤ 16) random bytes into out (2n + 1), upper case if asked. */
void	sample_hex(char *out, size_t n, int upper);
/* A version 4 UUID, lower case, into out (37 bytes). */
void	sample_uuid(char *out);
/* An RFC 3339 instant of Unix seconds, to the second ("…Z"), into out
 * (32 bytes). */
void	sample_rfc3339(int64_t now, char out[32]);
/*
 * Print ev, its `holder` object's "filler" string grown so that the
 * whole is `size` bytes when it is shorter, and append it to body.
 * ev stays the caller's.  0, or -1 when out of memory.
 */
int	sample_padded_json(cJSON *ev, cJSON *holder, int64_t size,
	    struct buf *body);

#endif
