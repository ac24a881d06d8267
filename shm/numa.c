/*
 * Why a policy on the file (mbind of a mapping of it) rather than on the
 * thread (set_mempolicy around the creation): tmpfs keeps the policy given
 * to a mapping of a file as the file's own shared policy, so it applies to
 * every page of the region whoever faults it in first and whenever -- the
 * owner's posix_fallocate, or a peer's first write into a bounce buffer when
 * fallocate is unsupported -- while a thread policy covers only what the
 * thread allocates during the window, and meanwhile misplaces the caller's
 * own allocations.  The policy outlives the mapping that set it, so a
 * short-lived mapping made before the file is sized places the pages before
 * any exists (nothing to migrate).
 *
 * MPOL_PREFERRED, not MPOL_BIND: when the node is full the pages come from
 * another node rather than failing (which a peer would see as SIGBUS).
 */
#include "config.h"

#include <errno.h>

#include "numa.h"

#ifdef HAVE_LIBNUMA

#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <sys/mman.h>

static int local_node(void)
{
	int cpu = sched_getcpu();
	int node;

	if (cpu < 0)
		return -errno;
	node = numa_node_of_cpu(cpu);
	return node < 0 ? -EINVAL : node;
}

static int prefer_node(void *addr, size_t size, int node)
{
	struct bitmask *nodes = numa_allocate_nodemask();
	int ret = 0;

	if (!nodes)
		return -ENOMEM;
	numa_bitmask_setbit(nodes, (unsigned int) node);
	/* libnuma's convention: the kernel reads one bit less than maxnode. */
	if (mbind(addr, size, MPOL_PREFERRED, nodes->maskp, nodes->size + 1, 0))
		ret = -errno;
	numa_bitmask_free(nodes);
	return ret;
}

int xshm_numa_place(int fd, size_t size)
{
	void *map;
	int node, ret;

	if (numa_available() < 0)
		return -ENOSYS;
	node = local_node();
	if (node < 0)
		return node;
	map = mmap(NULL, size, PROT_NONE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return -errno;
	ret = prefer_node(map, size, node);
	munmap(map, size);
	return ret;
}

#else

int xshm_numa_place(int fd, size_t size)
{
	(void) fd;
	(void) size;
	return -ENOSYS;
}

#endif
