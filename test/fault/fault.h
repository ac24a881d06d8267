/*
 * Helpers of the fault tests: peers killed with SIGKILL at chosen points.
 * A killed child is reaped with xt_join_killed right after its death.
 */
#ifndef XT_FAULT_H
#define XT_FAULT_H

#include "../prov/harness.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* How soon after a death the survivors must see their error completions. */
#define FAULT_DETECT_MS	2000

/* /dev/shm/xshm-<uid>-<ep_id>: the region behind an fi_getname string. */
static inline void fault_region_path(const char *name, char *path, size_t len)
{
	const char *ep_id = strrchr(name, '/');

	XT_ASSERT(ep_id && strlen(ep_id + 1) == 16, "address %s", name);
	snprintf(path, len, "/dev/shm/xshm-%u-%s", (unsigned)geteuid(), ep_id + 1);
}

static inline bool fault_region_exists(const char *name)
{
	char path[128];
	struct stat st;

	fault_region_path(name, path, sizeof(path));
	return stat(path, &st) == 0;
}

/* A child's last words: tell the parent, then die at once. */
static inline void fault_die(int sock, uint8_t what)
{
	xt_signal(sock, what);
	raise(SIGKILL);
}

/* A numeric service no concurrently running test process uses. */
static inline void fault_service(char *buf, size_t len, int which)
{
	snprintf(buf, len, "%d", 1000000 + (int)getpid() * 4 + which);
}

#endif
