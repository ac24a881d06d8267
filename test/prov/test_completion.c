/*
 * Completion semantics of fi_tsendmsg / fi_sendmsg flags: FI_INJECT,
 * FI_INJECT_COMPLETE, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE,
 * FI_MATCH_COMPLETE, FI_FENCE, FI_MORE, FI_COMPLETION under
 * FI_SELECTIVE_COMPLETION, FI_REMOTE_CQ_DATA; the op_flags fi_getinfo
 * accepts and declines.
 *
 * The test process receives; a burst child (harness) sends.  Completion
 * times are compared across the two processes with CLOCK_MONOTONIC, which
 * is one clock for the whole machine.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define TAG	0x6300000000000001ULL
#define DATA	0x0badc0ffee000001ULL
#define MiB	(1024 * 1024)
#define QUIET_MS	300	/* the receiver progresses, nothing may complete */
#define WAIT_MS		8000	/* the child's wait for its send completions */

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct pair {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child c;
	fi_addr_t peer;
};

/* child_cfg: the sender's configuration, NULL for the default. */
static void pair_start(struct pair *p, const struct xt_cfg *child_cfg)
{
	if (!p->cfg.api)
		p->cfg = xt_cfg_default();
	xt_spawn(&p->c, xt_burst_child, (void *)child_cfg);
	xt_open(&p->x, &p->cfg);
	p->peer = xt_connect_sender(&p->x, &p->c, true);
}

static void pair_stop(struct pair *p)
{
	xt_burst_quit(&p->x, &p->c);
	xt_close(&p->x);
}

static struct xt_burst_msg bmsg(bool tagged, size_t len, uint64_t seed, uint64_t tag,
				uint64_t flags)
{
	return (struct xt_burst_msg){ .tagged = tagged, .len = len, .seed = seed,
				      .tag = tag, .data = DATA, .flags = flags };
}

static void post_recv(struct pair *p, bool tagged, void *buf, size_t len, uint64_t tag,
		      void *ctx)
{
	xt_post_recv(&p->x, tagged, buf, len, FI_ADDR_UNSPEC, tag, 0, ctx);
}

/* Waits for a receive completion carrying the message into buf. */
static struct xt_comp expect_msg(struct pair *p, bool tagged, const void *buf, size_t len,
				 uint64_t seed, void *ctx)
{
	struct xt_comp c;

	xt_wait_rx(&p->x, &c);
	XT_ASSERT(c.e.op_context == ctx, "receive completion context %p, expected %p",
		  c.e.op_context, ctx);
	XT_ASSERT(c.e.len == len, "len %zu, sent %zu", c.e.len, len);
	XT_ASSERT((c.e.flags & (FI_RECV | FI_TAGGED | FI_MSG)) ==
		  (FI_RECV | (tagged ? FI_TAGGED : FI_MSG)), "recv flags 0x%llx",
		  (unsigned long long)c.e.flags);
	XT_ASSERT_PATTERN(buf, len, seed, 0);
	return c;
}

static void assert_send_ok(const struct xt_burst_result *res, bool tagged, const char *what)
{
	XT_ASSERT(res->completed, "%s: no send completion within %d ms", what, WAIT_MS);
	XT_ASSERT(!res->is_err, "%s: send error %d (%s)", what, res->err,
		  fi_strerror(abs(res->err)));
	XT_ASSERT((res->flags & (FI_SEND | FI_TAGGED | FI_MSG)) ==
		  (FI_SEND | (tagged ? FI_TAGGED : FI_MSG)), "%s: send flags 0x%llx", what,
		  (unsigned long long)res->flags);
}

/* ---- FI_INJECT ---- */

static const size_t inject_sizes[] = { 1, XSHM_INLINE_MAX, XSHM_INLINE_MAX + 1, 4096 };

/*
 * The child overwrites each buffer as soon as fi_tsendmsg returns, before
 * the receiver has posted a receive: the messages must still carry the
 * original data, and unlike fi_tinject each send still gets a completion.
 */
START_TEST(inject_flag_copies_data_at_the_call_and_still_completes)
{
	enum { NI = N(inject_sizes) };
	bool tagged = _i == 0;
	struct xt_burst_msg m[NI];
	struct xt_burst_result res[NI];
	struct pair p = { 0 };
	char *buf[NI];

	pair_start(&p, NULL);
	for (int i = 0; i < NI; i++) {
		XT_ASSERT(inject_sizes[i] <= p.x.info->tx_attr->inject_size, "inject_size %zu",
			  p.x.info->tx_attr->inject_size);
		m[i] = bmsg(tagged, inject_sizes[i], 10 + (uint64_t)i, TAG,
			    FI_INJECT | FI_COMPLETION);
		buf[i] = xt_alloc(inject_sizes[i]);
	}
	xt_burst_post(&p.x, &p.c, m, NI, WAIT_MS);
	xt_burst_results(&p.x, &p.c, res, NI);
	for (int i = 0; i < NI; i++)
		assert_send_ok(&res[i], tagged, "FI_INJECT send");
	for (int i = 0; i < NI; i++) {
		post_recv(&p, tagged, buf[i], inject_sizes[i], TAG, buf[i]);
		expect_msg(&p, tagged, buf[i], inject_sizes[i], m[i].seed, buf[i]);
		free(buf[i]);
	}
	pair_stop(&p);
}
END_TEST

