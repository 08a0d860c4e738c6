/*
 * refetch: a truncated event's object from the API (drain/refetch.h).
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/drain/api.h"
#include "lib/common/instant.h"
#include "lib/drain/refetch.h"

#define NS	1000000000LL

/* Is obj the object asked for: a JSON object whose id is object_id (a
 * string as stored, or a number equal to the stored digits)? */
static int
is_object(const cJSON *obj, const char *object_id)
{
	const cJSON *id = cJSON_GetObjectItemCaseSensitive(obj, "id");

	return cJSON_IsObject(obj) && id != NULL &&
	    ((cJSON_IsString(id) && strcmp(id->valuestring, object_id) == 0) ||
	    (cJSON_IsNumber(id) && (double)strtoll(object_id, NULL, 10) ==
	    id->valuedouble));
}

/* The stored event with `data` replaced by obj (taken over, even on
 * failure).  Returns the new text (free it), or NULL with why set. */
static char *
replace_data(const struct inbox_event *e, cJSON *obj, struct buf *why)
{
	cJSON *body;
	char *text = NULL;

	body = cJSON_ParseWithLength(e->body.data ? e->body.data : "", e->body.len);
	if (!cJSON_IsObject(body)) {
		(void)buf_printf(why, "refetch: the stored event is not a JSON object");
		cJSON_Delete(obj);
		cJSON_Delete(body);
		return NULL;
	}
	cJSON_DeleteItemFromObjectCaseSensitive(body, "data");
	cJSON_AddItemToObject(body, "data", obj);
	if ((text = cJSON_PrintUnformatted(body)) == NULL)
		(void)buf_printf(why, "refetch: out of memory");
	cJSON_Delete(body);
	return text;
}

/* GET the object: API_OK with *obj, or another status with why (and
 * alarm, r->pause_until) set as refetch_event describes. */
static enum api_status
fetch(struct refetch *r, const struct config *c, const struct inbox_event *e,
    cJSON **obj, int64_t *retry_after_s, struct buf *why, struct buf *alarm)
{
	char path[1024];
	struct buf url, err;
	enum api_status as = API_BAD;

	buf_init(&url, 4096);
	buf_init(&err, BUF_ERR_MAX);
	if (r->api == NULL) {
		if (r->open_failed || api_open(c, &r->api, &err) == -1) {
			if (!r->open_failed)
				(void)buf_printf(alarm, "refetch: %s", err.data);
			r->open_failed = 1;
			(void)buf_printf(why, "refetch: the API client is not configured");
			goto out;
		}
		api_set_waiter(r->api, r->waiter);
	}
	if (r->pause_until > util_mono_ns()) {
		*retry_after_s = (r->pause_until - util_mono_ns()) / NS + 1;
		(void)buf_printf(why, "refetch: the API asked us to wait");
		goto out;
	}
	if (config_resource_path(c, e->object_type, path, sizeof path) == -1 ||
	    buf_append(&url, path, strlen(path)) == -1 ||
	    buf_append(&url, "/", 1) == -1 ||
	    api_escape(r->api, e->object_id, &url) == -1) {
		(void)buf_printf(why, "refetch: resource path too long");
		goto out;
	}
	as = api_get(r->api, url.data, obj, retry_after_s, &err);
	if (as == API_OK && !is_object(*obj, e->object_id)) {
		(void)buf_printf(why, "refetch: GET %s: not the object asked for",
		    url.data);
		cJSON_Delete(*obj);
		*obj = NULL;
		as = API_BAD;
	} else if (as != API_OK && as != API_NOT_FOUND) {
		if (as == API_RETRY && *retry_after_s > 0)
			r->pause_until = util_mono_ns() + *retry_after_s * NS;
		if (as == API_AUTH)
			(void)buf_printf(alarm, "refetch: %s", err.data);
		(void)buf_printf(why, "refetch: %s", err.data);
	}
out:
	buf_free(&url);
	buf_free(&err);
	return as;
}

enum refetch_result
refetch_event(struct refetch *r, struct inbox *ib, const struct config *c,
    struct inbox_event *e, char **out, int64_t *retry_after_s,
    struct buf *why, struct buf *alarm)
{
	struct buf err;
	cJSON *obj = NULL;
	const cJSON *upd;
	enum refetch_result res = REFETCH_FAILED;
	enum api_status as;
	int stale = 0;

	*out = NULL;
	*retry_after_s = 0;
	buf_reset(alarm);
	/* The API is the default source's provider's: a named source's
	 * objects are another provider's (docs/DESIGN.md "Sources"). */
	if ((e->source[0] != '\0' && strcmp(e->source, INBOX_DEFAULT_SOURCE) !=
	    0) ||
	    (!e->truncated && !config_wants_refetch(c, e->type, e->object_type)) ||
	    e->object_type == NULL || e->object_id == NULL ||
	    (c->api_url == NULL && !config_wants_refetch(c, e->type,
	    e->object_type)))
		return REFETCH_NONE;
	buf_init(&err, BUF_ERR_MAX);
	buf_reset(why);
	as = fetch(r, c, e, &obj, retry_after_s, why, alarm);
	if (as == API_NOT_FOUND)
		res = REFETCH_GONE;
	if (as != API_OK)
		goto out;
	upd = cJSON_GetObjectItemCaseSensitive(obj, "updated_at");
	e->object_version[0] = '\0';
	if (cJSON_IsString(upd) && instant_parse(upd->valuestring,
	    strlen(upd->valuestring), e->object_version) == -1)
		e->object_version[0] = '\0';
	if (e->object_version[0] != '\0' && !e->requeued) {
		/* Objects from the API carry updated_at as both clocks. */
		struct inbox_event probe = *e;
		memcpy(probe.created_at, e->object_version, INSTANT_SIZE);
		memcpy(probe.updated_at, e->object_version, INSTANT_SIZE);
		if (inbox_is_stale(ib, &probe, &stale, &err) != INBOX_OK) {
			(void)buf_printf(why, "%s", err.data);
			goto out;
		}
		if (stale) {
			res = REFETCH_STALE;
			goto out;
		}
	}
	*out = replace_data(e, obj, why);
	obj = NULL;	/* now owned by replace_data */
	if (*out != NULL)
		res = REFETCH_OK;
out:
	if (res != REFETCH_OK)
		e->object_version[0] = '\0';
	cJSON_Delete(obj);
	buf_free(&err);
	return res;
}

void
refetch_close(struct refetch *r)
{
	api_close(r->api);
	r->api = NULL;
}
