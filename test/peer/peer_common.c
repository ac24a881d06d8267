#include "peer_common.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define PT_MAX_OWNERS	4

#define PT_MAX_CHILDREN	8

static struct owner *pt_owners[PT_MAX_OWNERS];
static struct pt_peer *pt_children[PT_MAX_CHILDREN];

/* ---- failing ---- */

static void pt_close_owners_quietly(void)
{
	for (int i = 0; i < PT_MAX_OWNERS; i++) {
		if (pt_owners[i])
			owner_close(pt_owners[i]);
		pt_owners[i] = NULL;
	}
}

/*
 * Closing our end of its socket makes a child fail its next read, close its
 * endpoint and exit; wait for that (briefly) so that its region goes too.
 */
static void pt_stop_children_quietly(void)
{
	uint64_t end = owner_now_ms() + 3000;

	for (int i = 0; i < PT_MAX_CHILDREN; i++)
		if (pt_children[i])
			shutdown(pt_children[i]->c.sock, SHUT_RDWR);
	for (int i = 0; i < PT_MAX_CHILDREN; i++) {
		struct pt_peer *p = pt_children[i];
		int status;

		if (!p)
			continue;
		while (!p->c.reaped && owner_now_ms() < end) {
			if (waitpid(p->c.pid, &status, WNOHANG) == p->c.pid) {
				p->c.reaped = true;
				p->c.status = status;
			} else {
				usleep(1000);
			}
		}
		pt_children[i] = NULL;
	}
}

void pt_fail(const char *file, int line, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pt_close_owners_quietly();
	pt_stop_children_quietly();
	xt_fail(file, line, NULL, "%s", msg);
}

void pt_fail_cond(const char *file, int line, const char *cond, const char *fmt, ...)
{
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	pt_fail(file, line, "'%s': %s", cond, msg);
}

/* ---- the owner ---- */

/* ---- the suite ---- */

enum owner_style pt_style;
int pt_left_out;

/* The cases the xlink owner leaves out, for pt_run to list. */
#define PT_MAX_LEFT_OUT	64
struct pt_out {
	const char *name, *why;
	int n;
};
static struct pt_out pt_out[PT_MAX_LEFT_OUT];
static int pt_nout, pt_left_out_owner;

void pt_leave_out(const char *name, int n, const char *why)
{
	if (pt_nout < PT_MAX_LEFT_OUT)
		pt_out[pt_nout++] = (struct pt_out){ name, why, n };
	pt_left_out_owner += n;
}

bool pt_peer_is_xshm(void)
{
	return strcmp(xt_provider(), "xshm") == 0;
}

/*
 * The peer calls get_tag without a size argument (see peer_common.h): as
 * XSHM_TEST_PEER_ABI says, else as xshm does by default (FI_XSHM_PEER_ABI
 * auto): for an owner of libfabric's style.
 */
static bool pt_get_tag_no_size(void)
{
	const char *abi = getenv("XSHM_TEST_PEER_ABI");

	if (abi)
		return strcmp(abi, "libfabric-1.22") == 0;
	return pt_peer_is_xshm() && pt_style == OWNER_STYLE_UPSTREAM;
}

/* The style whose cases pt_run is adding. */
static enum owner_style pt_adding;

/* Checked fixtures: they run in the test's own process, before the test. */
static void pt_style_spec(void)
{
	pt_style = OWNER_STYLE_SPEC;
}

static void pt_style_upstream(void)
{
	pt_style = OWNER_STYLE_UPSTREAM;
}

static void (*const pt_style_setup[OWNER_NSTYLES])(void) = {
	[OWNER_STYLE_SPEC] = pt_style_spec,
	[OWNER_STYLE_UPSTREAM] = pt_style_upstream,
};

/* The test cases' names: libcheck keeps the pointers, and frees none. */
#define PT_MAX_TCASES	64
static char *pt_tcase_names[PT_MAX_TCASES];
static int pt_ntcases;

