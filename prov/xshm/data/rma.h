/*
 * RMA (fi_rma(3)), target-driven: the initiator pushes a command naming the
 * target's key, address and length and its own buffers (rma_send.c); the
 * target checks it against its registrations and moves the data, in one
 * copy or through its ring (rma_target.c, rma_reply.c), then acks with a
 * status that completes the operation.  Where the target publishes its
 * registrations the initiator checks them itself and either copies
 * (rma_fast.c) or, for a small write, completes once the command is in the
 * ring, unacked (rma_way.c chooses).
 */
#ifndef XSHM_RMA_H
#define XSHM_RMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "data/send.h"
#include "shm/path_choice.h"

struct xshm_ep;
struct xshm_cmd;
struct xshm_peer;

/* An operation whose way was measured (rma_path.c); cls NULL: not. */
struct xshm_rma_timing {
	struct xshm_path_class *cls;
	uint64_t mapping_id;	/* of the target's region: the slot's */
	/* when posted, and ep->rma_copies.ns then; if timed, else ns 0 */
	struct xshm_path_mark start;
	size_t len;
	enum xshm_path path;
	bool write;
};

/* An RMA operation: in ep->rma_queue, then waiting for its ack. */
struct xshm_rma_op {
	struct xshm_tx_op tx;	/* first: an ack frees the op as one block */
	uint64_t key;
	uint64_t addr;
	bool single_copy;	/* the target copies it all, CMA */
	struct xshm_rma_timing timing;
	unsigned char inject[];	/* FI_INJECT: the bytes, the buffer gone */
};

/* An operation as posted, for the initiator's own checks. */
struct xshm_rma_desc {
	bool write;
	const struct iovec *iov;
	size_t count;
	size_t total;
	uint64_t addr;
	uint64_t key;
	void *context;
	uint64_t flags;
};

/* How an operation is tried first; what is refused goes to the target. */
enum xshm_rma_way {
	XSHM_RMA_VIA_TARGET,	/* the target checks and copies, then acks */
	XSHM_RMA_VIA_CMA,	/* the initiator copies (rma_fast.c) */
	XSHM_RMA_VIA_RING,	/* in cells and bounce buffers, never a
				 * single copy; a write posted where it may */
};

/* rma_way.c: *timing says whether the way was measured. */
enum xshm_rma_way xshm_rma_way_of(struct xshm_ep *ep,
				  const struct xshm_peer *peer,
				  const struct xshm_rma_desc *op,
				  struct xshm_rma_timing *timing);

/*
 * rma_path.c: the measured way of a large operation, when it has one
 * (timing->cls set; timing->path the way); what such an operation took,
 * at its completion (ok) or failure; a measured way given up for another.
 * Under the domain lock.
 */
bool xshm_rma_path_pick(struct xshm_ep *ep, const struct xshm_peer *peer,
			const struct xshm_rma_desc *op,
			struct xshm_rma_timing *timing);
void xshm_rma_path_done(struct xshm_ep *ep, struct xshm_rma_timing *timing,
			bool ok);
static inline void xshm_rma_path_forget(struct xshm_ep *ep,
					struct xshm_rma_timing *timing)
{
	xshm_rma_path_done(ep, timing, false);
}
/* The same for an acked tx, when it is an RMA operation. */
void xshm_rma_tx_done(struct xshm_ep *ep, struct xshm_tx_op *tx, bool ok);
/*
 * Around an initiator's single copy: its time, while a ring operation is
 * timed, is the initiator's and not the ring's (rma_path.c).  begin
 * returns what end takes.
 */
uint64_t xshm_rma_copy_begin(const struct xshm_ep *ep);
void xshm_rma_copy_end(struct xshm_ep *ep, uint64_t began_ns);
/*
 * Whether op, a write, may be posted: 1 yes, 0 no (it goes acked), or the
 * negative error it fails with, found here.  Under the domain lock,
 * which also guards what peer's region keeps of the check (mr_seen).
 */
int xshm_rma_posted_check(struct xshm_ep *ep, struct xshm_peer *peer,
			  const struct xshm_rma_desc *op);
/*
 * Acked writes from this size on take the single copy, whatever the ring
 * was measured at: in streams of them (Open MPI's osu_put_bw, 64 in
 * flight) the ring streamed 64 KiB at 19.5 GB/s in some runs and 2.2 in
 * others, where the target progressed late, against 8-9 for the single
 * copy, and the measured choice did not leave the ring in time.
 */
#define XSHM_RMA_ACKED_RING_MAX	((size_t) 16 << 10)
/*
 * Whether a write of total bytes may hold the target's bounce buffers: all
 * it needs while half of its pool is free.
 */
