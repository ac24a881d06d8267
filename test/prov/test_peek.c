/*
 * FI_PEEK, FI_CLAIM and FI_DISCARD on fi_trecvmsg and fi_recvmsg, for an
 * unexpected message of each protocol size: inline (XSHM_INLINE_MAX), one
 * bounce buffer (XSHM_BUF_SIZE) and chunked (1 MiB, peeked while its chunks
 * may still be arriving).
 *
 * The test process receives (with FI_SOURCE); two burst children A and B
 * send.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/layout.h"

#define TAG	0x7e00000000000007ULL
#define DATA	0x00da7a00000000a1ULL
#define MiB	(1024 * 1024)
#define WAIT_MS	8000
#define PEEK_MS	2000

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static const size_t sizes[] = { XSHM_INLINE_MAX, XSHM_BUF_SIZE, MiB };

struct trio {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child a, b;
	fi_addr_t fa, fb;
	bool tagged, two;
	size_t len;
};

/* Loop index: sizes first, then tagged (< N(sizes)) or untagged.  B only if two. */
static void trio_start_n(struct trio *t, int i, int senders)
{
	t->tagged = i < N(sizes);
	t->len = sizes[i % N(sizes)];
	t->cfg = xt_cfg_default();
	t->cfg.caps |= FI_SOURCE;
	xt_spawn(&t->a, xt_burst_child, NULL);
	t->two = senders == 2;
	if (t->two)
		xt_spawn(&t->b, xt_burst_child, NULL);
	xt_open(&t->x, &t->cfg);
	t->fa = xt_connect_sender(&t->x, &t->a, true);
	if (t->two)
		t->fb = xt_connect_sender(&t->x, &t->b, true);
}

static void trio_start(struct trio *t, int i)
{
	trio_start_n(t, i, 2);
}

static void trio_stop(struct trio *t)
{
	xt_burst_quit(&t->x, &t->a);
	if (t->two)
		xt_burst_quit(&t->x, &t->b);
	xt_close(&t->x);
}

/* Has c send one message of t->len bytes with cq data; returns at once. */
static void send_one(struct trio *t, struct xt_child *c, uint64_t seed, uint64_t tag)
{
	struct xt_burst_msg m = {
		.tagged = t->tagged, .len = t->len, .seed = seed, .tag = tag,
		.data = DATA + seed, .flags = FI_COMPLETION | FI_REMOTE_CQ_DATA,
	};

	xt_burst_post(&t->x, c, &m, 1, WAIT_MS);
}

static void expect_sent(struct trio *t, struct xt_child *c, const char *who)
{
	struct xt_burst_result res;

	xt_burst_results(&t->x, c, &res, 1);
	XT_ASSERT(res.completed, "%s: no send completion", who);
	XT_ASSERT(!res.is_err, "%s: send error %d (%s)", who, res.err,
		  fi_strerror(abs(res.err)));
}

/* fi_trecvmsg / fi_recvmsg with flags, no retry. */
static ssize_t try_recvmsg(struct trio *t, bool tagged, void *buf, size_t len,
			   uint64_t tag, uint64_t flags, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged tmsg = {
		.msg_iov = buf ? &iov : NULL, .iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = tag, .context = ctx,
	};
	struct fi_msg msg = {
		.msg_iov = buf ? &iov : NULL, .iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .context = ctx,
	};

	return tagged ? fi_trecvmsg(t->x.ep, &tmsg, flags) : fi_recvmsg(t->x.ep, &msg, flags);
}

static void post_recvmsg(struct trio *t, bool tagged, void *buf, size_t len, uint64_t tag,
			 uint64_t flags, void *ctx)
{
	XT_POST(&t->x, try_recvmsg(t, tagged, buf, len, tag, flags, ctx));
}

static const char *flags_name(uint64_t flags)
{
	switch (flags) {
	case FI_PEEK: return "FI_PEEK";
	case FI_PEEK | FI_CLAIM: return "FI_PEEK|FI_CLAIM";
	case FI_PEEK | FI_DISCARD: return "FI_PEEK|FI_DISCARD";
	default: return "?";
	}
}

/* One peek; returns its completion, asserting ENOMSG when it is an error. */
static struct xt_comp peek_once(struct trio *t, bool tagged, uint64_t tag, uint64_t flags,
				void *ctx)
{
	struct xt_comp c;

	post_recvmsg(t, tagged, NULL, 0, tag, flags, ctx);
	xt_expect_comp_ms(t->x.rx, t->x.tx, PEEK_MS, &c);
	return c;
}

