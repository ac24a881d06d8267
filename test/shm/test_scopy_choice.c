/*
 * Unit tests of shm/scopy/choice.c, fed with made-up message times.  The
 * receiver's side: a fresh one asks for the pipeline, asks for the split
 * copy once that is clearly faster (buffers on huge pages), and back when
 * that changes, unmoved by one slow message; each size class on its own.
 * The sender's side: it sends the way asked for the message's size class
 * but for one message of the class in XSHM_SCOPY_PROBE_EVERY.
 */
#include <check.h>
#include <stdlib.h>

#include "ep_ids.h"
#include "shm/scopy/choice.h"

#define MSG	(1 << 20)	/* bytes per made-up message */

/* Cycles per KiB of each path, by enum xshm_large_path. */
struct buffers {
	uint64_t cost[2];
};

/* As measured at 2 and 4 MiB on 4 KiB and on huge pages (choice.h). */
static const struct buffers small_pages = { { 120, 160 } };
static const struct buffers huge_pages = { { 170, 70 } };

/* The header bit of MSG's size class asks for path. */
static uint32_t asking(enum xshm_large_path path)
{
	return path == XSHM_LARGE_SPLIT ? 1u << xshm_scopy_size_class(MSG) : 0;
}

/*
 * n messages from a sender that asks the receiver's choice each time:
 * how many took each path.
 */
static void run(struct xshm_scopy_choice *c, uint32_t *sends,
		const struct buffers *b, int n, int taken[2])
{
	taken[0] = taken[1] = 0;
	for (int i = 0; i < n; i++) {
		enum xshm_large_path path =
			xshm_scopy_pick(asking(c->chosen), MSG, sends);

		taken[path]++;
		xshm_scopy_record(c, path, b->cost[path] * MSG / 1024, MSG);
	}
}

START_TEST(a_fresh_receiver_asks_for_the_pipeline)
{
	struct xshm_scopy_choice c = { 0 };

	ck_assert_int_eq(c.chosen, XSHM_LARGE_PIPELINE);
	xshm_scopy_record(&c, XSHM_LARGE_SPLIT, 10 * MSG / 1024, MSG);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_PIPELINE);	/* one path timed */
}
END_TEST

START_TEST(a_sender_probes_the_other_path_once_in_every_period)
{
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int split = 0;

	for (int i = 1; i <= 10 * XSHM_SCOPY_PROBE_EVERY; i++) {
		enum xshm_large_path path =
			xshm_scopy_pick(asking(XSHM_LARGE_PIPELINE), MSG, sends);

		split += path == XSHM_LARGE_SPLIT;
		ck_assert_int_eq(path == XSHM_LARGE_SPLIT,
				 (i > 1 && i <= 1 + XSHM_SCOPY_EARLY_PROBES) ||
				 i % XSHM_SCOPY_PROBE_EVERY == 0);
	}
	ck_assert_int_eq(split, 10 + XSHM_SCOPY_EARLY_PROBES);
	for (int i = 0; i < XSHM_SCOPY_PROBE_EVERY - 1; i++)
		ck_assert_int_eq(xshm_scopy_pick(asking(XSHM_LARGE_SPLIT), MSG,
						 sends), XSHM_LARGE_SPLIT);
	ck_assert_int_eq(xshm_scopy_pick(asking(XSHM_LARGE_SPLIT), MSG, sends),
			 XSHM_LARGE_PIPELINE);
}
END_TEST

START_TEST(size_classes_end_at_1_2_and_4_mib)
{
	const size_t MiB = 1 << 20;

	ck_assert_uint_eq(xshm_scopy_size_class(1), 0);
	ck_assert_uint_eq(xshm_scopy_size_class(MiB), 0);
	ck_assert_uint_eq(xshm_scopy_size_class(MiB + 1), 1);
	ck_assert_uint_eq(xshm_scopy_size_class(2 * MiB), 1);
	ck_assert_uint_eq(xshm_scopy_size_class(2 * MiB + 1), 2);
	ck_assert_uint_eq(xshm_scopy_size_class(4 * MiB), 2);
	ck_assert_uint_eq(xshm_scopy_size_class(4 * MiB + 1), 3);
	ck_assert_uint_eq(xshm_scopy_size_class(SIZE_MAX),
			  XSHM_SCOPY_SIZE_CLASSES - 1);
}
END_TEST

/*
 * Each size class has its own bit in the header and its own probes: the
 * receiver may want the split copy at 2 MiB and the pipeline at 1.
 */
START_TEST(a_sender_follows_the_bit_of_its_messages_size_class)
{
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	uint32_t two_mib_only = 1u << xshm_scopy_size_class(2 << 20);

	for (int i = 1; i <= 1 + XSHM_SCOPY_EARLY_PROBES; i++) {	/* past them */
		xshm_scopy_pick(two_mib_only, 1 << 20, sends);
		xshm_scopy_pick(two_mib_only, 2 << 20, sends);
	}
	for (int i = 2 + XSHM_SCOPY_EARLY_PROBES; i < XSHM_SCOPY_PROBE_EVERY; i++) {
		ck_assert_int_eq(xshm_scopy_pick(two_mib_only, 1 << 20, sends),
				 XSHM_LARGE_PIPELINE);
		ck_assert_int_eq(xshm_scopy_pick(two_mib_only, 2 << 20, sends),
				 XSHM_LARGE_SPLIT);
	}
	/* bits of no size class, set by nobody we know, change nothing */
	ck_assert_int_eq(xshm_scopy_pick(~0u << XSHM_SCOPY_SIZE_CLASSES,
					 3 << 20, sends), XSHM_LARGE_PIPELINE);
}
END_TEST

