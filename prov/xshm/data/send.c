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
#include <stdint.h>

#include "data/send.h"
#include "av/av.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/params.h"
#include "base/provider.h"
#include "data/bounce_fill.h"
#include "data/path.h"
#include "data/send_int.h"
#include "data/spare.h"
#include "data/warm.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "report/comp.h"
#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/pool.h"
#include "shm/region.h"
#include "shm/ring.h"

ssize_t xshm_tx_check(const struct xshm_ep *ep, const struct iovec *iov,
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
 * Fills and publishes the continuation cells of the run from pos, then
 * the first cell's payload but for its bytes in the header's cache line,
 * whose number it returns, as fill_cell_tail does.
 */
size_t xshm_tx_fill_run(struct xshm_region *peer, struct xshm_cmd *cmd,
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
		xshm_ring_commit(&peer->ring, cell, at);
		offset += len;
	}
	return fill_cell_tail(cmd, cmd->data, iov, count, 0, XSHM_INLINE_MAX);
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
		return xshm_tx_fill_run(region, cmd, pos, iov, count, total);
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
 * The common send, whole where says (whole_kind_of) in its cells or one
 * bounce buffer, with nothing queued before it and no ack to wait for: no
 * xshm_tx_op is built.  0 when pushed, else why not, as xshm_send returns
 * it.  Inline: xshm_send_one's copy, where is WHOLE_SHORT, keeps only what
 * a short message needs.
 */
static inline __attribute__((always_inline))
ssize_t send_whole(struct xshm_ep *ep, struct xshm_peer *peer,
		   enum whole_kind where, uint32_t timed_id, uint8_t kind,
		   const struct iovec *iov, size_t count, size_t total,
		   fi_addr_t dest, uint64_t tag, uint64_t data, void *context,
		   uint64_t flags)
{
	struct xshm_region *region = &peer->region;
	uint32_t index = 0;
	struct xshm_cmd *cmd;
	uint64_t pos, start;
	size_t head;

	if (where == WHOLE_BUF &&
	    xshm_spare_borrow(ep, region, XSHM_POOL_ROUND, &index))
		return no_room(ep, peer);
	cmd = reserve_whole(region, where, total, &pos);
	if (!cmd)
		goto give_back;
	start = xshm_path_clock(timed_id);
	head = fill_whole_payload(ep, region, cmd, pos, where, index, iov,
				  count, total);
	xshm_path_copy_done(ep, timed_id, start);
	fill_whole(cmd, ep, where, index, kind, total, tag, data, flags,
		   timed_id);
	if (where != WHOLE_BUF)
		fill_cell_head(where == WHOLE_SHORT ? cmd->short_data :
						      cmd->data,
			       iov, count, 0, head);
	xshm_ring_commit(&region->ring, cmd, pos);
	xshm_doorbell_ring(region);
	if (where == WHOLE_BUF)
		xshm_spare_want(ep, dest, buffer_part(region, total),
				XSHM_POOL_ROUND);
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

ssize_t xshm_send(struct xshm_ep *ep, uint8_t kind, const struct iovec *iov,
		  size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
		  void *context, uint64_t flags)
{
	struct xshm_send_path path = { 0 };
	struct xshm_peer *peer;
	size_t total;
	ssize_t ret = xshm_tx_check(ep, iov, count, flags, &total);

	if (ret)
		return ret;
	xshm_lock_acquire(&ep->domain->lock);
	ret = xshm_av_peer(ep->av, dest, &peer);
	if (!ret && (total > xshm_params.path_min ||
		     total > peer->region.pool.buf_size))
		path = xshm_path_choose(ep, peer, iov, count, total, dest,
					flags);
	if (!ret && takes_whole_path(ep, &peer->region, &path, total, flags))
		ret = send_whole(ep, peer,
				 whole_kind_of(ep, &peer->region, total, flags),
				 path.timed_id, kind, iov, count, total, dest,
				 tag, data, context, flags);
	else if (!ret)
		ret = xshm_send_op(ep, peer, &path, kind, iov, count, total,
				   dest, tag, data, context, flags);
	xshm_lock_release(&ep->domain->lock);
	return ret;
}

/*
 * What xshm_send_one takes: a send that xshm_send would check and push
 * whole in one cell after the short header, with no path to choose (so
 * no single copy, nothing timed) and no ack; it also needs nothing queued
 * before it, which only the domain's lock lets it read (other threads
 * queue sends: test_threads under ThreadSanitizer caught it read without).
 */
static bool short_send(const struct xshm_ep *ep, const void *buf, size_t len,
		       uint64_t flags)
{
	return ep->enabled && ep->tx_iov_limit && (buf || !len) &&
	       len <= XSHM_SHORT_MAX && len <= xshm_params.path_min &&
	       !(flags & (FI_REMOTE_CQ_DATA | FI_DELIVERY_COMPLETE |
			  FI_MATCH_COMPLETE | FI_FENCE));
}

/*
 * A ping-pong and a stream send between two messages, on the critical
 * path: a send of one short buffer skips the general path's argument
 * checks and choices.  A tagged send of 8 bytes: 372 instructions through
 * xshm_send, 291 here (callgrind).
 */
ssize_t xshm_send_one(struct xshm_ep *ep, uint8_t kind, const void *buf,
		      size_t len, fi_addr_t dest, uint64_t tag, void *context,
		      uint64_t flags)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };
	struct xshm_peer *peer;
	ssize_t ret;

	if (!short_send(ep, buf, len, flags))
		return xshm_send(ep, kind, &iov, 1, dest, tag, 0, context,
				 flags);
	xshm_lock_acquire(&ep->domain->lock);
	if (!xshm_dlist_empty(&ep->tx_queue)) {
		xshm_lock_release(&ep->domain->lock);
		return xshm_send(ep, kind, &iov, 1, dest, tag, 0, context,
				 flags);
	}
	ret = xshm_av_peer(ep->av, dest, &peer);
	if (!ret)
		ret = send_whole(ep, peer, WHOLE_SHORT, 0, kind, &iov, 1, len,
				 dest, tag, 0, context, flags);
	xshm_lock_release(&ep->domain->lock);
	return ret;
}
