/*
 * FI_PEER imports (fi_peer(3)): an owner provider hands xshm its own SRX
 * and domain here (its AV, EQ, CQs and counters are imported in av/av.c,
 * report/eq.c, cq.c and cntr.c).
 * Each check follows the page: a context whose size field is too small, or
 * that names no object, is -FI_EINVAL.
 */
#include <stdlib.h>

#include "objects/import.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/params.h"
#include "base/peer_context.h"
#include "base/provider.h"
#include "data/recv.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "xshm/fi_peer.h"

/*
 * fi_peer(3) can be read two ways, and xshm pairs with owners of both:
 *
 *   - the page's example: the owner binds the fid fi_srx_context returned
 *     (a struct xshm_srx_import) to xshm's endpoints, and xshm fills the
 *     owner's fi_ops_srx_peer before returning from fi_srx_context, so that
 *     the owner reaches xshm's start/discard through its own fid_peer_srx;
 *   - libfabric's own owners (1.22's util_srx under efa, with shm as the
 *     peer): the fid returned is ignored, the owner binds its own
 *     fid_peer_srx (FI_CLASS_SRX_CTX) to each peer endpoint, and reaches the
 *     peer's callbacks through entry->srx->peer_ops, entry->srx being the
 *     fid_peer_srx the peer passed to get_msg/get_tag: a private one of the
 *     peer's, with the owner's owner_ops, the context of the owner's fid
 *     (util_srx finds its state there) and the peer's own peer_ops.  efa
 *     even tells entries handed to a peer by entry->srx differing from its
 *     own, and keeps its own callbacks in its fid_peer_srx's peer_ops.
 *
 * So an endpoint passes to get_msg/get_tag the owner's fid_peer_srx itself
 * only when it is bound to xshm's import and xshm filled the owner's table;
 * otherwise (the owner's own fid bound, or a peer_ops that is NULL or holds
 * the owner's callbacks) it passes a view: a private fid_peer_srx built
 * the way 1.22's shm builds its own.
 */

/*
 * The SRX fid an owner gets back: a handle to bind xshm endpoints to.  The
 * receives themselves are posted to the owner, so its data calls refuse.
 * Owners of libfabric's style never close it: the domain frees those left.
 */
struct xshm_srx_import {
	struct fid_ep ep_fid;
	struct fid_peer_srx *owner;
	struct xshm_domain *domain;
	struct xshm_dlist link;		/* in domain->srx_imports */
	_Atomic int ref;		/* endpoints bound to it */
};

