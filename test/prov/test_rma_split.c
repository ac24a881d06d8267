/*
 * Initiator-driven RMA split with its target (data/rma_split.c), forced at
 * every size that makes two chunks or more (FI_XSHM_RMA_SPLIT_MIN=1, in
 * RIG_FAST; chunks from 128 KiB, so operations above 128 KiB split): bytes
 * land exactly around chunk boundaries, a target that never progresses
 * leaves the whole copy to the initiator and its late offers touch
 * nothing, a target killed while splitting fails or completes the
 * operations but never hangs, and a registration closed right after a
 * completion sees no later byte change.
 */
#include "rma_rig.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* Around the chunk boundaries of two-chunk operations (128 KiB + 1 up). */
static const size_t split_sizes[] = {
	(128u << 10) + 1, 150000, (192u << 10) + 123, (240u << 10) + 4095,
	MR_LEN - 1, MR_LEN,
};
#define SPLIT_SIZES	(sizeof(split_sizes) / sizeof(split_sizes[0]))

START_TEST(split_write_lands_byte_for_byte)
{
	write_case(split_sizes[_i]);
}
END_TEST

START_TEST(split_read_brings_byte_for_byte)
{
	read_case(split_sizes[_i]);
}
END_TEST

/* A target that never progresses. */
static struct rig *idle_rig(void)
{
	return rig_start_idle(ALL_ACCESS, false);
}

/*
 * The initiator copies every chunk itself; the target, made to apply its
 * ring afterwards, finds offers of finished generations and copies
 * nothing, though the initiator's buffer has changed since.
 */
START_TEST(idle_target_leaves_all_chunks_to_initiator)
{
	struct rig *r = idle_rig();
	size_t len = split_sizes[_i], off = MR_LEN - len;
	void *buf = initiator_buf(len), *back = calloc(1, len);
	int wctx, rctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer, r->addr + off,
				r->key, &wctx));
	expect_done(r, &wctx, FI_RMA | FI_WRITE);
	XT_POST(&r->x, fi_read(r->x.ep, back, len, NULL, r->peer, r->addr + off,
			       r->key, &rctx));
	expect_done(r, &rctx, FI_RMA | FI_READ);
	XT_ASSERT(xt_mismatch(back, len, ISEED, 0) < 0, "read back differs");
	memset(buf, 0, len);
	memset(back, 0, len);
	settle_target(r);
	assert_written(r, off, len);
	for (size_t i = 0; i < len; i++)
		XT_ASSERT(!((unsigned char *) back)[i], "late read wrote at %zu",
			  i);
	free(buf);
	free(back);
	rig_stop(r);
}
END_TEST

/* Written, completed, then the registration closed: nothing moves after. */
START_TEST(closed_right_after_completion_stays_put)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(MR_LEN);
	int ctx;

	XT_POST(&r->x, fi_write(r->x.ep, buf, MR_LEN, NULL, r->peer, r->addr,
				r->key, &ctx));
	expect_done(r, &ctx, FI_RMA | FI_WRITE);
	memset(buf, 0, MR_LEN);
	xt_signal(r->c.sock, T_CLOSE_MR);
	XT_ASSERT(xt_wait(r->c.sock) == T_OK, "close");
	assert_written(r, 0, MR_LEN);
	assert_written(r, 0, MR_LEN);
	free(buf);
	rig_stop(r);
}
END_TEST

/* One write's completion or error, within DEAD_MS; true when an error. */
static bool write_once(struct rig *r, void *buf, int *ctx)
{
	struct xt_comp c;
	ssize_t ret;

	ret = XT_RETRY(&r->x, fi_write(r->x.ep, buf, MR_LEN, NULL, r->peer,
				       r->addr, r->key, ctx));
	if (ret)
		return true;
	XT_ASSERT(xt_poll(r->x.tx, r->x.rx, DEAD_MS, &c) == 0,
		  "no completion within %d ms", DEAD_MS);
	return c.is_err;
}

/*
 * Writes stream while the target is killed: each completes or fails in
 * time, and the ones after its death fail.  A killed process dies once it
 * runs again, which on a loaded machine may take longer than many writes:
 * they go on until three failed, or for KILLED_MS.
 */
#define KILLED_MS	10000

START_TEST(target_killed_mid_split_never_hangs)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(MR_LEN);
	uint64_t end = UINT64_MAX;
	unsigned i, failed = 0;
	int ctx;

	for (i = 0; failed < 3 && xt_now_ms() < end; i++) {
		if (i == 100) {
			kill(r->c.pid, SIGKILL);
			end = xt_now_ms() + KILLED_MS;
		}
		failed += write_once(r, buf, &ctx);
	}
	XT_ASSERT(i >= 100 && failed >= 3, "writes to a dead target succeed");
	xt_join_killed(&r->c);
	close_with_cntrs(&r->x, r->wc, r->rc);
	free(buf);
	free(r);
}
END_TEST

/* Errors are the initiator's own checks, unchanged. */
START_TEST(bad_key_and_range_fail_untouched)
{
	struct rig *r = rig_start(ALL_ACCESS);
	void *buf = initiator_buf(MR_LEN);
	int ctx[2];

	XT_POST(&r->x, fi_write(r->x.ep, buf, MR_LEN, NULL, r->peer, r->addr,
				r->key + 1, &ctx[0]));
	expect_error(r, &ctx[0], FI_EINVAL);
	XT_POST(&r->x, fi_write(r->x.ep, buf, MR_LEN, NULL, r->peer,
				r->addr + 1, r->key, &ctx[1]));
	expect_error(r, &ctx[1], FI_EACCES);
	assert_untouched(r);
	free(buf);
	rig_stop(r);
}
END_TEST

static Suite *rma_split_suite(void)
{
	Suite *s = suite_create("rma_split");
	TCase *t = tcase_create("split");

	tcase_set_timeout(t, 120);
	tcase_add_loop_test(t, split_write_lands_byte_for_byte, 0, SPLIT_SIZES);
	tcase_add_loop_test(t, split_read_brings_byte_for_byte, 0, SPLIT_SIZES);
	tcase_add_loop_test(t, idle_target_leaves_all_chunks_to_initiator, 0,
			    SPLIT_SIZES);
	tcase_add_test(t, closed_right_after_completion_stays_put);
	tcase_add_test(t, target_killed_mid_split_never_hangs);
	tcase_add_test(t, bad_key_and_range_fail_untouched);
	if (xt_wanted(XT_EXTRA))
		suite_add_tcase(s, t);
	return s;
}

int main(void)
{
	rig_force_mode(RIG_FAST);
	XT_ASSERT(setenv("FI_XSHM_RMA_SPLIT_MIN", "1", 1) == 0, "setenv");
	return xt_run_suite(rma_split_suite());
}
