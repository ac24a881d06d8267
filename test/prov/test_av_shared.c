/*
 * Named AVs shared between processes (attr.name): an fi_addr_t inserted by
 * one process is used by another, FI_READ opens, concurrent inserts,
 * removal seen by others, the file's lifecycle and files not ours.
 */
#include "av_helpers.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define PER_CHILD 300

static struct xt_cfg cfg;
static char av_name[64];

static void unique_name(const char *what)
{
	snprintf(av_name, sizeof(av_name), "xt-%s-%d", what, (int) getpid());
}

static struct fi_av_attr named(uint64_t flags)
{
	return (struct fi_av_attr) { .type = FI_AV_TABLE, .name = av_name,
				     .flags = flags };
}

static bool shm_file_exists(const char *escaped)
{
	char path[256];

	snprintf(path, sizeof(path), "/dev/shm/xshm-av-%u-%s",
		 (unsigned) geteuid(), escaped);
	return access(path, F_OK) == 0;
}

/* Child: sends to the index the parent inserted, through a read-only open. */
static void read_only_sender(int sock, void *arg)
{
	struct fi_av_attr attr = named(FI_READ);
	struct xt_cfg ccfg = xt_cfg_default();
	char addr[XT_XSHM_ADDRLEN];
	struct xt_comp comp;
	fi_addr_t index = xt_recv_u64(sock), removed = xt_recv_u64(sock), out;
	size_t len = sizeof(addr);
	struct xt_ep y;

	xt_open_custom(&y, &ccfg, &attr, NULL);
	XT_ASSERT(attr.map_addr == NULL, "the caller's attr is a copy");
	XT_ASSERT_RC(fi_av_lookup(y.av, removed, addr, &len), -FI_EINVAL);
	XT_ASSERT_OK(fi_av_lookup(y.av, index, addr, &len));
	XT_ASSERT_RC(fi_av_insert(y.av, addr, 1, &out, 0, NULL), -FI_EACCES);
	XT_ASSERT_RC(fi_av_remove(y.av, &index, 1, 0), -FI_EACCES);
	XT_POST(&y, fi_send(y.ep, "shared", 7, NULL, index, NULL));
	xt_wait_tx(&y, &comp);
	xt_close(&y);
}

START_TEST(fi_addr_from_one_process_works_in_another)
{
	struct fi_av_attr attr;
	struct xt_child c;
	struct xt_comp comp;
	struct xt_ep x;
	struct fid_av *av;
	char other[XT_XSHM_ADDRLEN], buf[16];
	fi_addr_t first, mine;

	unique_name("share");
	attr = named(0);
	cfg = xt_cfg_default();
	xt_spawn(&c, read_only_sender, NULL);
	xt_open(&x, &cfg);
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av, NULL));
	XT_ASSERT(attr.map_addr != NULL, "map_addr not returned");
	xt_fake_addr(&x, 0x3300000000ULL, other);
	XT_ASSERT_RC(fi_av_insert(av, other, 1, &first, 0, NULL), 1);
	XT_ASSERT_RC(fi_av_insert(av, x.name, 1, &mine, 0, NULL), 1);
	XT_ASSERT_OK(fi_av_remove(av, &first, 1, 0));
	xt_post_recv(&x, false, buf, sizeof(buf), FI_ADDR_UNSPEC, 0, 0, NULL);
	xt_send_u64(c.sock, mine);
	xt_send_u64(c.sock, first);
	xt_wait_rx(&x, &comp);
	XT_ASSERT(!strcmp(buf, "shared"), "data");
	xt_join(&c);
	XT_ASSERT(mine == 1, "index %llu", (unsigned long long) mine);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&x);
}
END_TEST

/* Child: opens the name read-only and sends back map_addr[0 .. 2]. */
static void map_reader(int sock, void *arg)
{
	struct fi_av_attr attr = named(FI_READ);
	struct xt_cfg ccfg = xt_cfg_default();
	struct fid_av *av;
	struct xt_ep y;

	XT_ASSERT(xt_wait(sock) == 1, "the parent's signal");
	xt_open_upto(&y, &ccfg, XT_DOMAIN);
	XT_ASSERT_OK(fi_av_open(y.domain, &attr, &av, NULL));
	XT_ASSERT(attr.map_addr != NULL, "map_addr not returned");
	for (int i = 0; i < 3; i++)
		xt_send_u64(sock, ((const fi_addr_t *) attr.map_addr)[i]);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&y);
}

