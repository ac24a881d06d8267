/* Addresses: fi_getname, fi_av_insert / lookup / straddr / remove. */
#include "harness.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NPEERS 3

static struct xt_cfg cfg;

/* x[0] is the endpoint whose AV is tested, x[1..NPEERS] give names. */
static void open_all(struct xt_ep *x, int n)
{
	cfg = xt_cfg_default();
	for (int i = 0; i < n; i++)
		xt_open(&x[i], &cfg);
}

static void close_all(struct xt_ep *x, int n)
{
	for (int i = n - 1; i >= 0; i--)
		xt_close(&x[i]);
}

/* Packs the names of x[1..n] one after the other; returns the length. */
static size_t pack_names(char *buf, const struct xt_ep *x, int n)
{
	size_t off = 0;

	for (int i = 1; i <= n; i++) {
		memcpy(buf + off, x[i].name, x[i].namelen);
		off += x[i].namelen;
	}
	return off;
}

START_TEST(getname_returns_nul_terminated_string_of_44_bytes)
{
	struct xt_ep x;

	open_all(&x, 1);
	XT_ASSERT(x.namelen == XT_XSHM_ADDRLEN, "addrlen %zu", x.namelen);
	XT_ASSERT(xt_is_xshm_addr(x.name, x.namelen), "name '%.*s'", (int)x.namelen, x.name);
	close_all(&x, 1);
}
END_TEST

START_TEST(getname_too_small_gives_etoosmall_and_needed_size)
{
	char buf[XT_NAME_MAX];
	struct xt_ep x;
	size_t len;

	open_all(&x, 1);
	len = 10;
	XT_ASSERT_RC(fi_getname(&x.ep->fid, buf, &len), -FI_ETOOSMALL);
	XT_ASSERT(len == x.namelen, "addrlen %zu, needed %zu", len, x.namelen);
	len = 0;
	XT_ASSERT_RC(fi_getname(&x.ep->fid, NULL, &len), -FI_ETOOSMALL);
	XT_ASSERT(len == x.namelen, "addrlen %zu, needed %zu", len, x.namelen);
	len = x.namelen;
	XT_ASSERT_OK(fi_getname(&x.ep->fid, buf, &len));
	XT_ASSERT(memcmp(buf, x.name, len) == 0, "name changed");
	close_all(&x, 1);
}
END_TEST

START_TEST(endpoints_have_distinct_names_on_the_same_node)
{
	struct xt_ep x[NPEERS];
	const size_t node_end = strlen("fi_xshm://") + 16;

	open_all(x, NPEERS);
	for (int i = 0; i < NPEERS; i++) {
		XT_ASSERT(xt_is_xshm_addr(x[i].name, x[i].namelen), "name '%s'", x[i].name);
		for (int j = 0; j < i; j++) {
			XT_ASSERT(strcmp(x[i].name, x[j].name) != 0, "two endpoints named %s",
				  x[i].name);
			XT_ASSERT(memcmp(x[i].name, x[j].name, node_end) == 0,
				  "node ids differ: %s %s", x[i].name, x[j].name);
		}
	}
	close_all(x, NPEERS);
}
END_TEST

static void send_name_to_parent(int sock, void *arg)
{
	struct xt_cfg c = xt_cfg_default();
	struct xt_ep x;

	xt_open(&x, &c);
	xt_send_name(sock, &x);
	xt_wait(sock);
	xt_close(&x);
}

START_TEST(processes_share_node_id_with_distinct_endpoint_ids)
{
	const size_t node_end = strlen("fi_xshm://") + 16;
	char other[XT_NAME_MAX];
	struct xt_child child;
	struct xt_ep x;
	size_t len;

	xt_spawn(&child, send_name_to_parent, NULL);
	open_all(&x, 1);
	len = xt_recv_name(child.sock, other);
	xt_signal(child.sock, 1);
	XT_ASSERT(xt_is_xshm_addr(other, len), "child name '%.*s'", (int)len, other);
	XT_ASSERT(xt_is_xshm_addr(x.name, x.namelen), "name '%s'", x.name);
	XT_ASSERT(memcmp(x.name, other, node_end) == 0, "node ids differ: %s %s", x.name, other);
	XT_ASSERT(strcmp(x.name + node_end, other + node_end) != 0, "same endpoint id: %s",
		  other);
	xt_join(&child);
	close_all(&x, 1);
}
END_TEST

