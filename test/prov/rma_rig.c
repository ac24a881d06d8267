/* The RMA tests' target and initiator (rma_rig.h). */
#include "rma_rig.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shm/layout.h"

const size_t rma_sizes[RMA_SIZES] = { 100, 5000, MR_LEN };

static enum rig_mode rma_mode;

void rig_force_mode(enum rig_mode m)
{
	static const char *const value[] = {
		[RIG_TARGET] = "0", [RIG_FAST] = "1", [RIG_AUTO] = "auto",
	};

	rma_mode = m;
	XT_ASSERT(setenv("FI_XSHM_RMA_FAST", value[m], 1) == 0, "setenv");
	/*
	 * RIG_FAST splits every operation of two chunks or more with its
	 * target (data/rma_split.c); auto splits from the default size.
	 */
	if (m == RIG_FAST)
		XT_ASSERT(setenv("FI_XSHM_RMA_SPLIT_MIN", "1", 1) == 0,
			  "setenv");
	/* auto by size, not by what is measured (test_rma_path.c) */
	if (m == RIG_AUTO) {
		XT_ASSERT(setenv("FI_XSHM_PATH", "static", 1) == 0, "setenv");
		XT_ASSERT(setenv("FI_XSHM_RMA_POSTED_MAX", "8192", 1) == 0,
			  "setenv");
	}
}

enum rig_mode rig_mode(void)
{
	return rma_mode;
}

bool rig_initiator_copies(size_t len)
{
	return rma_mode == RIG_FAST ||
	       (rma_mode == RIG_AUTO && len > RIG_POSTED_MAX);
}

struct xt_cfg rma_cfg(uint64_t mr_mode)
{
	struct xt_cfg cfg = xt_cfg_default();

	cfg.caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
	cfg.mr_mode = mr_mode;
	return cfg;
}

struct fid_cntr *open_cntr(struct fid_domain *domain)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;

	XT_ASSERT_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	return cntr;
}

/* Reading a counter progresses its endpoint. */
void wait_cntr(struct fid_cntr *cntr, uint64_t value)
{
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;

	while (fi_cntr_read(cntr) < value && xt_now_ms() < end)
		;
	XT_ASSERT(fi_cntr_read(cntr) == value, "counter %llu, expected %llu",
		  (unsigned long long) fi_cntr_read(cntr),
		  (unsigned long long) value);
}

/* The endpoint, then the counters bound to it, then the rest. */
void close_with_cntrs(struct xt_ep *x, struct fid_cntr *a,
			     struct fid_cntr *b)
{
	XT_ASSERT_OK(fi_close(&x->ep->fid));
	x->ep = NULL;
	XT_ASSERT_OK(fi_close(&a->fid));
	XT_ASSERT_OK(fi_close(&b->fid));
	xt_close(x);
}

/* ---- the target ---- */

struct target {
	struct xt_ep x;
	struct fid_cntr *rw, *rr;
	struct fid_cntr *mr_rw;		/* bound to the registration */
	struct fid_mr *mr;
	unsigned char *buf;
	struct fid_mr *extra[EXTRA_REGS_MAX];	/* opts.extra_regs of them */
	unsigned char extra_buf[EXTRA_REGS_MAX][64];
};

/* Registrations ahead of the tested one: they may take every slot. */
static void register_extra(struct target *t, unsigned count)
{
	XT_ASSERT(count <= EXTRA_REGS_MAX, "extra registrations");
	for (unsigned i = 0; i < count; i++)
		XT_ASSERT_OK(fi_mr_reg(t->x.domain, t->extra_buf[i], 64,
				       ALL_ACCESS, 0, USER_KEY + 1 + i, 0,
				       &t->extra[i], NULL));
}

static void target_open(struct target *t, const struct target_opts *o,
			const struct xt_cfg *cfg)
{
	t->buf = malloc(TBUF_LEN);
	XT_ASSERT(t->buf, "malloc");
	xt_fill(t->buf, TBUF_LEN, TSEED, 0);
	bool counted = o->counted || rma_mode == RIG_TARGET;

	xt_open_upto(&t->x, cfg, XT_BOUND);
	t->rw = open_cntr(t->x.domain);
	t->rr = open_cntr(t->x.domain);
	if (counted) {
		XT_ASSERT_OK(fi_ep_bind(t->x.ep, &t->rw->fid, FI_REMOTE_WRITE));
		XT_ASSERT_OK(fi_ep_bind(t->x.ep, &t->rr->fid, FI_REMOTE_READ));
	}
	xt_enable(&t->x);
	register_extra(t, o->extra_regs);
	XT_ASSERT_OK(fi_mr_reg(t->x.domain, t->buf + GUARD, MR_LEN, o->access,
			       0, USER_KEY, 0, &t->mr, NULL));
	t->mr_rw = open_cntr(t->x.domain);
	if (counted)
		XT_ASSERT_OK(fi_mr_bind(t->mr, &t->mr_rw->fid,
					FI_REMOTE_WRITE));
	XT_ASSERT_OK(fi_mr_enable(t->mr));
}