TCase *pt_tcase(Suite *s, const char *name, double timeout_s)
{
	char full[128];
	TCase *tc;

	PT_ASSERT(pt_ntcases < PT_MAX_TCASES, "too many test cases");
	snprintf(full, sizeof(full), "%s/%s",
		 owner_provider ? owner_provider : owner_style_name[pt_adding], name);
	pt_tcase_names[pt_ntcases] = strdup(full);
	tc = tcase_create(pt_tcase_names[pt_ntcases++]);
	tcase_add_checked_fixture(tc, pt_style_setup[pt_adding], NULL);
	tcase_set_timeout(tc, timeout_s);
	suite_add_tcase(s, tc);
	return tc;
}

int pt_open_try(struct owner *o, const struct owner_cfg *cfg)
{
	struct owner_cfg c = cfg ? *cfg : (struct owner_cfg){ 0 };
	int slot = -1, ret;

	for (int i = 0; i < PT_MAX_OWNERS && slot < 0; i++)
		if (!pt_owners[i])
			slot = i;
	PT_ASSERT(slot >= 0, "too many owners");
	c.style = pt_style;
	if (!c.prov_name)
		c.prov_name = xt_provider();
	c.get_tag_no_size = pt_get_tag_no_size();
	ret = owner_open(o, &c);
	if (!ret)
		pt_owners[slot] = o;
	return ret;
}

void pt_open(struct owner *o, const struct owner_cfg *cfg)
{
	int ret = pt_open_try(o, cfg);

	PT_ASSERT(ret == 0, "owner_open (%s style) failed in %s: %d (%s)",
		  owner_style_name[pt_style], o->failed_call ? o->failed_call : "?", ret,
		  fi_strerror(-ret));
}

void pt_check_clean(struct owner *o)
{
	char why[512];

	PT_ASSERT(!*owner_violations(o, why, sizeof(why)),
		  "peer protocol violations (%s style): %s(double %llu, unknown %llu, "
		  "misplaced %llu, bad queue %llu, start errors %llu, discard errors %llu, "
		  "progress errors %llu, last progress rc %lld)",
		  owner_style_name[o->cfg.style], why,
		  (unsigned long long)o->st.double_frees,
		  (unsigned long long)o->st.unknown_frees,
		  (unsigned long long)o->st.misplaced_frees,
		  (unsigned long long)o->st.bad_queues,
		  (unsigned long long)o->st.start_errors,
		  (unsigned long long)o->st.discard_errors,
		  (unsigned long long)o->st.progress_errors, o->st.last_progress_rc);
}

void pt_check_entries_balanced(struct owner *o)
{
	uint64_t queued;

	pt_check_clean(o);
	if (!owner_internals())
		return;
	queued = owner_unexpected_count(o, false) + owner_unexpected_count(o, true);
	PT_ASSERT(owner_entries_held(o) == 0, "the peer still holds %llu entries",
		  (unsigned long long)owner_entries_held(o));
	PT_ASSERT(o->st.entries_freed + queued == o->st.entries_given,
		  "%llu entries given, %llu freed, %llu queued",
		  (unsigned long long)o->st.entries_given,
		  (unsigned long long)o->st.entries_freed, (unsigned long long)queued);
}

void pt_close(struct owner *o)
{
	int ret;

	pt_check_clean(o);
	if (owner_internals())
		PT_ASSERT(owner_entries_held(o) == 0,
			  "the peer still holds %llu entries before close",
			  (unsigned long long)owner_entries_held(o));
	ret = owner_close(o);
	for (int i = 0; i < PT_MAX_OWNERS; i++)
		if (pt_owners[i] == o)
			pt_owners[i] = NULL;
	pt_check_clean(o);
	PT_ASSERT(ret == 0, "closing the owner's xshm objects: %d (%s)", ret, fi_strerror(-ret));
	PT_ASSERT(o->st.held_at_close == 0, "%llu entries were never freed",
		  (unsigned long long)o->st.held_at_close);
}

/* ---- completions ---- */

static void pt_describe(const struct owner_comp *c, char *buf, size_t len)
{
	if (c->is_err)
		snprintf(buf, len, "error %d (%s), flags 0x%llx, len %zu, olen %zu, context %p",
			 c->err.err, fi_strerror(abs(c->err.err)),
			 (unsigned long long)c->err.flags, c->err.len, c->err.olen,
			 c->err.op_context);
	else
		snprintf(buf, len, "completion flags 0x%llx, len %zu, tag 0x%llx, context %p",
			 (unsigned long long)c->e.flags, c->e.len,
			 (unsigned long long)c->e.tag, c->e.op_context);
}