/* ---- every completion flag is accepted and the message is delivered ---- */

static const struct {
	const char *name;
	uint64_t flags;
} send_flags[] = {
	{ "none", 0 },
	{ "FI_INJECT_COMPLETE", FI_INJECT_COMPLETE },
	{ "FI_TRANSMIT_COMPLETE", FI_TRANSMIT_COMPLETE },
	{ "FI_DELIVERY_COMPLETE", FI_DELIVERY_COMPLETE },
	{ "FI_MATCH_COMPLETE", FI_MATCH_COMPLETE },
	{ "FI_FENCE", FI_FENCE },
	{ "FI_DELIVERY_COMPLETE|FI_FENCE", FI_DELIVERY_COMPLETE | FI_FENCE },
};

/* one cell, a run of cells, one bounce buffer, a message in pieces */
static const size_t proto_sizes[] = { 100, XSHM_CELLS_MSG_MAX, XSHM_BUF_SIZE, MiB };

START_TEST(send_flag_is_accepted_and_completes_once_received)
{
	enum { NS = N(proto_sizes) };
	int f = _i % N(send_flags);
	bool tagged = _i < N(send_flags);
	struct xt_burst_msg m[NS];
	struct xt_burst_result res[NS];
	struct pair p = { 0 };
	char *buf[NS];
	char what[96];

	pair_start(&p, NULL);
	for (int i = 0; i < NS; i++) {
		m[i] = bmsg(tagged, proto_sizes[i], 20 + (uint64_t)i, TAG,
			    FI_COMPLETION | send_flags[f].flags);
		buf[i] = xt_alloc(proto_sizes[i]);
		post_recv(&p, tagged, buf[i], proto_sizes[i], TAG, buf[i]);
	}
	xt_burst_post(&p.x, &p.c, m, NS, WAIT_MS);
	for (int i = 0; i < NS; i++)
		expect_msg(&p, tagged, buf[i], proto_sizes[i], m[i].seed, buf[i]);
	xt_burst_results(&p.x, &p.c, res, NS);
	for (int i = 0; i < NS; i++) {
		snprintf(what, sizeof(what), "%s send of %zu bytes with %s",
			 tagged ? "tagged" : "untagged", proto_sizes[i], send_flags[f].name);
		assert_send_ok(&res[i], tagged, what);
		free(buf[i]);
	}
	pair_stop(&p);
}
END_TEST

/* FI_MORE on all but the last send of a batch changes nothing in the results. */
START_TEST(more_flag_batch_is_delivered_in_order_and_completes)
{
	static const size_t lens[] = { 10, 300, 5000, XSHM_BUF_SIZE + 1, 64 };
	enum { NM = (int)(sizeof(lens) / sizeof(lens[0])) };
	struct xt_burst_msg m[NM];
	struct xt_burst_result res[NM];
	struct pair p = { 0 };
	char *buf[NM];

	pair_start(&p, NULL);
	for (int i = 0; i < NM; i++) {
		m[i] = bmsg(true, lens[i], 30 + (uint64_t)i, TAG,
			    FI_COMPLETION | (i < NM - 1 ? FI_MORE : 0));
		buf[i] = xt_alloc(lens[i]);
		post_recv(&p, true, buf[i], lens[i], TAG, buf[i]);
	}
	xt_burst_post(&p.x, &p.c, m, NM, WAIT_MS);
	for (int i = 0; i < NM; i++) {
		struct xt_comp c;

		xt_wait_rx(&p.x, &c);
		for (int k = 0; k < NM; k++)
			if (c.e.op_context == buf[k])
				XT_ASSERT_PATTERN(buf[k], lens[k], m[k].seed, 0);
	}
	xt_burst_results(&p.x, &p.c, res, NM);
	for (int i = 0; i < NM; i++)
		assert_send_ok(&res[i], true, "FI_MORE batch");
	pair_stop(&p);
	for (int i = 0; i < NM; i++)
		free(buf[i]);
}
END_TEST

/* ---- FI_DELIVERY_COMPLETE and FI_MATCH_COMPLETE wait for the receiver ---- */

