/*
 * FI_MULTI_RECV with the messages of both paths in the same buffers: a
 * sender on the receiver's node and one on node 1 (xlink.h) start their
 * bursts at the same moment, so that their messages interleave and a
 * message of one path matches while one of the other is still being
 * copied (a large payload fetched from the network, a message the peer
 * receives in chunks).
 *
 * What is asserted: every message is placed once, whole, every byte
 * checked; the messages of one buffer tile it from offset 0 without gap
 * or overlap, each sender's in the order it sent them; each completion
 * has the buffer's context and in buf the message's first byte; the
 * buffer is released (FI_MULTI_RECV) on its last completion only, once
 * less than min_multi_recv bytes are left, and the messages after that go
 * to the next buffer; a message larger than what is left (left >= min) is
 * truncated into it (FI_ETRUNC, len the space left, olen the excess,
 * FI_MULTI_RECV), nothing written past the buffer.
 */
#include "xlink.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define MAXM 8

struct burst {
	struct xt_burst_msg m[MAXM];
	size_t n;
};

/* What a buffer got: one entry per message, as completed. */
struct placed {
	int p;
	size_t seq;
	size_t off, len;
	void *ctx;
};

/* Starts both senders' bursts before waiting for either to post them. */
static void send_both(struct xl_rig *r, const struct burst *b)
{
	for (int p = 0; p < 2; p++) {
		xt_send_u64(r->kid[p].sock, b[p].n);
		xt_write_bytes(r->kid[p].sock, b[p].m, b[p].n * sizeof(b[p].m[0]));
		xt_send_u64(r->kid[p].sock, XL_WAIT_MS);
	}
	for (int p = 0; p < 2; p++) {
		uint64_t posted = xt_recv_u64_progress(r->kid[p].sock, &r->x);
		int64_t rc = (int64_t)xt_recv_u64_progress(r->kid[p].sock, &r->x);

		XT_ASSERT(posted == b[p].n, "%s sender: send %llu of %zu returned %lld (%s)",
			  xl_path[p], (unsigned long long)posted, b[p].n, (long long)rc,
			  xt_strerror(rc));
	}
}

static void make_burst(struct burst *b, int p, const size_t *lens, size_t n)
{
	XT_ASSERT(n <= MAXM, "burst of %zu", n);
	b->n = n;
	for (size_t i = 0; i < n; i++)
		b->m[i] = (struct xt_burst_msg){
			.len = lens[i], .seed = xl_seed(p, i), .flags = FI_COMPLETION,
		};
}

static void post_multi(struct xl_rig *r, void *buf, size_t len, void *ctx)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
			      .context = ctx };

	XT_POST(&r->x, fi_recvmsg(r->x.ep, &msg, FI_MULTI_RECV));
}

static void set_min(struct xl_rig *r, size_t min)
{
	size_t v = 0, len = sizeof(v);

	XT_ASSERT_OK(fi_setopt(&r->x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &min,
			       sizeof(min)));
	XT_ASSERT_OK(fi_getopt(&r->x.ep->fid, FI_OPT_ENDPOINT, FI_OPT_MIN_MULTI_RECV, &v,
			       &len));
	XT_ASSERT(v == min && len == sizeof(v), "min_multi_recv %zu (optlen %zu), set %zu", v,
		  len, min);
}

/* The message of sender p whose length is len (the lengths of a burst differ). */
static size_t seq_of(const struct burst *b, int p, size_t len)
{
	for (size_t i = 0; i < b[p].n; i++)
		if (b[p].m[i].len == len)
			return i;
	xt_fail(__FILE__, __LINE__, NULL, "a completion of %zu bytes from the %s sender, "
		"which sent no such message", len, xl_path[p]);
}

/*
 * A successful completion of a message placed into one of the two
 * buffers (base[k], size[k] bytes, context ctx[k]): checked, recorded.
 */
