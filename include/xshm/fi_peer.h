/*
 * The libfabric peer API, as defined by fi_peer(3) (../shared/spec/fi_peer.3.md).
 *
 * libfabric 1.17's headers carry an older draft of these structures in
 * <rdma/fi_ext.h>; an owner provider that pairs with xshm includes this header
 * instead, never both.
 */
#ifndef XSHM_FI_PEER_H
#define XSHM_FI_PEER_H

#ifdef FI_EXT_H
#error "<xshm/fi_peer.h> replaces <rdma/fi_ext.h>'s peer API: include only one"
#endif

#include <sys/uio.h>
#include <rdma/fabric.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>

#ifdef __cplusplus
extern "C" {
#endif

#ifndef FI_PEER
#define FI_PEER			(1ULL << 43)
#endif

/* fi_export_fid / fi_import_fid */

struct fi_fid_export {
	struct fid **fid;
	uint64_t flags;
	void *context;
};

static inline int
fi_export_fid(struct fid *fid, uint64_t flags, struct fid **expfid,
	      void *context)
{
	struct fi_fid_export exp = {
		.fid = expfid, .flags = flags, .context = context,
	};

	return fi_control(fid, FI_EXPORT_FID, &exp);
}

static inline int
fi_import_fid(struct fid *fid, struct fid *expfid, uint64_t flags)
{
	return fid->ops->bind(fid, expfid, flags);
}

/* Peer AV */

struct fid_peer_av;

struct fi_ops_av_owner {
	size_t size;
	int (*query)(struct fid_peer_av *av, struct fi_av_attr *attr);
	fi_addr_t (*ep_addr)(struct fid_peer_av *av, struct fid_ep *ep);
};

struct fid_peer_av {
	struct fid fid;
	struct fi_ops_av_owner *owner_ops;
};

struct fi_peer_av_context {
	size_t size;
	struct fid_peer_av *av;
};

/* Peer AV set */

struct fid_peer_av_set;

struct fi_ops_av_set_owner {
	size_t size;
	int (*members)(struct fid_peer_av_set *av, fi_addr_t *addr,
		       size_t *count);
};

struct fid_peer_av_set {
	struct fid fid;
	struct fi_ops_av_set_owner *owner_ops;
};

struct fi_peer_av_set_context {
	size_t size;
	struct fid_peer_av_set *av_set;
};

/* Peer CQ */

struct fid_peer_cq;

struct fi_ops_cq_owner {
	size_t size;
	ssize_t (*write)(struct fid_peer_cq *cq, void *context, uint64_t flags,
			 size_t len, void *buf, uint64_t data, uint64_t tag,
			 fi_addr_t src);
	ssize_t (*writeerr)(struct fid_peer_cq *cq,
			    const struct fi_cq_err_entry *err_entry);
};

struct fid_peer_cq {
	struct fid fid;
	struct fi_ops_cq_owner *owner_ops;
};

struct fi_peer_cq_context {
	size_t size;
	struct fid_peer_cq *cq;
};

/* Peer counter */

struct fid_peer_cntr;

struct fi_ops_cntr_owner {
	size_t size;
	void (*inc)(struct fid_peer_cntr *cntr);
	void (*incerr)(struct fid_peer_cntr *cntr);
};

struct fid_peer_cntr {
	struct fid fid;
	struct fi_ops_cntr_owner *owner_ops;
};

struct fi_peer_cntr_context {
	size_t size;
	struct fid_peer_cntr *cntr;
};

/* Peer domain */

struct fi_peer_domain_context {
	size_t size;
	struct fid_domain *domain;
};

/* Peer EQ */

struct fi_peer_eq_context {
	size_t size;
	struct fid_eq *eq;
};

/* Peer SRX */

struct fid_peer_srx;

/* Castable to a doubly linked list entry: next and prev come first. */
struct fi_peer_rx_entry {
	struct fi_peer_rx_entry *next;
	struct fi_peer_rx_entry *prev;
	struct fid_peer_srx *srx;
	fi_addr_t addr;
	size_t size;
	uint64_t tag;
	uint64_t cq_data;
	uint64_t flags;
	void *context;
	size_t count;
	void **desc;
	void *peer_context;
	void *owner_context;
	struct iovec *iov;
};

struct fi_ops_srx_owner {
	size_t size;
	int (*get_msg)(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
		       struct fi_peer_rx_entry **entry);
	int (*get_tag)(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
		       uint64_t tag, struct fi_peer_rx_entry **entry);
	int (*queue_msg)(struct fi_peer_rx_entry *entry);
	int (*queue_tag)(struct fi_peer_rx_entry *entry);
	void (*foreach_unspec_addr)(struct fid_peer_srx *srx,
			fi_addr_t (*get_addr)(struct fi_peer_rx_entry *));
	void (*free_entry)(struct fi_peer_rx_entry *entry);
};

struct fi_ops_srx_peer {
	size_t size;
	int (*start_msg)(struct fi_peer_rx_entry *entry);
	int (*start_tag)(struct fi_peer_rx_entry *entry);
	int (*discard_msg)(struct fi_peer_rx_entry *entry);
	int (*discard_tag)(struct fi_peer_rx_entry *entry);
};

struct fid_peer_srx {
	struct fid_ep ep_fid;
	struct fi_ops_srx_owner *owner_ops;
	struct fi_ops_srx_peer *peer_ops;
};

struct fi_peer_srx_context {
	size_t size;
	struct fid_peer_srx *srx;
};

/* Peer transfers */

#ifndef FI_PEER_TRANSFER
#define FI_PEER_TRANSFER	(1ULL << 36)
#endif

struct fi_ops_transfer_peer {
	size_t size;
	ssize_t (*complete)(struct fid_ep *ep, struct fi_cq_tagged_entry *buf,
			    fi_addr_t *src_addr);
	ssize_t (*comperr)(struct fid_ep *ep, struct fi_cq_err_entry *buf);
};

struct fi_peer_transfer_context {
	size_t size;
	struct fi_info *info;
	struct fid_ep *ep;
	struct fi_ops_transfer_peer *peer_ops;
};

#ifdef __cplusplus
}
#endif

#endif
