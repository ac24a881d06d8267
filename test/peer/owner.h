/*
 * A reference owner for the peer API of fi_peer(3), written from the
 * specification alone, for the peer conformance tests and as an example for
 * owner providers.
 *
 * The owner plays the part a network provider would play when it hands its
 * local-node traffic to xshm:
 *
 *   - it opens xshm through the public libfabric API (fi_getinfo with
 *     prov_name "xshm", fi_fabric, fi_domain or fi_domain2(FI_PEER), an AV,
 *     optionally fi_eq_open(FI_PEER)) and one or more xshm endpoints;
 *   - it imports its own completion queue (fi_cq_open(FI_PEER), struct
 *     fid_peer_cq with write/writeerr), its own counters (fi_cntr_open(FI_PEER),
 *     struct fid_peer_cntr with inc/incerr) and its own shared receive context
 *     (fi_srx_context(FI_PEER), struct fid_peer_srx) into xshm, in either
 *     of the two styles fi_peer(3) is read in (enum owner_style);
 *   - the application posts receives to the owner, which keeps the posted
 *     and unexpected queues and does the matching for xshm (get_msg/get_tag,
 *     queue_msg/queue_tag, start and discard, free_entry,
 *     foreach_unspec_addr);
 *   - it has a traffic source of its own (owner_loopback_send), matched
 *     against the same posted receives and completed into the same CQ, as a
 *     network provider's remote traffic would be;
 *   - the application reads one completion queue (owner_cq_read), which
 *     drives xshm's progress with fi_cq_read(xshm_cq, NULL, 0).
 *
 * It includes only public libfabric headers and <xshm/fi_peer.h>.  It is
 * single-threaded (the application serialises every call) and it does not
 * abort: calls return 0 or a negative fabric errno, and protocol violations
 * by the peer are counted in struct owner_stats for the tests to check.
 * Failures can be injected (struct owner_faults).
 *
 * A second implementation of these functions, owner_xlink.c, puts the owner
 * provider xlink in the reference owner's role: the same calls are the
 * application's calls into xlink's public API (its fabric, domain, AV, CQ,
 * counters and endpoints), and xlink imports its own CQ, counters and
 * fid_peer_srx into xshm, does the matching and drives xshm's progress.
 * The test programs linked with it are the *_xlink ones
 * (test/peer/README.md).  What only the reference owner can see (struct
 * owner_stats but for progress, the get records, the queues and entries,
 * the peer objects and faults) stays zero or is refused there:
 * owner_internals is false, and the functions documented "reference owner
 * only" fail the test when called.
 */
#ifndef XSHM_TEST_OWNER_H
#define XSHM_TEST_OWNER_H

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
#include <xshm/fi_peer.h>

#define OWNER_MAX_EPS	4
#define OWNER_NAME_MAX	256
#define OWNER_IOV_MAX	8

/* The source address of messages from owner_loopback_send. */
#define OWNER_ADDR_LOOPBACK	((fi_addr_t) 1 << 62)

/* Who produced a completion. */
enum owner_origin {
	OWNER_FROM_PEER = 1,	/* xshm, through write/writeerr */
	OWNER_FROM_SELF,	/* the owner's own traffic */
};

/* One entry of the owner's CQ. */
struct owner_comp {
	enum owner_origin origin;
	bool is_err;
	struct fi_cq_tagged_entry e;	/* when !is_err */
	fi_addr_t src;			/* the src given to write(), when !is_err */
	struct fi_cq_err_entry err;	/* when is_err (err_data not kept) */
};

/* One call of get_msg / get_tag, as the peer made it. */
struct owner_get_rec {
	bool tagged;
	fi_addr_t addr;
	size_t size;
	uint64_t tag;
	int ret;
};

/*
 * How the owner pairs its SRX with the peer.  fi_peer(3) can be read two
 * ways, and libfabric's own code took the second.
 */
