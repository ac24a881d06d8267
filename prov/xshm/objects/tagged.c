/* Tagged message calls (fi_tagged(3)): argument shaping only. */
#include "base/list.h"
#include "data/recv.h"
#include "data/recv_one.h"
#include "data/send.h"
#include "objects/ep.h"
#include "xshm/fi_xshm.h"
#include "shm/layout.h"

#define XSHM_TSENDMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | \
				 FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_MATCH_COMPLETE | FI_FENCE)
#define XSHM_TRECVMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_PEEK | FI_CLAIM | \
				 FI_DISCARD | \
				 FI_AUTH_KEY)

static struct xshm_ep *to_ep(struct fid_ep *ep_fid)
{
	return xshm_container_of(ep_fid, struct xshm_ep, ep_fid);
}

static ssize_t xshm_trecv(struct fid_ep *ep_fid, void *buf, size_t len,
			  void *desc, fi_addr_t src, uint64_t tag,
			  uint64_t ignore, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_recv_one(ep, true, buf, len, desc, src, tag, ignore,
			     context, ep->rx_op_flags & ~FI_MULTI_RECV);
}

static ssize_t xshm_trecvv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t src,
			   uint64_t tag, uint64_t ignore, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_recv(ep, true, iov, desc, count, src, tag, ignore, context,
			 ep->rx_op_flags & ~FI_MULTI_RECV);
}

static ssize_t xshm_trecvmsg(struct fid_ep *ep_fid,
			     const struct fi_msg_tagged *msg, uint64_t flags)
{
	if (!msg)
		return -FI_EINVAL;
	if (flags & ~XSHM_TRECVMSG_FLAGS)
		return -FI_EBADFLAGS;
	return xshm_recv(to_ep(ep_fid), true, msg->msg_iov, msg->desc,
			 msg->iov_count, msg->addr, msg->tag, msg->ignore,
			 msg->context, flags);
}

static ssize_t xshm_tsend(struct fid_ep *ep_fid, const void *buf, size_t len,
			  void *desc, fi_addr_t dest, uint64_t tag,
			  void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_send_one(ep, XSHM_OP_TAGGED, buf, len, dest, tag, context,
			     xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_tsendv(struct fid_ep *ep_fid, const struct iovec *iov,
			   void **desc, size_t count, fi_addr_t dest,
			   uint64_t tag, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_send(ep, XSHM_OP_TAGGED, iov, count, dest, tag, 0, context,
			 xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_tsendmsg(struct fid_ep *ep_fid,
			     const struct fi_msg_tagged *msg, uint64_t flags)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	if (!msg)
		return -FI_EINVAL;
	if (flags & ~XSHM_TSENDMSG_FLAGS)
		return -FI_EBADFLAGS;
	return xshm_send(ep, XSHM_OP_TAGGED, msg->msg_iov, msg->iov_count,
			 msg->addr, msg->tag, msg->data, msg->context,
			 xshm_tx_flags(ep, flags));
}

static ssize_t xshm_tinject(struct fid_ep *ep_fid, const void *buf, size_t len,
			    fi_addr_t dest, uint64_t tag)
{
	return xshm_send_one(to_ep(ep_fid), XSHM_OP_TAGGED, buf, len, dest, tag,
			     NULL, FI_INJECT);
}

static ssize_t xshm_tsenddata(struct fid_ep *ep_fid, const void *buf,
			      size_t len, void *desc, uint64_t data,
			      fi_addr_t dest, uint64_t tag, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_send(ep, XSHM_OP_TAGGED, &iov, 1, dest, tag, data, context,
			 xshm_tx_flags(ep, ep->tx_op_flags | FI_REMOTE_CQ_DATA));
}

static ssize_t xshm_tinjectdata(struct fid_ep *ep_fid, const void *buf,
				size_t len, uint64_t data, fi_addr_t dest,
				uint64_t tag)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_send(to_ep(ep_fid), XSHM_OP_TAGGED, &iov, 1, dest, tag,
			 data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA);
}

struct fi_ops_tagged xshm_tagged_ops = {
	.size = sizeof(struct fi_ops_tagged),
	.recv = xshm_trecv,
	.recvv = xshm_trecvv,
	.recvmsg = xshm_trecvmsg,
	.send = xshm_tsend,
	.sendv = xshm_tsendv,
	.sendmsg = xshm_tsendmsg,
	.inject = xshm_tinject,
	.senddata = xshm_tsenddata,
	.injectdata = xshm_tinjectdata,
};
