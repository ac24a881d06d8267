/*
 * xshm's own shared receive context: the owner side of the peer SRX
 * interface (fi_peer(3)).  It keeps the posted receives and the unexpected
 * messages, matches them, and hands matched entries to the endpoint through
 * the peer ops -- the same calls an owner provider's SRX would make.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "srx/srx.h"
#include "base/list.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "report/comp.h"

static struct xshm_srx *to_srx(struct fid_peer_srx *peer_srx)
{
	return xshm_container_of(peer_srx, struct xshm_srx, peer_srx);
}

static struct xshm_rx_entry *to_entry(struct fi_peer_rx_entry *peer)
{
	return xshm_container_of(peer, struct xshm_rx_entry, peer);
}

/*
 * Entries are recycled through a free list: a receive is posted and freed
 * for every message, and malloc plus zeroing the iov arrays cost more than
 * the rest of the small-message path.  Only the fields before iov need
 * setting; iov and desc are always written before they are read.
 */
static struct xshm_rx_entry *entry_take(struct xshm_srx *srx)
{
	struct xshm_rx_entry *entry = srx->free_entries;

	if (entry)
		srx->free_entries = entry->next_free;
	else
		entry = malloc(sizeof(*entry));
	return entry;
}

static struct xshm_rx_entry *entry_alloc(struct xshm_srx *srx)
{
	struct xshm_rx_entry *entry = entry_take(srx);

	if (!entry)
		return NULL;
	memset(entry, 0, offsetof(struct xshm_rx_entry, iov));
	entry->peer.srx = &srx->peer_srx;
	return entry;
}

static void entry_free(struct xshm_srx *srx, struct xshm_rx_entry *entry)
{
	entry->next_free = srx->free_entries;
	srx->free_entries = entry;
}

/* First posted untagged receive that accepts a message; NULL if none. */
static struct xshm_rx_entry *find_posted_msg(struct xshm_srx *srx,
					     fi_addr_t addr)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(&srx->posted_msg, it) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		if (xshm_srx_addr_matches(entry->peer.addr, addr))
			return entry;
	}
	return NULL;
}

/*
 * Posted tagged receives are searched in post order while few stand before
 * the one that matches: a ping-pong or a stream under one tag finds it
 * first.  Once a search passes XSHM_SRX_WALK_MAX of them (many senders,
 * each matched by a tag of its own: 4 senders with 64 receives each had
 * the receiver spend half its time here), they are indexed by mask and tag
 * (tag_index.h) until none is left.
 */
#define XSHM_SRX_WALK_MAX	8

static struct xshm_rx_entry *walk_posted_tag(struct xshm_srx *srx,
					     fi_addr_t addr, uint64_t tag,
					     unsigned int *walked)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(&srx->posted_tag, it) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		if (xshm_srx_addr_matches(entry->peer.addr, addr) &&
		    xshm_srx_tag_matches(entry->peer.tag, entry->ignore, tag))
			return entry;
		++*walked;
	}
	return NULL;
}

static struct xshm_rx_entry *find_posted_tag(struct xshm_srx *srx,
					     fi_addr_t addr, uint64_t tag)
{
	struct xshm_rx_entry *entry;
	unsigned int walked = 0;

	if (srx->tags.on)
		return xshm_tag_index_find(&srx->tags, addr, tag);
	entry = walk_posted_tag(srx, addr, tag, &walked);
	if (walked > XSHM_SRX_WALK_MAX)
		xshm_tag_index_build(&srx->tags, &srx->posted_tag);
	return entry;
}

static void unpost(struct xshm_srx *srx, struct xshm_rx_entry *entry)
{
	xshm_srx_unpost(srx, entry);
}

/*
 * Gives the next size bytes of multi-receive buffer parent to entry (a new
 * one when entry is NULL).  The buffer is released, and the piece flagged
 * FI_MULTI_RECV, once less than min_multi_recv bytes (or none) remain.
 */
static struct xshm_rx_entry *carve(struct xshm_srx *srx,
				   struct xshm_rx_entry *parent, size_t size,
				   struct xshm_rx_entry *entry)
{
	size_t left = parent->iov[0].iov_len - parent->multi_used;

