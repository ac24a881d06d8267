/*
 * Opening the peer: fi_srx_context(FI_PEER) fills in the owner's struct
 * fi_ops_srx_peer in place when the owner left it for the peer (fi_peer(3)'s
 * example), and leaves alone one that holds the owner's own callbacks
 * (libfabric's owners); either style works with a peer_ops of NULL too.
 * Receives posted on the peer's endpoint or SRX return -FI_ENOSYS (they
 * belong to the owner); fi_av_open(FI_PEER) gives a usable AV (xshm queries
 * the owner's at open only); fi_domain2(FI_PEER) gives a usable domain;
 * fi_eq_open(FI_PEER) is accepted and generates no events.  xshm refuses to
 * bind an SRX fid that is neither its own nor an owner's fid_peer_srx.
 */
#include "peer_common.h"

#include <stdlib.h>
#include <string.h>

/* One message each way round: posted first, then message first. */
static void exchange(struct pt_rig *r, uint64_t seed)
{
	unsigned char *buf = pt_buf(1000);
	struct owner_comp c;

	for (int unexpected = 0; unexpected < 2; unexpected++) {
		struct xt_send_cmd sc = pt_cmd(true, 1000, seed + unexpected, PT_TAG);

		memset(buf, PT_GUARD_BYTE, 1000 + PT_GUARD);
		if (unexpected) {
			pt_send_ok(&r->o, &r->p[0], &sc);
			pt_wait_unexpected(&r->o, true, 1);
		}
		PT_ASSERT_RC(owner_post_trecv(&r->o, buf, 1000, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
		if (!unexpected)
			pt_send_ok(&r->o, &r->p[0], &sc);
		pt_comp(&r->o, &c);
		pt_check_recv(&c, buf, true, PT_TAG, 1000);
		pt_check_data(buf, 1000, seed + unexpected);
	}
	PT_ASSERT(r->o.ngets >= 2 && r->o.gets[r->o.ngets - 1].addr == r->p[0].addr,
		  "get_tag addr 0x%llx, sender inserted as 0x%llx",
		  r->o.ngets ? (unsigned long long)r->o.gets[r->o.ngets - 1].addr : 0ULL,
		  (unsigned long long)r->p[0].addr);
	pt_check_entries_balanced(&r->o);
	free(buf);
}

/*
 * SPEC: the table the owner left is filled in place.  UPSTREAM: the owner's
 * own callbacks are still there (owner_open checks both, and this again).
 */
START_TEST(srx_peer_ops_filled_in_place_or_left_alone)
{
	struct fi_ops_srx_peer *t;
	struct owner o;

	pt_open(&o, NULL);
	t = &o.srx_peer_ops;
	PT_ASSERT(o.peer_srx.peer_ops == t, "the peer replaced the owner's fi_ops_srx_peer pointer");
	PT_ASSERT(o.peer_srx.owner_ops == &o.srx_ops, "the peer replaced owner_ops");
	PT_ASSERT(t->start_msg && t->start_tag && t->discard_msg && t->discard_tag,
		  "start_msg %p start_tag %p discard_msg %p discard_tag %p",
		  (void *)t->start_msg, (void *)t->start_tag, (void *)t->discard_msg,
		  (void *)t->discard_tag);
	if (pt_style == OWNER_STYLE_UPSTREAM)
		PT_ASSERT(t->start_msg == t->discard_tag,
			  "the owner's own callbacks were replaced");
	PT_ASSERT(o.srx_ops.get_msg && o.srx_ops.free_entry, "owner ops cleared");
	PT_ASSERT(o.st.get_calls == 0 && o.st.writes == 0, "callbacks during open");
	pt_close(&o);
}
END_TEST

/*
 * fi_srx_context with a peer_ops of NULL: the owner reaches the peer's
 * start/discard through entry->srx->peer_ops, whichever fid it bound.
 */
START_TEST(srx_peer_ops_null_works)
{
	struct owner_cfg cfg = { .srx_peer_ops_null = true };
	unsigned char *buf = pt_buf(64);
	struct owner_comp c;
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	PT_ASSERT(r.o.peer_srx.peer_ops == NULL, "the peer set the owner's peer_ops");
	exchange(&r, 5);
	for (int i = 0; i < 2; i++) {
		struct xt_send_cmd sc = pt_cmd(i == 0, 64, 6 + i, PT_TAG);

		pt_send_ok(&r.o, &r.p[0], &sc);
		pt_wait_unexpected(&r.o, i == 0, 1);
	}
	PT_ASSERT_RC(owner_discard(&r.o, true, FI_ADDR_UNSPEC, PT_TAG, 0), 0);
	PT_ASSERT_RC(owner_post_recv(&r.o, buf, 64, FI_ADDR_UNSPEC, buf), 0);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, false, 0, 64);
	pt_check_data(buf, 64, 7);
	pt_none(&r.o, 50);
	pt_wait_none_held(&r.o);
	pt_check_entries_balanced(&r.o);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/* The SRX fid fi_srx_context returned is only looked at in the SPEC style. */
START_TEST(recv_posting_on_the_peer_returns_enosys)
{
	unsigned char *buf = pt_buf(64);
	struct iovec iov = { .iov_base = buf, .iov_len = 64 };
	void *desc = NULL;
	struct fi_msg msg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
			      .addr = FI_ADDR_UNSPEC, .context = buf };
	struct fi_msg_tagged tmsg = { .msg_iov = &iov, .desc = &desc, .iov_count = 1,
				      .addr = FI_ADDR_UNSPEC, .tag = PT_TAG, .context = buf };
	struct xt_send_cmd sc = pt_cmd(true, 64, 9, PT_TAG);
	struct owner_comp c;
	struct pt_rig r;
	struct fid_ep *ep;

	pt_rig_start(&r, NULL, 1, 0);
	ep = r.o.ep[0];
	PT_ASSERT_RC(fi_recv(ep, buf, 64, NULL, FI_ADDR_UNSPEC, buf), -FI_ENOSYS);
	PT_ASSERT_RC(fi_trecv(ep, buf, 64, NULL, FI_ADDR_UNSPEC, PT_TAG, 0, buf), -FI_ENOSYS);
	PT_ASSERT_RC(fi_recvv(ep, &iov, &desc, 1, FI_ADDR_UNSPEC, buf), -FI_ENOSYS);
	PT_ASSERT_RC(fi_trecvv(ep, &iov, &desc, 1, FI_ADDR_UNSPEC, PT_TAG, 0, buf), -FI_ENOSYS);
	PT_ASSERT_RC(fi_recvmsg(ep, &msg, 0), -FI_ENOSYS);
	PT_ASSERT_RC(fi_trecvmsg(ep, &tmsg, 0), -FI_ENOSYS);
	if (r.o.srx) {
		PT_ASSERT_RC(fi_recv(r.o.srx, buf, 64, NULL, FI_ADDR_UNSPEC, buf), -FI_ENOSYS);
		PT_ASSERT_RC(fi_trecv(r.o.srx, buf, 64, NULL, FI_ADDR_UNSPEC, PT_TAG, 0, buf),
			     -FI_ENOSYS);
	}
	/* Nothing was posted in the peer: the message goes to the owner, unexpected. */
	pt_send_ok(&r.o, &r.p[0], &sc);
	pt_wait_unexpected(&r.o, true, 1);
	pt_none(&r.o, 50);
	PT_ASSERT_RC(owner_post_trecv(&r.o, buf, 64, FI_ADDR_UNSPEC, PT_TAG, 0, buf), 0);
	pt_comp(&r.o, &c);
	pt_check_recv(&c, buf, true, PT_TAG, 64);
	pt_check_data(buf, 64, 9);
	pt_rig_stop(&r);
	free(buf);
}
END_TEST

/*
 * fi_peer(3): "Providers that do not support peer domains must fail the
 * fi_domain2() call with -FI_EINVAL", and so for EQs (and CQs); the page
 * says nothing of AVs, taken the same way.  An import the peer refuses so
 * is left out of cfg, and the rig starts with the rest.
 */
static void rig_start_imports(struct pt_rig *r, struct owner_cfg *cfg)
{
	static const struct {
		const char *call;
		size_t flag;
	} imports[] = {
		{ "fi_domain2(FI_PEER)", offsetof(struct owner_cfg, peer_domain) },
		{ "fi_eq_open(FI_PEER)", offsetof(struct owner_cfg, peer_eq) },
		{ "fi_av_open(FI_PEER)", offsetof(struct owner_cfg, peer_av) },
	};
	int ret;

	while ((ret = pt_rig_try(r, cfg, 1, 0)) == -FI_EINVAL) {
		size_t i;

		for (i = 0; i < 3 && strcmp(r->o.failed_call, imports[i].call); i++)
			;
		if (i == 3)
			break;
		*(bool *)((char *)cfg + imports[i].flag) = false;	/* unsupported */
	}
	PT_ASSERT(ret == 0, "owner_open (%s style) failed in %s: %d (%s)",
		  owner_style_name[pt_style], r->o.failed_call ? r->o.failed_call : "?", ret,
		  fi_strerror(-ret));
}

START_TEST(peer_av_usable_or_refused)
{
	struct owner_cfg cfg = { .peer_av = true };
	struct pt_rig r;

	rig_start_imports(&r, &cfg);
	exchange(&r, 1);
	pt_rig_stop(&r);
}
END_TEST

/* xshm sizes its own table by the owner's AV, at open only. */
START_TEST(peer_av_queried_at_open_only)
{
	struct owner_cfg cfg = { .peer_av = true };
	uint64_t queries;
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	queries = r.o.st.av_queries;
	PT_ASSERT(queries >= 1, "fi_av_open(FI_PEER) did not call the owner's query()");
	exchange(&r, 1);
	PT_ASSERT(r.o.st.av_queries == queries, "query() called %llu more times after open",
		  (unsigned long long)(r.o.st.av_queries - queries));
	pt_rig_stop(&r);
}
END_TEST

START_TEST(peer_domain2_usable_or_refused)
{
	struct owner_cfg cfg = { .peer_domain = true };
	struct pt_rig r;

	rig_start_imports(&r, &cfg);
	exchange(&r, 2);
	pt_rig_stop(&r);
}
END_TEST

START_TEST(peer_eq_without_events_or_refused)
{
	struct owner_cfg cfg = { .peer_eq = true };
	struct pt_rig r;

	rig_start_imports(&r, &cfg);
	PT_ASSERT(r.o.eq != NULL || !cfg.peer_eq, "no EQ");
	exchange(&r, 3);
	PT_ASSERT(r.o.st.eq_calls == 0, "the peer called the owner's EQ %llu times",
		  (unsigned long long)r.o.st.eq_calls);
	pt_rig_stop(&r);
}
END_TEST

/* Every import the peer offers (see rig_start_imports), together. */
START_TEST(every_peer_import_together)
{
	struct owner_cfg cfg = {
		.peer_av = true, .peer_domain = true, .peer_eq = true, .cntrs = true,
	};
	struct pt_rig r;

	rig_start_imports(&r, &cfg);
	exchange(&r, 4);
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 2, "rx counter %llu, expected 2",
		  (unsigned long long)r.o.rx_cntr.value);
	PT_ASSERT(r.o.st.eq_calls == 0, "the peer called the owner's EQ");
	pt_rig_stop(&r);
}
END_TEST

