/*
 * Sends that need more than the whole-message path (send.c): a struct
 * xshm_tx_op, pushed cell by cell (inline pieces, bounce buffers and
 * their XSHM_OP_CHUNK cells), as a run of cells, or as one RTS cell for a
 * single copy; completed at once or on its ack.  One that cannot be pushed
 * whole waits in ep->tx_queue, in posting order, for progress to push it.
 */
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "base/list.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/bounce_fill.h"
#include "data/control.h"
#include "data/liveness.h"
#include "data/path.h"
#include "data/progress.h"
#include "data/send.h"
#include "data/rts.h"
#include "data/send_int.h"
#include "data/spare.h"
#include "objects/ep.h"
#include "report/comp.h"
#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/liveness.h"
#include "shm/pool.h"
#include "shm/region.h"
#include "shm/ring.h"

/* The command header of one of op's cells. */
static void fill_cmd(struct xshm_cmd *cmd, const struct xshm_ep *ep,
		     const struct xshm_tx_op *op, uint8_t kind, uint8_t proto,
		     uint32_t buf_index, uint32_t chunk_len)
{
	cmd->op = kind;
	cmd->proto = proto;
	cmd->flags = op->cmd_flags;
	cmd->buf_index = buf_index;
	cmd->src_ep_id = ep->addr.ep_id;
	cmd->tag = op->tag;
	cmd->cq_data = op->data;
	cmd->msg_size = op->total;
	cmd->chunk_len = chunk_len;
	cmd->ack_id = op->ack_id ? op->ack_id : op->timed_id;
}

/* Publishes op's cell carrying its next len bytes. */
static void publish(struct xshm_region *peer, struct xshm_tx_op *op,
		    struct xshm_cmd *cmd, uint64_t pos, size_t len)
{
	xshm_ring_commit(&peer->ring, cmd, pos);
	xshm_doorbell_ring(peer);
	op->sent += len;
	op->started = true;
}

/* The whole message as one RTS cell naming the sender's buffers. */
static bool push_rts(struct xshm_ep *ep, struct xshm_region *peer,
		     struct xshm_tx_op *op)
{
	uint64_t pos;
	struct xshm_cmd *cmd = xshm_ring_reserve(&peer->ring, &pos);
	struct xshm_rts *rts;

	if (!cmd)
		return false;
	fill_cmd(cmd, ep, op, op->op, XSHM_PROTO_RTS, 0, sizeof(*rts));
	rts = (struct xshm_rts *) cmd->data;
	xshm_rts_name(rts, op->iov, op->iov_count);
	publish(peer, op, cmd, pos, op->total);
	return true;
}

/* The whole message in a run of cells, for a message that needs an op. */
static bool push_cells(struct xshm_ep *ep, struct xshm_region *peer,
		       struct xshm_tx_op *op)
{
	uint64_t pos;
	struct xshm_cmd *cmd = reserve_run(peer, op->total, &pos);
	size_t head;

	if (!cmd)
		return false;
	head = xshm_tx_fill_run(peer, cmd, pos, op->iov, op->iov_count,
				op->total);
	fill_cmd(cmd, ep, op, op->op, XSHM_PROTO_CELLS, 0, (uint32_t) op->total);
	fill_cell_head(cmd->data, op->iov, op->iov_count, 0, head);
	publish(peer, op, cmd, pos, op->total);
	return true;
}

/* The next len bytes of op into bounce buffer index, timed if op is. */
static void fill_bounce(struct xshm_ep *ep, struct xshm_region *peer,
			const struct xshm_tx_op *op, uint32_t index, size_t len)
{
	uint64_t start = xshm_path_clock(op->timed_id);

	xshm_bounce_fill(ep, peer, xshm_pool_buf(&peer->pool, index), op->iov,
			 op->iov_count, op->sent, len);
	xshm_path_copy_done(ep, op->timed_id, start);
}

/* A lone send keeps to the warm buffers, a stream goes round (pool.c). */
static enum xshm_pool_order pool_order(const struct xshm_tx_op *op)
{
	return op->lone ? XSHM_POOL_WARM : XSHM_POOL_ROUND;
}

/*
 * Pushes one cell of op; false when the peer's ring or pool is full.  A
 * remainder that fits the cell travels in it, the last piece of a chunked
 * message too: a bounce buffer for its few bytes would cost a second
 * buffer's round trip through the pool.
 */
static bool push_cell(struct xshm_ep *ep, struct xshm_region *peer,
		      struct xshm_tx_op *op)
{
	size_t len = op->total - op->sent;
	bool is_inline = len <= XSHM_INLINE_MAX;
	bool first_piece = !op->started;
	uint32_t index = 0;
	struct xshm_cmd *cmd;
	uint64_t pos;
	size_t head = 0;

