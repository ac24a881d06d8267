/*
 * The receive path, from the ring.  Every command is read from a private
 * copy of its cell's header and checked before use; its payload is then
 * located (one piece, a run of cells, a bounce buffer).  A whole message of
 * the common kind goes straight to the receive buffer that matches it
 * (handle_whole); every other command goes on to the message stage
 * (recv_msg.c), acks and timings to the send side.
 */
#include <stdint.h>
#include <string.h>

#include "av/av.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/buf_return.h"
#include "data/path.h"
#include "data/recv.h"
#include "data/recv_int.h"
#include "data/atomic.h"
#include "data/rma.h"
#include "data/rts.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/comp.h"
#include "shm/copy.h"
#include "shm/layout.h"
#include "shm/pool.h"
#include "shm/ring.h"

static inline bool cmd_valid(const struct xshm_ep *ep,
			     const struct xshm_cmd *cmd);

/*
 * Whether ep takes commands from sender_ep_id: receiver-side isolation,
 * decided by the sender's peer (peer/peer_sender.c); itself and, without
 * an AV, anyone are taken.  *peer: the sender, or NULL for those or when
 * there was no memory for it.
 */
static inline bool sender_admitted(struct xshm_ep *ep, uint64_t sender_ep_id,
				   struct xshm_peer **peer)
{
	*peer = NULL;
	if (!ep->av || sender_ep_id == ep->addr.ep_id)
		return true;
	return xshm_peer_admits(&ep->domain->peers, sender_ep_id,
				ep->auth_digest, peer);
}

/*
 * sender_admitted, then the sender's source as ep's AV reports it: what
 * every whole message asks.  The AV gives the source (an index or a user
 * id) and nothing else.
 */
static inline bool sender_src(struct xshm_ep *ep, uint64_t sender_ep_id,
			      fi_addr_t *src)
{
	struct xshm_peer *peer;

	if (!sender_admitted(ep, sender_ep_id, &peer))
		return false;
	*src = peer ? xshm_av_src(ep->av, peer) :
		      xshm_av_lookup_ep_id(ep->av, sender_ep_id);
	return true;
}

static bool gather_cells(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 struct rx_payload *payload);

/*
 * The receiver learns where a message goes only after matching it: the
 * payload's cache lines are asked for before, so that they cross from the
 * sender's core during the match.  All of them up to PREFETCH_WHOLE_MAX,
 * the first PREFETCH_MAX bytes of a longer payload: asking for the whole
 * of 1 KiB made its latency 0.90-1.00 of the first 512 bytes alone, but at
 * 1536 bytes all of them made it 0.99-1.08 and the first 1 KiB 1.06-1.10
 * (fi_xshm(7)).
 */
#define PREFETCH_MAX		512

#define PREFETCH_WHOLE_MAX	1024

static void prefetch_payload(const void *data, size_t len)
{
	uintptr_t first = (uintptr_t) data & ~(uintptr_t) (XSHM_CACHE_LINE - 1);
	size_t ask = len <= PREFETCH_WHOLE_MAX ? len : PREFETCH_MAX;
	uintptr_t end = (uintptr_t) data + ask;

	for (uintptr_t line = first; line < end; line += XSHM_CACHE_LINE)
		__builtin_prefetch((const void *) line);
}

/* A whole message in its bounce buffer buf and, the rest, in its cell. */
static void buffer_and_tail(const struct xshm_pool_ref *pool, const void *buf,
			    const struct xshm_cmd *cmd,
			    const struct xshm_cmd *shared,
			    struct rx_payload *pieces)
{
	pieces->piece[0] = buf;
	pieces->len[0] = pool->buf_size;
	pieces->piece[1] = shared->data;
	pieces->len[1] = cmd->chunk_len - pool->buf_size;
	pieces->count = 2;
}

/*
 * Where a whole message's payload is, when it is the common kind: a valid
 * message in its cell, in a run of cells, or in one bounce buffer its
 * sender holds and maybe its cell; the pieces of the last two are gathered
 * into pieces (in_pieces).  NULL for every other command, which the general
 * path handles.  The first lines of a payload in the ring, not in a bounce
 * buffer, are asked for here (prefetch_payload).
 */
static const void *whole_payload(struct xshm_ep *ep, const struct xshm_cmd *cmd,
				 const struct xshm_cmd *shared,
				 struct rx_payload *pieces)
{
	const struct xshm_pool_ref *pool = &ep->region.pool;
	const void *buf;

