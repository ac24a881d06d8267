/* xlink's counters: two atomics, moved by both paths and by the application. */
#include <sched.h>
#include <stdlib.h>

#include "cntr.h"
#include "deadline.h"

static struct fi_ops xlink_cntr_fi_ops;

static struct xlink_cntr *to_cntr(struct fid_cntr *cntr_fid)
{
	return xlink_container_of(cntr_fid, struct xlink_cntr, cntr_fid);
}

static void progress(struct xlink_domain *domain)
{
	xlink_domain_lock(domain);
	xlink_domain_progress(domain);
	xlink_domain_unlock(domain);
}

void xlink_cntr_inc(struct xlink_cntr *cntr)
{
	atomic_fetch_add(&cntr->value, 1);
}

void xlink_cntr_incerr(struct xlink_cntr *cntr)
{
	atomic_fetch_add(&cntr->err, 1);
}

static uint64_t xlink_cntr_read(struct fid_cntr *cntr_fid)
{
	struct xlink_cntr *cntr = to_cntr(cntr_fid);

	progress(cntr->domain);
	return atomic_load(&cntr->value);
}

static uint64_t xlink_cntr_readerr(struct fid_cntr *cntr_fid)
{
	struct xlink_cntr *cntr = to_cntr(cntr_fid);

	progress(cntr->domain);
	return atomic_load(&cntr->err);
}

static int xlink_cntr_add(struct fid_cntr *cntr_fid, uint64_t value)
{
	atomic_fetch_add(&to_cntr(cntr_fid)->value, value);
	return 0;
}

static int xlink_cntr_set(struct fid_cntr *cntr_fid, uint64_t value)
{
	atomic_store(&to_cntr(cntr_fid)->value, value);
	return 0;
}

static int xlink_cntr_adderr(struct fid_cntr *cntr_fid, uint64_t value)
{
	atomic_fetch_add(&to_cntr(cntr_fid)->err, value);
	return 0;
}

static int xlink_cntr_seterr(struct fid_cntr *cntr_fid, uint64_t value)
{
	atomic_store(&to_cntr(cntr_fid)->err, value);
	return 0;
}

/* No wait object: waiting polls, yielding the core between tries. */
static int xlink_cntr_wait(struct fid_cntr *cntr_fid, uint64_t threshold,
			   int timeout)
{
	struct xlink_cntr *cntr = to_cntr(cntr_fid);
	int64_t deadline = xlink_deadline(timeout);
	uint64_t err = atomic_load(&cntr->err);

	if (cntr->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		progress(cntr->domain);
		if (atomic_load(&cntr->value) >= threshold)
			return 0;
		if (atomic_load(&cntr->err) != err)
			return -FI_EAVAIL;
		if (xlink_expired(deadline))
			return -FI_ETIMEDOUT;
		sched_yield();
	}
}

static struct fi_ops_cntr xlink_cntr_ops = {
	.size = sizeof(struct fi_ops_cntr),
	.read = xlink_cntr_read,
	.readerr = xlink_cntr_readerr,
	.add = xlink_cntr_add,
	.set = xlink_cntr_set,
	.wait = xlink_cntr_wait,
	.adderr = xlink_cntr_adderr,
	.seterr = xlink_cntr_seterr,
};

static int xlink_cntr_close(struct fid *fid)
{
	struct xlink_cntr *cntr =
		xlink_container_of(fid, struct xlink_cntr, cntr_fid.fid);
	struct xlink_domain *domain = cntr->domain;
	int ret;

	if (atomic_load(&cntr->ref) > 0)
		return -FI_EBUSY;
	if (cntr->peer_shadow) {
		xlink_domain_lock(domain);
		ret = fi_close(&cntr->peer_shadow->fid);
		xlink_domain_unlock(domain);
		if (ret)
			return ret;
	}
	free(cntr);
	atomic_fetch_sub(&domain->ref, 1);
	return 0;
}

static struct fi_ops xlink_cntr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xlink_cntr_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

