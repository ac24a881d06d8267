/*
 * A large initiator-driven RMA operation (rma_fast.c) split with its
 * target, so that two cores copy at once, as a large message's copy is
 * split with its sender (rts.c).  The initiator, holding the pin on the
 * target's registration, starts a generation of the claims in its own
 * header (shm/scopy/split.h), pushes into the target's ring an RTS-shaped
 * command (XSHM_CMD_SPLIT, the generation in tag) naming its buffers and
 * the target's key, address and length, then copies chunks from the
 * front.  The target, when it handles the command, checks it like any
 * other (rma_target.c: key, access and range against its own table, the
 * pid against the initiator's region), then claims chunks from the back
 * and copies each (a write: process_vm_readv from the initiator's buffers;
 * a read: process_vm_writev into them), counting each in the claims' pushed
 * word.  It acks nothing: the claims are the whole protocol.
 *
 * Progress independence: the initiator claims chunks until none is left,
 * the target's unclaimed ones too, so it never waits on a target that does
 * not progress; it then waits only for chunks the target claimed and is
 * copying now, and stops waiting once the target's process is gone.  A
 * late command finds the generation finished or replaced: its claims fail
 * and it touches nothing.  The pin is released only once every claimed
 * chunk is in, so the target's fi_close(mr) still waits for the copy.
 */
#include <errno.h>

#include "data/rma.h"
#include "base/params.h"
#include "data/control.h"
#include "data/liveness.h"
#include "data/rts.h"
#include "objects/ep.h"
#include "peer/peer.h"
#include "shm/layout.h"
#include "shm/liveness.h"
#include "shm/mr_pub.h"
#include "shm/proc.h"
#include "shm/region.h"
#include "shm/scopy/split.h"

/* Where chunk of an operation of len bytes starts, and its length. */
static size_t chunk_at(long chunk, size_t len, size_t *offset)
{
	size_t size = xshm_split_rma_chunk_size(len);

	*offset = (size_t) chunk * size;
	return len - *offset < size ? len - *offset : size;
}

bool xshm_rma_split_wanted(const struct xshm_rma_desc *op)
{
	size_t nchunks;

	if (!xshm_params.rma_split_min || op->total < xshm_params.rma_split_min ||
	    op->count > XSHM_RTS_IOV_MAX)
		return false;
	nchunks = xshm_split_rma_chunks(op->total);
	return nchunks >= 2 && nchunks <= XSHM_SPLIT_CHUNKS_MAX;
}

/* The offer, in the target's ring; false when it has no room. */
static bool offer(struct xshm_ep *ep, struct xshm_peer *peer,
		  const struct xshm_rma_desc *op, uint32_t gen)
{
	struct xshm_rma_rts full = {
		.rma = { .key = op->key, .addr = op->addr, .len = op->total },
	};
	struct xshm_control ctl = {
		.op = op->write ? XSHM_OP_WRITE : XSHM_OP_READ,
		.proto = XSHM_PROTO_RTS, .flags = XSHM_CMD_SPLIT, .tag = gen,
		.msg_size = op->total, .payload = &full,
		.payload_len = sizeof(full),
	};

	xshm_rts_name(&full.src, op->iov, op->count);
	return xshm_control_push(ep, &peer->region, &ctl);
}

/* One piece of the initiator's copy, at offset in the operation. */
static int copy_piece(struct xshm_ep *ep, const struct xshm_peer *peer,
		      const struct xshm_rma_desc *op, const struct iovec *remote,
		      size_t offset, size_t n)
{
	if (op->write)
		return ep->scopy->push(peer->owner.pid, op->iov, op->count,
				       remote, 1, offset, n);
	return ep->scopy->pull(peer->owner.pid, op->iov, op->count, remote, 1,
			       offset, n);
}

/*
 * The initiator's part: chunks from the front until none is left; after
 * the first, all that is left in one call if the target has not joined
 * (its late claims then fail).  *chunk_ns: the longest a chunk took.
 */
static int copy_front(struct xshm_ep *ep, const struct xshm_peer *peer,
		      const struct xshm_rma_desc *op, const struct iovec *remote,
		      uint32_t gen, uint64_t *chunk_ns)
{
	struct xshm_split *split = &ep->region.hdr->split;
	size_t nchunks = xshm_split_rma_chunks(op->total), offset, n;
	long chunk, rest;
	int ret = 0;

	while ((chunk = xshm_split_claim(split, gen, nchunks, true)) >= 0) {
		uint64_t start = xshm_now_ns();

		n = chunk_at(chunk, op->total, &offset);
		if (!ret)
			ret = copy_piece(ep, peer, op, remote, offset, n);
		xshm_split_time_chunk(chunk_ns, start);
		rest = xshm_split_claim_rest(split, gen, nchunks);
		if (rest >= 0) {
			chunk_at(rest, op->total, &offset);
			return ret ? ret : copy_piece(ep, peer, op, remote, offset,
						      op->total - offset);
		}
	}
	return ret;
}

int xshm_rma_split_copy(struct xshm_ep *ep, struct xshm_peer *peer,
			const struct xshm_rma_desc *op,
			const struct iovec *remote)
{
	struct xshm_split *split = &ep->region.hdr->split;
	uint32_t gen = ++ep->split_gen;
	uint64_t chunk_ns = 0;
	int ret, waited;

	xshm_split_start(split, gen);
	if (!offer(ep, peer, op, gen))
		return copy_piece(ep, peer, op, remote, 0, op->total);
	ret = copy_front(ep, peer, op, remote, gen, &chunk_ns);
	waited = xshm_split_wait_other(split, gen, peer->owner, chunk_ns);
	return ret ? ret : waited;
}

int xshm_rma_split_serve(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 const struct xshm_rts *src, const struct iovec *local,
			 size_t nlocal)
{
	struct iovec remote[XSHM_RTS_IOV_MAX];
	size_t len = cmd->msg_size, nchunks = xshm_split_rma_chunks(len);
	struct xshm_region *initiator;
	struct xshm_split *split;
	long chunk;

	if (!ep->scopy)
		return -FI_EOPNOTSUPP;
	initiator = xshm_rts_sender(ep, cmd->src_ep_id, src->pid);
	if (!initiator)
		return -FI_EHOSTUNREACH;
	split = &initiator->hdr->split;
	xshm_rts_iov(src, remote);
	while ((chunk = xshm_split_claim(split, (uint32_t) cmd->tag, nchunks,
					 false)) >= 0) {
		size_t offset, n = chunk_at(chunk, len, &offset);
		int ret = cmd->op == XSHM_OP_WRITE ?
			ep->scopy->pull(src->pid, local, nlocal, remote,
					src->iov_count, offset, n) :
			ep->scopy->push(src->pid, local, nlocal, remote,
					src->iov_count, offset, n);

		xshm_split_pushed(split, ret != 0);
	}
	return 0;
}
