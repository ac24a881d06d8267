#ifndef XSHM_RTS_H
#define XSHM_RTS_H

#include <stddef.h>

#include "shm/layout.h"

struct xshm_ep;
struct xshm_rx_msg;

/*
 * Large messages named by an RTS (rts.c).  xshm_rts_copy copies len bytes
 * of a matched one into its receive buffers, with its sender's help when
 * that comes; 0 or a negative errno.  xshm_rts_offered is the sender's
 * side: it pushes its share of the chunks the receiver offers.
 */
int xshm_rts_copy(struct xshm_rx_msg *msg, size_t len);
void xshm_rts_offered(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		      const struct xshm_rts *offer);
#endif
