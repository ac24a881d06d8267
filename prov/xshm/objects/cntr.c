/*
 * Counters.  Endpoints count through the peer counter interface (struct
 * fid_peer_cntr, owner_ops inc/incerr), exactly as they would count into an
 * owner provider's counter; reading or waiting drives the progress of the
 * endpoints bound to it.  Values are atomics, read without the lock;
 * progress counts, and the application adds and sets, under the domain lock
 * (poll sets compare against what its last add or set left, poll.c).
 */
#include <sched.h>
#include <stdlib.h>

#include "objects/cntr.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/peer_context.h"
#include "data/progress.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "objects/wait.h"
#include "xshm/fi_peer.h"

struct xshm_cntr {
	struct fid_cntr cntr_fid;
	struct fid_peer_cntr peer_cntr;
	struct fid_peer_cntr *sink;	/* own peer_cntr, or the owner's (FI_PEER) */
	struct xshm_domain *domain;
	_Atomic uint64_t value;
	_Atomic uint64_t err;
	uint64_t seen_value;		/* as last read, for fi_trywait */
	uint64_t seen_err;
	/*
	 * For poll sets: the values the application's last fi_cntr_set, add,
	 * seterr or adderr left (0 at open), and how many such calls there
	 * were, plus one.  Under the domain lock.
	 */
	struct xshm_cntr_seen app;
	struct xshm_ep **eps;		/* endpoints this counter progresses */
	size_t nr_eps;
	struct xshm_wait wait;
	_Atomic int ref;		/* bound endpoints and registrations */
	/* bound to a registration: progresses every endpoint of its domain */
	bool domain_wide;
};

/* What ends an fi_cntr_wait. */
struct cntr_goal {
	struct xshm_cntr *cntr;
	uint64_t threshold;
	uint64_t err_start;
};

static struct xshm_cntr *to_cntr(struct fid_cntr *cntr_fid)
{
	return xshm_container_of(cntr_fid, struct xshm_cntr, cntr_fid);
}

static void cntr_changed(struct xshm_cntr *cntr)
{
	xshm_wait_notify(&cntr->wait);
}

static void xshm_cntr_inc(struct fid_peer_cntr *peer_cntr)
{
	struct xshm_cntr *cntr =
		xshm_container_of(peer_cntr, struct xshm_cntr, peer_cntr);

	atomic_fetch_add(&cntr->value, 1);
	cntr_changed(cntr);
}

static void xshm_cntr_incerr(struct fid_peer_cntr *peer_cntr)
{
	struct xshm_cntr *cntr =
		xshm_container_of(peer_cntr, struct xshm_cntr, peer_cntr);

	atomic_fetch_add(&cntr->err, 1);
	cntr_changed(cntr);
}

static struct fi_ops_cntr_owner xshm_cntr_owner_ops = {
	.size = sizeof(struct fi_ops_cntr_owner),
	.inc = xshm_cntr_inc,
	.incerr = xshm_cntr_incerr,
};

/* Under the domain lock. */
void xshm_cntr_progress(struct xshm_cntr *cntr)
{
	struct xshm_dlist *it;

	if (!cntr->domain_wide) {
		for (size_t i = 0; i < cntr->nr_eps; i++)
			xshm_ep_progress(cntr->eps[i]);
		return;
	}
	xshm_dlist_foreach(&cntr->domain->eps, it)
		xshm_ep_progress(xshm_container_of(it, struct xshm_ep,
						   domain_link));
}

/*
 * fi_mr_bind (mr.c), under the domain lock: any endpoint of the domain
 * may serve the registration, and none need be bound to the counter, so
 * it progresses them all, and spins rather than sleeps in fi_cntr_wait.
 */
struct fid_peer_cntr *xshm_cntr_hold(struct fid *fid,
				     struct xshm_domain *domain)
{
	struct xshm_cntr *cntr = xshm_cntr_of(fid, domain);

	if (!cntr)
		return NULL;
	cntr->domain_wide = true;
	atomic_fetch_add(&cntr->ref, 1);
	return &cntr->peer_cntr;
}

void xshm_cntr_release(struct fid_peer_cntr *held)
{
	struct xshm_cntr *cntr =
		xshm_container_of(held, struct xshm_cntr, peer_cntr);

	atomic_fetch_sub(&cntr->ref, 1);
}

/* Progresses, then notes what the application is about to see. */
static void progress_and_observe(struct xshm_cntr *cntr)
{
	xshm_lock_acquire(&cntr->domain->lock);
	xshm_wait_untry(&cntr->wait);
	xshm_cntr_progress(cntr);
	cntr->seen_value = atomic_load(&cntr->value);
	cntr->seen_err = atomic_load(&cntr->err);
	xshm_lock_release(&cntr->domain->lock);
}

