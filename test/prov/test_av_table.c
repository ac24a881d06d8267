/*
 * FI_AV_TABLE semantics of fi_av(3): lowest unused index across calls,
 * remove and re-insert, FI_SYNC_ERR / FI_MORE, insertsvc / insertsym,
 * FI_EVENT, fi_av_bind, fi_close with bound endpoints, bad input.
 */
#include "av_helpers.h"

#include <rdma/fi_eq.h>

#define BASE 0x7700000000ULL	/* fake endpoint ids: nobody runs there */

static struct xt_cfg cfg;
static struct xt_ep x;

static void setup(void)
{
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
}

static void teardown(void)
{
	xt_close(&x);
}

static struct fid_av *table(void)
{
	return xt_open_av(&x, (struct fi_av_attr) { .type = FI_AV_TABLE });
}

static void insert_ok(struct fid_av *av, uint64_t id, fi_addr_t want)
{
	char addr[XT_XSHM_ADDRLEN];
	fi_addr_t got = 99;

	xt_fake_addr(&x, id, addr);
	XT_ASSERT_RC(fi_av_insert(av, addr, 1, &got, 0, NULL), 1);
	XT_ASSERT(got == want, "index %llu, expected %llu",
		  (unsigned long long) got, (unsigned long long) want);
}

static void lookup_is(struct fid_av *av, fi_addr_t fi_addr, uint64_t id)
{
	char want[XT_XSHM_ADDRLEN], got[XT_XSHM_ADDRLEN];
	size_t len = sizeof(got);

	xt_fake_addr(&x, id, want);
	XT_ASSERT_OK(fi_av_lookup(av, fi_addr, got, &len));
	XT_ASSERT(len == XT_XSHM_ADDRLEN && !strcmp(got, want), "%s != %s", got, want);
}

