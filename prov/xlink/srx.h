/*
 * The endpoint's receive queue: posted receives and unexpected messages,
 * tagged and untagged, of both paths, in one place, so that a receive from
 * FI_ADDR_UNSPEC takes whichever matching message arrived first and the
 * messages of one source match in order.
 *
 * The peer reaches it through the struct fid_peer_srx bound to its
 * endpoint (get_msg/get_tag, queue_msg/queue_tag, free_entry,
 * foreach_unspec_addr), in libfabric's style: xlink binds its own
 * fid_peer_srx and starts or discards a peer's message through
 * entry->srx->peer_ops.  The network path hands it each message header
 * (xlink_srx_net_arrived).
 *
 * A buffer posted with FI_MULTI_RECV (untagged, one iov) stays at its
 * place in the posted queue and gives each message it matches, of either
 * path, a piece: the next bytes of the buffer, carved when the message
 * matches (srx.c).
 */
#ifndef XLINK_SRX_H
#define XLINK_SRX_H

#include <sys/uio.h>

#include "xlink.h"

struct xlink_ep;
struct xlink_cq;

enum xlink_rx_origin {
	XLINK_RX_POSTED,	/* a receive the application posted */
	XLINK_RX_FROM_PEER,	/* an unexpected message of the peer */
	XLINK_RX_FROM_NET,	/* an unexpected message of the network */
};

/*
 * A posted receive or an unexpected message; entry is what the peer sees.
 * A piece of a multi-receive buffer is a posted receive of its own (or the
 * peer's unexpected message it went to), with parent set until it is done.
 */
struct xlink_rx {
	struct fi_peer_rx_entry entry;
	struct xlink_rx *next;		/* its queue; a peer's piece: its CQ's list */
	struct xlink_ep *ep;
	enum xlink_rx_origin origin;
	bool tagged;
	uint64_t ignore;		/* posted: tag bits that need not match */
	/* a multi-receive buffer (posted with FI_MULTI_RECV) */
	bool multi;
	bool multi_released;		/* off the queue: less than the minimum left */
	size_t multi_used;		/* bytes given to pieces */
	size_t multi_pending;		/* pieces not done yet */
	/* a piece of one, until it is done */
	struct xlink_rx *parent;
	/* FROM_NET */
	void *data;			/* the eager payload */
	bool owns_data;			/* else it lies in a network buffer */
	uint64_t large_id;		/* or: the network tag of the payload */
	uint64_t src_key;		/* netsrc.h: the sender, while not in the AV */
	/* a posted receive filled by the network */
	void *bounce;			/* whole message, when the buffers are short */
	size_t msg_size;
	uint64_t msg_flags;		/* FI_REMOTE_CQ_DATA */
	struct iovec iov[XLINK_IOV_LIMIT];
	void *desc[XLINK_IOV_LIMIT];
};

struct xlink_queue {
	struct xlink_rx *head, *tail;
};

struct xlink_srx {
	struct fid_peer_srx peer_srx;		/* bound to the peer endpoint */
	struct fi_ops_srx_owner owner_ops;
	struct xlink_queue posted[2];		/* [tagged] */
	struct xlink_queue unexpected[2];
	struct xlink_queue claimed;		/* FI_PEEK | FI_CLAIM */
	uint64_t av_inserts;			/* the AV's, when sources were resolved */
	struct xlink_rx *spare;			/* freed entries, for reuse */
	unsigned nspare;
	size_t min_multi_recv;			/* FI_OPT_MIN_MULTI_RECV */
};

/* A zeroed entry of ep's (ep set), and giving one back; srx.c. */
struct xlink_rx *xlink_rx_alloc(struct xlink_ep *ep);
void xlink_rx_free(struct xlink_rx *rx);

void xlink_srx_init(struct xlink_ep *ep);
/* Frees what is queued; the peer endpoint is already closed. */
void xlink_srx_fini(struct xlink_ep *ep);

/* fi_recvmsg / fi_trecvmsg and the calls over them.  Caller holds the lock. */
ssize_t xlink_srx_post(struct xlink_ep *ep, bool tagged, const struct iovec *iov,
		       void **desc, size_t count, fi_addr_t src, uint64_t tag,
		       uint64_t ignore, void *context, uint64_t flags);
int xlink_srx_cancel(struct xlink_ep *ep, void *context);

/* Fails with err the posted receives directed at a source gone() names. */
void xlink_srx_fail_directed(struct xlink_ep *ep,
			     bool (*gone)(struct xlink_ep *ep, fi_addr_t src), int err);
bool xlink_srx_has_directed(const struct xlink_ep *ep);

/*
 * A network message's header arrived: it is matched now (and delivered,
 * which frees rx) or queued as unexpected (true: the queue keeps rx, and
 * the caller must give it its own copy of an eager payload).  rx is
 * FROM_NET with entry's addr, size, tag, cq_data and flags filled.
 */
bool xlink_srx_net_arrived(struct xlink_ep *ep, struct xlink_rx *rx);

/* The flags of a receive's completion, before FI_REMOTE_CQ_DATA. */
static inline uint64_t xlink_rx_op_flags(bool tagged)
{
	return (tagged ? FI_TAGGED : FI_MSG) | FI_RECV;
}

/* Completions of receives. */
void xlink_rx_complete(struct xlink_ep *ep, struct xlink_rx *posted, size_t len,
		       uint64_t flags, uint64_t data, uint64_t tag, fi_addr_t src);
void xlink_rx_fail(struct xlink_ep *ep, struct xlink_rx *posted, int err,
		   size_t len, size_t olen, uint64_t flags, uint64_t data,
		   uint64_t tag);

/*
 * The peer completed a piece of a multi-receive buffer it holds (the CQ
 * found it by its context, cq.c): writes the completion (err NULL) or the
 * error as the buffer's, in cq.
 */
void xlink_srx_piece_reported(struct xlink_cq *cq, struct xlink_rx *piece,
			      uint64_t flags, size_t len, uint64_t data, uint64_t tag,
			      fi_addr_t src, const struct fi_cq_err_entry *err);

#endif
