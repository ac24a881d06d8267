/*
 * Endpoint: binding to AV and CQs, enabling (creating the inbound region),
 * naming and closing.
 */
#include <stdlib.h>
#include <string.h>

#include <rdma/fi_cm.h>

#include "objects/ep.h"
#include "av/av.h"
#include "base/addr.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/params.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/rma.h"
#include "data/recv.h"
#include "data/send.h"
#include "objects/cntr.h"
#include "objects/cq.h"
#include "objects/domain.h"
#include "objects/import.h"
#include "objects/mr_pub.h"
#include "peer/peer.h"
#include "srx/srx.h"
#include "shm/cleanup.h"
#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "shm/scopy/scopy.h"

#define XSHM_CREATE_TRIES	16

static struct xshm_ep *to_ep(struct fid *fid)
{
	return xshm_container_of(fid, struct xshm_ep, ep_fid.fid);
}

/*
 * cq and av are NULL where the fid was not xshm's, or of another domain:
 * a fid of another provider is never taken for one of ours.
 */
static int bind_av(struct xshm_ep *ep, struct xshm_av *av)
{
	int ret;

	if (!av || ep->av)
		return -FI_EINVAL;
	ret = xshm_av_add_ep(av, ep);
	if (!ret)
		ep->av = av;
	return ret;
}

static int bind_cq(struct xshm_ep *ep, struct xshm_cq *cq, uint64_t flags)
{
	int ret;

	if (!cq || !(flags & (FI_TRANSMIT | FI_RECV)) ||
	    (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION)))
		return -FI_EINVAL;
	if (((flags & FI_TRANSMIT) && ep->tx_cq) ||
	    ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	ret = xshm_cq_add_ep(cq, ep);
	if (ret)
		return ret;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq_obj = cq;
		ep->tx_cq = &cq->peer_cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	if (flags & FI_RECV) {
		ep->rx_cq_obj = cq;
		ep->rx_cq = &cq->peer_cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
	}
	return 0;
}

static int xshm_ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xshm_ep *ep = to_ep(fid);
	int ret = 0;

	if (!bfid)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	xshm_lock_acquire(&ep->domain->lock);
	switch (bfid->fclass) {
	case FI_CLASS_AV:
		ret = bind_av(ep, xshm_av_of(bfid, ep->domain));
		break;
	case FI_CLASS_CQ:
		ret = bind_cq(ep, xshm_cq_of(bfid, ep->domain), flags);
		break;
	case FI_CLASS_EQ:
		break;		/* RDM endpoints report no events */
	case FI_CLASS_CNTR:
		ret = xshm_cntr_bind_ep(bfid, ep, flags);
		break;
	case FI_CLASS_SRX_CTX:
		/* xshm's import, or the owner's own fid_peer_srx (import.c) */
		ret = ep->srx ? -FI_EINVAL : xshm_srx_bind(ep, bfid);
		break;
	default:
		ret = -FI_EINVAL;
	}
	xshm_lock_release(&ep->domain->lock);
	return ret;
}

static const struct xshm_region_geom xshm_default_geom = {
	.ring_cells = XSHM_RING_CELLS,
	.pool_bufs = XSHM_POOL_BUFS,
	.buf_size = XSHM_BUF_SIZE,
};

/*
 * Generated endpoint ids may collide with a region left by a dead process
 * that reused our pid: take the next id.  A service's id is fixed.
 */
static int create_region(struct xshm_ep *ep, bool fixed_id)
{
	struct xshm_region_geom geom = xshm_default_geom;
	int ret = -EEXIST;

	geom.auth_digest = ep->auth_digest;
	geom.features = (ep->scopy ? XSHM_FEATURE_PULL : 0) |
			(ep->may_sleep ? XSHM_FEATURE_DOORBELL : 0);
	geom.numa_local = xshm_params.numa;

	for (int tries = 0; tries < XSHM_CREATE_TRIES && ret == -EEXIST; tries++) {
		if (tries && fixed_id)
			break;
		if (tries)
			ep->addr.ep_id = xshm_ep_id_new();
		ret = xshm_region_create(&ep->region, ep->addr.node_id,
					 ep->addr.ep_id, &geom);
	}
	if (ret == -EEXIST)
		return -FI_EADDRINUSE;
	return ret ? -FI_EIO : 0;
}

static int enable(struct xshm_ep *ep)
{
	int ret;

	if (ep->enabled)
		return 0;
	if (!ep->av)
		return -FI_ENOAV;
	if (((ep->caps & FI_SEND) && !ep->tx_cq && !ep->tx_cntr) ||
	    ((ep->caps & FI_RECV) && !ep->rx_cq && !ep->rx_cntr))
		return -FI_ENOCQ;
	ret = create_region(ep, ep->addr.ep_id >> 63);
	if (ret)
		return ret;
	xshm_ep_publish_all(ep);
	if (!ep->srx) {
		ep->own_srx = xshm_srx_create(ep->domain, XSHM_RX_SIZE);
		if (!ep->own_srx) {
			xshm_region_close(&ep->region);
			return -FI_ENOMEM;
		}
		ep->own_srx->peer_ops = xshm_srx_peer_ops;
		ep->own_srx->min_multi_recv = ep->min_multi_recv;
		ep->srx = &ep->own_srx->peer_srx;
	}
	ep->enabled = true;
	return 0;
}

