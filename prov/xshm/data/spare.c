/*
 * Spare bounce buffers.  Borrowing a buffer from a receiver's pool costs
 * two cache-line transfers (its free bitmap's word and its owner word, both
 * last written by the receiver), and a message waited for them before its
 * copy could start.  So after a send whose first piece took a buffer (a
 * medium message, or the first 16 KiB of a larger one) the endpoint borrows
 * the buffer for its next one to the same receiver, while the receiver is
 * busy with this one, and keeps it here, one per slot.  It does so on
 * its next poll that finds nothing to receive: a sender that streams
 * polls busy and borrows as it sends, as before.
 *
 * While it fills the receiver's buffers with cached stores, it also asks
 * for the spare's lines, as many as the last send filled, for writing, as
 * warm.c does for ring cells (streaming stores need no line).  Side by
 * side, in one build with the names swapped: 0.92-1.00 times the latency
 * at 6033 B in three runs, 0.97-0.99 at 7 and 8 KiB, nothing from 12 KiB.
 *
 * A spare holds one of the receiver's buffers away from its other senders,
 * so one is only taken while at least a quarter of the pool is free.  It
 * goes back to the pool when the endpoint closes, when its AV's entry lets
 * go of the receiver (av/av_peers.c) and when the receiver's region is
 * unmapped (peer/peer_map.c); a spare whose region went away without that
 * (the receiver died or closed) is forgotten: its pool is gone too.
 */
#include "data/spare.h"
#include "av/av.h"
#include "data/bounce_fill.h"
#include "objects/ep.h"
#include "shm/pool.h"
#include "shm/prefetch.h"
#include "shm/region.h"

int xshm_spare_borrow(struct xshm_ep *ep, const struct xshm_region *peer,
		      enum xshm_pool_order order, uint32_t *index)
{
	struct xshm_spare *spare = xshm_spare_slot(ep, peer);

	if (!xshm_spare_holds_for(spare, peer))
		return xshm_pool_alloc(&peer->pool, ep->addr.ep_id, order,
				       index);
	spare->held = false;
	*index = spare->index;
	return 0;
}

void xshm_spare_want(struct xshm_ep *ep, fi_addr_t dest, size_t len,
		     enum xshm_pool_order order)
{
	ep->spare_wanted = true;
	ep->spare_dest = dest;
	ep->spare_len = len;
	ep->spare_order = order;
}

static void refill(struct xshm_ep *ep, const struct xshm_region *peer)
{
	struct xshm_spare *spare = xshm_spare_slot(ep, peer);

	if (spare->held ||
	    xshm_pool_free_count(&peer->pool) < peer->pool.nbufs / 4 ||
	    xshm_pool_alloc(&peer->pool, ep->addr.ep_id, ep->spare_order,
			    &spare->index))
		return;
	spare->mapping_id = peer->mapping_id;
	spare->held = true;
	if (xshm_bounce_fills_cached(ep, peer))
		xshm_prefetch_for_write(xshm_pool_buf(&peer->pool, spare->index),
					ep->spare_len);
}

void xshm_spare_refill(struct xshm_ep *ep)
{
	struct xshm_peer *peer;

	ep->spare_wanted = false;
	if (!xshm_av_peer(ep->av, ep->spare_dest, &peer))
		refill(ep, &peer->region);
}
