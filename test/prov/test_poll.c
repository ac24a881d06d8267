/*
 * Poll sets (fi_poll(3)): opening and closing, what fi_poll_add takes and
 * refuses, which members fi_poll names (a CQ while it holds entries, a
 * counter once per change), across processes and within one.
 */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#include "xshm/fi_peer.h"

#define MSG_LEN		64
#define MAX_CTX		8

/* Contexts of the members: their addresses tell them apart. */
static char RX1, TX1, RX2, TX2, IDLE_CQ, IDLE_CNTR, SELF_CNTR;

static struct fid_poll *open_set(struct fid_domain *domain)
{
	struct fi_poll_attr attr = { .flags = 0 };
	struct fid_poll *set;

	XT_ASSERT_OK(fi_poll_open(domain, &attr, &set));
	return set;
}

static struct fid_cq *open_cq(struct fid_domain *domain, void *ctx)
{
	struct fi_cq_attr attr = { .format = FI_CQ_FORMAT_TAGGED };
	struct fid_cq *cq;

	XT_ASSERT_OK(fi_cq_open(domain, &attr, &cq, ctx));
	return cq;
}

static struct fid_cntr *open_cntr(struct fid_domain *domain, void *ctx)
{
	struct fi_cntr_attr attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *cntr;

	XT_ASSERT_OK(fi_cntr_open(domain, &attr, &cntr, ctx));
	return cntr;
}

static const char *ctx_name(const void *ctx)
{
	if (ctx == &RX1) return "RX1";
	if (ctx == &TX1) return "TX1";
	if (ctx == &RX2) return "RX2";
	if (ctx == &TX2) return "TX2";
	if (ctx == &IDLE_CQ) return "IDLE_CQ";
	if (ctx == &IDLE_CNTR) return "IDLE_CNTR";
	if (ctx == &SELF_CNTR) return "SELF_CNTR";
	return "unknown";
}

/* Asserts that got[0..n) holds exactly the nwant contexts of want, once each. */
#define expect_contexts(got, n, ...) \
	expect_contexts_at(__LINE__, (got), (n), (void *[]){ __VA_ARGS__ }, \
			   sizeof((void *[]){ __VA_ARGS__ }) / sizeof(void *))

static void expect_contexts_at(int line, void **got, int n, void **want, size_t nwant)
{
	char desc[256] = "";

	for (int i = 0; i < n && i < MAX_CTX; i++) {
		strncat(desc, " ", sizeof(desc) - strlen(desc) - 1);
		strncat(desc, ctx_name(got[i]), sizeof(desc) - strlen(desc) - 1);
	}
	XT_ASSERT(n == (int)nwant, "line %d: fi_poll gave %d contexts (%s), expected %zu",
		  line, n, desc, nwant);
	for (size_t w = 0; w < nwant; w++) {
		int seen = 0;

		for (int i = 0; i < n; i++)
			seen += got[i] == want[w];
		XT_ASSERT(seen == 1, "line %d: %s reported %d times (got%s)", line,
			  ctx_name(want[w]), seen, desc);
	}
}

/* fi_poll until it names something, XT_TIMEOUT_MS at most; returns its count. */
static int poll_until(struct fid_poll *set, void **ctx, int count)
{
	uint64_t end = xt_now_ms() + XT_TIMEOUT_MS;
	int n;

	while ((n = fi_poll(set, ctx, count)) == 0 && xt_now_ms() < end)
		;
	XT_ASSERT(n > 0, "fi_poll gave %d (%s) until the deadline", n, xt_strerror(n));
	return n;
}

/* ---- opening and closing ---- */

START_TEST(poll_open_checks_its_arguments)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fi_poll_attr attr = { .flags = 1 };
	struct fid_poll *set;
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	XT_ASSERT_RC(fi_poll_open(x.domain, &attr, &set), -FI_EINVAL);
	attr.flags = FI_PEER;
	XT_ASSERT_RC(fi_poll_open(x.domain, &attr, &set), -FI_EINVAL);
	attr.flags = 0;
	XT_ASSERT_RC(fi_poll_open(x.domain, &attr, NULL), -FI_EINVAL);
	XT_ASSERT_OK(fi_poll_open(x.domain, NULL, &set));
	XT_ASSERT(set->fid.fclass == FI_CLASS_POLL, "fclass %zu", set->fid.fclass);
	XT_ASSERT_OK(fi_close(&set->fid));
	XT_ASSERT_OK(fi_poll_open(x.domain, &attr, &set));
	XT_ASSERT_OK(fi_close(&set->fid));
	xt_close(&x);
}
END_TEST

