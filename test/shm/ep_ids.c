#include <dirent.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ep_ids.h"

static _Atomic uint32_t *counter;	/* shared with forked test processes */
static uint16_t id_tag;
static pid_t runner_pid;

int test_ep_ids_init(uint16_t tag)
{
	id_tag = tag;
	runner_pid = getpid();
	counter = mmap(NULL, sizeof(*counter), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	return counter == MAP_FAILED ? -1 : 0;
}

uint64_t test_ep_id(void)
{
	uint32_t n = atomic_fetch_add(counter, 1) + 1;

	return (uint64_t) id_tag << 48 | (uint64_t) (uint32_t) runner_pid << 16 |
	       (n & 0xffff);
}

/* Remove, and count, anything this run left in /dev/shm. */
static int remove_leftovers(void)
{
	char prefix[64];
	struct dirent *entry;
	int left = 0;
	DIR *dir;

	snprintf(prefix, sizeof(prefix), "xshm-%u-%04x%08x",
		 (unsigned) geteuid(), id_tag, (uint32_t) runner_pid);
	dir = opendir("/dev/shm");
	if (!dir)
		return 0;
	while ((entry = readdir(dir)) != NULL) {
		if (strncmp(entry->d_name, prefix, strlen(prefix)) != 0)
			continue;
		fprintf(stderr, "left behind: /dev/shm/%s\n", entry->d_name);
		unlinkat(dirfd(dir), entry->d_name, 0);
		left++;
	}
	closedir(dir);
	return left;
}

int test_run_suite(Suite *suite)
{
	SRunner *runner = srunner_create(suite);
	int failed;

	srunner_run_all(runner, CK_NORMAL);
	failed = srunner_ntests_failed(runner);
	srunner_free(runner);
	if (counter && remove_leftovers())
		failed++;
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
