/*
 * bare: the benchmark's ceilings.  A FastCGI responder that does only what
 * every responder must: accept a request, read its body to the end, answer
 * 200 with the same short body webhook.fcgi sends ("stored\n").  No config,
 * no signature, no database.  bench/run builds it into build/bench/bare and
 * runs it behind the same lighttpd setup as webhook.fcgi, so the ratio of
 * the two is what verifying and storing costs.
 *
 * With BARE_SYNC set (a path prefix), it is also durable, and nothing
 * more: each process writes every body (all of a bench body; of a longer
 * one, its last chunk read, up to READ_CHUNK bytes) into
 * its own file BARE_SYNC.PID, which does not grow (SYNC_SLOTS slots of
 * READ_CHUNK bytes, reused in turn, as SQLite reuses its WAL), and
 * fdatasyncs it before answering: the ceiling of any receiver that
 * answers 200 only after a sync that covers the delivery, with no
 * batching, verifying or indexing (issue 5's goals against the disk).
 */
#include <fcgiapp.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

/* Bytes read per FCGX_GetStr call, as in webhook.fcgi.c. */
#define READ_CHUNK	65536
#define SYNC_SLOTS	16

int
main(void)
{
	static const char answer[] = "Status: 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n";
	static char chunk[READ_CHUNK];
	const char *sync = getenv("BARE_SYNC");
	FCGX_Request req;
	unsigned long n = 0;
	int fd = -1;

	if (sync != NULL && *sync != '\0') {
		char path[4096];

		if ((size_t)snprintf(path, sizeof path, "%s.%ld", sync,
		    (long)getpid()) >= sizeof path ||
		    (fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600)) == -1 ||
		    posix_fallocate(fd, 0, (off_t)READ_CHUNK * SYNC_SLOTS) != 0 ||
		    fsync(fd) == -1) {
			perror("bare: BARE_SYNC");
			return 1;
		}
	}
	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, 0, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&req) >= 0) {
		int got, last = 0;

		while ((got = FCGX_GetStr(chunk, sizeof chunk, req.in)) > 0)
			last = got;
		if (fd != -1 && (pwrite(fd, chunk, (size_t)last, (off_t)READ_CHUNK *
		    (off_t)(n++ % SYNC_SLOTS)) != last || fdatasync(fd) == -1)) {
			FCGX_PutS("Status: 503 Service Unavailable\r\n\r\n", req.out);
			FCGX_Finish_r(&req);
			continue;
		}
		FCGX_PutStr(answer, (int)sizeof answer - 1, req.out);
		FCGX_Finish_r(&req);
	}
	return 0;
}
