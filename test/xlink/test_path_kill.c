/*
 * A peer killed with SIGKILL in the middle of a run, on each path: the
 * survivor's pending directed receive from it ends with an error
 * completion, or a send to it fails (a negative return other than
 * -FI_EAGAIN, or an error completion), within KILL_MS; nothing hangs or
 * crashes, and the other path keeps working.  Which error is not asserted
 * (xshm reports FI_EIO; a remote path reports what its transport reports).
 */
#include "xlink.h"

#include <signal.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define KILL_MS		20000	/* the bound on noticing the death */
#define RESEND_MS	100	/* how often a small send to the dead peer is tried */
#define BIG		XL_MIB	/* a send left pending at the victim */

/* Has sender p send one message and receives it, ignoring errors of context ignore. */
static void receive_one(struct xl_rig *r, int p, size_t seq, size_t len, void *ignore)
{
	struct xt_burst_msg m = {
		.tagged = true, .plain = true, .len = len, .seed = xl_seed(p, seq),
		.tag = xl_tag(p, seq),
	};
	unsigned char *buf = xl_buf(len);
	struct xt_comp c;

	xl_send(r, p, &m, 1);
	xt_post_recv(&r->x, true, buf, len, r->fa[p], xl_tag(p, seq), 0, buf);
	for (;;) {
		if (xt_poll(r->x.rx, r->x.tx, XT_TIMEOUT_MS, &c) != 0)
			XT_ASSERT(false, "%s: no completion within %d ms", xl_path[p],
				  XT_TIMEOUT_MS);
		if (!c.is_err)
			break;
		XT_ASSERT(ignore && c.err.op_context == ignore, "%s: error %d (%s), context %p",
			  xl_path[p], c.err.err, fi_strerror(abs(c.err.err)), c.err.op_context);
	}
	XT_ASSERT(c.e.op_context == buf && c.e.len == len, "%s: context %p, len %zu",
		  xl_path[p], c.e.op_context, c.e.len);
	XT_ASSERT(c.src == r->fa[p], "%s: source %llu", xl_path[p], (unsigned long long)c.src);
	XT_ASSERT_PATTERN(buf, len, xl_seed(p, seq), 0);
	xl_sent(r, p, 1, false);
	free(buf);
}

/*
 * _i: the victim's path.  After a few messages from the victim, the
 * survivor (the receiver) posts a directed receive from it and a large
 * send to it that it never receives; the victim is killed; then the
 * survivor progresses, trying a small send to the victim now and then.
 */
START_TEST(killed_peer_fails_pending_operations_in_bounded_time)
{
	static struct fi_context recv_ctx, big_ctx, small_ctx[256];
	int p = _i, other = !_i;
	unsigned char *rbuf = xl_buf(BIG), *big = xt_alloc(BIG), small[64];
	uint64_t start, end, next_send = 0;
	const char *how = NULL;
	size_t nsmall = 0;
	ssize_t rc;
	struct xl_rig r;
	char what[160];

	xl_start(&r, 0);
	for (size_t i = 0; i < 3; i++)
		receive_one(&r, p, i, i == 1 ? 70000 : 100, NULL);
	receive_one(&r, other, 0, 100, NULL);

	xt_post_recv(&r.x, true, rbuf, BIG, r.fa[p], 7, 0, &recv_ctx);
	xt_fill(big, BIG, 99, 0);
	rc = XT_RETRY(&r.x, fi_tsend(r.x.ep, big, BIG, NULL, r.fa[p], 8, &big_ctx));
	XT_ASSERT(rc == 0, "the large send to the %s peer returned %zd (%s)", xl_path[p], rc,
		  xt_strerror(rc));
	memset(small, 0x5a, sizeof(small));

	XT_ASSERT(kill(r.kid[p].pid, SIGKILL) == 0, "kill");
	xt_join_killed(&r.kid[p]);
	start = xt_now_ms();
	end = start + KILL_MS;
	while (!how && xt_now_ms() < end) {
		struct xt_comp c;
		struct xt_cq *cqs[2] = { r.x.rx, r.x.tx };

		for (int q = 0; q < 2 && !how; q++) {
			if (xt_poll(cqs[q], NULL, 0, &c) != 0)
				continue;
			if (!c.is_err)	/* a send that got out before the death */
				continue;
			snprintf(what, sizeof(what), "an error completion (%s, context %s): %d (%s)",
				 q ? "send" : "receive",
				 c.err.op_context == &recv_ctx ? "the directed receive" :
				 c.err.op_context == &big_ctx ? "the large send" : "a small send",
				 c.err.err, fi_strerror(abs(c.err.err)));
			how = what;
		}
		if (how || xt_now_ms() < next_send || nsmall == N(small_ctx))
			continue;
		next_send = xt_now_ms() + RESEND_MS;
		rc = fi_tsend(r.x.ep, small, sizeof(small), NULL, r.fa[p], 9, &small_ctx[nsmall]);
		if (rc == 0) {
			nsmall++;
		} else if (rc != -FI_EAGAIN) {
			snprintf(what, sizeof(what), "a send returning %zd (%s)", rc,
				 xt_strerror(rc));
			how = what;
		}
	}
	XT_ASSERT(how, "%s peer killed: no error completion and no failed send within %d ms "
		  "(%zu small sends posted)", xl_path[p], KILL_MS, nsmall);
	fprintf(stderr, "%s peer killed: %s after %llu ms\n", xl_path[p], how,
		(unsigned long long)(xt_now_ms() - start));

	/* The other path still works. */
	receive_one(&r, other, 1, 5000, &recv_ctx);
	xt_burst_quit(&r.x, &r.kid[other]);
	/* Pending operations may still be there: closing must not hang. */
	xt_close(&r.x);
	free(rbuf);
	free(big);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xlink_path_kill");
	TCase *tc = tcase_create("killed_peer");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, killed_peer_fails_pending_operations_in_bounded_time, 0, 2);
	suite_add_tcase(s, tc);
	return xl_main(s);
}
