/*
 * Unit tests of shm/mr_pub.c's check without a pin: answered from what
 * xshm_mr_pub_check_seen kept of its last check, it gives what the table
 * gives, and what it keeps never outlives the entry it was read from.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ids.h"
#include "shm/mr_pub.h"

#define TEST_TIMEOUT	30
#define KEY		0x5eedULL
#define OTHER_KEY	0xbeefULL

static struct xshm_mr_pub *table_new(void)
{
	struct xshm_mr_pub *pub = aligned_alloc(XSHM_CACHE_LINE, sizeof(*pub));

	ck_assert_ptr_nonnull(pub);
	memset(pub, 0, sizeof(*pub));
	return pub;
}

static void publish(struct xshm_mr_pub *pub, uint64_t key, uint64_t base,
		    uint64_t len, uint32_t access)
{
	struct xshm_mr_pub_desc desc = {
		.key = key, .base = base, .len = len, .local = base,
		.access = access,
	};

	ck_assert_int_eq(xshm_mr_pub_add(pub, &desc), 0);
}

/*
 * The check through seen and the check from the table (a zeroed seen),
 * which must agree; returns their answer.
 */
static int both(struct xshm_mr_pub *pub, struct xshm_mr_pub_seen *seen,
		uint64_t key, uint64_t addr, uint64_t len, uint32_t access)
{
	struct xshm_mr_pub_seen fresh = { 0 };
	int plain = xshm_mr_pub_check_seen(pub, &fresh, key, addr, len, access);
	int through_seen = xshm_mr_pub_check_seen(pub, seen, key, addr, len,
						  access);

	ck_assert_int_eq(through_seen, plain);
	return through_seen;
}

START_TEST(seen_answers_as_the_plain_check)
{
	struct xshm_mr_pub *pub = table_new();
	struct xshm_mr_pub_seen seen = { 0 };

	publish(pub, KEY, 1000, 1000, XSHM_MR_PUB_WRITE);
	/* twice each: the first from the table, the second from seen */
	for (int round = 0; round < 2; round++) {
		ck_assert_int_eq(both(pub, &seen, KEY, 1000, 8,
				      XSHM_MR_PUB_WRITE), 0);
		ck_assert_int_eq(both(pub, &seen, KEY, 1992, 8,
				      XSHM_MR_PUB_WRITE), 0);
		ck_assert_int_eq(both(pub, &seen, KEY, 1993, 8,
				      XSHM_MR_PUB_WRITE), -EACCES);
		ck_assert_int_eq(both(pub, &seen, KEY, 992, 16,
				      XSHM_MR_PUB_WRITE), -EACCES);
		ck_assert_int_eq(both(pub, &seen, KEY, 1000, 8,
				      XSHM_MR_PUB_READ), -EACCES);
		ck_assert_int_eq(both(pub, &seen, KEY, 1000, UINT64_MAX,
				      XSHM_MR_PUB_WRITE), -EACCES);
	}
	ck_assert_ptr_nonnull(seen.entry);
	ck_assert_int_eq(both(pub, &seen, OTHER_KEY, 1000, 8,
			      XSHM_MR_PUB_WRITE), -ENOENT);
	free(pub);
}
END_TEST

START_TEST(withdrawn_key_refused_after_it_was_seen)
{
	struct xshm_mr_pub *pub = table_new();
	struct xshm_mr_pub_seen seen = { 0 };

	publish(pub, KEY, 1000, 1000, XSHM_MR_PUB_WRITE);
	ck_assert_int_eq(both(pub, &seen, KEY, 1000, 8, XSHM_MR_PUB_WRITE), 0);
	xshm_mr_pub_remove(pub, KEY);
	ck_assert_int_eq(both(pub, &seen, KEY, 1000, 8, XSHM_MR_PUB_WRITE),
			 -ENOENT);
	free(pub);
}
END_TEST

/* The same key published again, in the same slot, with another range. */
START_TEST(republished_key_checked_against_its_new_range)
{
	struct xshm_mr_pub *pub = table_new();
	struct xshm_mr_pub_seen seen = { 0 };

	publish(pub, KEY, 1000, 1000, XSHM_MR_PUB_WRITE);
	ck_assert_int_eq(both(pub, &seen, KEY, 1500, 8, XSHM_MR_PUB_WRITE), 0);
	xshm_mr_pub_remove(pub, KEY);
	publish(pub, KEY, 1000, 100, XSHM_MR_PUB_READ | XSHM_MR_PUB_WRITE);
	ck_assert_int_eq(both(pub, &seen, KEY, 1500, 8, XSHM_MR_PUB_WRITE),
			 -EACCES);
	ck_assert_int_eq(both(pub, &seen, KEY, 1050, 8, XSHM_MR_PUB_READ), 0);
	free(pub);
}
END_TEST

/* Checks of two keys in turn: each answered from its own entry. */
START_TEST(alternating_keys_each_answered_from_their_own)
{
	struct xshm_mr_pub *pub = table_new();
	struct xshm_mr_pub_seen seen = { 0 };

	publish(pub, KEY, 1000, 1000, XSHM_MR_PUB_WRITE);
	publish(pub, OTHER_KEY, 5000, 10, XSHM_MR_PUB_READ);
	for (int round = 0; round < 3; round++) {
		ck_assert_int_eq(both(pub, &seen, KEY, 1500, 8,
				      XSHM_MR_PUB_WRITE), 0);
		ck_assert_int_eq(both(pub, &seen, OTHER_KEY, 1500, 8,
				      XSHM_MR_PUB_WRITE), -EACCES);
		ck_assert_int_eq(both(pub, &seen, OTHER_KEY, 5000, 8,
				      XSHM_MR_PUB_READ), 0);
		ck_assert_int_eq(both(pub, &seen, KEY, 5000, 8,
				      XSHM_MR_PUB_WRITE), -EACCES);
	}
	free(pub);
}
END_TEST

static Suite *mr_pub_suite(void)
{
	Suite *suite = suite_create("mr_pub");
	TCase *seen = tcase_create("seen");

	tcase_set_timeout(seen, TEST_TIMEOUT);
	tcase_add_test(seen, seen_answers_as_the_plain_check);
	tcase_add_test(seen, withdrawn_key_refused_after_it_was_seen);
	tcase_add_test(seen, republished_key_checked_against_its_new_range);
	tcase_add_test(seen, alternating_keys_each_answered_from_their_own);
	suite_add_tcase(suite, seen);
	return suite;
}

int main(void)
{
	return test_run_suite(mr_pub_suite());
}
