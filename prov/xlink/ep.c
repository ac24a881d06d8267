/*
 * The endpoint: binding the application's AV, CQs and counters to the
 * network and peer endpoints behind it, enabling, naming, progress.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cntr.h"
#include "cq.h"
#include "ep.h"
#include "eq.h"
#include "liveness.h"

#define TX_BIND_FLAGS	(FI_TRANSMIT | FI_SEND)
#define RX_BIND_FLAGS	(FI_RECV)

void xlink_tx_complete(struct xlink_ep *ep, void *context, uint64_t flags, size_t len)
{
	uint64_t op = (flags & FI_TAGGED ? FI_TAGGED : FI_MSG) | FI_SEND;

	if (xlink_tx_wants_comp(ep, flags))
		xlink_cq_write(ep->tx_cq, context, op, 0, NULL, 0, 0, FI_ADDR_NOTAVAIL);
	if (ep->tx_cntr)
		xlink_cntr_inc(ep->tx_cntr);
}

void xlink_tx_fail(struct xlink_ep *ep, void *context, uint64_t flags, size_t len,
		   int err)
{
	struct fi_cq_err_entry e = {
		.op_context = context,
		.flags = (flags & FI_TAGGED ? FI_TAGGED : FI_MSG) | FI_SEND,
		.len = len,
		.err = err,
		.prov_errno = -err,
	};

	if (ep->tx_cq)
		xlink_cq_write_error(ep->tx_cq, &e);
	if (ep->tx_cntr)
		xlink_cntr_incerr(ep->tx_cntr);
}

/* The peer's CQs progress the peer endpoints bound to them. */
static void peer_progress(struct xlink_ep *ep)
{
	if (ep->rx_cq && ep->rx_cq->peer_shadow)
		fi_cq_read(ep->rx_cq->peer_shadow, NULL, 0);
	if (ep->tx_cq && ep->tx_cq != ep->rx_cq && ep->tx_cq->peer_shadow)
		fi_cq_read(ep->tx_cq->peer_shadow, NULL, 0);
	if (!ep->rx_cq && !ep->tx_cq) {
		struct xlink_cntr *c = ep->rx_cntr ? ep->rx_cntr : ep->tx_cntr;

		if (c && c->peer_shadow)
			fi_cntr_read(c->peer_shadow);
	}
}

void xlink_ep_progress(struct xlink_ep *ep)
{
	if (!ep->enabled)
		return;
	if (ep->peer_ep) {
		uint64_t events = ep->domain->peer_events;

		peer_progress(ep);
		if (events != ep->domain->peer_events)
			ep->peer_quiet_polls = 0;
		else if (ep->peer_quiet_polls < UINT_MAX)
			ep->peer_quiet_polls++;
		xlink_liveness_progress(ep);
	} else {
		ep->peer_quiet_polls = UINT_MAX;
	}
	xlink_net_progress(ep);
}

/* ---- binding ---- */

static int bind_peer(struct xlink_ep *ep, struct fid *fid, uint64_t flags)
{
	return ep->peer_ep && fid ? fi_ep_bind(ep->peer_ep, fid, flags) : 0;
}

static int bind_av(struct xlink_ep *ep, struct xlink_av *av)
{
	int ret;

	if (ep->av)
		return -FI_EINVAL;
	ep->av = av;
	ret = av->peer_av ? bind_peer(ep, &av->peer_av->fid, 0) : 0;
	if (ret) {
		ep->av = NULL;
		return ret;
	}
	atomic_fetch_add(&av->ref, 1);
	return 0;
}

static int bind_cq(struct xlink_ep *ep, struct xlink_cq *cq, uint64_t flags)
{
	uint64_t peer_flags = flags & (FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION);
	int ret;

	if (flags & ~(FI_TRANSMIT | FI_RECV | FI_SELECTIVE_COMPLETION))
		return -FI_EINVAL;
	if (!(flags & (FI_TRANSMIT | FI_RECV)) ||
	    ((flags & FI_TRANSMIT) && ep->tx_cq) || ((flags & FI_RECV) && ep->rx_cq))
		return -FI_EINVAL;
	ret = bind_peer(ep, cq->peer_shadow ? &cq->peer_shadow->fid : NULL, peer_flags);
	if (ret)
		return ret;
	if (flags & FI_TRANSMIT) {
		ep->tx_cq = cq;
		ep->tx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->ref, 1);
	}
	if (flags & FI_RECV) {
		ep->rx_cq = cq;
		ep->rx_selective = flags & FI_SELECTIVE_COMPLETION;
		atomic_fetch_add(&cq->ref, 1);
	}
	return 0;
}

