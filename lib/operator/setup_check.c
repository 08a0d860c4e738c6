/*
 * setup_check: the findings of `webhook-drain check` (operator/setup_check.h).
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/drain/api.h"
#include "lib/drain/drain.h"
#include "lib/store/inbox.h"
#include "lib/operator/setup_check.h"
#include "lib/common/signature.h"
#include "lib/common/util.h"

/* A MAC key shorter than this many bytes is warned about: below 128 bits
 * it is guessable, and the providers' own are longer (Standard Webhooks'
 * 24 to 64, Stripe's whsec_ text 38, WooCommerce's 50): most likely a cut
 * paste ("whsec_AAAA" decodes to 3 bytes). */
#define SECRET_SHORT	16

/* Shell syntax after which a command's words are no longer plain. */
#define SHELLISH	"'\"$`\\(){};|&<>"

struct check {
	const struct setup_hooks	*h;
	struct setup_counts		*n;
};

static void finding(struct check *k, const char *level, const char *what,
	    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void
finding(struct check *k, const char *level, const char *what,
    const char *fmt, ...)
{
	va_list ap;
	char *text;

	if (strcmp(level, SETUP_FAIL) == 0)
		k->n->fail++;
	else if (strcmp(level, SETUP_WARN) == 0)
		k->n->warn++;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) == -1)
		text = NULL;
	va_end(ap);
	if (k->h->finding != NULL)
		k->h->finding(k->h->arg, level, what, text ? text : "out of memory");
	free(text);
}

char *
setup_handler_program(const char *cmd)
{
	const char *p = cmd;

	for (;;) {
		size_t n;
		while (*p == ' ' || *p == '\t')
			p++;
		n = strcspn(p, " \t");
		if (n == 0)
			return NULL;
		if (memchr(p, '=', n) != NULL && p[0] != '=' && p[0] != '/') {
			p += n;		/* VAR=value */
			continue;
		}
		if (strcspn(p, SHELLISH) < n)
			return NULL;
		return strndup(p, n);
	}
}

char *
setup_handler_script(const char *cmd)
{
	char *prog = setup_handler_program(cmd);
	const char *p;
	size_t n;

	if (prog == NULL)
		return NULL;
	p = strstr(cmd, prog) + strlen(prog);
	free(prog);
	while (*p == ' ' || *p == '\t')
		p++;
	n = strcspn(p, " \t");
	if (n == 0 || *p == '-' || strcspn(p, SHELLISH) < n ||
	    memchr(p, '/', n) == NULL)
		return NULL;
	return strndup(p, n);
}

int
setup_executable(const char *prog, char *found, size_t foundsz)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	int ok = 0;

	if (strchr(prog, '/') != NULL) {
		snprintf(found, foundsz, "%s", prog);
		return access(prog, X_OK) == 0;
	}
	if ((copy = strdup(path ? path : "/usr/bin:/bin")) == NULL)
		return 0;
	for (dir = strtok_r(copy, ":", &save); dir != NULL && !ok;
	    dir = strtok_r(NULL, ":", &save)) {
		snprintf(found, foundsz, "%s/%s", dir, prog);
		ok = access(found, X_OK) == 0;
	}
	free(copy);
	return ok;
}

/* A loaded MAC key of `len` bytes (a public key has its fixed length):
 * warn when it is short, naming the source and the fingerprint, never
 * the key. */
static void
check_key_length(struct check *k, const char *source, const char *fp,
    size_t len)
{
	if (len < SECRET_SHORT)
		finding(k, SETUP_WARN, "secret", "source %s: fingerprint %s: "
		    "the key is %zu byte%s, shorter than %d — a cut paste? "
		    "compare the line with the provider's dashboard", source,
		    fp, len, len == 1 ? "" : "s", SECRET_SHORT);
}

/* The file itself: loads (we were given it loaded), its mode, the secrets,
 * max_body, and where it sits against the document root. */