static uint64_t xshm_cntr_read(struct fid_cntr *cntr_fid)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	progress_and_observe(cntr);
	return atomic_load(&cntr->value);
}

static uint64_t xshm_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	progress_and_observe(cntr);
	return atomic_load(&cntr->err);
}

/*
 * The application's own change: fi_poll(3) reports a counter that changed
 * since the last fi_poll, fi_cntr_set or fi_cntr_add, so poll sets take
 * what it leaves as their new starting point.  The change and that record
 * are made together under the domain lock, where progress counts too.
 */
static void app_change(struct xshm_cntr *cntr, _Atomic uint64_t *which,
		       bool set, uint64_t value)
{
	xshm_lock_acquire(&cntr->domain->lock);
	if (set)
		atomic_store(which, value);
	else
		atomic_fetch_add(which, value);
	cntr->app.value = atomic_load(&cntr->value);
	cntr->app.err = atomic_load(&cntr->err);
	cntr->app.gen++;
	xshm_lock_release(&cntr->domain->lock);
	cntr_changed(cntr);
}

static int xshm_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	app_change(cntr, &cntr->value, false, value);
	return 0;
}

static int xshm_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	app_change(cntr, &cntr->value, true, value);
	return 0;
}

static int xshm_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	app_change(cntr, &cntr->err, false, value);
	return 0;
}

static int xshm_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	app_change(cntr, &cntr->err, true, value);
	return 0;
}

static bool goal_reached(const struct cntr_goal *goal)
{
	return atomic_load(&goal->cntr->value) >= goal->threshold ||
	       atomic_load(&goal->cntr->err) != goal->err_start;
}

/* Under the lock: progress, then whether fi_cntr_wait may return. */
static bool cntr_wait_ready(void *arg)
{
	struct cntr_goal *goal = arg;

	xshm_cntr_progress(goal->cntr);
	return goal_reached(goal);
}

/* Under the lock: anything the application has not read yet. */
static bool cntr_changed_since_read(void *arg)
{
	struct xshm_cntr *cntr = arg;

	xshm_cntr_progress(cntr);
	return atomic_load(&cntr->value) != cntr->seen_value ||
	       atomic_load(&cntr->err) != cntr->seen_err;
}

/* Done when the threshold is met; any new error ends the wait too. */
static int wait_outcome(const struct cntr_goal *goal)
{
	if (atomic_load(&goal->cntr->value) >= goal->threshold)
		return 0;
	return -FI_EAVAIL;
}

static int xshm_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			  int timeout)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);
	struct cntr_goal goal = {
		.cntr = cntr, .threshold = threshold,
		.err_start = atomic_load(&cntr->err),
	};
	int64_t deadline = xshm_wait_deadline(timeout);
	bool ready;

	if (cntr->wait.wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		xshm_lock_acquire(&cntr->domain->lock);
		xshm_wait_untry(&cntr->wait);
		ready = cntr_wait_ready(&goal);
		xshm_lock_release(&cntr->domain->lock);
		if (ready)
			return wait_outcome(&goal);
		if (!xshm_wait_remaining(deadline))
			return -FI_ETIMEDOUT;
		if (xshm_wait_can_sleep(&cntr->wait) && !cntr->domain_wide)
			xshm_wait_sleep(&cntr->wait, &cntr->domain->lock,
					cntr_wait_ready, &goal,
					xshm_wait_remaining(deadline));
		else
			sched_yield();
	}
}

static struct fi_ops_cntr xshm_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = xshm_cntr_read,
	.readerr = xshm_cntr_readerr,
	.add = xshm_cntr_add,
	.set = xshm_cntr_set,
	.wait = xshm_cntr_wait,
	.adderr = xshm_cntr_adderr,
	.seterr = xshm_cntr_seterr,
};

int xshm_cntr_trywait(struct fid *fid)
{
	struct xshm_cntr *cntr =
		xshm_container_of(fid, struct xshm_cntr, cntr_fid.fid);

	if (!xshm_wait_can_sleep(&cntr->wait))
		return -FI_EINVAL;
	return xshm_wait_try(&cntr->wait, &cntr->domain->lock,
			     cntr_changed_since_read, cntr);
}

static int xshm_cntr_close(struct fid *fid)
{
	struct xshm_cntr *cntr =
		xshm_container_of(fid, struct xshm_cntr, cntr_fid.fid);

	if (atomic_load(&cntr->ref))
		return -FI_EBUSY;
	atomic_fetch_sub(&cntr->domain->ref, 1);
	xshm_wait_fini(&cntr->wait);
	free(cntr->eps);
	free(cntr);
	return 0;
}

