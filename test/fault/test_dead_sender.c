/*
 * A sender killed (SIGKILL) part way through a message.
 *
 * (a) Chunked message (3 MiB through 16 KiB bounce buffers: the receiver's
 *     pool holds 2 MiB, so the sender dies with a third of it unsent), the
 *     receive posted: it completes with FI_EIO within FAULT_DETECT_MS, the
 *     dead sender's region file is removed, and a live sender's messages
 *     still arrive intact.
 * (b) The same message unexpected: it is dropped -- a peek finds nothing,
 *     and a receive posted afterwards gets the next matching message, from
 *     a live sender, intact.
 * (c) Single copy (threshold lowered to 32 KiB): the sender dies after
 *     pushing its RTS, the receive posted before or after its death: FI_EIO.
 * (d) Single copy of 32 MiB with the sender killed while the receiver may
 *     be pulling: the receive ends, within the bound, either whole and
 *     intact or with FI_EIO.
 * (e) Acks owed to a killed sender whose ring is full (it sent many
 *     FI_DELIVERY_COMPLETE messages without progressing) do not hold back
 *     the acks of a live sender: its FI_DELIVERY_COMPLETE send completes
 *     within the bound.
 */
#include "fault.h"

#include <stdlib.h>
#include <sys/wait.h>

#include "shm/layout.h"

#define TAG_DEAD	0xdead000000000001ULL
#define TAG_LIVE	0xdead000000000002ULL
#define MiB		((size_t)1 << 20)
#define CHUNKED		(3 * MiB)
#define PULLED		MiB
#define PULLED_LONG	(32 * MiB)
#define LIVE_LEN	MiB

struct dying {
	size_t len;
	uint64_t delay_us;	/* between the parent's go and the death */
};

/* Sends one message, waits for the go, then dies with it in flight. */
static void dying_sender(int sock, void *arg)
{
	const struct dying *d = arg;
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(d->len);
	struct fi_context ctx;
	struct xt_ep x;
	fi_addr_t dst;

	xt_open(&x, &cfg);
	dst = xt_exchange(&x, sock);
	xt_fill(buf, d->len, 70, 0);
	xt_wait(sock);
	XT_ASSERT_OK(fi_tsend(x.ep, buf, d->len, NULL, dst, TAG_DEAD, &ctx));
	xt_signal(sock, 1);
	xt_wait(sock);
	usleep((useconds_t)d->delay_us);
	raise(SIGKILL);
}

struct rig {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child dead, live;
	char dead_name[XT_NAME_MAX];
};

static void rig_start(struct rig *r, struct dying *d)
{
	r->cfg = xt_cfg_default();
	xt_spawn(&r->dead, dying_sender, d);
	xt_spawn(&r->live, xt_burst_child, NULL);
	xt_open(&r->x, &r->cfg);
	xt_send_name(r->dead.sock, &r->x);
	xt_recv_name(r->dead.sock, r->dead_name);
	xt_av_insert(&r->x, r->dead_name);
	xt_connect_sender(&r->x, &r->live, true);
}

/* The dead sender pushes what it can, then dies (the receiver idle). */
static void rig_kill_sender(struct rig *r)
{
	xt_signal(r->dead.sock, 1);
	XT_ASSERT(xt_wait(r->dead.sock) == 1, "the sender's signal");
	xt_signal(r->dead.sock, 2);
	xt_join_killed(&r->dead);
}

/* The live sender's message, tagged tag, arrives intact into a new receive. */
static void expect_live_message(struct rig *r, uint64_t tag, size_t recv_len)
{
	struct xt_burst_msg m = { .tagged = true, .len = LIVE_LEN, .seed = 71, .tag = tag,
				  .flags = FI_COMPLETION };
	struct xt_burst_result res;
	char *buf = xt_alloc(recv_len);
	struct fi_context ctx;
	struct xt_comp c;

	xt_post_recv(&r->x, true, buf, recv_len, FI_ADDR_UNSPEC, tag, 0, &ctx);
	xt_burst_post(&r->x, &r->live, &m, 1, 8000);
	xt_expect_comp_ms(r->x.rx, r->x.tx, 8000, &c);
	XT_ASSERT(c.e.op_context == &ctx, "context %p", c.e.op_context);
	XT_ASSERT(c.e.len == LIVE_LEN, "len %zu", c.e.len);
	XT_ASSERT_PATTERN(buf, LIVE_LEN, 71, 0);
	xt_burst_results(&r->x, &r->live, &res, 1);
	XT_ASSERT(res.completed && !res.is_err, "the live sender's send: err %d", res.err);
	free(buf);
}

static void rig_stop(struct rig *r)
{
	xt_burst_quit(&r->x, &r->live);
	xt_close(&r->x);
}

