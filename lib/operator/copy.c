/*
 * copy: see operator/copy.h.  The merge rules are the decide_* functions below,
 * each written once; lib/store/sqlite/copy.c (or another implementation of
 * store/inbox.h) reads and writes the rows and calls them inside the
 * destination's write transaction.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/operator/copy.h"

/* events' columns as inbox_table_info lists them (lib/store/tables.c);
 * copy_test checks these against the names. */
enum {
	EV_STATE = 1, EV_ATTEMPTS = 14, EV_ADMITTED = 21, EV_SOURCE = 24
};
/* objects' clocks; history's count. */
enum { OB_CREATED = 2, OB_UPDATED = 3, OB_DONE_AT = 4 };
enum { HI_N = 5 };

static int	text_eq(const struct inbox_value *, const char *);

static void
hash_value(crypto_generichash_state *s, const struct inbox_value *v)
{
	unsigned char head[9];
	uint64_t x = v->type == INBOX_V_INT ? (uint64_t)v->i : (uint64_t)v->len;
	int k;

	/* Type, then the integer or the length, then the bytes: no two
	 * different rows encode alike. */
	head[0] = (unsigned char)v->type;
	for (k = 0; k < 8; k++)
		head[1 + k] = (unsigned char)(x >> (56 - 8 * k));
	crypto_generichash_update(s, head, sizeof head);
	if ((v->type == INBOX_V_TEXT || v->type == INBOX_V_BLOB) && v->len > 0)
		crypto_generichash_update(s, v->p, v->len);
}

void
copy_digest(enum inbox_table t, const struct inbox_value *row,
    unsigned char out[COPY_DIGEST_LEN])
{
	const struct inbox_table_info *ti = inbox_table_info(t);
	crypto_generichash_state s;
	int i;

	crypto_generichash_init(&s, NULL, 0, COPY_DIGEST_LEN);
	for (i = 0; i < ti->ncols; i++)
		if (!(t == INBOX_EVENTS && i == EV_ADMITTED) &&
		    !(t == INBOX_EVENTS && i == EV_SOURCE &&
		    text_eq(&row[i], INBOX_DEFAULT_SOURCE)))
			hash_value(&s, &row[i]);
	crypto_generichash_final(&s, out, COPY_DIGEST_LEN);
}

static int
value_eq(const struct inbox_value *a, const struct inbox_value *b)
{
	if (a->type != b->type)
		return 0;
	switch (a->type) {
	case INBOX_V_INT:
		return a->i == b->i;
	case INBOX_V_TEXT:
	case INBOX_V_BLOB:
		return a->len == b->len && (a->len == 0 ||
		    memcmp(a->p, b->p, a->len) == 0);
	default:
		return 1;
	}
}

static int
rows_eq(const struct inbox_value *a, const struct inbox_value *b, int ncols)
{
	int i;

	for (i = 0; i < ncols; i++)
		if (!value_eq(&a[i], &b[i]))
			return 0;
	return 1;
}

/* The text of a value ("" unless TEXT), for comparisons. */
static int
text_eq(const struct inbox_value *v, const char *s)
{
	return v->type == INBOX_V_TEXT && v->len == strlen(s) &&
	    memcmp(v->p, s, v->len) == 0;
}

/* Normalised instants sort as text (common/instant.h); NULL is "none". */
static const struct inbox_value *
later(const struct inbox_value *a, const struct inbox_value *b)
{
	size_t n;
	int c;

	if (a->type != INBOX_V_TEXT)
		return b;
	if (b->type != INBOX_V_TEXT)
		return a;
	n = a->len < b->len ? a->len : b->len;
	c = memcmp(a->p, b->p, n);
	if (c == 0)
		c = a->len < b->len ? -1 : a->len > b->len;
	return c >= 0 ? a : b;
}

/* The longest key of a table (history's, 5 columns) fits. */
#define MAX_KEY	8

/* What one copy is doing: the counts of the table under way. */
struct job {
	struct inbox		*dst;
	const struct copy_options *o;
	const struct copy_hooks	*h;
	struct copy_result	*r;
	enum inbox_table	 t;
	struct buf		*err;
	int			 failed;
	/* The last key copied (the next page starts after it), owned. */
	struct inbox_value	 after[MAX_KEY];
	int			 has_after;
	/* Counts of the batch under way (decide_*), added to r when the
	 * batch committed. */
	int64_t			 same, kept;
	int64_t			 recorded;	/* written for the record only */
};