START_TEST(the_header_asks_for_the_split_where_it_was_chosen)
{
	struct xshm_scopy_choice choices[XSHM_SCOPY_SIZE_CLASSES] = { 0 };

	ck_assert_uint_eq(xshm_scopy_wanted(choices), 0);
	choices[1].chosen = XSHM_LARGE_SPLIT;
	choices[3].chosen = XSHM_LARGE_SPLIT;
	ck_assert_uint_eq(xshm_scopy_wanted(choices), 0xa);
}
END_TEST

START_TEST(small_pages_keep_the_pipeline)
{
	struct xshm_scopy_choice c = { 0 };
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int taken[2];

	run(&c, sends, &small_pages, 10 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_PIPELINE);
	ck_assert_int_eq(taken[XSHM_LARGE_SPLIT], 10 + XSHM_SCOPY_EARLY_PROBES);
}
END_TEST

START_TEST(huge_pages_take_the_split_at_the_first_probe)
{
	struct xshm_scopy_choice c = { 0 };
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int taken[2];

	run(&c, sends, &huge_pages, 1 + XSHM_SCOPY_EARLY_PROBES, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
	run(&c, sends, &huge_pages,
	    XSHM_SCOPY_PROBE_EVERY - 1 - XSHM_SCOPY_EARLY_PROBES, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
	run(&c, sends, &huge_pages, 10 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
	ck_assert_int_eq(taken[XSHM_LARGE_PIPELINE], 10);
}
END_TEST

START_TEST(buffers_that_change_pages_are_followed)
{
	struct xshm_scopy_choice c = { 0 };
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int taken[2];

	run(&c, sends, &huge_pages, 2 * XSHM_SCOPY_PROBE_EVERY, taken);
	run(&c, sends, &small_pages, 2 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_PIPELINE);
	run(&c, sends, &huge_pages, 2 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
}
END_TEST

/* Between the thresholds, whichever path was chosen stays. */
START_TEST(a_split_barely_faster_is_not_taken_nor_left)
{
	const struct buffers close = { { 100, 90 } };
	struct xshm_scopy_choice c = { 0 };
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int taken[2];

	run(&c, sends, &close, 4 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_PIPELINE);
	run(&c, sends, &huge_pages, 2 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
	run(&c, sends, &close, 4 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
}
END_TEST

START_TEST(one_slow_message_does_not_switch)
{
	struct xshm_scopy_choice c = { 0 };
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int taken[2];

	run(&c, sends, &huge_pages, 2 * XSHM_SCOPY_PROBE_EVERY, taken);
	/* a copy whose receiver lost its CPU for ten milliseconds */
	xshm_scopy_record(&c, XSHM_LARGE_SPLIT, 30000000, MSG);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_SPLIT);
}
END_TEST

START_TEST(empty_and_huge_times_are_harmless)
{
	struct xshm_scopy_choice c = { 0 };
	uint32_t sends[XSHM_SCOPY_SIZE_CLASSES] = { 0 };
	int taken[2];

	xshm_scopy_record(&c, XSHM_LARGE_SPLIT, 12345, 0);
	ck_assert_uint_eq(c.cost[XSHM_LARGE_SPLIT], 0);
	xshm_scopy_record(&c, XSHM_LARGE_SPLIT, UINT64_MAX / 2048, 1);
	ck_assert_uint_gt(c.cost[XSHM_LARGE_SPLIT], 0);
	run(&c, sends, &small_pages, 4 * XSHM_SCOPY_PROBE_EVERY, taken);
	ck_assert_int_eq(c.chosen, XSHM_LARGE_PIPELINE);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("scopy_choice");
	TCase *tc = tcase_create("scopy_choice");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_fresh_receiver_asks_for_the_pipeline);
	tcase_add_test(tc, a_sender_probes_the_other_path_once_in_every_period);
	tcase_add_test(tc, size_classes_end_at_1_2_and_4_mib);
	tcase_add_test(tc, a_sender_follows_the_bit_of_its_messages_size_class);
	tcase_add_test(tc, the_header_asks_for_the_split_where_it_was_chosen);
	tcase_add_test(tc, small_pages_keep_the_pipeline);
	tcase_add_test(tc, huge_pages_take_the_split_at_the_first_probe);
	tcase_add_test(tc, buffers_that_change_pages_are_followed);
	tcase_add_test(tc, a_split_barely_faster_is_not_taken_nor_left);
	tcase_add_test(tc, one_slow_message_does_not_switch);
	tcase_add_test(tc, empty_and_huge_times_are_harmless);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
