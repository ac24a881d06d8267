/*
 * Initiator-driven RMA: where the target's endpoint publishes the
 * registration (objects/mr_pub.c, shm/mr_pub.h), the initiator checks key,
 * access and range itself, pins the entry, copies straight into or out of
 * the target's memory with its single-copy engine (CMA) and completes at
 * once; the target takes no part.  Otherwise (not chosen, rma_way.c; no
 * engine, remote CQ data, remote counters to count, operations queued
 * before it, a fence still holding, an unpublished registration, no free
 * holder slot) the operation goes the target-driven way (rma_send.c).
 *
 * Ordering: xshm promises FI_ORDER_SAS only (objects/attr.c), so an
 * operation may pass RMA still waiting for its ack.  It never passes one
 * still queued, and a fenced one goes this way only when nothing before it
 * is outstanding, so fences hold (posted writes, which complete before
 * their target applies them, keep fenced operations in the ring:
 * rma_way.c).
 */
#include <errno.h>

#include "data/rma.h"
#include "base/list.h"
#include "data/liveness.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "report/comp.h"
#include "shm/mr_pub.h"
#include "shm/region.h"

/* What rules the fast path out before looking the key up. */
static bool may_go_fast(const struct xshm_ep *ep,
			const struct xshm_peer *peer, uint32_t role,
			uint64_t flags)
{
	const struct xshm_mr_pub *pub = peer->region.mr_pub;

	if (!ep->scopy || !pub || peer->owner.pid <= 0 ||
	    (flags & FI_REMOTE_CQ_DATA))
		return false;
	if (!xshm_dlist_empty(&ep->rma_queue))
		return false;
	if ((flags & FI_FENCE) && (!xshm_dlist_empty(&ep->tx_wait_ack) ||
				   !xshm_dlist_empty(&ep->tx_queue)))
		return false;
	/* ACQUIRE: pairs with the release that publishes the roles. */
	if (!(atomic_load_explicit(&pub->serves, memory_order_acquire) & role))
		return false;
	return !atomic_load_explicit(&pub->events, memory_order_relaxed) &&
	       xshm_region_is_open(&peer->region);
}

void xshm_rma_complete_now(struct xshm_ep *ep, const struct xshm_rma_desc *op,
			   int err)
{
	uint64_t comp_flags = FI_RMA | (op->write ? FI_WRITE : FI_READ);

	if (!err) {
		xshm_report_tx(ep, op->context, comp_flags,
			       op->flags & FI_COMPLETION);
		return;
	}
	xshm_report_tx_err(ep, &(struct fi_cq_err_entry) {
		.op_context = op->context, .flags = comp_flags,
		.err = err, .prov_errno = err,
	});
}

/* The copy under pin; 0 or the error the target-driven path reports. */
static int copy(struct xshm_ep *ep, struct xshm_peer *peer,
		const struct xshm_rma_desc *op, const struct xshm_mr_pin *pin)
{
	struct iovec remote = {
		.iov_base = (void *) (uintptr_t) pin->local,
		.iov_len = op->total,
	};
	int ret;

	if (!op->total)
		return 0;
	if (xshm_rma_split_wanted(op))
		ret = xshm_rma_split_copy(ep, peer, op, &remote);
	else if (op->write)
		ret = ep->scopy->push(peer->owner.pid, op->iov, op->count,
				      &remote, 1, 0, op->total);
	else
		ret = ep->scopy->pull(peer->owner.pid, op->iov, op->count,
				      &remote, 1, 0, op->total);
	if (ret == -ESRCH)
		return xshm_liveness_gone_err(peer->owner);
	return ret ? FI_EIO : 0;
}

/* The fast path proper: false, the timing untouched, when it refuses. */
static bool fast_try(struct xshm_ep *ep, struct xshm_peer *peer,
		     const struct xshm_rma_desc *op,
		     struct xshm_rma_timing *timing)
{
	uint32_t role = op->write ? XSHM_MR_PUB_WRITE : XSHM_MR_PUB_READ;
	struct xshm_mr_pub *pub = peer->region.mr_pub;
	struct xshm_mr_pin pin;
	uint64_t began_ns;
	int ret;

	if (!may_go_fast(ep, peer, role, op->flags))
		return false;
	ret = xshm_mr_pub_pin(pub, op->key, op->addr, op->total, role, &pin);
	if (ret == -ENOENT &&
	    !atomic_load_explicit(&pub->unpublished, memory_order_seq_cst)) {
		/* Every registration is published: the key is none. */
		xshm_rma_path_forget(ep, timing);
		xshm_rma_complete_now(ep, op, FI_EINVAL);
		return true;
	}
	if (ret == -EACCES) {
		xshm_rma_path_forget(ep, timing);
		xshm_rma_complete_now(ep, op, FI_EACCES);
		return true;
	}
	if (ret)
		return false;
	if (pin.events) {
		xshm_mr_pub_unpin(&pin);
		return false;
	}
	began_ns = xshm_rma_copy_begin(ep);
	ret = copy(ep, peer, op, &pin);
	xshm_rma_copy_end(ep, began_ns);
	xshm_mr_pub_unpin(&pin);
	xshm_rma_path_done(ep, timing, !ret);
	xshm_rma_complete_now(ep, op, ret);
	return true;
}

bool xshm_rma_fast_try(struct xshm_ep *ep, struct xshm_peer *peer,
		       const struct xshm_rma_desc *op,
		       struct xshm_rma_timing *timing)
{
	if (fast_try(ep, peer, op, timing))
		return true;
	/* the target's way: not the single copy measured */
	xshm_rma_path_forget(ep, timing);
	return false;
}
