/*
 * A domain's registrations published in the region of each of its enabled
 * endpoints (shm/mr_pub.h), for initiators to serve themselves
 * (data/rma_fast.c).  Only single-buffer registrations are published; the
 * others, and those that find no free slot, go the target-driven way.
 * Everything here runs under the domain lock.
 */
#include "objects/mr_pub.h"

#include "base/list.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "shm/mr_pub.h"

static struct xshm_mr_pub_desc desc_of(const struct xshm_mr_entry *entry)
{
	return (struct xshm_mr_pub_desc) {
		.key = entry->key,
		.base = entry->base,
		.len = entry->len,
		.local = (uintptr_t) entry->iov[0].iov_base,
		.access = ((entry->access & FI_REMOTE_READ) ?
			   XSHM_MR_PUB_READ : 0) |
			  ((entry->access & FI_REMOTE_WRITE) ?
			   XSHM_MR_PUB_WRITE : 0),
		.events = xshm_mr_entry_counts(entry),
	};
}

static void publish_one(struct xshm_mr_pub *pub,
			const struct xshm_mr_entry *entry)
{
	struct xshm_mr_pub_desc desc;

	if (entry->iov_count != 1) {
		xshm_mr_pub_skip(pub);
		return;
	}
	desc = desc_of(entry);
	(void) xshm_mr_pub_add(pub, &desc);
}

/* The tables of the domain's endpoints that have a region. */
#define foreach_table(domain, it, ep)					\
	xshm_dlist_foreach(&(domain)->eps, it)				\
		if ((ep = xshm_container_of(it, struct xshm_ep,		\
					    domain_link))->enabled &&	\
		    ep->region.mr_pub)

void xshm_mr_publish(struct xshm_domain *domain,
		     const struct xshm_mr_entry *entry)
{
	struct xshm_dlist *it;
	struct xshm_ep *ep;

	foreach_table(domain, it, ep)
		publish_one(ep->region.mr_pub, entry);
}

void xshm_mr_unpublish(struct xshm_domain *domain,
		       const struct xshm_mr_entry *entry)
{
	struct xshm_dlist *it;
	struct xshm_ep *ep;

	foreach_table(domain, it, ep)
		xshm_mr_pub_remove(ep->region.mr_pub, entry->key);
}

void xshm_mr_publish_events(struct xshm_domain *domain,
			    const struct xshm_mr_entry *entry)
{
	struct xshm_dlist *it;
	struct xshm_ep *ep;

	foreach_table(domain, it, ep)
		xshm_mr_pub_set_events(ep->region.mr_pub, entry->key,
				       xshm_mr_entry_counts(entry));
}

/* The roles initiators may serve themselves at this endpoint. */
static uint32_t roles_of(const struct xshm_ep *ep)
{
	uint32_t roles = 0;

	if ((ep->caps & (FI_ATOMIC | FI_REMOTE_WRITE)) ==
	    (FI_ATOMIC | FI_REMOTE_WRITE))
		roles |= XSHM_MR_PUB_ATOMIC;
	if (!(ep->caps & FI_RMA))
		return roles;
	if (ep->caps & FI_REMOTE_READ)
		roles |= XSHM_MR_PUB_READ;
	if (ep->caps & FI_REMOTE_WRITE)
		roles |= XSHM_MR_PUB_WRITE;
	return roles;
}

void xshm_ep_publish_all(struct xshm_ep *ep)
{
	struct xshm_mr_pub *pub = ep->region.mr_pub;
	const struct xshm_mr_table *table = &ep->domain->mr_table;
	bool counts = false;

	for (int i = 0; i < XSHM_RMA_CNTRS; i++)
		counts |= ep->rma_cntr[i] != NULL;
	atomic_store_explicit(&pub->events, counts, memory_order_relaxed);
	for (size_t b = 0; b < XSHM_MR_BUCKETS; b++)
		for (const struct xshm_mr_entry *entry = table->buckets[b];
		     entry; entry = entry->next)
			publish_one(pub, entry);
	/* Last, with release: initiators see the entries before the roles. */
	atomic_store_explicit(&pub->serves, roles_of(ep), memory_order_release);
}

void xshm_ep_unpublish_all(struct xshm_ep *ep)
{
	if (ep->enabled && ep->region.mr_pub)
		xshm_mr_pub_clear(ep->region.mr_pub);
}
