/*
 * Receives directed at a same-node endpoint whose process died.  The peer
 * fails its own operations towards a dead process, but a receive posted to
 * xlink's queue never reaches it: so while such receives wait, xlink asks
 * the peer's AV, every LIVENESS_MS, whether their sources still live
 * (xshm's peer_alive, <xshm/fi_xshm.h>; a peer without it is not asked).
 * A receive directed at a remote endpoint waits for what the network
 * provider reports.
 */
#include "deadline.h"
#include "ep.h"
#include "liveness.h"

#define LIVENESS_MS	100
#define CLOCK_EVERY	64	/* progress calls between clock reads */

struct fi_xshm_ops_av *xlink_liveness_ops(struct fid_av *peer_av)
{
	struct fi_xshm_ops_av *ops = fi_xshm_av_ops(peer_av);
	size_t need = offsetof(struct fi_xshm_ops_av, peer_alive) + sizeof(ops->peer_alive);

	return ops && ops->size >= need && ops->peer_alive ? ops : NULL;
}

static bool local_source_gone(struct xlink_ep *ep, fi_addr_t src)
{
	struct xlink_av_entry *entry = xlink_av_entry(ep->av, src);

	return entry && entry->local &&
	       ep->av->peer_liveness->peer_alive(ep->av->peer_av, entry->peer_addr) == 0;
}

void xlink_liveness_progress(struct xlink_ep *ep)
{
	uint64_t now;

	if (!ep->av || !ep->av->peer_liveness || ++ep->liveness_calls % CLOCK_EVERY)
		return;
	now = xlink_coarse_ms();
	if (now < ep->next_liveness_ms)
		return;
	ep->next_liveness_ms = now + LIVENESS_MS;
	if (xlink_srx_has_directed(ep))
		xlink_srx_fail_directed(ep, local_source_gone, FI_EIO);
}
