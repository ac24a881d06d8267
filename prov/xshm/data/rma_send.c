/*
 * The initiator's side of RMA.  An operation is queued in ep->rma_queue,
 * in posting order, and pushed as commands into the target's ring: one
 * naming the initiator's buffers when the target copies it all (a single
 * copy, CMA), or, for small writes and where no single copy is allowed, a
 * write's bytes inline in as many commands as they take and a read as one
 * command the target answers in cells.  Once pushed it waits in
 * ep->tx_wait_ack, as acked sends do, for the target's ack: its status
 * completes the operation, and a target that dies fails it (ack.c).  A
 * posted write (rma_way.c) completes once pushed instead.
 */
#include <stdlib.h>
#include <string.h>

#include "data/rma.h"
#include "data/atomic.h"
#include "av/av.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/lock.h"
#include "data/ack.h"
#include "data/bounce_fill.h"
#include "data/spare.h"
#include "data/rts.h"
#include "data/send.h"
#include "data/send_int.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/comp.h"
#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/pool.h"
#include "shm/ring.h"

static ssize_t check_rma(const struct xshm_ep *ep, const struct iovec *iov,
			 size_t count, uint64_t flags, size_t *total)
{
	if (ep->enabled && !(ep->caps & FI_RMA))
		return -FI_EOPNOTSUPP;
	return xshm_tx_check(ep, iov, count, flags, total);
}

/* Small operations go inline: a system call costs more than their copy. */
static bool takes_single_copy(const struct xshm_ep *ep,
			      const struct xshm_peer *peer, size_t total)
{
	return total > XSHM_RMA_INLINE_MAX && ep->scopy &&
	       (peer->region.hdr->features & XSHM_FEATURE_PULL);
}

/* All of op but where its bytes are; op zeroed. */
static void fill_op(struct xshm_rma_op *op, struct xshm_ep *ep,
		    struct xshm_peer *peer, uint8_t kind,
		    const struct xshm_rma_desc *d, bool posted,
		    const struct xshm_rma_timing *timing)
{
	op->tx.op = kind;
	op->tx.dest_ep_id = peer->ep_id;
	op->tx.dest_owner = peer->owner;
	op->tx.context = d->context;
	op->tx.total = d->total;
	op->tx.fence = d->flags & FI_FENCE;
	op->tx.ack_id = posted ? 0 : xshm_ack_new_id(ep);
	op->tx.comp_flags = FI_RMA | (kind == XSHM_OP_WRITE ? FI_WRITE : FI_READ);
	op->tx.cq_entry = d->flags & FI_COMPLETION;
	if (d->flags & FI_REMOTE_CQ_DATA)
		op->tx.cmd_flags = XSHM_CMD_REMOTE_CQ_DATA;
	op->key = d->key;
	op->addr = d->addr;
	/* the ring chosen (rma_path.c): in cells and buffers, never CMA */
	op->single_copy = !posted && !timing->cls &&
			  takes_single_copy(ep, peer, d->total);
	op->timing = *timing;
	op->tx.posted = posted;
}

static struct xshm_rma_op *new_op(struct xshm_ep *ep,
				  struct xshm_peer *peer, uint8_t kind,
				  const struct xshm_rma_desc *d, bool posted,
				  const struct xshm_rma_timing *timing)
{
	bool inject = d->flags & FI_INJECT;
	struct xshm_rma_op *op = xshm_block_zalloc(&ep->tx_blocks, sizeof(*op) +
						   (inject ? d->total : 0));

	if (!op)
		return NULL;
	fill_op(op, ep, peer, kind, d, posted, timing);
	if (inject) {
		xshm_iov_copy_from(op->inject, d->iov, d->count, 0, d->total);
		op->tx.iov[0].iov_base = op->inject;
		op->tx.iov[0].iov_len = d->total;
		op->tx.iov_count = 1;
	} else {
		memcpy(op->tx.iov, d->iov, d->count * sizeof(*d->iov));
		op->tx.iov_count = d->count;
	}
	return op;
}

/*
 * Tries op the way chosen for it: true when it was done here (completed,
 * maybe in error), else false, *posted saying whether it goes unacked and
 * *timing whether its way was measured (rma_path.c).
 */
static bool done_here(struct xshm_ep *ep, struct xshm_peer *peer,
		      const struct xshm_rma_desc *op, bool *posted,
		      struct xshm_rma_timing *timing)
{
	enum xshm_rma_way way = xshm_rma_way_of(ep, peer, op, timing);
	int ret;