void pt_comp_at(const char *file, int line, struct owner *o, struct owner_comp *out)
{
	char d[256];

	if (owner_cq_read(o, out, PT_TIMEOUT_MS))
		pt_fail(file, line, "no completion within %d ms (gets %llu, writes %llu, "
			"writeerrs %llu)", PT_TIMEOUT_MS,
			(unsigned long long)o->st.get_calls, (unsigned long long)o->st.writes,
			(unsigned long long)o->st.writeerrs);
	pt_describe(out, d, sizeof(d));
	if (out->is_err)
		pt_fail(file, line, "expected a completion, got an %s", d);
}

void pt_err_at(const char *file, int line, struct owner *o, struct owner_comp *out)
{
	char d[256];

	if (owner_cq_read(o, out, PT_TIMEOUT_MS))
		pt_fail(file, line, "no error completion within %d ms", PT_TIMEOUT_MS);
	pt_describe(out, d, sizeof(d));
	if (!out->is_err)
		pt_fail(file, line, "expected an error, got a %s", d);
}

void pt_none_at(const char *file, int line, struct owner *o, int ms)
{
	struct owner_comp c;
	char d[256];

	if (owner_cq_read(o, &c, ms) == -FI_EAGAIN)
		return;
	pt_describe(&c, d, sizeof(d));
	pt_fail(file, line, "nothing expected, got an unexpected %s", d);
}

#define PT_WAIT_FOR(o, cond, ...) \
	do { \
		uint64_t _end = owner_now_ms() + PT_TIMEOUT_MS; \
		while (!(cond) && owner_now_ms() < _end) \
			owner_progress(o); \
		PT_ASSERT((cond), __VA_ARGS__); \
	} while (0)

void pt_wait_unexpected(struct owner *o, bool tagged, size_t n)
{
	PT_ASSERT(owner_internals() || n <= (size_t)o->cfg.nep,
		  "pt_wait_unexpected(%zu): through xlink's API a peek finds one message per "
		  "endpoint at most (%d): wait for each with pt_wait_queued", n, o->cfg.nep);
	PT_WAIT_FOR(o, owner_unexpected_count(o, tagged) >= n,
		    "%zu unexpected messages queued within %d ms, %zu expected",
		    owner_unexpected_count(o, tagged), PT_TIMEOUT_MS, n);
}

struct owner_comp pt_wait_queued(struct owner *o, bool tagged, fi_addr_t src, uint64_t tag,
				 uint64_t ignore)
{
	struct owner_comp c;

	PT_WAIT_FOR(o, owner_peek(o, tagged, src, tag, ignore, &c) == 0,
		    "no %s message from 0x%llx with tag 0x%llx (ignore 0x%llx) queued within "
		    "%d ms", tagged ? "tagged" : "untagged", (unsigned long long)src,
		    (unsigned long long)tag, (unsigned long long)ignore, PT_TIMEOUT_MS);
	return c;
}

void pt_wait_gets(struct owner *o, uint64_t n)
{
	PT_ASSERT(owner_internals(), "pt_wait_gets: the reference owner's get records");
	PT_WAIT_FOR(o, o->st.get_calls >= n, "%llu get calls within %d ms, %llu expected",
		    (unsigned long long)o->st.get_calls, PT_TIMEOUT_MS,
		    (unsigned long long)n);
}

void pt_wait_none_held(struct owner *o)
{
	if (!owner_internals())
		return;
	PT_WAIT_FOR(o, owner_entries_held(o) == 0, "the peer still holds %llu entries after %d ms",
		    (unsigned long long)owner_entries_held(o), PT_TIMEOUT_MS);
}

