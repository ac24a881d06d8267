/*
 * RMA (fi_rma(3)) between two processes: the parent initiates, a child is
 * the target, with one registration in the middle of a buffer whose guards
 * on both sides must never change.  Data compared byte for byte for every
 * call, at sizes that go inline and by single copy, and with
 * FI_XSHM_CMA=0; remote CQ data and FI_RMA_EVENT counters; a bad key, a
 * range past the end, access not granted and a closed registration, each
 * an error completion with the target's memory untouched; a target killed
 * with an operation outstanding, an error within the timeout.
 */
#include "harness.h"

#include <rdma/fi_rma.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define GUARD		(16u << 10)
#define MR_LEN		(64u << 10)
#define TBUF_LEN	(GUARD + MR_LEN + GUARD)
#define TSEED		7	/* the target's bytes */
#define ISEED		11	/* the initiator's */
#define USER_KEY	0xC0DE
#define DEAD_MS		20000	/* a dead target fails its operation by then */

enum { T_DUMP = 1, T_EVENTS, T_CQ_DATA, T_CLOSE_MR, T_WAIT_MR, T_OK, T_QUIT };

/* Inline, a few inline commands (or one single copy), the whole region. */
static const size_t sizes[] = { 100, 5000, MR_LEN };

struct target_opts {
	uint64_t access;
	uint64_t mr_mode;
	bool progress;		/* false: never progresses (the killed one) */
};

static struct xt_cfg rma_cfg(uint64_t mr_mode)
{
	struct xt_cfg cfg = xt_cfg_default();

	cfg.caps = FI_MSG | FI_RMA | FI_RMA_EVENT;
	cfg.mr_mode = mr_mode;
	return cfg;
}

static struct fid_cntr *open_cntr(struct fid_domain *domain)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;

	XT_ASSERT_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	return cntr;
}

/* Reading a counter progresses its endpoint. */
static void wait_cntr(struct fid_cntr *cntr, uint64_t value)
{
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;

	while (fi_cntr_read(cntr) < value && xt_now_ms() < end)
		;
	XT_ASSERT(fi_cntr_read(cntr) == value, "counter %llu, expected %llu",
		  (unsigned long long) fi_cntr_read(cntr),
		  (unsigned long long) value);
}

/* The endpoint, then the counters bound to it, then the rest. */
static void close_with_cntrs(struct xt_ep *x, struct fid_cntr *a,
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
};