START_TEST(poll_empty_set_reports_nothing)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_poll *set;
	void *ctx[MAX_CTX];
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	set = open_set(x.domain);
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);
	XT_ASSERT_RC(fi_poll(set, ctx, 0), 0);
	XT_ASSERT_RC(fi_poll(set, NULL, 0), 0);
	XT_ASSERT_RC(fi_poll(set, NULL, 1), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll(set, ctx, -1), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&set->fid));
	xt_close(&x);
}
END_TEST

/* The domain is busy while a set is open; the set while it has members. */
START_TEST(poll_close_ordering)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_poll *set;
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	void *ctx[MAX_CTX];
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	set = open_set(x.domain);
	cq = open_cq(x.domain, &IDLE_CQ);
	cntr = open_cntr(x.domain, &IDLE_CNTR);
	XT_ASSERT_RC(fi_close(&x.domain->fid), -FI_EBUSY);
	XT_ASSERT_OK(fi_poll_add(set, &cq->fid, 0));
	XT_ASSERT_OK(fi_poll_add(set, &cntr->fid, 0));
	XT_ASSERT_RC(fi_close(&set->fid), -FI_EBUSY);
	XT_ASSERT_RC(fi_close(&cq->fid), -FI_EBUSY);
	XT_ASSERT_RC(fi_close(&cntr->fid), -FI_EBUSY);
	/* A refused close leaves everything working. */
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);
	XT_ASSERT_OK(fi_cntr_add(cntr, 1));
	XT_ASSERT(fi_cntr_read(cntr) == 1, "counter unusable after a refused close");
	XT_ASSERT_OK(fi_poll_del(set, &cq->fid, 0));
	XT_ASSERT_OK(fi_close(&cq->fid));
	XT_ASSERT_RC(fi_close(&set->fid), -FI_EBUSY);
	XT_ASSERT_OK(fi_poll_del(set, &cntr->fid, 0));
	XT_ASSERT_OK(fi_close(&cntr->fid));
	XT_ASSERT_OK(fi_close(&set->fid));
	xt_close(&x);
}
END_TEST

/* ---- what fi_poll_add takes ---- */

static ssize_t no_write(struct fid_peer_cq *cq, void *context, uint64_t flags, size_t len,
			void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	return 0;
}

static ssize_t no_writeerr(struct fid_peer_cq *cq, const struct fi_cq_err_entry *e)
{
	return 0;
}

static struct fi_ops_cq_owner owner_cq_ops = {
	.size = sizeof(owner_cq_ops), .write = no_write, .writeerr = no_writeerr,
};

static void no_inc(struct fid_peer_cntr *cntr)
{
}

static struct fi_ops_cntr_owner owner_cntr_ops = {
	.size = sizeof(owner_cntr_ops), .inc = no_inc, .incerr = no_inc,
};

