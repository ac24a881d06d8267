/*
 * Which way a large RMA operation takes with FI_XSHM_RMA_FAST=auto: through
 * the target's ring (a write posted through its bounce buffers, a read
 * answered in cells), or the initiator's single copy (rma_fast.c).  As for
 * large sends (shm/path_choice.h), no size suits every machine.  On one
 * 2-core guest the single copy won from 8 KiB.  On another, where a
 * process_vm_writev of 8 KiB took 2.1 us against 0.18 for a memcpy, the
 * ring won writes up to 1 MiB (16 KiB: 0.8 us against 3.6) and reads up to
 * 64 KiB.  So the initiator measures both ways, per target, direction and
 * size class, with the estimates, probes and switching rules of sends.
 *
 * The initiator times an operation itself, from when it was posted, or
 * from when the one before it on the same way completed if that is later,
 * to its completion: for a lone one the time it took, in a stream the
 * gap between completions, the stream's pace.  A single copy's time is
 * its copy; a posted write's, its fills and any wait for buffers; a
 * read's, the round trip.  The clock is read only for the timed ones and,
 * while one is in flight, at the completions of its way.
 *
 * A ring operation completes only when its initiator progresses, and an
 * initiator busy with single copies does not: so its time leaves out the
 * initiator's single copies meanwhile, which are the other way's cost.
 * Without that, a benchmark posting blocks of 8 reads of 4 KiB (test/bench/
 * rma -m read_lat) had each ring probe wait for the single copies posted
 * after it, priced the ring at 3 times the single copy that cost 3 times
 * the ring, and chose the single copy in half its runs.
 */
#include "data/rma.h"
#include "base/params.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "shm/clock.h"
#include "shm/layout.h"
#include "shm/region.h"

/* Below this, ways start on the ring; from it, on the single copy. */
#define XSHM_RMA_RING_FIRST	((size_t) 16 << 10)

/* The slot of a target's region; it may hold another target's choices. */
static struct xshm_rma_path_slot *slot_at(struct xshm_ep *ep,
					  uint64_t mapping_id)
{
	return &ep->rma_paths[mapping_id % XSHM_PATH_CHOICES];
}

/* The target's choices; a slot another target held starts afresh. */
static struct xshm_rma_path_slot *slot_of(struct xshm_ep *ep,
					  const struct xshm_region *target)
{
	struct xshm_rma_path_slot *slot = slot_at(ep, target->mapping_id);

	if (slot->mapping_id != target->mapping_id) {
		*slot = (struct xshm_rma_path_slot) {
			.mapping_id = target->mapping_id,
		};
		for (int write = 0; write < 2; write++)
			xshm_path_choice_init(&slot->choice[write],
					      XSHM_RMA_INLINE_MAX,
					      XSHM_RMA_RING_FIRST);
	}
	return slot;
}

/*
 * FI_XSHM_PATH=static chooses by size (rma_way.c); writes above
 * rma_posted_max are never posted: the single copy only.
 */
static bool has_choice(const struct xshm_ep *ep, const struct xshm_peer *peer,
		       const struct xshm_rma_desc *op)
{
	return xshm_params.rma_fast == XSHM_RMA_FAST_AUTO &&
	       xshm_params.path_auto && ep->scopy && peer->owner.pid > 0 &&
	       op->total > XSHM_RMA_INLINE_MAX &&
	       !(op->write && op->total > xshm_params.rma_posted_max);
}

/* Now, with the initiator's single copies so far. */
static struct xshm_path_mark mark_now(const struct xshm_ep *ep)
{
	return (struct xshm_path_mark) { xshm_now_ns(), ep->rma_copies.ns };
}

bool xshm_rma_path_pick(struct xshm_ep *ep, const struct xshm_peer *peer,
			const struct xshm_rma_desc *op,
			struct xshm_rma_timing *timing)
{
	struct xshm_rma_path_slot *slot;
	struct xshm_path_pick pick;

	timing->cls = NULL;
	if (!has_choice(ep, peer, op))
		return false;
	slot = slot_of(ep, &peer->region);
	/* lone classes only: a stream's pace is in its times (see above) */
	timing->cls = xshm_path_class_for(&slot->choice[op->write], false,
					  op->total, XSHM_RMA_INLINE_MAX);
	pick = xshm_path_pick(timing->cls);
	timing->mapping_id = peer->region.mapping_id;
	timing->len = op->total;
	timing->path = pick.path;
	timing->write = op->write;
	timing->start.ns = 0;
	if (pick.timed) {
		timing->start = mark_now(ep);
		slot->pace[op->write][pick.path].timed++;
		if (pick.path == XSHM_PATH_BOUNCE)
			ep->rma_copies.ring_timed++;
	}
	return true;
}

uint64_t xshm_rma_copy_begin(const struct xshm_ep *ep)
{
	return ep->rma_copies.ring_timed ? xshm_now_ns() : 0;
}

void xshm_rma_copy_end(struct xshm_ep *ep, uint64_t began_ns)
{
	if (began_ns)
		ep->rma_copies.ns += xshm_now_ns() - began_ns;
}

void xshm_rma_path_done(struct xshm_ep *ep, struct xshm_rma_timing *timing,
			bool ok)
{
	struct xshm_path_class *cls = timing->cls;
	struct xshm_rma_path_slot *slot;
	struct xshm_rma_pace *pace;
	struct xshm_path_mark now;

	if (!cls)
		return;
	timing->cls = NULL;
	if (timing->start.ns && timing->path == XSHM_PATH_BOUNCE)
		ep->rma_copies.ring_timed--;
	slot = slot_at(ep, timing->mapping_id);
	if (slot->mapping_id != timing->mapping_id)
		return;
	pace = &slot->pace[timing->write][timing->path];
	if (timing->start.ns)
		pace->timed--;
	if (!ok || (!pace->timed && !timing->start.ns))
		return;
	now = mark_now(ep);
	if (timing->start.ns)
		xshm_path_record(cls, timing->path,
				 xshm_path_paced_ns(timing->start, pace->done, now,
						    timing->path ==
						    XSHM_PATH_BOUNCE),
				 timing->len);
	pace->done = now;
}

void xshm_rma_tx_done(struct xshm_ep *ep, struct xshm_tx_op *tx, bool ok)
{
	if (tx->op == XSHM_OP_WRITE || tx->op == XSHM_OP_READ)
		xshm_rma_path_done(ep,
				   &xshm_container_of(tx, struct xshm_rma_op,
						      tx)->timing, ok);
}
