/*
 * Registrations published for initiator-driven RMA (mr_pub.c): kept in
 * step with the domain's table (objects/mr.c) and its endpoints (ep.c).
 * Under the domain lock.
 */
#ifndef XSHM_OBJECTS_MR_PUB_H
#define XSHM_OBJECTS_MR_PUB_H

struct xshm_domain;
struct xshm_ep;
struct xshm_mr_entry;

void xshm_mr_publish(struct xshm_domain *domain,
		     const struct xshm_mr_entry *entry);
/* Returns once no initiator may copy to or from entry's memory. */
void xshm_mr_unpublish(struct xshm_domain *domain,
		       const struct xshm_mr_entry *entry);
/* entry's counters changed (fi_mr_bind). */
void xshm_mr_publish_events(struct xshm_domain *domain,
			    const struct xshm_mr_entry *entry);
/* An endpoint's region is new: publish the domain's registrations. */
void xshm_ep_publish_all(struct xshm_ep *ep);
/* Its endpoint closes: withdraw all, waiting for their holders. */
void xshm_ep_unpublish_all(struct xshm_ep *ep);

#endif
