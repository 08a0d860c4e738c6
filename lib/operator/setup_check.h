/*
 * setup_check: `webhook-drain check` — the setup as this user runs it
 * (STYLE.md 12: a check-style command validates without side effects
 * beyond creating the inbox where `run` would, and only when no check
 * before it failed).  Each finding is one
 * level, one subject and one sentence with the fix after "—", handed to
 * the caller to print.
 */
#ifndef WEBHOOK_SETUP_CHECK_H
#define WEBHOOK_SETUP_CHECK_H

#include <stddef.h>

#include "lib/program/config.h"

/* A finding's level, as printed: "ok", "WARN" or "FAIL". */
#define SETUP_OK	"ok"
#define SETUP_WARN	"WARN"
#define SETUP_FAIL	"FAIL"

struct setup_hooks {
	/* One finding: level (above), what (the subject: "config",
	 * "database", "handler", "api", ...), text (the sentence). */
	void	(*finding)(void *arg, const char *level, const char *what,
		    const char *text);
	/* A problem reported before the finding that refers to it as
	 * "(above)": the inbox's open error.  May be NULL. */
	void	(*problem)(void *arg, const char *line);
	void	 *arg;
};

struct setup_counts {
	int	fail, warn;
};

/*
 * Check c: the config file's mode, its secrets (a MAC key shorter than 16
 * bytes is warned about, by source and fingerprint), max_body, the document
 * root (docroot; NULL: not checked), the database's directory, that the
 * inbox opens and this user can write it and its WAL-sync page, the
 * handler's program and script, and the API's token and CA bundle.
 * Changes the process's working directory to the config file's, as `run`
 * does, so relative handler paths are judged where they will run.
 * Every finding goes to h->finding; *n counts failures and warnings.
 */
void	setup_check(const struct config *c, const char *docroot,
	    const struct setup_hooks *h, struct setup_counts *n);

/*
 * The same for a config that did not load whole (config_load_all kept
 * the keys that loaded; its `errors` errors were said above): one FAIL
 * for them, then every check whose keys loaded; a key that is missing
 * (database, handler) is said to be so, nothing is created or opened
 * that does not exist (a failure is already counted).
 */
void	setup_check_partial(const struct config *c, int errors,
	    const char *docroot, const struct setup_hooks *h,
	    struct setup_counts *n);

/* The program a shell command starts: the first word after any VAR=value
 * assignments, or NULL when the command is too shell-ish to tell (quotes,
 * $, backslash, parentheses, ;, |, &, redirections).  Free the result. */
char	*setup_handler_program(const char *cmd);

/* The script an interpreter runs ("php /x/h.php", "sh ./h.sh"): the first
 * argument after the program when it looks like a path (has a '/', is not
 * an option); NULL otherwise.  Free the result. */
char	*setup_handler_script(const char *cmd);

/* Is `prog` (a path, or a name looked up in $PATH, else /usr/bin:/bin)
 * executable by us?  1 or 0; `found` (foundsz bytes) gets the path tried
 * last, the one that is executable when 1. */
int	setup_executable(const char *prog, char *found, size_t foundsz);

#endif
