/*
 * FI_PEER imports (fi_peer(3)): an owner provider hands xshm its own SRX,
 * AV, domain and EQ (CQs and counters are imported in cq.c and cntr.c).
 * Each check follows the page: a context whose size field is too small, or
 * that names no object, is -FI_EINVAL.
 */
#include <stdlib.h>

#include "xshm.h"

/*
 * The SRX fid an owner gets back: a handle to bind xshm endpoints to.  The
 * receives themselves are posted to the owner, so its data calls refuse.
 */
struct xshm_srx_import {
	struct fid_ep ep_fid;
	struct fid_peer_srx *owner;
	_Atomic int ref;
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

	if (atomic_load(&srx->ref))
		return -FI_EBUSY;
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

/* fi_srx_context: only the FI_PEER import; xshm's own SRX is per endpoint. */
int xshm_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context)
{
	struct fi_peer_srx_context *peer = context;
	struct xshm_srx_import *srx;

	if (!attr || !rx_ep)
		return -FI_EINVAL;
	if (!(attr->op_flags & FI_PEER))
		return -FI_ENOSYS;
	if (!XSHM_CONTEXT_OK(peer, srx) || !peer->srx->owner_ops ||
	    !peer->srx->peer_ops)
		return -FI_EINVAL;
	srx = calloc(1, sizeof(*srx));
	if (!srx)
		return -FI_ENOMEM;
	*peer->srx->peer_ops = xshm_srx_peer_ops;
	srx->owner = peer->srx;
	srx->ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->ep_fid.fid.context = context;
	srx->ep_fid.fid.ops = &srx_import_fi_ops;
	srx->ep_fid.ops = &srx_import_ep_ops;
	srx->ep_fid.msg = &srx_import_msg_ops;
	srx->ep_fid.tagged = &srx_import_tagged_ops;
	*rx_ep = &srx->ep_fid;
	return 0;
}

/* fi_ep_bind of an imported SRX: the endpoint's receives go to the owner. */
struct fid_peer_srx *xshm_srx_import_bind(struct fid *fid)
{
	struct xshm_srx_import *srx =
		xshm_container_of(fid, struct xshm_srx_import, ep_fid.fid);

	if (fid->ops != &srx_import_fi_ops)
		return NULL;
	atomic_fetch_add(&srx->ref, 1);
	return srx->owner;
}

void xshm_srx_import_unbind(struct fid *fid)
{
	struct xshm_srx_import *srx =
		xshm_container_of(fid, struct xshm_srx_import, ep_fid.fid);

	atomic_fetch_sub(&srx->ref, 1);
}

/*
 * fi_av_open with FI_PEER: xshm addresses are its own, so it keeps its own
 * table; the owner's AV only sizes it (query).
 */
int xshm_av_import(struct fi_av_attr *attr, void *context, size_t *count)
{
	struct fi_peer_av_context *peer = context;
	struct fi_av_attr owner_attr = { 0 };

	if (!XSHM_CONTEXT_OK(peer, av))
		return -FI_EINVAL;
	if (peer->av->owner_ops && peer->av->owner_ops->query &&
	    !peer->av->owner_ops->query(peer->av, &owner_attr))
		*count = owner_attr.count;
	else
		*count = attr->count;
	return 0;
}

/* fi_domain2 with FI_PEER: xshm needs nothing from the owner's domain. */
int xshm_domain_import(uint64_t flags, void *context)
{
	struct fi_peer_domain_context *peer = context;

	if (flags & ~FI_PEER)
		return -FI_EINVAL;
	return XSHM_CONTEXT_OK(peer, domain) ? 0 : -FI_EINVAL;
}

/* fi_eq_open with FI_PEER: xshm raises no events, so nothing reaches it. */
int xshm_eq_import(void *context)
{
	struct fi_peer_eq_context *peer = context;

	return XSHM_CONTEXT_OK(peer, eq) ? 0 : -FI_EINVAL;
}
