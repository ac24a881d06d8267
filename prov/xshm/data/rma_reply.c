/*
 * Reads without a single copy: the target copies the range out at once (the
 * registration may go before the initiator's ring has room) and pushes it
 * into the initiator's ring as XSHM_OP_READ_DATA cells, then acks; the
 * initiator copies each cell into the read's buffers.
 */
#include <stdlib.h>

#include "data/rma.h"
#include "av/av.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/control.h"
#include "objects/ep.h"
#include "shm/layout.h"
#include "shm/region.h"

struct xshm_rma_reply {
	struct xshm_dlist link;
	uint64_t ep_id;			/* the initiator */
	uint32_t ack_id;		/* its read */
	size_t len;
	size_t sent;
	unsigned char data[];
};

int xshm_rma_reply_start(struct xshm_ep *ep, uint64_t ep_id, uint32_t ack_id,
			 const struct iovec *iov, size_t count, size_t len)
{
	struct xshm_rma_reply *reply = malloc(sizeof(*reply) + len);

	if (!reply)
		return -FI_ENOMEM;
	reply->ep_id = ep_id;
	reply->ack_id = ack_id;
	reply->len = len;
	reply->sent = 0;
	xshm_iov_copy_from(reply->data, iov, count, 0, len);
	xshm_dlist_append(&ep->rma_replies, &reply->link);
	xshm_rma_reply_progress(ep);
	return 0;
}

/* True once all of reply is pushed, or its initiator is gone. */
static bool push_reply(struct xshm_ep *ep, struct xshm_rma_reply *reply)
{
	struct xshm_region *initiator = xshm_av_sender_region(ep->av,
							      reply->ep_id);

	if (!initiator || !xshm_region_is_open(initiator))
		return true;
	while (reply->sent < reply->len) {
		size_t left = reply->len - reply->sent;
		struct xshm_control cell = {
			.op = XSHM_OP_READ_DATA, .proto = XSHM_PROTO_INLINE,
			.tag = reply->sent, .msg_size = reply->len,
			.ack_id = reply->ack_id,
			.payload = reply->data + reply->sent,
			.payload_len = (uint32_t) (left < XSHM_INLINE_MAX ?
						   left : XSHM_INLINE_MAX),
		};

		if (!xshm_control_push(ep, initiator, &cell))
			return false;
		reply->sent += cell.payload_len;
	}
	xshm_ack_send(ep, reply->ep_id, reply->ack_id, 0);
	return true;
}

void xshm_rma_reply_progress(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->rma_replies)) {
		struct xshm_rma_reply *reply = xshm_container_of(
			ep->rma_replies.next, struct xshm_rma_reply, link);

		if (!push_reply(ep, reply))
			return;
		xshm_dlist_remove(&reply->link);
		free(reply);
	}
}

/* At the initiator: bytes of the read the cell's ack_id names. */
void xshm_rma_read_data(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			const void *data)
{
	struct xshm_tx_op *op = xshm_ack_waiting(ep, cmd->src_ep_id,
						 cmd->ack_id);

	if (!op || !(op->comp_flags & FI_READ) ||
	    cmd->proto != XSHM_PROTO_INLINE || cmd->chunk_len > XSHM_INLINE_MAX ||
	    cmd->tag > op->total || cmd->chunk_len > op->total - cmd->tag) {
		XSHM_WARN(FI_LOG_EP_DATA, "unexpected read data dropped\n");
		return;
	}
	xshm_iov_copy_to(op->iov, op->iov_count, cmd->tag, data,
			 cmd->chunk_len);
}

void xshm_rma_reply_close(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->rma_replies)) {
		struct xshm_dlist *item = ep->rma_replies.next;

		xshm_dlist_remove(item);
		free(xshm_container_of(item, struct xshm_rma_reply, link));
	}
}
