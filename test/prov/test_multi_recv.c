/*
 * FI_MULTI_RECV on fi_recvmsg (untagged) and FI_OPT_MIN_MULTI_RECV.
 *
 * What is asserted: messages are placed one after the other in the posted
 * buffer, in arrival order, each completion's buf pointing at its data
 * and len giving its length, with the buffer's context; once less than
 * min_multi_recv bytes remain the buffer is released: the last completion
 * of a message placed into it carries FI_MULTI_RECV (and no other one
 * does; fi_cq(3) promises no completion order, so a large message placed
 * before the one that used the buffer up may complete after it); later
 * messages go to the next posted buffer.
 * A message larger than the remaining space (remaining >= min) is
 * truncated into it: an FI_ETRUNC error with len = the remaining space,
 * olen = the overflow, FI_MULTI_RECV set since nothing is left.
 *
 * The test process receives; a burst child sends.  Every case is
 * XT_GENERIC: fi_msg(3)'s multi-receive, which xlink promises too.
 */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define WAIT_MS	8000

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

struct pair {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child c;
	fi_addr_t peer;
};

/* Opens a receiver with FI_MULTI_RECV and min_multi_recv set before enable. */
static void pair_start(struct pair *p, size_t min_multi_recv)
{
	p->cfg = xt_cfg_default();
	p->cfg.caps |= FI_MULTI_RECV;
	xt_spawn(&p->c, xt_burst_child, NULL);
	xt_open_upto(&p->x, &p->cfg, XT_BOUND);
	XT_ASSERT_OK(fi_setopt(&p->x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV,
			       &min_multi_recv, sizeof(min_multi_recv)));
	xt_enable(&p->x);
	p->peer = xt_connect_sender(&p->x, &p->c, true);
}

static void pair_stop(struct pair *p)
{
	xt_burst_quit(&p->x, &p->c);
	xt_close(&p->x);
}

static void post_multi(struct pair *p, void *buf, size_t len, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			      .context = ctx };

	XT_POST(&p->x, fi_recvmsg(p->x.ep, &msg, FI_MULTI_RECV));
}

/* Sends lens[i] untagged bytes of seed base + i each, all at once. */
static void send_all(struct pair *p, const size_t *lens, int n, uint64_t base)
{
	struct xt_burst_msg *m = xt_alloc((size_t)n * sizeof(*m));

	for (int i = 0; i < n; i++)
		m[i] = (struct xt_burst_msg){ .len = lens[i], .seed = base + (uint64_t)i,
					      .flags = FI_COMPLETION };
	xt_burst_post(&p->x, &p->c, m, (size_t)n, WAIT_MS);
	free(m);
}

static void expect_all_sent(struct pair *p, int n)
{
	struct xt_burst_result *res = xt_alloc((size_t)n * sizeof(*res));

	xt_burst_results(&p->x, &p->c, res, (size_t)n);
	for (int i = 0; i < n; i++)
		XT_ASSERT(res[i].completed && !res[i].is_err, "send %d: completed %d, err %d", i,
			  res[i].completed, res[i].err);
	free(res);
}

START_TEST(multi_recv_cap_is_granted_when_asked)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_info *info = NULL;

	cfg.caps |= FI_MULTI_RECV;
	XT_ASSERT_OK(xt_getinfo(&cfg, &info));
	XT_ASSERT(info->caps & FI_MULTI_RECV, "caps 0x%llx without FI_MULTI_RECV",
		  (unsigned long long)info->caps);
	fi_freeinfo(info);
}
END_TEST

