/*
 * A peer killed (SIGKILL) while idle, and a new process at its address.
 *
 * The survivor has exchanged messages both ways with the victim, so it maps
 * the victim's region as a destination (AV) and as a sender (acks).  After
 * the kill nothing shows up in the survivor's CQs and another peer's
 * messages keep arriving intact.  Then a new process opens an endpoint with
 * the victim's service, hence its address, and the survivor talks to it
 * both ways, with FI_DELIVERY_COMPLETE sends each way (so acks must reach
 * the new process, not the dead one's ring).  The survivor re-inserts the
 * address; _i picks how:
 *   0  fi_av_remove, then fi_av_insert of the new address;
 *   1  fi_av_remove, another address inserted into the freed slot, then the
 *      new one into a new slot;
 *   2  as 0, the stale region file having been deleted by someone else
 *      before the new process started (so no reclaim marked it closed).
 * (Other processes of this user reclaim stale regions too, at any time, so
 * which process removes the dead one's file is not up to the test.)
 */
#include "fault.h"

#include <errno.h>
#include <stdlib.h>

#define TAG		0x1d1e000000000000ULL
#define MiB		((size_t)1 << 20)
#define SMALL		100
#define ACK_MS		FAULT_DETECT_MS

enum { CMD_QUIT, CMD_RECV, CMD_SEND, CMD_IDLE };

static const size_t lens[] = { SMALL, MiB };
#define NLENS 2

/* Receives one message of each length, seeds seed + i, and checks them. */
static void recv_each(struct xt_ep *x, uint64_t seed)
{
	char *buf = xt_alloc(MiB);
	struct xt_comp c;

	for (int i = 0; i < NLENS; i++) {
		xt_post_recv(x, true, buf, MiB, FI_ADDR_UNSPEC, TAG, 0, buf);
		xt_expect_comp_ms(x->rx, x->tx, 8000, &c);
		XT_ASSERT(c.e.len == lens[i], "message %d: len %zu", i, c.e.len);
		XT_ASSERT_PATTERN(buf, lens[i], seed + (uint64_t)i, 0);
	}
	free(buf);
}

/* Sends one message of each length with FI_DELIVERY_COMPLETE; all acked in time. */
static void send_each(struct xt_ep *x, fi_addr_t dst, uint64_t seed)
{
	struct fi_context ctx[NLENS];
	char *buf[NLENS];
	struct xt_comp c;

	for (int i = 0; i < NLENS; i++) {
		struct iovec iov;
		struct fi_msg_tagged msg = { .msg_iov = &iov, .iov_count = 1, .addr = dst,
					     .tag = TAG, .context = &ctx[i] };

		buf[i] = xt_alloc(lens[i]);
		xt_fill(buf[i], lens[i], seed + (uint64_t)i, 0);
		iov = (struct iovec){ .iov_base = buf[i], .iov_len = lens[i] };
		XT_POST(x, fi_tsendmsg(x->ep, &msg, FI_DELIVERY_COMPLETE | FI_COMPLETION));
	}
	for (int i = 0; i < NLENS; i++) {
		xt_expect_comp_ms(x->tx, x->rx, ACK_MS, &c);
		XT_ASSERT(c.e.op_context == &ctx[0] || c.e.op_context == &ctx[1],
			  "context %p", c.e.op_context);
	}
	for (int i = 0; i < NLENS; i++)
		free(buf[i]);
}

/* The victim and its successor: the same service, driven by the parent. */
static void peer_child(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;
	fi_addr_t parent;
	uint8_t cmd;

	cfg.service = arg;
	cfg.gi_flags = FI_SOURCE;
	xt_open(&x, &cfg);
	parent = xt_exchange(&x, sock);
	while ((cmd = xt_wait_progress(sock, &x)) != CMD_QUIT) {
		if (cmd == CMD_IDLE)
			for (;;)
				pause();
		if (cmd == CMD_RECV)
			recv_each(&x, 80);
		else
			send_each(&x, parent, 85);
		xt_signal(sock, 1);
	}
	xt_close(&x);
}

/* Both ways with a peer child, the child's part first, then the parent's. */
static void talk(struct xt_ep *x, struct xt_child *c, fi_addr_t dst)
{
	xt_signal(c->sock, CMD_RECV);
	send_each(x, dst, 80);
	XT_ASSERT(xt_wait_progress(c->sock, x) == 1, "the peer's receive");
	xt_signal(c->sock, CMD_SEND);
	recv_each(x, 85);
	XT_ASSERT(xt_wait_progress(c->sock, x) == 1, "the peer's acked sends");
}

