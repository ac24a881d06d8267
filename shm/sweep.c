/* The region owner's maintenance pass (sweep.h). */
#include <string.h>
#include <time.h>

#include "sweep.h"

void xshm_sweep_init(struct xshm_sweep *sweep)
{
	memset(sweep, 0, sizeof(*sweep));
}

uint64_t xshm_sweep_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t) ts.tv_sec * 1000000000ULL + (uint64_t) ts.tv_nsec;
}

static int skip_dead_cells(struct xshm_sweep *sweep,
			   struct xshm_region *region, uint64_t now_ns)
{
	int skipped = 0;

	while (xshm_ring_reap_stalled(&region->ring, &sweep->ring_stall, now_ns))
		skipped++;
	return skipped;
}

static bool watched(const struct xshm_sweep *sweep, uint64_t ep_id)
{
	for (size_t i = 0; i < sweep->ngone; i++)
		if (sweep->gone[i].ep_id == ep_id)
			return true;
	return false;
}

/*
 * A borrower found gone commits nothing any more: every command it did
 * commit sits before the ring's tail as it is now.
 */
static void watch_gone_borrowers(struct xshm_sweep *sweep,
				 struct xshm_region *region)
{
	uint64_t borrowers[XSHM_SWEEP_GONE_MAX];
	size_t count = xshm_pool_borrowers(&region->pool, borrowers,
					   XSHM_SWEEP_GONE_MAX);

	for (size_t i = 0; i < count && sweep->ngone < XSHM_SWEEP_GONE_MAX; i++) {
		if (borrowers[i] == region->ep_id || watched(sweep, borrowers[i]) ||
		    !xshm_region_gone(borrowers[i]))
			continue;
		sweep->gone[sweep->ngone].ep_id = borrowers[i];
		sweep->gone[sweep->ngone].drain_pos = atomic_load_explicit(
			&region->ring.ring->tail, memory_order_relaxed);
		sweep->ngone++;
	}
}

/* Buffers of a gone borrower whose commands have all been consumed. */
static int reclaim_drained(struct xshm_sweep *sweep, struct xshm_region *region)
{
	uint64_t head = atomic_load_explicit(&region->ring.ring->head,
					     memory_order_relaxed);
	int back = 0;
	size_t i = 0;

	while (i < sweep->ngone) {
		if ((int64_t) (head - sweep->gone[i].drain_pos) < 0) {
			i++;
			continue;
		}
		back += xshm_pool_reclaim_owner(&region->pool,
						sweep->gone[i].ep_id);
		sweep->gone[i] = sweep->gone[--sweep->ngone];
	}
	return back;
}

int xshm_sweep_run(struct xshm_sweep *sweep, struct xshm_region *region,
		   uint64_t now_ns)
{
	int done = skip_dead_cells(sweep, region, now_ns);

	done += xshm_pool_recover_pending(&region->pool);
	watch_gone_borrowers(sweep, region);
	return done + reclaim_drained(sweep, region);
}