void pt_check_recv_at(const char *file, int line, const struct owner_comp *c, void *ctx,
		      bool tagged, uint64_t tag, size_t len)
{
	uint64_t want = FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
	uint64_t kinds = FI_SEND | FI_RECV | FI_MSG | FI_TAGGED;
	char d[256];

	pt_describe(c, d, sizeof(d));
	if (c->is_err || c->origin != OWNER_FROM_PEER)
		pt_fail(file, line, "expected a completion from xshm, got an %s (origin %d)", d,
			c->origin);
	if (c->e.op_context != ctx)
		pt_fail(file, line, "context %p, expected %p (%s)", c->e.op_context, ctx, d);
	if ((c->e.flags & kinds) != want)
		pt_fail(file, line, "flags 0x%llx, expected 0x%llx among 0x%llx (%s)",
			(unsigned long long)c->e.flags, (unsigned long long)want,
			(unsigned long long)kinds, d);
	if (c->e.len != len)
		pt_fail(file, line, "len %zu, expected %zu", c->e.len, len);
	if (c->e.tag != (tagged ? tag : 0))
		pt_fail(file, line, "tag 0x%llx, expected 0x%llx", (unsigned long long)c->e.tag,
			(unsigned long long)(tagged ? tag : 0));
}

unsigned char *pt_buf(size_t len)
{
	unsigned char *b = malloc(len + PT_GUARD);

	PT_ASSERT(b != NULL, "malloc(%zu)", len + PT_GUARD);
	memset(b, PT_GUARD_BYTE, len + PT_GUARD);
	return b;
}

void pt_check_data_at(const char *file, int line, const void *buf, size_t len, uint64_t seed)
{
	const unsigned char *b = buf;
	ssize_t bad = xt_mismatch(buf, len, seed, 0);

	if (bad >= 0)
		pt_fail(file, line, "data of %zu bytes (seed %llu) differs at byte %zd", len,
			(unsigned long long)seed, bad);
	for (size_t i = len; i < len + PT_GUARD; i++)
		if (b[i] != PT_GUARD_BYTE)
			pt_fail(file, line, "byte %zu past the %zu-byte buffer was written", i, len);
}

/* ---- children ---- */

/*
 * Under an owner provider the children open that provider, whose endpoints
 * talk to the owner's: XSHM_TEST_PROVIDER is set in the child alone, before
 * its first libfabric call.  (The child gets its own copy of pt_next.)
 */
static struct {
	xt_child_fn fn;
	void *arg;
} pt_next;

static void pt_child_of_owner(int sock, void *arg)
{
	setenv("XSHM_TEST_PROVIDER", owner_provider, 1);
	pt_next.fn(sock, pt_next.arg);
}

void pt_spawn(struct pt_peer *p, xt_child_fn fn, void *arg)
{
	int slot = -1;

	for (int i = 0; i < PT_MAX_CHILDREN && slot < 0; i++)
		if (!pt_children[i])
			slot = i;
	PT_ASSERT(slot >= 0, "too many children");
	memset(p, 0, sizeof(*p));
	p->addr = FI_ADDR_NOTAVAIL;
	if (owner_provider) {
		pt_next.fn = fn;
		pt_next.arg = arg;
		xt_spawn(&p->c, pt_child_of_owner, NULL);
	} else {
		xt_spawn(&p->c, fn, arg);
	}
	pt_children[slot] = p;
}

static void pt_child_gone(struct pt_peer *p)
{
	uint64_t end = owner_now_ms() + 2000;
	int status = 0;
	pid_t r = 0;

	while ((r = waitpid(p->c.pid, &status, WNOHANG)) == 0 && owner_now_ms() < end)
		usleep(10000);
	if (r == p->c.pid) {
		p->c.reaped = true;
		p->c.status = status;
		if (WIFEXITED(status))
			pt_fail(__FILE__, __LINE__, "child %d exited with %d (see its stderr)",
				(int)p->c.pid, WEXITSTATUS(status));
		pt_fail(__FILE__, __LINE__, "child %d was killed by signal %d", (int)p->c.pid,
			WIFSIGNALED(status) ? WTERMSIG(status) : -1);
	}
	pt_fail(__FILE__, __LINE__, "child %d closed its socket", (int)p->c.pid);
}

