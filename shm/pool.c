/*
 * Bounce-buffer pool:
 * [struct xshm_pool][pad][bufs...][pad][free-index ring][pad][owner words].
 * Offsets are relative to the pool struct so the pool can sit anywhere in a
 * region.  The free-index ring has room for every index.
 *
 * An owner word is 0 while its buffer is free, the borrower's ep_id while
 * borrowed, and XSHM_POOL_PENDING from the moment it is freed until its index
 * is in the queue again.  Taking a buffer is a CAS from 0 or PENDING, so an
 * index that got into the queue twice (a requeue racing with a free) is
 * harmless: whoever pops the second copy while the first is borrowed drops it.
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
	      offsetof(struct xshm_index_cell, claim) -
	      offsetof(struct xshm_index_cell, index),
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

static uint64_t owners_offset_for(uint32_t nbufs, uint32_t buf_size)
{
	return align_up(freeq_offset_for(nbufs, buf_size) +
			xshm_ring_bytes(freeq_cells(nbufs),
					sizeof(struct xshm_index_cell)),
			XSHM_CACHE_LINE);
}

size_t xshm_pool_bytes(uint32_t nbufs, uint32_t buf_size)
{
	return owners_offset_for(nbufs, buf_size) +
	       (uint64_t) nbufs * sizeof(uint64_t);
}

void xshm_pool_init(struct xshm_pool *pool, uint32_t nbufs, uint32_t buf_size)
{
	struct xshm_ring *freeq;
	struct xshm_ring_ref ref;
	_Atomic uint64_t *owners;
	uint32_t ncells = freeq_cells(nbufs);
	uint32_t i;

	pool->nbufs = nbufs;
	pool->buf_size = buf_size;
	pool->bufs_offset = bufs_offset_for();
	pool->freeq_offset = freeq_offset_for(nbufs, buf_size);
	pool->owners_offset = owners_offset_for(nbufs, buf_size);
	owners = (_Atomic uint64_t *) ((unsigned char *) pool + pool->owners_offset);
	for (i = 0; i < nbufs; i++)
		atomic_init(&owners[i], 0);

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

/* The owner words sit after the queue, which must end before them. */
static int owners_valid(uint32_t nbufs, uint64_t freeq_offset,
			uint64_t owners_offset, size_t bytes_available)
{
	if (owners_offset % sizeof(uint64_t) != 0 ||
	    owners_offset <= freeq_offset || owners_offset > bytes_available)
		return 0;
	return (uint64_t) nbufs * sizeof(uint64_t) <=
	       bytes_available - owners_offset;
}

int xshm_pool_attach(struct xshm_pool_ref *ref, struct xshm_pool *pool,
		     size_t bytes_available)
{
	volatile struct xshm_pool *shared = pool;
	uint32_t nbufs, buf_size;
	uint64_t bufs_offset, freeq_offset, owners_offset, bufs_end;
	struct xshm_ring_ref freeq;

	if ((uintptr_t) pool % 8 != 0 || bytes_available < sizeof(*pool))
		return -EPROTO;
	nbufs = shared->nbufs;
	buf_size = shared->buf_size;
	bufs_offset = shared->bufs_offset;
	freeq_offset = shared->freeq_offset;
	owners_offset = shared->owners_offset;
	if (!bufs_valid(nbufs, buf_size, bufs_offset, bytes_available))
		return -EPROTO;
	/* The queue must not overlap the buffers that senders write. */
	bufs_end = bufs_offset + (uint64_t) nbufs * buf_size;
	if (freeq_offset < bufs_end || freeq_offset > bytes_available ||
	    !owners_valid(nbufs, freeq_offset, owners_offset, bytes_available))
		return -EPROTO;
	if (xshm_ring_attach(&freeq,
			     (struct xshm_ring *) ((unsigned char *) pool + freeq_offset),
			     owners_offset - freeq_offset) != 0 ||
	    !freeq_valid(&freeq, nbufs))
		return -EPROTO;

	ref->bufs = (unsigned char *) pool + bufs_offset;
	ref->owners = (_Atomic uint64_t *) ((unsigned char *) pool + owners_offset);
	ref->nbufs = nbufs;
	ref->buf_size = buf_size;
	ref->freeq = freeq;
	return 0;
}

static bool owner_valid(uint64_t owner)
{
	return owner != 0 && owner != XSHM_POOL_PENDING;
}

/* Take a free (or freed, on its way back) buffer for owner. */
static bool take_buf(const struct xshm_pool_ref *ref, uint32_t index,
		     uint64_t owner)
{
	_Atomic uint64_t *word;
	uint64_t was;

	if (index >= ref->nbufs)
		return false;
	word = &ref->owners[index];
	was = atomic_load_explicit(word, memory_order_relaxed);
	return (was == 0 || was == XSHM_POOL_PENDING) &&
	       atomic_compare_exchange_strong_explicit(word, &was, owner,
						       memory_order_acquire,
						       memory_order_relaxed);
}

static uint32_t index_in(void *cell)
{
	return *(volatile uint32_t *) &((struct xshm_index_cell *) cell)->index;
}

/*
 * The buffer is taken before the cell is handed back, so that a sender
 * dying in between leaves either the index in the cell (the owner reaps the
 * cell and requeues it) or the buffer under its name (reclaimed), never
 * neither.  A failed hand-back means the owner reaped us as stalled: a
 * buffer taken is kept (the owner saw it taken and left it), else retry.
 */
