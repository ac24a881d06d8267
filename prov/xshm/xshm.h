/*
 * Internal types of the xshm provider: one struct per libfabric object, and
 * the calls the object files make on each other.
 */
#ifndef XSHM_PROV_H
#define XSHM_PROV_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>
#include <rdma/providers/fi_log.h>
#include <rdma/providers/fi_prov.h>

#include "xshm/fi_peer.h"
#include "xshm/fi_xshm.h"
#include "shm/copy.h"
#include "shm/doorbell.h"
#include "shm/liveness.h"
#include "shm/scopy/huge.h"
#include "shm/scopy/scopy.h"
#include "shm/region.h"
#include "shm/path_choice.h"
#include "shm/store_choice.h"
#include "shm/sweep.h"

/*
 * Another name builds a second copy that one process can load beside this
 * one, so that benchmarks compare two builds point by point
 * (test/bench/ab.sh).
 */
#ifndef XSHM_NAME
#define XSHM_NAME		"xshm"
#endif
#define XSHM_VERSION		FI_VERSION(0, 1)
#define XSHM_API_VERSION	FI_VERSION(1, 17)
#define XSHM_MIN_API_VERSION	FI_VERSION(1, 5)

#define XSHM_IOV_LIMIT		8	/* <= XSHM_RTS_IOV_MAX */
#define XSHM_INJECT_SIZE	4096
#define XSHM_MAX_MSG_SIZE	(1ULL << 30)
#define XSHM_TX_SIZE		256
#define XSHM_BUFS_DONE_MAX	16	/* bounce buffers freed per batch */
#define XSHM_SPARES		8	/* spare bounce buffers an endpoint keeps */
#define XSHM_STORE_CHOICES	16	/* receivers' store choices it keeps */
#define XSHM_RX_SIZE		256
#define XSHM_ADDR_PREFIX	"fi_xshm://"
/* "fi_xshm://" + 16 hex + "/" + 16 hex + NUL */
#define XSHM_ADDR_LEN		44
#define XSHM_RX_BUDGET		64	/* cells drained per progress call */
#define XSHM_SWEEP_POLLS	64	/* idle polls between sweep checks */
#define XSHM_SWEEP_INTERVAL_NS	(100 * 1000000ULL)	/* between sweeps */
/* Larger messages take the path measured cheaper (shm/path_choice.h). */
#define XSHM_PATH_MIN		(8 << 10)
#define XSHM_PATH_CHOICES	16	/* receivers' path choices it keeps */
#define XSHM_PATH_TIMED		32	/* timed sends it awaits reports of */
/*
 * With FI_XSHM_PATH=static, measured defaults (fi_xshm.7): larger messages
 * take the single copy...
 */
#define XSHM_SCOPY_THRESHOLD	(4 << 20)
/* ... and larger than this, when both sides' buffers are on huge pages... */
#define XSHM_SCOPY_HUGE_MIN	(512 << 10)
/* ... or than this, for a send in a stream (send.c). */
#define XSHM_SCOPY_HUGE_STREAM_MIN	(128 << 10)
/*
 * Measured default: every message a run of cells can carry, three 2 KiB
 * cells.  Against a bounce buffer (with the sender's spare ready), side by
 * side in one build with the names swapped: latency 0.86-0.90 at 4097 B,
 * 0.92-0.94 at 5 KiB, 0.94-0.96 at 6032 B, streaming bandwidth 1.08-1.14;
 * with the CPUs far apart (few repetitions), 0.93 at 4097 B and 1.03-1.11
 * above.  Runs of four cells, to 8056 B, cost what a buffer does near and
 * 1.2-1.3 times its latency far from 6 KiB.
 * With 1 KiB cells the runs were longer and lost: 1.09-1.28 times the
 * latency.
 */
#define XSHM_CELLS_THRESHOLD	XSHM_CELLS_MSG_MAX
/*
 * Longer ones take cells only while the sender fills the receiver's
 * buffers with cached stores: one it streams to is far (store_choice.h).
 */
#define XSHM_CELLS_ALWAYS_MAX	4096
#define XSHM_LIVENESS_MS	100	/* default period of the liveness sweep */
#define XSHM_UNEXP_BYTES_MAX	((size_t) 64 << 20) /* default of unexp_bytes_max */

#define XSHM_DOMAIN_CAPS	(FI_LOCAL_COMM | FI_SHARED_AV)
#define XSHM_CAPS	(FI_MSG | FI_TAGGED | FI_SEND | FI_RECV | \
			 FI_DIRECTED_RECV | FI_SOURCE | FI_MULTI_RECV | \
			 XSHM_DOMAIN_CAPS)
#define XSHM_TX_CAPS	(FI_MSG | FI_TAGGED | FI_SEND)
#define XSHM_RX_CAPS	(FI_MSG | FI_TAGGED | FI_RECV | FI_DIRECTED_RECV | \
			 FI_SOURCE | FI_MULTI_RECV)

struct xshm_ep;

extern struct fi_provider xshm_prov;
extern const struct fi_info xshm_info_template;

#define XSHM_WARN(subsys, ...) FI_WARN(&xshm_prov, subsys, __VA_ARGS__)
#define XSHM_INFO(subsys, ...) FI_INFO(&xshm_prov, subsys, __VA_ARGS__)

#define xshm_container_of(ptr, type, field) \
	((type *) ((char *) (ptr) - offsetof(type, field)))

/* Intrusive doubly linked list; struct fi_peer_rx_entry is castable to it. */
struct xshm_dlist {
	struct xshm_dlist *next;
	struct xshm_dlist *prev;
};