	if ((cmd->op != XSHM_OP_MSG && cmd->op != XSHM_OP_TAGGED) ||
	    cmd->chunk_len != cmd->msg_size || !cmd_valid(ep, cmd))
		return NULL;
	switch (cmd->proto) {
	case XSHM_PROTO_SHORT:
		prefetch_payload(shared->short_data, cmd->msg_size);
		return shared->short_data;
	case XSHM_PROTO_INLINE:
		prefetch_payload(shared->data, cmd->msg_size);
		return shared->data;
	case XSHM_PROTO_CELLS:
		prefetch_payload(shared->data, XSHM_INLINE_MAX);
		pieces->piece[0] = shared->data;
		return gather_cells(ep, cmd, pieces) ? shared->data : NULL;
	case XSHM_PROTO_BUF:
		if (!xshm_pool_owned_by(pool, cmd->buf_index, cmd->src_ep_id))
			return NULL;
		buf = xshm_pool_buf(pool, cmd->buf_index);
		if (cmd->chunk_len > pool->buf_size)
			buffer_and_tail(pool, buf, cmd, shared, pieces);
		return buf;
	default:
		return NULL;
	}
}

/* Whether whole_payload gathered the payload of cmd in pieces. */
static bool in_pieces(const struct xshm_ep *ep, const struct xshm_cmd *cmd)
{
	return cmd->proto == XSHM_PROTO_CELLS ||
	       (cmd->proto == XSHM_PROTO_BUF &&
		cmd->chunk_len > ep->region.pool.buf_size);
}

/* The ring cells a whole message used: one, or its run's. */
static uint32_t whole_cells(const struct xshm_cmd *cmd,
			    const struct rx_payload *pieces)
{
	return cmd->proto == XSHM_PROTO_CELLS ? pieces->count : 1;
}

/*
 * A payload in its cell longer than XSHM_COPY_DOWN_ABOVE is copied out from
 * its end: copied from its start, it would end in the cell's last lines,
 * and the stream prefetcher would read on into the next cell, whose lines
 * the sender asks to own for its next message (warm.c) and would then wait
 * for.  Side by side: latency 0.81-0.83 at 1920 and 2008 bytes, 0.93-0.98
 * from 1100 to 1792, streaming bandwidth 1.23-1.24 times at 1920 and 2008
 * (fi_xshm(7)); in ring_floor, at 1 KiB, descending was the slower.
 */
static void copy_from_cell(void *dst, const void *data, size_t len)
{
	if (len > XSHM_COPY_DOWN_ABOVE)
		xshm_copy_descending(dst, data, len);
	else
		xshm_copy(dst, data, len);
}

/* A payload in pieces into the one buffer of a receive that holds it. */
static void copy_pieces(void *dst, const struct rx_payload *pieces)
{
	unsigned char *to = dst;

	for (uint32_t i = 0; i < pieces->count; i++) {
		xshm_copy(to, pieces->piece[i], pieces->len[i]);
		to += pieces->len[i];
	}
}

/*
 * handle_first for a whole message (whole_payload, data its first piece),
 * straight to the receive buffer when one that holds it matches; anything
 * else goes on through xshm_rx_match_first.  Returns the number of cells the
 * message used, 0 when they must stay in the ring.
 */
static uint32_t handle_whole(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			     const void *data,
			     const struct rx_payload *pieces)
{
	struct fi_peer_rx_entry *entry = NULL;
	struct rx_payload one;
	uint64_t flags, start, busy;
	fi_addr_t src;
	int ret;

	if (!sender_src(ep, cmd->src_ep_id, &src))
		return whole_cells(cmd, pieces);
	ret = get_entry(ep, cmd, src, &entry);
	if (ret || entry->count != 1 || entry->iov[0].iov_len < cmd->msg_size) {
		if (!in_pieces(ep, cmd)) {
			one.piece[0] = data;
			one.len[0] = cmd->chunk_len;
			one.count = 1;
			pieces = &one;
		}
		return xshm_rx_match_first(ep, cmd, pieces, src, entry, ret) ?
		       whole_cells(cmd, pieces) : 0;
	}
	start = timed_now(cmd->flags);
	if (in_pieces(ep, cmd))
		copy_pieces(entry->iov[0].iov_base, pieces);
	else if (cmd->proto == XSHM_PROTO_BUF)
		xshm_copy(entry->iov[0].iov_base, data, cmd->msg_size);
	else
		copy_from_cell(entry->iov[0].iov_base, data, cmd->msg_size);
	busy = timed_now(cmd->flags) - start;
	flags = comp_flags(cmd->op, cmd->flags, entry);
	xshm_report_rx_entry(ep, entry, flags, cmd->msg_size,
			     flags & FI_REMOTE_CQ_DATA ? cmd->cq_data : 0,
			     cmd->op == XSHM_OP_TAGGED ? cmd->tag : 0);
	entry->srx->owner_ops->free_entry(entry);
	if ((cmd->flags & XSHM_CMD_ACK) && !ep->closing)
		xshm_ack_send(ep, cmd->src_ep_id, cmd->ack_id, 0);
	xshm_path_received(ep, cmd->src_ep_id, cmd->flags, cmd->ack_id,
			   cmd->msg_size, 0, busy);
	return whole_cells(cmd, pieces);
}

