/*
 * NUMA placement of regions (shm/numa.c), checked through the kernel: the
 * policy the region's file carries (get_mempolicy MPOL_F_ADDR) and the node
 * each of its pages sits on (move_pages status query and get_mempolicy
 * MPOL_F_NODE | MPOL_F_ADDR).  Built only with libnuma.
 */
#include <check.h>
#include <errno.h>
#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ep_ids.h"
#include "shm/numa.h"
#include "shm/region.h"

#define TEST_TIMEOUT	60
#define PAGE		4096

static const struct xshm_region_geom placed_geom = {
	.ring_cells = XSHM_RING_CELLS,
	.pool_bufs = XSHM_POOL_BUFS,
	.buf_size = XSHM_BUF_SIZE,
	.numa_local = true,
};

static cpu_set_t allowed;	/* the CPUs the test may run on */

static void pin_to(int cpu)
{
	cpu_set_t one;

	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	ck_assert_int_eq(sched_setaffinity(0, sizeof(one), &one), 0);
	ck_assert_int_eq(sched_getcpu(), cpu);
}

static int last_allowed_cpu(void)
{
	int last = -1;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			last = cpu;
	return last;
}

/* The policy of the file at addr must be "prefer exactly node". */
static void assert_prefers(void *addr, int node)
{
	struct bitmask *nodes = numa_allocate_nodemask();
	int mode = -1;

	ck_assert_int_eq(get_mempolicy(&mode, nodes->maskp, nodes->size + 1,
				       addr, MPOL_F_ADDR), 0);
	ck_assert_int_eq(mode, MPOL_PREFERRED);
	ck_assert_uint_eq(numa_bitmask_weight(nodes), 1);
	ck_assert(numa_bitmask_isbitset(nodes, (unsigned int) node));
	numa_bitmask_free(nodes);
}

static int policy_mode_at(void *addr)
{
	int mode = -1;

	ck_assert_int_eq(get_mempolicy(&mode, NULL, 0, addr, MPOL_F_ADDR), 0);
	return mode;
}

/* Every page of the mapping [base, base + size) sits on node. */
static void assert_pages_on(unsigned char *base, size_t size, int node)
{
	size_t npages = size / PAGE;
	void **pages = calloc(npages, sizeof(*pages));
	int *status = calloc(npages, sizeof(*status));

	ck_assert(pages && status);
	for (size_t i = 0; i < npages; i++) {
		pages[i] = base + i * PAGE;
		/* Map the page into this process: move_pages only sees those. */
		(void) *(volatile unsigned char *) pages[i];
		status[i] = -1;
	}
	ck_assert_int_eq(move_pages(0, npages, pages, NULL, status, 0), 0);
	for (size_t i = 0; i < npages; i++) {
		int where = -1;

		ck_assert_msg(status[i] == node, "page %zu on node %d, not %d",
			      i, status[i], node);
		ck_assert_int_eq(get_mempolicy(&where, NULL, 0, pages[i],
					       MPOL_F_NODE | MPOL_F_ADDR), 0);
		ck_assert_int_eq(where, node);
	}
	free(pages);
	free(status);
}

static void assert_placed(const struct xshm_region *region, int node)
{
	unsigned char *base = region->base;

	assert_prefers(base, node);
	assert_prefers(base + region->hdr->ring_offset, node);
	assert_prefers(base + region->hdr->pool_offset, node);
	assert_prefers(base + region->size - PAGE, node);
	assert_pages_on(base, region->size, node);
}

START_TEST(region_on_node_of_each_cpu)
{
	int tried = 0;

	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		struct xshm_region region;
		int node;

		if (!CPU_ISSET(cpu, &allowed))
			continue;
		pin_to(cpu);
		node = numa_node_of_cpu(cpu);
		ck_assert_int_ge(node, 0);
		ck_assert_int_eq(xshm_region_create(&region, 1, test_ep_id(),
						    &placed_geom), 0);
		assert_placed(&region, node);
		xshm_region_close(&region);
		tried++;
	}
	ck_assert_int_eq(tried, CPU_COUNT(&allowed));
}
END_TEST

/* A peer on another CPU (and node, where there is one) sees the same. */
static int peer_checks(uint64_t ep_id, int cpu, int node)
{
	struct xshm_region peer;

	pin_to(cpu);
	if (xshm_region_open(&peer, ep_id))
		return 2;
	assert_placed(&peer, node);
	xshm_region_close(&peer);
	return 0;
}

START_TEST(peer_mapping_carries_the_placement)
{
	int first = -1, last = last_allowed_cpu(), status, node;
	struct xshm_region region;
	uint64_t ep_id = test_ep_id();
	pid_t child;

	for (int cpu = 0; cpu < CPU_SETSIZE && first < 0; cpu++)
		if (CPU_ISSET(cpu, &allowed))
			first = cpu;
	pin_to(first);
	node = numa_node_of_cpu(first);
	ck_assert_int_eq(xshm_region_create(&region, 1, ep_id, &placed_geom), 0);
	child = fork();
	ck_assert_int_ge(child, 0);
	if (child == 0) {
		alarm(TEST_TIMEOUT);
		_exit(peer_checks(ep_id, last, node));
	}
	ck_assert_int_eq(waitpid(child, &status, 0), child);
	xshm_region_close(&region);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

START_TEST(unplaced_region_keeps_default_policy)
{
	struct xshm_region_geom geom = placed_geom;
	struct xshm_region region;

	geom.numa_local = false;
	ck_assert_int_eq(xshm_region_create(&region, 1, test_ep_id(), &geom), 0);
	ck_assert_int_eq(policy_mode_at(region.base), MPOL_DEFAULT);
	ck_assert_int_eq(policy_mode_at((unsigned char *) region.base +
					region.size - PAGE), MPOL_DEFAULT);
	xshm_region_close(&region);
}
END_TEST

/* A kernel without NUMA: placement says so and creation still works. */
START_TEST(no_numa_kernel_reports_enosys)
{
	struct xshm_region region;

	ck_assert_int_eq(xshm_numa_place(-1, PAGE), -ENOSYS);
	ck_assert_int_eq(xshm_region_create(&region, 1, test_ep_id(),
					    &placed_geom), 0);
	xshm_region_close(&region);
}
END_TEST

static Suite *numa_suite(void)
{
	Suite *suite = suite_create("numa");
	TCase *tc = tcase_create("numa");

	tcase_set_timeout(tc, TEST_TIMEOUT);
	if (numa_available() < 0) {
		tcase_add_test(tc, no_numa_kernel_reports_enosys);
	} else {
		tcase_add_test(tc, region_on_node_of_each_cpu);
		tcase_add_test(tc, peer_mapping_carries_the_placement);
		tcase_add_test(tc, unplaced_region_keeps_default_policy);
	}
	suite_add_tcase(suite, tc);
	return suite;
}

int main(void)
{
	if (test_ep_ids_init(0x7e5a) ||
	    sched_getaffinity(0, sizeof(allowed), &allowed))
		return EXIT_FAILURE;
	return test_run_suite(numa_suite());
}
