/*
 * fi_recv and fi_trecv of one buffer, inline in their calls (objects/msg.c,
 * objects/tagged.c): a stream's receiver posts a window of them between
 * two windows, on the sender's critical path.
 */
#ifndef XSHM_RECV_ONE_H
#define XSHM_RECV_ONE_H

#include "base/lock.h"
#include "data/recv.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "srx/srx.h"

/*
 * Whether a receive of one buffer goes straight to the queue: no special
 * flag, no source to resolve, no held message it could meet.  Under the
 * domain's lock.
 */
static inline bool xshm_recv_queues_at_once(const struct xshm_ep *ep,
					    bool tagged, const void *buf,
					    size_t len, fi_addr_t src,
					    uint64_t flags)
{
	return ep->enabled && ep->own_srx &&
	       !(flags & (FI_PEEK | FI_CLAIM | FI_DISCARD | FI_MULTI_RECV)) &&
	       (buf || !len) &&
	       (src == FI_ADDR_UNSPEC || !(ep->caps & FI_DIRECTED_RECV)) &&
	       !xshm_srx_holds(ep->own_srx, tagged);
}

/*
 * Between two messages of a ping-pong or a stream the application posts the
 * next receive: the common case is queued here without the general path's
 * argument checks and layers, the rest goes through xshm_recv.
 */
static inline ssize_t xshm_recv_one(struct xshm_ep *ep, bool tagged,
				    void *buf, size_t len, void *desc,
				    fi_addr_t src, uint64_t tag,
				    uint64_t ignore, void *context,
				    uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	ssize_t ret;

	xshm_lock_acquire(&ep->domain->lock);
	if (xshm_recv_queues_at_once(ep, tagged, buf, len, src, flags)) {
		ret = xshm_srx_post_one(ep->own_srx, tagged, buf, len, desc,
					tag, ignore, context,
					xshm_rx_flags(ep, flags));
		xshm_lock_release(&ep->domain->lock);
		return ret;
	}
	xshm_lock_release(&ep->domain->lock);
	return xshm_recv(ep, tagged, &iov, &desc, 1, src, tag, ignore, context,
			 flags);
}

#endif
