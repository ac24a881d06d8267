/* Tagged messages: matching, ordering, directed receives, iovs, data. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define TAG	0x7a6e000000000001ULL
#define DATA	0x0123456789abcdefULL
#define SMALL	120

static struct xt_send_cmd cmd(enum xt_send_op op, size_t len, uint64_t seed, uint64_t tag)
{
	return (struct xt_send_cmd){ .op = op, .tagged = true, .len = len, .seed = seed,
				     .tag = tag, .data = DATA };
}

/* Waits for a receive completion and checks it carries the message. */
static struct xt_comp expect_msg(struct xt_rig *r, const void *buf, size_t len,
				 uint64_t seed, uint64_t tag)
{
	struct xt_comp c;

	xt_wait_rx(&r->x, &c);
	XT_ASSERT((c.e.flags & (FI_RECV | FI_TAGGED)) == (FI_RECV | FI_TAGGED),
		  "flags 0x%llx", (unsigned long long)c.e.flags);
	XT_ASSERT(c.e.len == len, "len %zu, sent %zu", c.e.len, len);
	XT_ASSERT(c.e.tag == tag, "tag 0x%llx, sent 0x%llx", (unsigned long long)c.e.tag,
		  (unsigned long long)tag);
	XT_ASSERT_PATTERN(buf, len, seed, 0);
	return c;
}

START_TEST(tagged_send_and_recv_complete_with_tagged_flags_and_context)
{
	struct xt_rig r;
	char buf[SMALL], ctx;
	struct xt_send_result res;
	struct xt_comp c;

	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	res = xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1, TAG));
	XT_ASSERT((res.flags & (FI_SEND | FI_TAGGED)) == (FI_SEND | FI_TAGGED),
		  "send flags 0x%llx", (unsigned long long)res.flags);
	XT_ASSERT(!(res.flags & FI_RECV), "send flags 0x%llx", (unsigned long long)res.flags);
	XT_ASSERT(res.context_ok, "send completion with another context");
	c = expect_msg(&r, buf, SMALL, 1, TAG);
	XT_ASSERT(c.e.op_context == &ctx, "recv context %p", c.e.op_context);
	XT_ASSERT(!(c.e.flags & (FI_SEND | FI_MSG | FI_REMOTE_CQ_DATA)), "recv flags 0x%llx",
		  (unsigned long long)c.e.flags);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(tagged_exact_tag_matches_only_that_tag)
{
	const uint64_t other = TAG ^ (1ULL << 40);
	char want[SMALL], rest[SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_trecv(r.x.ep, want, SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, want));
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1, other));
	xt_settle(&r);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 2, TAG));
	XT_ASSERT(expect_msg(&r, want, SMALL, 2, TAG).e.op_context == want, "wrong receive");
	XT_POST(&r.x, fi_trecv(r.x.ep, rest, SMALL, NULL, FI_ADDR_UNSPEC, other, 0, rest));
	expect_msg(&r, rest, SMALL, 1, other);
	xt_rig_stop(&r);
}
END_TEST

static const struct {
	uint64_t ignore, recv_tag, matching, other;	/* other: 0 = none */
} masks[] = {
	{ 0x00000000000000ffULL, 0x1100, 0x11ab, 0x1000 },
	{ 0xffff000000000000ULL, 0x42, 0xabcd000000000042ULL, 0x43 },
	{ 0x5555555555555555ULL, 0xaaaaaaaaaaaaaaaaULL, 0xffffffffffffffffULL,
	  0xaaaaaaaaaaaaaaa8ULL },
	{ 0x00000000ffffffffULL, 0x1234567800000000ULL, 0x12345678deadbeefULL,
	  0x1234567900000000ULL },
	{ ~0ULL, 0, 0x123456789abcdef0ULL, 0 },
};