static void target_send_cq_data(struct target *t, int sock)
{
	struct xt_comp c;

	xt_expect_comp(t->x.rx, t->x.tx, &c);
	xt_send_u64(sock, c.e.flags);
	xt_send_u64(sock, c.e.data);
	xt_send_u64(sock, c.e.len);
}

/*
 * The buffer filled afresh, then watched for REFILL_WATCH_MS: 1 when no
 * byte changed meanwhile (nobody writes into it any more).
 */
#define REFILL_WATCH_MS	300

static uint64_t target_refill(struct target *t)
{
	uint64_t end;

	xt_fill(t->buf, TBUF_LEN, TSEED, 0);
	end = xt_now_ms() + REFILL_WATCH_MS;
	while (xt_now_ms() < end)
		if (xt_mismatch(t->buf, TBUF_LEN, TSEED, 0) >= 0)
			return 0;
	return 1;
}

/* Progress calls that drain more than a ring holds (64 cells a call). */
#define SETTLE_PROGRESS	32

static void target_settle(struct target *t)
{
	for (int i = 0; i < SETTLE_PROGRESS; i++)
		xt_progress(&t->x);
}

static bool target_serve(struct target *t, int sock, uint8_t cmd,
			 bool progress)
{
	if (progress && (cmd == T_DUMP || cmd == T_EVENTS))
		target_settle(t);
	switch (cmd) {
	case T_SETTLE:
		target_settle(t);
		xt_signal(sock, T_OK);
		return true;
	case T_DUMP:
		xt_send_bytes(sock, t->buf, TBUF_LEN);
		return true;
	case T_EVENTS:
		xt_send_u64(sock, fi_cntr_read(t->rw));
		xt_send_u64(sock, fi_cntr_read(t->rr));
		xt_send_u64(sock, fi_cntr_read(t->mr_rw));
		return true;
	case T_CQ_DATA:
		target_send_cq_data(t, sock);
		return true;
	case T_WAIT_MR:
		wait_cntr(t->mr_rw, xt_recv_u64(sock));
		xt_signal(sock, T_OK);
		return true;
	case T_REFILL:
		xt_send_u64(sock, target_refill(t));
		return true;
	case T_CLOSE_MR:
		XT_ASSERT_OK(fi_close(&t->mr->fid));
		t->mr = NULL;
		xt_signal(sock, T_OK);
		return true;
	default:
		return false;
	}
}

void target_child(int sock, void *arg)
{
	const struct target_opts *o = arg;
	struct xt_cfg cfg = rma_cfg(o->mr_mode);
	static struct target t;
	bool virt;

	memset(&t, 0, sizeof(t));
	if (o->caps)
		cfg.caps = o->caps;

	target_open(&t, o, &cfg);
	virt = t.x.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	xt_exchange(&t.x, sock);
	xt_send_u64(sock, fi_mr_key(t.mr));
	xt_send_u64(sock, virt ? (uintptr_t) (t.buf + GUARD) : 0);
	for (;;) {
		uint8_t cmd = o->progress ? xt_wait_progress(sock, &t.x) :
					    xt_wait(sock);

		if (!target_serve(&t, sock, cmd, o->progress))
			break;
	}
	if (t.mr)
		XT_ASSERT_OK(fi_close(&t.mr->fid));
	for (unsigned i = 0; i < o->extra_regs; i++)
		XT_ASSERT_OK(fi_close(&t.extra[i]->fid));
	XT_ASSERT_OK(fi_close(&t.mr_rw->fid));
	close_with_cntrs(&t.x, t.rw, t.rr);
	free(t.buf);
}

/* ---- the initiator ---- */

void rig_start_with(struct rig *r, uint64_t access, uint64_t mr_mode,
			   bool progress)
{
	r->opts = (struct target_opts) { access, mr_mode, progress,
					 r->opts.caps, r->opts.counted,
					 r->opts.extra_regs };
	xt_spawn(&r->c, target_child, &r->opts);
	r->cfg = rma_cfg(mr_mode);
	if (r->caps)
		r->cfg.caps = r->caps;
	xt_open_upto(&r->x, &r->cfg, XT_BOUND);
	r->wc = open_cntr(r->x.domain);
	r->rc = open_cntr(r->x.domain);
	XT_ASSERT_OK(fi_ep_bind(r->x.ep, &r->wc->fid, FI_WRITE));
	XT_ASSERT_OK(fi_ep_bind(r->x.ep, &r->rc->fid, FI_READ));
	xt_enable(&r->x);
	r->peer = xt_exchange(&r->x, r->c.sock);
	r->key = xt_recv_u64(r->c.sock);
	r->addr = xt_recv_u64(r->c.sock);
}

struct rig *rig_start(uint64_t access)
{
	struct rig *r = calloc(1, sizeof(*r));