static ssize_t no_recv(struct fid_ep *ep, void *buf, size_t len, void *desc,
		       fi_addr_t src, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_recvv(struct fid_ep *ep, const struct iovec *iov,
			void **desc, size_t count, fi_addr_t src, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_recvmsg(struct fid_ep *ep, const struct fi_msg *msg,
			  uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t no_trecv(struct fid_ep *ep, void *buf, size_t len, void *desc,
			fi_addr_t src, uint64_t tag, uint64_t ignore,
			void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_trecvv(struct fid_ep *ep, const struct iovec *iov,
			 void **desc, size_t count, fi_addr_t src, uint64_t tag,
			 uint64_t ignore, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_trecvmsg(struct fid_ep *ep, const struct fi_msg_tagged *msg,
			   uint64_t flags)
{
	return -FI_ENOSYS;
}

static struct fi_ops_msg srx_import_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = no_recv,
	.recvv = no_recvv,
	.recvmsg = no_recvmsg,
};

static struct fi_ops_tagged srx_import_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = no_trecv,
	.recvv = no_trecvv,
	.recvmsg = no_trecvmsg,
};

static int srx_import_close(struct fid *fid)
{
	struct xshm_srx_import *srx =
		xshm_container_of(fid, struct xshm_srx_import, ep_fid.fid);
	struct xshm_domain *domain = srx->domain;

	if (atomic_load(&srx->ref))
		return -FI_EBUSY;
	xshm_lock_acquire(&domain->lock);
	xshm_dlist_remove(&srx->link);
	xshm_lock_release(&domain->lock);
	free(srx);
	return 0;
}

static struct fi_ops srx_import_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = srx_import_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_ep srx_import_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
};

/* An owner's fid_peer_srx has every owner callback xshm calls. */
static bool owner_srx_ok(const struct fid_peer_srx *srx)
{
	const struct fi_ops_srx_owner *ops = srx->owner_ops;

	return ops && ops->get_msg && ops->get_tag && ops->queue_msg &&
	       ops->queue_tag && ops->foreach_unspec_addr && ops->free_entry;
}

static bool peer_ops_are(const struct fi_ops_srx_peer *ops,
			 const struct fi_ops_srx_peer *want)
{
	return ops->start_msg == want->start_msg &&
	       ops->start_tag == want->start_tag &&
	       ops->discard_msg == want->discard_msg &&
	       ops->discard_tag == want->discard_tag;
}

/*
 * The owner's fi_ops_srx_peer is a table left for xshm to fill when its
 * callbacks are unset (or already xshm's).  One that holds other callbacks
 * is the owner's own (efa keeps its own there) and must stay as it is.
 */
static bool peer_ops_ours_to_fill(const struct fi_ops_srx_peer *ops)
{
	static const struct fi_ops_srx_peer unset;

	return peer_ops_are(ops, &unset) || peer_ops_are(ops, &xshm_srx_peer_ops);
}

/* fi_srx_context: only the FI_PEER import; xshm's own SRX is per endpoint. */
int xshm_srx_context(struct fid_domain *domain_fid, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	struct fi_peer_srx_context *peer = context;
	struct fi_ops_srx_peer *ops;
	struct xshm_srx_import *srx;

	if (!attr || !rx_ep)
		return -FI_EINVAL;
	if (!(attr->op_flags & FI_PEER))
		return -FI_ENOSYS;
	if (!XSHM_CONTEXT_OK(peer, srx) || !owner_srx_ok(peer->srx))
		return -FI_EINVAL;
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	ops = peer->srx->peer_ops;
	if (ops && peer_ops_ours_to_fill(ops)) {
		ops->start_msg = xshm_srx_peer_ops.start_msg;
		ops->start_tag = xshm_srx_peer_ops.start_tag;
		ops->discard_msg = xshm_srx_peer_ops.discard_msg;
		ops->discard_tag = xshm_srx_peer_ops.discard_tag;
	} else {
		XSHM_INFO(FI_LOG_EP_CTRL, "the owner's fi_ops_srx_peer is %s: "
			  "left alone; it reaches xshm's through entry->srx\n",
			  ops ? "its own" : "NULL");
	}
	srx->owner = peer->srx;
	srx->domain = domain;
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &srx_import_fi_ops;
	srx->ep_fid.ops = &srx_import_ep_ops;
	srx->ep_fid.msg = &srx_import_msg_ops;
	srx->ep_fid.tagged = &srx_import_tagged_ops;
	xshm_lock_acquire(&domain->lock);
	xshm_dlist_append(&domain->srx_imports, &srx->link);
	xshm_lock_release(&domain->lock);
	*rx_ep = &srx->ep_fid;
	return 0;
}

/* Domain close: the imports an owner of libfabric's style left open. */
void xshm_srx_import_free_all(struct xshm_domain *domain)
{
	while (!xshm_dlist_empty(&domain->srx_imports)) {
		struct xshm_srx_import *srx = xshm_container_of(
			domain->srx_imports.next, struct xshm_srx_import, link);

		xshm_dlist_remove(&srx->link);
		free(srx);
	}
}

/*
 * fi_ep_bind of an SRX: the endpoint's receives go to the owner.  fid is
 * xshm's import, or else the owner's own fid_peer_srx; nothing else of
 * class FI_CLASS_SRX_CTX has the owner callbacks an SRX needs.
 */
int xshm_srx_bind(struct xshm_ep *ep, struct fid *fid)
{
	struct fid_peer_srx *owner;
	bool imported = fid->ops == &srx_import_fi_ops;

	if (imported)
		owner = xshm_container_of(fid, struct xshm_srx_import,
					  ep_fid.fid)->owner;
	else
		owner = xshm_container_of(fid, struct fid_peer_srx, ep_fid.fid);
	if (!owner_srx_ok(owner))
		return -FI_EINVAL;
	if (imported && owner->peer_ops &&
	    peer_ops_are(owner->peer_ops, &xshm_srx_peer_ops)) {
		ep->srx = owner;
	} else {
		ep->srx_view = xshm_srx_view_new(owner);
		if (!ep->srx_view)
			return -FI_ENOMEM;
		ep->srx = &ep->srx_view->srx;
	}
	ep->owner_frees_discarded = !imported;
	ep->owner_get_tag_sizeless =
		xshm_params.peer_abi == XSHM_PEER_ABI_LIBFABRIC ||
		(xshm_params.peer_abi == XSHM_PEER_ABI_AUTO && !imported);
	if (imported) {
		atomic_fetch_add(&xshm_container_of(fid, struct xshm_srx_import,
						    ep_fid.fid)->ref, 1);
		ep->srx_import = fid;
	}
	return 0;
}

/* Endpoint close, after its messages were dropped or orphaned. */
void xshm_srx_unbind(struct xshm_ep *ep)
{
	if (ep->srx_import)
		atomic_fetch_sub(&xshm_container_of(ep->srx_import,
				 struct xshm_srx_import, ep_fid.fid)->ref, 1);
	xshm_srx_view_release(ep->srx_view);
	ep->srx_import = NULL;
	ep->srx_view = NULL;
}

/* fi_domain2 with FI_PEER: xshm needs nothing from the owner's domain. */
int xshm_domain_import(uint64_t flags, void *context)
{
	struct fi_peer_domain_context *peer = context;

	if (flags & ~FI_PEER)
		return -FI_EINVAL;
	return XSHM_CONTEXT_OK(peer, domain) ? 0 : -FI_EINVAL;
}
