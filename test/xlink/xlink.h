/*
 * Helpers of the tests of an owner of two paths (test/xlink/): a receiver in
 * the process of the test case and two sending children, one on the
 * receiver's node (the local path) and one on node 1 (the remote path) when
 * XSHM_TEST_SPLIT_NODES is set (test/prov/harness.h); without it both are
 * on one node, which is how they run against xshm.
 *
 * The provider is $XSHM_TEST_PROVIDER, xlink by default.  A program whose
 * provider libfabric does not find fails with "provider <name> not found"
 * when the variable named it, and is skipped (exit 77) when it did not.
 * Everything goes through the public libfabric API.
 */
#ifndef XL_XLINK_H
#define XL_XLINK_H

#include "../prov/harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define XL_LOCAL	0	/* the child on the receiver's node */
#define XL_REMOTE	1	/* the child on node 1 (split nodes) */
#define XL_WAIT_MS	20000	/* how long a burst child waits for its completions */
#define XL_SETTLE_MS	300	/* how long unexpected messages get to arrive */
#define XL_MIB		((size_t)1 << 20)

static const char *const xl_path[] = { "local", "remote" };

/* ---- a receiver and one sender on each path ---- */

struct xl_rig {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child kid[2];
	fi_addr_t fa[2];	/* as the receiver inserted them */
};

/*
 * The sender on node 1.  With split nodes it is alone there, so it opens no
 * same-node peer: a SIGKILL of it (test_path_kill) leaves no region behind
 * in this machine's /dev/shm, which on a real node of its own would be that
 * node's to reclaim.
 */
static inline void xl_remote_child(int sock, void *arg)
{
	if (xt_split_nodes())
		setenv("FI_XLINK_PEER", "none", 1);
	xt_burst_child(sock, arg);
}

/*
 * Forks both senders (burst children) before the receiver opens anything
 * with cfg.  Sender late (-1: none) gets the receiver's name but is not inserted: its
 * name is left in late_name for the test to insert, and its fa is
 * FI_ADDR_NOTAVAIL until then.
 */
static inline void xl_start_cfg(struct xl_rig *r, struct xt_cfg cfg, int late,
				char late_name[XT_NAME_MAX])
{
	memset(r, 0, sizeof(*r));
	r->cfg = cfg;
	xt_spawn_on(&r->kid[XL_LOCAL], 0, xt_burst_child, NULL);
	xt_spawn_on(&r->kid[XL_REMOTE], 1, xl_remote_child, NULL);
	xt_open(&r->x, &r->cfg);
	for (int p = 0; p < 2; p++) {
		if (p != late) {
			r->fa[p] = xt_connect_sender(&r->x, &r->kid[p], true);
			continue;
		}
		xt_recv_name(r->kid[p].sock, late_name);
		xt_send_name(r->kid[p].sock, &r->x);
		r->fa[p] = FI_ADDR_NOTAVAIL;
	}
	XT_ASSERT(r->fa[0] != r->fa[1], "both senders got fi_addr %llu",
		  (unsigned long long)r->fa[0]);
}

/* The receiver with FI_SOURCE and FI_DIRECTED_RECV besides the default caps. */
static inline struct xt_cfg xl_cfg(uint64_t extra_caps)
{
	struct xt_cfg cfg = xt_cfg_default();

	cfg.caps |= FI_SOURCE | FI_DIRECTED_RECV | extra_caps;
	return cfg;
}

static inline void xl_start_late(struct xl_rig *r, uint64_t extra_caps, int late,
				 char late_name[XT_NAME_MAX])
{
	xl_start_cfg(r, xl_cfg(extra_caps), late, late_name);
}

static inline void xl_start(struct xl_rig *r, uint64_t extra_caps)
{
	xl_start_cfg(r, xl_cfg(extra_caps), -1, NULL);
}

static inline void xl_stop(struct xl_rig *r)
{
	for (int p = 0; p < 2; p++)
		xt_burst_quit(&r->x, &r->kid[p]);
	xt_close(&r->x);
}

