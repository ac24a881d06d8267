/*
 * Receive operations on each path: truncation (FI_ETRUNC with olen, the
 * prefix received, the next message intact), remote CQ data, and FI_PEEK,
 * FI_CLAIM and FI_DISCARD, for a sender on the receiver's node and one on
 * another node (xlink.h).
 */
#include "xlink.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define DATA	0xda7a000000000000ULL
#define PEEK_MS	10000

/* ---- truncation ---- */

/* Message lengths, each received into a buffer of half its length. */
static const size_t trunc_lens[] = { 2, 100, 5000, 70000, XL_MIB };
#define NEXT_LEN 777	/* the message after each truncated one */

/*
 * _i: path (bit 0), unexpected (bit 1), untagged (bit 2).  The sender
 * sends, for each length, a message of that length then one of NEXT_LEN;
 * the receiver's directed receives of half the length then of NEXT_LEN
 * get an FI_ETRUNC error (olen the excess, the prefix received, nothing
 * written past the buffer) then the next message intact.
 */
START_TEST(truncated_receive_gives_etrunc_and_the_next_message_is_intact)
{
	int p = _i & 1;
	bool unexpected = _i & 2, tagged = !(_i & 4);
	struct xt_burst_msg m[2 * N(trunc_lens)];
	unsigned char *buf[2 * N(trunc_lens)];
	size_t posted[2 * N(trunc_lens)];
	struct xt_comp ev[2 * N(trunc_lens)];
	struct xl_rig r;

	xl_start(&r, 0);
	for (size_t i = 0; i < N(m); i++) {
		size_t len = i % 2 ? NEXT_LEN : trunc_lens[i / 2];

		posted[i] = i % 2 ? NEXT_LEN : len / 2;
		buf[i] = xl_buf(posted[i]);
		m[i] = (struct xt_burst_msg){
			.tagged = tagged, .plain = true, .len = len, .seed = xl_seed(p, i),
			.tag = 42,
		};
	}
	if (unexpected) {
		xl_send(&r, p, m, N(m));
		xl_settle(&r);
	}
	for (size_t i = 0; i < N(m); i++)
		xt_post_recv(&r.x, tagged, buf[i], posted[i], r.fa[p], 42, 0, buf[i]);
	if (!unexpected)
		xl_send(&r, p, m, N(m));
	/*
	 * Collected first, then checked in posting order: a large message may
	 * complete after the small one behind it (fi_cq(3) promises no
	 * completion order), but each must have matched its own receive.
	 */
	for (size_t n = 0; n < N(m); n++) {
		struct xt_comp got;
		void *ctx;
		size_t i;

		XT_ASSERT(xt_poll(r.x.rx, r.x.tx, XT_TIMEOUT_MS, &got) == 0,
			  "%zu of %zu receives completed", n, N(m));
		ctx = got.is_err ? got.err.op_context : got.e.op_context;
		for (i = 0; i < N(m) && buf[i] != ctx; i++)
			;
		XT_ASSERT(i < N(m), "a completion of unknown context %p", ctx);
		ev[i] = got;
	}
	for (size_t i = 0; i < N(m); i++) {
		struct xt_comp c = ev[i];
		const char *w = xl_path[p];

		if (i % 2) {
			XT_ASSERT(!c.is_err, "%s: the message after a truncated one failed: %d",
				  w, c.err.err);
			XT_ASSERT(c.e.op_context == buf[i], "%s: the message after a truncated one "
				  "completed context %p, expected %p", w, c.e.op_context, buf[i]);
			XT_ASSERT(c.e.len == NEXT_LEN, "%s: len %zu after a truncation", w, c.e.len);
			XT_ASSERT(c.src == r.fa[p], "%s: source %llu", w, (unsigned long long)c.src);
		} else {
			XT_ASSERT(c.is_err, "%s: a truncated message completed", w);
			XT_ASSERT(c.err.err == FI_ETRUNC, "%s, %zu bytes into %zu: err %d (%s)", w,
				  m[i].len, posted[i], c.err.err, fi_strerror(abs(c.err.err)));
			XT_ASSERT(c.err.op_context == buf[i], "%s: error context %p, expected %p", w,
				  c.err.op_context, buf[i]);
			XT_ASSERT(c.err.olen == m[i].len - posted[i], "%s, %zu bytes into %zu: olen "
				  "%zu", w, m[i].len, posted[i], c.err.olen);
			XT_ASSERT(c.err.len == posted[i], "%s, %zu bytes into %zu: len %zu", w,
				  m[i].len, posted[i], c.err.len);
			XT_ASSERT(c.err.flags & FI_RECV, "%s: error flags 0x%llx", w,
				  (unsigned long long)c.err.flags);
			XT_ASSERT(!tagged || c.err.tag == 42, "%s: error tag 0x%llx", w,
				  (unsigned long long)c.err.tag);
		}
		XT_ASSERT_PATTERN(buf[i], posted[i], xl_seed(p, i), 0);
		xl_check_guard(buf[i], posted[i], w);
	}
	xt_expect_none(r.x.rx, r.x.tx, 50);
	xl_sent(&r, p, N(m), true);
	xl_stop(&r);
	for (size_t i = 0; i < N(m); i++)
		free(buf[i]);
}
END_TEST