/* ---- binding an SRX fid that is not a fid_peer_srx ---- */

static int stub_get_msg(struct fid_peer_srx *srx, fi_addr_t addr, size_t size,
			struct fi_peer_rx_entry **entry)
{
	return -FI_ENOMEM;
}

static int stub_get_tag(struct fid_peer_srx *srx, fi_addr_t addr, size_t size, uint64_t tag,
			struct fi_peer_rx_entry **entry)
{
	return -FI_ENOMEM;
}

static int stub_queue(struct fi_peer_rx_entry *entry)
{
	return -FI_EINVAL;
}

static void stub_foreach(struct fid_peer_srx *srx,
			 fi_addr_t (*get_addr)(struct fi_peer_rx_entry *))
{
}

static void stub_free(struct fi_peer_rx_entry *entry)
{
}

enum bad_srx { BS_NO_OWNER_OPS, BS_NO_GET_TAG, BS_NO_FREE_ENTRY, BS_PEER_SRX_CLASS, NBAD_SRX };

/*
 * An xshm endpoint takes an FI_CLASS_SRX_CTX fid that is not its own import
 * for the owner's fid_peer_srx (libfabric's style), never for one of xshm's
 * objects: one whose owner callbacks are missing, or of another class, is
 * refused with -FI_EINVAL and leaves the endpoint unbound; a whole one is
 * then bound, once.
 */
