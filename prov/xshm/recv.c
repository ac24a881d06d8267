/*
 * The receive path.  Every message that arrives is matched through the peer
 * SRX interface (get_msg/get_tag, then queue_msg/queue_tag when nothing is
 * posted) and completed through the peer CQ interface, whether the SRX and
 * CQ are xshm's own or an owner provider's.  Unexpected data is copied out
 * of the ring and the pool at once, so held messages never block a sender,
 * up to xshm_params.unexp_bytes_max: beyond it, an unmatched message stays
 * in the ring (and everything behind it) until a receive is posted, so
 * senders get -FI_EAGAIN instead of the receiver's memory growing.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "xshm.h"
#include "shm/clock.h"

static size_t entry_capacity(const struct fi_peer_rx_entry *entry)
{
	return xshm_iov_total(entry->iov, entry->count);
}

static void copy_to_entry(struct fi_peer_rx_entry *entry, size_t offset,
			  const void *data, size_t len)
{
	xshm_iov_copy_to(entry->iov, entry->count, offset, data, len);
}

static void ack_if_asked(const struct xshm_rx_msg *msg, int status);

/* The clock, read for a timed message only: its copies are timed (path.c). */
static inline uint64_t timed_now(uint16_t cmd_flags)
{
	return cmd_flags & XSHM_CMD_TIMED ? xshm_now_ns() : 0;
}

static uint64_t comp_flags(uint8_t op, uint16_t cmd_flags,
			   const struct fi_peer_rx_entry *entry)
{
	return FI_RECV | (op == XSHM_OP_TAGGED ? FI_TAGGED : FI_MSG) |
	       (cmd_flags & XSHM_CMD_REMOTE_CQ_DATA ? FI_REMOTE_CQ_DATA : 0) |
	       (entry->flags & FI_MULTI_RECV);
}

/* Reports the received message and gives the entry back to its owner. */
static void complete_msg(struct xshm_rx_msg *msg)
{
	struct xshm_ep *ep = msg->ep;
	struct fi_peer_rx_entry *entry = msg->entry;
	uint64_t flags = comp_flags(msg->op, msg->cmd_flags, entry);
	uint64_t data = flags & FI_REMOTE_CQ_DATA ? msg->cq_data : 0;
	uint64_t tag = msg->op == XSHM_OP_TAGGED ? msg->tag : 0;
	size_t capacity = entry_capacity(entry);
	size_t len = msg->size < capacity ? msg->size : capacity;
	uint64_t start = timed_now(msg->cmd_flags);
	int pulled = msg->is_rts ? xshm_rts_copy(msg, len) : 0;

	msg->busy_ns += timed_now(msg->cmd_flags) - start;

	if (pulled) {
		struct fi_cq_err_entry err = {
			.op_context = entry->context, .flags = flags,
			.data = data, .tag = tag,
			.err = FI_EIO, .prov_errno = -pulled,
		};

		xshm_report_rx_err(ep, &err);
	} else if (msg->size > capacity) {
		struct fi_cq_err_entry err = {
			.op_context = entry->context, .flags = flags,
			.len = capacity, .data = data, .tag = tag,
			.olen = msg->size - capacity,
			.err = FI_ETRUNC, .prov_errno = FI_ETRUNC,
		};

		xshm_report_rx_err(ep, &err);
	} else {
		xshm_report_rx_entry(ep, entry, flags, msg->size, data, tag);
	}
	ack_if_asked(msg, pulled ? EIO : 0);
	/* after the ack, which the sender's completion waits for */
	xshm_path_received(ep, msg->src_ep_id, msg->cmd_flags, msg->ack_id,
			   msg->size, msg->ready_ns, msg->busy_ns);
	if (xshm_scopy_by_pages_either(msg->size))
		xshm_rx_large_pages(ep, entry, len);
	entry->srx->owner_ops->free_entry(entry);
}

/* The sender asked to learn when its message was delivered or discarded. */
static void ack_if_asked(const struct xshm_rx_msg *msg, int status)
{
	/* Dropped because the endpoint closes: the sender must not succeed. */
	if (msg->ep->closing)
		return;
	if (msg->cmd_flags & XSHM_CMD_ACK)
		xshm_ack_send(msg->ep, msg->src_ep_id, msg->ack_id, status);
}

