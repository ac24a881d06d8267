/*
 * Bounded ring after the per-cell sequence number scheme (see ring.h).
 *
 * Positions are 64-bit and never wrap in practice, so a cell's sequence
 * number tells unambiguously which lap it belongs to.  Producers and
 * consumers synchronise only through the cells' sequence numbers: an acquire
 * load of seq pairs with the release store that published it, which orders
 * the payload.  tail and head themselves only arbitrate between competitors,
 * so their CAS can be relaxed.
 *
 * A push is published by a plain release store of its cell's seq: a locked
 * instruction there waits for the lines of the cell just filled
 * (doc/benchmarks.md measures it).  That is safe because the owner never
 * takes a cell from a producer that may still publish it: robbing
 * (xshm_ring_reap_stalled) and claiming (xshm_ring_reserve) meet in a
 * handshake.  The producer CASes its claim into the cell, then loads seq;
 * the owner CASes seq to a tentative mark, then loads the claim; all four
 * sequentially consistent, so at least one of them sees the other's write.
 * A producer that still sees its position owns the cell: the owner will see
 * its claim, alive, and give the cell back.  One that sees the mark (or a
 * later lap) withdraws its claim and takes another position; the owner
 * finishes the robbery unless it saw a live claim, and a cell given back
 * without a claimant is robbed on a later pass.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "prefetch.h"
#include "proc.h"
#include "ring.h"

static_assert(offsetof(struct xshm_cmd, seq) == 0, "cmd starts with seq");

/* Bytes of a cell that are neither its seq nor its claim. */
#define CELL_OVERHEAD	(sizeof(struct xshm_cell_seq) + XSHM_CELL_CLAIM_SIZE)

/*
 * A claim: the producer's pid in the high half, the position's low 31 bits
 * in the low half.  A claim left from an earlier lap names another position
 * and is ignored; 2^31 positions apart is as good as never.
 */
#define CLAIM_POS_MASK		((1ULL << 31) - 1)

/* The seq of a cell the owner has begun to rob (positions stay below it). */
#define SEQ_TENTATIVE		(1ULL << 63)

#ifdef XSHM_RING_TEST_HOOKS
void (*xshm_ring_test_step)(enum xshm_ring_step step, void *cell,
			    uint64_t pos);
#define TEST_STEP(step, cell, pos)					\
	do {								\
		if (xshm_ring_test_step)				\
			xshm_ring_test_step(step, cell, pos);		\
	} while (0)
#else
#define TEST_STEP(step, cell, pos)	((void) 0)
#endif

static _Atomic uint64_t *seq_of(void *cell)
{
	return &((struct xshm_cell_seq *) cell)->seq;
}

static _Atomic uint64_t *claim_of(uint32_t cell_size, void *cell)
{
	return (_Atomic uint64_t *) ((unsigned char *) cell + cell_size -
				     XSHM_CELL_CLAIM_SIZE);
}

static uint64_t my_claim(uint64_t pos)
{
	return (uint64_t) (uint32_t) xshm_proc_self() << 32 |
	       (pos & CLAIM_POS_MASK);
}

static void store_claim(const struct xshm_ring_ref *ref, void *cell,
			uint64_t pos)
{
	atomic_store_explicit(claim_of(ref->cell_size, cell), my_claim(pos),
			      memory_order_relaxed);
}

/* Whether claim is a taker's of a lap after pos's in the same cell. */
static bool claim_later(uint64_t claim, uint64_t pos)
{
	uint64_t ahead = (claim - pos) & CLAIM_POS_MASK;

	return (claim >> 32) && ahead && ahead < CLAIM_POS_MASK / 2;
}

/*
 * Claims pos's cell for a push, by a CAS that never overwrites the claim of
 * a later lap (a producer robbed while stalled, whose cell was taken again):
 * false then.  SEQ_CST: the producer's half of the handshake (see above).
 */
static bool claim_push(const struct xshm_ring_ref *ref, void *cell,
		       uint64_t pos, uint64_t mine)
{
	_Atomic uint64_t *word = claim_of(ref->cell_size, cell);
	uint64_t old = atomic_load_explicit(word, memory_order_relaxed);

	do {
		if (claim_later(old, pos))
			return false;
	} while (!atomic_compare_exchange_weak_explicit(word, &old, mine,
							memory_order_seq_cst,
							memory_order_relaxed));
	return true;
}

/* Withdraws a push's claim, unless a later lap's replaced it. */
static void withdraw_claim(const struct xshm_ring_ref *ref, void *cell,
			   uint64_t mine)
{
	atomic_compare_exchange_strong_explicit(claim_of(ref->cell_size, cell),
						&mine, 0, memory_order_relaxed,
						memory_order_relaxed);
}

/*
 * Whether the push that claimed pos's cell (claim_push) owns it: its seq,
 * loaded after the claim, still says pos.  SEQ_CST: see the handshake.
 */
