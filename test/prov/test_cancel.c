/*
 * fi_cancel: posted receives (tagged, untagged, multi-recv buffers) and
 * sends still queued and not started (behind a fence, or behind sends that
 * took all of a non-progressing receiver's buffers) are removed and
 * complete with an
 * FI_ECANCELED error whose op_context is the operation's context; unknown
 * contexts give -FI_ENOENT; later messages go to the next matching receive.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define TAG	0xca2ce1000000000cULL
#define WAIT_MS	8000
#define MiB	(1024 * 1024)

enum kind { TAGGED, UNTAGGED, MULTI };

static const char *const kind_names[] = { "tagged", "untagged", "multi-recv" };

static struct xt_cfg cfg_for(enum kind k)
{
	struct xt_cfg cfg = xt_cfg_default();

	if (k == MULTI)
		cfg.caps |= FI_MULTI_RECV;
	return cfg;
}

static void post_kind(struct xt_ep *x, enum kind k, void *buf, size_t len, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			      .context = ctx };

	if (k == MULTI)
		XT_POST(x, fi_recvmsg(x->ep, &msg, FI_MULTI_RECV));
	else
		xt_post_recv(x, k == TAGGED, buf, len, FI_ADDR_UNSPEC, TAG, 0, ctx);
}

static void expect_cancelled(struct xt_cq *cq, struct xt_cq *also, void *ctx, const char *what)
{
	struct xt_comp c;

	if (xt_poll(cq, also, 2000, &c) != 0)
		XT_ASSERT(false, "%s: no FI_ECANCELED entry within 2000 ms", what);
	XT_ASSERT(c.is_err, "%s: a successful completion (context %p, len %zu) instead of "
		  "FI_ECANCELED", what, c.e.op_context, c.e.len);
	XT_ASSERT(c.err.err == FI_ECANCELED, "%s: err %d (%s), expected FI_ECANCELED", what,
		  c.err.err, fi_strerror(abs(c.err.err)));
	XT_ASSERT(c.err.op_context == ctx, "%s: op_context %p, expected %p", what,
		  c.err.op_context, ctx);
}

/* ---- receives, in one process ---- */

START_TEST(cancel_of_a_posted_receive_gives_ecanceled_then_enoent)
{
	enum kind k = (enum kind)_i;
	struct xt_cfg cfg = cfg_for(k);
	char buf[4096];
	struct fi_context ctx;
	struct xt_ep x;

	xt_open(&x, &cfg);
	post_kind(&x, k, buf, sizeof(buf), &ctx);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &ctx), 0);
	expect_cancelled(x.rx, x.tx, &ctx, kind_names[k]);
	xt_expect_none(x.rx, x.tx, 50);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &ctx), -FI_ENOENT);
	xt_close(&x);
}
END_TEST

START_TEST(cancel_of_an_unknown_context_gives_enoent)
{
	enum kind k = (enum kind)_i;
	struct xt_cfg cfg = cfg_for(k);
	struct fi_context posted, other;
	char buf[256];
	struct xt_ep x;

	xt_open(&x, &cfg);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &other), -FI_ENOENT);
	post_kind(&x, k, buf, sizeof(buf), &posted);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &other), -FI_ENOENT);
	xt_expect_none(x.rx, x.tx, 50);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &posted), 0);
	expect_cancelled(x.rx, x.tx, &posted, kind_names[k]);
	xt_close(&x);
}
END_TEST

/* ---- receives, with a sender ---- */

struct pair {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child c;
	fi_addr_t peer;
};

static void pair_start(struct pair *p, enum kind k)
{
	p->cfg = cfg_for(k);
	xt_spawn(&p->c, xt_burst_child, NULL);
	xt_open(&p->x, &p->cfg);
	p->peer = xt_connect_sender(&p->x, &p->c, true);
}

static void pair_stop(struct pair *p)
{
	xt_burst_quit(&p->x, &p->c);
	xt_close(&p->x);
}

static void send_msg(struct pair *p, enum kind k, size_t len, uint64_t seed)
{
	struct xt_burst_msg m = { .tagged = k == TAGGED, .len = len, .seed = seed, .tag = TAG,
				  .flags = FI_COMPLETION };
	struct xt_burst_result res;

	xt_burst_post(&p->x, &p->c, &m, 1, WAIT_MS);
	xt_burst_results(&p->x, &p->c, &res, 1);
	XT_ASSERT(res.completed && !res.is_err, "send of %zu bytes: completed %d, err %d", len,
		  res.completed, res.err);
}