static void target_open(struct target *t, const struct target_opts *o,
			const struct xt_cfg *cfg)
{
	t->buf = malloc(TBUF_LEN);
	XT_ASSERT(t->buf, "malloc");
	xt_fill(t->buf, TBUF_LEN, TSEED, 0);
	xt_open_upto(&t->x, cfg, XT_BOUND);
	t->rw = open_cntr(t->x.domain);
	t->rr = open_cntr(t->x.domain);
	XT_ASSERT_OK(fi_ep_bind(t->x.ep, &t->rw->fid, FI_REMOTE_WRITE));
	XT_ASSERT_OK(fi_ep_bind(t->x.ep, &t->rr->fid, FI_REMOTE_READ));
	xt_enable(&t->x);
	XT_ASSERT_OK(fi_mr_reg(t->x.domain, t->buf + GUARD, MR_LEN, o->access,
			       0, USER_KEY, 0, &t->mr, NULL));
	t->mr_rw = open_cntr(t->x.domain);
	XT_ASSERT_OK(fi_mr_bind(t->mr, &t->mr_rw->fid, FI_REMOTE_WRITE));
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

static bool target_serve(struct target *t, int sock, uint8_t cmd)
{
	switch (cmd) {
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
	case T_CLOSE_MR:
		XT_ASSERT_OK(fi_close(&t->mr->fid));
		t->mr = NULL;
		xt_signal(sock, T_OK);
		return true;
	default:
		return false;
	}
}

static void target_child(int sock, void *arg)
{
	const struct target_opts *o = arg;
	struct xt_cfg cfg = rma_cfg(o->mr_mode);
	struct target t = { 0 };
	bool virt;

	target_open(&t, o, &cfg);
	virt = t.x.info->domain_attr->mr_mode & FI_MR_VIRT_ADDR;
	xt_exchange(&t.x, sock);
	xt_send_u64(sock, fi_mr_key(t.mr));
	xt_send_u64(sock, virt ? (uintptr_t) (t.buf + GUARD) : 0);
	while (target_serve(&t, sock, o->progress ? xt_wait_progress(sock, &t.x) :
						    xt_wait(sock)))
		;
	if (t.mr)
		XT_ASSERT_OK(fi_close(&t.mr->fid));
	XT_ASSERT_OK(fi_close(&t.mr_rw->fid));
	close_with_cntrs(&t.x, t.rw, t.rr);
	free(t.buf);
}

/* ---- the initiator ---- */

struct rig {
	struct target_opts opts;
	struct xt_cfg cfg;
	struct xt_ep x;
	struct fid_cntr *wc, *rc;
	struct xt_child c;
	fi_addr_t peer;
	uint64_t key, addr;	/* of the target registration's first byte */
	unsigned char tbuf[TBUF_LEN];
};

static void rig_start_with(struct rig *r, uint64_t access, uint64_t mr_mode,
			   bool progress)
{
	r->opts = (struct target_opts) { access, mr_mode, progress };
	xt_spawn(&r->c, target_child, &r->opts);
	r->cfg = rma_cfg(mr_mode);
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

static struct rig *rig_start(uint64_t access)
{
	struct rig *r = calloc(1, sizeof(*r));

	XT_ASSERT(r, "calloc");
	rig_start_with(r, access, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, true);
	return r;
}

static void rig_stop(struct rig *r)
{
	xt_signal(r->c.sock, T_QUIT);
	xt_join(&r->c);
	close_with_cntrs(&r->x, r->wc, r->rc);
	free(r);
}

static void dump_target(struct rig *r)
{
	xt_signal(r->c.sock, T_DUMP);
	xt_recv_bytes(r->c.sock, r->tbuf, TBUF_LEN);
}

/* The target holds ISEED's bytes at [off, off + len) of its region only. */
static void assert_written(struct rig *r, size_t off, size_t len)
{
	size_t at = GUARD + off;

	dump_target(r);
	XT_ASSERT(xt_mismatch(r->tbuf, at, TSEED, 0) < 0, "bytes before changed");
	XT_ASSERT(xt_mismatch(r->tbuf + at, len, ISEED, 0) < 0,
		  "written bytes differ at %zd", xt_mismatch(r->tbuf + at, len, ISEED, 0));
	XT_ASSERT(xt_mismatch(r->tbuf + at + len, TBUF_LEN - at - len, TSEED,
			      at + len) < 0, "bytes after changed");
}

static void assert_untouched(struct rig *r)
{
	dump_target(r);
	XT_ASSERT(xt_mismatch(r->tbuf, TBUF_LEN, TSEED, 0) < 0,
		  "target memory changed at %zd", xt_mismatch(r->tbuf, TBUF_LEN, TSEED, 0));
}

/* What a read of [off, off + len) of the region must have brought. */
static void assert_read(const void *buf, size_t off, size_t len)
{
	XT_ASSERT(xt_mismatch(buf, len, TSEED, GUARD + off) < 0,
		  "read bytes differ at %zd", xt_mismatch(buf, len, TSEED, GUARD + off));
}

static void *initiator_buf(size_t len)
{
	void *buf = malloc(len);

	XT_ASSERT(buf, "malloc");
	xt_fill(buf, len, ISEED, 0);
	return buf;
}

static void expect_done(struct rig *r, void *ctx, uint64_t flags)
{
	struct xt_comp c;

	xt_wait_tx(&r->x, &c);
	XT_ASSERT(c.e.op_context == ctx, "context");
	XT_ASSERT((c.e.flags & (FI_RMA | FI_READ | FI_WRITE)) == flags,
		  "flags %#llx", (unsigned long long) c.e.flags);
}

static void expect_error(struct rig *r, void *ctx, int err)
{
	struct xt_comp c;

	xt_expect_err(r->x.tx, r->x.rx, &c);
	XT_ASSERT(c.err.op_context == ctx, "context");
	XT_ASSERT(c.err.err == err, "error %d, expected %d", c.err.err, err);
}

#define ALL_ACCESS	(FI_REMOTE_READ | FI_REMOTE_WRITE)

/* ---- data ---- */

static void write_case(size_t len)
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

START_TEST(write_lands_byte_for_byte)
{
	write_case(sizes[_i]);
}
END_TEST

static void read_case(size_t len)
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

START_TEST(read_brings_byte_for_byte)
{
	read_case(sizes[_i]);
}
END_TEST

/* Three pieces of len bytes in all, the middle one the largest. */
static size_t split3(unsigned char *buf, size_t len, struct iovec *iov)
{
	size_t a = len / 4, b = len / 2;

	iov[0] = (struct iovec) { buf, a };
	iov[1] = (struct iovec) { buf + a, b };
	iov[2] = (struct iovec) { buf + a + b, len - a - b };
	return 3;
}

START_TEST(writev_gathers_iovs)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t len = sizes[_i];
	unsigned char *buf = initiator_buf(len);
	struct iovec iov[3];
	int ctx;

	split3(buf, len, iov);
	XT_POST(&r->x, fi_writev(r->x.ep, iov, NULL, 3, r->peer, r->addr, r->key,
				 &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, 0, len);
	free(buf);
	rig_stop(r);
}
END_TEST

START_TEST(readv_scatters_iovs)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t len = sizes[_i];
	unsigned char *buf = calloc(1, len);
	struct iovec iov[3];
	int ctx;

	split3(buf, len, iov);
	XT_POST(&r->x, fi_readv(r->x.ep, iov, NULL, 3, r->peer, r->addr, r->key,
				&ctx));
	expect_done(r, &ctx, FI_RMA | FI_READ);
	assert_read(buf, 0, len);
	free(buf);
	rig_stop(r);
}
END_TEST

static struct fi_msg_rma rma_msg(const struct rig *r, const struct iovec *iov,
				 size_t count, struct fi_rma_iov *rma,
				 size_t off, size_t len, void *ctx)
{
	*rma = (struct fi_rma_iov) { r->addr + off, len, r->key };
	return (struct fi_msg_rma) {
		.msg_iov = iov, .iov_count = count, .addr = r->peer,
		.rma_iov = rma, .rma_iov_count = 1, .context = ctx,
	};
}

START_TEST(writemsg_and_readmsg_round_trip)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t len = sizes[_i], off = (MR_LEN - len) / 2;
	unsigned char *out = initiator_buf(len), *in = calloc(1, len);
	struct iovec iov[3];
	struct fi_rma_iov rma;
	struct fi_msg_rma msg;
	int ctx;

	split3(out, len, iov);
	msg = rma_msg(r, iov, 3, &rma, off, len, &ctx);
	XT_POST(&r->x, fi_writemsg(r->x.ep, &msg, FI_COMPLETION));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, off, len);
	split3(in, len, iov);
	msg = rma_msg(r, iov, 3, &rma, off, len, &ctx);
	XT_POST(&r->x, fi_readmsg(r->x.ep, &msg, FI_COMPLETION));
	expect_done(r, &ctx, FI_RMA | FI_READ);
	XT_ASSERT(xt_mismatch(in, len, ISEED, 0) < 0, "read back differs");
	free(out);
	free(in);
	rig_stop(r);
}
END_TEST

