/*
 * Helpers for the peer conformance tests: the reference owner (owner.h) in
 * the libcheck test process, standalone senders of the peer provider forked
 * with the provider tests' harness (xt_sender_child, xt_burst_child), and
 * waits that drive the owner's progress, every one with a deadline.
 *
 * The suite tests any peer provider of this peer ABI, not only xshm: the
 * peer is $XSHM_TEST_PROVIDER (default "xshm"), and
 * XSHM_TEST_PEER_ABI=libfabric-1.22 declares a peer built from libfabric
 * 1.22's headers, whose get_tag has no size argument (fi_peer(3) gives it
 * one), XSHM_TEST_PEER_ABI=spec one that gives it; without it, the owner
 * takes xshm's default (FI_XSHM_PEER_ABI=auto): no size in the upstream
 * style, the size in the page's.  Cases that test what only xshm does are added with
 * pt_add_xshm_test and left out for other peers.  Every case runs once in
 * each owner style (enum owner_style): pt_run builds the suite's cases once
 * per style, in test cases named "<style>/<name>" (CK_RUN_CASE selects one).
 *
 * The same programs linked with owner_xlink.c instead of owner.c (the
 * *_xlink programs, test/peer/peer_xlink.sh) put the owner provider xlink
 * in the owner's role: every owner_* call is then the application's call
 * into xlink, the senders open xlink endpoints (XSHM_TEST_PROVIDER=xlink in
 * the children alone: the peer under test is still $XSHM_TEST_PROVIDER's,
 * xshm), and each case runs once, named "xlink/<name>" (xlink has one
 * style, libfabric's).  What only the reference owner can see is checked
 * inside "if (owner_internals())": the owner's struct owner_stats, its get
 * records, its queues and entries.  Under xlink a case checks only what an
 * application sees (data and guards, completion fields and flags, lengths,
 * tags, sources, order, errors, counters, what a peek finds, closes), and
 * a case whose point is the reference owner's internals (the peer_ops
 * table, the peer's own CQ, counter and endpoint, fault injection, peer
 * AV/domain/EQ imports, hand-made peer contexts) is added with
 * pt_add_reference_owner_test: left out there, and listed by pt_run on
 * lines "left out: <suite>:<case> xN: <why>".
 *
 * Use PT_ASSERT here rather than XT_ASSERT: on failure it closes the open
 * owners first, so that no shared memory region is left behind.
 */
#ifndef XSHM_TEST_PEER_COMMON_H
#define XSHM_TEST_PEER_COMMON_H

#include "test/prov/harness.h"
#include "owner.h"

#define PT_TIMEOUT_MS	10000
#define PT_TAG		0x7a6ULL
#define PT_GUARD	64
#define PT_GUARD_BYTE	0x5a

void pt_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 3, 4)));
/* The same, naming the failed condition. */
void pt_fail_cond(const char *file, int line, const char *cond, const char *fmt, ...)
	__attribute__((noreturn, format(printf, 4, 5)));