START_TEST(poll_add_refuses_what_is_not_a_cq_or_counter_of_the_domain)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_peer_cq owner_cq = {
		.fid.fclass = FI_CLASS_PEER_CQ, .owner_ops = &owner_cq_ops,
	};
	struct fi_peer_cq_context peer_ctx = { sizeof(peer_ctx), &owner_cq };
	struct fi_cq_attr peer_attr = { .format = FI_CQ_FORMAT_TAGGED, .flags = FI_PEER };
	struct fid_peer_cntr owner_cntr = {
		.fid.fclass = FI_CLASS_CNTR, .owner_ops = &owner_cntr_ops,
	};
	struct fi_peer_cntr_context peer_cntr_ctx = { sizeof(peer_cntr_ctx), &owner_cntr };
	struct fi_cntr_attr peer_cntr_attr = {
		.events = FI_CNTR_EVENTS_COMP, .flags = FI_PEER,
	};
	struct fid_cntr *imported_cntr;
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_ops foreign_ops = { .size = sizeof(foreign_ops) };
	struct fid foreign_cq = { .fclass = FI_CLASS_CQ, .ops = &foreign_ops };
	struct fid foreign_cntr = { .fclass = FI_CLASS_CNTR, .ops = &foreign_ops };
	struct fid_cq *imported, *other_cq;
	struct fid_cntr *other_cntr;
	struct fid_poll *set, *set2;
	struct fid_eq *eq;
	void *ctx[MAX_CTX];
	struct xt_ep x, y;

	xt_open_upto(&x, &cfg, XT_EP);
	xt_open_upto(&y, &cfg, XT_DOMAIN);
	set = open_set(x.domain);
	set2 = open_set(x.domain);
	XT_ASSERT_OK(fi_eq_open(x.fabric, &eq_attr, &eq, NULL));
	XT_ASSERT_OK(fi_cq_open(x.domain, &peer_attr, &imported, &peer_ctx));
	XT_ASSERT_OK(fi_cntr_open(x.domain, &peer_cntr_attr, &imported_cntr, &peer_cntr_ctx));
	other_cq = open_cq(y.domain, &IDLE_CQ);
	other_cntr = open_cntr(y.domain, &IDLE_CNTR);

	XT_ASSERT_RC(fi_poll_add(set, NULL, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &x.rx->fid->fid, FI_SEND), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &eq->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &x.av->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &x.ep->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &x.domain->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &x.fabric->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &set->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &set2->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &other_cq->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &other_cntr->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &foreign_cq, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &foreign_cntr, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &owner_cq.fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll_add(set, &owner_cntr.fid, 0), -FI_EINVAL);
	/* Imported objects' entries and values are the owner's: nothing to report here. */
	XT_ASSERT_RC(fi_poll_add(set, &imported->fid, 0), -FI_ENOSYS);
	XT_ASSERT_RC(fi_poll_add(set, &imported_cntr->fid, 0), -FI_ENOSYS);
	XT_ASSERT_RC(fi_poll_del(set, NULL, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);

	/* Nothing refused was taken: everything closes. */
	XT_ASSERT_OK(fi_close(&set->fid));
	XT_ASSERT_OK(fi_close(&set2->fid));
	XT_ASSERT_OK(fi_close(&imported->fid));
	XT_ASSERT_OK(fi_close(&imported_cntr->fid));
	XT_ASSERT_OK(fi_close(&other_cq->fid));
	XT_ASSERT_OK(fi_close(&other_cntr->fid));
	XT_ASSERT_OK(fi_close(&eq->fid));
	xt_close(&y);
	xt_close(&x);
}
END_TEST

/* As libfabric's own poll sets: a second add, or a del of a non-member, changes nothing. */
START_TEST(poll_add_twice_and_del_of_a_non_member)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_poll *set;
	struct fid_cntr *cntr;
	struct fid_cq *cq;
	void *ctx[MAX_CTX];
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_RESOURCES);
	set = open_set(x.domain);
	cq = open_cq(x.domain, &IDLE_CQ);
	cntr = open_cntr(x.domain, &IDLE_CNTR);
	XT_ASSERT_OK(fi_poll_del(set, &cq->fid, 0));
	XT_ASSERT_OK(fi_poll_del(set, &x.av->fid, 0));
	XT_ASSERT_OK(fi_poll_add(set, &cq->fid, 0));
	XT_ASSERT_OK(fi_poll_add(set, &cq->fid, 0));
	XT_ASSERT_OK(fi_poll_add(set, &cntr->fid, 0));
	XT_ASSERT_RC(fi_poll_del(set, &cq->fid, FI_RECV), -FI_EINVAL);
	XT_ASSERT_OK(fi_poll_del(set, &cq->fid, 0));
	XT_ASSERT_OK(fi_close(&cq->fid));	/* held once, released once */
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);
	XT_ASSERT_OK(fi_poll_del(set, &cntr->fid, 0));
	XT_ASSERT_OK(fi_poll_del(set, &cntr->fid, 0));
	XT_ASSERT_OK(fi_close(&cntr->fid));
	XT_ASSERT_OK(fi_close(&set->fid));
	xt_close(&x);
}
END_TEST

