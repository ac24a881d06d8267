/*
 * Reporting completions: the CQ entry (through the peer CQ interface) and the
 * counter increment (through the peer counter interface) of every operation.
 * Counters count every operation, with or without a CQ entry; errors always
 * get one.
 */
#include "report/comp.h"
#include "objects/ep.h"

static void report(struct fid_peer_cq *cq, struct fid_peer_cntr *cntr,
		   void *context, uint64_t flags, size_t len, void *buf,
		   uint64_t data, uint64_t tag, fi_addr_t src, bool cq_entry)
{
	if (cq && cq_entry)
		cq->owner_ops->write(cq, context, flags, len, buf, data, tag,
				     src);
	if (cntr)
		cntr->owner_ops->inc(cntr);
}

static void report_err(struct fid_peer_cq *cq, struct fid_peer_cntr *cntr,
		       const struct fi_cq_err_entry *err)
{
	if (cq)
		cq->owner_ops->writeerr(cq, err);
	if (cntr)
		cntr->owner_ops->incerr(cntr);
}

/*
 * Sends count on the FI_SEND counter, RMA and atomics on FI_WRITE's or
 * FI_READ's.
 */
static struct fid_peer_cntr *tx_cntr_of(struct xshm_ep *ep, uint64_t flags)
{
	if (!(flags & (FI_RMA | FI_ATOMIC)))
		return ep->tx_cntr;
	return ep->rma_cntr[flags & FI_READ ? XSHM_CNTR_READ : XSHM_CNTR_WRITE];
}

void xshm_report_tx(struct xshm_ep *ep, void *context, uint64_t flags,
		    bool cq_entry)
{
	report(ep->tx_cq, tx_cntr_of(ep, flags), context, flags, 0, NULL, 0, 0,
	       FI_ADDR_NOTAVAIL, cq_entry);
}

void xshm_report_tx_err(struct xshm_ep *ep, const struct fi_cq_err_entry *err)
{
	report_err(ep->tx_cq, tx_cntr_of(ep, err->flags), err);
}

void xshm_report_rma_target(struct xshm_ep *ep, uint64_t flags, size_t len,
			    uint64_t data, fi_addr_t src, bool cq_entry)
{
	int kind = flags & FI_REMOTE_READ ? XSHM_CNTR_REMOTE_READ :
					    XSHM_CNTR_REMOTE_WRITE;

	if (!(ep->caps & FI_SOURCE))
		src = FI_ADDR_NOTAVAIL;
	report(ep->rx_cq, ep->rma_cntr[kind], NULL, flags, len, NULL, data, 0,
	       src, cq_entry);
}

void xshm_report_rx(struct xshm_ep *ep, void *context, uint64_t flags,
		    size_t len, void *buf, uint64_t data, uint64_t tag,
		    fi_addr_t src, bool cq_entry)
{
	/* Without FI_SOURCE no source is reported (fi_peer(3) asks for this). */
	if (!(ep->caps & FI_SOURCE))
		src = FI_ADDR_NOTAVAIL;
	ep->rx_reported++;
	report(ep->rx_cq, ep->rx_cntr, context, flags, len, buf, data, tag,
	       src, cq_entry);
}

void xshm_report_rx_err(struct xshm_ep *ep, const struct fi_cq_err_entry *err)
{
	ep->rx_reported++;
	report_err(ep->rx_cq, ep->rx_cntr, err);
}

/* A message received into entry: the completion xshm_report_rx would make. */
void xshm_report_rx_entry(struct xshm_ep *ep,
			  const struct fi_peer_rx_entry *entry, uint64_t flags,
			  size_t len, uint64_t data, uint64_t tag)
{
	ep->rx_reported++;
	report(ep->rx_cq, ep->rx_cntr, entry->context, flags, len,
	       entry->count ? entry->iov[0].iov_base : NULL, data, tag,
	       ep->caps & FI_SOURCE ? entry->addr : FI_ADDR_NOTAVAIL,
	       !ep->rx_selective || (entry->flags & FI_COMPLETION));
}
