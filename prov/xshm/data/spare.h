#ifndef XSHM_SPARE_H
#define XSHM_SPARE_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

struct xshm_ep;
struct xshm_region;

/*
 * Bounce buffers of a peer's pool for sends (spare.c): borrow one, the
 * spare held for the peer if any, else from the pool (0, or the pool's
 * error); after a send that put len bytes in a buffer, want a spare for
 * dest, borrowed (and its first len bytes warmed) on the next idle poll
 * (refill).  The AV gives it back before the peer's region is unmapped
 * or the endpoint closes (av/av_peers.c).
 */
int xshm_spare_borrow(struct xshm_ep *ep, const struct xshm_region *peer,
		      uint32_t *index);
void xshm_spare_want(struct xshm_ep *ep, fi_addr_t dest, size_t len);
void xshm_spare_refill(struct xshm_ep *ep);

#endif
