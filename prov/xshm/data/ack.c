/*
 * Acknowledgements.  A send asking for FI_DELIVERY_COMPLETE or
 * FI_MATCH_COMPLETE, or pulled by the receiver (single copy), carries
 * XSHM_CMD_ACK and an id; once the receiver has delivered (or discarded)
 * the message it pushes an XSHM_OP_ACK cell with that id and a status into
 * the sender's ring, and the sender completes the send.  Senders need not be
 * in the receiver's AV: their regions come from the domain's peers (peer/).
 */
#include <stdlib.h>

#include "data/ack.h"
#include "av/av.h"
#include "base/list.h"
#include "base/provider.h"
#include "data/control.h"
#include "data/rma.h"
#include "data/liveness.h"
#include "data/send.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/comp.h"
#include "shm/layout.h"
#include "shm/liveness.h"
#include "shm/region.h"
#include "shm/ring.h"

struct xshm_ack_out {
	struct xshm_dlist link;
	uint64_t ep_id;
	uint32_t ack_id;
	int status;
};

/* False when the sender's ring is full: try again later. */
static bool push_ack(struct xshm_ep *ep, uint64_t ep_id, uint32_t ack_id,
		     int status)
{
	struct xshm_region *sender = xshm_peer_sender_region(&ep->domain->peers,
							     ep_id);
	struct xshm_control ack = {
		.op = XSHM_OP_ACK, .proto = XSHM_PROTO_INLINE,
		.tag = (uint64_t) status, .ack_id = ack_id,
	};

	if (!sender || !xshm_region_is_open(sender))
		return true;	/* the sender closed: nobody to tell */
	return xshm_control_push(ep, sender, &ack);
}

void xshm_ack_send(struct xshm_ep *ep, uint64_t sender_ep_id, uint32_t ack_id,
		   int status)
{
	struct xshm_ack_out *out;

	if (xshm_dlist_empty(&ep->acks_out) &&
	    push_ack(ep, sender_ep_id, ack_id, status))
		return;
	out = malloc(sizeof(*out));
	if (!out) {
		XSHM_WARN(FI_LOG_EP_DATA, "no memory: ack lost\n");
		return;
	}
	out->ep_id = sender_ep_id;
	out->ack_id = ack_id;
	out->status = status;
	xshm_dlist_append(&ep->acks_out, &out->link);
}

uint32_t xshm_ack_new_id(struct xshm_ep *ep)
{
	if (++ep->next_ack_id == 0)	/* 0 means "no ack" */
		ep->next_ack_id = 1;
	return ep->next_ack_id;
}

void xshm_ack_flush(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->acks_out)) {
		struct xshm_ack_out *out = xshm_container_of(ep->acks_out.next,
						struct xshm_ack_out, link);

		if (!push_ack(ep, out->ep_id, out->ack_id, out->status))
			return;
		xshm_dlist_remove(&out->link);
		free(out);
	}
}

static void fail_waiting(struct xshm_ep *ep, struct xshm_tx_op *op, int err)
{
	xshm_rma_tx_done(ep, op, false);
	xshm_report_tx_err(ep, &(struct fi_cq_err_entry) {
		.op_context = op->context, .flags = op->comp_flags,
		.tag = op->tag, .err = err, .prov_errno = err,
	});
}

/* An ack names a send by id and must come from that send's destination. */
struct xshm_tx_op *xshm_ack_waiting(struct xshm_ep *ep, uint64_t from_ep_id,
				    uint32_t ack_id)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(&ep->tx_wait_ack, it) {
		struct xshm_tx_op *op = xshm_container_of(it, struct xshm_tx_op,
							  link);

		if (op->ack_id == ack_id && op->dest_ep_id == from_ep_id)
			return op;
	}
	return NULL;
}

