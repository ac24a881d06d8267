/*
 * A wait set: an epoll fd over the doorbells of the endpoints it serves,
 * plus an eventfd for local wakeups.  One per CQ or counter that may sleep.
 *
 * A sleeper arms the set (sleepers++, and each member endpoint's region, so
 * that senders ring its doorbell), lets the object progress and check once
 * more, and only then sleeps in epoll_wait, without the domain lock.  Peers
 * wake it through the doorbells (shm/doorbell.c explains the fence pairing),
 * threads of this process through the eventfd (xshm_wait_notify).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "objects/wait.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/provider.h"
#include "data/liveness.h"
#include "objects/ep.h"
#include "shm/doorbell.h"
#include "shm/ring.h"

#define XSHM_WAIT_EVENTS	8
/* How often a sleeper looks when something cannot ring it. */
#define XSHM_WAIT_POLL_MS	1

struct xshm_wait_member {
	struct xshm_ep *ep;
	bool registered;	/* its doorbell is in the epoll set */
	bool armed;		/* counted in its region's waiters */
	bool broken;		/* no doorbell: waiters poll instead */
};

bool xshm_wait_can_sleep(const struct xshm_wait *wait)
{
	return wait->epoll_fd >= 0;
}

static int watch_fd(int epoll_fd, int fd)
{
	struct epoll_event event = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(epoll_fd, EPOLL_CTL_ADD, fd, &event) && errno != EEXIST)
		return -errno;
	return 0;
}

int xshm_wait_init(struct xshm_wait *wait, enum fi_wait_obj wait_obj)
{
	*wait = (struct xshm_wait) {
		.wait_obj = wait_obj, .epoll_fd = -1, .event_fd = -1,
	};
	if (wait_obj != FI_WAIT_UNSPEC && wait_obj != FI_WAIT_FD)
		return 0;
	wait->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	wait->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (wait->epoll_fd < 0 || wait->event_fd < 0 ||
	    watch_fd(wait->epoll_fd, wait->event_fd)) {
		xshm_wait_fini(wait);
		return -FI_EMFILE;
	}
	return 0;
}

void xshm_wait_fini(struct xshm_wait *wait)
{
	if (wait->epoll_fd >= 0)
		close(wait->epoll_fd);
	if (wait->event_fd >= 0)
		close(wait->event_fd);
	wait->epoll_fd = wait->event_fd = -1;
	free(wait->members);
	wait->members = NULL;
	wait->nr_members = 0;
}

int xshm_wait_add_ep(struct xshm_wait *wait, struct xshm_ep *ep)
{
	struct xshm_wait_member *members;

	if (!xshm_wait_can_sleep(wait))
		return 0;
	ep->may_sleep = true;	/* advertised when its region is created */
	for (size_t i = 0; i < wait->nr_members; i++)
		if (wait->members[i].ep == ep)
			return 0;
	members = realloc(wait->members,
			  (wait->nr_members + 1) * sizeof(*members));
	if (!members)
		return -FI_ENOMEM;
	members[wait->nr_members++] = (struct xshm_wait_member) { .ep = ep };
	wait->members = members;
	return 0;
}

/* Called before the endpoint's region and doorbell go away. */
void xshm_wait_remove_ep(struct xshm_wait *wait, struct xshm_ep *ep)
{
	for (size_t i = 0; i < wait->nr_members; i++) {
		struct xshm_wait_member *member = &wait->members[i];

		if (member->ep != ep)
			continue;
		if (member->armed)
			xshm_doorbell_disarm(&ep->region);
		if (member->registered && ep->doorbell.fd >= 0)
			epoll_ctl(wait->epoll_fd, EPOLL_CTL_DEL,
				  ep->doorbell.fd, NULL);
		*member = wait->members[--wait->nr_members];
		return;
	}
}

static int register_member(struct xshm_wait *wait,
			   struct xshm_wait_member *member)
{
	struct xshm_ep *ep = member->ep;
	int ret;

	if (member->registered)
		return 0;
	if (member->broken)
		return -FI_EIO;
	ret = xshm_doorbell_open(&ep->doorbell, ep->region.ep_id);
	if (!ret)
		ret = watch_fd(wait->epoll_fd, ep->doorbell.fd);
	if (ret) {
		XSHM_WARN(FI_LOG_CQ, "doorbell of endpoint %llx: %s; polling\n",
			  (unsigned long long) ep->region.ep_id,
			  strerror(-ret));
		member->broken = true;
		return ret;
	}
	member->registered = true;
	return 0;
}

/*
 * Sends still queued, or acks not yet pushed, wait for room in a peer's
 * ring or pool, and nobody rings us when room appears.
 */
static bool has_outbound_work(const struct xshm_ep *ep)
{
	return !xshm_dlist_empty(&ep->tx_queue) ||
	       !xshm_dlist_empty(&ep->acks_out);
}

/* Arms every enabled member; false if one of them cannot wake us. */
static bool arm_members(struct xshm_wait *wait)
{
	bool wakeable = true;

	for (size_t i = 0; i < wait->nr_members; i++) {
		struct xshm_wait_member *member = &wait->members[i];

		if (!member->ep->enabled)
			continue;
		if (register_member(wait, member))
			wakeable = false;
		else if (!member->armed) {
			xshm_doorbell_arm(&member->ep->region);
			member->armed = true;
		}
		if (has_outbound_work(member->ep))
			wakeable = false;
	}
	return wakeable;
}