static struct placed check_placed(struct xl_rig *r, const struct burst *b,
				  const struct xt_comp *c, unsigned char *const base[2],
				  const size_t size[2], void *const ctx[2])
{
	struct placed pl;
	int k;

	XT_ASSERT(!c->is_err, "an error completion: %d (%s), context %p, len %zu",
		  c->err.err, fi_strerror(abs(c->err.err)), c->err.op_context, c->err.len);
	pl.p = xl_path_of(r, c->src);
	pl.len = c->e.len;
	pl.seq = seq_of(b, pl.p, c->e.len);
	pl.ctx = c->e.op_context;
	XT_ASSERT((c->e.flags & (FI_MSG | FI_RECV)) == (FI_MSG | FI_RECV),
		  "%s message %zu: flags 0x%llx", xl_path[pl.p], pl.seq,
		  (unsigned long long)c->e.flags);
	for (k = 0; k < 2 && pl.ctx != ctx[k]; k++)
		;
	XT_ASSERT(k < 2, "%s message %zu: context %p, the buffers' are %p and %p",
		  xl_path[pl.p], pl.seq, pl.ctx, ctx[0], ctx[1]);
	XT_ASSERT((unsigned char *)c->e.buf >= base[k] &&
		  (unsigned char *)c->e.buf + pl.len <= base[k] + size[k],
		  "%s message %zu (%zu bytes): buf %p outside buffer %d (%p, %zu bytes)",
		  xl_path[pl.p], pl.seq, pl.len, c->e.buf, k + 1, (void *)base[k], size[k]);
	pl.off = (size_t)((unsigned char *)c->e.buf - base[k]);
	XT_ASSERT_PATTERN(c->e.buf, pl.len, xl_seed(pl.p, pl.seq), 0);
	return pl;
}

/*
 * The messages of one buffer tile [0, *used) in order of offset, and each
 * sender's lie in the order it sent them.
 */
static size_t check_tiling(struct placed *pl, size_t n, const char *what)
{
	size_t used = 0;

	/* insertion sort by offset */
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0 && pl[j].off < pl[j - 1].off; j--) {
			struct placed t = pl[j];

			pl[j] = pl[j - 1];
			pl[j - 1] = t;
		}
	for (size_t i = 0; i < n; i++) {
		XT_ASSERT(pl[i].off == used, "%s: %s message %zu (%zu bytes) at offset %zu, the "
			  "messages before it end at %zu", what, xl_path[pl[i].p], pl[i].seq,
			  pl[i].len, pl[i].off, used);
		used += pl[i].len;
		for (size_t j = 0; j < i; j++)
			XT_ASSERT(pl[j].p != pl[i].p || pl[j].seq < pl[i].seq,
				  "%s: the %s sender's message %zu lies before its message %zu",
				  what, xl_path[pl[i].p], pl[j].seq, pl[i].seq);
	}
	return used;
}

/*
 * The receiver with two multi-receive buffers of size[] bytes (base[]
 * gets them, ctx[] their contexts) and FI_OPT_MIN_MULTI_RECV min, posted
 * before both senders send their bursts b, or after the messages had time
 * to arrive (unexpected).
 */
static void start_two_buffers(struct xl_rig *r, struct burst b[2], unsigned char *base[2],
			      const size_t size[2], size_t min, bool unexpected,
			      void *ctx[2])
{
	base[0] = xl_buf(size[0]);
	base[1] = xl_buf(size[1]);
	xl_start(r, FI_MULTI_RECV);
	set_min(r, min);
	if (unexpected) {
		send_both(r, b);
		xl_settle(r);
	}
	for (int i = 0; i < 2; i++)
		post_multi(r, base[i], size[i], ctx[i]);
	if (!unexpected)
		send_both(r, b);
}

/* ---- both paths into one buffer, then one message too large ---- */

static const size_t fill_lens[2][6] = {
	{ 100, 70000, 7, 16385, 4096, 1 },
	{ 200, 16320, 16321, 50000, 3, 9000 },
};
#define FILL_MIN	1024
#define NEXT_LEN	123

/*
 * _i: unexpected (bit 0), the path of the message that does not fit (bit
 * 1), whether it leaves 30000 bytes, a network message too large to be
 * eager, or 3000 (bit 2).  Both senders' bursts fill the buffer but for
 * that; the message of the path chosen is larger by a few thousand bytes;
 * then the other path's next message goes to the second buffer.
 */
