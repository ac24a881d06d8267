/*
 * xlink's completion queue.  Completions come from three places, all
 * written under the domain lock: xlink's own remote path (xlink_cq_write,
 * xlink_cq_write_error), and the peer, through the struct fid_peer_cq this
 * CQ imports into the peer domain (peer_shadow, opened with FI_PEER).
 * Reading drives progress (xlink_domain_progress), so an application that
 * only polls its CQ moves both paths.
 */
#ifndef XLINK_CQ_H
#define XLINK_CQ_H

#include "xlink.h"

struct xlink_rx;

struct xlink_cq_err {
	struct fi_cq_err_entry entry;
};

/* A completion, or an error (err) in its place in the order of events. */
struct xlink_cq_slot {
	struct fi_cq_tagged_entry entry;
	fi_addr_t src;
	struct xlink_cq_err *err;
};

struct xlink_cq {
	struct fid_cq cq_fid;
	struct xlink_domain *domain;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	/* A ring that grows, so that no completion is ever dropped. */
	struct xlink_cq_slot *slots;
	size_t cap, head, count;
	struct fi_cq_err_entry last_err;	/* what readerr returned last */
	atomic_bool signaled;			/* fi_cq_signal */
	struct fid_peer_cq peer_cq;		/* imported into the peer */
	struct fi_ops_cq_owner peer_ops;
	struct fid_cq *peer_shadow;		/* the peer's CQ over peer_cq */
	struct xlink_rx *pieces;		/* the peer's multi-receive pieces (srx.c) */
	atomic_int ref;				/* endpoints bound */
};

int xlink_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		  struct fid_cq **cq, void *context);

/* The xlink CQ behind an application's fid, or NULL if not one of domain's. */
struct xlink_cq *xlink_cq_of(struct fid *fid, struct xlink_domain *domain);

/* Caller holds the domain lock.  0 or -FI_ENOMEM. */
int xlink_cq_write(struct xlink_cq *cq, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag, fi_addr_t src);
int xlink_cq_write_error(struct xlink_cq *cq, const struct fi_cq_err_entry *err);

/*
 * A piece of a multi-receive buffer the peer holds, whose context is its
 * own address: the peer's completion of it goes to xlink_srx_piece_reported
 * (and off the list) instead of into the ring.  Dropped when the peer
 * frees it without one.  Caller holds the domain lock.
 */
void xlink_cq_add_piece(struct xlink_cq *cq, struct xlink_rx *piece);
void xlink_cq_drop_piece(struct xlink_cq *cq, struct xlink_rx *piece);

#endif
