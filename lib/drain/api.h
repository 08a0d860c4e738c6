/*
 * api: the provider's REST API, read by the drainer (PROVIDER.md "What the
 * processing side must do", "Webhooks do not replace synchronisation";
 * the shapes the simulator serves are in tests/PROVIDER-API.md).
 *
 * One libcurl easy handle in a multi handle of its own, reused so
 * connections are kept alive; driven by our own loop (curl_multi_poll),
 * so that a caller may serve descriptors of its own while a request
 * waits on the network (api_set_waiter).  Every
 * request carries "Authorization: Bearer TOKEN"; the token is never
 * logged or printed.
 */
#ifndef WEBHOOK_API_H
#define WEBHOOK_API_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>
#include <curl/curl.h>

#include "lib/program/config.h"
#include "lib/common/util.h"

/* Largest answer we read, bytes: a page of objects of up to ~260 KB each. */
#define API_BODY_MAX	(64 << 20)

enum api_status {
	API_OK = 0,		/* 2xx with a JSON body: *json set */
	API_NOT_FOUND,		/* 404: the object does not exist (any more) */
	API_RETRY,		/* 429, 5xx, timeout, connection trouble: try later */
	API_BAD,		/* an answer we cannot use (not JSON, other 4xx) */
	API_AUTH		/* 401/403: the token is wrong; an operator must act */
};

struct api;

/*
 * Ready a client for c->api_url with the token from config_api_token.
 * Returns 0 and *out (free with api_close), or -1 with the reason in err
 * (no api_url, no token, libcurl failure).
 */
int	api_open(const struct config *c, struct api **out, struct buf *err)
	    __attribute__((warn_unused_result));
void	api_close(struct api *a);	/* accepts NULL; wipes the token */

/* Descriptors a waiter may add to one wait, at most (a drain run's
 * handlers: HANDLER_POLLFDS × HANDLER_JOBS_MAX). */
#define API_WAIT_FDS_MAX	192

/*
 * Other work served while a request waits on the network, in the same
 * poll (a drain run's running handlers: docs/jobs.md).  Both functions
 * are called from inside api_get, which is not reentrant: they must not
 * use this client.  fds fills p (room for max) and returns how many it
 * filled (fd -1 entries are skipped); *due_ns is the monotonic instant
 * by which serve must run even if none of them stirs (-1: none).  serve
 * gets p back with revents set (POLLHUP and POLLERR are reported as
 * POLLIN, POLLERR also as POLLOUT: libcurl's own mapping) after every
 * wait, whether or not any of its descriptors stirred.
 */
struct api_waiter {
	size_t	(*fds)(void *arg, struct pollfd *p, size_t max,
		    int64_t *due_ns);
	void	(*serve)(void *arg, struct pollfd *p, size_t n);
	void	 *arg;
};

/* Serve w (NULL: nothing) during every later request of a; w must
 * outlive them. */
void	api_set_waiter(struct api *a, const struct api_waiter *w);

/*
 * GET api_url + "/" + path (path's segments and query already escaped with
 * api_escape).  On API_OK *json is the parsed body (cJSON_Delete it).  For
 * API_RETRY, *retry_after holds the server's Retry-After in seconds (0 when
 * it gave none).  err gets a one-line reason for every other outcome (the
 * status, curl's message); never the token.
 */
enum api_status api_get(struct api *a, const char *path, cJSON **json,
	    int64_t *retry_after, struct buf *err)
	    __attribute__((warn_unused_result));

/*
 * The CA bundle (PEM file) that verifies the provider's certificate:
 * api_ca_file when set; else $SSL_CERT_FILE; else the first readable file
 * among the places distributions keep theirs (Debian/Ubuntu/Alpine,
 * RHEL/AlmaLinux/CloudLinux/Fedora, SUSE, …): a static drainer runs on
 * hosts whose layout its build machine did not know.  NULL when none is
 * found (libcurl's built-in default then applies).  Points into c or into
 * static storage.
 */
const char *api_ca_bundle(const struct config *c);

/* Give a libcurl handle the TLS trust above and HTTP/HTTPS only.  For
 * every handle that may speak https (the API client, `send`). */
void	api_curl_setup(CURL *curl, const struct config *c);

/* Percent-escape one path segment or query value into out; 0 or -1. */
int	api_escape(struct api *a, const char *s, struct buf *out)
	    __attribute__((warn_unused_result));

#endif
