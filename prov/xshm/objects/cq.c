/*
 * Completion queue.  Endpoints write into it only through the peer CQ
 * interface (struct fid_peer_cq, owner_ops write/writeerr), exactly as they
 * would write into an owner provider's CQ; reading it drives the progress of
 * the endpoints bound to it.  Blocking reads sleep in its wait set (wait.c).
 *
 * A read that finds the CQ empty lends its buffer while it drives progress
 * (struct xshm_cq_sink): successful completions are formatted straight into
 * it, and only what does not fit, or comes after an error, is queued.  A
 * ping-pong's receive then skips the queue: its completion took about 75
 * instructions from its write to the end of its read, now about 40, where an
 * empty read takes about 10 more (callgrind, test/bench/latency).
 */
#include <sched.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "objects/cq.h"
#include "base/fid.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/peer_context.h"
#include "data/progress.h"
#include "objects/domain.h"
#include "objects/ep.h"
#include "objects/wait.h"
#include "xshm/fi_peer.h"

static struct xshm_cq *to_cq(struct fid_cq *cq_fid)
{
	return xshm_container_of(cq_fid, struct xshm_cq, cq_fid);
}

/* The capacity is a power of two, so positions wrap with a mask. */
static size_t comp_slot(const struct xshm_cq *cq, size_t pos)
{
	return pos & (cq->comp_cap - 1);
}

static int comps_grow(struct xshm_cq *cq)
{
	size_t cap = cq->comp_cap ? cq->comp_cap * 2 : 64;
	struct xshm_cq_comp *comps = malloc(cap * sizeof(*comps));

	if (!comps)
		return -FI_ENOMEM;
	for (size_t i = 0; i < cq->comp_count; i++)
		comps[i] = cq->comps[comp_slot(cq, cq->comp_head + i)];
	free(cq->comps);
	cq->comps = comps;
	cq->comp_cap = cap;
	cq->comp_head = 0;
	return 0;
}

/* The next slot of a ring of completions that has room, taken. */
static struct xshm_cq_comp *comp_take(struct xshm_cq *cq)
{
	struct xshm_cq_comp *comp;

	comp = &cq->comps[comp_slot(cq, cq->comp_head + cq->comp_count)];
	cq->comp_count++;
	return comp;
}

static struct xshm_cq_comp *comp_push(struct xshm_cq *cq)
{
	if (cq->comp_count == cq->comp_cap && comps_grow(cq))
		return NULL;
	return comp_take(cq);
}

/* Writes one completion in the CQ's format; returns the bytes it used. */
static size_t format_entry(enum fi_cq_format format, void *buf,
			   const struct fi_cq_tagged_entry *e)
{
	switch (format) {
	case FI_CQ_FORMAT_CONTEXT:
		((struct fi_cq_entry *) buf)->op_context = e->op_context;
		return sizeof(struct fi_cq_entry);
	case FI_CQ_FORMAT_MSG:
		*(struct fi_cq_msg_entry *) buf = (struct fi_cq_msg_entry) {
			e->op_context, e->flags, e->len };
		return sizeof(struct fi_cq_msg_entry);
	case FI_CQ_FORMAT_DATA:
		*(struct fi_cq_data_entry *) buf = (struct fi_cq_data_entry) {
			e->op_context, e->flags, e->len, e->buf, e->data };
		return sizeof(struct fi_cq_data_entry);
	default:
		*(struct fi_cq_tagged_entry *) buf = *e;
		return sizeof(struct fi_cq_tagged_entry);
	}
}

/*
 * Whether a completion goes into the sink: only while nothing is queued,
 * so that every entry the sink holds is older than those queued after it.
 */
static bool sink_takes(const struct xshm_cq *cq)
{
	return cq->sink.filled < cq->sink.cap && !cq->comp_count;
}

/* Its reader is the caller of the read itself: nobody to wake. */
static void sink_write(struct xshm_cq *cq, const struct fi_cq_tagged_entry *e,
		       fi_addr_t src)
{
	struct xshm_cq_sink *sink = &cq->sink;

	sink->out += format_entry(cq->format, sink->out, e);
	if (sink->src)
		sink->src[sink->filled] = src;
	sink->filled++;
}

static ssize_t xshm_cq_write(struct fid_peer_cq *peer_cq, void *context,
			     uint64_t flags, size_t len, void *buf,
			     uint64_t data, uint64_t tag, fi_addr_t src);