static void
check_config(struct check *k, const struct config *c, const char *docroot,
    int errors)
{
	struct stat sb;
	char dir[PATH_MAX];
	const char *p, *nl;
	size_t i;

	if (errors == 0)
		finding(k, SETUP_OK, "config", "%s loads", c->path);
	else
		finding(k, SETUP_FAIL, "config", "%s: %d error%s (above) — fix "
		    "%s, then check again; the findings below judge the keys "
		    "that loaded", c->path, errors, errors == 1 ? "" : "s",
		    errors == 1 ? "it" : "them");
	/* Judge relative handler paths where `run` runs them. */
	if (drain_enter_config_dir(c->path, dir, sizeof dir) == -1)
		finding(k, SETUP_WARN, "config", "cannot enter %s", dir);
	if (stat(c->path, &sb) == 0 && (sb.st_mode & S_IROTH))
		finding(k, SETUP_WARN, "config", "%s is readable by every user "
		    "and holds the secret — chmod o-rwx %s", c->path, c->path);
	for (i = 0; i < c->nsecrets; i++) {
		finding(k, SETUP_OK, "secret", "%s, fingerprint %s (as shown by "
		    "`list --json`)", c->secrets[i].kind == SIGNATURE_HMAC_SHA256 ?
		    "whsec_ HMAC-SHA256 (v1)" : "whpk_ Ed25519 public key (v1a)",
		    c->secrets[i].fingerprint);
		/* Loaded as the reference libraries load it, but no encoder
		 * writes such a text: a copy whose end was changed? */
		if (c->secrets[i].spare_bits)
			finding(k, SETUP_WARN, "secret", "fingerprint %s: its last "
			    "character carries bits beyond the key's last byte, "
			    "which are ignored (as the reference libraries do); no "
			    "encoder writes that — compare the line's end with "
			    "the provider's dashboard", c->secrets[i].fingerprint);
		if (c->secrets[i].kind == SIGNATURE_HMAC_SHA256)
			check_key_length(k, "default", c->secrets[i].fingerprint,
			    c->secrets[i].keylen);
	}
	/* A line that could not load while others did (lib/program/config.h):
	 * the receiver goes on with the others; a failure all the same. */
	for (p = c->secret_skipped; p != NULL && *p != '\0'; p = nl ? nl + 1 :
	    NULL) {
		nl = strchr(p, '\n');
		finding(k, SETUP_FAIL, "secret", "%.*s — this line is not used: "
		    "the other secrets verify, a delivery signed only with this "
		    "one gets 401; fix it or remove it",
		    (int)(nl ? nl - p : (ptrdiff_t)strlen(p)), p);
	}
	/* Each [source NAME]: a sender the receiver takes at its URL +
	 * "/NAME" (docs/providers.md); check --url sends each a test. */
	for (i = 0; i < c->nsources; i++) {
		const struct config_source *src = &c->sources[i];
		size_t j;

		if (src->scheme == NULL)
			continue;	/* a config error, said above */
		finding(k, SETUP_OK, "source", "%s: %s (scheme = %s), %zu "
		    "secret%s, first fingerprint %s; the receiver takes it at "
		    "its URL + /%s", src->name, src->scheme->title,
		    src->scheme->name, src->nsecrets, src->nsecrets == 1 ? "" :
		    "s", src->nsecrets ? src->secrets[0].fingerprint : "none",
		    src->name);
		for (j = 0; j < src->nsecrets; j++)
			if (!src->secrets[j].ed25519)
				check_key_length(k, src->name,
				    src->secrets[j].fingerprint,
				    src->secrets[j].len);
	}
	if (c->max_body_bytes < 270000)
		finding(k, SETUP_WARN, "max_body", "%lld bytes: the provider's "
		    "bodies reach ~260 KB — raise max_body to at least 300000",
		    (long long)c->max_body_bytes);
	if (docroot == NULL)
		return;
	if (util_path_inside(docroot, c->path))
		finding(k, SETUP_FAIL, "config", "%s is inside the document root "
		    "%s, where anyone can download it — move it outside and "
		    "point WEBHOOK_CONF at it", c->path, docroot);
	if (c->database != NULL && inbox_is_file(c->database) &&
	    util_path_inside(docroot, c->database))
		finding(k, SETUP_FAIL, "database", "%s is inside the document "
		    "root %s — move it outside and update `database`",
		    c->database, docroot);
	if (k->n->fail == 0)
		finding(k, SETUP_OK, "document root", "config and database are "
		    "outside %s", docroot);
	else if (errors > 0 && !util_path_inside(docroot, c->path) &&
	    (c->database == NULL || !util_path_inside(docroot, c->database)))
		finding(k, SETUP_OK, "document root", "config%s outside %s",
		    c->database ? " and database are" : " is", docroot);
}

