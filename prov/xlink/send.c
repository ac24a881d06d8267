/* The general form of every send (send.h). */
#include "deadline.h"
#include "send.h"

static bool unreachable(struct xlink_ep *ep, fi_addr_t src)
{
	struct xlink_av_entry *entry = xlink_av_entry(ep->av, src);

	return entry && entry->unreachable;
}

/*
 * rxm 1.17 reports nothing when the process behind a connection dies: the
 * sends to it find no room, forever.  So a remote endpoint to which sends
 * have found no room for stall_ms is taken as gone; its receives fail too.
 */
ssize_t xlink_send_stalled(struct xlink_ep *ep, struct xlink_av_entry *entry,
			   ssize_t ret)
{
	uint64_t now;

	if (ret != -FI_EAGAIN) {
		entry->stalled_ms = 0;
		return ret;
	}
	if (xlink_params.stall_ms <= 0)
		return ret;
	now = xlink_coarse_ms();
	if (!entry->stalled_ms) {
		entry->stalled_ms = now;
		return ret;
	}
	if (now - entry->stalled_ms < (uint64_t) xlink_params.stall_ms)
		return ret;
	FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "a remote endpoint took no message for %d ms: "
		"unreachable\n", xlink_params.stall_ms);
	entry->unreachable = true;
	xlink_srx_fail_directed(ep, unreachable, FI_EHOSTUNREACH);
	return -FI_EHOSTUNREACH;
}

struct xlink_av_entry *xlink_send_route(struct xlink_ep *ep, fi_addr_t dest)
{
	if (!ep->enabled || !ep->av)
		return NULL;
	return xlink_av_entry(ep->av, dest);
}

static ssize_t peer_sendmsg(struct xlink_ep *ep, bool tagged, const struct iovec *iov,
			    size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
			    uint64_t flags, void *context)
{
	if (tagged) {
		struct fi_msg_tagged msg = {
			.msg_iov = iov, .iov_count = count, .addr = dest,
			.tag = tag, .context = context, .data = data,
		};

		return fi_tsendmsg(ep->peer_ep, &msg, flags);
	} else {
		struct fi_msg msg = {
			.msg_iov = iov, .iov_count = count, .addr = dest,
			.context = context, .data = data,
		};

		return fi_sendmsg(ep->peer_ep, &msg, flags);
	}
}

ssize_t xlink_send(struct xlink_ep *ep, bool tagged, const struct iovec *iov,
		   void **desc, size_t count, fi_addr_t dest, uint64_t tag,
		   uint64_t data, uint64_t flags, bool report, void *context)
{
	struct xlink_av_entry *entry;
	ssize_t ret;

	if (count > XLINK_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
	xlink_domain_lock(ep->domain);
	entry = xlink_send_route(ep, dest);
	if (!entry)
		ret = ep->enabled ? -FI_EINVAL : -FI_EOPBADSTATE;
	else if (entry->local)
		ret = peer_sendmsg(ep, tagged, iov, count, entry->peer_addr, tag, data,
				   flags, context);
	else if (entry->unreachable)
		ret = -FI_EHOSTUNREACH;
	else
		ret = xlink_send_stalled(ep, entry,
					 xlink_net_send(ep, entry->net_addr, tagged, iov,
							count, tag, data, flags, report,
							context));
	return xlink_send_done(ep, ret);
}
