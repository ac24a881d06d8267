/*
 * RMA (fi_rma(3)) data between two processes (rma_rig.h): every call, its
 * bytes compared byte for byte at sizes that go inline, by single copy and
 * the whole region; remote CQ data; FI_RMA_EVENT counters of the endpoints
 * and of a registration; FI_FENCE.  Checks, keys and dead targets are
 * test_rma_checks.c's.
 */
#include "rma_rig.h"

#include <stdlib.h>
#include <string.h>

START_TEST(write_lands_byte_for_byte)
{
	write_case(rma_sizes[_i]);
}
END_TEST

START_TEST(read_brings_byte_for_byte)
{
	read_case(rma_sizes[_i]);
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
	size_t len = rma_sizes[_i];
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
	size_t len = rma_sizes[_i];
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
	size_t len = rma_sizes[_i], off = (MR_LEN - len) / 2;
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
	size_t len = rma_sizes[_i];
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
	struct rig *r = rig_start_counted(ALL_ACCESS);
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
	struct rig *r = rig_start_counted(ALL_ACCESS);
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

static Suite *rma_suite(void)
{
	Suite *s = suite_create("rma");
	TCase *data = tcase_create("data");

	tcase_set_timeout(data, 60);
	tcase_add_loop_test(data, write_lands_byte_for_byte, 0, RMA_SIZES);
	tcase_add_loop_test(data, read_brings_byte_for_byte, 0, RMA_SIZES);
	tcase_add_loop_test(data, writev_gathers_iovs, 0, RMA_SIZES);
	tcase_add_loop_test(data, readv_scatters_iovs, 0, RMA_SIZES);
	tcase_add_loop_test(data, writemsg_and_readmsg_round_trip, 0, RMA_SIZES);
	tcase_add_loop_test(data, inject_write_copies_at_once, 0, 2);
	tcase_add_loop_test(data, writedata_completes_at_target_with_data, 0,
			    RMA_SIZES);
	tcase_add_test(data, rma_event_counters_count_both_sides);
	tcase_add_test(data, registration_counter_progresses_alone);
	tcase_add_test(data, fenced_read_sees_writes_before_it);
	/* RMA is optional (XT_EXTRA) */
	if (xt_wanted(XT_EXTRA))
		suite_add_tcase(s, data);
	return s;
}

#ifndef XT_RMA_MODE
#define XT_RMA_MODE	RIG_TARGET
#endif

int main(void)
{
	rig_force_mode(XT_RMA_MODE);
	return xt_run_suite(rma_suite());
}
