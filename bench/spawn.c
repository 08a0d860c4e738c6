/*
 * bench/spawn.c: the ceiling for a process-per-event drainer (bench/drain.py).
 *
 *	spawn COUNT [COMMAND]
 *
 * Runs COMMAND (default "true") COUNT times, one after the other, doing per
 * run exactly what webhook-drain does to start a handler (lib/drain/handler.c):
 * fork; in the child setpgid(0, 0) and execl("/bin/sh", "sh", "-c",
 * COMMAND); in the parent setpgid(pid, pid) and waitpid.  No pipes, no
 * database: only the process.  Prints one line:
 *
 *	SPAWN count=N seconds=S rate=R failed=F
 *
 * and exits 1 when any run did not exit 0.
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int
main(int argc, char **argv)
{
	const char *command = argc > 2 ? argv[2] : "true";
	long count, i, failed = 0;
	double start, secs;
	char *end;

	if (argc < 2 || (count = strtol(argv[1], &end, 10)) <= 0 || *end) {
		fprintf(stderr, "usage: spawn COUNT [COMMAND]\n");
		return 2;
	}
	start = now();
	for (i = 0; i < count; i++) {
		int status;
		pid_t pid = fork();

		if (pid == -1) {
			perror("fork");
			return 1;
		}
		if (pid == 0) {
			setpgid(0, 0);
			execl("/bin/sh", "sh", "-c", command, (char *)NULL);
			_exit(127);
		}
		setpgid(pid, pid);
		if (waitpid(pid, &status, 0) != pid) {
			perror("waitpid");
			return 1;
		}
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			failed++;
	}
	secs = now() - start;
	printf("SPAWN count=%ld seconds=%.6f rate=%.1f failed=%ld\n", count, secs,
	    (double)count / secs, failed);
	return failed ? 1 : 0;
}