START_TEST(indices_are_lowest_unused_across_calls)
{
	struct fid_av *av = table();
	char *five = xt_fake_addrs(&x, BASE, 5);
	fi_addr_t out[5], gone[2] = { 1, 3 };

	XT_ASSERT_RC(fi_av_insert(av, five, 2, out, 0, NULL), 2);
	XT_ASSERT_RC(fi_av_insert(av, five + 2 * XT_XSHM_ADDRLEN, 3, out + 2, 0, NULL), 3);
	for (int i = 0; i < 5; i++)
		XT_ASSERT(out[i] == (fi_addr_t) i, "out[%d] = %llu", i, (unsigned long long) out[i]);
	XT_ASSERT_OK(fi_av_remove(av, gone, 2, 0));
	insert_ok(av, BASE + 10, 1);
	insert_ok(av, BASE + 11, 3);
	insert_ok(av, BASE + 12, 5);
	lookup_is(av, 4, BASE + 4);
	free(five);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(remove_then_reinsert_same_address)
{
	struct fid_av *av = table();
	fi_addr_t a = 0;

	insert_ok(av, BASE, 0);
	insert_ok(av, BASE + 1, 1);
	XT_ASSERT_OK(fi_av_remove(av, &a, 1, 0));
	insert_ok(av, BASE, 0);
	lookup_is(av, 0, BASE);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(remove_of_unused_index_fails_and_removes_nothing)
{
	struct fid_av *av = table();
	fi_addr_t bad[2] = { 0, 7 }, zero = 0;
	char buf[XT_XSHM_ADDRLEN];
	size_t len = sizeof(buf);

	insert_ok(av, BASE, 0);
	insert_ok(av, BASE + 1, 1);
	XT_ASSERT_RC(fi_av_remove(av, bad, 2, 0), -FI_EINVAL);
	lookup_is(av, 0, BASE);
	XT_ASSERT_OK(fi_av_remove(av, &zero, 1, 0));
	XT_ASSERT_RC(fi_av_remove(av, &zero, 1, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_lookup(av, 0, buf, &len), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_remove(av, NULL, 1, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_remove(av, &zero, 1, FI_MORE), -FI_EINVAL);
	lookup_is(av, 1, BASE + 1);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(sync_err_reports_each_address)
{
	struct fid_av *av = table();
	char batch[4 * XT_XSHM_ADDRLEN];
	fi_addr_t out[4];
	int errs[4] = { -1, -1, -1, -1 };

	xt_fake_addr(&x, BASE, batch);
	strcpy(batch + XT_XSHM_ADDRLEN, "fi_xshm://nothex/0000000000000001");
	xt_fake_addr(&x, BASE, batch + 2 * XT_XSHM_ADDRLEN);
	snprintf(batch + 3 * XT_XSHM_ADDRLEN, XT_XSHM_ADDRLEN,
		 "fi_xshm://%016llx/%016llx", 0x1234ULL, BASE + 3);
	/* Packed strings: the malformed one is shorter, keep them in slots. */
	{
		char packed[4 * XT_XSHM_ADDRLEN];
		size_t off = 0;

		for (int i = 0; i < 4; i++) {
			strcpy(packed + off, batch + i * XT_XSHM_ADDRLEN);
			off += strlen(packed + off) + 1;
		}
		XT_ASSERT_RC(fi_av_insert(av, packed, 4, out, FI_SYNC_ERR, errs), 1);
	}
	XT_ASSERT(errs[0] == 0 && errs[1] == FI_EINVAL && errs[2] == FI_EALREADY &&
		  errs[3] == FI_EHOSTUNREACH, "errors %d %d %d %d",
		  errs[0], errs[1], errs[2], errs[3]);
	XT_ASSERT(out[0] == 0 && out[1] == FI_ADDR_NOTAVAIL &&
		  out[2] == FI_ADDR_NOTAVAIL && out[3] == FI_ADDR_NOTAVAIL, "fi_addr");
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(sync_err_with_null_fi_addr_and_null_context)
{
	struct fid_av *av = table();
	char *two = xt_fake_addrs(&x, BASE, 2);
	int errs[2] = { -1, -1 };

	XT_ASSERT_RC(fi_av_insert(av, two, 2, NULL, FI_SYNC_ERR, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert(av, two, 2, NULL, FI_SYNC_ERR, errs), 2);
	XT_ASSERT(errs[0] == 0 && errs[1] == 0, "errors %d %d", errs[0], errs[1]);
	lookup_is(av, 0, BASE);
	lookup_is(av, 1, BASE + 1);
	free(two);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(count_zero_and_bad_arguments)
{
	struct fid_av *av = table();
	char addr[XT_XSHM_ADDRLEN];
	fi_addr_t out;

	xt_fake_addr(&x, BASE, addr);
	XT_ASSERT_RC(fi_av_insert(av, addr, 0, &out, 0, NULL), 0);
	XT_ASSERT_RC(fi_av_insert(av, NULL, 0, NULL, 0, NULL), 0);
	XT_ASSERT_RC(fi_av_insert(av, NULL, 1, &out, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert(av, addr, 1, &out, FI_READ, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_remove(av, NULL, 0, 0), 0);
	insert_ok(av, BASE, 0);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(fi_more_batches_keep_sequential_indices)
{
	struct fid_av *av = table();
	char *three = xt_fake_addrs(&x, BASE, 3);
	fi_addr_t out[3];

	XT_ASSERT_RC(fi_av_insert(av, three, 1, out, FI_MORE, NULL), 1);
	XT_ASSERT_RC(fi_av_insert(av, three + XT_XSHM_ADDRLEN, 1, out + 1, FI_MORE, NULL), 1);
	XT_ASSERT_RC(fi_av_insert(av, three + 2 * XT_XSHM_ADDRLEN, 1, out + 2, 0, NULL), 1);
	XT_ASSERT(out[0] == 0 && out[1] == 1 && out[2] == 2, "indices");
	free(three);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(insertsvc_maps_service_to_its_endpoint)
{
	struct xt_cfg svc_cfg = xt_cfg_default();
	struct xt_ep y;
	struct fid_av *av = table();
	char got[XT_XSHM_ADDRLEN];
	size_t len = sizeof(got);
	fi_addr_t out = 0;
	int err = -1;

	svc_cfg.service = "4711";
	svc_cfg.gi_flags = FI_SOURCE;
	xt_open(&y, &svc_cfg);
	XT_ASSERT_RC(fi_av_insertsvc(av, "localhost", "4711", &out, 0, NULL), 1);
	XT_ASSERT_OK(fi_av_lookup(av, out, got, &len));
	XT_ASSERT(!strcmp(got, y.name), "%s != %s", got, y.name);
	XT_ASSERT_RC(fi_av_insertsvc(av, x.name, NULL, &out, 0, NULL), 1);
	XT_ASSERT(out == 1, "index %llu", (unsigned long long) out);
	XT_ASSERT_RC(fi_av_insertsvc(av, x.name, "1", &out, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insertsvc(av, "localhost", NULL, &out, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insertsvc(av, "elsewhere.invalid", "5", &out,
				     FI_SYNC_ERR, &err), 0);
	XT_ASSERT(err == FI_EHOSTUNREACH && out == FI_ADDR_NOTAVAIL, "err %d", err);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&y);
}
END_TEST

static void svc_addr(struct fid_av *scratch, const char *service, char *out)
{
	fi_addr_t a;
	size_t len = XT_XSHM_ADDRLEN;

	XT_ASSERT_RC(fi_av_insertsvc(scratch, NULL, service, &a, 0, NULL), 1);
	XT_ASSERT_OK(fi_av_lookup(scratch, a, out, &len));
}

START_TEST(insertsym_inserts_the_range_in_order)
{
	struct fid_av *av = table(), *scratch = table();
	fi_addr_t out[6];
	int errs[6];

	XT_ASSERT_RC(fi_av_insertsym(av, "127.0.0.1", 1, "5000", 3, out, 0, NULL), 3);
	for (int i = 0; i < 3; i++) {
		char service[8], want[XT_XSHM_ADDRLEN], got[XT_XSHM_ADDRLEN];
		size_t len = sizeof(got);

		snprintf(service, sizeof(service), "%d", 5000 + i);
		svc_addr(scratch, service, want);
		XT_ASSERT(out[i] == (fi_addr_t) i, "index");
		XT_ASSERT_OK(fi_av_lookup(av, out[i], got, &len));
		XT_ASSERT(!strcmp(got, want), "address %d: %s != %s", i, got, want);
	}
	/* host10, host11: other nodes, each address fails on its own. */
	XT_ASSERT_RC(fi_av_insertsym(av, "host10", 2, "7", 3, out, FI_SYNC_ERR, errs), 0);
	for (int i = 0; i < 6; i++)
		XT_ASSERT(errs[i] == FI_EHOSTUNREACH && out[i] == FI_ADDR_NOTAVAIL,
			  "address %d: err %d", i, errs[i]);
	XT_ASSERT_RC(fi_av_insertsym(av, "localhost", 2, "7", 1, out, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insertsym(av, "localhost", 1, "svc", 2, out, 0, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insertsym(av, "localhost", 0, "7", 2, out, 0, NULL), 0);
	XT_ASSERT_RC(fi_av_insertsym(av, NULL, 1, "7", 1, out, 0, NULL), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&av->fid));
	XT_ASSERT_OK(fi_close(&scratch->fid));
}
END_TEST

START_TEST(close_with_bound_endpoint_is_busy)
{
	XT_ASSERT_RC(fi_close(&x.av->fid), -FI_EBUSY);
	/* Still usable afterwards. */
	insert_ok(x.av, BASE, 0);
}
END_TEST

START_TEST(open_attributes_checked)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .rx_ctx_bits = 4 };
	struct fid_av *av;

	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EINVAL);
	attr = (struct fi_av_attr) { .type = FI_AV_TABLE, .flags = FI_READ };
	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EINVAL);
	attr = (struct fi_av_attr) { .type = FI_AV_MAP, .flags = FI_SYMMETRIC };
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av, NULL));
	XT_ASSERT(attr.type == FI_AV_MAP, "type %d", attr.type);
	insert_ok(av, BASE, 0);
	insert_ok(av, BASE + 1, 1);
	XT_ASSERT_OK(fi_close(&av->fid));
}
END_TEST

START_TEST(event_av_reports_through_its_eq)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_EVENT };
	struct fi_eq_attr eq_attr = { .wait_obj = FI_WAIT_NONE };
	struct fi_eq_err_entry err = { 0 };
	struct fi_eq_entry done = { 0 };
	char packed[2 * XT_XSHM_ADDRLEN];
	struct fid_eq *eq;
	struct fid_av *av;
	fi_addr_t out[2];
	uint32_t event = 0;
	int ctx;

	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av, NULL));
	xt_fake_addr(&x, BASE, packed);
	strcpy(packed + XT_XSHM_ADDRLEN, "bad");
	XT_ASSERT_RC(fi_av_insert(av, packed, 1, out, 0, &ctx), -FI_ENOEQ);
	XT_ASSERT_OK(fi_eq_open(x.fabric, &eq_attr, &eq, NULL));
	XT_ASSERT_RC(fi_av_bind(av, &eq->fid, 1), -FI_EINVAL);
	XT_ASSERT_OK(fi_av_bind(av, &eq->fid, 0));
	XT_ASSERT_RC(fi_av_insert(av, packed, 2, out, 0, &ctx), 0);
	XT_ASSERT_RC(fi_av_insert(av, packed, 1, out, FI_SYNC_ERR, &ctx), -FI_EINVAL);
	XT_ASSERT_RC(fi_eq_read(eq, &event, &done, sizeof(done), 0), -FI_EAVAIL);
	XT_ASSERT_RC(fi_eq_readerr(eq, &err, 0), sizeof(err));
	XT_ASSERT(err.context == &ctx && err.data == 1 && err.err == FI_EINVAL,
		  "error entry: data %llu err %d", (unsigned long long) err.data, err.err);
	XT_ASSERT_RC(fi_eq_read(eq, &event, &done, sizeof(done), 0), sizeof(done));
	XT_ASSERT(event == FI_AV_COMPLETE && done.context == &ctx && done.data == 1,
		  "event %u data %llu", event, (unsigned long long) done.data);
	XT_ASSERT(out[0] == 0 && out[1] == FI_ADDR_NOTAVAIL, "fi_addr");
	XT_ASSERT_OK(fi_close(&av->fid));
	XT_ASSERT_OK(fi_close(&eq->fid));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("av_table");
	TCase *tc = tcase_create("table");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, indices_are_lowest_unused_across_calls);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, remove_then_reinsert_same_address);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, remove_of_unused_index_fails_and_removes_nothing);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, sync_err_reports_each_address);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, sync_err_with_null_fi_addr_and_null_context);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, count_zero_and_bad_arguments);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, fi_more_batches_keep_sequential_indices);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, insertsvc_maps_service_to_its_endpoint);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, insertsym_inserts_the_range_in_order);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, close_with_bound_endpoint_is_busy);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, open_attributes_checked);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(tc, event_av_reports_through_its_eq);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