static void free_msg(struct xshm_rx_msg *msg)
{
	xshm_dlist_remove(&msg->link);
	free(msg->staging);
	free(msg);
}

/* Places one chunk where the message currently goes. */
static void store_chunk(struct xshm_rx_msg *msg, const void *data, size_t len)
{
	uint64_t start = timed_now(msg->cmd_flags);

	if (msg->discarded)
		;
	else if (msg->started)
		copy_to_entry(msg->entry, msg->received, data, len);
	else
		memcpy(msg->staging + msg->received, data, len);
	msg->received += len;
	msg->busy_ns += timed_now(msg->cmd_flags) - start;
}

/*
 * A receive matched a message whose sender closed (FI_ECONNABORTED) or died
 * (FI_EIO) before sending it all.
 */
static void report_aborted(struct xshm_rx_msg *msg)
{
	struct fi_peer_rx_entry *entry = msg->entry;
	int code = msg->sender_died ? FI_EIO : FI_ECONNABORTED;
	struct fi_cq_err_entry err = {
		.op_context = entry->context,
		.flags = FI_RECV | (msg->op == XSHM_OP_TAGGED ? FI_TAGGED : FI_MSG),
		.tag = msg->op == XSHM_OP_TAGGED ? msg->tag : 0,
		.err = code,
		.prov_errno = code,
	};

	xshm_report_rx_err(msg->ep, &err);
	entry->srx->owner_ops->free_entry(entry);
}

/*
 * ep->rx_active keeps the whole messages held unexpected in front and the
 * messages still arriving behind them, so that a chunk finds its message
 * among the latter alone, however many are held.
 */
static void park_whole(struct xshm_rx_msg *msg)
{
	struct xshm_dlist *front = msg->ep->rx_active.next;

	if (front == &msg->link)
		return;
	xshm_dlist_remove(&msg->link);
	xshm_dlist_append(front, &msg->link);
}

/* The message's last byte arrived: finish whatever stage it is in. */
static void finish_arrival(struct xshm_rx_msg *msg)
{
	if (msg->aborted && msg->started) {
		report_aborted(msg);
		free_msg(msg);
	} else if (msg->discarded) {
		/* Discarded by the owner, or dropped when it gave no entry. */
		if (msg->entry && !msg->owner_frees_discarded)
			msg->entry->srx->owner_ops->free_entry(msg->entry);
		if (!msg->aborted)
			ack_if_asked(msg, msg->entry ? 0 : EIO);
		free_msg(msg);
	} else if (msg->started) {
		complete_msg(msg);
		free_msg(msg);
	} else {
		park_whole(msg);	/* in the owner's unexpected queue */
	}
}

static void init_msg(struct xshm_rx_msg *msg, struct xshm_ep *ep,
		     const struct xshm_cmd *cmd, const void *data, fi_addr_t src)
{
	memset(msg, 0, offsetof(struct xshm_rx_msg, rts));
	msg->ep = ep;
	msg->src_ep_id = cmd->src_ep_id;
	msg->src_addr = src;
	msg->op = cmd->op;
	msg->cmd_flags = cmd->flags;
	msg->tag = cmd->tag;
	msg->cq_data = cmd->cq_data;
	msg->size = cmd->msg_size;
	msg->ack_id = cmd->ack_id;
	if (cmd->proto == XSHM_PROTO_RTS) {
		msg->is_rts = true;
		memcpy(&msg->rts, data, sizeof(msg->rts));
	}
}

/*
 * Where the payload of a message's first command is: one piece, or for
 * XSHM_PROTO_CELLS the first cell's data and then the cells after it, or
 * for a whole message a little over a bounce buffer (whole_payload only)
 * the buffer and then the rest in the command's cell.
 */
struct rx_payload {
	const void *piece[XSHM_CELLS_MAX];
	uint32_t len[XSHM_CELLS_MAX];
	uint32_t count;
};

static void store_payload(struct xshm_rx_msg *msg,
			  const struct rx_payload *payload)
{
	for (uint32_t i = 0; i < payload->count; i++)
		store_chunk(msg, payload->piece[i], payload->len[i]);
}

/* A message that outlives its first cell: kept in ep->rx_active. */
static struct xshm_rx_msg *keep_msg(const struct xshm_rx_msg *local)
{
	struct xshm_rx_msg *msg = malloc(sizeof(*msg));