/*
 * xshm_cq_write into a full ring of completions: grown, then written.  Out
 * of line and reached by a tail call, so that the common write keeps its
 * arguments in registers instead of saving them for the growth's call.
 */
static __attribute__((noinline))
ssize_t write_grown(struct fid_peer_cq *peer_cq, void *context, uint64_t flags,
		    size_t len, void *buf, uint64_t data, uint64_t tag,
		    fi_addr_t src)
{
	if (comps_grow(xshm_container_of(peer_cq, struct xshm_cq, peer_cq)))
		return -FI_ENOMEM;
	return xshm_cq_write(peer_cq, context, flags, len, buf, data, tag, src);
}

static ssize_t xshm_cq_write(struct fid_peer_cq *peer_cq, void *context,
			     uint64_t flags, size_t len, void *buf,
			     uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct xshm_cq *cq = xshm_container_of(peer_cq, struct xshm_cq, peer_cq);
	struct xshm_cq_comp *comp;

	if (sink_takes(cq)) {
		sink_write(cq, &(struct fi_cq_tagged_entry) {
			.op_context = context, .flags = flags, .len = len,
			.buf = buf, .data = data, .tag = tag,
		}, src);
		return 0;
	}
	if (cq->comp_count == cq->comp_cap)
		return write_grown(peer_cq, context, flags, len, buf, data, tag,
				   src);
	comp = comp_take(cq);
	comp->entry = (struct fi_cq_tagged_entry) {
		.op_context = context, .flags = flags, .len = len,
		.buf = buf, .data = data, .tag = tag,
	};
	comp->src = src;
	comp->err = NULL;
	xshm_wait_notify(&cq->wait);
	return 0;
}

static ssize_t xshm_cq_writeerr(struct fid_peer_cq *peer_cq,
				const struct fi_cq_err_entry *err_entry)
{
	struct xshm_cq *cq = xshm_container_of(peer_cq, struct xshm_cq, peer_cq);
	struct fi_cq_err_entry *err = malloc(sizeof(*err));
	struct xshm_cq_comp *comp;

	if (!err)
		return -FI_ENOMEM;
	comp = comp_push(cq);
	if (!comp) {
		free(err);
		return -FI_ENOMEM;
	}
	*err = *err_entry;
	comp->err = err;
	comp->src = FI_ADDR_NOTAVAIL;
	xshm_wait_notify(&cq->wait);
	return 0;
}

static struct fi_ops_cq_owner xshm_cq_owner_ops = {
	.size = sizeof(struct fi_ops_cq_owner),
	.write = xshm_cq_write,
	.writeerr = xshm_cq_writeerr,
};

/*
 * An imported CQ forwards to the owner's, zeroing what its format does not
 * report, as fi_peer(3) asks.  The owner's errors are its own to handle.
 */
static ssize_t forward_write(struct fid_peer_cq *peer_cq, void *context,
			     uint64_t flags, size_t len, void *buf,
			     uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct xshm_cq *cq = xshm_container_of(peer_cq, struct xshm_cq, peer_cq);

	switch (cq->format) {
	case FI_CQ_FORMAT_CONTEXT:
		flags = 0;
		len = 0;
		/* fall through */
	case FI_CQ_FORMAT_MSG:
		buf = NULL;
		data = 0;
		/* fall through */
	case FI_CQ_FORMAT_DATA:
		tag = 0;
		break;
	default:
		break;
	}
	return cq->owner->owner_ops->write(cq->owner, context, flags, len, buf,
					   data, tag, src);
}

static ssize_t forward_writeerr(struct fid_peer_cq *peer_cq,
				const struct fi_cq_err_entry *err_entry)
{
	struct xshm_cq *cq = xshm_container_of(peer_cq, struct xshm_cq, peer_cq);

	return cq->owner->owner_ops->writeerr(cq->owner, err_entry);
}

static struct fi_ops_cq_owner xshm_cq_forward_ops = {
	.size = sizeof(struct fi_ops_cq_owner),
	.write = forward_write,
	.writeerr = forward_writeerr,
};

/* Progresses the CQ's endpoints for a reader with room for room entries. */
static void progress_eps(struct xshm_cq *cq, size_t room)
{
	for (size_t i = 0; i < cq->nr_eps; i++)
		xshm_ep_progress_for(cq->eps[i], room);
}

