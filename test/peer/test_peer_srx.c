/*
 * xshm as a peer under the reference owner's shared receive context: both
 * receive flows (receive posted first; message first, queued, then started),
 * every message size of test_sizes, tag matching and directed receives done
 * by the owner, discard of small and large messages, FI_ADDR_NOTAVAIL
 * sources resolved by foreach_unspec_addr after fi_av_insert, truncation
 * through writeerr, several xshm endpoints under one owner, free_entry
 * accounting over a long run of mixed sizes, and the limit on unexpected
 * data (FI_XSHM_UNEXP_BYTES_MAX) holding messages back.
 *
 * Senders are standalone endpoints of the peer provider in forked children;
 * the owner and its peer endpoint(s) live in the test process.  xshm alone:
 * the unexpected-data limit, and messages the owner still holds when the
 * endpoint closes.
 */
#include "peer_common.h"

#include <stdlib.h>
#include <string.h>

#include "shm/layout.h"

#define KiB	1024
#define MiB	(1024 * 1024)

static const size_t sizes[] = {
	0, 1, XSHM_INLINE_MAX - 1, XSHM_INLINE_MAX, XSHM_INLINE_MAX + 1,
	4095, 4096, 4097, 16383, 16384, 16385,
	2 * 16384 - 1, 2 * 16384, 2 * 16384 + 1, 4 * MiB + 1,
};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

static uint64_t kind_flags(bool tagged)
{
	return FI_RECV | (tagged ? FI_TAGGED : FI_MSG);
}

/*
 * Does get call g give the message's size?  A peer whose get_tag has no size
 * argument (cfg.get_tag_no_size) is let off here: get_calls_give_the_size
 * alone checks it, so that this one departure fails one case.
 */
static bool size_ok(const struct owner *o, const struct owner_get_rec *g, size_t size)
{
	return g->size == size || (g->tagged && o->cfg.get_tag_no_size);
}

/* Asserts the get call number i was for this message with this outcome. */
static void check_get(struct owner *o, size_t i, bool tagged, fi_addr_t addr, size_t size,
		      uint64_t tag, int ret)
{
	const struct owner_get_rec *g;

	PT_ASSERT(o->ngets > i, "only %zu get calls", o->ngets);
	g = &o->gets[i];
	PT_ASSERT(g->tagged == tagged, "get call %zu was get_%s", i, g->tagged ? "tag" : "msg");
	PT_ASSERT(g->addr == addr, "get call %zu: addr 0x%llx, expected 0x%llx", i,
		  (unsigned long long)g->addr, (unsigned long long)addr);
	PT_ASSERT(size_ok(o, g, size), "get call %zu: size %zu, expected %zu", i, g->size, size);
	PT_ASSERT(!tagged || g->tag == tag, "get call %zu: tag 0x%llx, expected 0x%llx", i,
		  (unsigned long long)g->tag, (unsigned long long)tag);
	PT_ASSERT(g->ret == ret, "get call %zu: owner returned %d, expected %d", i, g->ret, ret);
}

/*
 * One message of size bytes from the child to the owner, the receive posted
 * first or the message queued unexpected first; checked byte by byte.
 */
static void transfer(size_t size, bool tagged, bool unexpected)
{
	struct xt_send_cmd sc = pt_cmd(tagged, size, size + 7, PT_TAG);
	unsigned char *buf = pt_buf(size);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	if (unexpected) {
		/* Large messages may be pulled after the match: the send need not
		 * complete before the receive is posted. */
		pt_send(&r.o, &r.p[0], &sc);
		/* What a peek finds queued (the reference owner: its entry). */
		c = pt_wait_queued(&r.o, tagged, FI_ADDR_UNSPEC, PT_TAG, 0);
		PT_ASSERT(!c.is_err && c.e.len == size, "queued message: size %zu", c.e.len);
		PT_ASSERT((c.e.flags & (FI_RECV | FI_MSG | FI_TAGGED)) == kind_flags(tagged),
			  "queued message flags 0x%llx", (unsigned long long)c.e.flags);
		PT_ASSERT(!tagged || c.e.tag == PT_TAG, "queued message tag 0x%llx",
			  (unsigned long long)c.e.tag);
		if (owner_internals()) {
			/* (xlink reports a source only with FI_SOURCE) */
			PT_ASSERT(c.src == r.p[0].addr, "queued entry: addr 0x%llx",
				  (unsigned long long)c.src);
			PT_ASSERT(r.o.st.queue_calls == 1, "%llu queue calls",
				  (unsigned long long)r.o.st.queue_calls);
		}
		pt_none(&r.o, 20);
	}
	PT_ASSERT_RC(tagged ? owner_post_trecv(&r.o, buf, size, FI_ADDR_UNSPEC, PT_TAG, 0, buf)
			    : owner_post_recv(&r.o, buf, size, FI_ADDR_UNSPEC, buf), 0);
	if (!unexpected)
		pt_send(&r.o, &r.p[0], &sc);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, tagged, PT_TAG, size);
	pt_check_data(buf, size, size + 7);
	{
		struct xt_send_result res = pt_send_done(&r.o, &r.p[0]);

		PT_ASSERT(res.completed && !res.is_err, "send: completed %d err %d",
			  res.completed, res.err);
	}
	if (owner_internals()) {
		PT_ASSERT(r.o.ngets == 1, "%zu get calls for one message", r.o.ngets);
		check_get(&r.o, 0, tagged, r.p[0].addr, size, PT_TAG,
			  unexpected ? -FI_ENOENT : 0);
		PT_ASSERT(r.o.st.starts == (unexpected ? 1u : 0u), "%llu starts",
			  (unsigned long long)r.o.st.starts);
		PT_ASSERT(r.o.st.entries_freed == 1, "%llu entries freed",
			  (unsigned long long)r.o.st.entries_freed);
	}
	pt_check_entries_balanced(&r.o);
	pt_none(&r.o, 20);
	pt_rig_stop(&r);
	free(buf);
}

