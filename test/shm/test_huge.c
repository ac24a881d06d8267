/*
 * Unit tests of shm/scopy/huge.c: buffers on small pages, untouched, on
 * huge pages, partly on each (half or more counts), only the first len
 * bytes counted; the memo answers for the same buffer until its
 * XSHM_HUGE_MEMO_USES-th use and asks again for another one, and answers
 * for most of a window of 64 buffers used in turn; and a forked
 * child is told about its own pages, not its parent's.
 *
 * The cases that need huge pages run only where this kernel hands them out
 * (transparent huge pages on MADV_HUGEPAGE, seen in smaps_rollup) and can
 * tell them (PAGEMAP_SCAN, Linux 6.7); elsewhere they are not registered,
 * and the run says so.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ep_ids.h"
#include "test/huge_pages.h"
#include "shm/scopy/huge.h"

#define TEST_TIMEOUT	30
#define HUGE_PAGE	TEST_HUGE_PAGE

/* len bytes at a huge page boundary, touched, on huge pages or not. */
static unsigned char *map_pages(size_t len, bool huge)
{
	unsigned char *raw = mmap(NULL, len + HUGE_PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *p;

	ck_assert(raw != MAP_FAILED);
	p = test_huge_align(raw);
	ck_assert_int_eq(madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE), 0);
	memset(p, 1, len);
	return p;
}