/* The receive of the dead sender's message fails with FI_EIO in time. */
static void expect_eio(struct rig *r, struct fi_context *ctx)
{
	uint64_t t0 = xt_now_ms();
	struct xt_comp c;

	XT_ASSERT(xt_poll(r->x.rx, r->x.tx, FAULT_DETECT_MS, &c) == 0,
		  "no completion %d ms after the sender died", FAULT_DETECT_MS);
	XT_ASSERT(c.is_err, "the dead sender's message completed successfully (len %zu)",
		  c.e.len);
	XT_ASSERT(c.err.op_context == ctx, "error for context %p", c.err.op_context);
	XT_ASSERT(c.err.err == FI_EIO, "error %d (%s), expected FI_EIO", c.err.err,
		  fi_strerror(c.err.err));
	XT_ASSERT(c.err.tag == TAG_DEAD, "tag %llx", (unsigned long long)c.err.tag);
	fprintf(stderr, "receive failed %llu ms after the sender's death\n",
		(unsigned long long)(xt_now_ms() - t0));
}

START_TEST(killed_sender_mid_chunked_message_fails_the_posted_receive)
{
	struct dying d = { .len = CHUNKED };
	char *buf = xt_alloc(CHUNKED);
	struct fi_context ctx;
	struct rig r;

	rig_start(&r, &d);
	xt_post_recv(&r.x, true, buf, CHUNKED, FI_ADDR_UNSPEC, TAG_DEAD, 0, &ctx);
	rig_kill_sender(&r);
	expect_eio(&r, &ctx);
	XT_ASSERT(!fault_region_exists(r.dead_name), "the dead sender's region %s is "
		  "still there", r.dead_name);
	xt_expect_none(r.x.rx, r.x.tx, 300);
	expect_live_message(&r, TAG_LIVE, LIVE_LEN);
	rig_stop(&r);
	free(buf);
}
END_TEST

START_TEST(unexpected_partial_message_of_a_killed_sender_is_dropped)
{
	struct dying d = { .len = CHUNKED };
	struct fi_context peek_ctx;
	struct fi_msg_tagged peek = { .iov_count = 0, .addr = FI_ADDR_UNSPEC,
				      .tag = TAG_DEAD, .context = &peek_ctx };
	uint64_t end;
	struct xt_comp c;
	struct rig r;

	rig_start(&r, &d);
	rig_kill_sender(&r);
	/* Progress until the survivor noticed (it removes the dead region). */
	end = xt_now_ms() + FAULT_DETECT_MS;
	while (fault_region_exists(r.dead_name) && xt_now_ms() < end)
		xt_progress(&r.x);
	XT_ASSERT(!fault_region_exists(r.dead_name), "the dead sender was not noticed "
		  "within %d ms", FAULT_DETECT_MS);
	xt_expect_none(r.x.rx, r.x.tx, 200);
	XT_POST(&r.x, fi_trecvmsg(r.x.ep, &peek, FI_PEEK));
	xt_expect_err_ms(r.x.rx, r.x.tx, 2000, &c);
	XT_ASSERT(c.err.err == FI_ENOMSG, "peek: error %d, the dropped message is "
		  "still held", c.err.err);
	/* The next message with that tag is the live sender's, whole. */
	expect_live_message(&r, TAG_DEAD, CHUNKED);
	rig_stop(&r);
}
END_TEST

static void use_test_threshold(void)
{
	XT_ASSERT(setenv("FI_XSHM_SCOPY_THRESHOLD", "32768", 1) == 0, "setenv");
}

/* _i: 0 the receive posted before the death, 1 after. */
START_TEST(killed_sender_of_a_pulled_message_fails_the_receive)
{
	struct dying d = { .len = PULLED };
	char *buf = xt_alloc(PULLED);
	struct fi_context ctx;
	struct rig r;

	use_test_threshold();
	rig_start(&r, &d);
	if (_i == 0)
		xt_post_recv(&r.x, true, buf, PULLED, FI_ADDR_UNSPEC, TAG_DEAD, 0, &ctx);
	rig_kill_sender(&r);
	if (_i == 1) {
		xt_expect_none(r.x.rx, r.x.tx, 100);
		xt_post_recv(&r.x, true, buf, PULLED, FI_ADDR_UNSPEC, TAG_DEAD, 0, &ctx);
	}
	expect_eio(&r, &ctx);
	expect_live_message(&r, TAG_LIVE, LIVE_LEN);
	rig_stop(&r);
	free(buf);
}
END_TEST

