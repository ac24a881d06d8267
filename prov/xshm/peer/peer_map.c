/*
 * A peer's region as the domain maps it: on the first send to it through
 * any AV entry (av/av_peers.c) or the first command read from it, again
 * when the mapping is found closed, and unmapped when the peer goes
 * (peer_table.c).  An endpoint may hold a spare bounce buffer of a mapped
 * peer's pool (data/spare.c): it is given back before the region is
 * unmapped, when the endpoint's AV entry lets go of the peer, and when the
 * endpoint closes.
 */
#include "peer/peer.h"
#include "objects/ep.h"
#include "shm/liveness.h"
#include "shm/pool.h"
#include "shm/region.h"

void xshm_peer_release_spare(struct xshm_ep *ep, struct xshm_peer *peer)
{
	struct xshm_spare *spare = xshm_spare_slot(ep, &peer->region);

	if (!xshm_spare_holds_for(spare, &peer->region))
		return;
	xshm_pool_free(&peer->region.pool, spare->index, ep->addr.ep_id);
	spare->held = false;
}

void xshm_peer_unmap(struct xshm_peers *peers, struct xshm_peer *peer)
{
	for (size_t i = 0; i < peers->nr_eps; i++)
		xshm_peer_release_spare(peers->eps[i], peer);
	xshm_region_close(&peer->region);
	peer->mapped = false;
}

int xshm_peer_map(struct xshm_peers *peers, struct xshm_peer *peer)
{
	int ret;

	if (peer->mapped) {
		if (xshm_region_is_open(&peer->region))
			return 0;
		xshm_peer_unmap(peers, peer);
	}
	ret = xshm_region_open(&peer->region, peer->ep_id);
	if (ret)
		return ret;
	peer->mapped = true;
	peer->digest = peer->region.hdr->auth_digest;
	peer->owner = xshm_region_owner(&peer->region);
	return 0;
}

void xshm_peers_release_spares(struct xshm_peers *peers, struct xshm_ep *ep)
{
	for (size_t i = 0; i < peers->size; i++) {
		struct xshm_peer *peer = peers->slots[i].peer;

		if (peer && peer->mapped)
			xshm_peer_release_spare(ep, peer);
	}
}

void xshm_peer_retire_mapped(struct xshm_peer *peer, struct xshm_owner dead)
{
	if (peer->mapped && xshm_owner_same(peer->owner, dead))
		xshm_region_retire(&peer->region, dead);
}