static const size_t wait_sizes[] = { 100, XSHM_BUF_SIZE, MiB };
static const uint64_t wait_flags[] = { FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE };

/* Progresses x for ms, keeping what completes for later. */
static void progress_for(struct xt_ep *x, int ms)
{
	uint64_t end = xt_now_ms() + (uint64_t)ms;

	while (xt_now_ms() < end)
		xt_progress(x);
}

/* Waits for the receive of each message of a burst, in any order. */
static void expect_msgs(struct pair *p, const struct xt_burst_msg *m, char **buf, int n)
{
	for (int k = 0; k < n; k++) {
		struct xt_comp c;
		int i;

		xt_wait_rx(&p->x, &c);
		for (i = 0; i < n && c.e.op_context != buf[i]; i++)
			;
		XT_ASSERT(i < n, "receive completion with context %p", c.e.op_context);
		XT_ASSERT(c.e.len == m[i].len, "message %d: len %zu, sent %zu", i, c.e.len,
			  m[i].len);
		XT_ASSERT_PATTERN(buf[i], m[i].len, m[i].seed, 0);
	}
}

/*
 * The receiver progresses for QUIET_MS with nothing posted: the sends may
 * not complete.  They complete after the receives are posted.  (The sizes
 * use distinct tags, so that each receive is posted for its own message.)
 */
/*
 * Loop: FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE, then each with FI_INJECT
 * (sizes up to inject_size; the child overwrites the buffers at once, so
 * the data must have been copied even though the completion waits).
 */
static const uint64_t wait_loop_flags[] = {
	FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE,
	FI_INJECT | FI_DELIVERY_COMPLETE, FI_INJECT | FI_MATCH_COMPLETE,
};
static const size_t inject_wait_sizes[] = { 100, XSHM_INLINE_MAX + 1, 4096 };
_Static_assert(sizeof(inject_wait_sizes) == sizeof(wait_sizes), "one count of sizes");

START_TEST(delivery_and_match_complete_send_waits_for_the_receive)
{
	enum { NS = N(wait_sizes) };
	uint64_t flag = wait_loop_flags[_i];
	const size_t *sizes = flag & FI_INJECT ? inject_wait_sizes : wait_sizes;
	const char *name = flag & FI_MATCH_COMPLETE ?
			   (flag & FI_INJECT ? "FI_INJECT|FI_MATCH_COMPLETE" : "FI_MATCH_COMPLETE") :
			   (flag & FI_INJECT ? "FI_INJECT|FI_DELIVERY_COMPLETE" :
			    "FI_DELIVERY_COMPLETE");
	struct xt_burst_msg m[NS];
	struct xt_burst_result res[NS];
	struct pair p = { 0 };
	uint64_t posted_at[NS];
	char *buf[NS];

	pair_start(&p, NULL);
	for (int i = 0; i < NS; i++) {
		m[i] = bmsg(true, sizes[i], 40 + (uint64_t)i, TAG + (uint64_t)i,
			    FI_COMPLETION | flag);
		buf[i] = xt_alloc(sizes[i]);
	}
	xt_burst_post(&p.x, &p.c, m, NS, WAIT_MS);
	xt_expect_none(p.x.rx, p.x.tx, QUIET_MS);
	for (int i = NS - 1; i >= 0; i--) {
		posted_at[i] = xt_now_ms();
		post_recv(&p, true, buf[i], sizes[i], TAG + (uint64_t)i, buf[i]);
		progress_for(&p.x, 20);	/* its message may complete, the others not */
	}
	expect_msgs(&p, m, buf, NS);
	xt_burst_results(&p.x, &p.c, res, NS);
	for (int i = 0; i < NS; i++) {
		assert_send_ok(&res[i], true, name);
		XT_ASSERT(res[i].time_ms >= posted_at[i],
			  "the %zu-byte %s send completed %llu ms before its receive was posted",
			  sizes[i], name, (unsigned long long)(posted_at[i] - res[i].time_ms));
		free(buf[i]);
	}
	pair_stop(&p);
}
END_TEST