	*posted = false;
	if (way == XSHM_RMA_VIA_RING && op->write) {
		ret = xshm_rma_posted_check(ep, peer, op);
		if (ret < 0) {
			xshm_rma_path_forget(ep, timing);
			xshm_rma_complete_now(ep, op, -ret);
		}
		*posted = ret > 0;
		if (ret || op->total <= XSHM_RMA_INLINE_MAX)
			return ret < 0;
		/*
		 * Acked (FI_DELIVERY_COMPLETE, remote CQ data) and below
		 * XSHM_RMA_ACKED_RING_MAX: through the ring too where the ring
		 * was measured the cheaper way and the target's buffers are
		 * free.  Open MPI's OFI BTL asks every write for
		 * FI_DELIVERY_COMPLETE: 2 and 4 KiB took 2.5 us by the single
		 * copy on a 2-core guest, 0.3 through the ring.
		 */
		if (timing->cls && op->total < XSHM_RMA_ACKED_RING_MAX &&
		    xshm_rma_buffers_free(peer, op->total))
			return false;
		/* else as any larger one */
		xshm_rma_path_forget(ep, timing);
		way = (op->flags & FI_FENCE) ? XSHM_RMA_VIA_TARGET :
					       XSHM_RMA_VIA_CMA;
	}
	if (way == XSHM_RMA_VIA_CMA)
		return xshm_rma_fast_try(ep, peer, op, timing);
	return false;
}

/*
 * How the next command of op carries its bytes: all of them named for a
 * single copy (reads: all asked for), or a write's next piece in a bounce
 * buffer of the target's, when more than a cell holds is left, or in the
 * cell.
 */
static uint8_t next_proto(const struct xshm_rma_op *op)
{
	if (op->single_copy)
		return XSHM_PROTO_RTS;
	if (op->tx.op == XSHM_OP_WRITE &&
	    op->tx.total - op->tx.sent > XSHM_RMA_INLINE_MAX)
		return XSHM_PROTO_BUF;
	return XSHM_PROTO_INLINE;
}

/* The bytes the next command of op moves, as proto carries them. */
static size_t next_len(const struct xshm_rma_op *op,
		       const struct xshm_region *region, uint8_t proto)
{
	size_t left = op->tx.total - op->tx.sent;
	size_t most = proto == XSHM_PROTO_BUF ? region->pool.buf_size :
					       XSHM_RMA_INLINE_MAX;

	if (proto == XSHM_PROTO_RTS || op->tx.op == XSHM_OP_READ)
		return left;
	return left < most ? left : most;
}

/* A posted write whose command fits the cell's first line. */
static bool fits_short(const struct xshm_rma_op *op)
{
	return op->tx.posted && op->tx.op == XSHM_OP_WRITE &&
	       op->tx.total <= XSHM_RMA_SHORT_MAX;
}

/* That command (struct xshm_rma_short), the key in tag. */
static void fill_short(struct xshm_cmd *cmd, const struct xshm_ep *ep,
		       const struct xshm_rma_op *op)
{
	struct xshm_rma_short head = { .addr = op->addr };

	xshm_rma_short_fill(cmd, XSHM_OP_WRITE, XSHM_CMD_POSTED, op->key,
			    ep->addr.ep_id, &head, op->tx.total);
	xshm_iov_copy_from(cmd->short_data + sizeof(head), op->tx.iov,
			   op->tx.iov_count, 0, op->tx.total);
}

/* The command moving len bytes of op from op->tx.sent on, as proto says. */
static void fill_cmd(struct xshm_cmd *cmd, const struct xshm_ep *ep,
		     const struct xshm_rma_op *op, uint8_t proto, size_t len,
		     uint32_t buf_index)
{
	struct xshm_rma_rts full = {
		.rma = {
			.key = op->key, .addr = op->addr,
			.offset = op->tx.sent, .len = len,
		},
	};
	bool inline_bytes = proto == XSHM_PROTO_INLINE &&
			    op->tx.op == XSHM_OP_WRITE;
	bool last = op->tx.sent + len == op->tx.total;
	size_t hdr = sizeof(full.rma);

	if (proto == XSHM_PROTO_RTS) {
		xshm_rts_name(&full.src, op->tx.iov, op->tx.iov_count);
		hdr = sizeof(full);
	}
	if (inline_bytes)
		xshm_iov_copy_from(cmd->data + hdr, op->tx.iov,
				   op->tx.iov_count, op->tx.sent, len);
	memcpy(cmd->data, &full, hdr);
	cmd->op = op->tx.op;
	cmd->proto = proto;
	if (last)
		cmd->flags = op->tx.cmd_flags |
			     (op->tx.posted ? XSHM_CMD_POSTED : XSHM_CMD_ACK);
	else
		cmd->flags = op->tx.cmd_flags;
	cmd->chunk_len = (uint32_t) (hdr + (inline_bytes ? len : 0));
	cmd->src_ep_id = ep->addr.ep_id;
	cmd->tag = 0;
	cmd->cq_data = op->tx.data;
	cmd->msg_size = op->tx.total;
	cmd->buf_index = buf_index;
	cmd->ack_id = op->tx.ack_id;
}

