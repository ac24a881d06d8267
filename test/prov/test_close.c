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

/* arg: the index in aborted[]. */
static void aborting_sender(int sock, void *arg)
{
	int k = (int)(intptr_t)arg;
	size_t len = aborted[k].len;
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(len);
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_context ctx;
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .tag = TAG_A,
				     .context = &ctx };
	struct xt_comp c;
	uint64_t t0, dt;
	struct xt_ep x;

	xt_open(&x, &cfg);
	msg.addr = xt_exchange(&x, sock);
	xt_fill(buf, len, 50, 0);
	xt_wait(sock);
	XT_POST(&x, fi_tsendmsg(x.ep, &msg, FI_COMPLETION | aborted[k].flags));
	(void)xt_poll(x.tx, x.rx, 20, &c);	/* whatever happens, then close */
	t0 = xt_now_ms();
	xt_close(&x);
	dt = xt_now_ms() - t0;
	xt_send_u64(sock, dt);
	free(buf);
}

START_TEST(sender_closing_with_a_large_send_in_flight_leaves_the_receiver_usable)
{
	bool progressing = _i % 2;
	int k = _i / 2;
	size_t alen = aborted[k].len;
	static const size_t lens[] = { 100, XSHM_BUF_SIZE, MiB, BIG };
	enum { NB = (int)(sizeof(lens) / sizeof(lens[0])) };
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_burst_msg m[NB];
	struct xt_burst_result res[NB];
	char *abuf = xt_alloc(alen), *bbuf[NB];
	struct fi_context actx;
	bool a_done = false;
	struct xt_child a, b;
	struct xt_comp c;
	struct xt_ep x;
	uint64_t dt;

	xt_spawn(&a, aborting_sender, (void *)(intptr_t)k);
	xt_spawn(&b, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_exchange(&x, a.sock);
	xt_connect_sender(&x, &b, true);
	xt_signal(a.sock, 1);
	dt = progressing ? xt_recv_u64_progress(a.sock, &x) : xt_recv_u64(a.sock);
	xt_join(&a);
	XT_ASSERT(dt < CLOSE_MS, "closing the sender with %s in flight took %llu ms",
		  aborted[k].what, (unsigned long long)dt);
	/* The aborted message: an error or nothing, or (only if it all arrived) intact. */
	memset(abuf, 0, alen);
	xt_post_recv(&x, true, abuf, alen, FI_ADDR_UNSPEC, TAG_A, 0, &actx);
	if (xt_poll(x.rx, x.tx, 500, &c) == 0) {
		a_done = true;
		XT_ASSERT(c.is_err ? c.err.op_context == &actx : c.e.op_context == &actx,
			  "a completion for a receive never posted");
		if (!c.is_err) {
			XT_ASSERT(c.e.len == alen, "%s: the aborted message completed successfully "
				  "with %zu of %zu bytes", aborted[k].what, c.e.len, alen);
			XT_ASSERT(xt_mismatch(abuf, alen, 50, 0) < 0, "%s: the aborted message "
				  "completed successfully with wrong data at byte %zd",
				  aborted[k].what, xt_mismatch(abuf, alen, 50, 0));
		}
	}
	/* A new sender: every size arrives intact. */
	for (int i = 0; i < NB; i++) {
		m[i] = (struct xt_burst_msg){ .tagged = true, .len = lens[i],
					      .seed = 60 + (uint64_t)i, .tag = TAG_B,
					      .flags = FI_COMPLETION };
		bbuf[i] = xt_alloc(lens[i]);
		xt_post_recv(&x, true, bbuf[i], lens[i], FI_ADDR_UNSPEC, TAG_B, 0, bbuf[i]);
	}
	xt_burst_post(&x, &b, m, NB, WAIT_MS);
	for (int n = 0; n < NB; n++) {
		xt_wait_rx(&x, &c);
		if (c.e.op_context == &actx) {
			XT_ASSERT(false, "the aborted message completed successfully (len %zu) "
				  "after its sender closed", c.e.len);
		}
		for (int i = 0; i < NB; i++) {
			if (c.e.op_context != bbuf[i])
				continue;
			XT_ASSERT(c.e.len == lens[i], "message %d: len %zu, sent %zu", i, c.e.len,
				  lens[i]);
			XT_ASSERT_PATTERN(bbuf[i], lens[i], 60 + (uint64_t)i, 0);
		}
	}
	xt_burst_results(&x, &b, res, NB);
	for (int i = 0; i < NB; i++)
		XT_ASSERT(res[i].completed && !res[i].is_err, "the new sender's send %d: "
			  "completed %d, err %d", i, res[i].completed, res[i].err);
	/* Only an error for the aborted message may still come. */
	if (xt_poll(x.rx, x.tx, 100, &c) == 0)
		XT_ASSERT(!a_done && c.is_err && c.err.op_context == &actx,
			  "unexpected %s, context %p", c.is_err ? "error" : "completion",
			  c.is_err ? c.err.op_context : c.e.op_context);
	xt_burst_quit(&x, &b);
	xt_close(&x);
	free(abuf);
	for (int i = 0; i < NB; i++)
		free(bbuf[i]);
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

static Suite *close_suite(void)
{
	Suite *s = suite_create("close");
	TCase *snd = tcase_create("sender_closes");
	TCase *rcv = tcase_create("receiver_closes");

	tcase_set_timeout(snd, 30);
	tcase_add_loop_test(snd,
		sender_closing_with_a_large_send_in_flight_leaves_the_receiver_usable, 0,
		2 * NABORTED);
	suite_add_tcase(s, snd);

	tcase_set_timeout(rcv, 40);
	tcase_add_loop_test(rcv, receiver_closing_during_a_stream_leaves_the_sender_responsive,
			    0, 2);
	tcase_add_loop_test(rcv, sends_pending_at_a_receivers_close_end_in_bounded_time, 0, 2);
	tcase_add_loop_test(rcv,
		send_waiting_for_its_receive_ends_with_an_error_when_the_receiver_closes, 0, 4);
	suite_add_tcase(s, rcv);
	return s;
}

int main(void)
{
	return xt_run_suite(close_suite());
}
