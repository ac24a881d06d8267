/*
 * The send path.  A message is pushed into the receiver's ring as one cell
 * carrying the data (up to XSHM_SHORT_MAX bytes), a run of cells carrying
 * it (up to cells_threshold bytes), or one cell naming a bounce buffer
 * borrowed from the receiver's pool, followed by XSHM_OP_CHUNK cells for
 * the rest of a large message; the largest go as one RTS cell naming the
 * sender's buffers, for a single copy (rts.c).  The common case, a whole
 * message in its cells or one buffer with nothing queued and no ack, goes
 * straight through send_whole; everything else becomes a struct
 * xshm_tx_op.  Sends that cannot be pushed at once wait in ep->tx_queue, in
 * posting order, so that each receiver sees one sender's messages, and
 * their chunks, in order.
 */
#include <stdlib.h>
#include <string.h>

#include "xshm.h"
#include "shm/clock.h"
#include "shm/proc.h"

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

/*
 * The receiver polls a cell's first cache line, where its header is.  So
 * the payload goes in first, beyond that line, and the header and the
 * payload's bytes in that line last: the sender then takes the line from
 * the polling receiver once, right before the commit, instead of once for
 * the header and again for the commit after the receiver read it back.
 * fill_cell_tail copies all but the first line's bytes and returns how
 * many those are, for fill_cell_head once the header is written.
 */
static size_t fill_cell_tail(const struct xshm_cmd *cmd, unsigned char *payload,
			     const struct iovec *iov, size_t count,
			     size_t offset, size_t len)
{
	size_t in_line = XSHM_CACHE_LINE -
			 (size_t) (payload - (const unsigned char *) cmd);
	size_t head = len < in_line ? len : in_line;

	if (len > head)
		xshm_iov_copy_from(payload + head, iov, count, offset + head,
				   len - head);
	return head;
}

static void fill_cell_head(unsigned char *payload, const struct iovec *iov,
			   size_t count, size_t offset, size_t head)
{
	xshm_iov_copy_from(payload, iov, count, offset, head);
}

/*
 * Publishes op's cell carrying its next len bytes.  False when the receiver
 * skipped the cell as stalled: the bytes are to be pushed again later.
 */
static bool publish(struct xshm_region *peer, struct xshm_tx_op *op,
		    struct xshm_cmd *cmd, uint64_t pos, size_t len)
{
	if (xshm_ring_commit(&peer->ring, cmd, pos))
		return false;
	xshm_doorbell_ring(peer);
	op->sent += len;
	op->started = true;
	return true;
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
	rts->pid = xshm_proc_self();
	rts->iov_count = (uint32_t) op->iov_count;
	for (size_t i = 0; i < op->iov_count; i++) {
		rts->iov[i].base = (uintptr_t) op->iov[i].iov_base;
		rts->iov[i].len = op->iov[i].iov_len;
	}
	return publish(peer, op, cmd, pos, op->total);
}

/*
 * Whether a message of total bytes, too long for one cell, goes in a run of
 * cells rather than a bounce buffer.  Past XSHM_CELLS_ALWAYS_MAX, only
 * while the sender fills peer's buffers with cached stores: a receiver
 * that shares no cache with the sender reads a buffer filled with
 * streaming stores faster than cells from the sender's cache.
 */
static bool fits_run(const struct xshm_ep *ep, const struct xshm_region *peer,
		     size_t total)
{
	return total <= xshm_params.cells_threshold &&
	       (total <= XSHM_CELLS_ALWAYS_MAX ||
		xshm_bounce_fills_cached(ep, peer));
}

/* The cells a message of total bytes takes as a run (XSHM_PROTO_CELLS). */
static uint32_t run_cells(size_t total)
{
	return 1 + (uint32_t) ((total - XSHM_INLINE_MAX + XSHM_CELL_PAYLOAD - 1) /
			       XSHM_CELL_PAYLOAD);
}