	if (msg) {
		*msg = *local;
		msg->src_owner = xshm_av_sender_owner(msg->ep->av,
						      msg->src_ep_id);
		xshm_dlist_append(&msg->ep->rx_active, &msg->link);
	}
	return msg;
}

/* No memory to keep a message: it is lost, and said so where possible. */
static void drop_for_memory(struct xshm_rx_msg *local, int ret)
{
	XSHM_WARN(FI_LOG_EP_DATA, "no memory: message dropped\n");
	if (ret == -FI_ENOENT) {
		local->entry->srx->owner_ops->free_entry(local->entry);
	} else if (!ret) {
		struct fi_cq_err_entry err = {
			.op_context = local->entry->context,
			.flags = FI_RECV | (local->op == XSHM_OP_TAGGED ?
					    FI_TAGGED : FI_MSG),
			.err = FI_ENOMEM, .prov_errno = FI_ENOMEM,
		};

		xshm_report_rx_err(local->ep, &err);
		local->entry->srx->owner_ops->free_entry(local->entry);
	}
}

/* get_tag as libfabric's own headers up to 1.22 declare it (peer_abi). */
typedef int (*get_tag_sizeless_fn)(struct fid_peer_srx *srx, fi_addr_t addr,
				   uint64_t tag,
				   struct fi_peer_rx_entry **entry);

static inline int get_entry(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    fi_addr_t src, struct fi_peer_rx_entry **entry)
{
	struct fid_peer_srx *srx = ep->srx;

	if (cmd->op != XSHM_OP_TAGGED)
		return srx->owner_ops->get_msg(srx, src, cmd->msg_size, entry);
	if (ep->owner_get_tag_sizeless)
		return ((get_tag_sizeless_fn) (void *) srx->owner_ops->get_tag)(
			srx, src, cmd->tag, entry);
	return srx->owner_ops->get_tag(srx, src, cmd->msg_size, cmd->tag,
				       entry);
}

/* What holding a message costs: its data, unless pulled later, and its records. */
static size_t unexp_charge(bool is_rts, size_t size)
{
	return (is_rts ? 0 : size) + sizeof(struct xshm_rx_msg) +
	       sizeof(struct xshm_rx_entry);
}

/* One message is always taken, so that a huge one cannot stall forever. */
static bool unexp_full(const struct xshm_ep *ep, const struct xshm_cmd *cmd)
{
	size_t charge = unexp_charge(cmd->proto == XSHM_PROTO_RTS,
				     cmd->msg_size);

	return ep->unexp_bytes &&
	       ep->unexp_bytes + charge > xshm_params.unexp_bytes_max;
}

static void unexp_release(struct xshm_rx_msg *msg)
{
	msg->ep->unexp_bytes -= unexp_charge(msg->is_rts, msg->size);
}

static int hold_unexpected(struct xshm_rx_msg *msg,
			   struct fi_peer_rx_entry *entry)
{
	if (!msg->is_rts) {
		msg->staging = malloc(msg->size ? msg->size : 1);
		if (!msg->staging)
			return -FI_ENOMEM;
	}
	msg->ep->unexp_bytes += unexp_charge(msg->is_rts, msg->size);
	msg->owner_frees_discarded = msg->ep->owner_frees_discarded;
	msg->entry = entry;
	entry->peer_context = msg;
	entry->size = msg->size;	/* an owner of libfabric's get_tag has none */
	entry->cq_data = msg->cq_data;
	if (msg->cmd_flags & XSHM_CMD_REMOTE_CQ_DATA)
		entry->flags |= FI_REMOTE_CQ_DATA;
	return 0;
}

static void queue_unexpected(struct xshm_rx_msg *msg)
{
	struct fid_peer_srx *srx = msg->ep->srx;

	if (msg->op == XSHM_OP_TAGGED)
		srx->owner_ops->queue_tag(msg->entry);
	else
		srx->owner_ops->queue_msg(msg->entry);
}

/*
 * The first cell of a message: match it, then deliver or hold its data.
 * False when it matches nothing and no more may be held: the cell stays.
 */
static bool match_first(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			const struct rx_payload *payload, fi_addr_t src,
			struct fi_peer_rx_entry *entry, int ret)
{
	struct xshm_rx_msg local, *msg;