START_TEST(flow_posted_first_tagged)
{
	transfer(100, true, false);
}
END_TEST

START_TEST(flow_posted_first_untagged)
{
	transfer(100, false, false);
}
END_TEST

START_TEST(flow_message_first_tagged_queue_then_start)
{
	transfer(100, true, true);
}
END_TEST

START_TEST(flow_message_first_untagged_queue_then_start)
{
	transfer(100, false, true);
}
END_TEST

/*
 * fi_peer(3): get_msg(srx, addr, size, entry), get_tag(srx, addr, size, tag,
 * entry): "The peer provider will pass in the relevant fields"; "The size
 * parameter is needed by the owner for adjusting FI_MULTI_RECV entries."
 * An owner whose get_tag has no size (libfabric's headers up to 1.22) is
 * given none for tagged messages: only get_msg's is checked then.
 */
START_TEST(get_calls_give_the_size)
{
	unsigned char *buf = pt_buf(5000);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	for (int i = 0; i < 4; i++) {
		bool tagged = i % 2, unexpected = i / 2;
		size_t len = 1000 + 1000 * i;
		struct xt_send_cmd sc = pt_cmd(tagged, len, 70 + i, PT_TAG);

		if (unexpected) {
			pt_send_ok(&r.o, &r.p[0], &sc);
			pt_wait_unexpected(&r.o, tagged, 1);
		}
		PT_ASSERT_RC(tagged ? owner_post_trecv(&r.o, buf, 5000, FI_ADDR_UNSPEC, PT_TAG, 0, buf)
				    : owner_post_recv(&r.o, buf, 5000, FI_ADDR_UNSPEC, buf), 0);
		if (!unexpected)
			pt_send_ok(&r.o, &r.p[0], &sc);
		pt_comp(&r.o, &c);
		pt_check_recv(&c, buf, tagged, PT_TAG, len);
		PT_ASSERT(r.o.ngets == (size_t)i + 1, "%zu get calls", r.o.ngets);
		PT_ASSERT(r.o.gets[i].size == len || (tagged && r.o.cfg.get_tag_no_size),
			  "get_%s of a %zu-byte message (%s) gave size %zu",
			  tagged ? "tag" : "msg", len, unexpected ? "unexpected" : "posted first",
			  r.o.gets[i].size);
	}
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(sizes_posted_first_tagged)
{
	transfer(sizes[_i], true, false);
}
END_TEST

START_TEST(sizes_posted_first_untagged)
{
	transfer(sizes[_i], false, false);
}
END_TEST

START_TEST(sizes_message_first_tagged)
{
	transfer(sizes[_i], true, true);
}
END_TEST

START_TEST(sizes_message_first_untagged)
{
	transfer(sizes[_i], false, true);
}
END_TEST

/* ---- matching, done by the owner ---- */

static void send_tag(struct pt_rig *r, int who, uint64_t tag, uint64_t seed)
{
	struct xt_send_cmd sc = pt_cmd(true, 64, seed, tag);

	pt_send_ok(&r->o, &r->p[who], &sc);
}

static void expect_recv(struct owner *o, void *buf, uint64_t tag, uint64_t seed)
{
	struct owner_comp c;

	pt_comp(o, &c);
	pt_check_recv(&c, buf, true, tag, 64);
	pt_check_data(buf, 64, seed);
}

START_TEST(match_tag_ignore_bits_and_posting_order)
{
	unsigned char *b1 = pt_buf(64), *b2 = pt_buf(64), *b3 = pt_buf(64), *b4 = pt_buf(64);
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, b1, 64, FI_ADDR_UNSPEC, 0x1100, 0xff, b1), 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, b2, 64, FI_ADDR_UNSPEC, 0x1100, 0, b2), 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, b3, 64, FI_ADDR_UNSPEC, 0x2200, 0, b3), 0);
	send_tag(&r, 0, 0x2200, 1);		/* only the third accepts it */
	expect_recv(&r.o, b3, 0x2200, 1);
	send_tag(&r, 0, 0x1100, 2);		/* the first posted that accepts it */
	expect_recv(&r.o, b1, 0x1100, 2);
	send_tag(&r, 0, 0x11ab, 3);		/* the exact 0x1100 does not accept it */
	pt_wait_unexpected(&r.o, true, 1);
	pt_none(&r.o, 20);
	send_tag(&r, 0, 0x1100, 4);
	expect_recv(&r.o, b2, 0x1100, 4);
	PT_ASSERT_RC(owner_post_trecv(&r.o, b4, 64, FI_ADDR_UNSPEC, 0x1100, 0xff, b4), 0);
	expect_recv(&r.o, b4, 0x11ab, 3);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(b1);
	free(b2);
	free(b3);
	free(b4);
}
END_TEST

/*
 * Each message has a tag of its own (PT_TAG, and its number in the bits
 * from 32), which the receives ignore: each is waited for queued (a peek
 * finds its tag), and each receive could take any of them.
 */
