/*
 * The domain's table of peers: endpoint id -> peer, open addressing with
 * linear probing over slots that hold the id beside a pointer, so that a
 * probe reads no peer but the one it finds, and peers never move.  A peer
 * is created by its first AV entry that sends to it (xshm_peer_get) or by
 * the receive path (xshm_peer_sender); it goes when its last reference is
 * dropped unless the receive path looked it up, and every peer goes when
 * the domain's last AV closes.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_errno.h>

#include "peer/peer.h"

#define PEERS_MIN	64

static size_t home_of(uint64_t ep_id, size_t size)
{
	ep_id ^= ep_id >> 31;
	ep_id *= 0x9e3779b97f4a7c15ULL;
	return (ep_id >> 17) & (size - 1);
}

/* The slot holding ep_id, or the empty slot where it would go. */
static struct xshm_peer_slot *probe(const struct xshm_peers *peers,
				    uint64_t ep_id)
{
	size_t slot = home_of(ep_id, peers->size);

	while (peers->slots[slot].ep_id && peers->slots[slot].ep_id != ep_id)
		slot = (slot + 1) & (peers->size - 1);
	return &peers->slots[slot];
}

static int grow(struct xshm_peers *peers)
{
	size_t size = peers->size ? 2 * peers->size : PEERS_MIN;
	struct xshm_peer_slot *old = peers->slots;
	size_t old_size = peers->size;

	peers->slots = calloc(size, sizeof(*peers->slots));
	if (!peers->slots) {
		peers->slots = old;
		return -FI_ENOMEM;
	}
	peers->size = size;
	for (size_t i = 0; i < old_size; i++)
		if (old[i].ep_id)
			*probe(peers, old[i].ep_id) = old[i];
	free(old);
	return 0;
}

/* Empties slot i, moving back the entries of its probe run after it. */
static void slot_clear(struct xshm_peers *peers, size_t i)
{
	size_t mask = peers->size - 1;

	for (size_t j = (i + 1) & mask; peers->slots[j].ep_id;
	     j = (j + 1) & mask) {
		size_t home = home_of(peers->slots[j].ep_id, peers->size);

		/* j stays unless its home lies cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			peers->slots[i] = peers->slots[j];
			i = j;
		}
	}
	peers->slots[i] = (struct xshm_peer_slot) { 0 };
	peers->used--;
}

struct xshm_peer *xshm_peer_find(struct xshm_peers *peers, uint64_t ep_id)
{
	if (!peers->size)
		return NULL;
	return probe(peers, ep_id)->peer;
}

static struct xshm_peer *find_or_add(struct xshm_peers *peers, uint64_t ep_id)
{
	struct xshm_peer_slot *slot;
	struct xshm_peer *peer;

	if (2 * (peers->used + 1) > peers->size && grow(peers))
		return NULL;
	slot = probe(peers, ep_id);
	if (slot->peer)
		return slot->peer;
	peer = calloc(1, sizeof(*peer));
	if (!peer)
		return NULL;
	peer->ep_id = ep_id;
	peer->src_index = -1;
	slot->ep_id = ep_id;
	slot->peer = peer;
	peers->used++;
	return peer;
}

struct xshm_peer *xshm_peer_get(struct xshm_peers *peers, uint64_t ep_id)
{
	struct xshm_peer *peer = find_or_add(peers, ep_id);

	if (peer)
		peer->ref++;
	return peer;
}

struct xshm_peer *xshm_peer_sender(struct xshm_peers *peers, uint64_t ep_id)
{
	struct xshm_peer *peer;

	/* Messages come in runs from one sender: skip the hash for those. */
	if (peers->last && peers->last->ep_id == ep_id)
		return peers->last;
	peer = find_or_add(peers, ep_id);
	if (peer) {
		peer->sender = true;
		peers->last = peer;
	}
	return peer;
}

static void forget(struct xshm_peers *peers, struct xshm_peer *peer)
{
	struct xshm_peer_slot *slot = probe(peers, peer->ep_id);

	if (peer->mapped)
		xshm_peer_unmap(peers, peer);
	if (peers->last == peer)
		peers->last = NULL;
	slot_clear(peers, (size_t) (slot - peers->slots));
	free(peer);
}

void xshm_peer_put(struct xshm_peers *peers, struct xshm_peer *peer)
{
	if (--peer->ref == 0 && !peer->sender)
		forget(peers, peer);
}

static void forget_all(struct xshm_peers *peers)
{
	for (size_t i = 0; i < peers->size; i++) {
		struct xshm_peer *peer = peers->slots[i].peer;

		if (!peer)
			continue;
		if (peer->mapped)
			xshm_peer_unmap(peers, peer);
		free(peer);
	}
	free(peers->slots);
	peers->slots = NULL;
	peers->size = peers->used = 0;
	peers->last = NULL;
}

void xshm_peers_open_av(struct xshm_peers *peers)
{
	peers->avs++;
}

/*
 * An AV closes: its entries have dropped their references.  The sources
 * cached for it are forgotten (another AV may come at its address).
 */
void xshm_peers_close_av(struct xshm_peers *peers, const void *av)
{
	if (--peers->avs == 0) {
		forget_all(peers);
		return;
	}
	for (size_t i = 0; i < peers->size; i++) {
		struct xshm_peer *peer = peers->slots[i].peer;

		if (peer && peer->src_av == av)
			peer->src_av = NULL;
	}
}

void xshm_peers_fini(struct xshm_peers *peers)
{
	forget_all(peers);
	free(peers->eps);
	peers->eps = NULL;
	peers->nr_eps = 0;
}

int xshm_peers_add_ep(struct xshm_peers *peers, struct xshm_ep *ep)
{
	struct xshm_ep **eps = realloc(peers->eps,
				       (peers->nr_eps + 1) * sizeof(*eps));

	if (!eps)
		return -FI_ENOMEM;
	eps[peers->nr_eps++] = ep;
	peers->eps = eps;
	return 0;
}

void xshm_peers_remove_ep(struct xshm_peers *peers, struct xshm_ep *ep)
{
	for (size_t i = 0; i < peers->nr_eps; i++) {
		if (peers->eps[i] == ep) {
			peers->eps[i] = peers->eps[--peers->nr_eps];
			return;
		}
	}
}