	init_msg(&local, ep, cmd, payload->piece[0], src);
	if (ret == -FI_ENOENT && unexp_full(ep, cmd)) {
		entry->srx->owner_ops->free_entry(entry);
		return false;
	}
	local.entry = entry;
	if (!ret && (local.is_rts || cmd->chunk_len == cmd->msg_size)) {
		/* The common case, matched and whole: nothing to keep. */
		local.started = true;
		if (local.is_rts)
			local.received = local.size;
		else
			store_payload(&local, payload);
		complete_msg(&local);
		return true;
	}
	msg = keep_msg(&local);
	if (!msg) {
		drop_for_memory(&local, ret);
		return true;
	}
	if (ret == -FI_ENOENT && hold_unexpected(msg, entry)) {
		entry->srx->owner_ops->free_entry(entry);
		ret = -FI_ENOMEM;
	}
	if (ret && ret != -FI_ENOENT) {
		XSHM_WARN(FI_LOG_EP_DATA, "cannot match message: %s; dropped\n",
			  fi_strerror(-ret));
		msg->discarded = true;
		msg->entry = NULL;
	} else {
		msg->entry = entry;
		msg->started = !ret;
	}
	if (msg->is_rts)
		msg->received = msg->size;	/* all there, to be pulled */
	else
		store_payload(msg, payload);
	if (ret == -FI_ENOENT) {
		if (msg->received == msg->size)
			park_whole(msg);
		queue_unexpected(msg);
	} else if (msg->received == msg->size) {
		finish_arrival(msg);
	}
	return true;
}

static bool handle_first(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 const struct rx_payload *payload)
{
	fi_addr_t src = xshm_av_lookup_ep_id(ep->av, cmd->src_ep_id);
	struct fi_peer_rx_entry *entry = NULL;
	int ret = get_entry(ep, cmd, src, &entry);

	return match_first(ep, cmd, payload, src, entry, ret);
}

static inline bool cmd_valid(const struct xshm_ep *ep,
			     const struct xshm_cmd *cmd);
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
 * else goes on through match_first.  Returns the number of cells the
 * message used, 0 when they must stay in the ring.
 */
