/*
 * Lock-free multi-producer single-consumer ring of fixed-size cells.
 *
 * Each cell begins with a sequence number (struct xshm_cell_seq) and ends
 * with a claim word (XSHM_CELL_CLAIM_SIZE bytes), both ring.c's.  A producer
 * claims position p by CAS on tail when cell[p].seq == p, fills the cell and
 * publishes it by storing p + 1 in its seq.  The consumer sees cell[head]
 * ready when its seq == head + 1 and hands it back with seq = head + ncells.
 * Cells of one producer are therefore consumed in the order it pushed them.
 *
 * A producer that dies between reserve and commit would stop the consumer
 * at its cell for good.  So right after winning a position it records its
 * pid and the position in the cell's claim word, and the region owner, off
 * the hot path, skips a reserved cell whose claimant is dead (or, without a
 * claim, that stayed reserved for XSHM_RING_STALL_NS).  A producer that was
 * only slow finds its cell skipped before reserve returns, and takes another
 * position: once reserve has returned a cell, it is the producer's to
 * commit (ring.c has the handshake that makes it so).
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

#ifdef XSHM_RING_TEST_HOOKS
/*
 * Tests of the handshake only (test/shm/test_ring_handshake.c, which
 * compiles ring.c with XSHM_RING_TEST_HOOKS): called at each of its steps,
 * so that a test can act there as another process would.
 */
enum xshm_ring_step {
	XSHM_RING_PUSH_WON,	/* a push won pos, not claimed yet */
	XSHM_RING_PUSH_CLAIMED,	/* ... claimed it, not checked yet */
	XSHM_RING_ROB_MARKED,	/* the owner marked pos, claim not read yet */
};
extern void (*xshm_ring_test_step)(enum xshm_ring_step step, void *cell,
				   uint64_t pos);
#endif

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

/*
 * Producer side (any number of threads or processes).  reserve returns the
 * cell and its position, or NULL when the ring is full; commit publishes it.
 */
void *xshm_ring_reserve(const struct xshm_ring_ref *ref, uint64_t *pos);
void xshm_ring_commit(const struct xshm_ring_ref *ref, void *cell,
		      uint64_t pos);

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
/*
 * Producer hint: asks for ownership of the cache lines of the first len
 * bytes from the cell that the next reserve will claim on (across the
 * cells after it), so that the stores of a message pushed there need not
 * wait for them.  The first cell's first line is left alone: the consumer
 * polls it.  Only a hint (shm/prefetch.h).
 */
void xshm_ring_warm(const struct xshm_ring_ref *ref, size_t len);

/* The cell of position pos (any lap). */
static inline void *xshm_ring_cell(const struct xshm_ring_ref *ref,
				   uint64_t pos)
{
	return ref->ring->cells + (pos & ref->mask) * ref->cell_size;
}

/*
 * Consumer side (one thread at a time).  peek is inline: an idle endpoint
 * calls it on every poll.  It returns the head cell once published, else
 * NULL.
 */
static inline void *xshm_ring_peek(const struct xshm_ring_ref *ref)
{
	uint64_t head = atomic_load_explicit(&ref->ring->head,
					     memory_order_relaxed);
	struct xshm_cell_seq *cell = xshm_ring_cell(ref, head);
	uint64_t seq = atomic_load_explicit(&cell->seq, memory_order_acquire);

	return seq == head + 1 ? cell : NULL;
}
void xshm_ring_release(const struct xshm_ring_ref *ref, void *cell);
/* The published cell i places after the head, or NULL. */
void *xshm_ring_peek_at(const struct xshm_ring_ref *ref, uint32_t i);
/* Releases the head cell and the n - 1 after it. */
void xshm_ring_release_n(const struct xshm_ring_ref *ref, uint32_t n);

/*
 * Stall reaping, off the hot path, by the region owner only.  A cell is
 * taken from a process whose claim names it and that is dead at once, and
 * from an unknown one (it died before it could store its claim) once the
 * same position has been seen stalled for XSHM_RING_STALL_NS.  A claimant
 * that is alive is never robbed.  now_ns is CLOCK_MONOTONIC.
 */
#define XSHM_RING_STALL_NS	(5 * 1000000000ULL)

struct xshm_ring_stall {
	uint64_t pos;
	uint64_t since_ns;
	int watching;
};

/*
 * The cell at head was reserved but never committed: skip it and advance
 * head.  Returns 1 when it skipped one, else 0.  For the ring's consumer.
 */
int xshm_ring_reap_stalled(const struct xshm_ring_ref *ref,
			   struct xshm_ring_stall *stall, uint64_t now_ns);

#endif