/*
 * handle_whole for the common small message, whole in its cell after the
 * short header (no remote CQ data, ack or timing, one piece): what it
 * cannot have is not asked.  A tagged message of 8 bytes took 392
 * instructions through whole_payload and handle_whole (callgrind).
 */
static uint32_t handle_short(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			     const void *data)
{
	struct fi_peer_rx_entry *entry = NULL;
	struct rx_payload one;
	fi_addr_t src;
	int ret;

	prefetch_payload(data, cmd->msg_size);
	if (!sender_src(ep, cmd->src_ep_id, &src))
		return 1;
	ret = get_entry(ep, cmd, src, &entry);
	if (ret || entry->count != 1 || entry->iov[0].iov_len < cmd->msg_size) {
		one.piece[0] = data;
		one.len[0] = cmd->msg_size;
		one.count = 1;
		return xshm_rx_match_first(ep, cmd, &one, src, entry, ret);
	}
	copy_from_cell(entry->iov[0].iov_base, data, cmd->msg_size);
	xshm_report_rx_entry(ep, entry, comp_flags(cmd->op, 0, entry),
			     cmd->msg_size, 0,
			     cmd->op == XSHM_OP_TAGGED ? cmd->tag : 0);
	entry->srx->owner_ops->free_entry(entry);
	xshm_path_received(ep, cmd->src_ep_id, 0, 0, cmd->msg_size, 0, 0);
	return 1;
}

static bool handle_first(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 const struct rx_payload *payload)
{
	fi_addr_t src = xshm_av_lookup_ep_id(ep->av, cmd->src_ep_id);
	struct fi_peer_rx_entry *entry = NULL;
	int ret = get_entry(ep, cmd, src, &entry);

	return xshm_rx_match_first(ep, cmd, payload, src, entry, ret);
}

/* A private copy of an RTS: iov entries that add up to the message. */
static bool rts_valid(const struct xshm_cmd *cmd, const struct xshm_rts *rts)
{
	uint64_t total = 0;

	if (rts->iov_count > XSHM_RTS_IOV_MAX)
		return false;
	for (uint32_t i = 0; i < rts->iov_count; i++) {
		if (rts->iov[i].len > XSHM_MAX_MSG_SIZE)
			return false;
		total += rts->iov[i].len;
	}
	return total == cmd->msg_size;
}

/*
 * An XSHM_PROTO_BUF command carries a buffer's worth, and for a whole
 * message up to XSHM_BUF_TAIL_MAX more bytes in its cell (whole_payload;
 * the general path only drops such a command, never reads its payload).
 * Out of line, so that cmd_valid stays small enough to inline.
 */
static __attribute__((noinline)) bool buf_cmd_valid(const struct xshm_ep *ep,
						    const struct xshm_cmd *cmd)
{
	size_t max = ep->region.pool.buf_size;

	if (cmd->op != XSHM_OP_CHUNK && cmd->chunk_len == cmd->msg_size)
		max += XSHM_BUF_TAIL_MAX;
	return cmd->chunk_len <= max &&
	       xshm_pool_buf(&ep->region.pool, cmd->buf_index);
}