/* The buffer is overwritten as soon as the call returns. */
START_TEST(inject_write_copies_at_once)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t len = _i ? 4096 : 64;
	unsigned char *buf = initiator_buf(len);

	XT_POST(&r->x, fi_inject_write(r->x.ep, buf, len, r->peer, r->addr,
				       r->key));
	memset(buf, 0xee, len);
	wait_cntr(r->wc, 1);
	xt_expect_none(r->x.tx, r->x.rx, 100);
	assert_written(r, 0, len);
	free(buf);
	rig_stop(r);
}
END_TEST

START_TEST(writedata_completes_at_target_with_data)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t len = sizes[_i];
	void *buf = initiator_buf(len);
	uint64_t flags, data, got_len;
	int ctx;

	XT_POST(&r->x, fi_writedata(r->x.ep, buf, len, NULL, 0xfeedULL, r->peer,
				    r->addr, r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	xt_signal(r->c.sock, T_CQ_DATA);
	flags = xt_recv_u64(r->c.sock);
	data = xt_recv_u64(r->c.sock);
	got_len = xt_recv_u64(r->c.sock);
	XT_ASSERT((flags & (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA)) ==
		  (FI_RMA | FI_REMOTE_WRITE | FI_REMOTE_CQ_DATA),
		  "target flags %#llx", (unsigned long long) flags);
	XT_ASSERT(data == 0xfeed, "data %#llx", (unsigned long long) data);
	XT_ASSERT(got_len == len, "len %llu", (unsigned long long) got_len);
	assert_written(r, 0, len);
	free(buf);
	rig_stop(r);
}
END_TEST

START_TEST(rma_event_counters_count_both_sides)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(MR_LEN);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key, &ctx));
	XT_POST(&r->x, fi_write(r->x.ep, buf, MR_LEN, NULL, r->peer, r->addr,
				r->key, &ctx));
	XT_POST(&r->x, fi_read(r->x.ep, buf, 100, NULL, r->peer, r->addr,
			       r->key, &ctx));
	wait_cntr(r->wc, 2);
	wait_cntr(r->rc, 1);
	xt_signal(r->c.sock, T_EVENTS);
	XT_ASSERT(xt_recv_u64(r->c.sock) == 2, "remote write counter");
	XT_ASSERT(xt_recv_u64(r->c.sock) == 1, "remote read counter");
	XT_ASSERT(xt_recv_u64(r->c.sock) == 2, "registration's write counter");
	free(buf);
	rig_stop(r);
}
END_TEST

