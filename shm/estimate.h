/*
 * A running estimate of a cost from timed samples: it drops to a cheaper
 * sample at once and moves an eighth of the way towards a dearer one,
 * counted at most four times the estimate, so that a sample that page
 * faults or loses its CPU moves it little, and one sample undoes a cold
 * first one.  0 means no sample yet; once set, never 0.
 */
#ifndef XSHM_SHM_ESTIMATE_H
#define XSHM_SHM_ESTIMATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A sample above UINT32_MAX / 4 counts as that. */
static inline void xshm_estimate_update(uint32_t *estimate, uint64_t sample)
{
	if (sample > UINT32_MAX / 4)
		sample = UINT32_MAX / 4;
	if (*estimate && sample > 4 * (uint64_t) *estimate)
		sample = 4 * (uint64_t) *estimate;
	if (!*estimate || sample < *estimate)
		*estimate = sample ? (uint32_t) sample : 1;
	else
		*estimate += (uint32_t) ((sample - *estimate) / 8);
}

/*
 * A sample of cycles for len bytes, as cycles per KiB; false, and nothing
 * changed, for len 0.
 */
static inline bool xshm_estimate_per_kib(uint32_t *estimate, uint64_t cycles,
					 size_t len)
{
	if (!len)
		return false;
	xshm_estimate_update(estimate, cycles * 1024 / len);
	return true;
}

#endif