/* _i: how long (in 0.5 ms steps) the sender lives once the pull may start. */
START_TEST(sender_killed_during_a_pull_gives_the_whole_message_or_eio)
{
	struct dying d = { .len = PULLED_LONG, .delay_us = (uint64_t)_i * 500 };
	char *buf = xt_alloc(PULLED_LONG);
	struct fi_context ctx;
	bool got = false;
	struct xt_comp c;
	struct rig r;

	use_test_threshold();
	rig_start(&r, &d);
	memset(buf, 0, PULLED_LONG);
	xt_signal(r.dead.sock, 1);
	XT_ASSERT(xt_wait(r.dead.sock) == 1, "the sender's signal");
	xt_post_recv(&r.x, true, buf, PULLED_LONG, FI_ADDR_UNSPEC, TAG_DEAD, 0, &ctx);
	xt_signal(r.dead.sock, 2);
	/* Pull (or fail) while the sender dies; reap it once dead. */
	for (;;) {
		siginfo_t info = { .si_pid = 0 };

		if (xt_poll(r.x.rx, NULL, 0, &c) == 0) {
			got = true;
			break;
		}
		if (waitid(P_PID, (id_t)r.dead.pid, &info,
			   WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid)
			break;
	}
	xt_join_killed(&r.dead);
	if (!got)
		XT_ASSERT(xt_poll(r.x.rx, r.x.tx, FAULT_DETECT_MS, &c) == 0,
			  "no completion %d ms after the sender died", FAULT_DETECT_MS);
	if (c.is_err) {
		XT_ASSERT(c.err.err == FI_EIO, "error %d (%s)", c.err.err,
			  fi_strerror(c.err.err));
	} else {
		XT_ASSERT(c.e.len == PULLED_LONG, "len %zu", c.e.len);
		XT_ASSERT_PATTERN(buf, PULLED_LONG, 70, 0);
	}
	expect_live_message(&r, TAG_LIVE, LIVE_LEN);
	rig_stop(&r);
	free(buf);
}
END_TEST

#define FLOOD	(XSHM_RING_CELLS + 100)	/* more acks than the sender's ring holds */

/* Sends FLOOD acked messages without ever reading its own ring, then dies. */
static void ack_flooder(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char small[64] = { 0 };
	struct iovec iov = { .iov_base = small, .iov_len = sizeof(small) };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .tag = TAG_DEAD };
	uint64_t end;
	struct xt_ep x;
	int sent = 0;

	(void)arg;
	xt_open(&x, &cfg);
	msg.addr = xt_exchange(&x, sock);
	xt_wait(sock);
	end = xt_now_ms() + 20000;
	while (sent < FLOOD) {
		ssize_t rc = fi_tsendmsg(x.ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION);

		XT_ASSERT(rc == 0 || rc == -FI_EAGAIN, "send: %s", xt_strerror(rc));
		XT_ASSERT(xt_now_ms() < end, "%d of %d sends posted", sent, FLOOD);
		if (rc == 0)
			sent++;
		else
			usleep(100);
	}
	xt_wait(sock);
	raise(SIGKILL);
}

START_TEST(acks_owed_to_a_killed_sender_do_not_block_others)
{
	struct xt_burst_msg m = { .tagged = true, .len = 100, .seed = 72, .tag = TAG_LIVE,
				  .flags = FI_DELIVERY_COMPLETE | FI_COMPLETION };
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_burst_result res;
	struct xt_child flooder, live;
	char buf[128];
	struct xt_comp c;
	struct xt_ep x;

	xt_spawn(&flooder, ack_flooder, NULL);
	xt_spawn(&live, xt_burst_child, NULL);
	xt_open(&x, &cfg);
	xt_exchange(&x, flooder.sock);
	xt_connect_sender(&x, &live, true);
	xt_signal(flooder.sock, 1);
	for (int i = 0; i < FLOOD; i++) {
		xt_post_recv(&x, true, buf, sizeof(buf), FI_ADDR_UNSPEC, TAG_DEAD, 0, NULL);
		xt_expect_comp_ms(x.rx, x.tx, 20000, &c);
	}
	xt_signal(flooder.sock, 2);
	xt_join_killed(&flooder);
	xt_post_recv(&x, true, buf, sizeof(buf), FI_ADDR_UNSPEC, TAG_LIVE, 0, NULL);
	xt_burst_post(&x, &live, &m, 1, FAULT_DETECT_MS);
	xt_burst_results(&x, &live, &res, 1);
	XT_ASSERT(res.completed && !res.is_err, "the live sender's acked send: completed %d, "
		  "err %d", res.completed, res.err);
	xt_expect_comp_ms(x.rx, x.tx, 2000, &c);
	XT_ASSERT_PATTERN(buf, 100, 72, 0);
	xt_burst_quit(&x, &live);
	xt_close(&x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dead_sender");
	TCase *tc = tcase_create("dead_sender");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, killed_sender_mid_chunked_message_fails_the_posted_receive);
	tcase_add_test(tc, unexpected_partial_message_of_a_killed_sender_is_dropped);
	tcase_add_loop_test(tc, killed_sender_of_a_pulled_message_fails_the_receive, 0, 2);
	tcase_add_loop_test(tc, sender_killed_during_a_pull_gives_the_whole_message_or_eio,
			    0, 4);
	tcase_add_test(tc, acks_owed_to_a_killed_sender_do_not_block_others);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