START_TEST(match_unexpected_in_arrival_order)
{
	const uint64_t ignore = 0xffffffffULL << 32;
	unsigned char *b[3];
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	for (int i = 0; i < 3; i++) {
		send_tag(&r, 0, PT_TAG | (uint64_t)(i + 1) << 32, 11 + i);
		pt_wait_queued(&r.o, true, FI_ADDR_UNSPEC, PT_TAG | (uint64_t)(i + 1) << 32, 0);
	}
	if (owner_internals())
		PT_ASSERT(owner_unexpected_count(&r.o, true) == 3, "%zu queued",
			  owner_unexpected_count(&r.o, true));
	for (int i = 0; i < 3; i++) {
		b[i] = pt_buf(64);
		PT_ASSERT_RC(owner_post_trecv(&r.o, b[i], 64, FI_ADDR_UNSPEC, PT_TAG, ignore, b[i]),
			     0);
		expect_recv(&r.o, b[i], PT_TAG | (uint64_t)(i + 1) << 32, 11 + i);
		free(b[i]);
	}
	if (owner_internals())
		PT_ASSERT(r.o.st.starts == 3, "%llu starts", (unsigned long long)r.o.st.starts);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
}
END_TEST

START_TEST(match_directed_receives_by_source)
{
	unsigned char *bd = pt_buf(64), *bu = pt_buf(64);
	struct pt_rig r;
	fi_addr_t fa, fb;

	pt_rig_start(&r, NULL, 2, 0);
	fa = r.p[0].addr;
	fb = r.p[1].addr;
	PT_ASSERT(fa != fb, "both senders have address 0x%llx", (unsigned long long)fa);
	/* Posted first: A's message skips the receive directed at B. */
	PT_ASSERT_RC(owner_post_trecv(&r.o, bd, 64, fb, PT_TAG, 0, bd), 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, bu, 64, FI_ADDR_UNSPEC, PT_TAG, 0, bu), 0);
	send_tag(&r, 0, PT_TAG, 1);
	expect_recv(&r.o, bu, PT_TAG, 1);
	if (owner_internals())
		check_get(&r.o, 0, true, fa, 64, PT_TAG, 0);
	send_tag(&r, 1, PT_TAG, 2);
	expect_recv(&r.o, bd, PT_TAG, 2);
	if (owner_internals())
		check_get(&r.o, 1, true, fb, 64, PT_TAG, 0);
	/* Message first: a receive directed at B takes B's, not A's older one. */
	send_tag(&r, 0, PT_TAG, 3);
	send_tag(&r, 1, PT_TAG, 4);
	pt_wait_queued(&r.o, true, fa, PT_TAG, 0);
	pt_wait_queued(&r.o, true, fb, PT_TAG, 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, bd, 64, fb, PT_TAG, 0, bd), 0);
	expect_recv(&r.o, bd, PT_TAG, 4);
	PT_ASSERT_RC(owner_post_trecv(&r.o, bu, 64, fa, PT_TAG, 0, bu), 0);
	expect_recv(&r.o, bu, PT_TAG, 3);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(bd);
	free(bu);
}
END_TEST

/* The message is scattered over the owner's three buffers. */
START_TEST(match_scatter_into_owner_iovs)
{
	const size_t len[3] = { 100, 5000, 20000 }, msg = 25000;
	bool unexpected = _i;
	struct xt_send_cmd sc = pt_cmd(true, msg, 99, PT_TAG);
	unsigned char *b[3];
	struct iovec iov[3];
	struct owner_comp c;
	struct pt_rig r;
	size_t off = 0;
	char ctx;

	for (int i = 0; i < 3; i++) {
		b[i] = pt_buf(len[i]);
		iov[i] = (struct iovec){ .iov_base = b[i], .iov_len = len[i] };
	}
	pt_rig_start(&r, NULL, 1, 0);
	pt_send(&r.o, &r.p[0], &sc);
	if (unexpected)
		pt_wait_unexpected(&r.o, true, 1);
	PT_ASSERT_RC(owner_post(&r.o, true, iov, 3, FI_ADDR_UNSPEC, PT_TAG, 0, &ctx), 0);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, &ctx, true, PT_TAG, msg);
	for (int i = 0; i < 3; i++) {
		size_t n = msg - off < len[i] ? msg - off : len[i];
		ssize_t bad = xt_mismatch(b[i], n, 99, off);

		PT_ASSERT(bad < 0, "iov %d differs at byte %zd", i, bad);
		for (size_t k = n; k < len[i] + PT_GUARD; k++)
			PT_ASSERT(b[i][k] == PT_GUARD_BYTE, "iov %d: byte %zu written", i, k);
		off += n;
	}
	PT_ASSERT(pt_send_done(&r.o, &r.p[0]).completed, "send did not complete");
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	for (int i = 0; i < 3; i++)
		free(b[i]);
}
END_TEST

/* ---- discard ---- */

/* After a discard: nothing completes, and the next message is delivered. */
static void after_discard(struct pt_rig *r, bool tagged)
{
	unsigned char *buf = pt_buf(64);
	struct xt_send_cmd sc = pt_cmd(tagged, 64, 77, PT_TAG);
	struct owner_comp c;

	pt_none(&r->o, 300);
	pt_wait_none_held(&r->o);
	if (owner_internals()) {
		PT_ASSERT(r->o.st.discards == 1, "%llu discards",
			  (unsigned long long)r->o.st.discards);
		PT_ASSERT(r->o.st.entries_freed == 1, "discarded entry freed %llu times",
			  (unsigned long long)r->o.st.entries_freed);
		PT_ASSERT(r->o.st.writes == 0 && r->o.st.writeerrs == 0,
			  "%llu writes, %llu writeerrs for a discarded message",
			  (unsigned long long)r->o.st.writes,
			  (unsigned long long)r->o.st.writeerrs);
	}
	PT_ASSERT_RC(tagged ? owner_post_trecv(&r->o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf)
			    : owner_post_recv(&r->o, buf, 64, FI_ADDR_UNSPEC, buf), 0);
	pt_send_ok(&r->o, &r->p[0], &sc);
	pt_comp(&r->o, &c);
	pt_check_recv(&c, buf, tagged, PT_TAG, 64);
	pt_check_data(buf, 64, 77);
	pt_check_entries_balanced(&r->o);
	if (owner_internals())
		PT_ASSERT(r->o.st.entries_freed == 2, "%llu entries freed",
			  (unsigned long long)r->o.st.entries_freed);
	free(buf);
}

