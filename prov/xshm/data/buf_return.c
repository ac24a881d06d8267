/*
 * Bounce buffers that the receive path has copied out are given back to the
 * pool in batches, off the path of the message that used them: a free is
 * two atomic operations on lines the senders write too, and paying them
 * before the completion reaches the application adds their cache-line
 * transfers to every message's latency.  The batch goes back when it is
 * full, when the endpoint finds its ring empty, and before the sweep
 * reclaims a dead borrower's buffers, so a buffer is never both pending
 * here and reclaimed.
 */
#include "data/buf_return.h"
#include "objects/ep.h"
#include "shm/pool.h"

void xshm_buf_return_flush(struct xshm_ep *ep)
{
	for (uint32_t i = 0; i < ep->bufs_done_count; i++)
		xshm_pool_free(&ep->region.pool, ep->bufs_done[i].index,
			       ep->bufs_done[i].borrower);
	ep->bufs_done_count = 0;
}

void xshm_buf_return(struct xshm_ep *ep, uint32_t index, uint64_t borrower)
{
	if (ep->bufs_done_count == XSHM_BUFS_DONE_MAX)
		xshm_buf_return_flush(ep);
	ep->bufs_done[ep->bufs_done_count].index = index;
	ep->bufs_done[ep->bufs_done_count].borrower = borrower;
	ep->bufs_done_count++;
}
