/* See split.h. */
#include "split.h"

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

long xshm_split_claim(struct xshm_split *split, uint32_t gen, size_t nchunks,
		      bool front)
{
	uint64_t claims = atomic_load_explicit(&split->claims,
					       memory_order_acquire);

	if (nchunks > XSHM_SPLIT_CHUNKS_MAX)
		return -1;
	for (;;) {
		size_t taken_front = front_of(claims), taken_back = back_of(claims);
		uint64_t next = claims + (front ? 1ull << CHUNK_BITS : 1);

		if (gen_of(claims) != gen || taken_front + taken_back >= nchunks)
			return -1;
		if (atomic_compare_exchange_weak_explicit(&split->claims,
							  &claims, next,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return (long) (front ? taken_front :
				       nchunks - 1 - taken_back);
	}
}

long xshm_split_claim_rest(struct xshm_split *split, uint32_t gen,
			   size_t nchunks)
{
	uint64_t claims = atomic_load_explicit(&split->claims,
					       memory_order_acquire);

	if (nchunks > XSHM_SPLIT_CHUNKS_MAX)
		return -1;
	for (;;) {
		size_t taken_front = front_of(claims);
		uint64_t all = (uint64_t) gen << 32 |
			       (uint64_t) nchunks << CHUNK_BITS;

		if (gen_of(claims) != gen || back_of(claims) ||
		    taken_front >= nchunks)
			return -1;
		if (atomic_compare_exchange_weak_explicit(&split->claims,
							  &claims, all,
							  memory_order_acq_rel,
							  memory_order_acquire))
			return (long) taken_front;
	}
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