START_TEST(both_paths_pack_one_buffer_and_the_message_that_does_not_fit_is_truncated)
{
	bool unexpected = _i & 1;
	int over = (_i >> 1) & 1;
	size_t left = (_i & 4) ? 30000 : 3000;
	size_t over_len = left + ((_i & 4) ? 10000 : 2000);
	struct burst b[2], b2[2] = { { .n = 0 }, { .n = 0 } };
	struct placed pl[12];
	size_t total = 0, n = 0, used;
	unsigned char *base[2];
	size_t size[2];
	char c1, c2;
	void *ctx[2] = { &c1, &c2 };
	struct xt_comp c;
	struct xl_rig r;

	for (int p = 0; p < 2; p++) {
		make_burst(&b[p], p, fill_lens[p], N(fill_lens[p]));
		for (size_t i = 0; i < b[p].n; i++)
			total += b[p].m[i].len;
	}
	size[0] = total + left;
	size[1] = 4096;
	start_two_buffers(&r, b, base, size, FILL_MIN, unexpected, ctx);
	for (n = 0; n < b[0].n + b[1].n; n++) {
		xt_wait_rx(&r.x, &c);
		pl[n] = check_placed(&r, b, &c, base, size, ctx);
		XT_ASSERT(pl[n].ctx == &c1, "%s message %zu went to the second buffer",
			  xl_path[pl[n].p], pl[n].seq);
		XT_ASSERT(!(c.e.flags & FI_MULTI_RECV), "%s message %zu: FI_MULTI_RECV with %zu "
			  "bytes or more left (min %d)", xl_path[pl[n].p], pl[n].seq, left,
			  FILL_MIN);
	}
	used = check_tiling(pl, n, "buffer 1");
	XT_ASSERT(used == total, "buffer 1 holds %zu bytes, %zu were sent", used, total);
	for (int p = 0; p < 2; p++)
		xl_sent(&r, p, b[p].n, false);

	/* The message that does not fit: truncated into what is left, releasing. */
	b2[over].n = 1;
	b2[over].m[0] = (struct xt_burst_msg){ .len = over_len, .seed = xl_seed(over, 50),
					       .flags = FI_COMPLETION };
	xl_send(&r, over, b2[over].m, 1);
	xt_expect_err(r.x.rx, r.x.tx, &c);
	XT_ASSERT(c.err.err == FI_ETRUNC, "%s message of %zu bytes into %zu left: err %d (%s)",
		  xl_path[over], over_len, left, c.err.err, fi_strerror(abs(c.err.err)));
	XT_ASSERT(c.err.op_context == &c1, "truncation context %p, buffer 1 is %p",
		  c.err.op_context, (void *)&c1);
	XT_ASSERT(c.err.len == left, "truncation len %zu, %zu bytes were left", c.err.len, left);
	XT_ASSERT(c.err.olen == over_len - left, "olen %zu, expected %zu", c.err.olen,
		  over_len - left);
	XT_ASSERT(c.err.flags & FI_MULTI_RECV, "the truncation used the buffer up: flags 0x%llx",
		  (unsigned long long)c.err.flags);
	XT_ASSERT(c.err.buf == NULL || c.err.buf == base[0] + total,
		  "truncation buf %p, expected offset %zu (%p)", c.err.buf, total,
		  (void *)(base[0] + total));
	XT_ASSERT_PATTERN(base[0] + total, left, xl_seed(over, 50), 0);
	xl_check_guard(base[0], size[0], "buffer 1");
	xl_sent(&r, over, 1, true);

	/* The buffer is released: the other path's next message takes the second. */
	b2[!over].n = 1;
	b2[!over].m[0] = (struct xt_burst_msg){ .len = NEXT_LEN, .seed = xl_seed(!over, 60),
						.flags = FI_COMPLETION };
	xl_send(&r, !over, b2[!over].m, 1);
	xt_wait_rx(&r.x, &c);
	XT_ASSERT(c.e.op_context == &c2 && c.e.buf == base[1] && c.e.len == NEXT_LEN,
		  "after the release: context %p buf %p len %zu (buffer 2: %p, %p)",
		  c.e.op_context, c.e.buf, c.e.len, (void *)&c2, (void *)base[1]);
	XT_ASSERT(!(c.e.flags & FI_MULTI_RECV), "buffer 2 released: flags 0x%llx",
		  (unsigned long long)c.e.flags);
	XT_ASSERT(c.src == r.fa[!over], "source %llu, the %s sender is %llu",
		  (unsigned long long)c.src, xl_path[!over], (unsigned long long)r.fa[!over]);
	XT_ASSERT_PATTERN(base[1], NEXT_LEN, xl_seed(!over, 60), 0);
	xl_sent(&r, !over, 1, false);
	xt_expect_none(r.x.rx, r.x.tx, 50);
	xl_stop(&r);
	free(base[0]);
	free(base[1]);
}
END_TEST

