/*
 * The receive queue of an endpoint (srx.h): matching, the application's
 * posts, peeks, claims and cancels, and the owner side of the peer API.
 */
#include <stdlib.h>
#include <string.h>

#include "cntr.h"
#include "cq.h"
#include "ep.h"
#include "srx.h"

#define TAG_MASK_ALL	(~(uint64_t) 0)

/* ---- queues and matching ---- */

static void queue_append(struct xlink_queue *q, struct xlink_rx *rx)
{
	rx->next = NULL;
	if (q->tail)
		q->tail->next = rx;
	else
		q->head = rx;
	q->tail = rx;
}

/* Unlinks and returns the first rx for which match(rx, arg) holds. */
static struct xlink_rx *queue_take(struct xlink_queue *q,
				   bool (*match)(const struct xlink_rx *, const void *),
				   const void *arg)
{
	struct xlink_rx *prev = NULL;

	for (struct xlink_rx *rx = q->head; rx; prev = rx, rx = rx->next) {
		if (!match(rx, arg))
			continue;
		if (prev)
			prev->next = rx->next;
		else
			q->head = rx->next;
		if (q->tail == rx)
			q->tail = prev;
		rx->next = NULL;
		return rx;
	}
	return NULL;
}

static struct xlink_rx *queue_find(struct xlink_queue *q,
				   bool (*match)(const struct xlink_rx *, const void *),
				   const void *arg)
{
	for (struct xlink_rx *rx = q->head; rx; rx = rx->next)
		if (match(rx, arg))
			return rx;
	return NULL;
}

/* What a receive asks for, or what a message carries. */
struct match_key {
	fi_addr_t addr;
	uint64_t tag;
	uint64_t ignore;
	void *context;
};

static bool tags_match(uint64_t want, uint64_t ignore, uint64_t tag)
{
	return !((want ^ tag) & ~ignore);
}

/* A posted receive against a message's source and tag. */
static bool posted_takes(const struct xlink_rx *posted, const void *arg)
{
	const struct match_key *msg = arg;

	if (posted->entry.addr != FI_ADDR_UNSPEC && posted->entry.addr != msg->addr)
		return false;
	return !posted->tagged ||
	       tags_match(posted->entry.tag, posted->ignore, msg->tag);
}

/* A queued message against a receive's source, tag and ignore bits. */
static bool message_fits(const struct xlink_rx *msg, const void *arg)
{
	const struct match_key *want = arg;

	if (want->addr != FI_ADDR_UNSPEC && want->addr != msg->entry.addr)
		return false;
	return !msg->tagged || tags_match(want->tag, want->ignore, msg->entry.tag);
}

static bool has_context(const struct xlink_rx *rx, const void *arg)
{
	return rx->entry.context == ((const struct match_key *) arg)->context;
}

/* ---- completions ---- */

/*
 * fi_cq(3): "Source address data is only available for those endpoints
 * configured with FI_SOURCE capability"; otherwise it reads FI_ADDR_NOTAVAIL.
 */
static fi_addr_t reported_src(const struct xlink_ep *ep, fi_addr_t src)
{
	return ep->caps & FI_SOURCE ? src : FI_ADDR_NOTAVAIL;
}

void xlink_rx_complete(struct xlink_ep *ep, struct xlink_rx *posted, size_t len,
		       uint64_t flags, uint64_t data, uint64_t tag, fi_addr_t src)
{
	if (xlink_rx_wants_comp(ep, posted->entry.flags))
		xlink_cq_write(ep->rx_cq, posted->entry.context, flags, len, NULL,
			       data, tag, reported_src(ep, src));
	if (ep->rx_cntr)
		xlink_cntr_inc(ep->rx_cntr);
	free(posted->bounce);
	free(posted);
}

/* An error completion, which no counter counts (a peek's FI_ENOMSG). */
static void write_rx_error_only(struct xlink_ep *ep, void *context, int err, size_t len,
				size_t olen, uint64_t flags, uint64_t data, uint64_t tag)
{
	struct fi_cq_err_entry e = {
		.op_context = context,
		.flags = flags,
		.len = len,
		.data = data,
		.tag = tag,
		.olen = olen,
		.err = err,
		.prov_errno = -err,
	};

	if (ep->rx_cq)
		xlink_cq_write_error(ep->rx_cq, &e);
}

/* A receive that failed: its error completion, and the counter's error. */
static void write_rx_error(struct xlink_ep *ep, void *context, int err, size_t len,
			   size_t olen, uint64_t flags, uint64_t data, uint64_t tag)
{
	write_rx_error_only(ep, context, err, len, olen, flags, data, tag);
	if (ep->rx_cntr)
		xlink_cntr_incerr(ep->rx_cntr);
}

