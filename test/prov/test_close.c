/*
 * Closing an endpoint with operations in flight neither hangs nor corrupts
 * its peers.
 *
 * (a) A sender posts a 4 MiB send and closes before the receiver posted
 *     anything: every fi_close returns 0 quickly; the receiver stays
 *     usable (a new sender's messages arrive intact) and a receive that
 *     matches the aborted message completes with an error or not at all,
 *     never with garbage as a success.
 * (b) A receiver closes while a sender streams to it: the sender's calls
 *     keep returning promptly (0, -FI_EAGAIN or an error), completions are
 *     successes or errors, and the sender can close.  Stricter: the sends
 *     pending at the receiver's close end (with an error) in bounded time.
 */
#include "harness.h"

#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shm/layout.h"

#define TAG_A	0xc105e00000000001ULL
#define TAG_B	0xc105e00000000002ULL
#define MiB	(1024 * 1024)
#define BIG	(4 * MiB)
#define CLOSE_MS	2000	/* "quickly" */
#define WAIT_MS	8000

/* ---- (a) a sender closes with a large send in flight ---- */

/* What the closing sender leaves in flight. */
static const struct {
	const char *what;
	size_t len;
	uint64_t flags;
} aborted[] = {
	{ "a 4 MiB send", BIG, 0 },
	{ "a 100-byte FI_DELIVERY_COMPLETE send", 100, FI_DELIVERY_COMPLETE },
	{ "a 1 MiB FI_MATCH_COMPLETE send", MiB, FI_MATCH_COMPLETE },
};
#define NABORTED ((int)(sizeof(aborted) / sizeof(aborted[0])))

enum recv_mode {
	LATE,		/* the receive is posted after the sender closed */
	PREPOSTED,	/* posted before the sender sent */
	MULTI,		/* untagged, into a multi-recv buffer posted before */
};

static const char *const mode_names[] = { "late receive", "pre-posted receive",
					  "multi-recv buffer" };

/* arg: index in aborted[] * 2 + 1 if untagged. */
static void aborting_sender(int sock, void *arg)
{
	int k = (int)(intptr_t)arg / 2;
	bool untagged = (int)(intptr_t)arg % 2;
	size_t len = aborted[k].len;
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(len);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_context ctx;
	struct fi_msg_tagged tmsg = { .msg_iov = &iov, .iov_count = 1, .tag = TAG_A,
				      .context = &ctx };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .context = &ctx };
	uint64_t flags = FI_COMPLETION | aborted[k].flags;
	struct xt_comp c;
	uint64_t t0, dt;
	struct xt_ep x;

	xt_open(&x, &cfg);
	tmsg.addr = msg.addr = xt_exchange(&x, sock);
	xt_fill(buf, len, 50, 0);
	xt_wait(sock);
	if (untagged)
		XT_POST(&x, fi_sendmsg(x.ep, &msg, flags));
	else
		XT_POST(&x, fi_tsendmsg(x.ep, &tmsg, flags));
	(void)xt_poll(x.tx, x.rx, 20, &c);	/* whatever happens, then close */
	t0 = xt_now_ms();
	xt_close(&x);
	dt = xt_now_ms() - t0;
	xt_send_u64(sock, dt);
	free(buf);
}

struct abort_case {
	int k;
	bool progressing;
	enum recv_mode mode;
	size_t alen;
	char *abuf;		/* LATE, PREPOSTED: the aborted message's receive */
	char *mbuf;		/* MULTI */
	size_t msize;
	struct fi_context actx;
	bool a_seen;		/* an entry for the aborted message was read */
	int b_seen;
};

static const size_t new_lens[] = { 100, XSHM_BUF_SIZE, MiB, BIG };
#define NB ((int)(sizeof(new_lens) / sizeof(new_lens[0])))

/*
 * One receive-side entry: the aborted message's (an error, or a success
 * only if whole and intact, at most once) or one of the new sender's.
 */
