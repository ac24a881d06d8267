/*
 * Shared helpers for the provider tests.  Everything goes through the public
 * libfabric API; the provider under test is $XSHM_TEST_PROVIDER (default
 * "xshm").
 *
 * Assertions: use XT_ASSERT / XT_ASSERT_RC everywhere, in the libcheck test
 * process and in the processes it forks.  In the test process a failure is a
 * libcheck failure; in a forked child it prints the reason and exits with a
 * nonzero status, which xt_join (or any wait of the parent) reports.  Either
 * way, the endpoints still open in that process are closed first so that no
 * shared memory is left behind.
 */
#ifndef XT_HARNESS_H
#define XT_HARNESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include <check.h>
#include <rdma/fabric.h>
#include <rdma/fi_cm.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_endpoint.h>
#include <rdma/fi_eq.h>
#include <rdma/fi_errno.h>
#include <rdma/fi_tagged.h>

#define XT_API		FI_VERSION(1, 17)
#define XT_TIMEOUT_MS	30000	/* any single wait for a peer or a completion */
#define XT_CHILD_SECS	80	/* a forked child's alarm() */
#define XT_NAME_MAX	256
#define XT_STASH_MAX	128

/* ---- assertions ---- */

/* expr: the failed condition's text, or NULL. */
void xt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