void xlink_rx_fail(struct xlink_ep *ep, struct xlink_rx *posted, int err,
		   size_t len, size_t olen, uint64_t flags, uint64_t data,
		   uint64_t tag)
{
	write_rx_error(ep, posted->entry.context, err, len, olen, flags, data, tag);
	free(posted->bounce);
	free(posted);
}

/* ---- handing messages over ---- */

static struct xlink_rx *rx_new(struct xlink_ep *ep, enum xlink_rx_origin origin,
			       bool tagged)
{
	/* malloc, not calloc: glibc's calloc skips its per-thread cache */
	struct xlink_rx *rx = malloc(sizeof(*rx));

	if (!rx)
		return NULL;
	memset(rx, 0, sizeof(*rx));
	rx->ep = ep;
	rx->origin = origin;
	rx->tagged = tagged;
	rx->entry.iov = rx->iov;
	rx->entry.desc = rx->desc;
	rx->entry.owner_context = rx;
	return rx;
}

/* The peer's start or discard, reached through the srx it gave get_*. */
static int peer_start(struct xlink_rx *msg)
{
	struct fi_ops_srx_peer *ops = msg->entry.srx->peer_ops;

	return msg->tagged ? ops->start_tag(&msg->entry) : ops->start_msg(&msg->entry);
}

static void peer_discard(struct xlink_rx *msg)
{
	struct fi_ops_srx_peer *ops = msg->entry.srx->peer_ops;

	if (msg->tagged)
		ops->discard_tag(&msg->entry);
	else
		ops->discard_msg(&msg->entry);
	/* libfabric's owners free a discarded entry themselves. */
	free(msg);
}

static void discard(struct xlink_ep *ep, struct xlink_rx *msg)
{
	if (msg->origin == XLINK_RX_FROM_PEER)
		peer_discard(msg);
	else
		xlink_net_discard(ep, msg);
}

/* Gives a queued message the buffers of a posted receive, and starts it. */
static void deliver(struct xlink_ep *ep, struct xlink_rx *msg, struct xlink_rx *posted)
{
	int ret;

	if (msg->origin == XLINK_RX_FROM_NET) {
		xlink_net_deliver(ep, msg, posted);
		return;
	}
	memcpy(msg->iov, posted->iov, sizeof(msg->iov));
	memcpy(msg->desc, posted->desc, sizeof(msg->desc));
	msg->entry.count = posted->entry.count;
	msg->entry.context = posted->entry.context;
	msg->entry.flags = posted->entry.flags;
	free(posted);
	ret = peer_start(msg);
	if (ret)
		FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "peer start: %d\n", ret);
}

bool xlink_srx_net_arrived(struct xlink_ep *ep, struct xlink_rx *msg)
{
	struct match_key key = { .addr = msg->entry.addr, .tag = msg->entry.tag };
	struct xlink_rx *posted = queue_take(&ep->srx.posted[msg->tagged],
					     posted_takes, &key);

	if (posted) {
		xlink_net_deliver(ep, msg, posted);
		return false;
	}
	queue_append(&ep->srx.unexpected[msg->tagged], msg);
	return true;
}

/* ---- the application's side ---- */

static void write_peek(struct xlink_ep *ep, const struct xlink_rx *msg, void *context)
{
	uint64_t flags = xlink_rx_op_flags(msg->tagged) |
			 (msg->entry.flags & FI_REMOTE_CQ_DATA);

	if (ep->rx_cq)
		xlink_cq_write(ep->rx_cq, context, flags, msg->entry.size, NULL,
			       msg->entry.cq_data, msg->entry.tag,
			       reported_src(ep, msg->entry.addr));
}

static ssize_t peek(struct xlink_ep *ep, bool tagged, struct match_key *key,
		    void *context, uint64_t flags)
{
	struct xlink_queue *q = &ep->srx.unexpected[tagged];
	struct xlink_rx *msg = queue_find(q, message_fits, key);

	/*
	 * A peek receives nothing: like the one that finds a message, the one
	 * that finds none completes without moving the receive counter (as
	 * libfabric's util_srx does), fi_cntr(3)'s FI_RECV counting "a message
	 * received".
	 */
	if (!msg) {
		write_rx_error_only(ep, context, FI_ENOMSG, 0, 0, xlink_rx_op_flags(tagged),
				    0, key->tag);
		return 0;
	}
	write_peek(ep, msg, context);
	if (flags & (FI_CLAIM | FI_DISCARD))
		queue_take(q, message_fits, key);
	if (flags & FI_DISCARD) {
		discard(ep, msg);
	} else if (flags & FI_CLAIM) {
		msg->entry.context = context;
		queue_append(&ep->srx.claimed, msg);
	}
	return 0;
}

