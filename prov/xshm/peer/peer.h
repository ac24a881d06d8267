/*
 * The peers: the endpoints a domain talks to, each mapped once for the
 * whole domain whichever of its AVs names it and whether it is sent to or
 * received from.  A peer holds its region as mapped here, the process that
 * owned it, the authorization digest read from it, and the liveness state
 * of sends to it.  AV entries point at peers (av/): each entry that has
 * sent to its peer holds a reference; the receive path looks senders up
 * here by endpoint id, and a peer it looked up (a sender) stays in the
 * table, so that its region stays mapped and its verdict cached, until the
 * domain's last AV closes.  A peer that neither needs any more is unmapped
 * and forgotten.
 *
 *   peer_table.c   the table: endpoint id -> peer, references, endpoints
 *   peer_map.c     mapping and unmapping a region, spares given back
 *   peer_sender.c  senders: receiver-side isolation, the processes behind
 *
 * Every function is called with the domain lock held.
 */
#ifndef XSHM_PEER_H
#define XSHM_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "shm/liveness.h"
#include "shm/region.h"

struct xshm_ep;

struct xshm_peer {
	uint64_t ep_id;
	bool mapped;			/* region is this domain's mapping of it */
	bool sender;			/* looked up by the receive path: kept */
	bool warned;			/* its messages were reported dropped */
	uint32_t ref;			/* AV entries pointing at it */
	struct xshm_region region;
	struct xshm_owner owner;	/* of the last region mapped; 0: none */
	uint64_t digest;		/* auth digest in the region mapped */
	uint64_t next_check_ms;		/* data/liveness.c: ring full, check then */
	/* av/av_table.c: the source it was found at in one AV, at its gen */
	const void *src_av;
	uint64_t src_gen;
	ssize_t src_index;		/* in that AV's table; -1: not in it */
};

struct xshm_peer_slot {
	uint64_t ep_id;			/* 0: empty */
	struct xshm_peer *peer;
};

/* One per domain (objects/domain.h). */
struct xshm_peers {
	struct xshm_peer_slot *slots;	/* open addressing, linear probing */
	size_t size;			/* power of two, or 0 */
	size_t used;
	struct xshm_peer *last;		/* the sender looked up last, or NULL */
	struct xshm_ep **eps;		/* endpoints that may hold spares */
	size_t nr_eps;
	size_t avs;			/* AVs open in the domain */
};

/* peer_table.c */
void xshm_peers_fini(struct xshm_peers *peers);
/* An AV opens or closes: the last to close lets every peer go. */
void xshm_peers_open_av(struct xshm_peers *peers);
void xshm_peers_close_av(struct xshm_peers *peers, const void *av);
/* Endpoints bound to an AV of the domain: their spares are given back. */
int xshm_peers_add_ep(struct xshm_peers *peers, struct xshm_ep *ep);
void xshm_peers_remove_ep(struct xshm_peers *peers, struct xshm_ep *ep);
/* The peer at ep_id, with a reference (for an AV entry); NULL: no memory. */
struct xshm_peer *xshm_peer_get(struct xshm_peers *peers, uint64_t ep_id);
/* Drops the reference; a peer nothing needs any more is unmapped. */
void xshm_peer_put(struct xshm_peers *peers, struct xshm_peer *peer);
/* The peer at ep_id if the table has it, else NULL. */
struct xshm_peer *xshm_peer_find(struct xshm_peers *peers, uint64_t ep_id);
/* The peer at ep_id as a sender, added if need be; NULL: no memory. */
struct xshm_peer *xshm_peer_sender(struct xshm_peers *peers, uint64_t ep_id);

/* peer_map.c */
/*
 * Maps the peer's region if it is not mapped or no longer open (the old
 * mapping goes first, its spares given back): 0, or xshm_region_open's
 * error, with the peer left unmapped.
 */
int xshm_peer_map(struct xshm_peers *peers, struct xshm_peer *peer);
void xshm_peer_unmap(struct xshm_peers *peers, struct xshm_peer *peer);
/* Gives back the spare buffer ep holds in the peer's pool, if any. */
void xshm_peer_release_spare(struct xshm_ep *ep, struct xshm_peer *peer);
/* Gives back every spare ep holds in the domain's mapped peers. */
void xshm_peers_release_spares(struct xshm_peers *peers, struct xshm_ep *ep);
/* Retires the peer's region if it is mapped and dead's (shm/liveness.h). */
void xshm_peer_retire_mapped(struct xshm_peer *peer, struct xshm_owner dead);

/* peer_sender.c */
/*
 * Receiver-side isolation, for an endpoint holding the key of digest: false
 * drops the sender's command.  *out: the sender, or NULL when there was no
 * memory for it.  The usual case, the last sender again, still there and
 * with this key, is decided here.
 */
bool xshm_peer_admits_slow(struct xshm_peers *peers, uint64_t ep_id,
			   uint64_t digest, struct xshm_peer **out);

static inline bool xshm_peer_admits(struct xshm_peers *peers, uint64_t ep_id,
				    uint64_t digest, struct xshm_peer **out)
{
	struct xshm_peer *peer = peers->last;

	if (peer && peer->ep_id == ep_id && peer->mapped &&
	    peer->digest == digest && xshm_region_is_open(&peer->region)) {
		*out = peer;
		return true;
	}
	return xshm_peer_admits_slow(peers, ep_id, digest, out);
}

/* The mapped region of a sender (acks, pulls, timings): NULL once gone. */
struct xshm_region *xshm_peer_sender_region(struct xshm_peers *peers,
					    uint64_t ep_id);
/* The process behind a mapped, open peer region, without refreshing it. */
struct xshm_owner xshm_peer_owner(struct xshm_peers *peers, uint64_t ep_id);
/* Retires the peer's region if it is mapped and dead's. */
void xshm_peer_retire(struct xshm_peers *peers, uint64_t ep_id,
		      struct xshm_owner dead);
/*
 * The process behind endpoint ep_id, mapping its region if need be; once it
 * is gone, the last process seen there (pid 0: none ever was).
 */
struct xshm_owner xshm_peer_source_process(struct xshm_peers *peers,
					   uint64_t ep_id);
/* An address (re)inserted: a mapped region of a dead process is retired. */
void xshm_peer_recheck(struct xshm_peers *peers, uint64_t ep_id);

#endif