/* Has history counted this event as `received` yet (events.admitted)? */
static int
admitted(const struct inbox_value *row)
{
	return row[EV_ADMITTED].type == INBOX_V_INT && row[EV_ADMITTED].i == 1;
}

/*
 * Events and cursors: the copy record decides (operator/copy.h).  An event that
 * the destination received itself and has not handed out (pending,
 * attempts 0) takes the source's row: the source knows more of it.
 */
static enum inbox_merge
decide_recorded(struct job *j, enum inbox_table t, const struct inbox_value *in,
    const struct inbox_value *cur, const void *led, size_t led_len,
    struct inbox_value *out, struct buf *ledger)
{
	unsigned char din[COPY_DIGEST_LEN], dcur[COPY_DIGEST_LEN];
	int untouched;

	copy_digest(t, in, din);
	if (cur == NULL) {
		if (led != NULL) {	/* deleted there since copied */
			j->kept++;
			return INBOX_MERGE_KEEP;
		}
	} else {
		copy_digest(t, cur, dcur);
		/* Neither side changed it; unless the source has counted it
		 * in history since (admitted), which the destination must
		 * then not count again. */
		if (led != NULL && led_len == COPY_DIGEST_LEN &&
		    memcmp(din, led, COPY_DIGEST_LEN) == 0 &&
		    memcmp(dcur, led, COPY_DIGEST_LEN) == 0 &&
		    !(t == INBOX_EVENTS && admitted(in) && !admitted(cur))) {
			j->same++;
			return INBOX_MERGE_KEEP;
		}
		if (memcmp(dcur, din, COPY_DIGEST_LEN) == 0) {
			/* The same content: only the record is written. */
			j->same++;
			j->recorded++;
		} else {
			untouched = led != NULL ? led_len == COPY_DIGEST_LEN &&
			    memcmp(dcur, led, COPY_DIGEST_LEN) == 0 :
			    t == INBOX_EVENTS && text_eq(&cur[EV_STATE],
			    "pending") && cur[EV_ATTEMPTS].type == INBOX_V_INT &&
			    cur[EV_ATTEMPTS].i == 0;
			if (!untouched) {
				j->kept++;
				return INBOX_MERGE_KEEP;
			}
		}
		/* Counted in history's `received` on either side: counted. */
		if (t == INBOX_EVENTS && admitted(cur))
			out[EV_ADMITTED] = cur[EV_ADMITTED];
	}
	if (buf_append(ledger, din, sizeof din) == -1) {
		j->failed = 1;
		return INBOX_MERGE_KEEP;
	}
	return INBOX_MERGE_PUT;
}

static enum inbox_merge
decide(enum inbox_table t, const struct inbox_value *in,
    const struct inbox_value *cur, const void *led, size_t led_len,
    struct inbox_value *out, struct buf *ledger, void *arg)
{
	struct job *j = arg;
	const struct inbox_table_info *ti = inbox_table_info(t);

	switch (t) {
	case INBOX_EVENTS:
	case INBOX_CURSORS:
		return decide_recorded(j, t, in, cur, led, led_len, out, ledger);
	case INBOX_OBJECTS:
		/* Each clock the later one: they only move forward. */
		if (cur != NULL) {
			out[OB_CREATED] = *later(&in[OB_CREATED], &cur[OB_CREATED]);
			out[OB_UPDATED] = *later(&in[OB_UPDATED], &cur[OB_UPDATED]);
			out[OB_DONE_AT] = *later(&in[OB_DONE_AT], &cur[OB_DONE_AT]);
		}
		break;
	case INBOX_HISTORY:
		/* Each bucket the larger count (operator/copy.h, docs/moving.md). */
		if (cur != NULL && cur[HI_N].type == INBOX_V_INT &&
		    in[HI_N].type == INBOX_V_INT && cur[HI_N].i >= in[HI_N].i)
			out[HI_N] = cur[HI_N];
		break;
	default:	/* INBOX_RUNS: a run's record never changes */
		if (cur != NULL)
			memcpy(out, cur, (size_t)ti->ncols * sizeof *out);
		break;
	}
	if (cur != NULL && rows_eq(out, cur, ti->ncols)) {
		if (rows_eq(in, cur, ti->ncols))
			j->same++;
		else
			j->kept++;
		return INBOX_MERGE_KEEP;
	}
	return INBOX_MERGE_PUT;
}

