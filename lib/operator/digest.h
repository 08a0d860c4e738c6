/*
 * digest: what one `webhook-drain run` says about its failures, as one
 * message for a person (docs/DESIGN.md "The operator's tools").  Cron mails
 * a run's output; a storm of 200 events failing on the same handler bug
 * must make one short mail, not 200 near-identical lines.  So the run adds
 * each event's outcome here (lib/drain/drain.h's event hook) and prints the
 * digest once at its end: counts by outcome, failures grouped by error
 * (same outcome, same `error` such as "exit 255", same output tail = one
 * group, with its first few ids and how many more), the output as lines,
 * and the commands that fix and go on, naming the config the run was given.
 *
 * Only news is reported: an event's first failure and its death.  A later
 * failure of an event already reported is counted, never listed (it was
 * in an earlier mail).
 */
#ifndef WEBHOOK_DIGEST_H
#define WEBHOOK_DIGEST_H

#include <stdint.h>
#include <stdio.h>

#include "lib/drain/drain.h"

/* Distinct groups listed: past that, events are counted in one line
 * ("N more events failed with other errors"), which keeps the mail
 * bounded whatever the handler prints. */
#define DIGEST_GROUPS_MAX	6
/* Ids named per group: enough to `show` and `try` one, and to see which. */
#define DIGEST_IDS_SHOWN	5
/* Bytes of an id as shown (escaped; a longer one is cut with "..."). */
#define DIGEST_ID_SIZE		160
/* Bytes of the output tail that define a group and are shown: a stack
 * trace's last lines, not the whole 4 KB the inbox keeps (show has it). */
#define DIGEST_TAIL_MAX		600

enum digest_kind {
	DIGEST_FIRST,		/* failed for the first time: will be retried */
	DIGEST_DEAD		/* failed max_attempts times: dead */
};

struct digest_group {
	enum digest_kind kind;
	char	 error[160];		/* handler_result.error */
	char	 tail[DIGEST_TAIL_MAX];	/* the output's last bytes */
	size_t	 tail_len;
	int64_t	 failures;		/* DEAD: failures of its first event */
	int64_t	 n;			/* events in the group */
	char	 ids[DIGEST_IDS_SHOWN][DIGEST_ID_SIZE];
};

struct digest {
	int64_t	 done, stale, first, retried, dead;
	int64_t	 other;		/* first failures and deaths past the groups */
	int	 ngroups;
	struct digest_group g[DIGEST_GROUPS_MAX];
};

/* An empty digest. */
void	digest_init(struct digest *d);

/* Count one event's outcome; a first failure or a death joins its group. */
void	digest_add(struct digest *d, const struct drain_event *ev);

/* 1 when the run has something to report: a first failure or a death. */
int	digest_has_news(const struct digest *d);

/*
 * The digest for a person, every line starting "webhook-drain: " or
 * indented under one: counts, each group (ids, error, the output's lines
 * as "  | line", control bytes escaped), then the next steps as commands
 * with "-c CONFIG" (config_path, shell-quoted; NULL: no -c).  max_attempts
 * is the config's.  Prints nothing when there is no news.
 */
void	digest_print(FILE *f, const struct digest *d, const char *config_path,
	    int64_t max_attempts);

/*
 * The end of a run: the digest on f (cron's mail), then with ping_url
 * (run --ping) one request to the monitor (lib/drain/ping.h): failed when res
 * is NULL (the run did not start), broke or had failures; the body the
 * digest, or one line of counts when there is none.  A failed ping is
 * said on f, once, and changes nothing else.
 */
void	digest_report(FILE *f, const struct digest *d, const struct config *c,
	    const char *ping_url, const struct drain_result *res);

/* s shell-quoted for a command a person pastes: as it is when it is made
 * of safe characters only, else in single quotes.  Into out (outsz). */
void	digest_quote(const char *s, char *out, size_t outsz);

#endif
