/*
 * Completion queue (cq.c): implements the owner side of the peer CQ.
 * Reading or waiting on it drives the progress of the endpoints bound to it.
 */
#ifndef XSHM_CQ_H
#define XSHM_CQ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "objects/wait.h"
#include "xshm/fi_peer.h"

struct xshm_domain;
struct xshm_ep;

struct xshm_cq_comp {
	struct fi_cq_tagged_entry entry;
	fi_addr_t src;
	struct fi_cq_err_entry *err;	/* non-NULL: an error completion */
};

/*
 * The caller's buffer of an fi_cq_read that found the CQ empty, while that
 * read drives progress: successful completions are formatted straight
 * into it instead of being queued and copied out (cq.c).
 */
struct xshm_cq_sink {
	char *out;		/* where the next entry goes */
	fi_addr_t *src;		/* fi_cq_readfrom's addresses, or NULL */
	size_t cap;		/* entries it takes in all */
	size_t filled;
};

struct xshm_cq {
	struct fid_cq cq_fid;
	struct fid_peer_cq peer_cq;
	struct fid_peer_cq *owner;	/* FI_PEER import: where entries go */
	struct xshm_domain *domain;
	enum fi_cq_format format;
	enum fi_wait_obj wait_obj;
	struct xshm_cq_comp *comps;	/* circular, grows on demand */
	size_t comp_cap;
	size_t comp_head;
	size_t comp_count;
	struct xshm_cq_sink sink;	/* cap 0 outside such a read */
	struct xshm_ep **eps;		/* endpoints this CQ progresses */
	size_t nr_eps;
	_Atomic bool signaled;
	struct xshm_wait wait;		/* sleeping in fi_cq_sread (wait.c) */
	_Atomic int ref;
};

int xshm_cq_open(struct fid_domain *domain, struct fi_cq_attr *attr,
		 struct fid_cq **cq, void *context);
int xshm_cq_add_ep(struct xshm_cq *cq, struct xshm_ep *ep);
void xshm_cq_remove_ep(struct xshm_cq *cq, struct xshm_ep *ep);
/* Under the domain lock: drives the endpoints bound to the CQ. */
void xshm_cq_progress(struct xshm_cq *cq);
/* The object a fid names if it is xshm's of that domain, else NULL. */
struct xshm_cq *xshm_cq_of(struct fid *fid, struct xshm_domain *domain);
int xshm_cq_trywait(struct fid *cq_fid);
/*
 * Takes the CQ behind fid for a poll set of domain (poll.c): -FI_EINVAL
 * when fid is not one of domain's, -FI_ENOSYS when it is imported
 * (FI_PEER: its entries are the owner's).
 */
int xshm_cq_poll_join(struct fid *fid, struct xshm_domain *domain,
		      struct xshm_cq **cq);
void xshm_cq_poll_leave(struct xshm_cq *cq);

#endif