bool xshm_rma_buffers_free(const struct xshm_peer *peer, size_t total);
/* The same for an atomic that writes len bytes and fetches nothing. */
int xshm_atomic_posted_check(const struct xshm_ep *ep,
			     struct xshm_peer *peer, uint64_t key,
			     uint64_t addr, size_t len, uint64_t flags);

/*
 * rma_fast.c: true when op was done here (completed, maybe in error),
 * false when it takes the target-driven path.  Under the domain lock.
 * A measured op's timing is done (copied) or forgotten (not) here.
 */
bool xshm_rma_fast_try(struct xshm_ep *ep, struct xshm_peer *peer,
		       const struct xshm_rma_desc *op,
		       struct xshm_rma_timing *timing);
/* op's completion, with err (0: success), at the call. */
void xshm_rma_complete_now(struct xshm_ep *ep, const struct xshm_rma_desc *op,
			   int err);

/*
 * rma_split.c: whether op is large enough to split with its target; the
 * initiator's copy of op into or out of remote (the target's pinned range),
 * split; the target's part of a split offer, after its checks.
 */
bool xshm_rma_split_wanted(const struct xshm_rma_desc *op);
int xshm_rma_split_copy(struct xshm_ep *ep, struct xshm_peer *peer,
			const struct xshm_rma_desc *op,
			const struct iovec *remote);
struct xshm_rts;
int xshm_rma_split_serve(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 const struct xshm_rts *src, const struct iovec *local,
			 size_t nlocal);

/*
 * A write or atomic in the cell's first line (struct xshm_rma_short): head
 * and the header, for payload_len bytes the caller puts after head.
 */
static inline void xshm_rma_short_fill(struct xshm_cmd *cmd, uint8_t op,
				       uint16_t flags, uint64_t key,
				       uint64_t src_ep_id,
				       const struct xshm_rma_short *head,
				       size_t payload_len)
{
	memcpy(cmd->short_data, head, sizeof(*head));
	cmd->op = op;
	cmd->proto = XSHM_PROTO_SHORT;
	cmd->flags = flags;
	cmd->chunk_len = (uint32_t) (sizeof(*head) + payload_len);
	cmd->src_ep_id = src_ep_id;
	cmd->tag = key;
}

/* rma_send.c: op is XSHM_OP_WRITE or XSHM_OP_READ. */
ssize_t xshm_rma_post(struct xshm_ep *ep, uint8_t op, const struct iovec *iov,
		      size_t count, fi_addr_t dest, uint64_t addr, uint64_t key,
		      uint64_t data, void *context, uint64_t flags);
/* The queue holds atomics too (atomic.h), pushed in the same order. */
void xshm_rma_progress(struct xshm_ep *ep);
/*
 * Whether a posted operation with these flags may be pushed in its call,
 * from the stack: nothing waits before it in the queue, and no fence.
 */
bool xshm_rma_push_now(const struct xshm_ep *ep, uint64_t flags);
/* The peer tx was posted to, or why it is not there any more. */
int xshm_rma_peer_of(struct xshm_ep *ep, const struct xshm_tx_op *tx,
		     struct xshm_peer **peer);
void xshm_rma_close(struct xshm_ep *ep);

/*
 * rma_target.c: the target's events of a served operation of kind (FI_RMA
 * or FI_ATOMIC) on len bytes of mr (fi_cq(3), fi_cntr(3)): its endpoint's
 * CQ entry when remote CQ data asks for one, its counter, and mr's.
 */
struct xshm_mr_entry;
void xshm_rma_report_served(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    uint64_t kind, bool write, size_t len,
			    const struct xshm_mr_entry *mr);
/* rma_target.c: a command of the ops below, from a private header copy. */
static inline bool xshm_rma_is_cmd(uint8_t op)
{
	return op == XSHM_OP_WRITE || op == XSHM_OP_READ ||
	       op == XSHM_OP_READ_DATA;
}
void xshm_rma_target_handle(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    const struct xshm_cmd *shared);

/*
 * rma_reply.c: reads and fetching atomics answered in the initiator's
 * ring, both ends.  A reply in one cell completes the operation itself,
 * without an ack after it.
 */
int xshm_rma_reply_start(struct xshm_ep *ep, uint64_t ep_id, uint32_t ack_id,
			 const struct iovec *iov, size_t count, size_t len);
void xshm_rma_reply_progress(struct xshm_ep *ep);
void xshm_rma_read_data(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			const struct xshm_cmd *shared);
void xshm_rma_reply_close(struct xshm_ep *ep);

#endif