static void abort_case_entry(struct abort_case *t, const struct xt_comp *c, char **bbuf)
{
	const char *what = aborted[t->k].what;
	void *op = c->is_err ? c->err.op_context : c->e.op_context;

	if (c->is_err) {
		XT_ASSERT(op == &t->actx, "%s, %s: error %d (%s) for context %p", what,
			  mode_names[t->mode], c->err.err, fi_strerror(abs(c->err.err)), op);
		XT_ASSERT(!t->a_seen, "%s: two entries for the aborted message", what);
		t->a_seen = true;
		return;
	}
	if (t->mode == MULTI) {
		const char *p = c->e.buf;

		XT_ASSERT(op == &t->actx, "multi-recv: context %p", op);
		XT_ASSERT(p >= t->mbuf && p + c->e.len <= t->mbuf + t->msize,
			  "multi-recv: buf %p len %zu outside the buffer", c->e.buf, c->e.len);
		if (c->e.len == t->alen && xt_mismatch(p, c->e.len, 50, 0) < 0) {
			XT_ASSERT(!t->a_seen, "%s: two entries for the aborted message", what);
			t->a_seen = true;
			return;
		}
		for (int i = 0; i < NB; i++) {
			if (new_lens[i] == c->e.len && xt_mismatch(p, c->e.len, 60 + (uint64_t)i, 0) < 0) {
				t->b_seen++;
				return;
			}
		}
		XT_ASSERT(false, "%s, multi-recv: a successful completion of %zu bytes holding "
			  "neither the aborted message whole nor a new one", what, c->e.len);
	}
	if (op == &t->actx) {
		XT_ASSERT(!t->a_seen, "%s: two entries for the aborted message", what);
		XT_ASSERT(c->e.len == t->alen, "%s, %s: the aborted message completed successfully "
			  "with %zu of %zu bytes", what, mode_names[t->mode], c->e.len, t->alen);
		XT_ASSERT(xt_mismatch(t->abuf, t->alen, 50, 0) < 0, "%s, %s: the aborted message "
			  "completed successfully with wrong data at byte %zd", what,
			  mode_names[t->mode], xt_mismatch(t->abuf, t->alen, 50, 0));
		t->a_seen = true;
		return;
	}
	for (int i = 0; i < NB; i++) {
		if (op != bbuf[i])
			continue;
		XT_ASSERT(c->e.len == new_lens[i], "new message %d: len %zu, sent %zu", i,
			  c->e.len, new_lens[i]);
		XT_ASSERT_PATTERN(bbuf[i], new_lens[i], 60 + (uint64_t)i, 0);
		t->b_seen++;
		return;
	}
	XT_ASSERT(false, "a completion with an unknown context %p", op);
}

/*
 * Loop index: aborted kind, then mode, with an idle receiver (the message
 * is left half in its ring); then each kind with a progressing receiver and
 * a late receive.
 */
