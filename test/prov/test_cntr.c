/*
 * Counters: values, binding, counting sends and receives across processes
 * (with and without CQ entries), errors, fi_cntr_wait and close.
 */
#include "harness.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MSG_LEN		64
#define LATE_MS		2000	/* a wakeup this late was lost */

enum { CMD_QUIT = 1, CMD_GO, CMD_DONE };
enum { TX_CQ = 1, RX_CQ = 2, TX_CNTR = 4, RX_CNTR = 8 };

static const enum fi_wait_obj all_waits[] = {
	FI_WAIT_NONE, FI_WAIT_UNSPEC, FI_WAIT_FD, FI_WAIT_YIELD,
};

/* ---- an endpoint with counters ---- */

struct cep {
	struct xt_ep x;
	struct fid_cntr *tx, *rx;
};

static struct fid_cntr *open_cntr(struct fid_domain *domain, enum fi_wait_obj wait_obj)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP, .wait_obj = wait_obj };
	struct fid_cntr *cntr;

	XT_ASSERT_OK(fi_cntr_open(domain, &attr, &cntr, NULL));
	return cntr;
}

/* Binds the CQs and counters (waiting with cntr_wait) that what asks for. */
static void cep_open(struct cep *c, const struct xt_cfg *cfg, unsigned what,
		     enum fi_wait_obj cntr_wait)
{
	memset(c, 0, sizeof(*c));
	xt_open_upto(&c->x, cfg, XT_EP);
	XT_ASSERT_OK(fi_ep_bind(c->x.ep, &c->x.av->fid, 0));
	if (what & TX_CQ)
		XT_ASSERT_OK(fi_ep_bind(c->x.ep, &c->x.tx->fid->fid,
					FI_TRANSMIT | cfg->tx_bind_flags));
	if (what & RX_CQ)
		XT_ASSERT_OK(fi_ep_bind(c->x.ep, &c->x.rx->fid->fid, FI_RECV));
	if (what & TX_CNTR) {
		c->tx = open_cntr(c->x.domain, cntr_wait);
		XT_ASSERT_OK(fi_ep_bind(c->x.ep, &c->tx->fid, FI_SEND));
	}
	if (what & RX_CNTR) {
		c->rx = open_cntr(c->x.domain, cntr_wait);
		XT_ASSERT_OK(fi_ep_bind(c->x.ep, &c->rx->fid, FI_RECV));
	}
	xt_enable(&c->x);
}

static void cep_close(struct cep *c)
{
	XT_ASSERT_OK(fi_close(&c->x.ep->fid));
	c->x.ep = NULL;
	if (c->tx)
		XT_ASSERT_OK(fi_close(&c->tx->fid));
	if (c->rx)
		XT_ASSERT_OK(fi_close(&c->rx->fid));
	xt_close(&c->x);
}

/* ---- the sending child ---- */

/*
 * rounds > 0: rounds of the five kinds of sends (send, inject, tsend,
 * tinject, sendmsg with FI_COMPLETION); else count fi_send, delay_ms
 * apart.  Its transmit CQ is bound with FI_SELECTIVE_COMPLETION, so only
 * the sendmsg calls give CQ entries; its transmit counter counts them all.
 */
struct plan {
	int rounds;
	int count;
	size_t len;
	int delay_ms;
};

#define KINDS	5
#define TAG	0x77ULL

static int plan_total(const struct plan *p)
{
	return p->rounds ? p->rounds * KINDS : p->count;
}

static void send_kind(struct xt_ep *x, int kind, const void *buf, size_t len,
		      fi_addr_t dst, void *ctx)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1, .addr = dst, .context = ctx };

	switch (kind) {
	case 0: XT_POST(x, fi_send(x->ep, buf, len, NULL, dst, ctx)); break;
	case 1: XT_POST(x, fi_inject(x->ep, buf, len, dst)); break;
	case 2: XT_POST(x, fi_tsend(x->ep, buf, len, NULL, dst, TAG, ctx)); break;
	case 3: XT_POST(x, fi_tinject(x->ep, buf, len, dst, TAG)); break;
	default: XT_POST(x, fi_sendmsg(x->ep, &msg, FI_COMPLETION)); break;
	}
}

