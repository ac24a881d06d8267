/*
 * FI_PEER imports of an owner's SRX and domain (import.c).  The AV, EQ, CQ
 * and counter imports are their objects' (av/av.c, report/eq.c, cq.c,
 * cntr.c).
 */
#ifndef XSHM_IMPORT_H
#define XSHM_IMPORT_H

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

struct xshm_domain;
struct xshm_ep;

int xshm_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context);
int xshm_srx_bind(struct xshm_ep *ep, struct fid *fid);
void xshm_srx_unbind(struct xshm_ep *ep);
void xshm_srx_import_free_all(struct xshm_domain *domain);

#endif