START_TEST(sender_closing_with_a_large_send_in_flight_leaves_the_receiver_usable)
{
	bool idle = _i < 3 * NABORTED;
	struct abort_case t = { .k = _i % NABORTED, .progressing = !idle,
				.mode = idle ? (enum recv_mode)(_i / NABORTED) : LATE };
	bool untagged = t.mode == MULTI;
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_burst_msg m[NB];
	struct xt_burst_result res[NB];
	char *bbuf[NB] = { NULL };
	struct xt_child a, b;
	struct xt_comp c;
	struct xt_ep x;
	uint64_t dt, end;

	t.alen = aborted[t.k].len;
	if (t.mode == MULTI) {
		cfg.caps |= FI_MULTI_RECV;
		t.msize = t.alen + BIG + MiB + 2 * XSHM_BUF_SIZE;
		t.mbuf = xt_alloc(t.msize);
	} else {
		t.abuf = xt_alloc(t.alen);
		memset(t.abuf, 0, t.alen);
	}
	xt_spawn(&a, aborting_sender, (void *)(intptr_t)(t.k * 2 + untagged));
	xt_spawn(&b, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_exchange(&x, a.sock);
	xt_connect_sender(&x, &b, true);
	if (t.mode == MULTI) {
		struct iovec iov = { .iov_base = t.mbuf, .iov_len = t.msize };
		struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = FI_ADDR_UNSPEC,
				      .context = &t.actx };

		XT_POST(&x, fi_recvmsg(x.ep, &msg, FI_MULTI_RECV));
	} else if (t.mode == PREPOSTED) {
		xt_post_recv(&x, true, t.abuf, t.alen, FI_ADDR_UNSPEC, TAG_A, 0, &t.actx);
	}
	xt_signal(a.sock, 1);
	dt = t.progressing ? xt_recv_u64_progress(a.sock, &x) : xt_recv_u64(a.sock);
	xt_join(&a);
	XT_ASSERT(dt < CLOSE_MS, "closing the sender with %s in flight took %llu ms",
		  aborted[t.k].what, (unsigned long long)dt);
	/* The aborted message: an error or nothing, or (only if it all arrived) intact. */
	if (t.mode == LATE)
		xt_post_recv(&x, true, t.abuf, t.alen, FI_ADDR_UNSPEC, TAG_A, 0, &t.actx);
	while (xt_poll(x.rx, x.tx, 250, &c) == 0)
		abort_case_entry(&t, &c, bbuf);
	/* A new sender: every size arrives intact. */
	for (int i = 0; i < NB; i++) {
		m[i] = (struct xt_burst_msg){ .tagged = !untagged, .len = new_lens[i],
					      .seed = 60 + (uint64_t)i, .tag = TAG_B,
					      .flags = FI_COMPLETION };
		if (untagged)
			continue;
		bbuf[i] = xt_alloc(new_lens[i]);
		xt_post_recv(&x, true, bbuf[i], new_lens[i], FI_ADDR_UNSPEC, TAG_B, 0, bbuf[i]);
	}
	xt_burst_post(&x, &b, m, NB, WAIT_MS);
	end = xt_now_ms() + WAIT_MS;
	while (t.b_seen < NB && xt_now_ms() < end)
		if (xt_poll(x.rx, x.tx, 100, &c) == 0)
			abort_case_entry(&t, &c, bbuf);
	XT_ASSERT(t.b_seen == NB, "%s, %s, receiver %s: %d of the new sender's %d messages "
		  "arrived", aborted[t.k].what, mode_names[t.mode],
		  t.progressing ? "progressing" : "idle", t.b_seen, NB);
	xt_burst_results(&x, &b, res, NB);
	for (int i = 0; i < NB; i++)
		XT_ASSERT(res[i].completed && !res[i].is_err, "the new sender's send %d: "
			  "completed %d, err %d", i, res[i].completed, res[i].err);
	/* Only the aborted message's entry may still come. */
	while (xt_poll(x.rx, x.tx, 100, &c) == 0)
		abort_case_entry(&t, &c, bbuf);
	xt_burst_quit(&x, &b);
	xt_close(&x);
	free(t.abuf);
	free(t.mbuf);
	for (int i = 0; i < NB; i++)
		free(bbuf[i]);
}
END_TEST

/*
 * The receiver claims (FI_PEEK|FI_CLAIM) a 4 MiB message of which only part
 * has arrived; then its sender closes.  The FI_CLAIM receive must end with
 * an error, or not at all -- never a success with missing data -- and the
 * receiver keeps working.
 */
static void claimed_sender(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(BIG);
	struct fi_context ctx;
	uint64_t t0, dt;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	xt_fill(buf, BIG, 51, 0);
	xt_wait(sock);
	XT_POST(&x, fi_tsend(x.ep, buf, BIG, NULL, dst, TAG_A, &ctx));
	xt_signal(sock, 1);
	xt_wait(sock);		/* claimed; not progressing meanwhile */
	t0 = xt_now_ms();
	xt_close(&x);
	dt = xt_now_ms() - t0;
	xt_send_u64(sock, dt);
	free(buf);
}