static void
after_free(struct job *j)
{
	int k;

	for (k = 0; k < MAX_KEY; k++)
		free((void *)j->after[k].p);
	memset(j->after, 0, sizeof j->after);
	j->has_after = 0;
}

/* Keep the last row's key: the next page starts after it. */
static int
after_keep(struct job *j, const struct inbox_value *row)
{
	const struct inbox_table_info *ti = inbox_table_info(j->t);
	void *p;
	int k;

	after_free(j);
	for (k = 0; k < ti->nkey && k < MAX_KEY; k++) {
		j->after[k] = row[k];
		j->after[k].p = NULL;
		if (row[k].type != INBOX_V_TEXT && row[k].type != INBOX_V_BLOB)
			continue;
		if ((p = malloc(row[k].len + 1)) == NULL)
			return -1;
		if (row[k].len > 0)
			memcpy(p, row[k].p, row[k].len);
		j->after[k].p = p;
	}
	j->has_after = 1;
	return 0;
}

/* Note a row the destination cannot hold: its key, escaped, in r. */
static void
left_out(struct job *j, const struct inbox_value *row, const struct buf *why)
{
	const struct inbox_table_info *ti = inbox_table_info(j->t);
	struct copy_result *r = j->r;
	size_t len = strlen(r->left_out);
	char key[200], one[80];
	int k;

	j->r->t[j->t].left_out++;
	if (r->left_out_why[0] == '\0')
		snprintf(r->left_out_why, sizeof r->left_out_why, "%s: %s",
		    ti->name, why->data != NULL ? why->data : "");
	snprintf(key, sizeof key, "%s ", ti->name);
	for (k = 0; k < ti->nkey; k++) {
		if (row[k].type == INBOX_V_INT)
			snprintf(one, sizeof one, "%lld", (long long)row[k].i);
		else
			(void)util_escape(row[k].p != NULL ? row[k].p : "",
			    row[k].len, one, sizeof one);
		snprintf(key + strlen(key), sizeof key - strlen(key), "%s%s",
		    k ? "/" : "", one);
	}
	/* As many as fit, then "…" once. */
	if (len + strlen(key) + 8 < sizeof r->left_out)
		snprintf(r->left_out + len, sizeof r->left_out - len, "%s%s",
		    len ? ", " : "", key);
	else if (len < 4 || strcmp(r->left_out + len - 3, "...") != 0)
		snprintf(r->left_out + len, sizeof r->left_out - len, ", ...");
}

/* The rows of a page the destination can hold, into held (n × ncols
 * values pointing at the page's); the others noted.  Returns how many. */
static size_t
holdable(struct job *j, const struct inbox_value *rows, size_t n,
    struct inbox_value *held)
{
	const struct inbox_table_info *ti = inbox_table_info(j->t);
	size_t i, m = 0, w = (size_t)ti->ncols;
	struct buf why;

	buf_init(&why, 1024);
	for (i = 0; i < n; i++) {
		if (j->dst != NULL && !inbox_table_holds(j->dst, j->t,
		    &rows[i * w], &why)) {
			left_out(j, &rows[i * w], &why);
			continue;
		}
		memcpy(&held[m++ * w], &rows[i * w], w * sizeof *held);
	}
	buf_free(&why);
	return m;
}

/* One page read from the source (its read is over): write it. */
static int
page(const struct inbox_value *rows, size_t n, void *arg)
{
	struct job *j = arg;
	const struct inbox_table_info *ti = inbox_table_info(j->t);
	struct copy_count *c = &j->r->t[j->t];
	struct inbox_value *held;
	enum inbox_status s = INBOX_OK;
	int64_t put = 0;
	size_t m;
	int tries;

	if ((held = calloc(n * (size_t)ti->ncols, sizeof *held)) == NULL) {
		j->failed = 1;
		buf_reset(j->err);
		(void)buf_printf(j->err, "copy: out of memory");
		return -1;
	}
	m = holdable(j, rows, n, held);
	/* A busy destination (a lock past its timeout, a serialization
	 * failure) is asked again: the batch is decided anew each time. */
	for (tries = 0; tries < COPY_TRIES; tries++) {
		j->same = j->kept = j->recorded = 0;
		put = 0;
		if (j->dst == NULL || m == 0) {
			/* A dry run into nothing: every row would be new. */
			put = (int64_t)m;
			s = INBOX_OK;
		} else {
			s = inbox_table_merge(j->dst, j->t, held, m, decide, j,
			    j->o->dry, &put, j->err);
		}
		if (s != INBOX_BUSY || j->failed)
			break;
	}
	free(held);
	if (s != INBOX_OK) {
		j->failed = 1;
		return -1;
	} else if (j->failed) {
		buf_reset(j->err);
		(void)buf_printf(j->err, "copy: out of memory");
		return -1;
	}
	c->read += (int64_t)n;
	c->written += put - j->recorded;
	c->same += j->same;
	c->kept += j->kept;
	if (after_keep(j, &rows[(n - 1) * (size_t)ti->ncols]) == -1) {
		j->failed = 1;
		buf_reset(j->err);
		(void)buf_printf(j->err, "copy: out of memory");
		return -1;
	}
	if (j->h != NULL && j->h->progress != NULL)
		j->h->progress(j->h->arg, j->t, c);
	return 0;
}

