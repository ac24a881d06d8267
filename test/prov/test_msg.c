/* Untagged messages: completions, ordering, directed receives, iovs, data. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define DATA	0xa5a5f00dcafe0001ULL
#define SMALL	120

static struct xt_send_cmd cmd(enum xt_send_op op, size_t len, uint64_t seed)
{
	return (struct xt_send_cmd){ .op = op, .len = len, .seed = seed, .data = DATA };
}

static void post(struct xt_rig *r, void *buf, size_t len, fi_addr_t src)
{
	XT_POST(&r->x, fi_recv(r->x.ep, buf, len, NULL, src, buf));
}

/* Waits for a receive completion and checks it carries the message. */
static struct xt_comp expect_msg(struct xt_rig *r, const void *buf, size_t len, uint64_t seed)
{
	struct xt_comp c;

	xt_wait_rx(&r->x, &c);
	XT_ASSERT((c.e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG), "flags 0x%llx",
		  (unsigned long long)c.e.flags);
	XT_ASSERT(c.e.len == len, "len %zu, sent %zu", c.e.len, len);
	XT_ASSERT_PATTERN(buf, len, seed, 0);
	return c;
}

START_TEST(msg_send_and_recv_complete_with_msg_flags_and_context)
{
	struct xt_send_result res;
	char buf[SMALL];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	post(&r, buf, SMALL, FI_ADDR_UNSPEC);
	res = xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1));
	XT_ASSERT((res.flags & (FI_SEND | FI_MSG)) == (FI_SEND | FI_MSG), "send flags 0x%llx",
		  (unsigned long long)res.flags);
	XT_ASSERT(!(res.flags & (FI_RECV | FI_TAGGED)), "send flags 0x%llx",
		  (unsigned long long)res.flags);
	XT_ASSERT(res.context_ok, "send completion with another context");
	c = expect_msg(&r, buf, SMALL, 1);
	XT_ASSERT(c.e.op_context == buf, "recv context %p", c.e.op_context);
	XT_ASSERT(!(c.e.flags & (FI_SEND | FI_TAGGED | FI_REMOTE_CQ_DATA)), "recv flags 0x%llx",
		  (unsigned long long)c.e.flags);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(msg_recv_larger_than_message_reports_message_length)
{
	char buf[4 * SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	post(&r, buf, sizeof(buf), FI_ADDR_UNSPEC);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 2));
	expect_msg(&r, buf, SMALL, 2);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(msg_receives_complete_in_posting_order)
{
	char buf[3][SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	for (int i = 0; i < 3; i++)
		post(&r, buf[i], SMALL, FI_ADDR_UNSPEC);
	for (int i = 0; i < 3; i++)
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 10 + (uint64_t)i));
	for (int i = 0; i < 3; i++)
		XT_ASSERT(expect_msg(&r, buf[i], SMALL, 10 + (uint64_t)i).e.op_context == buf[i],
			  "message %d not in receive %d", i, i);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(msg_unexpected_messages_are_delivered_in_send_order)
{
	enum { N = 6 };
	char buf[N][SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	for (int i = 0; i < N; i++)
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, (uint64_t)i));
	xt_settle(&r);
	for (int i = 0; i < N; i++)
		post(&r, buf[i], SMALL, FI_ADDR_UNSPEC);
	for (int i = 0; i < N; i++)
		XT_ASSERT(expect_msg(&r, buf[i], SMALL, (uint64_t)i).e.op_context == buf[i],
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

START_TEST(msg_unexpected_order_is_preserved_per_sender)
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
		xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, seeds[i]));
		xt_rig_send(&r, &r.b, cmd(XT_SEND, SMALL, seeds[N + i]));
	}
	xt_settle(&r);
	for (int i = 0; i < 2 * N; i++)
		post(&r, buf[i], SMALL, FI_ADDR_UNSPEC);
	for (int i = 0; i < 2 * N; i++) {
		struct xt_comp c;
		int k, who;

		xt_wait_rx(&r.x, &c);
		XT_ASSERT(c.e.op_context == buf[i], "completion %d for another receive", i);
		k = seed_of(buf[i], SMALL, seeds, 2 * N);
		XT_ASSERT(k >= 0, "receive %d holds no message that was sent", i);
		who = k / N;
		XT_ASSERT(k - who * N == next[who], "sender %c: message %d arrived before %d",
			  "AB"[who], k - who * N, next[who]);
		next[who]++;
	}
	xt_rig_stop(&r);
}
END_TEST

