/*
 * Dead region owners.  A process killed without closing its endpoint leaves
 * its region mapped by its peers and its file in /dev/shm, both still
 * claiming to be open.  The owner's pid and start time, copied from the
 * header when a peer first uses the region, tell whether it still runs; a
 * peer that finds it dead retires the region: it removes the file if the
 * name still belongs to that owner, and marks the region closed so that
 * every process mapping it stops using it (region.h: xshm_region_is_open).
 */
#ifndef XSHM_SHM_LIVENESS_H
#define XSHM_SHM_LIVENESS_H

#include <stdbool.h>
#include <stdint.h>

#include "region.h"

struct xshm_owner {
	int32_t pid;			/* 0: unknown */
	uint64_t start_time;
};

/* A private copy of the owner recorded in a mapped region's header. */
struct xshm_owner xshm_region_owner(const struct xshm_region *region);

static inline bool xshm_owner_same(struct xshm_owner a, struct xshm_owner b)
{
	return a.pid == b.pid && a.start_time == b.start_time;
}

/*
 * False once the process is gone (or its pid now belongs to another one).
 * An unknown owner (pid 0) counts as alive: it is never declared dead.
 */
bool xshm_owner_alive(struct xshm_owner owner);

/*
 * The owner of a mapped region is dead: unlink the region's name if it
 * still names that owner's file, and mark the region closed.
 */
void xshm_region_retire(struct xshm_region *region, struct xshm_owner dead);

/* Marks the region file open (writable) as fd closed for whoever maps it. */
bool xshm_region_file_mark_closed(int fd);

#endif
