/*
 * FI_PEER imports of an owner's SRX (import.c).  The AV, EQ, domain, CQ
 * and counter imports are their objects' (av.h, eq.h, domain.h, cq.h,
 * cntr.h).
 */
#ifndef XSHM_IMPORT_H
#define XSHM_IMPORT_H

#include <rdma/fabric.h>
#include <rdma/fi_endpoint.h>

struct xshm_domain;
struct xshm_ep;
struct xshm_srx_view;

/* A peer context as fi_peer(3) checks it: present, whole, naming an object. */
#define XSHM_CONTEXT_OK(ctx, field) \
	((ctx) && (ctx)->size >= sizeof(*(ctx)) && (ctx)->field)

int xshm_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context);
int xshm_srx_bind(struct xshm_ep *ep, struct fid *fid);
void xshm_srx_unbind(struct xshm_ep *ep);
void xshm_srx_view_hold(struct xshm_srx_view *view);
void xshm_srx_view_release(struct xshm_srx_view *view);
void xshm_srx_import_free_all(struct xshm_domain *domain);

#endif
