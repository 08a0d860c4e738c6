/*
 * fake_request: a request in memory (lib/receive/request.h's third
 * implementation, test-only: linked into the unit tests and the request
 * fuzz target, never into the product).  Parameters come from an array, the
 * body from a buffer with chosen failures, and the answer is captured, so
 * the request path (lib/receive/receive.h) runs without a web server.
 */
#ifndef WEBHOOK_TESTS_FAKE_REQUEST_H
#define WEBHOOK_TESTS_FAKE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "lib/receive/request.h"

/*
 * Fill it in, then request_init_fake.  Parameters are
 * "NAME=value" strings, NULL-terminated (a name may repeat, as FastCGI
 * parameters from Debian 12's nginx do).  Reads hand out at most `chunk`
 * bytes each (0: all that is left); when `late_at` (≥ 0) bytes were handed
 * out the next read reports REQUEST_READ_LATE, at `fail_at` (≥ 0)
 * REQUEST_READ_ERROR (-1 for either: never); a read after the deadline
 * reports REQUEST_READ_LATE as FastCGI does.  The answer is kept in `out`
 * (cut at its size, `out_len` bytes, NUL-terminated).  Nothing is
 * allocated; the caller owns the strings and the body.
 */
struct request_fake {
	const char *const *params;
	const char	*body;
	size_t		 body_len;
	size_t		 chunk;
	int64_t		 late_at;
	int64_t		 fail_at;
	int		 long_lived;	/* as struct request's */
	int		 body_to_eof;
	/* What happened. */
	size_t		 consumed;	/* body bytes handed out */
	int		 discarded;	/* the discard operation ran */
	int		 writes;	/* answers written (must end as 1) */
	char		 out[4096];
	size_t		 out_len;
};
void	request_init_fake(struct request *r, struct request_fake *f);

#endif
