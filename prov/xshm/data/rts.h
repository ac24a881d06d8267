#ifndef XSHM_RTS_H
#define XSHM_RTS_H

#include <stddef.h>

#include "shm/layout.h"

#include <stdint.h>
#include <sys/uio.h>

struct xshm_ep;
struct xshm_region;
struct xshm_rx_msg;

/* Names the caller's buffers iov[count] in rts, with this process's pid. */
void xshm_rts_name(struct xshm_rts *rts, const struct iovec *iov,
		   size_t count);
/* The sender's buffers an RTS names, as an iovec; returns their count. */
size_t xshm_rts_iov(const struct xshm_rts *rts, struct iovec *iov);
/*
 * The region of sender_ep_id if it is open and its owner is pid, the
 * process an RTS names: a sender cannot point a single copy at a third
 * process.  NULL otherwise.
 */
struct xshm_region *xshm_rts_sender(struct xshm_ep *ep, uint64_t sender_ep_id,
				    int32_t pid);

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