	if (!is_inline) {
		if (len > peer->pool.buf_size)
			len = peer->pool.buf_size;
		if (xshm_spare_borrow(ep, peer, pool_order(op), &index))
			return false;
	}
	cmd = xshm_ring_reserve(&peer->ring, &pos);
	if (!cmd) {
		if (!is_inline)
			xshm_pool_free(&peer->pool, index, ep->addr.ep_id);
		return false;
	}
	if (is_inline)
		head = fill_cell_tail(cmd, cmd->data, op->iov, op->iov_count,
				      op->sent, len);
	else
		fill_bounce(ep, peer, op, index, len);
	fill_cmd(cmd, ep, op, first_piece ? op->op : XSHM_OP_CHUNK,
		 is_inline ? XSHM_PROTO_INLINE : XSHM_PROTO_BUF, index,
		 (uint32_t) len);
	if (is_inline)
		fill_cell_head(cmd->data, op->iov, op->iov_count, op->sent,
			       head);
	publish(peer, op, cmd, pos, len);
	if (!is_inline && first_piece)
		xshm_spare_want(ep, op->dest, len, pool_order(op));
	return true;
}

/* Pushes as much of op as the peer takes; true once all of it is pushed. */
static bool push_op(struct xshm_ep *ep, struct xshm_region *peer,
		    struct xshm_tx_op *op)
{
	if (op->rts)
		return op->started || push_rts(ep, peer, op);
	if (op->cells)
		return op->started || push_cells(ep, peer, op);
	while (!op->started || op->sent < op->total)
		if (!push_cell(ep, peer, op))
			return false;
	return true;
}

static void complete_op(struct xshm_ep *ep, const struct xshm_tx_op *op)
{
	xshm_report_tx(ep, op->context, op->comp_flags, op->cq_entry);
}

static void fail_op(struct xshm_ep *ep, const struct xshm_tx_op *op, int err)
{
	struct fi_cq_err_entry err_entry = {
		.op_context = op->context,
		.flags = op->comp_flags,
		.tag = op->tag,
		.err = err,
		.prov_errno = err,
	};

	xshm_report_tx_err(ep, &err_entry);
}

static void dequeue_op(struct xshm_ep *ep, struct xshm_tx_op *op)
{
	xshm_dlist_remove(&op->link);
	ep->tx_queued--;
	xshm_block_free(&ep->tx_blocks, op);
}

/*
 * All of op is pushed: complete it, or park it until its ack when it asked
 * for delivery or match completion.  A queued op is moved, one on the stack
 * copied.
 */
static int finish_op(struct xshm_ep *ep, struct xshm_tx_op *op, bool queued)
{
	struct xshm_tx_op *waiting = op;

	if (!op->ack_id) {
		complete_op(ep, op);
		if (queued)
			dequeue_op(ep, op);
		return 0;
	}
	if (queued) {
		xshm_dlist_remove(&op->link);
		ep->tx_queued--;
	} else {
		waiting = xshm_block_alloc(&ep->tx_blocks, sizeof(*waiting));
		if (!waiting)
			return -FI_ENOMEM;
		*waiting = *op;
	}
	xshm_dlist_append(&ep->tx_wait_ack, &waiting->link);
	return 0;
}

/* A fenced send waits until every send before it has completed. */
static bool fence_blocks(const struct xshm_ep *ep, const struct xshm_tx_op *op)
{
	return op->fence && !xshm_dlist_empty(&ep->tx_wait_ack);
}

void xshm_tx_progress(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->tx_queue)) {
		struct xshm_tx_op *op = xshm_container_of(ep->tx_queue.next,
						struct xshm_tx_op, link);
		struct xshm_peer *peer;
		int ret = xshm_av_peer(ep->av, op->dest, &peer);

		if (ret == -FI_EAGAIN)
			return;
		/* Its region gone: FI_EIO if because its receiver died. */
		if (ret == -FI_EHOSTUNREACH)
			ret = -xshm_liveness_gone_err(op->dest_owner);
		if (!ret && peer->ep_id != op->dest_ep_id)
			ret = -FI_EADDRNOTAVAIL;
		else if (!ret && !xshm_owner_same(peer->owner, op->dest_owner))
			ret = -xshm_liveness_gone_err(op->dest_owner);
		if (ret) {
			fail_op(ep, op, -ret);
			dequeue_op(ep, op);
			continue;
		}
		if ((!op->started && fence_blocks(ep, op)) ||
		    !push_op(ep, &peer->region, op))
			return;
		finish_op(ep, op, true);
	}
}

void xshm_tx_queue_fail(struct xshm_ep *ep, struct xshm_tx_op *op, int err)
{
	fail_op(ep, op, err);
	dequeue_op(ep, op);
}

ssize_t xshm_tx_cancel(struct xshm_ep *ep, void *context)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(&ep->tx_queue, it) {
		struct xshm_tx_op *op = xshm_container_of(it, struct xshm_tx_op,
							  link);

		if (op->context == context && !op->started) {
			fail_op(ep, op, FI_ECANCELED);
			dequeue_op(ep, op);
			return 0;
		}
	}
	return -FI_ENOENT;
}

