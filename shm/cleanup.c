/*
 * Registered names live in slots that are never freed, only reused, so a
 * handler can walk the list at any moment.  A slot records the pid that
 * registered it: a forked child inherits the list (and the handlers) but
 * must not remove its parent's regions.
 *
 * The handler unlinks before it passes the signal on, since what it passes
 * it to may never return (exit, _exit, or a re-raise to SIG_DFL).  Where
 * that previous handler returns and the process lives on, its region names
 * are gone: the peers that have it mapped go on, new ones cannot reach it.
 * Signals that are ignored get no handler at all: an ignored SIGHUP must not
 * remove the regions of a process that goes on using them, and SIG_IGN
 * (unlike a handler) survives exec and never interrupts a system call.
 *
 * SIGINT, SIGTERM and SIGHUP ask a process to go; whatever handles them
 * already is chained.  SIGQUIT, SIGABRT, SIGSEGV and SIGBUS get a handler
 * only where nobody has one: theirs belong to crash reporters, sanitizers
 * and runtimes that use faults (or SIGQUIT's dumps) and go on, which must
 * not cost the process its regions.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cleanup.h"
#include "layout.h"

#define SHM_DIR		"/dev/shm"

enum { SLOT_FREE, SLOT_FILLING, SLOT_ACTIVE };

struct xshm_cleanup_slot {
	_Atomic int state;
	pid_t pid;
	char path[sizeof(SHM_DIR) + XSHM_NAME_MAX];
	struct xshm_cleanup_slot *next;
};

static _Atomic(struct xshm_cleanup_slot *) slots;

/* One signal: the disposition ours replaced, while ours is in its chain. */
struct chain {
	int sig;
	bool chains_handlers;	/* in front of a handler, not only SIG_DFL */
	struct sigaction prev;
	_Atomic bool live;
};

static struct chain chains[] = {
	{ .sig = SIGINT, .chains_handlers = true },
	{ .sig = SIGTERM, .chains_handlers = true },
	{ .sig = SIGHUP, .chains_handlers = true },
	{ .sig = SIGQUIT }, { .sig = SIGABRT }, { .sig = SIGSEGV },
	{ .sig = SIGBUS },
};
#define NCHAINS	(sizeof(chains) / sizeof(*chains))

/* Ours runs as the previous handler would have (its sa_mask too). */
#define PASSED_FLAGS	(SA_ONSTACK | SA_RESTART | SA_NODEFER | SA_RESETHAND)

static pthread_mutex_t install_lock = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool installed;

static struct xshm_cleanup_slot *take_free_slot(void)
{
	struct xshm_cleanup_slot *slot;

	for (slot = atomic_load(&slots); slot; slot = slot->next) {
		int free_state = SLOT_FREE;

		if (atomic_compare_exchange_strong(&slot->state, &free_state,
						   SLOT_FILLING))
			return slot;
	}
	slot = calloc(1, sizeof(*slot));
	if (!slot)
		return NULL;
	atomic_init(&slot->state, SLOT_FILLING);
	slot->next = atomic_load(&slots);
	while (!atomic_compare_exchange_weak(&slots, &slot->next, slot))
		;
	return slot;
}

struct xshm_cleanup_slot *xshm_cleanup_add(const char *name)
{
	struct xshm_cleanup_slot *slot = take_free_slot();

	if (!slot)
		return NULL;
	slot->pid = getpid();
	snprintf(slot->path, sizeof(slot->path), "%s%s", SHM_DIR, name);
	atomic_store_explicit(&slot->state, SLOT_ACTIVE, memory_order_release);
	return slot;
}

void xshm_cleanup_remove(struct xshm_cleanup_slot *slot)
{
	if (slot)
		atomic_store_explicit(&slot->state, SLOT_FREE,
				      memory_order_release);
}

/* Removing the region names on the way to the signal's previous owner. */
static struct chain *chain_of(int sig)
{
	for (size_t i = 0; i < NCHAINS; i++)
		if (chains[i].sig == sig)
			return &chains[i];
	return NULL;
}

static void unlink_own_regions(void)
{
	pid_t self = getpid();
	struct xshm_cleanup_slot *slot;

	for (slot = atomic_load(&slots); slot; slot = slot->next)
		if (atomic_load_explicit(&slot->state, memory_order_acquire) ==
		    SLOT_ACTIVE && slot->pid == self)
			unlink(slot->path);
}