static void send_plan(struct xt_ep *x, const struct plan *p, fi_addr_t dst, void *ctx)
{
	char *buf = xt_alloc(p->len);

	xt_fill(buf, p->len, 7, 0);
	for (int r = 0; r < p->rounds; r++)
		for (int kind = 0; kind < KINDS; kind++)
			send_kind(x, kind, buf, p->len, dst, ctx);
	for (int i = 0; i < p->count; i++) {
		usleep((useconds_t)p->delay_ms * 1000);
		send_kind(x, 0, buf, p->len, dst, ctx);
	}
	free(buf);
}

static void sender(int sock, void *arg)
{
	const struct plan *p = arg;
	struct xt_cfg cfg = xt_cfg_default();
	uint64_t total = (uint64_t)plan_total(p);
	struct xt_comp c;
	struct cep s;
	fi_addr_t dst;
	int entries = 0;
	char ctx;

	cfg.tx_bind_flags = FI_SELECTIVE_COMPLETION;
	cep_open(&s, &cfg, TX_CQ | RX_CQ | TX_CNTR, FI_WAIT_UNSPEC);
	dst = xt_exchange(&s.x, sock);
	XT_ASSERT(xt_wait(sock) == CMD_GO, "no go");
	send_plan(&s.x, p, dst, &ctx);
	XT_ASSERT_OK(fi_cntr_wait(s.tx, total, XT_TIMEOUT_MS));
	XT_ASSERT(fi_cntr_read(s.tx) == total, "sender counted %llu of %llu",
		  (unsigned long long)fi_cntr_read(s.tx), (unsigned long long)total);
	XT_ASSERT(fi_cntr_readerr(s.tx) == 0, "send errors counted");
	while (xt_poll(s.x.tx, NULL, 100, &c) == 0) {
		XT_ASSERT(!c.is_err && c.e.op_context == &ctx, "unexpected send entry");
		entries++;
	}
	XT_ASSERT(entries == p->rounds, "%d send CQ entries, %d sendmsg with FI_COMPLETION",
		  entries, p->rounds);
	xt_signal(sock, CMD_DONE);
	XT_ASSERT(xt_wait(sock) == CMD_QUIT, "no quit");
	cep_close(&s);
}

/* The receiving parent. */
struct rig {
	struct xt_cfg cfg;
	struct cep r;
	struct xt_child child;
};

static void rig_start(struct rig *g, const struct plan *p, unsigned what,
		      enum fi_wait_obj cntr_wait)
{
	g->cfg = xt_cfg_default();
	xt_spawn(&g->child, sender, (void *)p);
	cep_open(&g->r, &g->cfg, what, cntr_wait);
	xt_exchange(&g->r.x, g->child.sock);
}

static void rig_stop(struct rig *g)
{
	XT_ASSERT(xt_wait(g->child.sock) == CMD_DONE, "sender did not finish");
	xt_signal(g->child.sock, CMD_QUIT);
	xt_join(&g->child);
	cep_close(&g->r);
}

/* Reads (so progresses) until the counter reaches want or time is up. */
static uint64_t read_until(struct fid_cntr *cntr, uint64_t want)
{
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS, v;

	while ((v = fi_cntr_read(cntr)) < want && xt_now_ms() < end)
		;
	return v;
}

/* ---- values ---- */