START_TEST(min_multi_recv_defaults_to_0_and_round_trips)
{
	struct xt_cfg cfg = xt_cfg_default();
	size_t v = 99, len = sizeof(v), set = 12345;
	struct xt_ep x;

	cfg.caps |= FI_MULTI_RECV;
	xt_open_upto(&x, &cfg, XT_BOUND);
	XT_ASSERT_OK(fi_getopt(&x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	XT_ASSERT(v == 0, "default min_multi_recv %zu", v);
	XT_ASSERT(len == sizeof(size_t), "optlen %zu", len);
	XT_ASSERT_OK(fi_setopt(&x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &set,
			       sizeof(set)));
	len = sizeof(v);
	XT_ASSERT_OK(fi_getopt(&x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	XT_ASSERT(v == set, "min_multi_recv %zu after setting %zu", v, set);
	xt_enable(&x);
	len = sizeof(v);
	XT_ASSERT_OK(fi_getopt(&x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v, &len));
	XT_ASSERT(v == set, "min_multi_recv %zu after enable", v);
	xt_close(&x);
}
END_TEST

#define BUF1	65536
#define BUF2	65536
#define MIN	8192

/*
 * 100 + 200 + 5000 + 16384 + 20000 leave 23852 bytes (>= MIN); 16000 more
 * leave 7852 (< MIN): that completion releases the buffer.  The last 300
 * go to the second buffer.  Lengths are distinct: they name the messages.
 */
static const size_t pack_lens[] = { 100, 200, 5000, XSHM_BUF_SIZE, 20000, 16000, 300 };
#define PACK_RELEASER	5

START_TEST(multi_recv_packs_messages_in_order_and_releases_the_buffer)
{
	enum { NM = N(pack_lens) };
	bool unexpected = _i == 1;
	unsigned char *b1 = xt_alloc(BUF1), *b2 = xt_alloc(BUF2);
	size_t off[NM];
	bool seen[NM] = { false };
	int in_b1 = 0;
	char c1, c2;
	struct pair p;

	for (int i = 0, o = 0; i < NM; i++) {
		off[i] = i < PACK_RELEASER + 1 ? (size_t)o : 0;
		o += (int)pack_lens[i];
	}
	pair_start(&p, MIN);
	if (!unexpected) {
		post_multi(&p, b1, BUF1, &c1);
		post_multi(&p, b2, BUF2, &c2);
	}
	send_all(&p, pack_lens, NM, 10);
	if (unexpected) {
		xt_expect_none(p.x.rx, p.x.tx, 300);
		post_multi(&p, b1, BUF1, &c1);
		post_multi(&p, b2, BUF2, &c2);
	}
	for (int n = 0; n < NM; n++) {
		struct xt_comp c;
		int i;

		xt_wait_rx(&p.x, &c);
		for (i = 0; i < NM && pack_lens[i] != c.e.len; i++)
			;
		XT_ASSERT(i < NM && !seen[i], "completion of len %zu: no such message, or twice",
			  c.e.len);
		seen[i] = true;
		XT_ASSERT((c.e.flags & (FI_RECV | FI_MSG)) == (FI_RECV | FI_MSG),
			  "message %d: flags 0x%llx", i, (unsigned long long)c.e.flags);
		XT_ASSERT(c.e.op_context == (i <= PACK_RELEASER ? (void *)&c1 : (void *)&c2),
			  "message %d (%zu bytes): context %p, buffer 1 is %p, buffer 2 %p", i,
			  pack_lens[i], c.e.op_context, (void *)&c1, (void *)&c2);
		XT_ASSERT(c.e.buf == (i <= PACK_RELEASER ? b1 : b2) + off[i],
			  "message %d (%zu bytes): buf %p, expected offset %zu in buffer %d (%p)",
			  i, pack_lens[i], c.e.buf, off[i], i <= PACK_RELEASER ? 1 : 2,
			  i <= PACK_RELEASER ? (void *)b1 : (void *)b2);
		/* Buffer 1 takes PACK_RELEASER + 1 messages: its last completion releases it. */
		in_b1 += i <= PACK_RELEASER;
		XT_ASSERT(!(c.e.flags & FI_MULTI_RECV) ==
			  (i > PACK_RELEASER || in_b1 < PACK_RELEASER + 1),
			  "message %d (%zu bytes, leaving %zu free), completion %d of buffer 1: "
			  "FI_MULTI_RECV %s", i, pack_lens[i],
			  i <= PACK_RELEASER ? BUF1 - off[i] - pack_lens[i] : BUF2 - pack_lens[i],
			  in_b1, c.e.flags & FI_MULTI_RECV ? "set" : "not set");
		XT_ASSERT_PATTERN(c.e.buf, pack_lens[i], 10 + (uint64_t)i, 0);
	}
	xt_expect_none(p.x.rx, p.x.tx, 50);
	expect_all_sent(&p, NM);
	pair_stop(&p);
	free(b1);
	free(b2);
}
END_TEST

/* A message that fills the buffer exactly leaves 0 < min: it releases it. */
START_TEST(multi_recv_exactly_filled_buffer_is_released)
{
	static const size_t lens[] = { 3000, 1096, 50 };
	unsigned char b1[4096], b2[1024];
	char c1, c2;
	struct xt_comp c;
	struct pair p;

	pair_start(&p, 100);
	post_multi(&p, b1, sizeof(b1), &c1);
	post_multi(&p, b2, sizeof(b2), &c2);
	send_all(&p, lens, 3, 20);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == &c1 && c.e.buf == b1 && c.e.len == 3000 &&
		  !(c.e.flags & FI_MULTI_RECV), "first: context %p buf %p len %zu flags 0x%llx",
		  c.e.op_context, c.e.buf, c.e.len, (unsigned long long)c.e.flags);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == &c1 && c.e.buf == b1 + 3000 && c.e.len == 1096,
		  "second: context %p buf %p len %zu", c.e.op_context, c.e.buf, c.e.len);
	XT_ASSERT(c.e.flags & FI_MULTI_RECV, "the message filling the buffer: flags 0x%llx",
		  (unsigned long long)c.e.flags);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == &c2 && c.e.buf == b2 && c.e.len == 50,
		  "third: context %p buf %p len %zu (buffer 2 is %p)", c.e.op_context, c.e.buf,
		  c.e.len, (void *)b2);
	XT_ASSERT_PATTERN(b1, 3000, 20, 0);
	XT_ASSERT_PATTERN(b1 + 3000, 1096, 21, 0);
	XT_ASSERT_PATTERN(b2, 50, 22, 0);
	expect_all_sent(&p, 3);
	pair_stop(&p);
}
END_TEST

/*
 * 5000 bytes leave 3192 >= min 1000; a 4000-byte message is truncated into
 * those 3192 bytes, which uses the buffer up: the error carries
 * FI_MULTI_RECV.  The next message goes to the next buffer.
 */
START_TEST(multi_recv_truncates_a_message_larger_than_the_remaining_space)
{
	static const size_t lens[] = { 5000, 4000, 100 };
	const size_t size = 8192, left = size - 5000;
	unsigned char *b1 = xt_alloc(size + 64), b2[512];
	char c1, c2;
	struct xt_comp c;
	struct pair p;

	memset(b1, 0xa5, size + 64);
	pair_start(&p, 1000);
	post_multi(&p, b1, size, &c1);
	post_multi(&p, b2, sizeof(b2), &c2);
	send_all(&p, lens, 3, 30);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == &c1 && c.e.buf == b1 && c.e.len == 5000,
		  "first: context %p buf %p len %zu", c.e.op_context, c.e.buf, c.e.len);
	XT_ASSERT(!(c.e.flags & FI_MULTI_RECV), "first: flags 0x%llx with %zu bytes left",
		  (unsigned long long)c.e.flags, left);
	xt_expect_err(p.x.rx, p.x.tx, &c);
	XT_ASSERT(c.err.err == FI_ETRUNC, "err %d (%s), expected FI_ETRUNC", c.err.err,
		  fi_strerror(abs(c.err.err)));
	XT_ASSERT(c.err.op_context == &c1, "truncation context %p", c.err.op_context);
	XT_ASSERT(c.err.len == left, "truncation len %zu, %zu bytes were left", c.err.len, left);
	XT_ASSERT(c.err.olen == 4000 - left, "olen %zu, expected %zu", c.err.olen, 4000 - left);
	XT_ASSERT(c.err.flags & FI_MULTI_RECV, "the truncation used the buffer up: flags 0x%llx",
		  (unsigned long long)c.err.flags);
	XT_ASSERT_PATTERN(b1, 5000, 30, 0);
	XT_ASSERT_PATTERN(b1 + 5000, left, 31, 0);
	for (size_t i = size; i < size + 64; i++)
		XT_ASSERT(b1[i] == 0xa5, "byte %zu past the buffer was written", i);
	xt_wait_rx(&p.x, &c);
	XT_ASSERT(c.e.op_context == &c2 && c.e.buf == b2 && c.e.len == 100,
		  "third: context %p buf %p len %zu (buffer 2 is %p)", c.e.op_context, c.e.buf,
		  c.e.len, (void *)b2);
	XT_ASSERT_PATTERN(b2, 100, 32, 0);
	expect_all_sent(&p, 3);
	pair_stop(&p);
	free(b1);
}
END_TEST