START_TEST(av_insert_assigns_consecutive_indices)
{
	struct xt_ep x[NPEERS + 1];

	open_all(x, NPEERS + 1);
	for (int i = 1; i <= NPEERS; i++) {
		fi_addr_t a = FI_ADDR_NOTAVAIL;

		XT_ASSERT_RC(fi_av_insert(x[0].av, x[i].name, 1, &a, 0, NULL), 1);
		XT_ASSERT(a == (fi_addr_t)(i - 1), "insert %d got fi_addr %llu", i,
			  (unsigned long long)a);
	}
	close_all(x, NPEERS + 1);
}
END_TEST

START_TEST(av_insert_of_packed_strings_inserts_each)
{
	struct xt_ep x[NPEERS + 1];
	fi_addr_t a[NPEERS];
	char packed[NPEERS * XT_NAME_MAX];

	open_all(x, NPEERS + 1);
	pack_names(packed, x, NPEERS);
	XT_ASSERT_RC(fi_av_insert(x[0].av, packed, NPEERS, a, 0, NULL), NPEERS);
	for (int i = 0; i < NPEERS; i++) {
		char back[XT_NAME_MAX];
		size_t len = sizeof(back);

		XT_ASSERT(a[i] == (fi_addr_t)i, "fi_addr[%d] = %llu", i, (unsigned long long)a[i]);
		XT_ASSERT_OK(fi_av_lookup(x[0].av, a[i], back, &len));
		XT_ASSERT(strcmp(back, x[i + 1].name) == 0, "entry %d is %s, inserted %s", i,
			  back, x[i + 1].name);
	}
	close_all(x, NPEERS + 1);
}
END_TEST

START_TEST(av_lookup_copies_the_address_back)
{
	struct xt_ep x[2];
	char back[XT_NAME_MAX];
	size_t len = sizeof(back);
	fi_addr_t a;

	open_all(x, 2);
	a = xt_av_insert(&x[0], x[1].name);
	XT_ASSERT_OK(fi_av_lookup(x[0].av, a, back, &len));
	XT_ASSERT(len == x[1].namelen, "addrlen %zu, name is %zu", len, x[1].namelen);
	XT_ASSERT(memcmp(back, x[1].name, len) == 0, "got %s, inserted %s", back, x[1].name);
	close_all(x, 2);
}
END_TEST

START_TEST(av_lookup_with_small_buffer_truncates_and_reports_needed_size)
{
	struct xt_ep x[2];
	char back[XT_NAME_MAX];
	size_t len = 5;
	fi_addr_t a;
	int rc;

	open_all(x, 2);
	a = xt_av_insert(&x[0], x[1].name);
	memset(back, 'Z', sizeof(back));
	rc = fi_av_lookup(x[0].av, a, back, &len);
	XT_ASSERT(rc == 0 || rc == -FI_ETOOSMALL, "fi_av_lookup returned %d", rc);
	XT_ASSERT(len == x[1].namelen, "addrlen %zu, needed %zu", len, x[1].namelen);
	XT_ASSERT(memcmp(back, x[1].name, 5) == 0, "prefix differs");
	XT_ASSERT(back[5] == 'Z', "wrote past the given addrlen");
	close_all(x, 2);
}
END_TEST

START_TEST(av_straddr_returns_the_address_string)
{
	struct xt_ep x[2];
	char buf[XT_NAME_MAX];
	size_t len = sizeof(buf);
	const char *s;

	open_all(x, 2);
	s = fi_av_straddr(x[0].av, x[1].name, buf, &len);
	XT_ASSERT(s == buf, "fi_av_straddr returned %p, buf %p", (void *)s, (void *)buf);
	XT_ASSERT(strcmp(buf, x[1].name) == 0, "straddr '%s', name '%s'", buf, x[1].name);
	XT_ASSERT(len == x[1].namelen, "len %zu, name is %zu", len, x[1].namelen);
	close_all(x, 2);
}
END_TEST

static const char *const malformed[] = {
	"",
	"garbage",
	"fi_xshm://",
	"fi_xshm://0123456789abcdef",
	"fi_xshm://0123456789abcdef/",
	"fi_xshm://0123456789abcdeg/0123456789abcdef",
	"fi_xshm://0123456789abcdef/0123456789abcde",
	"fi_xshm://0123456789abcdef/0123456789abcdef0",
	"fi_xshm://0123456789abcdef-0123456789abcdef",
	"fi_sockets://127.0.0.1:4242",
	"xshm://0123456789abcdef/0123456789abcdef",
};

START_TEST(av_insert_of_malformed_string_inserts_nothing)
{
	struct xt_ep x;
	fi_addr_t a = 0;

	open_all(&x, 1);
	XT_ASSERT_RC(fi_av_insert(x.av, malformed[_i], 1, &a, 0, NULL), 0);
	XT_ASSERT(a == FI_ADDR_NOTAVAIL, "'%s': fi_addr %llu", malformed[_i],
		  (unsigned long long)a);
	close_all(&x, 1);
}
END_TEST