/*
 * A queued message is discarded, at once or after a moment of progress: no
 * completion, entry freed once, and the sender's send still completes.
 */
static void discard_queued(bool tagged, size_t size, int settle_ms)
{
	struct xt_send_cmd sc = pt_cmd(tagged, size, 5, PT_TAG);
	struct xt_send_result res;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	pt_send(&r.o, &r.p[0], &sc);
	pt_wait_unexpected(&r.o, tagged, 1);
	if (settle_ms)
		pt_none(&r.o, settle_ms);
	PT_ASSERT_RC(owner_discard(&r.o, tagged, FI_ADDR_UNSPEC, PT_TAG, 0), 0);
	PT_ASSERT(owner_unexpected_count(&r.o, tagged) == 0, "still queued");
	res = pt_send_done(&r.o, &r.p[0]);
	PT_ASSERT(res.completed && !res.is_err,
		  "the discarded message's send: completed %d, err %d (%s)", res.completed,
		  res.err, fi_strerror(abs(res.err)));
	after_discard(&r, tagged);
	pt_rig_stop(&r);
}

START_TEST(discard_small_tagged)
{
	discard_queued(true, 64, 50);
}
END_TEST

START_TEST(discard_small_untagged)
{
	discard_queued(false, 64, 50);
}
END_TEST

START_TEST(discard_large_after_a_moment)
{
	discard_queued(_i, 100 * KiB, 200);
}
END_TEST

/* Discarded as soon as it is queued; the sender still completes. */
START_TEST(discard_large_at_once_sender_completes)
{
	discard_queued(_i, 4 * MiB + 1, 0);
}
END_TEST

/* ---- FI_ADDR_NOTAVAIL and foreach_unspec_addr ---- */

START_TEST(notavail_resolved_by_foreach_unspec_addr_after_av_insert)
{
	unsigned char *ba = pt_buf(64), *bb = pt_buf(64);
	const struct fi_peer_rx_entry *e;
	uint64_t foreach_before = 0;
	struct owner_comp c;
	struct pt_rig r;
	fi_addr_t fa, fb;

	pt_rig_start(&r, NULL, 2, 1u << 0);	/* A is not in the owner's AV */
	fb = r.p[1].addr;
	PT_ASSERT_RC(owner_post_trecv(&r.o, bb, 64, fb, PT_TAG, 0, bb), 0);
	send_tag(&r, 0, PT_TAG, 1);
	pt_wait_unexpected(&r.o, true, 1);
	if (owner_internals()) {
		check_get(&r.o, 0, true, FI_ADDR_NOTAVAIL, 64, PT_TAG, -FI_ENOENT);
		e = owner_unexpected(&r.o, true, 0);
		PT_ASSERT(e->addr == FI_ADDR_NOTAVAIL, "queued with addr 0x%llx",
			  (unsigned long long)e->addr);
	}
	/* Not B's: a receive directed at B finds nothing queued, nor takes it. */
	PT_ASSERT_RC(owner_peek(&r.o, true, fb, PT_TAG, 0, &c), -FI_ENOMSG);
	pt_none(&r.o, 20);

	if (owner_internals())
		foreach_before = r.o.st.foreach_calls;
	fa = pt_insert(&r.o, &r.p[0]);
	if (owner_internals()) {
		PT_ASSERT(r.o.st.foreach_calls > foreach_before,
			  "fi_av_insert did not call foreach_unspec_addr");
		PT_ASSERT(r.o.st.get_addr_calls >= 1, "get_addr was not called");
		e = owner_unexpected(&r.o, true, 0);
		PT_ASSERT(e && e->addr == fa, "get_addr gave 0x%llx, A was inserted as 0x%llx",
			  e ? (unsigned long long)e->addr : 0ULL, (unsigned long long)fa);
	}
	/* Resolved at the insert: a receive directed at A finds it queued now. */
	PT_ASSERT_RC(owner_peek(&r.o, true, fa, PT_TAG, 0, &c), 0);

	PT_ASSERT_RC(owner_post_trecv(&r.o, ba, 64, fa, PT_TAG, 0, ba), 0);
	expect_recv(&r.o, ba, PT_TAG, 1);
	/* A's later messages carry its address from the start. */
	send_tag(&r, 0, PT_TAG, 2);
	pt_wait_queued(&r.o, true, fa, PT_TAG, 0);
	if (owner_internals())
		check_get(&r.o, 1, true, fa, 64, PT_TAG, -FI_ENOENT);
	PT_ASSERT_RC(owner_post_trecv(&r.o, ba, 64, fa, PT_TAG, 0, ba), 0);
	expect_recv(&r.o, ba, PT_TAG, 2);
	/* The receive directed at B is still there for B. */
	send_tag(&r, 1, PT_TAG, 3);
	expect_recv(&r.o, bb, PT_TAG, 3);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(ba);
	free(bb);
}
END_TEST