static int bind_cntr(struct xlink_ep *ep, struct xlink_cntr *cntr, uint64_t flags)
{
	uint64_t own = flags & (FI_SEND | FI_RECV);
	int ret;

	if (!flags || (flags & ~(FI_SEND | FI_RECV | FI_READ | FI_WRITE |
				 FI_REMOTE_READ | FI_REMOTE_WRITE)))
		return -FI_EINVAL;
	if (((flags & FI_SEND) && ep->tx_cntr) || ((flags & FI_RECV) && ep->rx_cntr))
		return -FI_EINVAL;
	if (!own)
		return 0;
	ret = bind_peer(ep, cntr->peer_shadow ? &cntr->peer_shadow->fid : NULL, own);
	if (ret)
		return ret;
	if (flags & FI_SEND) {
		ep->tx_cntr = cntr;
		atomic_fetch_add(&cntr->ref, 1);
	}
	if (flags & FI_RECV) {
		ep->rx_cntr = cntr;
		atomic_fetch_add(&cntr->ref, 1);
	}
	return 0;
}

static int ep_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);
	struct xlink_domain *domain = ep->domain;
	void *obj;
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	if (ep->enabled)
		return -FI_EOPBADSTATE;
	xlink_domain_lock(domain);
	if ((obj = xlink_av_of(bfid, domain)))
		ret = bind_av(ep, obj);
	else if ((obj = xlink_cq_of(bfid, domain)))
		ret = bind_cq(ep, obj, flags);
	else if ((obj = xlink_cntr_of(bfid, domain)))
		ret = bind_cntr(ep, obj, flags);
	else if (xlink_is_eq(bfid))
		ret = 0;
	else
		ret = -FI_EINVAL;
	xlink_domain_unlock(domain);
	return ret;
}

/* ---- enabling and closing ---- */

/* The peer endpoint takes its receives from xlink's queue (srx.h). */
static int bind_srx(struct xlink_ep *ep)
{
	struct fi_rx_attr rx_attr = *ep->peer_info->rx_attr;
	struct fi_peer_srx_context ctx = { sizeof(ctx), &ep->srx.peer_srx };
	int ret;

	rx_attr.op_flags = FI_PEER;
	ret = fi_srx_context(ep->domain->peer, &rx_attr, &ep->peer_srx_fid, &ctx);
	if (ret)
		return ret;
	return fi_ep_bind(ep->peer_ep, &ep->srx.peer_srx.ep_fid.fid, 0);
}

static int enable(struct xlink_ep *ep)
{
	int ret;

	if (!ep->av)
		return -FI_ENOAV;
	if (!ep->rx_cq && !ep->rx_cntr && !ep->tx_cq && !ep->tx_cntr)
		return -FI_ENOCQ;
	ret = xlink_net_enable(ep);
	if (ret || !ep->peer_ep)
		return ret;
	ret = bind_srx(ep);
	if (!ret)
		ret = fi_enable(ep->peer_ep);
	return ret;
}

static int ep_control(struct fid *fid, int command, void *arg)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);
	int ret;

	if (command != FI_ENABLE)
		return -FI_ENOSYS;
	xlink_domain_lock(ep->domain);
	ret = ep->enabled ? 0 : enable(ep);
	ep->enabled = !ret;
	xlink_domain_unlock(ep->domain);
	return ret;
}

static void unlink_ep(struct xlink_ep *ep)
{
	for (struct xlink_ep **p = &ep->domain->eps; *p; p = &(*p)->next) {
		if (*p == ep) {
			*p = ep->next;
			return;
		}
	}
}

static void drop_refs(struct xlink_ep *ep)
{
	if (ep->av)
		atomic_fetch_sub(&ep->av->ref, 1);
	if (ep->tx_cq)
		atomic_fetch_sub(&ep->tx_cq->ref, 1);
	if (ep->rx_cq)
		atomic_fetch_sub(&ep->rx_cq->ref, 1);
	if (ep->tx_cntr)
		atomic_fetch_sub(&ep->tx_cntr->ref, 1);
	if (ep->rx_cntr)
		atomic_fetch_sub(&ep->rx_cntr->ref, 1);
}