/* ---- remote CQ data ---- */

static const size_t data_lens[] = { 0, 10, 5000, 70000, XL_MIB };

/*
 * _i: path.  Tagged and untagged messages of each length, with and without
 * remote CQ data: FI_REMOTE_CQ_DATA and the data exactly when sent.
 */
START_TEST(remote_cq_data_arrives_on_each_path_only_when_sent)
{
	int p = _i;
	enum { NM = 4 * N(data_lens) };
	struct xt_burst_msg m[NM];
	unsigned char *buf[NM];
	struct xl_rig r;

	xl_start(&r, 0);
	for (size_t i = 0; i < NM; i++) {
		bool with_data = i % 2, tagged = (i / 2) % 2;

		buf[i] = xl_buf(data_lens[i / 4]);
		m[i] = (struct xt_burst_msg){
			.tagged = tagged, .plain = true, .len = data_lens[i / 4],
			.seed = xl_seed(p, i), .tag = 1000 + i,
			.data = with_data ? DATA + ((uint64_t)p << 32) + i : 0,
			.flags = with_data ? FI_REMOTE_CQ_DATA : 0,
		};
		/* Untagged receives take the untagged messages in order. */
		xt_post_recv(&r.x, tagged, buf[i], m[i].len, r.fa[p], m[i].tag, 0, buf[i]);
	}
	xl_send(&r, p, m, NM);
	for (size_t n = 0; n < NM; n++) {
		struct xt_comp c;
		size_t i;

		xt_wait_rx(&r.x, &c);
		for (i = 0; i < NM && buf[i] != c.e.op_context; i++)
			;
		XT_ASSERT(i < NM, "unknown context %p", c.e.op_context);
		XT_ASSERT(c.e.len == m[i].len, "%s message %zu: len %zu, sent %zu", xl_path[p], i,
			  c.e.len, m[i].len);
		XT_ASSERT(!!(c.e.flags & FI_REMOTE_CQ_DATA) == !!m[i].flags,
			  "%s message %zu (%s, %s data): flags 0x%llx", xl_path[p], i,
			  m[i].tagged ? "tagged" : "untagged", m[i].flags ? "with" : "without",
			  (unsigned long long)c.e.flags);
		XT_ASSERT(!m[i].flags || c.e.data == m[i].data, "%s message %zu: data 0x%llx, "
			  "sent 0x%llx", xl_path[p], i, (unsigned long long)c.e.data,
			  (unsigned long long)m[i].data);
		XT_ASSERT(!m[i].tagged || c.e.tag == m[i].tag, "%s message %zu: tag %llu",
			  xl_path[p], i, (unsigned long long)c.e.tag);
		XT_ASSERT(c.src == r.fa[p], "%s: source %llu", xl_path[p],
			  (unsigned long long)c.src);
		XT_ASSERT_PATTERN(buf[i], m[i].len, m[i].seed, 0);
		xl_check_guard(buf[i], m[i].len, xl_path[p]);
	}
	xl_sent(&r, p, NM, false);
	xl_stop(&r);
	for (size_t i = 0; i < NM; i++)
		free(buf[i]);
}
END_TEST

/* ---- peek, claim, discard ---- */

static const size_t peek_lens[] = { 100, 70000, XL_MIB };

struct peeker {
	struct xl_rig r;
	int p;
	bool tagged;
	size_t len;
};

