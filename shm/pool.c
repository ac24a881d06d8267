/*
 * Bounce-buffer pool: [struct xshm_pool][pad][bufs...][pad][free-index ring].
 * Offsets are relative to the pool struct so the pool can sit anywhere in a
 * region.  The free-index ring has room for every index.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>

#include "pool.h"

struct index_payload {
	uint32_t index;
	uint32_t reserved;
};

static_assert(sizeof(struct index_payload) ==
	      sizeof(struct xshm_index_cell) - offsetof(struct xshm_index_cell, index),
	      "index payload mirrors the index cell");

static uint64_t align_up(uint64_t value, uint64_t alignment)
{
	return (value + alignment - 1) & ~(alignment - 1);
}

static uint32_t freeq_cells(uint32_t nbufs)
{
	uint32_t ncells = 1;

	while (ncells < nbufs)
		ncells <<= 1;
	return ncells;
}

static uint64_t bufs_offset_for(void)
{
	return align_up(sizeof(struct xshm_pool), XSHM_CACHE_LINE);
}

static uint64_t freeq_offset_for(uint32_t nbufs, uint32_t buf_size)
{
	return align_up(bufs_offset_for() + (uint64_t) nbufs * buf_size,
			XSHM_CACHE_LINE);
}

size_t xshm_pool_bytes(uint32_t nbufs, uint32_t buf_size)
{
	return freeq_offset_for(nbufs, buf_size) +
	       xshm_ring_bytes(freeq_cells(nbufs), sizeof(struct xshm_index_cell));
}

void xshm_pool_init(struct xshm_pool *pool, uint32_t nbufs, uint32_t buf_size)
{
	struct xshm_ring *freeq;
	struct xshm_ring_ref ref;
	uint32_t ncells = freeq_cells(nbufs);
	uint32_t i;

	pool->nbufs = nbufs;
	pool->buf_size = buf_size;
	pool->bufs_offset = bufs_offset_for();
	pool->freeq_offset = freeq_offset_for(nbufs, buf_size);
	pool->reserved = 0;

	freeq = (struct xshm_ring *) ((unsigned char *) pool + pool->freeq_offset);
	xshm_ring_init(freeq, ncells, sizeof(struct xshm_index_cell));
	ref.ring = freeq;
	ref.mask = ncells - 1;
	ref.cell_size = sizeof(struct xshm_index_cell);
	for (i = 0; i < nbufs; i++) {
		struct index_payload payload = { .index = i };

		xshm_ring_push(&ref, &payload, sizeof(payload));
	}
}

static int bufs_valid(uint32_t nbufs, uint32_t buf_size, uint64_t bufs_offset,
		      size_t bytes_available)
{
	if (nbufs == 0 || buf_size == 0 || buf_size % XSHM_CACHE_LINE != 0)
		return 0;
	if (bufs_offset < sizeof(struct xshm_pool) ||
	    bufs_offset % XSHM_CACHE_LINE != 0 || bufs_offset > bytes_available)
		return 0;
	return (uint64_t) nbufs * buf_size <= bytes_available - bufs_offset;
}

static int freeq_valid(const struct xshm_ring_ref *freeq, uint32_t nbufs)
{
	return freeq->mask + 1 >= nbufs &&
	       freeq->cell_size >= sizeof(struct xshm_index_cell);
}

int xshm_pool_attach(struct xshm_pool_ref *ref, struct xshm_pool *pool,
		     size_t bytes_available)
{
	volatile struct xshm_pool *shared = pool;
	uint32_t nbufs, buf_size;
	uint64_t bufs_offset, freeq_offset, bufs_end;
	struct xshm_ring_ref freeq;

	if ((uintptr_t) pool % 8 != 0 || bytes_available < sizeof(*pool))
		return -EPROTO;
	nbufs = shared->nbufs;
	buf_size = shared->buf_size;
	bufs_offset = shared->bufs_offset;
	freeq_offset = shared->freeq_offset;
	if (!bufs_valid(nbufs, buf_size, bufs_offset, bytes_available))
		return -EPROTO;
	/* The queue must not overlap the buffers that senders write. */
	bufs_end = bufs_offset + (uint64_t) nbufs * buf_size;
	if (freeq_offset < bufs_end || freeq_offset > bytes_available)
		return -EPROTO;
	if (xshm_ring_attach(&freeq,
			     (struct xshm_ring *) ((unsigned char *) pool + freeq_offset),
			     bytes_available - freeq_offset) != 0 ||
	    !freeq_valid(&freeq, nbufs))
		return -EPROTO;

	ref->bufs = (unsigned char *) pool + bufs_offset;
	ref->nbufs = nbufs;
	ref->buf_size = buf_size;
	ref->freeq = freeq;
	return 0;
}

int xshm_pool_alloc(const struct xshm_pool_ref *ref, uint32_t *index)
{
	struct index_payload payload;
	int ret;

	ret = xshm_ring_pop(&ref->freeq, &payload, sizeof(payload));
	if (ret)
		return ret;
	if (payload.index >= ref->nbufs)
		return -EPROTO;
	*index = payload.index;
	return 0;
}

/*
 * A popper that has advanced head but not yet handed its cell back makes the
 * queue look full to the push that wraps onto that cell, although it has
 * room for every index.  Only then is a failed push worth retrying.
 */
static bool pop_in_flight(const struct xshm_ring_ref *freeq)
{
	uint64_t tail = atomic_load_explicit(&freeq->ring->tail,
					     memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&freeq->ring->head,
					     memory_order_relaxed);

	return tail - head <= freeq->mask;
}

#define FREE_SPINS		64
#define FREE_MAX_ATTEMPTS	(1u << 16)

void xshm_pool_free(const struct xshm_pool_ref *ref, uint32_t index)
{
	struct index_payload payload = { .index = index };
	uint32_t attempt;

	if (index >= ref->nbufs)
		return;
	/*
	 * Really full only if an index was freed twice: drop it.  The bound
	 * covers a popper that died mid-pop; we leak a buffer, never hang.
	 */
	for (attempt = 0; attempt < FREE_MAX_ATTEMPTS; attempt++) {
		if (xshm_ring_push(&ref->freeq, &payload, sizeof(payload)) == 0 ||
		    !pop_in_flight(&ref->freeq))
			return;
		if (attempt >= FREE_SPINS)
			sched_yield();
	}
}

void *xshm_pool_buf(const struct xshm_pool_ref *ref, uint32_t index)
{
	if (index >= ref->nbufs)
		return NULL;
	return ref->bufs + (size_t) index * ref->buf_size;
}
