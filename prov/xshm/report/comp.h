/* Reporting (comp.c): every completion goes to the CQ and counter here. */
#ifndef XSHM_COMP_H
#define XSHM_COMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "xshm/fi_peer.h"

struct xshm_ep;

void xshm_report_tx(struct xshm_ep *ep, void *context, uint64_t flags,
		    bool cq_entry);
void xshm_report_tx_err(struct xshm_ep *ep, const struct fi_cq_err_entry *err);
void xshm_report_rx(struct xshm_ep *ep, void *context, uint64_t flags,
		    size_t len, void *buf, uint64_t data, uint64_t tag,
		    fi_addr_t src, bool cq_entry);
void xshm_report_rx_err(struct xshm_ep *ep, const struct fi_cq_err_entry *err);
/*
 * An RMA operation served for a peer: its CQ entry (remote CQ data) and
 * the FI_REMOTE_WRITE or FI_REMOTE_READ counter.
 */
void xshm_report_rma_target(struct xshm_ep *ep, uint64_t flags, size_t len,
			    uint64_t data, fi_addr_t src, bool cq_entry);
/* A message received into entry, its buffers and context; selective aware. */
void xshm_report_rx_entry(struct xshm_ep *ep,
			  const struct fi_peer_rx_entry *entry, uint64_t flags,
			  size_t len, uint64_t data, uint64_t tag);
#endif
