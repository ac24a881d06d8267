/* Endpoints: lifecycle, binding, selective completion, names, MRs. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define TAG	0x1234ULL
#define LEN	300

/*
 * The peer child: exchanges addresses, then echoes `count` tagged messages
 * of LEN bytes (tag TAG, answered with TAG + 1) and says goodbye.
 */
static void echo_child(int sock, void *arg)
{
	int count = (int)(intptr_t)arg;
	struct xt_cfg cfg = xt_cfg_default();
	char buf[LEN];
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t peer;

	xt_open(&x, &cfg);
	peer = xt_exchange(&x, sock);
	for (int i = 0; i < count; i++) {
		XT_POST(&x, fi_trecv(x.ep, buf, LEN, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
		xt_signal(sock, 1);	/* posted */
		xt_wait_rx(&x, &c);
		XT_ASSERT(c.e.len == LEN, "echo received %zu bytes", c.e.len);
		XT_POST(&x, fi_tsend(x.ep, buf, LEN, NULL, peer, TAG + 1, NULL));
		xt_wait_tx(&x, &c);
	}
	xt_wait(sock);
	xt_close(&x);
}

static const enum xt_stage stages[] = { XT_DOMAIN, XT_RESOURCES, XT_EP, XT_BOUND, XT_ENABLED };

START_TEST(ep_can_be_closed_at_every_stage)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	xt_open_upto(&x, &cfg, stages[_i]);
	xt_close(&x);
}
END_TEST

START_TEST(ep_open_close_repeatedly)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	for (int i = 0; i < 50; i++) {
		xt_open(&x, &cfg);
		xt_close(&x);
	}
}
END_TEST

START_TEST(ep_getname_is_stable)
{
	struct xt_cfg cfg = xt_cfg_default();
	char again[XT_NAME_MAX];
	size_t len = sizeof(again);
	struct xt_ep x;

	xt_open(&x, &cfg);
	XT_ASSERT_OK(fi_getname(&x.ep->fid, again, &len));
	XT_ASSERT(len == x.namelen && memcmp(again, x.name, len) == 0, "name changed");
	xt_close(&x);
}
END_TEST

/* Sends one LEN-byte message seeded `seed` and checks the echo. */
static void echo_once(struct xt_ep *x, int sock, fi_addr_t peer, uint64_t seed,
		      void *desc)
{
	char out[LEN], in[LEN];
	struct xt_comp c;

	xt_fill(out, LEN, seed, 0);
	XT_POST(x, fi_trecv(x->ep, in, LEN, desc, FI_ADDR_UNSPEC, TAG + 1, 0, in));
	xt_wait(sock);
	XT_POST(x, fi_tsend(x->ep, out, LEN, desc, peer, TAG, out));
	xt_wait_tx(x, &c);
	XT_ASSERT(c.e.op_context == out, "send completion context %p", c.e.op_context);
	xt_wait_rx(x, &c);
	XT_ASSERT(c.e.op_context == in, "recv completion context %p", c.e.op_context);
	XT_ASSERT_PATTERN(in, LEN, seed, 0);
}

