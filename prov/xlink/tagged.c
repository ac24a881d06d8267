/*
 * fi_tagged(3).  The calls the peer path is timed by (tsend, tinject,
 * tsenddata) go to the peer's own call of the same name; the others take
 * the general route of xlink_send.
 */
#include "send.h"

static struct xlink_ep *ep_of(struct fid_ep *ep_fid)
{
	return xlink_container_of(ep_fid, struct xlink_ep, ep_fid);
}

static ssize_t trecv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
		     fi_addr_t src, uint64_t tag, uint64_t ignore, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct iovec iov = { buf, len };
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	ret = xlink_srx_post(ep, true, &iov, &desc, 1, src, tag, ignore, context,
			     ep->rx_op_flags & ~FI_MULTI_RECV);
	xlink_domain_unlock(ep->domain);
	return ret;
}

static ssize_t trecvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore,
		      void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	ret = xlink_srx_post(ep, true, iov, desc, count, src, tag, ignore, context,
			     ep->rx_op_flags & ~FI_MULTI_RECV);
	xlink_domain_unlock(ep->domain);
	return ret;
}

static ssize_t trecvmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	ssize_t ret;

	if (!msg)
		return -FI_EINVAL;
	xlink_domain_lock(ep->domain);
	ret = xlink_srx_post(ep, true, msg->msg_iov, msg->desc, msg->iov_count,
			     msg->addr, msg->tag, msg->ignore, msg->context, flags);
	xlink_domain_unlock(ep->domain);
	return ret;
}

static ssize_t tsend_to(struct xlink_ep *ep, const void *buf, size_t len,
			fi_addr_t dest, uint64_t tag, uint64_t data, uint64_t flags,
			bool report, void *context)
{
	struct iovec iov = { (void *) buf, len };

	return xlink_send(ep, true, &iov, NULL, 1, dest, tag, data, flags, report,
			  context);
}

static ssize_t tsend(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
		     fi_addr_t dest, uint64_t tag, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct xlink_av_entry *entry;
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (entry && entry->local) {
		ret = fi_tsend(ep->peer_ep, buf, len, NULL, entry->peer_addr, tag, context);
		return xlink_send_done(ep, ret);
	}
	xlink_domain_unlock(ep->domain);
	return tsend_to(ep, buf, len, dest, tag, 0, ep->tx_op_flags, true, context);
}

static ssize_t tsendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
		      size_t count, fi_addr_t dest, uint64_t tag, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);

	return xlink_send(ep, true, iov, desc, count, dest, tag, 0, ep->tx_op_flags,
			  true, context);
}

static ssize_t tsendmsg(struct fid_ep *ep_fid, const struct fi_msg_tagged *msg,
			uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return xlink_send(ep_of(ep_fid), true, msg->msg_iov, msg->desc, msg->iov_count,
			  msg->addr, msg->tag, msg->data, flags, true, msg->context);
}

static ssize_t tinject(struct fid_ep *ep_fid, const void *buf, size_t len,
		       fi_addr_t dest, uint64_t tag)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct xlink_av_entry *entry;
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (entry && entry->local) {
		ret = fi_tinject(ep->peer_ep, buf, len, entry->peer_addr, tag);
		return xlink_send_done(ep, ret);
	}
	xlink_domain_unlock(ep->domain);
	if (len > xlink_params.eager_max)
		return -FI_EINVAL;
	return tsend_to(ep, buf, len, dest, tag, 0, FI_INJECT, false, NULL);
}

static ssize_t tsenddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			 uint64_t data, fi_addr_t dest, uint64_t tag, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct xlink_av_entry *entry;
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (entry && entry->local) {
		ret = fi_tsenddata(ep->peer_ep, buf, len, NULL, data, entry->peer_addr,
				   tag, context);
		return xlink_send_done(ep, ret);
	}
	xlink_domain_unlock(ep->domain);
	return tsend_to(ep, buf, len, dest, tag, data,
			ep->tx_op_flags | FI_REMOTE_CQ_DATA, true, context);
}

static ssize_t tinjectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
			   uint64_t data, fi_addr_t dest, uint64_t tag)
{
	struct xlink_ep *ep = ep_of(ep_fid);

	if (len > xlink_params.eager_max)
		return -FI_EINVAL;
	return tsend_to(ep, buf, len, dest, tag, data, FI_INJECT | FI_REMOTE_CQ_DATA, false,
			NULL);
}

struct fi_ops_tagged xlink_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = trecv,
	.recvv = trecvv,
	.recvmsg = trecvmsg,
	.send = tsend,
	.sendv = tsendv,
	.sendmsg = tsendmsg,
	.inject = tinject,
	.senddata = tsenddata,
	.injectdata = tinjectdata,
};
