/* Bad input: every call returns its error code and nothing crashes. */
#include "harness.h"

#include <stdlib.h>
#include <string.h>

#define TAG 0xbadULL

static struct xt_cfg cfg;

/* An enabled endpoint whose AV holds its own address at fi_addr 0. */
static fi_addr_t open_self(struct xt_ep *x)
{
	cfg = xt_cfg_default();
	xt_open(x, &cfg);
	return xt_av_insert(x, x->name);
}

START_TEST(bad_send_to_never_inserted_fi_addr_gives_einval)
{
	static const fi_addr_t never[] = { 1, 7, 1000000 };
	char buf[16] = "x";
	struct xt_ep x;

	open_self(&x);
	for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
		fi_addr_t a = never[i];

		XT_ASSERT_RC(fi_send(x.ep, buf, sizeof(buf), NULL, a, NULL), -FI_EINVAL);
		XT_ASSERT_RC(fi_tsend(x.ep, buf, sizeof(buf), NULL, a, TAG, NULL), -FI_EINVAL);
		XT_ASSERT_RC(fi_inject(x.ep, buf, sizeof(buf), a), -FI_EINVAL);
		XT_ASSERT_RC(fi_tinject(x.ep, buf, sizeof(buf), a, TAG), -FI_EINVAL);
		XT_ASSERT_RC(fi_senddata(x.ep, buf, sizeof(buf), NULL, 1, a, NULL), -FI_EINVAL);
	}
	xt_close(&x);
}
END_TEST

START_TEST(bad_inject_above_inject_size_gives_emsgsize)
{
	struct xt_ep x;
	fi_addr_t self = open_self(&x);
	size_t len = x.info->tx_attr->inject_size + 1;
	char *buf = xt_alloc(len);

	memset(buf, 1, len);
	XT_ASSERT_RC(fi_inject(x.ep, buf, len, self), -FI_EMSGSIZE);
	XT_ASSERT_RC(fi_tinject(x.ep, buf, len, self, TAG), -FI_EMSGSIZE);
	XT_ASSERT_RC(fi_injectdata(x.ep, buf, len, 1, self), -FI_EMSGSIZE);
	XT_ASSERT_RC(fi_tinjectdata(x.ep, buf, len, 1, self, TAG), -FI_EMSGSIZE);
	xt_close(&x);
	free(buf);
}
END_TEST