/* ---- counters within one process ---- */

/* fi_poll(3): a change since the last fi_poll, fi_cntr_set or fi_cntr_add. */
START_TEST(poll_counter_changes_made_by_the_application_are_not_events)
{
	struct xt_cfg cfg = xt_cfg_default();
	struct fid_poll *set;
	struct fid_cntr *cntr;
	void *ctx[MAX_CTX];
	struct xt_ep x;

	xt_open_upto(&x, &cfg, XT_DOMAIN);
	set = open_set(x.domain);
	cntr = open_cntr(x.domain, &IDLE_CNTR);
	XT_ASSERT_OK(fi_cntr_add(cntr, 3));
	XT_ASSERT_OK(fi_poll_add(set, &cntr->fid, 0));
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);
	XT_ASSERT_OK(fi_cntr_add(cntr, 2));
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);
	XT_ASSERT_OK(fi_cntr_set(cntr, 0));
	XT_ASSERT_OK(fi_cntr_adderr(cntr, 4));
	XT_ASSERT_OK(fi_cntr_seterr(cntr, 1));
	XT_ASSERT_RC(fi_poll(set, ctx, MAX_CTX), 0);
	XT_ASSERT(fi_cntr_read(cntr) == 0 && fi_cntr_readerr(cntr) == 1, "values moved");
	XT_ASSERT_OK(fi_poll_del(set, &cntr->fid, 0));
	XT_ASSERT_OK(fi_close(&cntr->fid));
	XT_ASSERT_OK(fi_close(&set->fid));
	xt_close(&x);
}
END_TEST

/*
 * An endpoint sends to itself, its counter bound for both directions, in
 * two sets: each set reports the change once.  _i picks the threading
 * model (the domain lock is taken, or not).
 */
START_TEST(poll_counter_change_is_reported_once_per_set)
{
	static const enum fi_threading models[] = { FI_THREAD_SAFE, FI_THREAD_DOMAIN };
	struct xt_cfg cfg = xt_cfg_default();
	char out[MSG_LEN], in[MSG_LEN];
	struct fid_poll *a, *b;
	struct fid_cntr *cntr;
	void *ctx[MAX_CTX];
	struct xt_ep x;
	fi_addr_t self;
	int n;

	cfg.threading = models[_i];
	xt_open_upto(&x, &cfg, XT_EP);
	cntr = open_cntr(x.domain, &SELF_CNTR);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &x.av->fid, 0));
	XT_ASSERT_OK(fi_ep_bind(x.ep, &cntr->fid, FI_SEND | FI_RECV));
	xt_enable(&x);
	self = xt_av_insert(&x, x.name);
	a = open_set(x.domain);
	b = open_set(x.domain);
	XT_ASSERT_OK(fi_poll_add(a, &cntr->fid, 0));
	XT_ASSERT_OK(fi_poll_add(b, &cntr->fid, 0));
	XT_ASSERT_RC(fi_poll(a, ctx, MAX_CTX), 0);

	xt_fill(out, sizeof(out), 5, 0);
	XT_ASSERT_OK(fi_recv(x.ep, in, sizeof(in), NULL, FI_ADDR_UNSPEC, NULL));
	XT_ASSERT_OK(fi_inject(x.ep, out, sizeof(out), self));
	n = poll_until(a, ctx, MAX_CTX);
	expect_contexts(ctx, n, &SELF_CNTR);
	/* a consumed its event; b has not looked yet, and the receive is done. */
	XT_ASSERT_RC(fi_poll(a, ctx, MAX_CTX), 0);
	XT_ASSERT(fi_cntr_read(cntr) == 2, "counted %llu", (unsigned long long)fi_cntr_read(cntr));
	XT_ASSERT_PATTERN(in, MSG_LEN, 5, 0);
	n = fi_poll(b, ctx, MAX_CTX);
	expect_contexts(ctx, n, &SELF_CNTR);
	XT_ASSERT_RC(fi_poll(b, ctx, MAX_CTX), 0);
	XT_ASSERT_RC(fi_poll(a, ctx, MAX_CTX), 0);

	XT_ASSERT_OK(fi_poll_del(a, &cntr->fid, 0));
	XT_ASSERT_OK(fi_poll_del(b, &cntr->fid, 0));
	XT_ASSERT_OK(fi_close(&a->fid));
	XT_ASSERT_OK(fi_close(&b->fid));
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_close(&cntr->fid));
	xt_close(&x);
}
END_TEST