START_TEST(notavail_source_matches_unspec_receives)
{
	unsigned char *b = pt_buf(64);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 1u << 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, b, 64, FI_ADDR_UNSPEC, PT_TAG, 0, b), 0);
	send_tag(&r, 0, PT_TAG, 1);
	expect_recv(&r.o, b, PT_TAG, 1);
	if (owner_internals())
		check_get(&r.o, 0, true, FI_ADDR_NOTAVAIL, 64, PT_TAG, 0);
	send_tag(&r, 0, PT_TAG, 2);
	pt_wait_unexpected(&r.o, true, 1);
	PT_ASSERT_RC(owner_post_trecv(&r.o, b, 64, FI_ADDR_UNSPEC, PT_TAG, 0, b), 0);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, b, true, PT_TAG, 64);
	pt_check_data(b, 64, 2);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(b);
}
END_TEST

/* ---- truncation ---- */

START_TEST(truncation_completes_through_writeerr)
{
	static const size_t msg_sizes[] = { 150, 300, 100 * KiB };
	const size_t cap = 100, size = msg_sizes[_i / 2];
	bool unexpected = _i % 2;
	struct owner_cfg cfg = { .cntrs = true };
	struct xt_send_cmd sc = pt_cmd(true, size, 8, PT_TAG);
	unsigned char *buf = pt_buf(cap);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	if (unexpected) {
		/* A peek that finds nothing is no failed receive: not counted below. */
		PT_ASSERT_RC(owner_peek(&r.o, true, FI_ADDR_UNSPEC, PT_TAG, 0, &c), -FI_ENOMSG);
		pt_send(&r.o, &r.p[0], &sc);
		pt_wait_unexpected(&r.o, true, 1);
	}
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, cap, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	if (!unexpected)
		pt_send(&r.o, &r.p[0], &sc);
	pt_err(&r.o, &c);
	{
		struct xt_send_result res = pt_send_done(&r.o, &r.p[0]);

		PT_ASSERT(res.completed, "the truncated message's send did not complete");
	}
	PT_ASSERT(c.origin == OWNER_FROM_PEER, "origin %d", c.origin);
	PT_ASSERT(c.err.err == FI_ETRUNC, "err %d, expected FI_ETRUNC", c.err.err);
	PT_ASSERT(c.err.olen == size - cap, "olen %zu, expected %zu", c.err.olen, size - cap);
	PT_ASSERT(c.err.op_context == buf, "context %p", c.err.op_context);
	PT_ASSERT((c.err.flags & (FI_RECV | FI_TAGGED | FI_MSG | FI_SEND)) == (FI_RECV | FI_TAGGED),
		  "flags 0x%llx", (unsigned long long)c.err.flags);
	PT_ASSERT(c.err.tag == PT_TAG, "tag 0x%llx", (unsigned long long)c.err.tag);
	/* (through the API: the error came first, and nothing follows it) */
	if (owner_internals())
		PT_ASSERT(r.o.st.writes == 0, "%llu writes besides the writeerr",
			  (unsigned long long)r.o.st.writes);
	pt_check_data(buf, cap, 8);
	PT_ASSERT(owner_cntr_err(&r.o, &r.o.rx_cntr) == 1, "rx counter errors %llu",
		  (unsigned long long)r.o.rx_cntr.err);
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 0, "rx counter %llu",
		  (unsigned long long)r.o.rx_cntr.value);
	pt_check_entries_balanced(&r.o);
	if (owner_internals())
		PT_ASSERT(r.o.st.entries_freed == 1, "%llu frees",
			  (unsigned long long)r.o.st.entries_freed);
	pt_none(&r.o, 20);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/* ---- several xshm endpoints under one owner ---- */

/* Receives post through endpoint ep; the reference owner has one SRX for all. */
static void post_on(struct owner *o, int ep, void *buf, size_t len, fi_addr_t src,
		    uint64_t tag)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };

	PT_ASSERT_RC(owner_post_on(o, ep, true, &iov, 1, src, tag, 0, buf), 0);
}

/*
 * Three endpoints, one CQ and one counter; one SRX under the reference
 * owner, a receive queue per endpoint under xlink (each receive is posted
 * through the endpoint its sender sends to).
 */
