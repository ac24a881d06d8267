#ifndef XSHM_PATH_H
#define XSHM_PATH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "base/params.h"
#include "shm/clock.h"
#include "shm/layout.h"

struct xshm_peer;
struct xshm_ep;

/* path.c: which path a large send takes, and the timings that choose it. */
struct xshm_send_path {
	bool rts;		/* the single copy; else bounce buffers */
	bool lone;		/* in no stream (xshm_path_joins_stream) */
	uint32_t timed_id;	/* XSHM_CMD_TIMED with this id; 0: untimed */
};
/*
 * For a send larger than xshm_params.path_min or than a bounce buffer:
 * whether it is lone, which every such send notes, and above path_min its
 * path.
 */
struct xshm_send_path xshm_path_choose(struct xshm_ep *ep,
				       const struct xshm_peer *peer,
				       const struct iovec *iov, size_t count,
				       size_t total, fi_addr_t dest,
				       uint64_t flags);
/*
 * The clock, read only for a timed send or message: the copies of those,
 * on both sides, are timed; 0 for the others.
 */
static inline uint64_t xshm_path_clock(bool timed)
{
	return timed ? xshm_now_ns() : 0;
}

/* Sender: its copies of timed send id took ns more. */
void xshm_path_sender_copied(struct xshm_ep *ep, uint32_t id, uint64_t ns);

/* Sender: a copy of send id (0: untimed) begun at start_ns is done. */
static inline void xshm_path_copy_done(struct xshm_ep *ep, uint32_t id,
				       uint64_t start_ns)
{
	if (id)
		xshm_path_sender_copied(ep, id, xshm_now_ns() - start_ns);
}
/* Sender: the receiver's XSHM_OP_TIMING for one of its timed sends. */
void xshm_path_timing(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		      const struct xshm_timing *timing);
void xshm_path_large_received(struct xshm_ep *ep, uint64_t sender_ep_id,
			      uint16_t cmd_flags, uint32_t id,
			      uint64_t ready_ns, uint64_t busy_ns);

/*
 * Receiver: a message of size bytes completed; ready_ns when its receive
 * was posted after it arrived, else 0; busy_ns the time its copies took.
 * Inline so that the small messages' receive path makes no call.
 */
static inline void xshm_path_received(struct xshm_ep *ep, uint64_t sender_ep_id,
				      uint16_t cmd_flags, uint32_t id,
				      size_t size, uint64_t ready_ns,
				      uint64_t busy_ns)
{
	if (size > xshm_params.path_min)
		xshm_path_large_received(ep, sender_ep_id, cmd_flags, id,
					 ready_ns, busy_ns);
}
#endif
