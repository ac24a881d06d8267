/*
 * The initiator's side of atomics.  Posting checks the call, copies its
 * operands and compare values (so that every atomic is as good as
 * injected) and queues it in ep->rma_queue behind the RMA operations
 * posted before it; pushing it is one cell into the target's ring, after
 * which it waits in ep->tx_wait_ack for the target's ack, whose status
 * completes it, or for a fetch's old values, whose cell carries the ack
 * (rma_reply.c).  One
 * that fetches nothing is posted where a small write would be (rma_way.c):
 * completed once pushed, unacked.
 */
#include <stdlib.h>
#include <string.h>

#include "data/atomic.h"
#include "atomic/apply.h"
#include "av/av.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/lock.h"
#include "data/ack.h"
#include "data/rma.h"
#include "data/send_int.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/comp.h"
#include "shm/doorbell.h"
#include "shm/ring.h"

size_t xshm_atomic_max_count(int kind, int op, int datatype)
{
	if (!xshm_atomic_supported(kind, op, datatype))
		return 0;
	return XSHM_ATOMIC_MAX_BYTES / xshm_atomic_type_size(datatype);
}

/* Operands are there unless a read; compare values only for compares. */
static bool takes_src(const struct xshm_atomic_args *args)
{
	return args->op != FI_ATOMIC_READ;
}

/*
 * objects/atomic.c checked the pair of operation and datatype, and shaped
 * the lists into iovecs of len bytes each, none without its buffer.
 */
static ssize_t check_atomic(const struct xshm_ep *ep,
			    const struct xshm_atomic_args *args, size_t len)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (!(ep->caps & FI_ATOMIC))
		return -FI_EOPNOTSUPP;
	if (!args->count || len > XSHM_ATOMIC_MAX_BYTES)
		return -FI_EINVAL;
	return 0;
}

/* Bytes of operands and compare values an atomic of len bytes carries. */
static size_t operand_bytes(const struct xshm_atomic_args *args, size_t len)
{
	return (takes_src(args) ? len : 0) +
	       (args->kind == XSHM_ATOMIC_COMPARE ? len : 0);
}

/*
 * op's tx and hdr filled from args, the rest of tx zeroed but for the iovs
 * past a fetch's results: all but its operands.  Zeroing the whole iov
 * array was a third of a fetch's fill (callgrind).
 */
static void fill_op_head(struct xshm_atomic_op *op, struct xshm_ep *ep,
			 const struct xshm_peer *peer,
			 const struct xshm_atomic_args *args, size_t len,
			 bool posted)
{
	memset(&op->tx, 0, offsetof(struct xshm_tx_op, iov));
	op->tx.op = XSHM_OP_ATOMIC;
	op->tx.dest = args->dest;
	op->tx.dest_ep_id = peer->ep_id;
	op->tx.dest_owner = peer->owner;
	op->tx.context = args->context;
	op->tx.total = len;
	op->tx.fence = args->flags & FI_FENCE;
	op->tx.ack_id = posted ? 0 : xshm_ack_new_id(ep);
	op->tx.posted = posted;
	op->tx.comp_flags = FI_ATOMIC | (args->kind == XSHM_ATOMIC_WRITE ?
					 FI_WRITE : FI_READ);
	op->tx.cq_entry = args->flags & FI_COMPLETION;
	if (args->flags & FI_REMOTE_CQ_DATA) {
		op->tx.cmd_flags = XSHM_CMD_REMOTE_CQ_DATA;
		op->tx.data = args->data;
	}
	if (args->kind != XSHM_ATOMIC_WRITE) {
		memcpy(op->tx.iov, args->res, args->res_count * sizeof(*args->res));
		op->tx.iov_count = args->res_count;
	}
	op->hdr = (struct xshm_atomic) {
		.key = args->key, .addr = args->addr, .op = args->op,
		.datatype = args->datatype, .kind = args->kind,
		.count = (uint32_t) args->count,
	};
	op->len = 0;
}

/* args' operands, then its compare values: operand_bytes(args, len). */
static void copy_operands(unsigned char *to,
			  const struct xshm_atomic_args *args, size_t len)
{
	if (takes_src(args))
		xshm_iov_copy_from(to, args->src, args->src_count, 0, len);
	if (args->kind == XSHM_ATOMIC_COMPARE)
		xshm_iov_copy_from(to + operand_bytes(args, len) - len,
				   args->cmp, args->cmp_count, 0, len);
}