/* The live peer's messages still arrive intact. */
static void expect_live_peer_works(struct xt_ep *x, struct xt_child *b, uint64_t seed)
{
	struct xt_burst_msg m[NLENS];
	struct xt_burst_result res[NLENS];
	char *buf = xt_alloc(MiB);
	struct xt_comp c;

	for (int i = 0; i < NLENS; i++)
		m[i] = (struct xt_burst_msg){ .tagged = true, .len = lens[i],
					      .seed = seed + (uint64_t)i, .tag = TAG + 1,
					      .flags = FI_COMPLETION };
	xt_burst_post(x, b, m, NLENS, 8000);
	for (int i = 0; i < NLENS; i++) {
		xt_post_recv(x, true, buf, MiB, FI_ADDR_UNSPEC, TAG + 1, 0, buf);
		xt_expect_comp_ms(x->rx, x->tx, 8000, &c);
		XT_ASSERT(c.e.len == lens[i], "len %zu", c.e.len);
		XT_ASSERT_PATTERN(buf, lens[i], seed + (uint64_t)i, 0);
	}
	xt_burst_results(x, b, res, NLENS);
	for (int i = 0; i < NLENS; i++)
		XT_ASSERT(res[i].completed && !res[i].is_err, "live send %d: err %d", i,
			  res[i].err);
	free(buf);
}

static void remove_addr(struct xt_ep *x, fi_addr_t a)
{
	XT_ASSERT_OK(fi_av_remove(x->av, &a, 1, 0));
}

START_TEST(idle_peer_killed_then_replaced_at_its_address)
{
	struct xt_cfg cfg = xt_cfg_default();
	char service[32], victim[XT_NAME_MAX], heir[XT_NAME_MAX], path[128];
	struct xt_child b, v, h;
	fi_addr_t fv, fh;
	struct xt_ep x;

	fault_service(service, sizeof(service), 0);
	xt_spawn(&b, xt_burst_child, NULL);
	xt_spawn(&v, peer_child, service);
	xt_open(&x, &cfg);
	xt_connect_sender(&x, &b, true);
	xt_send_name(v.sock, &x);
	xt_recv_name(v.sock, victim);
	fv = xt_av_insert(&x, victim);
	talk(&x, &v, fv);
	xt_signal(v.sock, CMD_IDLE);
	kill(v.pid, SIGKILL);
	xt_join_killed(&v);

	/* Nothing happens to the survivor; its other peer keeps working. */
	xt_expect_none(x.tx, x.rx, 300);
	expect_live_peer_works(&x, &b, 60);
	xt_expect_none(x.tx, x.rx, 100);

	if (_i == 2) {
		fault_region_path(victim, path, sizeof(path));
		XT_ASSERT(unlink(path) == 0 || errno == ENOENT, "unlink %s", path);
	}
	xt_spawn(&h, peer_child, service);
	xt_send_name(h.sock, &x);
	xt_recv_name(h.sock, heir);
	XT_ASSERT(!strcmp(victim, heir), "the new process has address %s, not %s", heir,
		  victim);
	remove_addr(&x, fv);
	if (_i == 1) {
		char other[XT_NAME_MAX];
		fi_addr_t fo;

		snprintf(other, sizeof(other), "%.*s%016llx", (int)(strrchr(victim, '/') -
			 victim + 1), victim, 0x7ea0000000000000ULL | (unsigned)getpid());
		fo = xt_av_insert(&x, other);
		XT_ASSERT(fo == fv, "the freed slot %llu was not reused (%llu)",
			  (unsigned long long)fv, (unsigned long long)fo);
	}
	fh = xt_av_insert(&x, heir);
	if (_i == 1)
		XT_ASSERT(fh != fv, "the new address took the old slot");
	talk(&x, &h, fh);
	expect_live_peer_works(&x, &b, 65);
	xt_signal(h.sock, CMD_QUIT);
	xt_join(&h);
	xt_burst_quit(&x, &b);
	xt_close(&x);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("dead_idle");
	TCase *tc = tcase_create("dead_idle");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, idle_peer_killed_then_replaced_at_its_address, 0, 3);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
