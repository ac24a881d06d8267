/*
 * Which way an RMA operation goes (FI_XSHM_RMA_FAST), and whether a write
 * may be posted: pushed into the target's ring, in its cell or a bounce
 * buffer, without XSHM_CMD_ACK and completed once there, the completion
 * level of a small send
 * (FI_TRANSMIT_COMPLETE), after its initiator checked key, access and range
 * against the registrations the target publishes (shm/mr_pub.h).  The
 * target checks it again as it applies it, and drops one that fails then
 * (its registration closed meanwhile): fi_mr(3) leaves an operation in
 * flight across a deregistration to the application.
 */
#include <errno.h>

#include "data/rma.h"
#include "base/params.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "shm/layout.h"
#include "shm/mr_pub.h"
#include "shm/pool.h"
#include "shm/region.h"

/*
 * auto: a system call per operation (CMA) costs more than the ring's
 * copies for small operations.  Measured on a 2-core machine, the target
 * busy-polling its CQ (test/bench/rma), ring (acked) against CMA: write
 * latency 0.23-0.27 / 0.42 us at 8 B, 0.44-0.59 / 0.43 at 512 B; Mops/s
 * streaming writes 3.6 / 2.3 at 8 B, 2.1 / 2.3 at 512 B, reads 5.0 / 2.3,
 * 4.4 / 2.3.  So what fits one cell takes the ring, where writes need not
 * wait for an ack.  Larger ones take the way measured cheaper
 * (rma_path.c): the ring, where writes are posted through bounce buffers
 * if they may (xshm_rma_posted_check), or the single copy.  Unmeasured
 * (FI_XSHM_PATH=static, no single copy, a fence), writes up to
 * rma_posted_max take the ring, the rest the single copy.  A larger
 * fenced operation goes to the target: a write posted before it may still
 * wait in the ring, and only the ring keeps the fence behind it.
 */
enum xshm_rma_way xshm_rma_way_of(struct xshm_ep *ep,
				  const struct xshm_peer *peer,
				  const struct xshm_rma_desc *op,
				  struct xshm_rma_timing *timing)
{
	timing->cls = NULL;
	switch (xshm_params.rma_fast) {
	case XSHM_RMA_FAST_OFF:
		return XSHM_RMA_VIA_TARGET;
	case XSHM_RMA_FAST_ON:
		return XSHM_RMA_VIA_CMA;
	default:
		if (op->total <= XSHM_RMA_INLINE_MAX)
			return XSHM_RMA_VIA_RING;
		if (!(op->flags & FI_FENCE) &&
		    xshm_rma_path_pick(ep, peer, op, timing))
			return timing->path == XSHM_PATH_BOUNCE ?
			       XSHM_RMA_VIA_RING : XSHM_RMA_VIA_CMA;
		/* nothing measured: by size, as FI_XSHM_PATH=static says */
		if (op->write && op->total <= xshm_params.rma_posted_max)
			return XSHM_RMA_VIA_RING;
		return (op->flags & FI_FENCE) ? XSHM_RMA_VIA_TARGET :
						XSHM_RMA_VIA_CMA;
	}
}

/* The largest write posted: what one cell holds, or rma_posted_max. */
static size_t xshm_posted_max(void)
{
	return xshm_params.rma_posted_max > XSHM_RMA_INLINE_MAX ?
	       xshm_params.rma_posted_max : XSHM_RMA_INLINE_MAX;
}

/* Levels past transmit complete wait for the target's ack (fi_cq(3)). */
#define ACKED_LEVELS	(FI_DELIVERY_COMPLETE | FI_COMMIT_COMPLETE)

/*
 * What rules posting out before the key is looked up.  Remote CQ data
 * (fi_writedata) keeps its ack: the target's CQ entry then never comes
 * after the initiator's.
 */
static bool may_post(const struct xshm_ep *ep, const struct xshm_peer *peer,
		     uint64_t flags, uint32_t role)
{
	const struct xshm_mr_pub *pub = peer->region.mr_pub;

	if (!pub || (flags & FI_REMOTE_CQ_DATA) ||
	    ((flags | ep->tx_op_flags) & ACKED_LEVELS))
		return false;
	/* ACQUIRE: pairs with the release that publishes the roles. */
	return (atomic_load_explicit(&pub->serves, memory_order_acquire) &
		role) && xshm_region_is_open(&peer->region);
}

/*
 * A write larger than a cell is posted through the target's bounce
 * buffers only while half of its pool is free, and holds all of it: it
 * then completes at once, and a target that does not progress soon gets
 * the single copy, which needs nothing of it.
 */
bool xshm_rma_buffers_free(const struct xshm_peer *peer, size_t total)
{
	const struct xshm_pool_ref *pool = &peer->region.pool;
	uint32_t free_bufs;

	if (total <= XSHM_RMA_INLINE_MAX)
		return true;
	free_bufs = xshm_pool_free_count(pool);
	return free_bufs >= pool->nbufs / 2 &&
	       (uint64_t) free_bufs * pool->buf_size >= total;
}

/* The initiator's check of a write of len bytes at addr of key. */
static int check_posted(struct xshm_peer *peer, uint64_t key,
			uint64_t addr, size_t len)
{
	struct xshm_mr_pub *pub = peer->region.mr_pub;
	int ret = xshm_mr_pub_check_seen(pub, &peer->region.mr_seen, key, addr,
					 len, XSHM_MR_PUB_WRITE);

	/* Every registration is published: the key is none. */
	if (ret == -ENOENT &&
	    !atomic_load_explicit(&pub->unpublished, memory_order_seq_cst))
		return -FI_EINVAL;
	if (ret == -EACCES)
		return -FI_EACCES;
	return !ret;
}

int xshm_rma_posted_check(struct xshm_ep *ep, struct xshm_peer *peer,
			  const struct xshm_rma_desc *op)
{
	if (!op->write || op->total > xshm_posted_max() ||
	    !may_post(ep, peer, op->flags, XSHM_MR_PUB_WRITE) ||
	    !xshm_rma_buffers_free(peer, op->total))
		return 0;
	return check_posted(peer, op->key, op->addr, op->total);
}

/*
 * An atomic that fetches nothing is posted as a small write is: checked
 * here for FI_REMOTE_WRITE, which is all it needs at the target, pushed
 * unacked, completed once in the ring, applied by the target as any other.
 */
int xshm_atomic_posted_check(const struct xshm_ep *ep,
			     struct xshm_peer *peer, uint64_t key,
			     uint64_t addr, size_t len, uint64_t flags)
{
	if (xshm_params.rma_fast != XSHM_RMA_FAST_AUTO ||
	    !may_post(ep, peer, flags, XSHM_MR_PUB_ATOMIC))
		return 0;
	return check_posted(peer, key, addr, len);
}
