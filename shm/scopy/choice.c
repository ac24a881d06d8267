/* See choice.h for what is measured and why. */
#include "shm/estimate.h"
#include "choice.h"

enum xshm_large_path xshm_scopy_pick(uint32_t large_split, size_t len,
				     uint32_t sends[XSHM_SCOPY_SIZE_CLASSES])
{
	unsigned c = xshm_scopy_size_class(len);
	bool split = large_split & (1u << c);
	uint32_t n = ++sends[c];

	if ((n > 1 && n <= 1 + XSHM_SCOPY_EARLY_PROBES) ||
	    n % XSHM_SCOPY_PROBE_EVERY == 0)
		split = !split;
	return split ? XSHM_LARGE_SPLIT : XSHM_LARGE_PIPELINE;
}

uint32_t xshm_scopy_wanted(const struct xshm_scopy_choice
			   choices[XSHM_SCOPY_SIZE_CLASSES])
{
	uint32_t large_split = 0;

	for (unsigned c = 0; c < XSHM_SCOPY_SIZE_CLASSES; c++)
		if (choices[c].chosen == XSHM_LARGE_SPLIT)
			large_split |= 1u << c;
	return large_split;
}

static void decide(struct xshm_scopy_choice *choice)
{
	uint64_t pipeline = choice->cost[XSHM_LARGE_PIPELINE];
	uint64_t split = choice->cost[XSHM_LARGE_SPLIT];

	if (!pipeline || !split)
		return;
	if (split * 100 < XSHM_SCOPY_SPLIT_BELOW * pipeline)
		choice->chosen = XSHM_LARGE_SPLIT;
	else if (split * 100 > XSHM_SCOPY_PIPELINE_ABOVE * pipeline)
		choice->chosen = XSHM_LARGE_PIPELINE;
}

void xshm_scopy_record(struct xshm_scopy_choice *choice,
		       enum xshm_large_path path, uint64_t cycles, size_t len)
{
	if (xshm_estimate_per_kib(&choice->cost[path], cycles, len))
		decide(choice);
}