START_TEST(bad_null_buffer_with_length_gives_einval_on_send)
{
	struct xt_ep x;
	fi_addr_t self = open_self(&x);

	XT_ASSERT_RC(fi_send(x.ep, NULL, 10, NULL, self, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_tsend(x.ep, NULL, 10, NULL, self, TAG, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_senddata(x.ep, NULL, 10, NULL, 1, self, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_inject(x.ep, NULL, 10, self), -FI_EINVAL);
	XT_ASSERT_RC(fi_tinject(x.ep, NULL, 10, self, TAG), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

START_TEST(bad_null_buffer_with_length_gives_einval_on_recv)
{
	struct xt_ep x;

	open_self(&x);
	XT_ASSERT_RC(fi_recv(x.ep, NULL, 10, NULL, FI_ADDR_UNSPEC, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_trecv(x.ep, NULL, 10, NULL, FI_ADDR_UNSPEC, TAG, 0, NULL), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

START_TEST(bad_send_and_recv_before_enable_give_eopbadstate)
{
	struct xt_ep x, peer;
	char buf[16] = "x";
	fi_addr_t a;

	cfg = xt_cfg_default();
	xt_open(&peer, &cfg);
	xt_open_upto(&x, &cfg, XT_BOUND);
	a = xt_av_insert(&x, peer.name);
	XT_ASSERT_RC(fi_send(x.ep, buf, sizeof(buf), NULL, a, NULL), -FI_EOPBADSTATE);
	XT_ASSERT_RC(fi_tsend(x.ep, buf, sizeof(buf), NULL, a, TAG, NULL), -FI_EOPBADSTATE);
	XT_ASSERT_RC(fi_inject(x.ep, buf, sizeof(buf), a), -FI_EOPBADSTATE);
	XT_ASSERT_RC(fi_recv(x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, NULL), -FI_EOPBADSTATE);
	XT_ASSERT_RC(fi_trecv(x.ep, buf, sizeof(buf), NULL, FI_ADDR_UNSPEC, TAG, 0, NULL),
		     -FI_EOPBADSTATE);
	xt_close(&x);
	xt_close(&peer);
}
END_TEST

START_TEST(bad_iov_count_above_iov_limit_gives_einval)
{
	struct xt_ep x;
	fi_addr_t self = open_self(&x);
	size_t tx = xt_tx_iov_limit(&x) + 1, rx = xt_rx_iov_limit(&x) + 1;
	size_t n = tx > rx ? tx : rx;
	struct iovec *iov = xt_alloc(n * sizeof(*iov));
	char *bytes = xt_alloc(n * 8);
	struct fi_msg msg = { .msg_iov = iov, .iov_count = tx, .addr = self };
	struct fi_msg_tagged tmsg = { .msg_iov = iov, .iov_count = tx, .addr = self, .tag = TAG };

	for (size_t i = 0; i < n; i++)
		iov[i] = (struct iovec){ bytes + 8 * i, 8 };
	XT_ASSERT_RC(fi_sendv(x.ep, iov, NULL, tx, self, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_tsendv(x.ep, iov, NULL, tx, self, TAG, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_sendmsg(x.ep, &msg, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_tsendmsg(x.ep, &tmsg, 0), -FI_EINVAL);
	msg.iov_count = tmsg.iov_count = rx;
	msg.addr = tmsg.addr = FI_ADDR_UNSPEC;
	XT_ASSERT_RC(fi_recvv(x.ep, iov, NULL, rx, FI_ADDR_UNSPEC, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_trecvv(x.ep, iov, NULL, rx, FI_ADDR_UNSPEC, TAG, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_recvmsg(x.ep, &msg, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_trecvmsg(x.ep, &tmsg, 0), -FI_EINVAL);
	xt_close(&x);
	free(iov);
	free(bytes);
}
END_TEST

START_TEST(bad_cq_format_gives_enosys_or_einval)
{
	struct fi_cq_attr attr = { .format = (enum fi_cq_format)1000 };
	struct fid_cq *cq = NULL;
	struct xt_ep x;
	int rc;

	cfg = xt_cfg_default();
	xt_open_upto(&x, &cfg, XT_DOMAIN);
	rc = fi_cq_open(x.domain, &attr, &cq, NULL);
	if (rc == 0)
		fi_close(&cq->fid);
	XT_ASSERT(rc == -FI_ENOSYS || rc == -FI_EINVAL, "fi_cq_open returned %d (%s)", rc,
		  fi_strerror(-rc));
	xt_close(&x);
}
END_TEST

START_TEST(bad_av_bound_twice_gives_einval)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE };
	struct fid_av *other;
	struct xt_ep x;

	cfg = xt_cfg_default();
	xt_open_upto(&x, &cfg, XT_EP);
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &other, NULL));
	XT_ASSERT_OK(fi_ep_bind(x.ep, &x.av->fid, 0));
	XT_ASSERT_RC(fi_ep_bind(x.ep, &x.av->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_ep_bind(x.ep, &other->fid, 0), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&other->fid));
	xt_close(&x);
}
END_TEST

static int foreign_close(struct fid *fid)
{
	return 0;
}

static struct fi_ops foreign_ops = { .size = sizeof(foreign_ops), .close = foreign_close };

/*
 * An AV, CQ or counter of another provider (here a fid of ours, not
 * xshm's), or of another xshm domain, is refused: never taken for one of
 * xshm's objects.
 */
START_TEST(bad_bind_of_objects_not_of_this_domain_gives_einval)
{
	static const size_t classes[] = { FI_CLASS_AV, FI_CLASS_CQ, FI_CLASS_CNTR };
	static const uint64_t flags[] = { 0, FI_TRANSMIT | FI_RECV, FI_SEND | FI_RECV };
	struct xt_cfg ocfg = xt_cfg_default();
	struct fi_cntr_attr cntr_attr = { .events = FI_CNTR_EVENTS_COMP };
	struct fid_cntr *other_cntr;
	struct xt_ep x, other;

	cfg = xt_cfg_default();
	xt_open_upto(&x, &cfg, XT_EP);
	for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
		struct fid foreign = { .fclass = classes[i], .ops = &foreign_ops };

		XT_ASSERT_RC(fi_ep_bind(x.ep, &foreign, flags[i]), -FI_EINVAL);
	}
	xt_open_upto(&other, &ocfg, XT_RESOURCES);
	XT_ASSERT_OK(fi_cntr_open(other.domain, &cntr_attr, &other_cntr, NULL));
	XT_ASSERT_RC(fi_ep_bind(x.ep, &other.av->fid, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_ep_bind(x.ep, &other.tx->fid->fid, FI_TRANSMIT), -FI_EINVAL);
	XT_ASSERT_RC(fi_ep_bind(x.ep, &other_cntr->fid, FI_SEND), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&other_cntr->fid));
	xt_close(&other);
	xt_close(&x);
}
END_TEST

START_TEST(bad_enable_without_cq_gives_enocq)
{
	struct xt_ep x;

	cfg = xt_cfg_default();
	xt_open_upto(&x, &cfg, XT_EP);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &x.av->fid, 0));
	XT_ASSERT_RC(fi_enable(x.ep), -FI_ENOCQ);
	xt_close(&x);
}
END_TEST

START_TEST(bad_enable_without_av_gives_enoav)
{
	struct xt_ep x;

	cfg = xt_cfg_default();
	xt_open_upto(&x, &cfg, XT_EP);
	XT_ASSERT_OK(fi_ep_bind(x.ep, &x.tx->fid->fid, FI_TRANSMIT));
	XT_ASSERT_OK(fi_ep_bind(x.ep, &x.rx->fid->fid, FI_RECV));
	XT_ASSERT_RC(fi_enable(x.ep), -FI_ENOAV);
	xt_close(&x);
}
END_TEST

START_TEST(bad_av_insert_of_null_addr_gives_einval)
{
	fi_addr_t a[2];
	struct xt_ep x;

	cfg = xt_cfg_default();
	xt_open_upto(&x, &cfg, XT_RESOURCES);
	XT_ASSERT_RC(fi_av_insert(x.av, NULL, 2, a, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert(x.av, NULL, 1, NULL, 0, NULL), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

/*
 * Calls an RDM endpoint has no use for answer -FI_ENOSYS: libfabric's
 * inline wrappers call them unchecked (fabtests' fi_cq_data shuts its RDM
 * endpoint down).
 */
START_TEST(bad_connection_and_context_calls_on_an_rdm_ep_give_enosys)
{
	struct fid_ep *ctx = NULL;
	struct fid_mc *mc = NULL;
	struct xt_ep x;

	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	XT_ASSERT_RC(fi_shutdown(x.ep, 0), -FI_ENOSYS);
	XT_ASSERT_RC(fi_connect(x.ep, x.name, NULL, 0), -FI_ENOSYS);
	XT_ASSERT_RC(fi_accept(x.ep, NULL, 0), -FI_ENOSYS);
	XT_ASSERT_RC(fi_join(x.ep, x.name, 0, &mc, NULL), -FI_ENOSYS);
	XT_ASSERT_RC(fi_tx_context(x.ep, 0, NULL, &ctx, NULL), -FI_ENOSYS);
	XT_ASSERT_RC(fi_rx_context(x.ep, 0, NULL, &ctx, NULL), -FI_ENOSYS);
	/* fi_rx_size_left and fi_tx_size_left are deprecated: their ops. */
	XT_ASSERT_RC(x.ep->ops->rx_size_left(x.ep), -FI_ENOSYS);
	XT_ASSERT_RC(x.ep->ops->tx_size_left(x.ep), -FI_ENOSYS);
	xt_close(&x);
}
END_TEST

static Suite *bad_input_suite(void)
{
	Suite *s = suite_create("bad_input");
	TCase *data = tcase_create("data");
	TCase *setup = tcase_create("setup");

	tcase_set_timeout(data, 20);
	tcase_add_test(data, bad_send_to_never_inserted_fi_addr_gives_einval);
	tcase_add_test(data, bad_inject_above_inject_size_gives_emsgsize);
	tcase_add_test(data, bad_null_buffer_with_length_gives_einval_on_send);
	tcase_add_test(data, bad_null_buffer_with_length_gives_einval_on_recv);
	tcase_add_test(data, bad_send_and_recv_before_enable_give_eopbadstate);
	tcase_add_test(data, bad_iov_count_above_iov_limit_gives_einval);
	suite_add_tcase(s, data);

	tcase_set_timeout(setup, 20);
	tcase_add_test(setup, bad_cq_format_gives_enosys_or_einval);
	tcase_add_test(setup, bad_av_bound_twice_gives_einval);
	tcase_add_test(setup, bad_bind_of_objects_not_of_this_domain_gives_einval);
	tcase_add_test(setup, bad_enable_without_cq_gives_enocq);
	tcase_add_test(setup, bad_enable_without_av_gives_enoav);
	tcase_add_test(setup, bad_av_insert_of_null_addr_gives_einval);
	tcase_add_test(setup, bad_connection_and_context_calls_on_an_rdm_ep_give_enosys);
	suite_add_tcase(s, setup);
	return s;
}

int main(void)
{
	return xt_run_suite(bad_input_suite());
}