START_TEST(ep_shared_cq_gets_send_and_recv_completions)
{
	struct xt_cfg cfg = xt_cfg_default();
	char out[LEN], in[LEN];
	struct xt_child child;
	struct xt_comp c[2];
	struct xt_ep x;
	fi_addr_t peer;

	cfg.shared_cq = true;
	xt_spawn(&child, echo_child, (void *)1);
	xt_open(&x, &cfg);
	XT_ASSERT(x.tx == x.rx, "harness did not share the CQ");
	peer = xt_exchange(&x, child.sock);
	xt_fill(out, LEN, 3, 0);
	XT_POST(&x, fi_trecv(x.ep, in, LEN, NULL, FI_ADDR_UNSPEC, TAG + 1, 0, in));
	xt_wait(child.sock);
	XT_POST(&x, fi_tsend(x.ep, out, LEN, NULL, peer, TAG, out));
	xt_expect_comp(x.rx, NULL, &c[0]);
	xt_expect_comp(x.rx, NULL, &c[1]);
	if (c[0].e.op_context == in) {
		struct xt_comp t = c[0];

		c[0] = c[1];
		c[1] = t;
	}
	XT_ASSERT(c[0].e.op_context == out && (c[0].e.flags & FI_SEND),
		  "send completion: context %p flags 0x%llx", c[0].e.op_context,
		  (unsigned long long)c[0].e.flags);
	XT_ASSERT(c[1].e.op_context == in && (c[1].e.flags & FI_RECV),
		  "recv completion: context %p flags 0x%llx", c[1].e.op_context,
		  (unsigned long long)c[1].e.flags);
	XT_ASSERT_PATTERN(in, LEN, 3, 0);
	xt_signal(child.sock, 1);
	xt_join(&child);
	xt_close(&x);
}
END_TEST

START_TEST(ep_selective_completion_reports_only_flagged_sends)
{
	struct xt_cfg cfg = xt_cfg_default();
	char a[LEN], b[LEN], in[2][LEN], ctx_b;
	struct iovec iov = { .iov_base = b, .iov_len = LEN };
	struct xt_child child;
	struct fi_msg_tagged msg;
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t peer;

	cfg.tx_bind_flags = FI_SELECTIVE_COMPLETION;
	xt_spawn(&child, echo_child, (void *)2);
	xt_open(&x, &cfg);
	peer = xt_exchange(&x, child.sock);
	xt_fill(a, LEN, 1, 0);
	xt_fill(b, LEN, 2, 0);
	msg = (struct fi_msg_tagged){ .msg_iov = &iov, .iov_count = 1, .addr = peer,
				      .tag = TAG, .context = &ctx_b };
	XT_POST(&x, fi_trecv(x.ep, in[0], LEN, NULL, FI_ADDR_UNSPEC, TAG + 1, 0, NULL));
	xt_wait(child.sock);
	XT_POST(&x, fi_tsend(x.ep, a, LEN, NULL, peer, TAG, a));
	xt_wait_rx(&x, &c);	/* the echo proves the unflagged send was done */
	XT_POST(&x, fi_trecv(x.ep, in[1], LEN, NULL, FI_ADDR_UNSPEC, TAG + 1, 0, NULL));
	xt_wait(child.sock);
	XT_POST(&x, fi_tsendmsg(x.ep, &msg, FI_COMPLETION));
	xt_wait_tx(&x, &c);
	XT_ASSERT(c.e.op_context == &ctx_b, "completion context %p: not the flagged send",
		  c.e.op_context);
	xt_wait_rx(&x, &c);
	xt_expect_none(x.tx, x.rx, 50);
	XT_ASSERT_PATTERN(in[0], LEN, 1, 0);
	XT_ASSERT_PATTERN(in[1], LEN, 2, 0);
	xt_signal(child.sock, 1);
	xt_join(&child);
	xt_close(&x);
}
END_TEST

/*
 * The name of a closed endpoint, set on a new one before enable, becomes
 * the new endpoint's address: a peer reaches it there.
 */
START_TEST(ep_setname_before_enable_sets_the_address)
{
	struct xt_cfg cfg = xt_cfg_default();
	char name[XT_NAME_MAX], got[XT_NAME_MAX];
	size_t namelen, len = sizeof(got);
	struct xt_child child;
	struct xt_ep x;
	fi_addr_t peer;

	xt_spawn(&child, echo_child, (void *)1);
	xt_open(&x, &cfg);
	namelen = x.namelen;
	memcpy(name, x.name, namelen);
	xt_close(&x);
	xt_open_upto(&x, &cfg, XT_BOUND);
	XT_ASSERT_OK(fi_setname(&x.ep->fid, name, namelen));
	xt_enable(&x);
	XT_ASSERT_OK(fi_getname(&x.ep->fid, got, &len));
	XT_ASSERT(len == namelen && memcmp(got, name, len) == 0, "name %.*s, set %s",
		  (int)len, got, name);
	peer = xt_exchange(&x, child.sock);
	echo_once(&x, child.sock, peer, 9, NULL);
	xt_signal(child.sock, 1);
	xt_join(&child);
	xt_close(&x);
}
END_TEST