/* Reads len bytes from the child, progressing the owner (if any) meanwhile. */
void pt_read(struct owner *o, struct pt_peer *p, void *buf, size_t len)
{
	/* Longer than a child's own waits (XT_TIMEOUT_MS), so that it reports first. */
	const int wait_ms = XT_TIMEOUT_MS + 5000;
	uint64_t end = owner_now_ms() + wait_ms;
	char *b = buf;

	while (len > 0) {
		struct pollfd pfd = { .fd = p->c.sock, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, o ? 0 : 10) <= 0) {
			if (o)
				owner_progress(o);
			PT_ASSERT(owner_now_ms() < end, "child %d did not answer within %d ms",
				  (int)p->c.pid, wait_ms);
			continue;
		}
		n = read(p->c.sock, b, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			pt_child_gone(p);
		b += n;
		len -= (size_t)n;
	}
}

uint64_t pt_read_u64(struct owner *o, struct pt_peer *p)
{
	uint64_t v;

	pt_read(o, p, &v, sizeof(v));
	return v;
}

void pt_connect(struct owner *o, int ep, struct pt_peer *p, bool insert)
{
	uint64_t len = pt_read_u64(NULL, p);

	PT_ASSERT(len <= sizeof(p->name), "child's address of %llu bytes",
		  (unsigned long long)len);
	pt_read(NULL, p, p->name, len);
	p->namelen = len;
	if (insert)
		pt_insert(o, p);
	xt_send_bytes(p->c.sock, o->name[ep], o->namelen[ep]);
}

fi_addr_t pt_insert(struct owner *o, struct pt_peer *p)
{
	PT_ASSERT_RC(owner_av_insert(o, p->name, &p->addr), 0);
	PT_ASSERT(p->addr != FI_ADDR_NOTAVAIL, "inserted address is FI_ADDR_NOTAVAIL");
	return p->addr;
}

void pt_send(struct owner *o, struct pt_peer *p, const struct xt_send_cmd *cmd)
{
	int64_t rc;

	xt_write_bytes(p->c.sock, cmd, sizeof(*cmd));
	rc = (int64_t)pt_read_u64(o, p);
	PT_ASSERT(rc == 0, "the child's send (op %d, %zu bytes) returned %lld (%s)", cmd->op,
		  cmd->len, (long long)rc, xt_strerror(rc));
}

struct xt_send_result pt_send_done(struct owner *o, struct pt_peer *p)
{
	struct xt_send_result r;

	pt_read(o, p, &r, sizeof(r));
	return r;
}

void pt_send_ok(struct owner *o, struct pt_peer *p, const struct xt_send_cmd *cmd)
{
	struct xt_send_result r;

	pt_send(o, p, cmd);
	r = pt_send_done(o, p);
	PT_ASSERT(r.completed && !r.is_err && r.context_ok,
		  "the child's send of %zu bytes: completed %d, err %d (%s), context ok %d",
		  cmd->len, r.completed, r.err, fi_strerror(abs(r.err)), r.context_ok);
}

void pt_join(struct pt_peer *p)
{
	uint64_t end = owner_now_ms() + (XT_CHILD_SECS + 5) * 1000ULL;
	int status = 0;
	pid_t r;

	while ((r = waitpid(p->c.pid, &status, WNOHANG)) == 0 && owner_now_ms() < end)
		usleep(1000);
	if (r != p->c.pid) {
		kill(p->c.pid, SIGKILL);
		waitpid(p->c.pid, &status, 0);
		pt_fail(__FILE__, __LINE__, "child %d did not finish in time", (int)p->c.pid);
	}
	p->c.reaped = true;
	p->c.status = status;
	for (int i = 0; i < PT_MAX_CHILDREN; i++)
		if (pt_children[i] == p)
			pt_children[i] = NULL;
	PT_ASSERT(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "child %d failed: status 0x%x (see its stderr)", (int)p->c.pid, status);
	xt_join(&p->c);		/* forgets it and closes our end */
}

void pt_stop(struct owner *o, struct pt_peer *p)
{
	struct xt_send_cmd cmd = { .op = XT_QUIT };

	xt_write_bytes(p->c.sock, &cmd, sizeof(cmd));
	pt_join(p);
}

