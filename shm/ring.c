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
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "prefetch.h"
#include "proc.h"
#include "ring.h"

static_assert(offsetof(struct xshm_cmd, seq) == 0, "cmd starts with seq");
static_assert(offsetof(struct xshm_index_cell, seq) == 0,
	      "index cell starts with seq");

/* Bytes of a cell that are neither its seq nor its claim. */
#define CELL_OVERHEAD	(sizeof(struct xshm_cell_seq) + XSHM_CELL_CLAIM_SIZE)

/*
 * A claim: the taker's pid in the high half, in the low half the position's
 * low 31 bits and whether it was taken to pop (multi-consumer rings: a pop
 * claims a cell that its pusher claimed before, in the same lap).  A claim
 * left from an earlier lap names another position and is ignored; 2^31
 * positions apart is as good as never.
 */
#define CLAIM_POP		(1ULL << 31)
#define CLAIM_POS_MASK		(CLAIM_POP - 1)

enum claim_kind { CLAIM_PUSH, CLAIM_TAKE_POP };

static _Atomic uint64_t *seq_of(void *cell)
{
	return &((struct xshm_cell_seq *) cell)->seq;
}

static _Atomic uint64_t *claim_of(uint32_t cell_size, void *cell)
{
	return (_Atomic uint64_t *) ((unsigned char *) cell + cell_size -
				     XSHM_CELL_CLAIM_SIZE);
}

static uint64_t claim_tag(uint64_t pos, enum claim_kind kind)
{
	return (pos & CLAIM_POS_MASK) | (kind == CLAIM_TAKE_POP ? CLAIM_POP : 0);
}

static void store_claim(const struct xshm_ring_ref *ref, void *cell,
			uint64_t pos, enum claim_kind kind)
{
	uint64_t claim = (uint64_t) (uint32_t) xshm_proc_self() << 32 |
			 claim_tag(pos, kind);

	atomic_store_explicit(claim_of(ref->cell_size, cell), claim,
			      memory_order_relaxed);
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
	for (i = 0; i < ncells; i++) {
		unsigned char *cell = ring->cells + (size_t) i * cell_size;

		atomic_init(seq_of(cell), i);
		atomic_init(claim_of(cell_size, cell), 0);
	}
}

