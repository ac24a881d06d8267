/* See store_choice.h for what is measured and why. */
#include "estimate.h"
#include "store_choice.h"

enum xshm_stores xshm_store_pick(struct xshm_store_choice *choice)
{
	enum xshm_stores other = choice->chosen == XSHM_STORES_CACHED ?
				 XSHM_STORES_STREAMING : XSHM_STORES_CACHED;

	choice->fills++;
	if (!choice->cost[other] ||
	    choice->fills % XSHM_STORE_PROBE_EVERY == 0)
		return other;
	return choice->chosen;
}

static void decide(struct xshm_store_choice *choice)
{
	uint64_t cached = choice->cost[XSHM_STORES_CACHED];
	uint64_t streaming = choice->cost[XSHM_STORES_STREAMING];

	if (!cached || !streaming)
		return;
	if (cached * 100 > XSHM_STORE_STREAM_ABOVE * streaming)
		choice->chosen = XSHM_STORES_STREAMING;
	else if (cached * 100 < XSHM_STORE_CACHE_BELOW * streaming)
		choice->chosen = XSHM_STORES_CACHED;
}

void xshm_store_record(struct xshm_store_choice *choice,
		       enum xshm_stores kind, uint64_t cycles, size_t len)
{
	if (xshm_estimate_per_kib(&choice->cost[kind], cycles, len))
		decide(choice);
}