static int xshm_ep_control(struct fid *fid, int command, void *arg)
{
	struct xshm_ep *ep = to_ep(fid);
	uint64_t *flags = arg;
	int ret = 0;

	switch (command) {
	case FI_ENABLE:
		xshm_lock_acquire(&ep->domain->lock);
		ret = enable(ep);
		xshm_lock_release(&ep->domain->lock);
		return ret;
	case FI_GETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		*flags = (*flags & FI_TRANSMIT) ? ep->tx_op_flags : ep->rx_op_flags;
		return 0;
	case FI_SETOPSFLAG:
		if (!flags)
			return -FI_EINVAL;
		if (*flags & FI_TRANSMIT)
			ep->tx_op_flags = *flags & ~FI_TRANSMIT;
		else
			ep->rx_op_flags = *flags & ~FI_RECV;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static int xshm_ep_close(struct fid *fid)
{
	struct xshm_ep *ep = to_ep(fid);

	xshm_lock_acquire(&ep->domain->lock);
	ep->closing = true;
	/* Initiators stop copying into the domain's memory through it. */
	xshm_ep_unpublish_all(ep);
	xshm_tx_abort_all(ep);
	xshm_rma_close(ep);
	xshm_ack_close(ep);
	xshm_block_cache_clear(&ep->tx_blocks);
	/* Before the SRX goes: messages still arriving give back its entries. */
	xshm_rx_abort_all(ep);
	if (ep->own_srx)
		xshm_srx_destroy(ep->own_srx);
	if (ep->tx_cq_obj)
		xshm_cq_remove_ep(ep->tx_cq_obj, ep);
	if (ep->rx_cq_obj && ep->rx_cq_obj != ep->tx_cq_obj)
		xshm_cq_remove_ep(ep->rx_cq_obj, ep);
	xshm_cntr_unbind_ep(ep);
	xshm_dlist_remove(&ep->domain_link);
	if (ep->av) {
		xshm_peers_release_spares(&ep->domain->peers, ep);
		xshm_av_remove_ep(ep->av, ep);
	}
	xshm_srx_unbind(ep);
	xshm_doorbell_close(&ep->doorbell);
	if (ep->enabled)
		xshm_region_close(&ep->region);
	xshm_lock_release(&ep->domain->lock);
	atomic_fetch_sub(&ep->domain->ref, 1);
	free(ep);
	return 0;
}

static int xshm_ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct xshm_ep *ep = to_ep(fid);
	char name[XSHM_ADDR_LEN];

	if (!addrlen)
		return -FI_EINVAL;
	if (*addrlen < XSHM_ADDR_LEN || !addr) {
		*addrlen = XSHM_ADDR_LEN;
		return -FI_ETOOSMALL;
	}
	xshm_addr_format(&ep->addr, name);
	memcpy(addr, name, XSHM_ADDR_LEN);
	*addrlen = XSHM_ADDR_LEN;
	return 0;
}

static int xshm_ep_setname(fid_t fid, void *addr, size_t addrlen)
{
	struct xshm_ep *ep = to_ep(fid);
	struct xshm_addr parsed;

	if (ep->enabled)
		return -FI_EOPBADSTATE;
	if (xshm_addr_parse(addr, addrlen, &parsed) ||
	    parsed.node_id != xshm_params.node_id)
		return -FI_EINVAL;
	ep->addr = parsed;
	return 0;
}

/*
 * An RDM endpoint has names but no connections.  libfabric calls the cm
 * operations without checking for NULL (fabtests' fi_cq_data shuts an RDM
 * endpoint down), so each one answers.
 */
static int xshm_no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int xshm_no_connect(struct fid_ep *ep, const void *addr,
			   const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int xshm_no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int xshm_no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int xshm_no_reject(struct fid_pep *pep, fid_t handle, const void *param,
			  size_t paramlen)
{
	return -FI_ENOSYS;
}

static int xshm_no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int xshm_no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
			struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

/* A posted receive, else a send not yet started, with that context. */
static ssize_t xshm_ep_cancel(fid_t fid, void *context)
{
	struct xshm_ep *ep = to_ep(fid);
	ssize_t ret = -FI_ENOENT;

	xshm_lock_acquire(&ep->domain->lock);
	if (ep->enabled) {
		ret = xshm_srx_cancel(ep->own_srx, ep, context);
		if (ret == -FI_ENOENT)
			ret = xshm_tx_cancel(ep, context);
	}
	xshm_lock_release(&ep->domain->lock);
	return ret;
}

static int xshm_ep_getopt(fid_t fid, int level, int optname, void *optval,
			  size_t *optlen)
{
	struct xshm_ep *ep = to_ep(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	*(size_t *) optval = ep->min_multi_recv;
	*optlen = sizeof(size_t);
	return 0;
}

static int xshm_ep_setopt(fid_t fid, int level, int optname,
			  const void *optval, size_t optlen)
{
	struct xshm_ep *ep = to_ep(fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	xshm_lock_acquire(&ep->domain->lock);
	ep->min_multi_recv = *(const size_t *) optval;
	if (ep->own_srx)
		ep->own_srx->min_multi_recv = ep->min_multi_recv;
	xshm_lock_release(&ep->domain->lock);
	return 0;
}

static struct fi_ops xshm_ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_ep_close,
	.bind = xshm_ep_bind,
	.control = xshm_ep_control,
	.ops_open = xshm_fid_no_ops_open,
};

/* Contexts belong to scalable endpoints, which xshm does not have. */
static int xshm_no_tx_ctx(struct fid_ep *ep, int index,
			  struct fi_tx_attr *attr, struct fid_ep **tx_ep,
			  void *context)
{
	return -FI_ENOSYS;
}

static int xshm_no_rx_ctx(struct fid_ep *ep, int index,
			  struct fi_rx_attr *attr, struct fid_ep **rx_ep,
			  void *context)
{
	return -FI_ENOSYS;
}

static ssize_t xshm_no_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static struct fi_ops_ep xshm_ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = xshm_ep_cancel,
	.getopt = xshm_ep_getopt,
	.setopt = xshm_ep_setopt,
	.tx_ctx = xshm_no_tx_ctx,
	.rx_ctx = xshm_no_rx_ctx,
	.rx_size_left = xshm_no_size_left,
	.tx_size_left = xshm_no_size_left,
};

static struct fi_ops_cm xshm_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = xshm_ep_setname,
	.getname = xshm_ep_getname,
	.getpeer = xshm_no_getpeer,
	.connect = xshm_no_connect,
	.listen = xshm_no_listen,
	.accept = xshm_no_accept,
	.reject = xshm_no_reject,
	.shutdown = xshm_no_shutdown,
	.join = xshm_no_join,
};

static int init_address(struct xshm_ep *ep, const struct fi_info *info)
{
	ep->addr.node_id = xshm_params.node_id;
	ep->addr.ep_id = xshm_ep_id_new();
	if (!info->src_addr)
		return 0;
	return xshm_ep_setname(&ep->ep_fid.fid, info->src_addr,
			       info->src_addrlen);
}

int xshm_ep_open(struct fid_domain *domain_fid, struct fi_info *info,
		 struct fid_ep **ep_out, void *context)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	struct xshm_ep *ep;

	if (!info || !ep_out ||
	    (info->ep_attr && info->ep_attr->type != FI_EP_RDM &&
	     info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	if (xshm_params.signal_handlers)
		xshm_cleanup_install_signals();
	ep->domain = domain;
	ep->caps = info->caps ? info->caps : XSHM_CAPS;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	ep->tx_iov_limit = XSHM_IOV_LIMIT;
	ep->scopy = xshm_params.cma ? xshm_scopy_select() : NULL;
	ep->rx_iov_limit = XSHM_IOV_LIMIT;
	xshm_dlist_init(&ep->tx_queue);
	xshm_dlist_init(&ep->rx_active);
	xshm_dlist_init(&ep->tx_wait_ack);
	xshm_dlist_init(&ep->acks_out);
	xshm_dlist_init(&ep->rma_queue);
	xshm_dlist_init(&ep->rma_replies);
	xshm_doorbell_init(&ep->doorbell);
	ep->large_sent.dest = XSHM_PATH_NO_DEST;
	if (init_address(ep, info) ||
	    xshm_auth_info_digest(info, &ep->auth_digest)) {
		free(ep);
		return -FI_EINVAL;
	}
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &xshm_ep_fi_ops;
	ep->ep_fid.ops = &xshm_ep_ops;
	ep->ep_fid.cm = &xshm_cm_ops;
	ep->ep_fid.msg = &xshm_msg_ops;
	ep->ep_fid.tagged = &xshm_tagged_ops;
	ep->ep_fid.rma = &xshm_rma_ops;
	ep->ep_fid.atomic = &xshm_atomic_ops;
	xshm_lock_acquire(&domain->lock);
	xshm_dlist_append(&domain->eps, &ep->domain_link);
	xshm_lock_release(&domain->lock);
	atomic_fetch_add(&domain->ref, 1);
	*ep_out = &ep->ep_fid;
	return 0;
}
