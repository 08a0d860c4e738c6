/*
 * paging: sync and recover over the API's paginated lists (drain/paging.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "lib/drain/api.h"
#include "lib/store/event.h"
#include "lib/common/instant.h"
#include "lib/drain/paging.h"
#include "lib/common/util.h"

/* Events one page may hold: a page of PAGING_LIMIT, with room for an API
 * that sends more than it was asked for. */
#define BATCH_MAX	(PAGING_LIMIT * 5)

/* One page's worth of deliveries: bodies and fields owned here. */
struct batch {
	struct inbox_delivery	d[BATCH_MAX];
	struct event_fields	f[BATCH_MAX];
	char			*bodies[BATCH_MAX];
	char			 ids[BATCH_MAX][64];
	size_t			 n;
};

/* What sync and recover share while they walk. */
struct walk {
	const char		*what;		/* "sync clients", "recover" */
	struct api		*api;
	struct inbox		*ib;
	struct batch		*b;
	const struct paging_hooks *h;
	struct paging_progress	*p;
	/* sync only */
	const char		*cursor_name;
	const char		*after;		/* updated_after of this query */
	char			*max_raw;	/* newest updated_at seen, as sent */
	char			 max_norm[INSTANT_SIZE];
};

/* A page's array, with the next cursor; 0 to go on, -1 to stop. */
typedef int (*page_fn)(struct walk *w, const cJSON *data, const char *next);

enum hook { PROBLEM, DETAIL };