/* Asserts the peek finds nothing: an FI_ENOMSG error with the context. */
static void expect_no_message(struct trio *t, bool tagged, uint64_t tag, const char *why)
{
	struct fi_context ctx;
	struct xt_comp c;

	post_recvmsg(t, tagged, NULL, 0, tag, FI_PEEK, &ctx);
	if (xt_poll(t->x.rx, t->x.tx, PEEK_MS, &c) != 0)
		XT_ASSERT(false, "%s: the peek got no completion within %d ms", why, PEEK_MS);
	XT_ASSERT(c.is_err, "%s: the peek found a message (len %zu, tag 0x%llx)", why, c.e.len,
		  (unsigned long long)c.e.tag);
	XT_ASSERT(c.err.err == FI_ENOMSG, "%s: peek error %d (%s), expected FI_ENOMSG", why,
		  c.err.err, fi_strerror(abs(c.err.err)));
	XT_ASSERT(c.err.op_context == &ctx, "%s: peek error context %p, expected %p", why,
		  c.err.op_context, (void *)&ctx);
}

/*
 * Peeks until the message is found (it may not have arrived yet).  With
 * settle, the empty CQ is also read for a moment between peeks, so that
 * the test does not depend on a peek or a non-empty CQ driving progress
 * (peek_polling_loop_finds_a_message_arriving_meanwhile tests that).
 */
static struct xt_comp peek_until(struct trio *t, uint64_t flags, void *ctx, bool settle)
{
	uint64_t end = xt_now_ms() + PEEK_MS;
	struct xt_comp c;

	for (;;) {
		if (settle)
			xt_expect_none(t->x.rx, t->x.tx, 2);
		post_recvmsg(t, t->tagged, NULL, 0, TAG, flags, ctx);
		if (xt_poll(t->x.rx, t->x.tx, PEEK_MS, &c) != 0)
			XT_ASSERT(false, "%s: no completion within %d ms", flags_name(flags),
				  PEEK_MS);
		if (!c.is_err)
			break;
		XT_ASSERT(c.err.err == FI_ENOMSG, "%s: error %d (%s)", flags_name(flags),
			  c.err.err, fi_strerror(abs(c.err.err)));
		XT_ASSERT(c.err.op_context == ctx, "%s: error context %p", flags_name(flags),
			  c.err.op_context);
		XT_ASSERT(xt_now_ms() < end, "%s found no message within %d ms",
			  flags_name(flags), PEEK_MS);
	}
	return c;
}

static struct xt_comp peek_found(struct trio *t, uint64_t flags, void *ctx)
{
	return peek_until(t, flags, ctx, true);
}

/* The metadata a successful peek reports. */
static void check_peeked(struct trio *t, const struct xt_comp *c, void *ctx, uint64_t seed,
			 uint64_t flags)
{
	const char *f = flags_name(flags);

	XT_ASSERT(c->e.op_context == ctx, "%s: context %p, expected %p", f, c->e.op_context,
		  ctx);
	XT_ASSERT(c->e.len == t->len, "%s: len %zu, the message has %zu", f, c->e.len, t->len);
	XT_ASSERT(c->e.flags & FI_RECV, "%s: flags 0x%llx", f, (unsigned long long)c->e.flags);
	XT_ASSERT(c->e.flags & (t->tagged ? FI_TAGGED : FI_MSG), "%s: flags 0x%llx", f,
		  (unsigned long long)c->e.flags);
	XT_ASSERT(!t->tagged || c->e.tag == TAG, "%s: tag 0x%llx", f,
		  (unsigned long long)c->e.tag);
	XT_ASSERT(c->e.flags & FI_REMOTE_CQ_DATA, "%s: flags 0x%llx without FI_REMOTE_CQ_DATA",
		  f, (unsigned long long)c->e.flags);
	XT_ASSERT(c->e.data == DATA + seed, "%s: data 0x%llx", f,
		  (unsigned long long)c->e.data);
	XT_ASSERT(c->e.buf == NULL, "%s without a buffer: buf %p", f, c->e.buf);
	XT_ASSERT(c->src == t->fa, "%s: source %llu, the sender is %llu", f,
		  (unsigned long long)c->src, (unsigned long long)t->fa);
}

