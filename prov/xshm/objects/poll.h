/*
 * Poll sets (poll.c): a domain's own CQs and counters, held by the set
 * as a bound endpoint holds them (closing them gives -FI_EBUSY meanwhile).
 * Under the domain lock.
 */
#ifndef XSHM_POLL_H
#define XSHM_POLL_H

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

int xshm_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset);

#endif
