/*
 * xlink's address vector.  An entry names one endpoint and the path to it:
 * the peer provider's AV (same node), where xlink inserts it with its own
 * index as FI_AV_USER_ID so that the peer reports xlink's fi_addr as the
 * source, or the network provider's AV.  fi_addr values are indices for
 * both AV types.
 */
#ifndef XLINK_AV_H
#define XLINK_AV_H

#include <xshm/fi_xshm.h>

#include "addr.h"
#include "netsrc.h"
#include "xlink.h"

struct xlink_av_entry {
	bool used;
	bool local;		/* reached through the peer */
	fi_addr_t net_addr;	/* in net_av, or FI_ADDR_NOTAVAIL */
	fi_addr_t peer_addr;	/* in peer_av, or FI_ADDR_NOTAVAIL */
	uint64_t net_key;	/* netsrc.h, when net_addr is set */
	struct xlink_addr addr;	/* as inserted, for fi_av_lookup */
	uint64_t stalled_ms;	/* since when every send to it found no room */
	bool unreachable;	/* stalled past xlink_params.stall_ms */
};

struct xlink_av {
	struct fid_av av_fid;
	struct xlink_domain *domain;
	enum fi_av_type type;
	uint64_t node_id;		/* this process's node; 0 without a peer */
	struct fid_av *net_av;
	struct fid_av *peer_av;		/* NULL without a peer */
	struct fi_xshm_ops_av *peer_liveness;	/* liveness.h; NULL: none */
	struct xlink_av_entry *entries;
	size_t count, cap;
	struct xlink_netsrc net_sources;	/* network source key -> index */
	uint64_t inserts;		/* successful inserts so far */
	size_t remote_count;		/* entries reached over the network */
	atomic_int ref;			/* endpoints bound */
};

int xlink_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		  struct fid_av **av, void *context);

struct xlink_av *xlink_av_of(struct fid *fid, struct xlink_domain *domain);

/* The entry of fi_addr, or NULL if it names none. */
static inline struct xlink_av_entry *xlink_av_entry(struct xlink_av *av,
						     fi_addr_t fi_addr)
{
	if (fi_addr >= av->count || !av->entries[fi_addr].used)
		return NULL;
	return &av->entries[fi_addr];
}

/* The index of a network message's sender (netsrc.h), or FI_ADDR_NOTAVAIL. */
static inline fi_addr_t xlink_av_net_source(const struct xlink_av *av, uint64_t key)
{
	return xlink_netsrc_find(&av->net_sources, key);
}

#endif