/* A completion that delivered message seed from src into buf. */
static void check_received(struct trio *t, const struct xt_comp *c, void *ctx,
			   const void *buf, uint64_t seed, fi_addr_t src)
{
	XT_ASSERT(c->e.op_context == ctx, "receive context %p, expected %p", c->e.op_context,
		  ctx);
	XT_ASSERT(c->e.len == t->len, "receive len %zu, sent %zu", c->e.len, t->len);
	XT_ASSERT((c->e.flags & (FI_RECV | FI_TAGGED | FI_MSG)) ==
		  (FI_RECV | (t->tagged ? FI_TAGGED : FI_MSG)), "receive flags 0x%llx",
		  (unsigned long long)c->e.flags);
	XT_ASSERT(!t->tagged || c->e.tag == TAG, "receive tag 0x%llx",
		  (unsigned long long)c->e.tag);
	XT_ASSERT(c->e.data == DATA + seed, "receive data 0x%llx: message %llu has 0x%llx",
		  (unsigned long long)c->e.data, (unsigned long long)seed,
		  (unsigned long long)(DATA + seed));
	XT_ASSERT(c->src == src, "receive source %llu, expected %llu",
		  (unsigned long long)c->src, (unsigned long long)src);
	XT_ASSERT_PATTERN(buf, t->len, seed, 0);
}

/* ---- FI_PEEK ---- */

START_TEST(peek_reports_the_message_and_leaves_it_queued)
{
	struct fi_context p1, p2;
	struct trio t;
	struct xt_comp c;
	char *buf, rctx;

	trio_start_n(&t, _i, 1);
	buf = xt_alloc(t.len);
	send_one(&t, &t.a, 1, TAG);
	c = peek_found(&t, FI_PEEK, &p1);
	check_peeked(&t, &c, &p1, 1, FI_PEEK);
	c = peek_once(&t, t.tagged, TAG, FI_PEEK, &p2);
	XT_ASSERT(!c.is_err, "a second peek did not find the message again: error %d (%s)",
		  c.err.err, fi_strerror(abs(c.err.err)));
	check_peeked(&t, &c, &p2, 1, FI_PEEK);
	post_recvmsg(&t, t.tagged, buf, t.len, TAG, FI_COMPLETION, &rctx);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &rctx, buf, 1, t.fa);
	expect_no_message(&t, t.tagged, TAG, "after the message was received");
	expect_sent(&t, &t.a, "A");
	trio_stop(&t);
	free(buf);
}
END_TEST

/*
 * A child that sends one message (loop index _i as for the trio) 100 ms
 * after the parent's go, so that it arrives while the parent is already
 * polling with peeks.
 */
static void late_sender(int sock, void *arg)
{
	int i = (int)(intptr_t)arg;
	bool tagged = i < N(sizes);
	size_t len = sizes[i % N(sizes)];
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(len), ctx;
	struct xt_comp c;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	xt_fill(buf, len, 9, 0);
	xt_wait(sock);
	usleep(100000);
	if (tagged)
		XT_POST(&x, fi_tsenddata(x.ep, buf, len, NULL, DATA + 9, dst, TAG, &ctx));
	else
		XT_POST(&x, fi_senddata(x.ep, buf, len, NULL, DATA + 9, dst, &ctx));
	xt_wait_tx(&x, &c);
	xt_signal(sock, 1);
	xt_wait(sock);
	xt_close(&x);
	free(buf);
}

/*
 * An application polling with FI_PEEK (an MPI_Iprobe loop): post a peek,
 * read its result, repeat.  Each peek that finds nothing leaves an entry,
 * so the CQ read that returns it (or the peek itself) must still drive
 * progress, or a message arriving during the loop is never seen.
 */
