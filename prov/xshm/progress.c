/* Manual progress: drain the inbound ring, then push queued sends. */
#include "xshm.h"

void xshm_ep_progress(struct xshm_ep *ep)
{
	struct xshm_ring_ref *ring = &ep->region.ring;

	if (!ep->enabled)
		return;
	for (int i = 0; i < XSHM_RX_BUDGET; i++) {
		struct xshm_cmd *cmd = xshm_ring_peek(ring);

		if (!cmd || !xshm_rx_handle_cmd(ep, cmd))
			break;
		xshm_ring_release(ring, cmd);
	}
	xshm_ack_flush(ep);
	if (!xshm_dlist_empty(&ep->tx_wait_ack))
		xshm_ack_reap(ep);
	xshm_tx_progress(ep);
}