enum owner_style {
	/*
	 * The page's example: the owner binds the fid that fi_srx_context
	 * returned to the peer's endpoints; the peer fills the owner's
	 * fi_ops_srx_peer before returning, and the owner calls the peer's
	 * start/discard through its own fid_peer_srx (or, when its peer_ops is
	 * NULL, through entry->srx->peer_ops).
	 */
	OWNER_STYLE_SPEC,
	/*
	 * libfabric 1.22's owners (efa over util_srx, with shm as the peer):
	 * fi_srx_context(FI_PEER) is called but the fid it returns is ignored;
	 * the owner binds its own fid_peer_srx (FI_CLASS_SRX_CTX) to each peer
	 * endpoint, finds its state in srx->ep_fid.fid.context, keeps its own
	 * callbacks in its peer_ops (as efa does) and reaches the peer's through
	 * entry->srx->peer_ops, entry->srx being the fid_peer_srx the peer
	 * passed to get_msg/get_tag: never the owner's own.  Like util_srx, it
	 * marks the receives it hands over with FI_COMPLETION and frees an
	 * entry itself as soon as discard_* returns.
	 */
	OWNER_STYLE_UPSTREAM,
	OWNER_NSTYLES
};

extern const char *const owner_style_name[OWNER_NSTYLES];	/* "spec", ... */

/* get_tag's size argument, when the peer did not give one (get_tag_no_size). */
#define OWNER_SIZE_UNKNOWN	SIZE_MAX

struct owner_cfg {
	const char *prov_name;		/* NULL: "xshm" */
	enum owner_style style;
	bool srx_peer_ops_null;		/* the fid_peer_srx's peer_ops is NULL */
	/*
	 * The peer calls get_tag(srx, addr, tag, entry), as libfabric 1.22's
	 * headers (unlike its fi_peer(3)) define it: no size argument.
	 */
	bool get_tag_no_size;
	uint64_t caps;			/* 0: FI_MSG | FI_TAGGED | FI_DIRECTED_RECV */
	enum fi_cq_format cq_format;	/* 0 (FI_CQ_FORMAT_UNSPEC): TAGGED */
	int nep;			/* xshm endpoints, 0: 1 */
	bool cntrs;			/* import a send and a receive counter */
	bool peer_av;			/* fi_av_open with FI_PEER */
	bool peer_domain;		/* fi_domain2 with FI_PEER */
	bool peer_eq;			/* fi_eq_open with FI_PEER */
	bool progress_by_cntr;		/* progress with fi_cntr_read, not fi_cq_read */
};

struct owner_stats {
	/* SRX: calls the peer made, and what the owner did */
	uint64_t get_calls, get_matched, get_unexpected, get_failed;
	uint64_t queue_calls;
	uint64_t entries_given;		/* entries handed to the peer by get_* */
	uint64_t entries_freed;		/* valid free_entry calls, and in the
					   UPSTREAM style the owner's own frees
					   of discarded entries */
	uint64_t double_frees;		/* free_entry of an entry already freed
					   (UPSTREAM: or freed by the peer in
					   discard_*, which the owner frees) */
	uint64_t unknown_frees;		/* free_entry of a pointer never given */
	uint64_t misplaced_frees;	/* free_entry of an entry the peer did not hold */
	uint64_t bad_queues;		/* queue_* of an entry not returned with -FI_ENOENT */
	uint64_t starts, start_errors;	/* start_msg/start_tag the owner called */
	uint64_t discards, discard_errors;
	uint64_t foreach_calls, get_addr_calls, addrs_resolved;
	/* CQ */
	uint64_t writes, writeerrs;	/* calls, including the failed ones */
	uint64_t writes_failed, writeerrs_failed;
	uint64_t progress_calls, progress_errors;
	long long last_progress_rc;
	/* AV, domain, EQ */
	uint64_t av_queries, av_ep_addr_calls;
	uint64_t domain_calls;		/* any call into the owner's domain */
	uint64_t eq_calls;		/* any call into the owner's EQ */
	/* SRX styles */
	uint64_t bad_srx;		/* get_* / foreach with a srx naming no owner */
	uint64_t own_srx_gets;		/* UPSTREAM: get_* with the owner's own srx */
	uint64_t own_ops_calls;		/* UPSTREAM: the owner's own start/discard
					   called for a peer's entry */
	/* Set by owner_close: entries the peer still held after closing. */
	uint64_t held_at_close;
	/* The xlink owner: what it saw wrong through xlink's API */
	uint64_t cq_overruns;		/* a CQ read wrote past its format's entries */
	uint64_t stray_peeks;		/* a peek's completion with none pending */
	uint64_t lost_peeks;		/* a peek that never completed */
};

