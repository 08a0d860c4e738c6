/*
 * present: the drainer's ways of showing events and times (present.h).
 * Moved out of webhook-drain.c so that list, show and status share them
 * and tests can read what they print.
 */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "instant.h"
#include "present.h"
#include "util.h"

#define NS	1000000000LL

const char *
present_short_time(const char *instant, char out[PRESENT_TIME_SIZE])
{
	if (instant == NULL || strlen(instant) != INSTANT_LEN) {
		snprintf(out, PRESENT_TIME_SIZE, "-");
		return out;
	}
	snprintf(out, PRESENT_TIME_SIZE, "%.19sZ", instant);
	return out;
}

const char *
present_relative(const char *instant, int64_t now_ns,
    char out[PRESENT_TIME_SIZE])
{
	int64_t ns, d;
	const char *unit = "s", *dir;

	if (instant == NULL || instant_to_ns(instant, &ns) == -1) {
		snprintf(out, PRESENT_TIME_SIZE, "never");
		return out;
	}
	d = (now_ns - ns) / NS;
	dir = d >= 0 ? "ago" : "from now";
	if (d < 0)
		d = -d;
	if (d >= 2 * 86400) {
		d /= 86400;
		unit = "d";
	} else if (d >= 2 * 3600) {
		d /= 3600;
		unit = "h";
	} else if (d >= 120) {
		d /= 60;
		unit = "m";
	}
	snprintf(out, PRESENT_TIME_SIZE, "%lld%s %s", (long long)d, unit, dir);
	return out;
}

void
present_escaped(FILE *f, const char *s, size_t len)
{
	char *out;

	if (len > PRESENT_ESCAPED_MAX)
		len = PRESENT_ESCAPED_MAX;
	/* util_escape writes at most 4 bytes per input byte ("\xHH"). */
	if ((out = malloc(len * 4 + 8)) == NULL)
		return;
	util_escape(s, len, out, len * 4 + 8);
	fputs(out, f);
	free(out);
}

void
present_text(FILE *f, const char *s)
{
	if (s == NULL)
		fputs("-", f);
	else
		present_escaped(f, s, strlen(s));
}

void
present_output(FILE *f, const char *s, size_t len)
{
	size_t i, start = 0;

	for (i = 0; i <= len; i++) {
		if (i == len || s[i] == '\n') {
			if (i > start || i < len) {
				fputs("  | ", f);
				present_escaped(f, s + start, i - start);
				fputc('\n', f);
			}
			start = i + 1;
		}
	}
}

/* Untrusted text (ids, types) may be any bytes, and JSON strings must be
 * valid UTF-8: non-ASCII and control bytes are written as \xHH text.
 * NULL or "" becomes null.  Ids and types are capped far below the
 * buffer by the receiver; a longer text is cut by util_escape. */
static void
add_text(cJSON *o, const char *k, const char *v)
{
	char t[1100];

	if (v == NULL || *v == '\0') {
		cJSON_AddNullToObject(o, k);
		return;
	}
	util_escape(v, strlen(v), t, sizeof t);
	cJSON_AddStringToObject(o, k, t);
}

/* Bytes of any kind as a JSON string: escaped text, or base64 (exact). */
static void
add_bytes(cJSON *o, const char *k, const char *p, size_t len, int base64)
{
	size_t n = base64 ? sodium_base64_ENCODED_LEN(len,
	    sodium_base64_VARIANT_ORIGINAL) : len * 4 + 8;
	char *t = malloc(n);

	if (t == NULL)
		return;
	if (base64)
		sodium_bin2base64(t, n, (const unsigned char *)(p ? p : ""), len,
		    sodium_base64_VARIANT_ORIGINAL);
	else
		util_escape(p, len, t, n);
	cJSON_AddStringToObject(o, k, t);
	free(t);
}

cJSON *
present_event_json(const struct inbox_event *e, int with_body)
{
	cJSON *o = cJSON_CreateObject();

	if (o == NULL)
		return NULL;
	add_text(o, "webhook_id", e->webhook_id);
	add_text(o, "state", e->state);
	cJSON_AddBoolToObject(o, "blocked", e->blocked);
	add_text(o, "type", e->type);
	add_text(o, "created_at", e->created_at_raw);
	add_text(o, "created_at_normalised", e->created_at);
	add_text(o, "object_type", e->object_type);
	add_text(o, "object_id", e->object_id);
	add_text(o, "updated_at", e->updated_at);
	cJSON_AddBoolToObject(o, "truncated", e->truncated);
	add_text(o, "received_at", e->received_at);
	cJSON_AddNumberToObject(o, "webhook_timestamp", (double)e->webhook_timestamp);
	add_text(o, "secret_fingerprint", e->secret_fp);
	cJSON_AddNumberToObject(o, "attempts", (double)e->attempts);
	cJSON_AddNumberToObject(o, "failures", (double)e->failures);
	add_text(o, "next_attempt_at", strcmp(e->state, "pending") == 0 ?
	    e->next_at : NULL);
	add_text(o, "finished_at", e->finished_at);
	cJSON_AddBoolToObject(o, "requeued", e->requeued);
	add_text(o, "last_error", e->last_error);
	if (e->last_output.len > 0)
		add_bytes(o, "last_output", e->last_output.data,
		    e->last_output.len, 0);
	cJSON_AddBoolToObject(o, "body_kept", e->has_body);
	/* JSON strings must be text: base64 keeps any bytes exact. */
	if (with_body && e->has_body)
		add_bytes(o, "body_base64", e->body.data, e->body.len, 1);
	return o;
}

void
present_json(cJSON *o)
{
	char *t = o != NULL ? cJSON_PrintUnformatted(o) : NULL;

	if (t != NULL) {
		puts(t);
		free(t);
	}
	cJSON_Delete(o);
}

int
present_parse_when(const char *s, int64_t now_ns, int64_t *out)
{
	char norm[INSTANT_SIZE];
	int64_t secs;

	if (instant_parse(s, strlen(s), norm) == 0)
		return instant_to_ns(norm, out);
	if (util_parse_duration(s, 3650LL * 86400, &secs) == 0) {
		*out = now_ns - secs * NS;
		return 0;
	}
	return -1;
}