/* Every field of a cell written by a peer is checked before use. */
static inline bool cmd_valid(const struct xshm_ep *ep,
			     const struct xshm_cmd *cmd)
{
	if (cmd->op == XSHM_OP_ACK || cmd->op == XSHM_OP_ABORT)
		return cmd->proto == XSHM_PROTO_INLINE && !cmd->chunk_len &&
		       !cmd->msg_size;
	if (cmd->op == XSHM_OP_TIMING)
		return cmd->proto == XSHM_PROTO_INLINE && !cmd->msg_size &&
		       cmd->chunk_len == sizeof(struct xshm_timing);
	if (cmd->proto == XSHM_PROTO_RTS)
		return (cmd->op == XSHM_OP_MSG || cmd->op == XSHM_OP_TAGGED ||
			cmd->op == XSHM_OP_OFFER) &&
		       cmd->chunk_len == sizeof(struct xshm_rts) &&
		       cmd->msg_size <= XSHM_MAX_MSG_SIZE;
	if (cmd->proto == XSHM_PROTO_SHORT)
		return (cmd->op == XSHM_OP_MSG || cmd->op == XSHM_OP_TAGGED) &&
		       cmd->chunk_len <= XSHM_SHORT_MAX;
	if (cmd->proto == XSHM_PROTO_CELLS)
		return (cmd->op == XSHM_OP_MSG || cmd->op == XSHM_OP_TAGGED) &&
		       cmd->msg_size > XSHM_INLINE_MAX &&
		       cmd->msg_size <= XSHM_CELLS_MSG_MAX &&
		       cmd->chunk_len == cmd->msg_size;
	if (cmd->op < XSHM_OP_MSG || cmd->op > XSHM_OP_CHUNK ||
	    cmd->msg_size > XSHM_MAX_MSG_SIZE || cmd->chunk_len > cmd->msg_size ||
	    (cmd->op != XSHM_OP_CHUNK && !cmd->chunk_len && cmd->msg_size))
		return false;
	if (cmd->proto == XSHM_PROTO_INLINE)
		return cmd->chunk_len <= XSHM_INLINE_MAX;
	return cmd->proto == XSHM_PROTO_BUF && buf_cmd_valid(ep, cmd);
}

/*
 * The cells after the head that carry the rest of an XSHM_PROTO_CELLS
 * message.  The sender published them before the first one; false if it
 * did not.
 */
static bool gather_cells(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 struct rx_payload *payload)
{
	size_t left = cmd->msg_size - XSHM_INLINE_MAX;

	payload->len[0] = XSHM_INLINE_MAX;
	for (payload->count = 1; left; payload->count++) {
		const struct xshm_cont_cell *cell =
			xshm_ring_peek_at(&ep->region.ring, payload->count);
		uint32_t len = left < XSHM_CELL_PAYLOAD ?
			       (uint32_t) left : XSHM_CELL_PAYLOAD;

		if (!cell || cell->op != XSHM_OP_CONT)
			return false;
		payload->piece[payload->count] = cell->data;
		payload->len[payload->count] = len;
		left -= len;
	}
	return true;
}

/*
 * Where the payload of a valid command is; payload->count is also the
 * number of ring cells the command occupies.
 */
static bool locate_payload(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			   const struct xshm_cmd *shared,
			   const struct xshm_rts *rts,
			   struct rx_payload *payload)
{
	payload->count = 1;
	payload->len[0] = cmd->chunk_len;
	switch (cmd->proto) {
	case XSHM_PROTO_RTS:
		payload->piece[0] = rts;
		return true;
	case XSHM_PROTO_BUF:
		payload->piece[0] = xshm_pool_buf(&ep->region.pool,
						  cmd->buf_index);
		return true;
	case XSHM_PROTO_CELLS:
		payload->piece[0] = shared->data;
		return gather_cells(ep, cmd, payload);
	default:
		payload->piece[0] = shared->data;
		return true;
	}
}

/*
 * A private copy of a command's header.  A short command's header ends
 * where its payload starts: what it leaves out is what a whole message
 * without remote CQ data or ack has.  A short RMA or atomic command keeps
 * its flags, which its target checks (struct xshm_rma_short).
 */
static void read_cmd(struct xshm_cmd *cmd, const struct xshm_cmd *shared)
{
	memcpy(cmd, shared, sizeof(*cmd));
	if (cmd->proto != XSHM_PROTO_SHORT)
		return;
	if (!xshm_rma_is_cmd(cmd->op) && cmd->op != XSHM_OP_ATOMIC)
		cmd->flags = 0;
	cmd->cq_data = 0;
	cmd->msg_size = cmd->chunk_len;
	cmd->buf_index = 0;
	cmd->ack_id = 0;
}

