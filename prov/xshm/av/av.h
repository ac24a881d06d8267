/*
 * The address vector (av*.c) as the rest of the provider uses it: what
 * fi_av(3) says an AV is.  Indices are table slots, each entry an address,
 * the source reported for it (its index or a user id) and its key; the
 * entry points at its peer (peer/peer.h), which maps the region, from the
 * first send to it on.  A hash from endpoint id to slot turns the sender
 * of a command into a source fi_addr_t.  Call with the domain lock held.
 */
#ifndef XSHM_AV_H
#define XSHM_AV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

#include "base/addr.h"
#include "peer/peer.h"
#include "shm/layout.h"
#include "shm/liveness.h"

struct xshm_domain;
struct xshm_ep;

struct xshm_av_entry {
	struct xshm_addr addr;
	bool used;
	uint32_t auth_key;		/* key slot, or XSHM_AV_NO_KEY */
	fi_addr_t src_id;		/* reported as source: index or user id */
	struct xshm_peer *peer;		/* from the first send to it; or NULL */
};

struct xshm_av_key {
	bool used;
	uint32_t size;
	unsigned char bytes[XSHM_AV_KEY_MAX];
	uint64_t digest;
	fi_addr_t user_id;
};

struct xshm_av_shared;			/* av_shared.c: a named AV's file */

struct xshm_av {
	struct fid_av av_fid;
	struct xshm_domain *domain;
	enum fi_av_type type;
	uint64_t flags;			/* of fi_av_open */
	struct fid_eq *eq;		/* FI_EVENT: where inserts report */
	struct xshm_av_entry *table;
	size_t capacity;
	size_t lowest_free;
	struct xshm_av_key *keys;
	size_t keys_capacity;
	struct xshm_av_shared *shared;	/* NULL unless named */
	struct xshm_ep **eps;		/* bound endpoints, told of inserts */
	size_t nr_eps;
	uint64_t *hash_keys;		/* ep_id -> index, open addressing */
	uint32_t *hash_vals;
	size_t hash_size;
	uint64_t gen;			/* changes with every entry (av_table.c) */
	uint64_t last_ep_id;		/* the last sender looked up, */
	uint64_t last_gen;		/* ... at this gen, */
	ssize_t last_index;		/* ... found there (-1: not in the AV) */
	_Atomic int ref;
};

int xshm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
bool xshm_av_has(struct xshm_av *av, fi_addr_t fi_addr);
struct xshm_av *xshm_av_of(struct fid *fid, struct xshm_domain *domain);
int xshm_av_add_ep(struct xshm_av *av, struct xshm_ep *ep);
void xshm_av_remove_ep(struct xshm_av *av, struct xshm_ep *ep);
fi_addr_t xshm_av_lookup_ep_id(struct xshm_av *av, uint64_t ep_id);

/*
 * The peer of the entry fi_addr, its region mapped: 0, -FI_EINVAL (no
 * entry), -FI_EAGAIN (its region is being created), -FI_EHOSTUNREACH (no
 * region to map) or -FI_ENOMEM (av_peers.c).  Out of line on purpose:
 * inlined into the send path, it cost 1 KiB streams 30% on the 2-core
 * development machine (the send functions' code, not more work).
 */
int xshm_av_peer(struct xshm_av *av, fi_addr_t fi_addr,
		 struct xshm_peer **peer);

/* Retires the entry's mapped region if its process is dead (av_peers.c). */
void xshm_av_retire(struct xshm_av *av, fi_addr_t fi_addr,
		    struct xshm_owner dead);

/*
 * The source reported for a sender (its index or user id, or
 * FI_ADDR_NOTAVAIL when the AV does not hold it), found once per change of
 * the table and kept in the peer (av_table.c).
 */
fi_addr_t xshm_av_src_find(struct xshm_av *av, struct xshm_peer *peer);

static inline fi_addr_t xshm_av_src(struct xshm_av *av, struct xshm_peer *peer)
{
	if (av->shared || peer->src_av != av || peer->src_gen != av->gen)
		return xshm_av_src_find(av, peer);
	return peer->src_index < 0 ? FI_ADDR_NOTAVAIL :
				     av->table[peer->src_index].src_id;
}

/*
 * A directed receive's src (flags FI_AUTH_KEY: a key) as sources are
 * reported; *ep_id: the endpoint it names (0 for FI_ADDR_UNSPEC or a key).
 */
int xshm_av_recv_src(struct xshm_ep *ep, fi_addr_t *src, uint64_t *ep_id,
		     uint64_t flags);
/* The digest of the endpoint's auth key (ep_attr, else domain_attr); 0: none. */
int xshm_auth_info_digest(const struct fi_info *info, uint64_t *digest);

#endif
