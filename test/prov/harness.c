#include "harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "shm/layout.h"
#include "stale_regions.h"

#define XT_CHILD_FAILED	99
#define XT_MAX_EPS	16
#define XT_MAX_CHILDREN	16

static bool xt_in_child;
static pid_t xt_parent;
static struct xt_ep *xt_eps[XT_MAX_EPS];
static int xt_neps;
static struct xt_child *xt_children[XT_MAX_CHILDREN];
static int xt_nchildren;

/* ---- assertions ---- */

static int xt_close_objects(struct xt_ep *x);

/* After a failure: close what is open, ignoring errors, leaving no region. */
static void xt_close_all_quiet(void)
{
	while (xt_neps > 0)
		xt_close_objects(xt_eps[xt_neps - 1]);
}

void xt_fail(const char *file, int line, const char *expr, const char *fmt, ...)
{
	char msg[1024];
	size_t n = 0;
	va_list ap;

	if (expr)
		n = (size_t)snprintf(msg, sizeof(msg) / 2, "'%s': ", expr);
	if (n >= sizeof(msg) / 2)
		n = sizeof(msg) / 2 - 1;
	va_start(ap, fmt);
	vsnprintf(msg + n, sizeof(msg) - n, fmt, ap);
	va_end(ap);
	xt_close_all_quiet();
	if (xt_in_child) {
		fprintf(stderr, "%s:%d: [child %d] %s\n", file, line, (int)getpid(), msg);
		_exit(XT_CHILD_FAILED);
	}
	_ck_assert_failed(file, line, "Assertion failed", "%s", msg);
}

const char *xt_strerror(long long rc)
{
	if (rc > 0)
		return "a count";
	return fi_strerror((int)-rc);
}

uint64_t xt_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- selecting tests, and nodes ---- */

bool xt_wanted(enum xt_kind kind)
{
	const char *g = getenv("XSHM_TEST_GENERIC");

	if (!g || !*g || !strcmp(g, "0"))
		return true;
	if (!strcmp(g, "extra"))
		return kind != XT_XSHM;
	return kind == XT_GENERIC;
}

bool xt_split_nodes(void)
{
	const char *v = getenv("XSHM_TEST_SPLIT_NODES");

	return v && *v && strcmp(v, "0") != 0;
}

/* Node 0's id: $FI_XSHM_NODE_ID when first asked (before any fork), or ours. */
static uint64_t xt_node_base(void)
{
	static uint64_t base;

	if (!base) {
		const char *v = getenv("FI_XSHM_NODE_ID");

		base = v ? strtoull(v, NULL, 16) : 0;
		if (!base)
			base = 0x5e1f000000000000ULL;
	}
	return base;
}

const char *xt_node_id(int node, char *buf, size_t len)
{
	snprintf(buf, len, "%llx", (unsigned long long)(xt_node_base() + (uint64_t)node));
	return buf;
}

/* Whether libfabric loaded its DL providers (it does at its first call). */
static bool xt_providers_loaded(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	bool found = false;

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "-fi.so") != NULL;
	fclose(f);
	return found;
}

/* In split mode, puts this process on node 0 unless the provider is loaded. */
static void xt_node_setup(void)
{
	char id[32];

	if (!xt_split_nodes() || xt_providers_loaded())
		return;
	setenv("FI_XSHM_NODE_ID", xt_node_id(0, id, sizeof(id)), 1);
}

/* ---- configuration and objects ---- */

const char *xt_provider(void)
{
	const char *p = getenv("XSHM_TEST_PROVIDER");

	return p && *p ? p : "xshm";
}

struct xt_cfg xt_cfg_default(void)
{
	return (struct xt_cfg){
		.api = XT_API,
		.caps = FI_MSG | FI_TAGGED,
		.cq_format = FI_CQ_FORMAT_TAGGED,
		.wait_obj = FI_WAIT_NONE,
	};
}

struct fi_info *xt_hints(const struct xt_cfg *cfg)
{
	struct fi_info *h = fi_allocinfo();

	XT_ASSERT(h != NULL, "fi_allocinfo");
	h->fabric_attr->prov_name = strdup(xt_provider());
	h->ep_attr->type = FI_EP_RDM;
	h->caps = cfg->caps;
	h->mode = 0;
	h->domain_attr->mr_mode = (int) cfg->mr_mode;
	if (cfg->tx_op_flags)
		h->tx_attr->op_flags = cfg->tx_op_flags;
	if (cfg->rx_op_flags)
		h->rx_attr->op_flags = cfg->rx_op_flags;
	if (cfg->threading != FI_THREAD_UNSPEC)
		h->domain_attr->threading = cfg->threading;
	if (cfg->data_progress != FI_PROGRESS_UNSPEC)
		h->domain_attr->data_progress = cfg->data_progress;
	return h;
}

int xt_getinfo(const struct xt_cfg *cfg, struct fi_info **info)
{
	struct fi_info *h = xt_hints(cfg);
	int rc;

	xt_remove_stale_shm_regions();
	rc = fi_getinfo(cfg->api, cfg->node, cfg->service, cfg->gi_flags, h, info);
	fi_freeinfo(h);
	return rc;
}

static void xt_register(struct xt_ep *x)
{
	XT_ASSERT(xt_neps < XT_MAX_EPS, "too many endpoints");
	xt_eps[xt_neps++] = x;
}

static void xt_unregister(struct xt_ep *x)
{
	for (int i = 0; i < xt_neps; i++) {
		if (xt_eps[i] == x) {
			xt_eps[i] = xt_eps[--xt_neps];
			return;
		}
	}
}

