#ifndef XSHM_SPARE_H
#define XSHM_SPARE_H

#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "shm/pool.h"

struct xshm_ep;
struct xshm_region;

/*
 * Bounce buffers of a peer's pool for sends (spare.c): borrow one, the
 * spare held for the peer if any, else from the pool in order (0, or the
 * pool's error); after a send that put len bytes in a buffer, want a spare
 * for dest, borrowed in order (and its first len bytes warmed) on the next
 * idle poll (refill).  It is given back before the peer's region is unmapped, when
 * the endpoint's AV entry lets go of the peer, or the endpoint closes
 * (peer/peer_map.c).
 */
int xshm_spare_borrow(struct xshm_ep *ep, const struct xshm_region *peer,
		      enum xshm_pool_order order, uint32_t *index);
void xshm_spare_want(struct xshm_ep *ep, fi_addr_t dest, size_t len,
		     enum xshm_pool_order order);
void xshm_spare_refill(struct xshm_ep *ep);

#endif