/* The path of a source address, asserting it is one of the senders. */
static inline int xl_path_of(const struct xl_rig *r, fi_addr_t src)
{
	for (int p = 0; p < 2; p++)
		if (src == r->fa[p])
			return p;
	xt_fail(__FILE__, __LINE__, NULL, "FI_SOURCE gave %llu, the senders are %llu and %llu",
		(unsigned long long)src, (unsigned long long)r->fa[0],
		(unsigned long long)r->fa[1]);
}

/* Sender p's message seq: its payload seed and tag. */
static inline uint64_t xl_seed(int p, size_t seq)
{
	return ((uint64_t)(p + 1) << 32) + seq + 1;
}

static inline uint64_t xl_tag(int p, size_t seq)
{
	return ((uint64_t)(p + 1) << 32) | seq;
}

/* Posts the n sends of msgs from sender p (returns once all are posted). */
static inline void xl_send(struct xl_rig *r, int p, const struct xt_burst_msg *msgs, size_t n)
{
	xt_burst_post(&r->x, &r->kid[p], msgs, n, XL_WAIT_MS);
}

/* Asserts every send of sender p's last burst completed (without error unless allowed). */
static inline void xl_sent(struct xl_rig *r, int p, size_t n, bool allow_err)
{
	struct xt_burst_result *res = calloc(n ? n : 1, sizeof(*res));

	XT_ASSERT(res != NULL, "calloc");
	xt_burst_results(&r->x, &r->kid[p], res, n);
	for (size_t i = 0; i < n; i++) {
		XT_ASSERT(res[i].completed, "%s sender: send %zu of %zu got no completion",
			  xl_path[p], i, n);
		XT_ASSERT(allow_err || !res[i].is_err, "%s sender: send %zu: error %d (%s)",
			  xl_path[p], i, res[i].err, fi_strerror(abs(res[i].err)));
	}
	free(res);
}

/* Progresses for a moment so that messages sent meanwhile arrive unexpected. */
static inline void xl_settle(struct xl_rig *r)
{
	xt_expect_none(r->x.rx, r->x.tx, XL_SETTLE_MS);
}

/* A receive buffer with a guard of 64 bytes after its posted length. */
#define XL_GUARD 64

static inline unsigned char *xl_buf(size_t len)
{
	unsigned char *b = xt_alloc(len + XL_GUARD);

	memset(b, 0xa5, len + XL_GUARD);
	return b;
}

static inline void xl_check_guard(const unsigned char *b, size_t len, const char *what)
{
	for (size_t i = len; i < len + XL_GUARD; i++)
		XT_ASSERT(b[i] == 0xa5, "%s: byte %zu past the posted %zu bytes was written",
			  what, i, len);
}

/* ---- the program ---- */

/* Whether libfabric finds the provider, asked in a child (no load here). */
static inline bool xl_provider_found(void)
{
	pid_t pid = fork();
	int status;

	if (pid == 0) {
		struct xt_cfg cfg = xt_cfg_default();
		struct fi_info *info = NULL;

		_exit(xt_getinfo(&cfg, &info) == 0 && info ? 0 : 1);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return false;
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static inline int xl_main(Suite *s)
{
	const char *asked = getenv("XSHM_TEST_PROVIDER");

	if (!asked || !*asked)
		setenv("XSHM_TEST_PROVIDER", "xlink", 1);
	if (!xl_provider_found()) {
		if (asked && *asked) {
			fprintf(stderr, "FAIL: provider %s not found\n", xt_provider());
			return EXIT_FAILURE;
		}
		fprintf(stderr, "SKIP: provider %s not found\n", xt_provider());
		return 77;
	}
	fprintf(stderr, "provider %s, %s\n", xt_provider(),
		xt_split_nodes() ? "split nodes" : "one node");
	return xt_run_suite(s);
}

#endif