static void xt_open_cq(struct xt_ep *x, struct xt_cq *cq)
{
	struct fi_cq_attr attr = {
		.format = x->cfg->cq_format,
		.wait_obj = x->cfg->wait_obj,
	};

	XT_ASSERT_OK(fi_cq_open(x->domain, &attr, &cq->fid, NULL));
	cq->readfrom = (x->info->caps & FI_SOURCE) != 0;
}

static void xt_open_resources(struct xt_ep *x)
{
	struct fi_av_attr av_attr = { .type = FI_AV_TABLE };

	XT_ASSERT_OK(fi_av_open(x->domain, &av_attr, &x->av, NULL));
	xt_open_cq(x, &x->cqs[0]);
	x->rx = &x->cqs[0];
	if (x->cfg->shared_cq) {
		x->tx = x->rx;
		return;
	}
	xt_open_cq(x, &x->cqs[1]);
	x->tx = &x->cqs[1];
}

static void xt_bind(struct xt_ep *x)
{
	uint64_t tx_flags = FI_TRANSMIT | x->cfg->tx_bind_flags;

	XT_ASSERT_OK(fi_ep_bind(x->ep, &x->av->fid, 0));
	if (x->cfg->shared_cq) {
		XT_ASSERT_OK(fi_ep_bind(x->ep, &x->rx->fid->fid,
					tx_flags | FI_RECV | x->cfg->rx_bind_flags));
		return;
	}
	XT_ASSERT_OK(fi_ep_bind(x->ep, &x->tx->fid->fid, tx_flags));
	XT_ASSERT_OK(fi_ep_bind(x->ep, &x->rx->fid->fid, FI_RECV | x->cfg->rx_bind_flags));
}

void xt_enable(struct xt_ep *x)
{
	XT_ASSERT_OK(fi_enable(x->ep));
	x->namelen = sizeof(x->name);
	XT_ASSERT_OK(fi_getname(&x->ep->fid, x->name, &x->namelen));
}

void xt_open_upto(struct xt_ep *x, const struct xt_cfg *cfg, enum xt_stage stage)
{
	memset(x, 0, sizeof(*x));
	x->cfg = cfg;
	xt_register(x);
	XT_ASSERT_OK(xt_getinfo(cfg, &x->info));
	XT_ASSERT_OK(fi_fabric(x->info->fabric_attr, &x->fabric, NULL));
	XT_ASSERT_OK(fi_domain(x->fabric, x->info, &x->domain, NULL));
	if (stage == XT_DOMAIN)
		return;
	xt_open_resources(x);
	if (stage == XT_RESOURCES)
		return;
	XT_ASSERT_OK(fi_endpoint(x->domain, x->info, &x->ep, NULL));
	if (stage == XT_EP)
		return;
	xt_bind(x);
	if (stage == XT_BOUND)
		return;
	xt_enable(x);
}

void xt_open(struct xt_ep *x, const struct xt_cfg *cfg)
{
	xt_open_upto(x, cfg, XT_ENABLED);
}

/* Closes fid if open, keeping the first failure in *rc. */
static void xt_close_fid(struct fid *fid, int *rc)
{
	int r;

	if (!fid)
		return;
	r = fi_close(fid);
	if (r && !*rc)
		*rc = r;
}

static int xt_close_objects(struct xt_ep *x)
{
	int rc = 0;

	xt_unregister(x);
	xt_close_fid(x->ep ? &x->ep->fid : NULL, &rc);
	xt_close_fid(x->av ? &x->av->fid : NULL, &rc);
	for (int i = 0; i < 2; i++)
		xt_close_fid(x->cqs[i].fid ? &x->cqs[i].fid->fid : NULL, &rc);
	xt_close_fid(x->domain ? &x->domain->fid : NULL, &rc);
	xt_close_fid(x->fabric ? &x->fabric->fid : NULL, &rc);
	fi_freeinfo(x->info);
	memset(x, 0, sizeof(*x));
	return rc;
}

uint64_t xt_ep_id(const struct xt_ep *x)
{
	unsigned long long node, ep_id;

	XT_ASSERT(sscanf(x->name, "fi_xshm://%16llx/%16llx", &node, &ep_id) == 2,
		  "name %s", x->name);
	return ep_id;
}

void xt_close(struct xt_ep *x)
{
	XT_ASSERT_OK(xt_close_objects(x));
}

size_t xt_tx_iov_limit(const struct xt_ep *x)
{
	return x->info->tx_attr->iov_limit;
}

size_t xt_rx_iov_limit(const struct xt_ep *x)
{
	return x->info->rx_attr->iov_limit;
}

fi_addr_t xt_av_insert(struct xt_ep *x, const void *name)
{
	fi_addr_t addr = FI_ADDR_NOTAVAIL;

	XT_ASSERT_RC(fi_av_insert(x->av, name, 1, &addr, 0, NULL), 1);
	XT_ASSERT(addr != FI_ADDR_NOTAVAIL, "inserted address is FI_ADDR_NOTAVAIL");
	return addr;
}

static bool xt_is_hex16(const char *s)
{
	for (int i = 0; i < 16; i++)
		if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
			return false;
	return true;
}

bool xt_is_xshm_addr(const void *addr, size_t len)
{
	const char *s = addr;
	const size_t plen = strlen("fi_xshm://");

	return len == XT_XSHM_ADDRLEN && s[len - 1] == '\0' &&
	       strlen(s) == len - 1 && strncmp(s, "fi_xshm://", plen) == 0 &&
	       xt_is_hex16(s + plen) && s[plen + 16] == '/' &&
	       xt_is_hex16(s + plen + 17);
}