static void free_ep(struct xlink_ep *ep)
{
	if (ep->peer_ep)
		fi_close(&ep->peer_ep->fid);
	if (ep->peer_srx_fid)
		fi_close(&ep->peer_srx_fid->fid);
	xlink_net_close(ep);
	xlink_srx_fini(ep);
	fi_freeinfo(ep->net_info);
	fi_freeinfo(ep->peer_info);
	free(ep);
}

static int ep_close(struct fid *fid)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);
	struct xlink_domain *domain = ep->domain;

	xlink_domain_lock(domain);
	ep->closing = true;
	unlink_ep(ep);
	drop_refs(ep);
	free_ep(ep);
	xlink_domain_unlock(domain);
	atomic_fetch_sub(&domain->ref, 1);
	return 0;
}

static struct fi_ops ep_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = ep_close,
	.bind = ep_bind,
	.control = ep_control,
	.ops_open = xlink_no_ops_open,
};

/* ---- names, cancel, options ---- */

static int ep_getname(fid_t fid, void *addr, size_t *addrlen)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);
	char net[XLINK_ADDR_BYTES], peer[XLINK_PEER_NAME_MAX];
	size_t net_len = sizeof(net), peer_len = sizeof(peer);
	struct xlink_addr name;
	size_t given;
	int ret;

	if (!addrlen || (*addrlen && !addr))
		return -FI_EINVAL;
	xlink_domain_lock(ep->domain);
	ret = xlink_net_getname(ep, net, &net_len);
	if (!ret && ep->peer_ep)
		ret = fi_getname(&ep->peer_ep->fid, peer, &peer_len);
	else
		peer_len = 0;
	xlink_domain_unlock(ep->domain);
	if (!ret)
		ret = xlink_addr_pack(&name, net, net_len, peer, peer_len);
	if (ret)
		return ret;
	given = *addrlen;
	*addrlen = sizeof(name);
	if (given < sizeof(name))
		return -FI_ETOOSMALL;
	memcpy(addr, &name, sizeof(name));
	return 0;
}

static int no_setname(fid_t fid, void *addr, size_t addrlen)
{
	return -FI_ENOSYS;
}

static int no_getpeer(struct fid_ep *ep, void *addr, size_t *addrlen)
{
	return -FI_ENOSYS;
}

static int no_connect(struct fid_ep *ep, const void *addr, const void *param,
		      size_t paramlen)
{
	return -FI_ENOSYS;
}

static int no_listen(struct fid_pep *pep)
{
	return -FI_ENOSYS;
}

static int no_accept(struct fid_ep *ep, const void *param, size_t paramlen)
{
	return -FI_ENOSYS;
}

static int no_reject(struct fid_pep *pep, fid_t handle, const void *param,
		     size_t paramlen)
{
	return -FI_ENOSYS;
}

static int no_shutdown(struct fid_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

static int no_join(struct fid_ep *ep, const void *addr, uint64_t flags,
		   struct fid_mc **mc, void *context)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cm ep_cm_ops = {
	.size = sizeof(struct fi_ops_cm),
	.setname = no_setname,
	.getname = ep_getname,
	.getpeer = no_getpeer,
	.connect = no_connect,
	.listen = no_listen,
	.accept = no_accept,
	.reject = no_reject,
	.shutdown = no_shutdown,
	.join = no_join,
};

static ssize_t ep_cancel(fid_t fid, void *context)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);
	int ret;

	xlink_domain_lock(ep->domain);
	ret = xlink_srx_cancel(ep, context);
	xlink_domain_unlock(ep->domain);
	return ret;
}

/* FI_OPT_MIN_MULTI_RECV, the one option: see srx.c. */
static int ep_getopt(fid_t fid, int level, int optname, void *optval, size_t *optlen)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || !optlen || *optlen < sizeof(size_t))
		return -FI_EINVAL;
	xlink_domain_lock(ep->domain);
	*(size_t *) optval = ep->srx.min_multi_recv;
	xlink_domain_unlock(ep->domain);
	*optlen = sizeof(size_t);
	return 0;
}

