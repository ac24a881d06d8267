/*
 * Bounce buffers or the split single copy (prov/xshm/rts.c) for a large
 * message, chosen by timing.
 *
 * Which is faster depends on the pages under the application's buffers.
 * The single copy makes the kernel pin every page it touches: on the AMD
 * EPYC guest this was measured on, with 4 KiB pages, one process copied
 * about 5.5 GB/s that way, and the bounce-buffer pipeline, where both
 * copy at once, beat the split single copy from 1 to 4 MiB (latency 0.65
 * to 0.9 of it, streaming bandwidth 1.6 times).  On transparent huge pages
 * the single copy ran two to three times faster and the split won (latency
 * 0.6 of the pipeline's at 2 and 4 MiB, bandwidth 1.2 to 1.4 times).
 *
 * So a receiver times the large messages it receives, in cycles per KiB:
 * a pipelined one from the arrival of its first piece, matched, to the
 * copy of its last; a split copy from its start to its end.  It keeps an
 * estimate for each path and size class (shm/estimate.h): up to 1 MiB a
 * message fits the pool of bounce buffers, and above, the sender waits for
 * buffers to come back, which on huge pages made the pipeline cost twice
 * as much per KiB at 2 MiB as at 1.  It asks its senders, through its
 * region header (large_split, a bit per size class), for the split copy
 * once that estimate is below XSHM_SCOPY_SPLIT_BELOW percent of the
 * pipeline's, and for the pipeline again above XSHM_SCOPY_PIPELINE_ABOVE
 * percent.  A sender sends its second and third messages of a size class
 * the other way, so that a receiver has timed both paths twice after its
 * first sender's first four (a first copy can be a cold one, and an
 * estimate drops to a cheaper sample at once), and then one in
 * XSHM_SCOPY_PROBE_EVERY, to keep the other estimate current.  Sender and receiver time nothing against each other,
 * and the receiver sees both paths whole: a sender's pieces can all fit in
 * the receiver's pool before it has copied any.
 */
#ifndef XSHM_SHM_SCOPY_CHOICE_H
#define XSHM_SHM_SCOPY_CHOICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define XSHM_SCOPY_PROBE_EVERY	64
#define XSHM_SCOPY_EARLY_PROBES	2	/* after a size class's first message */
/* Thresholds on the ratio split / pipeline, in percent. */
#define XSHM_SCOPY_SPLIT_BELOW	80
#define XSHM_SCOPY_PIPELINE_ABOVE 100

/* Up to 1 MiB, to 2 MiB, to 4 MiB, and more. */
#define XSHM_SCOPY_SIZE_CLASSES	4

enum xshm_large_path {
	XSHM_LARGE_PIPELINE,
	XSHM_LARGE_SPLIT,
};

/* A receiver's choice for one size class; zeroed, it asks for the pipeline. */
struct xshm_scopy_choice {
	uint32_t cost[2];	/* cycles per KiB, by enum xshm_large_path */
	enum xshm_large_path chosen;
};

static inline unsigned xshm_scopy_size_class(size_t len)
{
	unsigned c = 0;

	for (size_t top = (size_t) 1 << 20;
	     len > top && c < XSHM_SCOPY_SIZE_CLASSES - 1; top <<= 1)
		c++;
	return c;
}

/* A message of len bytes arrived by that path in cycles. */
void xshm_scopy_record(struct xshm_scopy_choice *choice,
		       enum xshm_large_path path, uint64_t cycles, size_t len);

/* The header's large_split for a receiver's choices, by size class. */
uint32_t xshm_scopy_wanted(const struct xshm_scopy_choice
			   choices[XSHM_SCOPY_SIZE_CLASSES]);

/*
 * A sender's path for its next message of len bytes to a receiver whose
 * header says large_split (any value: a bit it did not set is the
 * pipeline): the one asked for, or a probe of the other; sends counts the
 * sender's picks by size class.
 */
enum xshm_large_path xshm_scopy_pick(uint32_t large_split, size_t len,
				     uint32_t sends[XSHM_SCOPY_SIZE_CLASSES]);

#endif
