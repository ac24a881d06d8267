/* Posting a receive (fi_recv, fi_trecv and their variants) to the own SRX. */
#include "av/av.h"
#include "base/iov.h"
#include "base/lock.h"
#include "data/progress.h"
#include "data/recv.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "srx/srx.h"

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

/*
 * Whether a receive of one buffer goes straight to the queue: no special
 * flag, no source to resolve, no held message it could meet.  Under the
 * domain's lock.
 */
static bool queues_at_once(const struct xshm_ep *ep, bool tagged,
			   const void *buf, size_t len, fi_addr_t src,
			   uint64_t flags)
{
	return ep->enabled && ep->own_srx &&
	       !(flags & (FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MULTI_RECV)) &&
	       (buf || !len) &&
	       (src == FI_ADDR_UNSPEC || !(ep->caps & FI_DIRECTED_RECV)) &&
	       !xshm_srx_holds(ep->own_srx, tagged);
}

/*
 * fi_recv and fi_trecv.  Between two messages of a ping-pong or a stream
 * the application posts the next receive: the common case is queued here
 * without the general path's argument checks and layers, the rest goes
 * through xshm_recv.
 */
ssize_t xshm_recv_one(struct xshm_ep *ep, bool tagged, void *buf, size_t len,
		      void *desc, fi_addr_t src, uint64_t tag, uint64_t ignore,
		      void *context, uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t ret;

	xshm_lock_acquire(&ep->domain->lock);
	if (queues_at_once(ep, tagged, buf, len, src, flags)) {
		struct xshm_recv_args recv = {
			.tagged = tagged, .iov = &iov, .desc = &desc, .count = 1,
			.src = FI_ADDR_UNSPEC, .tag = tag, .ignore = ignore,
			.context = context, .flags = xshm_rx_flags(ep, flags),
		};

		ret = xshm_srx_post_new(ep->own_srx, &recv);
		xshm_lock_release(&ep->domain->lock);
		return ret;
	}
	xshm_lock_release(&ep->domain->lock);
	return xshm_recv(ep, tagged, &iov, &desc, 1, src, tag, ignore, context,
			 flags);
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