/* FI_INJECT is limited to inject_size, whatever the other flags. */
START_TEST(inject_flag_above_inject_size_gives_emsgsize)
{
	static const uint64_t extra[] = { 0, FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE };
	struct xt_cfg cfg = xt_cfg_default();
	fi_addr_t self;
	size_t len;
	struct xt_ep x;
	char *buf;

	xt_open(&x, &cfg);
	len = x.info->tx_attr->inject_size + 1;
	buf = xt_alloc(len);
	self = xt_av_insert(&x, x.name);
	for (int i = 0; i < 3; i++) {
		struct iovec iov = { .iov_base = buf, .iov_len = len };
		struct fi_msg_tagged tmsg = { .msg_iov = &iov, .iov_count = 1,
					      .addr = self, .tag = TAG };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = tmsg.addr };

		XT_ASSERT_RC(fi_tsendmsg(x.ep, &tmsg, FI_INJECT | FI_COMPLETION | extra[i]),
			     -FI_EMSGSIZE);
		XT_ASSERT_RC(fi_sendmsg(x.ep, &msg, FI_INJECT | FI_COMPLETION | extra[i]),
			     -FI_EMSGSIZE);
	}
	xt_expect_none(x.rx, x.tx, 50);
	xt_close(&x);
	free(buf);
}
END_TEST

/* FI_MATCH_COMPLETE also ends with a discard, and not with a plain peek. */
enum match_end { END_PEEK_THEN_RECV, END_PEEK_DISCARD, END_CLAIM_DISCARD };

static const char *const match_end_names[] = {
	"peek, then receive", "peek|discard", "peek|claim, claim|discard",
};

static void post_rx_msg(struct pair *p, void *buf, size_t len, uint64_t flags, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged msg = {
		.msg_iov = buf ? &iov : NULL, .iov_count = buf ? 1 : 0,
		.addr = FI_ADDR_UNSPEC, .tag = TAG, .context = ctx,
	};

	XT_POST(&p->x, fi_trecvmsg(p->x.ep, &msg, flags));
}

/* Peeks with flags until the message is there; ENOMSG results in between. */
static struct xt_comp peek_found(struct pair *p, uint64_t flags, void *ctx)
{
	uint64_t end = xt_now_ms() + 3000;
	struct xt_comp c;

	for (;;) {
		post_rx_msg(p, NULL, 0, FI_PEEK | flags, ctx);
		xt_expect_comp_ms(p->x.rx, p->x.tx, 3000, &c);
		if (!c.is_err)
			break;
		XT_ASSERT(c.err.err == FI_ENOMSG, "peek: error %d (%s)", c.err.err,
			  fi_strerror(abs(c.err.err)));
		XT_ASSERT(xt_now_ms() < end, "peek found no message in 3 s");
	}
	XT_ASSERT(c.e.op_context == ctx, "peek completion context %p", c.e.op_context);
	return c;
}

START_TEST(match_complete_send_completes_on_discard_not_on_peek)
{
	enum match_end how = (enum match_end)(_i / 2);
	size_t len = _i % 2 ? MiB : 100;
	struct xt_burst_msg m = bmsg(true, len, 50 + (uint64_t)_i, TAG,
				     FI_COMPLETION | FI_MATCH_COMPLETE);
	struct xt_burst_result res;
	struct fi_context fctx;
	struct pair p = { 0 };
	char *buf = xt_alloc(len);
	uint64_t ended_at;
	struct xt_comp c;

	pair_start(&p, NULL);
	xt_burst_post(&p.x, &p.c, &m, 1, WAIT_MS);
	xt_expect_none(p.x.rx, p.x.tx, QUIET_MS);
	switch (how) {
	case END_PEEK_THEN_RECV:
		c = peek_found(&p, 0, &fctx);
		XT_ASSERT(c.e.len == len, "peek len %zu", c.e.len);
		xt_expect_none(p.x.rx, p.x.tx, QUIET_MS);
		ended_at = xt_now_ms();
		post_recv(&p, true, buf, len, TAG, &fctx);
		expect_msg(&p, true, buf, len, m.seed, &fctx);
		break;
	case END_PEEK_DISCARD:
		ended_at = xt_now_ms();
		peek_found(&p, FI_DISCARD, &fctx);
		break;
	case END_CLAIM_DISCARD:
	default:
		ended_at = xt_now_ms();
		peek_found(&p, FI_CLAIM, &fctx);
		post_rx_msg(&p, NULL, 0, FI_CLAIM | FI_DISCARD, &fctx);
		xt_wait_rx(&p.x, &c);
		XT_ASSERT(c.e.op_context == &fctx, "claim|discard context %p", c.e.op_context);
		break;
	}
	xt_burst_results(&p.x, &p.c, &res, 1);
	assert_send_ok(&res, true, match_end_names[how]);
	XT_ASSERT(res.time_ms >= ended_at,
		  "%s: the %zu-byte FI_MATCH_COMPLETE send completed %llu ms too early",
		  match_end_names[how], len, (unsigned long long)(ended_at - res.time_ms));
	pair_stop(&p);
	free(buf);
}
END_TEST