START_TEST(several_endpoints_share_one_srx_cq_and_counter)
{
	struct owner_cfg cfg = { .nep = 3, .cntrs = true };
	const size_t len[3] = { 64, 5000, 40000 };
	unsigned char *b[3];
	struct owner_comp c;
	struct pt_rig r;
	bool seen[3] = { false };

	pt_rig_start(&r, &cfg, 3, 0);
	PT_ASSERT(r.p[0].addr != r.p[1].addr && r.p[1].addr != r.p[2].addr &&
		  r.p[0].addr != r.p[2].addr, "senders share addresses");
	/* (names are bytes: xshm's a string, xlink's binary) */
	for (int i = 0; i < 3; i++)
		PT_ASSERT(r.o.namelen[i] != r.o.namelen[(i + 1) % 3] ||
			  memcmp(r.o.name[i], r.o.name[(i + 1) % 3], r.o.namelen[i]) != 0,
			  "endpoints %d and %d have the same address", i, (i + 1) % 3);
	/* Posted first: one receive per tag, each sender to its own endpoint. */
	for (int i = 0; i < 3; i++) {
		struct xt_send_cmd sc = pt_cmd(true, len[i], 10 + i, 0x100 + i);

		b[i] = pt_buf(len[i]);
		post_on(&r.o, i, b[i], len[i], FI_ADDR_UNSPEC, 0x100 + i);
		pt_send(&r.o, &r.p[i], &sc);
	}
	for (int n = 0; n < 3; n++) {
		int i;

		pt_comp(&r.o, &c);
		for (i = 0; i < 3 && c.e.op_context != b[i]; i++)
			;
		PT_ASSERT(i < 3 && !seen[i], "completion with context %p", c.e.op_context);
		seen[i] = true;
		pt_check_recv(&c, b[i], true, 0x100 + i, len[i]);
		pt_check_data(b[i], len[i], 10 + i);
	}
	for (int i = 0; i < 3; i++)
		PT_ASSERT(pt_send_done(&r.o, &r.p[i]).completed, "send %d did not complete", i);
	/* Message first, one tag: directed receives pick each sender's message. */
	for (int i = 0; i < 3; i++) {
		struct xt_send_cmd sc = pt_cmd(true, len[i], 20 + i, 0x200);

		pt_send(&r.o, &r.p[i], &sc);
		pt_wait_unexpected(&r.o, true, (size_t)i + 1);
		pt_wait_queued(&r.o, true, r.p[i].addr, 0x200, 0);
	}
	for (int i = 2; i >= 0; i--) {
		memset(b[i], PT_GUARD_BYTE, len[i] + PT_GUARD);
		post_on(&r.o, i, b[i], len[i], r.p[i].addr, 0x200);
		pt_comp(&r.o, &c);
		pt_check_recv(&c, b[i], true, 0x200, len[i]);
		pt_check_data(b[i], len[i], 20 + i);
	}
	for (int i = 0; i < 3; i++)
		PT_ASSERT(pt_send_done(&r.o, &r.p[i]).completed, "send %d did not complete", i);
	for (size_t g = 0; owner_internals() && g < r.o.ngets; g++) {
		int i;

		for (i = 0; i < 3 && r.o.gets[g].addr != r.p[i].addr; i++)
			;
		PT_ASSERT(i < 3, "get call %zu with addr 0x%llx", g,
			  (unsigned long long)r.o.gets[g].addr);
		PT_ASSERT(size_ok(&r.o, &r.o.gets[g], len[i]), "get call %zu: size %zu from sender %d",
			  g, r.o.gets[g].size, i);
	}
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 6, "rx counter %llu, expected 6",
		  (unsigned long long)r.o.rx_cntr.value);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	for (int i = 0; i < 3; i++)
		free(b[i]);
}
END_TEST

/* ---- free_entry accounting over a long mixed run ---- */

enum fate { POSTED_FIRST, STARTED_LATER, DISCARDED, TRUNCATED, NFATES };

START_TEST(accounting_every_entry_freed_once_over_mixed_run)
{
	static const size_t mix[] = { 0, 1, 200, 201, 16384, 16385, 40000 };
	enum { N = 112 };
	struct xt_burst_msg *msgs = calloc(N, sizeof(*msgs));
	struct xt_burst_result *res = calloc(N, sizeof(*res));
	unsigned char *buf[N];
	int msg_of[N];
	size_t cap[N];
	bool done[N] = { false };
	size_t expected = 0, got = 0;
	struct owner_comp c;
	struct pt_peer p;
	struct owner o;

	PT_ASSERT(msgs && res, "calloc");
	pt_spawn(&p, xt_burst_child, NULL);
	pt_open(&o, NULL);
	pt_connect(&o, 0, &p, true);
	for (int i = 0; i < N; i++) {
		enum fate f = i % NFATES;

		msgs[i] = (struct xt_burst_msg){
			.tagged = i % 3 != 0, .plain = true, .len = mix[i % 7],
			.seed = 1000 + i, .tag = 0x10000 + i,
		};
		cap[i] = f == TRUNCATED ? msgs[i].len / 2 : msgs[i].len;
		buf[i] = pt_buf(cap[i]);
		if (f != DISCARDED)
			expected++;
	}
	/*
	 * Untagged messages match in arrival order, so every untagged receive
	 * must fit any untagged message: untagged ones all go posted first or
	 * started later with a full buffer, never truncated or discarded.
	 */
	for (int i = 0; i < N; i++) {
		if (!msgs[i].tagged) {
			if (i % NFATES == DISCARDED)
				expected++;
			cap[i] = 64 * KiB;
			free(buf[i]);
			buf[i] = pt_buf(cap[i]);
		}
	}
	for (int i = 0; i < N; i++) {
		enum fate f = i % NFATES;

		if (msgs[i].tagged && (f == POSTED_FIRST || f == TRUNCATED))
			PT_ASSERT_RC(owner_post_trecv(&o, buf[i], cap[i], FI_ADDR_UNSPEC,
						      msgs[i].tag, 0, &done[i]), 0);
		if (!msgs[i].tagged && f == POSTED_FIRST)
			PT_ASSERT_RC(owner_post_recv(&o, buf[i], cap[i], FI_ADDR_UNSPEC, &done[i]),
				     0);
	}
	pt_burst(&o, &p, msgs, N, 20000);
	/*
	 * Every message matched or queued (sends may complete only later): a
	 * peek finds each tagged one no receive was posted for (the untagged
	 * ones match in order whenever they come), and the reference owner saw
	 * a get call for each.
	 */
	for (int i = 0; i < N; i++)
		if (msgs[i].tagged && (i % NFATES == STARTED_LATER || i % NFATES == DISCARDED))
			pt_wait_queued(&o, true, FI_ADDR_UNSPEC, msgs[i].tag, 0);
	if (owner_internals())
		pt_wait_gets(&o, N);
	for (int i = 0; i < N; i++) {
		enum fate f = i % NFATES;

		if (msgs[i].tagged && f == STARTED_LATER)
			PT_ASSERT_RC(owner_post_trecv(&o, buf[i], cap[i], FI_ADDR_UNSPEC,
						      msgs[i].tag, 0, &done[i]), 0);
		else if (msgs[i].tagged && f == DISCARDED)
			PT_ASSERT_RC(owner_discard(&o, true, FI_ADDR_UNSPEC, msgs[i].tag, 0), 0);
		else if (!msgs[i].tagged && f != POSTED_FIRST)
			PT_ASSERT_RC(owner_post_recv(&o, buf[i], cap[i], FI_ADDR_UNSPEC, &done[i]),
				     0);
	}
	pt_burst_results(&o, &p, res, N);
	for (int i = 0; i < N; i++)
		PT_ASSERT(res[i].completed && !res[i].is_err,
			  "send %d (%zu bytes): completed %d, err %d", i, msgs[i].len,
			  res[i].completed, res[i].err);
	/*
	 * Untagged receives take untagged messages in arrival (send) order: the
	 * k-th untagged receive posted gets the k-th untagged message.
	 */
	{
		int m = 0;

		for (int pass = 0; pass < 2; pass++)
			for (int i = 0; i < N; i++)
				if (!msgs[i].tagged && (i % NFATES == POSTED_FIRST) == !pass) {
					while (msgs[m].tagged)
						m++;
					msg_of[i] = m++;
				}
	}
	while (got < expected) {
		bool *ctx;
		int i;

		PT_ASSERT_RC(owner_cq_read(&o, &c, PT_TIMEOUT_MS), 0);
		ctx = c.is_err ? c.err.op_context : c.e.op_context;
		i = (int)(ctx - done);
		PT_ASSERT(ctx >= done && i < N && !done[i], "completion %zu: context %p", got,
			  (void *)ctx);
		done[i] = true;
		got++;
		if (msgs[i].tagged && msgs[i].len > cap[i]) {
			PT_ASSERT(c.is_err && c.err.err == FI_ETRUNC &&
				  c.err.olen == msgs[i].len - cap[i],
				  "message %d: expected truncation by %zu", i,
				  msgs[i].len - cap[i]);
			pt_check_data(buf[i], cap[i], msgs[i].seed);
			continue;
		}
		PT_ASSERT(!c.is_err, "message %d: error %d", i, c.is_err ? c.err.err : 0);
		if (msgs[i].tagged) {
			pt_check_recv(&c, &done[i], true, msgs[i].tag, msgs[i].len);
			pt_check_data(buf[i], msgs[i].len, msgs[i].seed);
		} else {
			int m = msg_of[i];

			pt_check_recv(&c, &done[i], false, 0, msgs[m].len);
			PT_ASSERT(xt_mismatch(buf[i], msgs[m].len, msgs[m].seed, 0) < 0,
				  "untagged receive %d: not message %d's data", i, m);
		}
	}
	pt_none(&o, 300);
	pt_wait_none_held(&o);
	pt_check_entries_balanced(&o);
	if (owner_internals())
		PT_ASSERT(o.st.entries_given == N && o.st.entries_freed == N,
			  "%d messages: %llu entries given, %llu freed", N,
			  (unsigned long long)o.st.entries_given,
			  (unsigned long long)o.st.entries_freed);
	PT_ASSERT(owner_unexpected_count(&o, true) == 0 && owner_unexpected_count(&o, false) == 0,
		  "messages left queued");
	pt_burst_quit(&o, &p);
	pt_close(&o);
	for (int i = 0; i < N; i++)
		free(buf[i]);
	free(msgs);
	free(res);
}
END_TEST

