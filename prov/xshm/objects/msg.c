/* Untagged message calls (fi_msg(3)): argument shaping only. */
#include "base/list.h"
#include "data/recv.h"
#include "data/recv_one.h"
#include "data/send.h"
#include "objects/ep.h"
#include "xshm/fi_xshm.h"
#include "shm/layout.h"

#define XSHM_SENDMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | \
				 FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_MATCH_COMPLETE | FI_FENCE)
#define XSHM_RECVMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_PEEK | FI_CLAIM | \
				 FI_DISCARD | FI_MULTI_RECV | \
				 FI_AUTH_KEY)

static struct xshm_ep *to_ep(struct fid_ep *ep_fid)
{
	return xshm_container_of(ep_fid, struct xshm_ep, ep_fid);
}

static ssize_t xshm_msg_recv(struct fid_ep *ep_fid, void *buf, size_t len,
			     void *desc, fi_addr_t src, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_recv_one(ep, false, buf, len, desc, src, 0, 0, context,
			     ep->rx_op_flags);
}

static ssize_t xshm_msg_recvv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src,
			      void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_recv(ep, false, iov, desc, count, src, 0, 0, context,
			 ep->rx_op_flags);
}

static ssize_t xshm_msg_recvmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~XSHM_RECVMSG_FLAGS)
		return -FI_EBADFLAGS;
	return xshm_recv(to_ep(ep_fid), false, msg->msg_iov, msg->desc,
			 msg->iov_count, msg->addr, 0, 0, msg->context, flags);
}

static ssize_t xshm_msg_send(struct fid_ep *ep_fid, const void *buf, size_t len,
			     void *desc, fi_addr_t dest, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_send_one(ep, XSHM_OP_MSG, buf, len, dest, 0, context,
			     xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_msg_sendv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t dest,
			      void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_send(ep, XSHM_OP_MSG, iov, count, dest, 0, 0, context,
			 xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_msg_sendmsg(struct fid_ep *ep_fid, const struct fi_msg *msg,
				uint64_t flags)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	if (!msg)
		return -FI_EINVAL;
	if (flags & ~XSHM_SENDMSG_FLAGS)
		return -FI_EBADFLAGS;
	return xshm_send(ep, XSHM_OP_MSG, msg->msg_iov, msg->iov_count,
			 msg->addr, 0, msg->data, msg->context,
			 xshm_tx_flags(ep, flags));
}

static ssize_t xshm_msg_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest)
{
	return xshm_send_one(to_ep(ep_fid), XSHM_OP_MSG, buf, len, dest, 0, NULL,
			     FI_INJECT);
}

static ssize_t xshm_msg_senddata(struct fid_ep *ep_fid, const void *buf,
				 size_t len, void *desc, uint64_t data,
				 fi_addr_t dest, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_send(ep, XSHM_OP_MSG, &iov, 1, dest, 0, data, context,
			 xshm_tx_flags(ep, ep->tx_op_flags | FI_REMOTE_CQ_DATA));
}

static ssize_t xshm_msg_injectdata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, uint64_t data, fi_addr_t dest)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_send(to_ep(ep_fid), XSHM_OP_MSG, &iov, 1, dest, 0, data,
			 NULL, FI_INJECT | FI_REMOTE_CQ_DATA);
}

struct fi_ops_msg xshm_msg_ops = {
	.size = sizeof(struct fi_ops_msg),
	.recv = xshm_msg_recv,
	.recvv = xshm_msg_recvv,
	.recvmsg = xshm_msg_recvmsg,
	.send = xshm_msg_send,
	.sendv = xshm_msg_sendv,
	.sendmsg = xshm_msg_sendmsg,
	.inject = xshm_msg_inject,
	.senddata = xshm_msg_senddata,
	.injectdata = xshm_msg_injectdata,
};
