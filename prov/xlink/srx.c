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

/* Unlinks rx, which follows prev (NULL: rx is the head). */
static void queue_unlink_after(struct xlink_queue *q, struct xlink_rx *prev,
			       struct xlink_rx *rx)
{
	if (prev)
		prev->next = rx->next;
	else
		q->head = rx->next;
	if (q->tail == rx)
		q->tail = prev;
	rx->next = NULL;
}

/* The first rx for which match(rx, arg) holds, and in *prev the one before it. */
static struct xlink_rx *queue_search(struct xlink_queue *q,
				     bool (*match)(const struct xlink_rx *, const void *),
				     const void *arg, struct xlink_rx **prev)
{
	*prev = NULL;
	for (struct xlink_rx *rx = q->head; rx; *prev = rx, rx = rx->next)
		if (match(rx, arg))
			return rx;
	return NULL;
}

/* Unlinks and returns the first rx for which match(rx, arg) holds. */
static struct xlink_rx *queue_take(struct xlink_queue *q,
				   bool (*match)(const struct xlink_rx *, const void *),
				   const void *arg)
{
	struct xlink_rx *prev;
	struct xlink_rx *rx = queue_search(q, match, arg, &prev);

	if (rx)
		queue_unlink_after(q, prev, rx);
	return rx;
}

static struct xlink_rx *queue_find(struct xlink_queue *q,
				   bool (*match)(const struct xlink_rx *, const void *),
				   const void *arg)
{
	struct xlink_rx *prev;

	return queue_search(q, match, arg, &prev);
}