/* op, with room for operand_bytes after it, zeroed and filled from args. */
static void fill_op(struct xshm_atomic_op *op, struct xshm_ep *ep,
		    const struct xshm_peer *peer,
		    const struct xshm_atomic_args *args, size_t len, bool posted)
{
	fill_op_head(op, ep, peer, args, len, posted);
	op->len = operand_bytes(args, len);
	copy_operands(op->bytes, args, len);
}

/* An error found before pushing, as the target would have reported it. */
static void fail_now(struct xshm_ep *ep, const struct xshm_atomic_args *args,
		     int err)
{
	xshm_report_tx_err(ep, &(struct fi_cq_err_entry) {
		.op_context = args->context, .flags = FI_ATOMIC | FI_WRITE,
		.err = err, .prov_errno = err,
	});
}

/*
 * Whether args, an atomic that fetches nothing, may be posted (rma_way.c):
 * 1, 0, or the negative error its initiator's check found.
 */
static int posted_check(const struct xshm_ep *ep, struct xshm_peer *peer,
			const struct xshm_atomic_args *args, size_t len)
{
	if (args->kind != XSHM_ATOMIC_WRITE)
		return 0;
	return xshm_atomic_posted_check(ep, peer, args->key, args->addr, len,
					args->flags);
}

/*
 * An atomic whose command fits the cell's first line (struct
 * xshm_rma_short), the key in tag: a posted write, a fetch or a compare,
 * up to XSHM_RMA_SHORT_MAX bytes of elements and as many of operands and
 * compare values together, without remote CQ data.  The target tells the
 * kind by the flags (posted: a write) and the op, so a write that asks for
 * its ack takes the full command.
 */
static bool short_fits(uint8_t kind, bool posted, size_t len,
		       size_t operand_len, uint16_t cmd_flags)
{
	return (kind == XSHM_ATOMIC_WRITE) == posted &&
	       len <= XSHM_RMA_SHORT_MAX && operand_len <= XSHM_RMA_SHORT_MAX &&
	       !(cmd_flags & XSHM_CMD_REMOTE_CQ_DATA);
}

/* Fills all of a short command but its operand_len bytes, at the return. */
static void *fill_short(struct xshm_cmd *cmd, const struct xshm_ep *ep,
			const struct xshm_atomic *hdr, uint64_t ack_id,
			bool posted, size_t operand_len)
{
	struct xshm_rma_short head = {
		.addr = hdr->addr, .op = hdr->op, .datatype = hdr->datatype,
		.count = (uint16_t) hdr->count, .ack_id = ack_id,
	};

	xshm_rma_short_fill(cmd, XSHM_OP_ATOMIC,
			    posted ? XSHM_CMD_POSTED : XSHM_CMD_ACK, hdr->key,
			    ep->addr.ep_id, &head, operand_len);
	return cmd->short_data + sizeof(head);
}

/* Whether args' command, posted or not, is short (short_fits). */
static bool args_short(const struct xshm_atomic_args *args, size_t len,
		       bool posted)
{
	return short_fits(args->kind, posted, len, operand_bytes(args, len),
			  args->flags & FI_REMOTE_CQ_DATA ?
			  XSHM_CMD_REMOTE_CQ_DATA : 0);
}

/*
 * Pushes args' short command, with hdr and ack_id as fill_short takes
 * them, straight from the call's buffers; false when the target's ring
 * has no cell for it now.  Inline, so that a posted write's copy keeps
 * only what a write carries.
 */
static inline __attribute__((always_inline))
bool push_short(struct xshm_ep *ep, struct xshm_peer *peer,
		       const struct xshm_atomic_args *args, size_t len,
		       const struct xshm_atomic *hdr, uint32_t ack_id,
		       bool posted)
{
	unsigned char *operands;
	struct xshm_cmd *cmd;
	uint64_t pos;

	cmd = xshm_ring_reserve(&peer->region.ring, &pos);
	if (!cmd)
		return false;
	operands = fill_short(cmd, ep, hdr, ack_id, posted,
			      operand_bytes(args, len));
	if (posted)	/* a write: its operands are its src's len bytes */
		xshm_iov_copy_from(operands, args->src, args->src_count, 0,
				   len);
	else
		copy_operands(operands, args, len);
	xshm_ring_commit(&peer->region.ring, cmd, pos);
	xshm_doorbell_ring(&peer->region);
	return true;
}