void pt_burst(struct owner *o, struct pt_peer *p, const struct xt_burst_msg *msgs, size_t n,
	      int wait_ms)
{
	uint64_t posted;
	int64_t rc;

	xt_send_u64(p->c.sock, n);
	xt_write_bytes(p->c.sock, msgs, n * sizeof(*msgs));
	xt_send_u64(p->c.sock, (uint64_t)wait_ms);
	posted = pt_read_u64(o, p);
	rc = (int64_t)pt_read_u64(o, p);
	PT_ASSERT(posted == n, "the child posted %llu of %zu sends; the next returned %lld (%s)",
		  (unsigned long long)posted, n, (long long)rc, xt_strerror(rc));
}

void pt_burst_results(struct owner *o, struct pt_peer *p, struct xt_burst_result *res,
		      size_t n)
{
	pt_read(o, p, res, n * sizeof(*res));
}

void pt_burst_quit(struct owner *o, struct pt_peer *p)
{
	xt_send_u64(p->c.sock, UINT64_MAX);
	pt_join(p);
}

struct xt_send_cmd pt_cmd(bool tagged, size_t len, uint64_t seed, uint64_t tag)
{
	return (struct xt_send_cmd){
		.op = XT_SEND, .tagged = tagged, .len = len, .seed = seed, .tag = tag,
	};
}

void pt_rig_start(struct pt_rig *r, const struct owner_cfg *cfg, int n, unsigned no_insert)
{
	pt_rig_start_senders(r, cfg, n, no_insert, NULL);
}

void pt_rig_start_senders(struct pt_rig *r, const struct owner_cfg *cfg, int n,
			  unsigned no_insert, struct xt_cfg *child_cfg)
{
	memset(r, 0, sizeof(*r));
	PT_ASSERT(n >= 1 && n <= PT_MAX_PEERS, "%d senders", n);
	r->n = n;
	for (int i = 0; i < n; i++)
		pt_spawn(&r->p[i], xt_sender_child, child_cfg);
	pt_open(&r->o, cfg);
	for (int i = 0; i < n; i++)
		pt_connect(&r->o, i % r->o.cfg.nep, &r->p[i], !(no_insert & (1u << i)));
}

int pt_rig_try(struct pt_rig *r, const struct owner_cfg *cfg, int n, unsigned no_insert)
{
	int ret;

	memset(r, 0, sizeof(*r));
	PT_ASSERT(n >= 1 && n <= PT_MAX_PEERS, "%d senders", n);
	r->n = n;
	for (int i = 0; i < n; i++)
		pt_spawn(&r->p[i], xt_sender_child, NULL);
	ret = pt_open_try(&r->o, cfg);
	if (ret) {
		pt_stop_children_quietly();
		return ret;
	}
	for (int i = 0; i < n; i++)
		pt_connect(&r->o, i % r->o.cfg.nep, &r->p[i], !(no_insert & (1u << i)));
	return 0;
}

void pt_rig_stop(struct pt_rig *r)
{
	for (int i = 0; i < r->n; i++)
		pt_stop(&r->o, &r->p[i]);
	pt_close(&r->o);
}

int pt_run(const char *name, void (*add_cases)(Suite *s))
{
	Suite *s;
	int ret;

	owner_program_init();
	s = suite_create(name);
	if (owner_provider) {
		/* One style: libfabric's, the one an owner provider takes. */
		pt_adding = OWNER_STYLE_UPSTREAM;
		add_cases(s);
	} else {
		for (pt_adding = 0; pt_adding < OWNER_NSTYLES; pt_adding++)
			add_cases(s);
	}
	if (pt_left_out)
		printf("%s: %d xshm-specific case(s) left out for peer %s\n", name,
		       pt_left_out, xt_provider());
	for (int i = 0; i < pt_nout; i++)
		printf("left out: %s:%s x%d: %s\n", name, pt_out[i].name, pt_out[i].n,
		       pt_out[i].why);
	if (pt_left_out_owner)
		printf("%s: %d case(s) of the reference owner's internals left out under "
		       "the %s owner\n", name, pt_left_out_owner, owner_provider);
	ret = xt_run_suite(s);
	while (pt_ntcases > 0)
		free(pt_tcase_names[--pt_ntcases]);
	return ret;
}