/* The database's directory: SQLite creates the -wal and -shm files there,
 * as whichever user (web server or cron) comes first. */
static void
check_database_dir(struct check *k, const char *database, const char *docroot)
{
	const char *slash = strrchr(database, '/');
	char dir[PATH_MAX];
	struct stat sb;

	if (slash == NULL || (size_t)(slash - database) >= sizeof dir)
		return;
	memcpy(dir, database, (size_t)(slash - database));
	dir[slash - database] = '\0';
	if (dir[0] == '\0')
		snprintf(dir, sizeof dir, "/");
	/* Inside the document root: check_config said to move it; advice on
	 * the directory's mode would make a web directory group-writable. */
	if (docroot != NULL && util_path_inside(docroot, database))
		return;
	if (stat(dir, &sb) == -1)
		finding(k, SETUP_FAIL, "database", "its directory %s: %s — create "
		    "it (mkdir -m 2770 %s)", dir, strerror(errno), dir);
	else if (access(dir, W_OK | X_OK) == -1)
		finding(k, SETUP_FAIL, "database", "this user cannot create files "
		    "in %s (SQLite needs to create the -wal and -shm files "
		    "there) — chmod g+w, or add this user to its group", dir);
	else if (sb.st_uid == geteuid() && (sb.st_mode & 077) == 0)
		finding(k, SETUP_OK, "database", "%s is this user's alone: "
		    "the one-user setup (suEXEC runs the receiver as "
		    "you, as cron runs the drainer)", dir);
	else if (sb.st_uid == geteuid() && !(sb.st_mode & S_IWGRP))
		/* Ours and not group-writable: the one-user setup of the
		 * quickstart, whose advice is owner-only, not the group's. */
		finding(k, SETUP_WARN, "database", "%s is open to other users "
		    "(mode %03o) — one user (suEXEC: the receiver runs as you, "
		    "as cron does): chmod 700 %s; only if the web server runs as "
		    "another user, a setgid group directory instead (README, "
		    "\"Two users\")",
		    dir, (unsigned)(sb.st_mode & 0777), dir);
	else if (!(sb.st_mode & S_ISGID) || !(sb.st_mode & S_IWGRP))
		finding(k, SETUP_WARN, "database", "%s is not a setgid, group-"
		    "writable directory: if the web server and cron run as "
		    "different users, the second one gets \"attempt to write "
		    "a readonly database\" — chmod 2770 %s and use one group",
		    dir, dir);
}

/* The inbox opens (creating it if needed) in WAL mode and is writable, and
 * so is what its writers share beside it (inbox_probe_shared: SQLite's
 * counter page), which this user's processes must share with the
 * others'. */