/* ---- a release while pieces of both paths are in flight ---- */

static const size_t big_lens[2][5] = {
	{ XL_MIB, 3000, XL_MIB + 5, 64, 200000 },
	{ XL_MIB + 13, 17, 70000, 16320, 300000 },
};
/* Above every message: none is ever truncated, the buffer is released first. */
#define BIG_MIN		(XL_MIB + 64)
#define BIG_SIZE1	(5 * XL_MIB / 2)
#define BIG_SIZE2	(4 * XL_MIB)

/*
 * _i: unexpected.  Large messages of both paths at once, more than the
 * first buffer holds: it is released once less than BIG_MIN is left, and
 * the completion that says so is its last, however the pieces of the two
 * paths finish; the rest fill the second buffer.
 */
START_TEST(the_release_comes_on_the_last_completion_whichever_path_finishes_last)
{
	bool unexpected = _i;
	struct burst b[2];
	struct placed pl[2][10];
	size_t np[2] = { 0, 0 }, used[2], total = 0, n;
	unsigned char *base[2];
	size_t size[2] = { BIG_SIZE1, BIG_SIZE2 };
	char c1, c2;
	void *ctx[2] = { &c1, &c2 };
	bool released = false;
	struct xl_rig r;

	for (int p = 0; p < 2; p++) {
		make_burst(&b[p], p, big_lens[p], N(big_lens[p]));
		for (size_t i = 0; i < b[p].n; i++)
			total += b[p].m[i].len;
	}
	XT_ASSERT(total > BIG_SIZE1 && total - (BIG_SIZE1 - BIG_MIN) < BIG_SIZE2 - BIG_MIN,
		  "sizes: %zu bytes sent", total);
	start_two_buffers(&r, b, base, size, BIG_MIN, unexpected, ctx);
	for (n = 0; n < b[0].n + b[1].n; n++) {
		struct xt_comp c;
		struct placed one;
		int k;

		xt_wait_rx(&r.x, &c);
		one = check_placed(&r, b, &c, base, size, ctx);
		k = one.ctx == &c2;
		XT_ASSERT(!k || !(c.e.flags & FI_MULTI_RECV), "buffer 2 (%zu bytes, min %zu) "
			  "released", (size_t)BIG_SIZE2, (size_t)BIG_MIN);
		XT_ASSERT(k || !released, "%s message %zu completed into buffer 1 after its "
			  "FI_MULTI_RECV", xl_path[one.p], one.seq);
		if (!k && (c.e.flags & FI_MULTI_RECV))
			released = true;
		pl[k][np[k]++] = one;
	}
	XT_ASSERT(released, "buffer 1 was never released (%zu messages in it)", np[0]);
	used[0] = check_tiling(pl[0], np[0], "buffer 1");
	used[1] = check_tiling(pl[1], np[1], "buffer 2");
	XT_ASSERT(used[0] + used[1] == total, "the buffers hold %zu + %zu bytes, %zu were sent",
		  used[0], used[1], total);
	/* Released by its last message, not before: pl[0] is sorted by offset. */
	XT_ASSERT(size[0] - used[0] < BIG_MIN, "buffer 1 released with %zu bytes left (min %zu)",
		  size[0] - used[0], (size_t)BIG_MIN);
	XT_ASSERT(size[0] - pl[0][np[0] - 1].off >= BIG_MIN,
		  "buffer 1 took a message at offset %zu, with less than min %zu left",
		  pl[0][np[0] - 1].off, (size_t)BIG_MIN);
	/* Each sender's messages of buffer 2 come after those of buffer 1. */
	for (size_t i = 0; i < np[1]; i++)
		for (size_t j = 0; j < np[0]; j++)
			XT_ASSERT(pl[0][j].p != pl[1][i].p || pl[0][j].seq < pl[1][i].seq,
				  "the %s sender's message %zu is in buffer 2, its message %zu in "
				  "buffer 1", xl_path[pl[1][i].p], pl[1][i].seq, pl[0][j].seq);
	xl_check_guard(base[0], size[0], "buffer 1");
	xt_expect_none(r.x.rx, r.x.tx, 50);
	for (int p = 0; p < 2; p++)
		xl_sent(&r, p, b[p].n, false);
	xl_stop(&r);
	free(base[0]);
	free(base[1]);
}
END_TEST