static inline void xshm_dlist_init(struct xshm_dlist *head)
{
	head->next = head->prev = head;
}

static inline bool xshm_dlist_empty(const struct xshm_dlist *head)
{
	return head->next == head;
}

static inline void xshm_dlist_append(struct xshm_dlist *head,
				     struct xshm_dlist *item)
{
	item->prev = head->prev;
	item->next = head;
	head->prev->next = item;
	head->prev = item;
}

static inline void xshm_dlist_remove(struct xshm_dlist *item)
{
	item->prev->next = item->next;
	item->next->prev = item->prev;
	item->next = item->prev = item;
}

#define xshm_dlist_foreach(head, it) \
	for ((it) = (head)->next; (it) != (head); (it) = (it)->next)

/* A lock taken only when the domain's threading model needs one. */
struct xshm_lock {
	pthread_mutex_t mutex;
	bool enabled;
};

static inline void xshm_lock_acquire(struct xshm_lock *lock)
{
	if (lock->enabled)
		pthread_mutex_lock(&lock->mutex);
}

static inline void xshm_lock_release(struct xshm_lock *lock)
{
	if (lock->enabled)
		pthread_mutex_unlock(&lock->mutex);
}

/* Provider parameters (fi_param_define in init.c). */
struct xshm_params {
	uint64_t node_id;
	bool cma;			/* single copy allowed */
	bool path_auto;			/* measured path choice, not the sizes */
	/* larger messages have a choice of path (path.c) */
	size_t path_min;
	size_t scopy_threshold;		/* larger messages: single copy */
	size_t scopy_huge_min;		/* larger ones, up to the threshold: by pages */
	size_t scopy_huge_stream_min;	/* the same for a send in a stream */
	size_t cells_threshold;		/* smaller ones span ring cells */
	bool numa;			/* regions on the creator's node */
	bool signal_handlers;		/* unlink our regions on signals */
	int liveness_ms;		/* period of the liveness sweep */
	size_t unexp_bytes_max;		/* held unexpected data before flow control */
	enum xshm_bounce_stores {
		XSHM_BOUNCE_STORES_AUTO,	/* chosen by measurement */
		XSHM_BOUNCE_STORES_CACHED,
		XSHM_BOUNCE_STORES_STREAMING,
	} bounce_stores;		/* how senders fill bounce buffers */
	/*
	 * The owner's get_tag: fi_peer(3)'s has a size argument, the
	 * declaration in libfabric's own headers (1.18 to 1.22), which its
	 * owners are built from, has none.
	 */
	enum xshm_peer_abi {
		XSHM_PEER_ABI_AUTO,	/* libfabric's for an owner of its style */
		XSHM_PEER_ABI_SPEC,
		XSHM_PEER_ABI_LIBFABRIC,
	} peer_abi;
};
extern struct xshm_params xshm_params;

/*
 * Sizes whose path, pipeline or single copy, the pages choose
 * (large_path.c): above scopy_huge_min for a lone send, above
 * scopy_huge_stream_min for a send in a stream (send.c).
 */
static inline bool xshm_scopy_by_pages(size_t total, bool in_stream)
{
	size_t min = in_stream ? xshm_params.scopy_huge_stream_min :
				 xshm_params.scopy_huge_min;

	return !xshm_params.path_auto && total > min &&
	       total <= xshm_params.scopy_threshold;
}

/* Sizes the pages may choose for, whether the send stands alone or not. */
static inline bool xshm_scopy_by_pages_either(size_t total)
{
	return xshm_scopy_by_pages(total, false) ||
	       xshm_scopy_by_pages(total, true);
}

/* Addresses */

struct xshm_addr {
	uint64_t node_id;
	uint64_t ep_id;
};

void xshm_addr_format(const struct xshm_addr *addr, char buf[XSHM_ADDR_LEN]);
int xshm_addr_parse(const char *str, size_t maxlen, struct xshm_addr *addr);
uint64_t xshm_ep_id_for_service(const char *service);
uint64_t xshm_ep_id_new(void);
/* The process that made an id of xshm_ep_id_new; 0 for a service's. */
pid_t xshm_ep_id_creator(uint64_t ep_id);
bool xshm_node_is_local(const char *node);

/* Fabric, domain, EQ, MR */

struct xshm_fabric {
	struct fid_fabric fabric_fid;
	_Atomic int ref;
};

struct xshm_domain {
	struct fid_domain domain_fid;
	struct xshm_fabric *fabric;
	struct xshm_lock lock;
	enum fi_threading threading;
	uint64_t mr_mode;
	_Atomic int ref;
	uint64_t next_mr_key;
	struct xshm_dlist srx_imports;	/* fi_srx_context fids not closed yet */
};

struct xshm_mr {
	struct fid_mr mr_fid;
	struct xshm_domain *domain;
};

int xshm_fabric_open(struct fi_fabric_attr *attr, struct fid_fabric **fabric,
		     void *context);
int xshm_domain_open(struct fid_fabric *fabric, struct fi_info *info,
		     struct fid_domain **domain, void *context);
int xshm_eq_open(struct fid_fabric *fabric, struct fi_eq_attr *attr,
		 struct fid_eq **eq, void *context);

/* FI_PEER imports (import.c, cq.c, cntr.c). */

/* A peer context as fi_peer(3) checks it: present, whole, naming an object. */
#define XSHM_CONTEXT_OK(ctx, field) \
	((ctx) && (ctx)->size >= sizeof(*(ctx)) && (ctx)->field)

