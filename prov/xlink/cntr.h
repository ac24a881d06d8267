/*
 * xlink's counters.  The remote path counts with xlink_cntr_inc/_incerr;
 * the peer through the struct fid_peer_cntr each counter imports into the
 * peer domain (peer_shadow, opened with FI_PEER).
 */
#ifndef XLINK_CNTR_H
#define XLINK_CNTR_H

#include "xlink.h"

struct xlink_cntr {
	struct fid_cntr cntr_fid;
	struct xlink_domain *domain;
	enum fi_wait_obj wait_obj;
	atomic_uint_fast64_t value;
	atomic_uint_fast64_t err;
	struct fid_peer_cntr peer_cntr;
	struct fi_ops_cntr_owner peer_ops;
	struct fid_cntr *peer_shadow;
	atomic_int ref;				/* endpoints bound */
};

int xlink_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr, void *context);

/* The xlink counter behind fid, or NULL if not one of domain's. */
struct xlink_cntr *xlink_cntr_of(struct fid *fid, struct xlink_domain *domain);

void xlink_cntr_inc(struct xlink_cntr *cntr);
void xlink_cntr_incerr(struct xlink_cntr *cntr);

#endif
