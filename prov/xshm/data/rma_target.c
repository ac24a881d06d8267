/*
 * The target's side of RMA.  Every command is checked, from a private copy,
 * before anything is touched: its shape, then key, access and the whole
 * range of the operation against the domain's registrations
 * (mr/mr_table.c).  Only then are the bytes moved: a single copy from or to
 * the initiator's buffers, whose pid must be that of the region of the
 * sender, or the bytes in the cell for a write, or cells back for a read
 * (rma_reply.c).  The last command of an operation is acked with the
 * status, and reports the remote events of a successful one; a posted
 * write (XSHM_CMD_POSTED), completed at its initiator already, is not
 * acked, and one that fails is dropped with a warning.
 */
#include <string.h>

#include "data/rma.h"
#include "av/av.h"
#include "base/iov.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/buf_return.h"
#include "data/rts.h"
#include "mr/mr_table.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "report/comp.h"
#include "shm/layout.h"
#include "shm/pool.h"
#include "shm/region.h"

static bool src_valid(const struct xshm_rts *src, uint64_t total)
{
	uint64_t sum = 0;

	if (src->iov_count > XSHM_RTS_IOV_MAX)
		return false;
	for (uint32_t i = 0; i < src->iov_count; i++) {
		if (src->iov[i].len > XSHM_MAX_MSG_SIZE)
			return false;
		sum += src->iov[i].len;
	}
	return sum == total;
}

/* A write's piece, at offset in the operation, from the cell or a buffer. */
static bool piece_valid(const struct xshm_cmd *cmd, const struct xshm_rma *rma,
			size_t most)
{
	return rma->len <= most && rma->offset <= cmd->msg_size &&
	       rma->len <= cmd->msg_size - rma->offset;
}

/*
 * A posted write's last piece, in its cell or a bounce buffer, is acked
 * by nobody.
 */
static bool posted_valid(const struct xshm_cmd *cmd,
			 const struct xshm_rma *rma)
{
	return cmd->op == XSHM_OP_WRITE &&
	       (cmd->proto == XSHM_PROTO_INLINE ||
		cmd->proto == XSHM_PROTO_BUF) &&
	       !(cmd->flags & XSHM_CMD_ACK) &&
	       rma->offset + rma->len == cmd->msg_size;
}

/* The shape of a command, before any of it is trusted. */
static bool rma_cmd_valid(const struct xshm_ep *ep, const struct xshm_cmd *cmd,
			  const struct xshm_rma_rts *full)
{
	const struct xshm_rma *rma = &full->rma;
	bool write = cmd->op == XSHM_OP_WRITE;

	if (cmd->msg_size > XSHM_MAX_MSG_SIZE)
		return false;
	if ((cmd->flags & XSHM_CMD_POSTED) && !posted_valid(cmd, rma))
		return false;
	/* A split offer is an RTS its initiator waits on without an ack. */
	if ((cmd->flags & XSHM_CMD_SPLIT) &&
	    (cmd->proto != XSHM_PROTO_RTS || (cmd->flags & XSHM_CMD_ACK)))
		return false;
	if (cmd->proto == XSHM_PROTO_BUF)
		return write && cmd->chunk_len == sizeof(*rma) &&
		       piece_valid(cmd, rma, ep->region.pool.buf_size) &&
		       xshm_pool_owned_by(&ep->region.pool, cmd->buf_index,
					  cmd->src_ep_id);
	if (cmd->proto == XSHM_PROTO_RTS)
		return cmd->chunk_len == sizeof(*full) && !rma->offset &&
		       rma->len == cmd->msg_size &&
		       src_valid(&full->src, cmd->msg_size);
	if (cmd->proto != XSHM_PROTO_INLINE)
		return false;
	if (!write)
		return cmd->chunk_len == sizeof(*rma) && !rma->offset &&
		       rma->len == cmd->msg_size;
	return cmd->chunk_len == sizeof(*rma) + rma->len &&
	       piece_valid(cmd, rma, XSHM_RMA_INLINE_MAX);
}