static void say(const struct paging_hooks *h, enum hook which,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void
say(const struct paging_hooks *h, enum hook which, const char *fmt, ...)
{
	void (*fn)(void *, const char *);
	va_list ap;
	char *text;

	fn = h == NULL ? NULL : which == PROBLEM ? h->problem : h->detail;
	if (fn == NULL)
		return;
	va_start(ap, fmt);
	if (vasprintf(&text, fmt, ap) == -1)
		text = NULL;
	va_end(ap);
	fn(h->arg, text != NULL ? text : "out of memory");
	free(text);
}

static void
batch_free(struct batch *b)
{
	size_t i;

	for (i = 0; i < b->n; i++) {
		event_fields_free(&b->f[i]);
		free(b->bodies[i]);
	}
	b->n = 0;
}

/* Add one event (a JSON object we serialise: there is no signature to keep
 * byte-exact) under webhook_id. */
static int
batch_add(struct batch *b, const char *webhook_id, const cJSON *event)
{
	size_t i = b->n;

	if (i == BATCH_MAX ||
	    (b->bodies[i] = cJSON_PrintUnformatted(event)) == NULL)
		return -1;
	snprintf(b->ids[i], sizeof b->ids[i], "%s", webhook_id);
	if (event_extract(b->ids[i], b->bodies[i], strlen(b->bodies[i]),
	    &b->f[i]) == -1) {
		free(b->bodies[i]);
		return -1;
	}
	b->d[i].webhook_id = b->ids[i];
	b->d[i].webhook_timestamp = (int64_t)time(NULL);
	b->d[i].secret_fp = "api";	/* not a webhook: it came from the API */
	b->d[i].body = b->bodies[i];
	b->d[i].body_len = strlen(b->bodies[i]);
	b->d[i].fields = &b->f[i];
	b->n++;
	return 0;
}

void
paging_sync_id(const char *kind, const char *id, const char *version,
    char out[64])
{
	unsigned char h[12];
	char hex[25];
	crypto_generichash_state st;

	crypto_generichash_init(&st, NULL, 0, sizeof h);
	crypto_generichash_update(&st, (const unsigned char *)kind, strlen(kind) + 1);
	crypto_generichash_update(&st, (const unsigned char *)id, strlen(id) + 1);
	crypto_generichash_update(&st, (const unsigned char *)version,
	    strlen(version));
	crypto_generichash_final(&st, h, sizeof h);
	sodium_bin2hex(hex, sizeof hex, h, sizeof h);
	snprintf(out, 64, "sync_%s", hex);
}

int
paging_page_parts(const cJSON *page, const cJSON **data, const char **next)
{
	const cJSON *nc;

	*data = cJSON_GetObjectItemCaseSensitive(page, "data");
	nc = cJSON_GetObjectItemCaseSensitive(page, "next_cursor");
	*next = cJSON_IsString(nc) && nc->valuestring[0] ? nc->valuestring : NULL;
	return cJSON_IsArray(*data) && (nc == NULL || cJSON_IsNull(nc) ||
	    cJSON_IsString(nc)) ? 0 : -1;
}

/* GET with a few polite waits on Retry-After (a CLI run can afford them). */
static enum api_status
get_patiently(struct walk *w, const char *path, cJSON **json, struct buf *err)
{
	enum api_status as = API_RETRY;
	int64_t ra;
	int i;

	for (i = 0; i < PAGING_TRIES; i++) {
		as = api_get(w->api, path, json, &ra, err);
		if (as != API_RETRY)
			return as;
		if (ra <= 0)
			ra = 1LL << i;
		if (ra > PAGING_WAIT_MAX_S)
			break;
		say(w->h, DETAIL, "waiting %llds: %s", (long long)ra, err->data);
		sleep((unsigned)ra);
	}
	return as;
}

/*
 * GET `base` (a path with its query), then base + "&cursor=" + each
 * next_cursor, handing every page's array to fn.  `page` is where to
 * start (NULL: the first page).  Returns 0 when the last page was handled,
 * -1 after a failure (reported).
 */
static int
walk_pages(struct walk *w, const char *base, const char *page, page_fn fn)
{
	struct buf path, err;
	cJSON *json = NULL;
	char *cursor = NULL;
	const cJSON *data;
	const char *next;
	int rc = -1;

	buf_init(&path, 16384);
	buf_init(&err, BUF_ERR_MAX);
	if (page != NULL && (cursor = strdup(page)) == NULL)
		goto out;
	for (;;) {
		buf_reset(&path);
		if (buf_append(&path, base, strlen(base)) == -1 ||
		    (cursor != NULL && (buf_printf(&path, "&cursor=") == -1 ||
		    api_escape(w->api, cursor, &path) == -1))) {
			say(w->h, PROBLEM, "%s: query too long", w->what);
			goto out;
		}
		cJSON_Delete(json);
		json = NULL;
		if (get_patiently(w, path.data, &json, &err) != API_OK ||
		    paging_page_parts(json, &data, &next) == -1) {
			say(w->h, PROBLEM, "%s: %s", w->what, err.len ? err.data :
			    "the page is not {data, next_cursor}");
			goto out;
		}
		if (fn(w, data, next) == -1)
			goto out;
		/* An API that hands back the cursor it was given would page
		 * forever. */
		if (next != NULL && cursor != NULL && strcmp(next, cursor) == 0) {
			say(w->h, PROBLEM, "%s: the API returned the same "
			    "next_cursor again; stopping", w->what);
			goto out;
		}
		free(cursor);
		cursor = NULL;
		if (next == NULL)
			break;
		if ((cursor = strdup(next)) == NULL)
			goto out;
	}
	rc = 0;
out:
	cJSON_Delete(json);
	free(cursor);
	buf_free(&path);
	buf_free(&err);
	return rc;
}

/* Store one page's batch (with the cursor, for sync) in one transaction. */
static int
walk_store(struct walk *w, const char *after, const char *next, int nitems,
    const char *at)
{
	struct inbox_batch store = { .d = w->b->d, .n = w->b->n,
	    .cursor_name = w->cursor_name, .cursor_updated_after = after,
	    .cursor_page = next };
	struct buf err;
	int64_t stored = 0;
	int rc = 0;

	buf_init(&err, BUF_ERR_MAX);
	if (inbox_store_batch(w->ib, &store, &err) == INBOX_OK) {
		stored = store.stored;
	} else {
		say(w->h, PROBLEM, "%s", err.data);
		rc = -1;
	}
	batch_free(w->b);
	buf_free(&err);
	if (rc == -1)
		return -1;
	w->p->pages++;
	w->p->stored += stored;
	if (w->h != NULL && w->h->progress != NULL)
		w->h->progress(w->h->arg, w->p, w->what, at);
	say(w->h, DETAIL, "page %lld: %d items, %lld new",
	    (long long)w->p->pages, nitems, (long long)stored);
	return 0;
}

/* One synced object as an event under its stable id; 0 or -1 (out of
 * memory).  norm is its normalised updated_at. */
static int
sync_one(struct walk *w, const cJSON *it, const char *kind, const char *idtext,
    const cJSON *upd, const char *norm)
{
	char type[300], wid[64];
	cJSON *ev;
	int bad;

	paging_sync_id(kind, idtext, norm, wid);
	snprintf(type, sizeof type, "%s.synced", kind);
	/* The object's updated_at is the event clock and the object
	 * version: both clocks (docs/DESIGN.md "Stale rule"). */
	if ((ev = cJSON_CreateObject()) == NULL)
		return -1;
	cJSON_AddStringToObject(ev, "id", wid);
	cJSON_AddStringToObject(ev, "type", type);
	cJSON_AddStringToObject(ev, "createdAt", upd->valuestring);
	cJSON_AddItemReferenceToObject(ev, "data", (cJSON *)it);
	bad = batch_add(w->b, wid, ev) == -1;
	cJSON_Delete(ev);
	if (bad) {
		say(w->h, PROBLEM, "%s: out of memory", w->what);
		return -1;
	}
	if (strcmp(norm, w->max_norm) > 0) {
		memcpy(w->max_norm, norm, INSTANT_SIZE);
		free(w->max_raw);
		if ((w->max_raw = strdup(upd->valuestring)) == NULL)
			return -1;
	}
	return 0;
}

/* sync: each object becomes a synthetic event. */
static int
sync_page(struct walk *w, const cJSON *data, const char *next)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, data) {
		const cJSON *kind = cJSON_GetObjectItemCaseSensitive(it, "object");
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *upd = cJSON_GetObjectItemCaseSensitive(it, "updated_at");
		char idtext[300], norm[INSTANT_SIZE];

		w->p->items++;
		if (!cJSON_IsString(kind) || !cJSON_IsString(upd) ||
		    instant_parse(upd->valuestring, strlen(upd->valuestring),
		    norm) == -1 || !(cJSON_IsString(id) || cJSON_IsNumber(id)) ||
		    strlen(kind->valuestring) > 256) {
			say(w->h, PROBLEM, "%s: skipped an object without "
			    "object, id or updated_at", w->what);
			continue;
		}
		if (cJSON_IsString(id))
			snprintf(idtext, sizeof idtext, "%s", id->valuestring);
		else
			snprintf(idtext, sizeof idtext, "%.0f", id->valuedouble);
		if (sync_one(w, it, kind->valuestring, idtext, upd, norm) == -1)
			return -1;
	}
	/* The cursor moves with the page, in the same transaction: a killed
	 * sync resumes at the first page not stored.  Within a query, follow
	 * next_cursor; after its last page, the next query starts after the
	 * newest updated_at seen. */
	return walk_store(w, next != NULL ? w->after :
	    (w->max_raw != NULL ? w->max_raw : w->after), next,
	    cJSON_GetArraySize(data), w->max_norm[0] ? w->max_norm : NULL);
}