/* ---- processes ---- */

static const char *xt_describe_status(int status, char *buf, size_t len)
{
	if (WIFEXITED(status))
		snprintf(buf, len, "exited with %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, len, "killed by signal %d (%s)", WTERMSIG(status),
			 strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "status 0x%x", status);
	return buf;
}

static bool xt_reap(struct xt_child *c, bool block)
{
	if (c->reaped)
		return true;
	if (waitpid(c->pid, &c->status, block ? 0 : WNOHANG) != c->pid)
		return false;
	c->reaped = true;
	return true;
}

static bool xt_child_ok(const struct xt_child *c)
{
	return WIFEXITED(c->status) && WEXITSTATUS(c->status) == 0;
}

/* A child that died with a failure makes the waiting parent fail at once. */
static void xt_check_children(void)
{
	char why[96];

	for (int i = 0; i < xt_nchildren; i++) {
		struct xt_child *c = xt_children[i];

		if (xt_reap(c, false) && !xt_child_ok(c))
			xt_fail(__FILE__, __LINE__, NULL, "child %d %s (see its stderr)",
				(int)c->pid, xt_describe_status(c->status, why, sizeof(why)));
	}
}

static void xt_child_main(int sock, pid_t parent, xt_child_fn fn, void *arg, int node)
{
	char id[32];

	if (xt_split_nodes())
		setenv("FI_XSHM_NODE_ID", xt_node_id(node, id, sizeof(id)), 1);
	xt_in_child = true;
	xt_parent = parent;
	xt_neps = 0;
	for (int i = 0; i < xt_nchildren; i++)	/* the parent's ends for older siblings */
		close(xt_children[i]->sock);
	xt_nchildren = 0;
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	/*
	 * A parent that failed early closes its end before the child has
	 * written to it: the write then fails and the child closes its
	 * endpoints (xt_fail), where SIGPIPE would leave a provider's shared
	 * memory behind (libfabric's shm, unlike xshm, reclaims none).
	 */
	signal(SIGPIPE, SIG_IGN);
	if (getppid() != parent)
		_exit(XT_CHILD_FAILED);
	alarm(XT_CHILD_SECS);
	fn(sock, arg);
	XT_ASSERT(xt_neps == 0, "child returned with %d endpoint(s) open", xt_neps);
	_exit(0);
}

static void xt_spawn_node(struct xt_child *c, int node, bool strict, xt_child_fn fn,
			  void *arg)
{
	pid_t parent = getpid();
	int sv[2];

	XT_ASSERT(xt_nchildren < XT_MAX_CHILDREN, "too many children");
	if (xt_split_nodes() && node != 0 && xt_providers_loaded()) {
		XT_ASSERT(!strict, "split nodes: the provider was loaded before the fork, "
			  "so a child cannot change its node id");
		fprintf(stderr, "note: split nodes: the provider was loaded before this "
			"fork; the child stays on its parent's node\n");
	}
	xt_node_setup();
	XT_ASSERT(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s",
		  strerror(errno));
	memset(c, 0, sizeof(*c));
	c->pid = fork();
	XT_ASSERT(c->pid >= 0, "fork: %s", strerror(errno));
	if (c->pid == 0) {
		close(sv[0]);
		xt_child_main(sv[1], parent, fn, arg, node);
	}
	close(sv[1]);
	c->sock = sv[0];
	xt_children[xt_nchildren++] = c;
}

void xt_spawn(struct xt_child *c, xt_child_fn fn, void *arg)
{
	xt_spawn_node(c, 1, false, fn, arg);
}

void xt_spawn_on(struct xt_child *c, int node, xt_child_fn fn, void *arg)
{
	xt_spawn_node(c, node, true, fn, arg);
}

static void xt_forget_child(struct xt_child *c)
{
	for (int i = 0; i < xt_nchildren; i++) {
		if (xt_children[i] == c) {
			xt_children[i] = xt_children[--xt_nchildren];
			return;
		}
	}
}

/* Waits up to ms for the child to end; kills it and fails if it does not. */
static void xt_join_within(struct xt_child *c, uint64_t ms, const char *late)
{
	uint64_t end = xt_now_ms() + ms;

	while (!xt_reap(c, false) && xt_now_ms() < end)
		usleep(1000);
	xt_forget_child(c);
	close(c->sock);
	if (!c->reaped) {
		kill(c->pid, SIGKILL);
		xt_reap(c, true);
		xt_fail(__FILE__, __LINE__, NULL, "child %d %s", (int)c->pid, late);
	}
}

void xt_join(struct xt_child *c)
{
	char why[96];

	xt_join_within(c, (XT_CHILD_SECS + 5) * 1000ULL, "did not finish in time");
	XT_ASSERT(xt_child_ok(c), "child %d %s (see its stderr)", (int)c->pid,
		  xt_describe_status(c->status, why, sizeof(why)));
}

void xt_join_killed(struct xt_child *c)
{
	char why[96];

	xt_join_within(c, XT_TIMEOUT_MS, "was not killed in time");
	XT_ASSERT(WIFSIGNALED(c->status) && WTERMSIG(c->status) == SIGKILL,
		  "child %d %s, expected SIGKILL (see its stderr)", (int)c->pid,
		  xt_describe_status(c->status, why, sizeof(why)));
}

/*
 * Waits for sock to be readable, failing on timeout or a failed child;
 * progresses x (if any) meanwhile.
 */
