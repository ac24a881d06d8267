/* Acknowledgements (ack.c) for FI_DELIVERY_COMPLETE and FI_MATCH_COMPLETE. */
#ifndef XSHM_ACK_H
#define XSHM_ACK_H

#include <stdint.h>

struct xshm_ep;
struct xshm_tx_op;

void xshm_ack_send(struct xshm_ep *ep, uint64_t sender_ep_id, uint32_t ack_id,
		   int status);
void xshm_ack_flush(struct xshm_ep *ep);
/* A new id for an ack or a timing; never 0. */
uint32_t xshm_ack_new_id(struct xshm_ep *ep);
void xshm_ack_received(struct xshm_ep *ep, uint64_t from_ep_id, uint32_t ack_id,
		       int status);
void xshm_ack_reap(struct xshm_ep *ep);
void xshm_ack_close(struct xshm_ep *ep);
/* The send from_ep_id's ack_id will complete, or NULL. */
struct xshm_tx_op *xshm_ack_waiting(struct xshm_ep *ep, uint64_t from_ep_id,
				    uint32_t ack_id);
/* op, found waiting, acked with status: completed and freed. */
void xshm_ack_complete(struct xshm_ep *ep, struct xshm_tx_op *op, int status);
/* A sender whose ack cannot be pushed (its ring is full); 0: none waits. */
uint64_t xshm_ack_blocked_sender(const struct xshm_ep *ep);
void xshm_ack_wait_fail(struct xshm_ep *ep, struct xshm_tx_op *op, int err);

#endif