void xshm_cq_progress(struct xshm_cq *cq)
{
	progress_eps(cq, SIZE_MAX);
}

/*
 * Progress for a read that found the CQ empty: what it completes goes
 * straight into the caller's buffer, up to count entries (the rest is
 * queued).  Returns the entries written there and moves *out past them.
 */
static ssize_t progress_into(struct xshm_cq *cq, char **out, size_t count,
			     fi_addr_t *src_addr)
{
	ssize_t filled;

	cq->sink = (struct xshm_cq_sink) {
		.out = *out, .src = src_addr, .cap = count,
	};
	progress_eps(cq, count);
	filled = (ssize_t) cq->sink.filled;
	*out = cq->sink.out;
	cq->sink.cap = 0;
	return filled;
}

static ssize_t xshm_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				fi_addr_t *src_addr)
{
	struct xshm_cq *cq = to_cq(cq_fid);
	char *out = buf;
	ssize_t read = 0;

	if (!buf && count)
		return -FI_EINVAL;
	xshm_lock_acquire(&cq->domain->lock);
	xshm_wait_untry(&cq->wait);
	if (!cq->comp_count)
		read = progress_into(cq, &out, count, src_addr);
	while ((size_t) read < count && cq->comp_count) {
		struct xshm_cq_comp *comp = &cq->comps[cq->comp_head];

		if (comp->err)
			break;
		out += format_entry(cq->format, out, &comp->entry);
		if (src_addr)
			src_addr[read] = comp->src;
		cq->comp_head = comp_slot(cq, cq->comp_head + 1);
		cq->comp_count--;
		read++;
	}
	if (!read && cq->comp_count && cq->comps[cq->comp_head].err)
		read = -FI_EAVAIL;
	else if (!read)
		read = -FI_EAGAIN;
	xshm_lock_release(&cq->domain->lock);
	return read;
}

static ssize_t xshm_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return xshm_cq_readfrom(cq_fid, buf, count, NULL);
}

static ssize_t xshm_cq_readerr(struct fid_cq *cq_fid,
			       struct fi_cq_err_entry *buf, uint64_t flags)
{
	struct xshm_cq *cq = to_cq(cq_fid);
	struct xshm_cq_comp *comp;
	ssize_t ret = -FI_EAGAIN;

	if (!buf)
		return -FI_EINVAL;
	xshm_lock_acquire(&cq->domain->lock);
	xshm_wait_untry(&cq->wait);
	comp = cq->comp_count ? &cq->comps[cq->comp_head] : NULL;
	if (comp && comp->err) {
		/* err_data belongs to the caller: xshm has none to give. */
		void *err_data = buf->err_data;

		*buf = *comp->err;
		buf->err_data = err_data;
		buf->err_data_size = 0;
		free(comp->err);
		cq->comp_head = comp_slot(cq, cq->comp_head + 1);
		cq->comp_count--;
		ret = 1;
	}
	xshm_lock_release(&cq->domain->lock);
	return ret;
}

/* Under the lock: what ends an fi_cq_sread (a completion or a signal). */
static bool cq_sread_ready(void *arg)
{
	struct xshm_cq *cq = arg;

	if (!cq->comp_count)
		xshm_cq_progress(cq);
	return cq->comp_count || atomic_load(&cq->signaled);
}

/* Under the lock: what fi_trywait must not sleep through. */
static bool cq_has_entries(void *arg)
{
	struct xshm_cq *cq = arg;

	if (!cq->comp_count)
		xshm_cq_progress(cq);
	return cq->comp_count;
}

/* FI_WAIT_YIELD polls, yielding the core; FI_WAIT_UNSPEC and FD sleep. */
static ssize_t xshm_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr, const void *cond,
				 int timeout)
{
	struct xshm_cq *cq = to_cq(cq_fid);
	int64_t deadline = xshm_wait_deadline(timeout);
	ssize_t ret;

	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		ret = xshm_cq_readfrom(cq_fid, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
		if (atomic_exchange(&cq->signaled, false))
			return -FI_EAGAIN;
		if (!xshm_wait_remaining(deadline))
			return -FI_EAGAIN;
		if (xshm_wait_can_sleep(&cq->wait))
			xshm_wait_sleep(&cq->wait, &cq->domain->lock,
					cq_sread_ready, cq,
					xshm_wait_remaining(deadline));
		else
			sched_yield();
	}
}

