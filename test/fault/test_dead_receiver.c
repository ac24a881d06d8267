/*
 * A receiver killed (SIGKILL) with sends pending towards it.
 *
 * (a) Sends awaiting their ack (FI_DELIVERY_COMPLETE, FI_MATCH_COMPLETE)
 *     and sends queued behind an exhausted bounce-buffer pool (1 MiB ones,
 *     one with FI_DELIVERY_COMPLETE) each complete with FI_EIO within
 *     FAULT_DETECT_MS of the death; the dead receiver's region file is
 *     removed; a new send to it returns -FI_EHOSTUNREACH; a live receiver
 *     keeps getting the sender's messages.
 * (b) A single-copy send (threshold lowered to 32 KiB) waiting for the
 *     receiver to pull it: FI_EIO.
 * (c) A receiver whose ring is full of small messages: once it is dead,
 *     retrying the send returns -FI_EHOSTUNREACH within the bound.
 */
#include "fault.h"

#include <stdlib.h>

#define TAG		0xdead00000000a000ULL
#define MiB		((size_t)1 << 20)
#define SMALL		100
#define NDC		2	/* sends awaiting acks */
#define NBIG		4	/* 1 MiB sends: two fit the pool, two queue */
#define NSENDS		(NDC + NBIG + 1)

/* Opens an endpoint, exchanges names, posts nothing; killed by the parent. */
static void silent_receiver(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	(void)arg;
	xt_open(&x, &cfg);
	xt_exchange(&x, sock);
	for (;;)
		pause();
}

/* Receives n messages of len bytes, seeds seed, seed + 1, ..., and checks them. */
static void live_receiver(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char *buf = xt_alloc(MiB);
	struct xt_comp c;
	struct xt_ep x;

	(void)arg;
	xt_open(&x, &cfg);
	xt_exchange(&x, sock);
	for (uint8_t n; (n = xt_wait(sock)) != 0;) {
		for (uint8_t i = 0; i < n; i++) {
			xt_post_recv(&x, true, buf, MiB, FI_ADDR_UNSPEC, TAG, 0, NULL);
			xt_wait_rx(&x, &c);
			XT_ASSERT(c.e.len == MiB, "len %zu", c.e.len);
			XT_ASSERT_PATTERN(buf, MiB, 90 + i, 0);
		}
		xt_signal(sock, 1);
	}
	xt_close(&x);
	free(buf);
}

struct rig {
	struct xt_cfg cfg;
	struct xt_ep x;
	struct xt_child dead, live;
	fi_addr_t fdead, flive;
	char dead_name[XT_NAME_MAX];
};

static void rig_start(struct rig *r)
{
	r->cfg = xt_cfg_default();
	xt_spawn(&r->dead, silent_receiver, NULL);
	xt_spawn(&r->live, live_receiver, NULL);
	xt_open(&r->x, &r->cfg);
	xt_send_name(r->dead.sock, &r->x);
	xt_recv_name(r->dead.sock, r->dead_name);
	r->fdead = xt_av_insert(&r->x, r->dead_name);
	r->flive = xt_exchange(&r->x, r->live.sock);
}

static void rig_kill_receiver(struct rig *r)
{
	kill(r->dead.pid, SIGKILL);
	xt_join_killed(&r->dead);
}

/* The live receiver still gets intact messages from the survivor. */
static void expect_live_receiver_works(struct rig *r)
{
	char *buf = xt_alloc(MiB);
	struct xt_comp c;

	xt_signal(r->live.sock, 2);
	for (int i = 0; i < 2; i++) {
		xt_fill(buf, MiB, 90 + (uint64_t)i, 0);
		XT_POST(&r->x, fi_tsend(r->x.ep, buf, MiB, NULL, r->flive, TAG, NULL));
		xt_wait_tx(&r->x, &c);
	}
	XT_ASSERT(xt_wait_progress(r->live.sock, &r->x) == 1, "the live receiver's answer");
	xt_signal(r->live.sock, 0);
	xt_join(&r->live);
	free(buf);
}

static void rig_stop(struct rig *r)
{
	expect_live_receiver_works(r);
	xt_close(&r->x);
}

/* Waits for n error completions of the given contexts, all FI_EIO, in time. */
static void expect_eio_each(struct rig *r, struct fi_context **ctx, int n)
{
	uint64_t t0 = xt_now_ms();
	bool seen[NSENDS] = { false };

	for (int got = 0; got < n; got++) {
		struct xt_comp c;
		int k;

		XT_ASSERT(xt_poll(r->x.tx, r->x.rx, FAULT_DETECT_MS, &c) == 0,
			  "%d of %d sends to the dead receiver ended within %d ms", got, n,
			  FAULT_DETECT_MS);
		XT_ASSERT(c.is_err, "a send to the dead receiver succeeded");
		for (k = 0; k < n && c.err.op_context != ctx[k]; k++)
			;
		XT_ASSERT(k < n && !seen[k], "error for context %p", c.err.op_context);
		seen[k] = true;
		XT_ASSERT(c.err.err == FI_EIO, "send %d: error %d (%s), expected FI_EIO", k,
			  c.err.err, fi_strerror(c.err.err));
		XT_ASSERT(c.err.flags & FI_SEND, "flags 0x%llx", (unsigned long long)c.err.flags);
	}
	XT_ASSERT(xt_now_ms() - t0 <= FAULT_DETECT_MS, "errors took %llu ms",
		  (unsigned long long)(xt_now_ms() - t0));
	fprintf(stderr, "%d sends failed within %llu ms of the receiver's death\n", n,
		(unsigned long long)(xt_now_ms() - t0));
}