START_TEST(claimed_message_whose_sender_closes_is_not_delivered_as_garbage)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_burst_msg m = { .tagged = true, .len = MiB, .seed = 62, .tag = TAG_B,
				  .flags = FI_COMPLETION };
	struct xt_burst_result res;
	struct fi_context claim;
	struct iovec none = { 0 }, iov;
	struct fi_msg_tagged msg = { .msg_iov = &none, .iov_count = 0, .addr = FI_ADDR_UNSPEC,
				     .tag = TAG_A, .context = &claim };
	char *abuf = xt_alloc(BIG), *bbuf = xt_alloc(MiB);
	struct xt_child a, b;
	struct xt_comp c;
	struct xt_ep x;
	uint64_t end, dt;

	xt_spawn(&a, claimed_sender, NULL);
	xt_spawn(&b, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_exchange(&x, a.sock);
	xt_connect_sender(&x, &b, true);
	xt_signal(a.sock, 1);
	XT_ASSERT(xt_wait(a.sock) == 1, "the sender's signal");
	end = xt_now_ms() + 2000;
	for (;;) {
		XT_POST(&x, fi_trecvmsg(x.ep, &msg, FI_PEEK | FI_CLAIM));
		xt_expect_comp_ms(x.rx, x.tx, 2000, &c);
		if (!c.is_err)
			break;
		XT_ASSERT(c.err.err == FI_ENOMSG, "peek error %d", c.err.err);
		XT_ASSERT(xt_now_ms() < end, "the 4 MiB message was not found by a peek");
	}
	XT_ASSERT(c.e.len == BIG, "peek len %zu", c.e.len);
	xt_signal(a.sock, 2);
	dt = xt_recv_u64_progress(a.sock, &x);
	xt_join(&a);
	XT_ASSERT(dt < CLOSE_MS, "the sender's close took %llu ms", (unsigned long long)dt);
	memset(abuf, 0, BIG);
	iov = (struct iovec){ .iov_base = abuf, .iov_len = BIG };
	msg.msg_iov = &iov;
	msg.iov_count = 1;
	XT_POST(&x, fi_trecvmsg(x.ep, &msg, FI_CLAIM));
	if (xt_poll(x.rx, x.tx, 500, &c) == 0 && !c.is_err) {
		XT_ASSERT(c.e.op_context == &claim, "completion context %p", c.e.op_context);
		XT_ASSERT(c.e.len == BIG && xt_mismatch(abuf, BIG, 51, 0) < 0,
			  "the claimed message of a closed sender completed successfully with "
			  "len %zu, data differing at byte %zd", c.e.len,
			  xt_mismatch(abuf, BIG, 51, 0));
	}
	xt_post_recv(&x, true, bbuf, MiB, FI_ADDR_UNSPEC, TAG_B, 0, bbuf);
	xt_burst_post(&x, &b, &m, 1, WAIT_MS);
	for (;;) {
		xt_expect_comp_ms(x.rx, x.tx, WAIT_MS, &c);
		if (c.e.op_context == bbuf)
			break;
		XT_ASSERT(false, "unexpected completion, context %p", c.e.op_context);
	}
	XT_ASSERT(c.e.len == MiB, "len %zu", c.e.len);
	XT_ASSERT_PATTERN(bbuf, MiB, 62, 0);
	xt_burst_results(&x, &b, &res, 1);
	XT_ASSERT(res.completed && !res.is_err, "the new sender's send: err %d", res.err);
	xt_burst_quit(&x, &b);
	xt_close(&x);
	free(abuf);
	free(bbuf);
}
END_TEST

/* ---- (b) a receiver closes while a sender streams to it ---- */

#define SLOTS		32
#define CLOSE_AFTER	20	/* messages the receiver takes before closing */

static const size_t stream_sizes[] = { 64, 5000, XSHM_BUF_SIZE + 1, MiB };
#define NSIZES ((int)(sizeof(stream_sizes) / sizeof(stream_sizes[0])))

