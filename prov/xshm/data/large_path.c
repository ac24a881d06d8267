/*
 * Bounce buffers or the single copy, for messages larger than
 * FI_XSHM_SCOPY_HUGE_MIN (FI_XSHM_SCOPY_HUGE_STREAM_MIN for a send in a
 * stream, send.c) and at most FI_XSHM_SCOPY_THRESHOLD (512 KiB, 128 KiB
 * and 4 MiB by default): the single copy when the buffers of both sides
 * lie on huge pages, where it costs half as much as on 4 KiB pages
 * (shm/scopy/huge.h).
 *
 * A receiver learns the pages under the buffers of each such message it
 * receives, and says in its region header (rx_huge) whether the latest
 * ones were huge; a sender takes the single copy when they were and its
 * own buffer is too.  So a receiver that moves to buffers on huge pages is
 * sent its next message, not this one, by single copy.  Each side asks the
 * kernel only when a buffer is new to it or every XSHM_HUGE_MEMO_USES
 * messages, and a sender asks only receivers that said yes.
 */
#include "data/large_path.h"
#include "objects/ep.h"
#include "shm/region.h"
#include "shm/scopy/huge.h"

/* Written only when it changes: its header line is read by every send. */
void xshm_rx_large_pages(struct xshm_ep *ep,
			 const struct fi_peer_rx_entry *entry, size_t len)
{
	_Atomic uint32_t *shared = &ep->region.hdr->rx_huge;
	uint32_t huge = xshm_huge_pages_memo(&ep->rx_pages, entry->iov,
					     entry->count, len);

	if (atomic_load_explicit(shared, memory_order_relaxed) != huge)
		atomic_store_explicit(shared, huge, memory_order_relaxed);
}

bool xshm_tx_large_pages(struct xshm_ep *ep, const struct xshm_region *peer,
			 const struct iovec *iov, size_t count, size_t total)
{
	return atomic_load_explicit(&peer->hdr->rx_huge, memory_order_relaxed) &&
	       xshm_huge_pages_memo(&ep->tx_pages, iov, count, total);
}
