/*
 * event: field extraction with cJSON.  See store/event.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/common/util.h"
#include "lib/store/event.h"

int
event_is_relay(const char *webhook_id)
{
	return strncmp(webhook_id, "in_", 3) == 0;
}

/*
 * Member `name` of `obj`, the LAST one when the key repeats: PHP's
 * json_decode, Python's json and JavaScript's JSON.parse all keep the last
 * duplicate, and the handler reads the body with one of those, so order
 * and staleness must be decided on the values it will see.  (cJSON's own
 * lookup returns the first.)  NULL when absent.
 */
static const cJSON *
member(const cJSON *obj, const char *name)
{
	const cJSON *it, *found = NULL;

	cJSON_ArrayForEach(it, obj)
		if (it->string != NULL && strcmp(it->string, name) == 0)
			found = it;
	return found;
}

/* A bounded copy of a JSON string member, or NULL (noting why). */
static char *
string_field(const cJSON *obj, const char *name, struct event_fields *f,
    int *oom)
{
	const cJSON *it = member(obj, name);
	char *s;

	if (!cJSON_IsString(it) || it->valuestring == NULL)
		return NULL;
	if (strlen(it->valuestring) > EVENT_FIELD_MAX) {
		if (f->note == NULL)
			f->note = "a field is longer than EVENT_FIELD_MAX; left out";
		return NULL;
	}
	if ((s = strdup(it->valuestring)) == NULL)
		*oom = 1;
	return s;
}

static void
instant_field(const cJSON *obj, const char *name, char out[INSTANT_SIZE],
    struct event_fields *f, const char *bad)
{
	const cJSON *it = member(obj, name);

	out[0] = '\0';
	if (it == NULL || cJSON_IsNull(it))
		return;
	if (!cJSON_IsString(it) || it->valuestring == NULL ||
	    instant_parse(it->valuestring, strlen(it->valuestring), out) == -1) {
		out[0] = '\0';
		if (f->note == NULL)
			f->note = bad;
	}
}

int
event_extract(const char *webhook_id, const char *body, size_t len,
    struct event_fields *f)
{
	const cJSON *data, *id;
	const char *end = NULL;
	cJSON *root = NULL;
	int oom = 0;

	memset(f, 0, sizeof *f);
	if (event_is_relay(webhook_id) || len == 0)
		return 0;
	if (len > EVENT_EXTRACT_MAX) {
		f->note = "body over 512 KiB (EVENT_EXTRACT_MAX): stored without "
		    "fields, no event clock";
		return 0;
	}
	/* cJSON stops at a NUL byte; such a body is simply not JSON to us. */
	if (memchr(body, '\0', len) != NULL)
		return 0;
	/* Better no fields than cut ones: an object key cut at a NUL could
	 * collide with another object's. */
	if (util_json_has_escaped_nul(body, len)) {
		f->note = "body has a \\u0000 escape; stored without fields, "
		    "no event clock, no object key";
		return 0;
	}
	/* cJSON stops after the first value; a body with more after it (two
	 * objects, trailing garbage) is not JSON, so nothing is extracted. */
	if ((root = cJSON_ParseWithLengthOpts(body, len, &end, 0)) == NULL ||
	    !cJSON_IsObject(root))
		goto out;
	for (; end < body + len; end++)
		if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\r')
			goto out;

	f->type = string_field(root, "type", f, &oom);
	f->created_at_raw = string_field(root, "createdAt", f, &oom);
	instant_field(root, "createdAt", f->created_at, f,
	    "createdAt is not an ISO-8601 instant; no event clock");

	data = member(root, "data");
	if (!cJSON_IsObject(data))
		goto out;
	f->object_type = string_field(data, "object", f, &oom);
	id = member(data, "id");
	if (cJSON_IsString(id)) {
		f->object_id = string_field(data, "id", f, &oom);
	} else if (cJSON_IsNumber(id)) {
		double d = id->valuedouble;
		/* 2^53: past it, distinct ids collapse into one double. */
		if (d > -9007199254740992.0 && d < 9007199254740992.0 &&
		    d == (double)(long long)d) {
			char tmp[32];
			snprintf(tmp, sizeof tmp, "%lld", (long long)d);
			if ((f->object_id = strdup(tmp)) == NULL)
				oom = 1;
		} else if (f->note == NULL) {
			f->note = "data.id is a number that is not an exact "
			    "integer below 2^53; no object key";
		}
	}
	instant_field(data, "updated_at", f->updated_at, f,
	    "data.updated_at is not an ISO-8601 instant; no object version");
	f->truncated = cJSON_IsTrue(member(data, "object_truncated"));
	/* An object key needs both halves. */
	if (f->object_type == NULL || f->object_id == NULL) {
		free(f->object_type);
		free(f->object_id);
		f->object_type = f->object_id = NULL;
	}
out:
	cJSON_Delete(root);
	return oom ? -1 : 0;
}

void
event_fields_free(struct event_fields *f)
{
	free(f->type);
	free(f->created_at_raw);
	free(f->object_type);
	free(f->object_id);
	memset(f, 0, sizeof *f);
}