/* Failures to inject: each counts down as it fires. */
struct owner_faults {
	int get_fail;		/* the next get_fail get_msg/get_tag calls fail */
	int get_err;		/* with this (e.g. -FI_ENOMEM) */
	int write_fail;		/* the next write_fail write calls fail */
	int writeerr_fail;	/* the next writeerr_fail writeerr calls fail */
	ssize_t write_err;	/* with this (e.g. -FI_EAGAIN) */
};

/* The owner's counter, imported into xshm. */
struct owner_cntr {
	struct fid_peer_cntr peer;	/* what xshm calls */
	struct fi_ops_cntr_owner ops;
	struct fi_peer_cntr_context ctx;
	struct fid_cntr *xshm;		/* xshm's counter importing it (the xlink
					   owner: xlink's counter) */
	uint64_t value, err;		/* as owner_cntr_value/err last read them */
	struct owner *owner;
};

struct owner_entry;

struct owner {
	struct owner_cfg cfg;
	void *backend;			/* the xlink owner's own state, else NULL */
	const char *failed_call;	/* what owner_open failed on */

	/* xshm's objects (the xlink owner: xlink's, those the application opens) */
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_eq *eq;
	struct fid_av *av;
	struct fid_cq *cq;		/* imports peer_cq */
	struct fid_ep *srx;		/* imports peer_srx (SPEC; NULL in UPSTREAM) */
	struct fid_ep *ep[OWNER_MAX_EPS];
	char name[OWNER_MAX_EPS][OWNER_NAME_MAX];
	size_t namelen[OWNER_MAX_EPS];

	/* the owner's objects, imported into xshm */
	struct fid_peer_cq peer_cq;
	struct fi_ops_cq_owner cq_ops;
	struct fi_peer_cq_context cq_ctx;
	struct fid_peer_srx peer_srx;
	struct fi_ops_srx_owner srx_ops;
	struct fi_ops_srx_peer srx_peer_ops;	/* SPEC: filled in by the peer;
						   UPSTREAM: the owner's own */
	struct fi_peer_srx_context srx_ctx;
	struct fid_peer_av peer_av;
	struct fi_ops_av_owner av_ops;
	struct fi_peer_av_context av_ctx;
	struct fid_domain owner_domain;
	struct fi_peer_domain_context domain_ctx;
	struct fid_eq owner_eq;
	struct fi_peer_eq_context eq_ctx;
	struct owner_cntr tx_cntr, rx_cntr;

	/* the owner's SRX queues */
	struct owner_entry *posted[2];		/* [tagged] */
	struct owner_entry *unexpected[2];	/* [tagged] */
	struct owner_entry *all;		/* every entry, until close */

	/* the owner's CQ */
	struct owner_comp *comps;
	size_t comp_head, comp_count, comp_cap;

	struct owner_get_rec *gets;
	size_t ngets, gets_cap;

	struct owner_stats st;
	struct owner_faults faults;
};

/*
 * Which owner this is: NULL for the reference owner, the provider name of
 * the owner provider otherwise ("xlink"): the provider whose endpoints talk
 * to the owner's (the senders of the tests open it).
 */
extern const char *const owner_provider;
/* Can the owner's internals (see struct owner_stats) be checked? */
static inline bool owner_internals(void)
{
	return owner_provider == NULL;
}

/*
 * Called first by a test program.  The xlink owner runs here, in a process
 * it started itself, the sender of its own traffic (owner_loopback_send)
 * and never returns there; the reference owner returns at once.
 */
void owner_program_init(void);