static void tsendmsg(struct rig *r, void *buf, size_t len, struct fi_context *ctx,
		     uint64_t flags)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .addr = r->fdead,
				     .tag = TAG, .context = ctx };

	XT_ASSERT_OK(fi_tsendmsg(r->x.ep, &msg, flags | FI_COMPLETION));
}

START_TEST(sends_pending_towards_a_killed_receiver_fail_with_eio)
{
	struct fi_context ctx[NSENDS];
	char small[SMALL] = { 0 };
	char *big = xt_alloc(MiB);
	struct xt_comp c;
	struct rig r;

	rig_start(&r);
	memset(big, 1, MiB);
	tsendmsg(&r, small, SMALL, &ctx[0], FI_DELIVERY_COMPLETE);
	tsendmsg(&r, small, SMALL, &ctx[1], FI_MATCH_COMPLETE);
	for (int i = 0; i < NBIG; i++)
		tsendmsg(&r, big, MiB, &ctx[NDC + i], 0);
	tsendmsg(&r, small, SMALL, &ctx[NDC + NBIG], FI_DELIVERY_COMPLETE);
	/* The first two 1 MiB sends fit the receiver's pool: done at once. */
	for (int i = 0; i < 2; i++) {
		xt_expect_comp_ms(r.x.tx, r.x.rx, 2000, &c);
		XT_ASSERT(c.e.op_context == &ctx[NDC + i], "completion of context %p",
			  c.e.op_context);
	}
	xt_expect_none(r.x.tx, r.x.rx, 200);
	rig_kill_receiver(&r);
	expect_eio_each(&r, (struct fi_context *[]){ &ctx[0], &ctx[1], &ctx[NDC + 2],
						     &ctx[NDC + 3], &ctx[NDC + NBIG] },
			NSENDS - 2);
	XT_ASSERT(!fault_region_exists(r.dead_name), "the dead receiver's region %s is "
		  "still there", r.dead_name);
	XT_ASSERT_RC(fi_tsend(r.x.ep, small, SMALL, NULL, r.fdead, TAG, NULL),
		     -FI_EHOSTUNREACH);
	xt_expect_none(r.x.tx, r.x.rx, 200);
	rig_stop(&r);
	free(big);
}
END_TEST

START_TEST(pulled_send_towards_a_killed_receiver_fails_with_eio)
{
	struct fi_context ctx;
	char *big = xt_alloc(MiB);
	struct rig r;

	XT_ASSERT(setenv("FI_XSHM_SCOPY_THRESHOLD", "32768", 1) == 0, "setenv");
	rig_start(&r);
	memset(big, 2, MiB);
	tsendmsg(&r, big, MiB, &ctx, 0);
	xt_expect_none(r.x.tx, r.x.rx, 200);	/* waits for the pull */
	rig_kill_receiver(&r);
	expect_eio_each(&r, (struct fi_context *[]){ &ctx }, 1);
	rig_stop(&r);
	free(big);
}
END_TEST

START_TEST(full_ring_of_a_killed_receiver_turns_into_ehostunreach)
{
	char small[SMALL] = { 0 };
	uint64_t t0, end;
	ssize_t rc;
	int sent = 0;
	struct rig r;

	rig_start(&r);
	while ((rc = fi_tsend(r.x.ep, small, SMALL, NULL, r.fdead, TAG, NULL)) == 0)
		sent++;
	XT_ASSERT_RC(rc, -FI_EAGAIN);
	XT_ASSERT(sent > 0, "no send went through");
	/* The sends that went into its ring completed when pushed. */
	for (int i = 0; i < sent; i++) {
		struct xt_comp c;

		xt_expect_comp_ms(r.x.tx, r.x.rx, 2000, &c);
	}
	rig_kill_receiver(&r);
	t0 = xt_now_ms();
	end = t0 + FAULT_DETECT_MS;
	while ((rc = fi_tsend(r.x.ep, small, SMALL, NULL, r.fdead, TAG, NULL)) == -FI_EAGAIN &&
	       xt_now_ms() < end)
		xt_progress(&r.x);
	XT_ASSERT_RC(rc, -FI_EHOSTUNREACH);
	fprintf(stderr, "full ring: -FI_EHOSTUNREACH %llu ms after the death (%d sent)\n",
		(unsigned long long)(xt_now_ms() - t0), sent);
	rig_stop(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dead_receiver");
	TCase *tc = tcase_create("dead_receiver");

	/* (a) counts on its 1 MiB sends taking bounce buffers, never a probe */
	setenv("FI_XSHM_SCOPY_HUGE_MIN", "4194304", 1);
	setenv("FI_XSHM_SCOPY_HUGE_STREAM_MIN", "4194304", 1);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, sends_pending_towards_a_killed_receiver_fail_with_eio);
	tcase_add_test(tc, pulled_send_towards_a_killed_receiver_fails_with_eio);
	tcase_add_test(tc, full_ring_of_a_killed_receiver_turns_into_ehostunreach);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