/* ---- a small message releases the buffer while a large one is still arriving ---- */

#define SLOW_LEN	(4 * XL_MIB)
#define QUICK_LEN	2000
#define QUICK_MIN	2048
#define ROUNDS		4

/*
 * _i: the path of the large message (the other sends the small one right
 * after it).  Each round posts a buffer that the two fill but for 1000
 * bytes (< min): the second to match releases it, and the small message
 * is usually done long before the large one (on the remote path, its
 * payload is still being fetched): FI_MULTI_RECV must wait for the last.
 */
START_TEST(a_small_message_releases_the_buffer_while_a_large_one_is_still_arriving)
{
	int slow = _i;
	size_t size = SLOW_LEN + QUICK_LEN + 1000;
	unsigned char *base[2] = { xl_buf(size), NULL };
	size_t sizes[2] = { size, 0 };
	char ctx_byte[ROUNDS];
	struct burst b[2];
	struct xl_rig r;

	make_burst(&b[slow], slow, (const size_t[]){ SLOW_LEN }, 1);
	make_burst(&b[!slow], !slow, (const size_t[]){ QUICK_LEN }, 1);
	xl_start(&r, FI_MULTI_RECV);
	set_min(&r, QUICK_MIN);
	for (int round = 0; round < ROUNDS; round++) {
		void *ctx[2] = { &ctx_byte[round], NULL };
		struct placed pl[2];

		memset(base[0], 0xa5, size + XL_GUARD);
		post_multi(&r, base[0], size, ctx[0]);
		xl_send(&r, slow, b[slow].m, 1);
		xl_send(&r, !slow, b[!slow].m, 1);
		for (int n = 0; n < 2; n++) {
			struct xt_comp c;

			xt_wait_rx(&r.x, &c);
			pl[n] = check_placed(&r, b, &c, base, sizes, ctx);
			XT_ASSERT(!(c.e.flags & FI_MULTI_RECV) == (n == 0),
				  "round %d, completion %d (%s message, offset %zu): FI_MULTI_RECV %s",
				  round, n, xl_path[pl[n].p], pl[n].off,
				  c.e.flags & FI_MULTI_RECV ? "set" : "not set");
		}
		XT_ASSERT(check_tiling(pl, 2, "the buffer") == SLOW_LEN + QUICK_LEN,
			  "round %d: the buffer holds other than both messages", round);
		xl_check_guard(base[0], size, "the buffer");
		xt_expect_none(r.x.rx, r.x.tx, 20);
		for (int p = 0; p < 2; p++)
			xl_sent(&r, p, 1, false);
	}
	xl_stop(&r);
	free(base[0]);
}
END_TEST

static Suite *multi_recv_paths_suite(void)
{
	Suite *s = suite_create("multi_recv_paths");
	TCase *tc = tcase_create("both paths");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc,
		both_paths_pack_one_buffer_and_the_message_that_does_not_fit_is_truncated, 0, 8);
	tcase_add_loop_test(tc,
		the_release_comes_on_the_last_completion_whichever_path_finishes_last, 0, 2);
	tcase_add_loop_test(tc,
		a_small_message_releases_the_buffer_while_a_large_one_is_still_arriving, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return xl_main(multi_recv_paths_suite());
}
