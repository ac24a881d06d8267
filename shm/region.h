/*
 * Named shared-memory regions in /dev/shm, one per endpoint.
 *
 * The owner creates "/xshm-<uid>-<ep_id as 16 hex digits>" with O_EXCL and
 * mode 0600, lays out its header, inbound ring and buffer pool, and unlinks
 * it on close.  Peers open it by ep_id, check that it belongs to their user
 * and validate every header field before use.
 */
#ifndef XSHM_SHM_REGION_H
#define XSHM_SHM_REGION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cleanup.h"
#include "layout.h"
#include "mr_pub.h"
#include "pool.h"
#include "ring.h"

struct xshm_region_geom {
	uint32_t ring_cells;	/* power of two */
	uint32_t pool_bufs;
	uint32_t buf_size;	/* multiple of XSHM_CACHE_LINE */
	uint64_t auth_digest;	/* recorded in the header; 0: no auth key */
	uint32_t features;	/* XSHM_FEATURE_*, recorded in the header */
	bool numa_local;	/* on the memory node of the creating CPU */
};

/* A process-local handle on a mapped region (owned or a peer's). */
struct xshm_region {
	void *base;
	size_t size;
	int owner;			/* created it: unlinks on close */
	uint64_t ep_id;
	uint64_t node_id;
	char name[XSHM_NAME_MAX];
	struct xshm_region_hdr *hdr;
	struct xshm_ring_ref ring;
	struct xshm_pool_ref pool;
	struct xshm_mr_pub *mr_pub;	/* published registrations (mr_pub.h) */
	struct xshm_mr_pub_seen mr_seen;	/* this process's last check of them */
	struct xshm_cleanup_slot *cleanup;	/* owner: unlinked on signals */
	uint64_t mapping_id;	/* unique to this mapping in this process */
};

void xshm_region_name(char *buf, size_t len, uint64_t ep_id);

/*
 * Create and map the region of endpoint ep_id.  Returns 0, -EEXIST when the
 * name is taken, -EINVAL for an impossible geom, or another negative errno.
 */
int xshm_region_create(struct xshm_region *region, uint64_t node_id,
		       uint64_t ep_id, const struct xshm_region_geom *geom);

/*
 * Map the region of a peer endpoint.  Returns 0; -ENOENT when it does not
 * exist; -EACCES when it belongs to another user or is not mode 0600;
 * -EAGAIN when its owner has not finished creating it (size still 0, or
 * not marked ready); -EPROTO for a bad magic, layout version, size or
 * geometry; other errors of shm_open (-ELOOP for a symbolic link, -EINVAL
 * for a directory).
 */
int xshm_region_open(struct xshm_region *region, uint64_t ep_id);

/*
 * False once the owner closed it (peers may still have it mapped).  Inline:
 * every send and every message received asks.
 */
static inline bool xshm_region_is_open(const struct xshm_region *region)
{
	return atomic_load_explicit(&region->hdr->ready, memory_order_relaxed);
}

/* Unmap; the owner also unlinks the name and marks the region closed. */
void xshm_region_close(struct xshm_region *region);

/*
 * Whether the endpoint ep_id has no live region any more: none by its name,
 * or one whose owner process is dead.  A region being created counts as live.
 */
bool xshm_region_gone(uint64_t ep_id);

/*
 * Unlink this user's regions whose owner process is gone (pid no longer
 * alive, or alive with another start time).  Returns how many it removed.
 */
int xshm_region_reclaim_stale(void);

/*
 * Calls reclaim(dirfd, name) on every file of /dev/shm whose name starts
 * with "<kind>-<this user's uid>-", and returns how many of those calls
 * returned true.  The stale-file sweeps of regions and named AVs.
 */
int xshm_shm_files_reclaim(const char *kind,
			   bool (*reclaim)(int dirfd, const char *name));

#endif
