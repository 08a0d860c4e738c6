/*
 * cgiloop: the plain-CGI benchmark's client (bench/cgi.py).  Starts a CGI
 * program once per request, as a web server does: fork, the request's
 * CGI variables in the environment, the body on stdin (a pipe), the
 * answer read from stdout to its end, the process reaped.  One request at
 * a time: the cost measured is a request's whole life, process start
 * included.
 *
 *   cgiloop PROGRAM REQUESTS CONF
 *
 * REQUESTS holds one request per line: "ID TIMESTAMP SIGNATURE BODYHEX"
 * (bench/cgi.py writes it).  CONF is passed as WEBHOOK_CONF (the
 * ceiling ignores it).  Prints "N requests in S s: R req/s" and exits 1
 * unless every answer began "Status: 200".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static int
unhex(const char *h, size_t n, unsigned char *out)
{
	size_t i;

	for (i = 0; i + 1 < n; i += 2) {
		unsigned v;
		if (sscanf(h + i, "%2x", &v) != 1)
			return -1;
		out[i / 2] = (unsigned char)v;
	}
	return 0;
}

static int
one(const char *prog, const char *conf, const char *id, const char *ts,
    const char *sig, const unsigned char *body, size_t len)
{
	int in[2], out[2], status;
	char ans[256], cl[32];
	size_t got = 0;
	ssize_t n;
	pid_t pid;

	if (pipe(in) == -1 || pipe(out) == -1)
		return -1;
	if ((pid = fork()) == -1)
		return -1;
	if (pid == 0) {
		snprintf(cl, sizeof cl, "%zu", len);
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		clearenv();
		setenv("GATEWAY_INTERFACE", "CGI/1.1", 1);
		setenv("REQUEST_METHOD", "POST", 1);
		setenv("CONTENT_LENGTH", cl, 1);
		setenv("CONTENT_TYPE", "application/json", 1);
		setenv("HTTP_WEBHOOK_ID", id, 1);
		setenv("HTTP_WEBHOOK_TIMESTAMP", ts, 1);
		setenv("HTTP_WEBHOOK_SIGNATURE", sig, 1);
		setenv("WEBHOOK_CONF", conf, 1);
		execl(prog, prog, (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	if (write(in[1], body, len) != (ssize_t)len)
		return -1;	/* bodies fit a pipe buffer */
	close(in[1]);
	while ((n = read(out[0], ans + got, sizeof ans - 1 - got)) > 0 &&
	    got + (size_t)n < sizeof ans - 1)
		got += (size_t)n;
	if (n > 0)
		got += (size_t)n;
	while (n > 0)
		n = read(out[0], ans, sizeof ans - 1);	/* drain */
	close(out[0]);
	ans[got < sizeof ans ? got : sizeof ans - 1] = '\0';
	if (waitpid(pid, &status, 0) != pid)
		return -1;
	return strncmp(ans, "Status: 200", 11) == 0 ? 0 : -1;
}

int
main(int argc, char **argv)
{
	char line[1 << 16], id[256], ts[32], sig[256];
	static unsigned char body[1 << 15];
	struct timespec a, b;
	long count = 0, bad = 0;
	double secs;
	FILE *f;

	if (argc != 4) {
		fprintf(stderr, "usage: cgiloop PROGRAM REQUESTS CONF\n");
		return 2;
	}
	if ((f = fopen(argv[2], "r")) == NULL) {
		perror(argv[2]);
		return 2;
	}
	clock_gettime(CLOCK_MONOTONIC, &a);
	while (fgets(line, sizeof line, f) != NULL) {
		char *hex;
		size_t hl;
		if (sscanf(line, "%255s %31s %255s", id, ts, sig) != 3 ||
		    (hex = strrchr(line, ' ')) == NULL)
			return 2;
		hex++;
		hl = strcspn(hex, "\n");
		if (hl / 2 > sizeof body || unhex(hex, hl, body) == -1)
			return 2;
		if (one(argv[1], argv[3], id, ts, sig, body, hl / 2) == -1)
			bad++;
		count++;
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	printf("%ld requests in %.3f s: %.1f req/s, %ld not 200\n", count, secs,
	    (double)count / secs, bad);
	return bad ? 1 : 0;
}
