/*
 * Whether buffers lie on huge pages, which decides between bounce buffers
 * and the single copy for messages of 128 KiB to 4 MiB
 * (prov/xshm/data/large_path.c).
 *
 * The single copy makes the kernel pin every page it touches, so it costs
 * about twice as much per byte on 4 KiB pages as on huge ones (2 MiB
 * transparent huge pages, what malloc gives large buffers where the THP
 * setting is "always", or hugetlbfs).  On the AMD EPYC guest this was
 * measured on, from 1 to 4 MiB, the split single copy took 0.45 to 0.77 of
 * the bounce-buffer pipeline's latency on huge pages and 1.3 to 1.5 times
 * it on 4 KiB pages.
 *
 * The kernel tells through PAGEMAP_SCAN on /proc/self/pagemap (Linux
 * 6.7): one system call that walks the buffer's page tables, about 1 us
 * for 4 MiB on huge pages and 3 us on 4 KiB ones.  Where it cannot tell,
 * buffers count as on small pages, which keeps the bounce buffers.
 */
#ifndef XSHM_SHM_SCOPY_HUGE_H
#define XSHM_SHM_SCOPY_HUGE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* A memo's answer is asked for again after this many uses. */
#define XSHM_HUGE_MEMO_USES	64
/*
 * Buffers a memo remembers.  A stream of sends from buffers of their own
 * (a window of 64, as test/bench/bandwidth -W keeps) would otherwise ask
 * the kernel on every send, about 1 us a message of 256 KiB: each buffer
 * may sit in either of two slots, and of 64 buffers few then share both.
 */
#define XSHM_HUGE_MEMO_SLOTS	128

/*
 * Whether at least half of the first len bytes of iov lie on huge pages;
 * false where the kernel cannot tell.
 */
bool xshm_huge_pages(const struct iovec *iov, size_t count, size_t len);

/*
 * The answers for the buffers asked about last, where the same buffers
 * (first address and len) come back, as an application's buffers for large
 * messages do: the kernel is asked on a new buffer and on every
 * XSHM_HUGE_MEMO_USES-th use of one, so that a buffer freed and mapped
 * again at the same address on other pages is noticed.  A new buffer takes
 * the less recently used of its two slots.  Zeroed, it holds nothing.
 */
struct xshm_huge_memo_slot {
	uintptr_t base;
	size_t len;
	uint32_t uses;		/* since the kernel was asked */
	uint32_t used_at;	/* the memo's clock at the last use */
	bool huge;
};

struct xshm_huge_memo {
	uint32_t clock;
	struct xshm_huge_memo_slot slot[XSHM_HUGE_MEMO_SLOTS];
};

bool xshm_huge_pages_memo(struct xshm_huge_memo *memo,
			  const struct iovec *iov, size_t count, size_t len);

#endif
