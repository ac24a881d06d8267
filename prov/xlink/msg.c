/*
 * fi_msg(3).  As in tagged.c, send, inject and senddata go to the peer's
 * call of the same name; the others take the general route of xlink_send.
 */
#include "send.h"

static struct xlink_ep *ep_of(struct fid_ep *ep_fid)
{
	return xlink_container_of(ep_fid, struct xlink_ep, ep_fid);
}

static ssize_t post(struct xlink_ep *ep, const struct iovec *iov, void **desc,
		    size_t count, fi_addr_t src, void *context, uint64_t flags)
{
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	ret = xlink_srx_post(ep, false, iov, desc, count, src, 0, 0, context, flags);
	xlink_domain_unlock(ep->domain);
	return ret;
}

static ssize_t recv(struct fid_ep *ep_fid, void *buf, size_t len, void *desc,
		    fi_addr_t src, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct iovec iov = { buf, len };

	return post(ep, &iov, &desc, 1, src, context, ep->rx_op_flags);
}

static ssize_t recvv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
		     size_t count, fi_addr_t src, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);

	return post(ep, iov, desc, count, src, context, ep->rx_op_flags);
}

static ssize_t recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return post(ep_of(ep_fid), msg->msg_iov, msg->desc, msg->iov_count, msg->addr,
		    msg->context, flags);
}

static ssize_t send_to(struct xlink_ep *ep, const void *buf, size_t len,
		       fi_addr_t dest, uint64_t data, uint64_t flags, bool report,
		       void *context)
{
	struct iovec iov = { (void *) buf, len };

	return xlink_send(ep, false, &iov, NULL, 1, dest, 0, data, flags, report,
			  context);
}

static ssize_t send(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
		    fi_addr_t dest, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct xlink_av_entry *entry;
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (entry && entry->local) {
		ret = fi_send(ep->peer_ep, buf, len, NULL, entry->peer_addr, context);
		return xlink_send_done(ep, ret);
	}
	xlink_domain_unlock(ep->domain);
	return send_to(ep, buf, len, dest, 0, ep->tx_op_flags, true, context);
}

static ssize_t sendv(struct fid_ep *ep_fid, const struct iovec *iov, void **desc,
		     size_t count, fi_addr_t dest, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);

	return xlink_send(ep, false, iov, desc, count, dest, 0, 0, ep->tx_op_flags,
			  true, context);
}

static ssize_t sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	return xlink_send(ep_of(ep_fid), false, msg->msg_iov, msg->desc, msg->iov_count,
			  msg->addr, 0, msg->data, flags, true, msg->context);
}

static ssize_t inject(struct fid_ep *ep_fid, const void *buf, size_t len,
		      fi_addr_t dest)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct xlink_av_entry *entry;
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (entry && entry->local) {
		ret = fi_inject(ep->peer_ep, buf, len, entry->peer_addr);
		return xlink_send_done(ep, ret);
	}
	xlink_domain_unlock(ep->domain);
	if (len > xlink_params.eager_max)
		return -FI_EINVAL;
	return send_to(ep, buf, len, dest, 0, FI_INJECT, false, NULL);
}

static ssize_t senddata(struct fid_ep *ep_fid, const void *buf, size_t len, void *desc,
			uint64_t data, fi_addr_t dest, void *context)
{
	struct xlink_ep *ep = ep_of(ep_fid);
	struct xlink_av_entry *entry;
	ssize_t ret;

	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (entry && entry->local) {
		ret = fi_senddata(ep->peer_ep, buf, len, NULL, data, entry->peer_addr,
				  context);
		return xlink_send_done(ep, ret);
	}
	xlink_domain_unlock(ep->domain);
	return send_to(ep, buf, len, dest, data, ep->tx_op_flags | FI_REMOTE_CQ_DATA,
		       true, context);
}

static ssize_t injectdata(struct fid_ep *ep_fid, const void *buf, size_t len,
			  uint64_t data, fi_addr_t dest)
{
	if (len > xlink_params.eager_max)
		return -FI_EINVAL;
	return send_to(ep_of(ep_fid), buf, len, dest, data,
		       FI_INJECT | FI_REMOTE_CQ_DATA, false, NULL);
}

struct fi_ops_msg xlink_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = recv,
	.recvv = recvv,
	.recvmsg = recvmsg,
	.send = send,
	.sendv = sendv,
	.sendmsg = sendmsg,
	.inject = inject,
	.senddata = senddata,
	.injectdata = injectdata,
};