START_TEST(cntr_values_read_add_set)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *cntr;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	cntr = open_cntr(x.domain, all_waits[_i]);
	XT_ASSERT(fi_cntr_read(cntr) == 0 && fi_cntr_readerr(cntr) == 0, "not zero at open");
	XT_ASSERT_OK(fi_cntr_add(cntr, 5));
	XT_ASSERT_OK(fi_cntr_add(cntr, 2));
	XT_ASSERT(fi_cntr_read(cntr) == 7, "read %llu", (unsigned long long)fi_cntr_read(cntr));
	XT_ASSERT_OK(fi_cntr_set(cntr, 3));
	XT_ASSERT(fi_cntr_read(cntr) == 3, "read %llu", (unsigned long long)fi_cntr_read(cntr));
	XT_ASSERT(fi_cntr_readerr(cntr) == 0, "errors moved");
	XT_ASSERT_OK(fi_cntr_adderr(cntr, 4));
	XT_ASSERT(fi_cntr_readerr(cntr) == 4, "readerr %llu",
		  (unsigned long long)fi_cntr_readerr(cntr));
	XT_ASSERT_OK(fi_cntr_seterr(cntr, 1));
	XT_ASSERT(fi_cntr_readerr(cntr) == 1, "readerr %llu",
		  (unsigned long long)fi_cntr_readerr(cntr));
	XT_ASSERT(fi_cntr_read(cntr) == 3, "value moved with the errors");
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
}
END_TEST

START_TEST(cntr_open_with_null_attr_is_default)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *cntr;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	XT_ASSERT_OK(fi_cntr_open(x.domain, NULL, &cntr, NULL));
	XT_ASSERT_RC(fi_cntr_wait(cntr, 1, 10), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
}
END_TEST

START_TEST(cntr_open_refuses_what_it_lacks)
{
	static const enum fi_wait_obj refused[] = {
		FI_WAIT_SET, FI_WAIT_MUTEX_COND, FI_WAIT_POLLFD,
	};
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		attr.wait_obj = refused[i];
		XT_ASSERT_RC(fi_cntr_open(x.domain, &attr, &cntr, NULL), -FI_ENOSYS);
	}
	attr.wait_obj = FI_WAIT_NONE;
	attr.events = FI_CNTR_EVENTS_COMP + 1;
	XT_ASSERT_RC(fi_cntr_open(x.domain, &attr, &cntr, NULL), -FI_ENOSYS);
	attr.events = FI_CNTR_EVENTS_COMP;
	attr.flags = FI_PEER;
	XT_ASSERT_RC(fi_cntr_open(x.domain, &attr, &cntr, NULL), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

START_TEST(cntr_wait_on_wait_none_is_invalid)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *cntr;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	cntr = open_cntr(x.domain, FI_WAIT_NONE);
	XT_ASSERT_RC(fi_cntr_wait(cntr, 1, 100), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
}
END_TEST

/* ---- binding ---- */

START_TEST(cntr_bind_flags)
{
	static const uint64_t refused[] = {
		0, FI_TAGGED, FI_SELECTIVE_COMPLETION, FI_SEND | FI_SELECTIVE_COMPLETION,
	};
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *a, *b;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_EP);
	a = open_cntr(x.domain, FI_WAIT_NONE);
	b = open_cntr(x.domain, FI_WAIT_NONE);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		XT_ASSERT_RC(fi_ep_bind(x.ep, &a->fid, refused[i]), -FI_EINVAL);
	/* RMA events are taken beside sends and receives, as ubertest binds them. */
	XT_ASSERT_OK(fi_ep_bind(x.ep, &a->fid, FI_SEND | FI_READ | FI_WRITE));
	XT_ASSERT_RC(fi_ep_bind(x.ep, &b->fid, FI_SEND), -FI_EINVAL);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &a->fid, FI_RECV | FI_REMOTE_READ | FI_REMOTE_WRITE));
	XT_ASSERT_RC(fi_ep_bind(x.ep, &b->fid, FI_RECV), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_close(&a->fid));
	XT_ASSERT_OK(fi_close(&b->fid));
	xt_close(&x);
}
END_TEST

/*
 * xshm counts each RMA event on one counter, as it does sends and
 * receives: a second counter for FI_READ or FI_REMOTE_WRITE is refused.
 */
START_TEST(cntr_one_counter_per_rma_event)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *a, *b;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_EP);
	a = open_cntr(x.domain, FI_WAIT_NONE);
	b = open_cntr(x.domain, FI_WAIT_NONE);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &a->fid, FI_READ | FI_REMOTE_WRITE));
	XT_ASSERT_RC(fi_ep_bind(x.ep, &b->fid, FI_READ), -FI_EINVAL);
	XT_ASSERT_RC(fi_ep_bind(x.ep, &b->fid, FI_REMOTE_WRITE), -FI_EINVAL);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &b->fid, FI_WRITE | FI_REMOTE_READ));
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_close(&a->fid));
	XT_ASSERT_OK(fi_close(&b->fid));
	xt_close(&x);
}
END_TEST

