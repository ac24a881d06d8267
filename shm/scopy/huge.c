/* See huge.h for why the page size matters and how it is read. */
#include <assert.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "huge.h"
#include "shm/proc.h"

/* The PAGEMAP_SCAN interface of Linux 6.7, which older headers lack. */
struct xshm_pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
struct xshm_page_region {
	uint64_t start, end, categories;
};
#define XSHM_PAGEMAP_SCAN	_IOWR('f', 16, struct xshm_pm_scan_arg)
#define XSHM_PAGE_IS_HUGE	(1u << 6)
#define REGIONS			8	/* per call; contiguous huge pages merge */

/*
 * /proc/self/pagemap, opened by the process that uses it: a descriptor
 * inherited across fork would show the parent's pages.
 */
static pthread_mutex_t pagemap_lock = PTHREAD_MUTEX_INITIALIZER;
static int pagemap_fd = -1;
static pid_t pagemap_pid;

static int pagemap(void)
{
	pid_t pid = xshm_proc_self();
	int fd;

	pthread_mutex_lock(&pagemap_lock);
	if (pagemap_pid != pid) {
		if (pagemap_fd >= 0)
			close(pagemap_fd);
		pagemap_fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
		pagemap_pid = pid;
	}
	fd = pagemap_fd;
	pthread_mutex_unlock(&pagemap_lock);
	return fd;
}

/* Bytes of [start, end) on huge pages, or -1 when the kernel cannot tell. */
static long long huge_bytes(int fd, uintptr_t start, uintptr_t end)
{
	long page = sysconf(_SC_PAGESIZE);
	struct xshm_page_region regions[REGIONS];
	struct xshm_pm_scan_arg arg = {
		.size = sizeof(arg),
		.start = start & ~(uintptr_t) (page - 1),
		.end = (end + page - 1) & ~(uintptr_t) (page - 1),
		.vec = (uintptr_t) regions, .vec_len = REGIONS,
		.category_mask = XSHM_PAGE_IS_HUGE,
		.return_mask = XSHM_PAGE_IS_HUGE,
	};
	long long bytes = 0;

	while (arg.start < arg.end) {
		int n = ioctl(fd, XSHM_PAGEMAP_SCAN, &arg);

		if (n < 0)
			return -1;
		for (int i = 0; i < n; i++)
			bytes += (long long) (regions[i].end - regions[i].start);
		if (arg.walk_end <= arg.start)
			break;
		arg.start = arg.walk_end;
	}
	return bytes;
}

bool xshm_huge_pages(const struct iovec *iov, size_t count, size_t len)
{
	int fd = pagemap();
	long long huge = 0, total = 0;

	if (fd < 0)
		return false;
	for (size_t i = 0; i < count && total < (long long) len; i++) {
		size_t take = iov[i].iov_len;
		long long bytes;

		if (take > len - (size_t) total)
			take = len - (size_t) total;
		if (!take)
			continue;
		bytes = huge_bytes(fd, (uintptr_t) iov[i].iov_base,
				   (uintptr_t) iov[i].iov_base + take);
		if (bytes < 0)
			return false;
		huge += bytes < (long long) take ? bytes : (long long) take;
		total += (long long) take;
	}
	return total && 2 * huge >= total;
}

#define SLOT_BITS	7
static_assert(XSHM_HUGE_MEMO_SLOTS == 1u << SLOT_BITS, "memo slots");

/*
 * The two slots buffer base may sit in: two fields of its Fibonacci hash,
 * which spreads buffers a fixed stride apart, as a window of sends uses.
 */
static void memo_slots(struct xshm_huge_memo *memo, uintptr_t base,
		       struct xshm_huge_memo_slot *slots[2])
{
	uint64_t hash = (uint64_t) base * 0x9e3779b97f4a7c15ULL;

	slots[0] = &memo->slot[hash >> (64 - SLOT_BITS)];
	slots[1] = &memo->slot[(hash >> (64 - 2 * SLOT_BITS)) &
			       (XSHM_HUGE_MEMO_SLOTS - 1)];
}

static bool holds(const struct xshm_huge_memo_slot *slot, uintptr_t base,
		  size_t len)
{
	return slot->base == base && slot->len == len;
}

/* The slot that holds base and len, or the one to put them in. */
static struct xshm_huge_memo_slot *memo_find(struct xshm_huge_memo *memo,
					     uintptr_t base, size_t len)
{
	struct xshm_huge_memo_slot *slots[2];
	uint32_t age0, age1;

	memo_slots(memo, base, slots);
	if (holds(slots[0], base, len))
		return slots[0];
	if (holds(slots[1], base, len))
		return slots[1];
	/* unsigned differences: the clock may wrap */
	age0 = memo->clock - slots[0]->used_at;
	age1 = memo->clock - slots[1]->used_at;
	return age0 >= age1 ? slots[0] : slots[1];
}

bool xshm_huge_pages_memo(struct xshm_huge_memo *memo,
			  const struct iovec *iov, size_t count, size_t len)
{
	uintptr_t base = count ? (uintptr_t) iov[0].iov_base : 0;
	struct xshm_huge_memo_slot *slot = memo_find(memo, base, len);

	slot->used_at = ++memo->clock;
	if (!holds(slot, base, len) || ++slot->uses >= XSHM_HUGE_MEMO_USES) {
		slot->base = base;
		slot->len = len;
		slot->uses = 0;
		slot->huge = xshm_huge_pages(iov, count, len);
	}
	return slot->huge;
}