START_TEST(peek_polling_loop_finds_a_message_arriving_meanwhile)
{
	struct fi_context p;
	struct xt_child child;
	struct trio t = { 0 };
	struct xt_comp c;
	char *buf, rctx;

	t.tagged = _i < N(sizes);
	t.len = sizes[_i % N(sizes)];
	t.cfg = xt_cfg_default();
	t.cfg.caps |= FI_SOURCE;
	xt_spawn(&child, late_sender, (void *)(intptr_t)_i);
	xt_open(&t.x, &t.cfg);
	t.fa = xt_exchange(&t.x, child.sock);
	buf = xt_alloc(t.len);
	xt_signal(child.sock, 1);
	c = peek_until(&t, FI_PEEK, &p, false);
	check_peeked(&t, &c, &p, 9, FI_PEEK);
	post_recvmsg(&t, t.tagged, buf, t.len, TAG, FI_COMPLETION, &rctx);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &rctx, buf, 9, t.fa);
	xt_wait_progress(child.sock, &t.x);
	xt_signal(child.sock, 2);
	xt_join(&child);
	xt_close(&t.x);
	free(buf);
}
END_TEST

/* Loop: tagged, untagged (an inline message; the size does not matter here). */
START_TEST(peek_without_a_matching_message_gives_enomsg)
{
	struct trio t;
	struct xt_comp c;
	char *buf, rctx;

	trio_start_n(&t, _i * N(sizes), 1);
	buf = xt_alloc(t.len);
	expect_no_message(&t, t.tagged, TAG, "nothing sent");
	send_one(&t, &t.a, 2, TAG);
	{
		struct fi_context p;

		c = peek_found(&t, FI_PEEK, &p);	/* the message has arrived */
		check_peeked(&t, &c, &p, 2, FI_PEEK);
	}
	if (t.tagged)
		expect_no_message(&t, true, TAG ^ 0x100, "a tagged message of another tag");
	expect_no_message(&t, !t.tagged, TAG, t.tagged ? "only a tagged message, peek untagged"
			  : "only an untagged message, peek tagged");
	post_recvmsg(&t, t.tagged, buf, t.len, TAG, FI_COMPLETION, &rctx);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &rctx, buf, 2, t.fa);
	expect_sent(&t, &t.a, "A");
	trio_stop(&t);
	free(buf);
}
END_TEST

/* With FI_DIRECTED_RECV a peek naming a source sees only that sender's messages. */
START_TEST(directed_peek_sees_only_the_named_senders_message)
{
	struct fi_context p;
	struct trio t;
	struct xt_comp c;
	struct iovec none = { 0 };
	char *buf, rctx;

	t.cfg = xt_cfg_default();
	t.cfg.caps |= FI_SOURCE | FI_DIRECTED_RECV;
	t.tagged = _i == 0;
	t.len = 100;
	t.two = true;
	xt_spawn(&t.a, xt_burst_child, NULL);
	xt_spawn(&t.b, xt_burst_child, NULL);
	xt_open(&t.x, &t.cfg);
	t.fa = xt_connect_sender(&t.x, &t.a, true);
	t.fb = xt_connect_sender(&t.x, &t.b, true);
	buf = xt_alloc(t.len);
	send_one(&t, &t.a, 13, TAG);
	c = peek_found(&t, FI_PEEK, &p);	/* A's message is there */
	check_peeked(&t, &c, &p, 13, FI_PEEK);
	{
		struct fi_msg_tagged tmsg = { .msg_iov = &none, .iov_count = 0, .addr = t.fb,
					      .tag = TAG, .context = &p };
		struct fi_msg msg = { .msg_iov = &none, .iov_count = 0, .addr = t.fb,
				      .context = &p };

		XT_POST(&t.x, t.tagged ? fi_trecvmsg(t.x.ep, &tmsg, FI_PEEK) :
					  fi_recvmsg(t.x.ep, &msg, FI_PEEK));
		xt_expect_err_ms(t.x.rx, t.x.tx, PEEK_MS, &c);
		XT_ASSERT(c.err.err == FI_ENOMSG, "peek naming B with only A's message queued: "
			  "err %d (%s)", c.err.err, fi_strerror(abs(c.err.err)));
	}
	post_recvmsg(&t, t.tagged, buf, t.len, TAG, FI_COMPLETION, &rctx);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &rctx, buf, 13, t.fa);
	expect_sent(&t, &t.a, "A");
	trio_stop(&t);
	free(buf);
}
END_TEST

/* ---- FI_PEEK | FI_CLAIM, then FI_CLAIM ---- */