static ssize_t xshm_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			     const void *cond, int timeout)
{
	return xshm_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int xshm_cq_signal(struct fid_cq *cq_fid)
{
	struct xshm_cq *cq = to_cq(cq_fid);

	atomic_store(&cq->signaled, true);
	xshm_wait_wake(&cq->wait);
	return 0;
}

int xshm_cq_trywait(struct fid *fid)
{
	struct xshm_cq *cq = xshm_container_of(fid, struct xshm_cq, cq_fid.fid);

	if (!xshm_wait_can_sleep(&cq->wait))
		return -FI_EINVAL;
	return xshm_wait_try(&cq->wait, &cq->domain->lock, cq_has_entries, cq);
}

static const char *xshm_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				    const void *err_data, char *buf, size_t len)
{
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (buf && len) {
		strncpy(buf, str, len - 1);
		buf[len - 1] = '\0';
		return buf;
	}
	return str;
}

int xshm_cq_add_ep(struct xshm_cq *cq, struct xshm_ep *ep)
{
	struct xshm_ep **eps;

	for (size_t i = 0; i < cq->nr_eps; i++)
		if (cq->eps[i] == ep)
			return 0;
	eps = realloc(cq->eps, (cq->nr_eps + 1) * sizeof(*eps));
	if (!eps)
		return -FI_ENOMEM;
	cq->eps = eps;
	if (xshm_wait_add_ep(&cq->wait, ep))
		return -FI_ENOMEM;
	eps[cq->nr_eps++] = ep;
	atomic_fetch_add(&cq->ref, 1);
	return 0;
}

void xshm_cq_remove_ep(struct xshm_cq *cq, struct xshm_ep *ep)
{
	for (size_t i = 0; i < cq->nr_eps; i++) {
		if (cq->eps[i] == ep) {
			xshm_wait_remove_ep(&cq->wait, ep);
			cq->eps[i] = cq->eps[--cq->nr_eps];
			atomic_fetch_sub(&cq->ref, 1);
			return;
		}
	}
}

static int xshm_cq_close(struct fid *fid)
{
	struct xshm_cq *cq = xshm_container_of(fid, struct xshm_cq, cq_fid.fid);

	if (atomic_load(&cq->ref))
		return -FI_EBUSY;
	for (size_t i = 0; i < cq->comp_count; i++)
		free(cq->comps[comp_slot(cq, cq->comp_head + i)].err);
	atomic_fetch_sub(&cq->domain->ref, 1);
	xshm_wait_fini(&cq->wait);
	free(cq->comps);
	free(cq->eps);
	free(cq);
	return 0;
}

static int xshm_cq_control(struct fid *fid, int command, void *arg)
{
	struct xshm_cq *cq = xshm_container_of(fid, struct xshm_cq, cq_fid.fid);

	switch (command) {
	case FI_GETWAIT:
		return xshm_wait_get_fd(&cq->wait, arg);
	case FI_GETWAITOBJ:
		if (!arg)
			return -FI_EINVAL;
		*(enum fi_wait_obj *) arg = cq->wait_obj;
		return 0;
	default:
		return -FI_ENOSYS;
	}
}

static struct fi_ops xshm_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_cq_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_cq_control,
	.ops_open = xshm_fid_no_ops_open,
};

static struct fi_ops_cq xshm_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = xshm_cq_read,
	.readfrom = xshm_cq_readfrom,
	.readerr = xshm_cq_readerr,
	.sread = xshm_cq_sread,
	.sreadfrom = xshm_cq_sreadfrom,
	.signal = xshm_cq_signal,
	.strerror = xshm_cq_strerror,
};

/* Imported CQ: the owner reads its own; fi_cq_read(cq, NULL, 0) progresses. */
static ssize_t import_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	struct xshm_cq *cq = to_cq(cq_fid);

	if (buf || count)
		return -FI_ENOSYS;
	xshm_lock_acquire(&cq->domain->lock);
	xshm_cq_progress(cq);
	xshm_lock_release(&cq->domain->lock);
	return 0;
}

static ssize_t import_readfrom(struct fid_cq *cq, void *buf, size_t count,
			       fi_addr_t *src_addr)
{
	return -FI_ENOSYS;
}

static ssize_t import_readerr(struct fid_cq *cq, struct fi_cq_err_entry *buf,
			      uint64_t flags)
{
	return -FI_ENOSYS;
}