static void expect_msg(struct pair *p, void *ctx, const void *buf, size_t len, uint64_t seed)
{
	struct xt_comp c;

	xt_wait_rx(&p->x, &c);
	XT_ASSERT(c.e.op_context == ctx, "message %llu completed context %p, expected %p",
		  (unsigned long long)seed, c.e.op_context, ctx);
	XT_ASSERT(c.e.len == len, "len %zu, sent %zu", c.e.len, len);
	XT_ASSERT(c.e.buf == NULL || c.e.buf == buf, "buf %p, expected %p", c.e.buf, buf);
	XT_ASSERT_PATTERN(buf, len, seed, 0);
}

START_TEST(cancel_of_a_completed_receive_gives_enoent)
{
	enum kind k = (enum kind)_i;
	struct fi_context ctx;
	char buf[300];
	struct pair p;

	pair_start(&p, k);
	xt_post_recv(&p.x, k == TAGGED, buf, sizeof(buf), FI_ADDR_UNSPEC, TAG, 0, &ctx);
	send_msg(&p, k, sizeof(buf), 1);
	expect_msg(&p, &ctx, buf, sizeof(buf), 1);
	XT_ASSERT_RC(fi_cancel(&p.x.ep->fid, &ctx), -FI_ENOENT);
	xt_expect_none(p.x.rx, p.x.tx, 50);
	pair_stop(&p);
}
END_TEST

/* Of three matching receives the cancelled one (which) is skipped. */
START_TEST(message_after_a_cancelled_receive_goes_to_the_next_matching_one)
{
	enum kind k = (enum kind)(_i % 2);
	int which = _i / 2;		/* cancel the first or the second */
	size_t len = which ? 20000 : 150;
	struct fi_context ctx[3];
	char *buf[3];
	int got = 0;
	struct pair p;

	pair_start(&p, k);
	for (int i = 0; i < 3; i++) {
		buf[i] = xt_alloc(len);
		memset(buf[i], 0, len);
		xt_post_recv(&p.x, k == TAGGED, buf[i], len, FI_ADDR_UNSPEC, TAG, 0, &ctx[i]);
	}
	XT_ASSERT_RC(fi_cancel(&p.x.ep->fid, &ctx[which]), 0);
	expect_cancelled(p.x.rx, p.x.tx, &ctx[which], kind_names[k]);
	for (int i = 0; i < 3; i++) {
		if (i == which)
			continue;
		send_msg(&p, k, len, 10 + (uint64_t)i);
		expect_msg(&p, &ctx[i], buf[i], len, 10 + (uint64_t)i);
		got++;
	}
	XT_ASSERT(got == 2, "got %d", got);
	xt_expect_none(p.x.rx, p.x.tx, 50);
	for (size_t b = 0; b < len; b++)
		XT_ASSERT(buf[which][b] == 0, "the cancelled receive's buffer was written at %zu", b);
	pair_stop(&p);
	for (int i = 0; i < 3; i++)
		free(buf[i]);
}
END_TEST

/* A multi-recv buffer that already took a message is cancelled; the next one takes over. */
START_TEST(cancel_of_a_partly_used_multi_recv_buffer)
{
	unsigned char b1[8192], b2[8192];
	struct fi_context c1, c2;
	struct pair p;

	pair_start(&p, MULTI);
	post_kind(&p.x, MULTI, b1, sizeof(b1), &c1);
	post_kind(&p.x, MULTI, b2, sizeof(b2), &c2);
	send_msg(&p, MULTI, 100, 20);
	expect_msg(&p, &c1, b1, 100, 20);
	XT_ASSERT_RC(fi_cancel(&p.x.ep->fid, &c1), 0);
	expect_cancelled(p.x.rx, p.x.tx, &c1, "partly used multi-recv buffer");
	send_msg(&p, MULTI, 200, 21);
	expect_msg(&p, &c2, b2, 200, 21);
	XT_ASSERT_RC(fi_cancel(&p.x.ep->fid, &c1), -FI_ENOENT);
	XT_ASSERT_RC(fi_cancel(&p.x.ep->fid, &c2), 0);
	expect_cancelled(p.x.rx, p.x.tx, &c2, "second multi-recv buffer");
	pair_stop(&p);
}
END_TEST

