/*
 * Pool of fixed-size bounce buffers inside a receiver's region.  Senders
 * borrow a buffer (xshm_pool_alloc), fill it and name its index in a command;
 * the receiver copies the data out and returns the index (xshm_pool_free).
 * The free indices sit in a ring (ring.h) used multi-producer/multi-consumer.
 *
 * Every buffer has an owner word naming the endpoint that borrowed it, set
 * by a CAS when it leaves the queue.  Only its borrower can free it, once,
 * so a command naming a buffer its sender does not hold, or the same buffer
 * twice, is caught instead of putting an index into the queue twice.  The
 * region owner recovers the buffers of borrowers that are gone.
 */
#ifndef XSHM_SHM_POOL_H
#define XSHM_SHM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "ring.h"

struct xshm_pool_ref {
	unsigned char *bufs;
	_Atomic uint64_t *owners;
	uint32_t nbufs;
	uint32_t buf_size;
	struct xshm_ring_ref freeq;
};

size_t xshm_pool_bytes(uint32_t nbufs, uint32_t buf_size);

/* Initialise with every buffer free. */
void xshm_pool_init(struct xshm_pool *pool, uint32_t nbufs, uint32_t buf_size);

/* Validate a pool found in shared memory; 0 or -EPROTO. */
int xshm_pool_attach(struct xshm_pool_ref *ref, struct xshm_pool *pool,
		     size_t bytes_available);

/*
 * Borrow a buffer for endpoint owner (an ep_id, neither 0 nor
 * XSHM_POOL_PENDING): 0 and *index, -EAGAIN when every buffer is borrowed,
 * -EINVAL for a bad owner, or -EPROTO when the queue yielded an index out of
 * range or one already borrowed (a peer corrupted it).
 */
int xshm_pool_alloc(const struct xshm_pool_ref *ref, uint64_t owner,
		    uint32_t *index);

/* Whether index is in range and borrowed by owner (untrusted input). */
bool xshm_pool_owned_by(const struct xshm_pool_ref *ref, uint32_t index,
			uint64_t owner);

/*
 * Give back a buffer owner borrowed: 0, or -EINVAL when owner does not hold
 * index (out of range, never borrowed, already freed): nothing is freed.
 */
int xshm_pool_free(const struct xshm_pool_ref *ref, uint32_t index,
		   uint64_t owner);

/* About how many buffers are free now (the queue moves under us). */
uint32_t xshm_pool_free_count(const struct xshm_pool_ref *ref);

/* The buffer, or NULL for an index out of range (untrusted input). */
void *xshm_pool_buf(const struct xshm_pool_ref *ref, uint32_t index);

/* ---- the region owner's maintenance, off the hot path ---- */

struct xshm_pool_reaper {
	struct xshm_ring_stall push_stall;
	struct xshm_ring_stall pop_stall;
};

/*
 * Unwedge the free-index queue from pushers and poppers that died in it
 * (ring.h, stall reaping) and put back the indices that were freed but did
 * not make it into the queue.  Returns how many indices it put back.
 */
int xshm_pool_reap_stalled(const struct xshm_pool_ref *ref,
			   struct xshm_pool_reaper *reaper, uint64_t now_ns);

/*
 * Up to max distinct endpoints holding buffers now, into borrowers; returns
 * how many it stored.
 */
size_t xshm_pool_borrowers(const struct xshm_pool_ref *ref,
			   uint64_t *borrowers, size_t max);

/*
 * Free every buffer still borrowed by owner, an endpoint that is gone and
 * whose commands have all been consumed.  Returns how many.
 */
int xshm_pool_reclaim_owner(const struct xshm_pool_ref *ref, uint64_t owner);

#endif