/* recover: each event is stored under its own id. */
static int
recover_page(struct walk *w, const cJSON *data, const char *next)
{
	const cJSON *it;
	char last[INSTANT_SIZE] = "";

	(void)next;
	cJSON_ArrayForEach(it, data) {
		const cJSON *id = cJSON_GetObjectItemCaseSensitive(it, "id");
		const cJSON *ca = cJSON_GetObjectItemCaseSensitive(it, "createdAt");

		w->p->items++;
		if (!cJSON_IsString(id) || id->valuestring[0] == '\0' ||
		    strlen(id->valuestring) > 63) {
			say(w->h, PROBLEM, "recover: skipped an event without a "
			    "usable id");
			continue;
		}
		if (batch_add(w->b, id->valuestring, it) == -1) {
			say(w->h, PROBLEM, "recover: out of memory");
			return -1;
		}
		if (cJSON_IsString(ca) && instant_parse(ca->valuestring,
		    strlen(ca->valuestring), last) == -1)
			last[0] = '\0';
	}
	return walk_store(w, NULL, NULL, cJSON_GetArraySize(data),
	    last[0] ? last : NULL);
}

/* Start a walk: progress zeroed and timed, the page batch allocated. */
static int
walk_init(struct walk *w, const char *what, struct api *a, struct inbox *ib,
    const struct paging_hooks *h, struct paging_progress *p)
{
	memset(w, 0, sizeof *w);
	memset(p, 0, sizeof *p);
	w->what = what;
	w->api = a;
	w->ib = ib;
	w->h = h;
	w->p = p;
	p->start = util_mono_ns();
	p->to_ns = util_now_ns();
	if ((w->b = calloc(1, sizeof *w->b)) == NULL) {
		say(h, PROBLEM, "%s: out of memory", what);
		return -1;
	}
	return 0;
}