int
copy_run(struct inbox *src, struct inbox *dst, const struct copy_options *o,
    const struct copy_hooks *h, struct copy_result *r, struct buf *err)
{
	static const enum inbox_table order[] = {
		INBOX_OBJECTS, INBOX_CURSORS, INBOX_EVENTS, INBOX_HISTORY,
		INBOX_RUNS,
	};
	struct job j;
	size_t k, rows = o->batch_rows ? o->batch_rows : COPY_BATCH_ROWS;
	size_t bytes = o->batch_bytes ? o->batch_bytes : COPY_BATCH_BYTES;
	int64_t left = 0;
	struct inbox_page want;
	int rc = 0;

	memset(r, 0, sizeof *r);
	memset(&j, 0, sizeof j);
	j.dst = dst;
	j.o = o;
	j.h = h;
	j.r = r;
	j.err = err;
	if (sodium_init() < 0) {
		buf_reset(err);
		(void)buf_printf(err, "copy: libsodium failed to initialise");
		return -1;
	}
	for (k = 0; k < sizeof order / sizeof order[0] && rc == 0; k++) {
		j.t = order[k];
		after_free(&j);
		do {
			want = (struct inbox_page){ .t = j.t,
			    .after = j.has_after ? j.after : NULL,
			    .max_rows = rows, .max_bytes = bytes };
			if (inbox_table_read(src, &want, page, &j, err) !=
			    INBOX_OK || j.failed) {
				rc = -1;
				break;
			}
		} while (want.n == rows || want.full);
	}
	after_free(&j);
	if (rc == -1) {
		(void)buf_printf(err, " (what was written stays; run it again)");
		return -1;
	}
	for (k = 0; k < INBOX_NTABLES; k++)
		left += r->t[k].left_out;
	if (left > 0) {
		buf_reset(err);
		(void)buf_printf(err, "%lld row%s left out, every other one "
		    "copied (%s): %s; docs/moving.md says what to do with them",
		    (long long)left, left == 1 ? "" : "s", r->left_out_why,
		    r->left_out);
		return -1;
	}
	return 0;
}

int
copy_open_destination(const struct config *c, const char *to, int dry,
    struct inbox **dst, struct buf *err)
{
	struct inbox_options io = { c->busy_timeout_ms, c->synchronous ==
	    CONFIG_SYNC_NORMAL ? INBOX_SYNC_NORMAL : INBOX_SYNC_FULL, 0, 0, 0, 0,
	    0 };
	struct stat a, b;

	*dst = NULL;
	if (stat(c->database, &a) == 0 && stat(to, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 1;
	/* A PostgreSQL inbox named by the same URI (another spelling of the
	 * same database is not caught: its copy changes nothing). */
	if (!inbox_is_file(to) && strcmp(c->database, to) == 0)
		return 1;
	if (dry && strstr(to, "://") == NULL && access(to, F_OK) == -1)
		return 0;
	return inbox_open(to, &io, dst, err) == INBOX_OK ? 0 : -1;
}

void
copy_print(FILE *f, const struct copy_result *r, int dry)
{
	int k;

	for (k = 0; k < INBOX_NTABLES; k++)
		fprintf(f, "%s%s: %lld read, %lld %s, %lld the same, %lld kept "
		    "as the destination has them%s%.0lld%s\n", dry ? "dry run: " :
		    "", inbox_table_info(k)->name, (long long)r->t[k].read,
		    (long long)r->t[k].written, dry ? "to write" : "written",
		    (long long)r->t[k].same, (long long)r->t[k].kept,
		    r->t[k].left_out ? ", " : "", (long long)r->t[k].left_out,
		    r->t[k].left_out ? " left out (the destination cannot hold "
		    "them)" : "");
}
