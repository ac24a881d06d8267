/*
 * Pool of fixed-size bounce buffers inside a receiver's region.  Senders
 * borrow a buffer (xshm_pool_alloc), fill it and name its index in a command;
 * the receiver copies the data out and returns the index (xshm_pool_free).
 * The free indices sit in a ring (ring.h) used multi-producer/multi-consumer.
 */
#ifndef XSHM_SHM_POOL_H
#define XSHM_SHM_POOL_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"
#include "ring.h"

struct xshm_pool_ref {
	unsigned char *bufs;
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
 * 0 and *index, -EAGAIN when every buffer is borrowed, or -EPROTO when the
 * queue yielded an index out of range (a peer corrupted it).
 */
int xshm_pool_alloc(const struct xshm_pool_ref *ref, uint32_t *index);
/* Indices out of range (untrusted input) are ignored. */
void xshm_pool_free(const struct xshm_pool_ref *ref, uint32_t index);

/* The buffer, or NULL for an index out of range (untrusted input). */
void *xshm_pool_buf(const struct xshm_pool_ref *ref, uint32_t index);

#endif
