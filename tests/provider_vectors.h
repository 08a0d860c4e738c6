/*
 * provider_vectors: tests/vectors/providers.json as the scheme tests read
 * it — the file loaded once, a vector's string members, and its scheme
 * parameters — shared by tests/test_scheme.c (the verifiers) and
 * tests/test_scheme_sign.c (the signers), so both read each vector alike.
 * The file is written by tests/vectors/gen/make-provider-vectors.mjs
 * (docs/providers.md "Test vectors").
 */
#ifndef WEBHOOK_TESTS_PROVIDER_VECTORS_H
#define WEBHOOK_TESTS_PROVIDER_VECTORS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "lib/scheme/scheme.h"

#ifndef PROVIDER_VECTORS
#error "PROVIDER_VECTORS must name providers.json (the Makefile passes it)"
#endif

/* The parsed file (free with cJSON_Delete), its "vectors" array and its
 * length; pv_error says why the load failed ("" when it did not). */
static cJSON *pv_root;
static const cJSON *pv_vectors;
static int pv_count;
static char pv_error[256];

static void
pv_load(const char *path)
{
	FILE *fp;
	char *text = NULL;
	long size;

	if ((fp = fopen(path, "rb")) == NULL) {
		snprintf(pv_error, sizeof pv_error, "%s: cannot open", path);
		return;
	}
	if (fseek(fp, 0, SEEK_END) == 0 && (size = ftell(fp)) > 0 &&
	    fseek(fp, 0, SEEK_SET) == 0 && (text = malloc((size_t)size)) != NULL &&
	    fread(text, 1, (size_t)size, fp) == (size_t)size) {
		pv_root = cJSON_ParseWithLength(text, (size_t)size);
		pv_vectors = cJSON_GetObjectItemCaseSensitive(pv_root, "vectors");
		if (!cJSON_IsArray(pv_vectors))
			snprintf(pv_error, sizeof pv_error,
			    "%s: no \"vectors\" array", path);
		else
			pv_count = cJSON_GetArraySize(pv_vectors);
	} else {
		snprintf(pv_error, sizeof pv_error, "%s: cannot read", path);
	}
	free(text);
	fclose(fp);
}

/* A string member of a vector, or NULL. */
static const char *
pv_member(const cJSON *c, const char *name)
{
	const cJSON *it = cJSON_GetObjectItemCaseSensitive(c, name);

	return cJSON_IsString(it) ? it->valuestring : NULL;
}

/* The vector's scheme parameters: s's defaults, then its "url" and its
 * "params" (the generic scheme's, and a tolerance). */
static void
pv_params(const cJSON *c, const struct scheme *s, struct scheme_params *p)
{
	const cJSON *params = cJSON_GetObjectItemCaseSensitive(c, "params");

	scheme_params_init(s, p);
	p->url = pv_member(c, "url");
	if (params != NULL) {
		const char *alg = pv_member(params, "algorithm");
		const char *enc = pv_member(params, "encoding");
		const cJSON *tol = cJSON_GetObjectItemCaseSensitive(params,
		    "tolerance");

		p->header = pv_member(params, "header");
		p->prefix = pv_member(params, "prefix");
		p->timestamp_header = pv_member(params, "timestamp_header");
		if (pv_member(params, "separator") != NULL)
			p->separator = pv_member(params, "separator");
		if (cJSON_IsNumber(tol))
			p->tolerance = (int64_t)tol->valuedouble;
		p->alg = alg != NULL && strcmp(alg, "sha1") == 0 ? SCHEME_SHA1 :
		    alg != NULL && strcmp(alg, "sha512") == 0 ? SCHEME_SHA512 :
		    SCHEME_SHA256;
		p->encoding = enc != NULL && strcmp(enc, "base64") == 0 ?
		    SCHEME_BASE64 : SCHEME_HEX;
	}
}

#endif