/* ---- across processes ---- */

/*
 * The parent's domain holds two endpoints: E1 reports through CQs (RX1,
 * TX1), E2 through counters (RX2, TX2); an idle CQ and an idle counter,
 * bound to nothing, complete the set.  A child sends to E1 or E2 on
 * command, each send completed before it answers.
 */
enum { CMD_E1 = 1, CMD_E1_LONG, CMD_E2, CMD_E2_LONG, CMD_QUIT, CMD_DONE };

static void poll_sender(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char name1[XT_NAME_MAX], name2[XT_NAME_MAX];
	char buf[2 * MSG_LEN];
	fi_addr_t e1, e2;
	struct xt_comp c;
	struct xt_ep s;
	uint8_t cmd;

	xt_open(&s, &cfg);
	xt_recv_bytes(sock, name1, sizeof(name1));
	xt_recv_bytes(sock, name2, sizeof(name2));
	e1 = xt_av_insert(&s, name1);
	e2 = xt_av_insert(&s, name2);
	xt_fill(buf, sizeof(buf), 9, 0);
	while ((cmd = xt_wait(sock)) != CMD_QUIT) {
		fi_addr_t dst = cmd == CMD_E1 || cmd == CMD_E1_LONG ? e1 : e2;
		size_t len = cmd == CMD_E1_LONG || cmd == CMD_E2_LONG ? 2 * MSG_LEN : MSG_LEN;

		XT_POST(&s, fi_send(s.ep, buf, len, NULL, dst, NULL));
		xt_wait_tx(&s, &c);
		xt_signal(sock, CMD_DONE);
	}
	xt_close(&s);
}

struct prig {
	struct xt_cfg cfg;
	struct xt_ep x;			/* fabric, domain, AV, and E1 */
	struct fi_info *info2;
	struct fid_ep *ep2;
	struct fid_cq *rx1, *tx1, *idle_cq;
	struct fid_cntr *rx2, *tx2, *idle_cntr;
	struct fid_poll *set;
	struct xt_child child;
	char buf1[MSG_LEN], buf2[MSG_LEN];
};

static void prig_start(struct prig *g)
{
	char name2[XT_NAME_MAX];
	size_t len2 = sizeof(name2);

	memset(g, 0, sizeof(*g));
	g->cfg = xt_cfg_default();
	xt_spawn(&g->child, poll_sender, NULL);
	xt_open_upto(&g->x, &g->cfg, XT_EP);
	g->rx1 = open_cq(g->x.domain, &RX1);
	g->tx1 = open_cq(g->x.domain, &TX1);
	g->idle_cq = open_cq(g->x.domain, &IDLE_CQ);
	g->rx2 = open_cntr(g->x.domain, &RX2);
	g->tx2 = open_cntr(g->x.domain, &TX2);
	g->idle_cntr = open_cntr(g->x.domain, &IDLE_CNTR);
	XT_ASSERT_OK(fi_ep_bind(g->x.ep, &g->x.av->fid, 0));
	XT_ASSERT_OK(fi_ep_bind(g->x.ep, &g->rx1->fid, FI_RECV));
	XT_ASSERT_OK(fi_ep_bind(g->x.ep, &g->tx1->fid, FI_TRANSMIT));
	xt_enable(&g->x);

	/* E2 in the same domain, at an address of its own. */
	g->info2 = fi_dupinfo(g->x.info);
	XT_ASSERT(g->info2 != NULL, "fi_dupinfo");
	free(g->info2->src_addr);
	g->info2->src_addr = NULL;
	g->info2->src_addrlen = 0;
	XT_ASSERT_OK(fi_endpoint(g->x.domain, g->info2, &g->ep2, NULL));
	XT_ASSERT_OK(fi_ep_bind(g->ep2, &g->x.av->fid, 0));
	XT_ASSERT_OK(fi_ep_bind(g->ep2, &g->rx2->fid, FI_RECV));
	XT_ASSERT_OK(fi_ep_bind(g->ep2, &g->tx2->fid, FI_SEND));
	XT_ASSERT_OK(fi_enable(g->ep2));
	XT_ASSERT_OK(fi_getname(&g->ep2->fid, name2, &len2));

	g->set = open_set(g->x.domain);
	XT_ASSERT_OK(fi_poll_add(g->set, &g->rx1->fid, 0));
	XT_ASSERT_OK(fi_poll_add(g->set, &g->tx1->fid, 0));
	XT_ASSERT_OK(fi_poll_add(g->set, &g->rx2->fid, 0));
	XT_ASSERT_OK(fi_poll_add(g->set, &g->tx2->fid, 0));
	XT_ASSERT_OK(fi_poll_add(g->set, &g->idle_cq->fid, 0));
	XT_ASSERT_OK(fi_poll_add(g->set, &g->idle_cntr->fid, 0));

	xt_send_bytes(g->child.sock, g->x.name, g->x.namelen);
	xt_send_bytes(g->child.sock, name2, len2);
}