static bool push_owns(void *cell, uint64_t pos)
{
	return atomic_load_explicit(seq_of(cell), memory_order_seq_cst) == pos;
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
 * A push: the next free position, claimed and owned (see the handshake
 * above), or NULL when the ring is full.  Inline in the send paths'
 * xshm_ring_reserve.
 */
static inline __attribute__((always_inline))
void *take_push(const struct xshm_ring_ref *ref, uint64_t *pos)
{
	for (;;) {
		unsigned char *cell = advance(ref, &ref->ring->tail, 0, pos);
		uint64_t mine;

		if (!cell)
			return NULL;
		TEST_STEP(XSHM_RING_PUSH_WON, cell, *pos);
		mine = my_claim(*pos);
		if (!claim_push(ref, cell, *pos, mine))
			continue;
		TEST_STEP(XSHM_RING_PUSH_CLAIMED, cell, *pos);
		if (push_owns(cell, *pos))
			return cell;
		withdraw_claim(ref, cell, mine);
	}
}

void *xshm_ring_reserve(const struct xshm_ring_ref *ref, uint64_t *pos)
{
	return take_push(ref, pos);
}

static void publish(void *cell, uint64_t pos)
{
	atomic_store_explicit(seq_of(cell), pos + 1, memory_order_release);
}

void xshm_ring_commit(const struct xshm_ring_ref *ref, void *cell,
		      uint64_t pos)
{
	(void) ref;
	publish(cell, pos);
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

/* A cell of a run whose first was robbed: published empty if still ours. */
static void give_up(const struct xshm_ring_ref *ref, uint64_t pos)
{
	unsigned char *cell = xshm_ring_cell(ref, pos);
	uint64_t mine = my_claim(pos);

	if (!claim_push(ref, cell, pos, mine))
		return;
	if (!push_owns(cell, pos)) {
		withdraw_claim(ref, cell, mine);
		return;
	}
	memset(cell + sizeof(struct xshm_cell_seq), 0,
	       ref->cell_size - CELL_OVERHEAD);
	publish(cell, pos);
}

/*
 * Claims the n cells from at.  Only the first goes through the handshake:
 * while its push owns it, the owner cannot pass it, so no one robs the
 * cells after it, and their claims (there for the owner, should this
 * process die holding them) are plain stores: a CAS would wait for each
 * claim's line, which the receiver read with the payload a lap ago.  When
 * the first was robbed while we stalled before claiming it, each other
 * cell still ours is published empty (a zero op, which receivers drop) and
 * false returned.
 */
static bool claim_run(const struct xshm_ring_ref *ref, uint64_t at, uint32_t n)
{
	unsigned char *first = xshm_ring_cell(ref, at);
	uint64_t mine = my_claim(at);

	if (claim_push(ref, first, at, mine)) {
		if (push_owns(first, at)) {
			for (uint32_t i = 1; i < n; i++)
				store_claim(ref, xshm_ring_cell(ref, at + i),
					    at + i);
			return true;
		}
		withdraw_claim(ref, first, mine);
	}
	for (uint32_t i = 1; i < n; i++)
		give_up(ref, at + i);
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
			TEST_STEP(XSHM_RING_PUSH_WON, xshm_ring_cell(ref, at),
				  at);
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

/* ---- stall reaping ---- */

static void stall_forget(struct xshm_ring_stall *stall)
{
	stall->watching = 0;
}

/* The pid that claim names as the producer of pos, or 0. */
static pid_t claimant(uint64_t claim, uint64_t pos)
{
	pid_t pid = (pid_t) (uint32_t) (claim >> 32);

	return (claim & CLAIM_POS_MASK) == (pos & CLAIM_POS_MASK) && pid > 0 ?
		       pid : 0;
}

/*
 * Whether the cell at pos, held since before this call, may be taken from
 * its holder: a claim for pos names it, and it is dead; no claim (it died
 * or stalls between winning pos and claiming it): once pos has been seen
 * stuck for XSHM_RING_STALL_NS.
 */
static bool holder_gone(const struct xshm_ring_ref *ref, void *cell,
			uint64_t pos, struct xshm_ring_stall *stall,
			uint64_t now_ns)
{
	pid_t pid = claimant(atomic_load_explicit(claim_of(ref->cell_size, cell),
						  memory_order_relaxed),
			     pos);

	if (pid)
		return !xshm_proc_pid_alive(pid);
	if (!stall->watching || stall->pos != pos) {
		stall->watching = 1;
		stall->pos = pos;
		stall->since_ns = now_ns;
		return false;
	}
	return now_ns - stall->since_ns >= XSHM_RING_STALL_NS;
}

/* Whether the claim in cell names a live push of pos. */
static bool live_push_claim(const struct xshm_ring_ref *ref, void *cell,
			    uint64_t pos)
{
	/* SEQ_CST: the owner's half of the handshake (see above). */
	pid_t pid = claimant(atomic_load_explicit(claim_of(ref->cell_size, cell),
						  memory_order_seq_cst),
			     pos);

	return pid && xshm_proc_pid_alive(pid);
}

/*
 * Takes the unpublished cell at pos from its holder, which holder_gone
 * found dead or missing: marks it tentatively, then looks at its claim
 * again.  A live claimant now owns it (it claimed meanwhile): the cell is
 * given back.  The CASes fail only where that claimant published it.
 */
static bool rob(const struct xshm_ring_ref *ref, void *cell, uint64_t pos)
{
	uint64_t expected = pos;
	_Atomic uint64_t *seq = seq_of(cell);

	if (!atomic_compare_exchange_strong_explicit(seq, &expected,
						     pos | SEQ_TENTATIVE,
						     memory_order_seq_cst,
						     memory_order_relaxed))
		return false;
	TEST_STEP(XSHM_RING_ROB_MARKED, cell, pos);
	expected = pos | SEQ_TENTATIVE;
	if (live_push_claim(ref, cell, pos)) {
		atomic_compare_exchange_strong_explicit(seq, &expected, pos,
							memory_order_relaxed,
							memory_order_relaxed);
		return false;
	}
	return atomic_compare_exchange_strong_explicit(seq, &expected,
						       pos + ref->mask + 1,
						       memory_order_release,
						       memory_order_relaxed);
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
	if (!holder_gone(ref, cell, head, stall, now_ns) ||
	    !rob(ref, cell, head))
		return 0;
	atomic_compare_exchange_strong_explicit(&ring->head, &head, head + 1,
						memory_order_relaxed,
						memory_order_relaxed);
	stall_forget(stall);
	return 1;
}

