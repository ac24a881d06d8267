/*
 * What the receive path's files share among themselves (recv_cmd.c,
 * recv_msg.c, recv_srx_ops.c): where a command's payload is, the steps of
 * a message that more than one stage takes, and the small helpers every
 * stage calls, inline as they were when the path was one file.
 */
#ifndef XSHM_RECV_INT_H
#define XSHM_RECV_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>

#include "objects/ep.h"
#include "base/iov.h"
#include "data/recv.h"
#include "xshm/fi_peer.h"
#include "data/path.h"
#include "shm/layout.h"

static inline void copy_to_entry(struct fi_peer_rx_entry *entry, size_t offset,
				 const void *data, size_t len)
{
	xshm_iov_copy_to(entry->iov, entry->count, offset, data, len);
}

static inline uint64_t timed_now(uint16_t cmd_flags)
{
	return xshm_path_clock(cmd_flags & XSHM_CMD_TIMED);
}

static inline uint64_t comp_flags(uint8_t op, uint16_t cmd_flags,
				  const struct fi_peer_rx_entry *entry)
{
	return FI_RECV | (op == XSHM_OP_TAGGED ? FI_TAGGED : FI_MSG) |
	       (cmd_flags & XSHM_CMD_REMOTE_CQ_DATA ? FI_REMOTE_CQ_DATA : 0) |
	       (entry->flags & FI_MULTI_RECV);
}

/*
 * Where the payload of a message's first command is: one piece, or for
 * XSHM_PROTO_CELLS the first cell's data and then the cells after it, or
 * for a whole message a little over a bounce buffer (whole_payload only)
 * the buffer and then the rest in the command's cell.
 */
struct rx_payload {
	const void *piece[XSHM_CELLS_MAX];
	uint32_t len[XSHM_CELLS_MAX];
	uint32_t count;
};

/* get_tag as libfabric's own headers up to 1.22 declare it (peer_abi). */
typedef int (*get_tag_sizeless_fn)(struct fid_peer_srx *srx, fi_addr_t addr,
				   uint64_t tag,
				   struct fi_peer_rx_entry **entry);

static inline int get_entry(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			    fi_addr_t src, struct fi_peer_rx_entry **entry)
{
	struct fid_peer_srx *srx = ep->srx;

	if (cmd->op != XSHM_OP_TAGGED)
		return srx->owner_ops->get_msg(srx, src, cmd->msg_size, entry);
	if (ep->owner_get_tag_sizeless)
		return ((get_tag_sizeless_fn) (void *) srx->owner_ops->get_tag)(
			srx, src, cmd->tag, entry);
	return srx->owner_ops->get_tag(srx, src, cmd->msg_size, cmd->tag,
				       entry);
}

/* recv_msg.c: the stages of a message. */
bool xshm_rx_match_first(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			 const struct rx_payload *payload, fi_addr_t src,
			 struct fi_peer_rx_entry *entry, int ret);
void xshm_rx_handle_chunk(struct xshm_ep *ep, const struct xshm_cmd *cmd,
			  const void *data);
void xshm_rx_handle_abort(struct xshm_ep *ep, const struct xshm_cmd *cmd);
void xshm_rx_finish_arrival(struct xshm_rx_msg *msg);
void xshm_rx_free_msg(struct xshm_rx_msg *msg);
void xshm_rx_unexp_release(struct xshm_rx_msg *msg);

#endif