	if (!entry)
		entry = entry_alloc(srx);
	if (!entry)
		return NULL;
	entry->iov[0].iov_base = (char *) parent->iov[0].iov_base +
				 parent->multi_used;
	entry->iov[0].iov_len = left;
	entry->desc[0] = parent->desc[0];
	entry->peer.iov = entry->iov;
	entry->peer.desc = entry->desc;
	entry->peer.count = 1;
	entry->peer.context = parent->peer.context;
	entry->peer.flags = (entry->peer.flags & FI_REMOTE_CQ_DATA) |
			    FI_MSG | FI_RECV |
			    (parent->peer.flags & FI_COMPLETION);
	parent->multi_used += size < left ? size : left;
	left = parent->iov[0].iov_len - parent->multi_used;
	if (!left || left < srx->min_multi_recv) {
		entry->peer.flags |= FI_MULTI_RECV;
		unpost(srx, parent);
		entry_free(srx, parent);
	}
	return entry;
}

static void fill_entry(struct xshm_rx_entry *entry, bool tagged,
		       fi_addr_t addr, size_t size, uint64_t tag)
{
	entry->peer.addr = addr;
	entry->peer.size = size;
	entry->peer.tag = tag;
	entry->peer.flags = (entry->peer.flags & (FI_COMPLETION | FI_MULTI_RECV)) |
			    FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
}

/*
 * get_entry when no plain receive matches: a multi-receive piece or a new
 * entry.  Kept out of line so that the common case saves no registers.
 */
static __attribute__((noinline))
int get_other_entry(struct xshm_srx *srx, struct xshm_rx_entry *entry,
			   bool tagged, fi_addr_t addr, size_t size,
			   uint64_t tag, struct fi_peer_rx_entry **entry_out)
{
	int ret = 0;

	if (entry) {
		entry = carve(srx, entry, size, NULL);
		if (!entry)
			return -FI_ENOMEM;
	} else {
		entry = entry_alloc(srx);
		if (!entry)
			return -FI_ENOMEM;
		ret = -FI_ENOENT;
	}
	fill_entry(entry, tagged, addr, size, tag);
	*entry_out = &entry->peer;
	return ret;
}

static int get_entry(struct fid_peer_srx *peer_srx, bool tagged,
		     fi_addr_t addr, size_t size, uint64_t tag,
		     struct fi_peer_rx_entry **entry_out)
{
	struct xshm_srx *srx = to_srx(peer_srx);
	struct xshm_rx_entry *entry;

	entry = tagged ? find_posted_tag(srx, addr, tag) :
			 find_posted_msg(srx, addr);
	if (!entry || entry->multi_recv)
		return get_other_entry(srx, entry, tagged, addr, size, tag,
				       entry_out);
	unpost(srx, entry);
	fill_entry(entry, tagged, addr, size, tag);
	*entry_out = &entry->peer;
	return 0;
}

static int xshm_srx_get_msg(struct fid_peer_srx *srx, fi_addr_t addr,
			    size_t size, struct fi_peer_rx_entry **entry)
{
	return get_entry(srx, false, addr, size, 0, entry);
}

static int xshm_srx_get_tag(struct fid_peer_srx *srx, fi_addr_t addr,
			    size_t size, uint64_t tag,
			    struct fi_peer_rx_entry **entry)
{
	return get_entry(srx, true, addr, size, tag, entry);
}

static int xshm_srx_queue_msg(struct fi_peer_rx_entry *entry)
{
	xshm_dlist_append(&to_srx(entry->srx)->unexp_msg,
			  (struct xshm_dlist *) entry);
	return 0;
}

static int xshm_srx_queue_tag(struct fi_peer_rx_entry *entry)
{
	xshm_dlist_append(&to_srx(entry->srx)->unexp_tag,
			  (struct xshm_dlist *) entry);
	return 0;
}

static void resolve_unspec(struct xshm_dlist *list,
			   fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it) {
		struct fi_peer_rx_entry *entry = (struct fi_peer_rx_entry *) it;

		if (entry->addr == FI_ADDR_NOTAVAIL ||
		    entry->addr == FI_ADDR_UNSPEC)
			entry->addr = get_addr(entry);
	}
}

