/*
 * Sends: each goes to the peer endpoint or the network by the destination's
 * AV entry.  The peer gets the application's context, so its completions
 * land in xlink's CQ as they are.
 */
#ifndef XLINK_SEND_H
#define XLINK_SEND_H

#include "ep.h"

/*
 * Every send of fi_msg(3) and fi_tagged(3), in its general form.  The
 * inject calls have no completion (report false); a send with FI_INJECT
 * among its flags has one.
 */
ssize_t xlink_send(struct xlink_ep *ep, bool tagged, const struct iovec *iov,
		   void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		   uint64_t data, uint64_t flags, bool report, void *context);

/* The destination's entry for a send, or NULL (-FI_EINVAL to the caller). */
struct xlink_av_entry *xlink_send_route(struct xlink_ep *ep, fi_addr_t dest);

/* What a network send's return means for its destination (send.c). */
ssize_t xlink_send_stalled(struct xlink_ep *ep, struct xlink_av_entry *entry,
			   ssize_t ret);

/* After a send that found no room: progress, so the next try may succeed. */
static inline ssize_t xlink_send_done(struct xlink_ep *ep, ssize_t ret)
{
	if (ret == -FI_EAGAIN)
		xlink_ep_progress(ep);
	xlink_domain_unlock(ep->domain);
	return ret;
}

#endif
