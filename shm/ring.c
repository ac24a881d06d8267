/*
 * Bounded ring after the per-cell sequence number scheme (see ring.h).
 *
 * Positions are 64-bit and never wrap in practice, so a cell's sequence
 * number tells unambiguously which lap it belongs to.  Producers and
 * consumers synchronise only through the cells' sequence numbers: an acquire
 * load of seq pairs with the release store that published it, which orders
 * the payload.  tail and head themselves only arbitrate between competitors,
 * so their CAS can be relaxed.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "ring.h"

static_assert(sizeof(struct xshm_cell_seq) == 8, "cell sequence number");
static_assert(offsetof(struct xshm_cmd, seq) == 0, "cmd starts with seq");
static_assert(offsetof(struct xshm_index_cell, seq) == 0,
	      "index cell starts with seq");

static unsigned char *cell_at(const struct xshm_ring_ref *ref, uint64_t pos)
{
	return ref->ring->cells + (pos & ref->mask) * ref->cell_size;
}

static _Atomic uint64_t *seq_of(void *cell)
{
	return &((struct xshm_cell_seq *) cell)->seq;
}

size_t xshm_ring_bytes(uint32_t ncells, uint32_t cell_size)
{
	return offsetof(struct xshm_ring, cells) +
	       (uint64_t) ncells * cell_size;
}

void xshm_ring_init(struct xshm_ring *ring, uint32_t ncells, uint32_t cell_size)
{
	uint32_t i;

	ring->ncells = ncells;
	ring->cell_size = cell_size;
	ring->reserved = 0;
	atomic_init(&ring->tail, 0);
	atomic_init(&ring->head, 0);
	for (i = 0; i < ncells; i++)
		atomic_init(seq_of(ring->cells + (size_t) i * cell_size), i);
}

static int geometry_valid(uint32_t ncells, uint32_t cell_size,
			  size_t bytes_available)
{
	if (ncells == 0 || (ncells & (ncells - 1)) != 0)
		return 0;
	if (cell_size < 16 || cell_size % 8 != 0)
		return 0;
	/* u32 * u32 fits in 64 bits, and the header is tiny: no overflow. */
	return (uint64_t) xshm_ring_bytes(ncells, cell_size) <= bytes_available;
}

int xshm_ring_attach(struct xshm_ring_ref *ref, struct xshm_ring *ring,
		     size_t bytes_available)
{
	uint32_t ncells, cell_size;

	if ((uintptr_t) ring % XSHM_CACHE_LINE != 0 ||
	    bytes_available < sizeof(*ring))
		return -EPROTO;
	/* Read each field exactly once: the peer may change them under us. */
	ncells = *(volatile uint32_t *) &ring->ncells;
	cell_size = *(volatile uint32_t *) &ring->cell_size;
	if (!geometry_valid(ncells, cell_size, bytes_available))
		return -EPROTO;

	ref->ring = ring;
	ref->mask = ncells - 1;
	ref->cell_size = cell_size;
	return 0;
}

/*
 * Advance counter (tail for producers, head for consumers) past the next
 * position whose cell has seq == position + ready_offset, and return that
 * cell and position.  NULL when the cell is not ready (ring full for
 * producers, empty for consumers) or the ring is corrupt.
 */
static void *claim(const struct xshm_ring_ref *ref, _Atomic uint64_t *counter,
		   uint64_t ready_offset, uint64_t *claimed)
{
	uint64_t pos = atomic_load_explicit(counter, memory_order_relaxed);

	for (;;) {
		unsigned char *cell = cell_at(ref, pos);
		uint64_t seq = atomic_load_explicit(seq_of(cell),
						    memory_order_acquire);
		int64_t diff = (int64_t) (seq - (pos + ready_offset));
		uint64_t now;

		if (diff == 0) {
			if (atomic_compare_exchange_weak_explicit(
				    counter, &pos, pos + 1,
				    memory_order_relaxed, memory_order_relaxed)) {
				*claimed = pos;
				return cell;
			}
			continue;
		}
		if (diff < 0)
			return NULL;
		/*
		 * Our pos is stale.  A seq from a later lap implies the counter
		 * moved past pos (its publisher moved it first), so an
		 * unchanged counter means a peer scribbled on the ring.
		 */
		now = atomic_load_explicit(counter, memory_order_relaxed);
		if (now == pos)
			return NULL;
		pos = now;
	}
}

void *xshm_ring_reserve(const struct xshm_ring_ref *ref)
{
	uint64_t pos;

	return claim(ref, &ref->ring->tail, 0, &pos);
}