/* An endpoint whose tx op_flags hold the flag applies it to fi_tsend. */
START_TEST(endpoint_op_flag_makes_tsend_wait_for_the_receive)
{
	static const size_t lens[] = { 100, MiB };
	uint64_t flag = wait_flags[_i];
	struct xt_cfg ccfg = xt_cfg_default();
	struct xt_burst_msg m[2];
	struct xt_burst_result res[2];
	struct pair p = { 0 };
	uint64_t posted_at[2];
	char *buf[2];

	ccfg.tx_op_flags = flag;
	pair_start(&p, &ccfg);
	for (int i = 0; i < 2; i++) {
		m[i] = bmsg(true, lens[i], 60 + (uint64_t)i, TAG + (uint64_t)i, 0);
		m[i].plain = true;
		buf[i] = xt_alloc(lens[i]);
	}
	xt_burst_post(&p.x, &p.c, m, 2, WAIT_MS);
	xt_expect_none(p.x.rx, p.x.tx, QUIET_MS);
	for (int i = 1; i >= 0; i--) {
		posted_at[i] = xt_now_ms();
		post_recv(&p, true, buf[i], lens[i], TAG + (uint64_t)i, buf[i]);
		progress_for(&p.x, 20);
	}
	expect_msgs(&p, m, buf, 2);
	xt_burst_results(&p.x, &p.c, res, 2);
	for (int i = 0; i < 2; i++) {
		assert_send_ok(&res[i], true, "fi_tsend");
		XT_ASSERT(res[i].time_ms >= posted_at[i],
			  "fi_tsend of %zu bytes on an endpoint with op_flags %s completed %llu ms "
			  "before its receive was posted", lens[i],
			  flag == FI_MATCH_COMPLETE ? "FI_MATCH_COMPLETE" : "FI_DELIVERY_COMPLETE",
			  (unsigned long long)(posted_at[i] - res[i].time_ms));
		free(buf[i]);
	}
	pair_stop(&p);
}
END_TEST

/* ---- FI_FENCE ---- */

/*
 * A is FI_MATCH_COMPLETE and has no receive; B is fenced: B may not even
 * reach the receiver (whose receive for it is posted) before A completed.
 */
START_TEST(fenced_send_waits_for_earlier_match_complete_send)
{
	size_t alen = _i ? MiB : 1000;
	struct xt_burst_msg m[2] = {
		bmsg(true, alen, 70, TAG, FI_COMPLETION | FI_MATCH_COMPLETE),
		bmsg(true, 100, 71, TAG + 1, FI_COMPLETION | FI_FENCE),
	};
	struct xt_burst_result res[2];
	struct pair p = { 0 };
	char *abuf = xt_alloc(alen), bbuf[100];
	struct xt_comp c;

	pair_start(&p, NULL);
	post_recv(&p, true, bbuf, sizeof(bbuf), TAG + 1, bbuf);
	xt_burst_post(&p.x, &p.c, m, 2, WAIT_MS);
	if (xt_poll(p.x.rx, p.x.tx, QUIET_MS, &c) == 0)
		XT_ASSERT(false, "the fenced send arrived (%s, context %p) while the earlier "
			  "FI_MATCH_COMPLETE send was still unmatched",
			  c.is_err ? "error" : "completion",
			  c.is_err ? c.err.op_context : c.e.op_context);
	post_recv(&p, true, abuf, alen, TAG, abuf);
	expect_msg(&p, true, abuf, alen, 70, abuf);
	expect_msg(&p, true, bbuf, sizeof(bbuf), 71, bbuf);
	xt_burst_results(&p.x, &p.c, res, 2);
	assert_send_ok(&res[0], true, "FI_MATCH_COMPLETE send");
	assert_send_ok(&res[1], true, "fenced send");
	XT_ASSERT(res[0].rank == 0 && res[1].rank == 1,
		  "the fenced send completed before the earlier one");
	pair_stop(&p);
	free(abuf);
}
END_TEST

