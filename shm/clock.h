/* One clock that every process of the node reads alike. */
#ifndef XSHM_SHM_CLOCK_H
#define XSHM_SHM_CLOCK_H

#include <stdint.h>
#include <time.h>

static inline uint64_t xshm_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

#endif
