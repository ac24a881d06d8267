/*
 * The target's side of atomics.  A command is checked, from private
 * copies, before anything is touched: its shape, the pair of operation and
 * datatype, then key, access and range against the domain's registrations
 * as RMA's are (mr/mr_table.c): FI_REMOTE_WRITE for an atomic write,
 * FI_REMOTE_READ for a fetching read, both for the other fetches and the
 * compares.  A fetch's old values are kept, then the operation is applied:
 * in place when the target elements lie in one buffer, aligned for their
 * type; otherwise on a gathered, aligned copy (a registration may split an
 * element between its buffers) that is written back.
 *
 * Atomicity: every atomic to a registration of this domain is applied by
 * one of this domain's endpoints (the key is the domain's), and each does
 * it here, in its progress, which holds the domain's lock (with
 * FI_THREAD_DOMAIN the application serialises all use of the domain
 * instead).  So no two atomics on this domain's registrations overlap,
 * whichever processes or threads sent them; an endpoint's atomics are
 * applied in the order of its ring, which is the order they were pushed.
 * Memory the application also changes by other means, or registers in
 * another domain too, is not covered.
 */
#include <stdalign.h>
#include <string.h>

#include "data/atomic.h"
#include "atomic/apply.h"
#include "base/iov.h"
#include "base/provider.h"
#include "data/ack.h"
#include "data/rma.h"
#include "mr/mr_table.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "report/comp.h"

/* The operands of one atomic, copied out of the cell, and its targets. */
struct atomic_work {
	struct xshm_atomic hdr;
	size_t len;		/* bytes of the target elements */
	alignas(32) unsigned char src[XSHM_ATOMIC_MAX_BYTES];
	alignas(32) unsigned char cmp[XSHM_ATOMIC_MAX_BYTES];
	alignas(32) unsigned char dst[XSHM_ATOMIC_MAX_BYTES];
	alignas(32) unsigned char old[XSHM_ATOMIC_MAX_BYTES];
};

static size_t operand_sets(const struct xshm_atomic *hdr)
{
	return (hdr->op != FI_ATOMIC_READ) + (hdr->kind == XSHM_ATOMIC_COMPARE);
}

/* The shape of a command, before any of it is trusted. */
static bool atomic_cmd_valid(const struct xshm_cmd *cmd,
			     const struct xshm_atomic *hdr, size_t *len)
{
	size_t size = xshm_atomic_type_size(hdr->datatype);

	if (cmd->proto != XSHM_PROTO_INLINE ||
	    !xshm_atomic_supported(hdr->kind, hdr->op, hdr->datatype) ||
	    !hdr->count || hdr->count > XSHM_ATOMIC_MAX_BYTES / size)
		return false;
	/* Only what fetches nothing may be posted, and it is not acked. */
	if ((cmd->flags & XSHM_CMD_POSTED) &&
	    (hdr->kind != XSHM_ATOMIC_WRITE || (cmd->flags & XSHM_CMD_ACK)))
		return false;
	*len = hdr->count * size;
	return cmd->msg_size == *len &&
	       cmd->chunk_len == sizeof(*hdr) + operand_sets(hdr) * *len;
}

static uint64_t access_of(const struct xshm_atomic *hdr)
{
	if (hdr->kind == XSHM_ATOMIC_WRITE)
		return FI_REMOTE_WRITE;
	if (hdr->op == FI_ATOMIC_READ)
		return FI_REMOTE_READ;
	return FI_REMOTE_READ | FI_REMOTE_WRITE;
}

/* The operands, then the compare values, from where the command has them. */
static void copy_operands(struct atomic_work *w, const unsigned char *from)
{
	if (w->hdr.op != FI_ATOMIC_READ) {
		memcpy(w->src, from, w->len);
		from += w->len;
	}
	if (w->hdr.kind == XSHM_ATOMIC_COMPARE)
		memcpy(w->cmp, from, w->len);
}

/*
 * Applies w to the registered range; under the domain's lock.  Elements in
 * one buffer, aligned for their type, are changed where they are; others
 * are gathered into w->dst and written back.
 */
static int apply(struct xshm_ep *ep, struct atomic_work *w,
		 const struct xshm_mr_entry **mr)
{
	struct iovec local[XSHM_IOV_LIMIT];
	size_t nlocal;
	unsigned char *target = w->dst;
	int ret = xshm_mr_table_resolve(&ep->domain->mr_table, w->hdr.key,
					w->hdr.addr, w->len, access_of(&w->hdr),
					local, &nlocal, mr);

	if (ret)
		return ret;
	if (nlocal == 1 && xshm_atomic_aligned(w->hdr.datatype,
					       local[0].iov_base))
		target = local[0].iov_base;
	else
		xshm_iov_copy_from(w->dst, local, nlocal, 0, w->len);
	if (w->hdr.kind != XSHM_ATOMIC_WRITE)
		memcpy(w->old, target, w->len);
	xshm_atomic_apply(w->hdr.op, w->hdr.datatype, target,
			  w->hdr.op != FI_ATOMIC_READ ? w->src : NULL,
			  w->hdr.kind == XSHM_ATOMIC_COMPARE ? w->cmp : NULL,
			  w->hdr.count);
	if (target == w->dst && w->hdr.op != FI_ATOMIC_READ)
		xshm_iov_copy_to(local, nlocal, 0, w->dst, w->len);
	return 0;
}