static void xt_wait_readable(int sock, struct xt_ep *x)
{
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	while (poll(&pfd, 1, x ? 0 : 10) <= 0) {
		if (x)
			xt_progress(x);
		xt_check_children();
		XT_ASSERT(xt_now_ms() < end, "peer did not answer within %d ms",
			  XT_TIMEOUT_MS);
	}
}

/*
 * The other end closed: a parent that failed (it reported why; we are being
 * killed) or a child that failed (report its status).
 */
static void xt_peer_gone(void)
{
	usleep(100000);
	if (xt_in_child && getppid() != xt_parent)
		_exit(XT_CHILD_FAILED);
	xt_check_children();
}

static void xt_read_full(int sock, void *buf, size_t len, struct xt_ep *x)
{
	char *p = buf;

	while (len > 0) {
		ssize_t n;

		xt_wait_readable(sock, x);
		n = read(sock, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n == 0)
			xt_peer_gone();
		XT_ASSERT(n > 0, "peer closed the socket or read failed");
		p += n;
		len -= (size_t)n;
	}
}

static void xt_write_full(int sock, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t n = write(sock, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		XT_ASSERT(n > 0, "write to peer: %s", strerror(errno));
		p += n;
		len -= (size_t)n;
	}
}

void xt_signal(int sock, uint8_t what)
{
	xt_write_full(sock, &what, 1);
}

uint8_t xt_wait(int sock)
{
	uint8_t what;

	xt_read_full(sock, &what, 1, NULL);
	return what;
}

void xt_send_u64(int sock, uint64_t v)
{
	xt_write_full(sock, &v, sizeof(v));
}

uint64_t xt_recv_u64(int sock)
{
	uint64_t v;

	xt_read_full(sock, &v, sizeof(v), NULL);
	return v;
}

void xt_send_bytes(int sock, const void *buf, size_t len)
{
	xt_send_u64(sock, len);
	xt_write_full(sock, buf, len);
}

size_t xt_recv_bytes(int sock, void *buf, size_t max)
{
	size_t len = xt_recv_u64(sock);

	XT_ASSERT(len <= max, "peer sent %zu bytes, at most %zu expected", len, max);
	xt_read_full(sock, buf, len, NULL);
	return len;
}

void xt_send_name(int sock, const struct xt_ep *x)
{
	xt_send_bytes(sock, x->name, x->namelen);
}

size_t xt_recv_name(int sock, char *name)
{
	return xt_recv_bytes(sock, name, XT_NAME_MAX);
}

fi_addr_t xt_exchange(struct xt_ep *x, int sock)
{
	char peer[XT_NAME_MAX];

	xt_send_name(sock, x);
	xt_recv_name(sock, peer);
	return xt_av_insert(x, peer);
}

/* ---- completions ---- */

static bool xt_read_cq(struct xt_cq *cq, struct xt_comp *out)
{
	ssize_t rc;

	memset(out, 0, sizeof(*out));
	out->src = FI_ADDR_NOTAVAIL;
	if (cq->readfrom)
		rc = fi_cq_readfrom(cq->fid, &out->e, 1, &out->src);
	else
		rc = fi_cq_read(cq->fid, &out->e, 1);
	if (rc == 1)
		return true;
	if (rc == -FI_EAGAIN)
		return false;
	XT_ASSERT_RC(rc, -FI_EAVAIL);
	XT_ASSERT_RC(fi_cq_readerr(cq->fid, &out->err, 0), 1);
	out->is_err = true;
	return true;
}

static bool xt_take_stashed(struct xt_cq *cq, struct xt_comp *out)
{
	if (cq->count == 0)
		return false;
	*out = cq->stash[cq->head];
	cq->head = (cq->head + 1) % XT_STASH_MAX;
	cq->count--;
	return true;
}

static void xt_stash_one(struct xt_cq *cq)
{
	struct xt_comp c;

	if (cq->count == XT_STASH_MAX || !xt_read_cq(cq, &c))
		return;
	cq->stash[(cq->head + cq->count) % XT_STASH_MAX] = c;
	cq->count++;
}

void xt_progress(struct xt_ep *x)
{
	xt_stash_one(x->tx);
	if (x->rx != x->tx)
		xt_stash_one(x->rx);
}

int xt_poll(struct xt_cq *cq, struct xt_cq *also, int timeout_ms, struct xt_comp *out)
{
	uint64_t end = xt_now_ms() + (uint64_t)timeout_ms;
	uint64_t next_check = 0;

	for (;;) {
		if (xt_take_stashed(cq, out) || xt_read_cq(cq, out))
			return 0;
		if (also && also != cq)
			xt_stash_one(also);
		uint64_t now = xt_now_ms();
		if (now >= end)
			return -FI_EAGAIN;
		if (now >= next_check) {
			xt_check_children();
			next_check = now + 5;
		}
	}
}

void xt_expect_comp_at(const char *file, int line, struct xt_cq *cq,
		       struct xt_cq *also, struct xt_comp *out)
{
	xt_expect_comp_within_at(file, line, cq, also, XT_TIMEOUT_MS, out);
}

void xt_expect_err_at(const char *file, int line, struct xt_cq *cq,
		      struct xt_cq *also, struct xt_comp *out)
{
	xt_expect_err_within_at(file, line, cq, also, XT_TIMEOUT_MS, out);
}

void xt_expect_none_at(const char *file, int line, struct xt_cq *cq,
		       struct xt_cq *also, int ms)
{
	struct xt_comp c;

	if (xt_poll(cq, also, ms, &c) == -FI_EAGAIN)
		return;
	xt_fail(file, line, NULL, "unexpected %s: flags 0x%llx", c.is_err ? "error" : "completion",
		(unsigned long long)(c.is_err ? c.err.flags : c.e.flags));
}