/*
 * A buffer of the target's pool holding the next len bytes of op, or
 * false when its pool has none free.
 */
static bool fill_buffer(struct xshm_ep *ep, struct xshm_region *region,
			const struct xshm_rma_op *op, size_t len,
			uint32_t *index)
{
	if (xshm_spare_borrow(ep, region, XSHM_POOL_ROUND, index))
		return false;
	xshm_bounce_fill_untimed(ep, region,
				 xshm_pool_buf(&region->pool, *index),
				 op->tx.iov, op->tx.iov_count, op->tx.sent, len);
	return true;
}

/* Pushes the next command of op: 0, or why not, as push_op returns it. */
static ssize_t push_next(struct xshm_ep *ep, struct xshm_peer *peer,
			 struct xshm_rma_op *op)
{
	struct xshm_region *region = &peer->region;
	uint8_t proto = next_proto(op);
	size_t len = next_len(op, region, proto);
	uint32_t index = 0;
	struct xshm_cmd *cmd;
	uint64_t pos;

	if (proto == XSHM_PROTO_BUF && !fill_buffer(ep, region, op, len, &index))
		return no_room(ep, peer);
	cmd = xshm_ring_reserve(&region->ring, &pos);
	if (!cmd) {
		/* pushed again later */
		if (proto == XSHM_PROTO_BUF)
			xshm_pool_free(&region->pool, index, ep->addr.ep_id);
		return no_room(ep, peer);
	}
	if (fits_short(op))
		fill_short(cmd, ep, op);
	else
		fill_cmd(cmd, ep, op, proto, len, index);
	xshm_ring_commit(&region->ring, cmd, pos);
	xshm_doorbell_ring(region);
	op->tx.sent += len;
	return 0;
}

int xshm_rma_peer_of(struct xshm_ep *ep, const struct xshm_tx_op *tx,
		     struct xshm_peer **peer)
{
	int ret = xshm_av_peer(ep->av, tx->dest, peer);

	if (ret)
		return ret;
	if ((*peer)->ep_id != tx->dest_ep_id ||
	    !xshm_owner_same((*peer)->owner, tx->dest_owner))
		return -xshm_liveness_gone_err(tx->dest_owner);
	return 0;
}

/* 0 once all of op is in the target's ring, -FI_EAGAIN, or an error. */
static ssize_t push_op(struct xshm_ep *ep, struct xshm_rma_op *op)
{
	struct xshm_peer *peer;
	ssize_t ret = xshm_rma_peer_of(ep, &op->tx, &peer);

	if (ret)
		return ret;
	do
		ret = push_next(ep, peer, op);
	while (!ret && op->tx.sent < op->tx.total);
	return ret;
}

/*
 * A posted write or atomic is done once in the target's ring.  The queue
 * holds atomics too: only the tx is common (xshm_rma_tx_done).
 */
static void report_posted(struct xshm_ep *ep, struct xshm_rma_op *op)
{
	xshm_rma_tx_done(ep, &op->tx, true);
	xshm_report_tx(ep, op->tx.context, op->tx.comp_flags, op->tx.cq_entry);
}

static void report_failed(struct xshm_ep *ep, struct xshm_rma_op *op, int err)
{
	xshm_rma_tx_done(ep, &op->tx, false);
	xshm_report_tx_err(ep, &(struct fi_cq_err_entry) {
		.op_context = op->tx.context, .flags = op->tx.comp_flags,
		.err = err, .prov_errno = err,
	});
}

static void complete_posted(struct xshm_ep *ep, struct xshm_rma_op *op)
{
	report_posted(ep, op);
	xshm_block_free(&ep->tx_blocks, op);
}

