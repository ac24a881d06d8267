/*
 * Peers killed without closing their endpoints.  Nothing in shared memory
 * tells a survivor that a peer died: it just stops consuming its ring,
 * pushing chunks and acking.  So each endpoint that waits on peers (queued
 * sends, sends awaiting an ack, messages whose chunks are still arriving,
 * acks it cannot push) sweeps, at most every liveness_ms, the processes
 * those operations involve (pid and start time, shm/proc.c), and fails the
 * operations of the dead ones with FI_EIO.  Receives posted to the
 * endpoint's own SRX from one source (FI_DIRECTED_RECV) count as pending
 * on that source: a process that only ever sends to this endpoint is
 * watched while a receive waits for it.  An idle endpoint does no sweep:
 * the clock is read only when something is pending, and then every 16th
 * progress call or when the ring was empty.
 *
 * A dead peer's region is retired (shm/liveness.c): its file is removed and
 * it is marked closed, so the peers mapping it, here and in other
 * processes, let go of it, and a new process may take the address.
 * Operations remember the process they were posted to, so none is carried
 * over to that new process.
 */
#include <time.h>

#include "data/liveness.h"
#include "av/av.h"
#include "base/list.h"
#include "base/params.h"
#include "data/ack.h"
#include "data/progress.h"
#include "data/recv.h"
#include "data/send.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "srx/srx.h"
#include "shm/liveness.h"
#include "shm/ring.h"

#define MEMO_MAX	16	/* processes remembered within one sweep */
#define CHECK_EVERY	16	/* busy progress calls between clock reads */

/* What one sweep learned, so that each process is looked up once. */
struct sweep {
	struct xshm_owner owners[MEMO_MAX];
	bool alive[MEMO_MAX];
	int count;
	struct xshm_ep *ep;
	/* the sources of directed receives, and the process behind each */
	uint64_t source_ids[MEMO_MAX];
	struct xshm_owner sources[MEMO_MAX];
	int source_count;
	bool sources_failed;	/* their receives failed: retire the dead */
};

static uint64_t coarse_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static bool sweep_alive(struct sweep *sweep, struct xshm_owner owner)
{
	bool alive;

	for (int i = 0; i < sweep->count; i++)
		if (xshm_owner_same(sweep->owners[i], owner))
			return sweep->alive[i];
	alive = xshm_owner_alive(owner);
	if (sweep->count < MEMO_MAX) {
		sweep->owners[sweep->count] = owner;
		sweep->alive[sweep->count++] = alive;
	}
	return alive;
}

/* The process behind the endpoint a directed receive names. */
static struct xshm_owner source_process(struct sweep *sweep, uint64_t ep_id)
{
	struct xshm_owner owner = { .pid = 0 };

	for (int i = 0; i < sweep->source_count; i++)
		if (sweep->source_ids[i] == ep_id)
			return sweep->sources[i];
	if (ep_id != sweep->ep->addr.ep_id)	/* itself: alive */
		owner = xshm_peer_source_process(&sweep->ep->domain->peers,
						 ep_id);
	if (sweep->source_count < MEMO_MAX) {
		sweep->source_ids[sweep->source_count] = ep_id;
		sweep->sources[sweep->source_count++] = owner;
	}
	return owner;
}

static bool source_gone(void *arg, uint64_t ep_id)
{
	struct sweep *sweep = arg;

	return !sweep_alive(sweep, source_process(sweep, ep_id));
}

static bool arriving(const struct xshm_rx_msg *msg)
{
	return msg->received < msg->size;
}

static struct xshm_rx_msg *rx_msg_of(struct xshm_dlist *link)
{
	return xshm_container_of(link, struct xshm_rx_msg, link);
}

static struct xshm_tx_op *tx_op_of(struct xshm_dlist *link)
{
	return xshm_container_of(link, struct xshm_tx_op, link);
}

static bool rx_waits(const struct xshm_ep *ep)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach((struct xshm_dlist *) &ep->rx_active, it)
		if (arriving(rx_msg_of(it)))
			return true;
	return false;
}

static bool any_sender_dead(struct xshm_ep *ep, struct sweep *sweep)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(&ep->rx_active, it) {
		struct xshm_rx_msg *msg = rx_msg_of(it);

		if (arriving(msg) && !sweep_alive(sweep, msg->src_owner))
			return true;
	}
	return false;
}

/*
 * Messages whose sender died part way.  The cells it pushed before dying
 * may still sit in the ring: take them all first (at most a ring's worth,
 * whatever others keep pushing), then what is still missing never comes.
 */
static void sweep_rx(struct xshm_ep *ep, struct sweep *sweep)
{
	struct xshm_dlist *it, *next;

	if (!any_sender_dead(ep, sweep))
		return;
	xshm_ep_drain(ep, (int) (ep->region.ring.mask + 1));
	for (it = ep->rx_active.next; it != &ep->rx_active; it = next) {
		struct xshm_rx_msg *msg = rx_msg_of(it);

		next = it->next;
		if (!arriving(msg) || sweep_alive(sweep, msg->src_owner))
			continue;
		xshm_peer_retire(&ep->domain->peers, msg->src_ep_id,
				 msg->src_owner);
		xshm_rx_sender_died(msg);
	}
}