/* ---- a sending child driven by the parent ---- */

void xt_post_recv(struct xt_ep *x, bool tagged, void *buf, size_t len, fi_addr_t src,
		  uint64_t tag, uint64_t ignore, void *ctx)
{
	if (tagged)
		XT_POST(x, fi_trecv(x->ep, buf, len, NULL, src, tag, ignore, ctx));
	else
		XT_POST(x, fi_recv(x->ep, buf, len, NULL, src, ctx));
}

/* Separate buffers, so that a provider reading past iov[0] is caught. */
static size_t xt_make_iovs(const struct xt_send_cmd *cmd, struct iovec *iov)
{
	bool vector = cmd->op == XT_SENDV || cmd->op == XT_SENDMSG;
	size_t niov = vector && cmd->niov ? cmd->niov : 1, off = 0;

	XT_ASSERT(niov <= 4, "at most 4 iovs");
	for (size_t i = 0; i < niov; i++) {
		iov[i].iov_len = niov == 1 ? cmd->len : cmd->iov_len[i];
		iov[i].iov_base = xt_alloc(iov[i].iov_len);
		xt_fill(iov[i].iov_base, iov[i].iov_len, cmd->seed, off);
		off += iov[i].iov_len;
	}
	XT_ASSERT(off == cmd->len, "iov lengths sum to %zu, not %zu", off, cmd->len);
	return niov;
}

static ssize_t xt_sendmsg(struct xt_ep *x, fi_addr_t dst, const struct xt_send_cmd *cmd,
			  struct iovec *iov, size_t niov, void *ctx)
{
	uint64_t flags = FI_COMPLETION | (cmd->data ? FI_REMOTE_CQ_DATA : 0);
	struct fi_msg_tagged tmsg = {
		.msg_iov = iov, .iov_count = niov, .addr = dst, .tag = cmd->tag,
		.context = ctx, .data = cmd->data,
	};
	struct fi_msg msg = {
		.msg_iov = iov, .iov_count = niov, .addr = dst, .context = ctx,
		.data = cmd->data,
	};

	if (cmd->tagged)
		return fi_tsendmsg(x->ep, &tmsg, flags);
	return fi_sendmsg(x->ep, &msg, flags);
}

static ssize_t xt_send_once(struct xt_ep *x, fi_addr_t dst, const struct xt_send_cmd *cmd,
			    struct iovec *iov, size_t niov, void *ctx)
{
	struct fid_ep *ep = x->ep;
	void *b = iov[0].iov_base;
	size_t n = cmd->len;
	uint64_t t = cmd->tag, d = cmd->data;
	bool tg = cmd->tagged;

	switch (cmd->op) {
	case XT_SEND:
		return tg ? fi_tsend(ep, b, n, NULL, dst, t, ctx) : fi_send(ep, b, n, NULL, dst, ctx);
	case XT_SENDV:
		return tg ? fi_tsendv(ep, iov, NULL, niov, dst, t, ctx)
			  : fi_sendv(ep, iov, NULL, niov, dst, ctx);
	case XT_SENDMSG:
		return xt_sendmsg(x, dst, cmd, iov, niov, ctx);
	case XT_SENDDATA:
		return tg ? fi_tsenddata(ep, b, n, NULL, d, dst, t, ctx)
			  : fi_senddata(ep, b, n, NULL, d, dst, ctx);
	case XT_INJECT:
		return tg ? fi_tinject(ep, b, n, dst, t) : fi_inject(ep, b, n, dst);
	case XT_INJECTDATA:
		return tg ? fi_tinjectdata(ep, b, n, d, dst, t) : fi_injectdata(ep, b, n, d, dst);
	default:
		xt_fail(__FILE__, __LINE__, NULL, "bad send op %d", cmd->op);
	}
}

static struct xt_send_result xt_send_outcome(struct xt_ep *x, const struct xt_send_cmd *cmd,
					     struct iovec *iov, size_t niov, void *ctx)
{
	bool inject = cmd->op == XT_INJECT || cmd->op == XT_INJECTDATA;
	struct xt_send_result r = { 0 };
	struct xt_comp c;

	if (inject)
		for (size_t i = 0; i < niov; i++)
			memset(iov[i].iov_base, 0xee, iov[i].iov_len);
	if (xt_poll(x->tx, x->rx, inject ? 100 : XT_TIMEOUT_MS, &c) != 0)
		return r;
	r.completed = true;
	r.is_err = c.is_err;
	r.err = c.is_err ? c.err.err : 0;
	r.flags = c.is_err ? c.err.flags : c.e.flags;
	r.context_ok = (c.is_err ? c.err.op_context : c.e.op_context) == ctx;
	return r;
}

static void xt_run_send(struct xt_ep *x, fi_addr_t dst, int sock,
			const struct xt_send_cmd *cmd)
{
	struct xt_send_result r;
	struct iovec iov[4];
	size_t niov = xt_make_iovs(cmd, iov);
	char ctx;
	ssize_t rc = XT_RETRY(x, xt_send_once(x, dst, cmd, iov, niov, &ctx));

	xt_send_u64(sock, (uint64_t)rc);
	if (rc == 0) {
		r = xt_send_outcome(x, cmd, iov, niov, &ctx);
		xt_write_full(sock, &r, sizeof(r));
	}
	for (size_t i = 0; i < niov; i++)
		free(iov[i].iov_base);
}