static bool is_this(const struct xlink_rx *rx, const void *arg)
{
	return rx == arg;
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

/* ---- multi-receive buffers ---- */

/*
 * A buffer posted with FI_MULTI_RECV stays at its place in the posted
 * queue and gives each message it matches a piece: the next bytes of the
 * buffer, carved at the moment the message matches (get_msg, a network
 * header, a post that finds messages queued), by the size the message
 * announces.  So pieces never overlap and lie in matching order, whichever
 * path fills them and however long each takes: a piece the peer still
 * copies into while a network message matches behind it keeps its bytes.
 * A piece may hold all that is left: a larger message is truncated into
 * it (FI_ETRUNC: len the space left, olen the excess) and uses the buffer
 * up, as xshm does.
 *
 * Once less than min_multi_recv bytes (or none) are left, the buffer
 * leaves the queue (released).  Its pieces may complete in any order (a
 * large network payload after a small message carved behind it), so
 * FI_MULTI_RECV goes on the completion of whichever piece of a released
 * buffer is done last: after it nothing more is written into the buffer,
 * which is fi_cq(3)'s promise.  A cancelled buffer is released with its
 * FI_ECANCELED error, or by its last piece when some are not done.
 *
 * Each completion has the buffer's context and, in buf, the piece's first
 * byte.  The network path's pieces are completed here (xlink_rx_complete,
 * xlink_rx_fail).  The peer completes its own by writing to xlink's CQ:
 * a piece handed to the peer has its own address as context and is listed
 * on the endpoint's receive CQ, which hands the peer's completion of it to
 * xlink_srx_piece_reported.  A piece the peer frees without a completion
 * (it had none to write) is done then (free_entry); if it was the last of
 * a released buffer, a completion of FI_MULTI_RECV alone says so.
 */

static struct xlink_rx *rx_new(struct xlink_ep *ep, enum xlink_rx_origin origin,
			       bool tagged);

static size_t multi_left(const struct xlink_rx *parent)
{
	return parent->iov[0].iov_len - parent->multi_used;
}

/*
 * Makes piece (a new posted receive when NULL) the next piece of parent,
 * for a message of size bytes; releases parent when too little is left.
 */
static struct xlink_rx *carve(struct xlink_ep *ep, struct xlink_rx *parent,
			      size_t size, struct xlink_rx *piece)
{
	size_t left = multi_left(parent);

	if (!piece)
		piece = rx_new(ep, XLINK_RX_POSTED, false);
	if (!piece)
		return NULL;
	piece->parent = parent;
	piece->iov[0] = (struct iovec){
		(char *) parent->iov[0].iov_base + parent->multi_used, left
	};
	piece->desc[0] = parent->desc[0];
	piece->entry.iov = piece->iov;
	piece->entry.desc = piece->desc;
	piece->entry.count = 1;
	piece->entry.size = size;
	piece->entry.context = piece;
	piece->entry.flags = (piece->entry.flags & FI_REMOTE_CQ_DATA) | parent->entry.flags;
	parent->multi_used += size < left ? size : left;
	parent->multi_pending++;
	left = multi_left(parent);
	if (!left || left < ep->srx.min_multi_recv) {
		struct xlink_rx *prev;

		parent->multi_released = true;
		/* Not queued yet when a post fills it with queued messages. */
		if (queue_search(&ep->srx.posted[0], is_this, parent, &prev))
			queue_unlink_after(&ep->srx.posted[0], prev, parent);
	}
	return piece;
}

/* A piece the peer is given: its completion comes back through the CQ. */
static void give_peer(struct xlink_ep *ep, struct xlink_rx *piece)
{
	if (ep->rx_cq)
		xlink_cq_add_piece(ep->rx_cq, piece);
}

/*
 * A piece is done, its completion about to be written or none to come:
 * true when it was the last of a released buffer (FI_MULTI_RECV), whose
 * record is then freed.  *context is the buffer's.
 */
static bool piece_done(struct xlink_rx *piece, void **context)
{
	struct xlink_rx *parent = piece->parent;

	piece->parent = NULL;
	*context = parent->entry.context;
	if (--parent->multi_pending || !parent->multi_released)
		return false;
	xlink_rx_free(parent);
	return true;
}

/* The peer frees a piece it wrote no completion for. */
static void piece_freed(struct xlink_rx *piece)
{
	struct xlink_ep *ep = piece->ep;
	void *context;

	if (ep->rx_cq)
		xlink_cq_drop_piece(ep->rx_cq, piece);
	if (piece_done(piece, &context) && !ep->closing &&
	    xlink_rx_wants_comp(ep, piece->entry.flags))
		xlink_cq_write(ep->rx_cq, context, FI_MULTI_RECV, 0, NULL, 0, 0,
			       FI_ADDR_NOTAVAIL);
}

void xlink_srx_piece_reported(struct xlink_cq *cq, struct xlink_rx *piece,
			      uint64_t flags, size_t len, uint64_t data, uint64_t tag,
			      fi_addr_t src, const struct fi_cq_err_entry *err)
{
	void *buf = piece->iov[0].iov_base;
	void *context;
	uint64_t last = piece_done(piece, &context) ? FI_MULTI_RECV : 0;
	struct fi_cq_err_entry e;

	if (!err) {
		xlink_cq_write(cq, context, flags | last, len, buf, data, tag, src);
		return;
	}
	e = *err;
	e.op_context = context;
	e.flags |= last;
	if (!e.buf)
		e.buf = buf;
	xlink_cq_write_error(cq, &e);
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
	void *context = posted->entry.context, *buf = NULL;

	if (posted->parent) {
		buf = posted->iov[0].iov_base;
		if (piece_done(posted, &context))
			flags |= FI_MULTI_RECV;
	}
	if (xlink_rx_wants_comp(ep, posted->entry.flags))
		xlink_cq_write(ep->rx_cq, context, flags, len, buf, data, tag,
			       reported_src(ep, src));
	if (ep->rx_cntr)
		xlink_cntr_inc(ep->rx_cntr);
	free(posted->bounce);
	xlink_rx_free(posted);
}

/* An error completion, which no counter counts (a peek's FI_ENOMSG). */
static void write_rx_error_only(struct xlink_ep *ep, void *context, int err, size_t len,
				size_t olen, uint64_t flags, uint64_t data, uint64_t tag,
				void *buf)
{
	struct fi_cq_err_entry e = {
		.op_context = context,
		.flags = flags,
		.len = len,
		.buf = buf,
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
			   size_t olen, uint64_t flags, uint64_t data, uint64_t tag,
			   void *buf)
{
	write_rx_error_only(ep, context, err, len, olen, flags, data, tag, buf);
	if (ep->rx_cntr)
		xlink_cntr_incerr(ep->rx_cntr);
}

/*
 * posted: a receive, a piece, or a multi-receive buffer taken off the
 * queue (cancelled, or its source gone), which is released with the error
 * unless pieces of it are not done: then the last of them releases it.
 */
void xlink_rx_fail(struct xlink_ep *ep, struct xlink_rx *posted, int err,
		   size_t len, size_t olen, uint64_t flags, uint64_t data,
		   uint64_t tag)
{
	void *context = posted->entry.context, *buf = NULL;
	bool keep = false;

	if (posted->multi) {
		buf = (char *) posted->iov[0].iov_base + posted->multi_used;
		posted->multi_released = true;
		keep = posted->multi_pending > 0;
		if (!keep)
			flags |= FI_MULTI_RECV;
	} else if (posted->parent) {
		buf = posted->iov[0].iov_base;
		if (piece_done(posted, &context))
			flags |= FI_MULTI_RECV;
	}
	write_rx_error(ep, context, err, len, olen, flags, data, tag, buf);
	if (keep)
		return;
	free(posted->bounce);
	xlink_rx_free(posted);
}

/* ---- handing messages over ---- */

/*
 * Entries come from a cache of the endpoint's: one is taken and given back
 * per message, and malloc and free cost some 200 instructions of the peer
 * path's 2000 a message.
 */
#define SPARE_MAX	256

struct xlink_rx *xlink_rx_alloc(struct xlink_ep *ep)
{
	struct xlink_rx *rx = ep->srx.spare;

	if (rx) {
		ep->srx.spare = rx->next;
		ep->srx.nspare--;
	} else {
		rx = malloc(sizeof(*rx));
		if (!rx)
			return NULL;
	}
	memset(rx, 0, sizeof(*rx));
	rx->ep = ep;
	return rx;
}

void xlink_rx_free(struct xlink_rx *rx)
{
	struct xlink_srx *srx = &rx->ep->srx;

	if (srx->nspare >= SPARE_MAX) {
		free(rx);
		return;
	}
	rx->next = srx->spare;
	srx->spare = rx;
	srx->nspare++;
}

static struct xlink_rx *rx_new(struct xlink_ep *ep, enum xlink_rx_origin origin,
			       bool tagged)
{
	struct xlink_rx *rx = xlink_rx_alloc(ep);

	if (!rx)
		return NULL;
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
	xlink_rx_free(msg);
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
	xlink_rx_free(posted);
	ret = peer_start(msg);
	if (ret)
		FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "peer start: %d\n", ret);
}

/*
 * The receive a message of size bytes from addr matches now: a posted
 * receive taken off the queue, or a new piece of the multi-receive buffer
 * first in line.  NULL: none (or no memory for a piece).
 */
static struct xlink_rx *take_posted(struct xlink_ep *ep, bool tagged, fi_addr_t addr,
				    size_t size, uint64_t tag)
{
	struct match_key key = { .addr = addr, .tag = tag };
	struct xlink_queue *q = &ep->srx.posted[tagged];
	struct xlink_rx *prev, *rx = queue_search(q, posted_takes, &key, &prev);

	if (rx && rx->multi)
		return carve(ep, rx, size, NULL);
	if (rx)
		queue_unlink_after(q, prev, rx);
	return rx;
}

bool xlink_srx_net_arrived(struct xlink_ep *ep, struct xlink_rx *msg)
{
	struct xlink_rx *posted = take_posted(ep, msg->tagged, msg->entry.addr,
					      msg->entry.size, msg->entry.tag);

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
				    0, key->tag, NULL);
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
		xlink_rx_free(posted);
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

/*
 * A new multi-receive buffer takes the queued messages it matches, in
 * their order, until it is released; else it is queued.
 */
static ssize_t post_multi(struct xlink_ep *ep, struct xlink_rx *parent,
			  const struct match_key *key)
{
	struct xlink_queue *q = &ep->srx.unexpected[0];
	struct xlink_rx *msg, *prev;

	parent->multi = true;
	while ((msg = queue_search(q, message_fits, key, &prev))) {
		bool peer = msg->origin == XLINK_RX_FROM_PEER;
		struct xlink_rx *piece = peer ? msg : rx_new(ep, XLINK_RX_POSTED, false);
		bool released;
		int ret;

		if (!piece)
			break;	/* the message waits for a later receive */
		queue_unlink_after(q, prev, msg);
		carve(ep, parent, msg->entry.size, piece);
		/* Once released, parent is freed when its last piece is done. */
		released = parent->multi_released;
		if (!peer) {
			xlink_net_deliver(ep, msg, piece);
		} else {
			give_peer(ep, piece);
			ret = peer_start(piece);
			if (ret)
				FI_WARN(&xlink_prov, FI_LOG_EP_DATA, "peer start: %d\n", ret);
		}
		if (released)
			return 0;
	}
	queue_append(&ep->srx.posted[0], parent);
	return 0;
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
	if ((flags & FI_MULTI_RECV) &&
	    (tagged || count != 1 || (flags & (FI_PEEK | FI_CLAIM | FI_DISCARD)) ||
	     !(ep->caps & FI_MULTI_RECV)))
		return -FI_EINVAL;
	if (flags & FI_PEEK)
		return peek(ep, tagged, &key, context, flags);
	posted = posted_new(ep, tagged, iov, desc, count, src, tag, ignore, context,
			    flags);
	if (!posted)
		return -FI_ENOMEM;
	if (flags & FI_CLAIM)
		return claim(ep, posted, flags);
	if (flags & FI_MULTI_RECV)
		return post_multi(ep, posted, &key);
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
	struct xlink_rx *rx;

	if (!ep)
		return -FI_EINVAL;
	ep->domain->peer_events++;
	rx = take_posted(ep, tagged, addr, size, tag);
	if (rx && rx->parent) {
		give_peer(ep, rx);
	} else if (!rx) {
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
	struct xlink_rx *rx = entry->owner_context;

	if (rx->parent)
		piece_freed(rx);
	xlink_rx_free(rx);
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
	while (ep->srx.spare) {
		struct xlink_rx *rx = ep->srx.spare;

		ep->srx.spare = rx->next;
		free(rx);
	}
	ep->srx.nspare = 0;
}
