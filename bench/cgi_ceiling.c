/*
 * cgi_ceiling: the least a durable plain-CGI receiver does (bench/cgi.py's
 * ceiling).  Reads the body (CONTENT_LENGTH bytes), appends it to the file
 * CEILING_FILE, fdatasync()s it and answers 200: process start, one write,
 * one sync.  No signature, no parsing, no database.  Linked statically,
 * as the receiver it is compared with.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int
main(void)
{
	static char body[1 << 20];
	const char *cl = getenv("CONTENT_LENGTH"), *path = getenv("WEBHOOK_CONF");
	long want = cl ? strtol(cl, NULL, 10) : 0, got = 0;
	ssize_t n;
	int fd;

	if (want < 0 || want > (long)sizeof body || path == NULL)
		return 1;
	while (got < want && (n = read(0, body + got, (size_t)(want - got))) > 0)
		got += n;
	if ((fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600)) == -1 ||
	    write(fd, body, (size_t)got) != got || fdatasync(fd) == -1)
		return 1;
	close(fd);
	fputs("Status: 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 7\r\n\r\nstored\n",
	    stdout);
	return 0;
}