/* A tag differing only in ignored bits matches; one differing elsewhere does not. */
START_TEST(tagged_ignore_mask_matches_only_ignored_bit_differences)
{
	uint64_t ignore = masks[_i].ignore, other = masks[_i].other;
	char buf[SMALL], rest[SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, SMALL, NULL, FI_ADDR_UNSPEC, masks[_i].recv_tag,
			       ignore, buf));
	if (other) {
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1, other));
		xt_settle(&r);
	}
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 2, masks[_i].matching));
	expect_msg(&r, buf, SMALL, 2, masks[_i].matching);
	if (other) {
		XT_POST(&r.x, fi_trecv(r.x.ep, rest, SMALL, NULL, FI_ADDR_UNSPEC, other, 0, rest));
		expect_msg(&r, rest, SMALL, 1, other);
	}
	xt_rig_stop(&r);
}
END_TEST

/* Both receives match both messages; the first posted takes the first. */
START_TEST(tagged_first_posted_matching_receive_gets_first_message)
{
	static const uint64_t ignores[2][2] = { { ~0ULL, 0 }, { 0, ~0ULL } };
	char buf[2][SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	for (int round = 0; round < 2; round++) {
		for (int i = 0; i < 2; i++)
			XT_POST(&r.x, fi_trecv(r.x.ep, buf[i], SMALL, NULL, FI_ADDR_UNSPEC, TAG,
					       ignores[round][i], buf[i]));
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 10 + round, TAG));
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 20 + round, TAG));
		XT_ASSERT(expect_msg(&r, buf[0], SMALL, 10 + round, TAG).e.op_context == buf[0],
			  "round %d: first message not in the first receive", round);
		XT_ASSERT(expect_msg(&r, buf[1], SMALL, 20 + round, TAG).e.op_context == buf[1],
			  "round %d: second message not in the second receive", round);
	}
	xt_rig_stop(&r);
}
END_TEST

/*
 * Receives under more distinct masks than the SRX indexes by class, half
 * of them accepting TAG and half TAG ^ 1, interleaved: each message goes to
 * the first-posted receive that accepts it.
 */
START_TEST(tagged_receives_under_many_masks_take_messages_in_post_order)
{
	enum { MASKS = 12, RECVS = 2 * MASKS };
	static char buf[RECVS][SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	for (int i = 0; i < RECVS; i++)
		XT_POST(&r.x, fi_trecv(r.x.ep, buf[i], SMALL, NULL, FI_ADDR_UNSPEC,
				       i % 2 ? TAG : TAG ^ 1, (uint64_t)(i / 2) << 8,
				       buf[i]));
	for (int parity = 1; parity >= 0; parity--) {
		for (int i = parity; i < RECVS; i += 2) {
			uint64_t tag = parity ? TAG : TAG ^ 1;

			xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 100 + i, tag));
			XT_ASSERT(expect_msg(&r, buf[i], SMALL, 100 + i, tag).e.op_context ==
				  buf[i], "message %d not in receive %d", i, i);
		}
	}
	xt_rig_stop(&r);
}
END_TEST

START_TEST(tagged_unexpected_messages_are_delivered_in_send_order)
{
	enum { N = 6 };
	char buf[N][SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	for (int i = 0; i < N; i++)
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, (uint64_t)i, TAG));
	xt_settle(&r);
	for (int i = 0; i < N; i++)
		XT_POST(&r.x, fi_trecv(r.x.ep, buf[i], SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, buf[i]));
	for (int i = 0; i < N; i++)
		XT_ASSERT(expect_msg(&r, buf[i], SMALL, (uint64_t)i, TAG).e.op_context == buf[i],
			  "completion %d for another receive", i);
	xt_rig_stop(&r);
}
END_TEST

/* Which of the candidate seeds the buffer holds, or -1. */
static int seed_of(const void *buf, size_t len, const uint64_t *seeds, int n)
{
	for (int i = 0; i < n; i++)
		if (xt_mismatch(buf, len, seeds[i], 0) < 0)
			return i;
	return -1;
}