START_TEST(srx_bind_refuses_what_is_no_peer_srx)
{
	struct fi_ops_srx_owner ops = {
		sizeof(ops), stub_get_msg, stub_get_tag, stub_queue, stub_queue, stub_foreach,
		stub_free,
	};
	struct fid_peer_srx good = {
		.ep_fid.fid.fclass = FI_CLASS_SRX_CTX, .owner_ops = &ops,
	};
	struct fi_ops_srx_owner bad_ops = ops;
	struct fid_peer_srx bad = good;
	struct xt_cfg cfg = xt_cfg_default();
	struct xt_ep x;

	switch ((enum bad_srx)_i) {
	case BS_NO_OWNER_OPS:
		bad.owner_ops = NULL;
		break;
	case BS_NO_GET_TAG:
		bad_ops.get_tag = NULL;
		bad.owner_ops = &bad_ops;
		break;
	case BS_NO_FREE_ENTRY:
		bad_ops.free_entry = NULL;
		bad.owner_ops = &bad_ops;
		break;
	default:
		bad.ep_fid.fid.fclass = FI_CLASS_PEER_SRX;
	}
	xt_open_upto(&x, &cfg, XT_BOUND);
	PT_ASSERT_RC(fi_ep_bind(x.ep, &bad.ep_fid.fid, 0), -FI_EINVAL);
	PT_ASSERT_RC(fi_ep_bind(x.ep, &good.ep_fid.fid, 0), 0);
	PT_ASSERT_RC(fi_ep_bind(x.ep, &good.ep_fid.fid, 0), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

static void add_cases(Suite *s)
{
	TCase *srx = pt_tcase(s, "srx", 30);
	TCase *imp = pt_tcase(s, "imports", 30);

	/*
	 * What the peer does to the owner's objects as it opens, and the
	 * imports xlink does not make (its AV is its own, inserted into the
	 * peer's with FI_AV_USER_ID; no peer domain or EQ): the reference
	 * owner's alone.
	 */
	pt_add_reference_owner_test(srx, srx_peer_ops_filled_in_place_or_left_alone,
				    "the owner's fi_ops_srx_peer table as the peer filled it in "
				    "or left it");
	pt_add_reference_owner_test(srx, srx_peer_ops_null_works,
				    "an owner configuration (a NULL peer_ops) and its entry "
				    "accounting");
	pt_add_reference_owner_test(srx, recv_posting_on_the_peer_returns_enosys,
				    "receives posted on the peer's own endpoint and SRX, which "
				    "xlink keeps to itself");
	pt_add_xshm_reference_owner_loop_test(srx, srx_bind_refuses_what_is_no_peer_srx, 0,
					      NBAD_SRX, "opens the peer alone, without an owner");

	pt_add_reference_owner_test(imp, peer_av_usable_or_refused,
				    "fi_av_open(FI_PEER): not an import xlink makes");
	pt_add_xshm_reference_owner_loop_test(imp, peer_av_queried_at_open_only, 0, 1,
					      "the peer's calls of the owner's AV query()");
	pt_add_reference_owner_test(imp, peer_domain2_usable_or_refused,
				    "fi_domain2(FI_PEER): not an import xlink makes");
	pt_add_reference_owner_test(imp, peer_eq_without_events_or_refused,
				    "fi_eq_open(FI_PEER): not an import xlink makes");
	pt_add_reference_owner_test(imp, every_peer_import_together,
				    "the AV, domain and EQ imports xlink does not make");
}

int main(void)
{
	return pt_run("peer_open", add_cases);
}