static void xshm_srx_foreach_unspec_addr(struct fid_peer_srx *peer_srx,
			fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
	struct xshm_srx *srx = to_srx(peer_srx);

	resolve_unspec(&srx->unexp_msg, get_addr);
	resolve_unspec(&srx->unexp_tag, get_addr);
}

static void xshm_srx_free_entry(struct fi_peer_rx_entry *entry)
{
	entry_free(to_srx(entry->srx), to_entry(entry));
}

static struct fi_ops_srx_owner xshm_srx_owner_ops = {
	.size = sizeof(struct fi_ops_srx_owner),
	.get_msg = xshm_srx_get_msg,
	.get_tag = xshm_srx_get_tag,
	.queue_msg = xshm_srx_queue_msg,
	.queue_tag = xshm_srx_queue_tag,
	.foreach_unspec_addr = xshm_srx_foreach_unspec_addr,
	.free_entry = xshm_srx_free_entry,
};

/* First unexpected message a receive accepts; NULL if none. */
struct xshm_rx_entry *xshm_srx_find_unexpected(struct xshm_srx *srx,
					       const struct xshm_recv_args *recv)
{
	struct xshm_dlist *list = recv->tagged ? &srx->unexp_tag : &srx->unexp_msg;
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		if (xshm_srx_addr_matches(recv->src, entry->peer.addr) &&
		    (!recv->tagged ||
		     xshm_srx_tag_matches(recv->tag, recv->ignore,
					  entry->peer.tag)))
			return entry;
	}
	return NULL;
}

/* Copies the receive's buffers into entry; returns their total size. */
static inline __attribute__((always_inline))
size_t copy_buffers(struct xshm_rx_entry *entry,
		    const struct xshm_recv_args *recv)
{
	size_t total = 0;

	if (recv->count == 1) {		/* most receives: without the loop */
		entry->iov[0] = recv->iov[0];
		entry->desc[0] = recv->desc ? recv->desc[0] : NULL;
		return recv->iov[0].iov_len;
	}
	for (size_t i = 0; i < recv->count; i++) {
		entry->iov[i] = recv->iov[i];
		entry->desc[i] = recv->desc ? recv->desc[i] : NULL;
		total += recv->iov[i].iov_len;
	}
	return total;
}

void xshm_srx_set_buffers(struct xshm_rx_entry *entry,
			  const struct xshm_recv_args *recv)
{
	copy_buffers(entry, recv);
	entry->peer.iov = entry->iov;
	entry->peer.desc = entry->desc;
	entry->peer.count = recv->count;
	entry->peer.context = recv->context;
	entry->peer.flags |= recv->flags & FI_COMPLETION;
}

/* Hands a held message, now given buffers, back to the peer. */
int xshm_srx_start(struct xshm_srx *srx, struct xshm_rx_entry *entry)
{
	return entry->peer.flags & FI_TAGGED ?
	       srx->peer_ops.start_tag(&entry->peer) :
	       srx->peer_ops.start_msg(&entry->peer);
}

int xshm_srx_discard(struct xshm_srx *srx, struct xshm_rx_entry *entry)
{
	return entry->peer.flags & FI_TAGGED ?
	       srx->peer_ops.discard_tag(&entry->peer) :
	       srx->peer_ops.discard_msg(&entry->peer);
}

/*
 * Fills a new multi-receive buffer with held messages; true if used up.
 * Out of line: posting a plain receive then saves no registers for it.
 */
static __attribute__((noinline))
bool fill_multi_recv(struct xshm_srx *srx, struct xshm_rx_entry *parent,
			    const struct xshm_recv_args *recv)
{
	struct xshm_rx_entry *entry;

	while ((entry = xshm_srx_find_unexpected(srx, recv))) {
		bool released;

		xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
		carve(srx, parent, entry->peer.size, entry);
		released = entry->peer.flags & FI_MULTI_RECV;
		xshm_srx_start(srx, entry);
		if (released)
			return true;
	}
	return false;
}