/* arg: non-NULL to exit right after the close, NULL to stay until told. */
static void closing_receiver(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char *buf[16];
	int got = 0;
	uint64_t t0, dt;
	struct xt_ep x;

	xt_open(&x, &cfg);
	xt_exchange(&x, sock);
	for (int i = 0; i < 16; i++) {
		buf[i] = xt_alloc(MiB);
		xt_post_recv(&x, true, buf[i], MiB, FI_ADDR_UNSPEC, 0, ~0ULL, buf[i]);
	}
	while (got < CLOSE_AFTER) {
		struct xt_comp c;
		int i;

		xt_wait_rx(&x, &c);
		for (i = 0; i < 16 && c.e.op_context != buf[i]; i++)
			;
		XT_ASSERT(i < 16, "context %p", c.e.op_context);
		XT_ASSERT(c.e.len == stream_sizes[c.e.tag % NSIZES], "message %llu: len %zu",
			  (unsigned long long)c.e.tag, c.e.len);
		XT_ASSERT_PATTERN(buf[i], c.e.len, c.e.tag, 0);
		got++;
		xt_post_recv(&x, true, buf[i], MiB, FI_ADDR_UNSPEC, 0, ~0ULL, buf[i]);
	}
	t0 = xt_now_ms();
	xt_close(&x);
	dt = xt_now_ms() - t0;
	XT_ASSERT(dt < CLOSE_MS, "the receiver's close took %llu ms", (unsigned long long)dt);
	xt_signal(sock, 1);
	if (!arg)
		xt_wait(sock);
	for (int i = 0; i < 16; i++)
		free(buf[i]);
}

struct slot {
	struct fi_context ctx;
	bool busy;
	char *buf;
};

struct stream {
	struct xt_ep x;
	fi_addr_t peer;
	struct slot slot[SLOTS];
	uint64_t next, posted, eagain, post_err, ok, comp_err, max_call_ms;
	int last_post_err, last_comp_err;
};

static void stream_call_time(struct stream *s, uint64_t t0)
{
	uint64_t dt = xt_now_ms() - t0;

	if (dt > s->max_call_ms)
		s->max_call_ms = dt;
}

static int stream_busy(const struct stream *s)
{
	int n = 0;

	for (int i = 0; i < SLOTS; i++)
		n += s->slot[i].busy;
	return n;
}

static void stream_post(struct stream *s)
{
	struct slot *sl = NULL;
	size_t len = stream_sizes[s->next % NSIZES];
	uint64_t t0;
	ssize_t rc;

	for (int i = 0; i < SLOTS && !sl; i++)
		if (!s->slot[i].busy)
			sl = &s->slot[i];
	if (!sl)
		return;
	xt_fill(sl->buf, len, s->next, 0);
	t0 = xt_now_ms();
	rc = fi_tsend(s->x.ep, sl->buf, len, NULL, s->peer, s->next, &sl->ctx);
	stream_call_time(s, t0);
	if (rc == 0) {
		sl->busy = true;
		s->posted++;
		s->next++;
	} else if (rc == -FI_EAGAIN) {
		s->eagain++;
	} else {
		XT_ASSERT(rc < 0, "fi_tsend returned %zd", rc);
		s->post_err++;
		s->last_post_err = (int)rc;
	}
}

static void stream_reap(struct stream *s)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	void *ctx;
	uint64_t t0 = xt_now_ms();
	ssize_t rc = fi_cq_read(s->x.tx->fid, &e, 1);

	stream_call_time(s, t0);
	if (rc == -FI_EAGAIN)
		return;
	if (rc == -FI_EAVAIL) {
		memset(&err, 0, sizeof(err));
		t0 = xt_now_ms();
		XT_ASSERT_RC(fi_cq_readerr(s->x.tx->fid, &err, 0), 1);
		stream_call_time(s, t0);
		ctx = err.op_context;
		s->comp_err++;
		s->last_comp_err = err.err;
	} else {
		XT_ASSERT_RC(rc, 1);
		ctx = e.op_context;
		s->ok++;
	}
	for (int i = 0; i < SLOTS; i++) {
		if (ctx == &s->slot[i].ctx) {
			XT_ASSERT(s->slot[i].busy, "slot %d completed twice", i);
			s->slot[i].busy = false;
			return;
		}
	}
	XT_ASSERT(false, "completion with an unknown context %p", ctx);
}