START_TEST(tagged_unexpected_order_is_preserved_per_sender)
{
	enum { N = 4 };
	uint64_t seeds[2 * N];
	char buf[2 * N][SMALL];
	int next[2] = { 0, 0 };
	struct xt_rig r;

	xt_rig_start(&r, 2, 0);
	for (int i = 0; i < N; i++) {
		seeds[i] = 100 + (uint64_t)i;
		seeds[N + i] = 200 + (uint64_t)i;
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, seeds[i], TAG));
		xt_rig_send(&r, &r.b, cmd(XT_SEND, SMALL, seeds[N + i], TAG));
	}
	xt_settle(&r);
	for (int i = 0; i < 2 * N; i++)
		XT_POST(&r.x, fi_trecv(r.x.ep, buf[i], SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, buf[i]));
	for (int i = 0; i < 2 * N; i++) {
		struct xt_comp c;
		int k, who;

		xt_wait_rx(&r.x, &c);
		XT_ASSERT(c.e.op_context == buf[i], "completion %d for another receive", i);
		k = seed_of(buf[i], SMALL, seeds, 2 * N);
		XT_ASSERT(k >= 0, "receive %d holds no message that was sent", i);
		who = k / N;
		XT_ASSERT(k % N == next[who], "sender %c: message %d arrived before %d",
			  "AB"[who], k % N, next[who]);
		next[who]++;
	}
	xt_rig_stop(&r);
}
END_TEST

START_TEST(tagged_directed_recv_takes_named_sender_over_earlier_arrival)
{
	char fromb[SMALL], any[SMALL];
	struct xt_rig r;
	struct xt_comp c;

	xt_rig_start(&r, 2, FI_DIRECTED_RECV | FI_SOURCE);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1, TAG));
	xt_settle(&r);
	xt_rig_send(&r, &r.b, cmd(XT_SEND, SMALL, 2, TAG));
	xt_settle(&r);
	XT_POST(&r.x, fi_trecv(r.x.ep, fromb, SMALL, NULL, r.fb, TAG, 0, fromb));
	c = expect_msg(&r, fromb, SMALL, 2, TAG);
	XT_ASSERT(c.src == r.fb, "source %llu, B is %llu", (unsigned long long)c.src,
		  (unsigned long long)r.fb);
	XT_POST(&r.x, fi_trecv(r.x.ep, any, SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, any));
	c = expect_msg(&r, any, SMALL, 1, TAG);
	XT_ASSERT(c.src == r.fa, "source %llu, A is %llu", (unsigned long long)c.src,
		  (unsigned long long)r.fa);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(tagged_posted_directed_recv_ignores_other_senders)
{
	char fromb[SMALL], any[SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 2, FI_DIRECTED_RECV);
	XT_POST(&r.x, fi_trecv(r.x.ep, fromb, SMALL, NULL, r.fb, TAG, 0, fromb));
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1, TAG));
	xt_settle(&r);
	xt_rig_send(&r, &r.b, cmd(XT_SEND, SMALL, 2, TAG));
	XT_ASSERT(expect_msg(&r, fromb, SMALL, 2, TAG).e.op_context == fromb, "wrong receive");
	XT_POST(&r.x, fi_trecv(r.x.ep, any, SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, any));
	expect_msg(&r, any, SMALL, 1, TAG);
	xt_rig_stop(&r);
}
END_TEST

/* iov lengths whose boundaries fall around the protocol thresholds. */
static const size_t layouts[][4] = {
	{ XSHM_INLINE_MAX - 50, 60 },
	{ XSHM_INLINE_MAX, 1 },
	{ 1, XSHM_INLINE_MAX },
	{ XSHM_BUF_SIZE - 384, 400 },
	{ XSHM_BUF_SIZE, 1, 4096 },
	{ 1, XSHM_BUF_SIZE - 1, XSHM_BUF_SIZE + 1, 100000 },
	{ 200, 200, XSHM_BUF_SIZE, 4096 },
};

static size_t layout_niov(int i)
{
	size_t n = 0;

	while (n < 4 && layouts[i][n])
		n++;
	return n;
}

static size_t layout_len(int i)
{
	size_t len = 0;

	for (size_t k = 0; k < layout_niov(i); k++)
		len += layouts[i][k];
	return len;
}