void xt_sender_child(int sock, void *arg)
{
	struct xt_cfg dflt = xt_cfg_default();
	const struct xt_cfg *cfg = arg ? arg : &dflt;
	struct xt_send_cmd cmd;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, cfg);
	dst = xt_exchange(&x, sock);
	for (;;) {
		xt_read_full(sock, &cmd, sizeof(cmd), &x);
		if (cmd.op == XT_QUIT)
			break;
		xt_run_send(&x, dst, sock, &cmd);
	}
	xt_close(&x);
}

fi_addr_t xt_connect_sender(struct xt_ep *x, struct xt_child *c, bool insert)
{
	char name[XT_NAME_MAX];
	fi_addr_t a = FI_ADDR_NOTAVAIL;

	xt_recv_name(c->sock, name);
	if (insert)
		a = xt_av_insert(x, name);
	xt_send_name(c->sock, x);
	return a;
}

void xt_remote_send(struct xt_ep *x, struct xt_child *c, const struct xt_send_cmd *cmd)
{
	int64_t rc;

	xt_write_full(c->sock, cmd, sizeof(*cmd));
	xt_read_full(c->sock, &rc, sizeof(rc), x);
	XT_ASSERT(rc == 0, "the child's send (op %d, %zu bytes) returned %lld (%s)",
		  cmd->op, cmd->len, (long long)rc, xt_strerror(rc));
}

struct xt_send_result xt_remote_done(struct xt_ep *x, struct xt_child *c)
{
	struct xt_send_result r;

	xt_read_full(c->sock, &r, sizeof(r), x);
	return r;
}

void xt_stop_sender(struct xt_ep *x, struct xt_child *c)
{
	struct xt_send_cmd cmd = { .op = XT_QUIT };

	xt_write_full(c->sock, &cmd, sizeof(cmd));
	xt_join(c);
}

void xt_rig_start(struct xt_rig *r, int nsenders, uint64_t extra_caps)
{
	r->cfg = xt_cfg_default();
	r->cfg.caps |= extra_caps;
	r->nsenders = nsenders;
	xt_spawn(&r->a, xt_sender_child, NULL);
	if (nsenders == 2)
		xt_spawn(&r->b, xt_sender_child, NULL);
	xt_open(&r->x, &r->cfg);
	r->fa = xt_connect_sender(&r->x, &r->a, true);
	if (nsenders == 2)
		r->fb = xt_connect_sender(&r->x, &r->b, true);
}

void xt_rig_stop(struct xt_rig *r)
{
	xt_stop_sender(&r->x, &r->a);
	if (r->nsenders == 2)
		xt_stop_sender(&r->x, &r->b);
	xt_close(&r->x);
}

struct xt_send_result xt_rig_send(struct xt_rig *r, struct xt_child *c,
				  struct xt_send_cmd sc)
{
	struct xt_send_result res;

	xt_remote_send(&r->x, c, &sc);
	res = xt_remote_done(&r->x, c);
	if (sc.op != XT_INJECT && sc.op != XT_INJECTDATA)
		XT_ASSERT(res.completed && !res.is_err,
			  "send of %zu bytes: completed %d, err %d (%s)", sc.len,
			  res.completed, res.err, fi_strerror(abs(res.err)));
	return res;
}

void xt_settle(struct xt_rig *r)
{
	xt_expect_none(r->x.rx, r->x.tx, 20);
}

/* ---- data ---- */

static uint64_t xt_mix(uint64_t v)
{
	v ^= v >> 33;
	v *= 0xff51afd7ed558ccdULL;
	v ^= v >> 33;
	v *= 0xc4ceb9fe1a85ec53ULL;
	v ^= v >> 33;
	return v;
}

static uint64_t xt_pattern_word(uint64_t seed, size_t pos)
{
	return xt_mix((uint64_t)(pos >> 3) + seed * 0x9e3779b97f4a7c15ULL);
}

uint8_t xt_pattern_byte(uint64_t seed, size_t pos)
{
	return (uint8_t)(xt_pattern_word(seed, pos) >> ((pos & 7) * 8));
}

void xt_fill(void *buf, size_t len, uint64_t seed, size_t offset)
{
	uint8_t *p = buf;
	uint64_t w = 0;

	for (size_t i = 0; i < len; i++) {
		size_t pos = offset + i;

		if (i == 0 || (pos & 7) == 0)
			w = xt_pattern_word(seed, pos);
		p[i] = (uint8_t)(w >> ((pos & 7) * 8));
	}
}

ssize_t xt_mismatch(const void *buf, size_t len, uint64_t seed, size_t offset)
{
	const uint8_t *p = buf;
	uint64_t w = 0;

	for (size_t i = 0; i < len; i++) {
		size_t pos = offset + i;

		if (i == 0 || (pos & 7) == 0)
			w = xt_pattern_word(seed, pos);
		if (p[i] != (uint8_t)(w >> ((pos & 7) * 8)))
			return (ssize_t)i;
	}
	return -1;
}

void *xt_alloc(size_t len)
{
	void *p = malloc(len ? len : 1);

	XT_ASSERT(p != NULL, "malloc(%zu)", len);
	return p;
}

/* ---- the program: suite and /dev/shm leak check ---- */

#define XT_SHM_DIR	"/dev/shm"
#define XT_MAX_NAMES	4096

struct xt_names {
	char *name[XT_MAX_NAMES];
	int count;
};

static void xt_list_shm(struct xt_names *n)
{
	DIR *d = opendir(XT_SHM_DIR);
	struct dirent *de;

	n->count = 0;
	if (!d)
		return;
	while ((de = readdir(d)) && n->count < XT_MAX_NAMES)
		if (strstr(de->d_name, "xshm"))
			n->name[n->count++] = strdup(de->d_name);
	closedir(d);
}