static inline __attribute__((always_inline))
ssize_t post_new(struct xshm_srx *srx, const struct xshm_recv_args *recv)
{
	bool multi_recv = recv->flags & FI_MULTI_RECV;
	struct xshm_rx_entry *entry;

	if (srx->posted >= srx->max_posted)
		return -FI_EAGAIN;
	entry = entry_take(srx);
	if (!entry)
		return -FI_ENOMEM;
	/* Field by field: a struct literal clears it all first. */
	entry->peer.srx = &srx->peer_srx;
	entry->peer.addr = recv->src;
	entry->peer.size = copy_buffers(entry, recv);
	entry->peer.tag = recv->tag;
	entry->peer.cq_data = 0;
	entry->peer.flags = FI_RECV | (recv->tagged ? FI_TAGGED : FI_MSG) |
			    (recv->flags & FI_COMPLETION);
	entry->peer.context = recv->context;
	entry->peer.count = recv->count;
	entry->peer.desc = entry->desc;
	entry->peer.peer_context = NULL;
	entry->peer.owner_context = NULL;
	entry->peer.iov = entry->iov;
	entry->ignore = recv->ignore;
	entry->multi_recv = multi_recv;
	entry->multi_used = 0;
	entry->src_ep_id = recv->src_ep_id;
	entry->next_free = NULL;
	xshm_dlist_append(recv->tagged ? &srx->posted_tag : &srx->posted_msg,
			  (struct xshm_dlist *) &entry->peer);
	entry->tag_node.class = XSHM_TAG_UNINDEXED;
	if (recv->tagged && srx->tags.on)
		xshm_tag_index_add(&srx->tags, entry);
	srx->posted++;
	if (recv->src != FI_ADDR_UNSPEC)
		srx->directed++;
	if (multi_recv)	/* a local: _one folds it away */
		fill_multi_recv(srx, entry, recv);
	return 0;
}

ssize_t xshm_srx_post_new(struct xshm_srx *srx, const struct xshm_recv_args *recv)
{
	return post_new(srx, recv);
}

/*
 * post_new with the arguments of fi_recv and fi_trecv's common case folded
 * in: one buffer, any source, no multi-receive.  A stream's receiver posts
 * a window of these between two windows, on the sender's critical path.
 */
ssize_t xshm_srx_post_one(struct xshm_srx *srx, bool tagged, void *buf,
			  size_t len, void *desc, uint64_t tag, uint64_t ignore,
			  void *context, uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct xshm_recv_args recv = {
		.tagged = tagged, .iov = &iov, .desc = &desc, .count = 1,
		.src = FI_ADDR_UNSPEC, .tag = tag, .ignore = ignore,
		.context = context, .flags = flags & FI_COMPLETION,
	};

	return post_new(srx, &recv);
}

/* A receive posted by the application: match a held message or queue it. */
ssize_t xshm_srx_post(struct xshm_srx *srx, struct xshm_ep *ep,
		      const struct xshm_recv_args *recv)
{
	struct xshm_rx_entry *entry;

	if ((recv->flags & FI_MULTI_RECV) || !xshm_srx_holds(srx, recv->tagged))
		return xshm_srx_post_new(srx, recv);
	entry = xshm_srx_find_unexpected(srx, recv);
	if (!entry)
		return xshm_srx_post_new(srx, recv);
	xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
	xshm_srx_set_buffers(entry, recv);
	return xshm_srx_start(srx, entry);
}

/*
 * A posted receive taken off the queues and completed with error code: a
 * multi-receive buffer is released with it (FI_MULTI_RECV), and buf is
 * where its next data would have gone.
 */
void xshm_srx_fail_posted(struct xshm_srx *srx, struct xshm_ep *ep,
			  struct xshm_rx_entry *entry, int code)
{
	struct fi_cq_err_entry err = {
		.op_context = entry->peer.context,
		.flags = (entry->peer.flags & (FI_TAGGED | FI_MSG | FI_RECV)) |
			 (entry->multi_recv ? FI_MULTI_RECV : 0),
		.buf = entry->peer.count ?
		       (char *) entry->iov[0].iov_base + entry->multi_used :
		       NULL,
		.tag = entry->peer.tag,		/* 0 when untagged */
		.err = code,
		.prov_errno = code,
	};

