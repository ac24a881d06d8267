/*
 * FI_PROGRESS_AUTO (fi_domain(3)): a receiver that asked for it and makes
 * no call at all once its receive is posted still gets a message of either
 * path, small or large, into its buffer, and finds the completion waiting.
 */
#include "xlink.h"

#define MOVE_MS	10000
#define TAG	9

static const size_t lens[] = { 100, XL_MIB };

/* Watches buf, making no libfabric call, until the pattern is all there. */
static bool arrives_untouched(const unsigned char *buf, size_t len, uint64_t seed)
{
	uint64_t end = xt_now_ms() + MOVE_MS;

	while (xt_now_ms() < end) {
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (xt_mismatch(buf, len, seed, 0) < 0)
			return true;
		usleep(1000);
	}
	return false;
}

/* _i: path (bit 0), length (bit 1). */
START_TEST(a_message_moves_while_the_receiver_makes_no_call)
{
	int p = _i & 1;
	size_t len = lens[_i >> 1];
	struct xt_cfg cfg = xl_cfg(0);
	unsigned char *buf = xl_buf(len);
	struct xt_burst_msg m = {
		.tagged = true, .plain = true, .len = len, .seed = xl_seed(p, 0), .tag = TAG,
	};
	struct xt_comp c;
	struct xl_rig r;

	cfg.data_progress = FI_PROGRESS_AUTO;
	xl_start_cfg(&r, cfg, -1, NULL);
	XT_ASSERT(r.x.info->domain_attr->data_progress == FI_PROGRESS_AUTO,
		  "asked for FI_PROGRESS_AUTO, got %d", r.x.info->domain_attr->data_progress);
	xt_post_recv(&r.x, true, buf, len, r.fa[p], TAG, 0, buf);
	xt_burst_post(NULL, &r.kid[p], &m, 1, XL_WAIT_MS);	/* NULL: no progress here */
	XT_ASSERT(arrives_untouched(buf, len, m.seed), "%s, %zu bytes: not in the buffer "
		  "after %d ms without a call", xl_path[p], len, MOVE_MS);
	XT_ASSERT(xt_poll(r.x.rx, r.x.tx, 1000, &c) == 0, "%s: no completion", xl_path[p]);
	XT_ASSERT(!c.is_err && c.e.op_context == buf && c.e.len == len,
		  "%s: completion err %d, context %p, len %zu", xl_path[p],
		  c.is_err ? c.err.err : 0, c.e.op_context, c.e.len);
	xl_check_guard(buf, len, xl_path[p]);
	xl_sent(&r, p, 1, false);
	xl_stop(&r);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xlink_auto_progress");
	TCase *tc = tcase_create("auto_progress");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, a_message_moves_while_the_receiver_makes_no_call, 0, 4);
	suite_add_tcase(s, tc);
	return xl_main(s);
}
