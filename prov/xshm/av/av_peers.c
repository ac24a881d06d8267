/*
 * Each entry's peer (peer/peer.h): found in the domain's table on the first
 * send to the entry (xshm_av_peer), its region mapped then and again after
 * it was found closed, let go when the entry goes or the AV closes.  The
 * spare bounce buffers the AV's endpoints hold in the peer's pool
 * (data/spare.c) are given back when the entry lets go of it, as when the
 * peer's region is unmapped.
 */
#include <errno.h>
#include <string.h>

#include "av/av.h"
#include "av/av_impl.h"
#include "base/provider.h"
#include "objects/domain.h"
#include "peer/peer.h"
#include "shm/liveness.h"

void xshm_av_entry_unpeer(struct xshm_av *av, struct xshm_av_entry *entry)
{
	struct xshm_peer *peer = entry->peer;

	if (!peer)
		return;
	if (peer->mapped)
		for (size_t i = 0; i < av->nr_eps; i++)
			xshm_peer_release_spare(av->eps[i], peer);
	entry->peer = NULL;
	xshm_peer_put(&av->domain->peers, peer);
}

/* The first send to the entry finds its peer; a closed region is mapped anew. */
static int peer_slow(struct xshm_av *av, fi_addr_t fi_addr,
		     struct xshm_peer **out)
{
	struct xshm_av_entry *entry = xshm_av_entry_of(av, fi_addr);
	struct xshm_peers *peers = &av->domain->peers;
	int ret;

	if (!entry)
		return -FI_EINVAL;
	if (!entry->peer) {
		entry->peer = xshm_peer_get(peers, entry->addr.ep_id);
		if (!entry->peer)
			return -FI_ENOMEM;
	}
	ret = xshm_peer_map(peers, entry->peer);
	if (ret == -EAGAIN)
		return -FI_EAGAIN;
	if (ret) {
		XSHM_WARN(FI_LOG_AV, "cannot map peer %s: %s\n",
			  entry->peer->region.name, strerror(-ret));
		return -FI_EHOSTUNREACH;
	}
	*out = entry->peer;
	return 0;
}

int xshm_av_peer(struct xshm_av *av, fi_addr_t fi_addr,
		 struct xshm_peer **out)
{
	struct xshm_peer *peer;

	if (av->shared || fi_addr >= av->capacity || !av->table[fi_addr].used)
		return peer_slow(av, fi_addr, out);
	peer = av->table[fi_addr].peer;
	if (!peer || !peer->mapped || !xshm_region_is_open(&peer->region))
		return peer_slow(av, fi_addr, out);
	*out = peer;
	return 0;
}

void xshm_av_retire(struct xshm_av *av, fi_addr_t fi_addr,
		    struct xshm_owner dead)
{
	struct xshm_av_entry *entry = xshm_av_entry_of(av, fi_addr);

	if (entry && entry->peer)
		xshm_peer_retire_mapped(entry->peer, dead);
}