/*
 * Runs with the mask and flags the previous handler asked for (see
 * install_one), so that calling it from here is what the kernel would have
 * done.  A previous SIG_DFL (every signal here terminates by default): the
 * disposition becomes SIG_DFL again and the signal is raised; blocked while
 * a handler for it runs, it kills the process as soon as that handler
 * returns (at once where the caller had SA_NODEFER).  That is also what
 * happens when a handler installed after ours, which saved ours, calls it.
 */
static void on_signal(int sig, siginfo_t *info, void *ucontext)
{
	int saved_errno = errno;
	struct chain *chain = chain_of(sig);
	const struct sigaction *prev;

	unlink_own_regions();
	if (!chain)
		goto out;
	prev = &chain->prev;
	if (prev->sa_flags & SA_SIGINFO) {
		prev->sa_sigaction(sig, info, ucontext);
	} else if (prev->sa_handler == SIG_DFL) {
		struct sigaction dfl = { .sa_handler = SIG_DFL };

		sigemptyset(&dfl.sa_mask);
		sigaction(sig, &dfl, NULL);
		raise(sig);
	} else if (prev->sa_handler != SIG_IGN) {
		prev->sa_handler(sig);
	}
out:
	errno = saved_errno;
}

static bool is_ours(const struct sigaction *action)
{
	return (action->sa_flags & SA_SIGINFO) &&
	       action->sa_sigaction == on_signal;
}

static bool is_plain(const struct sigaction *action, void (*handler)(int))
{
	return !(action->sa_flags & SA_SIGINFO) && action->sa_handler == handler;
}

static bool same_action(const struct sigaction *a, const struct sigaction *b)
{
	return a->sa_flags == b->sa_flags &&
	       (void *) a->sa_handler == (void *) b->sa_handler;
}

static bool install_one(struct chain *chain)
{
	struct sigaction cur, old, action = { .sa_sigaction = on_signal };

	if (atomic_load(&chain->live) || sigaction(chain->sig, NULL, &cur) ||
	    is_ours(&cur) || is_plain(&cur, SIG_IGN))
		return false;
	if (is_plain(&cur, SIG_DFL)) {
		action.sa_flags = SA_SIGINFO | SA_ONSTACK;
		sigemptyset(&action.sa_mask);
	} else if (chain->chains_handlers) {
		action.sa_flags = SA_SIGINFO | (cur.sa_flags & PASSED_FLAGS);
		action.sa_mask = cur.sa_mask;
	} else {
		return false;
	}
	/* Written before ours is installed; again only after fini took it out. */
	chain->prev = cur;
	if (sigaction(chain->sig, &action, &old))
		return false;
	if (!same_action(&old, &cur)) {
		/* Changed under us by another thread: theirs stands. */
		sigaction(chain->sig, &old, NULL);
		return false;
	}
	atomic_store(&chain->live, true);
	return true;
}

/*
 * libfabric dlcloses the provider at exit (and when it is unloaded itself),
 * but a handler installed after ours may have saved ours and call it later:
 * the library stays mapped once ours was installed anywhere.
 */
static void pin_library(void)
{
	Dl_info where;

	if (dladdr((void *) on_signal, &where) && where.dli_fname)
		(void) dlopen(where.dli_fname,
			      RTLD_LAZY | RTLD_NOLOAD | RTLD_NODELETE);
}

void xshm_cleanup_install_signals(void)
{
	bool any = false;

	if (atomic_load_explicit(&installed, memory_order_acquire))
		return;
	pthread_mutex_lock(&install_lock);
	if (!atomic_load(&installed)) {
		for (size_t i = 0; i < NCHAINS; i++)
			any |= install_one(&chains[i]);
		if (any)
			pin_library();
		atomic_store_explicit(&installed, true, memory_order_release);
	}
	pthread_mutex_unlock(&install_lock);
}

/*
 * Also reached from a handler that calls exit() (libinfinipath's does),
 * maybe on the thread that holds the lock to install: leaving ours in
 * place is safe, the code stays.
 */
void xshm_cleanup_fini(void)
{
	struct sigaction cur;

	if (pthread_mutex_trylock(&install_lock))
		return;
	for (size_t i = 0; i < NCHAINS; i++) {
		struct chain *chain = &chains[i];

		if (atomic_load(&chain->live) &&
		    !sigaction(chain->sig, NULL, &cur) && is_ours(&cur) &&
		    !sigaction(chain->sig, &chain->prev, NULL))
			atomic_store(&chain->live, false);
	}
	atomic_store(&installed, false);
	pthread_mutex_unlock(&install_lock);
}