/*
 * map_addr, returned when NULL, points at the fi_addr_t of each index, in
 * every process that opened the name: fabtests' fi_rdm_shared_av sends to
 * map_addr[0], the first address its parent inserted.
 */
START_TEST(map_addr_holds_the_fi_addr_of_each_index)
{
	struct fi_av_attr attr;
	struct xt_child c;
	struct xt_ep x;
	struct fid_av *av;
	char a[XT_XSHM_ADDRLEN], b[XT_XSHM_ADDRLEN];
	fi_addr_t fa, fb, want[3];

	unique_name("map");
	attr = named(0);
	cfg = xt_cfg_default();
	xt_spawn(&c, map_reader, NULL);
	xt_open(&x, &cfg);	/* its name gives the fake addresses their node */
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av, NULL));
	xt_fake_addr(&x, 0x3400000000ULL, a);
	xt_fake_addr(&x, 0x3500000000ULL, b);
	XT_ASSERT_RC(fi_av_insert(av, a, 1, &fa, 0, NULL), 1);
	XT_ASSERT_RC(fi_av_insert(av, b, 1, &fb, 0, NULL), 1);
	XT_ASSERT_OK(fi_av_remove(av, &fa, 1, 0));
	want[fa] = FI_ADDR_NOTAVAIL;
	want[fb] = fb;
	want[2] = FI_ADDR_NOTAVAIL;
	for (int i = 0; i < 3; i++)
		XT_ASSERT(((const fi_addr_t *) attr.map_addr)[i] == want[i],
			  "here: map_addr[%d] = %llu", i,
			  (unsigned long long) ((const fi_addr_t *) attr.map_addr)[i]);
	xt_signal(c.sock, 1);
	for (int i = 0; i < 3; i++) {
		fi_addr_t seen = xt_recv_u64(c.sock);

		XT_ASSERT(seen == want[i], "in the child: map_addr[%d] = %llu", i,
			  (unsigned long long) seen);
	}
	xt_join(&c);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&x);
}
END_TEST

START_TEST(read_only_open_needs_an_existing_name)
{
	struct fi_av_attr attr;
	struct xt_ep x;
	struct fid_av *av;

	unique_name("missing");
	attr = named(FI_READ);
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_ENOENT);
	attr = named(0);
	attr.name = "";
	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EINVAL);
	xt_close(&x);
}
END_TEST

/* Child: inserts PER_CHILD addresses one call at a time. */
static void inserter(int sock, void *arg)
{
	struct fi_av_attr attr = named(0);
	struct xt_cfg ccfg = xt_cfg_default();
	uint64_t base = (uint64_t) (uintptr_t) arg;
	struct xt_ep y;
	struct fid_av *av;

	xt_open(&y, &ccfg);
	XT_ASSERT_OK(fi_av_open(y.domain, &attr, &av, NULL));
	xt_signal(sock, 1);
	xt_wait(sock);
	for (int i = 0; i < PER_CHILD; i++) {
		char addr[XT_XSHM_ADDRLEN];
		fi_addr_t out;

		xt_fake_addr(&y, base + i, addr);
		XT_ASSERT_RC(fi_av_insert(av, addr, 1, &out, 0, NULL), 1);
	}
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&y);
}

static void check_all_present(struct fid_av *av, struct xt_ep *x)
{
	int seen[2] = { 0, 0 };

	for (fi_addr_t i = 0; i < 2 * PER_CHILD; i++) {
		char addr[XT_XSHM_ADDRLEN];
		size_t len = sizeof(addr);
		unsigned long long id;

		XT_ASSERT_OK(fi_av_lookup(av, i, addr, &len));
		XT_ASSERT(sscanf(addr + XT_NODE_PREFIX_LEN, "%llx", &id) == 1, "addr");
		XT_ASSERT(!memcmp(addr, x->name, XT_NODE_PREFIX_LEN), "node");
		seen[id >= 0x2200000000ULL]++;
	}
	XT_ASSERT(seen[0] == PER_CHILD && seen[1] == PER_CHILD, "%d + %d",
		  seen[0], seen[1]);
}

