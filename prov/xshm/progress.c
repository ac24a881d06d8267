/* Manual progress: drain the inbound ring, then push queued sends. */
#include "xshm.h"

/* Handles up to budget inbound cells; returns how many there were. */
int xshm_ep_drain(struct xshm_ep *ep, int budget)
{
	struct xshm_ring_ref *ring = &ep->region.ring;
	int handled;

	for (handled = 0; handled < budget; handled++) {
		struct xshm_cmd *cmd = xshm_ring_peek(ring);

		if (!cmd)
			break;
		xshm_rx_handle_cmd(ep, cmd);
		xshm_ring_release(ring, cmd);
	}
	return handled;
}

void xshm_ep_progress(struct xshm_ep *ep)
{
	if (!ep->enabled)
		return;
	xshm_liveness_progress(ep, !xshm_ep_drain(ep, XSHM_RX_BUDGET));
	xshm_ack_flush(ep);
	if (!xshm_dlist_empty(&ep->tx_wait_ack))
		xshm_ack_reap(ep);
	xshm_tx_progress(ep);
}