/* ---- a send queued and not started ---- */

/*
 * Two ways to have a send queued and not started, whatever the protocol of
 * large messages:
 * FENCE: a 100-byte FI_MATCH_COMPLETE send whose receive is not posted,
 *        then a fenced send, which may not start before the first completes;
 * FULL:  sends of 2 * XSHM_BUF_SIZE bytes (two bounce buffers each) to a
 *        receiver that does not progress, until its buffers are all taken:
 *        the sends after them wait in the queue.
 */
enum queued_by { FENCE, FULL };

#define SMALL	100
#define NFULL	80		/* > XSHM_POOL_BUFS / 2 */
#define FULL_LEN (2 * XSHM_BUF_SIZE)
#define TAG_BIG	(TAG + 1)

struct cancel_case {
	enum queued_by by;
	bool tagged;
};

static struct cancel_case cancel_case(int i)
{
	return (struct cancel_case){ .by = (enum queued_by)(i / 2), .tagged = i % 2 == 0 };
}

static void send_one(struct xt_ep *x, bool tagged, void *buf, size_t len, fi_addr_t dst,
		     uint64_t tag, uint64_t flags, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged tmsg = { .msg_iov = &iov, .iov_count = 1, .addr = dst, .tag = tag,
				      .context = ctx };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = dst, .context = ctx };

	XT_POST(x, tagged ? fi_tsendmsg(x->ep, &tmsg, FI_COMPLETION | flags) :
			    fi_sendmsg(x->ep, &msg, FI_COMPLETION | flags));
}

static int ndone(const bool *done, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++)
		k += done[i];
	return k;
}

static void cancelling_sender(int sock, void *arg)
{
	struct cancel_case cc = cancel_case((int)(intptr_t)arg);
	int nfirst = cc.by == FENCE ? 1 : NFULL;
	size_t flen = cc.by == FENCE ? SMALL : FULL_LEN;
	struct xt_cfg cfg = xt_cfg_default();
	char *first[NFULL], small[SMALL], next[SMALL];
	struct fi_context cfirst[NFULL], csmall, cnext;
	bool done[NFULL] = { false };
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	for (int i = 0; i < nfirst; i++) {
		first[i] = xt_alloc(flen);
		xt_fill(first[i], flen, 100 + (uint64_t)i, 0);
	}
	xt_fill(small, SMALL, 31, 0);
	xt_fill(next, SMALL, 32, 0);
	xt_wait(sock);
	for (int i = 0; i < nfirst; i++)
		send_one(&x, cc.tagged, first[i], flen, dst, TAG_BIG,
			 cc.by == FENCE ? FI_MATCH_COMPLETE : 0, &cfirst[i]);
	send_one(&x, cc.tagged, small, SMALL, dst, TAG, cc.by == FENCE ? FI_FENCE : 0, &csmall);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &csmall), 0);
	/* Earlier sends may complete first (those already in the receiver's memory). */
	for (bool cancelled = false; !cancelled;) {
		int i = 0;

		if (xt_poll(x.tx, x.rx, 2000, &c) != 0)
			XT_ASSERT(false, "no FI_ECANCELED entry for the queued send within 2000 ms");
		if (c.is_err) {
			XT_ASSERT(c.err.err == FI_ECANCELED && c.err.op_context == &csmall,
				  "error %d (%s), context %p; the cancelled send's is %p", c.err.err,
				  fi_strerror(abs(c.err.err)), c.err.op_context, (void *)&csmall);
			cancelled = true;
			continue;
		}
		XT_ASSERT(c.e.op_context != &csmall, "the cancelled send completed successfully");
		while (i < nfirst && c.e.op_context != &cfirst[i])
			i++;
		XT_ASSERT(i < nfirst && !done[i], "completion context %p", c.e.op_context);
		done[i] = true;
	}
	xt_signal(sock, 1);
	for (int left = nfirst - ndone(done, nfirst); left > 0; left--) {
		int k = 0;

		xt_wait_tx(&x, &c);
		while (k < nfirst && c.e.op_context != &cfirst[k])
			k++;
		XT_ASSERT(k < nfirst && !done[k], "completion context %p", c.e.op_context);
		done[k] = true;
	}
	send_one(&x, cc.tagged, next, SMALL, dst, TAG, 0, &cnext);
	xt_wait_tx(&x, &c);
	XT_ASSERT(c.e.op_context == &cnext, "completion context %p", c.e.op_context);
	XT_ASSERT_RC(fi_cancel(&x.ep->fid, &cnext), -FI_ENOENT);
	xt_expect_none(x.tx, x.rx, 50);
	xt_signal(sock, 2);
	xt_wait(sock);
	xt_close(&x);
	for (int i = 0; i < nfirst; i++)
		free(first[i]);
}

