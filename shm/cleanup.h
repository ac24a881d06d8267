/*
 * Removing this process's region names when it is killed by a signal.
 *
 * The regions an endpoint owns are registered by name.  Handlers for the
 * usual termination signals unlink every name registered by this process
 * (async-signal-safe: only loads and unlink), then die of the signal as
 * they would have.  Regions left by SIGKILL are reclaimed by the next
 * process that sweeps (region.h, xshm_region_reclaim_stale).
 */
#ifndef XSHM_SHM_CLEANUP_H
#define XSHM_SHM_CLEANUP_H

struct xshm_cleanup_slot;

/* Register "/name" (a shm_open name); NULL when out of memory. */
struct xshm_cleanup_slot *xshm_cleanup_add(const char *name);
void xshm_cleanup_remove(struct xshm_cleanup_slot *slot);

/*
 * Install the handlers, once per process, for each of the signals whose
 * disposition is SIG_DFL at the first call; the others are left alone.
 */
void xshm_cleanup_install_signals(void);

/* Before the code goes away: our handlers reset to SIG_DFL, slots freed. */
void xshm_cleanup_fini(void);

#endif
