/*
 * libfabric's shm up to 1.22 names an endpoint's region "<pid>:<uid>:<n>"
 * in /dev/shm and fails fi_enable with -FI_EBUSY when that name exists and
 * the pid recorded in it is alive, even when that pid is the caller's own.
 * A process killed or crashed by a case leaves its regions behind (shm
 * reclaims none), pids wrap at 32768 on a machine of few cores, and so a
 * later process of the same pid failed to open shm in a long run.  Before
 * a process's first endpoint, names with its pid can only be leftovers.
 */
#include "stale_regions.h"
#include <dirent.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define SHM_DIR "/dev/shm/"

/* "<pid>:" followed by digits and colons only: shm 1.17 to 1.22's names. */
static bool named_for(const char *name, const char *pid_prefix)
{
	size_t n = strlen(pid_prefix);

	if (strncmp(name, pid_prefix, n) != 0 || name[n] == '\0')
		return false;
	return strspn(name + n, "0123456789:") == strlen(name + n);
}

void xt_remove_stale_shm_regions(void)
{
	static pid_t done_for;
	pid_t self = getpid();
	char prefix[24], path[512];
	struct dirent *e;
	DIR *dir;

	if (done_for == self)	/* once a process, before any region of its own */
		return;
	done_for = self;
	dir = opendir(SHM_DIR);
	if (!dir)
		return;
	snprintf(prefix, sizeof(prefix), "%d:", (int)self);
	while ((e = readdir(dir))) {
		if (!named_for(e->d_name, prefix))
			continue;
		snprintf(path, sizeof(path), SHM_DIR "%s", e->d_name);
		unlink(path);
	}
	closedir(dir);
}