static ssize_t claim(struct xlink_ep *ep, struct xlink_rx *posted, uint64_t flags)
{
	struct match_key key = { .context = posted->entry.context };
	struct xlink_rx *msg = queue_take(&ep->srx.claimed, has_context, &key);

	if (!msg) {
		free(posted);
		return -FI_EINVAL;
	}
	if (flags & FI_DISCARD) {
		uint64_t done = xlink_rx_op_flags(msg->tagged);
		uint64_t tag = msg->entry.tag;

		discard(ep, msg);
		xlink_rx_complete(ep, posted, 0, done, 0, tag, FI_ADDR_NOTAVAIL);
		return 0;
	}
	deliver(ep, msg, posted);
	return 0;
}

static struct xlink_rx *posted_new(struct xlink_ep *ep, bool tagged,
				   const struct iovec *iov, void **desc, size_t count,
				   fi_addr_t src, uint64_t tag, uint64_t ignore,
				   void *context, uint64_t flags)
{
	struct xlink_rx *rx = rx_new(ep, XLINK_RX_POSTED, tagged);

	if (!rx)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		rx->iov[i] = iov[i];
		rx->desc[i] = desc ? desc[i] : NULL;
	}
	rx->entry.count = count;
	rx->entry.addr = src;
	rx->entry.tag = tag;
	rx->ignore = tagged ? ignore : TAG_MASK_ALL;
	rx->entry.context = context;
	rx->entry.flags = xlink_rx_op_flags(tagged);
	if (xlink_rx_wants_comp(ep, flags))
		rx->entry.flags |= FI_COMPLETION;
	return rx;
}

/*
 * A network message that arrived before its sender was inserted into the
 * AV names it once the AV has it, as fi_av(3) has FI_SOURCE report the
 * address inserted.  Checked before the unexpected queue is searched.
 */
static void resolve_net_sources(struct xlink_ep *ep)
{
	if (ep->srx.av_inserts == ep->av->inserts)
		return;
	ep->srx.av_inserts = ep->av->inserts;
	for (int tagged = 0; tagged < 2; tagged++)
		for (struct xlink_rx *rx = ep->srx.unexpected[tagged].head; rx; rx = rx->next)
			if (rx->origin == XLINK_RX_FROM_NET &&
			    rx->entry.addr == FI_ADDR_NOTAVAIL)
				rx->entry.addr = xlink_av_net_source(ep->av, rx->src_key);
}

ssize_t xlink_srx_post(struct xlink_ep *ep, bool tagged, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *context, uint64_t flags)
{
	struct match_key key = { .addr = src, .tag = tag, .ignore = ignore };
	struct xlink_rx *posted, *msg;

	if (!ep->enabled)
		return -FI_EOPBADSTATE;
	if (count > XLINK_IOV_LIMIT || (count && !iov))
		return -FI_EINVAL;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
	if (!(ep->caps & FI_DIRECTED_RECV))
		key.addr = src = FI_ADDR_UNSPEC;
	if (src != FI_ADDR_UNSPEC && !xlink_av_entry(ep->av, src))
		return -FI_EINVAL;
	if (!tagged)
		key.ignore = TAG_MASK_ALL;
	resolve_net_sources(ep);
	if (flags & FI_PEEK)
		return peek(ep, tagged, &key, context, flags);
	posted = posted_new(ep, tagged, iov, desc, count, src, tag, ignore, context,
			    flags);
	if (!posted)
		return -FI_ENOMEM;
	if (flags & FI_CLAIM)
		return claim(ep, posted, flags);
	msg = queue_take(&ep->srx.unexpected[tagged], message_fits, &key);
	if (msg)
		deliver(ep, msg, posted);
	else
		queue_append(&ep->srx.posted[tagged], posted);
	return 0;
}

int xlink_srx_cancel(struct xlink_ep *ep, void *context)
{
	struct match_key key = { .context = context };

	for (int tagged = 0; tagged < 2; tagged++) {
		struct xlink_rx *rx = queue_take(&ep->srx.posted[tagged], has_context,
						 &key);

		if (rx) {
			xlink_rx_fail(ep, rx, FI_ECANCELED, 0, 0, xlink_rx_op_flags(rx->tagged),
				      0, rx->entry.tag);
			return 0;
		}
	}
	return -FI_ENOENT;
}

void xlink_srx_fail_directed(struct xlink_ep *ep,
			     bool (*gone)(struct xlink_ep *ep, fi_addr_t src), int err)
{
	for (int tagged = 0; tagged < 2; tagged++) {
		struct xlink_queue *q = &ep->srx.posted[tagged];
		struct xlink_rx *rx = q->head, *keep = NULL, *keep_tail = NULL;

		q->head = q->tail = NULL;
		while (rx) {
			struct xlink_rx *next = rx->next;

			if (rx->entry.addr != FI_ADDR_UNSPEC && gone(ep, rx->entry.addr)) {
				xlink_rx_fail(ep, rx, err, 0, 0, xlink_rx_op_flags(rx->tagged), 0,
					      rx->entry.tag);
			} else {
				rx->next = NULL;
				if (keep_tail)
					keep_tail->next = rx;
				else
					keep = rx;
				keep_tail = rx;
			}
			rx = next;
		}
		q->head = keep;
		q->tail = keep_tail;
	}
}

