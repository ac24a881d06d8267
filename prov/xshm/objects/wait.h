/*
 * Wait sets (wait.c): how a CQ or counter opened with FI_WAIT_UNSPEC or
 * FI_WAIT_FD sleeps.  An epoll fd over the doorbells of the endpoints it
 * serves, plus an eventfd for local wakeups (a completion written by another
 * thread, fi_cq_signal); FI_GETWAIT hands out the epoll fd.  FI_WAIT_NONE
 * and FI_WAIT_YIELD sets hold no fd and never sleep.  Unless noted, call
 * with the domain lock held.
 */
#ifndef XSHM_WAIT_H
#define XSHM_WAIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <rdma/fabric.h>
#include <rdma/fi_eq.h>

#include "base/lock.h"

struct xshm_ep;
struct xshm_wait_member;

struct xshm_wait {
	enum fi_wait_obj wait_obj;
	int epoll_fd;			/* -1: never sleeps */
	int event_fd;
	_Atomic int sleepers;		/* sleeping threads, + 1 if try_armed */
	bool try_armed;			/* by fi_trywait, until the next read */
	struct xshm_wait_member *members;
	size_t nr_members;
};

/* Progresses the object; true if its waiter has something (under the lock). */
typedef bool (*xshm_wait_ready_fn)(void *obj);

int xshm_wait_init(struct xshm_wait *wait, enum fi_wait_obj wait_obj);
void xshm_wait_fini(struct xshm_wait *wait);
bool xshm_wait_can_sleep(const struct xshm_wait *wait);
int xshm_wait_add_ep(struct xshm_wait *wait, struct xshm_ep *ep);
void xshm_wait_remove_ep(struct xshm_wait *wait, struct xshm_ep *ep);
/*
 * Without the lock: sleeps until woken or timeout_ms (< 0: no limit) unless
 * ready() already holds once armed.  The caller re-checks and loops.
 */
void xshm_wait_sleep(struct xshm_wait *wait, struct xshm_lock *lock,
		     xshm_wait_ready_fn ready, void *obj, int timeout_ms);
/* Without the lock: fi_trywait.  0 leaves the set armed; else -FI_EAGAIN. */
int xshm_wait_try(struct xshm_wait *wait, struct xshm_lock *lock,
		  xshm_wait_ready_fn ready, void *obj);
void xshm_wait_untry_slow(struct xshm_wait *wait);
/* Timeouts in ms as the API gives them (< 0: none) to a deadline and back. */
int64_t xshm_wait_deadline(int timeout_ms);
int xshm_wait_remaining(int64_t deadline);
/* FI_GETWAIT: the fd for FI_WAIT_FD, else -FI_ENODATA. Any thread. */
int xshm_wait_get_fd(const struct xshm_wait *wait, void *arg);
/* Any thread: wakes the sleepers. */
void xshm_wait_wake(struct xshm_wait *wait);

/* The object was read: what fi_trywait armed is no longer needed. */
static inline void xshm_wait_untry(struct xshm_wait *wait)
{
	if (wait->try_armed)
		xshm_wait_untry_slow(wait);
}

/*
 * After publishing a completion or count.  The sleeper arms (sleepers++)
 * before it checks the object; a CQ publishes and checks under the domain
 * lock, a counter with sequentially consistent atomics, so either the
 * sleeper sees the new entry or this sees the sleeper.
 */
static inline void xshm_wait_notify(struct xshm_wait *wait)
{
	if (atomic_load(&wait->sleepers))
		xshm_wait_wake(wait);
}

#endif
