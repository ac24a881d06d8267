/*
 * Large messages named by an RTS: single copy, split between the two
 * processes.
 *
 * Once the message is matched, the receiver copies it straight from the
 * sender's buffers into the receive buffers.  When the sender takes offers
 * (XSHM_CMD_PUSH) and the message has two chunks or more, the receiver
 * first offers it the receive buffers (XSHM_OP_OFFER, in the sender's
 * ring); then both copy at once, the receiver pulling chunks from the
 * front and the sender, in its next progress call, pushing chunks from the
 * back, each claiming a chunk in the receiver's header before copying it
 * (shm/scopy/split.h).  A sender that is not in libfabric while the
 * receiver copies claims nothing, and the receiver, once its first chunk
 * is in, pulls all the rest at once, unless more commands wait in its
 * ring: then its senders are still sending, and a sender takes up the
 * offer on its next send (send_queue.c).  The receiver completes, and
 * acks, once the sender's claimed chunks are in.
 */

#include "data/rts.h"
#include "av/av.h"
#include "data/ack.h"
#include "data/control.h"
#include "data/path.h"
#include "data/recv.h"
#include "data/send.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "shm/layout.h"
#include "shm/liveness.h"
#include "shm/proc.h"
#include "shm/region.h"
#include "shm/ring.h"
#include "shm/scopy/split.h"


void xshm_rts_name(struct xshm_rts *rts, const struct iovec *iov,
		   size_t count)
{
	rts->pid = xshm_proc_self();
	rts->iov_count = (uint32_t) count;
	for (size_t i = 0; i < count; i++) {
		rts->iov[i].base = (uintptr_t) iov[i].iov_base;
		rts->iov[i].len = iov[i].iov_len;
	}
}

size_t xshm_rts_iov(const struct xshm_rts *rts, struct iovec *iov)
{
	for (uint32_t i = 0; i < rts->iov_count; i++) {
		iov[i].iov_base = (void *) (uintptr_t) rts->iov[i].base;
		iov[i].iov_len = rts->iov[i].len;
	}
	return rts->iov_count;
}

struct xshm_region *xshm_rts_sender(struct xshm_ep *ep, uint64_t sender_ep_id,
				    int32_t pid)
{
	struct xshm_region *sender =
		xshm_peer_sender_region(&ep->domain->peers, sender_ep_id);

	if (!sender || !xshm_region_is_open(sender) ||
	    sender->hdr->owner_pid != pid)
		return NULL;
	return sender;
}

/* Where chunk of a message of len bytes starts, and its length. */
static size_t chunk_at(long chunk, size_t len, size_t *offset)
{
	size_t size = xshm_split_chunk_size(len);

	*offset = (size_t) chunk * size;
	return len - *offset < size ? len - *offset : size;
}

/* The first len bytes of a receive's buffers, as an offer names them. */
static bool offer_iov(const struct fi_peer_rx_entry *entry, size_t len,
		      struct xshm_rts *offer)
{
	offer->pid = xshm_proc_self();
	offer->iov_count = 0;
	for (size_t i = 0; i < entry->count && len; i++) {
		size_t take = entry->iov[i].iov_len < len ?
			      entry->iov[i].iov_len : len;

		if (!take)
			continue;
		if (offer->iov_count == XSHM_RTS_IOV_MAX)
			return false;
		offer->iov[offer->iov_count].base =
			(uintptr_t) entry->iov[i].iov_base;
		offer->iov[offer->iov_count++].len = take;
		len -= take;
	}
	return !len;
}

/* False when the sender's ring has no room: the receiver copies it all. */
static bool push_offer(struct xshm_ep *ep, struct xshm_region *sender,
		       const struct xshm_rx_msg *msg, size_t len, uint32_t gen)
{
	struct xshm_rts offer;
	struct xshm_control ctl = {
		.op = XSHM_OP_OFFER, .proto = XSHM_PROTO_RTS, .tag = gen,
		.msg_size = len, .ack_id = msg->ack_id,
		.payload = &offer, .payload_len = sizeof(offer),
	};

	return offer_iov(msg->entry, len, &offer) &&
	       xshm_control_push(ep, sender, &ctl);
}

/* Chunks of the message from offset on, into the receive buffers. */
static int pull_from(struct xshm_ep *ep, const struct xshm_rx_msg *msg,
		     const struct iovec *remote, size_t nremote, size_t offset,
		     size_t n)
{
	return ep->scopy->pull(msg->rts.pid, msg->entry->iov, msg->entry->count,
			       remote, nremote, offset, n);
}

/*
 * Whether a command waits behind the one at the head of the ring: the
 * receiver is behind its senders.  Streaming a computed buffer after
 * another, a sender gets ahead of a receiver copying alone, and the
 * further behind the receiver falls, the more of the data it reads has
 * left the caches; leaving chunks to the sender's next send keeps it close.
 */
static bool behind_senders(const struct xshm_ep *ep)
{
	return xshm_ring_peek_at(&ep->region.ring, 1) != NULL;
}