/*
 * The cell stays writable by its sender: work from a private copy of its
 * header so that what was validated is what is used.  Returns the number
 * of cells, from the head, that the command used, or 0 when they must stay
 * in the ring (see handle_first).
 */
uint32_t xshm_rx_handle_cmd(struct xshm_ep *ep, const struct xshm_cmd *shared)
{
	const void *whole;
	struct rx_payload payload;
	struct xshm_peer *sender;
	struct xshm_cmd cmd;
	struct xshm_rts rts;

	read_cmd(&cmd, shared);
	if (cmd.proto == XSHM_PROTO_SHORT &&
	    (cmd.op == XSHM_OP_MSG || cmd.op == XSHM_OP_TAGGED) &&
	    cmd.chunk_len <= XSHM_SHORT_MAX)
		return handle_short(ep, &cmd, shared->short_data);
	whole = whole_payload(ep, &cmd, shared, &payload);
	if (whole) {
		uint32_t cells = handle_whole(ep, &cmd, whole, &payload);

		if (cells && cmd.proto == XSHM_PROTO_BUF)
			xshm_buf_return(ep, cmd.buf_index, cmd.src_ep_id);
		return cells;
	}
	if (xshm_rma_is_cmd(cmd.op) || cmd.op == XSHM_OP_ATOMIC) {
		struct xshm_peer *initiator;

		if (!sender_admitted(ep, cmd.src_ep_id, &initiator)) {
			if (cmd.proto == XSHM_PROTO_BUF &&
			    xshm_pool_owned_by(&ep->region.pool, cmd.buf_index,
					       cmd.src_ep_id))
				xshm_buf_return(ep, cmd.buf_index,
						cmd.src_ep_id);
		} else if (cmd.op == XSHM_OP_ATOMIC) {
			xshm_atomic_target_handle(ep, &cmd, shared);
		} else {
			xshm_rma_target_handle(ep, &cmd, shared);
		}
		return 1;
	}
	if (cmd.proto == XSHM_PROTO_RTS)
		memcpy(&rts, shared->data, sizeof(rts));
	if (!cmd_valid(ep, &cmd) ||
	    (cmd.proto == XSHM_PROTO_RTS && !rts_valid(&cmd, &rts)) ||
	    !locate_payload(ep, &cmd, shared, &rts, &payload)) {
		XSHM_WARN(FI_LOG_EP_DATA, "malformed command dropped\n");
		if (cmd.proto == XSHM_PROTO_BUF)
			xshm_buf_return(ep, cmd.buf_index, cmd.src_ep_id);
		return 1;
	}
	/* Its buffer must be one it borrowed and still holds: used once. */
	if (cmd.proto == XSHM_PROTO_BUF &&
	    !xshm_pool_owned_by(&ep->region.pool, cmd.buf_index, cmd.src_ep_id)) {
		XSHM_WARN(FI_LOG_EP_DATA, "command from %016llx names buffer "
			  "%u it does not hold: dropped\n",
			  (unsigned long long) cmd.src_ep_id, cmd.buf_index);
		return 1;
	}
	if (!sender_admitted(ep, cmd.src_ep_id, &sender)) {
		if (cmd.proto == XSHM_PROTO_BUF)
			xshm_buf_return(ep, cmd.buf_index, cmd.src_ep_id);
		return payload.count;
	}
	switch (cmd.op) {
	case XSHM_OP_CHUNK:
		xshm_rx_handle_chunk(ep, &cmd, payload.piece[0]);
		break;
	case XSHM_OP_ACK:
		xshm_ack_received(ep, cmd.src_ep_id, cmd.ack_id,
				  cmd.tag > 4096 ? EIO : (int) cmd.tag);
		break;
	case XSHM_OP_ABORT:
		xshm_rx_handle_abort(ep, &cmd);
		break;
	case XSHM_OP_OFFER:
		xshm_rts_offered(ep, &cmd, &rts);
		break;
	case XSHM_OP_TIMING: {
		struct xshm_timing timing;

		memcpy(&timing, payload.piece[0], sizeof(timing));
		xshm_path_timing(ep, &cmd, &timing);
		break;
	}
	default:
		if (!handle_first(ep, &cmd, &payload))
			return 0;
	}
	if (cmd.proto == XSHM_PROTO_BUF)
		xshm_buf_return(ep, cmd.buf_index, cmd.src_ep_id);
	return payload.count;
}