START_TEST(peek_claim_reserves_the_message_for_the_claiming_receive)
{
	struct fi_context fctx;
	struct trio t;
	struct xt_comp c;
	char *claimed, *other, octx;

	trio_start(&t, _i);
	claimed = xt_alloc(t.len);
	other = xt_alloc(t.len);
	send_one(&t, &t.a, 3, TAG);
	c = peek_found(&t, FI_PEEK | FI_CLAIM, &fctx);
	check_peeked(&t, &c, &fctx, 3, FI_PEEK | FI_CLAIM);
	/* An ordinary receive no longer matches the claimed message. */
	post_recvmsg(&t, t.tagged, other, t.len, TAG, FI_COMPLETION, &octx);
	xt_expect_none(t.x.rx, t.x.tx, 100);
	expect_no_message(&t, t.tagged, TAG, "the only message is claimed");
	send_one(&t, &t.b, 4, TAG);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &octx, other, 4, t.fb);
	/* The claim retrieves every byte, even of a message still arriving at the peek. */
	post_recvmsg(&t, t.tagged, claimed, t.len, TAG, FI_CLAIM, &fctx);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &fctx, claimed, 3, t.fa);
	expect_no_message(&t, t.tagged, TAG, "after the claim");
	expect_sent(&t, &t.a, "A");
	expect_sent(&t, &t.b, "B");
	trio_stop(&t);
	free(claimed);
	free(other);
}
END_TEST

/* ---- FI_DISCARD ---- */

/* After a discard, messages from the same and another sender flow intact. */
static void check_flow_continues(struct trio *t)
{
	char *buf[2], ctx[2];
	struct xt_comp c;

	for (int i = 0; i < 2; i++) {
		buf[i] = xt_alloc(t->len);
		post_recvmsg(t, t->tagged, buf[i], t->len, TAG, FI_COMPLETION, &ctx[i]);
	}
	xt_expect_none(t->x.rx, t->x.tx, 100);
	send_one(t, &t->a, 11, TAG);
	xt_wait_rx(&t->x, &c);
	check_received(t, &c, &ctx[0], buf[0], 11, t->fa);
	expect_sent(t, &t->a, "A, after the discard");
	send_one(t, &t->b, 12, TAG);
	xt_wait_rx(&t->x, &c);
	check_received(t, &c, &ctx[1], buf[1], 12, t->fb);
	expect_sent(t, &t->b, "B, after the discard");
	for (int i = 0; i < 2; i++)
		free(buf[i]);
}

START_TEST(peek_discard_reports_and_drops_the_message)
{
	struct fi_context fctx;
	struct trio t;
	struct xt_comp c;

	trio_start(&t, _i);
	send_one(&t, &t.a, 5, TAG);
	c = peek_found(&t, FI_PEEK | FI_DISCARD, &fctx);
	check_peeked(&t, &c, &fctx, 5, FI_PEEK | FI_DISCARD);
	expect_sent(&t, &t.a, "A, discarded");
	expect_no_message(&t, t.tagged, TAG, "after FI_PEEK|FI_DISCARD");
	check_flow_continues(&t);
	trio_stop(&t);
}
END_TEST

START_TEST(claim_discard_drops_the_claimed_message_with_len_0)
{
	struct fi_context fctx;
	struct trio t;
	struct xt_comp c;

	trio_start(&t, _i);
	send_one(&t, &t.a, 6, TAG);
	c = peek_found(&t, FI_PEEK | FI_CLAIM, &fctx);
	check_peeked(&t, &c, &fctx, 6, FI_PEEK | FI_CLAIM);
	post_recvmsg(&t, t.tagged, NULL, 0, TAG, FI_CLAIM | FI_DISCARD, &fctx);
	xt_wait_rx(&t.x, &c);
	XT_ASSERT(c.e.op_context == &fctx, "FI_CLAIM|FI_DISCARD context %p", c.e.op_context);
	XT_ASSERT(c.e.len == 0, "FI_CLAIM|FI_DISCARD completion len %zu, expected 0", c.e.len);
	expect_sent(&t, &t.a, "A, discarded");
	expect_no_message(&t, t.tagged, TAG, "after FI_CLAIM|FI_DISCARD");
	check_flow_continues(&t);
	trio_stop(&t);
}
END_TEST

/* ---- FI_CLAIM with a context that holds no claim ---- */