START_TEST(cntr_bind_after_enable_is_refused)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *cntr;
	struct xt_ep x;

	xt_open(&x, &cfg);
	cntr = open_cntr(x.domain, FI_WAIT_NONE);
	XT_ASSERT(fi_ep_bind(x.ep, &cntr->fid, FI_SEND) < 0, "bound after enable");
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
}
END_TEST

START_TEST(cntr_close_while_bound_is_busy)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct cep c;

	cep_open(&c, &cfg, TX_CQ | RX_CNTR, FI_WAIT_UNSPEC);
	XT_ASSERT_RC(fi_close(&c.rx->fid), -FI_EBUSY);
	XT_ASSERT(fi_cntr_read(c.rx) == 0, "counter unusable after a refused close");
	cep_close(&c);
}
END_TEST

/* One counter bound for both directions counts a message to ourselves twice. */
START_TEST(cntr_bound_send_and_recv_counts_both)
{
	struct xt_cfg cfg = xt_cfg_default();
	char out[MSG_LEN], in[MSG_LEN];
	struct fid_cntr *cntr;
	struct xt_ep x;
	fi_addr_t self;

	xt_open_upto(&x, &cfg, XT_EP);
	cntr = open_cntr(x.domain, FI_WAIT_UNSPEC);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &x.av->fid, 0));
	XT_ASSERT_OK(fi_ep_bind(x.ep, &cntr->fid, FI_SEND | FI_RECV));
	xt_enable(&x);
	self = xt_av_insert(&x, x.name);
	xt_fill(out, sizeof(out), 3, 0);
	XT_ASSERT_OK(fi_recv(x.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, NULL));
	XT_ASSERT_OK(fi_inject(x.ep, out, sizeof(out), self));
	XT_ASSERT_OK(fi_cntr_wait(cntr, 2, XT_TIMEOUT_MS));
	XT_ASSERT(fi_cntr_read(cntr) == 2, "counted %llu", (unsigned long long)fi_cntr_read(cntr));
	XT_ASSERT_PATTERN(in, MSG_LEN, 3, 0);
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
}
END_TEST

/* ---- counting across processes ---- */

/*
 * The receiver has a counter and no CQ on its receive side; reading the
 * counter is what progresses it.  The sender counts every kind of send,
 * with and without CQ entries.
 */
START_TEST(cntr_counts_every_kind_of_send_across_processes)
{
	enum { ROUNDS = 4, UNTAGGED = 3 * ROUNDS, TAGGED = 2 * ROUNDS };
	const struct plan p = { .rounds = ROUNDS, .len = MSG_LEN };
	char ubuf[UNTAGGED][MSG_LEN], tbuf[TAGGED][MSG_LEN];
	struct rig g;
	uint64_t got;

	rig_start(&g, &p, TX_CQ | RX_CNTR, FI_WAIT_NONE);
	for (int i = 0; i < UNTAGGED; i++)
		xt_post_recv(&g.r.x, false, ubuf[i], MSG_LEN, FI_ADDR_UNSPEC, 0, 0, NULL);
	for (int i = 0; i < TAGGED; i++)
		xt_post_recv(&g.r.x, true, tbuf[i], MSG_LEN, FI_ADDR_UNSPEC, TAG, 0, NULL);
	xt_signal(g.child.sock, CMD_GO);
	got = read_until(g.r.rx, UNTAGGED + TAGGED);
	XT_ASSERT(got == UNTAGGED + TAGGED, "received %llu of %d", (unsigned long long)got,
		  UNTAGGED + TAGGED);
	XT_ASSERT(fi_cntr_readerr(g.r.rx) == 0, "receive errors counted");
	for (int i = 0; i < UNTAGGED; i++)
		XT_ASSERT_PATTERN(ubuf[i], MSG_LEN, 7, 0);
	for (int i = 0; i < TAGGED; i++)
		XT_ASSERT_PATTERN(tbuf[i], MSG_LEN, 7, 0);
	rig_stop(&g);
}
END_TEST