START_TEST(concurrent_inserts_from_two_processes)
{
	struct fi_av_attr attr;
	struct xt_child a, b;
	struct xt_ep x;
	struct fid_av *av;
	char addr[XT_XSHM_ADDRLEN];
	size_t len = sizeof(addr);

	unique_name("conc");
	attr = named(0);
	cfg = xt_cfg_default();
	xt_spawn(&a, inserter, (void *) (uintptr_t) 0x1100000000ULL);
	xt_spawn(&b, inserter, (void *) (uintptr_t) 0x2200000000ULL);
	xt_open(&x, &cfg);
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av, NULL));
	xt_wait(a.sock);
	xt_wait(b.sock);
	xt_signal(a.sock, 1);
	xt_signal(b.sock, 1);
	xt_join(&a);
	xt_join(&b);
	check_all_present(av, &x);
	XT_ASSERT_RC(fi_av_lookup(av, 2 * PER_CHILD, addr, &len), -FI_EINVAL);
	XT_ASSERT_OK(fi_close(&av->fid));
	xt_close(&x);
}
END_TEST

START_TEST(file_is_removed_by_the_last_close)
{
	struct fi_av_attr attr = { .type = FI_AV_TABLE, .name = av_name };
	struct fid_av *av1, *av2;
	struct xt_ep x;
	char escaped[80];

	snprintf(av_name, sizeof(av_name), "a/b c%d", (int) getpid());
	snprintf(escaped, sizeof(escaped), "a%%2Fb%%20c%d", (int) getpid());
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av1, NULL));
	XT_ASSERT_OK(fi_av_open(x.domain, &attr, &av2, NULL));
	XT_ASSERT(shm_file_exists(escaped), "no file for %s", av_name);
	XT_ASSERT_OK(fi_close(&av1->fid));
	XT_ASSERT(shm_file_exists(escaped), "removed while still open");
	XT_ASSERT_OK(fi_close(&av2->fid));
	XT_ASSERT(!shm_file_exists(escaped), "left behind");
	xt_close(&x);
}
END_TEST

/* Plants /dev/shm/xshm-av-<uid>-<av_name> with that mode, owner and bytes. */
static void plant(mode_t mode, uid_t owner, const void *bytes, size_t len)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "/dev/shm/xshm-av-%u-%s",
		 (unsigned) geteuid(), av_name);
	fd = open(path, O_CREAT | O_EXCL | O_RDWR, mode);
	XT_ASSERT(fd >= 0, "cannot plant %s", path);
	XT_ASSERT(fchmod(fd, mode) == 0 && write(fd, bytes, len) == (ssize_t) len,
		  "plant");
	if (owner != geteuid())
		XT_ASSERT(fchown(fd, owner, (gid_t) -1) == 0, "chown");
	close(fd);
}

static void unplant(void)
{
	char path[256];

	snprintf(path, sizeof(path), "/dev/shm/xshm-av-%u-%s",
		 (unsigned) geteuid(), av_name);
	unlink(path);
}

START_TEST(files_not_ours_are_refused_and_left_alone)
{
	struct fi_av_attr attr;
	struct fid_av *av;
	struct xt_ep x;
	char junk[8192];

	memset(junk, 0x5a, sizeof(junk));
	unique_name("planted");
	attr = named(0);
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	plant(0644, geteuid(), junk, sizeof(junk));
	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EACCES);
	unplant();
	plant(0600, geteuid(), junk, sizeof(junk));
	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EINVAL);
	attr = named(FI_READ);
	XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EINVAL);
	XT_ASSERT(shm_file_exists(av_name), "a file not ours was removed");
	unplant();
	if (geteuid() == 0) {
		attr = named(0);
		plant(0600, 65534, junk, sizeof(junk));
		XT_ASSERT_RC(fi_av_open(x.domain, &attr, &av, NULL), -FI_EACCES);
		unplant();
	}
	xt_close(&x);
}
END_TEST

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("av_shared"));
	Suite *s = suite_create("av_shared");
	TCase *tc = tcase_create("shared");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, fi_addr_from_one_process_works_in_another);
	tcase_add_test(tc, map_addr_holds_the_fi_addr_of_each_index);
	tcase_add_test(tc, read_only_open_needs_an_existing_name);
	tcase_add_test(tc, concurrent_inserts_from_two_processes);
	tcase_add_test(tc, file_is_removed_by_the_last_close);
	tcase_add_test(tc, files_not_ours_are_refused_and_left_alone);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