static int ep_setopt(fid_t fid, int level, int optname, const void *optval,
		     size_t optlen)
{
	struct xlink_ep *ep = xlink_container_of(fid, struct xlink_ep, ep_fid.fid);

	if (level != FI_OPT_ENDPOINT || optname != FI_OPT_MIN_MULTI_RECV)
		return -FI_ENOPROTOOPT;
	if (!optval || optlen != sizeof(size_t))
		return -FI_EINVAL;
	xlink_domain_lock(ep->domain);
	ep->srx.min_multi_recv = *(const size_t *) optval;
	xlink_domain_unlock(ep->domain);
	return 0;
}

static int no_ctx(struct fid_ep *sep, int index, struct fi_tx_attr *attr,
		  struct fid_ep **ep, void *context)
{
	return -FI_ENOSYS;
}

static ssize_t no_size_left(struct fid_ep *ep)
{
	return -FI_ENOSYS;
}

static struct fi_ops_ep ep_ops = {
	.size = sizeof(struct fi_ops_ep),
	.cancel = ep_cancel,
	.getopt = ep_getopt,
	.setopt = ep_setopt,
	.tx_ctx = no_ctx,
	.rx_ctx = (void *) no_ctx,
	.rx_size_left = no_size_left,
	.tx_size_left = no_size_left,
};

/* ---- opening ---- */

static int open_children(struct xlink_ep *ep, struct fi_info *info)
{
	struct xlink_domain *domain = ep->domain;
	int ret;

	ret = xlink_child_infos(XLINK_API, info, &ep->net_info, &ep->peer_info);
	if (ret)
		return ret;
	if (!domain->peer || !ep->peer_info)
		return 0;
	/* The peer completes sends and receives as the application asked xlink. */
	ep->peer_info->tx_attr->op_flags = ep->tx_op_flags;
	ep->peer_info->rx_attr->op_flags = ep->rx_op_flags & ~FI_MULTI_RECV;
	/*
	 * and reports a source only when the application asked for FI_SOURCE
	 * (fi_cq(3)); it still gives get_msg/get_tag the source to match.
	 */
	if (!(ep->caps & FI_SOURCE)) {
		ep->peer_info->caps &= ~FI_SOURCE;
		ep->peer_info->rx_attr->caps &= ~FI_SOURCE;
	}
	return fi_endpoint(domain->peer, ep->peer_info, &ep->peer_ep, ep);
}

int xlink_endpoint(struct fid_domain *domain_fid, struct fi_info *info,
		   struct fid_ep **ep_fid, void *context)
{
	struct xlink_domain *domain = xlink_domain_of(domain_fid);
	struct xlink_ep *ep;
	int ret;

	if (!domain || !info || !ep_fid || !info->ep_attr ||
	    (info->ep_attr->type != FI_EP_RDM && info->ep_attr->type != FI_EP_UNSPEC))
		return -FI_EINVAL;
	ep = calloc(1, sizeof(*ep));
	if (!ep)
		return -FI_ENOMEM;
	ep->domain = domain;
	ep->caps = info->caps ? info->caps : XLINK_CAPS;
	ep->tx_op_flags = info->tx_attr ? info->tx_attr->op_flags : 0;
	ep->rx_op_flags = info->rx_attr ? info->rx_attr->op_flags : 0;
	xlink_srx_init(ep);
	xlink_domain_lock(domain);
	ret = open_children(ep, info);
	if (ret) {
		free_ep(ep);
		xlink_domain_unlock(domain);
		return ret;
	}
	ep->ep_fid.fid.fclass = FI_CLASS_EP;
	ep->ep_fid.fid.context = context;
	ep->ep_fid.fid.ops = &ep_fi_ops;
	ep->ep_fid.ops = &ep_ops;
	ep->ep_fid.cm = &ep_cm_ops;
	ep->ep_fid.msg = &xlink_msg_ops;
	ep->ep_fid.tagged = &xlink_tagged_ops;
	ep->next = domain->eps;
	domain->eps = ep;
	atomic_fetch_add(&domain->ref, 1);
	xlink_domain_unlock(domain);
	*ep_fid = &ep->ep_fid;
	return 0;
}