/*
 * FI_XSHM_UNEXP_BYTES_MAX under an owner: with a 1 MiB limit a 3 MiB
 * unexpected message is queued with the owner, but the small one behind it
 * is refused (each entry the owner gave for it is freed unqueued) until the
 * owner starts the large one; then it is queued and received too.
 */
START_TEST(limit_holds_back_unexpected_messages_under_an_owner)
{
	const size_t big = 3 * MiB, small = 100;
	struct xt_send_cmd sc_big = pt_cmd(true, big, 31, PT_TAG);
	struct xt_send_cmd sc_small = pt_cmd(true, small, 32, PT_TAG + 1);
	unsigned char *bbuf = pt_buf(big), *sbuf = pt_buf(small);
	struct owner_comp c;
	struct pt_rig r;

	PT_ASSERT(setenv("FI_XSHM_UNEXP_BYTES_MAX", "1048576", 1) == 0, "setenv");
	/* 3 MiB through bounce buffers, held in the receiver's memory. */
	PT_ASSERT(setenv("FI_XSHM_SCOPY_THRESHOLD", "16777216", 1) == 0, "setenv");
	pt_rig_start(&r, NULL, 1, 0);
	pt_send_ok(&r.o, &r.p[0], &sc_big);
	pt_send_ok(&r.o, &r.p[0], &sc_small);
	pt_none(&r.o, 50);
	/* A peek finds the large one queued, not the small one. */
	pt_wait_queued(&r.o, true, FI_ADDR_UNSPEC, PT_TAG, 0);
	PT_ASSERT(owner_peek(&r.o, true, FI_ADDR_UNSPEC, PT_TAG + 1, 0, &c) == -FI_ENOMSG,
		  "the small message was taken beyond the limit");
	if (owner_internals()) {
		PT_ASSERT(owner_unexpected_count(&r.o, true) == 1 && r.o.st.queue_calls == 1,
			  "%zu queued, %llu queue calls: the small message was taken beyond "
			  "the limit", owner_unexpected_count(&r.o, true),
			  (unsigned long long)r.o.st.queue_calls);
		PT_ASSERT(r.o.st.get_unexpected >= 2, "the small message was never refused");
	}
	pt_check_entries_balanced(&r.o);
	PT_ASSERT_RC(owner_post_trecv(&r.o, bbuf, big, FI_ADDR_UNSPEC, PT_TAG, 0, bbuf), 0);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, bbuf, true, PT_TAG, big);
	pt_check_data(bbuf, big, 31);
	pt_wait_queued(&r.o, true, FI_ADDR_UNSPEC, PT_TAG + 1, 0);
	PT_ASSERT_RC(owner_post_trecv(&r.o, sbuf, small, FI_ADDR_UNSPEC, PT_TAG + 1, 0, sbuf),
		     0);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, sbuf, true, PT_TAG + 1, small);
	pt_check_data(sbuf, small, 32);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(bbuf);
	free(sbuf);
}
END_TEST