static uint32_t handle_whole(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			     const void *data, const struct rx_payload *pieces)
{
	struct fi_peer_rx_entry *entry = NULL;
	struct rx_payload one;
	uint64_t flags, start, busy;
	fi_addr_t src;
	int ret;

	if (!xshm_av_sender_src(ep, cmd->src_ep_id, &src))
		return whole_cells(cmd, pieces);
	ret = get_entry(ep, cmd, src, &entry);
	if (ret || entry->count != 1 || entry->iov[0].iov_len < cmd->msg_size) {
		if (!in_pieces(ep, cmd)) {
			one.piece[0] = data;
			one.len[0] = cmd->chunk_len;
			one.count = 1;
			pieces = &one;
		}
		return match_first(ep, cmd, pieces, src, entry, ret) ?
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

/* The message from that sender whose chunks are still arriving. */
static struct xshm_rx_msg *find_active(struct xshm_ep *ep, uint64_t src_ep_id)
{
	struct xshm_dlist *it;

	for (it = ep->rx_active.prev; it != &ep->rx_active; it = it->prev) {
		struct xshm_rx_msg *msg =
			xshm_container_of(it, struct xshm_rx_msg, link);

		if (msg->received == msg->size)
			break;	/* the whole ones, in front */
		if (msg->src_ep_id == src_ep_id)
			return msg;
	}
	return NULL;
}

static void handle_chunk(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 const void *data)
{
	struct xshm_rx_msg *msg = find_active(ep, cmd->src_ep_id);

	if (!msg || cmd->chunk_len > msg->size - msg->received) {
		XSHM_WARN(FI_LOG_EP_DATA, "stray chunk from %016lx dropped\n",
			  (unsigned long) cmd->src_ep_id);
		return;
	}
	store_chunk(msg, data, cmd->chunk_len);
	if (msg->received == msg->size)
		finish_arrival(msg);
}

/*
 * The sender closed part way through its current message: it completes as
 * aborted (an error for a receive that matched it) with what arrived.
 */
static void handle_abort(struct xshm_ep *ep, const struct xshm_cmd *cmd)
{
	struct xshm_rx_msg *msg = find_active(ep, cmd->src_ep_id);

	if (!msg)
		return;
	msg->aborted = true;
	msg->received = msg->size;
	finish_arrival(msg);
}

/* An own SRX can forget an unexpected message; an owner's keeps it. */
static bool drop_unexpected(struct xshm_rx_msg *msg)
{
	struct xshm_srx *srx = msg->ep->own_srx;

	if (!srx || msg->entry->srx != &srx->peer_srx ||
	    !xshm_srx_unqueue(srx, msg->entry))
		return false;
	msg->entry->srx->owner_ops->free_entry(msg->entry);
	free_msg(msg);
	return true;
}

/*
 * The sender was killed part way through the message.  A receive that has
 * it completes with FI_EIO; an unexpected one is dropped, or, held by an
 * owner's SRX that cannot give it back, loses its data and completes with
 * FI_EIO once matched.
 */
void xshm_rx_sender_died(struct xshm_rx_msg *msg)
{
	msg->aborted = true;
	msg->sender_died = true;
	msg->received = msg->size;
	if (msg->entry && !msg->started && !msg->discarded &&
	    drop_unexpected(msg))
		return;
	free(msg->staging);
	msg->staging = NULL;
	finish_arrival(msg);
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
 * without remote CQ data or ack has.
 */
static void read_cmd(struct xshm_cmd *cmd, const struct xshm_cmd *shared)
{
	memcpy(cmd, shared, sizeof(*cmd));
	if (cmd->proto != XSHM_PROTO_SHORT)
		return;
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
	struct xshm_cmd cmd;
	struct xshm_rts rts;

	read_cmd(&cmd, shared);
	whole = whole_payload(ep, &cmd, shared, &payload);
	if (whole) {
		uint32_t cells = handle_whole(ep, &cmd, whole, &payload);

		if (cells && cmd.proto == XSHM_PROTO_BUF)
			xshm_buf_return(ep, cmd.buf_index, cmd.src_ep_id);
		return cells;
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
	if (!xshm_av_sender_allowed(ep, cmd.src_ep_id)) {
		if (cmd.proto == XSHM_PROTO_BUF)
			xshm_buf_return(ep, cmd.buf_index, cmd.src_ep_id);
		return payload.count;
	}
	switch (cmd.op) {
	case XSHM_OP_CHUNK:
		handle_chunk(ep, &cmd, payload.piece[0]);
		break;
	case XSHM_OP_ACK:
		xshm_ack_received(ep, cmd.src_ep_id, cmd.ack_id,
				  cmd.tag > 4096 ? EIO : (int) cmd.tag);
		break;
	case XSHM_OP_ABORT:
		handle_abort(ep, &cmd);
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

/*
 * foreach_unspec_addr callback: the source of a held message, once its
 * sender is in the endpoint's AV.
 */
fi_addr_t xshm_rx_src_addr(struct fi_peer_rx_entry *entry)
{
	struct xshm_rx_msg *msg = entry->peer_context;

	if (!msg || !msg->ep)
		return FI_ADDR_NOTAVAIL;
	msg->src_addr = xshm_av_lookup_ep_id(msg->ep->av, msg->src_ep_id);
	return msg->src_addr;
}

/* Peer SRX ops: the owner matched (start) or dropped (discard) a held message. */

/*
 * A message held by an owner's SRX after its endpoint closed has nowhere to
 * be reported: it is released without a completion, and with it the view
 * (import.c) its entry names, which the owner reached it through.
 */
static bool release_orphan(struct xshm_rx_msg *msg,
			   struct fi_peer_rx_entry *entry, bool discarding)
{
	struct xshm_srx_view *view = msg->orphan_view;

	if (msg->ep)
		return false;
	if (!discarding || !msg->owner_frees_discarded)
		entry->srx->owner_ops->free_entry(entry);
	free_msg(msg);
	xshm_srx_view_release(view);
	return true;
}

static int xshm_rx_start(struct fi_peer_rx_entry *entry)
{
	struct xshm_rx_msg *msg = entry->peer_context;
	uint64_t start;

	if (release_orphan(msg, entry, false))
		return 0;
	unexp_release(msg);
	msg->entry = entry;
	start = timed_now(msg->cmd_flags);
	if (msg->staging)
		copy_to_entry(entry, 0, msg->staging, msg->received);
	msg->busy_ns += timed_now(msg->cmd_flags) - start;
	msg->ready_ns = start;		/* posted after it came; 0 untimed */
	free(msg->staging);
	msg->staging = NULL;
	msg->started = true;
	if (msg->received == msg->size)
		finish_arrival(msg);
	return 0;
}

/*
 * The entry is not touched once this returns if the owner frees it then
 * (msg->owner_frees_discarded).
 */
static int xshm_rx_discard(struct fi_peer_rx_entry *entry)
{
	struct xshm_rx_msg *msg = entry->peer_context;

	if (release_orphan(msg, entry, true))
		return 0;
	unexp_release(msg);
	free(msg->staging);
	msg->staging = NULL;
	msg->discarded = true;
	if (msg->received == msg->size)
		finish_arrival(msg);
	return 0;
}

const struct fi_ops_srx_peer xshm_srx_peer_ops = {
	.size = sizeof(struct fi_ops_srx_peer),
	.start_msg = xshm_rx_start,
	.start_tag = xshm_rx_start,
	.discard_msg = xshm_rx_discard,
	.discard_tag = xshm_rx_discard,
};

/*
 * Endpoint close: messages still arriving are dropped with their entries.
 * One still queued in an SRX (an owner's, or our own about to be destroyed)
 * becomes an orphan, released when that SRX starts or discards it.
 */
void xshm_rx_abort_all(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->rx_active)) {
		struct xshm_rx_msg *msg = xshm_container_of(ep->rx_active.next,
						struct xshm_rx_msg, link);

		if (msg->entry && !msg->started && !msg->discarded) {
			xshm_dlist_remove(&msg->link);
			msg->ep = NULL;
			msg->orphan_view = ep->srx_view;
			if (ep->srx_view)
				xshm_srx_view_hold(ep->srx_view);
			continue;
		}
		if (msg->entry &&
		    !(msg->discarded && msg->owner_frees_discarded))
			msg->entry->srx->owner_ops->free_entry(msg->entry);
		free_msg(msg);
	}
}

static ssize_t check_recv(const struct xshm_ep *ep,
			  const struct xshm_recv_args *recv)
{
	uint64_t special = recv->flags & (FI_PEEK | FI_CLAIM | FI_DISCARD);

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (xshm_check_iov(recv->iov, recv->count, ep->rx_iov_limit))
		return -FI_EINVAL;
	if (special == FI_DISCARD ||
	    (special && (recv->flags & FI_MULTI_RECV)))
		return -FI_EINVAL;
	if ((recv->flags & FI_MULTI_RECV) &&
	    (recv->tagged || recv->count != 1 || !(ep->caps & FI_MULTI_RECV)))
		return -FI_EINVAL;
	return 0;
}

ssize_t xshm_recv(struct xshm_ep *ep, bool tagged, const struct iovec *iov,
		  void **desc, size_t count, fi_addr_t src, uint64_t tag,
		  uint64_t ignore, void *context, uint64_t flags)
{
	struct xshm_recv_args recv = {
		.tagged = tagged, .iov = iov, .desc = desc, .count = count,
		.src = (ep->caps & FI_DIRECTED_RECV) ? src : FI_ADDR_UNSPEC,
		.tag = tag, .ignore = ignore, .context = context,
		.flags = xshm_rx_flags(ep, flags),
	};
	ssize_t ret;

	xshm_lock_acquire(&ep->domain->lock);
	ret = check_recv(ep, &recv);
	if (!ret && recv.src != FI_ADDR_UNSPEC)	/* as sources are reported */
		ret = xshm_av_recv_src(ep, &recv.src, &recv.src_ep_id, flags);
	if (ret)
		;
	else if (!ep->own_srx)
		ret = -FI_ENOSYS;	/* receives are posted to the owner's SRX */
	else if (flags & FI_PEEK) {
		xshm_ep_progress(ep);	/* look at what has arrived by now */
		ret = xshm_srx_peek(ep->own_srx, ep, &recv);
	}
	else if (flags & FI_CLAIM)
		ret = xshm_srx_claim(ep->own_srx, ep, &recv);
	else
		ret = xshm_srx_post(ep->own_srx, ep, &recv);
	xshm_lock_release(&ep->domain->lock);
	return ret;
}