static void expect_claim_refused(struct trio *t, struct fi_context *ctx, uint64_t flags,
				 const char *why)
{
	char buf[64];
	ssize_t rc = try_recvmsg(t, t->tagged, flags & FI_DISCARD ? NULL : buf,
				 flags & FI_DISCARD ? 0 : sizeof(buf), TAG, flags, ctx);

	XT_ASSERT(rc == -FI_EINVAL, "%s with %s: returned %zd (%s), expected -FI_EINVAL",
		  flags & FI_DISCARD ? "FI_CLAIM|FI_DISCARD" : "FI_CLAIM", why, rc,
		  xt_strerror(rc));
}

/* Loop: tagged, untagged. */
START_TEST(claim_without_a_claimed_message_gives_einval)
{
	struct fi_context fresh, used, dropped;
	struct trio t;
	struct xt_comp c;
	char *buf;

	trio_start(&t, _i * N(sizes) + 1);	/* tagged or not, one bounce buffer */
	buf = xt_alloc(t.len);
	memset(&fresh, 0, sizeof(fresh));
	expect_claim_refused(&t, &fresh, FI_CLAIM, "a context never used by a peek");
	expect_claim_refused(&t, &fresh, FI_CLAIM | FI_DISCARD, "a context never used by a peek");
	send_one(&t, &t.a, 7, TAG);
	expect_claim_refused(&t, &fresh, FI_CLAIM, "a context never used, a message queued");
	/* A claim consumed by its receive... */
	c = peek_found(&t, FI_PEEK | FI_CLAIM, &used);
	check_peeked(&t, &c, &used, 7, FI_PEEK | FI_CLAIM);
	post_recvmsg(&t, t.tagged, buf, t.len, TAG, FI_CLAIM, &used);
	xt_wait_rx(&t.x, &c);
	check_received(&t, &c, &used, buf, 7, t.fa);
	expect_sent(&t, &t.a, "A");
	expect_claim_refused(&t, &used, FI_CLAIM, "a context whose claim was received");
	/* ... or by its discard. */
	send_one(&t, &t.a, 8, TAG);
	c = peek_found(&t, FI_PEEK | FI_CLAIM, &dropped);
	check_peeked(&t, &c, &dropped, 8, FI_PEEK | FI_CLAIM);
	post_recvmsg(&t, t.tagged, NULL, 0, TAG, FI_CLAIM | FI_DISCARD, &dropped);
	xt_wait_rx(&t.x, &c);
	XT_ASSERT(c.e.op_context == &dropped, "FI_CLAIM|FI_DISCARD context %p", c.e.op_context);
	expect_sent(&t, &t.a, "A");
	expect_claim_refused(&t, &dropped, FI_CLAIM, "a context whose claim was discarded");
	expect_claim_refused(&t, &dropped, FI_CLAIM | FI_DISCARD,
			     "a context whose claim was discarded");
	/* The refused calls left no entry and the endpoint works. */
	xt_expect_none(t.x.rx, t.x.tx, 50);
	check_flow_continues(&t);
	trio_stop(&t);
	free(buf);
}
END_TEST

static Suite *peek_suite(void)
{
	Suite *s = suite_create("peek");
	TCase *peek = tcase_create("peek");
	TCase *claim = tcase_create("claim");
	TCase *discard = tcase_create("discard");

	tcase_set_timeout(peek, 30);
	tcase_add_loop_test(peek, peek_reports_the_message_and_leaves_it_queued, 0,
			    2 * N(sizes));
	tcase_add_loop_test(peek, peek_without_a_matching_message_gives_enomsg, 0, 2);
	tcase_add_loop_test(peek, directed_peek_sees_only_the_named_senders_message, 0, 2);
	tcase_add_loop_test(peek, peek_polling_loop_finds_a_message_arriving_meanwhile, 0, 2 * N(sizes));
	suite_add_tcase(s, peek);

	tcase_set_timeout(claim, 30);
	tcase_add_loop_test(claim, peek_claim_reserves_the_message_for_the_claiming_receive, 0,
			    2 * N(sizes));
	tcase_add_loop_test(claim, claim_without_a_claimed_message_gives_einval, 0, 2);
	suite_add_tcase(s, claim);

	tcase_set_timeout(discard, 30);
	tcase_add_loop_test(discard, peek_discard_reports_and_drops_the_message, 0,
			    2 * N(sizes));
	tcase_add_loop_test(discard, claim_discard_drops_the_claimed_message_with_len_0, 0,
			    2 * N(sizes));
	suite_add_tcase(s, discard);
	return s;
}

int main(void)
{
	return xt_run_suite(peek_suite());
}