/* Has the child send, after posting the receive it goes to. */
static void prig_send(struct prig *g, uint8_t cmd, void *rx_ctx)
{
	if (cmd == CMD_E1 || cmd == CMD_E1_LONG)
		XT_ASSERT_OK(fi_recv(g->x.ep, g->buf1, sizeof(g->buf1), NULL,
				     FI_ADDR_UNSPEC, rx_ctx));
	else
		XT_ASSERT_OK(fi_recv(g->ep2, g->buf2, sizeof(g->buf2), NULL,
				     FI_ADDR_UNSPEC, rx_ctx));
	xt_signal(g->child.sock, cmd);
	XT_ASSERT(xt_wait(g->child.sock) == CMD_DONE, "the child did not send");
}

static void prig_stop(struct prig *g)
{
	struct fid *members[] = {
		&g->rx1->fid, &g->tx1->fid, &g->rx2->fid,
		&g->tx2->fid, &g->idle_cq->fid, &g->idle_cntr->fid,
	};

	xt_signal(g->child.sock, CMD_QUIT);
	xt_join(&g->child);
	/* Members stay held while in the set, even once their endpoints are gone. */
	XT_ASSERT_OK(fi_close(&g->ep2->fid));
	XT_ASSERT_OK(fi_close(&g->x.ep->fid));
	g->x.ep = NULL;
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++)
		XT_ASSERT_RC(fi_close(members[i]), -FI_EBUSY);
	XT_ASSERT_RC(fi_close(&g->set->fid), -FI_EBUSY);
	for (size_t i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
		XT_ASSERT_OK(fi_poll_del(g->set, members[i], 0));
		XT_ASSERT_OK(fi_close(members[i]));
	}
	XT_ASSERT_OK(fi_close(&g->set->fid));
	fi_freeinfo(g->info2);
	xt_close(&g->x);
}

