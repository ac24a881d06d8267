/*
 * Poll sets (fi_poll(3)): one call progresses a domain's CQs and counters
 * and names those with something to report.  A CQ reports while it holds
 * entries (errors too), until the application reads them; a counter
 * reports once per change of its value or error value, which fi_poll
 * consumes (fi_cntr_set and friends reset the starting point, cntr.c).
 *
 * Members are held as bound endpoints hold them: a CQ or counter in a set
 * cannot be closed, nor a set with members.  Everything runs under the
 * domain lock, so a set follows the domain's threading model.
 */
#include <stdlib.h>
#include <string.h>

#include "objects/poll.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/provider.h"
#include "objects/cntr.h"
#include "objects/cq.h"
#include "objects/domain.h"

struct xshm_poll_member {
	struct fid *fid;
	struct xshm_cq *cq;		/* exactly one of cq and cntr */
	struct xshm_cntr *cntr;
	struct xshm_cntr_seen seen;	/* cntr: as last reported */
};

struct xshm_poll {
	struct fid_poll poll_fid;
	struct xshm_domain *domain;
	struct xshm_poll_member *members;	/* in the order added */
	size_t nr_members;
	size_t next;		/* where fi_poll starts looking, round robin */
};

static struct xshm_poll *to_poll(struct fid_poll *poll_fid)
{
	return xshm_container_of(poll_fid, struct xshm_poll, poll_fid);
}

static ssize_t find_member(const struct xshm_poll *poll, const struct fid *fid)
{
	for (size_t i = 0; i < poll->nr_members; i++)
		if (poll->members[i].fid == fid)
			return (ssize_t) i;
	return -1;
}

static int join(struct xshm_poll *poll, struct fid *fid,
		struct xshm_poll_member *member)
{
	*member = (struct xshm_poll_member) { .fid = fid };
	switch (fid->fclass) {
	case FI_CLASS_CQ:
		return xshm_cq_poll_join(fid, poll->domain, &member->cq);
	case FI_CLASS_CNTR:
		return xshm_cntr_poll_join(fid, poll->domain, &member->cntr);
	default:
		return -FI_EINVAL;
	}
}

static void leave(struct xshm_poll_member *member)
{
	if (member->cq)
		xshm_cq_poll_leave(member->cq);
	else
		xshm_cntr_poll_leave(member->cntr);
}

/* A member already in the set stays in it once, as in libfabric's util. */
static int add_locked(struct xshm_poll *poll, struct fid *fid)
{
	struct xshm_poll_member member, *members;
	int ret;

	if (find_member(poll, fid) >= 0)
		return 0;
	ret = join(poll, fid, &member);
	if (ret) {
		XSHM_WARN(FI_LOG_DOMAIN, "fi_poll_add: %s (fid class %u)\n",
			  fi_strerror(-ret), (unsigned) fid->fclass);
		return ret;
	}
	members = realloc(poll->members,
			  (poll->nr_members + 1) * sizeof(*members));
	if (!members) {
		leave(&member);
		return -FI_ENOMEM;
	}
	members[poll->nr_members++] = member;
	poll->members = members;
	return 0;
}

static int xshm_poll_add(struct fid_poll *poll_fid, struct fid *event_fid,
			 uint64_t flags)
{
	struct xshm_poll *poll = to_poll(poll_fid);
	int ret;

	if (!event_fid || flags)
		return -FI_EINVAL;
	xshm_lock_acquire(&poll->domain->lock);
	ret = add_locked(poll, event_fid);
	xshm_lock_release(&poll->domain->lock);
	return ret;
}

/* Removing what is not a member changes nothing, as in libfabric's util. */
static int xshm_poll_del(struct fid_poll *poll_fid, struct fid *event_fid,
			 uint64_t flags)
{
	struct xshm_poll *poll = to_poll(poll_fid);
	ssize_t i;

	if (!event_fid || flags)
		return -FI_EINVAL;
	xshm_lock_acquire(&poll->domain->lock);
	i = find_member(poll, event_fid);
	if (i >= 0) {
		leave(&poll->members[i]);
		memmove(&poll->members[i], &poll->members[i + 1],
			(poll->nr_members - (size_t) i - 1) *
			sizeof(*poll->members));
		poll->nr_members--;
		if (poll->next > (size_t) i)
			poll->next--;
	}
	xshm_lock_release(&poll->domain->lock);
	return 0;
}

static void progress(struct xshm_poll_member *member)
{
	if (member->cq)
		xshm_cq_progress(member->cq);
	else
		xshm_cntr_progress(member->cntr);
}

/* Whether member has something to report; a counter's change is consumed. */
static bool take_event(struct xshm_poll_member *member)
{
	if (member->cq)
		return member->cq->comp_count != 0;
	return xshm_cntr_poll_changed(member->cntr, &member->seen);
}

/*
 * Every member is progressed before any is looked at, so that a completion
 * one member's endpoints deliver into another's is reported in this call.
 * The looking starts after the last member reported, so that a short
 * context array starves none.  A counter left out for want of room keeps
 * its change for the next call.
 */
static int xshm_poll_poll(struct fid_poll *poll_fid, void **context, int count)
{
	struct xshm_poll *poll = to_poll(poll_fid);
	size_t n, start;
	int found = 0;

	if (count < 0 || (count && !context))
		return -FI_EINVAL;
	xshm_lock_acquire(&poll->domain->lock);
	n = poll->nr_members;
	for (size_t i = 0; i < n; i++)
		progress(&poll->members[i]);
	start = poll->next < n ? poll->next : 0;
	for (size_t k = 0; k < n && found < count; k++) {
		size_t i = (start + k) % n;
		struct xshm_poll_member *member = &poll->members[i];

		if (!take_event(member))
			continue;
		context[found++] = member->fid->context;
		poll->next = (i + 1) % n;
	}
	xshm_lock_release(&poll->domain->lock);
	return found;
}

static int xshm_poll_close(struct fid *fid)
{
	struct xshm_poll *poll =
		xshm_container_of(fid, struct xshm_poll, poll_fid.fid);
	struct xshm_domain *domain = poll->domain;
	size_t members;

	xshm_lock_acquire(&domain->lock);
	members = poll->nr_members;
	xshm_lock_release(&domain->lock);
	if (members)
		return -FI_EBUSY;
	atomic_fetch_sub(&domain->ref, 1);
	free(poll->members);
	free(poll);
	return 0;
}

static struct fi_ops xshm_poll_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_poll_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_poll xshm_poll_ops = {
	.size = sizeof(struct fi_ops_poll),
	.poll = xshm_poll_poll,
	.poll_add = xshm_poll_add,
	.poll_del = xshm_poll_del,
};

/* attr may be NULL; its flags are reserved and must be 0 (fi_poll(3)). */
int xshm_poll_open(struct fid_domain *domain_fid, struct fi_poll_attr *attr,
		   struct fid_poll **pollset)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	struct xshm_poll *poll;

	if (!pollset || (attr && attr->flags))
		return -FI_EINVAL;
	poll = calloc(1, sizeof(*poll));
	if (!poll)
		return -FI_ENOMEM;
	poll->domain = domain;
	poll->poll_fid.fid.fclass = FI_CLASS_POLL;
	poll->poll_fid.fid.ops = &xshm_poll_fi_ops;
	poll->poll_fid.ops = &xshm_poll_ops;
	atomic_fetch_add(&domain->ref, 1);
	*pollset = &poll->poll_fid;
	return 0;
}