/* Maps small pages over [p, p + len), touched. */
static void remap_small(unsigned char *p, size_t len)
{
	ck_assert(mmap(p, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == p);
	ck_assert_int_eq(madvise(p, len, MADV_NOHUGEPAGE), 0);
	memset(p, 2, len);
}

static bool huge(void *p, size_t len)
{
	struct iovec iov = { p, len };

	return xshm_huge_pages(&iov, 1, len);
}

START_TEST(small_pages_are_not_huge)
{
	ck_assert(!huge(map_pages(4 * HUGE_PAGE, false), 4 * HUGE_PAGE));
}
END_TEST

START_TEST(untouched_memory_is_not_huge)
{
	void *p = mmap(NULL, 4 * HUGE_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	ck_assert(p != MAP_FAILED);
	ck_assert(!huge(p, 4 * HUGE_PAGE));
}
END_TEST

START_TEST(nothing_is_not_huge)
{
	struct iovec iov = { NULL, 0 };

	ck_assert(!xshm_huge_pages(&iov, 1, 0));
	ck_assert(!xshm_huge_pages(NULL, 0, 0));
}
END_TEST

START_TEST(huge_pages_are_huge)
{
	unsigned char *p = map_pages(2 * HUGE_PAGE, true);

	ck_assert(huge(p, 2 * HUGE_PAGE));
	/* an unaligned part of them too */
	ck_assert(huge(p + 4097, HUGE_PAGE));
}
END_TEST

/* Huge pages then small ones: at least half huge counts. */
START_TEST(half_or_more_on_huge_pages_counts)
{
	unsigned char *big = map_pages(HUGE_PAGE, true);
	unsigned char *small = map_pages(3 * HUGE_PAGE, false);
	struct iovec half[2] = { { big, HUGE_PAGE }, { small, HUGE_PAGE } };
	struct iovec less[2] = { { big, HUGE_PAGE }, { small, 3 * HUGE_PAGE } };

	ck_assert(xshm_huge_pages(half, 2, 2 * HUGE_PAGE));
	ck_assert(!xshm_huge_pages(less, 2, 4 * HUGE_PAGE));
	/* only the first len bytes count */
	ck_assert(xshm_huge_pages(less, 2, 2 * HUGE_PAGE));
	ck_assert(!xshm_huge_pages(less, 2, 2 * HUGE_PAGE + 4096));
}
END_TEST

/*
 * The memo answers for the same buffer without asking until the
 * XSHM_HUGE_MEMO_USES-th use: small pages mapped in place of the huge ones
 * are seen then, or at once for a buffer of another length.
 */
START_TEST(the_memo_asks_again_after_its_uses_or_for_another_buffer)
{
	unsigned char *p = map_pages(2 * HUGE_PAGE, true);
	struct iovec iov = { p, 2 * HUGE_PAGE };
	struct xshm_huge_memo memo = { 0 };
	int remembered = 0;

	ck_assert(xshm_huge_pages_memo(&memo, &iov, 1, 2 * HUGE_PAGE));
	remap_small(p, 2 * HUGE_PAGE);
	while (xshm_huge_pages_memo(&memo, &iov, 1, 2 * HUGE_PAGE))
		ck_assert_int_lt(++remembered, XSHM_HUGE_MEMO_USES);
	ck_assert_int_eq(remembered, XSHM_HUGE_MEMO_USES - 1);

	memset(&memo, 0, sizeof(memo));
	iov.iov_base = map_pages(2 * HUGE_PAGE, true);
	ck_assert(xshm_huge_pages_memo(&memo, &iov, 1, 2 * HUGE_PAGE));
	remap_small(iov.iov_base, HUGE_PAGE);
	ck_assert(!xshm_huge_pages_memo(&memo, &iov, 1, HUGE_PAGE));
}
END_TEST

/*
 * A stream of sends from buffers of their own, 64 of 256 KiB in turn, as
 * test/bench/bandwidth -W keeps: once each has been asked about, small
 * pages mapped in place of them all go unseen for most of them, whose
 * answers the memo holds.  Where two buffers would share both their slots
 * one of them is asked about again: for 64 buffers 256 KiB apart that was
 * at most 9 in 20000 random placements, so 16 leaves room.  A memo of one
 * buffer would answer for the last one only.
 */
START_TEST(the_memo_answers_for_a_window_of_buffers)
{
	enum { WINDOW = 64, LEN = 256 << 10 };
	unsigned char *p = map_pages(WINDOW * LEN, true);
	struct xshm_huge_memo *memo = calloc(1, sizeof(*memo));
	int remembered = 0;

	ck_assert(memo);
	for (int i = 0; i < WINDOW; i++) {
		struct iovec iov = { p + (size_t) i * LEN, LEN };

		ck_assert(xshm_huge_pages_memo(memo, &iov, 1, LEN));
	}
	remap_small(p, WINDOW * LEN);
	for (int i = 0; i < WINDOW; i++) {
		struct iovec iov = { p + (size_t) i * LEN, LEN };

		remembered += xshm_huge_pages_memo(memo, &iov, 1, LEN);
	}
	ck_assert_int_ge(remembered, WINDOW - 16);
	free(memo);
}
END_TEST

/*
 * The parent has asked about its buffer; the child maps small pages at the
 * same address and must be told about them, not about its parent's.
 */
START_TEST(a_forked_child_is_told_about_its_own_pages)
{
	unsigned char *p = map_pages(2 * HUGE_PAGE, true);
	int status;
	pid_t child;

	ck_assert(huge(p, 2 * HUGE_PAGE));
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		remap_small(p, 2 * HUGE_PAGE);
		_exit(huge(p, 2 * HUGE_PAGE) ? 1 : 0);
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		      "the child was told its small pages were huge (status 0x%x)",
		      status);
	ck_assert(huge(p, 2 * HUGE_PAGE));
}
END_TEST

static Suite *huge_suite(void)
{
	Suite *suite = suite_create("huge");
	TCase *small = tcase_create("small");
	TCase *big = tcase_create("huge");

	tcase_set_timeout(small, TEST_TIMEOUT);
	tcase_add_test(small, small_pages_are_not_huge);
	tcase_add_test(small, untouched_memory_is_not_huge);
	tcase_add_test(small, nothing_is_not_huge);
	suite_add_tcase(suite, small);

	if (!test_huge_pages_usable("test_huge"))
		return suite;
	tcase_set_timeout(big, TEST_TIMEOUT);
	tcase_add_test(big, huge_pages_are_huge);
	tcase_add_test(big, half_or_more_on_huge_pages_counts);
	tcase_add_test(big, the_memo_asks_again_after_its_uses_or_for_another_buffer);
	tcase_add_test(big, the_memo_answers_for_a_window_of_buffers);
	tcase_add_test(big, a_forked_child_is_told_about_its_own_pages);
	suite_add_tcase(suite, big);
	return suite;
}

int main(void)
{
	return test_run_suite(huge_suite());
}