/* Fenced sends arrive after every earlier send and complete after them. */
START_TEST(fenced_sends_arrive_and_complete_after_earlier_sends)
{
	static const struct {
		size_t len;
		bool fence;
	} seq[] = {
		{ MiB, false }, { 100, true }, { 20000, false }, { 3 * XSHM_BUF_SIZE, false },
		{ 50, true }, { XSHM_BUF_SIZE, true }, { MiB / 2, false }, { 7, true },
	};
	enum { NM = (int)(sizeof(seq) / sizeof(seq[0])) };
	struct xt_burst_msg m[NM];
	struct xt_burst_result res[NM];
	struct pair p = { 0 };
	char *buf[NM];

	pair_start(&p, NULL);
	for (int i = 0; i < NM; i++) {
		m[i] = bmsg(true, seq[i].len, 80 + (uint64_t)i, TAG,
			    FI_COMPLETION | (seq[i].fence ? FI_FENCE : 0));
		buf[i] = xt_alloc(MiB);
		XT_POST(&p.x, fi_trecv(p.x.ep, buf[i], MiB, NULL, FI_ADDR_UNSPEC, 0, ~0ULL,
				       buf[i]));
	}
	xt_burst_post(&p.x, &p.c, m, NM, WAIT_MS);
	for (int i = 0; i < NM; i++) {
		struct xt_comp c;
		int k;

		xt_wait_rx(&p.x, &c);
		for (k = 0; k < NM && c.e.op_context != buf[k]; k++)
			;
		XT_ASSERT(k < NM, "completion with context %p", c.e.op_context);
		XT_ASSERT(c.e.len == seq[k].len, "receive %d got %zu bytes: message %d has %zu",
			  k, c.e.len, k, seq[k].len);
		XT_ASSERT_PATTERN(buf[k], seq[k].len, m[k].seed, 0);
	}
	xt_burst_results(&p.x, &p.c, res, NM);
	for (int i = 0; i < NM; i++) {
		assert_send_ok(&res[i], true, seq[i].fence ? "fenced send" : "send");
		for (int j = 0; seq[i].fence && j < i; j++)
			XT_ASSERT(res[j].rank < res[i].rank,
				  "fenced send %d completed before the earlier send %d", i, j);
	}
	pair_stop(&p);
	for (int i = 0; i < NM; i++)
		free(buf[i]);
}
END_TEST

/* ---- FI_COMPLETION under FI_SELECTIVE_COMPLETION ---- */

START_TEST(selective_completion_send_entries_only_with_fi_completion)
{
	struct xt_cfg ccfg = xt_cfg_default();
	enum { NM = 9, NT = 8 };	/* NT tagged of 100 bytes, then one untagged */
	struct xt_burst_msg m[NM] = {
		bmsg(true, 100, 90, TAG, 0),
		bmsg(true, 100, 91, TAG, FI_COMPLETION),
		bmsg(true, 100, 92, TAG, 0),			/* plain fi_tsend */
		bmsg(true, 100, 93, TAG, FI_INJECT),
		bmsg(true, 100, 94, TAG, FI_INJECT | FI_COMPLETION),
		bmsg(true, 100, 95, TAG, FI_DELIVERY_COMPLETE),
		bmsg(true, 100, 96, TAG, FI_MATCH_COMPLETE | FI_COMPLETION),
		bmsg(true, 100, 97, TAG, FI_MATCH_COMPLETE),
		bmsg(false, 20000, 98, 0, FI_COMPLETION),
	};
	const bool want[NM] = { false, true, false, false, true, false, true, false, true };
	struct xt_burst_result res[NM];
	struct pair p = { 0 };
	char buf[NT][100], *big = xt_alloc(20000);

	ccfg.tx_bind_flags = FI_SELECTIVE_COMPLETION;
	m[2].plain = true;
	pair_start(&p, &ccfg);
	for (int i = 0; i < NT; i++)
		post_recv(&p, true, buf[i], 100, TAG, buf[i]);
	post_recv(&p, false, big, 20000, 0, big);
	xt_burst_post(&p.x, &p.c, m, NM, 1000);
	for (int i = 0; i < NM; i++) {
		struct xt_comp c;

		xt_wait_rx(&p.x, &c);
	}
	for (int i = 0; i < NT; i++)
		XT_ASSERT_PATTERN(buf[i], 100, m[i].seed, 0);
	XT_ASSERT_PATTERN(big, 20000, m[NT].seed, 0);
	xt_burst_results(&p.x, &p.c, res, NM);
	for (int i = 0; i < NM; i++) {
		XT_ASSERT(res[i].completed == want[i], "send %d (flags 0x%llx%s): %s", i,
			  (unsigned long long)m[i].flags, m[i].plain ? ", fi_tsend" : "",
			  res[i].completed ? "a CQ entry without FI_COMPLETION" :
			  "no CQ entry despite FI_COMPLETION");
		XT_ASSERT(!res[i].is_err, "send %d: error %d", i, res[i].err);
	}
	pair_stop(&p);
	free(big);
}
END_TEST

