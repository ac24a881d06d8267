/*
 * The measured way of large RMA (data/rma_path.c): with FI_XSHM_RMA_FAST
 * and FI_XSHM_PATH at auto, each operation larger than a cell takes the
 * target's ring or the initiator's single copy, whichever its initiator
 * measured cheaper for that target, direction and size; the parameters
 * that force a way override it.
 *
 * Reads, and writes asked for FI_DELIVERY_COMPLETE (as Open MPI's OFI BTL
 * asks every one), tell the ways apart: one that takes the ring needs its
 * target to answer, one copied by the initiator does not.  The target here
 * never progresses but when told to (settle_target), so the ring costs the
 * initiator its wait for the target.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rma_rig.h"

/* In the class that starts on the ring (rma_path.c: below 16 KiB). */
#define OP_LEN		(8u << 10)
#define OPS		300
/* A ring operation waits this long before the test lets its target answer. */
#define RING_WAIT_MS	2

/* One read or acked write, OP_LEN at off; true when its target had to answer it. */
static bool op_once(struct rig *r, void *buf, size_t off, bool write)
{
	struct xt_comp c;
	bool answered = false;
	int ctx;

	if (write)
		XT_POST(&r->x, fi_write(r->x.ep, buf, OP_LEN, NULL, r->peer,
					r->addr + off, r->key, &ctx));
	else
		XT_POST(&r->x, fi_read(r->x.ep, buf, OP_LEN, NULL, r->peer,
				       r->addr + off, r->key, &ctx));
	while (xt_poll(r->x.tx, r->x.rx, RING_WAIT_MS, &c) == -FI_EAGAIN) {
		settle_target(r);
		answered = true;
	}
	XT_ASSERT(!c.is_err, "%s failed: %d", write ? "write" : "read",
		  c.err.err);
	XT_ASSERT(c.e.op_context == &ctx, "context");
	if (!write)
		assert_read(buf, off, OP_LEN);
	return answered;
}

/* How many of OPS reads, or writes asked for delivery, the target had to answer. */
static int ops_answered(bool write)
{
	struct rig *r = rig_start_idle(ALL_ACCESS, false);
	void *buf = write ? initiator_buf(OP_LEN) : calloc(1, OP_LEN);
	uint64_t delivery = FI_TRANSMIT | FI_DELIVERY_COMPLETE;
	int answered = 0;

	XT_ASSERT(buf, "calloc");
	if (write)
		XT_ASSERT_OK(fi_control(&r->x.ep->fid, FI_SETOPSFLAG, &delivery));
	/* writes all to one place, checked at the end: the rest stays the target's */
	for (int i = 0; i < OPS; i++)
		answered += op_once(r, buf, write ? 0 : (size_t) i * 4096 %
					    (MR_LEN - OP_LEN), write);
	if (write) {
		settle_target(r);
		assert_written(r, 0, OP_LEN);
	}
	free(buf);
	rig_stop(r);
	return answered;
}

static void measured_mode(void)
{
	XT_ASSERT(setenv("FI_XSHM_PATH", "auto", 1) == 0, "setenv");
	XT_ASSERT(unsetenv("FI_XSHM_RMA_POSTED_MAX") == 0, "unsetenv");
}

/*
 * Ring reads and acked ring writes cost a wait for a target that answers
 * late, the single copy a few microseconds: the initiator tries the ring
 * first, then settles on the single copy, probing the ring again only now
 * and then.  0: reads, 1: writes.
 */
START_TEST(slow_target_moves_ops_to_single_copy)
{
	int answered;

	measured_mode();
	answered = ops_answered(_i);
	XT_ASSERT(answered >= 1, "the ring was never tried");
	XT_ASSERT(answered <= OPS / 10,
		  "%d of %d operations waited for the target", answered, OPS);
}
END_TEST

/* The parameters that force a way, and whether operations then need the target. */
static const struct forced {
	const char *name, *value;
	bool ring;
} forced[] = {
	{ "FI_XSHM_RMA_FAST", "1", false },	/* the single copy always */
	{ "FI_XSHM_PATH", "static", false },	/* by size: copied */
	{ "FI_XSHM_CMA", "0", true },		/* no single copy at all */
};
#define NFORCED	(sizeof(forced) / sizeof(forced[0]))

/* Each forcing parameter for reads, then for acked writes. */
START_TEST(forcing_parameters_override_measurement)
{
	const struct forced *f = &forced[_i % NFORCED];
	bool write = _i >= (int) NFORCED;
	int answered;

	measured_mode();
	XT_ASSERT(setenv(f->name, f->value, 1) == 0, "setenv");
	answered = ops_answered(write);
	XT_ASSERT(answered == (f->ring ? OPS : 0),
		  "%s=%s: %d of %d %s waited for the target", f->name,
		  f->value, answered, OPS, write ? "writes" : "reads");
}
END_TEST

/*
 * Whichever way each takes, probes included, every read and write of a
 * stream lands whole: sizes from just above a cell to the whole region,
 * the target progressing.  Reads first, of the target's own bytes, then
 * writes, all to one place: a read may pass a posted write (FI_ORDER_SAS
 * only).
 */
static const size_t stream_lens[] = { 2048, 8u << 10, 16u << 10, 64u << 10,
				      MR_LEN };
#define STREAM_OPS	200

START_TEST(measured_stream_lands_whole)
{
	size_t len = stream_lens[_i], off = MR_LEN - len;
	unsigned char *buf = initiator_buf(len), *got = calloc(1, len);
	struct rig *r;
	int ctx;

	XT_ASSERT(got, "calloc");
	measured_mode();
	r = rig_start(ALL_ACCESS);
	for (int i = 0; i < STREAM_OPS; i++) {
		size_t at = (size_t) i * 4096 % (off + 1);

		XT_POST(&r->x, fi_read(r->x.ep, got, len, NULL, r->peer,
				       r->addr + at, r->key, &ctx));
		expect_done(r, &ctx, FI_RMA | FI_READ);
		assert_read(got, at, len);
	}
	for (int i = 0; i < STREAM_OPS; i++) {
		XT_POST(&r->x, fi_write(r->x.ep, buf, len, NULL, r->peer,
					r->addr + off, r->key, &ctx));
		expect_done(r, &ctx, FI_RMA | FI_WRITE);
	}
	settle_target(r);
	assert_written(r, off, len);
	free(got);
	free(buf);
	rig_stop(r);
}
END_TEST

static Suite *rma_path_suite(void)
{
	Suite *s = suite_create("rma_path");
	TCase *path = tcase_create("path");

	tcase_set_timeout(path, 60);
	tcase_add_loop_test(path, slow_target_moves_ops_to_single_copy, 0, 2);
	tcase_add_loop_test(path, forcing_parameters_override_measurement, 0,
			    2 * NFORCED);
	tcase_add_loop_test(path, measured_stream_lands_whole, 0,
			    sizeof(stream_lens) / sizeof(stream_lens[0]));
	/* xshm's own protocol (FI_XSHM_RMA_FAST, FI_XSHM_PATH) */
	if (xt_wanted(XT_XSHM))
		suite_add_tcase(s, path);
	return s;
}

int main(void)
{
	rig_force_mode(RIG_AUTO);
	return xt_run_suite(rma_path_suite());
}