START_TEST(msg_directed_recv_takes_named_sender_over_earlier_arrival)
{
	char fromb[SMALL], any[SMALL];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 2, FI_DIRECTED_RECV | FI_SOURCE);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1));
	xt_settle(&r);
	xt_rig_send(&r, &r.b, cmd(XT_SEND, SMALL, 2));
	xt_settle(&r);
	post(&r, fromb, SMALL, r.fb);
	c = expect_msg(&r, fromb, SMALL, 2);
	XT_ASSERT(c.src == r.fb, "source %llu, B is %llu", (unsigned long long)c.src,
		  (unsigned long long)r.fb);
	post(&r, any, SMALL, FI_ADDR_UNSPEC);
	c = expect_msg(&r, any, SMALL, 1);
	XT_ASSERT(c.src == r.fa, "source %llu, A is %llu", (unsigned long long)c.src,
		  (unsigned long long)r.fa);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(msg_posted_directed_recv_ignores_other_senders)
{
	char fromb[SMALL], any[SMALL];
	struct xt_rig r;

	xt_rig_start(&r, 2, FI_DIRECTED_RECV);
	post(&r, fromb, SMALL, r.fb);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 1));
	xt_settle(&r);
	xt_rig_send(&r, &r.b, cmd(XT_SEND, SMALL, 2));
	XT_ASSERT(expect_msg(&r, fromb, SMALL, 2).e.op_context == fromb, "wrong receive");
	post(&r, any, SMALL, FI_ADDR_UNSPEC);
	expect_msg(&r, any, SMALL, 1);
	xt_rig_stop(&r);
}
END_TEST