/*
 * A whole message in consecutive cells of one reservation (see
 * XSHM_PROTO_CELLS): the first cell, which names the message, is
 * committed last, so the receiver finds the rest already there.  If the
 * receiver skipped the run as stalled, that commit fails and the message
 * is pushed again; the cells after it reach the receiver's head alone
 * and are dropped as XSHM_OP_CONT.  reserve_run returns the first cell,
 * NULL when the ring has no room for the run.
 */
static struct xshm_cmd *reserve_run(struct xshm_region *peer, size_t total,
				    uint64_t *pos)
{
	if (xshm_ring_reserve_n(&peer->ring, run_cells(total), pos))
		return NULL;
	return xshm_ring_cell(&peer->ring, *pos);
}

/*
 * Fills and publishes the continuation cells of the run from pos, then
 * the first cell's payload but for its bytes in the header's cache line,
 * whose number it returns, as fill_cell_tail does.
 */
static size_t fill_run(struct xshm_region *peer, struct xshm_cmd *cmd,
		       uint64_t pos, const struct iovec *iov, size_t count,
		       size_t total)
{
	size_t offset = XSHM_INLINE_MAX;

	for (uint64_t at = pos + 1; offset < total; at++) {
		struct xshm_cont_cell *cell = xshm_ring_cell(&peer->ring, at);
		size_t len = total - offset < XSHM_CELL_PAYLOAD ?
			     total - offset : XSHM_CELL_PAYLOAD;

		cell->op = XSHM_OP_CONT;
		xshm_iov_copy_from(cell->data, iov, count, offset, len);
		xshm_ring_publish_follower(&peer->ring, cell, at);
		offset += len;
	}
	return fill_cell_tail(cmd, cmd->data, iov, count, 0, XSHM_INLINE_MAX);
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
	head = fill_run(peer, cmd, pos, op->iov, op->iov_count, op->total);
	fill_cmd(cmd, ep, op, op->op, XSHM_PROTO_CELLS, 0, (uint32_t) op->total);
	fill_cell_head(cmd->data, op->iov, op->iov_count, 0, head);
	return publish(peer, op, cmd, pos, op->total);
}

/* The next len bytes of op into bounce buffer index, timed if op is. */
static void fill_bounce(struct xshm_ep *ep, struct xshm_region *peer,
			const struct xshm_tx_op *op, uint32_t index, size_t len)
{
	uint64_t start = op->timed_id ? xshm_now_ns() : 0;

	xshm_bounce_fill(ep, peer, xshm_pool_buf(&peer->pool, index), op->iov,
			 op->iov_count, op->sent, len);
	if (op->timed_id)
		xshm_path_sender_copied(ep, op->timed_id, xshm_now_ns() - start);
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
		if (xshm_spare_borrow(ep, peer, &index))
			return false;
	}
	cmd = xshm_ring_reserve(&peer->ring, &pos);
	if (!cmd)
		goto give_back;
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
	if (publish(peer, op, cmd, pos, len)) {
		if (!is_inline && first_piece)
			xshm_spare_want(ep, op->dest, len);
		return true;
	}
give_back:
	if (!is_inline)
		xshm_pool_free(&peer->pool, index, ep->addr.ep_id);
	return false;
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
	free(op);
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
		waiting = malloc(sizeof(*waiting));
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
		struct xshm_av_entry *peer;
		int ret = xshm_av_peer(ep->av, op->dest, &peer);

		if (ret == -FI_EAGAIN)
			return;
		/* Its region gone: FI_EIO if because its receiver died. */
		if (ret == -FI_EHOSTUNREACH)
			ret = -xshm_liveness_gone_err(op->dest_owner);
		if (!ret && peer->addr.ep_id != op->dest_ep_id)
			ret = -FI_EADDRNOTAVAIL;
		else if (!ret && !xshm_owner_same(peer->owner, op->dest_owner))
			ret = -xshm_liveness_gone_err(op->dest_owner);
		if (ret) {
			fail_op(ep, op, -ret);
			dequeue_op(ep, op);
			continue;
		}
		if ((!op->started && fence_blocks(ep, op)) ||
		    !push_op(ep, &peer->peer, op))
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
	struct xshm_av_entry *peer;

	/*
	 * A full ring drops it: the receiver will see this sender's region
	 * gone once the endpoint closes.
	 */
	if (!xshm_av_peer(ep->av, op->dest, &peer) &&
	    peer->addr.ep_id == op->dest_ep_id)
		xshm_control_push(ep, &peer->peer, &ctl);
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