START_TEST(tagged_iov_send_arrives_in_a_single_buffer)
{
	size_t niov = layout_niov(_i), len = layout_len(_i);
	struct xt_send_cmd sc = cmd(XT_SENDV, len, 5, TAG);
	char *buf = xt_alloc(len);
	struct xt_rig r;

	sc.niov = niov;
	memcpy(sc.iov_len, layouts[_i], sizeof(sc.iov_len));
	xt_rig_start(&r, 1, 0);
	XT_ASSERT(niov <= xt_tx_iov_limit(&r.x), "tx iov_limit %zu", xt_tx_iov_limit(&r.x));
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, len, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	xt_rig_send(&r, &r.a, sc);
	expect_msg(&r, buf, len, 5, TAG);
	xt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(tagged_single_send_arrives_in_an_iov_receive)
{
	size_t niov = layout_niov(_i), len = layout_len(_i), off = 0;
	struct iovec iov[4];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	XT_ASSERT(niov <= xt_rx_iov_limit(&r.x), "rx iov_limit %zu", xt_rx_iov_limit(&r.x));
	for (size_t k = 0; k < niov; k++)
		iov[k] = (struct iovec){ xt_alloc(layouts[_i][k]), layouts[_i][k] };
	XT_POST(&r.x, fi_trecvv(r.x.ep, iov, NULL, niov, FI_ADDR_UNSPEC, TAG, 0, NULL));
	xt_remote_send(&r.x, &r.a, &(struct xt_send_cmd){ .op = XT_SEND, .tagged = true,
							    .len = len, .seed = 6, .tag = TAG });
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.len == len, "len %zu, sent %zu", c.e.len, len);
	for (size_t k = 0; k < niov; k++) {
		ssize_t bad = xt_mismatch(iov[k].iov_base, iov[k].iov_len, 6, off);

		XT_ASSERT(bad < 0, "iov %zu differs at byte %zd", k, bad);
		off += iov[k].iov_len;
		free(iov[k].iov_base);
	}
	XT_ASSERT(xt_remote_done(&r.x, &r.a).completed, "no send completion");
	xt_rig_stop(&r);
}
END_TEST

START_TEST(tagged_sendmsg_into_recvmsg_with_remote_data)
{
	const size_t len = 3000;
	struct xt_send_cmd sc = cmd(XT_SENDMSG, len, 7, TAG);
	char *a = xt_alloc(1000), *b = xt_alloc(2000), ctx;
	struct iovec iov[2] = { { a, 1000 }, { b, 2000 } };
	struct fi_msg_tagged msg = { .msg_iov = iov, .iov_count = 2, .addr = FI_ADDR_UNSPEC,
				     .tag = TAG, .context = &ctx };
	struct xt_send_result res;
	struct xt_comp c;
	struct xt_rig r;

	sc.niov = 2;
	sc.iov_len[0] = 2500;
	sc.iov_len[1] = 500;
	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_trecvmsg(r.x.ep, &msg, FI_COMPLETION));
	res = xt_rig_send(&r, &r.a, sc);
	XT_ASSERT(res.context_ok, "sendmsg completion with another context");
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == &ctx, "recvmsg context %p", c.e.op_context);
	XT_ASSERT(c.e.len == len && c.e.tag == TAG, "len %zu tag 0x%llx", c.e.len,
		  (unsigned long long)c.e.tag);
	XT_ASSERT(c.e.flags & FI_REMOTE_CQ_DATA, "flags 0x%llx", (unsigned long long)c.e.flags);
	XT_ASSERT(c.e.data == DATA, "data 0x%llx", (unsigned long long)c.e.data);
	XT_ASSERT_PATTERN(a, 1000, 7, 0);
	XT_ASSERT_PATTERN(b, 2000, 7, 1000);
	xt_rig_stop(&r);
	free(a);
	free(b);
}
END_TEST

static const enum xt_send_op data_ops[] = { XT_SENDDATA, XT_INJECTDATA };

