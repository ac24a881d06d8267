#ifndef XSHM_BOUNCE_FILL_H
#define XSHM_BOUNCE_FILL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

struct xshm_ep;
struct xshm_region;

/*
 * Copies len bytes of the iov from offset into a bounce buffer of peer's,
 * with the stores FI_XSHM_BOUNCE_STORES asks for or measurement chose
 * (bounce_fill.c).
 */
void xshm_bounce_fill(struct xshm_ep *ep, const struct xshm_region *peer,
		      void *buf, const struct iovec *iov, size_t count,
		      size_t offset, size_t len);

/*
 * Whether ep fills peer's buffers with cached stores: as
 * FI_XSHM_BOUNCE_STORES says, or as its choice for peer stands, probes
 * aside (bounce_fill.c).
 */
bool xshm_bounce_fills_cached(const struct xshm_ep *ep,
			      const struct xshm_region *peer);

/*
 * The same with the stores chosen, untimed: the choice is left to the
 * fills of messages, which also probe the other stores (bounce_fill.c).
 */
void xshm_bounce_fill_untimed(const struct xshm_ep *ep,
			      const struct xshm_region *peer, void *buf,
			      const struct iovec *iov, size_t count,
			      size_t offset, size_t len);

#endif
