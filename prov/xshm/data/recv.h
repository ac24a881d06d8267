/*
 * The receive path (recv_cmd.c: a command from the ring; recv_msg.c:
 * matching and assembling a message; recv_owner.c: what an SRX calls
 * back, and endpoint close; recv_post.c: posting a receive).
 */
#ifndef XSHM_RECV_H
#define XSHM_RECV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>

#include "base/list.h"
#include "xshm/fi_peer.h"
#include "shm/layout.h"
#include "shm/liveness.h"

struct xshm_ep;

/* A message of several cells whose chunks are still arriving, or held. */
struct xshm_rx_msg {
	struct xshm_dlist link;		/* in ep->rx_active while incomplete */
	struct xshm_ep *ep;
	struct fi_peer_rx_entry *entry;
	uint64_t src_ep_id;
	fi_addr_t src_addr;
	uint8_t op;
	uint16_t cmd_flags;
	uint64_t tag;
	uint64_t cq_data;
	size_t size;
	size_t received;
	unsigned char *staging;		/* unexpected: data until started */
	bool started;			/* entry holds the user's buffers */
	bool discarded;
	bool aborted;			/* the sender gave up part way */
	bool sender_died;		/* ... because it was killed */
	struct xshm_owner src_owner;	/* the sender's process, if known */
	bool is_rts;			/* to be pulled from the sender */
	uint32_t ack_id;		/* XSHM_CMD_ACK: ack once delivered */
	uint64_t ready_ns;		/* XSHM_CMD_TIMED: its receive posted late */
	uint64_t busy_ns;		/* XSHM_CMD_TIMED: its copies so far */
	struct xshm_srx_view *orphan_view;	/* held once its ep closed */
	bool owner_frees_discarded;	/* see xshm_ep */
	struct xshm_rts rts;		/* last: set only when is_rts */
};
ssize_t xshm_recv(struct xshm_ep *ep, bool tagged, const struct iovec *iov,
		  void **desc, size_t count, fi_addr_t src, uint64_t tag,
		  uint64_t ignore, void *context, uint64_t flags);
uint32_t xshm_rx_handle_cmd(struct xshm_ep *ep, const struct xshm_cmd *cmd);
void xshm_rx_abort_all(struct xshm_ep *ep);
void xshm_rx_sender_died(struct xshm_rx_msg *msg);
extern const struct fi_ops_srx_peer xshm_srx_peer_ops;

/*
 * What an endpoint passes to get_msg/get_tag when the owner reaches xshm's
 * callbacks through entry->srx->peer_ops.  An owner may start or discard a
 * message it holds after the endpoint closed, through this very object: it
 * lives until the endpoint and every such message are done with it.
 */
struct xshm_srx_view {
	struct fid_peer_srx srx;
	struct fi_ops_srx_peer peer_ops;
	_Atomic int ref;	/* the endpoint, and each orphaned message */
};

/*
 * A view of the owner's SRX (objects/import.c binds it), held by the
 * endpoint and by each message orphaned at its close (recv_srx_ops.c).
 */
struct xshm_srx_view *xshm_srx_view_new(const struct fid_peer_srx *owner);
void xshm_srx_view_hold(struct xshm_srx_view *view);
void xshm_srx_view_release(struct xshm_srx_view *view);

#endif
