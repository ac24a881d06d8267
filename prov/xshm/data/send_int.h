/*
 * What the send path's files share (send.c, send_queue.c): filling ring
 * cells, header last (fill_cell_tail, fill_cell_head), and runs of cells
 * (XSHM_PROTO_CELLS).  Inline, as they were when the path was one file:
 * every send takes them.
 */
#ifndef XSHM_SEND_INT_H
#define XSHM_SEND_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_errno.h>

#include "data/bounce_fill.h"
#include "base/iov.h"
#include "data/liveness.h"
#include "base/params.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "shm/ring.h"

struct xshm_peer;
struct xshm_ep;
struct xshm_send_path;

/*
 * The receiver polls a cell's first cache line, where its header is.  So
 * the payload goes in first, beyond that line, and the header and the
 * payload's bytes in that line last: the sender then takes the line from
 * the polling receiver once, right before the commit, instead of once for
 * the header and again for the commit after the receiver read it back.
 * fill_cell_tail copies all but the first line's bytes and returns
 * how many those are, for fill_cell_head once the header is
 * written.
 */
static inline size_t fill_cell_tail(const struct xshm_cmd *cmd,
				    unsigned char *payload,
				    const struct iovec *iov, size_t count,
				    size_t offset, size_t len)
{
	size_t in_line = XSHM_CACHE_LINE -
			 (size_t) (payload - (const unsigned char *) cmd);
	size_t head = len < in_line ? len : in_line;

	if (len > head)
		xshm_iov_copy_from(payload + head, iov, count, offset + head,
				   len - head);
	return head;
}

static inline void fill_cell_head(unsigned char *payload,
				  const struct iovec *iov, size_t count,
				  size_t offset, size_t head)
{
	xshm_iov_copy_from(payload, iov, count, offset, head);
}

/*
 * Whether a message of total bytes, too long for one cell, goes in a run of
 * cells rather than a bounce buffer.  Past XSHM_CELLS_ALWAYS_MAX, only
 * while the sender fills peer's buffers with cached stores: a receiver
 * that shares no cache with the sender reads a buffer filled with
 * streaming stores faster than cells from the sender's cache.
 */
static inline bool fits_run(const struct xshm_ep *ep,
			    const struct xshm_region *peer, size_t total)
{
	return total <= xshm_params.cells_threshold &&
	       (total <= XSHM_CELLS_ALWAYS_MAX ||
		xshm_bounce_fills_cached(ep, peer));
}

/* The cells a message of total bytes takes as a run (XSHM_PROTO_CELLS). */
static inline uint32_t run_cells(size_t total)
{
	return 1 + (uint32_t) ((total - XSHM_INLINE_MAX + XSHM_CELL_PAYLOAD - 1) /
			       XSHM_CELL_PAYLOAD);
}

/*
 * A whole message in consecutive cells of one reservation (see
 * XSHM_PROTO_CELLS): the first cell, which names the message, is
 * committed last, so the receiver finds the rest already there.
 * reserve_run returns the first cell, NULL when the ring has no room for
 * the run.
 */
static inline struct xshm_cmd *reserve_run(struct xshm_region *peer,
					   size_t total, uint64_t *pos)
{
	if (xshm_ring_reserve_n(&peer->ring, run_cells(total), pos))
		return NULL;
	return xshm_ring_cell(&peer->ring, *pos);
}

/*
 * Fills and publishes the continuation cells of the run from pos, then
 * the first cell's payload but for its bytes in the header's cache line,
 * whose number it returns, as fill_cell_tail does (send.c).
 */
size_t xshm_tx_fill_run(struct xshm_region *peer, struct xshm_cmd *cmd,
			uint64_t pos, const struct iovec *iov, size_t count,
			size_t total);

/* The peer took nothing: its ring or pool is full, or it is dead. */
static inline ssize_t no_room(struct xshm_ep *ep, struct xshm_peer *peer)
{
	return xshm_liveness_peer_dead(ep, peer) ? -FI_EHOSTUNREACH :
						   -FI_EAGAIN;
}

/* Everything but the whole-message path (send_queue.c). */
ssize_t xshm_send_op(struct xshm_ep *ep, struct xshm_peer *peer,
		     const struct xshm_send_path *path, uint8_t kind,
		     const struct iovec *iov, size_t count, size_t total,
		     fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
		     uint64_t flags);

#endif
