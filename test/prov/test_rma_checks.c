/*
 * RMA's checks at the target (rma_rig.h): a bad key, a range outside the
 * registration, access not granted and a closed registration, each an
 * error completion with the target's memory untouched (its guards and
 * region compared byte for byte); a target killed with operations
 * outstanding, errors within the timeout; FI_XSHM_CMA=0; writes asked for
 * delivery; offsets and the application's keys (mr_mode 0), keys taken and
 * keys given.
 */
#include "rma_rig.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* ---- checks at the target ---- */

START_TEST(bad_key_fails_untouched)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(rma_sizes[_i]);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, rma_sizes[_i], NULL, r->peer, r->addr,
				r->key + 1000, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	XT_POST(&r->x, fi_read(r->x.ep, buf, rma_sizes[_i], NULL, r->peer, r->addr,
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
	size_t len = rma_sizes[_i];
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
	size_t len = rma_sizes[_i];
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
	void *buf = initiator_buf(rma_sizes[_i]);
	int ctx;

	xt_signal(r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "close");
	XT_POST(&r->x, fi_write(r->x.ep, buf, rma_sizes[_i], NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_error(r, &ctx, FI_EINVAL);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

/*
 * An endpoint that did not ask for FI_RMA is no target, whatever it
 * registered (here with no access flags, which would grant all).
 */
START_TEST(target_without_rma_refuses)
{
	struct rig *r = calloc(1, sizeof(*r));
	void *buf = initiator_buf(100);
	int ctx;

	r->opts.caps = FI_MSG;
	rig_start_with(r, 0, FI_MR_VIRT_ADDR | FI_MR_PROV_KEY, true);
	XT_POST(&r->x, fi_write(r->x.ep, buf, 100, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_error(r, &ctx, FI_EOPNOTSUPP);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

/* ---- without a single copy ---- */

START_TEST(without_cma_write_and_read_intact)
{
	XT_ASSERT(setenv("FI_XSHM_CMA", "0", 1) == 0, "setenv");
	write_case(rma_sizes[_i]);
	read_case(rma_sizes[_i]);
}
END_TEST

/*
 * Reads in flight that ask for more than the initiator's pool holds (16
 * of the whole region, 256 buffers of 16 KiB against 128): the target
 * answers what the pool takes straight from its registration and queues
 * the rest, copied out; every byte lands, in the right read.
 */
#define POOL_READS	16

START_TEST(without_cma_reads_past_the_pool_intact)
{
	unsigned char *bufs[POOL_READS];
	bool seen[POOL_READS] = { false };
	int ctx[POOL_READS];
	struct xt_comp c;
	struct rig *r;

	XT_ASSERT(setenv("FI_XSHM_CMA", "0", 1) == 0, "setenv");
	r = rig_start(ALL_ACCESS);
	for (int i = 0; i < POOL_READS; i++) {
		bufs[i] = calloc(1, MR_LEN);
		XT_ASSERT(bufs[i], "calloc");
		XT_POST(&r->x, fi_read(r->x.ep, bufs[i], MR_LEN, NULL, r->peer,
				       r->addr, r->key, &ctx[i]));
	}
	for (int n = 0; n < POOL_READS; n++) {
		int i = 0;

		xt_wait_tx(&r->x, &c);
		while (i < POOL_READS && c.e.op_context != &ctx[i])
			i++;
		XT_ASSERT(i < POOL_READS && !seen[i], "context %p", c.e.op_context);
		seen[i] = true;
	}
	for (int i = 0; i < POOL_READS; i++) {
		assert_read(bufs[i], 0, MR_LEN);
		free(bufs[i]);
	}
	assert_untouched(r);
	rig_stop(r);
}
END_TEST

/* ---- writes asked for delivery ---- */

/*
 * FI_DELIVERY_COMPLETE writes of a few KiB, which may take the target's
 * bounce buffers (data/rma_send.c): a bad key and a range outside fail as
 * other writes do, whichever way they take, the target's memory untouched,
 * and a good write lands after them.
 */
#define ACKED_LEN	5000
#define ACKED_FAILS	300

START_TEST(acked_writes_fail_untouched)
{
	struct rig *r = rig_start(ALL_ACCESS);
	uint64_t delivery = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
	void *buf = initiator_buf(ACKED_LEN);
	int ctx;

	XT_ASSERT_OK(fi_control(&r->x.ep->fid, FI_SETOPSFLAG, &delivery));
	for (int i = 0; i < ACKED_FAILS; i++) {
		XT_POST(&r->x, fi_write(r->x.ep, buf, ACKED_LEN, NULL, r->peer,
					r->addr, r->key + 1000, &ctx));
		expect_error(r, &ctx, FI_EINVAL);
	}
	XT_POST(&r->x, fi_write(r->x.ep, buf, ACKED_LEN, NULL, r->peer,
				r->addr + MR_LEN - ACKED_LEN + 1, r->key, &ctx));
	expect_error(r, &ctx, FI_EACCES);
	assert_untouched(r);
	XT_POST(&r->x, fi_write(r->x.ep, buf, ACKED_LEN, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	assert_written(r, 0, ACKED_LEN);
	free(buf);
	rig_stop(r);
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

/* Copied by the initiator in auto: past the posted writes. */
#define COPIED	(RIG_POSTED_MAX + 1000)

START_TEST(dead_target_fails_within_timeout)
{
	struct rig *r = rig_start_idle(ALL_ACCESS, false);
	void *buf = initiator_buf(MR_LEN);
	struct xt_comp c;
	int ctx[4], posted = 0;

	/* Copied by the initiator, they would complete at once: die first. */
	if (rig_initiator_copies(COPIED)) {
		kill(r->c.pid, SIGKILL);
		xt_join_killed(&r->c);
	}
	/*
	 * A write posted after the target's death was seen may fail in its
	 * call (FI_EHOSTUNREACH: its region is gone) instead of completing
	 * in error; each of the others must complete in error.
	 */
	for (int i = 0; i < 4; i++) {
		ssize_t ret = XT_RETRY(&r->x, fi_write(r->x.ep, buf,
						       i % 2 ? MR_LEN : COPIED,
						       NULL, r->peer, r->addr,
						       r->key, &ctx[i]));

		XT_ASSERT(ret == 0 || ret == -FI_EHOSTUNREACH, "post: %zd", ret);
		posted += ret == 0;
	}
	if (!rig_initiator_copies(COPIED)) {
		kill(r->c.pid, SIGKILL);
		xt_join_killed(&r->c);
	}
	for (int i = 0; i < posted; i++) {
		xt_expect_err_ms(r->x.tx, r->x.rx, DEAD_MS, &c);
		XT_ASSERT(c.err.err, "an error");
	}
	close_with_cntrs(&r->x, r->wc, r->rc);
	free(buf);
	free(r);
}
END_TEST

/* RMA is optional (XT_EXTRA); FI_XSHM_CMA and xshm's modes are its own. */
static Suite *rma_checks_suite(void)
{
	Suite *s = suite_create("rma_checks");
	TCase *checks = tcase_create("checks"), *own = tcase_create("xshm");

	tcase_set_timeout(checks, 60);
	tcase_add_loop_test(checks, bad_key_fails_untouched, 0, RMA_SIZES);
	tcase_add_loop_test(checks, range_outside_fails_untouched, 0, RMA_SIZES);
	tcase_add_loop_test(checks, write_to_read_only_fails_untouched, 0,
			    RMA_SIZES);
	tcase_add_test(checks, read_of_write_only_fails);
	tcase_add_loop_test(checks, closed_registration_fails_untouched, 0,
			    RMA_SIZES);
	tcase_add_test(checks, dead_target_fails_within_timeout);
	tcase_add_test(checks, target_without_rma_refuses);
	tcase_set_timeout(own, 60);
	tcase_add_loop_test(own, without_cma_write_and_read_intact, 0, RMA_SIZES);
	tcase_add_test(own, without_cma_reads_past_the_pool_intact);
	tcase_add_test(own, acked_writes_fail_untouched);
	tcase_add_test(own, offset_addressing_with_user_keys);
	tcase_add_test(own, user_key_taken_is_enokey_until_closed);
	tcase_add_test(own, provider_keys_differ);
	if (xt_wanted(XT_EXTRA))
		suite_add_tcase(s, checks);
	if (xt_wanted(XT_XSHM))
		suite_add_tcase(s, own);
	return s;
}

#ifndef XT_RMA_MODE
#define XT_RMA_MODE	RIG_TARGET
#endif

int main(void)
{
	rig_force_mode(XT_RMA_MODE);
	return xt_run_suite(rma_checks_suite());
}