/*
 * The owner still holds a message unexpected when xshm's endpoint closes:
 * starting (_i 0, 1) or discarding it (_i 2, 3) later, through the srx xshm
 * passed to get_* (a private one of xshm's in the UPSTREAM style, which
 * must outlive the endpoint), releases it without a completion and frees
 * its entry once.  Odd _i: a large message, pulled from the sender.
 */
START_TEST(held_message_released_after_its_endpoint_closed)
{
	const size_t len = _i % 2 ? 100 * KiB : 64;
	struct xt_send_cmd sc = pt_cmd(true, len, 90, PT_TAG);
	unsigned char *buf = pt_buf(len);
	struct xt_send_result res;
	struct pt_rig r;

	pt_rig_start(&r, NULL, 1, 0);
	pt_send(&r.o, &r.p[0], &sc);
	pt_wait_unexpected(&r.o, true, 1);
	PT_ASSERT_RC(fi_close(&r.o.ep[0]->fid), 0);
	r.o.ep[0] = NULL;
	res = pt_send_done(NULL, &r.p[0]);
	PT_ASSERT(res.completed, "the send did not complete");
	if (_i < 2)
		PT_ASSERT_RC(owner_post_trecv(&r.o, buf, len, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	else
		PT_ASSERT_RC(owner_discard(&r.o, true, FI_ADDR_UNSPEC, PT_TAG, 0), 0);
	PT_ASSERT(owner_cq_count(&r.o) == 0 && r.o.st.writes == 0 && r.o.st.writeerrs == 0,
		  "%zu completions, %llu writes, %llu writeerrs for a message whose endpoint "
		  "closed", owner_cq_count(&r.o), (unsigned long long)r.o.st.writes,
		  (unsigned long long)r.o.st.writeerrs);
	pt_check_entries_balanced(&r.o);
	PT_ASSERT(r.o.st.entries_freed == 1, "%llu entries freed",
		  (unsigned long long)r.o.st.entries_freed);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

static void add_cases(Suite *s)
{
	TCase *flow = pt_tcase(s, "flows", 30);
	TCase *sz = pt_tcase(s, "sizes", 45);
	TCase *match = pt_tcase(s, "matching", 30);
	TCase *disc = pt_tcase(s, "discard", 45);
	TCase *unspec = pt_tcase(s, "unspec_addr", 30);
	TCase *trunc = pt_tcase(s, "truncation", 30);
	TCase *multi = pt_tcase(s, "several_endpoints", 45);
	TCase *acct = pt_tcase(s, "accounting", 90);
	TCase *limit = pt_tcase(s, "limit", 30);
	TCase *orphan = pt_tcase(s, "endpoint_closed", 30);

	tcase_add_test(flow, flow_posted_first_tagged);
	tcase_add_test(flow, flow_posted_first_untagged);
	tcase_add_test(flow, flow_message_first_tagged_queue_then_start);
	tcase_add_test(flow, flow_message_first_untagged_queue_then_start);
	pt_add_reference_owner_test(flow, get_calls_give_the_size,
				    "the size the peer passes to get_msg/get_tag");

	tcase_add_loop_test(sz, sizes_posted_first_tagged, 0, NSIZES);
	tcase_add_loop_test(sz, sizes_posted_first_untagged, 0, NSIZES);
	tcase_add_loop_test(sz, sizes_message_first_tagged, 0, NSIZES);
	tcase_add_loop_test(sz, sizes_message_first_untagged, 0, NSIZES);

	tcase_add_test(match, match_tag_ignore_bits_and_posting_order);
	tcase_add_test(match, match_unexpected_in_arrival_order);
	tcase_add_test(match, match_directed_receives_by_source);
	tcase_add_loop_test(match, match_scatter_into_owner_iovs, 0, 2);

	tcase_add_test(disc, discard_small_tagged);
	tcase_add_test(disc, discard_small_untagged);
	tcase_add_loop_test(disc, discard_large_after_a_moment, 0, 2);
	tcase_add_loop_test(disc, discard_large_at_once_sender_completes, 0, 2);

	tcase_add_test(unspec, notavail_resolved_by_foreach_unspec_addr_after_av_insert);
	tcase_add_test(unspec, notavail_source_matches_unspec_receives);

	tcase_add_loop_test(trunc, truncation_completes_through_writeerr, 0, 6);

	tcase_add_test(multi, several_endpoints_share_one_srx_cq_and_counter);

	tcase_add_test(acct, accounting_every_entry_freed_once_over_mixed_run);

	/* FI_XSHM_UNEXP_BYTES_MAX */
	pt_add_xshm_test(limit, limit_holds_back_unexpected_messages_under_an_owner);

	/* fi_peer(3) does not say what becomes of them */
	pt_add_xshm_reference_owner_loop_test(orphan, held_message_released_after_its_endpoint_closed,
					      0, 4, "closes the peer's endpoint under the owner: "
					      "xlink closes both together");
}

int main(void)
{
	return pt_run("peer_srx", add_cases);
}