static int geometry_valid(uint32_t ncells, uint32_t cell_size,
			  size_t bytes_available)
{
	if (ncells == 0 || (ncells & (ncells - 1)) != 0)
		return 0;
	if (cell_size < CELL_OVERHEAD || cell_size % 8 != 0)
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
static inline __attribute__((always_inline))
void *advance(const struct xshm_ring_ref *ref, _Atomic uint64_t *counter,
		     uint64_t ready_offset, uint64_t *claimed)
{
	uint64_t pos = atomic_load_explicit(counter, memory_order_relaxed);

	for (;;) {
		unsigned char *cell = xshm_ring_cell(ref, pos);
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

/*
 * Take the next position of counter whose cell is ready, and claim it.  The
 * seq re-read after the claim store sees whether the owner skipped the cell
 * while we were stalled before claiming it (it then belongs to a later lap):
 * take another one.
 */
/* Inline in each caller, whose constant arguments then fold away. */
static inline __attribute__((always_inline))
void *take(const struct xshm_ring_ref *ref, _Atomic uint64_t *counter,
		  uint64_t ready_offset, enum claim_kind kind, uint64_t *pos)
{
	for (;;) {
		unsigned char *cell = advance(ref, counter, ready_offset, pos);

		if (!cell)
			return NULL;
		store_claim(ref, cell, *pos, kind);
		if (atomic_load_explicit(seq_of(cell), memory_order_relaxed) ==
		    *pos + ready_offset)
			return cell;
	}
}

void *xshm_ring_reserve(const struct xshm_ring_ref *ref, uint64_t *pos)
{
	return take(ref, &ref->ring->tail, 0, CLAIM_PUSH, pos);
}

/* Publishing is a CAS so that a producer learns that it was skipped. */
static int hand_over(void *cell, uint64_t from, uint64_t to)
{
	return atomic_compare_exchange_strong_explicit(
		       seq_of(cell), &from, to, memory_order_release,
		       memory_order_relaxed) ? 0 : -ESTALE;
}

int xshm_ring_commit(const struct xshm_ring_ref *ref, void *cell, uint64_t pos)
{
	(void) ref;
	return hand_over(cell, pos, pos + 1);
}

void xshm_ring_publish_follower(const struct xshm_ring_ref *ref, void *cell,
				uint64_t pos)
{
	(void) ref;
	atomic_store_explicit(seq_of(cell), pos + 1, memory_order_release);
}

void xshm_ring_warm(const struct xshm_ring_ref *ref, size_t len)
{
	/* any producer may have written tail: xshm_ring_cell masks it */
	uint64_t tail = atomic_load_explicit(&ref->ring->tail,
					     memory_order_relaxed);
	size_t from = XSHM_CACHE_LINE;	/* the first cell's first line: no */

	for (uint64_t at = tail; len; at++, from = 0) {
		unsigned char *cell = xshm_ring_cell(ref, at);
		size_t in_cell = len < ref->cell_size ? len : ref->cell_size;

		if (in_cell > from)
			xshm_prefetch_for_write(cell + from, in_cell - from);
		len -= in_cell;
	}
}

/* Whether the n cells from pos are free in pos's lap; -1: pos is stale. */
static int run_free(const struct xshm_ring_ref *ref, uint64_t pos, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint64_t seq = atomic_load_explicit(seq_of(xshm_ring_cell(ref, pos + i)),
						    memory_order_acquire);
		int64_t diff = (int64_t) (seq - (pos + i));

		if (diff < 0)
			return 0;
		if (diff > 0)
			return -1;
	}
	return 1;
}

/*
 * Claims the n cells from at, then checks that the owner skipped none of
 * them while we stalled before claiming: if it did, the cells we still hold
 * are published empty (a zero op, which receivers drop) and false returned.
 */
static bool claim_run(const struct xshm_ring_ref *ref, uint64_t at, uint32_t n)
{
	bool whole = true;

	for (uint32_t i = 0; i < n; i++)
		store_claim(ref, xshm_ring_cell(ref, at + i), at + i,
			    CLAIM_PUSH);
	for (uint32_t i = 0; i < n; i++)
		if (atomic_load_explicit(seq_of(xshm_ring_cell(ref, at + i)),
					 memory_order_relaxed) != at + i)
			whole = false;
	if (whole)
		return true;
	for (uint32_t i = 0; i < n; i++) {
		unsigned char *cell = xshm_ring_cell(ref, at + i);

		memset(cell + sizeof(struct xshm_cell_seq), 0,
		       ref->cell_size - CELL_OVERHEAD);
		(void) hand_over(cell, at + i, at + i + 1);
	}
	return false;
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
			if (!atomic_compare_exchange_weak_explicit(
				    tail, &at, at + n, memory_order_relaxed,
				    memory_order_relaxed))
				continue;
			if (claim_run(ref, at, n)) {
				*pos = at;
				return 0;
			}
			at = atomic_load_explicit(tail, memory_order_relaxed);
			continue;
		}
		if (state == 0)
			return -EAGAIN;
		/* As in advance(): a later lap with an unchanged tail is corruption. */
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
	unsigned char *cell = xshm_ring_cell(ref, pos);
	uint64_t seq = atomic_load_explicit(seq_of(cell), memory_order_acquire);

	return seq == pos + 1 ? cell : NULL;
}

void xshm_ring_release_n(const struct xshm_ring_ref *ref, uint32_t n)
{
	uint64_t head = atomic_load_explicit(&ref->ring->head,
					     memory_order_relaxed);

	atomic_store_explicit(&ref->ring->head, head + n, memory_order_relaxed);
	for (uint32_t i = 0; i < n; i++)
		atomic_store_explicit(seq_of(xshm_ring_cell(ref, head + i)),
				      head + i + ref->mask + 1,
				      memory_order_release);
}

void xshm_ring_release(const struct xshm_ring_ref *ref, void *cell)
{
	/* The single consumer's head names the cell; trust it over a pointer. */
	(void) cell;
	xshm_ring_release_n(ref, 1);
}

static int payload_fits(const struct xshm_ring_ref *ref, size_t len)
{
	return len <= ref->cell_size - CELL_OVERHEAD;
}

static void *payload_of(void *cell)
{
	return (unsigned char *) cell + sizeof(struct xshm_cell_seq);
}

void *xshm_ring_pop_begin(const struct xshm_ring_ref *ref, uint64_t *pos)
{
	return take(ref, &ref->ring->head, 1, CLAIM_TAKE_POP, pos);
}

int xshm_ring_pop_end(const struct xshm_ring_ref *ref, void *cell, uint64_t pos)
{
	return hand_over(cell, pos + 1, pos + ref->mask + 1);
}

int xshm_ring_pop(const struct xshm_ring_ref *ref, void *out, size_t len)
{
	unsigned char *cell;
	uint64_t pos;

	if (!payload_fits(ref, len))
		return -EINVAL;
	do {
		cell = xshm_ring_pop_begin(ref, &pos);
		if (!cell)
			return -EAGAIN;
		memcpy(out, payload_of(cell), len);
	} while (xshm_ring_pop_end(ref, cell, pos));
	return 0;
}

int xshm_ring_push(const struct xshm_ring_ref *ref, const void *in, size_t len)
{
	unsigned char *cell;
	uint64_t pos;

	if (!payload_fits(ref, len))
		return -EINVAL;
	do {
		cell = xshm_ring_reserve(ref, &pos);
		if (!cell)
			return -EAGAIN;
		memcpy(payload_of(cell), in, len);
	} while (xshm_ring_commit(ref, cell, pos));
	return 0;
}

/* ---- stall reaping ---- */

static void stall_forget(struct xshm_ring_stall *stall)
{
	stall->watching = 0;
}

/*
 * Whether the cell at pos, held since before this call, may be taken from
 * its holder: a claim for pos names it, and it is dead; no claim (it died
 * or stalls between winning pos and claiming it): once pos has been seen
 * stuck for XSHM_RING_STALL_NS.
 */
static bool holder_gone(const struct xshm_ring_ref *ref, void *cell,
			uint64_t pos, enum claim_kind kind,
			struct xshm_ring_stall *stall, uint64_t now_ns)
{
	uint64_t claim = atomic_load_explicit(claim_of(ref->cell_size, cell),
					      memory_order_relaxed);
	pid_t pid = (pid_t) (uint32_t) (claim >> 32);

	if ((claim & (CLAIM_POS_MASK | CLAIM_POP)) == claim_tag(pos, kind) &&
	    pid > 0)
		return !xshm_proc_pid_alive(pid);
	if (!stall->watching || stall->pos != pos) {
		stall->watching = 1;
		stall->pos = pos;
		stall->since_ns = now_ns;
		return false;
	}
	return now_ns - stall->since_ns >= XSHM_RING_STALL_NS;
}

int xshm_ring_reap_stalled(const struct xshm_ring_ref *ref,
			   struct xshm_ring_stall *stall, uint64_t now_ns)
{
	struct xshm_ring *ring = ref->ring;
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	unsigned char *cell = xshm_ring_cell(ref, head);

	if ((int64_t) (tail - head) <= 0 ||
	    atomic_load_explicit(seq_of(cell), memory_order_acquire) != head) {
		stall_forget(stall);
		return 0;
	}
	if (!holder_gone(ref, cell, head, CLAIM_PUSH, stall, now_ns))
		return 0;
	/* The CAS decides against a commit racing with us: one of us wins. */
	if (hand_over(cell, head, head + ref->mask + 1))
		return 0;
	atomic_compare_exchange_strong_explicit(&ring->head, &head, head + 1,
						memory_order_relaxed,
						memory_order_relaxed);
	stall_forget(stall);
	return 1;
}

int xshm_ring_reap_stalled_pop(const struct xshm_ring_ref *ref,
			       struct xshm_ring_stall *stall, uint64_t now_ns,
			       void *out, size_t len)
{
	struct xshm_ring *ring = ref->ring;
	uint64_t tail = atomic_load_explicit(&ring->tail, memory_order_relaxed);
	uint64_t head = atomic_load_explicit(&ring->head, memory_order_relaxed);
	uint64_t pos = tail - (ref->mask + 1);
	unsigned char *cell = xshm_ring_cell(ref, tail);

	if (!payload_fits(ref, len))
		return -EINVAL;
	/* Popped (head is past it) but not handed back (still pos + 1). */
	if (tail <= ref->mask || (int64_t) (head - pos) <= 0 ||
	    atomic_load_explicit(seq_of(cell), memory_order_acquire) != pos + 1) {
		stall_forget(stall);
		return 0;
	}
	if (!holder_gone(ref, cell, pos, CLAIM_TAKE_POP, stall, now_ns))
		return 0;
	memcpy(out, payload_of(cell), len);
	if (hand_over(cell, pos + 1, tail))
		return 0;
	stall_forget(stall);
	return 1;
}
