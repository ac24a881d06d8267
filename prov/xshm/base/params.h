/*
 * Provider parameters (FI_XSHM_*, read once in fi_prov_ini, params.c) and
 * the measured defaults behind them.
 */
#ifndef XSHM_PARAMS_H
#define XSHM_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shm/layout.h"

/* Larger messages take the path measured cheaper (shm/path_choice.h). */
#define XSHM_PATH_MIN		(8 << 10)
/*
 * With FI_XSHM_PATH=static, measured defaults (fi_xshm.7): larger messages
 * take the single copy...
 */
#define XSHM_SCOPY_THRESHOLD	(4 << 20)
/* ... and larger than this, when both sides' buffers are on huge pages... */
#define XSHM_SCOPY_HUGE_MIN	(512 << 10)
/* ... or than this, for a send in a stream (data/path.c). */
#define XSHM_SCOPY_HUGE_STREAM_MIN	(128 << 10)
/*
 * Measured default: every message a run of cells can carry, three 2 KiB
 * cells.  Against a bounce buffer (with the sender's spare ready), side by
 * side in one build with the names swapped: latency 0.86-0.90 at 4097 B,
 * 0.92-0.94 at 5 KiB, 0.94-0.96 at 6032 B, streaming bandwidth 1.08-1.14;
 * with the CPUs far apart (few repetitions), 0.93 at 4097 B and 1.03-1.11
 * above.  Runs of four cells, to 8056 B, cost what a buffer does near and
 * 1.2-1.3 times its latency far from 6 KiB.
 * With 1 KiB cells the runs were longer and lost: 1.09-1.28 times the
 * latency.
 */
#define XSHM_CELLS_THRESHOLD	XSHM_CELLS_MSG_MAX
/*
 * Longer ones take cells only while the sender fills the receiver's
 * buffers with cached stores: one it streams to is far (store_choice.h).
 */
#define XSHM_CELLS_ALWAYS_MAX	4096
#define XSHM_LIVENESS_MS	100	/* default period of the liveness sweep */
#define XSHM_UNEXP_BYTES_MAX	((size_t) 64 << 20) /* default of unexp_bytes_max */
#define XSHM_RMA_SPLIT_MIN	((size_t) 128 << 10) /* default of rma_split_min */
#define XSHM_RMA_POSTED_MAX	((size_t) 1 << 20) /* default of rma_posted_max */

struct xshm_params {
	uint64_t node_id;
	bool cma;			/* single copy allowed */
	bool path_auto;			/* measured path choice, not the sizes */
	/* larger messages have a choice of path (data/path.c) */
	size_t path_min;
	size_t scopy_threshold;		/* larger messages: single copy */
	size_t scopy_huge_min;		/* larger ones, up to the threshold: by pages */
	size_t scopy_huge_stream_min;	/* the same for a send in a stream */
	size_t cells_threshold;		/* smaller ones span ring cells */
	bool numa;			/* regions on the creator's node */
	bool signal_handlers;		/* unlink our regions on signals */
	int liveness_ms;		/* period of the liveness sweep */
	size_t unexp_bytes_max;		/* held unexpected data before flow control */
	enum xshm_bounce_stores {
		XSHM_BOUNCE_STORES_AUTO,	/* chosen by measurement */
		XSHM_BOUNCE_STORES_CACHED,
		XSHM_BOUNCE_STORES_STREAMING,
	} bounce_stores;		/* how senders fill bounce buffers */
	/*
	 * The owner's get_tag: fi_peer(3)'s has a size argument, the
	 * declaration in libfabric's own headers (1.18 to 1.22), which its
	 * owners are built from, has none.
	 */
	enum xshm_peer_abi {
		XSHM_PEER_ABI_AUTO,	/* libfabric's for an owner of its style */
		XSHM_PEER_ABI_SPEC,
		XSHM_PEER_ABI_LIBFABRIC,
	} peer_abi;
	/* RMA checked by its initiator where the target allows (rma_way.c) */
	enum xshm_rma_fast_mode {
		XSHM_RMA_FAST_AUTO,	/* small: posted writes; large: CMA */
		XSHM_RMA_FAST_ON,
		XSHM_RMA_FAST_OFF,
	} rma_fast;
	/* initiator-driven RMA split with the target from here; 0: never */
	size_t rma_split_min;
	/* writes posted through the target's ring up to here (rma_way.c) */
	size_t rma_posted_max;
};
extern struct xshm_params xshm_params;

/* Declares every parameter and reads them into xshm_params. */
void xshm_read_params(void);

/*
 * Sizes whose path, pipeline or single copy, the pages choose
 * (data/large_path.c): above scopy_huge_min for a lone send, above
 * scopy_huge_stream_min for a send in a stream (data/path.c).
 */
static inline bool xshm_scopy_by_pages(size_t total, bool in_stream)
{
	size_t min = in_stream ? xshm_params.scopy_huge_stream_min :
				 xshm_params.scopy_huge_min;

	return !xshm_params.path_auto && total > min &&
	       total <= xshm_params.scopy_threshold;
}

/* Sizes the pages may choose for, whether the send stands alone or not. */
static inline bool xshm_scopy_by_pages_either(size_t total)
{
	return xshm_scopy_by_pages(total, false) ||
	       xshm_scopy_by_pages(total, true);
}

#endif