/* Opens xshm and imports the owner's objects.  0 or a negative errno. */
int owner_open(struct owner *o, const struct owner_cfg *cfg);
/*
 * Discards what is still queued unexpected, closes every xshm object and
 * frees the owner's memory.  o->st stays readable.  Returns the first error.
 */
int owner_close(struct owner *o);

/* fi_av_insert of one xshm address into the owner's AV; 0 or an error. */
int owner_av_insert(struct owner *o, const void *name, fi_addr_t *addr);

/*
 * Application receives: matched against what is queued unexpected first
 * (in arrival order), otherwise queued.  src: FI_ADDR_UNSPEC or an address
 * of the AV (a directed receive).  0 or a negative errno.
 */
int owner_post(struct owner *o, bool tagged, const struct iovec *iov, size_t count,
	       fi_addr_t src, uint64_t tag, uint64_t ignore, void *context);
/*
 * The same, posted through endpoint ep (owner_post: endpoint 0).  The
 * reference owner has one SRX for all its endpoints and only checks ep;
 * xlink has a receive queue per endpoint, fed by that endpoint's messages.
 */
int owner_post_on(struct owner *o, int ep, bool tagged, const struct iovec *iov,
		  size_t count, fi_addr_t src, uint64_t tag, uint64_t ignore, void *context);
int owner_post_recv(struct owner *o, void *buf, size_t len, fi_addr_t src, void *context);
int owner_post_trecv(struct owner *o, void *buf, size_t len, fi_addr_t src,
		     uint64_t tag, uint64_t ignore, void *context);
/*
 * Drops the first unexpected message that a receive with these parameters
 * would match (as FI_DISCARD would): xshm's through discard_msg/discard_tag.
 * 0, -FI_ENOMSG when none matches, or what discard returned.
 */
int owner_discard(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore);

/* The owner's own traffic: a message from OWNER_ADDR_LOOPBACK. */
int owner_loopback_send(struct owner *o, bool tagged, const void *buf, size_t len,
			uint64_t tag);

/* Drives xshm's progress once. */
void owner_progress(struct owner *o);
/*
 * Takes one entry from the owner's CQ, progressing xshm until one is there
 * or timeout_ms passed.  0, or -FI_EAGAIN on timeout.
 */
int owner_cq_read(struct owner *o, struct owner_comp *out, int timeout_ms);
size_t owner_cq_count(const struct owner *o);

/* A counter's value / errors after progressing it with fi_cntr_read. */
uint64_t owner_cntr_value(struct owner *o, struct owner_cntr *c);
uint64_t owner_cntr_err(struct owner *o, struct owner_cntr *c);

/*
 * What a receive with these parameters would find queued unexpected now,
 * the first such message, as a peek (fi_tagged(3) FI_PEEK) reports it: in
 * out->e its flags, its size as len, its tag and data, in out->src its
 * source (the xlink owner: as fi_cq_readfrom reports it, FI_ADDR_NOTAVAIL
 * without FI_SOURCE).  0, or -FI_ENOMSG when nothing matches.
 */
int owner_peek(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag, uint64_t ignore,
	       struct owner_comp *out);

/*
 * Unexpected messages queued.  The xlink owner cannot count its queues:
 * there it is the number of endpoints on which a peek finds a message of
 * the kind (0 to nep).
 */
size_t owner_unexpected_count(struct owner *o, bool tagged);
/* Reference owner only: posted receives queued, the i-th unexpected entry
 * (NULL past the end), the entries the peer holds now (given and neither
 * queued nor freed). */
size_t owner_posted_count(const struct owner *o, bool tagged);
const struct fi_peer_rx_entry *owner_unexpected(const struct owner *o, bool tagged,
						size_t i);
uint64_t owner_entries_held(const struct owner *o);

/* A printable summary of every protocol violation seen; "" if none. */
const char *owner_violations(const struct owner *o, char *buf, size_t len);

uint64_t owner_now_ms(void);

/*
 * For the owners (owner.c, owner_xlink.c): appends a completion to the
 * application's queue, which owner_cq_read takes from (owner_comps.c).
 * 0 or -FI_ENOMEM.
 */
int owner_comp_push(struct owner *o, const struct owner_comp *c);

#endif