static bool xt_has_name(const struct xt_names *n, const char *name)
{
	for (int i = 0; i < n->count; i++)
		if (strcmp(n->name[i], name) == 0)
			return true;
	return false;
}

static void xt_free_names(struct xt_names *n)
{
	for (int i = 0; i < n->count; i++)
		free(n->name[i]);
	n->count = 0;
}

pid_t xt_region_creator(const char *name)
{
	char prefix[32];
	int len = snprintf(prefix, sizeof(prefix), "xshm-%u-", (unsigned)geteuid());
	const char *hex;
	uint64_t ep_id;

	if (strncmp(name, prefix, len))
		return 0;
	hex = name + len;
	if (strlen(hex) != 16 || strspn(hex, "0123456789abcdef") != 16)
		return 0;
	ep_id = strtoull(hex, NULL, 16);
	return ep_id >> 63 ? 0 : (pid_t)(ep_id >> 24);
}

/*
 * A region owned by a live process other than us belongs to a program
 * running concurrently (make -j check), not to this one: every process of
 * this run has exited by now.  The owner is in the region's header, or,
 * while its creator has not written the header yet, in its name.
 */
static bool xt_owned_by_other_live_process(const char *name)
{
	struct xshm_region_hdr hdr;
	char path[512];
	pid_t owner;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", XT_SHM_DIR, name);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return errno == ENOENT;
	n = pread(fd, &hdr, sizeof(hdr), 0);
	close(fd);
	if (n == (ssize_t)sizeof(hdr) && hdr.magic == XSHM_REGION_MAGIC &&
	    hdr.owner_pid > 0)
		owner = hdr.owner_pid;
	else
		owner = xt_region_creator(name);
	if (owner <= 0 || owner == getpid())
		return false;
	return kill(owner, 0) == 0 || errno == EPERM;
}

static int xt_count_leaks(const struct xt_names *before, bool report)
{
	struct xt_names after;
	int leaks = 0;

	xt_list_shm(&after);
	for (int i = 0; i < after.count; i++) {
		if (xt_has_name(before, after.name[i]) ||
		    xt_owned_by_other_live_process(after.name[i]))
			continue;
		leaks++;
		if (report)
			fprintf(stderr, "LEAK: %s/%s was left behind\n", XT_SHM_DIR,
				after.name[i]);
	}
	xt_free_names(&after);
	return leaks;
}

/* Killed processes may take a moment to go; give them up to two seconds. */
static int xt_shm_leaks(const struct xt_names *before)
{
	uint64_t end = xt_now_ms() + 2000;

	while (xt_count_leaks(before, false) > 0 && xt_now_ms() < end)
		usleep(50000);
	return xt_count_leaks(before, true);
}

int xt_run_suite(Suite *s)
{
	struct xt_names before;
	SRunner *sr;
	int failed, leaks;

	xt_node_setup();
	xt_list_shm(&before);
	sr = srunner_create(s);
	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	leaks = xt_shm_leaks(&before);
	if (leaks)
		fprintf(stderr, "FAIL: %d shared memory name(s) containing \"xshm\" "
			"left in %s\n", leaks, XT_SHM_DIR);
	xt_free_names(&before);
	return failed || leaks ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* ---- waiting with a deadline of one's own, progressing ---- */

void xt_expect_comp_within_at(const char *file, int line, struct xt_cq *cq,
			      struct xt_cq *also, int ms, struct xt_comp *out)
{
	char perr[128];
	const char *s;

	if (xt_poll(cq, also, ms, out) != 0)
		xt_fail(file, line, NULL, "no completion within %d ms", ms);
	if (!out->is_err)
		return;
	s = fi_cq_strerror(cq->fid, out->err.prov_errno, out->err.err_data,
			   perr, sizeof(perr));
	xt_fail(file, line, NULL, "error completion: err %d (%s), flags 0x%llx, prov: %s",
		out->err.err, fi_strerror(abs(out->err.err)),
		(unsigned long long)out->err.flags, s ? s : "?");
}

void xt_expect_err_within_at(const char *file, int line, struct xt_cq *cq,
			     struct xt_cq *also, int ms, struct xt_comp *out)
{
	if (xt_poll(cq, also, ms, out) != 0)
		xt_fail(file, line, NULL, "no completion within %d ms", ms);
	if (!out->is_err)
		xt_fail(file, line, NULL, "expected an error, got a completion: flags 0x%llx, len %zu",
			(unsigned long long)out->e.flags, out->e.len);
}

void xt_read_progress(int sock, void *buf, size_t len, struct xt_ep *x)
{
	xt_read_full(sock, buf, len, x);
}

uint8_t xt_wait_progress(int sock, struct xt_ep *x)
{
	uint8_t what;

	xt_read_full(sock, &what, 1, x);
	return what;
}

uint64_t xt_recv_u64_progress(int sock, struct xt_ep *x)
{
	uint64_t v;

	xt_read_full(sock, &v, sizeof(v), x);
	return v;
}

void xt_write_bytes(int sock, const void *buf, size_t len)
{
	xt_write_full(sock, buf, len);
}

/* ---- a burst sender child ---- */

#define XT_BURST_QUIT	UINT64_MAX

struct xt_burst_buf {
	struct xt_burst_buf *next;
	unsigned char data[];
};

static ssize_t xt_burst_send(struct xt_ep *x, fi_addr_t dst, const struct xt_burst_msg *m,
			     void *buf, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = m->len };
	struct fi_msg_tagged tmsg = {
		.msg_iov = &iov, .iov_count = 1, .addr = dst, .tag = m->tag,
		.context = ctx, .data = m->data,
	};
	struct fi_msg msg = {
		.msg_iov = &iov, .iov_count = 1, .addr = dst, .context = ctx, .data = m->data,
	};
	bool data = m->flags & FI_REMOTE_CQ_DATA;

	if (m->plain && m->tagged)
		return data ? fi_tsenddata(x->ep, buf, m->len, NULL, m->data, dst, m->tag, ctx)
			    : fi_tsend(x->ep, buf, m->len, NULL, dst, m->tag, ctx);
	if (m->plain)
		return data ? fi_senddata(x->ep, buf, m->len, NULL, m->data, dst, ctx)
			    : fi_send(x->ep, buf, m->len, NULL, dst, ctx);
	if (m->tagged)
		return fi_tsendmsg(x->ep, &tmsg, m->flags);
	return fi_sendmsg(x->ep, &msg, m->flags);
}

