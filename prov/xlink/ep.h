/*
 * An endpoint: the application's fid, the network endpoint and the peer
 * endpoint behind it, and the receive queue both feed.
 */
#ifndef XLINK_EP_H
#define XLINK_EP_H

#include "av.h"
#include "net.h"
#include "srx.h"
#include "xlink.h"

struct xlink_cq;
struct xlink_cntr;

struct xlink_ep {
	struct fid_ep ep_fid;
	struct xlink_domain *domain;
	struct xlink_ep *next;			/* domain->eps */
	uint64_t caps;
	uint64_t tx_op_flags, rx_op_flags;
	struct xlink_av *av;
	struct xlink_cq *tx_cq, *rx_cq;
	bool tx_selective, rx_selective;	/* FI_SELECTIVE_COMPLETION */
	struct xlink_cntr *tx_cntr, *rx_cntr;
	bool enabled;
	bool closing;				/* the peer frees what it holds */
	struct fi_info *net_info, *peer_info;
	struct xlink_net net;
	struct fid_ep *peer_ep;			/* NULL without a peer */
	struct fid_ep *peer_srx_fid;		/* what fi_srx_context returned */
	struct xlink_srx srx;
	uint64_t next_liveness_ms;
	unsigned liveness_calls;
	unsigned peer_quiet_polls;		/* progress calls the peer was idle in */
};

int xlink_endpoint(struct fid_domain *domain, struct fi_info *info,
		   struct fid_ep **ep, void *context);

/* Caller holds the domain lock. */
void xlink_ep_progress(struct xlink_ep *ep);

/* Whether an operation with these flags writes a completion. */
static inline bool xlink_tx_wants_comp(const struct xlink_ep *ep, uint64_t flags)
{
	return ep->tx_cq && (!ep->tx_selective || (flags & FI_COMPLETION));
}

static inline bool xlink_rx_wants_comp(const struct xlink_ep *ep, uint64_t flags)
{
	return ep->rx_cq && (!ep->rx_selective || (flags & FI_COMPLETION));
}

/* Send and inject completions of the network path. */
void xlink_tx_complete(struct xlink_ep *ep, void *context, uint64_t flags, size_t len);
void xlink_tx_fail(struct xlink_ep *ep, void *context, uint64_t flags, size_t len,
		   int err);

extern struct fi_ops_msg xlink_msg_ops;
extern struct fi_ops_tagged xlink_tagged_ops;

#endif
