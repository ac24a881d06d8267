/*
 * The measured way of large RMA (data/rma_path.c): with FI_XSHM_RMA_FAST
 * and FI_XSHM_PATH at auto, each operation larger than a cell takes the
 * target's ring or the initiator's single copy, whichever its initiator
 * measured cheaper for that target, direction and size; the parameters
 * that force a way override it.
 *
 * Reads tell the ways apart: one that takes the ring needs its target to
 * answer, one copied by the initiator does not.  The target here never
 * progresses but when told to (settle_target), so a ring read costs the
 * initiator its wait for the target.
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "rma_rig.h"

/* In the class that starts on the ring (rma_path.c: below 16 KiB). */
#define READ_LEN	(8u << 10)
#define READS		300
/* A ring read waits this long before the test lets its target answer. */
#define RING_WAIT_MS	2

/* One read, READ_LEN at off; true when its target had to answer it. */
static bool read_once(struct rig *r, void *buf, size_t off)
{
	struct xt_comp c;
	bool answered = false;
	int ctx;

	XT_POST(&r->x, fi_read(r->x.ep, buf, READ_LEN, NULL, r->peer,
			       r->addr + off, r->key, &ctx));
	while (xt_poll(r->x.tx, r->x.rx, RING_WAIT_MS, &c) == -FI_EAGAIN) {
		settle_target(r);
		answered = true;
	}
	XT_ASSERT(!c.is_err, "read failed: %d", c.err.err);
	XT_ASSERT(c.e.op_context == &ctx, "context");
	assert_read(buf, off, READ_LEN);
	return answered;
}

/* How many of READS reads the target had to answer. */
static int reads_answered(void)
{
	struct rig *r = rig_start_idle(ALL_ACCESS, false);
	void *buf = calloc(1, READ_LEN);
	int answered = 0;

	XT_ASSERT(buf, "calloc");
	for (int i = 0; i < READS; i++)
		answered += read_once(r, buf, (size_t) i * 4096 % (MR_LEN - READ_LEN));
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
 * Ring reads cost a wait for a target that answers late, the single copy
 * a few microseconds: the initiator tries the ring first, then settles on
 * the single copy, probing the ring again only now and then.
 */
START_TEST(slow_target_moves_reads_to_single_copy)
{
	int answered;

	measured_mode();
	answered = reads_answered();
	XT_ASSERT(answered >= 1, "the ring was never tried");
	XT_ASSERT(answered <= READS / 10,
		  "%d of %d reads waited for the target", answered, READS);
}
END_TEST

/* The parameters that force a way, and how many reads then need the target. */
static const struct forced {
	const char *name, *value;
	bool ring;
} forced[] = {
	{ "FI_XSHM_RMA_FAST", "1", false },	/* the single copy always */
	{ "FI_XSHM_PATH", "static", false },	/* by size: copied */
	{ "FI_XSHM_CMA", "0", true },		/* no single copy at all */
};

START_TEST(forcing_parameters_override_measurement)
{
	const struct forced *f = &forced[_i];
	int answered;

	measured_mode();
	XT_ASSERT(setenv(f->name, f->value, 1) == 0, "setenv");
	answered = reads_answered();
	XT_ASSERT(answered == (f->ring ? READS : 0),
		  "%s=%s: %d of %d reads waited for the target", f->name,
		  f->value, answered, READS);
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
	tcase_add_test(path, slow_target_moves_reads_to_single_copy);
	tcase_add_loop_test(path, forcing_parameters_override_measurement, 0,
			    sizeof(forced) / sizeof(forced[0]));
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
