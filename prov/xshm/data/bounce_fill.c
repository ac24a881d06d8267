/*
 * Filling a bounce buffer: with cached or streaming stores, as
 * FI_XSHM_BOUNCE_STORES says, or by default as the sender's measurements
 * of its own fills to that receiver choose (shm/store_choice.h).  The
 * choice also decides whether a message that could go either way takes
 * ring cells (send.c) and whether the spare buffer is warmed (spare.c).
 */
#include "data/bounce_fill.h"
#include "base/iov.h"
#include "base/params.h"
#include "objects/ep.h"
#include "shm/copy.h"
#include "shm/region.h"
#include "shm/store_choice.h"

static xshm_copy_fn *copy_of(enum xshm_stores kind)
{
	return kind == XSHM_STORES_STREAMING ? xshm_copy_streaming : xshm_copy;
}

void xshm_bounce_fill(struct xshm_ep *ep, const struct xshm_region *peer,
		      void *buf, const struct iovec *iov, size_t count,
		      size_t offset, size_t len)
{
	struct xshm_store_choice *choice;
	enum xshm_stores kind;
	uint64_t start;

	switch (xshm_params.bounce_stores) {
	case XSHM_BOUNCE_STORES_CACHED:
		xshm_iov_gather(xshm_copy, buf, iov, count, offset, len);
		return;
	case XSHM_BOUNCE_STORES_STREAMING:
		xshm_iov_gather(xshm_copy_streaming, buf, iov, count, offset,
				len);
		return;
	case XSHM_BOUNCE_STORES_AUTO:
		break;
	}
	choice = &ep->store_choices[peer->mapping_id % XSHM_STORE_CHOICES];
	if (len < XSHM_STORE_TIMED_MIN) {
		xshm_iov_gather(copy_of(choice->chosen), buf, iov, count,
				offset, len);
		return;
	}
	kind = xshm_store_pick(choice);
	start = xshm_cycles();
	xshm_iov_gather(copy_of(kind), buf, iov, count, offset, len);
	xshm_store_record(choice, kind, xshm_cycles() - start, len);
}

bool xshm_bounce_fills_cached(const struct xshm_ep *ep,
			      const struct xshm_region *peer)
{
	switch (xshm_params.bounce_stores) {
	case XSHM_BOUNCE_STORES_CACHED:
		return true;
	case XSHM_BOUNCE_STORES_STREAMING:
		return false;
	case XSHM_BOUNCE_STORES_AUTO:
		break;
	}
	return ep->store_choices[peer->mapping_id % XSHM_STORE_CHOICES].chosen ==
	       XSHM_STORES_CACHED;
}

void xshm_bounce_fill_untimed(const struct xshm_ep *ep,
			      const struct xshm_region *peer, void *buf,
			      const struct iovec *iov, size_t count,
			      size_t offset, size_t len)
{
	xshm_iov_gather(xshm_bounce_fills_cached(ep, peer) ? xshm_copy :
			xshm_copy_streaming, buf, iov, count, offset, len);
}
