/*
 * The protocol's own commands, sent beside the messages: an ack (ack.c),
 * an offer to share a single copy (rts.c) and the abort of a half-sent
 * message (send_queue.c).  Each is one cell whose header says what it is;
 * the header fields it does not use are zero, as the receiver's checks
 * want them (recv_cmd.c, cmd_valid).
 */
#include <string.h>

#include "data/control.h"
#include "objects/ep.h"
#include "shm/doorbell.h"
#include "shm/layout.h"
#include "shm/region.h"
#include "shm/ring.h"

bool xshm_control_push(struct xshm_ep *ep, struct xshm_region *peer,
		       const struct xshm_control *ctl)
{
	struct xshm_cmd *cmd;
	uint64_t pos;

	cmd = xshm_ring_reserve(&peer->ring, &pos);
	if (!cmd)
		return false;
	cmd->op = ctl->op;
	cmd->proto = ctl->proto;
	cmd->flags = ctl->flags;
	cmd->chunk_len = ctl->payload_len;
	cmd->src_ep_id = ep->addr.ep_id;
	cmd->tag = ctl->tag;
	cmd->cq_data = 0;
	cmd->msg_size = ctl->msg_size;
	cmd->buf_index = ctl->buf_index;
	cmd->ack_id = ctl->ack_id;
	if (ctl->payload_len)
		memcpy(cmd->data, ctl->payload, ctl->payload_len);
	xshm_ring_commit(&peer->ring, cmd, pos);
	xshm_doorbell_ring(peer);
	return true;
}
