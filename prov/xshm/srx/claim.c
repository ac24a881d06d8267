/*
 * Receives that do not simply wait for a message (fi_tagged(3), fi_msg(3)):
 * FI_PEEK, FI_CLAIM and FI_DISCARD on held messages, and fi_cancel of
 * posted receives.  They act on the SRX's queues and report through the
 * endpoint that posted them.
 */
#include <stdlib.h>

#include "base/list.h"
#include "objects/ep.h"
#include "report/comp.h"
#include "srx/srx.h"

static uint64_t recv_flags(const struct xshm_recv_args *recv)
{
	return FI_RECV | (recv->tagged ? FI_TAGGED : FI_MSG);
}

static void report_no_message(struct xshm_ep *ep,
			      const struct xshm_recv_args *recv)
{
	struct fi_cq_err_entry err = {
		.op_context = recv->context,
		.flags = recv_flags(recv),
		.tag = recv->tag,
		.err = FI_ENOMSG,
		.prov_errno = FI_ENOMSG,
	};

	xshm_report_rx_err(ep, &err);
}

static void report_peeked(struct xshm_ep *ep, const struct xshm_recv_args *recv,
			  const struct fi_peer_rx_entry *msg)
{
	uint64_t flags = recv_flags(recv) | (msg->flags & FI_REMOTE_CQ_DATA);

	xshm_report_rx(ep, recv->context, flags, msg->size, NULL,
		       (flags & FI_REMOTE_CQ_DATA) ? msg->cq_data : 0,
		       recv->tagged ? msg->tag : 0, msg->addr, true);
}

/*
 * FI_PEEK: report the first matching held message, leave it queued, and
 * with FI_CLAIM reserve it for a later FI_CLAIM receive that passes the same
 * struct fi_context, or with FI_DISCARD drop it.
 */
ssize_t xshm_srx_peek(struct xshm_srx *srx, struct xshm_ep *ep,
		      const struct xshm_recv_args *recv)
{
	struct fi_context *claim = recv->context;
	struct xshm_rx_entry *entry;

	if ((recv->flags & FI_CLAIM) && !claim)
		return -FI_EINVAL;
	entry = xshm_srx_find_unexpected(srx, recv);
	if (!entry) {
		report_no_message(ep, recv);
		return 0;
	}
	report_peeked(ep, recv, &entry->peer);
	if (recv->flags & FI_CLAIM) {
		xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
		xshm_dlist_append(&srx->claimed, (struct xshm_dlist *) &entry->peer);
		claim->internal[0] = entry;
	} else if (recv->flags & FI_DISCARD) {
		xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
		xshm_srx_discard(srx, entry);
	}
	return 0;
}

/*
 * The claimed message named by the context, checked against the claimed
 * list rather than trusted: the context may be reused or never peeked.
 */
static struct xshm_rx_entry *claimed_by(struct xshm_srx *srx,
					const struct fi_context *claim)
{
	struct xshm_dlist *it;

	if (!claim)
		return NULL;
	xshm_dlist_foreach(&srx->claimed, it)
		if ((void *) it == claim->internal[0])
			return (struct xshm_rx_entry *) it;
	return NULL;
}

/* FI_CLAIM: receive (or with FI_DISCARD drop) a message claimed by a peek. */
ssize_t xshm_srx_claim(struct xshm_srx *srx, struct xshm_ep *ep,
		       const struct xshm_recv_args *recv)
{
	struct fi_context *claim = recv->context;
	struct xshm_rx_entry *entry = claimed_by(srx, claim);

	if (!entry)
		return -FI_EINVAL;
	xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
	claim->internal[0] = NULL;
	if (recv->flags & FI_DISCARD) {
		xshm_report_rx(ep, recv->context, recv_flags(recv), 0, NULL, 0,
			       recv->tagged ? entry->peer.tag : 0,
			       entry->peer.addr, true);
		return xshm_srx_discard(srx, entry);
	}
	xshm_srx_set_buffers(entry, recv);
	return xshm_srx_start(srx, entry);
}

static struct xshm_rx_entry *posted_with(struct xshm_dlist *list, void *context)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		if (entry->peer.context == context)
			return entry;
	}
	return NULL;
}

/* fi_cancel of a posted receive: an FI_ECANCELED error completion. */
int xshm_srx_cancel(struct xshm_srx *srx, struct xshm_ep *ep, void *context)
{
	struct xshm_rx_entry *entry = posted_with(&srx->posted_msg, context);

	if (!entry)
		entry = posted_with(&srx->posted_tag, context);
	if (!entry)
		return -FI_ENOENT;
	xshm_srx_fail_posted(srx, ep, entry, FI_ECANCELED);
	return 0;
}
