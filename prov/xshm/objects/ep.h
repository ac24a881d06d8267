/*
 * The endpoint (ep.c): the object every data-path file works on.  Its
 * fields are grouped by the file that keeps them; the send and receive
 * state that outlives a call (struct xshm_tx_op, struct xshm_rx_msg) is
 * in data/send.h and data/recv.h.
 */
#ifndef XSHM_EP_H
#define XSHM_EP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_atomic.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "base/addr.h"
#include "base/block_cache.h"
#include "base/list.h"
#include "srx/srx.h"
#include "xshm/fi_peer.h"
#include "shm/doorbell.h"
#include "shm/path_choice.h"
#include "shm/region.h"
#include "shm/scopy/huge.h"
#include "shm/scopy/scopy.h"
#include "shm/store_choice.h"
#include "shm/sweep.h"

#define XSHM_BUFS_DONE_MAX	16	/* bounce buffers freed per batch */
#define XSHM_SPARES		8	/* spare bounce buffers an endpoint keeps */
#define XSHM_STORE_CHOICES	16	/* receivers' store choices it keeps */
#define XSHM_PATH_CHOICES	16	/* receivers' path choices it keeps */
#define XSHM_PATH_TIMED		32	/* timed sends it awaits reports of */

/* ep->rma_cntr: the counters of RMA, by what they count */
enum {
	XSHM_CNTR_WRITE,	/* FI_WRITE: writes initiated */
	XSHM_CNTR_READ,		/* FI_READ: reads initiated */
	XSHM_CNTR_REMOTE_WRITE,	/* FI_REMOTE_WRITE: writes into its memory */
	XSHM_CNTR_REMOTE_READ,	/* FI_REMOTE_READ: reads of its memory */
	XSHM_RMA_CNTRS
};

struct xshm_av;
struct xshm_cntr;
struct xshm_cq;
struct xshm_domain;
struct xshm_srx_view;

struct xshm_ep {
	struct fid_ep ep_fid;
	struct xshm_domain *domain;
	struct xshm_dlist domain_link;	/* in domain->eps */
	uint64_t caps;
	uint64_t tx_op_flags;
	uint64_t rx_op_flags;
	size_t tx_iov_limit;
	size_t rx_iov_limit;
	struct xshm_av *av;
	struct xshm_cq *tx_cq_obj;
	struct xshm_cq *rx_cq_obj;
	struct fid_peer_cq *tx_cq;	/* completion path (own CQ or owner's) */
	struct fid_peer_cq *rx_cq;
	bool tx_selective;
	bool rx_selective;
	struct fid_peer_cntr *tx_cntr;	/* counters (own or owner's) */
	struct fid_peer_cntr *rx_cntr;
	struct xshm_cntr *tx_cntr_obj;
	struct xshm_cntr *rx_cntr_obj;
	struct fid_peer_cntr *rma_cntr[XSHM_RMA_CNTRS];
	struct xshm_cntr *rma_cntr_obj[XSHM_RMA_CNTRS];
	struct xshm_doorbell doorbell;	/* opened when the endpoint may sleep */
	struct xshm_srx *own_srx;
	struct fid_peer_srx *srx;	/* receive path (own SRX or owner's) */
	struct fid *srx_import;		/* xshm's import, when bound to one */
	struct xshm_srx_view *srx_view;	/* what srx points to, if a view */
	/*
	 * Bound to the owner's own fid_peer_srx: libfabric's owners free an
	 * entry as soon as discard_* returns (fi_peer(3) returns it to the
	 * peer, which frees it with free_entry once done).
	 */
	bool owner_frees_discarded;
	bool owner_get_tag_sizeless;	/* xshm_params.peer_abi */
	struct xshm_addr addr;
	struct xshm_region region;	/* inbound ring and buffers */
	bool enabled;
	bool closing;
	bool may_sleep;			/* a bound CQ or counter can block */
	struct xshm_dlist tx_queue;	/* of struct xshm_tx_op, in post order */
	size_t tx_queued;
	struct xshm_dlist rx_active;	/* of struct xshm_rx_msg */
	size_t unexp_bytes;		/* memory held for unexpected messages */
	size_t min_multi_recv;
	struct xshm_dlist tx_wait_ack;	/* pushed sends awaiting their ack */
	struct xshm_block_cache tx_blocks; /* of queued and waiting ops */
	uint32_t next_ack_id;
	struct xshm_dlist acks_out;	/* acks not yet pushed to their sender */
	struct xshm_dlist rma_queue;	/* RMA, atomics not pushed (rma_send.c) */
	struct xshm_dlist rma_replies;	/* reads answered in cells (rma_reply.c) */
	const struct xshm_scopy *scopy;	/* single-copy engine, or NULL */
	uint32_t split_gen;		/* of the last split copy (data/rts.c) */
	/* the pages under its latest large send and receive (large_path.c) */
	struct xshm_huge_memo tx_pages, rx_pages;
	uint64_t rx_reported;		/* receive completions, errors too */
	struct xshm_path_stream large_sent;	/* path.c: its latest one */
	uint64_t auth_digest;		/* of its auth key, in its region; 0: none */
	struct xshm_spare {		/* spare.c */
		uint64_t mapping_id;	/* of the receiver's region */
		uint32_t index;
		bool held;
	} spares[XSHM_SPARES];
	bool spare_wanted;		/* for spare_dest, on the next idle poll */
	fi_addr_t spare_dest;
	size_t spare_len;		/* bytes the last send put in a buffer */
	enum xshm_pool_order spare_order;	/* as that send borrowed */
	struct xshm_warm {		/* warm.c: on the next idle poll */
		fi_addr_t dest;
		size_t len;		/* bytes from its ring's tail; 0: none */
	} warm;
	/* bounce_fill.c: receivers whose mapping ids share a slot share it */
	struct xshm_store_choice store_choices[XSHM_STORE_CHOICES];
	/* path.c: the same for the path of large sends */
	struct xshm_path_slot {
		uint64_t mapping_id;	/* of the receiver's region; 0: fresh */
		struct xshm_path_choice choice;
	} path_choices[XSHM_PATH_CHOICES];
	/* rma_path.c: the way of large RMA, per target and direction */
	struct xshm_rma_path_slot {
		uint64_t mapping_id;	/* of the target's region; 0: fresh */
		struct xshm_path_choice choice[2];	/* [write] */
		struct xshm_rma_pace {	/* [write][path] */
			/* the latest completion, rma_copies.ns then */
			struct xshm_path_mark done;
			uint32_t timed;		/* timed operations in flight */
		} pace[2][2];
	} rma_paths[XSHM_PATH_CHOICES];
	/* rma_path.c: own single copies while a ring way is being timed */
	struct xshm_rma_copies {
		uint32_t ring_timed;	/* timed ring operations in flight */
		uint64_t ns;		/* time in single copies meanwhile, all told */
	} rma_copies;
	struct xshm_path_timed {	/* path.c: sends awaiting their time */
		uint64_t dest_ep_id;
		uint64_t start_ns;
		size_t len;
		struct xshm_path_class *cls;
		uint64_t mapping_id;	/* of the receiver whose class it is */
		uint32_t id;		/* its ack_id; 0: none */
		enum xshm_path path;
		uint64_t busy_ns;	/* the sender's copies so far */
		/* it followed a send to dest with no receive between */
		bool follows_send;
	} path_timed[XSHM_PATH_TIMED];
	uint64_t rx_large_done_ns;	/* path.c: the last large receive done */
	uint64_t rx_large_sender;	/* ... and the endpoint that sent it */
	struct xshm_buf_done {		/* buf_return.c */
		uint32_t index;
		uint64_t borrower;
	} bufs_done[XSHM_BUFS_DONE_MAX];
	uint32_t bufs_done_count;
	struct xshm_sweep sweep;	/* against dead peers (data/progress.c) */
	uint32_t sweep_polls;
	uint64_t sweep_last_ns;
	uint64_t next_sweep_ms;		/* liveness.c */
	uint32_t progress_calls;
};

