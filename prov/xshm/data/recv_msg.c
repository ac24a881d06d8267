/*
 * The receive path, by message.  Every message that arrives is matched
 * through the peer SRX interface (get_msg/get_tag, then queue_msg/queue_tag
 * when nothing is posted) and completed through the peer CQ interface,
 * whether the SRX and CQ are xshm's own or an owner provider's.  Unexpected
 * data is copied out of the ring and the pool at once, so held messages
 * never block a sender, up to xshm_params.unexp_bytes_max: beyond it, an
 * unmatched message stays in the ring (and everything behind it) until a
 * receive is posted, so senders get -FI_EAGAIN instead of the receiver's
 * memory growing.  A message of several cells is kept in ep->rx_active
 * until its last chunk arrives (struct xshm_rx_msg).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "av/av.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/params.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/large_path.h"
#include "data/path.h"
#include "data/recv.h"
#include "data/recv_int.h"
#include "data/rts.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/comp.h"
#include "srx/srx.h"
#include "shm/layout.h"

static size_t entry_capacity(const struct fi_peer_rx_entry *entry)
{
	return xshm_iov_total(entry->iov, entry->count);
}

static void ack_if_asked(const struct xshm_rx_msg *msg, int status);

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

void xshm_rx_free_msg(struct xshm_rx_msg *msg)
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
void xshm_rx_finish_arrival(struct xshm_rx_msg *msg)
{
	if (msg->aborted && msg->started) {
		report_aborted(msg);
		xshm_rx_free_msg(msg);
	} else if (msg->discarded) {
		/* Discarded by the owner, or dropped when it gave no entry. */
		if (msg->entry && !msg->owner_frees_discarded)
			msg->entry->srx->owner_ops->free_entry(msg->entry);
		if (!msg->aborted)
			ack_if_asked(msg, msg->entry ? 0 : EIO);
		xshm_rx_free_msg(msg);
	} else if (msg->started) {
		complete_msg(msg);
		xshm_rx_free_msg(msg);
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
		msg->src_owner = xshm_peer_owner(&msg->ep->domain->peers,
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

void xshm_rx_unexp_release(struct xshm_rx_msg *msg)
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
bool xshm_rx_match_first(struct xshm_ep *ep, const struct xshm_cmd *cmd,
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
		xshm_rx_finish_arrival(msg);
	}
	return true;
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

void xshm_rx_handle_chunk(struct xshm_ep *ep, const struct xshm_cmd *cmd,
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
		xshm_rx_finish_arrival(msg);
}

/*
 * The sender closed part way through its current message: it completes as
 * aborted (an error for a receive that matched it) with what arrived.
 */
void xshm_rx_handle_abort(struct xshm_ep *ep, const struct xshm_cmd *cmd)
{
	struct xshm_rx_msg *msg = find_active(ep, cmd->src_ep_id);

	if (!msg)
		return;
	msg->aborted = true;
	msg->received = msg->size;
	xshm_rx_finish_arrival(msg);
}

/* An own SRX can forget an unexpected message; an owner's keeps it. */
static bool drop_unexpected(struct xshm_rx_msg *msg)
{
	struct xshm_srx *srx = msg->ep->own_srx;

	if (!srx || msg->entry->srx != &srx->peer_srx ||
	    !xshm_srx_unqueue(srx, msg->entry))
		return false;
	msg->entry->srx->owner_ops->free_entry(msg->entry);
	xshm_rx_free_msg(msg);
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
	xshm_rx_finish_arrival(msg);
}