START_TEST(poll_names_exactly_the_members_with_events)
{
	struct fi_cq_tagged_entry e;
	struct fi_cq_err_entry err;
	void *ctx[MAX_CTX];
	char rctx;
	struct prig g;
	int n;

	prig_start(&g);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);

	/* A CQ entry: named until it is read, and nothing else is. */
	prig_send(&g, CMD_E1, &rctx);
	n = poll_until(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1);
	n = fi_poll(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1);
	XT_ASSERT_RC(fi_cq_read(g.rx1, &e, 1), 1);
	XT_ASSERT(e.op_context == &rctx && e.len == MSG_LEN, "entry %p len %zu",
		  e.op_context, e.len);
	XT_ASSERT_PATTERN(g.buf1, MSG_LEN, 9, 0);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);

	/* A counter's change: named once. */
	prig_send(&g, CMD_E2, NULL);
	n = poll_until(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX2);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);
	XT_ASSERT(fi_cntr_read(g.rx2) == 1, "rx2 %llu", (unsigned long long)fi_cntr_read(g.rx2));
	XT_ASSERT_PATTERN(g.buf2, MSG_LEN, 9, 0);

	/* Errors: an error entry is an entry, an error count a change. */
	prig_send(&g, CMD_E1_LONG, &rctx);
	n = poll_until(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1);
	XT_ASSERT_RC(fi_cq_read(g.rx1, &e, 1), -FI_EAVAIL);
	n = fi_poll(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1);
	memset(&err, 0, sizeof(err));
	XT_ASSERT_RC(fi_cq_readerr(g.rx1, &err, 0), 1);
	XT_ASSERT(err.err == FI_ETRUNC, "err %d", err.err);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);
	prig_send(&g, CMD_E2_LONG, NULL);
	n = poll_until(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX2);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);
	XT_ASSERT(fi_cntr_readerr(g.rx2) == 1 && fi_cntr_read(g.rx2) == 1, "rx2 %llu/%llu",
		  (unsigned long long)fi_cntr_read(g.rx2),
		  (unsigned long long)fi_cntr_readerr(g.rx2));

	/* Both at once: one call names both, since it progresses all first. */
	prig_send(&g, CMD_E1, &rctx);
	prig_send(&g, CMD_E2, NULL);
	n = fi_poll(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1, &RX2);
	n = fi_poll(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1);
	XT_ASSERT_RC(fi_cq_read(g.rx1, &e, 1), 1);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);
	XT_ASSERT(fi_cntr_read(g.rx2) == 2, "rx2 %llu", (unsigned long long)fi_cntr_read(g.rx2));
	XT_ASSERT(fi_cntr_read(g.tx2) == 0 && fi_cntr_readerr(g.tx2) == 0, "E2 sent nothing");
	prig_stop(&g);
}
END_TEST

/*
 * With room for one context, members take turns, and a counter left out
 * keeps its change for a later call.
 */
START_TEST(poll_short_context_array_loses_nothing)
{
	struct fi_cq_tagged_entry e;
	void *ctx[MAX_CTX], *first;
	struct prig g;
	int n;

	prig_start(&g);
	prig_send(&g, CMD_E1, NULL);
	prig_send(&g, CMD_E2, NULL);
	XT_ASSERT_RC(fi_poll(g.set, ctx, 1), 1);
	first = ctx[0];
	XT_ASSERT(first == &RX1 || first == &RX2, "named %s", ctx_name(first));
	XT_ASSERT_RC(fi_poll(g.set, ctx, 1), 1);
	XT_ASSERT(ctx[0] == (first == &RX1 ? (void *)&RX2 : (void *)&RX1),
		  "named %s after %s", ctx_name(ctx[0]), ctx_name(first));
	/* RX2's change is consumed; RX1 holds its entry. */
	n = fi_poll(g.set, ctx, MAX_CTX);
	expect_contexts(ctx, n, &RX1);
	XT_ASSERT_RC(fi_cq_read(g.rx1, &e, 1), 1);
	XT_ASSERT_RC(fi_poll(g.set, ctx, MAX_CTX), 0);
	prig_stop(&g);
}
END_TEST

static Suite *poll_suite(void)
{
	Suite *s = suite_create("poll");
	TCase *set = tcase_create("set");
	TCase *cntr = tcase_create("cntr");
	TCase *procs = tcase_create("procs");

	tcase_set_timeout(set, 20);
	tcase_add_test(set, poll_open_checks_its_arguments);
	tcase_add_test(set, poll_empty_set_reports_nothing);
	tcase_add_test(set, poll_close_ordering);
	tcase_add_test(set, poll_add_refuses_what_is_not_a_cq_or_counter_of_the_domain);
	tcase_add_test(set, poll_add_twice_and_del_of_a_non_member);
	suite_add_tcase(s, set);

	tcase_set_timeout(cntr, 20);
	tcase_add_test(cntr, poll_counter_changes_made_by_the_application_are_not_events);
	tcase_add_loop_test(cntr, poll_counter_change_is_reported_once_per_set, 0, 2);
	suite_add_tcase(s, cntr);

	tcase_set_timeout(procs, 60);
	tcase_add_test(procs, poll_names_exactly_the_members_with_events);
	tcase_add_test(procs, poll_short_context_array_loses_nothing);
	suite_add_tcase(s, procs);
	return s;
}

int main(void)
{
	if (!xt_wanted(XT_EXTRA))	/* none of its cases is selected */
		return xt_run_suite(suite_create("poll"));
	return xt_run_suite(poll_suite());
}