int xshm_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
extern struct fi_ops_msg xshm_msg_ops;
extern struct fi_ops_tagged xshm_tagged_ops;
extern struct fi_ops_rma xshm_rma_ops;
extern struct fi_ops_atomic xshm_atomic_ops;
/* fi_query_atomic (objects/atomic.c), the domain's query_atomic */
int xshm_query_atomic(struct fid_domain *domain, enum fi_datatype datatype,
		      enum fi_op op, struct fi_atomic_attr *attr,
		      uint64_t flags);

/*
 * The slot of ep->spares for a spare of peer's pool, and whether it holds
 * one (data/spare.c borrows them, peer/peer_map.c gives them back).
 */
static inline struct xshm_spare *xshm_spare_slot(struct xshm_ep *ep,
						 const struct xshm_region *peer)
{
	return &ep->spares[peer->mapping_id % XSHM_SPARES];
}

static inline bool xshm_spare_holds_for(const struct xshm_spare *spare,
					const struct xshm_region *peer)
{
	return spare->held && spare->mapping_id == peer->mapping_id;
}

/* Completion wanted unless bound with FI_SELECTIVE_COMPLETION. */
static inline uint64_t xshm_tx_flags(const struct xshm_ep *ep, uint64_t flags)
{
	return ep->tx_selective ? flags : flags | FI_COMPLETION;
}

static inline uint64_t xshm_rx_flags(const struct xshm_ep *ep, uint64_t flags)
{
	return ep->rx_selective ? flags : flags | FI_COMPLETION;
}

/*
 * Receives posted to the endpoint's own SRX from one source: the liveness
 * sweep watches those sources (data/liveness.c).  An owner's SRX holds its
 * receives where xshm cannot see them.
 */
static inline bool xshm_ep_rx_directed(const struct xshm_ep *ep)
{
	return ep->own_srx && ep->own_srx->directed;
}

/* Sends, acks or arrivals in flight: work for progress besides the ring. */
static inline bool xshm_ep_waits_on_peers(const struct xshm_ep *ep)
{
	return !xshm_dlist_empty(&ep->tx_queue) ||
	       !xshm_dlist_empty(&ep->tx_wait_ack) ||
	       !xshm_dlist_empty(&ep->acks_out) ||
	       !xshm_dlist_empty(&ep->rx_active) ||
	       !xshm_dlist_empty(&ep->rma_queue) ||
	       !xshm_dlist_empty(&ep->rma_replies);
}

#endif