static void
walk_free(struct walk *w)
{
	if (w->b != NULL)
		batch_free(w->b);
	free(w->b);
	free(w->max_raw);
}

int
paging_sync(struct api *a, struct inbox *ib, const char *resource,
    const struct paging_hooks *h, struct paging_progress *p)
{
	char *after = NULL, *page = NULL, cname[300], what[300];
	char norm[INSTANT_SIZE];
	struct walk w;
	struct buf err, base;
	int rc = -1;

	snprintf(cname, sizeof cname, "sync:%s", resource);
	snprintf(what, sizeof what, "sync %s", resource);
	buf_init(&err, BUF_ERR_MAX);
	buf_init(&base, 8192);
	if (walk_init(&w, what, a, ib, h, p) == -1)
		goto out;
	w.cursor_name = cname;
	if (inbox_cursor_get(ib, cname, &after, &page, &err) != INBOX_OK) {
		say(h, PROBLEM, "%s", err.data);
		goto out;
	}
	w.after = after;
	if (after != NULL && instant_parse(after, strlen(after), norm) == 0)
		(void)instant_to_ns(norm, &p->from_ns);
	if (buf_printf(&base, "%s?limit=%d", resource, PAGING_LIMIT) == -1 ||
	    (after != NULL && (buf_printf(&base, "&updated_after=") == -1 ||
	    api_escape(a, after, &base) == -1)) ||
	    walk_pages(&w, base.data, page, sync_page) == -1)
		goto out;
	rc = 0;
out:
	walk_free(&w);
	free(after);
	free(page);
	buf_free(&err);
	buf_free(&base);
	return rc;
}

int
paging_recover(struct api *a, struct inbox *ib, int64_t since_ns,
    const struct paging_hooks *h, struct paging_progress *p)
{
	char since[INSTANT_SIZE];
	struct walk w;
	struct buf base;
	int rc = -1;

	buf_init(&base, 8192);
	if (walk_init(&w, "recover", a, ib, h, p) == -1)
		goto out;
	p->from_ns = since_ns;
	if (instant_format(since_ns, since) == -1 ||
	    buf_printf(&base, "events?limit=%d&since=", PAGING_LIMIT) == -1 ||
	    api_escape(a, since, &base) == -1 ||
	    walk_pages(&w, base.data, NULL, recover_page) == -1)
		goto out;
	rc = 0;
out:
	walk_free(&w);
	buf_free(&base);
	return rc;
}
