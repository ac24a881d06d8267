/*
 * Shared receive context (srx.c, claim.c): implements the owner side of
 * the peer SRX, the endpoint's own queues of posted receives and of
 * unexpected messages.
 */
#ifndef XSHM_SRX_H
#define XSHM_SRX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "base/list.h"
#include "base/provider.h"
#include "srx/tag_index.h"
#include "xshm/fi_peer.h"

struct xshm_domain;
struct xshm_ep;

struct xshm_rx_entry {
	struct fi_peer_rx_entry peer;	/* first: castable to xshm_dlist */
	uint64_t ignore;
	bool multi_recv;		/* a multi-receive buffer, carved per message */
	size_t multi_used;
	uint64_t src_ep_id;		/* posted directed: the endpoint it names */
	struct xshm_rx_entry *next_free;	/* on xshm_srx.free_entries */
	struct xshm_tag_node tag_node;	/* posted tagged: in xshm_srx.tags */
	struct iovec iov[XSHM_IOV_LIMIT];
	void *desc[XSHM_IOV_LIMIT];
};

struct xshm_srx {
	struct fid_peer_srx peer_srx;
	struct fi_ops_srx_peer peer_ops;	/* filled by the endpoint */
	struct xshm_domain *domain;
	struct xshm_dlist posted_msg;
	struct xshm_dlist posted_tag;	/* in post order; matched via tags */
	struct xshm_tag_index tags;
	struct xshm_dlist unexp_msg;
	struct xshm_dlist unexp_tag;
	struct xshm_dlist claimed;	/* peeked with FI_CLAIM, awaiting FI_CLAIM */
	struct xshm_rx_entry *free_entries;	/* recycled, see srx.c */
	size_t posted;			/* receives queued by the user */
	size_t directed;		/* ... of them from one source (liveness.c) */
	size_t max_posted;
	size_t min_multi_recv;
};

struct xshm_srx *xshm_srx_create(struct xshm_domain *domain, size_t rx_size);
void xshm_srx_destroy(struct xshm_srx *srx);

/* A receive as the application posts it. */
struct xshm_recv_args {
	bool tagged;
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t src;
	uint64_t src_ep_id;		/* the endpoint src names; 0: none */
	uint64_t tag;
	uint64_t ignore;
	void *context;
	uint64_t flags;
};

ssize_t xshm_srx_post(struct xshm_srx *srx, struct xshm_ep *ep,
		      const struct xshm_recv_args *recv);
/*
 * xshm_srx_post for a receive that no held message can meet (see
 * xshm_srx_holds): queued at once.  _one: of one buffer, from any source,
 * no multi-receive buffer (of flags, only FI_COMPLETION counts).
 */
ssize_t xshm_srx_post_new(struct xshm_srx *srx, const struct xshm_recv_args *recv);
ssize_t xshm_srx_post_one(struct xshm_srx *srx, bool tagged, void *buf,
			  size_t len, void *desc, uint64_t tag, uint64_t ignore,
			  void *context, uint64_t flags);

/* Whether srx holds unexpected messages of the kind (tagged or not). */
static inline bool xshm_srx_holds(const struct xshm_srx *srx, bool tagged)
{
	return !xshm_dlist_empty(tagged ? &srx->unexp_tag : &srx->unexp_msg);
}
ssize_t xshm_srx_peek(struct xshm_srx *srx, struct xshm_ep *ep,
		      const struct xshm_recv_args *recv);
ssize_t xshm_srx_claim(struct xshm_srx *srx, struct xshm_ep *ep,
		       const struct xshm_recv_args *recv);
int xshm_srx_cancel(struct xshm_srx *srx, struct xshm_ep *ep, void *context);

static inline bool xshm_srx_tag_matches(uint64_t recv_tag, uint64_t ignore,
					uint64_t tag)
{
	return ((recv_tag ^ tag) & ~ignore) == 0;
}

static inline bool xshm_srx_addr_matches(fi_addr_t wanted, fi_addr_t from)
{
	return wanted == FI_ADDR_UNSPEC || wanted == from;
}

/* A posted receive leaves the queues (matched, released or failed). */
static inline void xshm_srx_unpost(struct xshm_srx *srx,
				   struct xshm_rx_entry *entry)
{
	xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
	if (entry->peer.flags & FI_TAGGED) {
		xshm_tag_index_remove(&srx->tags, &entry->tag_node);
		if (xshm_dlist_empty(&srx->posted_tag))
			srx->tags.on = false;
	}
	srx->posted--;
	if (entry->peer.addr != FI_ADDR_UNSPEC)
		srx->directed--;
}

/* A posted receive completes with error code (fi_cancel, a dead source). */
void xshm_srx_fail_posted(struct xshm_srx *srx, struct xshm_ep *ep,
			  struct xshm_rx_entry *entry, int code);

/*
 * Posted receives directed at a source (FI_DIRECTED_RECV) whose endpoint
 * gone(arg, ep_id) declares gone: with fail, each completes with FI_EIO
 * through ep; without, the first one found is only reported.  Returns
 * whether there was one.
 */
bool xshm_srx_directed_gone(struct xshm_srx *srx, struct xshm_ep *ep,
			    bool (*gone)(void *arg, uint64_t ep_id), void *arg,
			    bool fail);

/* srx.c internals shared with claim.c */
struct xshm_rx_entry *xshm_srx_find_unexpected(struct xshm_srx *srx,
					       const struct xshm_recv_args *recv);
int xshm_srx_start(struct xshm_srx *srx, struct xshm_rx_entry *entry);
int xshm_srx_discard(struct xshm_srx *srx, struct xshm_rx_entry *entry);
void xshm_srx_set_buffers(struct xshm_rx_entry *entry,
			  const struct xshm_recv_args *recv);
bool xshm_srx_unqueue(struct xshm_srx *srx, struct fi_peer_rx_entry *entry);

#endif