/*
 * Checks and applies the atomic of cmd: 0, a negative error, or 1 when its
 * old values are on their way, whose sender acks it.
 */
static int serve(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		 struct atomic_work *w, const unsigned char *operands,
		 const struct xshm_mr_entry **mr)
{
	uint64_t role = access_of(&w->hdr);
	struct iovec old = { .iov_base = w->old, .iov_len = w->len };
	int ret;

	/* An endpoint that did not ask to be a target is none. */
	if ((ep->caps & (FI_ATOMIC | role)) != (FI_ATOMIC | role))
		return -FI_EOPNOTSUPP;
	copy_operands(w, operands);
	ret = apply(ep, w, mr);
	if (ret || w->hdr.kind == XSHM_ATOMIC_WRITE)
		return ret;
	ret = xshm_rma_reply_start(ep, cmd->src_ep_id, cmd->ack_id, &old, 1,
				   w->len);
	return ret ? ret : 1;
}

/* The remote events of a completed atomic (fi_cntr(3)), as RMA's. */
static void report_target(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			  const struct atomic_work *w,
			  const struct xshm_mr_entry *mr)
{
	xshm_rma_report_served(ep, cmd, FI_ATOMIC,
			       w->hdr.kind == XSHM_ATOMIC_WRITE, w->len, mr);
}

/*
 * An atomic in the cell's first line (struct xshm_rma_short): a posted
 * write, or a fetch or compare (told apart by its op) asking for its ack.
 * True, with w's header and length and whole's size and ack id set, when
 * its shape holds.
 */
static bool short_valid(const struct xshm_cmd *cmd,
			const struct xshm_cmd *shared, struct atomic_work *w,
			struct xshm_cmd *whole)
{
	bool posted = cmd->flags == XSHM_CMD_POSTED;
	struct xshm_rma_short head;
	size_t size;

	if ((!posted && cmd->flags != XSHM_CMD_ACK) ||
	    cmd->chunk_len < sizeof(head))
		return false;
	memcpy(&head, shared->short_data, sizeof(head));
	w->hdr = (struct xshm_atomic) {
		.key = cmd->tag, .addr = head.addr, .op = head.op,
		.datatype = head.datatype, .count = head.count,
		.kind = posted ? XSHM_ATOMIC_WRITE : XSHM_ATOMIC_COMPARE,
	};
	/* acked: a compare if the pair is one, else it must be a fetch */
	if (!xshm_atomic_supported(w->hdr.kind, head.op, head.datatype)) {
		if (posted)
			return false;
		w->hdr.kind = XSHM_ATOMIC_FETCH;
		if (!xshm_atomic_supported(w->hdr.kind, head.op,
					   head.datatype))
			return false;
	}
	whole->ack_id = posted ? 0 : head.ack_id;
	size = xshm_atomic_type_size(w->hdr.datatype);
	if (!head.count || head.count > XSHM_RMA_SHORT_MAX / size)
		return false;
	w->len = head.count * size;
	whole->msg_size = w->len;
	return operand_sets(&w->hdr) * w->len <= XSHM_RMA_SHORT_MAX &&
	       cmd->chunk_len == sizeof(head) + operand_sets(&w->hdr) * w->len;
}

/* Its remote events; then its ack, or, posted, a failure only logged. */
static void finish(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		   const struct atomic_work *w, const struct xshm_mr_entry *mr,
		   int ret)
{
	if (ret >= 0)
		report_target(ep, cmd, w, mr);
	if (cmd->flags & XSHM_CMD_POSTED) {
		/* its initiator has completed it: only the log can tell */
		if (ret < 0)
			XSHM_WARN(FI_LOG_EP_DATA, "posted atomic dropped: %s\n",
				  fi_strerror(-ret));
		return;
	}
	if (ret != 1 && !ep->closing)
		xshm_ack_send(ep, cmd->src_ep_id, cmd->ack_id, -ret);
}

void xshm_atomic_target_handle(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			       const struct xshm_cmd *shared)
{
	const struct xshm_mr_entry *mr = NULL;
	struct atomic_work w;
	int ret;

	if (cmd->proto == XSHM_PROTO_SHORT) {
		struct xshm_cmd whole = *cmd;

		ret = short_valid(cmd, shared, &w, &whole) ?
		      serve(ep, &whole, &w, shared->short_data +
			    sizeof(struct xshm_rma_short), &mr) : -FI_EINVAL;
		finish(ep, &whole, &w, mr, ret);
		return;
	}
	if (cmd->chunk_len < sizeof(w.hdr) || cmd->chunk_len > XSHM_INLINE_MAX) {
		XSHM_WARN(FI_LOG_EP_DATA, "malformed atomic command dropped\n");
		return;
	}
	memcpy(&w.hdr, shared->data, sizeof(w.hdr));
	ret = atomic_cmd_valid(cmd, &w.hdr, &w.len) ?
	      serve(ep, cmd, &w, shared->data + sizeof(w.hdr), &mr) :
	      -FI_EINVAL;
	finish(ep, cmd, &w, mr, ret);
}