START_TEST(tagged_remote_cq_data_is_delivered_only_when_sent)
{
	char buf[2][SMALL];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf[0], SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	XT_POST(&r.x, fi_trecv(r.x.ep, buf[1], SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
	xt_rig_send(&r, &r.a, cmd(data_ops[_i], SMALL, 8, TAG));
	c = expect_msg(&r, buf[0], SMALL, 8, TAG);
	XT_ASSERT(c.e.flags & FI_REMOTE_CQ_DATA, "flags 0x%llx", (unsigned long long)c.e.flags);
	XT_ASSERT(c.e.data == DATA, "data 0x%llx", (unsigned long long)c.e.data);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 9, TAG));
	c = expect_msg(&r, buf[1], SMALL, 9, TAG);
	XT_ASSERT(!(c.e.flags & FI_REMOTE_CQ_DATA), "plain send: flags 0x%llx",
		  (unsigned long long)c.e.flags);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(tagged_readfrom_gives_the_sender_fi_addr)
{
	char buf[2][SMALL];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 2, FI_SOURCE);
	XT_ASSERT(r.fa != r.fb, "two senders, one fi_addr");
	for (int i = 0; i < 2; i++) {
		struct xt_child *who = i ? &r.b : &r.a;
		fi_addr_t want = i ? r.fb : r.fa;

		XT_POST(&r.x, fi_trecv(r.x.ep, buf[i], SMALL, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
		xt_rig_send(&r, who, cmd(XT_SEND, SMALL, 10, TAG));
		c = expect_msg(&r, buf[i], SMALL, 10, TAG);
		XT_ASSERT(c.src == want, "source %llu, sender is %llu", (unsigned long long)c.src,
			  (unsigned long long)want);
	}
	xt_rig_stop(&r);
}
END_TEST

static const struct {
	size_t sent, posted;
} truncations[] = {
	{ XSHM_INLINE_MAX - 20, 100 },
	{ 10000, 5000 },
	{ 3 * XSHM_BUF_SIZE + 5, XSHM_BUF_SIZE + 3 },
	{ 300000, 40000 },
};

START_TEST(tagged_truncation_gives_etrunc_with_olen)
{
	const size_t sent = truncations[_i].sent, posted = truncations[_i].posted;
	const size_t guard = 64;
	unsigned char *buf = xt_alloc(posted + guard);
	struct xt_send_cmd sc = cmd(XT_SEND, sent, 11, TAG);
	struct xt_send_result res;
	struct xt_comp c;
	struct xt_rig r;
	char ctx;

	memset(buf, 0xa5, posted + guard);
	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_trecv(r.x.ep, buf, posted, NULL, FI_ADDR_UNSPEC, TAG, 0, &ctx));
	xt_remote_send(&r.x, &r.a, &sc);
	xt_expect_err(r.x.rx, r.x.tx, &c);
	XT_ASSERT(c.err.err == FI_ETRUNC, "err %d (%s)", c.err.err, fi_strerror(abs(c.err.err)));
	XT_ASSERT(c.err.olen == sent - posted, "olen %zu, expected %zu", c.err.olen,
		  sent - posted);
	XT_ASSERT(c.err.len == posted, "len %zu, expected %zu", c.err.len, posted);
	XT_ASSERT(c.err.op_context == &ctx, "op_context %p", c.err.op_context);
	XT_ASSERT_PATTERN(buf, posted, 11, 0);
	for (size_t i = posted; i < posted + guard; i++)
		XT_ASSERT(buf[i] == 0xa5, "byte %zu past the buffer was written", i);
	res = xt_remote_done(&r.x, &r.a);
	XT_ASSERT(res.completed, "the sender got no completion");
	xt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(tagged_tinject_gives_no_send_completion_and_delivers)
{
	char *buf;
	size_t sizes[3], inject_size;
	struct xt_send_result res;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	inject_size = r.x.info->tx_attr->inject_size;
	sizes[0] = 1;
	sizes[1] = XSHM_INLINE_MAX + 1;
	sizes[2] = inject_size;
	buf = xt_alloc(inject_size);
	for (int i = 0; i < 3; i++) {
		if (sizes[i] > inject_size)
			continue;
		XT_POST(&r.x, fi_trecv(r.x.ep, buf, sizes[i], NULL, FI_ADDR_UNSPEC, TAG, 0, NULL));
		res = xt_rig_send(&r, &r.a, cmd(XT_INJECT, sizes[i], 12 + (uint64_t)i, TAG));
		XT_ASSERT(!res.completed, "fi_tinject of %zu bytes generated a completion",
			  sizes[i]);
		expect_msg(&r, buf, sizes[i], 12 + (uint64_t)i, TAG);
	}
	xt_rig_stop(&r);
	free(buf);
}
END_TEST

/* A tagged message never lands in an untagged receive, nor the reverse. */
START_TEST(tagged_and_untagged_receives_are_matched_separately)
{
	char tbuf[SMALL], ubuf[SMALL];
	struct xt_send_cmd plain = cmd(XT_SEND, SMALL, 14, 0);
	struct xt_comp c;
	struct xt_rig r;

	plain.tagged = false;
	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_recv(r.x.ep, ubuf, SMALL, NULL, FI_ADDR_UNSPEC, ubuf));
	XT_POST(&r.x, fi_trecv(r.x.ep, tbuf, SMALL, NULL, FI_ADDR_UNSPEC, 0, ~0ULL, tbuf));
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 13, TAG));
	XT_ASSERT(expect_msg(&r, tbuf, SMALL, 13, TAG).e.op_context == tbuf,
		  "tagged message completed the untagged receive");
	xt_rig_send(&r, &r.a, plain);
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == ubuf, "untagged message: context %p", c.e.op_context);
	XT_ASSERT((c.e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG), "flags 0x%llx",
		  (unsigned long long)c.e.flags);
	XT_ASSERT_PATTERN(ubuf, SMALL, 14, 0);
	xt_rig_stop(&r);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *tagged_suite(void)
{
	Suite *s = suite_create("tagged");
	TCase *match = tcase_create("matching");
	TCase *order = tcase_create("ordering");
	TCase *iov = tcase_create("iov");
	TCase *comp = tcase_create("completions");

	tcase_set_timeout(match, 30);
	tcase_add_test(match, tagged_send_and_recv_complete_with_tagged_flags_and_context);
	tcase_add_test(match, tagged_exact_tag_matches_only_that_tag);
	tcase_add_loop_test(match, tagged_ignore_mask_matches_only_ignored_bit_differences, 0,
			    N(masks));
	tcase_add_test(match, tagged_directed_recv_takes_named_sender_over_earlier_arrival);
	tcase_add_test(match, tagged_posted_directed_recv_ignores_other_senders);
	tcase_add_test(match, tagged_and_untagged_receives_are_matched_separately);
	suite_add_tcase(s, match);

	tcase_set_timeout(order, 30);
	tcase_add_test(order, tagged_first_posted_matching_receive_gets_first_message);
	tcase_add_test(order, tagged_receives_under_many_masks_take_messages_in_post_order);
	tcase_add_test(order, tagged_unexpected_messages_are_delivered_in_send_order);
	tcase_add_test(order, tagged_unexpected_order_is_preserved_per_sender);
	suite_add_tcase(s, order);

	tcase_set_timeout(iov, 30);
	tcase_add_loop_test(iov, tagged_iov_send_arrives_in_a_single_buffer, 0, N(layouts));
	tcase_add_loop_test(iov, tagged_single_send_arrives_in_an_iov_receive, 0, N(layouts));
	tcase_add_test(iov, tagged_sendmsg_into_recvmsg_with_remote_data);
	suite_add_tcase(s, iov);

	tcase_set_timeout(comp, 30);
	tcase_add_loop_test(comp, tagged_remote_cq_data_is_delivered_only_when_sent, 0,
			    N(data_ops));
	tcase_add_test(comp, tagged_readfrom_gives_the_sender_fi_addr);
	tcase_add_loop_test(comp, tagged_truncation_gives_etrunc_with_olen, 0, N(truncations));
	tcase_add_test(comp, tagged_tinject_gives_no_send_completion_and_delivers);
	suite_add_tcase(s, comp);
	return s;
}

int main(void)
{
	return xt_run_suite(tagged_suite());
}
