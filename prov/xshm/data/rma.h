/*
 * RMA (fi_rma(3)), target-driven: the initiator pushes a command naming the
 * target's key, address and length and its own buffers (rma_send.c); the
 * target checks it against its registrations and moves the data, in one
 * copy or through its ring (rma_target.c, rma_reply.c), then acks with a
 * status that completes the operation.
 */
#ifndef XSHM_RMA_H
#define XSHM_RMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "data/send.h"

struct xshm_ep;
struct xshm_cmd;
struct xshm_peer;

/* An RMA operation: in ep->rma_queue, then waiting for its ack. */
struct xshm_rma_op {
	struct xshm_tx_op tx;	/* first: an ack frees the op as one block */
	uint64_t key;
	uint64_t addr;
	bool single_copy;	/* the target copies it all, CMA */
	unsigned char inject[];	/* FI_INJECT: the bytes, the buffer gone */
};

/* An operation the initiator may copy itself (rma_fast.c). */
struct xshm_rma_fast {
	bool write;
	const struct iovec *iov;
	size_t count;
	size_t total;
	uint64_t addr;
	uint64_t key;
	void *context;
	uint64_t flags;
};

/*
 * rma_fast.c: true when op was done here (completed, maybe in error),
 * false when it takes the target-driven path.  Under the domain lock.
 */
struct xshm_peer;
bool xshm_rma_fast_try(struct xshm_ep *ep, struct xshm_peer *peer,
		       const struct xshm_rma_fast *op);

/* rma_send.c: op is XSHM_OP_WRITE or XSHM_OP_READ. */
ssize_t xshm_rma_post(struct xshm_ep *ep, uint8_t op, const struct iovec *iov,
		      size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		      uint64_t data, void *context, uint64_t flags);
/* The queue holds atomics too (atomic.h), pushed in the same order. */
void xshm_rma_progress(struct xshm_ep *ep);
/* The peer tx was posted to, or why it is not there any more. */
int xshm_rma_peer_of(struct xshm_ep *ep, const struct xshm_tx_op *tx,
		     struct xshm_peer **peer);
void xshm_rma_close(struct xshm_ep *ep);

/* rma_target.c: a command of the ops below, from a private header copy. */
static inline bool xshm_rma_is_cmd(uint8_t op)
{
	return op == XSHM_OP_WRITE || op == XSHM_OP_READ ||
	       op == XSHM_OP_READ_DATA;
}
void xshm_rma_target_handle(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    const struct xshm_cmd *shared);

/* rma_reply.c: reads answered in the initiator's ring, both ends. */
int xshm_rma_reply_start(struct xshm_ep *ep, uint64_t ep_id, uint32_t ack_id,
			 const struct iovec *iov, size_t count, size_t len);
void xshm_rma_reply_progress(struct xshm_ep *ep);
void xshm_rma_read_data(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			const struct xshm_cmd *shared);
void xshm_rma_reply_close(struct xshm_ep *ep);

#endif