/* Tells the receiver of a half-pushed message that the rest is not coming. */
static void push_abort(struct xshm_ep *ep, const struct xshm_tx_op *op)
{
	struct xshm_control ctl = {
		.op = XSHM_OP_ABORT, .proto = XSHM_PROTO_INLINE,
	};
	struct xshm_peer *peer;

	/*
	 * A full ring drops it: the receiver will see this sender's region
	 * gone once the endpoint closes.
	 */
	if (!xshm_av_peer(ep->av, op->dest, &peer) &&
	    peer->ep_id == op->dest_ep_id)
		xshm_control_push(ep, &peer->region, &ctl);
}

/* Endpoint close: queued sends are dropped without completions. */
void xshm_tx_abort_all(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->tx_queue)) {
		struct xshm_tx_op *op = xshm_container_of(ep->tx_queue.next,
						struct xshm_tx_op, link);

		if (op->started)
			push_abort(ep, op);
		dequeue_op(ep, op);
	}
}

static ssize_t queue_op(struct xshm_ep *ep, const struct xshm_tx_op *op)
{
	struct xshm_tx_op *queued = xshm_block_alloc(&ep->tx_blocks,
						     sizeof(*queued));

	if (!queued)
		return -FI_ENOMEM;
	*queued = *op;
	xshm_dlist_append(&ep->tx_queue, &queued->link);
	ep->tx_queued++;
	return 0;
}

static void init_op(struct xshm_ep *ep, const struct xshm_region *peer,
		    struct xshm_tx_op *op, const struct xshm_send_path *path,
		    uint8_t kind, const struct iovec *iov, size_t count,
		    size_t total, fi_addr_t dest, uint64_t tag, uint64_t data,
		    void *context, uint64_t flags)
{
	op->op = kind;
	op->cmd_flags = (flags & FI_REMOTE_CQ_DATA) ? XSHM_CMD_REMOTE_CQ_DATA : 0;
	op->dest = dest;
	op->tag = tag;
	op->data = data;
	op->context = context;
	op->comp_flags = FI_SEND | (kind == XSHM_OP_TAGGED ? FI_TAGGED : FI_MSG);
	op->cq_entry = flags & FI_COMPLETION;
	op->fence = flags & FI_FENCE;
	op->ack_id = 0;
	op->timed_id = path->timed_id;
	if (op->timed_id)
		op->cmd_flags |= XSHM_CMD_TIMED;
	op->total = total;
	op->rts = path->rts;
	op->lone = path->lone;
	if (op->rts)
		op->cmd_flags |= XSHM_CMD_PUSH;
	op->cells = !op->rts && total > XSHM_INLINE_MAX &&
		    fits_run(ep, peer, total);
	memcpy(op->iov, iov, count * sizeof(*iov));
	op->iov_count = count;
	op->sent = 0;
	op->started = false;
	if (op->rts || (flags & (FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE))) {
		op->cmd_flags |= XSHM_CMD_ACK;
		op->ack_id = op->timed_id ? op->timed_id : xshm_ack_new_id(ep);
	}
}

/*
 * An RTS out, the sender takes up the replies that wait for it: acks, and
 * the receiver's offer of the previous message, whose copy it then shares
 * (rts.c).  A sender that streams large messages, computing each one, is
 * in libfabric only to send; without this it would leave every copy to a
 * receiver that, falling behind, reads data that has left the caches.
 */
static int finish_rts_or_op(struct xshm_ep *ep, struct xshm_tx_op *op)
{
	int ret = finish_op(ep, op, false);

	if (!ret && op->rts)
		xshm_ep_drain_replies(ep);
	return ret;
}

/*
 * Everything but the whole-message path: the message becomes a tx_op,
 * pushed now or queued.  Out of line so that xshm_send's common path does
 * not pay for this one's stack frame.
 */
__attribute__((noinline)) ssize_t
xshm_send_op(struct xshm_ep *ep, struct xshm_peer *peer,
	const struct xshm_send_path *path, uint8_t kind,
	const struct iovec *iov, size_t count, size_t total, fi_addr_t dest,
	uint64_t tag, uint64_t data, void *context, uint64_t flags)
{
	struct xshm_tx_op op;

	init_op(ep, &peer->region, &op, path, kind, iov, count, total, dest, tag,
		data, context, flags);
	op.dest_ep_id = peer->ep_id;
	op.dest_owner = peer->owner;
	if (!xshm_dlist_empty(&ep->tx_queue) || fence_blocks(ep, &op))
		return (flags & FI_INJECT) || ep->tx_queued >= XSHM_TX_SIZE ?
		       -FI_EAGAIN : queue_op(ep, &op);
	if (push_op(ep, &peer->region, &op))
		return finish_rts_or_op(ep, &op);
	if (!op.started && total <= XSHM_BUF_SIZE)
		return no_room(ep, peer);
	return queue_op(ep, &op);
}