int xshm_srx_context(struct fid_domain *domain, struct fi_rx_attr *attr,
		     struct fid_ep **rx_ep, void *context);
struct xshm_ep;
struct xshm_srx_view;
int xshm_srx_bind(struct xshm_ep *ep, struct fid *fid);
void xshm_srx_unbind(struct xshm_ep *ep);
void xshm_srx_view_hold(struct xshm_srx_view *view);
void xshm_srx_view_release(struct xshm_srx_view *view);
void xshm_srx_import_free_all(struct xshm_domain *domain);
int xshm_av_import(struct fi_av_attr *attr, void *context, size_t *count);
int xshm_domain_import(uint64_t flags, void *context);
int xshm_eq_import(void *context);
extern struct fi_ops_mr xshm_mr_ops;

/*
 * Address vector (av*.c).  Indices are table slots; a hash from endpoint id
 * to slot turns the sender id of every command into a source fi_addr_t.
 */

struct xshm_av_entry {
	struct xshm_addr addr;
	bool used;
	bool peer_mapped;
	struct xshm_region peer;	/* the peer's region, mapped on first send */
	struct xshm_owner owner;	/* of the mapped region */
	uint64_t next_check_ms;		/* liveness.c: ring full, check again then */
	fi_addr_t src_id;		/* reported as source: index or user id */
	uint32_t auth_key;		/* key slot, or XSHM_AV_NO_KEY */
};

struct xshm_av_key {
	bool used;
	uint32_t size;
	unsigned char bytes[XSHM_AV_KEY_MAX];
	uint64_t digest;
	fi_addr_t user_id;
};

struct xshm_av_shared;			/* av_shared.c: a named AV's file */
struct xshm_av_senders;			/* av_auth.c: senders' key digests */

struct xshm_av {
	struct fid_av av_fid;
	struct xshm_domain *domain;
	enum fi_av_type type;
	uint64_t flags;			/* of fi_av_open */
	struct fid_eq *eq;		/* FI_EVENT: where inserts report */
	struct xshm_av_entry *table;
	size_t capacity;
	size_t lowest_free;
	struct xshm_av_key *keys;
	size_t keys_capacity;
	struct xshm_av_shared *shared;	/* NULL unless named */
	struct xshm_av_senders *senders;
	struct xshm_ep **eps;		/* bound endpoints, told of inserts */
	size_t nr_eps;
	uint64_t *hash_keys;		/* ep_id -> index, open addressing */
	uint32_t *hash_vals;
	size_t hash_size;
	uint64_t gen;			/* changes with every entry (av_table.c) */
	uint64_t last_ep_id;		/* the last sender looked up, */
	uint64_t last_gen;		/* ... at this gen, */
	ssize_t last_index;		/* ... found there (-1: not in the AV) */
	_Atomic int ref;
};

int xshm_av_open(struct fid_domain *domain, struct fi_av_attr *attr,
		 struct fid_av **av, void *context);
bool xshm_av_has(struct xshm_av *av, fi_addr_t fi_addr);
struct xshm_av *xshm_av_of(struct fid *fid, struct xshm_domain *domain);
int xshm_av_add_ep(struct xshm_av *av, struct xshm_ep *ep);
void xshm_av_remove_ep(struct xshm_av *av, struct xshm_ep *ep);
/* Gives back the spare buffers ep holds in the AV's mapped peers (spare.c). */
void xshm_av_release_spares(struct xshm_av *av, struct xshm_ep *ep);
fi_addr_t xshm_av_lookup_ep_id(struct xshm_av *av, uint64_t ep_id);
int xshm_av_peer(struct xshm_av *av, fi_addr_t fi_addr,
		 struct xshm_av_entry **entry);
/*
 * A directed receive's src (flags FI_AUTH_KEY: a key) as sources are
 * reported; *ep_id: the endpoint it names (0 for FI_ADDR_UNSPEC or a key).
 */
int xshm_av_recv_src(struct xshm_ep *ep, fi_addr_t *src, uint64_t *ep_id,
		     uint64_t flags);
/* Receiver-side isolation: false drops the sender's command. */
bool xshm_av_sender_allowed(struct xshm_ep *ep, uint64_t sender_ep_id);
/* Both of the above for one sender; *src is set when allowed. */
bool xshm_av_sender_src(struct xshm_ep *ep, uint64_t sender_ep_id,
			fi_addr_t *src);
/* The digest of the endpoint's auth key (ep_attr, else domain_attr); 0: none. */
int xshm_auth_info_digest(const struct fi_info *info, uint64_t *digest);
/* FI_EVENT inserts (eq.c): an event or error entry raised by xshm itself. */
ssize_t xshm_eq_raise(struct fid_eq *eq, uint32_t event, const void *buf,
		      size_t len, bool is_err);

/*
 * Wait sets (wait.c): how a CQ or counter opened with FI_WAIT_UNSPEC or
 * FI_WAIT_FD sleeps.  An epoll fd over the doorbells of the endpoints it
 * serves, plus an eventfd for local wakeups (a completion written by another
 * thread, fi_cq_signal); FI_GETWAIT hands out the epoll fd.  FI_WAIT_NONE
 * and FI_WAIT_YIELD sets hold no fd and never sleep.  Unless noted, call
 * with the domain lock held.
 */
struct xshm_wait_member;