static ssize_t check_send(const struct xshm_ep *ep, const struct iovec *iov,
			  size_t count, uint64_t flags, size_t *total)
{
	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (xshm_check_iov(iov, count, ep->tx_iov_limit))
		return -FI_EINVAL;
	*total = xshm_iov_total(iov, count);
	if (*total > XSHM_MAX_MSG_SIZE)
		return -FI_EMSGSIZE;
	if ((flags & FI_INJECT) && *total > XSHM_INJECT_SIZE)
		return -FI_EMSGSIZE;
	return 0;
}

static ssize_t queue_op(struct xshm_ep *ep, const struct xshm_tx_op *op)
{
	struct xshm_tx_op *queued = malloc(sizeof(*queued));

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

/* Where a whole message sent on the whole-message path travels. */
enum whole_kind {
	WHOLE_SHORT,	/* in one cell, after the short header */
	WHOLE_INLINE,	/* in one cell, after the full header */
	WHOLE_CELLS,	/* in a run of cells (XSHM_PROTO_CELLS) */
	WHOLE_BUF,	/* in one bounce buffer, the rest in its cell */
};

/* Remote CQ data needs the full header, which leaves the cell less room. */
static enum whole_kind whole_kind_of(const struct xshm_ep *ep,
				     const struct xshm_region *peer,
				     size_t total, uint64_t flags)
{
	if (!(flags & FI_REMOTE_CQ_DATA) && total <= XSHM_SHORT_MAX)
		return WHOLE_SHORT;
	if (total <= XSHM_INLINE_MAX)
		return WHOLE_INLINE;
	if (fits_run(ep, peer, total))
		return WHOLE_CELLS;
	return WHOLE_BUF;
}

static const uint8_t whole_proto[] = {
	[WHOLE_SHORT] = XSHM_PROTO_SHORT,
	[WHOLE_INLINE] = XSHM_PROTO_INLINE,
	[WHOLE_CELLS] = XSHM_PROTO_CELLS,
	[WHOLE_BUF] = XSHM_PROTO_BUF,
};

/* The header of a whole message, in its cells or in bounce buffer index. */
static void fill_whole(struct xshm_cmd *cmd, const struct xshm_ep *ep,
		       enum whole_kind where, uint32_t index, uint8_t kind,
		       size_t total, uint64_t tag, uint64_t data, uint64_t flags,
		       uint32_t timed_id)
{
	cmd->op = kind;
	cmd->proto = whole_proto[where];
	cmd->chunk_len = (uint32_t) total;
	cmd->src_ep_id = ep->addr.ep_id;
	cmd->tag = tag;
	if (where == WHOLE_SHORT) {
		cmd->flags = 0;
		return;
	}
	cmd->flags = (flags & FI_REMOTE_CQ_DATA) ? XSHM_CMD_REMOTE_CQ_DATA : 0;
	cmd->cq_data = data;
	cmd->msg_size = total;
	cmd->buf_index = index;
	cmd->ack_id = timed_id;
	if (timed_id)
		cmd->flags |= XSHM_CMD_TIMED;
}

/* The peer took nothing: its ring or pool is full, or it is dead. */
static ssize_t no_room(struct xshm_ep *ep, struct xshm_av_entry *peer)
{
	return xshm_liveness_peer_dead(ep, peer) ? -FI_EHOSTUNREACH :
						   -FI_EAGAIN;
}

/* The first (or only) cell of a whole message; NULL: the ring is full. */
static struct xshm_cmd *reserve_whole(struct xshm_region *region,
				      enum whole_kind where, size_t total,
				      uint64_t *pos)
{
	if (where == WHOLE_CELLS)
		return reserve_run(region, total, pos);
	return xshm_ring_reserve(&region->ring, pos);
}

/*
 * The bytes of a whole message that travel in its bounce buffer.  The
 * rest, up to XSHM_BUF_TAIL_MAX, follows the header in its cell, so that a
 * message a little over a buffer still takes one command.
 */
static size_t buffer_part(const struct xshm_region *region, size_t total)
{
	return total < region->pool.buf_size ? total : region->pool.buf_size;
}

/*
 * Copies the payload but for its bytes in the header's cache line, which
 * it returns the number of and fill_cell_head copies once the header is
 * written (all of a payload beside a bounce buffer is copied here).
 */
static size_t fill_whole_payload(struct xshm_ep *ep, struct xshm_region *region,
				 struct xshm_cmd *cmd, uint64_t pos,
				 enum whole_kind where, uint32_t index,
				 const struct iovec *iov, size_t count,
				 size_t total)
{
	size_t in_buf;

	switch (where) {
	case WHOLE_SHORT:
		return fill_cell_tail(cmd, cmd->short_data, iov, count, 0,
				      total);
	case WHOLE_INLINE:
		return fill_cell_tail(cmd, cmd->data, iov, count, 0, total);
	case WHOLE_CELLS:
		return fill_run(region, cmd, pos, iov, count, total);
	case WHOLE_BUF:
		in_buf = buffer_part(region, total);
		xshm_bounce_fill(ep, region, xshm_pool_buf(&region->pool, index),
				 iov, count, 0, in_buf);
		if (total > in_buf)
			xshm_iov_copy_from(cmd->data, iov, count, in_buf,
					   total - in_buf);
	}
	return 0;
}

/*
 * After a whole message in cells: the next one to dest, if as long, takes
 * the cells after it, whose lines the next idle poll warms (warm.c).  A
 * message with the full header, in one cell or a run, spans that header,
 * its payload and, for each cell after the first, a claim and a
 * continuation header.
 */
static void warm_next(struct xshm_ep *ep, fi_addr_t dest,
		      enum whole_kind where, size_t total)
{
	uint32_t ncells;

	if (where == WHOLE_SHORT) {
		if (total > XSHM_CACHE_LINE - XSHM_SHORT_HDR_SIZE)
			xshm_warm_want(ep, dest, XSHM_SHORT_HDR_SIZE + total);
		return;
	}
	ncells = where == WHOLE_CELLS ? run_cells(total) : 1;
	xshm_warm_want(ep, dest, XSHM_CMD_HDR_SIZE + total +
		       (ncells - 1) * (XSHM_CELL_SIZE - XSHM_CELL_PAYLOAD));
}

/*
 * The common send, whole in its cells or one bounce buffer, with nothing
 * queued before it and no ack to wait for: no xshm_tx_op is built.  0 when
 * pushed, else why not, as xshm_send returns it.
 */
static ssize_t send_whole(struct xshm_ep *ep, struct xshm_av_entry *peer,
			  uint32_t timed_id, uint8_t kind,
			  const struct iovec *iov, size_t count, size_t total,
			  fi_addr_t dest, uint64_t tag, uint64_t data,
			  void *context, uint64_t flags)
{
	struct xshm_region *region = &peer->peer;
	enum whole_kind where = whole_kind_of(ep, region, total, flags);
	uint32_t index = 0;
	struct xshm_cmd *cmd;
	uint64_t pos, start;
	size_t head;

	if (where == WHOLE_BUF && xshm_spare_borrow(ep, region, &index))
		return no_room(ep, peer);
	cmd = reserve_whole(region, where, total, &pos);
	if (!cmd)
		goto give_back;
	start = timed_id ? xshm_now_ns() : 0;
	head = fill_whole_payload(ep, region, cmd, pos, where, index, iov,
				  count, total);
	if (timed_id)
		xshm_path_sender_copied(ep, timed_id, xshm_now_ns() - start);
	fill_whole(cmd, ep, where, index, kind, total, tag, data, flags,
		   timed_id);
	if (where != WHOLE_BUF)
		fill_cell_head(where == WHOLE_SHORT ? cmd->short_data :
						      cmd->data,
			       iov, count, 0, head);
	if (xshm_ring_commit(&region->ring, cmd, pos))
		goto give_back;		/* skipped as stalled: not sent */
	xshm_doorbell_ring(region);
	if (where == WHOLE_BUF)
		xshm_spare_want(ep, dest, buffer_part(region, total));
	else
		warm_next(ep, dest, where, total);
	xshm_report_tx(ep, context,
		       FI_SEND | (kind == XSHM_OP_TAGGED ? FI_TAGGED : FI_MSG),
		       flags & FI_COMPLETION);
	return 0;
give_back:
	if (where == WHOLE_BUF)
		xshm_pool_free(&region->pool, index, ep->addr.ep_id);
	return no_room(ep, peer);
}

/*
 * Whether send_whole takes the message: it fits one bounce buffer and its
 * cell (a run of cells carries less), nothing waits before it, and it
 * needs no ack.
 */
static bool takes_whole_path(const struct xshm_ep *ep,
			     const struct xshm_region *peer,
			     const struct xshm_send_path *path, size_t total,
			     uint64_t flags)
{
	return total <= peer->pool.buf_size + XSHM_BUF_TAIL_MAX && !path->rts &&
	       xshm_dlist_empty(&ep->tx_queue) &&
	       !(flags & (FI_DELIVERY_COMPLETE | FI_MATCH_COMPLETE)) &&
	       !((flags & FI_FENCE) && !xshm_dlist_empty(&ep->tx_wait_ack));
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
static __attribute__((noinline)) ssize_t
send_op(struct xshm_ep *ep, struct xshm_av_entry *peer,
	const struct xshm_send_path *path, uint8_t kind,
	const struct iovec *iov, size_t count, size_t total, fi_addr_t dest,
	uint64_t tag, uint64_t data, void *context, uint64_t flags)
{
	struct xshm_tx_op op;

	init_op(ep, &peer->peer, &op, path, kind, iov, count, total, dest, tag,
		data, context, flags);
	op.dest_ep_id = peer->addr.ep_id;
	op.dest_owner = peer->owner;
	if (!xshm_dlist_empty(&ep->tx_queue) || fence_blocks(ep, &op))
		return (flags & FI_INJECT) || ep->tx_queued >= XSHM_TX_SIZE ?
		       -FI_EAGAIN : queue_op(ep, &op);
	if (push_op(ep, &peer->peer, &op))
		return finish_rts_or_op(ep, &op);
	if (!op.started && total <= XSHM_BUF_SIZE)
		return no_room(ep, peer);
	return queue_op(ep, &op);
}

ssize_t xshm_send(struct xshm_ep *ep, uint8_t kind, const struct iovec *iov,
		  size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
		  void *context, uint64_t flags)
{
	struct xshm_send_path path = { 0 };
	struct xshm_av_entry *peer;
	size_t total;
	ssize_t ret = check_send(ep, iov, count, flags, &total);

	if (ret)
		return ret;
	xshm_lock_acquire(&ep->domain->lock);
	ret = xshm_av_peer(ep->av, dest, &peer);
	if (!ret && total > xshm_params.path_min)
		path = xshm_path_choose(ep, peer, iov, count, total, dest,
					flags);
	if (!ret && takes_whole_path(ep, &peer->peer, &path, total, flags))
		ret = send_whole(ep, peer, path.timed_id, kind, iov, count,
				 total, dest, tag, data, context, flags);
	else if (!ret)
		ret = send_op(ep, peer, &path, kind, iov, count, total, dest,
			      tag, data, context, flags);
	xshm_lock_release(&ep->domain->lock);
	return ret;
}
