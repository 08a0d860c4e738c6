/*
 * bare: the benchmark's ceiling.  A FastCGI responder that does only what
 * every responder must: accept a request, read its body to the end, answer
 * 200 with the same short body webhook.fcgi sends ("stored\n").  No config,
 * no signature, no database.  bench/run builds it into build/bench/bare and
 * runs it behind the same lighttpd setup as webhook.fcgi, so the ratio of
 * the two is what verifying and storing costs.
 */
#include <fcgiapp.h>

/* Bytes read per FCGX_GetStr call, as in webhook.fcgi.c. */
#define READ_CHUNK	65536

int
main(void)
{
	static const char answer[] = "Status: 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n";
	static char chunk[READ_CHUNK];
	FCGX_Request req;

	if (FCGX_Init() != 0 || FCGX_InitRequest(&req, 0, 0) != 0)
		return 1;
	while (FCGX_Accept_r(&req) >= 0) {
		while (FCGX_GetStr(chunk, sizeof chunk, req.in) > 0)
			;
		FCGX_PutStr(answer, (int)sizeof answer - 1, req.out);
		FCGX_Finish_r(&req);
	}
	return 0;
}