static ssize_t try_recvmsg(struct peeker *t, void *buf, size_t len, uint64_t tag,
			   uint64_t flags, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged tmsg = {
		.msg_iov = buf ? &iov : NULL, .iov_count = buf ? 1 : 0,
		.addr = t->r.fa[t->p], .tag = tag, .context = ctx,
	};
	struct fi_msg msg = {
		.msg_iov = buf ? &iov : NULL, .iov_count = buf ? 1 : 0,
		.addr = t->r.fa[t->p], .context = ctx,
	};

	return t->tagged ? fi_trecvmsg(t->r.x.ep, &tmsg, flags)
			 : fi_recvmsg(t->r.x.ep, &msg, flags);
}

/* Peeks (flags has FI_PEEK) until the message tagged tag is there. */
static struct xt_comp peek_until(struct peeker *t, uint64_t tag, uint64_t flags,
				 struct fi_context *ctx)
{
	uint64_t end = xt_now_ms() + PEEK_MS;
	struct xt_comp c;

	for (;;) {
		XT_POST(&t->r.x, try_recvmsg(t, NULL, 0, tag, flags, ctx));
		if (xt_poll(t->r.x.rx, t->r.x.tx, PEEK_MS, &c) != 0)
			XT_ASSERT(false, "%s: peek 0x%llx got no completion", xl_path[t->p],
				  (unsigned long long)flags);
		if (!c.is_err)
			return c;
		XT_ASSERT(c.err.err == FI_ENOMSG, "%s: peek error %d (%s)", xl_path[t->p],
			  c.err.err, fi_strerror(abs(c.err.err)));
		XT_ASSERT(c.err.op_context == ctx, "%s: peek error context", xl_path[t->p]);
		XT_ASSERT(xt_now_ms() < end, "%s: no message %llu to peek within %d ms",
			  xl_path[t->p], (unsigned long long)tag, PEEK_MS);
		xt_expect_none(t->r.x.rx, t->r.x.tx, 2);
	}
}

static void expect_gone(struct peeker *t, uint64_t tag, const char *why)
{
	struct fi_context ctx;
	struct xt_comp c;

	XT_POST(&t->r.x, try_recvmsg(t, NULL, 0, tag, FI_PEEK, &ctx));
	if (xt_poll(t->r.x.rx, t->r.x.tx, PEEK_MS, &c) != 0)
		XT_ASSERT(false, "%s, %s: the peek got no completion", xl_path[t->p], why);
	XT_ASSERT(c.is_err && c.err.err == FI_ENOMSG, "%s, %s: the message is still there "
		  "(is_err %d, err %d)", xl_path[t->p], why, c.is_err, c.err.err);
}

static void check_peeked(struct peeker *t, const struct xt_comp *c, void *ctx, size_t seq,
			 const char *what)
{
	const char *w = xl_path[t->p];

	XT_ASSERT(c->e.op_context == ctx, "%s %s: context %p, expected %p", w, what,
		  c->e.op_context, ctx);
	XT_ASSERT(c->e.len == t->len, "%s %s: len %zu, sent %zu", w, what, c->e.len, t->len);
	XT_ASSERT(c->e.flags & FI_RECV, "%s %s: flags 0x%llx", w, what,
		  (unsigned long long)c->e.flags);
	XT_ASSERT(!t->tagged || c->e.tag == xl_tag(t->p, seq), "%s %s: tag 0x%llx", w, what,
		  (unsigned long long)c->e.tag);
	XT_ASSERT(c->e.flags & FI_REMOTE_CQ_DATA, "%s %s: no FI_REMOTE_CQ_DATA", w, what);
	XT_ASSERT(c->e.data == DATA + seq, "%s %s: data 0x%llx", w, what,
		  (unsigned long long)c->e.data);
	XT_ASSERT(c->src == t->r.fa[t->p], "%s %s: source %llu, sender %llu", w, what,
		  (unsigned long long)c->src, (unsigned long long)t->r.fa[t->p]);
}

/*
 * _i: path (bit 0), untagged (bit 1), length (_i / 4).  The sender sends
 * messages 0..3 (tag xl_tag(p, seq), cq data DATA + seq; untagged ones are
 * told apart by order).  Message 0: peeked twice (it stays), claimed, then
 * received with FI_CLAIM.  Message 1: FI_PEEK | FI_DISCARD drops it.
 * Message 2: claimed, then FI_CLAIM | FI_DISCARD drops it.  Message 3:
 * received by a plain receive, intact.
 */
