/* Counters: not yet offered. */
#include "xshm.h"

int xshm_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context)
{
	return -FI_ENOSYS;
}

int xshm_cntr_bind_ep(struct fid *cntr_fid, struct xshm_ep *ep, uint64_t flags)
{
	return -FI_ENOSYS;
}

void xshm_cntr_unbind_ep(struct xshm_ep *ep)
{
}
