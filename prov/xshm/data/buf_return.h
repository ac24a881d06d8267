#ifndef XSHM_BUF_RETURN_H
#define XSHM_BUF_RETURN_H

#include <stdint.h>

struct xshm_ep;

/* A bounce buffer the receive path is done with, freed in a batch (buf_return.c). */
void xshm_buf_return(struct xshm_ep *ep, uint32_t index, uint64_t borrower);
void xshm_buf_return_flush(struct xshm_ep *ep);

#endif
