/*
 * Atomics (fi_atomic(3)), target-driven like RMA (rma.h): the initiator
 * pushes one XSHM_OP_ATOMIC cell holding the operation and its operands
 * (atomic_send.c), queued with the RMA operations in ep->rma_queue; the
 * target checks it against its registrations as RMA does, applies it
 * (atomic/apply.c), answers a fetch's or a compare's old values in one
 * XSHM_OP_READ_DATA cell (rma_reply.c) and acks with the status that
 * completes the operation (atomic_target.c).
 */
#ifndef XSHM_DATA_ATOMIC_H
#define XSHM_DATA_ATOMIC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "data/send.h"
#include "shm/layout.h"

struct xshm_ep;

/* An atomic in ep->rma_queue, then waiting for its ack. */
struct xshm_atomic_op {
	struct xshm_tx_op tx;	/* first; tx.iov: a fetch's result buffers */
	struct xshm_atomic hdr;
	size_t len;		/* bytes of operands and compare values */
	unsigned char bytes[];	/* copied at posting: the buffers are free */
};

/* One atomic call, shaped by objects/atomic.c; elements, not bytes. */
struct xshm_atomic_args {
	uint8_t kind;			/* XSHM_ATOMIC_* */
	uint8_t op;			/* enum fi_op */
	uint8_t datatype;		/* enum fi_datatype */
	size_t count;			/* elements */
	const struct iovec *src;	/* operands (none for FI_ATOMIC_READ) */
	size_t src_count;
	const struct iovec *cmp;	/* compare values */
	size_t cmp_count;
	const struct iovec *res;	/* old values, fetch and compare */
	size_t res_count;
	fi_addr_t dest;
	uint64_t addr;
	uint64_t key;
	void *context;
	uint64_t data;			/* FI_REMOTE_CQ_DATA */
	uint64_t flags;
};

/*
 * atomic_send.c: checks and posts one shaped by objects/atomic.c (pair
 * checked, lists validated); 0 or a negative error.
 */
ssize_t xshm_atomic_post(struct xshm_ep *ep,
			 const struct xshm_atomic_args *args);
/*
 * fi_atomic and fi_inject_atomic of one buffer (the pair of op and
 * datatype checked), pushed and completed at once where that may be: 0;
 * else 1, and xshm_atomic_post takes it.
 */
int xshm_atomic_write_short(struct xshm_ep *ep, const void *buf, size_t count,
			    fi_addr_t dest, uint64_t addr, uint64_t key,
			    uint8_t datatype, uint8_t op, void *context,
			    uint64_t flags);
/* Pushes a queued one: 0, -FI_EAGAIN, or an error (rma_send.c's loop). */
ssize_t xshm_atomic_push(struct xshm_ep *ep, struct xshm_tx_op *tx);
/* Elements of datatype one atomic moves at most: 0 when unsupported. */
size_t xshm_atomic_max_count(int kind, int op, int datatype);

/* atomic_target.c: an XSHM_OP_ATOMIC command, from a private header copy. */
void xshm_atomic_target_handle(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			       const struct xshm_cmd *shared);

#endif
