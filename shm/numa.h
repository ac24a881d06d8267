/*
 * NUMA placement: an endpoint's region lives on the memory node of the CPU
 * that created it, the node of the process that reads every cell and
 * buffer of it.  Needs libnuma; without it placement is not available.
 */
#ifndef XSHM_SHM_NUMA_H
#define XSHM_SHM_NUMA_H

#include <stddef.h>

/*
 * Make every page of the shared-memory file fd (its first size bytes)
 * prefer the node of the calling CPU, whichever process allocates it.
 * Call before the pages are allocated.  Returns 0, -ENOSYS without libnuma
 * or NUMA support in the kernel, or another negative errno.
 */
int xshm_numa_place(int fd, size_t size);

#endif
