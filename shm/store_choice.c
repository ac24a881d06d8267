/* See store_choice.h for what is measured and why. */
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

/* sample <= UINT32_MAX / 4; an estimate is never 0 once set. */
static void update(uint32_t *estimate, uint64_t sample)
{
	if (*estimate && sample > 4 * (uint64_t) *estimate)
		sample = 4 * (uint64_t) *estimate;
	if (!*estimate || sample < *estimate)
		*estimate = sample ? (uint32_t) sample : 1;
	else
		*estimate += (uint32_t) ((sample - *estimate) / 8);
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
	uint64_t per_kib;

	if (!len)
		return;
	per_kib = cycles * 1024 / len;
	update(&choice->cost[kind], per_kib > UINT32_MAX / 4 ?
				    UINT32_MAX / 4 : per_kib);
	decide(choice);
}
