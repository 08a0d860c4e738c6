/*
 * test_paging: lib/drain/paging.c without a network — a page's parts
 * (tests/PROVIDER-API.md: {"data": [...], "next_cursor": string|null}) and
 * the stable ids of synced object versions.  The walks themselves run
 * against the provider simulator in tests/e2e_api.py.
 */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "lib/drain/paging.h"
#include "tests/check_common.h"

START_TEST(page_parts_accepts_the_shapes)
{
	static const struct {
		const char	*json;
		int		 rc;
		const char	*next;		/* NULL: none */
	} cases[] = {
		{ "{\"data\":[],\"next_cursor\":null}", 0, NULL },
		{ "{\"data\":[1,2]}", 0, NULL },
		{ "{\"data\":[],\"next_cursor\":\"\"}", 0, NULL },
		{ "{\"data\":[{}],\"next_cursor\":\"c2\"}", 0, "c2" },
		{ "{\"data\":{},\"next_cursor\":null}", -1, NULL },
		{ "{\"next_cursor\":\"c2\"}", -1, "c2" },
		{ "{\"data\":[],\"next_cursor\":3}", -1, NULL },
		{ "[]", -1, NULL },
	};
	const cJSON *data;
	const char *next;
	size_t i;

	for (i = 0; i < NELEM(cases); i++) {
		cJSON *page = cJSON_Parse(cases[i].json);
		ck_assert_ptr_nonnull(page);
		ck_assert_msg(paging_page_parts(page, &data, &next) == cases[i].rc,
		    "%s", cases[i].json);
		if (cases[i].next == NULL)
			ck_assert_ptr_null(next);
		else
			ck_assert_str_eq(next, cases[i].next);
		cJSON_Delete(page);
	}
	/* A null page (the GET failed before parsing) is no page. */
	ck_assert_int_eq(paging_page_parts(NULL, &data, &next), -1);
}
END_TEST

START_TEST(sync_id_is_stable_and_distinct)
{
	char a[64], b[64], c[64], d[64];
	size_t i;

	paging_sync_id("client", "42", "2026-03-01T12:00:00.000000000Z", a);
	paging_sync_id("client", "42", "2026-03-01T12:00:00.000000000Z", b);
	ck_assert_str_eq(a, b);
	ck_assert_uint_eq(strlen(a), 5 + 24);
	ck_assert(strncmp(a, "sync_", 5) == 0);
	for (i = 5; a[i] != '\0'; i++)
		ck_assert(strchr("0123456789abcdef", a[i]) != NULL);
	/* Another version, object or kind is another event. */
	paging_sync_id("client", "42", "2026-03-01T12:00:01.000000000Z", b);
	ck_assert_str_ne(a, b);
	paging_sync_id("client", "43", "2026-03-01T12:00:00.000000000Z", b);
	ck_assert_str_ne(a, b);
	/* The NULs keep the fields apart. */
	paging_sync_id("ab", "c", "v", c);
	paging_sync_id("a", "bc", "v", d);
	ck_assert_str_ne(c, d);
}
END_TEST

static Suite *
suite(void)
{
	Suite *s = suite_create("paging");
	TCase *tc = tcase_create("paging");

	tcase_add_test(tc, page_parts_accepts_the_shapes);
	tcase_add_test(tc, sync_id_is_stable_and_distinct);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	if (sodium_init() < 0)
		return 1;
	return check_main(suite());
}
