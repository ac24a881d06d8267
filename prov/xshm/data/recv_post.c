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