int xshm_pool_alloc(const struct xshm_pool_ref *ref, uint64_t owner,
		    uint32_t *index)
{
	void *cell;
	uint64_t pos;

	if (!owner_valid(owner))
		return -EINVAL;
	for (;;) {
		uint32_t got;
		bool taken;

		cell = xshm_ring_pop_begin(&ref->freeq, &pos);
		if (!cell)
			return -EAGAIN;
		got = index_in(cell);
		taken = take_buf(ref, got, owner);
		if (xshm_ring_pop_end(&ref->freeq, cell, pos) && !taken)
			continue;
		if (!taken)
			return -EPROTO;
		*index = got;
		return 0;
	}
}

bool xshm_pool_owned_by(const struct xshm_pool_ref *ref, uint32_t index,
			uint64_t owner)
{
	return index < ref->nbufs && owner_valid(owner) &&
	       atomic_load_explicit(&ref->owners[index],
				    memory_order_relaxed) == owner;
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

#define REQUEUE_SPINS		64

/*
 * Push a PENDING index.  When a stalled popper keeps the queue full it stays
 * PENDING, and the owner's xshm_pool_reap_stalled pushes it later.
 */
static bool requeue(const struct xshm_pool_ref *ref, uint32_t index)
{
	struct index_payload payload = { .index = index };
	uint64_t pending = XSHM_POOL_PENDING;
	int attempt;

	for (attempt = 0; attempt < REQUEUE_SPINS; attempt++) {
		if (xshm_ring_push(&ref->freeq, &payload, sizeof(payload)) == 0) {
			/* Fails harmlessly when a popper took it already. */
			atomic_compare_exchange_strong_explicit(
				&ref->owners[index], &pending, 0,
				memory_order_release, memory_order_relaxed);
			return true;
		}
		if (!pop_in_flight(&ref->freeq))
			return false;
		sched_yield();
	}
	return false;
}

/* The free is a CAS from the borrower: an index enters the queue once. */
static bool give_back(const struct xshm_pool_ref *ref, uint32_t index,
		      uint64_t owner)
{
	if (!atomic_compare_exchange_strong_explicit(
		    &ref->owners[index], &owner, XSHM_POOL_PENDING,
		    memory_order_release, memory_order_relaxed))
		return false;
	requeue(ref, index);
	return true;
}

int xshm_pool_free(const struct xshm_pool_ref *ref, uint32_t index,
		   uint64_t owner)
{
	if (index >= ref->nbufs || !owner_valid(owner) ||
	    !give_back(ref, index, owner))
		return -EINVAL;
	return 0;
}

uint32_t xshm_pool_free_count(const struct xshm_pool_ref *ref)
{
	uint64_t head = atomic_load_explicit(&ref->freeq.ring->head,
					     memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&ref->freeq.ring->tail,
					     memory_order_relaxed);
	uint64_t count = tail - head;

	/* tail only grows, so it is at least the head read before it */
	return count > ref->nbufs ? ref->nbufs : (uint32_t) count;
}

void *xshm_pool_buf(const struct xshm_pool_ref *ref, uint32_t index)
{
	if (index >= ref->nbufs)
		return NULL;
	return ref->bufs + (size_t) index * ref->buf_size;
}

/* A popper died with the index still in its cell: unless it took the buffer. */
static int requeue_unowned(const struct xshm_pool_ref *ref, uint32_t index)
{
	uint64_t free_word = 0;

	if (index >= ref->nbufs)
		return 0;
	if (!atomic_compare_exchange_strong_explicit(
		    &ref->owners[index], &free_word, XSHM_POOL_PENDING,
		    memory_order_relaxed, memory_order_relaxed) &&
	    free_word != XSHM_POOL_PENDING)
		return 0;
	return requeue(ref, index);
}

static int requeue_pending(const struct xshm_pool_ref *ref)
{
	int back = 0;

	for (uint32_t i = 0; i < ref->nbufs; i++)
		if (atomic_load_explicit(&ref->owners[i], memory_order_relaxed) ==
		    XSHM_POOL_PENDING && requeue(ref, i))
			back++;
	return back;
}

int xshm_pool_reap_stalled(const struct xshm_pool_ref *ref,
			   struct xshm_pool_reaper *reaper, uint64_t now_ns)
{
	struct index_payload payload;
	int back = 0;

	/* A dead pusher's index is PENDING: requeue_pending finds it. */
	while (xshm_ring_reap_stalled(&ref->freeq, &reaper->push_stall, now_ns))
		;
	while (xshm_ring_reap_stalled_pop(&ref->freeq, &reaper->pop_stall,
					  now_ns, &payload, sizeof(payload)) == 1)
		back += requeue_unowned(ref, payload.index);
	return back + requeue_pending(ref);
}

static bool listed(const uint64_t *list, size_t count, uint64_t value)
{
	for (size_t i = 0; i < count; i++)
		if (list[i] == value)
			return true;
	return false;
}

size_t xshm_pool_borrowers(const struct xshm_pool_ref *ref,
			   uint64_t *borrowers, size_t max)
{
	size_t count = 0;

	for (uint32_t i = 0; i < ref->nbufs && count < max; i++) {
		uint64_t owner = atomic_load_explicit(&ref->owners[i],
						      memory_order_relaxed);

		if (owner_valid(owner) && !listed(borrowers, count, owner))
			borrowers[count++] = owner;
	}
	return count;
}

int xshm_pool_reclaim_owner(const struct xshm_pool_ref *ref, uint64_t owner)
{
	int back = 0;

	if (!owner_valid(owner))
		return 0;
	for (uint32_t i = 0; i < ref->nbufs; i++)
		if (give_back(ref, i, owner))
			back++;
	return back;
}
