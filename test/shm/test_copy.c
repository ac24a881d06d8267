/*
 * Unit tests of shm/copy.c: every length across the vector loop's range
 * and its edges, at every misalignment of source and destination, copies
 * exactly its bytes and writes nothing around them; the same for the
 * streaming copy, whose edges are its first and last whole cache lines,
 * and for the descending copy over every length a ring cell holds, which
 * must also move bytes up within one buffer, as only a copy that reads
 * each byte before it writes below it can.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ep_ids.h"
#include "shm/copy.h"

#define GUARD	64
#define SPAN	(XSHM_COPY_LOOP_MAX + 2 * 64 + 2 * GUARD)

static unsigned char src_buf[SPAN], dst_buf[SPAN];

static void fill_source(void)
{
	for (size_t i = 0; i < SPAN; i++)
		src_buf[i] = (unsigned char) (i * 131 + 7);
}

/* The first byte of dst_buf from `from` to `to` that is not 0xee, or `to`. */
static size_t first_written(size_t from, size_t to)
{
	while (from < to && dst_buf[from] == 0xee)
		from++;
	return from;
}

/* One assertion per region: check marks every assertion with a write. */
static void check_copy_with(xshm_copy_fn *copy, size_t len, size_t src_off,
			    size_t dst_off)
{
	size_t start = GUARD + dst_off, written;

	memset(dst_buf, 0xee, SPAN);
	copy(dst_buf + start, src_buf + GUARD + src_off, len);
	written = first_written(0, start);
	ck_assert_msg(written == start, "len %zu: byte %zu before written", len, written);
	ck_assert_msg(memcmp(dst_buf + start, src_buf + GUARD + src_off, len) == 0,
		      "len %zu, offsets %zu/%zu: bytes differ", len, src_off, dst_off);
	written = first_written(start + len, SPAN);
	ck_assert_msg(written == SPAN, "len %zu: byte %zu after written", len, written);
}

static void check_copy(size_t len, size_t src_off, size_t dst_off)
{
	check_copy_with(xshm_copy, len, src_off, dst_off);
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

START_TEST(streaming_every_short_length_at_every_alignment)
{
	fill_source();
	for (size_t dst_off = 0; dst_off < 64; dst_off++)
		for (size_t len = 0; len < 3 * 64; len++)
			check_copy_with(xshm_copy_streaming, len, 5, dst_off);
}
END_TEST

START_TEST(streaming_a_bounce_buffer_at_every_alignment)
{
	fill_source();
	for (size_t dst_off = 0; dst_off < 64; dst_off++)
		for (size_t src_off = 0; src_off < 64; src_off += 7)
			check_copy_with(xshm_copy_streaming, XSHM_BUF_SIZE - dst_off,
					src_off, dst_off);
	for (size_t len = XSHM_BUF_SIZE - 130; len <= XSHM_BUF_SIZE; len++)
		check_copy_with(xshm_copy_streaming, len, 0, 0);
}
END_TEST

START_TEST(descending_every_cell_length_and_misalignment)
{
	fill_source();
	for (size_t len = 0; len <= XSHM_CELL_SIZE; len++)
		check_copy_with(xshm_copy_descending, len, len % 64, 0);
	for (size_t src_off = 0; src_off < 64; src_off += 3)
		for (size_t dst_off = 0; dst_off < 64; dst_off += 5)
			check_copy_with(xshm_copy_descending, 2008, src_off, dst_off);
}
END_TEST

/* Bytes 0..len-1 of a pattern moved up by shift within one buffer. */
static void check_moved_up(size_t len, size_t shift)
{
	for (size_t i = 0; i < SPAN; i++)
		dst_buf[i] = (unsigned char) (i * 131 + 7);
	xshm_copy_descending(dst_buf + shift, dst_buf, len);
	for (size_t i = 0; i < len; i++)
		ck_assert_msg(dst_buf[shift + i] == (unsigned char) (i * 131 + 7),
			      "len %zu shifted by %zu: byte %zu wrong", len, shift, i);
}

START_TEST(descending_moves_bytes_up_within_a_buffer)
{
	const size_t shifts[] = { 1, 8, 31, 32, 63, 64, 65, 200 };

	for (size_t i = 0; i < sizeof(shifts) / sizeof(shifts[0]); i++)
		for (size_t len = 0; len <= 300; len += 7)
			check_moved_up(len, shifts[i]);
	check_moved_up(XSHM_CELL_SIZE, 40);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("copy");
	TCase *tc = tcase_create("copy");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, every_length_around_the_loop_edges);
	tcase_add_test(tc, every_misalignment_inside_the_loop);
	tcase_add_test(tc, streaming_every_short_length_at_every_alignment);
	tcase_add_test(tc, streaming_a_bounce_buffer_at_every_alignment);
	tcase_add_test(tc, descending_every_cell_length_and_misalignment);
	tcase_add_test(tc, descending_moves_bytes_up_within_a_buffer);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
