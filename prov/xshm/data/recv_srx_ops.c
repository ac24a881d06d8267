/*
 * What an SRX, the endpoint's own or an owner's, calls back on the receive
 * path (fi_ops_srx_peer): the owner matched (start) or dropped (discard) a
 * message held unexpected.  At endpoint close, messages still arriving are
 * dropped and held ones orphaned.  The views of an owner's SRX (struct
 * xshm_srx_view) live here, as long as the orphans that reach xshm
 * through them.
 */
#include <stdlib.h>

#include "base/list.h"
#include "data/recv.h"
#include "data/recv_int.h"
#include "objects/ep.h"

struct xshm_srx_view *xshm_srx_view_new(const struct fid_peer_srx *owner)
{
	struct xshm_srx_view *view = calloc(1, sizeof(*view));

	if (!view)
		return NULL;
	view->peer_ops = xshm_srx_peer_ops;
	view->srx.ep_fid.fid.fclass = owner->ep_fid.fid.fclass;
	view->srx.ep_fid.fid.context = owner->ep_fid.fid.context;
	view->srx.owner_ops = owner->owner_ops;
	view->srx.peer_ops = &view->peer_ops;
	atomic_store(&view->ref, 1);
	return view;
}

void xshm_srx_view_hold(struct xshm_srx_view *view)
{
	atomic_fetch_add(&view->ref, 1);
}

void xshm_srx_view_release(struct xshm_srx_view *view)
{
	if (view && atomic_fetch_sub(&view->ref, 1) == 1)
		free(view);
}

/* Peer SRX ops: the owner matched (start) or dropped (discard) a held message. */

/*
 * A message held by an owner's SRX after its endpoint closed has nowhere to
 * be reported: it is released without a completion, and with it the view
 * (import.c) its entry names, which the owner reached it through.
 */
static bool release_orphan(struct xshm_rx_msg *msg,
			   struct fi_peer_rx_entry *entry, bool discarding)
{
	struct xshm_srx_view *view = msg->orphan_view;

	if (msg->ep)
		return false;
	if (!discarding || !msg->owner_frees_discarded)
		entry->srx->owner_ops->free_entry(entry);
	xshm_rx_free_msg(msg);
	xshm_srx_view_release(view);
	return true;
}

static int xshm_rx_start(struct fi_peer_rx_entry *entry)
{
	struct xshm_rx_msg *msg = entry->peer_context;
	uint64_t start;

	if (release_orphan(msg, entry, false))
		return 0;
	xshm_rx_unexp_release(msg);
	msg->entry = entry;
	start = timed_now(msg->cmd_flags);
	if (msg->staging)
		copy_to_entry(entry, 0, msg->staging, msg->received);
	msg->busy_ns += timed_now(msg->cmd_flags) - start;
	msg->ready_ns = start;		/* posted after it came; 0 untimed */
	free(msg->staging);
	msg->staging = NULL;
	msg->started = true;
	if (msg->received == msg->size)
		xshm_rx_finish_arrival(msg);
	return 0;
}

/*
 * The entry is not touched once this returns if the owner frees it then
 * (msg->owner_frees_discarded).
 */
static int xshm_rx_discard(struct fi_peer_rx_entry *entry)
{
	struct xshm_rx_msg *msg = entry->peer_context;

	if (release_orphan(msg, entry, true))
		return 0;
	xshm_rx_unexp_release(msg);
	free(msg->staging);
	msg->staging = NULL;
	msg->discarded = true;
	if (msg->received == msg->size)
		xshm_rx_finish_arrival(msg);
	return 0;
}

const struct fi_ops_srx_peer xshm_srx_peer_ops = {
	.size = sizeof(struct fi_ops_srx_peer),
	.start_msg = xshm_rx_start,
	.start_tag = xshm_rx_start,
	.discard_msg = xshm_rx_discard,
	.discard_tag = xshm_rx_discard,
};

/*
 * Endpoint close: messages still arriving are dropped with their entries.
 * One still queued in an SRX (an owner's, or our own about to be destroyed)
 * becomes an orphan, released when that SRX starts or discards it.
 */
void xshm_rx_abort_all(struct xshm_ep *ep)
{
	while (!xshm_dlist_empty(&ep->rx_active)) {
		struct xshm_rx_msg *msg = xshm_container_of(ep->rx_active.next,
						struct xshm_rx_msg, link);

		if (msg->entry && !msg->started && !msg->discarded) {
			xshm_dlist_remove(&msg->link);
			msg->ep = NULL;
			msg->orphan_view = ep->srx_view;
			if (ep->srx_view)
				xshm_srx_view_hold(ep->srx_view);
			continue;
		}
		if (msg->entry &&
		    !(msg->discarded && msg->owner_frees_discarded))
			msg->entry->srx->owner_ops->free_entry(msg->entry);
		xshm_rx_free_msg(msg);
	}
}
