/*
 * gitlab: GitLab's webhooks (docs.gitlab.com
 * user/project/integrations/webhooks; gitlab-org/gitlab!166329).
 *
 * X-Gitlab-Event-UUID names the event and is shared by the hooks it
 * triggers; nothing is signed: X-Gitlab-Token carries the secret token
 * itself, so the inbox keys the id with its content and the token proves
 * the sender, not the bytes.  GitLab does not send again; failing hooks
 * are disabled (for a while after 4 failures, for good after 40).  A 2xx
 * within 10 s is success.
 */
#include <string.h>

#include <cjson/cJSON.h>
#include <sodium.h>

#include "lib/scheme/mac.h"
#include "lib/scheme/sample.h"

static int
gitlab_recognise(const struct scheme_headers *h)
{
	return scheme_hget(h, "X-Gitlab-Token") != NULL ||
	    scheme_hget(h, "X-Gitlab-Event") != NULL;
}

static void
gitlab_verify(const struct scheme_params *p, const struct scheme_secret *keys,
    size_t nkeys, const struct scheme_headers *h, const unsigned char *body,
    size_t body_len, int64_t now, struct scheme_result *res)
{
	unsigned char got[32], want[32];
	const char *tok = scheme_hget(h, "X-Gitlab-Token");
	size_t k;
	int found = -1;

	(void)p;
	(void)body;
	(void)body_len;
	(void)now;
	if (tok == NULL) {
		scheme_refuse(res, SCHEME_MISSING, "X-Gitlab-Token is required "
		    "(is a secret token set on the GitLab webhook?)");
		return;
	}
	/* The token is the secret itself: compare digests, in constant
	 * time and without its length showing. */
	crypto_generichash(got, sizeof got, (const unsigned char *)tok,
	    strlen(tok), NULL, 0);
	for (k = 0; k < nkeys && k < SCHEME_SECRETS_MAX; k++) {
		crypto_generichash(want, sizeof want, keys[k].key, keys[k].len,
		    NULL, 0);
		if (crypto_verify_32(got, want) == 0 && found == -1)
			found = (int)k;
	}
	sodium_memzero(want, sizeof want);
	if (found == -1) {
		scheme_refuse(res, SCHEME_BAD_SIGNATURE, "X-Gitlab-Token does not match");
		return;
	}
	res->key_index = (size_t)found;
	scheme_verified(res);
}

/* GitLab sends the secret token itself (docs/providers.md). */
static int
gitlab_sign(const struct scheme_params *p, const struct scheme_secret *key,
    const unsigned char *body, size_t body_len, const char *ts,
    const char *id, const char *type, struct scheme_signed *out,
    const char **why)
{
	char v[SCHEME_HEADER_VALUE_MAX];
	int rc = -1;

	(void)p;
	(void)body;
	(void)body_len;
	(void)ts;
	(void)why;
	if (key->len >= SCHEME_HEADER_VALUE_MAX ||
	    memchr(key->key, '\0', key->len) != NULL)
		return -1;
	memcpy(v, key->key, key->len);
	v[key->len] = '\0';
	if (scheme_signed_add(out, "X-Gitlab-Token", v) == 0 &&
	    scheme_signed_opt(out, "X-Gitlab-Event-UUID", id) == 0 &&
	    scheme_signed_opt(out, "X-Gitlab-Event", type) == 0)
		rc = 0;
	sodium_memzero(v, sizeof v);
	return rc;
}

static int
gitlab_sample_body(const char *id, int64_t now, int64_t size, struct buf *body)
{
	cJSON *ev = cJSON_CreateObject();
	int rc = -1;

	(void)now;
	if (ev == NULL ||
	    cJSON_AddStringToObject(ev, "object_kind", "webhook_inbox_test") ==
	    NULL || cJSON_AddStringToObject(ev, "event_name",
	    SCHEME_SAMPLE_TYPE) == NULL ||
	    cJSON_AddStringToObject(ev, "id", id) == NULL)
		goto out;
	rc = sample_padded_json(ev, ev, size, body);
out:
	cJSON_Delete(ev);
	return rc;
}

const struct scheme scheme_gitlab = {
	.name = "gitlab",
	.title = "GitLab",
	.signature_header = "X-Gitlab-Token",
	.id_header = "X-Gitlab-Event-UUID",
	.type_header = "X-Gitlab-Event",
	.recognise = gitlab_recognise,
	.secret_load = scheme_raw_secret,
	.verify = gitlab_verify,
	.sign = gitlab_sign,
	.sample_id = sample_uuid,
	.sample_body = gitlab_sample_body,
};
