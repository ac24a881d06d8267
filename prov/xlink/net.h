/*
 * The network path of an endpoint: the network provider's endpoint and
 * CQ, the receive buffers headers land in, and the sends and receives
 * waiting for room (wire.h has the protocol).
 */
#ifndef XLINK_NET_H
#define XLINK_NET_H

#include <sys/uio.h>

#include "xlink.h"

struct xlink_ep;
struct xlink_rx;
struct xlink_net_buf;
struct xlink_net_op;

struct xlink_net {
	struct fid_ep *ep;
	struct fid_cq *cq;
	size_t inject_size;		/* the network endpoint's */
	size_t iov_limit;		/* the network endpoint's */
	uint64_t self_key;		/* netsrc.h: names this endpoint as a source */
	uint64_t large_base;		/* this endpoint's half of large ids */
	uint32_t large_seq;
	struct xlink_net_buf **bufs;	/* posted for headers */
	size_t nbufs;
	struct xlink_net_op *waiting;	/* payload sends and fetches to retry */
	struct xlink_net_op *waiting_tail;
	unsigned empty_polls;		/* network polls that found nothing */
	unsigned skipped;
};

int xlink_net_enable(struct xlink_ep *ep);
void xlink_net_close(struct xlink_ep *ep);
int xlink_net_getname(struct xlink_ep *ep, void *addr, size_t *addrlen);

ssize_t xlink_net_send(struct xlink_ep *ep, fi_addr_t net_addr, bool tagged,
		       const struct iovec *iov, size_t count, uint64_t tag,
		       uint64_t data, uint64_t flags, bool report, void *context);

/* Polls the network CQ, often while it is busy, now and then while idle. */
void xlink_net_progress(struct xlink_ep *ep);

/* Moves an unexpected network message into a posted receive; frees msg. */
void xlink_net_deliver(struct xlink_ep *ep, struct xlink_rx *msg,
		       struct xlink_rx *posted);
/* Drops an unexpected network message (its large payload included). */
void xlink_net_discard(struct xlink_ep *ep, struct xlink_rx *msg);

#endif