/*
 * A posted atomic whose command is short (the caller checked args_short),
 * pushed into the target's ring straight from the call's buffers: no
 * struct xshm_atomic_op to fill and copy.  False when the ring has no cell
 * for it now.  Inline, so that xshm_atomic_write_short's constants fold
 * into it.
 */
static inline __attribute__((always_inline))
bool push_short_now(struct xshm_ep *ep, struct xshm_peer *peer,
		    const struct xshm_atomic_args *args, size_t len)
{
	struct xshm_atomic hdr = {
		.key = args->key, .addr = args->addr, .op = args->op,
		.datatype = args->datatype, .kind = args->kind,
		.count = (uint32_t) args->count,
	};

	return push_short(ep, peer, args, len, &hdr, 0, true);
}

/*
 * fi_atomic and fi_inject_atomic of one buffer, the pair of operation and
 * datatype checked: when the command is short and may be posted, with
 * nothing queued, it is checked and pushed (push_short_now) without the
 * general path's shaping and layers, and completed.  0 then; 1 when it
 * takes xshm_atomic_post, which looks at all of it again.
 */
int xshm_atomic_write_short(struct xshm_ep *ep, const void *buf, size_t count,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    uint8_t datatype, uint8_t op, void *context,
			    uint64_t flags)
{
	size_t len = count * xshm_atomic_type_size(datatype);
	struct iovec src = { .iov_base = (void *) buf, .iov_len = len };
	struct xshm_atomic_args args = {
		.kind = XSHM_ATOMIC_WRITE, .op = op, .datatype = datatype,
		.count = count, .src = &src, .src_count = 1, .addr = addr,
		.key = key, .flags = flags,
	};
	struct xshm_peer *peer;
	int ret = 1;

	/* count first: its bytes may wrap around to a size that fits */
	if (!ep->enabled || !(ep->caps & FI_ATOMIC) || !count ||
	    count > XSHM_RMA_SHORT_MAX || !args_short(&args, len, true))
		return 1;
	xshm_lock_acquire(&ep->domain->lock);
	if (xshm_rma_push_now(ep, flags) &&
	    !xshm_av_peer(ep->av, dest, &peer) &&
	    xshm_atomic_posted_check(ep, peer, key, addr, len, flags) == 1 &&
	    push_short_now(ep, peer, &args, len)) {
		xshm_report_tx(ep, context, FI_ATOMIC | FI_WRITE,
			       flags & FI_COMPLETION);
		ret = 0;
	}
	xshm_lock_release(&ep->domain->lock);
	return ret;
}

/*
 * A fetch or a compare whose command is short, with nothing queued before
 * it: pushed straight from the call's buffers, its op (without operands)
 * then waiting for the old values in ep->tx_wait_ack, as one pushed from
 * the queue would (rma_send.c).  Fetches one at a time (test/bench/rma -m
 * atomic_lat, callgrind) took 526 instructions an operation here through
 * the queue.  0 when pushed, 1 when it takes the queue (its ack id, taken
 * here, is then not used).
 */
static int push_waiting_now(struct xshm_ep *ep, struct xshm_peer *peer,
			    const struct xshm_atomic_args *args, size_t len)
{
	struct xshm_atomic_op *op;

	if (!args_short(args, len, false))
		return 1;
	op = xshm_block_alloc(&ep->tx_blocks, sizeof(*op));
	if (!op)
		return 1;
	fill_op_head(op, ep, peer, args, len, false);
	if (!push_short(ep, peer, args, len, &op->hdr, op->tx.ack_id, false)) {
		xshm_block_free(&ep->tx_blocks, op);
		return 1;
	}
	op->tx.sent = op->tx.total;
	xshm_dlist_append(&ep->tx_wait_ack, &op->tx.link);
	return 0;
}

/*
 * A posted atomic with nothing queued before it is pushed and completed in
 * its call: straight from the call's buffers when its command is short
 * (push_short_now), else from an op on the stack.  Only one that waits, in
 * the queue or for its ack, takes a heap block.  Posted adds streamed to
 * one target (test/bench/rma -m atomic_add_rate) took 1010 instructions an
 * operation at the initiator through a heap op, 706 through the stack op
 * and the short command built from the call (callgrind).
 */
