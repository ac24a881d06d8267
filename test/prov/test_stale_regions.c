/*
 * A region that libfabric's shm (1.17 to 1.22) left under a pid fails the
 * next process of that pid in fi_enable (-FI_EBUSY), and pids wrap at
 * 32768 on a 2-core machine: the harness removes such names before a
 * process's first endpoint (test/prov/stale_regions.c).  Each case works
 * in a child of its own, whose pid no region of its own names yet.
 */
#include "harness.h"
#include "stale_regions.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static void region_path(char *path, size_t len, const char *name)
{
	snprintf(path, len, "/dev/shm/%s", name);
}

static void make_region(const char *name)
{
	char path[256];
	int fd;

	region_path(path, sizeof(path), name);
	fd = open(path, O_CREAT | O_RDWR, 0600);
	XT_ASSERT(fd >= 0, "creating %s", path);
	XT_ASSERT(ftruncate(fd, 4096) == 0, "sizing %s", path);
	close(fd);
}

static bool region_exists(const char *name)
{
	char path[256];
	struct stat st;

	region_path(path, sizeof(path), name);
	return stat(path, &st) == 0;
}

static void remove_region(const char *name)
{
	char path[256];

	region_path(path, sizeof(path), name);
	unlink(path);
}

/* shm's names for this pid go; a longer pid's, and other names, stay. */
static void remove_only_own_names(int sock, void *arg)
{
	int pid = (int)getpid(), uid = (int)getuid();
	char gone[2][64], kept[3][64];
	bool left[2], removed[3];

	(void)sock;
	(void)arg;
	snprintf(gone[0], sizeof(gone[0]), "%d:%d:0", pid, uid);
	snprintf(gone[1], sizeof(gone[1]), "%d:%d:0:1865294466", pid, uid);
	snprintf(kept[0], sizeof(kept[0]), "%d0:%d:0", pid, uid);
	snprintf(kept[1], sizeof(kept[1]), "%d:%d:x", pid, uid);
	snprintf(kept[2], sizeof(kept[2]), "xshm-%d:%d:0", pid, uid);
	for (int i = 0; i < 2; i++)
		make_region(gone[i]);
	for (int i = 0; i < 3; i++)
		make_region(kept[i]);
	xt_remove_stale_shm_regions();
	for (int i = 0; i < 2; i++) {
		left[i] = region_exists(gone[i]);
		remove_region(gone[i]);
	}
	for (int i = 0; i < 3; i++) {
		removed[i] = !region_exists(kept[i]);
		remove_region(kept[i]);
	}
	for (int i = 0; i < 2; i++)
		XT_ASSERT(!left[i], "%s was left", gone[i]);
	for (int i = 0; i < 3; i++)
		XT_ASSERT(!removed[i], "%s was removed", kept[i]);
}

START_TEST(only_this_pids_shm_names_removed)
{
	struct xt_child c;

	xt_spawn(&c, remove_only_own_names, NULL);
	xt_join(&c);
}
END_TEST

/* A region of an earlier process of this pid, then Debian's shm opened. */
static void open_shm_over_leftover(int sock, void *arg)
{
	struct xt_cfg cfg = xt_cfg_default();
	char name[64];
	struct xt_ep x;

	(void)sock;
	(void)arg;
	setenv("XSHM_TEST_PROVIDER", "shm", 1);
	snprintf(name, sizeof(name), "%d:%d:0", (int)getpid(), (int)getuid());
	make_region(name);
	xt_open(&x, &cfg);	/* asserts that each step returns 0 */
	xt_close(&x);
}

START_TEST(shm_opens_over_a_leftover_of_its_pid)
{
	struct xt_child c;

	xt_spawn(&c, open_shm_over_leftover, NULL);
	xt_join(&c);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stale_regions");
	TCase *tc = tcase_create("stale_regions");

	if (!xt_wanted(XT_XSHM))	/* about the harness and shm, not a provider */
		return xt_run_suite(s);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, only_this_pids_shm_names_removed);
	tcase_add_test(tc, shm_opens_over_a_leftover_of_its_pid);
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