void xshm_ack_received(struct xshm_ep *ep, uint64_t from_ep_id, uint32_t ack_id,
		       int status)
{
	struct xshm_tx_op *op = xshm_ack_waiting(ep, from_ep_id, ack_id);

	if (!op) {
		XSHM_WARN(FI_LOG_EP_DATA, "unexpected ack %u dropped\n", ack_id);
		return;
	}
	xshm_ack_complete(ep, op, status);
}

void xshm_ack_complete(struct xshm_ep *ep, struct xshm_tx_op *op, int status)
{
	/* An RMA or atomic target's status says which check failed. */
	if (status) {
		fail_waiting(ep, op, op->comp_flags & (FI_RMA | FI_ATOMIC) ?
				     status : FI_EIO);
	} else {
		xshm_rma_tx_done(ep, op, true);
		xshm_report_tx(ep, op->context, op->comp_flags, op->cq_entry);
	}
	xshm_dlist_remove(&op->link);
	xshm_block_free(&ep->tx_blocks, op);
}

/*
 * A receiver pushes its ack and may close at once: the ack can still sit
 * in our ring, behind commands this progress call did not reach, when we
 * see the receiver gone.  Its cell was published before the receiver
 * closed, so it is visible now.  Continuation cells hold payload that could
 * look like an ack: the cost of that is a send reaped one call later.
 */
static bool ack_in_ring(const struct xshm_ep *ep, const struct xshm_tx_op *op)
{
	const struct xshm_ring_ref *ring = &ep->region.ring;

	for (uint64_t i = 0; i <= ring->mask; i++) {
		const struct xshm_cmd *cmd = xshm_ring_peek_at(ring, (uint32_t) i);

		if (cmd && (cmd->op == XSHM_OP_ACK ||
			    (cmd->op == XSHM_OP_READ_DATA &&
			     (cmd->flags & XSHM_CMD_ACK))) &&
		    cmd->ack_id == op->ack_id &&
		    cmd->src_ep_id == op->dest_ep_id)
			return true;
	}
	return false;
}

/*
 * Sends whose receiver closed, or whose address was removed or now names
 * another process, before acking will never be acked: they fail instead of
 * waiting forever, unless the ack is already on its way to us.
 */
void xshm_ack_reap(struct xshm_ep *ep)
{
	struct xshm_dlist *it = ep->tx_wait_ack.next;

	while (it != &ep->tx_wait_ack) {
		struct xshm_tx_op *op = xshm_container_of(it, struct xshm_tx_op,
							  link);
		struct xshm_peer *peer;
		int ret = xshm_av_peer(ep->av, op->dest, &peer);

		it = it->next;
		if (!ret && peer->ep_id == op->dest_ep_id &&
		    xshm_owner_same(peer->owner, op->dest_owner))
			continue;
		if (ret == -FI_EAGAIN || ack_in_ring(ep, op))
			continue;
		xshm_ack_wait_fail(ep, op, xshm_liveness_gone_err(op->dest_owner));
	}
}

void xshm_ack_wait_fail(struct xshm_ep *ep, struct xshm_tx_op *op, int err)
{
	fail_waiting(ep, op, err);
	xshm_dlist_remove(&op->link);
	xshm_block_free(&ep->tx_blocks, op);
}

uint64_t xshm_ack_blocked_sender(const struct xshm_ep *ep)
{
	if (xshm_dlist_empty(&ep->acks_out))
		return 0;
	return xshm_container_of(ep->acks_out.next, struct xshm_ack_out,
				 link)->ep_id;
}

void xshm_ack_close(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->acks_out)) {
		struct xshm_dlist *item = ep->acks_out.next;

		xshm_dlist_remove(item);
		free(xshm_container_of(item, struct xshm_ack_out, link));
	}
	while (!xshm_dlist_empty(&ep->tx_wait_ack)) {
		struct xshm_dlist *item = ep->tx_wait_ack.next;

		xshm_dlist_remove(item);
		xshm_block_free(&ep->tx_blocks,
				xshm_container_of(item, struct xshm_tx_op, link));
	}
}