	XT_ASSERT(r, "calloc");
	rig_start_with(r, access, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, true);
	return r;
}

struct rig *rig_start_counted(uint64_t access)
{
	struct rig *r = calloc(1, sizeof(*r));

	XT_ASSERT(r, "calloc");
	r->opts.counted = true;
	rig_start_with(r, access, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, true);
	return r;
}

struct rig *rig_start_idle(uint64_t access, bool counted)
{
	struct rig *r = calloc(1, sizeof(*r));

	XT_ASSERT(r, "calloc");
	r->opts.counted = counted;
	rig_start_with(r, access, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, false);
	return r;
}

void rig_stop(struct rig *r)
{
	xt_signal(r->c.sock, T_QUIT);
	xt_join(&r->c);
	close_with_cntrs(&r->x, r->wc, r->rc);
	free(r);
}

void settle_target(struct rig *r)
{
	xt_signal(r->c.sock, T_SETTLE);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "settle");
}

static uint64_t target_ep_id(struct rig *r)
{
	char name[256] = "";
	size_t len = sizeof(name) - 1;
	unsigned long long node, ep_id;

	XT_ASSERT_OK(fi_av_lookup(r->x.av, r->peer, name, &len));
	XT_ASSERT(sscanf(name, "fi_xshm://%16llx/%16llx", &node, &ep_id) == 2,
		  "name %s", name);
	return ep_id;
}

void *map_target(struct rig *r, size_t *size)
{
	char path[128];
	struct stat st;
	void *base;
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/xshm-%u-%016llx",
		 (unsigned) geteuid(), (unsigned long long) target_ep_id(r));
	fd = open(path, O_RDWR);
	XT_ASSERT(fd >= 0 && fstat(fd, &st) == 0, "%s", path);
	*size = (size_t) st.st_size;
	base = mmap(NULL, *size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	XT_ASSERT(base != MAP_FAILED, "mmap");
	return base;
}

void dump_target(struct rig *r)
{
	xt_signal(r->c.sock, T_DUMP);
	xt_recv_bytes(r->c.sock, r->tbuf, TBUF_LEN);
}

/* The target holds ISEED's bytes at [off, off + len) of its region only. */
void assert_written(struct rig *r, size_t off, size_t len)
{
	size_t at = GUARD + off;

	dump_target(r);
	XT_ASSERT(xt_mismatch(r->tbuf, at, TSEED, 0) < 0, "bytes before changed");
	XT_ASSERT(xt_mismatch(r->tbuf + at, len, ISEED, 0) < 0,
		  "written bytes differ at %zd", xt_mismatch(r->tbuf + at, len, ISEED, 0));
	XT_ASSERT(xt_mismatch(r->tbuf + at + len, TBUF_LEN - at - len, TSEED,
			      at + len) < 0, "bytes after changed");
}

void assert_untouched(struct rig *r)
{
	dump_target(r);
	XT_ASSERT(xt_mismatch(r->tbuf, TBUF_LEN, TSEED, 0) < 0,
		  "target memory changed at %zd", xt_mismatch(r->tbuf, TBUF_LEN, TSEED, 0));
}

/* What a read of [off, off + len) of the region must have brought. */
void assert_read(const void *buf, size_t off, size_t len)
{
	XT_ASSERT(xt_mismatch(buf, len, TSEED, GUARD + off) < 0,
		  "read bytes differ at %zd", xt_mismatch(buf, len, TSEED, GUARD + off));
}

void *initiator_buf(size_t len)
{
	void *buf = malloc(len);

	XT_ASSERT(buf, "malloc");
	xt_fill(buf, len, ISEED, 0);
	return buf;
}

void expect_done(struct rig *r, void *ctx, uint64_t flags)
{
	struct xt_comp c;

	xt_wait_tx(&r->x, &c);
	XT_ASSERT(c.e.op_context == ctx, "context");
	XT_ASSERT((c.e.flags & (FI_RMA | FI_READ | FI_WRITE)) == flags,
		  "flags %#llx", (unsigned long long) c.e.flags);
}

void expect_error(struct rig *r, void *ctx, int err)
{
	struct xt_comp c;

	xt_expect_err(r->x.tx, r->x.rx, &c);
	XT_ASSERT(c.err.op_context == ctx, "context");
	XT_ASSERT(c.err.err == err, "error %d, expected %d", c.err.err, err);
}

/* The whole of a write of len bytes, checked at the target. */
void write_case(size_t len)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t off = MR_LEN - len;
	void *buf = initiator_buf(len);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer, r->addr + off,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, off, len);
	free(buf);
	rig_stop(r);
}

/* The whole of a read of len bytes, checked. */
void read_case(size_t len)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t off = MR_LEN - len;
	void *buf = calloc(1, len);
	int ctx;

	XT_POST(&r->x, fi_read(r->x.ep, buf, len, NULL, r->peer, r->addr + off,
			       r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_READ);
	assert_read(buf, off, len);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}