START_TEST(cntr_truncated_receive_counts_an_error)
{
	const struct plan p = { .count = 1, .len = MSG_LEN };
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err = { 0 };
	char buf[MSG_LEN / 2], ctx;
	struct rig g;

	rig_start(&g, &p, TX_CQ | RX_CQ | RX_CNTR, all_waits[_i]);
	xt_post_recv(&g.r.x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, &ctx);
	xt_signal(g.child.sock, CMD_GO);
	if (all_waits[_i] == FI_WAIT_NONE) {
		uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;

		while (fi_cntr_readerr(g.r.rx) == 0 && xt_now_ms() < end)
			;
	} else {
		/* fi_cntr(3): an error during the wait ends it. */
		XT_ASSERT_RC(fi_cntr_wait(g.r.rx, 1, XT_TIMEOUT_MS), -FI_EAVAIL);
	}
	XT_ASSERT(fi_cntr_readerr(g.r.rx) == 1, "readerr %llu",
		  (unsigned long long)fi_cntr_readerr(g.r.rx));
	XT_ASSERT(fi_cntr_read(g.r.rx) == 0, "a truncated receive counted as a success");
	XT_ASSERT_RC(fi_cq_read(g.r.x.rx->fid, &e, 1), -FI_EAVAIL);
	XT_ASSERT_RC(fi_cq_readerr(g.r.x.rx->fid, &err, 0), 1);
	XT_ASSERT(err.err == FI_ETRUNC && err.op_context == &ctx, "err %d", err.err);
	rig_stop(&g);
}
END_TEST

/* _i indexes all_waits past FI_WAIT_NONE. */
START_TEST(cntr_wait_reaches_a_threshold_set_by_a_remote_sender)
{
	enum { N = 10 };
	const struct plan p = { .count = N, .len = MSG_LEN, .delay_ms = 20 };
	char buf[N][MSG_LEN];
	struct rig g;
	uint64_t t0;

	rig_start(&g, &p, TX_CQ | RX_CNTR, all_waits[_i]);
	for (int i = 0; i < N; i++)
		xt_post_recv(&g.r.x, false, buf[i], MSG_LEN, FI_ADDR_UNSPEC, 0, 0, NULL);
	t0 = xt_now_ms();
	xt_signal(g.child.sock, CMD_GO);
	XT_ASSERT_OK(fi_cntr_wait(g.r.rx, N / 2, XT_TIMEOUT_MS));
	XT_ASSERT(fi_cntr_read(g.r.rx) >= N / 2, "below the threshold");
	XT_ASSERT_OK(fi_cntr_wait(g.r.rx, N, XT_TIMEOUT_MS));
	XT_ASSERT(xt_now_ms() - t0 >= N * 20 * 8 / 10, "done before the sender was");
	XT_ASSERT(xt_now_ms() - t0 < N * 20 + LATE_MS, "took %llu ms",
		  (unsigned long long)(xt_now_ms() - t0));
	XT_ASSERT(fi_cntr_read(g.r.rx) == N, "read %llu", (unsigned long long)fi_cntr_read(g.r.rx));
	for (int i = 0; i < N; i++)
		XT_ASSERT_PATTERN(buf[i], MSG_LEN, 7, 0);
	rig_stop(&g);
}
END_TEST