struct xshm_wait {
	enum fi_wait_obj wait_obj;
	int epoll_fd;			/* -1: never sleeps */
	int event_fd;
	_Atomic int sleepers;		/* sleeping threads, + 1 if try_armed */
	bool try_armed;			/* by fi_trywait, until the next read */
	struct xshm_wait_member *members;
	size_t nr_members;
};

/* Progresses the object; true if its waiter has something (under the lock). */
typedef bool (*xshm_wait_ready_fn)(void *obj);

int xshm_wait_init(struct xshm_wait *wait, enum fi_wait_obj wait_obj);
void xshm_wait_fini(struct xshm_wait *wait);
bool xshm_wait_can_sleep(const struct xshm_wait *wait);
int xshm_wait_add_ep(struct xshm_wait *wait, struct xshm_ep *ep);
void xshm_wait_remove_ep(struct xshm_wait *wait, struct xshm_ep *ep);
/*
 * Without the lock: sleeps until woken or timeout_ms (< 0: no limit) unless
 * ready() already holds once armed.  The caller re-checks and loops.
 */
void xshm_wait_sleep(struct xshm_wait *wait, struct xshm_lock *lock,
		     xshm_wait_ready_fn ready, void *obj, int timeout_ms);
/* Without the lock: fi_trywait.  0 leaves the set armed; else -FI_EAGAIN. */
int xshm_wait_try(struct xshm_wait *wait, struct xshm_lock *lock,
		  xshm_wait_ready_fn ready, void *obj);
void xshm_wait_untry_slow(struct xshm_wait *wait);
/* Timeouts in ms as the API gives them (< 0: none) to a deadline and back. */
int64_t xshm_wait_deadline(int timeout_ms);
int xshm_wait_remaining(int64_t deadline);
/* FI_GETWAIT: the fd for FI_WAIT_FD, else -FI_ENODATA. Any thread. */
int xshm_wait_get_fd(const struct xshm_wait *wait, void *arg);
/* Any thread: wakes the sleepers. */
void xshm_wait_wake(struct xshm_wait *wait);

/* The object was read: what fi_trywait armed is no longer needed. */
static inline void xshm_wait_untry(struct xshm_wait *wait)
{
	if (wait->try_armed)
		xshm_wait_untry_slow(wait);
}

/*
 * After publishing a completion or count.  The sleeper arms (sleepers++)
 * before it checks the object; a CQ publishes and checks under the domain
 * lock, a counter with sequentially consistent atomics, so either the
 * sleeper sees the new entry or this sees the sleeper.
 */
static inline void xshm_wait_notify(struct xshm_wait *wait)
{
	if (atomic_load(&wait->sleepers))
		xshm_wait_wake(wait);
}

int xshm_cq_trywait(struct fid *cq_fid);
int xshm_cntr_trywait(struct fid *cntr_fid);

/* Completion queue: implements the owner side of the peer CQ. */