static ssize_t post_locked(struct xshm_ep *ep,
			   const struct xshm_atomic_args *args, size_t len)
{
	union {
		struct xshm_atomic_op op;
		unsigned char room[sizeof(struct xshm_atomic_op) +
				   2 * XSHM_ATOMIC_MAX_BYTES];
	} at_hand;
	struct xshm_atomic_op *op;
	struct xshm_peer *peer;
	ssize_t ret = xshm_av_peer(ep->av, args->dest, &peer);
	int posted;

	if (ret)
		return ret;
	posted = posted_check(ep, peer, args, len);
	if (posted < 0) {
		fail_now(ep, args, -posted);
		return 0;
	}
	if (posted && xshm_rma_push_now(ep, args->flags)) {
		if (args_short(args, len, true)) {
			ret = push_short_now(ep, peer, args, len) ? 0 :
								    -FI_EAGAIN;
		} else {
			fill_op(&at_hand.op, ep, peer, args, len, true);
			ret = xshm_atomic_push(ep, &at_hand.op.tx);
		}
		if (!ret) {
			xshm_report_tx(ep, args->context, FI_ATOMIC | FI_WRITE,
				       args->flags & FI_COMPLETION);
			return 0;
		}
		if (ret != -FI_EAGAIN) {
			fail_now(ep, args, (int) -ret);
			return 0;
		}
	}
	if (!posted && xshm_rma_push_now(ep, args->flags) &&
	    !push_waiting_now(ep, peer, args, len))
		return 0;
	op = xshm_block_alloc(&ep->tx_blocks,
			      sizeof(*op) + operand_bytes(args, len));
	if (!op)
		return -FI_ENOMEM;
	fill_op(op, ep, peer, args, len, posted);
	xshm_dlist_append(&ep->rma_queue, &op->tx.link);
	xshm_rma_progress(ep);
	return 0;
}

ssize_t xshm_atomic_post(struct xshm_ep *ep,
			 const struct xshm_atomic_args *args)
{
	size_t len = args->count * xshm_atomic_type_size(args->datatype);
	ssize_t ret = check_atomic(ep, args, len);

	if (ret)
		return ret;
	xshm_lock_acquire(&ep->domain->lock);
	ret = post_locked(ep, args, len);
	xshm_lock_release(&ep->domain->lock);
	return ret;
}

static void fill_cmd(struct xshm_cmd *cmd, const struct xshm_ep *ep,
		     const struct xshm_atomic_op *op)
{
	memcpy(cmd->data, &op->hdr, sizeof(op->hdr));
	memcpy(cmd->data + sizeof(op->hdr), op->bytes, op->len);
	cmd->op = XSHM_OP_ATOMIC;
	cmd->proto = XSHM_PROTO_INLINE;
	cmd->flags = op->tx.cmd_flags |
		     (op->tx.posted ? XSHM_CMD_POSTED : XSHM_CMD_ACK);
	cmd->chunk_len = (uint32_t) (sizeof(op->hdr) + op->len);
	cmd->src_ep_id = ep->addr.ep_id;
	cmd->tag = 0;
	cmd->cq_data = op->tx.data;
	cmd->msg_size = op->tx.total;
	cmd->buf_index = 0;
	cmd->ack_id = op->tx.ack_id;
}

ssize_t xshm_atomic_push(struct xshm_ep *ep, struct xshm_tx_op *tx)
{
	struct xshm_atomic_op *op = xshm_container_of(tx, struct xshm_atomic_op,
						      tx);
	struct xshm_peer *peer;
	struct xshm_cmd *cmd;
	uint64_t pos;
	ssize_t ret = xshm_rma_peer_of(ep, tx, &peer);

	if (ret)
		return ret;
	cmd = xshm_ring_reserve(&peer->region.ring, &pos);
	if (!cmd)
		return no_room(ep, peer);	/* pushed again later */
	if (short_fits(op->hdr.kind, op->tx.posted, op->tx.total, op->len,
		       op->tx.cmd_flags))
		memcpy(fill_short(cmd, ep, &op->hdr, op->tx.ack_id,
				  op->tx.posted, op->len),
		       op->bytes, op->len);
	else
		fill_cmd(cmd, ep, op);
	xshm_ring_commit(&peer->region.ring, cmd, pos);
	xshm_doorbell_ring(&peer->region);
	tx->sent = tx->total;
	return 0;
}
