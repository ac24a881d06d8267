/*
 * Whether this kernel gives transparent huge pages to memory advised
 * MADV_HUGEPAGE (read from /proc/self/smaps_rollup) and can tell them
 * (PAGEMAP_SCAN, Linux 6.7): the tests that need huge pages are
 * registered only where both hold.
 */
#ifndef XSHM_TEST_HUGE_PAGES_H
#define XSHM_TEST_HUGE_PAGES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#define TEST_HUGE_PAGE	((size_t) 2 << 20)

/* The first huge page boundary at or after p. */
static inline unsigned char *test_huge_align(void *p)
{
	return (unsigned char *) p + (-(uintptr_t) p & (TEST_HUGE_PAGE - 1));
}

static inline long test_anon_huge_kib(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	char line[256];
	long kib = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kib) == 1)
			break;
	fclose(f);
	return kib;
}

static inline bool test_kernel_tells_huge_pages(void)
{
	struct utsname u;
	int major = 0, minor = 0;

	return !uname(&u) && sscanf(u.release, "%d.%d", &major, &minor) == 2 &&
	       (major > 6 || (major == 6 && minor >= 7));
}

static inline bool test_kernel_gives_huge_pages(void)
{
	long before = test_anon_huge_kib();
	unsigned char *raw = mmap(NULL, 2 * TEST_HUGE_PAGE, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned char *p;
	bool given = false;

	if (raw == MAP_FAILED)
		return false;
	p = test_huge_align(raw);
	if (before >= 0 && !madvise(p, TEST_HUGE_PAGE, MADV_HUGEPAGE)) {
		memset(p, 1, TEST_HUGE_PAGE);
		given = test_anon_huge_kib() - before >= (long) (TEST_HUGE_PAGE >> 10);
	}
	munmap(raw, 2 * TEST_HUGE_PAGE);
	return given;
}

/* Both; when not, prints why, for the test's log. */
static inline bool test_huge_pages_usable(const char *program)
{
	if (!test_kernel_tells_huge_pages()) {
		printf("%s: this kernel has no PAGEMAP_SCAN: the huge-page cases "
		       "are not run\n", program);
		return false;
	}
	if (!test_kernel_gives_huge_pages()) {
		printf("%s: this kernel gives no transparent huge pages: the "
		       "huge-page cases are not run\n", program);
		return false;
	}
	return true;
}

#endif