static bool readable(int sock)
{
	struct pollfd pfd = { .fd = sock, .events = POLLIN };

	return poll(&pfd, 1, 0) > 0;
}

/*
 * Streams until the receiver reports its close, then goes on posting for
 * keep_posting_ms.  Returns the time the close was seen.
 */
static uint64_t stream_until_close(struct stream *s, struct xt_child *c, int keep_posting_ms)
{
	uint64_t start = xt_now_ms(), closed_at = 0;

	for (;;) {
		uint64_t now = xt_now_ms();

		if (!closed_at && readable(c->sock)) {
			XT_ASSERT(xt_wait(c->sock) == 1, "the receiver's signal");
			closed_at = now;
		}
		if (closed_at && now - closed_at >= (uint64_t)keep_posting_ms)
			return closed_at;
		XT_ASSERT(closed_at || now - start < 15000, "the receiver did not close in 15 s "
			  "(%llu sends posted, %llu completed)", (unsigned long long)s->posted,
			  (unsigned long long)s->ok);
		stream_post(s);
		stream_reap(s);
	}
}

static void stream_open(struct stream *s, struct xt_cfg *cfg, struct xt_child *c)
{
	memset(s, 0, sizeof(*s));
	xt_open(&s->x, cfg);
	s->peer = xt_exchange(&s->x, c->sock);
	for (int i = 0; i < SLOTS; i++)
		s->slot[i].buf = xt_alloc(MiB);
}

static void stream_close(struct stream *s)
{
	uint64_t t0 = xt_now_ms(), dt;

	xt_close(&s->x);
	dt = xt_now_ms() - t0;
	XT_ASSERT(dt < CLOSE_MS, "the sender's close took %llu ms", (unsigned long long)dt);
	for (int i = 0; i < SLOTS; i++)
		free(s->slot[i].buf);
}

static void stream_finish_child(struct xt_child *c, bool exits)
{
	if (!exits)
		xt_signal(c->sock, 2);
	xt_join(c);
}

START_TEST(receiver_closing_during_a_stream_leaves_the_sender_responsive)
{
	bool exits = _i == 1;
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_child c;
	struct stream s;

	xt_spawn(&c, closing_receiver, exits ? (void *)1 : NULL);
	stream_open(&s, &cfg, &c);
	stream_until_close(&s, &c, 2000);
	XT_ASSERT(s.ok >= CLOSE_AFTER, "only %llu sends completed successfully",
		  (unsigned long long)s.ok);
	XT_ASSERT(s.max_call_ms < 1000, "a call took %llu ms", (unsigned long long)s.max_call_ms);
	stream_close(&s);
	stream_finish_child(&c, exits);
	fprintf(stderr, "receiver %s: posted %llu, -FI_EAGAIN %llu, post errors %llu (last %d), "
		"completions %llu, errors %llu (last %d)\n", exits ? "exits" : "stays",
		(unsigned long long)s.posted, (unsigned long long)s.eagain,
		(unsigned long long)s.post_err, s.last_post_err, (unsigned long long)s.ok,
		(unsigned long long)s.comp_err, s.last_comp_err);
}
END_TEST