struct xshm_cq_comp {
	struct fi_cq_tagged_entry entry;
	fi_addr_t src;
	struct fi_cq_err_entry *err;	/* non-NULL: an error completion */
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

/*
 * Counter: implements the owner side of the peer counter (cntr.c).  Reading
 * or waiting on it drives the progress of the endpoints bound to it.
 */
struct xshm_cntr;

int xshm_cntr_open(struct fid_domain *domain, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr, void *context);
/* fi_ep_bind of a counter: flags FI_SEND and/or FI_RECV. */
/* The object a fid names if it is xshm's of that domain, else NULL. */
struct xshm_cq *xshm_cq_of(struct fid *fid, struct xshm_domain *domain);
struct xshm_cntr *xshm_cntr_of(struct fid *fid, struct xshm_domain *domain);
int xshm_cntr_bind_ep(struct fid *cntr_fid, struct xshm_ep *ep, uint64_t flags);
/* Endpoint close: forget the endpoint in the counters it is bound to. */
void xshm_cntr_unbind_ep(struct xshm_ep *ep);
/* Under the domain lock: drives the endpoints bound to the counter. */
void xshm_cntr_progress(struct xshm_cntr *cntr);

/*
 * Poll sets (poll.c): a domain's own CQs and counters, held by the set
 * as a bound endpoint holds them (closing them gives -FI_EBUSY meanwhile).
 * Under the domain lock.
 */
int xshm_poll_open(struct fid_domain *domain, struct fi_poll_attr *attr,
		   struct fid_poll **pollset);
/*
 * Takes the CQ (counter) behind fid for a poll set of domain: -FI_EINVAL
 * when fid is not one of domain's, -FI_ENOSYS when it is imported
 * (FI_PEER: its entries or values are the owner's).
 */
int xshm_cq_poll_join(struct fid *fid, struct xshm_domain *domain,
		      struct xshm_cq **cq);
void xshm_cq_poll_leave(struct xshm_cq *cq);
int xshm_cntr_poll_join(struct fid *fid, struct xshm_domain *domain,
			struct xshm_cntr **cntr);
void xshm_cntr_poll_leave(struct xshm_cntr *cntr);

/* A counter's values as a poll set last reported them. */
struct xshm_cntr_seen {
	uint64_t value;
	uint64_t err;
	uint64_t gen;		/* the counter's application changes; 0: none seen */
};

/*
 * Whether the counter's values differ from *seen, or from what the
 * application's last fi_cntr_set, add, seterr or adderr left when there
 * was one since; *seen becomes the values compared.
 */
bool xshm_cntr_poll_changed(struct xshm_cntr *cntr,
			    struct xshm_cntr_seen *seen);

/* Shared receive context: implements the owner side of the peer SRX. */

struct xshm_rx_entry {
	struct fi_peer_rx_entry peer;	/* first: castable to xshm_dlist */
	uint64_t ignore;
	bool multi_recv;		/* a multi-receive buffer, carved per message */
	size_t multi_used;
	uint64_t src_ep_id;		/* posted directed: the endpoint it names */
	struct xshm_rx_entry *next_free;	/* on xshm_srx.free_entries */
	struct iovec iov[XSHM_IOV_LIMIT];
	void *desc[XSHM_IOV_LIMIT];
};

struct xshm_srx {
	struct fid_peer_srx peer_srx;
	struct fi_ops_srx_peer peer_ops;	/* filled by the endpoint */
	struct xshm_domain *domain;
	struct xshm_dlist posted_msg;
	struct xshm_dlist posted_tag;
	struct xshm_dlist unexp_msg;
	struct xshm_dlist unexp_tag;
	struct xshm_dlist claimed;	/* peeked with FI_CLAIM, awaiting FI_CLAIM */
	struct xshm_rx_entry *free_entries;	/* recycled, see srx.c */
	size_t posted;			/* receives queued by the user */
	size_t directed;		/* ... of them from one source (liveness.c) */
	size_t max_posted;
	size_t min_multi_recv;
};

struct xshm_srx *xshm_srx_create(struct xshm_domain *domain, size_t rx_size);
void xshm_srx_destroy(struct xshm_srx *srx);

/* A receive as the application posts it. */
struct xshm_recv_args {
	bool tagged;
	const struct iovec *iov;
	void **desc;
	size_t count;
	fi_addr_t src;
	uint64_t src_ep_id;		/* the endpoint src names; 0: none */
	uint64_t tag;
	uint64_t ignore;
	void *context;
	uint64_t flags;
};

ssize_t xshm_srx_post(struct xshm_srx *srx, struct xshm_ep *ep,
		      const struct xshm_recv_args *recv);
ssize_t xshm_srx_peek(struct xshm_srx *srx, struct xshm_ep *ep,
		      const struct xshm_recv_args *recv);
ssize_t xshm_srx_claim(struct xshm_srx *srx, struct xshm_ep *ep,
		       const struct xshm_recv_args *recv);
int xshm_srx_cancel(struct xshm_srx *srx, struct xshm_ep *ep, void *context);

/* A posted receive leaves the queues (matched, released or failed). */
static inline void xshm_srx_unpost(struct xshm_srx *srx,
				   struct xshm_rx_entry *entry)
{
	xshm_dlist_remove((struct xshm_dlist *) &entry->peer);
	srx->posted--;
	if (entry->peer.addr != FI_ADDR_UNSPEC)
		srx->directed--;
}

/* A posted receive completes with error code (fi_cancel, a dead source). */
void xshm_srx_fail_posted(struct xshm_srx *srx, struct xshm_ep *ep,
			  struct xshm_rx_entry *entry, int code);

/*
 * Posted receives directed at a source (FI_DIRECTED_RECV) whose endpoint
 * gone(arg, ep_id) declares gone: with fail, each completes with FI_EIO
 * through ep; without, the first one found is only reported.  Returns
 * whether there was one.
 */
bool xshm_srx_directed_gone(struct xshm_srx *srx, struct xshm_ep *ep,
			    bool (*gone)(void *arg, uint64_t ep_id), void *arg,
			    bool fail);

/* srx.c internals shared with claim.c */
struct xshm_rx_entry *xshm_srx_find_unexpected(struct xshm_srx *srx,
					       const struct xshm_recv_args *recv);
int xshm_srx_start(struct xshm_srx *srx, struct xshm_rx_entry *entry);
int xshm_srx_discard(struct xshm_srx *srx, struct xshm_rx_entry *entry);
void xshm_srx_set_buffers(struct xshm_rx_entry *entry,
			  const struct xshm_recv_args *recv);

/* Endpoint */

/* A send not yet fully pushed into the peer's ring. */
struct xshm_tx_op {
	struct xshm_dlist link;
	uint8_t op;			/* XSHM_OP_MSG or XSHM_OP_TAGGED */
	uint16_t cmd_flags;
	fi_addr_t dest;
	uint64_t dest_ep_id;
	uint64_t tag;
	uint64_t data;
	void *context;
	uint64_t comp_flags;		/* FI_SEND | FI_MSG or FI_TAGGED */
	bool cq_entry;			/* a CQ entry wanted (counters always count) */
	struct iovec iov[XSHM_IOV_LIMIT];
	size_t iov_count;
	size_t total;
	size_t sent;
	bool started;			/* first cell pushed */
	bool fence;			/* FI_FENCE: waits for all before it */
	bool rts;			/* the receiver pulls it (single copy) */
	bool cells;			/* whole in a run of cells */
	uint32_t ack_id;		/* XSHM_CMD_ACK: completes on its ack */
	uint32_t timed_id;		/* XSHM_CMD_TIMED: its time reported */
	struct xshm_owner dest_owner;	/* the receiver process it was posted to */
};

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

struct xshm_ep {
	struct fid_ep ep_fid;
	struct xshm_domain *domain;
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
	uint32_t next_ack_id;
	struct xshm_dlist acks_out;	/* acks not yet pushed to their sender */
	const struct xshm_scopy *scopy;	/* single-copy engine, or NULL */
	uint32_t split_gen;		/* of the last split copy (rts.c) */
	/* the pages under its latest large send and receive (large_path.c) */
	struct xshm_huge_memo tx_pages, rx_pages;
	uint64_t rx_reported;		/* receive completions, errors too */
	struct xshm_large_sent {	/* path.c: its latest large send */
		fi_addr_t dest;
		uint64_t rx_reported;	/* the endpoint's count then */
	} large_sent;
	uint64_t auth_digest;		/* of its auth key, in its region; 0: none */
	struct xshm_spare {		/* spare.c */
		uint64_t mapping_id;	/* of the receiver's region */
		uint32_t index;
		bool held;
	} spares[XSHM_SPARES];
	bool spare_wanted;		/* for spare_dest, on the next idle poll */
	fi_addr_t spare_dest;
	size_t spare_len;		/* bytes the last send put in a buffer */
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
	struct xshm_path_timed {	/* path.c: sends awaiting their time */
		uint64_t dest_ep_id;
		uint64_t start_ns;
		size_t len;
		struct xshm_path_class *cls;
		uint64_t mapping_id;	/* of the receiver whose class it is */
		uint32_t id;		/* its ack_id; 0: none */
		enum xshm_path path;
		uint64_t busy_ns;	/* the sender's copies so far */
	} path_timed[XSHM_PATH_TIMED];
	uint64_t rx_large_done_ns;	/* path.c: the last large receive done */
	struct xshm_buf_done {		/* buf_return.c */
		uint32_t index;
		uint64_t borrower;
	} bufs_done[XSHM_BUFS_DONE_MAX];
	uint32_t bufs_done_count;
	struct xshm_sweep sweep;	/* against dead peers (progress.c) */
	uint32_t sweep_polls;
	uint64_t sweep_last_ns;
	uint64_t next_sweep_ms;		/* liveness.c */
	uint32_t progress_calls;
};

int xshm_ep_open(struct fid_domain *domain, struct fi_info *info,
		 struct fid_ep **ep, void *context);
extern struct fi_ops_msg xshm_msg_ops;
extern struct fi_ops_tagged xshm_tagged_ops;
extern const struct fi_ops_srx_peer xshm_srx_peer_ops;

/* Completion wanted unless bound with FI_SELECTIVE_COMPLETION. */
static inline uint64_t xshm_tx_flags(const struct xshm_ep *ep, uint64_t flags)
{
	return ep->tx_selective ? flags : flags | FI_COMPLETION;
}

static inline uint64_t xshm_rx_flags(const struct xshm_ep *ep, uint64_t flags)
{
	return ep->rx_selective ? flags : flags | FI_COMPLETION;
}

ssize_t xshm_send(struct xshm_ep *ep, uint8_t op, const struct iovec *iov,
		  size_t count, fi_addr_t dest, uint64_t tag, uint64_t data,
		  void *context, uint64_t flags);
ssize_t xshm_recv(struct xshm_ep *ep, bool tagged, const struct iovec *iov,
		  void **desc, size_t count, fi_addr_t src, uint64_t tag,
		  uint64_t ignore, void *context, uint64_t flags);
void xshm_ep_progress(struct xshm_ep *ep);
int xshm_ep_drain(struct xshm_ep *ep, int budget);
void xshm_ep_drain_replies(struct xshm_ep *ep);
void xshm_tx_progress(struct xshm_ep *ep);
ssize_t xshm_tx_cancel(struct xshm_ep *ep, void *context);
void xshm_tx_abort_all(struct xshm_ep *ep);

/* A command of the protocol's own (control.c): what its header says. */
struct xshm_control {
	uint8_t op;
	uint8_t proto;
	uint64_t tag;
	uint64_t msg_size;
	uint32_t ack_id;
	const void *payload;	/* payload_len bytes after the header */
	uint32_t payload_len;
};

/*
 * Pushes ctl into peer's ring; false when the ring is full or skipped the
 * cell as stalled.
 */
bool xshm_control_push(struct xshm_ep *ep, struct xshm_region *peer,
		       const struct xshm_control *ctl);

/* Acknowledgements (ack.c) for FI_DELIVERY_COMPLETE and FI_MATCH_COMPLETE. */
void xshm_ack_send(struct xshm_ep *ep, uint64_t sender_ep_id, uint32_t ack_id,
		   int status);
struct xshm_region *xshm_av_sender_region(struct xshm_av *av, uint64_t ep_id);
void xshm_ack_flush(struct xshm_ep *ep);
/* A new id for an ack or a timing; never 0. */
uint32_t xshm_ack_new_id(struct xshm_ep *ep);
void xshm_ack_received(struct xshm_ep *ep, uint64_t from_ep_id, uint32_t ack_id,
		       int status);
void xshm_ack_reap(struct xshm_ep *ep);
void xshm_ack_close(struct xshm_ep *ep);
/* The send from_ep_id's ack_id will complete, or NULL. */
struct xshm_tx_op *xshm_ack_waiting(struct xshm_ep *ep, uint64_t from_ep_id,
				    uint32_t ack_id);

/*
 * Large messages named by an RTS (rts.c).  xshm_rts_copy copies len bytes
 * of a matched one into its receive buffers, with its sender's help when
 * that comes; 0 or a negative errno.  xshm_rts_offered is the sender's
 * side: it pushes its share of the chunks the receiver offers.
 */
int xshm_rts_copy(struct xshm_rx_msg *msg, size_t len);
void xshm_rts_offered(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		      const struct xshm_rts *offer);

/*
 * Bounce buffers or the single copy by the pages under the buffers, for
 * sizes where xshm_scopy_by_pages (large_path.c): the receiver notes the
 * first len bytes of the buffers of such a message it received; a sender,
 * whether its own and the receiver's latest lie on huge pages.
 */
void xshm_rx_large_pages(struct xshm_ep *ep,
			 const struct fi_peer_rx_entry *entry, size_t len);
bool xshm_tx_large_pages(struct xshm_ep *ep, const struct xshm_region *peer,
			 const struct iovec *iov, size_t count, size_t total);

/* path.c: which path a large send takes, and the timings that choose it. */
struct xshm_send_path {
	bool rts;		/* the single copy; else bounce buffers */
	uint32_t timed_id;	/* XSHM_CMD_TIMED with this id; 0: untimed */
};
/* For a send larger than xshm_params.path_min. */
struct xshm_send_path xshm_path_choose(struct xshm_ep *ep,
				       const struct xshm_av_entry *peer,
				       const struct iovec *iov, size_t count,
				       size_t total, fi_addr_t dest,
				       uint64_t flags);
/* Sender: its copies of timed send id took ns more. */
void xshm_path_sender_copied(struct xshm_ep *ep, uint32_t id, uint64_t ns);
/* Sender: the receiver's XSHM_OP_TIMING for one of its timed sends. */
void xshm_path_timing(struct xshm_ep *ep, const struct xshm_cmd *cmd,
		      const struct xshm_timing *timing);
void xshm_path_large_received(struct xshm_ep *ep, uint64_t sender_ep_id,
			      uint16_t cmd_flags, uint32_t id,
			      uint64_t ready_ns, uint64_t busy_ns);

/*
 * Receiver: a message of size bytes completed; ready_ns when its receive
 * was posted after it arrived, else 0; busy_ns the time its copies took.
 * Inline so that the small messages' receive path makes no call.
 */
static inline void xshm_path_received(struct xshm_ep *ep, uint64_t sender_ep_id,
				      uint16_t cmd_flags, uint32_t id,
				      size_t size, uint64_t ready_ns,
				      uint64_t busy_ns)
{
	if (size > xshm_params.path_min)
		xshm_path_large_received(ep, sender_ep_id, cmd_flags, id,
					 ready_ns, busy_ns);
}

uint32_t xshm_rx_handle_cmd(struct xshm_ep *ep, const struct xshm_cmd *cmd);
void xshm_rx_abort_all(struct xshm_ep *ep);
void xshm_rx_sender_died(struct xshm_rx_msg *msg);
fi_addr_t xshm_rx_src_addr(struct fi_peer_rx_entry *entry);

/*
 * Peer liveness (liveness.c): operations involving a process that died
 * without closing its endpoint fail with FI_EIO.  A sweep, at most every
 * liveness_ms during progress while the endpoint waits on peers, checks the
 * processes its pending operations involve; a send that finds a ring full
 * checks that receiver.  Dead peers' regions are retired (shm/liveness.h).
 */
void xshm_liveness_progress(struct xshm_ep *ep, bool idle);

/*
 * Bounce buffers of a peer's pool for sends (spare.c): borrow one, the
 * spare held for the peer if any, else from the pool (0, or the pool's
 * error); after a send that put len bytes in a buffer, want a spare for
 * dest, borrowed (and its first len bytes warmed) on the next idle poll
 * (refill); give it back before the peer's region is unmapped or the
 * endpoint closes.
 */
int xshm_spare_borrow(struct xshm_ep *ep, const struct xshm_region *peer,
		      uint32_t *index);
void xshm_spare_want(struct xshm_ep *ep, fi_addr_t dest, size_t len);
void xshm_spare_refill(struct xshm_ep *ep);
void xshm_spare_release(struct xshm_ep *ep, const struct xshm_region *peer);

/*
 * Warming the cells of the next send (warm.c): after a whole message in
 * cells, want len bytes of dest's ring from its tail warmed, which the
 * next idle poll does (run) when they reach past the first cache line.
 * Inline: it is on every send's path.
 */
static inline void xshm_warm_want(struct xshm_ep *ep, fi_addr_t dest,
				  size_t len)
{
	ep->warm.dest = dest;
	ep->warm.len = len;
}

static inline bool xshm_warm_wanted(const struct xshm_ep *ep)
{
	return ep->warm.len > XSHM_CACHE_LINE;	/* the first line: never */
}

void xshm_warm_run(struct xshm_ep *ep);

/*
 * Copies len bytes of the iov from offset into a bounce buffer of peer's,
 * with the stores FI_XSHM_BOUNCE_STORES asks for or measurement chose
 * (bounce_fill.c).
 */
void xshm_bounce_fill(struct xshm_ep *ep, const struct xshm_region *peer,
		      void *buf, const struct iovec *iov, size_t count,
		      size_t offset, size_t len);

/*
 * Whether ep fills peer's buffers with cached stores: as
 * FI_XSHM_BOUNCE_STORES says, or as its choice for peer stands, probes
 * aside (bounce_fill.c).
 */
bool xshm_bounce_fills_cached(const struct xshm_ep *ep,
			      const struct xshm_region *peer);

/* A bounce buffer the receive path is done with, freed in a batch (buf_return.c). */
void xshm_buf_return(struct xshm_ep *ep, uint32_t index, uint64_t borrower);
void xshm_buf_return_flush(struct xshm_ep *ep);

/*
 * Receives posted to the endpoint's own SRX from one source: the liveness
 * sweep watches those sources (liveness.c).  An owner's SRX holds its
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
	       !xshm_dlist_empty(&ep->rx_active);
}
/* Ring full: true (region retired) when the receiver's process is dead. */
bool xshm_liveness_peer_dead(struct xshm_ep *ep, struct xshm_av_entry *peer);
/* How long a sleeper may wait without a sweep: -1 when nothing is pending. */
int xshm_liveness_sleep_ms(const struct xshm_ep *ep);
/* The error for an operation whose peer region went away. */
int xshm_liveness_gone_err(struct xshm_owner owner);
/* Retire the AV's mappings of a dead process's region (av_table.c, av_auth.c). */
void xshm_av_retire(struct xshm_av *av, fi_addr_t fi_addr, struct xshm_owner dead);
void xshm_av_sender_retire(struct xshm_av *av, uint64_t ep_id,
			   struct xshm_owner dead);
/* The process behind a cached sender region, without refreshing it. */
struct xshm_owner xshm_av_sender_owner(struct xshm_av *av, uint64_t ep_id);
/*
 * The process behind endpoint ep_id, mapping its region if need be; once it
 * is gone, the last process seen there (pid 0: none ever was).
 */
struct xshm_owner xshm_av_source_process(struct xshm_av *av, uint64_t ep_id);
/* A sender whose ack cannot be pushed (its ring is full); 0: none waits. */
uint64_t xshm_ack_blocked_sender(const struct xshm_ep *ep);
void xshm_ack_wait_fail(struct xshm_ep *ep, struct xshm_tx_op *op, int err);
void xshm_tx_queue_fail(struct xshm_ep *ep, struct xshm_tx_op *op, int err);
bool xshm_srx_unqueue(struct xshm_srx *srx, struct fi_peer_rx_entry *entry);

/* Reporting (comp.c): every completion goes to the CQ and counter here. */

void xshm_report_tx(struct xshm_ep *ep, void *context, uint64_t flags,
		    bool cq_entry);
void xshm_report_tx_err(struct xshm_ep *ep, const struct fi_cq_err_entry *err);
void xshm_report_rx(struct xshm_ep *ep, void *context, uint64_t flags,
		    size_t len, void *buf, uint64_t data, uint64_t tag,
		    fi_addr_t src, bool cq_entry);
void xshm_report_rx_err(struct xshm_ep *ep, const struct fi_cq_err_entry *err);
/* A message received into entry, its buffers and context; selective aware. */
void xshm_report_rx_entry(struct xshm_ep *ep,
			  const struct fi_peer_rx_entry *entry, uint64_t flags,
			  size_t len, uint64_t data, uint64_t tag);

/* Common helpers */

/*
 * Scatter-gather helpers (iov.c).  The checks and the one-buffer copies
 * are inline: every send and receive call makes them, usually on a single
 * buffer, and a call to walk one entry cost more than the walk.
 */
static inline size_t xshm_iov_total(const struct iovec *iov, size_t count)
{
	size_t total = 0;

	if (count == 1)
		return iov[0].iov_len;
	for (size_t i = 0; i < count; i++)
		total += iov[i].iov_len;
	return total;
}

static inline int xshm_check_iov(const struct iovec *iov, size_t count,
				 size_t limit)
{
	if (count > limit || (count && !iov))
		return -FI_EINVAL;
	if (count == 1)
		return iov[0].iov_len && !iov[0].iov_base ? -FI_EINVAL : 0;
	for (size_t i = 0; i < count; i++)
		if (iov[i].iov_len && !iov[i].iov_base)
			return -FI_EINVAL;
	return 0;
}

/* The iov's bytes offset to offset + len, when one buffer holds them all. */
static inline char *xshm_iov_one_buffer(const struct iovec *iov, size_t count,
					size_t offset, size_t len)
{
	if (count != 1 || len > iov[0].iov_len ||
	    offset > iov[0].iov_len - len)
		return NULL;
	return (char *) iov[0].iov_base + offset;
}

/*
 * Copies len bytes between buf and the iov from offset, with copy; returns
 * the bytes copied.
 */
size_t xshm_iov_copy(const struct iovec *iov, size_t count, size_t offset,
		     unsigned char *buf, size_t len, bool to_iov,
		     xshm_copy_fn *copy);

static inline size_t xshm_iov_copy_to(const struct iovec *iov, size_t count,
				      size_t offset, const void *src,
				      size_t len)
{
	char *base = xshm_iov_one_buffer(iov, count, offset, len);

	if (!base)
		return xshm_iov_copy(iov, count, offset, (unsigned char *) src,
				     len, true, xshm_copy);
	if (len)
		xshm_copy(base, src, len);
	return len;
}

/* Gathers len bytes of the iov from offset into dst, with copy. */
static inline size_t xshm_iov_gather(xshm_copy_fn *copy, void *dst,
				     const struct iovec *iov, size_t count,
				     size_t offset, size_t len)
{
	char *base = xshm_iov_one_buffer(iov, count, offset, len);

	if (!base)
		return xshm_iov_copy(iov, count, offset, dst, len, false, copy);
	if (len)
		copy(dst, base, len);
	return len;
}

static inline size_t xshm_iov_copy_from(void *dst, const struct iovec *iov,
					size_t count, size_t offset,
					size_t len)
{
	return xshm_iov_gather(xshm_copy, dst, iov, count, offset, len);
}

int xshm_fid_no_bind(struct fid *fid, struct fid *bfid, uint64_t flags);
int xshm_fid_no_control(struct fid *fid, int command, void *arg);
int xshm_fid_no_ops_open(struct fid *fid, const char *name, uint64_t flags,
			 void **ops, void *context);

#endif