START_TEST(av_insert_of_batch_with_one_malformed_inserts_the_others)
{
	struct xt_ep x[3];
	char packed[3 * XT_NAME_MAX];
	const char *bad = "fi_xshm://junk";
	fi_addr_t a[3] = { 7, 7, 7 };
	size_t off = 0;

	open_all(x, 3);
	memcpy(packed, x[1].name, x[1].namelen);
	off += x[1].namelen;
	memcpy(packed + off, bad, strlen(bad) + 1);
	off += strlen(bad) + 1;
	memcpy(packed + off, x[2].name, x[2].namelen);
	XT_ASSERT_RC(fi_av_insert(x[0].av, packed, 3, a, 0, NULL), 2);
	XT_ASSERT(a[0] != FI_ADDR_NOTAVAIL && a[2] != FI_ADDR_NOTAVAIL,
		  "valid addresses not inserted: %llu %llu", (unsigned long long)a[0],
		  (unsigned long long)a[2]);
	XT_ASSERT(a[1] == FI_ADDR_NOTAVAIL, "malformed one got %llu", (unsigned long long)a[1]);
	close_all(x, 3);
}
END_TEST

START_TEST(av_send_to_removed_address_gives_einval)
{
	struct xt_ep x[2];
	char buf[8] = "removed";
	fi_addr_t a;

	open_all(x, 2);
	a = xt_av_insert(&x[0], x[1].name);
	XT_ASSERT_OK(fi_av_remove(x[0].av, &a, 1, 0));
	XT_ASSERT_RC(fi_send(x[0].ep, buf, sizeof(buf), NULL, a, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_tsend(x[0].ep, buf, sizeof(buf), NULL, a, 1, NULL), -FI_EINVAL);
	XT_ASSERT_RC(fi_inject(x[0].ep, buf, sizeof(buf), a), -FI_EINVAL);
	close_all(x, 2);
}
END_TEST

START_TEST(av_open_with_unspec_type_behaves_as_table)
{
	struct fi_av_attr attr = { .type = FI_AV_UNSPEC };
	struct xt_ep x[3];
	struct fid_av *av;
	fi_addr_t a[2];

	open_all(x, 3);
	XT_ASSERT_OK(fi_av_open(x[0].domain, &attr, &av, NULL));
	XT_ASSERT_RC(fi_av_insert(av, x[1].name, 1, &a[0], 0, NULL), 1);
	XT_ASSERT_RC(fi_av_insert(av, x[2].name, 1, &a[1], 0, NULL), 1);
	XT_ASSERT(a[0] == 0 && a[1] == 1, "fi_addrs %llu %llu", (unsigned long long)a[0],
		  (unsigned long long)a[1]);
	XT_ASSERT_OK(fi_close(&av->fid));
	close_all(x, 3);
}
END_TEST

static Suite *av_suite(void)
{
	Suite *s = suite_create("av");
	TCase *names = tcase_create("names");
	TCase *av = tcase_create("av");
	int nmalformed = sizeof(malformed) / sizeof(malformed[0]);

	tcase_set_timeout(names, 20);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(names, getname_returns_nul_terminated_string_of_44_bytes);
	tcase_add_test(names, getname_too_small_gives_etoosmall_and_needed_size);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(names, endpoints_have_distinct_names_on_the_same_node);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(names, processes_share_node_id_with_distinct_endpoint_ids);
	suite_add_tcase(s, names);

	tcase_set_timeout(av, 20);
	tcase_add_test(av, av_insert_assigns_consecutive_indices);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(av, av_insert_of_packed_strings_inserts_each);
	tcase_add_test(av, av_lookup_copies_the_address_back);
	tcase_add_test(av, av_lookup_with_small_buffer_truncates_and_reports_needed_size);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(av, av_straddr_returns_the_address_string);
	if (xt_wanted(XT_XSHM))
		tcase_add_loop_test(av, av_insert_of_malformed_string_inserts_nothing, 0, nmalformed);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(av, av_insert_of_batch_with_one_malformed_inserts_the_others);
	tcase_add_test(av, av_send_to_removed_address_gives_einval);
	if (xt_wanted(XT_XSHM))
		tcase_add_test(av, av_open_with_unspec_type_behaves_as_table);
	suite_add_tcase(s, av);
	return s;
}

int main(void)
{
	return xt_run_suite(av_suite());
}