void xshm_ring_commit(const struct xshm_ring_ref *ref, void *cell)
{
	/* Until commit the cell's seq still holds the position we claimed. */
	uint64_t pos = atomic_load_explicit(seq_of(cell), memory_order_relaxed);

	atomic_store_explicit(seq_of(cell), pos + 1, memory_order_release);
}

void *xshm_ring_cell(const struct xshm_ring_ref *ref, uint64_t pos)
{
	return cell_at(ref, pos);
}

/* Whether the n cells from pos are free in pos's lap; -1: pos is stale. */
static int run_free(const struct xshm_ring_ref *ref, uint64_t pos, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seq = atomic_load_explicit(seq_of(cell_at(ref, pos + i)),
						    memory_order_acquire);
		int64_t diff = (int64_t) (seq - (pos + i));

		if (diff < 0)
			return 0;
		if (diff > 0)
			return -1;
	}
	return 1;
}

int xshm_ring_reserve_n(const struct xshm_ring_ref *ref, uint32_t n,
			uint64_t *pos)
{
	_Atomic uint64_t *tail = &ref->ring->tail;
	uint64_t at = atomic_load_explicit(tail, memory_order_relaxed);

	if (n == 0 || n > (ref->mask + 1) / 4)
		return -EINVAL;
	for (;;) {
		int state = run_free(ref, at, n);
		uint64_t now;

		if (state > 0) {
			if (atomic_compare_exchange_weak_explicit(
				    tail, &at, at + n, memory_order_relaxed,
				    memory_order_relaxed)) {
				*pos = at;
				return 0;
			}
			continue;
		}
		if (state == 0)
			return -EAGAIN;
		/* As in claim(): a later lap with an unchanged tail is corruption. */
		now = atomic_load_explicit(tail, memory_order_relaxed);
		if (now == at)
			return -EAGAIN;
		at = now;
	}
}

void *xshm_ring_peek_at(const struct xshm_ring_ref *ref, uint32_t i)
{
	uint64_t pos = atomic_load_explicit(&ref->ring->head,
					    memory_order_relaxed) + i;
	unsigned char *cell = cell_at(ref, pos);
	uint64_t seq = atomic_load_explicit(seq_of(cell), memory_order_acquire);

	return seq == pos + 1 ? cell : NULL;
}

void xshm_ring_release_n(const struct xshm_ring_ref *ref, uint32_t n)
{
	uint64_t head = atomic_load_explicit(&ref->ring->head,
					     memory_order_relaxed);

	atomic_store_explicit(&ref->ring->head, head + n, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(seq_of(cell_at(ref, head + i)),
				      head + i + ref->mask + 1,
				      memory_order_release);
}

void *xshm_ring_peek(const struct xshm_ring_ref *ref)
{
	uint64_t head = atomic_load_explicit(&ref->ring->head,
					     memory_order_relaxed);
	unsigned char *cell = cell_at(ref, head);
	uint64_t seq = atomic_load_explicit(seq_of(cell), memory_order_acquire);

	return seq == head + 1 ? cell : NULL;
}

void xshm_ring_release(const struct xshm_ring_ref *ref, void *cell)
{
	/* The single consumer's head names the cell; trust it over a pointer. */
	uint64_t head = atomic_load_explicit(&ref->ring->head,
					     memory_order_relaxed);

	atomic_store_explicit(&ref->ring->head, head + 1, memory_order_relaxed);
	atomic_store_explicit(seq_of(cell_at(ref, head)), head + ref->mask + 1,
			      memory_order_release);
}

static int payload_fits(const struct xshm_ring_ref *ref, size_t len)
{
	return len <= ref->cell_size - sizeof(struct xshm_cell_seq);
}

int xshm_ring_pop(const struct xshm_ring_ref *ref, void *out, size_t len)
{
	unsigned char *cell;
	uint64_t pos;

	if (!payload_fits(ref, len))
		return -EINVAL;
	cell = claim(ref, &ref->ring->head, 1, &pos);
	if (!cell)
		return -EAGAIN;
	memcpy(out, cell + sizeof(struct xshm_cell_seq), len);
	atomic_store_explicit(seq_of(cell), pos + ref->mask + 1,
			      memory_order_release);
	return 0;
}

int xshm_ring_push(const struct xshm_ring_ref *ref, const void *in, size_t len)
{
	unsigned char *cell;

	if (!payload_fits(ref, len))
		return -EINVAL;
	cell = xshm_ring_reserve(ref);
	if (!cell)
		return -EAGAIN;
	memcpy(cell + sizeof(struct xshm_cell_seq), in, len);
	xshm_ring_commit(ref, cell);
	return 0;
}