/* iov lengths whose boundaries fall around the protocol thresholds. */
static const size_t layouts[][4] = {
	{ XSHM_INLINE_MAX - 50, 60 },
	{ XSHM_INLINE_MAX, 1 },
	{ 1, XSHM_INLINE_MAX },
	{ XSHM_BUF_SIZE - 384, 400 },
	{ XSHM_BUF_SIZE, XSHM_BUF_TAIL_MAX },	/* a buffer, the rest in its cell */
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

START_TEST(msg_iov_send_arrives_in_a_single_buffer)
{
	size_t niov = layout_niov(_i), len = layout_len(_i);
	struct xt_send_cmd sc = cmd(XT_SENDV, len, 5);
	char *buf = xt_alloc(len);
	struct xt_rig r;

	sc.niov = niov;
	memcpy(sc.iov_len, layouts[_i], sizeof(sc.iov_len));
	xt_rig_start(&r, 1, 0);
	XT_ASSERT(niov <= xt_tx_iov_limit(&r.x), "tx iov_limit %zu", xt_tx_iov_limit(&r.x));
	post(&r, buf, len, FI_ADDR_UNSPEC);
	xt_rig_send(&r, &r.a, sc);
	expect_msg(&r, buf, len, 5);
	xt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(msg_single_send_arrives_in_an_iov_receive)
{
	size_t niov = layout_niov(_i), len = layout_len(_i), off = 0;
	struct xt_send_cmd sc = cmd(XT_SEND, len, 6);
	struct iovec iov[4];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	XT_ASSERT(niov <= xt_rx_iov_limit(&r.x), "rx iov_limit %zu", xt_rx_iov_limit(&r.x));
	for (size_t k = 0; k < niov; k++)
		iov[k] = (struct iovec){ xt_alloc(layouts[_i][k]), layouts[_i][k] };
	XT_POST(&r.x, fi_recvv(r.x.ep, iov, NULL, niov, FI_ADDR_UNSPEC, NULL));
	xt_remote_send(&r.x, &r.a, &sc);
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

START_TEST(msg_sendmsg_into_recvmsg_with_remote_data)
{
	const size_t len = 3000;
	struct xt_send_cmd sc = cmd(XT_SENDMSG, len, 7);
	char *a = xt_alloc(1000), *b = xt_alloc(2000), ctx;
	struct iovec iov[2] = { { a, 1000 }, { b, 2000 } };
	struct fi_msg msg = { .msg_iov = iov, .iov_count = 2, .addr = FI_ADDR_UNSPEC,
			      .context = &ctx };
	struct xt_send_result res;
	struct xt_comp c;
	struct xt_rig r;

	sc.niov = 2;
	sc.iov_len[0] = 2500;
	sc.iov_len[1] = 500;
	xt_rig_start(&r, 1, 0);
	XT_POST(&r.x, fi_recvmsg(r.x.ep, &msg, FI_COMPLETION));
	res = xt_rig_send(&r, &r.a, sc);
	XT_ASSERT(res.context_ok, "sendmsg completion with another context");
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == &ctx, "recvmsg context %p", c.e.op_context);
	XT_ASSERT(c.e.len == len, "len %zu", c.e.len);
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

START_TEST(msg_remote_cq_data_is_delivered_only_when_sent)
{
	char buf[2][SMALL];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 1, 0);
	post(&r, buf[0], SMALL, FI_ADDR_UNSPEC);
	post(&r, buf[1], SMALL, FI_ADDR_UNSPEC);
	xt_rig_send(&r, &r.a, cmd(data_ops[_i], SMALL, 8));
	c = expect_msg(&r, buf[0], SMALL, 8);
	XT_ASSERT(c.e.flags & FI_REMOTE_CQ_DATA, "flags 0x%llx", (unsigned long long)c.e.flags);
	XT_ASSERT(c.e.data == DATA, "data 0x%llx", (unsigned long long)c.e.data);
	xt_rig_send(&r, &r.a, cmd(XT_SEND, SMALL, 9));
	c = expect_msg(&r, buf[1], SMALL, 9);
	XT_ASSERT(!(c.e.flags & FI_REMOTE_CQ_DATA), "plain send: flags 0x%llx",
		  (unsigned long long)c.e.flags);
	xt_rig_stop(&r);
}
END_TEST

START_TEST(msg_readfrom_gives_the_sender_fi_addr)
{
	char buf[2][SMALL];
	struct xt_comp c;
	struct xt_rig r;

	xt_rig_start(&r, 2, FI_SOURCE);
	XT_ASSERT(r.fa != r.fb, "two senders, one fi_addr");
	for (int i = 0; i < 2; i++) {
		fi_addr_t want = i ? r.fb : r.fa;

		post(&r, buf[i], SMALL, FI_ADDR_UNSPEC);
		xt_rig_send(&r, i ? &r.b : &r.a, cmd(XT_SEND, SMALL, 10));
		c = expect_msg(&r, buf[i], SMALL, 10);
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

START_TEST(msg_truncation_gives_etrunc_with_olen)
{
	const size_t sent = truncations[_i].sent, posted = truncations[_i].posted;
	const size_t guard = 64;
	unsigned char *buf = xt_alloc(posted + guard);
	struct xt_send_cmd sc = cmd(XT_SEND, sent, 11);
	struct xt_comp c;
	struct xt_rig r;

	memset(buf, 0xa5, posted + guard);
	xt_rig_start(&r, 1, 0);
	post(&r, buf, posted, FI_ADDR_UNSPEC);
	xt_remote_send(&r.x, &r.a, &sc);
	xt_expect_err(r.x.rx, r.x.tx, &c);
	XT_ASSERT(c.err.err == FI_ETRUNC, "err %d (%s)", c.err.err, fi_strerror(abs(c.err.err)));
	XT_ASSERT(c.err.olen == sent - posted, "olen %zu, expected %zu", c.err.olen,
		  sent - posted);
	XT_ASSERT(c.err.len == posted, "len %zu, expected %zu", c.err.len, posted);
	XT_ASSERT(c.err.op_context == buf, "op_context %p", c.err.op_context);
	XT_ASSERT_PATTERN(buf, posted, 11, 0);
	for (size_t i = posted; i < posted + guard; i++)
		XT_ASSERT(buf[i] == 0xa5, "byte %zu past the buffer was written", i);
	XT_ASSERT(xt_remote_done(&r.x, &r.a).completed, "the sender got no completion");
	xt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(msg_inject_gives_no_send_completion_and_delivers)
{
	size_t sizes[3], inject_size;
	struct xt_send_result res;
	struct xt_rig r;
	char *buf;

	xt_rig_start(&r, 1, 0);
	inject_size = r.x.info->tx_attr->inject_size;
	sizes[0] = 1;
	sizes[1] = XSHM_INLINE_MAX + 1;
	sizes[2] = inject_size;
	buf = xt_alloc(inject_size);
	for (int i = 0; i < 3; i++) {
		if (sizes[i] > inject_size)
			continue;
		post(&r, buf, sizes[i], FI_ADDR_UNSPEC);
		res = xt_rig_send(&r, &r.a, cmd(XT_INJECT, sizes[i], 12 + (uint64_t)i));
		XT_ASSERT(!res.completed, "fi_inject of %zu bytes generated a completion",
			  sizes[i]);
		expect_msg(&r, buf, sizes[i], 12 + (uint64_t)i);
	}
	xt_rig_stop(&r);
	free(buf);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

static Suite *msg_suite(void)
{
	Suite *s = suite_create("msg");
	TCase *basic = tcase_create("basic");
	TCase *order = tcase_create("ordering");
	TCase *iov = tcase_create("iov");
	TCase *comp = tcase_create("completions");

	tcase_set_timeout(basic, 30);
	tcase_add_test(basic, msg_send_and_recv_complete_with_msg_flags_and_context);
	tcase_add_test(basic, msg_recv_larger_than_message_reports_message_length);
	tcase_add_test(basic, msg_directed_recv_takes_named_sender_over_earlier_arrival);
	tcase_add_test(basic, msg_posted_directed_recv_ignores_other_senders);
	suite_add_tcase(s, basic);

	tcase_set_timeout(order, 30);
	tcase_add_test(order, msg_receives_complete_in_posting_order);
	tcase_add_test(order, msg_unexpected_messages_are_delivered_in_send_order);
	tcase_add_test(order, msg_unexpected_order_is_preserved_per_sender);
	suite_add_tcase(s, order);

	tcase_set_timeout(iov, 30);
	tcase_add_loop_test(iov, msg_iov_send_arrives_in_a_single_buffer, 0, N(layouts));
	tcase_add_loop_test(iov, msg_single_send_arrives_in_an_iov_receive, 0, N(layouts));
	tcase_add_test(iov, msg_sendmsg_into_recvmsg_with_remote_data);
	suite_add_tcase(s, iov);

	tcase_set_timeout(comp, 30);
	tcase_add_loop_test(comp, msg_remote_cq_data_is_delivered_only_when_sent, 0,
			    N(data_ops));
	tcase_add_test(comp, msg_readfrom_gives_the_sender_fi_addr);
	tcase_add_loop_test(comp, msg_truncation_gives_etrunc_with_olen, 0, N(truncations));
	tcase_add_test(comp, msg_inject_gives_no_send_completion_and_delivers);
	suite_add_tcase(s, comp);
	return s;
}

int main(void)
{
	return xt_run_suite(msg_suite());
}
