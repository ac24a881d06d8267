/*
 * Lock-free multi-producer single-consumer ring of fixed-size cells.
 *
 * Each cell begins with a sequence number (struct xshm_cell_seq).  A producer
 * claims position p by CAS on tail when cell[p].seq == p, fills the cell and
 * publishes it with seq = p + 1.  The consumer sees cell[head] ready when its
 * seq == head + 1 and hands it back with seq = head + ncells.  Cells of one
 * producer are therefore consumed in the order it pushed them.
 *
 * The ring lives in shared memory and may be written by an untrusted peer, so
 * every process uses it through a struct xshm_ring_ref: a private, validated
 * copy of the geometry that is never re-read from shared memory.
 */
#ifndef XSHM_SHM_RING_H
#define XSHM_SHM_RING_H

#include <stddef.h>
#include <stdint.h>

#include "layout.h"

struct xshm_ring_ref {
	struct xshm_ring *ring;
	uint64_t mask;		/* ncells - 1 */
	uint32_t cell_size;
};

/* Bytes needed for a ring of ncells cells of cell_size bytes. */
size_t xshm_ring_bytes(uint32_t ncells, uint32_t cell_size);

/* Initialise a ring in memory the caller owns; ncells is a power of two. */
void xshm_ring_init(struct xshm_ring *ring, uint32_t ncells, uint32_t cell_size);

/*
 * Validate a ring found in shared memory (at most bytes_available long) and
 * fill ref.  Returns 0 or -EPROTO for an impossible geometry.
 */
int xshm_ring_attach(struct xshm_ring_ref *ref, struct xshm_ring *ring,
		     size_t bytes_available);

/* Producer side (any number of threads or processes). */
void *xshm_ring_reserve(const struct xshm_ring_ref *ref);	/* NULL: full */
void xshm_ring_commit(const struct xshm_ring_ref *ref, void *cell);

/*
 * n consecutive positions in one claim, so that one message can span
 * several cells that no other producer's cell separates.  Returns the
 * first position (the cells are xshm_ring_cell(ref, pos + i)), or -EAGAIN
 * when fewer than n cells are free; n must be at most ncells / 4.  Each
 * cell is committed on its own: commit the first one last, and a consumer
 * that sees it published finds the others published too.
 */
int xshm_ring_reserve_n(const struct xshm_ring_ref *ref, uint32_t n,
			uint64_t *pos);
void *xshm_ring_cell(const struct xshm_ring_ref *ref, uint64_t pos);

/* Consumer side (one thread at a time). */
void *xshm_ring_peek(const struct xshm_ring_ref *ref);		/* NULL: empty */
void xshm_ring_release(const struct xshm_ring_ref *ref, void *cell);
/* The published cell i places after the head, or NULL. */
void *xshm_ring_peek_at(const struct xshm_ring_ref *ref, uint32_t i);
/* Releases the head cell and the n - 1 after it. */
void xshm_ring_release_n(const struct xshm_ring_ref *ref, uint32_t n);

/*
 * Multi-consumer dequeue: copies the len bytes that follow the cell's
 * sequence number into out.  Returns 0, -EAGAIN when the ring is empty, or
 * -EINVAL when len exceeds cell_size - 8.  Used by the pool's free-index queue, where every sender is a consumer.
 */
int xshm_ring_pop(const struct xshm_ring_ref *ref, void *out, size_t len);

/* Multi-producer enqueue of len bytes; 0, -EAGAIN when full, or -EINVAL. */
int xshm_ring_push(const struct xshm_ring_ref *ref, const void *in, size_t len);

#endif