static void xt_burst_run(struct xt_ep *x, fi_addr_t dst, int sock, size_t n,
			 struct xt_burst_buf **bufs)
{
	struct xt_burst_msg *m = xt_alloc(n * sizeof(*m));
	struct xt_burst_result *res = calloc(n ? n : 1, sizeof(*res));
	struct fi_context *ctx = calloc(n ? n : 1, sizeof(*ctx));
	uint64_t wait_ms, posted = 0, end;
	int64_t rc = 0;
	uint32_t got = 0;

	XT_ASSERT(res && ctx, "calloc");
	xt_read_full(sock, m, n * sizeof(*m), x);
	wait_ms = xt_recv_u64_progress(sock, x);
	for (size_t i = 0; i < n; i++) {
		struct xt_burst_buf *b = xt_alloc(sizeof(*b) + m[i].len);

		b->next = *bufs;
		*bufs = b;
		xt_fill(b->data, m[i].len, m[i].seed, 0);
		rc = XT_RETRY(x, xt_burst_send(x, dst, &m[i], b->data, &ctx[i]));
		if (rc)
			break;
		if (m[i].flags & FI_INJECT)
			memset(b->data, 0xee, m[i].len);
		posted++;
	}
	xt_send_u64(sock, posted);
	xt_send_u64(sock, (uint64_t)rc);
	end = xt_now_ms() + wait_ms;
	while (got < posted) {
		uint64_t now = xt_now_ms();
		struct xt_comp c;
		void *op_ctx;
		size_t i;

		if (now >= end || xt_poll(x->tx, x->rx, (int)(end - now), &c) != 0)
			break;
		op_ctx = c.is_err ? c.err.op_context : c.e.op_context;
		i = (size_t)((struct fi_context *)op_ctx - ctx);
		XT_ASSERT((struct fi_context *)op_ctx >= ctx && i < posted,
			  "%s with an unknown context %p", c.is_err ? "error" : "completion",
			  op_ctx);
		XT_ASSERT(!res[i].completed, "send %zu completed twice", i);
		res[i] = (struct xt_burst_result){
			.completed = true, .is_err = c.is_err,
			.err = c.is_err ? c.err.err : 0,
			.flags = c.is_err ? c.err.flags : c.e.flags,
			.time_ms = xt_now_ms(), .rank = got++,
		};
	}
	xt_write_full(sock, res, n * sizeof(*res));
	free(m);
	free(res);
	/* A send still in flight may yet report: keep its context alive. */
	if (got < posted)
		return;
	free(ctx);
}

void xt_burst_child(int sock, void *arg)
{
	struct xt_cfg dflt = xt_cfg_default();
	const struct xt_cfg *cfg = arg ? arg : &dflt;
	struct xt_burst_buf *bufs = NULL;
	struct xt_ep x;
	fi_addr_t dst;
	uint64_t n;

	xt_open(&x, cfg);
	dst = xt_exchange(&x, sock);
	while ((n = xt_recv_u64_progress(sock, &x)) != XT_BURST_QUIT)
		xt_burst_run(&x, dst, sock, n, &bufs);
	xt_close(&x);
	while (bufs) {
		struct xt_burst_buf *next = bufs->next;

		free(bufs);
		bufs = next;
	}
}

void xt_burst_post(struct xt_ep *x, struct xt_child *c, const struct xt_burst_msg *msgs,
		   size_t n, int wait_ms)
{
	uint64_t posted;
	int64_t rc;

	xt_send_u64(c->sock, n);
	xt_write_full(c->sock, msgs, n * sizeof(*msgs));
	xt_send_u64(c->sock, (uint64_t)wait_ms);
	posted = xt_recv_u64_progress(c->sock, x);
	rc = (int64_t)xt_recv_u64_progress(c->sock, x);
	XT_ASSERT(posted == n,
		  "the child's send %llu of %zu (%zu bytes, %s, flags 0x%llx) returned %lld (%s)",
		  (unsigned long long)posted, n, msgs[posted].len,
		  msgs[posted].tagged ? "tagged" : "untagged",
		  (unsigned long long)msgs[posted].flags, (long long)rc, xt_strerror(rc));
}

void xt_burst_results(struct xt_ep *x, struct xt_child *c, struct xt_burst_result *res,
		      size_t n)
{
	xt_read_full(c->sock, res, n * sizeof(*res), x);
}

void xt_burst_quit(struct xt_ep *x, struct xt_child *c)
{
	xt_send_u64(c->sock, XT_BURST_QUIT);
	xt_join(c);
}
