/*
 * Unit tests of shm/liveness.c: regions whose owner was killed.  A forked
 * child creates a region and dies by SIGKILL; the parent maps it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/liveness.h"
#include "shm/region.h"

static const struct xshm_region_geom test_geom = {
	.ring_cells = 64,
	.pool_bufs = 16,
	.buf_size = 4096,
};

static int region_file_exists(uint64_t ep_id)
{
	char name[XSHM_NAME_MAX], path[64];

	xshm_region_name(name, sizeof(name), ep_id);
	snprintf(path, sizeof(path), "/dev/shm%s", name);
	return access(path, F_OK) == 0;
}

/*
 * A region of ep_id mapped here, owned by a child killed once it is mapped
 * (other processes of this user may reclaim the file as soon as it is dead).
 */
static void map_orphan(struct xshm_region *region, uint64_t ep_id)
{
	int status, ready[2];
	char byte = 0;
	pid_t pid;

	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct xshm_region own;

		if (xshm_region_create(&own, 42, ep_id, &test_geom) ||
		    write(ready[1], &byte, 1) != 1)
			_exit(1);
		for (;;)
			pause();
	}
	ck_assert_int_eq(read(ready[0], &byte, 1), 1);
	ck_assert_int_eq(xshm_region_open(region, ep_id), 0);
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
	close(ready[0]);
	close(ready[1]);
}

START_TEST(owner_of_a_live_region_is_alive)
{
	struct xshm_region region;
	uint64_t ep_id = test_ep_id();
	struct xshm_owner owner;

	ck_assert_int_eq(xshm_region_create(&region, 42, ep_id, &test_geom), 0);
	owner = xshm_region_owner(&region);
	ck_assert_int_eq(owner.pid, getpid());
	ck_assert(xshm_owner_alive(owner));
	ck_assert(xshm_owner_alive((struct xshm_owner){ .pid = 0 }));
	owner.start_time++;
	ck_assert(!xshm_owner_alive(owner));
	xshm_region_close(&region);
}
END_TEST

START_TEST(retiring_a_dead_owners_region_unlinks_it_and_marks_it_closed)
{
	struct xshm_region region, other;
	uint64_t ep_id = test_ep_id();
	struct xshm_owner owner;

	map_orphan(&region, ep_id);
	ck_assert_int_eq(xshm_region_open(&other, ep_id), 0);
	owner = xshm_region_owner(&region);
	ck_assert(!xshm_owner_alive(owner));
	ck_assert(xshm_region_is_open(&region));
	xshm_region_retire(&region, owner);
	ck_assert(!region_file_exists(ep_id));
	ck_assert(!xshm_region_is_open(&region));
	ck_assert(!xshm_region_is_open(&other));	/* every mapping sees it */
	xshm_region_close(&other);
	xshm_region_close(&region);
}
END_TEST

/* A new owner took the name: retiring the old mapping leaves its file. */
START_TEST(retiring_keeps_a_new_owners_file)
{
	struct xshm_region region, heir;
	uint64_t ep_id = test_ep_id();
	char name[XSHM_NAME_MAX];

	map_orphan(&region, ep_id);
	xshm_region_name(name, sizeof(name), ep_id);
	ck_assert(shm_unlink(name) == 0 || errno == ENOENT);
	ck_assert_int_eq(xshm_region_create(&heir, 42, ep_id, &test_geom), 0);
	xshm_region_retire(&region, xshm_region_owner(&region));
	ck_assert(region_file_exists(ep_id));
	ck_assert(xshm_region_is_open(&heir));
	ck_assert(!xshm_region_is_open(&region));
	xshm_region_close(&region);
	xshm_region_close(&heir);
}
END_TEST

/* What reclaiming does to a stale file before unlinking it (here a live one). */
START_TEST(marking_a_region_file_closed_reaches_its_mappers)
{
	struct xshm_region region, peer;
	uint64_t ep_id = test_ep_id();
	int fd;

	ck_assert_int_eq(xshm_region_create(&region, 42, ep_id, &test_geom), 0);
	ck_assert_int_eq(xshm_region_open(&peer, ep_id), 0);
	fd = shm_open(region.name, O_RDWR, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert(xshm_region_is_open(&peer));
	ck_assert(xshm_region_file_mark_closed(fd));
	ck_assert(!xshm_region_is_open(&peer));
	ck_assert(!xshm_region_is_open(&region));
	close(fd);
	xshm_region_close(&peer);
	xshm_region_close(&region);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("liveness");
	TCase *tc = tcase_create("liveness");

	if (test_ep_ids_init(0x11fe))
		return 1;
	tcase_add_test(tc, owner_of_a_live_region_is_alive);
	tcase_add_test(tc, retiring_a_dead_owners_region_unlinks_it_and_marks_it_closed);
	tcase_add_test(tc, retiring_keeps_a_new_owners_file);
	tcase_add_test(tc, marking_a_region_file_closed_reaches_its_mappers);
	suite_add_tcase(s, tc);
	return test_run_suite(s);
}