/* One copy between the local iov and the sender's buffers named by src. */
static int single_copy(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		       const struct xshm_rts *src, const struct iovec *local,
		       size_t nlocal)
{
	struct iovec remote[XSHM_RTS_IOV_MAX];
	int ret;

	if (!ep->scopy)
		return -FI_EOPNOTSUPP;
	if (!xshm_rts_sender(ep, cmd->src_ep_id, src->pid))
		return -FI_EHOSTUNREACH;
	xshm_rts_iov(src, remote);
	if (cmd->op == XSHM_OP_WRITE)
		ret = ep->scopy->pull(src->pid, local, nlocal, remote,
				      src->iov_count, 0, cmd->msg_size);
	else
		ret = ep->scopy->push(src->pid, local, nlocal, remote,
				      src->iov_count, 0, cmd->msg_size);
	return ret ? -FI_EIO : 0;
}

/*
 * The registered range the whole of cmd touches, its key, access and
 * bounds checked, into local: 0 or the negative error.
 */
static int resolve(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		   const struct xshm_rma *rma, struct iovec *local,
		   size_t *nlocal, const struct xshm_mr_entry **mr)
{
	uint64_t role = cmd->op == XSHM_OP_WRITE ? FI_REMOTE_WRITE :
						   FI_REMOTE_READ;

	/* An endpoint that did not ask to be a target is none. */
	if ((ep->caps & (FI_RMA | role)) != (FI_RMA | role))
		return -FI_EOPNOTSUPP;
	return xshm_mr_table_resolve(&ep->domain->mr_table, rma->key,
				     rma->addr, cmd->msg_size, role, local,
				     nlocal, mr);
}

/*
 * Checks and moves the bytes of cmd; 0, a negative error, or 1 when a read
 * is answered in cells, whose sender acks it.
 */
static int serve(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		 const struct xshm_rma_rts *full, const struct xshm_cmd *shared,
		 const struct xshm_mr_entry **mr)
{
	const struct xshm_rma *rma = &full->rma;
	bool write = cmd->op == XSHM_OP_WRITE;
	struct iovec local[XSHM_IOV_LIMIT];
	size_t nlocal;
	int ret = resolve(ep, cmd, rma, local, &nlocal, mr);

	if (ret)
		return ret;
	if (cmd->flags & XSHM_CMD_SPLIT)
		return xshm_rma_split_serve(ep, cmd, &full->src, local,
					    nlocal);
	if (cmd->proto == XSHM_PROTO_RTS)
		return single_copy(ep, cmd, &full->src, local, nlocal);
	if (write && cmd->proto == XSHM_PROTO_BUF) {
		xshm_iov_copy_to(local, nlocal, rma->offset,
				 xshm_pool_buf(&ep->region.pool, cmd->buf_index),
				 rma->len);
		return 0;
	}
	if (write) {
		xshm_iov_copy_to(local, nlocal, rma->offset,
				 shared->data + sizeof(*rma), rma->len);
		return 0;
	}
	ret = xshm_rma_reply_start(ep, cmd->src_ep_id, cmd->ack_id, local,
				   nlocal, cmd->msg_size);
	return ret ? ret : 1;
}

void xshm_rma_report_served(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    uint64_t kind, bool write, size_t len,
			    const struct xshm_mr_entry *mr)
{
	struct fid_peer_cntr *mr_cntr =
		mr->cntr[write ? XSHM_MR_CNTR_WRITE : XSHM_MR_CNTR_READ];
	uint64_t flags = kind | (write ? FI_REMOTE_WRITE : FI_REMOTE_READ);
	bool cq_data = cmd->flags & XSHM_CMD_REMOTE_CQ_DATA;
	fi_addr_t src = FI_ADDR_NOTAVAIL;

	/* the common case, on every streamed write and atomic: no event */
	if (!cq_data && !mr_cntr &&
	    !ep->rma_cntr[write ? XSHM_CNTR_REMOTE_WRITE :
				  XSHM_CNTR_REMOTE_READ])
		return;
	/* only an entry, which remote CQ data asks for, names the source */
	if (cq_data) {
		flags |= FI_REMOTE_CQ_DATA;
		src = xshm_av_lookup_ep_id(ep->av, cmd->src_ep_id);
	}
	xshm_report_rma_target(ep, flags, len, cq_data ? cmd->cq_data : 0, src,
			       cq_data);
	if (mr_cntr)
		mr_cntr->owner_ops->inc(mr_cntr);
}