static ssize_t import_sread(struct fid_cq *cq, void *buf, size_t count,
			    const void *cond, int timeout)
{
	return -FI_ENOSYS;
}

static ssize_t import_sreadfrom(struct fid_cq *cq, void *buf, size_t count,
				fi_addr_t *src_addr, const void *cond,
				int timeout)
{
	return -FI_ENOSYS;
}

static int import_signal(struct fid_cq *cq)
{
	return -FI_ENOSYS;
}

static struct fi_ops_cq xshm_cq_import_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = import_read,
	.readfrom = import_readfrom,
	.readerr = import_readerr,
	.sread = import_sread,
	.sreadfrom = import_sreadfrom,
	.signal = import_signal,
	.strerror = xshm_cq_strerror,
};

static int import_owner(struct xshm_cq *cq, void *context)
{
	struct fi_peer_cq_context *peer = context;

	if (!XSHM_CONTEXT_OK(peer, cq) || !peer->cq->owner_ops)
		return -FI_EINVAL;
	cq->owner = peer->cq;
	cq->peer_cq.owner_ops = &xshm_cq_forward_ops;
	cq->cq_fid.ops = &xshm_cq_import_ops;
	return 0;
}

/* The CQ fid names, if it is one of xshm's of that domain; else NULL. */
struct xshm_cq *xshm_cq_of(struct fid *fid, struct xshm_domain *domain)
{
	struct xshm_cq *cq;

	if (fid->fclass != FI_CLASS_CQ || fid->ops != &xshm_cq_fi_ops)
		return NULL;
	cq = xshm_container_of(fid, struct xshm_cq, cq_fid.fid);
	return cq->domain == domain ? cq : NULL;
}

/* Poll sets (poll.c): only CQs of their domain whose entries xshm holds. */
int xshm_cq_poll_join(struct fid *fid, struct xshm_domain *domain,
		      struct xshm_cq **cq_out)
{
	struct xshm_cq *cq = xshm_cq_of(fid, domain);

	if (!cq)
		return -FI_EINVAL;
	if (cq->owner)
		return -FI_ENOSYS;
	atomic_fetch_add(&cq->ref, 1);
	*cq_out = cq;
	return 0;
}

void xshm_cq_poll_leave(struct xshm_cq *cq)
{
	atomic_fetch_sub(&cq->ref, 1);
}

static int check_attr(const struct fi_cq_attr *attr)
{
	if (attr->flags & ~FI_PEER)
		return -FI_EINVAL;
	if (attr->format > FI_CQ_FORMAT_TAGGED)
		return -FI_ENOSYS;
	if (attr->wait_obj != FI_WAIT_NONE && attr->wait_obj != FI_WAIT_UNSPEC &&
	    attr->wait_obj != FI_WAIT_FD && attr->wait_obj != FI_WAIT_YIELD)
		return -FI_ENOSYS;
	if (attr->wait_cond != FI_CQ_COND_NONE)
		return -FI_ENOSYS;
	return 0;
}

int xshm_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		 struct fid_cq **cq_out, void *context)
{
	struct xshm_domain *domain =
		xshm_container_of(domain_fid, struct xshm_domain, domain_fid);
	struct xshm_cq *cq;
	int ret;

	if (!attr || !cq_out)
		return -FI_EINVAL;
	ret = check_attr(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->domain = domain;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ?
		     FI_CQ_FORMAT_CONTEXT : attr->format;
	cq->wait_obj = attr->wait_obj;
	ret = xshm_wait_init(&cq->wait, attr->wait_obj);
	if (ret) {
		free(cq);
		return ret;
	}
	if (comps_grow(cq)) {
		xshm_wait_fini(&cq->wait);
		free(cq);
		return -FI_ENOMEM;
	}
	cq->peer_cq.fid.fclass = FI_CLASS_PEER_CQ;
	cq->peer_cq.owner_ops = &xshm_cq_owner_ops;
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &xshm_cq_fi_ops;
	cq->cq_fid.ops = &xshm_cq_ops;
	if ((attr->flags & FI_PEER) && import_owner(cq, context)) {
		xshm_wait_fini(&cq->wait);
		free(cq->comps);
		free(cq);
		return -FI_EINVAL;
	}
	atomic_fetch_add(&domain->ref, 1);
	*cq_out = &cq->cq_fid;
	return 0;
}