START_TEST(ep_mr_reg_desc_may_be_passed_or_null)
{
	struct xt_cfg cfg = xt_cfg_default();
	static char region[4096];
	struct iovec iov[2] = {
		{ .iov_base = region, .iov_len = 1000 },
		{ .iov_base = region + 2000, .iov_len = 1000 },
	};
	struct fid_mr *mr, *mrv;
	struct xt_child child;
	struct xt_ep x;
	fi_addr_t peer;

	xt_spawn(&child, echo_child, (void *)2);
	xt_open(&x, &cfg);
	XT_ASSERT_OK(fi_mr_reg(x.domain, region, sizeof(region), FI_SEND | FI_RECV, 0, 1, 0,
			       &mr, NULL));
	XT_ASSERT_OK(fi_mr_regv(x.domain, iov, 2, FI_SEND | FI_RECV, 0, 2, 0, &mrv, NULL));
	peer = xt_exchange(&x, child.sock);
	echo_once(&x, child.sock, peer, 4, fi_mr_desc(mr));
	echo_once(&x, child.sock, peer, 5, NULL);
	XT_ASSERT_OK(fi_close(&mrv->fid));
	XT_ASSERT_OK(fi_close(&mr->fid));
	xt_signal(child.sock, 1);
	xt_join(&child);
	xt_close(&x);
}
END_TEST

/* Two endpoints of one process talk to each other. */
START_TEST(ep_two_endpoints_in_one_process_exchange_a_message)
{
	struct xt_cfg cfg = xt_cfg_default();
	char out[LEN], in[LEN];
	struct xt_ep a, b;
	struct xt_comp c;
	fi_addr_t to_b;

	xt_open(&a, &cfg);
	xt_open(&b, &cfg);
	to_b = xt_av_insert(&a, b.name);
	xt_fill(out, LEN, 6, 0);
	XT_POST(&b, fi_trecv(b.ep, in, LEN, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	/* b must progress too: retry with both */
	XT_POST(&a, (xt_progress(&b), fi_tsend(a.ep, out, LEN, NULL, to_b, TAG, NULL)));
	while (xt_poll(b.rx, b.tx, 1, &c) == -FI_EAGAIN)
		xt_progress(&a);
	XT_ASSERT(!c.is_err, "error completion %d", c.err.err);
	XT_ASSERT_PATTERN(in, LEN, 6, 0);
	xt_wait_tx(&a, &c);
	xt_close(&b);
	xt_close(&a);
}
END_TEST

static Suite *ep_suite(void)
{
	Suite *s = suite_create("ep");
	TCase *life = tcase_create("lifecycle");
	TCase *use = tcase_create("use");

	tcase_set_timeout(life, 30);
	tcase_add_loop_test(life, ep_can_be_closed_at_every_stage, 0,
			    sizeof(stages) / sizeof(stages[0]));
	tcase_add_test(life, ep_open_close_repeatedly);
	tcase_add_test(life, ep_getname_is_stable);
	suite_add_tcase(s, life);

	tcase_set_timeout(use, 30);
	tcase_add_test(use, ep_shared_cq_gets_send_and_recv_completions);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(use, ep_selective_completion_reports_only_flagged_sends);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(use, ep_setname_before_enable_sets_the_address);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(use, ep_mr_reg_desc_may_be_passed_or_null);
	tcase_add_test(use, ep_two_endpoints_in_one_process_exchange_a_message);
	suite_add_tcase(s, use);
	return s;
}

int main(void)
{
	return xt_run_suite(ep_suite());
}
