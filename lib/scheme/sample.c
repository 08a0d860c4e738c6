/*
 * sample: the parts of the providers' sample events (lib/scheme/sample.h).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "lib/scheme/sample.h"

void
sample_hex(char *out, size_t n, int upper)
{
	unsigned char rnd[16];
	size_t i;

	randombytes_buf(rnd, n);
	sodium_bin2hex(out, 2 * n + 1, rnd, n);
	for (i = 0; upper && out[i] != '\0'; i++)
		out[i] = (char)toupper((unsigned char)out[i]);
}

void
sample_uuid(char *out)
{
	char hex[33];

	sample_hex(hex, 16, 0);
	/* Version 4, variant 10: as GitHub, GitLab and Shopify write them. */
	hex[12] = '4';
	hex[16] = "89ab"[hex[16] % 4];
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12,
	    hex + 16, hex + 20);
}

void
sample_rfc3339(int64_t now, char out[32])
{
	time_t t = (time_t)now;
	struct tm tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "1970-01-01T00:00:00Z");
}

int
sample_padded_json(cJSON *ev, cJSON *holder, int64_t size, struct buf *body)
{
	char *text = NULL, *fill;
	size_t base;
	int rc = -1;

	if (cJSON_AddStringToObject(holder, "filler", "") == NULL ||
	    (text = cJSON_PrintUnformatted(ev)) == NULL)
		goto out;
	base = strlen(text);
	if (size > (int64_t)base) {
		if ((fill = malloc((size_t)size - base + 1)) == NULL)
			goto out;
		memset(fill, 'x', (size_t)size - base);
		fill[size - (int64_t)base] = '\0';
		cJSON_ReplaceItemInObject(holder, "filler",
		    cJSON_CreateString(fill));
		free(fill);
		free(text);
		if ((text = cJSON_PrintUnformatted(ev)) == NULL)
			goto out;
	}
	rc = buf_append(body, text, strlen(text));
out:
	free(text);
	return rc;
}
