/*
 * Sources reported in completions: FI_AV_USER_ID (open flag with
 * fi_av_set_user_id, and per insert), directed receives by index, and
 * senders not yet in the AV (FI_ADDR_NOTAVAIL, resolved by an insert).
 * A forked child sends; the parent receives with fi_cq_readfrom.
 */
#include "av_helpers.h"

static struct xt_cfg cfg;

static const struct xt_send_cmd small = { .op = XT_SEND, .len = 16, .seed = 3 };

/* The child sends one message; the parent's receive reports src. */
static fi_addr_t recv_one(struct xt_ep *x, struct xt_child *c, fi_addr_t from)
{
	char buf[64];
	struct xt_comp comp;
	int ctx;

	xt_post_recv(x, false, buf, sizeof(buf), from, 0, 0, &ctx);
	xt_remote_send(x, c, &small);
	xt_remote_done(x, c);
	xt_wait_rx(x, &comp);
	XT_ASSERT(comp.e.op_context == &ctx && comp.e.len == small.len, "completion");
	return comp.src;
}

/* As xt_connect_sender, keeping the child's name. */
static void start(struct xt_ep *x, struct xt_child *c, uint64_t av_flags,
		  bool insert, fi_addr_t *fa, char *name)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = av_flags };

	cfg = xt_cfg_source();
	xt_spawn(c, xt_sender_child, NULL);
	xt_open_custom(x, &cfg, &attr, NULL);
	xt_recv_name(c->sock, name);
	*fa = insert ? xt_av_insert(x, name) : FI_ADDR_NOTAVAIL;
	xt_send_name(c->sock, x);
}

static void stop(struct xt_ep *x, struct xt_child *c)
{
	xt_stop_sender(x, c);
	xt_join(c);
	xt_close(x);
}

START_TEST(open_flag_reports_notavail_until_set)
{
	char name[XT_NAME_MAX];
	struct xt_child c;
	struct xt_ep x;
	fi_addr_t fa, src;

	start(&x, &c, FI_AV_USER_ID, true, &fa, name);
	src = recv_one(&x, &c, FI_ADDR_UNSPEC);
	XT_ASSERT(src == FI_ADDR_NOTAVAIL, "src %llu before set", (unsigned long long) src);
	XT_ASSERT_RC(fi_av_set_user_id(x.av, fa, 0xabc0, 0), 0);
	XT_ASSERT_RC(fi_av_set_user_id(x.av, fa + 5, 1, 0), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_set_user_id(x.av, fa, 1, FI_MORE), -FI_EINVAL);
	src = recv_one(&x, &c, FI_ADDR_UNSPEC);
	XT_ASSERT(src == 0xabc0, "src %llx", (unsigned long long) src);
	/* A receive directed by index still matches. */
	src = recv_one(&x, &c, fa);
	XT_ASSERT(src == 0xabc0, "directed: src %llx", (unsigned long long) src);
	stop(&x, &c);
}
END_TEST

START_TEST(directed_receive_before_user_id_is_refused)
{
	char name[XT_NAME_MAX], buf[8];
	struct xt_child c;
	struct xt_ep x;
	fi_addr_t fa;

	start(&x, &c, FI_AV_USER_ID, true, &fa, name);
	XT_ASSERT_RC(fi_recv(x.ep, buf, sizeof(buf), NULL, fa, NULL), -FI_EADDRNOTAVAIL);
	XT_ASSERT_RC(fi_recv(x.ep, buf, sizeof(buf), NULL, fa + 9, NULL), -FI_EINVAL);
	stop(&x, &c);
}
END_TEST

START_TEST(per_insert_user_id_replaces_the_index)
{
	struct xt_child c;
	struct xt_ep x;
	char name[XT_NAME_MAX], extra[XT_XSHM_ADDRLEN];
	fi_addr_t fa, in, src;

	start(&x, &c, 0, false, &fa, name);
	XT_ASSERT_RC(fi_av_set_user_id(x.av, 0, 1, 0), -FI_EINVAL);
	xt_fake_addr(&x, 0x6600000000ULL, extra);
	XT_ASSERT_RC(fi_av_insert(x.av, extra, 1, NULL, FI_AV_USER_ID, NULL), -FI_EINVAL);
	in = 0x5151;
	XT_ASSERT_RC(fi_av_insert(x.av, name, 1, &in, FI_AV_USER_ID, NULL), 1);
	XT_ASSERT(in == 0, "index %llu", (unsigned long long) in);
	src = recv_one(&x, &c, FI_ADDR_UNSPEC);
	XT_ASSERT(src == 0x5151, "src %llx", (unsigned long long) src);
	src = recv_one(&x, &c, in);
	XT_ASSERT(src == 0x5151, "directed: src %llx", (unsigned long long) src);
	stop(&x, &c);
}
END_TEST

START_TEST(flag_per_insert_refused_when_opened_with_user_ids)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .flags = FI_AV_USER_ID };
	struct xt_ep x;
	struct fid_av *av;
	char addr[XT_XSHM_ADDRLEN];
	fi_addr_t in = 7;

	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	av = xt_open_av(&x, attr);
	xt_fake_addr(&x, 0x6600000000ULL, addr);
	XT_ASSERT_RC(fi_av_insert(av, addr, 1, &in, FI_AV_USER_ID, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_av_insert(av, addr, 1, &in, 0, NULL), 1);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&x);
}
END_TEST

START_TEST(unknown_sender_is_notavail_then_resolved_by_insert)
{
	struct xt_child c;
	struct xt_ep x;
	char name[XT_NAME_MAX], buf[64];
	struct xt_comp comp;
	fi_addr_t fa, index;
	int ctx;

	start(&x, &c, 0, false, &fa, name);
	XT_ASSERT(recv_one(&x, &c, FI_ADDR_UNSPEC) == FI_ADDR_NOTAVAIL, "src");
	/* Held as unexpected while its sender is unknown... */
	xt_remote_send(&x, &c, &small);
	xt_remote_done(&x, &c);
	for (int i = 0; i < 20; i++)
		xt_progress(&x);
	XT_ASSERT_RC(fi_av_insert(x.av, name, 1, &index, 0, NULL), 1);
	/* ...and reported from its index once inserted. */
	xt_post_recv(&x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, &ctx);
	xt_wait_rx(&x, &comp);
	XT_ASSERT(comp.src == index, "src %llu, index %llu",
		  (unsigned long long) comp.src, (unsigned long long) index);
	stop(&x, &c);
}
END_TEST

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("av_user_id"));
	Suite *s = suite_create("av_user_id");
	TCase *tc = tcase_create("user_id");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, open_flag_reports_notavail_until_set);
	tcase_add_test(tc, directed_receive_before_user_id_is_refused);
	tcase_add_test(tc, per_insert_user_id_replaces_the_index);
	tcase_add_test(tc, flag_per_insert_refused_when_opened_with_user_ids);
	tcase_add_test(tc, unknown_sender_is_notavail_then_resolved_by_insert);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
