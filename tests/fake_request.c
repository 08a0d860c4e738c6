/*
 * fake_request: the in-memory request of the tests (tests/fake_request.h).
 */
#include <string.h>

#include "lib/common/util.h"
#include "tests/fake_request.h"

/* Call each(arg, value) for every "NAME=value" of `params` whose name is
 * `name`, in order; -1 as soon as each does. */
static int
each_in(const char *const *params, const char *name,
    int (*each)(void *, const char *), void *arg)
{
	size_t len = strlen(name);
	const char *const *e;

	for (e = params; e != NULL && *e != NULL; e++) {
		if (strncmp(*e, name, len) != 0 || (*e)[len] != '=')
			continue;
		if (each(arg, *e + len + 1) == -1)
			return -1;
	}
	return 0;
}

static int
fake_param_each(struct request *r, const char *name,
    int (*each)(void *, const char *), void *arg)
{
	struct request_fake *f = r->impl;

	return each_in(f->params, name, each, arg);
}

static int
fake_first(void *arg, const char *value)
{
	*(const char **)arg = value;
	return -1;
}

static const char *
fake_param(struct request *r, const char *name)
{
	const char *v = NULL;

	(void)fake_param_each(r, name, fake_first, &v);
	return v;
}

static int
fake_read(struct request *r, char *buf, size_t want, int64_t deadline)
{
	struct request_fake *f = r->impl;
	size_t n = f->body_len - f->consumed;

	if (f->late_at >= 0 && f->consumed >= (size_t)f->late_at)
		return REQUEST_READ_LATE;
	if (f->fail_at >= 0 && f->consumed >= (size_t)f->fail_at)
		return REQUEST_READ_ERROR;
	if (r->body_to_eof && util_mono_ns() >= deadline)
		return REQUEST_READ_LATE;
	if (n > want)
		n = want;
	if (f->chunk > 0 && n > f->chunk)
		n = f->chunk;
	if (f->late_at >= 0 && n > (size_t)f->late_at - f->consumed)
		n = (size_t)f->late_at - f->consumed;
	if (f->fail_at >= 0 && n > (size_t)f->fail_at - f->consumed)
		n = (size_t)f->fail_at - f->consumed;
	memcpy(buf, f->body + f->consumed, n);
	f->consumed += n;
	return (int)n;
}

static void
fake_put(struct request_fake *f, const char *p, size_t n)
{
	size_t room = sizeof f->out - 1 - f->out_len;

	if (n > room)
		n = room;
	memcpy(f->out + f->out_len, p, n);
	f->out_len += n;
	f->out[f->out_len] = '\0';
}

static void
fake_write(struct request *r, const char *head, size_t headlen,
    const char *body, size_t bodylen)
{
	struct request_fake *f = r->impl;

	f->writes++;
	fake_put(f, head, headlen);
	fake_put(f, body, bodylen);
}

static void
fake_discard(struct request *r)
{
	struct request_fake *f = r->impl;

	f->discarded = 1;
	f->consumed = f->body_len;
}

static const struct request_ops fake_ops = {
	fake_param, fake_param_each, fake_read, NULL, fake_write, fake_discard
};

void
request_init_fake(struct request *r, struct request_fake *f)
{
	f->consumed = 0;
	f->discarded = 0;
	f->writes = 0;
	f->out_len = 0;
	f->out[0] = '\0';
	r->ops = &fake_ops;
	r->impl = f;
	r->long_lived = f->long_lived;
	r->body_to_eof = f->body_to_eof;
	r->body_read = 0;
}