static int xshm_cntr_control(struct fid *fid, int command, void *arg)
{
	struct xshm_cntr *cntr =
		xshm_container_of(fid, struct xshm_cntr, cntr_fid.fid);

	switch (command) {
	case FI_GETWAIT:
		return xshm_wait_get_fd(&cntr->wait, arg);
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *) arg = cntr->wait.wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops xshm_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_cntr_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_cntr_control,
	.ops_open = xshm_fid_no_ops_open,
};

/* Imported counter: reading only drives progress; the owner keeps the values. */
static uint64_t import_read(struct fid_cntr *cntr_fid)
{
	struct xshm_cntr *cntr = to_cntr(cntr_fid);

	xshm_lock_acquire(&cntr->domain->lock);
	xshm_cntr_progress(cntr);
	xshm_lock_release(&cntr->domain->lock);
	return 0;
}

static uint64_t import_readerr(struct fid_cntr *cntr_fid)
{
	return (uint64_t) -FI_ENOSYS;
}

static int import_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	return -FI_ENOSYS;
}

static int import_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
		       int timeout)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cntr xshm_cntr_import_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = import_read,
	.readerr = import_readerr,
	.add = import_set,
	.set = import_set,
	.wait = import_wait,
	.adderr = import_set,
	.seterr = import_set,
};

static int import_owner(struct xshm_cntr *cntr, void *context)
{
	struct fi_peer_cntr_context *peer = context;

	if (!XSHM_CONTEXT_OK(peer, cntr) || !peer->cntr->owner_ops)
		return -FI_EINVAL;
	cntr->sink = peer->cntr;
	cntr->cntr_fid.ops = &xshm_cntr_import_ops;
	return 0;
}

static int check_attr(const struct fi_cntr_attr *attr)
{
	if (attr->flags & ~FI_PEER)
		return -FI_EINVAL;
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_FD:
	case FI_WAIT_YIELD:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int xshm_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		   struct fid_cntr **cntr_out, void *context)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	const struct fi_cntr_attr defaults = { .events = FI_CNTR_EVENTS_COMP };
	const struct fi_cntr_attr *use = attr ? attr : &defaults;
	struct xshm_cntr *cntr;
	int ret;

	if (!cntr_out)
		return -FI_EINVAL;
	ret = check_attr(use);
	if (ret)
		return ret;
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	ret = xshm_wait_init(&cntr->wait, use->wait_obj);
	if (ret) {
		free(cntr);
		return ret;
	}
	cntr->domain = domain;
	cntr->app.gen = 1;	/* a poll set's first look starts from here */
	/* libfabric 1.17 has no FI_CLASS_PEER_CNTR */
	cntr->peer_cntr.fid.fclass = FI_CLASS_CNTR;
	cntr->peer_cntr.owner_ops = &xshm_cntr_owner_ops;
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &xshm_cntr_fi_ops;
	cntr->cntr_fid.ops = &xshm_cntr_ops;
	cntr->sink = &cntr->peer_cntr;
	if ((use->flags & FI_PEER) && import_owner(cntr, context)) {
		xshm_wait_fini(&cntr->wait);
		free(cntr);
		return -FI_EINVAL;
	}
	atomic_fetch_add(&domain->ref, 1);
	*cntr_out = &cntr->cntr_fid;
	return 0;
}

/* The counter fid names, if it is one of xshm's of that domain; else NULL. */
struct xshm_cntr *xshm_cntr_of(struct fid *fid, struct xshm_domain *domain)
{
	struct xshm_cntr *cntr;

	if (fid->fclass != FI_CLASS_CNTR || fid->ops != &xshm_cntr_fi_ops)
		return NULL;
	cntr = xshm_container_of(fid, struct xshm_cntr, cntr_fid.fid);
	return cntr->domain == domain ? cntr : NULL;
}

/* Poll sets (poll.c): only counters of their domain whose values xshm keeps. */
int xshm_cntr_poll_join(struct fid *fid, struct xshm_domain *domain,
			struct xshm_cntr **cntr_out)
{
	struct xshm_cntr *cntr = xshm_cntr_of(fid, domain);

	if (!cntr)
		return -FI_EINVAL;
	if (cntr->sink != &cntr->peer_cntr)
		return -FI_ENOSYS;
	atomic_fetch_add(&cntr->ref, 1);
	*cntr_out = cntr;
	return 0;
}

void xshm_cntr_poll_leave(struct xshm_cntr *cntr)
{
	atomic_fetch_sub(&cntr->ref, 1);
}

bool xshm_cntr_poll_changed(struct xshm_cntr *cntr,
			    struct xshm_cntr_seen *seen)
{
	uint64_t value = atomic_load(&cntr->value);
	uint64_t err = atomic_load(&cntr->err);
	bool changed;