static bool arm(struct xshm_wait *wait)
{
	atomic_fetch_add(&wait->sleepers, 1);
	return arm_members(wait);
}

static void disarm(struct xshm_wait *wait)
{
	if (atomic_fetch_sub(&wait->sleepers, 1) != 1)
		return;
	for (size_t i = 0; i < wait->nr_members; i++) {
		struct xshm_wait_member *member = &wait->members[i];

		if (member->armed)
			xshm_doorbell_disarm(&member->ep->region);
		member->armed = false;
	}
}

/* Cells not yet consumed: progress stopped at its budget, or they are new. */
static bool rings_pending(const struct xshm_wait *wait)
{
	for (size_t i = 0; i < wait->nr_members; i++) {
		struct xshm_ep *ep = wait->members[i].ep;

		if (ep->enabled && xshm_ring_peek(&ep->region.ring))
			return true;
	}
	return false;
}

/*
 * A doorbell is shared by every wait set of its endpoint.  If its ring still
 * holds cells after we drained it, ring it again so that a thread sleeping
 * in another set is not left behind (it rings only while someone is armed).
 */
static void drain(struct xshm_wait *wait)
{
	uint64_t count;

	if (read(wait->event_fd, &count, sizeof(count)) < 0 && errno != EAGAIN)
		XSHM_WARN(FI_LOG_CQ, "eventfd read: %d\n", errno);
	for (size_t i = 0; i < wait->nr_members; i++) {
		struct xshm_ep *ep = wait->members[i].ep;

		if (!wait->members[i].registered)
			continue;
		xshm_doorbell_drain(&ep->doorbell);
		if (xshm_ring_peek(&ep->region.ring))
			xshm_doorbell_ring(&ep->region);
	}
}

static int sleep_timeout(int timeout_ms, bool wakeable)
{
	if (wakeable)
		return timeout_ms;
	if (timeout_ms < 0 || timeout_ms > XSHM_WAIT_POLL_MS)
		return XSHM_WAIT_POLL_MS;
	return timeout_ms;
}

/* A peer that dies rings no doorbell: wake for the liveness sweep. */
static int liveness_timeout(const struct xshm_wait *wait, int timeout_ms)
{
	for (size_t i = 0; i < wait->nr_members; i++) {
		int sweep_ms = xshm_liveness_sleep_ms(wait->members[i].ep);

		if (sweep_ms >= 0 && (timeout_ms < 0 || sweep_ms < timeout_ms))
			timeout_ms = sweep_ms;
	}
	return timeout_ms;
}

void xshm_wait_sleep(struct xshm_wait *wait, struct xshm_lock *lock,
		     xshm_wait_ready_fn ready, void *obj, int timeout_ms)
{
	struct epoll_event events[XSHM_WAIT_EVENTS];
	bool wakeable;
	int woken = 0;

	xshm_lock_acquire(lock);
	wakeable = arm(wait);
	if (!ready(obj) && !rings_pending(wait)) {
		xshm_lock_release(lock);
		woken = epoll_wait(wait->epoll_fd, events, XSHM_WAIT_EVENTS,
				   sleep_timeout(liveness_timeout(wait, timeout_ms),
						 wakeable));
		xshm_lock_acquire(lock);
	}
	disarm(wait);
	if (woken > 0)
		drain(wait);
	xshm_lock_release(lock);
}

/*
 * Arm, drain what rang before, then check: a ring after the drain is seen
 * either by the check or by the application's poll.
 */
int xshm_wait_try(struct xshm_wait *wait, struct xshm_lock *lock,
		  xshm_wait_ready_fn ready, void *obj)
{
	bool wakeable;
	int ret = 0;

	xshm_lock_acquire(lock);
	if (!wait->try_armed) {
		atomic_fetch_add(&wait->sleepers, 1);
		wait->try_armed = true;
	}
	wakeable = arm_members(wait);
	drain(wait);
	if (!wakeable || ready(obj) || rings_pending(wait)) {
		xshm_wait_untry_slow(wait);
		ret = -FI_EAGAIN;
	}
	xshm_lock_release(lock);
	return ret;
}

void xshm_wait_untry_slow(struct xshm_wait *wait)
{
	wait->try_armed = false;
	disarm(wait);
}

static int64_t now_ms(void)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (int64_t) now.tv_sec * 1000 + now.tv_nsec / 1000000;
}

int64_t xshm_wait_deadline(int timeout_ms)
{
	return timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
}

/* Milliseconds left, at least 0; -1 without a deadline. */
int xshm_wait_remaining(int64_t deadline)
{
	int64_t left;

	if (deadline < 0)
		return -1;
	left = deadline - now_ms();
	return left > 0 ? (int) left : 0;
}

int xshm_wait_get_fd(const struct xshm_wait *wait, void *arg)
{
	if (!arg)
		return -FI_EINVAL;
	if (wait->wait_obj != FI_WAIT_FD)
		return -FI_ENODATA;
	*(int *) arg = wait->epoll_fd;
	return 0;
}

void xshm_wait_wake(struct xshm_wait *wait)
{
	uint64_t one = 1;

	if (wait->event_fd < 0)
		return;
	if (write(wait->event_fd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		XSHM_WARN(FI_LOG_CQ, "eventfd write: %d\n", errno);
}
