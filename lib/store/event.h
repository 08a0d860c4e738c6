/*
 * event: what the inbox extracts from a body once, at receive time
 * (docs/DESIGN.md "The inbox": type, created_at, object_type, object_id,
 * updated_at, truncated; PROVIDER.md "A delivery").
 *
 * Extraction never refuses a delivery: a body that is not JSON, or whose
 * fields are missing or odd, is stored with the fields it lacks left empty.
 * Inbound relays (webhook-id starting "in_") carry a third party's body and
 * yield nothing, whatever they look like.
 */
#ifndef WEBHOOK_EVENT_H
#define WEBHOOK_EVENT_H

#include <stddef.h>

#include "lib/common/instant.h"

/* Longest `type`, `data.object` or `data.id` string we extract, bytes.  A
 * longer value is not a provider's and is left out (and noted). */
#define EVENT_FIELD_MAX	256

/* Largest body fields are extracted from, bytes.  The provider truncates
 * objects over 256 KB, so an outbound event stays well below this; bigger
 * bodies (relays, strangers) are stored without fields rather than making
 * cJSON copy every string of them (docs/caps.md). */
#define EVENT_EXTRACT_MAX	(512 * 1024)

struct event_fields {
	char	*type;			/* NULL when absent; owned */
	char	*created_at_raw;	/* createdAt as sent; owned */
	char	 created_at[INSTANT_SIZE];	/* normalised; "" when none */
	char	*object_type;		/* data.object; owned */
	char	*object_id;		/* data.id as text; owned */
	char	 updated_at[INSTANT_SIZE];	/* data.updated_at normalised; "" */
	int	 truncated;		/* data.object_truncated == true */
	/* The first oddity met (e.g. "createdAt is not an ISO-8601
	 * instant"), static text for the log; NULL when none. */
	const char *note;
};

/*
 * Fill *f from `body` (`len` bytes, not NUL-terminated, may hold NUL) for
 * the delivery `webhook_id`.  cJSON does the JSON.  Returns 0, or -1 only
 * on memory exhaustion; either way *f is initialised and must be released
 * with event_fields_free.  A numeric data.id is kept only while it is an
 * exact integer in a double (|id| < 2^53); beyond that the event gets no
 * object key rather than colliding with another object's.
 */
int	event_extract(const char *webhook_id, const char *body, size_t len,
	    struct event_fields *f) __attribute__((warn_unused_result));
void	event_fields_free(struct event_fields *f);

/* Is this webhook-id an inbound relay ("in_" prefix)? */
int	event_is_relay(const char *webhook_id);

#endif