START_TEST(selective_completion_recv_entries_only_with_fi_completion)
{
	struct xt_burst_msg m[4];
	struct pair p = { 0 };
	char buf[4][150];
	struct xt_comp c;

	p.cfg = xt_cfg_default();
	p.cfg.rx_bind_flags = FI_SELECTIVE_COMPLETION;
	pair_start(&p, NULL);
	for (int i = 0; i < 4; i++) {
		struct iovec iov = { .iov_base = buf[i], .iov_len = sizeof(buf[i]) };
		struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1,
					     .addr = FI_ADDR_UNSPEC, .tag = TAG + (uint64_t)i,
					     .context = buf[i] };

		m[i] = bmsg(true, sizeof(buf[i]), 100 + (uint64_t)i, TAG + (uint64_t)i,
			    FI_COMPLETION);
		if (i == 2)	/* fi_trecv: op_flags without FI_COMPLETION */
			XT_POST(&p.x, fi_trecv(p.x.ep, buf[i], sizeof(buf[i]), NULL,
					       FI_ADDR_UNSPEC, TAG + 2, 0, buf[i]));
		else
			XT_POST(&p.x, fi_trecvmsg(p.x.ep, &msg, i % 2 ? FI_COMPLETION : 0));
	}
	xt_burst_post(&p.x, &p.c, m, 4, WAIT_MS);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == buf[1], "first receive entry has context %p, not the "
		  "one posted with FI_COMPLETION", c.e.op_context);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == buf[3], "second receive entry has context %p, not the "
		  "one posted with FI_COMPLETION", c.e.op_context);
	xt_expect_none(p.x.rx, p.x.tx, 200);
	for (int i = 0; i < 4; i++)
		XT_ASSERT_PATTERN(buf[i], sizeof(buf[i]), m[i].seed, 0);
	pair_stop(&p);
}
END_TEST

/* Errors are reported whether or not FI_COMPLETION was given. */
START_TEST(selective_completion_still_reports_errors)
{
	struct xt_burst_msg m = bmsg(true, 150, 105, TAG, FI_COMPLETION);
	char small[50];
	struct iovec iov = { .iov_base = small, .iov_len = sizeof(small) };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				     .tag = TAG, .context = small };
	struct xt_burst_result res;
	struct pair p = { 0 };
	struct xt_comp c;

	p.cfg = xt_cfg_default();
	p.cfg.rx_bind_flags = FI_SELECTIVE_COMPLETION;
	pair_start(&p, NULL);
	XT_POST(&p.x, fi_trecvmsg(p.x.ep, &msg, 0));
	xt_burst_post(&p.x, &p.c, &m, 1, WAIT_MS);
	if (xt_poll(p.x.rx, p.x.tx, 3000, &c) != 0)
		XT_ASSERT(false, "a truncated receive posted without FI_COMPLETION reported no error");
	XT_ASSERT(c.is_err && c.err.err == FI_ETRUNC, "expected an FI_ETRUNC error, got %s %d",
		  c.is_err ? "error" : "a completion, err", c.is_err ? c.err.err : 0);
	XT_ASSERT(c.err.op_context == small, "error context %p", c.err.op_context);
	xt_burst_results(&p.x, &p.c, &res, 1);
	XT_ASSERT(res.completed, "no send completion");
	pair_stop(&p);
}
END_TEST

/* ---- FI_REMOTE_CQ_DATA together with the other flags ---- */

static const uint64_t data_flags[] = {
	0, FI_INJECT, FI_TRANSMIT_COMPLETE, FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE,
};

START_TEST(remote_cq_data_flag_carries_data_and_its_absence_none)
{
	enum { NM = 2 * N(data_flags) };
	bool tagged = _i == 0;
	struct xt_burst_msg m[NM];
	struct xt_burst_result res[NM];
	struct pair p = { 0 };
	char buf[NM][150];

	pair_start(&p, NULL);
	for (int i = 0; i < NM; i++) {
		/* even: with FI_REMOTE_CQ_DATA; odd: .data set, no flag */
		m[i] = bmsg(tagged, 150, 110 + (uint64_t)i, TAG, FI_COMPLETION |
			    data_flags[i / 2] | (i % 2 ? 0 : FI_REMOTE_CQ_DATA));
		post_recv(&p, tagged, buf[i], 150, TAG, buf[i]);
	}
	xt_burst_post(&p.x, &p.c, m, NM, WAIT_MS);
	for (int n = 0; n < NM; n++) {
		struct xt_comp c;
		int i;

		xt_wait_rx(&p.x, &c);
		for (i = 0; i < NM && c.e.op_context != buf[i]; i++)
			;
		XT_ASSERT(i < NM, "completion with context %p", c.e.op_context);
		XT_ASSERT_PATTERN(buf[i], 150, m[i].seed, 0);
		if (i % 2) {
			XT_ASSERT(!(c.e.flags & FI_REMOTE_CQ_DATA), "send flags 0x%llx without "
				  "FI_REMOTE_CQ_DATA: receive flags 0x%llx",
				  (unsigned long long)m[i].flags, (unsigned long long)c.e.flags);
		} else {
			XT_ASSERT(c.e.flags & FI_REMOTE_CQ_DATA, "send flags 0x%llx: receive "
				  "flags 0x%llx", (unsigned long long)m[i].flags,
				  (unsigned long long)c.e.flags);
			XT_ASSERT(c.e.data == DATA, "send flags 0x%llx: data 0x%llx",
				  (unsigned long long)m[i].flags, (unsigned long long)c.e.data);
		}
	}
	xt_burst_results(&p.x, &p.c, res, NM);
	for (int i = 0; i < NM; i++)
		assert_send_ok(&res[i], tagged, "send with or without data");
	pair_stop(&p);
}
END_TEST

