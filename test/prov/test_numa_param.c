/*
 * FI_XSHM_NUMA: an enabled endpoint's region carries a preferred-node
 * policy (the node of the CPU that enabled it) unless the parameter is 0.
 * Read through get_mempolicy on a mapping of the region's file, which
 * reports the file's own policy.  Built only with libnuma.
 */
#include "harness.h"

#include <numa.h>
#include <numaif.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

static struct xt_cfg cfg;

/* Policy mode of x's region file, and in *node the single node it names. */
static int region_policy(const struct xt_ep *x, int *node)
{
	struct bitmask *nodes = numa_allocate_nodemask();
	unsigned long long node_id, ep_id;
	char path[128];
	struct stat st;
	int fd, mode = -1;
	void *map;

	XT_ASSERT(sscanf(x->name, "fi_xshm://%16llx/%16llx", &node_id, &ep_id) == 2,
		  "name %s", x->name);
	snprintf(path, sizeof(path), "/dev/shm/xshm-%u-%016llx",
		 (unsigned) geteuid(), ep_id);
	fd = open(path, O_RDONLY);
	XT_ASSERT(fd >= 0 && fstat(fd, &st) == 0, "%s", path);
	map = mmap(NULL, (size_t) st.st_size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	XT_ASSERT(map != MAP_FAILED, "mmap %s", path);
	XT_ASSERT(get_mempolicy(&mode, nodes->maskp, nodes->size + 1, map,
				MPOL_F_ADDR) == 0, "get_mempolicy");
	*node = -1;
	for (int i = 0; i <= numa_max_node(); i++)
		if (numa_bitmask_isbitset(nodes, (unsigned int) i))
			*node = *node < 0 ? i : -2;
	munmap(map, (size_t) st.st_size);
	numa_bitmask_free(nodes);
	return mode;
}

/* Pinned to one CPU, so the node the region should prefer is known. */
static int pin_to_current_cpu(void)
{
	int cpu = sched_getcpu();
	cpu_set_t one;

	XT_ASSERT(cpu >= 0, "sched_getcpu");
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	XT_ASSERT(sched_setaffinity(0, sizeof(one), &one) == 0, "pin");
	return numa_node_of_cpu(cpu);
}

START_TEST(region_prefers_node_of_enabling_cpu_by_default)
{
	int expected = pin_to_current_cpu(), node;
	struct xt_ep x;

	unsetenv("FI_XSHM_NUMA");
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	XT_ASSERT(region_policy(&x, &node) == MPOL_PREFERRED, "policy");
	XT_ASSERT(node == expected, "prefers node %d, not %d", node, expected);
	xt_close(&x);
}
END_TEST

START_TEST(numa_0_leaves_default_policy)
{
	struct xt_ep x;
	int node;

	setenv("FI_XSHM_NUMA", "0", 1);
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	XT_ASSERT(region_policy(&x, &node) == MPOL_DEFAULT, "policy");
	xt_close(&x);
}
END_TEST

/* A kernel without NUMA: placement fails quietly, enabling does not. */
START_TEST(enable_works_without_kernel_numa)
{
	struct xt_ep x;

	unsetenv("FI_XSHM_NUMA");
	cfg = xt_cfg_default();
	xt_open(&x, &cfg);
	xt_close(&x);
}
END_TEST

int main(void)
{
	if (!xt_wanted(XT_XSHM))	/* none of its cases is selected */
		return xt_run_suite(suite_create("numa_param"));
	Suite *s = suite_create("numa_param");
	TCase *tc = tcase_create("numa_param");

	if (numa_available() < 0) {
		tcase_add_test(tc, enable_works_without_kernel_numa);
	} else {
		tcase_add_test(tc, region_prefers_node_of_enabling_cpu_by_default);
		tcase_add_test(tc, numa_0_leaves_default_policy);
	}
	suite_add_tcase(s, tc);
	return xt_run_suite(s);
}
