#ifndef XSHM_LARGE_PATH_H
#define XSHM_LARGE_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/uio.h>

#include "xshm/fi_peer.h"

struct xshm_ep;
struct xshm_region;


/*
 * Bounce buffers or the single copy by the pages under the buffers, for
 * sizes where xshm_scopy_by_pages (large_path.c): the receiver notes the
 * first len bytes of the buffers of such a message it received; a sender,
 * whether its own and the receiver's latest lie on huge pages.
 */
void xshm_rx_large_pages(struct xshm_ep *ep,
			 const struct fi_peer_rx_entry *entry, size_t len);
bool xshm_tx_large_pages(struct xshm_ep *ep, const struct xshm_region *peer,
			 const struct iovec *iov, size_t count, size_t total);
#endif