	unpost(srx, entry);
	xshm_report_rx_err(ep, &err);
	srx->peer_srx.owner_ops->free_entry(&entry->peer);
}

static bool directed_gone(struct xshm_srx *srx, struct xshm_ep *ep,
			  struct xshm_dlist *list,
			  bool (*gone)(void *arg, uint64_t ep_id), void *arg,
			  bool fail)
{
	struct xshm_dlist *it, *next;
	bool found = false;

	for (it = list->next; it != list; it = next) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		next = it->next;
		if (entry->peer.addr == FI_ADDR_UNSPEC ||
		    !gone(arg, entry->src_ep_id))
			continue;
		if (!fail)
			return true;
		found = true;
		/* as a receive a dying sender's message arrived into */
		xshm_srx_fail_posted(srx, ep, entry, FI_EIO);
	}
	return found;
}

bool xshm_srx_directed_gone(struct xshm_srx *srx, struct xshm_ep *ep,
			    bool (*gone)(void *arg, uint64_t ep_id), void *arg,
			    bool fail)
{
	bool found;

	if (!srx->directed)
		return false;
	found = directed_gone(srx, ep, &srx->posted_tag, gone, arg, fail);
	if (found && !fail)
		return true;
	return directed_gone(srx, ep, &srx->posted_msg, gone, arg, fail) ||
	       found;
}

static bool holds(struct xshm_dlist *list, const struct xshm_dlist *item)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it)
		if (it == item)
			return true;
	return false;
}

/* Takes a held message back from the unexpected queues; false if not there. */
bool xshm_srx_unqueue(struct xshm_srx *srx, struct fi_peer_rx_entry *entry)
{
	struct xshm_dlist *item = (struct xshm_dlist *) entry;

	if (!holds(&srx->unexp_msg, item) && !holds(&srx->unexp_tag, item))
		return false;
	xshm_dlist_remove(item);
	return true;
}

struct xshm_srx *xshm_srx_create(struct xshm_domain *domain, size_t rx_size)
{
	struct xshm_srx *srx = calloc(1, sizeof(*srx));

	if (!srx)
		return NULL;
	srx->domain = domain;
	srx->max_posted = rx_size;
	xshm_dlist_init(&srx->posted_msg);
	xshm_dlist_init(&srx->posted_tag);
	xshm_tag_index_init(&srx->tags);
	xshm_dlist_init(&srx->unexp_msg);
	xshm_dlist_init(&srx->unexp_tag);
	xshm_dlist_init(&srx->claimed);
	srx->peer_srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	srx->peer_srx.owner_ops = &xshm_srx_owner_ops;
	srx->peer_srx.peer_ops = &srx->peer_ops;
	return srx;
}

static void discard_all(struct xshm_srx *srx, struct xshm_dlist *list)
{
	while (!xshm_dlist_empty(list)) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) list->next;

		xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
		xshm_srx_discard(srx, entry);
	}
}

static void free_all(struct xshm_srx *srx, struct xshm_dlist *list)
{
	while (!xshm_dlist_empty(list)) {
		struct xshm_dlist *item = list->next;

		xshm_dlist_remove(item);
		entry_free(srx, to_entry((struct fi_peer_rx_entry *) item));
	}
}

static void release_free_entries(struct xshm_srx *srx)
{
	while (srx->free_entries) {
		struct xshm_rx_entry *entry = srx->free_entries;

		srx->free_entries = entry->next_free;
		free(entry);
	}
}

/* Posted receives are dropped; held messages are discarded through the peer. */
void xshm_srx_destroy(struct xshm_srx *srx)
{
	discard_all(srx, &srx->unexp_msg);
	discard_all(srx, &srx->unexp_tag);
	discard_all(srx, &srx->claimed);
	free_all(srx, &srx->posted_msg);
	free_all(srx, &srx->posted_tag);
	release_free_entries(srx);
	free(srx);
}