/* The remote events of a completed RMA operation. */
static void report_target(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			  const struct xshm_mr_entry *mr)
{
	xshm_rma_report_served(ep, cmd, FI_RMA, cmd->op == XSHM_OP_WRITE,
			       cmd->msg_size, mr);
}

/* Its initiator has completed it: nobody to tell of a failure but the log. */
static void finish_posted(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			  const struct xshm_mr_entry *mr, int ret)
{
	if (!ret) {
		report_target(ep, cmd, mr);
		return;
	}
	XSHM_WARN(FI_LOG_EP_DATA,
		  "posted RMA command of %llu bytes dropped: %s\n",
		  (unsigned long long) cmd->msg_size, fi_strerror(-ret));
}

/*
 * A posted write in the cell's first line (struct xshm_rma_short): checked
 * and applied as an inline one is, its failure only logged.
 */
static void short_write(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			const struct xshm_cmd *shared)
{
	const struct xshm_mr_entry *mr = NULL;
	struct iovec local[XSHM_IOV_LIMIT];
	struct xshm_cmd whole = *cmd;
	struct xshm_rma_short head;
	struct xshm_rma rma = { .key = cmd->tag };
	size_t nlocal;
	int ret = -FI_EINVAL;

	if (cmd->op == XSHM_OP_WRITE && cmd->flags == XSHM_CMD_POSTED &&
	    cmd->chunk_len >= sizeof(head) &&
	    cmd->chunk_len <= sizeof(head) + XSHM_RMA_SHORT_MAX) {
		memcpy(&head, shared->short_data, sizeof(head));
		rma.addr = head.addr;
		rma.len = whole.msg_size = cmd->chunk_len - sizeof(head);
		ret = resolve(ep, &whole, &rma, local, &nlocal, &mr);
	}
	if (!ret)
		xshm_iov_copy_to(local, nlocal, 0,
				 shared->short_data + sizeof(head), rma.len);
	finish_posted(ep, &whole, mr, ret);
}

void xshm_rma_target_handle(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    const struct xshm_cmd *shared)
{
	const struct xshm_mr_entry *mr = NULL;
	struct xshm_rma_rts full;
	size_t hdr = cmd->proto == XSHM_PROTO_RTS ? sizeof(full) :
						    sizeof(full.rma);
	int ret;

	if (cmd->op == XSHM_OP_READ_DATA) {
		xshm_rma_read_data(ep, cmd, shared);
		return;
	}
	if (cmd->proto == XSHM_PROTO_SHORT) {
		short_write(ep, cmd, shared);
		return;
	}
	if (cmd->chunk_len < hdr || cmd->chunk_len > XSHM_INLINE_MAX) {
		XSHM_WARN(FI_LOG_EP_DATA, "malformed RMA command dropped\n");
		return;
	}
	memcpy(&full, shared->data, hdr);
	if (!rma_cmd_valid(ep, cmd, &full))
		ret = -FI_EINVAL;
	else
		ret = serve(ep, cmd, &full, shared, &mr);
	/* A buffer its sender holds goes back, whatever became of its bytes. */
	if (cmd->proto == XSHM_PROTO_BUF &&
	    xshm_pool_owned_by(&ep->region.pool, cmd->buf_index, cmd->src_ep_id))
		xshm_buf_return(ep, cmd->buf_index, cmd->src_ep_id);
	if (cmd->flags & XSHM_CMD_POSTED) {
		finish_posted(ep, cmd, mr, ret);
		return;
	}
	if (!(cmd->flags & XSHM_CMD_ACK))
		return;
	if (ret >= 0)
		report_target(ep, cmd, mr);
	if (ret != 1 && !ep->closing)
		xshm_ack_send(ep, cmd->src_ep_id, cmd->ack_id, -ret);
}
