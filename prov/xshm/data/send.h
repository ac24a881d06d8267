/*
 * The send path (send.c: the whole-message path and xshm_send;
 * send_queue.c: sends that wait in ep->tx_queue).
 */
#ifndef XSHM_SEND_H
#define XSHM_SEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "base/list.h"
#include "base/provider.h"
#include "shm/liveness.h"

struct xshm_ep;

/* A send not yet fully pushed into the peer's ring. */
struct xshm_tx_op {
	struct xshm_dlist link;
	uint8_t op;			/* XSHM_OP_MSG or XSHM_OP_TAGGED */
	uint16_t cmd_flags;
	fi_addr_t dest;
	uint64_t dest_ep_id;
	uint64_t tag;
	uint64_t data;
	void *context;
	uint64_t comp_flags;		/* FI_SEND | FI_MSG or FI_TAGGED */
	bool cq_entry;			/* a CQ entry wanted (counters always count) */
	size_t iov_count;
	size_t total;
	size_t sent;
	bool started;			/* first cell pushed */
	bool fence;			/* FI_FENCE: waits for all before it */
	bool rts;			/* the receiver pulls it (single copy) */
	bool lone;			/* in no stream (path.h): warm buffers */
	bool cells;			/* whole in a run of cells */
	uint32_t ack_id;		/* XSHM_CMD_ACK: completes on its ack */
	bool posted;			/* RMA, atomics: complete once pushed */
	uint32_t timed_id;		/* XSHM_CMD_TIMED: its time reported */
	struct xshm_owner dest_owner;	/* the receiver process it was posted to */
	/* last: an op may be zeroed up to it, its first iov_count set */
	struct iovec iov[XSHM_IOV_LIMIT];
};
/*
 * What every send, and every RMA operation, checks first: the endpoint
 * enabled, the iov, the sizes; *total: the bytes.  0 or a negative error.
 */
ssize_t xshm_tx_check(const struct xshm_ep *ep, const struct iovec *iov,
		      size_t count, uint64_t flags, size_t *total);
ssize_t xshm_send(struct xshm_ep *ep, uint8_t op, const struct iovec *iov,
		  size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
		  void *context, uint64_t flags);
/* xshm_send of one buffer, short ones without the general path. */
ssize_t xshm_send_one(struct xshm_ep *ep, uint8_t op, const void *buf,
		      size_t len, fi_addr_t dest, uint64_t tag, void *context,
		      uint64_t flags);
void xshm_tx_progress(struct xshm_ep *ep);
ssize_t xshm_tx_cancel(struct xshm_ep *ep, void *context);
void xshm_tx_abort_all(struct xshm_ep *ep);
void xshm_tx_queue_fail(struct xshm_ep *ep, struct xshm_tx_op *op, int err);

#endif
