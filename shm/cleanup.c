/*
 * Registered names live in slots that are never freed, only reused, so a
 * handler can walk the list at any moment.  A slot records the pid that
 * registered it: a forked child inherits the list (and the handlers) but
 * must not remove its parent's regions.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
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

static const int cleanup_signals[] = {
	SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGABRT, SIGSEGV, SIGBUS,
};

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

/* SA_RESETHAND made the disposition SIG_DFL again: dying is re-raising. */
static void unlink_and_die(int sig)
{
	pid_t self = getpid();
	struct xshm_cleanup_slot *slot;

	for (slot = atomic_load(&slots); slot; slot = slot->next)
		if (atomic_load_explicit(&slot->state, memory_order_acquire) ==
		    SLOT_ACTIVE && slot->pid == self)
			unlink(slot->path);
	raise(sig);
}

static void install_once(void)
{
	struct sigaction action = {
		.sa_handler = unlink_and_die,
		.sa_flags = SA_RESETHAND,
	};
	struct sigaction old;

	sigemptyset(&action.sa_mask);
	for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(*cleanup_signals);
	     i++) {
		int sig = cleanup_signals[i];

		if (sigaction(sig, NULL, &old) == 0 && !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == SIG_DFL)
			sigaction(sig, &action, NULL);
	}
}

void xshm_cleanup_install_signals(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, install_once);
}

/*
 * The provider is about to be unloaded (libfabric dlcloses it at exit):
 * a handler left installed would jump into unmapped code, and the slots
 * would outlive the only pointer to them.
 */
void xshm_cleanup_fini(void)
{
	struct xshm_cleanup_slot *slot;
	struct sigaction old;

	for (size_t i = 0; i < sizeof(cleanup_signals) / sizeof(*cleanup_signals);
	     i++)
		if (sigaction(cleanup_signals[i], NULL, &old) == 0 &&
		    !(old.sa_flags & SA_SIGINFO) &&
		    old.sa_handler == unlink_and_die)
			signal(cleanup_signals[i], SIG_DFL);
	slot = atomic_exchange(&slots, NULL);
	while (slot) {
		struct xshm_cleanup_slot *next = slot->next;

		free(slot);
		slot = next;
	}
}
