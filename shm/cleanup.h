/*
 * Removing this process's region names when it is killed by a signal.
 *
 * The regions an endpoint owns are registered by name.  A handler for the
 * usual termination signals unlinks every name registered by this process
 * (async-signal-safe: only loads, unlink, sigaction and raise), then passes
 * the signal on to what was there before it: a handler installed earlier
 * (by libfabric, a library it loads, or the application) is called as the
 * kernel would have called it, and the default action kills the process of
 * the signal as it would have.  Regions left by SIGKILL are reclaimed by the
 * next process that sweeps (region.h, xshm_region_reclaim_stale).
 */
#ifndef XSHM_SHM_CLEANUP_H
#define XSHM_SHM_CLEANUP_H

struct xshm_cleanup_slot;

/* Register "/name" (a shm_open name); NULL when out of memory. */
struct xshm_cleanup_slot *xshm_cleanup_add(const char *name);
void xshm_cleanup_remove(struct xshm_cleanup_slot *slot);

/*
 * Install the handler, for SIGINT, SIGTERM and SIGHUP in front of whatever
 * disposition they have but SIG_IGN, and for SIGQUIT, SIGABRT, SIGSEGV and
 * SIGBUS only where the disposition is SIG_DFL.  The first call does the
 * work; later ones return at once (until xshm_cleanup_fini).  The library
 * holding this code is pinned in memory (RTLD_NODELETE) once a handler is
 * installed: a handler installed after ours may call ours at any time.
 */
void xshm_cleanup_install_signals(void);

/*
 * The provider is being unloaded: every signal whose disposition is still
 * our handler gets back the one it replaced.  Where something was installed
 * after ours, ours stays in its chain (the code stays mapped) and goes on
 * working.  The slots stay: a handler may still walk them.
 */
void xshm_cleanup_fini(void);

#endif