/*
 * The receiver's part: chunks from the front, until none is left; after
 * each, all that is left in one pull if the sender has not joined and the
 * receiver is not behind.  *chunk_ns: the longest a chunk took.
 */
static int pull_front(struct xshm_ep *ep, const struct xshm_rx_msg *msg,
		      const struct iovec *remote, size_t nremote, size_t len,
		      uint32_t gen, uint64_t *chunk_ns)
{
	struct xshm_split *split = &ep->region.hdr->split;
	size_t nchunks = xshm_split_chunks(len), offset, n;
	long chunk, rest;
	int ret = 0;

	while ((chunk = xshm_split_claim(split, gen, nchunks, true)) >= 0) {
		uint64_t start = xshm_now_ns();

		n = chunk_at(chunk, len, &offset);
		if (!ret)
			ret = pull_from(ep, msg, remote, nremote, offset, n);
		xshm_split_time_chunk(chunk_ns, start);
		if (behind_senders(ep))
			continue;
		rest = xshm_split_claim_rest(split, gen, nchunks);
		if (rest >= 0) {
			chunk_at(rest, len, &offset);
			return ret ? ret : pull_from(ep, msg, remote, nremote,
						     offset, len - offset);
		}
	}
	return ret;
}

/*
 * Pulls it all, or splits the copy with the sender when it can help.  The
 * sender's pid is checked against its region, so that a sender cannot
 * point the receiver at a third process (nor a receiver the sender: see
 * offering_region).
 */
int xshm_rts_copy(struct xshm_rx_msg *msg, size_t len)
{
	struct xshm_ep *ep = msg->ep;
	struct iovec remote[XSHM_RTS_IOV_MAX];
	size_t nremote = xshm_rts_iov(&msg->rts, remote);
	struct xshm_region *sender;
	uint64_t chunk_ns = 0;
	uint32_t gen;
	int ret;

	if (!ep->scopy)
		return -ENOTSUP;
	sender = xshm_rts_sender(ep, msg->src_ep_id, msg->rts.pid);
	if (!sender)
		return -ESRCH;
	gen = ++ep->split_gen;
	xshm_split_start(&ep->region.hdr->split, gen);
	if (!(msg->cmd_flags & XSHM_CMD_PUSH) ||
	    msg->rts.pid == xshm_proc_self() ||
	    xshm_split_chunks(len) < 2 ||
	    xshm_split_chunks(len) > XSHM_SPLIT_CHUNKS_MAX ||
	    !push_offer(ep, sender, msg, len, gen))
		return pull_from(ep, msg, remote, nremote, 0, len);
	ret = pull_front(ep, msg, remote, nremote, len, gen, &chunk_ns);
	if (xshm_split_wait_other(&ep->region.hdr->split, gen,
				  xshm_region_owner(sender), chunk_ns) && !ret)
		ret = -EIO;
	return ret;
}

/* The send an offer names: waiting for its ack, pulled, to that receiver. */
static struct xshm_tx_op *offered_op(struct xshm_ep *ep,
				     const struct xshm_cmd *cmd)
{
	struct xshm_tx_op *op = xshm_ack_waiting(ep, cmd->src_ep_id,
						 cmd->ack_id);

	return op && op->rts && cmd->msg_size <= op->total ? op : NULL;
}

/* The receiver's region, if it is still the process the send went to. */
static struct xshm_region *offering_region(struct xshm_ep *ep,
					   const struct xshm_tx_op *op,
					   const struct xshm_rts *offer)
{
	struct xshm_peer *peer;

	if (xshm_av_peer(ep->av, op->dest, &peer) || !peer->mapped ||
	    peer->ep_id != op->dest_ep_id ||
	    !xshm_region_is_open(&peer->region) ||
	    peer->region.hdr->owner_pid != offer->pid)
		return NULL;
	return &peer->region;
}

void xshm_rts_offered(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		      const struct xshm_rts *offer)
{
	struct xshm_tx_op *op = offered_op(ep, cmd);
	struct iovec remote[XSHM_RTS_IOV_MAX];
	size_t nremote = xshm_rts_iov(offer, remote);
	size_t len = cmd->msg_size, nchunks = xshm_split_chunks(len);
	struct xshm_region *receiver;
	struct xshm_split *split;
	uint64_t start;
	long chunk;

	if (!op || !ep->scopy)
		return;
	receiver = offering_region(ep, op, offer);
	if (!receiver)
		return;
	split = &receiver->hdr->split;
	start = xshm_path_clock(op->timed_id);
	while ((chunk = xshm_split_claim(split, (uint32_t) cmd->tag, nchunks,
					 false)) >= 0) {
		size_t offset, n = chunk_at(chunk, len, &offset);
		int ret = ep->scopy->push(offer->pid, op->iov, op->iov_count,
					  remote, nremote, offset, n);

		xshm_split_pushed(split, ret != 0);
	}
	xshm_path_copy_done(ep, op->timed_id, start);
}