/*
 * Takes every cell the ring holds now, so that whatever a dead peer sent
 * before dying is matched first; false when unexpected messages beyond
 * unexp_bytes_max hold back the rest (the ring's head stays put).
 */
static bool drain_ring(struct xshm_ep *ep)
{
	int left = (int) (ep->region.ring.mask + 1);

	while (left > 0) {
		int handled = xshm_ep_drain(ep, left);

		left -= handled;
		if (!xshm_ring_peek(&ep->region.ring))
			return true;
		if (!handled)
			return false;
	}
	return true;
}

/*
 * Receives directed at a source whose process died.  Its whole messages
 * still in the ring are delivered first (to them, or held unexpected);
 * then those receives fail with FI_EIO, as do receives posted later that
 * no held message of its matches (the next sweep finds them).  A source
 * that closed its endpoint and still runs is not dead: its receives stay
 * posted (it may open its endpoint again, at the same address).  The dead
 * regions are retired once the whole sweep is done (sweep_rx looks at the
 * messages that the drain started).
 */
static void sweep_directed(struct xshm_ep *ep, struct sweep *sweep)
{
	if (!xshm_ep_rx_directed(ep) ||
	    !xshm_srx_directed_gone(ep->own_srx, ep, source_gone, sweep, false))
		return;
	if (!drain_ring(ep))
		return;		/* the next sweep tries again */
	xshm_srx_directed_gone(ep->own_srx, ep, source_gone, sweep, true);
	sweep->sources_failed = true;
}

static void retire_dead_sources(struct xshm_ep *ep, struct sweep *sweep)
{
	if (!sweep->sources_failed)
		return;
	for (int i = 0; i < sweep->source_count; i++)
		if (!sweep_alive(sweep, sweep->sources[i]))
			xshm_peer_retire(&ep->domain->peers,
					 sweep->source_ids[i], sweep->sources[i]);
}

/* Sends to a dead receiver, queued or awaiting its ack, fail. */
static void sweep_tx(struct xshm_ep *ep, struct sweep *sweep,
		     struct xshm_dlist *list,
		     void (*fail)(struct xshm_ep *, struct xshm_tx_op *, int))
{
	struct xshm_dlist *it, *next;

	for (it = list->next; it != list; it = next) {
		struct xshm_tx_op *op = tx_op_of(it);

		next = it->next;
		if (sweep_alive(sweep, op->dest_owner))
			continue;
		xshm_av_retire(ep->av, op->dest, op->dest_owner);
		fail(ep, op, FI_EIO);
	}
}

/*
 * An ack that cannot be pushed holds back the acks behind it: a dead
 * sender's region is retired, and push_ack then drops what it was owed.
 */
static void sweep_acks(struct xshm_ep *ep, struct sweep *sweep)
{
	uint64_t ep_id = xshm_ack_blocked_sender(ep);
	struct xshm_owner owner;

	if (!ep_id)
		return;
	owner = xshm_peer_owner(&ep->domain->peers, ep_id);
	if (!sweep_alive(sweep, owner))
		xshm_peer_retire(&ep->domain->peers, ep_id, owner);
}

static void sweep(struct xshm_ep *ep)
{
	struct sweep memo = { .count = 0, .ep = ep, .source_count = 0,
			      .sources_failed = false };

	sweep_directed(ep, &memo);
	sweep_rx(ep, &memo);
	sweep_tx(ep, &memo, &ep->tx_queue, xshm_tx_queue_fail);
	sweep_tx(ep, &memo, &ep->tx_wait_ack, xshm_ack_wait_fail);
	sweep_acks(ep, &memo);
	retire_dead_sources(ep, &memo);
}

void xshm_liveness_progress(struct xshm_ep *ep, bool idle)
{
	uint64_t now;

	if (!xshm_ep_waits_on_peers(ep) && !xshm_ep_rx_directed(ep))
		return;
	if (!idle && ++ep->progress_calls % CHECK_EVERY)
		return;
	now = coarse_ms();
	if (now < ep->next_sweep_ms)
		return;
	ep->next_sweep_ms = now + (uint64_t) xshm_params.liveness_ms;
	sweep(ep);
}

bool xshm_liveness_peer_dead(struct xshm_ep *ep, struct xshm_peer *peer)
{
	uint64_t now = coarse_ms();

	if (now < peer->next_check_ms)
		return false;
	peer->next_check_ms = now + (uint64_t) xshm_params.liveness_ms;
	if (xshm_owner_alive(peer->owner))
		return false;
	xshm_region_retire(&peer->region, peer->owner);
	return true;
}

int xshm_liveness_sleep_ms(const struct xshm_ep *ep)
{
	if (!ep->enabled)
		return -1;
	if (!xshm_dlist_empty(&ep->tx_queue) ||
	    !xshm_dlist_empty(&ep->tx_wait_ack) ||
	    !xshm_dlist_empty(&ep->acks_out) || rx_waits(ep) ||
	    xshm_ep_rx_directed(ep))
		return xshm_params.liveness_ms;
	return -1;
}

int xshm_liveness_gone_err(struct xshm_owner owner)
{
	return xshm_owner_alive(owner) ? FI_EHOSTUNREACH : FI_EIO;
}
