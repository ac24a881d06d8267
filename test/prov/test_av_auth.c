/*
 * Authorization keys: fi_av_insert_auth_key / fi_av_lookup_auth_key,
 * inserts and removal with FI_AUTH_KEY, receives restricted to a key, and
 * isolation between processes whose endpoints hold different keys.
 */
#include "av_helpers.h"

static struct xt_cfg cfg;

START_TEST(insert_and_lookup_keys)
{
	struct xt_ep x;
	struct fid_av *av;
	char addrs[2 * XT_XSHM_ADDRLEN], key[8], big[FI_XSHM_AUTH_KEY_MAX + 1];
	fi_addr_t h, out[2];
	size_t size;
	int errs[2];

	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	av = xt_open_av(&x, (struct fi_av_attr) { .type = FI_AV_TABLE });
	XT_ASSERT_RC(fi_av_insert_auth_key(av, "alpha", 0, &h, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert_auth_key(av, big, sizeof(big), &h, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert_auth_key(av, "alpha", 5, NULL, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert_auth_key(av, "alpha", 5, &h, FI_MORE), -FI_EINVAL);
	XT_ASSERT_OK(fi_av_insert_auth_key(av, "alpha", 5, &h, 0));
	size = 2;
	XT_ASSERT_OK(fi_av_lookup_auth_key(av, h, key, &size));
	XT_ASSERT(size == 5 && !memcmp(key, "al", 2), "truncated lookup");
	size = sizeof(key);
	XT_ASSERT_OK(fi_av_lookup_auth_key(av, h, key, &size));
	XT_ASSERT(size == 5 && !memcmp(key, "alpha", 5), "lookup");
	xt_fake_addr(&x, 0x4400000000ULL, addrs);
	xt_fake_addr(&x, 0x4400000001ULL, addrs + XT_XSHM_ADDRLEN);
	out[0] = h;
	out[1] = h + 1;		/* no such key */
	XT_ASSERT_RC(fi_av_insert(av, addrs, 2, out, FI_AUTH_KEY | FI_SYNC_ERR, errs), 1);
	XT_ASSERT(errs[0] == 0 && errs[1] == FI_EINVAL && out[0] == 0 &&
		  out[1] == FI_ADDR_NOTAVAIL, "insert with keys");
	size = sizeof(key);
	XT_ASSERT_OK(fi_av_lookup_auth_key(av, out[0], key, &size));
	XT_ASSERT(size == 5 && !memcmp(key, "alpha", 5), "key of the address");
	XT_ASSERT_RC(fi_av_insert(av, addrs + XT_XSHM_ADDRLEN, 1, out, 0, NULL), 1);
	XT_ASSERT_RC(fi_av_lookup_auth_key(av, out[0], key, &size), -FI_ENODATA);
	XT_ASSERT_RC(fi_av_lookup_auth_key(av, 77, key, &size), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert(av, addrs, 1, NULL, FI_AUTH_KEY, NULL), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&x);
}
END_TEST

START_TEST(key_removal_is_busy_while_an_endpoint_holds_it)
{
	struct xt_ep x;
	fi_addr_t alpha, beta;
	char key[8];
	size_t size = sizeof(key);

	cfg = xt_cfg_default();
	xt_open_custom(&x, &cfg, NULL, "alpha");
	XT_ASSERT_OK(fi_av_insert_auth_key(x.av, "alpha", 5, &alpha, 0));
	XT_ASSERT_OK(fi_av_insert_auth_key(x.av, "beta", 4, &beta, 0));
	XT_ASSERT_RC(fi_av_remove(x.av, &alpha, 1, FI_AUTH_KEY), -FI_EBUSY);
	XT_ASSERT_OK(fi_av_remove(x.av, &beta, 1, FI_AUTH_KEY));
	XT_ASSERT_RC(fi_av_lookup_auth_key(x.av, beta, key, &size), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_remove(x.av, &beta, 1, FI_AUTH_KEY), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&x.ep->fid));
	x.ep = NULL;
	XT_ASSERT_OK(fi_av_remove(x.av, &alpha, 1, FI_AUTH_KEY));
	xt_close(&x);
}
END_TEST

/* Child: an endpoint holding key arg (NULL: none) sends one message. */
static void keyed_sender(int sock, void *arg)
{
	struct xt_cfg ccfg = xt_cfg_default();
	char name[XT_NAME_MAX];
	struct xt_comp comp;
	struct xt_ep y;
	fi_addr_t peer;

	xt_open_custom(&y, &ccfg, NULL, arg);
	xt_send_name(sock, &y);
	xt_recv_name(sock, name);
	peer = xt_av_insert(&y, name);
	XT_POST(&y, fi_send(y.ep, "payload", 8, NULL, peer, NULL));
	xt_wait_tx(&y, &comp);
	xt_signal(sock, 1);
	xt_wait(sock);
	xt_close(&y);
}

/* Whether a message from a child holding child_key reaches a receiver. */
static bool delivered(const char *my_key, const char *child_key)
{
	struct xt_child c;
	struct xt_comp comp;
	struct xt_ep x;
	char name[XT_NAME_MAX], buf[16];
	bool got;

	cfg = xt_cfg_default();
	xt_spawn(&c, keyed_sender, (void *) child_key);
	xt_open_custom(&x, &cfg, NULL, my_key);
	xt_recv_name(c.sock, name);
	xt_av_insert(&x, name);
	xt_send_name(c.sock, &x);
	xt_post_recv(&x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, NULL);
	xt_wait_progress(c.sock, &x);
	got = xt_poll(x.rx, x.tx, 300, &comp) == 0;
	XT_ASSERT(!got || (!comp.is_err && !strcmp(buf, "payload")), "data");
	xt_signal(c.sock, 0);
	xt_join(&c);
	xt_close(&x);
	return got;
}

START_TEST(same_key_delivers_across_processes)
{
	XT_ASSERT(delivered("alpha", "alpha"), "same key: not delivered");
	XT_ASSERT(delivered(NULL, NULL), "no keys: not delivered");
}
END_TEST

START_TEST(different_keys_isolate_across_processes)
{
	XT_ASSERT(!delivered("alpha", "beta"), "other key delivered");
	XT_ASSERT(!delivered("alpha", NULL), "keyless sender delivered");
	XT_ASSERT(!delivered(NULL, "beta"), "keyed sender to keyless delivered");
}
END_TEST

START_TEST(receive_restricted_to_a_key)
{
	struct xt_child c;
	struct xt_comp comp;
	struct xt_ep x;
	char name[XT_NAME_MAX], buf[16];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct fi_msg msg = { .msg_iov = &iov, .iov_count = 1 };
	fi_addr_t alpha, beta;

	cfg = xt_cfg_source();
	xt_spawn(&c, keyed_sender, "alpha");
	xt_open_custom(&x, &cfg, NULL, "alpha");
	XT_ASSERT_OK(fi_av_insert_auth_key(x.av, "alpha", 5, &alpha, 0));
	XT_ASSERT_OK(fi_av_insert_auth_key(x.av, "beta", 4, &beta, 0));
	msg.addr = beta;
	XT_ASSERT_RC(fi_recvmsg(x.ep, &msg, FI_AUTH_KEY), -FI_EINVAL);
	msg.addr = alpha;
	XT_ASSERT_OK(fi_recvmsg(x.ep, &msg, FI_AUTH_KEY));
	xt_recv_name(c.sock, name);
	xt_av_insert(&x, name);
	xt_send_name(c.sock, &x);
	xt_wait_progress(c.sock, &x);
	xt_wait_rx(&x, &comp);
	XT_ASSERT(!strcmp(buf, "payload"), "data");
	xt_signal(c.sock, 0);
	xt_join(&c);
	xt_close(&x);
}
END_TEST

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("av_auth"));
	Suite *s = suite_create("av_auth");
	TCase *tc = tcase_create("auth");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, insert_and_lookup_keys);
	tcase_add_test(tc, key_removal_is_busy_while_an_endpoint_holds_it);
	tcase_add_test(tc, same_key_delivers_across_processes);
	tcase_add_test(tc, different_keys_isolate_across_processes);
	tcase_add_test(tc, receive_restricted_to_a_key);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
