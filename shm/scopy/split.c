/* See split.h. */
#include <errno.h>
#include <sched.h>

#include "split.h"
#include "shm/liveness.h"

#define CHUNK_BITS	16
#define CHUNK_MASK	((1ull << CHUNK_BITS) - 1)

static uint32_t gen_of(uint64_t claims)
{
	return (uint32_t) (claims >> 32);
}

static size_t front_of(uint64_t claims)
{
	return (size_t) ((claims >> CHUNK_BITS) & CHUNK_MASK);
}

static size_t back_of(uint64_t claims)
{
	return (size_t) (claims & CHUNK_MASK);
}

void xshm_split_start(struct xshm_split *split, uint32_t gen)
{
	atomic_store_explicit(&split->pushed, 0, memory_order_relaxed);
	atomic_store_explicit(&split->claims, (uint64_t) gen << 32,
			      memory_order_release);
}

enum claim_kind { CLAIM_FRONT, CLAIM_BACK, CLAIM_REST };

/* The claims word once kind has claimed from it. */
static uint64_t claimed(uint64_t claims, uint32_t gen, size_t nchunks,
			enum claim_kind kind)
{
	switch (kind) {
	case CLAIM_FRONT:
		return claims + (1ull << CHUNK_BITS);
	case CLAIM_BACK:
		return claims + 1;
	default:
		return (uint64_t) gen << 32 | (uint64_t) nchunks << CHUNK_BITS;
	}
}

/*
 * One compare-and-swap loop for every kind of claim: each fails on another
 * generation or when nothing is left, and the rest also once the back has
 * claimed.  Returns the index of the (first) chunk claimed, or -1.
 */
static long claim(struct xshm_split *split, uint32_t gen, size_t nchunks,
		  enum claim_kind kind)
{
	uint64_t claims = atomic_load_explicit(&split->claims,
					       memory_order_acquire);

	if (nchunks > XSHM_SPLIT_CHUNKS_MAX)
		return -1;
	for (;;) {
		size_t taken_front = front_of(claims), taken_back = back_of(claims);
		uint64_t next = claimed(claims, gen, nchunks, kind);

		if (gen_of(claims) != gen ||
		    taken_front + taken_back >= nchunks ||
		    (kind == CLAIM_REST && taken_back))
			return -1;
		if (atomic_compare_exchange_weak_explicit(&split->claims,
							  &claims, next,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return (long) (kind == CLAIM_BACK ?
				       nchunks - 1 - taken_back : taken_front);
	}
}

long xshm_split_claim(struct xshm_split *split, uint32_t gen, size_t nchunks,
		      bool front)
{
	return claim(split, gen, nchunks, front ? CLAIM_FRONT : CLAIM_BACK);
}

long xshm_split_claim_rest(struct xshm_split *split, uint32_t gen,
			   size_t nchunks)
{
	return claim(split, gen, nchunks, CLAIM_REST);
}

void xshm_split_pushed(struct xshm_split *split, bool failed)
{
	atomic_fetch_add_explicit(&split->pushed,
				  1 + (failed ? XSHM_SPLIT_FAILED : 0),
				  memory_order_release);
}

bool xshm_split_sender_done(struct xshm_split *split, uint32_t gen,
			    bool *failed)
{
	uint64_t claims = atomic_load_explicit(&split->claims,
					       memory_order_acquire);
	uint64_t pushed = atomic_load_explicit(&split->pushed,
					       memory_order_acquire);

	if (gen_of(claims) != gen) {
		*failed = true;
		return true;
	}
	*failed = pushed >= XSHM_SPLIT_FAILED;
	return (pushed & (XSHM_SPLIT_FAILED - 1)) >= back_of(claims);
}

#define CLOCK_EVERY		64	/* polls between readings of the clock */
/*
 * Once spun, between checks that the other side's process runs.  By the
 * clock: a yield may last a scheduler round where threads outnumber the
 * cores.
 */
#define CHECK_EVERY_NS		1000000

int xshm_split_wait_other(struct xshm_split *split, uint32_t gen,
			  struct xshm_owner other, uint64_t chunk_ns)
{
	uint64_t start = xshm_now_ns(), spin_ns = xshm_split_spin_ns(chunk_ns);
	uint64_t checked = 0;
	bool failed;

	for (unsigned long polls = 1;
	     !xshm_split_sender_done(split, gen, &failed); polls++) {
		uint64_t now;

		if (!checked) {
			if (polls % CLOCK_EVERY == 0 &&
			    (now = xshm_now_ns()) - start >= spin_ns)
				checked = now;
			continue;
		}
		sched_yield();
		now = xshm_now_ns();
		if (now - checked < CHECK_EVERY_NS)
			continue;
		if (!xshm_owner_alive(other))
			return -ESRCH;
		checked = now;
	}
	return failed ? -EIO : 0;
}