#define XT_ASSERT(cond, ...) \
	do { \
		if (!(cond)) \
			xt_fail(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

/* Asserts that a call returns the expected (negative fabric errno) code. */
#define XT_ASSERT_RC(call, expected) \
	do { \
		long long _rc = (long long)(call), _ex = (long long)(expected); \
		if (_rc != _ex) \
			xt_fail(__FILE__, __LINE__, NULL, \
				"%s returned %lld (%s), expected %lld (%s)", \
				#call, _rc, xt_strerror(_rc), _ex, \
				xt_strerror(_ex)); \
	} while (0)

#define XT_ASSERT_OK(call) XT_ASSERT_RC(call, 0)

const char *xt_strerror(long long rc);

/* ---- selecting tests, and nodes ---- */

/*
 * What a test case needs of the provider under test.  $XSHM_TEST_GENERIC
 * selects: unset, empty or "0": every kind (the default suite);
 * "1": XT_GENERIC only; "extra": XT_GENERIC and XT_EXTRA.  A program adds
 * a test case only when xt_wanted(its kind) (test/xlink/README.md lists them).
 */
enum xt_kind {
	XT_GENERIC,	/* any FI_EP_RDM provider with msg/tagged, directed
			 * receive, FI_SOURCE, peek/claim/discard, cancel of
			 * receives, truncation, CQ data, counters, multi-
			 * receive */
	XT_EXTRA,	/* optional features: wait objects, poll sets,
			 * selective/delivery/match completion, fence,
			 * thread safety, close semantics */
	XT_XSHM,	/* xshm's own: address strings, services, regions,
			 * parameters, shared/auth/user-id AVs, attribute values */
};
bool xt_wanted(enum xt_kind kind);

/*
 * $XSHM_TEST_SPLIT_NODES (nonzero): processes of a test live on simulated
 * nodes.  The process of the test case is on node 0; xt_spawn puts a child
 * on node 1, xt_spawn_on on the node asked.  Node n's id is B + n, B being
 * $FI_XSHM_NODE_ID as the program started (hex) or 0x5e1f000000000000; a
 * child sets FI_XSHM_NODE_ID before its first libfabric call.  xshm reads
 * its node id once, when libfabric loads it: a child forked after its
 * parent loaded the provider keeps the parent's node (xt_spawn says so on
 * stderr, xt_spawn_on fails).  Without the variable every process is on
 * one node and the node arguments are ignored.
 */
bool xt_split_nodes(void);
/* The node id string (hex) of node n. */
const char *xt_node_id(int node, char *buf, size_t len);

/* ---- configuration and objects ---- */

const char *xt_provider(void);

struct xt_cfg {
	uint32_t api;
	uint64_t caps;
	enum fi_cq_format cq_format;
	enum fi_wait_obj wait_obj;
	uint64_t tx_bind_flags;	/* or'ed to FI_TRANSMIT, e.g. FI_SELECTIVE_COMPLETION */
	bool shared_cq;		/* one CQ bound with FI_TRANSMIT | FI_RECV */
	const char *node;	/* fi_getinfo node, service and flags */
	const char *service;
	uint64_t gi_flags;
	/* Zero leaves the hint unset (existing tests rely on that). */
	uint64_t tx_op_flags;		/* hints tx_attr->op_flags */
	uint64_t rx_op_flags;		/* hints rx_attr->op_flags */
	enum fi_threading threading;	/* hints domain_attr->threading */
	uint64_t rx_bind_flags;		/* or'ed to FI_RECV, e.g. FI_SELECTIVE_COMPLETION */
	enum fi_progress data_progress;	/* hints domain_attr->data_progress */
	uint64_t mr_mode;		/* hints domain_attr->mr_mode */
};

/* API 1.17, FI_MSG | FI_TAGGED, FI_CQ_FORMAT_TAGGED, FI_WAIT_NONE. */
struct xt_cfg xt_cfg_default(void);

/* Hints for the configured provider: RDM, cfg caps, no mode, mr_mode 0. */
struct fi_info *xt_hints(const struct xt_cfg *cfg);
int xt_getinfo(const struct xt_cfg *cfg, struct fi_info **info);

/* One completion or error as read from a CQ. */
struct xt_comp {
	bool is_err;
	fi_addr_t src;			/* fi_cq_readfrom, else FI_ADDR_NOTAVAIL */
	struct fi_cq_tagged_entry e;	/* when !is_err */
	struct fi_cq_err_entry err;	/* when is_err */
};

/* A CQ and what was read from it while only progressing it. */
struct xt_cq {
	struct fid_cq *fid;
	bool readfrom;
	struct xt_comp stash[XT_STASH_MAX];
	size_t head, count;
};

struct xt_ep {
	const struct xt_cfg *cfg;
	struct fi_info *info;
	struct fid_fabric *fabric;
	struct fid_domain *domain;
	struct fid_av *av;
	struct xt_cq cqs[2];
	struct xt_cq *tx, *rx;		/* the same one with cfg->shared_cq */
	struct fid_ep *ep;
	char name[XT_NAME_MAX];		/* fi_getname after enable */
	size_t namelen;
};

enum xt_stage {
	XT_DOMAIN,	/* info, fabric, domain */
	XT_RESOURCES,	/* + av and cq(s) */
	XT_EP,		/* + fi_endpoint, nothing bound */
	XT_BOUND,	/* + av and cq(s) bound */
	XT_ENABLED,	/* + fi_enable, name fetched */
};

/* Opens up to a stage; cfg must outlive the endpoint. Asserts on failure. */
void xt_open_upto(struct xt_ep *x, const struct xt_cfg *cfg, enum xt_stage stage);
void xt_open(struct xt_ep *x, const struct xt_cfg *cfg);
void xt_enable(struct xt_ep *x);
/* Closes whatever is open, asserting every fi_close returns 0. */
void xt_close(struct xt_ep *x);
/* The endpoint id in x's name, which names its region. */
uint64_t xt_ep_id(const struct xt_ep *x);

size_t xt_tx_iov_limit(const struct xt_ep *x);
size_t xt_rx_iov_limit(const struct xt_ep *x);

fi_addr_t xt_av_insert(struct xt_ep *x, const void *name);

/* "fi_xshm://<16 hex>/<16 hex>" and its NUL: 10 + 16 + 1 + 16 + 1 bytes. */
#define XT_XSHM_ADDRLEN 44
bool xt_is_xshm_addr(const void *addr, size_t len);

/* ---- completions ---- */

/*
 * Waits up to timeout_ms for one entry (completion or error) on cq, reading
 * (and stashing for later) whatever also delivers meanwhile, so that both
 * are progressed.  Returns 0 or -FI_EAGAIN on timeout.
 */
int xt_poll(struct xt_cq *cq, struct xt_cq *also, int timeout_ms, struct xt_comp *out);
/* Asserts one successful completion arrives; the error if any is printed. */
#define xt_expect_comp(cq, also, out) \
	xt_expect_comp_at(__FILE__, __LINE__, (cq), (also), (out))
/* Asserts one error entry arrives. */
#define xt_expect_err(cq, also, out) \
	xt_expect_err_at(__FILE__, __LINE__, (cq), (also), (out))
/* Asserts nothing arrives on cq for ms milliseconds (while progressing). */
#define xt_expect_none(cq, also, ms) \
	xt_expect_none_at(__FILE__, __LINE__, (cq), (also), (ms))
void xt_expect_comp_at(const char *file, int line, struct xt_cq *cq,
		       struct xt_cq *also, struct xt_comp *out);
void xt_expect_err_at(const char *file, int line, struct xt_cq *cq,
		      struct xt_cq *also, struct xt_comp *out);
void xt_expect_none_at(const char *file, int line, struct xt_cq *cq,
		       struct xt_cq *also, int ms);
/* Reads both CQs once, stashing entries. */
void xt_progress(struct xt_ep *x);

#define xt_wait_tx(x, out) xt_expect_comp((x)->tx, (x)->rx, (out))
#define xt_wait_rx(x, out) xt_expect_comp((x)->rx, (x)->tx, (out))

/* Retries a data transfer call while it returns -FI_EAGAIN, progressing x. */
#define XT_RETRY(x, call) \
	({ \
		ssize_t _r; \
		uint64_t _end = xt_now_ms() + XT_TIMEOUT_MS; \
		while ((_r = (call)) == -FI_EAGAIN && xt_now_ms() < _end) \
			xt_progress(x); \
		_r; \
	})
#define XT_POST(x, call) XT_ASSERT_RC(XT_RETRY(x, call), 0)

uint64_t xt_now_ms(void);

/* ---- processes ---- */

typedef void (*xt_child_fn)(int sock, void *arg);

struct xt_child {
	pid_t pid;
	int sock;	/* the parent's end of the socketpair */
	int status;	/* valid when reaped */
	bool reaped;
};

/*
 * Forks a child running fn(sock, arg) then _exit(0).  Fork before opening
 * any fabric object in the parent.
 */
void xt_spawn(struct xt_child *c, xt_child_fn fn, void *arg);
/* xt_spawn on node `node` (see xt_split_nodes). */
void xt_spawn_on(struct xt_child *c, int node, xt_child_fn fn, void *arg);
/* Waits (with a deadline, killing it if late) and asserts exit status 0. */
void xt_join(struct xt_child *c);
/*
 * Reaps a child that was meant to die by SIGKILL (sent by the parent or
 * raised by itself) and asserts it did.  Call it right after the kill, before
 * any other wait: a child killed and not yet joined fails those waits.
 */
void xt_join_killed(struct xt_child *c);

/* One-byte messages between the two ends of a socketpair. */
void xt_signal(int sock, uint8_t what);
uint8_t xt_wait(int sock);
void xt_send_bytes(int sock, const void *buf, size_t len);
/* Returns the length, asserting it fits max. */
size_t xt_recv_bytes(int sock, void *buf, size_t max);
void xt_send_u64(int sock, uint64_t v);
uint64_t xt_recv_u64(int sock);

void xt_send_name(int sock, const struct xt_ep *x);
size_t xt_recv_name(int sock, char *name);
/* Sends our name, receives the peer's and inserts it. */
fi_addr_t xt_exchange(struct xt_ep *x, int sock);

/* ---- a sending child driven by the parent ---- */

enum xt_send_op {
	XT_SEND = 1,	/* fi_send / fi_tsend */
	XT_SENDV,	/* fi_sendv / fi_tsendv with iov_len[0..niov) */
	XT_SENDMSG,	/* fi_sendmsg / fi_tsendmsg, iovs, FI_COMPLETION */
	XT_SENDDATA,	/* fi_senddata / fi_tsenddata */
	XT_INJECT,	/* fi_inject / fi_tinject */
	XT_INJECTDATA,	/* fi_injectdata / fi_tinjectdata */
	XT_QUIT,
};

/* The payload is xt_fill(seed) over the whole message, split into iovs. */
struct xt_send_cmd {
	enum xt_send_op op;
	bool tagged;
	size_t len;
	uint64_t seed, tag, data;
	size_t niov;
	size_t iov_len[4];
};

struct xt_send_result {
	bool completed;		/* a send completion (or error) arrived */
	bool is_err;
	int err;
	uint64_t flags;
	bool context_ok;	/* op_context was the one passed */
};

/*
 * Child main: opens an endpoint (arg: a struct xt_cfg *, or NULL for the
 * default), sends its name, inserts the parent's, then runs commands.
 * Inject buffers are overwritten right after the call returns; for
 * injects the child waits 100 ms and reports whether a completion came.
 */
void xt_sender_child(int sock, void *arg);
/* Parent side: takes the child's name (inserting it if asked), sends ours. */
fi_addr_t xt_connect_sender(struct xt_ep *x, struct xt_child *c, bool insert);
/* Returns once the child posted the send (asserting it returned 0). */
void xt_remote_send(struct xt_ep *x, struct xt_child *c, const struct xt_send_cmd *cmd);
/* Waits for the outcome of the child's last send; x is progressed meanwhile. */
struct xt_send_result xt_remote_done(struct xt_ep *x, struct xt_child *c);
void xt_stop_sender(struct xt_ep *x, struct xt_child *c);

/* A receiving parent and one or two sending children (A, B), all inserted. */
struct xt_rig {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child a, b;
	fi_addr_t fa, fb;
	int nsenders;
};

void xt_rig_start(struct xt_rig *r, int nsenders, uint64_t extra_caps);
void xt_rig_stop(struct xt_rig *r);
/* Has child c send and waits for the outcome, asserting success but for injects. */
struct xt_send_result xt_rig_send(struct xt_rig *r, struct xt_child *c,
				  struct xt_send_cmd sc);
/* Progresses for a moment, asserting no receive completes. */
void xt_settle(struct xt_rig *r);

/* Posts a receive, tagged or not, retrying on -FI_EAGAIN. */
void xt_post_recv(struct xt_ep *x, bool tagged, void *buf, size_t len, fi_addr_t src,
		  uint64_t tag, uint64_t ignore, void *ctx);

/* ---- waiting with a deadline of one's own, progressing ---- */

/* As xt_expect_comp / xt_expect_err, waiting at most ms. */
#define xt_expect_comp_ms(cq, also, ms, out) \
	xt_expect_comp_within_at(__FILE__, __LINE__, (cq), (also), (ms), (out))
#define xt_expect_err_ms(cq, also, ms, out) \
	xt_expect_err_within_at(__FILE__, __LINE__, (cq), (also), (ms), (out))
void xt_expect_comp_within_at(const char *file, int line, struct xt_cq *cq,
			      struct xt_cq *also, int ms, struct xt_comp *out);
void xt_expect_err_within_at(const char *file, int line, struct xt_cq *cq,
			     struct xt_cq *also, int ms, struct xt_comp *out);

/* xt_wait / xt_recv_u64 / a raw read that progress x (if any) meanwhile. */
uint8_t xt_wait_progress(int sock, struct xt_ep *x);
uint64_t xt_recv_u64_progress(int sock, struct xt_ep *x);
void xt_read_progress(int sock, void *buf, size_t len, struct xt_ep *x);
void xt_write_bytes(int sock, const void *buf, size_t len);

/* ---- a burst sender child: posts several sends at once ---- */

/*
 * One send of a burst.  The payload is xt_fill(seed) over len bytes.
 * plain: fi_tsend / fi_send (fi_tsenddata / fi_senddata when flags has
 * FI_REMOTE_CQ_DATA), so that the endpoint's op_flags apply; otherwise
 * fi_tsendmsg / fi_sendmsg with exactly flags.  With FI_INJECT in flags the
 * buffer is overwritten as soon as the call returns.
 */
struct xt_burst_msg {
	bool tagged;
	bool plain;
	size_t len;
	uint64_t seed, tag, data;
	uint64_t flags;
};

struct xt_burst_result {
	bool completed;		/* a completion or an error arrived for it */
	bool is_err;
	int err;
	uint64_t flags;
	uint64_t time_ms;	/* xt_now_ms() in the child when it was read */
	uint32_t rank;		/* 0 for the first completion read, 1, ... */
};

/*
 * Child main: opens an endpoint (arg: a struct xt_cfg *, or NULL for the
 * default), sends its name, inserts the parent's (xt_connect_sender is the
 * parent side), then runs bursts: posts every send of the burst in order
 * (retrying on -FI_EAGAIN while progressing), reports, then reads its CQs
 * until every posted send completed or wait_ms passed, and reports the
 * outcome.  Buffers stay allocated until the child quits.
 */
void xt_burst_child(int sock, void *arg);
/* Returns once the child posted all n sends, asserting each returned 0. */
void xt_burst_post(struct xt_ep *x, struct xt_child *c, const struct xt_burst_msg *msgs,
		   size_t n, int wait_ms);
/* The outcome of the last burst (n entries); x is progressed meanwhile. */
void xt_burst_results(struct xt_ep *x, struct xt_child *c, struct xt_burst_result *res,
		      size_t n);
void xt_burst_quit(struct xt_ep *x, struct xt_child *c);

/* ---- data ---- */

void xt_fill(void *buf, size_t len, uint64_t seed, size_t offset);
/* Index of the first byte that differs from the pattern, or -1. */
ssize_t xt_mismatch(const void *buf, size_t len, uint64_t seed, size_t offset);
uint8_t xt_pattern_byte(uint64_t seed, size_t pos);

#define XT_ASSERT_PATTERN(buf, len, seed, offset) \
	do { \
		ssize_t _bad = xt_mismatch((buf), (len), (seed), (offset)); \
		XT_ASSERT(_bad < 0, "data differs at byte %zd of %zu", \
			  _bad, (size_t)(len)); \
	} while (0)

void *xt_alloc(size_t len);

/* ---- the program ---- */

/*
 * The process that created the region file name in /dev/shm, from the
 * endpoint id in it (prov/xshm/base/addr.c: the pid above the low 24 bits,
 * unless the top bit marks an id taken from a service): 0 for any other
 * name, and for another user's region.
 */
pid_t xt_region_creator(const char *name);

/*
 * Runs the suite in CK_FORK mode, then checks that no /dev/shm name
 * containing "xshm" created during the run remains.  Returns the exit code.
 */
int xt_run_suite(Suite *s);

#endif