bool xlink_srx_has_directed(const struct xlink_ep *ep)
{
	for (int tagged = 0; tagged < 2; tagged++)
		for (struct xlink_rx *rx = ep->srx.posted[tagged].head; rx; rx = rx->next)
			if (rx->entry.addr != FI_ADDR_UNSPEC)
				return true;
	return false;
}

/* ---- the owner side of the peer API ---- */

static struct xlink_ep *srx_ep(struct fid_peer_srx *srx)
{
	return srx ? srx->ep_fid.fid.context : NULL;
}

static int get_entry(struct fid_peer_srx *srx, bool tagged, fi_addr_t addr,
		     size_t size, uint64_t tag, struct fi_peer_rx_entry **entry)
{
	struct xlink_ep *ep = srx_ep(srx);
	struct match_key key = { .addr = addr, .tag = tag };
	struct xlink_rx *rx;

	if (!ep)
		return -FI_EINVAL;
	ep->domain->peer_events++;
	rx = queue_take(&ep->srx.posted[tagged], posted_takes, &key);
	if (!rx) {
		rx = rx_new(ep, XLINK_RX_FROM_PEER, tagged);
		if (!rx)
			return -FI_ENOMEM;
		rx->entry.size = size;
		rx->entry.tag = tag;
	}
	rx->entry.srx = srx;
	rx->entry.addr = addr;
	*entry = &rx->entry;
	return rx->origin == XLINK_RX_POSTED ? 0 : -FI_ENOENT;
}

static int get_msg(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
		   struct fi_peer_rx_entry **entry)
{
	return get_entry(srx, false, addr, size, 0, entry);
}

/*
 * libfabric's headers declare get_tag without the size fi_peer(3) gives it,
 * and its peers (1.22's shm; xshm bound to an owner's own fid_peer_srx)
 * call it so: xlink is such an owner.
 */
static int get_tag(struct fid_peer_srx *srx, fi_addr_t addr, uint64_t tag,
		   struct fi_peer_rx_entry **entry)
{
	return get_entry(srx, true, addr, 0, tag, entry);
}

static int queue_entry(struct fi_peer_rx_entry *entry)
{
	struct xlink_rx *rx = entry->owner_context;

	queue_append(&rx->ep->srx.unexpected[rx->tagged], rx);
	return 0;
}

static void foreach_unspec_addr(struct fid_peer_srx *srx,
				fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
	struct xlink_ep *ep = srx_ep(srx);

	if (!ep)
		return;
	for (int tagged = 0; tagged < 2; tagged++)
		for (struct xlink_rx *rx = ep->srx.unexpected[tagged].head; rx; rx = rx->next)
			if (rx->origin == XLINK_RX_FROM_PEER &&
			    rx->entry.addr == FI_ADDR_NOTAVAIL)
				rx->entry.addr = get_addr(&rx->entry);
}

static void free_entry(struct fi_peer_rx_entry *entry)
{
	free(entry->owner_context);
}

void xlink_srx_init(struct xlink_ep *ep)
{
	struct xlink_srx *srx = &ep->srx;

	memset(srx, 0, sizeof(*srx));
	srx->owner_ops = (struct fi_ops_srx_owner){
		.size = sizeof(struct fi_ops_srx_owner),
		.get_msg = get_msg,
		.get_tag = (int (*)(struct fid_peer_srx *, fi_addr_t, size_t, uint64_t,
				    struct fi_peer_rx_entry **))(void (*)(void)) get_tag,
		.queue_msg = queue_entry,
		.queue_tag = queue_entry,
		.foreach_unspec_addr = foreach_unspec_addr,
		.free_entry = free_entry,
	};
	srx->peer_srx.ep_fid.fid.fclass = FI_CLASS_SRX_CTX;
	srx->peer_srx.ep_fid.fid.context = ep;
	srx->peer_srx.owner_ops = &srx->owner_ops;
	srx->peer_srx.peer_ops = NULL;
}

static void free_queue(struct xlink_queue *q)
{
	while (q->head) {
		struct xlink_rx *rx = q->head;

		q->head = rx->next;
		if (rx->owns_data)
			free(rx->data);
		free(rx->bounce);
		free(rx);
	}
	q->tail = NULL;
}

void xlink_srx_fini(struct xlink_ep *ep)
{
	for (int tagged = 0; tagged < 2; tagged++) {
		free_queue(&ep->srx.posted[tagged]);
		free_queue(&ep->srx.unexpected[tagged]);
	}
	free_queue(&ep->srx.claimed);
}