START_TEST(peek_claim_and_discard_on_each_path)
{
	struct peeker t = { .p = _i & 1, .tagged = !(_i & 2), .len = peek_lens[_i / 4] };
	struct xt_burst_msg m[4];
	struct fi_context p1, p2, claim, disc;
	unsigned char *buf = xl_buf(t.len);
	struct xt_comp c;
	const char *w = xl_path[t.p];

	xl_start(&t.r, 0);
	for (size_t i = 0; i < 4; i++)
		m[i] = (struct xt_burst_msg){
			.tagged = t.tagged, .plain = true, .len = t.len,
			.seed = xl_seed(t.p, i), .tag = xl_tag(t.p, i), .data = DATA + i,
			.flags = FI_REMOTE_CQ_DATA,
		};
	xl_send(&t.r, t.p, m, 4);

	/* 0: peek, peek again, claim, receive the claimed message. */
	c = peek_until(&t, xl_tag(t.p, 0), FI_PEEK, &p1);
	check_peeked(&t, &c, &p1, 0, "FI_PEEK");
	c = peek_until(&t, xl_tag(t.p, 0), FI_PEEK, &p2);
	check_peeked(&t, &c, &p2, 0, "second FI_PEEK");
	c = peek_until(&t, xl_tag(t.p, 0), FI_PEEK | FI_CLAIM, &claim);
	check_peeked(&t, &c, &claim, 0, "FI_PEEK|FI_CLAIM");
	XT_POST(&t.r.x, try_recvmsg(&t, buf, t.len, xl_tag(t.p, 0), FI_CLAIM, &claim));
	xt_wait_rx(&t.r.x, &c);
	check_peeked(&t, &c, &claim, 0, "FI_CLAIM receive");
	XT_ASSERT_PATTERN(buf, t.len, xl_seed(t.p, 0), 0);
	xl_check_guard(buf, t.len, w);

	/* 1: FI_PEEK | FI_DISCARD. */
	c = peek_until(&t, xl_tag(t.p, 1), FI_PEEK | FI_DISCARD, &disc);
	check_peeked(&t, &c, &disc, 1, "FI_PEEK|FI_DISCARD");
	if (t.tagged)
		expect_gone(&t, xl_tag(t.p, 1), "after FI_PEEK|FI_DISCARD");

	/* 2: claim, then FI_CLAIM | FI_DISCARD. */
	c = peek_until(&t, xl_tag(t.p, 2), FI_PEEK | FI_CLAIM, &claim);
	check_peeked(&t, &c, &claim, 2, "FI_PEEK|FI_CLAIM");
	XT_POST(&t.r.x, try_recvmsg(&t, NULL, 0, xl_tag(t.p, 2), FI_CLAIM | FI_DISCARD, &claim));
	xt_wait_rx(&t.r.x, &c);
	XT_ASSERT(c.e.op_context == &claim, "%s FI_CLAIM|FI_DISCARD: context %p", w,
		  c.e.op_context);
	if (t.tagged)
		expect_gone(&t, xl_tag(t.p, 2), "after FI_CLAIM|FI_DISCARD");

	/* 3: a plain receive gets the next message intact. */
	memset(buf, 0xa5, t.len + XL_GUARD);
	xt_post_recv(&t.r.x, t.tagged, buf, t.len, t.r.fa[t.p], xl_tag(t.p, 3), 0, &p1);
	xt_wait_rx(&t.r.x, &c);
	check_peeked(&t, &c, &p1, 3, "receive after the discards");
	XT_ASSERT_PATTERN(buf, t.len, xl_seed(t.p, 3), 0);
	xl_check_guard(buf, t.len, w);
	xt_expect_none(t.r.x.rx, t.r.x.tx, 50);
	xl_sent(&t.r, t.p, 4, false);
	xl_stop(&t.r);
	free(buf);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("xlink_path_ops");
	TCase *trunc = tcase_create("truncation");
	TCase *data = tcase_create("cq_data");
	TCase *peek = tcase_create("peek");

	tcase_set_timeout(trunc, 60);
	tcase_add_loop_test(trunc, truncated_receive_gives_etrunc_and_the_next_message_is_intact,
			    0, 8);
	suite_add_tcase(s, trunc);

	tcase_set_timeout(data, 60);
	tcase_add_loop_test(data, remote_cq_data_arrives_on_each_path_only_when_sent, 0, 2);
	suite_add_tcase(s, data);

	tcase_set_timeout(peek, 60);
	tcase_add_loop_test(peek, peek_claim_and_discard_on_each_path, 0, 4 * N(peek_lens));
	suite_add_tcase(s, peek);
	return xl_main(s);
}