static void fail_op(struct xshm_ep *ep, struct xshm_rma_op *op, int err)
{
	report_failed(ep, op, err);
	xshm_block_free(&ep->tx_blocks, op);
}

bool xshm_rma_push_now(const struct xshm_ep *ep, uint64_t flags)
{
	return !(flags & FI_FENCE) && xshm_dlist_empty(&ep->rma_queue);
}

/*
 * A posted write of one cell with nothing queued before it is pushed from
 * the stack and completed here, as posted atomics are (atomic_send.c):
 * true when so done, completed or failed; false when the ring is full.
 */
static bool pushed_at_once(struct xshm_ep *ep, struct xshm_peer *peer,
			   const struct xshm_rma_desc *d, fi_addr_t dest,
			   const struct xshm_rma_timing *timing)
{
	struct xshm_rma_op op = { 0 };
	ssize_t ret;

	if (d->total > XSHM_RMA_INLINE_MAX || !xshm_rma_push_now(ep, d->flags))
		return false;
	fill_op(&op, ep, peer, XSHM_OP_WRITE, d, true, timing);
	op.tx.dest = dest;
	memcpy(op.tx.iov, d->iov, d->count * sizeof(*d->iov));
	op.tx.iov_count = d->count;
	ret = push_op(ep, &op);
	if (ret == -FI_EAGAIN)
		return false;
	if (ret)
		report_failed(ep, &op, (int) -ret);
	else
		report_posted(ep, &op);
	return true;
}

ssize_t xshm_rma_post(struct xshm_ep *ep, uint8_t kind, const struct iovec *iov,
		      size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		      uint64_t data, void *context, uint64_t flags)
{
	struct xshm_rma_desc desc = {
		.write = kind == XSHM_OP_WRITE, .iov = iov, .count = count,
		.addr = addr, .key = key, .context = context, .flags = flags,
	};
	struct xshm_rma_timing timing;
	struct xshm_peer *peer;
	struct xshm_rma_op *op;
	bool posted;
	ssize_t ret = check_rma(ep, iov, count, flags, &desc.total);

	if (ret)
		return ret;
	xshm_lock_acquire(&ep->domain->lock);
	ret = xshm_av_peer(ep->av, dest, &peer);
	if (ret || done_here(ep, peer, &desc, &posted, &timing) ||
	    (posted && pushed_at_once(ep, peer, &desc, dest, &timing)))
		goto out;
	op = new_op(ep, peer, kind, &desc, posted, &timing);
	if (!op) {
		xshm_rma_path_forget(ep, &timing);
		ret = -FI_ENOMEM;
		goto out;
	}
	op->tx.dest = dest;
	op->tx.data = data;
	xshm_dlist_append(&ep->rma_queue, &op->tx.link);
	xshm_rma_progress(ep);
out:
	xshm_lock_release(&ep->domain->lock);
	return ret;
}

/* A fenced operation starts once everything before it has completed. */
static bool fence_holds(const struct xshm_ep *ep, const struct xshm_rma_op *op)
{
	return op->tx.fence && (!xshm_dlist_empty(&ep->tx_wait_ack) ||
				!xshm_dlist_empty(&ep->tx_queue));
}

void xshm_rma_progress(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->rma_queue)) {
		struct xshm_rma_op *op = xshm_container_of(ep->rma_queue.next,
						struct xshm_rma_op, tx.link);
		ssize_t ret;

		if (fence_holds(ep, op))
			return;
		/* atomics share the queue: one order for both (atomic_send.c) */
		ret = op->tx.op == XSHM_OP_ATOMIC ?
		      xshm_atomic_push(ep, &op->tx) : push_op(ep, op);
		if (ret == -FI_EAGAIN)
			return;
		xshm_dlist_remove(&op->tx.link);
		if (ret)
			fail_op(ep, op, (int) -ret);
		else if (op->tx.posted)
			complete_posted(ep, op);
		else
			xshm_dlist_append(&ep->tx_wait_ack, &op->tx.link);
	}
}

void xshm_rma_close(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->rma_queue)) {
		struct xshm_dlist *item = ep->rma_queue.next;

		xshm_dlist_remove(item);
		xshm_block_free(&ep->tx_blocks,
				xshm_container_of(item, struct xshm_rma_op,
						  tx.link));
	}
	xshm_rma_reply_close(ep);
}