START_TEST(sends_pending_at_a_receivers_close_end_in_bounded_time)
{
	bool exits = _i == 1;
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_child c;
	struct stream s;
	uint64_t end;
	int pending;

	xt_spawn(&c, closing_receiver, exits ? (void *)1 : NULL);
	stream_open(&s, &cfg, &c);
	stream_until_close(&s, &c, 200);
	end = xt_now_ms() + 5000;
	while (stream_busy(&s) && xt_now_ms() < end)
		stream_reap(&s);
	pending = stream_busy(&s);
	XT_ASSERT(pending == 0, "receiver %s: %d send(s) posted before its close still pending "
		  "5 s later (%llu completed, %llu errors)", exits ? "exited" : "alive", pending,
		  (unsigned long long)s.ok, (unsigned long long)s.comp_err);
	/* A new send is refused or fails, in bounded time too. */
	s.post_err = 0;
	stream_post(&s);
	end = xt_now_ms() + 5000;
	while (stream_busy(&s) && xt_now_ms() < end)
		stream_reap(&s);
	XT_ASSERT(stream_busy(&s) == 0, "a send posted after the close never completed");
	XT_ASSERT(s.max_call_ms < 1000, "a call took %llu ms", (unsigned long long)s.max_call_ms);
	stream_close(&s);
	stream_finish_child(&c, exits);
}
END_TEST

/* arg: non-NULL to exit right after the close.  Takes no message, then closes. */
static void idle_receiver(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	xt_open(&x, &cfg);
	xt_exchange(&x, sock);
	XT_ASSERT(xt_wait_progress(sock, &x) == 1, "the sender's signal");
	xt_expect_none(x.rx, x.tx, 200);	/* the messages arrive, unexpected */
	xt_close(&x);
	xt_signal(sock, 1);
	if (!arg)
		xt_wait(sock);
}

/*
 * Sends that complete only once received (FI_DELIVERY_COMPLETE) or matched
 * (FI_MATCH_COMPLETE) to a receiver that closes without receiving them:
 * they must end with an error, in bounded time -- never with a success.
 */
START_TEST(send_waiting_for_its_receive_ends_with_an_error_when_the_receiver_closes)
{
	static const size_t lens[] = { 100, MiB };
	bool exits = _i % 2;
	uint64_t flag = _i / 2 ? FI_MATCH_COMPLETE : FI_DELIVERY_COMPLETE;
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_context ctx[2];
	bool done[2] = { false, false };
	char *buf[2];
	struct xt_child c;
	struct xt_ep x;
	fi_addr_t peer;
	uint64_t end;

	xt_spawn(&c, idle_receiver, exits ? (void *)1 : NULL);
	xt_open(&x, &cfg);
	peer = xt_exchange(&x, c.sock);
	for (int i = 0; i < 2; i++) {
		struct iovec iov;
		struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .addr = peer,
					     .tag = TAG_A, .context = &ctx[i] };

		buf[i] = xt_alloc(lens[i]);
		xt_fill(buf[i], lens[i], 70 + (uint64_t)i, 0);
		iov = (struct iovec){ .iov_base = buf[i], .iov_len = lens[i] };
		XT_POST(&x, fi_tsendmsg(x.ep, &msg, FI_COMPLETION | flag));
	}
	xt_signal(c.sock, 1);
	XT_ASSERT(xt_wait_progress(c.sock, &x) == 1, "the receiver's signal");
	end = xt_now_ms() + 5000;
	while ((!done[0] || !done[1]) && xt_now_ms() < end) {
		struct xt_comp comp;
		void *op;

		if (xt_poll(x.tx, x.rx, 100, &comp) != 0)
			continue;
		op = comp.is_err ? comp.err.op_context : comp.e.op_context;
		for (int i = 0; i < 2; i++) {
			if (op != &ctx[i])
				continue;
			XT_ASSERT(comp.is_err, "the %zu-byte %s send to a receiver that closed "
				  "without receiving it completed successfully", lens[i],
				  flag == FI_MATCH_COMPLETE ? "FI_MATCH_COMPLETE" :
				  "FI_DELIVERY_COMPLETE");
			done[i] = true;
		}
	}
	for (int i = 0; i < 2; i++)
		XT_ASSERT(done[i], "receiver %s: the %zu-byte %s send got no completion 5 s after "
			  "the receiver closed", exits ? "exited" : "alive", lens[i],
			  flag == FI_MATCH_COMPLETE ? "FI_MATCH_COMPLETE" : "FI_DELIVERY_COMPLETE");
	stream_finish_child(&c, exits);
	xt_close(&x);
	for (int i = 0; i < 2; i++)
		free(buf[i]);
}
END_TEST

