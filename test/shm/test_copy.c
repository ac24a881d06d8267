/*
 * Unit tests of shm/copy.c: every length across the vector loop's range
 * and its edges, at every misalignment of source and destination, copies
 * exactly its bytes and writes nothing around them.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shm/copy.h"

#define GUARD	64
#define SPAN	(XSHM_COPY_LOOP_MAX + 2 * 64 + 2 * GUARD)

static unsigned char src_buf[SPAN], dst_buf[SPAN];

static void fill_source(void)
{
	for (size_t i = 0; i < SPAN; i++)
		src_buf[i] = (unsigned char) (i * 131 + 7);
}

static void check_copy(size_t len, size_t src_off, size_t dst_off)
{
	memset(dst_buf, 0xee, SPAN);
	xshm_copy(dst_buf + GUARD + dst_off, src_buf + GUARD + src_off, len);
	for (size_t i = 0; i < GUARD + dst_off; i++)
		ck_assert_msg(dst_buf[i] == 0xee, "len %zu: byte %zu before written",
			      len, i);
	ck_assert_msg(memcmp(dst_buf + GUARD + dst_off, src_buf + GUARD + src_off,
			     len) == 0, "len %zu, offsets %zu/%zu: bytes differ", len,
		      src_off, dst_off);
	for (size_t i = GUARD + dst_off + len; i < SPAN; i++)
		ck_assert_msg(dst_buf[i] == 0xee, "len %zu: byte %zu after written",
			      len, i);
}

START_TEST(every_length_around_the_loop_edges)
{
	const size_t edges[] = { XSHM_COPY_LOOP_MIN, XSHM_COPY_LOOP_MAX };

	fill_source();
	for (size_t len = 0; len < 200; len++)
		check_copy(len, 0, 0);
	for (size_t e = 0; e < 2; e++)
		for (size_t len = edges[e] - 130; len <= edges[e] + 130; len++)
			check_copy(len, 0, 0);
}
END_TEST

START_TEST(every_misalignment_inside_the_loop)
{
	fill_source();
	for (size_t src_off = 0; src_off < 64; src_off += 3)
		for (size_t dst_off = 0; dst_off < 64; dst_off += 5)
			check_copy(XSHM_COPY_LOOP_MIN + 77, src_off, dst_off);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("copy");
	TCase *tc = tcase_create("copy");
	SRunner *runner;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_length_around_the_loop_edges);
	tcase_add_test(tc, every_misalignment_inside_the_loop);
	suite_add_tcase(s, tc);
	runner = srunner_create(s);
	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
