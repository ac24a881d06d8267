/*
 * Opening xshm as a peer: fi_srx_context(FI_PEER) fills in the owner's
 * struct fi_ops_srx_peer in place; receives posted on the xshm endpoint or
 * SRX return -FI_ENOSYS (they belong to the owner); fi_av_open(FI_PEER)
 * queries the owner's AV at open only; fi_domain2(FI_PEER) gives a usable
 * domain; fi_eq_open(FI_PEER) is accepted and generates no events.
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

START_TEST(srx_peer_ops_filled_in_place)
{
	struct owner o;

	pt_open(&o, NULL);
	PT_ASSERT(o.peer_srx.peer_ops == &o.srx_peer_ops,
		  "xshm replaced the owner's fi_ops_srx_peer pointer");
	PT_ASSERT(o.peer_srx.owner_ops == &o.srx_ops, "xshm replaced owner_ops");
	PT_ASSERT(o.srx_peer_ops.start_msg && o.srx_peer_ops.start_tag &&
		  o.srx_peer_ops.discard_msg && o.srx_peer_ops.discard_tag,
		  "start_msg %p start_tag %p discard_msg %p discard_tag %p",
		  (void *)o.srx_peer_ops.start_msg, (void *)o.srx_peer_ops.start_tag,
		  (void *)o.srx_peer_ops.discard_msg, (void *)o.srx_peer_ops.discard_tag);
	PT_ASSERT(o.srx_ops.get_msg && o.srx_ops.free_entry, "owner ops cleared");
	PT_ASSERT(o.st.get_calls == 0 && o.st.writes == 0, "callbacks during open");
	pt_close(&o);
}
END_TEST

START_TEST(recv_posting_on_xshm_returns_enosys)
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
	PT_ASSERT_RC(fi_recv(r.o.srx, buf, 64, NULL, FI_ADDR_UNSPEC, buf), -FI_ENOSYS);
	PT_ASSERT_RC(fi_trecv(r.o.srx, buf, 64, NULL, FI_ADDR_UNSPEC, PT_TAG, 0, buf),
		     -FI_ENOSYS);
	/* Nothing was posted in xshm: the message goes to the owner, unexpected. */
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

START_TEST(peer_av_queried_at_open_and_usable)
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

START_TEST(peer_domain2_gives_usable_domain)
{
	struct owner_cfg cfg = { .peer_domain = true };
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	exchange(&r, 2);
	pt_rig_stop(&r);
}
END_TEST

START_TEST(peer_eq_accepted_without_events)
{
	struct owner_cfg cfg = { .peer_eq = true };
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	PT_ASSERT(r.o.eq != NULL, "no EQ");
	exchange(&r, 3);
	PT_ASSERT(r.o.st.eq_calls == 0, "xshm called the owner's EQ %llu times",
		  (unsigned long long)r.o.st.eq_calls);
	pt_rig_stop(&r);
}
END_TEST

START_TEST(every_peer_import_together)
{
	struct owner_cfg cfg = {
		.peer_av = true, .peer_domain = true, .peer_eq = true, .cntrs = true,
	};
	struct pt_rig r;

	pt_rig_start(&r, &cfg, 1, 0);
	exchange(&r, 4);
	PT_ASSERT(owner_cntr_value(&r.o, &r.o.rx_cntr) == 2, "rx counter %llu, expected 2",
		  (unsigned long long)r.o.rx_cntr.value);
	PT_ASSERT(r.o.st.eq_calls == 0, "xshm called the owner's EQ");
	pt_rig_stop(&r);
}
END_TEST

static Suite *open_suite(void)
{
	Suite *s = suite_create("peer_open");
	TCase *srx = tcase_create("srx");
	TCase *imp = tcase_create("imports");

	tcase_add_test(srx, srx_peer_ops_filled_in_place);
	tcase_add_test(srx, recv_posting_on_xshm_returns_enosys);
	tcase_set_timeout(srx, 30);
	suite_add_tcase(s, srx);

	tcase_add_test(imp, peer_av_queried_at_open_and_usable);
	tcase_add_test(imp, peer_domain2_gives_usable_domain);
	tcase_add_test(imp, peer_eq_accepted_without_events);
	tcase_add_test(imp, every_peer_import_together);
	tcase_set_timeout(imp, 30);
	suite_add_tcase(s, imp);
	return s;
}

int main(void)
{
	return pt_run(open_suite());
}
