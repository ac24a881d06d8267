/*
 * Pool of fixed-size bounce buffers inside a receiver's region.  Senders
 * borrow a buffer (xshm_pool_alloc), fill it and name its index in a command;
 * the receiver copies the data out and returns the index (xshm_pool_free).
 * A bitmap marks the free buffers.  Lone sends keep to the first
 * XSHM_POOL_WARM_BYTES of buffers while they can, so that those in use
 * stay few and warm in the caches; streams go round them all (pool.c).
 *
 * Every buffer has an owner word naming the endpoint that borrowed it, set
 * by a CAS when it is borrowed.  Only its borrower can free it, once,
 * so a command naming a buffer its sender does not hold, or the same buffer
 * twice, is caught instead of freeing it twice.  The region owner recovers
 * the buffers of borrowers that are gone.
 */
#ifndef XSHM_SHM_POOL_H
#define XSHM_SHM_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct xshm_pool_ref {
	unsigned char *bufs;
	_Atomic uint64_t *free_map;	/* a bit per buffer, set while free */
	_Atomic uint64_t *owners;
	uint32_t nbufs;
	uint32_t buf_size;
	/* where this process looks next: hints, written through const refs */
	_Atomic uint32_t next_warm;
	_Atomic uint32_t next_cold;
	_Atomic uint32_t next_round;
};

#define XSHM_POOL_WARM_BYTES	(512u << 10)

/* Which free buffer a borrow takes (pool.c says why). */
enum xshm_pool_order {
	XSHM_POOL_ROUND,	/* every buffer in turn: streams, the rest */
	XSHM_POOL_WARM,		/* the first XSHM_POOL_WARM_BYTES first */
};

size_t xshm_pool_bytes(uint32_t nbufs, uint32_t buf_size);

/* Initialise with every buffer free. */
void xshm_pool_init(struct xshm_pool *pool, uint32_t nbufs, uint32_t buf_size);

/* Validate a pool found in shared memory; 0 or -EPROTO. */
int xshm_pool_attach(struct xshm_pool_ref *ref, struct xshm_pool *pool,
		     size_t bytes_available);

/*
 * Borrow a free buffer for endpoint owner (an ep_id, neither 0 nor
 * XSHM_POOL_PENDING), in order: 0 and *index, -EAGAIN when every buffer
 * is borrowed, or -EINVAL for a bad owner.
 */
int xshm_pool_alloc(const struct xshm_pool_ref *ref, uint64_t owner,
		    enum xshm_pool_order order, uint32_t *index);

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

/*
 * Free the buffers left PENDING by frees that died half-way (or are still
 * under way: harmless).  Returns how many it found.
 */
int xshm_pool_recover_pending(const struct xshm_pool_ref *ref);

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
