/*
 * upgrade: see receive/upgrade.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/store/inbox.h"
#include "lib/receive/upgrade.h"

static char path[PATH_MAX];
static struct stat running;	/* the file we run */
static int known;
static struct stat refused;	/* the last file that failed the checks */
static int checked_fd = -1;	/* the file that passed, for upgrade_exec */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void
upgrade_init(const char *p)
{
	char cwd[PATH_MAX];

	path[0] = '\0';
	if (p == NULL || *p == '\0')
		return;
	if (p[0] == '/')
		snprintf(path, sizeof path, "%s", p);
	else if (getcwd(cwd, sizeof cwd) != NULL &&
	    (size_t)snprintf(path, sizeof path, "%s/%s", cwd, p) >= sizeof path)
		path[0] = '\0';
	/* The file running: /proc's magic link names it even when the path
	 * was renamed over while we started; else the path itself. */
	known = path[0] != '\0' && (stat("/proc/self/exe", &running) == 0 ||
	    stat(path, &running) == 0);
}

const char *
upgrade_path(void)
{
	return path;
}

static int
same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	    a->st_size == b->st_size &&
	    a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	    a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/*
 * Run the file open as `fd` with --upgrade-probe NONCE (stdin a closed
 * pipe, not our FastCGI socket; no GATEWAY_INTERFACE) for at most
 * UPGRADE_PROBE_MS; 0 when it answered as a receiver of a schema this
 * inbox's programs can use, else -1 with the reason in why.
 */
static int
probe(int fd, char *why, size_t whysz)
{
	extern char **environ;
	char nonce[33], want[160], out[160], *argv[4];
	char **env = NULL;
	unsigned char rnd[16];
	int in[2] = { -1, -1 }, pipefd[2] = { -1, -1 }, status = 0, rc = -1;
	size_t n = 0, i, k = 0;
	int64_t deadline = util_mono_ns() + UPGRADE_PROBE_MS * 1000000LL;
	struct pollfd p;
	ssize_t got;
	pid_t pid;

	randombytes_buf(rnd, sizeof rnd);
	sodium_bin2hex(nonce, sizeof nonce, rnd, sizeof rnd);
	argv[0] = path;
	argv[1] = (char *)"--upgrade-probe";
	argv[2] = nonce;
	argv[3] = NULL;
	for (i = 0; environ[i] != NULL; i++)
		;
	snprintf(why, whysz, "cannot run it: out of memory or processes");
	if ((env = calloc(i + 1, sizeof *env)) == NULL ||
	    pipe2(in, O_CLOEXEC) == -1 || pipe2(pipefd, O_CLOEXEC) == -1)
		goto out;
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], "GATEWAY_INTERFACE=", 18) != 0)
			env[k++] = environ[i];
	if ((pid = fork()) == -1)
		goto out;
	if (pid == 0) {		/* async-signal-safe calls only */
		if (dup2(in[0], 0) == -1 || dup2(pipefd[1], 1) == -1)
			_exit(126);
		fexecve(fd, argv, env);
		_exit(127);
	}
	close(in[0]);
	close(in[1]);
	close(pipefd[1]);
	in[0] = in[1] = pipefd[1] = -1;
	p.fd = pipefd[0];
	p.events = POLLIN;
	while (n < sizeof out - 1 && util_mono_ns() < deadline) {
		if (poll(&p, 1, 100) <= 0)
			continue;
		if ((got = read(pipefd[0], out + n, sizeof out - 1 - n)) <= 0)
			break;
		n += (size_t)got;
	}
	out[n] = '\0';
	while (waitpid(pid, &status, WNOHANG) == 0) {
		if (util_mono_ns() >= deadline)
			kill(pid, SIGKILL);
		(void)poll(NULL, 0, 10);
	}
	snprintf(want, sizeof want, "webhook.fcgi upgrade-probe %s schema ", nonce);
	if (util_mono_ns() >= deadline)
		snprintf(why, whysz, "it did not answer within %d s",
		    UPGRADE_PROBE_MS / 1000);
	else if (WIFEXITED(status) && WEXITSTATUS(status) == 127 && n == 0)
		snprintf(why, whysz, "it does not start (a build for another "
		    "machine, or a partial upload?)");
	else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 ||
	    strncmp(out, want, strlen(want)) != 0)
		snprintf(why, whysz, "it is not a receiver that knows the "
		    "upgrade probe (webhook-drain, or a partial upload?)");
	else if (atoi(out + strlen(want)) < inbox_schema_version())
		snprintf(why, whysz, "it is an older receiver (inbox schema "
		    "%d, this one %d): it would refuse this inbox",
		    atoi(out + strlen(want)), inbox_schema_version());
	else
		rc = 0;
out:
	free(env);
	if (in[0] != -1)
		close(in[0]);
	if (in[1] != -1)
		close(in[1]);
	if (pipefd[0] != -1)
		close(pipefd[0]);
	if (pipefd[1] != -1)
		close(pipefd[1]);
	return rc;
}

/* Open the file now at the path and check it; the descriptor, or -1 with
 * the reason in why.  *sb gets what was checked. */
static int
check(struct stat *sb, char *why, size_t whysz)
{
	unsigned char magic[4];
	int fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		snprintf(why, whysz, "cannot open it: %s", strerror(errno));
		return -1;
	}
	if (fstat(fd, sb) == -1 || !S_ISREG(sb->st_mode))
		snprintf(why, whysz, "it is not a regular file");
	else if ((sb->st_mode & S_IXUSR) == 0)
		snprintf(why, whysz, "it is not executable (chmod 700 it)");
	else if (pread(fd, magic, 4, 0) != 4 || memcmp(magic, "\177ELF", 4) != 0)
		snprintf(why, whysz, "it is not a program (a partial upload, "
		    "or a script?)");
	else if (probe(fd, why, whysz) == 0)
		return fd;
	close(fd);
	return -1;
}

int
upgrade_due(void)
{
	struct stat sb;
	char why[256];
	int fd, due = 0;

	if (!known || stat(path, &sb) == -1 || !S_ISREG(sb.st_mode) ||
	    (sb.st_dev == running.st_dev && sb.st_ino == running.st_ino))
		return 0;	/* nothing there is no upgrade: stay */
	if (pthread_mutex_trylock(&mu) != 0)
		return 0;	/* another thread is looking */
	if (checked_fd != -1 || same(&sb, &refused))
		goto out;
	if ((fd = check(&sb, why, sizeof why)) == -1) {
		refused = sb;
		log_msg("%s was replaced, but the new file is not used: %s; "
		    "serving on with the program running now (check it with "
		    "`%s.new --version` before renaming it in)", path, why, path);
		goto out;
	}
	checked_fd = fd;
	due = 1;
	log_msg("%s was replaced (an upgrade): finishing the requests in "
	    "hand, then starting the new one", path);
out:
	pthread_mutex_unlock(&mu);
	return due;
}

void
upgrade_exec(char **argv)
{
	extern char **environ;

	if (checked_fd == -1) {
		errno = EBADF;
		return;
	}
	argv[0] = path;
	fexecve(checked_fd, argv, environ);
}

void
upgrade_answer_probe(const char *nonce)
{
	printf("webhook.fcgi upgrade-probe %s schema %d\n", nonce,
	    inbox_schema_version());
}
