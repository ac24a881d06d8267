/*
 * Counter: implements the owner side of the peer counter (cntr.c).  Reading
 * or waiting on it drives the progress of the endpoints bound to it.
 */
#ifndef XSHM_CNTR_H
#define XSHM_CNTR_H

#include <stdbool.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_domain.h>

struct xshm_domain;
struct xshm_ep;
struct xshm_cntr;

int xshm_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
/* The object a fid names if it is xshm's of that domain, else NULL. */
struct xshm_cntr *xshm_cntr_of(struct fid *fid, struct xshm_domain *domain);
/* fi_ep_bind of a counter: flags FI_SEND and/or FI_RECV. */
int xshm_cntr_bind_ep(struct fid *cntr_fid, struct xshm_ep *ep, uint64_t flags);
/* Endpoint close: forget the endpoint in the counters it is bound to. */
void xshm_cntr_unbind_ep(struct xshm_ep *ep);
/* Under the domain lock: drives the endpoints bound to the counter. */
void xshm_cntr_progress(struct xshm_cntr *cntr);
int xshm_cntr_trywait(struct fid *cntr_fid);
/* fi_mr_bind: the counter, held until released, or NULL if not domain's. */
struct fid_peer_cntr *xshm_cntr_hold(struct fid *fid,
				     struct xshm_domain *domain);
void xshm_cntr_release(struct fid_peer_cntr *held);

/*
 * Takes the counter behind fid for a poll set of domain (poll.c):
 * -FI_EINVAL when fid is not one of domain's, -FI_ENOSYS when it is
 * imported (FI_PEER: its values are the owner's).
 */
int xshm_cntr_poll_join(struct fid *fid, struct xshm_domain *domain,
			struct xshm_cntr **cntr);
void xshm_cntr_poll_leave(struct xshm_cntr *cntr);

/* A counter's values as a poll set last reported them. */
struct xshm_cntr_seen {
	uint64_t value;
	uint64_t err;
	uint64_t gen;		/* the counter's application changes; 0: none seen */
};

/*
 * Whether the counter's values differ from *seen, or from what the
 * application's last fi_cntr_set, add, seterr or adderr left when there
 * was one since; *seen becomes the values compared.
 */
bool xshm_cntr_poll_changed(struct xshm_cntr *cntr,
			    struct xshm_cntr_seen *seen);

#endif
