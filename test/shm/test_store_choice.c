/*
 * Unit tests of shm/store_choice.c, fed with made-up fill times: which
 * stores it picks while cached fills cost about what streaming ones do,
 * while they cost several times as much, when that changes, and that it
 * keeps probing the kind it did not choose.
 */
#include <check.h>
#include <stdlib.h>

#include "ep_ids.h"
#include "shm/store_choice.h"

#define FILL	16384	/* bytes per made-up fill */

/* Cycles per KiB of each kind of fill, by enum xshm_stores. */
struct machine {
	uint64_t cost[2];
};

static const struct machine near = { { 150, 90 } };	/* CPUs share a cache */
static const struct machine far = { { 900, 100 } };	/* they do not */

/* n fills on m: how many of each kind were picked. */
static void run(struct xshm_store_choice *c, const struct machine *m, int n,
		int picked[2])
{
	picked[0] = picked[1] = 0;
	for (int i = 0; i < n; i++) {
		enum xshm_stores kind = xshm_store_pick(c);

		picked[kind]++;
		xshm_store_record(c, kind, m->cost[kind] * FILL / 1024, FILL);
	}
}

START_TEST(a_fresh_choice_times_both_kinds_first)
{
	struct xshm_store_choice c = { 0 };
	enum xshm_stores first, second;

	first = xshm_store_pick(&c);
	xshm_store_record(&c, first, near.cost[first] * FILL / 1024, FILL);
	second = xshm_store_pick(&c);
	ck_assert_int_ne(first, second);
}
END_TEST

START_TEST(near_cpus_keep_cached_stores_and_probe_streaming)
{
	struct xshm_store_choice c = { 0 };
	int picked[2];

	run(&c, &near, 640, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_CACHED);
	/* one probe in XSHM_STORE_PROBE_EVERY, and the first timing */
	ck_assert_int_ge(picked[XSHM_STORES_STREAMING], 640 / XSHM_STORE_PROBE_EVERY);
	ck_assert_int_le(picked[XSHM_STORES_STREAMING], 640 / XSHM_STORE_PROBE_EVERY + 1);
}
END_TEST

START_TEST(far_cpus_stream_and_probe_cached)
{
	struct xshm_store_choice c = { 0 };
	int picked[2];

	run(&c, &far, 64, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_STREAMING);
	run(&c, &far, 640, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_STREAMING);
	ck_assert_int_eq(picked[XSHM_STORES_CACHED], 640 / XSHM_STORE_PROBE_EVERY);
}
END_TEST

/*
 * Far CPUs in a stream of large messages: streaming fills queue behind
 * memory writes, and cached ones cost only about 3 times as much (measured:
 * 2 to 4 times), while streaming still takes 0.4 of the latency.
 */
START_TEST(far_cpus_stream_in_a_stream_of_large_messages)
{
	const struct machine far_streaming = { { 300, 100 } };
	struct xshm_store_choice c = { 0 };
	int picked[2];

	run(&c, &far_streaming, 640, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_STREAMING);
}
END_TEST

START_TEST(cpus_moving_apart_then_back_are_followed)
{
	struct xshm_store_choice c = { 0 };
	int picked[2];

	run(&c, &near, 640, picked);
	run(&c, &far, 64, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_STREAMING);
	/* back near, cached fills are timed only by the probes */
	run(&c, &near, 8 * XSHM_STORE_PROBE_EVERY, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_CACHED);
}
END_TEST

START_TEST(one_slow_fill_does_not_switch)
{
	struct xshm_store_choice c = { 0 };
	int picked[2];

	run(&c, &near, 640, picked);
	/* a fill that lost its CPU for a millisecond */
	xshm_store_record(&c, XSHM_STORES_CACHED, 3000000, FILL);
	ck_assert_int_eq(c.chosen, XSHM_STORES_CACHED);
}
END_TEST

/* Its first fills page fault: they must not keep it from streaming for long. */
START_TEST(a_cold_first_fill_does_not_stick)
{
	struct xshm_store_choice c = { 0 };
	enum xshm_stores kind;
	int picked[2];

	kind = xshm_store_pick(&c);
	ck_assert_int_eq(kind, XSHM_STORES_STREAMING);
	xshm_store_record(&c, kind, 5000 * FILL / 1024, FILL);
	run(&c, &far, 6 * XSHM_STORE_PROBE_EVERY, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_STREAMING);
}
END_TEST

START_TEST(between_the_thresholds_the_choice_stays)
{
	const struct machine middle = { { 225, 100 } };	/* 2.25 times */
	struct xshm_store_choice c = { 0 };
	int picked[2];

	run(&c, &near, 640, picked);
	run(&c, &middle, 640, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_CACHED);
	run(&c, &far, 640, picked);
	run(&c, &middle, 640, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_STREAMING);
}
END_TEST

START_TEST(empty_and_huge_fills_are_harmless)
{
	struct xshm_store_choice c = { 0 };
	int picked[2];

	xshm_store_record(&c, XSHM_STORES_CACHED, 12345, 0);
	ck_assert_uint_eq(c.cost[XSHM_STORES_CACHED], 0);
	xshm_store_record(&c, XSHM_STORES_CACHED, UINT64_MAX / 2048, 1);
	ck_assert_uint_gt(c.cost[XSHM_STORES_CACHED], 0);
	run(&c, &near, 640, picked);
	ck_assert_int_eq(c.chosen, XSHM_STORES_CACHED);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("store_choice");
	TCase *tc = tcase_create("store_choice");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_fresh_choice_times_both_kinds_first);
	tcase_add_test(tc, near_cpus_keep_cached_stores_and_probe_streaming);
	tcase_add_test(tc, far_cpus_stream_and_probe_cached);
	tcase_add_test(tc, far_cpus_stream_in_a_stream_of_large_messages);
	tcase_add_test(tc, cpus_moving_apart_then_back_are_followed);
	tcase_add_test(tc, one_slow_fill_does_not_switch);
	tcase_add_test(tc, a_cold_first_fill_does_not_stick);
	tcase_add_test(tc, between_the_thresholds_the_choice_stays);
	tcase_add_test(tc, empty_and_huge_fills_are_harmless);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
