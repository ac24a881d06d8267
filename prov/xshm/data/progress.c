/*
 * Manual progress: drain the inbound ring, then push queued sends.  A send
 * of a large message drains the replies to its earlier ones (send_queue.c).
 */
#include "data/progress.h"
#include "base/list.h"
#include "data/ack.h"
#include "data/buf_return.h"
#include "data/liveness.h"
#include "data/recv.h"
#include "data/rma.h"
#include "data/send.h"
#include "data/spare.h"
#include "data/warm.h"
#include "objects/ep.h"
#include "shm/layout.h"
#include "shm/ring.h"
#include "shm/sweep.h"

#define XSHM_RX_BUDGET		64	/* cells drained per progress call */
#define XSHM_RX_BUDGET_MIN	16	/* ... by a reader with less room */
#define XSHM_SWEEP_POLLS	64	/* idle polls between sweep checks */
#define XSHM_SWEEP_INTERVAL_NS	(100 * 1000000ULL)	/* between sweeps */

/*
 * The sweep (shm/sweep.h) costs system calls: it runs at most every
 * XSHM_SWEEP_INTERVAL_NS, looked at every XSHM_SWEEP_POLLS polls that found
 * nothing to consume.  Nothing here reads the ring's tail: senders write
 * that line, and a poll loop reading it would add a cache-line transfer to
 * every send.
 */
static void sweep_when_due(struct xshm_ep *ep)
{
	uint64_t now;

	if (++ep->sweep_polls < XSHM_SWEEP_POLLS)
		return;
	ep->sweep_polls = 0;
	now = xshm_sweep_now();
	if (now - ep->sweep_last_ns < XSHM_SWEEP_INTERVAL_NS)
		return;
	ep->sweep_last_ns = now;
	xshm_sweep_run(&ep->sweep, &ep->region, now);
}

/* Handles up to budget inbound cells; returns how many there were. */
int xshm_ep_drain(struct xshm_ep *ep, int budget)
{
	struct xshm_ring_ref *ring = &ep->region.ring;
	int handled;

	for (handled = 0; handled < budget; handled++) {
		struct xshm_cmd *cmd = xshm_ring_peek(ring);
		uint32_t cells = cmd ? xshm_rx_handle_cmd(ep, cmd) : 0;

		if (!cells)	/* empty, or held back (unexp_bytes_max) */
			break;
		xshm_ring_release_n(ring, cells);
	}
	return handled;
}

/* An ack of one of our sends, or an offer to help copy one. */
static bool is_reply(const struct xshm_cmd *cmd)
{
	return cmd->op == XSHM_OP_ACK || cmd->op == XSHM_OP_OFFER ||
	       cmd->op == XSHM_OP_TIMING || cmd->op == XSHM_OP_READ_DATA;
}

/*
 * The replies at the head of the inbound ring, and nothing from the first
 * other command on: called from a send, which matches no receive.
 */
void xshm_ep_drain_replies(struct xshm_ep *ep)
{
	struct xshm_ring_ref *ring = &ep->region.ring;
	const struct xshm_cmd *cmd;

	for (int handled = 0; handled < XSHM_RX_BUDGET; handled++) {
		uint32_t cells;

		cmd = xshm_ring_peek(ring);
		if (!cmd || !is_reply(cmd))
			return;
		cells = xshm_rx_handle_cmd(ep, cmd);
		if (!cells)
			return;
		xshm_ring_release_n(ring, cells);
	}
}

static void progress_up_to(struct xshm_ep *ep, int cells)
{
	bool idle;

	if (!ep->enabled)
		return;
	idle = !xshm_ep_drain(ep, cells);
	if (idle) {
		xshm_buf_return_flush(ep);
		if (ep->spare_wanted)
			xshm_spare_refill(ep);
		if (xshm_warm_wanted(ep))
			xshm_warm_run(ep);
		sweep_when_due(ep);
	}
	/*
	 * The common poll: nothing in flight, nothing more to look at but the
	 * sources of directed receives, in the liveness sweep.  Those are
	 * posted while a ping-pong waits, so their sweep is due as on a busy
	 * poll, not read from the clock on every empty one.
	 */
	if (!xshm_ep_waits_on_peers(ep)) {
		if (xshm_ep_rx_directed(ep))
			xshm_liveness_progress(ep, false);
		return;
	}
	xshm_liveness_progress(ep, idle);
	xshm_rma_reply_progress(ep);
	xshm_ack_flush(ep);
	if (!xshm_dlist_empty(&ep->tx_wait_ack))
		xshm_ack_reap(ep);
	xshm_tx_progress(ep);
	xshm_rma_progress(ep);
}

void xshm_ep_progress(struct xshm_ep *ep)
{
	progress_up_to(ep, XSHM_RX_BUDGET);
}

/*
 * A command completes one receive at most (a multi-receive buffer's last
 * message two), so draining about room commands lets what they complete
 * fit the reader's room (cq.c's sink) instead of being queued and copied
 * again: 4 to 6 % more messages a second at 8 and 64
 * bytes (ab.sh --swap, 12 and 16 rounds), larger sizes and incast within
 * noise.  At least XSHM_RX_BUDGET_MIN, so that a reader of one completion
 * at a time does not leave acks and control cells waiting.
 */
void xshm_ep_progress_for(struct xshm_ep *ep, size_t room)
{
	int cells = room < XSHM_RX_BUDGET_MIN ? XSHM_RX_BUDGET_MIN :
		    room > XSHM_RX_BUDGET ? XSHM_RX_BUDGET : (int) room;

	progress_up_to(ep, cells);
}
