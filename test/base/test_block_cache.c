/*
 * Unit tests of prov/xshm/base/block_cache.c, the endpoint's cache of the
 * heap blocks that waiting operations live in: a small block given back is
 * the next one handed out, a large one never is, the cache keeps at most
 * XSHM_BLOCK_CACHE_MAX, a zeroed block is zeroed even when it comes from
 * the cache, and every block is aligned as malloc's.  Run under
 * AddressSanitizer (test/sanitize.sh) it also shows that no block leaks
 * and none is freed twice.
 */
#include <check.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/block_cache.h"

#define TEST_TIMEOUT	30

static struct xshm_block_cache cache;

static void setup(void)
{
	cache = (struct xshm_block_cache) { 0 };
}

static void teardown(void)
{
	xshm_block_cache_clear(&cache);
}

START_TEST(a_small_block_given_back_is_handed_out_again)
{
	void *first = xshm_block_alloc(&cache, 100);
	void *again;

	ck_assert_ptr_nonnull(first);
	memset(first, 0xab, XSHM_BLOCK_SMALL);	/* all of a small block is ours */
	xshm_block_free(&cache, first);
	ck_assert_uint_eq(cache.count, 1);
	again = xshm_block_alloc(&cache, XSHM_BLOCK_SMALL);
	ck_assert_ptr_eq(again, first);
	ck_assert_uint_eq(cache.count, 0);
	xshm_block_free(&cache, again);
}
END_TEST

START_TEST(a_large_block_goes_back_to_the_heap)
{
	unsigned char *large = xshm_block_alloc(&cache, XSHM_BLOCK_SMALL + 1);
	void *small;

	ck_assert_ptr_nonnull(large);
	memset(large, 0xcd, XSHM_BLOCK_SMALL + 1);
	xshm_block_free(&cache, large);
	ck_assert_uint_eq(cache.count, 0);
	small = xshm_block_alloc(&cache, 8);
	ck_assert_ptr_nonnull(small);
	xshm_block_free(&cache, small);
	ck_assert_uint_eq(cache.count, 1);
}
END_TEST

START_TEST(the_cache_keeps_at_most_its_limit)
{
	enum { N = XSHM_BLOCK_CACHE_MAX + 10 };
	void **blocks = calloc(N, sizeof(*blocks));

	ck_assert_ptr_nonnull(blocks);
	for (int i = 0; i < N; i++) {
		blocks[i] = xshm_block_alloc(&cache, 64);
		ck_assert_ptr_nonnull(blocks[i]);
	}
	for (int i = 0; i < N; i++)
		xshm_block_free(&cache, blocks[i]);
	ck_assert_uint_eq(cache.count, XSHM_BLOCK_CACHE_MAX);
	free(blocks);
}
END_TEST

START_TEST(a_zeroed_block_from_the_cache_is_zeroed)
{
	unsigned char *used = xshm_block_alloc(&cache, 200);
	unsigned char *zeroed;

	memset(used, 0xff, 200);
	xshm_block_free(&cache, used);
	zeroed = xshm_block_zalloc(&cache, 200);
	ck_assert_ptr_eq(zeroed, used);
	for (int i = 0; i < 200; i++)
		ck_assert_uint_eq(zeroed[i], 0);
	xshm_block_free(&cache, zeroed);
}
END_TEST

START_TEST(blocks_are_aligned_as_mallocs)
{
	size_t sizes[] = { 1, 24, XSHM_BLOCK_SMALL, XSHM_BLOCK_SMALL + 8, 4096 };

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		void *block = xshm_block_alloc(&cache, sizes[i]);

		ck_assert_ptr_nonnull(block);
		ck_assert_uint_eq((uintptr_t) block % alignof(max_align_t), 0);
		xshm_block_free(&cache, block);
	}
}
END_TEST

START_TEST(freeing_null_does_nothing)
{
	xshm_block_free(&cache, NULL);
	ck_assert_uint_eq(cache.count, 0);
}
END_TEST

static Suite *block_cache_suite(void)
{
	Suite *s = suite_create("block_cache");
	TCase *tc = tcase_create("blocks");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, TEST_TIMEOUT);
	tcase_add_test(tc, a_small_block_given_back_is_handed_out_again);
	tcase_add_test(tc, a_large_block_goes_back_to_the_heap);
	tcase_add_test(tc, the_cache_keeps_at_most_its_limit);
	tcase_add_test(tc, a_zeroed_block_from_the_cache_is_zeroed);
	tcase_add_test(tc, blocks_are_aligned_as_mallocs);
	tcase_add_test(tc, freeing_null_does_nothing);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(block_cache_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
