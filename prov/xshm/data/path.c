/*
 * Which path a large send takes, bounce buffers or the single copy, and
 * the timings that choose it (shm/path_choice.h).
 *
 * By default (FI_XSHM_PATH=auto) a send larger than FI_XSHM_PATH_MIN
 * takes the path measured cheaper to its receiver, for its size and for
 * whether it joins a stream.  A timed send carries XSHM_CMD_TIMED and an
 * id in ack_id; its receiver, once it completed the message, answers with
 * an XSHM_OP_TIMING cell saying when it became ready for it, when it was
 * done, how long its copies took and when it completed that sender's
 * previous large message, and the sender records what
 * xshm_path_sample makes of it: the time to completion for a lone send,
 * its pace (or, among other senders' messages, its busier side's copies)
 * for a send in a stream.
 * With FI_XSHM_PATH=static, or once FI_XSHM_SCOPY_THRESHOLD or the huge
 * page minimums are set, the sizes and pages choose as fi_xshm(7) says.
 * Without a single copy to the receiver (FI_XSHM_CMA=0, a ptrace policy,
 * FI_INJECT) everything takes bounce buffers.
 */
#include "data/path.h"
#include "av/av.h"
#include "base/params.h"
#include "data/ack.h"
#include "data/control.h"
#include "data/large_path.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "shm/clock.h"
#include "shm/layout.h"
#include "shm/path_choice.h"
#include "shm/region.h"

static bool can_pull(const struct xshm_ep *ep, const struct xshm_region *peer,
		     uint64_t flags)
{
	return ep->scopy && !(flags & FI_INJECT) &&
	       (peer->hdr->features & XSHM_FEATURE_PULL);
}

/* Whether a large send to dest joins a stream (shm/path_choice.h). */
static bool joins_stream(struct xshm_ep *ep, fi_addr_t dest)
{
	return xshm_path_joins_stream(&ep->large_sent, dest, ep->rx_reported);
}

/*
 * FI_XSHM_PATH=static: the single copy above scopy_threshold, and for the
 * sizes the pages choose for, when the buffers of both sides lie on huge
 * pages (large_path.c).  A lone send on huge pages bounces up to a larger
 * size than one in a stream: bounce buffers, both processes copying at
 * once and the data left in the receiver's cache, give the lower latency
 * there, where the single copy gives a stream more bandwidth.
 */
static bool static_scopy(struct xshm_ep *ep, const struct xshm_region *peer,
			 const struct iovec *iov, size_t count, size_t total,
			 bool in_stream)
{
	if (total > xshm_params.scopy_threshold)
		return true;
	if (!xshm_scopy_by_pages_either(total) ||
	    !xshm_scopy_by_pages(total, in_stream))
		return false;
	return xshm_tx_large_pages(ep, peer, iov, count, total);
}

/* The receiver's choices; a slot another receiver held starts afresh. */
static struct xshm_path_slot *slot_of(struct xshm_ep *ep,
				      const struct xshm_region *peer)
{
	struct xshm_path_slot *slot =
		&ep->path_choices[peer->mapping_id % XSHM_PATH_CHOICES];

	if (slot->mapping_id != peer->mapping_id) {
		slot->mapping_id = peer->mapping_id;
		xshm_path_choice_init(&slot->choice, xshm_params.path_min,
				      xshm_params.scopy_threshold);
	}
	return slot;
}

static uint32_t start_timing(struct xshm_ep *ep, const struct xshm_peer *peer,
			     struct xshm_path_class *cls, enum xshm_path path,
			     size_t total)
{
	uint32_t id = xshm_ack_new_id(ep);

	ep->path_timed[id % XSHM_PATH_TIMED] = (struct xshm_path_timed) {
		.dest_ep_id = peer->ep_id, .start_ns = xshm_now_ns(),
		.len = total, .cls = cls, .mapping_id = peer->region.mapping_id,
		.id = id, .path = path,
		/* as joins_stream noted it for this send */
		.follows_send = ep->large_sent.in_run,
	};
	return id;
}

struct xshm_send_path xshm_path_choose(struct xshm_ep *ep,
				       const struct xshm_peer *peer,
				       const struct iovec *iov, size_t count,
				       size_t total, fi_addr_t dest,
				       uint64_t flags)
{
	struct xshm_send_path choice = { 0 };
	struct xshm_path_class *cls;
	struct xshm_path_pick pick;

	choice.lone = !joins_stream(ep, dest);
	if (total <= xshm_params.path_min || !can_pull(ep, &peer->region, flags))
		return choice;
	if (!xshm_params.path_auto) {
		choice.rts = static_scopy(ep, &peer->region, iov, count, total,
					  !choice.lone);
		return choice;
	}
	cls = xshm_path_class_for(&slot_of(ep, &peer->region)->choice,
				  !choice.lone, total, xshm_params.path_min);
	pick = xshm_path_pick(cls);
	choice.rts = pick.path == XSHM_PATH_SCOPY;
	if (pick.timed)
		choice.timed_id = start_timing(ep, peer, cls, pick.path, total);
	return choice;
}

void xshm_path_sender_copied(struct xshm_ep *ep, uint32_t id, uint64_t ns)
{
	struct xshm_path_timed *sent = &ep->path_timed[id % XSHM_PATH_TIMED];

	if (sent->id == id)
		sent->busy_ns += ns;
}

void xshm_path_timing(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		      const struct xshm_timing *timing)
{
	struct xshm_path_timed *sent = &ep->path_timed[cmd->ack_id %
							XSHM_PATH_TIMED];

	if (!cmd->ack_id || sent->id != cmd->ack_id ||
	    sent->dest_ep_id != cmd->src_ep_id ||
	    ep->path_choices[sent->mapping_id % XSHM_PATH_CHOICES].mapping_id !=
	    sent->mapping_id)
		return;
	sent->id = 0;
	xshm_path_record(sent->cls, sent->path,
			 xshm_path_sample(sent->cls, sent->start_ns,
					  sent->busy_ns, sent->follows_send,
					  timing),
			 sent->len);
}

/*
 * The timing is only a measurement: when the sender's ring has no room
 * for it, or the sender is gone, it is dropped.
 */
static void report_timing(struct xshm_ep *ep, uint64_t sender_ep_id,
			  uint32_t id, const struct xshm_timing *timing)
{
	struct xshm_region *sender =
		xshm_peer_sender_region(&ep->domain->peers, sender_ep_id);
	struct xshm_control ctl = {
		.op = XSHM_OP_TIMING, .proto = XSHM_PROTO_INLINE,
		.ack_id = id, .payload = timing, .payload_len = sizeof(*timing),
	};

	if (sender && xshm_region_is_open(sender))
		xshm_control_push(ep, sender, &ctl);
}

void xshm_path_large_received(struct xshm_ep *ep, uint64_t sender_ep_id,
			      uint16_t cmd_flags, uint32_t id,
			      uint64_t ready_ns, uint64_t busy_ns)
{
	struct xshm_timing timing = { .ready_ns = ready_ns, .busy_ns = busy_ns };

	if (ep->closing)
		return;
	timing.done_ns = xshm_now_ns();
	if (timing.ready_ns < ep->rx_large_done_ns)
		timing.ready_ns = ep->rx_large_done_ns;
	if (ep->rx_large_sender == sender_ep_id)
		timing.paced_from_ns = ep->rx_large_done_ns;
	ep->rx_large_done_ns = timing.done_ns;
	ep->rx_large_sender = sender_ep_id;
	if (cmd_flags & XSHM_CMD_TIMED)
		report_timing(ep, sender_ep_id, id, &timing);
}