struct xlink_cntr *xlink_cntr_of(struct fid *fid, struct xlink_domain *domain)
{
	struct xlink_cntr *cntr;

	if (!fid || fid->fclass != FI_CLASS_CNTR || fid->ops != &xlink_cntr_fi_ops)
		return NULL;
	cntr = xlink_container_of(fid, struct xlink_cntr, cntr_fid.fid);
	return cntr->domain == domain ? cntr : NULL;
}

static void peer_inc(struct fid_peer_cntr *peer_cntr)
{
	struct xlink_cntr *cntr = xlink_container_of(peer_cntr, struct xlink_cntr, peer_cntr);

	cntr->domain->peer_events++;
	xlink_cntr_inc(cntr);
}

static void peer_incerr(struct fid_peer_cntr *peer_cntr)
{
	struct xlink_cntr *cntr = xlink_container_of(peer_cntr, struct xlink_cntr, peer_cntr);

	cntr->domain->peer_events++;
	xlink_cntr_incerr(cntr);
}

/* The peer keeps the fid_peer_cntr pointer, not the context that carries it. */
static int open_peer_shadow(struct xlink_cntr *cntr)
{
	struct fi_cntr_attr attr = {
		.events = FI_CNTR_EVENTS_COMP,
		.wait_obj = FI_WAIT_NONE,
		.flags = FI_PEER,
	};
	struct fi_peer_cntr_context peer_context = {
		sizeof(peer_context), &cntr->peer_cntr };
	int ret;

	cntr->peer_ops = (struct fi_ops_cntr_owner){
		.size = sizeof(struct fi_ops_cntr_owner),
		.inc = peer_inc,
		.incerr = peer_incerr,
	};
	/* libfabric 1.17 has no FI_CLASS_PEER_CNTR */
	cntr->peer_cntr.fid.fclass = FI_CLASS_CNTR;
	cntr->peer_cntr.fid.context = cntr;
	cntr->peer_cntr.owner_ops = &cntr->peer_ops;
	if (!cntr->domain->peer)
		return 0;
	xlink_domain_lock(cntr->domain);
	ret = fi_cntr_open(cntr->domain->peer, &attr, &cntr->peer_shadow,
			   &peer_context);
	xlink_domain_unlock(cntr->domain);
	return ret;
}

static int check_attr(const struct fi_cntr_attr *attr)
{
	if (attr->flags)
		return -FI_EINVAL;
	if (attr->events != FI_CNTR_EVENTS_COMP)
		return -FI_ENOSYS;
	switch (attr->wait_obj) {
	case FI_WAIT_NONE:
	case FI_WAIT_UNSPEC:
	case FI_WAIT_YIELD:
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

int xlink_cntr_open(struct fid_domain *domain_fid, struct fi_cntr_attr *attr,
		    struct fid_cntr **cntr_out, void *context)
{
	struct xlink_domain *domain = xlink_domain_of(domain_fid);
	/* Without attributes nothing rules out fi_cntr_wait. */
	const struct fi_cntr_attr defaults = {
		.events = FI_CNTR_EVENTS_COMP, .wait_obj = FI_WAIT_NONE };
	const struct fi_cntr_attr *use = attr ? attr : &defaults;
	struct xlink_cntr *cntr;
	int ret;

	if (!domain || !cntr_out)
		return -FI_EINVAL;
	ret = check_attr(use);
	if (ret)
		return ret;
	cntr = calloc(1, sizeof(*cntr));
	if (!cntr)
		return -FI_ENOMEM;
	cntr->cntr_fid.fid.fclass = FI_CLASS_CNTR;
	cntr->cntr_fid.fid.context = context;
	cntr->cntr_fid.fid.ops = &xlink_cntr_fi_ops;
	cntr->cntr_fid.ops = &xlink_cntr_ops;
	cntr->domain = domain;
	cntr->wait_obj = use->wait_obj;
	ret = open_peer_shadow(cntr);
	if (ret) {
		free(cntr);
		return ret;
	}
	atomic_fetch_add(&domain->ref, 1);
	*cntr_out = &cntr->cntr_fid;
	return 0;
}