/*
 * A counter bound to a registration, and to no endpoint, is all the target
 * reads while the write arrives: reading it progresses the domain's
 * endpoints.
 */
START_TEST(registration_counter_progresses_alone)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(5000);
	int ctx;

	xt_signal(r->c.sock, T_WAIT_MR);
	xt_send_u64(r->c.sock, 1);
	XT_POST(&r->x, fi_write(r->x.ep, buf, 5000, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "target's wait");
	assert_written(r, 0, 5000);
	free(buf);
	rig_stop(r);
}
END_TEST

/*
 * FI_FENCE: a fenced read of what writes before it wrote starts once they
 * completed, and reads their bytes.
 */
START_TEST(fenced_read_sees_writes_before_it)
{
	struct rig *r = rig_start(ALL_ACCESS);
	unsigned char *out = initiator_buf(MR_LEN), *in = calloc(1, MR_LEN);
	struct iovec iov = { in, MR_LEN };
	struct fi_rma_iov rma;
	struct fi_msg_rma msg = rma_msg(r, &iov, 1, &rma, 0, MR_LEN, NULL);
	int ctx[3];

	XT_POST(&r->x, fi_write(r->x.ep, out, 100, NULL, r->peer, r->addr,
				r->key, &ctx[0]));
	XT_POST(&r->x, fi_write(r->x.ep, out + 100, MR_LEN - 100, NULL, r->peer,
				r->addr + 100, r->key, &ctx[1]));
	msg.context = &ctx[2];
	XT_POST(&r->x, fi_readmsg(r->x.ep, &msg, FI_COMPLETION | FI_FENCE));
	for (int i = 0; i < 3; i++)
		expect_done(r, &ctx[i], FI_RMA | (i < 2 ? FI_WRITE : FI_READ));
	XT_ASSERT(xt_mismatch(in, MR_LEN, ISEED, 0) < 0, "fenced read differs");
	free(out);
	free(in);
	rig_stop(r);
}
END_TEST

/* ---- checks at the target ---- */

