/*
 * fuzz/event: lib/store/event.c — event_extract on a body as it arrives.
 *
 * Input: the body, whole.
 *
 * Properties (abort when broken):
 * - extraction never fails (no allocation fails here) and what it gives
 *   is within its bounds: strings of at most EVENT_FIELD_MAX bytes,
 *   instants "" or in the normalised form (parsing to themselves), an
 *   object key with both halves or neither;
 * - what it gives is what the body says, read again with cJSON here:
 *   type and data.object as strings within the bound, data.id as its
 *   string or as the exact integer below 2^53 it is;
 * - the same body under an inbound relay's id ("in_…") yields nothing;
 * - trailing blanks change nothing (the same fields again), and any other
 *   byte after the JSON value leaves no field.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/store/event.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

#define CHECK(cond)	do { if (!(cond)) abort(); } while (0)

static int
same_str(const char *a, const char *b)
{
	return a == b || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

static int
empty(const struct event_fields *f)
{
	return f->type == NULL && f->created_at_raw == NULL &&
	    f->created_at[0] == '\0' && f->object_type == NULL &&
	    f->object_id == NULL && f->updated_at[0] == '\0' &&
	    f->truncated == 0;
}

static void
check_instant(const char *s)
{
	char again[INSTANT_SIZE];

	if (s[0] == '\0')
		return;
	CHECK(strlen(s) == INSTANT_LEN);
	CHECK(instant_parse(s, INSTANT_LEN, again) == 0 &&
	    strcmp(again, s) == 0);
}

static void
check_fields(const struct event_fields *f)
{
	CHECK(f->type == NULL || strlen(f->type) <= EVENT_FIELD_MAX);
	CHECK(f->created_at_raw == NULL ||
	    strlen(f->created_at_raw) <= EVENT_FIELD_MAX);
	CHECK(f->object_type == NULL || strlen(f->object_type) <= EVENT_FIELD_MAX);
	CHECK(f->object_id == NULL || strlen(f->object_id) <= EVENT_FIELD_MAX);
	CHECK((f->object_type == NULL) == (f->object_id == NULL));
	CHECK(f->truncated == 0 || f->truncated == 1);
	check_instant(f->created_at);
	check_instant(f->updated_at);
	/* A created_at comes from a createdAt string: one within the bound
	 * is kept raw too. */
	if (f->created_at[0] != '\0' && f->created_at_raw != NULL) {
		char again[INSTANT_SIZE];
		CHECK(instant_parse(f->created_at_raw, strlen(f->created_at_raw),
		    again) == 0 && strcmp(again, f->created_at) == 0);
	}
}

static const cJSON *last_item(const cJSON *, const char *);

/* A string member as event.c keeps it: NULL unless a string within the
 * bound. */
static const char *
want_string(const cJSON *obj, const char *name)
{
	const cJSON *it = last_item(obj, name);

	if (!cJSON_IsString(it) || strlen(it->valuestring) > EVENT_FIELD_MAX)
		return NULL;
	return it->valuestring;
}

/* obj's member `name`, the last when the key repeats: PHP, Python and
 * JavaScript keep the last, and so does event_extract (docs/DESIGN.md "The
 * inbox"); cJSON's own lookup gives the first. */
static const cJSON *
last_item(const cJSON *obj, const char *name)
{
	const cJSON *it, *found = NULL;

	cJSON_ArrayForEach(it, obj)
		if (it->string != NULL && strcmp(it->string, name) == 0)
			found = it;
	return found;
}

/* The body read again: the fields event_extract should have given. */
static void
check_reference(const char *body, size_t size, const struct event_fields *f)
{
	const cJSON *data, *id;
	const char *end = NULL, *type, *object, *want_id = NULL;
	cJSON *root;
	char num[32];

	/* An escaped NUL leaves the event without fields (docs/DESIGN.md
	 * "The inbox": a truncated key or value could make two objects
	 * one); "\\u0000", an escaped backslash before it, does not: not
	 * modelled here. */
	if (memmem(body, size, "\\u0000", 6) != NULL)
		return;
	if (memchr(body, '\0', size) != NULL ||
	    (root = cJSON_ParseWithLengthOpts(body, size, &end, 0)) == NULL)
		return;
	while (end < body + size && strchr(" \t\r\n", *end) != NULL && *end != '\0')
		end++;
	if (!cJSON_IsObject(root) || end < body + size) {
		cJSON_Delete(root);
		return;
	}
	type = want_string(root, "type");
	CHECK(same_str(f->type, type));
	data = last_item(root, "data");
	object = cJSON_IsObject(data) ? want_string(data, "object") : NULL;
	id = cJSON_IsObject(data) ? last_item(data, "id") : NULL;
	if (cJSON_IsString(id)) {
		want_id = want_string(data, "id");
	} else if (cJSON_IsNumber(id) && id->valuedouble > -9007199254740992.0 &&
	    id->valuedouble < 9007199254740992.0 &&
	    id->valuedouble == (double)(long long)id->valuedouble) {
		snprintf(num, sizeof num, "%lld", (long long)id->valuedouble);
		want_id = num;
	}
	if (object == NULL || want_id == NULL)
		object = want_id = NULL;
	CHECK(same_str(f->object_type, object));
	CHECK(same_str(f->object_id, want_id));
	cJSON_Delete(root);
}

static int
same_fields(const struct event_fields *a, const struct event_fields *b)
{
	return same_str(a->type, b->type) &&
	    same_str(a->created_at_raw, b->created_at_raw) &&
	    strcmp(a->created_at, b->created_at) == 0 &&
	    same_str(a->object_type, b->object_type) &&
	    same_str(a->object_id, b->object_id) &&
	    strcmp(a->updated_at, b->updated_at) == 0 &&
	    a->truncated == b->truncated && same_str(a->note, b->note);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct event_fields f, g;
	const char *body = (const char *)data;
	char *more;

	CHECK(event_extract("msg_fuzz", body, size, &f) == 0);
	check_fields(&f);
	if (size <= EVENT_EXTRACT_MAX)
		check_reference(body, size, &f);

	CHECK(event_extract("in_fuzz", body, size, &g) == 0);
	CHECK(empty(&g) && g.note == NULL);
	event_fields_free(&g);

	/* The body with " \r\n\t" after it, then with "x" after it. */
	if (size + 4 > EVENT_EXTRACT_MAX)
		goto out;
	if ((more = malloc(size + 4)) == NULL)
		abort();
	memcpy(more, body, size);
	memcpy(more + size, " \r\n\t", 4);
	CHECK(event_extract("msg_fuzz", more, size + 4, &g) == 0);
	CHECK(same_fields(&f, &g));
	event_fields_free(&g);
	more[size] = 'x';
	CHECK(event_extract("msg_fuzz", more, size + 1, &g) == 0);
	CHECK(empty(&g));
	event_fields_free(&g);
	free(more);
out:
	event_fields_free(&f);
	return 0;
}