/* Large messages (chunked, 1 MiB) are packed like small ones, pre-posted or not. */
START_TEST(multi_recv_packs_chunked_messages)
{
	bool unexpected = _i == 1;
	static const size_t lens[] = { 1 << 20, 7, (1 << 20) + 13, 64 };
	const size_t size = 4 << 20;
	unsigned char *b = xt_alloc(size);
	size_t off = 0;
	char ctx;
	struct pair p;

	pair_start(&p, 0);
	if (!unexpected)
		post_multi(&p, b, size, &ctx);
	send_all(&p, lens, 4, 40);
	if (unexpected) {
		xt_expect_none(p.x.rx, p.x.tx, 300);
		post_multi(&p, b, size, &ctx);
	}
	for (int i = 0; i < 4; i++) {
		struct xt_comp c;
		int k;

		xt_wait_rx(&p.x, &c);
		for (k = 0; k < 4 && lens[k] != c.e.len; k++)
			;
		XT_ASSERT(k < 4, "completion of len %zu", c.e.len);
		off = 0;
		for (int j = 0; j < k; j++)
			off += lens[j];
		XT_ASSERT(c.e.op_context == &ctx, "context %p", c.e.op_context);
		XT_ASSERT(c.e.buf == b + off, "message %d: buf offset %td, expected %zu", k,
			  (unsigned char *)c.e.buf - b, off);
		XT_ASSERT_PATTERN(c.e.buf, lens[k], 40 + (uint64_t)k, 0);
		XT_ASSERT(!(c.e.flags & FI_MULTI_RECV), "message %d: FI_MULTI_RECV with "
			  "min_multi_recv 0 and space left", k);
	}
	expect_all_sent(&p, 4);
	pair_stop(&p);
	free(b);
}
END_TEST

static Suite *multi_recv_suite(void)
{
	Suite *s = suite_create("multi_recv");
	TCase *opt = tcase_create("options");
	TCase *fill = tcase_create("filling");

	tcase_set_timeout(opt, 10);
	tcase_add_test(opt, multi_recv_cap_is_granted_when_asked);
	tcase_add_test(opt, min_multi_recv_defaults_to_0_and_round_trips);
	suite_add_tcase(s, opt);

	tcase_set_timeout(fill, 30);
	tcase_add_loop_test(fill, multi_recv_packs_messages_in_order_and_releases_the_buffer,
			    0, 2);
	tcase_add_test(fill, multi_recv_exactly_filled_buffer_is_released);
	tcase_add_test(fill, multi_recv_truncates_a_message_larger_than_the_remaining_space);
	tcase_add_loop_test(fill, multi_recv_packs_chunked_messages, 0, 2);
	suite_add_tcase(s, fill);
	return s;
}

int main(void)
{
	return xt_run_suite(multi_recv_suite());
}
