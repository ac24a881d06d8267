/*
 * xlink: an owner provider.  It owns every object the application sees and
 * moves each message over one of two paths: to an endpoint on the same node
 * through a peer provider (xshm, or any provider of the fi_peer(3) API)
 * whose CQs, counters and receive queue are the owner's own, imported with
 * FI_PEER; to every other endpoint through a network RDM provider
 * (tcp;ofi_rxm by default), under a small protocol of xlink's own
 * (wire.h).  xlink reaches both only through libfabric's public calls and
 * <xshm/fi_peer.h>.
 *
 * This header holds what every file needs: the provider, its parameters,
 * the fabric and the domain with its lock.
 */
#ifndef XLINK_H
#define XLINK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <xshm/fi_peer.h>

#define XLINK_PROV_NAME		"xlink"
#define XLINK_VERSION		FI_VERSION(0, 1)
/* The version xlink asks its network and peer providers for. */
#define XLINK_API		FI_VERSION(1, 17)
/*
 * The newest API version xlink answers (as XSHM_NEWEST_API_VERSION), or
 * the loaded libfabric's if older: its fi_version, set in fi_prov_ini.
 */
#define XLINK_NEWEST_API	FI_VERSION(2, 6)

#define xlink_container_of(ptr, type, member) \
	((type *) ((char *) (ptr) - offsetof(type, member)))

extern struct fi_provider xlink_prov;

#define XLINK_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | FI_DIRECTED_RECV | \
			 FI_SOURCE | FI_MULTI_RECV | FI_LOCAL_COMM | FI_REMOTE_COMM)
#define XLINK_IOV_LIMIT	4

/* Parameters, read once at fi_prov_ini (init.c). */
struct xlink_params {
	char *net;		/* FI_XLINK_NET: the network provider */
	char *peer;		/* FI_XLINK_PEER: the same-node peer provider */
	size_t eager_max;	/* FI_XLINK_EAGER_MAX: largest inline remote payload */
	int stall_ms;		/* FI_XLINK_STALL_MS: see send.c */
};
extern struct xlink_params xlink_params;

struct xlink_fabric {
	struct fid_fabric fabric_fid;
	struct fid_fabric *net;		/* the network provider's fabric */
	struct fid_fabric *peer;	/* the peer provider's fabric, or NULL */
	atomic_int ref;
};

/*
 * One lock per domain serialises every call the application makes into the
 * domain's objects (FI_THREAD_SAFE).  The peer calls back into xlink (CQ
 * writes, get_msg/get_tag, counters) only from inside calls xlink makes
 * while holding it, so the callbacks never take it.  A domain opened with
 * FI_THREAD_DOMAIN (Open MPI's choice without MPI_THREAD_MULTIPLE) is
 * serialised by the application, and takes no lock: on the peer path the
 * lock is a tenth of a small message's latency.
 */
struct xlink_domain {
	struct fid_domain domain_fid;
	struct xlink_fabric *fabric;
	struct fid_domain *net;		/* network domain */
	struct fid_domain *peer;	/* peer domain, or NULL: remote path only */
	struct fi_info *net_info;	/* what the network objects are opened with */
	struct fi_info *peer_info;	/* what the peer objects are opened with */
	pthread_mutex_t lock;
	bool locking;			/* false: FI_THREAD_DOMAIN */
	bool progress_running;		/* progress.h: FI_PROGRESS_AUTO */
	atomic_bool progress_stop;
	pthread_t progress_thread;
	struct xlink_ep *eps;		/* open endpoints, for progress */
	uint64_t peer_events;		/* calls of the peer into xlink, ever */
	atomic_int ref;
};

static inline void xlink_domain_lock(struct xlink_domain *domain)
{
	if (domain->locking)
		pthread_mutex_lock(&domain->lock);
}

static inline void xlink_domain_unlock(struct xlink_domain *domain)
{
	if (domain->locking)
		pthread_mutex_unlock(&domain->lock);
}

/*
 * Progresses every endpoint of the domain: the peer's and the network's
 * completion queues, and xlink's own deferred sends.  Caller holds the lock.
 */
void xlink_domain_progress(struct xlink_domain *domain);

/* The fid checks of every open call. */
struct xlink_domain *xlink_domain_of(struct fid_domain *domain);

int xlink_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		      void *context);
int xlink_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		      struct fid_domain **domain, void *context);
/*
 * The network's and the peer's fi_info for an xlink info: what the children
 * objects are opened with (getinfo.c).  *peer is NULL when the peer provider
 * is off or absent.
 */
int xlink_child_infos(uint32_t version, const struct fi_info *info,
		      struct fi_info **net, struct fi_info **peer);
int xlink_getinfo(uint32_t version, const char *node, const char *service,
		  uint64_t flags, const struct fi_info *hints, struct fi_info **info);

extern struct fi_ops_mr xlink_mr_ops;

/* Stub ops for the calls an object does not support. */
int xlink_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int xlink_no_control(struct fid *fid, int command, void *arg);
int xlink_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
		      void **ops, void *context);

#endif
