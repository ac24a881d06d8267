/*
 * The peers' regions an AV maps for sends: mapped on first send to an
 * entry (xshm_av_peer), unmapped when the entry goes, the AV closes or the
 * region is found closed, retired when its process died.  An endpoint may
 * hold a spare bounce buffer of a mapped peer's pool (data/spare.c): it is
 * given back before the region is unmapped, and when the endpoint closes.
 */
#include <errno.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/provider.h"
#include "objects/ep.h"
#include "shm/liveness.h"
#include "shm/pool.h"
#include "shm/region.h"

/* Gives back the spare buffer ep holds in peer's pool, if any. */
static void spare_release(struct xshm_ep *ep,
			  const struct xshm_region *peer)
{
	struct xshm_spare *spare = xshm_spare_slot(ep, peer);

	if (!xshm_spare_holds_for(spare, peer))
		return;
	xshm_pool_free(&peer->pool, spare->index, ep->addr.ep_id);
	spare->held = false;
}

/* Unmaps a peer's region, giving back the spare buffers eps hold in it. */
void xshm_av_unmap_peer(struct xshm_av *av, struct xshm_av_entry *entry)
{
	for (size_t i = 0; i < av->nr_eps; i++)
		spare_release(av->eps[i], &entry->peer);
	xshm_region_close(&entry->peer);
	entry->peer_mapped = false;
}

void xshm_av_release_spares(struct xshm_av *av, struct xshm_ep *ep)
{
	for (size_t i = 0; i < av->capacity; i++)
		if (av->table[i].peer_mapped)
			spare_release(ep, &av->table[i].peer);
}

/* The entry for fi_addr with the peer's region mapped. */
int xshm_av_peer(struct xshm_av *av, fi_addr_t fi_addr,
		 struct xshm_av_entry **entry_out)
{
	struct xshm_av_entry *entry = xshm_av_entry_of(av, fi_addr);
	int ret;

	if (!entry)
		return -FI_EINVAL;
	if (entry->peer_mapped && !xshm_region_is_open(&entry->peer))
		xshm_av_unmap_peer(av, entry);
	if (!entry->peer_mapped) {
		ret = xshm_region_open(&entry->peer, entry->addr.ep_id);
		if (ret == -EAGAIN)
			return -FI_EAGAIN;
		if (ret) {
			XSHM_WARN(FI_LOG_AV, "cannot map peer %s: %s\n",
				  entry->peer.name, strerror(-ret));
			return -FI_EHOSTUNREACH;
		}
		entry->peer_mapped = true;
		entry->owner = xshm_region_owner(&entry->peer);
	}
	*entry_out = entry;
	return 0;
}

void xshm_av_retire(struct xshm_av *av, fi_addr_t fi_addr,
		    struct xshm_owner dead)
{
	struct xshm_av_entry *entry = xshm_av_entry_of(av, fi_addr);

	if (entry && entry->peer_mapped && xshm_owner_same(entry->owner, dead))
		xshm_region_retire(&entry->peer, dead);
}