#define PT_ASSERT(cond, ...) \
	do { \
		if (!(cond)) \
			pt_fail_cond(__FILE__, __LINE__, #cond, __VA_ARGS__); \
	} while (0)

#define PT_ASSERT_RC(call, expected) \
	do { \
		long long _rc = (long long)(call), _ex = (long long)(expected); \
		if (_rc != _ex) \
			pt_fail(__FILE__, __LINE__, "%s returned %lld (%s), expected %lld (%s)", \
				#call, _rc, xt_strerror(_rc), _ex, xt_strerror(_ex)); \
	} while (0)

/* ---- the suite ---- */

/* The owner style of the test case running now. */
extern enum owner_style pt_style;

/* Is the peer under test xshm? */
bool pt_peer_is_xshm(void);

/*
 * A test case of the style being added (see pt_run), named
 * "<style>/<name>", with this timeout; its tests run with pt_style set.
 */
TCase *pt_tcase(Suite *s, const char *name, double timeout_s);

/* Cases that test what only xshm does, beyond fi_peer(3): xshm alone runs them. */
#define pt_add_xshm_test(tc, fn) pt_add_xshm_loop_test(tc, fn, 0, 1)
#define pt_add_xshm_loop_test(tc, fn, start, end) \
	do { \
		if (pt_peer_is_xshm()) \
			tcase_add_loop_test(tc, fn, start, end); \
		else \
			pt_left_out += (end) - (start); \
	} while (0)
extern int pt_left_out;

/*
 * Cases about the reference owner's internals: the xlink owner leaves them
 * out (pt_leave_out), saying why.
 */
#define pt_add_reference_owner_test(tc, fn, why) \
	pt_add_reference_owner_loop_test(tc, fn, 0, 1, why)
#define pt_add_reference_owner_loop_test(tc, fn, start, end, why) \
	do { \
		if (owner_internals()) \
			tcase_add_loop_test(tc, fn, start, end); \
		else \
			pt_leave_out(#fn, (end) - (start), why); \
	} while (0)
/* Both: xshm's own, and about the reference owner's internals. */
#define pt_add_xshm_reference_owner_loop_test(tc, fn, start, end, why) \
	do { \
		if (owner_internals()) \
			pt_add_xshm_loop_test(tc, fn, start, end); \
		else \
			pt_leave_out(#fn, (end) - (start), why); \
	} while (0)
void pt_leave_out(const char *name, int n, const char *why);

/* ---- the owner ---- */

/*
 * owner_open, asserting success; cfg may be NULL.  The owner opens the peer
 * under test (a NULL prov_name), in the style of the running test case and
 * with the peer's get_tag (cfg's style and get_tag_no_size are ignored).
 */
void pt_open(struct owner *o, const struct owner_cfg *cfg);
/* The same, returning owner_open's error (o->failed_call says where). */
int pt_open_try(struct owner *o, const struct owner_cfg *cfg);
/*
 * Asserts the owner saw no protocol violation and the peer holds no entry,
 * closes it (asserting 0), and asserts nothing was held after closing.
 * (xlink: the violations its owner saw through the API, and the closes.)
 */
void pt_close(struct owner *o);
/* Asserts no protocol violation so far. */
void pt_check_clean(struct owner *o);
/* Asserts every entry given to the peer was freed exactly once (xlink:
 * pt_check_clean alone: its entries are its own). */
void pt_check_entries_balanced(struct owner *o);

/* ---- completions ---- */

/* One entry within PT_TIMEOUT_MS, asserting it is a success / an error. */
void pt_comp_at(const char *file, int line, struct owner *o, struct owner_comp *out);
void pt_err_at(const char *file, int line, struct owner *o, struct owner_comp *out);
/* Nothing arrives for ms milliseconds while progressing. */
void pt_none_at(const char *file, int line, struct owner *o, int ms);
#define pt_comp(o, out) pt_comp_at(__FILE__, __LINE__, (o), (out))
#define pt_err(o, out) pt_err_at(__FILE__, __LINE__, (o), (out))
#define pt_none(o, ms) pt_none_at(__FILE__, __LINE__, (o), (ms))

/*
 * Progresses until n messages are queued unexpected (tagged or not).  The
 * xlink owner cannot count them: there, until a peek finds one on n of its
 * endpoints (owner_unexpected_count), and n more than nep fails the test
 * (give the messages tags of their own and wait for each, pt_wait_queued).
 */
void pt_wait_unexpected(struct owner *o, bool tagged, size_t n);
/* Progresses until a receive with these parameters would find a queued
 * message (owner_peek), and returns what the peek reported. */
struct owner_comp pt_wait_queued(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag,
				 uint64_t ignore);
/* Reference owner only: progresses until the peer made n get_msg/get_tag
 * calls in all. */
void pt_wait_gets(struct owner *o, uint64_t n);
/* Progresses until the peer holds no entry (xlink: returns). */
void pt_wait_none_held(struct owner *o);

/* A successful receive completion from xshm: context, flags, len, tag. */
void pt_check_recv_at(const char *file, int line, const struct owner_comp *c, void *ctx,
		      bool tagged, uint64_t tag, size_t len);
#define pt_check_recv(c, ctx, tagged, tag, len) \
	pt_check_recv_at(__FILE__, __LINE__, (c), (ctx), (tagged), (tag), (len))
/* buf holds xt_fill(seed) over len bytes, then PT_GUARD guard bytes. */
void pt_check_data_at(const char *file, int line, const void *buf, size_t len,
		      uint64_t seed);
#define pt_check_data(buf, len, seed) pt_check_data_at(__FILE__, __LINE__, (buf), (len), (seed))
/* A buffer of len bytes followed by PT_GUARD guard bytes, all PT_GUARD_BYTE. */
unsigned char *pt_buf(size_t len);

/* ---- xshm sender processes ---- */

struct pt_peer {
	struct xt_child c;
	char name[XT_NAME_MAX];
	size_t namelen;
	fi_addr_t addr;		/* in the owner's AV; FI_ADDR_NOTAVAIL until inserted */
};

/* Forks (before the owner is opened): fn is xt_sender_child or xt_burst_child. */
void pt_spawn(struct pt_peer *p, xt_child_fn fn, void *arg);
/* Takes the child's address, inserting it if asked, and gives it owner ep's. */
void pt_connect(struct owner *o, int ep, struct pt_peer *p, bool insert);
/* Inserts the child's address into the owner's AV now. */
fi_addr_t pt_insert(struct owner *o, struct pt_peer *p);

/* xt_sender_child: returns once the send is posted (asserting it returned 0). */
void pt_send(struct owner *o, struct pt_peer *p, const struct xt_send_cmd *cmd);
/* The outcome of the child's last send; the owner is progressed meanwhile. */
struct xt_send_result pt_send_done(struct owner *o, struct pt_peer *p);
/* Both, asserting the send completed successfully. */
void pt_send_ok(struct owner *o, struct pt_peer *p, const struct xt_send_cmd *cmd);
void pt_stop(struct owner *o, struct pt_peer *p);

/* Raw reads from a child, progressing the owner (if not NULL) meanwhile. */
void pt_read(struct owner *o, struct pt_peer *p, void *buf, size_t len);
uint64_t pt_read_u64(struct owner *o, struct pt_peer *p);
/* Waits for the child to exit (with a deadline), asserting it succeeded. */
void pt_join(struct pt_peer *p);

/* xt_burst_child. */
void pt_burst(struct owner *o, struct pt_peer *p, const struct xt_burst_msg *msgs, size_t n,
	      int wait_ms);
void pt_burst_results(struct owner *o, struct pt_peer *p, struct xt_burst_result *res,
		      size_t n);
void pt_burst_quit(struct owner *o, struct pt_peer *p);

/* A tagged or untagged XT_SEND of len bytes seeded with seed. */
struct xt_send_cmd pt_cmd(bool tagged, size_t len, uint64_t seed, uint64_t tag);

/*
 * The usual setup: n xt_sender_child senders (forked first), the owner
 * (cfg may be NULL), sender i connected to owner endpoint i % nep and
 * inserted into the owner's AV unless bit i of no_insert is set.
 */
#define PT_MAX_PEERS 4
struct pt_rig {
	struct owner o;
	struct pt_peer p[PT_MAX_PEERS];
	int n;
};
void pt_rig_start(struct pt_rig *r, const struct owner_cfg *cfg, int n, unsigned no_insert);
/* The same with senders opened with child_cfg (a struct xt_cfg *, static). */
void pt_rig_start_senders(struct pt_rig *r, const struct owner_cfg *cfg, int n,
			  unsigned no_insert, struct xt_cfg *child_cfg);
void pt_rig_stop(struct pt_rig *r);
/*
 * pt_rig_start, returning owner_open's error (r->o.failed_call says where)
 * with the senders stopped, instead of asserting it succeeds.
 */
int pt_rig_try(struct pt_rig *r, const struct owner_cfg *cfg, int n, unsigned no_insert);

/*
 * The program: a suite named name, whose cases add_cases adds (with
 * pt_tcase) once per owner style (xlink: once), run by xt_run_suite with
 * the /dev/shm check.
 */
int pt_run(const char *name, void (*add_cases)(Suite *s));

#endif
