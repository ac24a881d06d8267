/*
 * The region owner's maintenance against dead or buggy peers, run off the
 * hot path (every so often while polling): skips inbound ring cells that a
 * dead sender reserved but never committed, frees the pool's buffers whose
 * free died half-way, and recovers the buffers of borrowers that are gone,
 * but only once every command they committed before going has been
 * consumed: a message whose cells were all committed must still be
 * delivered.
 */
#ifndef XSHM_SHM_SWEEP_H
#define XSHM_SHM_SWEEP_H

#include <stddef.h>
#include <stdint.h>

#include "pool.h"
#include "region.h"
#include "ring.h"

/* Borrowers found gone and waited for at once; more wait for a later run. */
#define XSHM_SWEEP_GONE_MAX	16

struct xshm_sweep {
	struct xshm_ring_stall ring_stall;
	struct {
		uint64_t ep_id;
		uint64_t drain_pos;	/* ring tail when it was found gone */
	} gone[XSHM_SWEEP_GONE_MAX];
	size_t ngone;
};

void xshm_sweep_init(struct xshm_sweep *sweep);

/*
 * One pass over the owned region.  Returns how many ring cells it skipped
 * plus how many buffers it put back.  now_ns is CLOCK_MONOTONIC.
 */
int xshm_sweep_run(struct xshm_sweep *sweep, struct xshm_region *region,
		   uint64_t now_ns);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t xshm_sweep_now(void);

#endif