/*
 * More cells than one progress call drains (XSHM_RX_BUDGET, 64), so that
 * the ack of a send lies beyond what the first call after the receiver's
 * close reads.
 */
#define CELLS_AHEAD_OF_ACK	160

/* Fills the sender's ring, then takes its message, which acks it, and leaves. */
static void receiver_acking_then_leaving(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_context ctx;
	struct xt_comp comp;
	char byte = 0, buf[100];
	struct xt_ep x;
	fi_addr_t peer;

	xt_open(&x, &cfg);
	peer = xt_exchange(&x, sock);
	XT_ASSERT(xt_wait(sock) == 1, "the sender's signal");
	for (int i = 0; i < CELLS_AHEAD_OF_ACK; i++)
		XT_POST(&x, fi_tinject(x.ep, &byte, 1, peer, TAG_B));
	xt_post_recv(&x, true, buf, sizeof(buf), peer, TAG_A, 0, &ctx);
	xt_wait_rx(&x, &comp);
	xt_close(&x);
}

/*
 * A receiver may ack a send and close at once: the ack, already in the
 * sender's ring, completes the send, which must not fail because the
 * receiver is gone by the time the sender looks (fabtests'
 * fi_rdm_multi_client -U failed so).
 */
START_TEST(send_acked_by_a_receiver_that_left_completes_successfully)
{
	struct xt_cfg cfg = xt_cfg_default();
	char buf[100] = { 0 };
	struct fi_context ctx;
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .tag = TAG_A,
				     .context = &ctx };
	struct xt_comp comp;
	struct xt_child c;
	struct xt_ep x;

	xt_spawn(&c, receiver_acking_then_leaving, NULL);
	xt_open(&x, &cfg);
	msg.addr = xt_exchange(&x, c.sock);
	XT_POST(&x, fi_tsendmsg(x.ep, &msg, FI_COMPLETION | FI_DELIVERY_COMPLETE));
	xt_signal(c.sock, 1);
	xt_join(&c);
	xt_expect_comp(x.tx, x.rx, &comp);
	XT_ASSERT(comp.e.op_context == &ctx, "a completion of another context");
	xt_close(&x);
}
END_TEST

static Suite *close_suite(void)
{
	Suite *s = suite_create("close");
	TCase *snd = tcase_create("sender_closes");
	TCase *rcv = tcase_create("receiver_closes");

	tcase_set_timeout(snd, 30);
	tcase_add_loop_test(snd,
		sender_closing_with_a_large_send_in_flight_leaves_the_receiver_usable, 0,
		3 * NABORTED + NABORTED);
	tcase_add_test(snd, claimed_message_whose_sender_closes_is_not_delivered_as_garbage);
	suite_add_tcase(s, snd);

	tcase_set_timeout(rcv, 40);
	tcase_add_loop_test(rcv, receiver_closing_during_a_stream_leaves_the_sender_responsive,
			    0, 2);
	tcase_add_loop_test(rcv, sends_pending_at_a_receivers_close_end_in_bounded_time, 0, 2);
	tcase_add_loop_test(rcv,
		send_waiting_for_its_receive_ends_with_an_error_when_the_receiver_closes, 0, 4);
	tcase_add_test(rcv, send_acked_by_a_receiver_that_left_completes_successfully);
	suite_add_tcase(s, rcv);
	return s;
}

int main(void)
{
	if (!xt_wanted(XT_EXTRA))	/* none of its cases is selected */
		return xt_run_suite(suite_create("close"));
	return xt_run_suite(close_suite());
}