static void
check_database(struct check *k, const struct config *c)
{
	struct inbox *ib;
	struct buf err, what;
	enum inbox_status s;

	buf_init(&err, BUF_ERR_MAX);
	buf_init(&what, BUF_ERR_MAX);
	if ((ib = drain_inbox_open(c, &err)) == NULL) {
		if (k->h->problem != NULL)
			k->h->problem(k->h->arg, err.data);
		finding(k, SETUP_FAIL, "database", "%s does not open (above) — "
		    "check the path and permissions; WAL needs a local "
		    "filesystem, not NFS", c->database);
		buf_free(&err);
		return;
	}
	finding(k, SETUP_OK, "database", "%s opens in WAL mode", c->database);
	if (inbox_probe_write(ib, &err) != INBOX_OK)
		finding(k, SETUP_FAIL, "database", "this user cannot write it: %s "
		    "— give the web server's and the cron user one group, "
		    "chmod g+rw the database and its -wal and -shm files",
		    err.data);
	else
		finding(k, SETUP_OK, "database", "writable by this user");
	s = inbox_probe_shared(ib, &what, &err);
	inbox_close(ib);
	if (s == INBOX_OK)
		finding(k, SETUP_OK, "wal-sync", "%s is shared", what.data);
	else if (s != INBOX_NOT_FOUND)
		finding(k, SETUP_FAIL, "wal-sync", "%s — without it each process "
		    "syncs the WAL alone and checkpoints outside the schedule "
		    "that avoids SQLite's WAL-reset race (README, \"Two "
		    "users\"): chmod 660 it and give both users its group, or "
		    "remove it while no receiver runs", err.data);
	buf_free(&what);
	buf_free(&err);
}

static void
check_handler(struct check *k, const char *handler)
{
	char *prog, *script, found[PATH_MAX];

	if (handler == NULL) {
		finding(k, SETUP_FAIL, "handler", "not set: `run` has nothing to "
		    "hand events to — set handler = /path/to/your/script");
		return;
	}
	if ((prog = setup_handler_program(handler)) == NULL) {
		finding(k, SETUP_WARN, "handler", "a shell construct; not checked "
		    "— run it by hand: echo '{}' | sh -c '<handler>'");
		return;
	}
	script = setup_handler_script(handler);
	if (setup_executable(prog, found, sizeof found))
		finding(k, SETUP_OK, "handler", "%s is executable", found);
	else
		finding(k, SETUP_FAIL, "handler", "%s is not an executable file "
		    "for this user — chmod +x it, or name its interpreter "
		    "(handler = /usr/bin/php /path/handler.php)", prog);
	/* "php /path/handler.php": the script must be there too. */
	if (script != NULL && access(script, R_OK) == -1)
		finding(k, SETUP_FAIL, "handler", "%s: %s — the script the "
		    "handler runs is missing or unreadable for this user",
		    script, strerror(errno));
	free(script);
	free(prog);
}

/* The API, when configured: the token readable (never shown), and for
 * https a CA bundle to verify the provider with. */
static void
check_api(struct check *k, const struct config *c)
{
	struct buf err;
	struct stat sb;
	const char *ca;
	char *token;

	buf_init(&err, BUF_ERR_MAX);
	if ((token = config_api_token(c, &err)) == NULL) {
		finding(k, SETUP_FAIL, "api", "%s — put the token in a file only "
		    "the cron user can read", err.data);
		buf_free(&err);
		return;
	}
	sodium_memzero(token, strlen(token));
	free(token);
	buf_free(&err);
	finding(k, SETUP_OK, "api", "%s, token readable", c->api_url);
	if (strncmp(c->api_url, "https://", 8) == 0) {
		if ((ca = api_ca_bundle(c)) == NULL)
			finding(k, SETUP_FAIL, "api", "no CA bundle found where "
			    "distributions keep one: https cannot be verified — "
			    "set api_ca_file = /path/to/ca-bundle.crt");
		else if (access(ca, R_OK) == -1)
			finding(k, SETUP_FAIL, "api", "%s: %s — fix api_ca_file",
			    ca, strerror(errno));
		else
			finding(k, SETUP_OK, "api", "certificates checked "
			    "against %s", ca);
	}
	if (c->api_token_file != NULL && stat(c->api_token_file, &sb) == 0 &&
	    (sb.st_mode & (S_IRGRP | S_IROTH)))
		finding(k, SETUP_WARN, "api", "%s is readable by others — chmod "
		    "600 %s", c->api_token_file, c->api_token_file);
}