START_TEST(cntr_wait_times_out)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_cntr *lone;
	struct cep c;
	uint64_t t0, waited;

	cep_open(&c, &cfg, TX_CQ | RX_CNTR, all_waits[_i]);
	t0 = xt_now_ms();
	XT_ASSERT_RC(fi_cntr_wait(c.rx, 1, 300), -FI_ETIMEDOUT);
	waited = xt_now_ms() - t0;
	XT_ASSERT(waited >= 280 && waited < 300 + LATE_MS, "waited %llu ms for 300",
		  (unsigned long long)waited);
	XT_ASSERT(fi_cntr_readerr(c.rx) == 0, "a timeout changed the error count");
	lone = open_cntr(c.x.domain, all_waits[_i]);
	XT_ASSERT_RC(fi_cntr_wait(lone, 1, 0), -FI_ETIMEDOUT);
	XT_ASSERT_OK(fi_cntr_add(lone, 2));
	XT_ASSERT_OK(fi_cntr_wait(lone, 2, 0));
	XT_ASSERT_OK(fi_close(&lone->fid));
	cep_close(&c);
}
END_TEST

struct later {
	struct fid_cntr *cntr;
	bool err;
	long long rc;
};

static void *add_later(void *arg)
{
	struct later *l = arg;

	usleep(300 * 1000);
	l->rc = l->err ? fi_cntr_adderr(l->cntr, 1) : fi_cntr_add(l->cntr, 1);
	return NULL;
}

/* _i: 0 adds to the value, 1 to the errors. */
START_TEST(cntr_wait_woken_by_another_thread)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct later l = { .err = _i == 1 };
	pthread_t thread;
	struct cep c;
	uint64_t t0, waited;

	cep_open(&c, &cfg, TX_CQ | RX_CNTR, FI_WAIT_UNSPEC);
	l.cntr = c.rx;
	t0 = xt_now_ms();
	XT_ASSERT(pthread_create(&thread, NULL, add_later, &l) == 0, "pthread_create");
	XT_ASSERT_RC(fi_cntr_wait(c.rx, 1, XT_TIMEOUT_MS), l.err ? -FI_EAVAIL : 0);
	waited = xt_now_ms() - t0;
	pthread_join(thread, NULL);
	XT_ASSERT_RC(l.rc, 0);
	XT_ASSERT(waited >= 250 && waited < 300 + LATE_MS, "woken after %llu ms",
		  (unsigned long long)waited);
	cep_close(&c);
}
END_TEST

static Suite *cntr_suite(void)
{
	Suite *s = suite_create("cntr");
	TCase *values = tcase_create("values");
	TCase *bind = tcase_create("bind");
	TCase *count = tcase_create("count");
	TCase *wait = tcase_create("wait");
	int nwaits = sizeof(all_waits) / sizeof(all_waits[0]);

	tcase_set_timeout(values, 20);
	/* Generic: FI_WAIT_NONE alone (all_waits[0]); the others need wait objects. */
	tcase_add_loop_test(values, cntr_values_read_add_set, 0, xt_wanted(XT_EXTRA) ? nwaits : 1);
	tcase_add_test(values, cntr_open_with_null_attr_is_default);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(values, cntr_open_refuses_what_it_lacks);
	if (xt_wanted(XT_EXTRA))
		tcase_add_test(values, cntr_wait_on_wait_none_is_invalid);
	suite_add_tcase(s, values);

	tcase_set_timeout(bind, 20);
	tcase_add_test(bind, cntr_bind_flags);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(bind, cntr_one_counter_per_rma_event);
	tcase_add_test(bind, cntr_bind_after_enable_is_refused);
	tcase_add_test(bind, cntr_close_while_bound_is_busy);
	tcase_add_test(bind, cntr_bound_send_and_recv_counts_both);
	suite_add_tcase(s, bind);

	tcase_set_timeout(count, 30);
	tcase_add_test(count, cntr_counts_every_kind_of_send_across_processes);
	tcase_add_loop_test(count, cntr_truncated_receive_counts_an_error, 0,
			    xt_wanted(XT_EXTRA) ? nwaits : 1);
	suite_add_tcase(s, count);

	tcase_set_timeout(wait, 30);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, cntr_wait_reaches_a_threshold_set_by_a_remote_sender, 1,
				    nwaits);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, cntr_wait_times_out, 1, nwaits);
	if (xt_wanted(XT_EXTRA))
		tcase_add_loop_test(wait, cntr_wait_woken_by_another_thread, 0, 2);
	suite_add_tcase(s, wait);
	return s;
}

int main(void)
{
	return xt_run_suite(cntr_suite());
}