START_TEST(bad_key_fails_untouched)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(sizes[_i]);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, sizes[_i], NULL, r->peer, r->addr,
				r->key + 1000, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	XT_POST(&r->x, fi_read(r->x.ep, buf, sizes[_i], NULL, r->peer, r->addr,
			       r->key + 1000, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	XT_ASSERT(fi_cntr_readerr(r->wc) == 1, "write counter error");
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

/* One byte past the end, and an address before the start. */
START_TEST(range_outside_fails_untouched)
{
	struct rig *r = rig_start(ALL_ACCESS);
	size_t len = sizes[_i];
	void *buf = initiator_buf(len);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer,
				r->addr + MR_LEN - len + 1, r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer, r->addr - 1,
				r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	XT_POST(&r->x, fi_read(r->x.ep, buf, len, NULL, r->peer,
			       r->addr + MR_LEN - len + 1, r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

START_TEST(write_to_read_only_fails_untouched)
{
	struct rig *r = rig_start(FI_REMOTE_READ);
	size_t len = sizes[_i];
	void *buf = initiator_buf(len);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	assert_untouched(r);
	XT_POST(&r->x, fi_read(r->x.ep, buf, len, NULL, r->peer, r->addr,
			       r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_READ);
	assert_read(buf, 0, len);
	free(buf);
	rig_stop(r);
}
END_TEST

START_TEST(read_of_write_only_fails)
{
	struct rig *r = rig_start(FI_REMOTE_WRITE);
	void *buf = initiator_buf(100);
	int ctx;

	XT_POST(&r->x, fi_read(r->x.ep, buf, 100, NULL, r->peer, r->addr,
			       r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	XT_ASSERT(xt_mismatch(buf, 100, ISEED, 0) < 0, "read buffer changed");
	free(buf);
	rig_stop(r);
}
END_TEST

START_TEST(closed_registration_fails_untouched)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(sizes[_i]);
	int ctx;

	xt_signal(r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "close");
	XT_POST(&r->x, fi_write(r->x.ep, buf, sizes[_i], NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

/* ---- without a single copy ---- */

START_TEST(without_cma_write_and_read_intact)
{
	XT_ASSERT(setenv("FI_XSHM_CMA", "0", 1) == 0, "setenv");
	write_case(sizes[_i]);
	read_case(sizes[_i]);
}
END_TEST

/* ---- offsets and the application's keys (mr_mode 0) ---- */

START_TEST(offset_addressing_with_user_keys)
{
	struct rig *r = calloc(1, sizeof(*r));
	void *buf = initiator_buf(5000);
	int ctx;

	rig_start_with(r, ALL_ACCESS, 0, true);
	XT_ASSERT(r->key == USER_KEY && r->addr == 0, "key %llx addr %llx",
		  (unsigned long long) r->key, (unsigned long long) r->addr);
	XT_POST(&r->x, fi_write(r->x.ep, buf, 5000, NULL, r->peer, 100, r->key,
				&ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, 100, 5000);
	free(buf);
	rig_stop(r);
}
END_TEST

/* ---- keys ---- */

static struct fid_mr *reg(struct xt_ep *x, void *buf, uint64_t key, int expect)
{
	struct fid_mr *mr = NULL;

	XT_ASSERT_RC(fi_mr_reg(x->domain, buf, 64, FI_REMOTE_WRITE, 0, key, 0,
			       &mr, NULL), expect);
	return mr;
}

/* The application's keys: a taken one is refused until it is closed. */
START_TEST(user_key_taken_is_enokey_until_closed)
{
	struct xt_cfg cfg = rma_cfg(0);
	char buf[64];
	struct fid_mr *mr;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	mr = reg(&x, buf, USER_KEY, 0);
	XT_ASSERT(fi_mr_key(mr) == USER_KEY, "key");
	reg(&x, buf, USER_KEY, -FI_ENOKEY);
	XT_ASSERT_OK(fi_close(&mr->fid));
	mr = reg(&x, buf, USER_KEY, 0);
	XT_ASSERT_OK(fi_close(&mr->fid));
	xt_close(&x);
}
END_TEST

/* FI_MR_PROV_KEY: the requested key is ignored, every key differs. */
START_TEST(provider_keys_differ)
{
	struct xt_cfg cfg = rma_cfg(FI_MR_VIRT_ADDR | FI_MR_PROV_KEY);
	struct fid_mr *a, *b;
	char buf[64];
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	a = reg(&x, buf, USER_KEY, 0);
	b = reg(&x, buf, USER_KEY, 0);
	XT_ASSERT(fi_mr_key(a) != fi_mr_key(b), "same key twice");
	XT_ASSERT_OK(fi_close(&a->fid));
	XT_ASSERT_OK(fi_close(&b->fid));
	xt_close(&x);
}
END_TEST

/* ---- a target that dies ---- */

START_TEST(dead_target_fails_within_timeout)
{
	struct rig *r = calloc(1, sizeof(*r));
	void *buf = initiator_buf(MR_LEN);
	struct xt_comp c;
	int ctx[4];

	rig_start_with(r, ALL_ACCESS, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, false);
	for (int i = 0; i < 4; i++)
		XT_POST(&r->x, fi_write(r->x.ep, buf, i % 2 ? MR_LEN : 5000, NULL,
					r->peer, r->addr, r->key, &ctx[i]));
	kill(r->c.pid, SIGKILL);
	xt_join_killed(&r->c);
	for (int i = 0; i < 4; i++) {
		xt_expect_err_ms(r->x.tx, r->x.rx, DEAD_MS, &c);
		XT_ASSERT(c.err.err, "an error");
	}
	close_with_cntrs(&r->x, r->wc, r->rc);
	free(buf);
	free(r);
}
END_TEST

/* RMA is optional (XT_EXTRA); FI_XSHM_CMA and xshm's modes are its own. */
static Suite *rma_suite(void)
{
	Suite *s = suite_create("rma");
	TCase *data = tcase_create("data"), *checks = tcase_create("checks");
	TCase *own = tcase_create("xshm");
	int nsizes = sizeof(sizes) / sizeof(sizes[0]);

	tcase_set_timeout(data, 60);
	tcase_add_loop_test(data, write_lands_byte_for_byte, 0, nsizes);
	tcase_add_loop_test(data, read_brings_byte_for_byte, 0, nsizes);
	tcase_add_loop_test(data, writev_gathers_iovs, 0, nsizes);
	tcase_add_loop_test(data, readv_scatters_iovs, 0, nsizes);
	tcase_add_loop_test(data, writemsg_and_readmsg_round_trip, 0, nsizes);
	tcase_add_loop_test(data, inject_write_copies_at_once, 0, 2);
	tcase_add_loop_test(data, writedata_completes_at_target_with_data, 0,
			    nsizes);
	tcase_add_test(data, rma_event_counters_count_both_sides);
	tcase_add_test(data, registration_counter_progresses_alone);
	tcase_add_test(data, fenced_read_sees_writes_before_it);
	tcase_set_timeout(checks, 60);
	tcase_add_loop_test(checks, bad_key_fails_untouched, 0, nsizes);
	tcase_add_loop_test(checks, range_outside_fails_untouched, 0, nsizes);
	tcase_add_loop_test(checks, write_to_read_only_fails_untouched, 0,
			    nsizes);
	tcase_add_test(checks, read_of_write_only_fails);
	tcase_add_loop_test(checks, closed_registration_fails_untouched, 0,
			    nsizes);
	tcase_add_test(checks, dead_target_fails_within_timeout);
	tcase_set_timeout(own, 60);
	tcase_add_loop_test(own, without_cma_write_and_read_intact, 0, nsizes);
	tcase_add_test(own, offset_addressing_with_user_keys);
	tcase_add_test(own, user_key_taken_is_enokey_until_closed);
	tcase_add_test(own, provider_keys_differ);
	if (xt_wanted(XT_EXTRA)) {
		suite_add_tcase(s, data);
		suite_add_tcase(s, checks);
	}
	if (xt_wanted(XT_XSHM))
		suite_add_tcase(s, own);
	return s;
}

int main(void)
{
	return xt_run_suite(rma_suite());
}