	if (seen->gen != cntr->app.gen)
		*seen = cntr->app;
	changed = value != seen->value || err != seen->err;
	seen->value = value;
	seen->err = err;
	return changed;
}

static int add_ep(struct xshm_cntr *cntr, struct xshm_ep *ep)
{
	struct xshm_ep **eps;

	for (size_t i = 0; i < cntr->nr_eps; i++)
		if (cntr->eps[i] == ep)
			return 0;
	eps = realloc(cntr->eps, (cntr->nr_eps + 1) * sizeof(*eps));
	if (!eps)
		return -FI_ENOMEM;
	cntr->eps = eps;
	if (xshm_wait_add_ep(&cntr->wait, ep))
		return -FI_ENOMEM;
	eps[cntr->nr_eps++] = ep;
	atomic_fetch_add(&cntr->ref, 1);
	return 0;
}

static void remove_ep(struct xshm_cntr *cntr, struct xshm_ep *ep)
{
	for (size_t i = 0; i < cntr->nr_eps; i++) {
		if (cntr->eps[i] == ep) {
			xshm_wait_remove_ep(&cntr->wait, ep);
			cntr->eps[i] = cntr->eps[--cntr->nr_eps];
			atomic_fetch_sub(&cntr->ref, 1);
			return;
		}
	}
}

/* The flag of fi_ep_bind each of ep->rma_cntr counts for. */
static const uint64_t rma_cntr_flag[XSHM_RMA_CNTRS] = {
	[XSHM_CNTR_WRITE] = FI_WRITE,
	[XSHM_CNTR_READ] = FI_READ,
	[XSHM_CNTR_REMOTE_WRITE] = FI_REMOTE_WRITE,
	[XSHM_CNTR_REMOTE_READ] = FI_REMOTE_READ,
};

#define CNTR_RMA_EVENTS	(FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE)

/* Whether a counter is bound already for one of flags. */
static bool bound_for(const struct xshm_ep *ep, uint64_t flags)
{
	if (((flags & FI_SEND) && ep->tx_cntr) ||
	    ((flags & FI_RECV) && ep->rx_cntr))
		return true;
	for (int i = 0; i < XSHM_RMA_CNTRS; i++)
		if ((flags & rma_cntr_flag[i]) && ep->rma_cntr[i])
			return true;
	return false;
}

/*
 * Under the domain lock (fi_ep_bind holds it).  The RMA flags are taken
 * whatever the endpoint's caps, as libfabric's providers take them
 * (fabtests' ubertest binds FI_TRANSMIT | FI_READ | FI_WRITE).
 */
int xshm_cntr_bind_ep(struct fid *cntr_fid, struct xshm_ep *ep, uint64_t flags)
{
	struct xshm_cntr *cntr = xshm_cntr_of(cntr_fid, ep->domain);
	int ret;

	if (!cntr || !flags ||
	    (flags & ~(FI_SEND | FI_RECV | CNTR_RMA_EVENTS)))
		return -FI_EINVAL;
	if (bound_for(ep, flags))
		return -FI_EINVAL;
	ret = add_ep(cntr, ep);
	if (ret)
		return ret;
	if (flags & FI_SEND) {
		ep->tx_cntr_obj = cntr;
		ep->tx_cntr = cntr->sink;
	}
	if (flags & FI_RECV) {
		ep->rx_cntr_obj = cntr;
		ep->rx_cntr = cntr->sink;
	}
	for (int i = 0; i < XSHM_RMA_CNTRS; i++) {
		if (flags & rma_cntr_flag[i]) {
			ep->rma_cntr_obj[i] = cntr;
			ep->rma_cntr[i] = cntr->sink;
		}
	}
	return 0;
}

/* Each counter once, whatever it was bound for. */
static void unbind_once(struct xshm_ep *ep, struct xshm_cntr *cntr)
{
	if (!cntr)
		return;
	if (ep->tx_cntr_obj == cntr)
		ep->tx_cntr_obj = NULL;
	if (ep->rx_cntr_obj == cntr)
		ep->rx_cntr_obj = NULL;
	for (int i = 0; i < XSHM_RMA_CNTRS; i++)
		if (ep->rma_cntr_obj[i] == cntr)
			ep->rma_cntr_obj[i] = NULL;
	remove_ep(cntr, ep);
}

/* Under the domain lock, before the endpoint's region goes. */
void xshm_cntr_unbind_ep(struct xshm_ep *ep)
{
	unbind_once(ep, ep->tx_cntr_obj);
	unbind_once(ep, ep->rx_cntr_obj);
	for (int i = 0; i < XSHM_RMA_CNTRS; i++) {
		unbind_once(ep, ep->rma_cntr_obj[i]);
		ep->rma_cntr[i] = NULL;
	}
	ep->tx_cntr = ep->rx_cntr = NULL;
}
