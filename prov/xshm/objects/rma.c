/* RMA calls (fi_rma(3)): argument shaping only; data/rma_send.c does it. */
#include "base/iov.h"
#include "data/rma.h"
#include "objects/ep.h"
#include "shm/layout.h"

#define XSHM_RMAMSG_FLAGS	(FI_COMPLETION | FI_MORE | FI_INJECT | \
				 FI_REMOTE_CQ_DATA | FI_INJECT_COMPLETE | \
				 FI_TRANSMIT_COMPLETE | FI_DELIVERY_COMPLETE | \
				 FI_COMMIT_COMPLETE | FI_FENCE)

static struct xshm_ep *to_ep(struct fid_ep *ep_fid)
{
	return xshm_container_of(ep_fid, struct xshm_ep, ep_fid);
}

/* One target range per operation (rma_iov_limit 1), as long as the data. */
static ssize_t rma_msg(struct fid_ep *ep_fid, uint8_t kind,
		       const struct fi_msg_rma *msg, uint64_t flags)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	if (!msg || msg->rma_iov_count != 1 || !msg->rma_iov)
		return -FI_EINVAL;
	if (flags & ~XSHM_RMAMSG_FLAGS)
		return -FI_EBADFLAGS;
	if (xshm_check_iov(msg->msg_iov, msg->iov_count, ep->tx_iov_limit) ||
	    xshm_iov_total(msg->msg_iov, msg->iov_count) > msg->rma_iov[0].len)
		return -FI_EINVAL;
	return xshm_rma_post(ep, kind, msg->msg_iov, msg->iov_count, msg->addr,
			     msg->rma_iov[0].addr, msg->rma_iov[0].key,
			     msg->data, msg->context, xshm_tx_flags(ep, flags));
}

static ssize_t xshm_rma_read(struct fid_ep *ep_fid, void *buf, size_t len,
			     void *desc, fi_addr_t src, uint64_t addr,
			     uint64_t key, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	return xshm_rma_post(ep, XSHM_OP_READ, &iov, 1, src, addr, key, 0,
			     context, xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_rma_readv(struct fid_ep *ep_fid, const struct iovec *iov,
			      void **desc, size_t count, fi_addr_t src,
			      uint64_t addr, uint64_t key, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_rma_post(ep, XSHM_OP_READ, iov, count, src, addr, key, 0,
			     context, xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_rma_readmsg(struct fid_ep *ep_fid,
				const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, XSHM_OP_READ, msg, flags & ~FI_REMOTE_CQ_DATA);
}

static ssize_t xshm_rma_write(struct fid_ep *ep_fid, const void *buf,
			      size_t len, void *desc, fi_addr_t dest,
			      uint64_t addr, uint64_t key, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_rma_post(ep, XSHM_OP_WRITE, &iov, 1, dest, addr, key, 0,
			     context, xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_rma_writev(struct fid_ep *ep_fid, const struct iovec *iov,
			       void **desc, size_t count, fi_addr_t dest,
			       uint64_t addr, uint64_t key, void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);

	return xshm_rma_post(ep, XSHM_OP_WRITE, iov, count, dest, addr, key, 0,
			     context, xshm_tx_flags(ep, ep->tx_op_flags));
}

static ssize_t xshm_rma_writemsg(struct fid_ep *ep_fid,
				 const struct fi_msg_rma *msg, uint64_t flags)
{
	return rma_msg(ep_fid, XSHM_OP_WRITE, msg, flags);
}

static ssize_t xshm_rma_inject(struct fid_ep *ep_fid, const void *buf,
			       size_t len, fi_addr_t dest, uint64_t addr,
			       uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_rma_post(to_ep(ep_fid), XSHM_OP_WRITE, &iov, 1, dest, addr,
			     key, 0, NULL, FI_INJECT);
}

static ssize_t xshm_rma_writedata(struct fid_ep *ep_fid, const void *buf,
				  size_t len, void *desc, uint64_t data,
				  fi_addr_t dest, uint64_t addr, uint64_t key,
				  void *context)
{
	struct xshm_ep *ep = to_ep(ep_fid);
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_rma_post(ep, XSHM_OP_WRITE, &iov, 1, dest, addr, key, data,
			     context, xshm_tx_flags(ep, ep->tx_op_flags |
						    FI_REMOTE_CQ_DATA));
}

static ssize_t xshm_rma_injectdata(struct fid_ep *ep_fid, const void *buf,
				   size_t len, uint64_t data, fi_addr_t dest,
				   uint64_t addr, uint64_t key)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_rma_post(to_ep(ep_fid), XSHM_OP_WRITE, &iov, 1, dest, addr,
			     key, data, NULL, FI_INJECT | FI_REMOTE_CQ_DATA);
}

struct fi_ops_rma xshm_rma_ops = {
	.size = sizeof(struct fi_ops_rma),
	.read = xshm_rma_read,
	.readv = xshm_rma_readv,
	.readmsg = xshm_rma_readmsg,
	.write = xshm_rma_write,
	.writev = xshm_rma_writev,
	.writemsg = xshm_rma_writemsg,
	.inject = xshm_rma_inject,
	.writedata = xshm_rma_writedata,
	.injectdata = xshm_rma_injectdata,
};