/*
 * A PostgreSQL inbox: reachable (and the schema applied or migrated, as
 * the receivers and drainers will find it), this role's privileges on
 * every table, the schema version, synchronous_commit as commits will
 * run, the server's version.  Named without the password.
 */
static void
check_postgresql(struct check *k, const struct config *c)
{
	struct inbox_server_facts f;
	struct inbox *ib;
	struct buf err;
	char name[1024];

	inbox_database_name(c->database, name, sizeof name);
	buf_init(&err, BUF_ERR_MAX);
	if ((ib = drain_inbox_open(c, &err)) == NULL) {
		finding(k, SETUP_FAIL, "database", "%s — check the URI, that the "
		    "server runs and takes this user's connections (pg_hba.conf),"
		    " and the password in the passfile (PGPASSFILE, ~/.pgpass)",
		    err.data);
		buf_free(&err);
		return;
	}
	if (inbox_server_facts(ib, &f, &err) != INBOX_OK) {
		finding(k, SETUP_FAIL, "database", "%s", err.data);
		goto out;
	}
	finding(k, SETUP_OK, "database", "%s reachable as role %s: PostgreSQL "
	    "%s", name, f.user, f.server_version);
	finding(k, SETUP_OK, "database", "schema version %d (this program's: "
	    "%d)", f.schema_version, inbox_schema_version());
	if (strcmp(f.sync_default, f.sync_effective) != 0)
		finding(k, SETUP_WARN, "synchronous_commit", "%s for this role by "
		    "default: raised to %s for our sessions (a 200 waits for the "
		    "WAL flush); ALTER ROLE %s SET synchronous_commit = on says "
		    "so for every client", f.sync_default, f.sync_effective, f.user);
	else
		finding(k, SETUP_OK, "synchronous_commit", "%s: a commit waits "
		    "for the WAL flush%s", f.sync_effective,
		    strcmp(f.sync_effective, "remote_apply") == 0 ||
		    strcmp(f.sync_effective, "on") == 0 ?
		    " (and synchronous standbys, when configured)" : "");
	if (inbox_probe_write(ib, &err) != INBOX_OK)
		finding(k, SETUP_FAIL, "database", "this role cannot write every "
		    "table: %s — GRANT SELECT, INSERT, UPDATE, DELETE ON ALL "
		    "TABLES IN SCHEMA public TO %s", err.data, f.user);
	else
		finding(k, SETUP_OK, "database", "this role may read and write "
		    "every table of the inbox");
out:
	inbox_close(ib);
	buf_free(&err);
}

void
setup_check(const struct config *c, const char *docroot,
    const struct setup_hooks *h, struct setup_counts *n)
{
	setup_check_partial(c, 0, docroot, h, n);
}

void
setup_check_partial(const struct config *c, int errors, const char *docroot,
    const struct setup_hooks *h, struct setup_counts *n)
{
	struct check k = { h, n };

	memset(n, 0, sizeof *n);
	check_config(&k, c, docroot, errors);
	if (c->database == NULL) {	/* a config error (above) */
		finding(&k, SETUP_FAIL, "database", "not set (above): nothing "
		    "to check — set database = /path/outside/the/web/root/"
		    "inbox.db");
		check_handler(&k, c->handler);
		if (c->api_url != NULL)
			check_api(&k, c);
		return;
	}
	if (!inbox_is_file(c->database))
		check_postgresql(&k, c);
	else
		check_database_dir(&k, c->database, docroot);
	/* Opening creates the inbox: never where a check already failed
	 * (it made inbox.db inside public_html after saying to move it). */
	if (!inbox_is_file(c->database))
		;	/* opened above */
	else if (n->fail > 0 && access(c->database, F_OK) == -1)
		finding(&k, SETUP_WARN, "database", "%s not created or opened: "
		    "fix the failures above first, then check again", c->database);
	else
		check_database(&k, c);
	check_handler(&k, c->handler);
	if (c->api_url != NULL)
		check_api(&k, c);
}
