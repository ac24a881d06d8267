/*
 * xshm's own shared receive context: the owner side of the peer SRX
 * interface (fi_peer(3)).  It keeps the posted receives and the unexpected
 * messages, matches them, and hands matched entries to the endpoint through
 * the peer ops -- the same calls an owner provider's SRX would make.
 */
#include <stdlib.h>

#include "xshm.h"

static struct xshm_srx *to_srx(struct fid_peer_srx *peer_srx)
{
	return xshm_container_of(peer_srx, struct xshm_srx, peer_srx);
}

static struct xshm_rx_entry *to_entry(struct fi_peer_rx_entry *peer)
{
	return xshm_container_of(peer, struct xshm_rx_entry, peer);
}

static bool tag_matches(uint64_t recv_tag, uint64_t ignore, uint64_t tag)
{
	return ((recv_tag ^ tag) & ~ignore) == 0;
}

static bool addr_matches(fi_addr_t wanted, fi_addr_t from)
{
	return wanted == FI_ADDR_UNSPEC || wanted == from;
}

static struct xshm_rx_entry *entry_alloc(struct xshm_srx *srx)
{
	struct xshm_rx_entry *entry = calloc(1, sizeof(*entry));

	if (entry)
		entry->peer.srx = &srx->peer_srx;
	return entry;
}

/* First posted receive that accepts a message; NULL if none. */
static struct xshm_rx_entry *find_posted(struct xshm_dlist *list, bool tagged,
					 fi_addr_t addr, uint64_t tag)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		if (addr_matches(entry->peer.addr, addr) &&
		    (!tagged || tag_matches(entry->peer.tag, entry->ignore, tag)))
			return entry;
	}
	return NULL;
}

static int get_entry(struct fid_peer_srx *peer_srx, bool tagged,
		     fi_addr_t addr, size_t size, uint64_t tag,
		     struct fi_peer_rx_entry **entry_out)
{
	struct xshm_srx *srx = to_srx(peer_srx);
	struct xshm_rx_entry *entry;
	int ret = 0;

	entry = find_posted(tagged ? &srx->posted_tag : &srx->posted_msg,
			    tagged, addr, tag);
	if (entry) {
		xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
		srx->posted--;
	} else {
		entry = entry_alloc(srx);
		if (!entry)
			return -FI_ENOMEM;
		ret = -FI_ENOENT;
	}
	entry->peer.addr = addr;
	entry->peer.size = size;
	entry->peer.tag = tag;
	entry->peer.flags = (entry->peer.flags & FI_COMPLETION) | FI_RECV |
			    (tagged ? FI_TAGGED : FI_MSG);
	*entry_out = &entry->peer;
	return ret;
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
	free(to_entry(entry));
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

/* First unexpected message a new receive accepts; NULL if none. */
static struct xshm_rx_entry *find_unexpected(struct xshm_dlist *list,
					     bool tagged, fi_addr_t src,
					     uint64_t tag, uint64_t ignore)
{
	struct xshm_dlist *it;

	xshm_dlist_foreach(list, it) {
		struct xshm_rx_entry *entry = (struct xshm_rx_entry *) it;

		if (addr_matches(src, entry->peer.addr) &&
		    (!tagged || tag_matches(tag, ignore, entry->peer.tag)))
			return entry;
	}
	return NULL;
}

static void set_buffers(struct xshm_rx_entry *entry, const struct iovec *iov,
			void **desc, size_t count, void *context,
			uint64_t flags)
{
	for (size_t i = 0; i < count; i++) {
		entry->iov[i] = iov[i];
		entry->desc[i] = desc ? desc[i] : NULL;
	}
	entry->peer.iov = entry->iov;
	entry->peer.desc = entry->desc;
	entry->peer.count = count;
	entry->peer.context = context;
	entry->peer.flags |= flags & FI_COMPLETION;
}

/* A receive posted by the application: match a held message or queue it. */
ssize_t xshm_srx_post(struct xshm_srx *srx, bool tagged,
		      const struct iovec *iov, void **desc, size_t count,
		      fi_addr_t src, uint64_t tag, uint64_t ignore,
		      void *context, uint64_t flags)
{
	struct xshm_rx_entry *entry;

	entry = find_unexpected(tagged ? &srx->unexp_tag : &srx->unexp_msg,
				tagged, src, tag, ignore);
	if (entry) {
		xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
		set_buffers(entry, iov, desc, count, context, flags);
		return tagged ? srx->peer_ops.start_tag(&entry->peer) :
				srx->peer_ops.start_msg(&entry->peer);
	}
	if (srx->posted >= srx->max_posted)
		return -FI_EAGAIN;
	entry = entry_alloc(srx);
	if (!entry)
		return -FI_ENOMEM;
	entry->peer.addr = src;
	entry->peer.tag = tag;
	entry->ignore = ignore;
	entry->peer.size = xshm_iov_total(iov, count);
	entry->peer.flags = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	set_buffers(entry, iov, desc, count, context, flags);
	xshm_dlist_append(tagged ? &srx->posted_tag : &srx->posted_msg,
			  (struct xshm_dlist *) &entry->peer);
	srx->posted++;
	return 0;
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
	xshm_dlist_init(&srx->unexp_msg);
	xshm_dlist_init(&srx->unexp_tag);
	srx->peer_srx.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	srx->peer_srx.owner_ops = &xshm_srx_owner_ops;
	srx->peer_srx.peer_ops = &srx->peer_ops;
	return srx;
}

static void discard_all(struct xshm_srx *srx, struct xshm_dlist *list,
			bool tagged)
{
	while (!xshm_dlist_empty(list)) {
		struct fi_peer_rx_entry *entry =
			(struct fi_peer_rx_entry *) list->next;

		xshm_dlist_remove((struct xshm_dlist *) entry);
		if (tagged)
			srx->peer_ops.discard_tag(entry);
		else
			srx->peer_ops.discard_msg(entry);
	}
}

static void free_all(struct xshm_dlist *list)
{
	while (!xshm_dlist_empty(list)) {
		struct xshm_dlist *item = list->next;

		xshm_dlist_remove(item);
		free(to_entry((struct fi_peer_rx_entry *) item));
	}
}

/* Posted receives are dropped; held messages are discarded through the peer. */
void xshm_srx_destroy(struct xshm_srx *srx)
{
	discard_all(srx, &srx->unexp_msg, false);
	discard_all(srx, &srx->unexp_tag, true);
	free_all(&srx->posted_msg);
	free_all(&srx->posted_tag);
	free(srx);
}