START_TEST(cancel_of_a_queued_send_gives_ecanceled_and_it_is_never_sent)
{
	struct cancel_case cc = cancel_case(_i);
	int nfirst = cc.by == FENCE ? 1 : NFULL;
	size_t flen = cc.by == FENCE ? SMALL : FULL_LEN;
	struct xt_cfg cfg = xt_cfg_default();
	char *first[NFULL], small[SMALL];
	bool done[NFULL] = { false };
	struct xt_child child;
	struct xt_comp c;
	struct xt_ep x;

	xt_spawn(&child, cancelling_sender, (void *)(intptr_t)_i);
	xt_open(&x, &cfg);
	xt_exchange(&x, child.sock);
	xt_signal(child.sock, 1);
	/* Not progressing meanwhile (FULL needs that; FENCE does not mind). */
	XT_ASSERT(xt_wait(child.sock) == 1, "the child's signal");
	for (int i = 0; i < nfirst; i++) {
		first[i] = xt_alloc(flen);
		xt_post_recv(&x, cc.tagged, first[i], flen, FI_ADDR_UNSPEC, TAG_BIG, 0, first[i]);
	}
	xt_post_recv(&x, cc.tagged, small, SMALL, FI_ADDR_UNSPEC, TAG, 0, small);
	for (int n = 0; n < nfirst; n++) {
		int i = 0;

		xt_wait_rx(&x, &c);
		while (i < nfirst && c.e.op_context != first[i])
			i++;
		XT_ASSERT(i < nfirst && !done[i], "receive %d: context %p (the small receive is %p)",
			  n, c.e.op_context, (void *)small);
		XT_ASSERT(c.e.len == flen, "len %zu", c.e.len);
		XT_ASSERT_PATTERN(first[i], flen, 100 + (uint64_t)i, 0);
		done[i] = true;
	}
	xt_wait_rx(&x, &c);
	XT_ASSERT(c.e.op_context == small && c.e.len == SMALL,
		  "last receive: context %p len %zu", c.e.op_context, c.e.len);
	XT_ASSERT(xt_mismatch(small, SMALL, 31, 0) >= 0, "the cancelled send was delivered");
	XT_ASSERT_PATTERN(small, SMALL, 32, 0);
	XT_ASSERT(xt_wait_progress(child.sock, &x) == 2, "the child's signal");
	xt_expect_none(x.rx, x.tx, 50);
	xt_signal(child.sock, 3);
	xt_join(&child);
	xt_close(&x);
	for (int i = 0; i < nfirst; i++)
		free(first[i]);
}
END_TEST

static Suite *cancel_suite(void)
{
	Suite *s = suite_create("cancel");
	TCase *recv = tcase_create("receives");
	TCase *send = tcase_create("sends");

	tcase_set_timeout(recv, 30);
	tcase_add_loop_test(recv, cancel_of_a_posted_receive_gives_ecanceled_then_enoent, 0, 3);
	tcase_add_loop_test(recv, cancel_of_an_unknown_context_gives_enoent, 0, 3);
	tcase_add_loop_test(recv, cancel_of_a_completed_receive_gives_enoent, 0, 2);
	tcase_add_loop_test(recv, message_after_a_cancelled_receive_goes_to_the_next_matching_one,
			    0, 4);
	tcase_add_test(recv, cancel_of_a_partly_used_multi_recv_buffer);
	suite_add_tcase(s, recv);

	tcase_set_timeout(send, 30);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(send, cancel_of_a_queued_send_gives_ecanceled_and_it_is_never_sent,
				    0, 4);
	suite_add_tcase(s, send);
	return s;
}

int main(void)
{
	/* Queued sends need a full pool: every large send bounces, none probes the single copy. */
	setenv("FI_XSHM_PATH", "static", 1);
	return xt_run_suite(cancel_suite());
}
