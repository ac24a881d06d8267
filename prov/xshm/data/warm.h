#ifndef XSHM_WARM_H
#define XSHM_WARM_H

#include <stdbool.h>
#include <stddef.h>

#include <rdma/fabric.h>

#include "objects/ep.h"
#include "shm/layout.h"

/*
 * Warming the cells of the next send (warm.c): after a whole message in
 * cells, want len bytes of dest's ring from its tail warmed, which the
 * next idle poll does (run) when they reach past the first cache line.
 * Inline: it is on every send's path.
 */
static inline void xshm_warm_want(struct xshm_ep *ep, fi_addr_t dest,
				  size_t len)
{
	ep->warm.dest = dest;
	ep->warm.len = len;
}

static inline bool xshm_warm_wanted(const struct xshm_ep *ep)
{
	return ep->warm.len > XSHM_CACHE_LINE;	/* the first line: never */
}

void xshm_warm_run(struct xshm_ep *ep);

#endif