/* ---- fi_getinfo ---- */

static const uint64_t accepted_tx_op_flags[] = {
	FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE, FI_DELIVERY_COMPLETE | FI_COMPLETION,
	FI_TRANSMIT_COMPLETE, FI_INJECT_COMPLETE,
};

START_TEST(getinfo_accepts_and_returns_tx_op_flags)
{
	uint64_t want = accepted_tx_op_flags[_i];
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;

	hints->tx_attr->op_flags = want;
	XT_ASSERT_OK(fi_getinfo(XT_API, NULL, NULL, 0, hints, &info));
	XT_ASSERT((info->tx_attr->op_flags & want) == want,
		  "asked tx op_flags 0x%llx, got 0x%llx", (unsigned long long)want,
		  (unsigned long long)info->tx_attr->op_flags);
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

static void want_buffered_recv(struct fi_info *h) { h->rx_attr->total_buffered_recv = 4096; }
static void want_variable_msg(struct fi_info *h) { h->caps |= FI_VARIABLE_MSG; }
static void want_rx_variable_msg(struct fi_info *h) { h->rx_attr->caps |= FI_VARIABLE_MSG; }

static const struct {
	const char *what;
	void (*apply)(struct fi_info *h);
} declined[] = {
	{ "rx_attr total_buffered_recv 4096", want_buffered_recv },
	{ "caps FI_VARIABLE_MSG", want_variable_msg },
	{ "rx caps FI_VARIABLE_MSG", want_rx_variable_msg },
};

START_TEST(getinfo_declines_buffered_recv_and_variable_msg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *hints = xt_hints(&cfg), *info = NULL;
	int rc;

	declined[_i].apply(hints);
	rc = fi_getinfo(XT_API, NULL, NULL, 0, hints, &info);
	XT_ASSERT(rc == -FI_ENODATA, "hint %s: fi_getinfo returned %d (%s)", declined[_i].what,
		  rc, fi_strerror(-rc));
	fi_freeinfo(info);
	fi_freeinfo(hints);
}
END_TEST

static Suite *completion_suite(void)
{
	Suite *s = suite_create("completion");
	TCase *flags = tcase_create("flags");
	TCase *wait = tcase_create("waiting");
	TCase *fence = tcase_create("fence");
	TCase *sel = tcase_create("selective");
	TCase *gi = tcase_create("getinfo");

	tcase_set_timeout(flags, 30);
	tcase_add_loop_test(flags, inject_flag_copies_data_at_the_call_and_still_completes, 0,
			    2);
	tcase_add_loop_test(flags, send_flag_is_accepted_and_completes_once_received, 0,
			    2 * N(send_flags));
	tcase_add_test(flags, more_flag_batch_is_delivered_in_order_and_completes);
	tcase_add_test(flags, inject_flag_above_inject_size_gives_emsgsize);
	tcase_add_loop_test(flags, remote_cq_data_flag_carries_data_and_its_absence_none, 0, 2);
	suite_add_tcase(s, flags);

	tcase_set_timeout(wait, 30);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, delivery_and_match_complete_send_waits_for_the_receive, 0,
				    N(wait_loop_flags));
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, match_complete_send_completes_on_discard_not_on_peek, 0, 6);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, endpoint_op_flag_makes_tsend_wait_for_the_receive, 0,
				    N(wait_flags));
	suite_add_tcase(s, wait);

	tcase_set_timeout(fence, 30);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(fence, fenced_send_waits_for_earlier_match_complete_send, 0, 2);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(fence, fenced_sends_arrive_and_complete_after_earlier_sends);
	suite_add_tcase(s, fence);

	tcase_set_timeout(sel, 30);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(sel, selective_completion_send_entries_only_with_fi_completion);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(sel, selective_completion_recv_entries_only_with_fi_completion);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(sel, selective_completion_still_reports_errors);
	suite_add_tcase(s, sel);

	tcase_set_timeout(gi, 10);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(gi, getinfo_accepts_and_returns_tx_op_flags, 0,
				    N(accepted_tx_op_flags));
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(gi, getinfo_declines_buffered_recv_and_variable_msg, 0,
				    N(declined));
	suite_add_tcase(s, gi);
	return s;
}

int main(void)
{
	return xt_run_suite(completion_suite());
}
