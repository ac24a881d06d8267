/*
 * xlink's completion queue: a growing ring of completions, errors in their
 * place among them, so that fi_cq_read returns -FI_EAVAIL only when the
 * oldest event is an error.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cq.h"
#include "deadline.h"
#include "srx.h"

#define XLINK_CQ_MIN_CAP	64
/* attr->size is only a hint, the ring grows: no need to honour a huge one now. */
#define XLINK_CQ_MAX_FIRST_CAP	4096

static struct fi_ops xlink_cq_fi_ops;

static struct xlink_cq *to_cq(struct fid_cq *cq_fid)
{
	return xlink_container_of(cq_fid, struct xlink_cq, cq_fid);
}

/*
 * Each format's entry is a prefix of struct fi_cq_tagged_entry, so a read
 * copies that many bytes of the slot.
 */
static const size_t entry_sizes[] = {
	[FI_CQ_FORMAT_CONTEXT] = sizeof(struct fi_cq_entry),
	[FI_CQ_FORMAT_MSG] = sizeof(struct fi_cq_msg_entry),
	[FI_CQ_FORMAT_DATA] = sizeof(struct fi_cq_data_entry),
	[FI_CQ_FORMAT_TAGGED] = sizeof(struct fi_cq_tagged_entry),
};

_Static_assert(offsetof(struct fi_cq_data_entry, data) ==
	       offsetof(struct fi_cq_tagged_entry, data),
	       "CQ entry formats are prefixes of the tagged one");

/* Doubles a full ring; the entries that wrapped past the old end follow it. */
static int ring_grow(struct xlink_cq *cq)
{
	size_t old_cap = cq->cap;
	size_t wrapped = cq->head + cq->count - old_cap;
	struct xlink_cq_slot *slots;

	slots = realloc(cq->slots, 2 * old_cap * sizeof(*slots));
	if (!slots)
		return -FI_ENOMEM;
	memcpy(slots + old_cap, slots, wrapped * sizeof(*slots));
	cq->slots = slots;
	cq->cap = 2 * old_cap;
	return 0;
}

static struct xlink_cq_slot *slot_append(struct xlink_cq *cq)
{
	struct xlink_cq_slot *slot;

	if (cq->count == cq->cap && ring_grow(cq))
		return NULL;
	slot = &cq->slots[(cq->head + cq->count) % cq->cap];
	cq->count++;
	return slot;
}

int xlink_cq_write(struct xlink_cq *cq, void *context, uint64_t flags,
		   size_t len, void *buf, uint64_t data, uint64_t tag, fi_addr_t src)
{
	struct xlink_cq_slot *slot = slot_append(cq);

	if (!slot)
		return -FI_ENOMEM;
	slot->entry = (struct fi_cq_tagged_entry){ context, flags, len, buf, data, tag };
	slot->src = src;
	slot->err = NULL;
	return 0;
}

int xlink_cq_write_error(struct xlink_cq *cq, const struct fi_cq_err_entry *entry)
{
	struct xlink_cq_err *err = malloc(sizeof(*err));
	struct xlink_cq_slot *slot;

	if (!err)
		return -FI_ENOMEM;
	err->entry = *entry;
	/* The writer's error data is not ours to keep past this call. */
	err->entry.err_data = NULL;
	err->entry.err_data_size = 0;
	slot = slot_append(cq);
	if (!slot) {
		free(err);
		return -FI_ENOMEM;
	}
	slot->err = err;
	return 0;
}

/* Caller holds the domain lock. */
static ssize_t pop_entries(struct xlink_cq *cq, void *buf, size_t count,
			   fi_addr_t *src_addr)
{
	size_t size = entry_sizes[cq->format];
	size_t n = 0;

	if (!cq->count)
		return -FI_EAGAIN;
	if (cq->slots[cq->head].err)
		return -FI_EAVAIL;
	for (; n < count && cq->count; n++) {
		struct xlink_cq_slot *slot = &cq->slots[cq->head];

		if (slot->err)
			break;
		memcpy((char *) buf + n * size, &slot->entry, size);
		if (src_addr)
			src_addr[n] = slot->src;
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
	}
	return (ssize_t) n;
}

static ssize_t xlink_cq_readfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				 fi_addr_t *src_addr)
{
	struct xlink_cq *cq = to_cq(cq_fid);
	ssize_t ret;

	if (!buf && count)
		return -FI_EINVAL;
	xlink_domain_lock(cq->domain);
	xlink_domain_progress(cq->domain);
	ret = pop_entries(cq, buf, count, src_addr);
	xlink_domain_unlock(cq->domain);
	return ret;
}

static ssize_t xlink_cq_read(struct fid_cq *cq_fid, void *buf, size_t count)
{
	return xlink_cq_readfrom(cq_fid, buf, count, NULL);
}

/*
 * xlink has no error data to give: a caller's own buffer (err_data_size > 0
 * on input) receives no bytes; otherwise err_data, which would be ours, is NULL.
 */
static void copy_err_out(struct fi_cq_err_entry *out, const struct fi_cq_err_entry *err)
{
	void *callers_data = out->err_data_size ? out->err_data : NULL;

	*out = *err;
	out->err_data = callers_data;
	out->err_data_size = 0;
}

static ssize_t xlink_cq_readerr(struct fid_cq *cq_fid, struct fi_cq_err_entry *buf,
				uint64_t flags)
{
	struct xlink_cq *cq = to_cq(cq_fid);
	struct xlink_cq_err *err;
	ssize_t ret = -FI_EAGAIN;

	if (!buf)
		return -FI_EINVAL;
	xlink_domain_lock(cq->domain);
	err = cq->count ? cq->slots[cq->head].err : NULL;
	if (err) {
		cq->head = (cq->head + 1) % cq->cap;
		cq->count--;
		cq->last_err = err->entry;
		free(err);
		copy_err_out(buf, &cq->last_err);
		ret = 1;
	}
	xlink_domain_unlock(cq->domain);
	return ret;
}

/* No wait object: a blocking read polls, yielding the core between tries. */
static ssize_t xlink_cq_sreadfrom(struct fid_cq *cq_fid, void *buf, size_t count,
				  fi_addr_t *src_addr, const void *cond, int timeout)
{
	struct xlink_cq *cq = to_cq(cq_fid);
	int64_t deadline = xlink_deadline(timeout);
	ssize_t ret;

	if (cq->wait_obj == FI_WAIT_NONE)
		return -FI_EINVAL;
	for (;;) {
		ret = xlink_cq_readfrom(cq_fid, buf, count, src_addr);
		if (ret != -FI_EAGAIN)
			return ret;
		if (atomic_exchange(&cq->signaled, false) || xlink_expired(deadline))
			return -FI_EAGAIN;
		sched_yield();
	}
}

static ssize_t xlink_cq_sread(struct fid_cq *cq_fid, void *buf, size_t count,
			      const void *cond, int timeout)
{
	return xlink_cq_sreadfrom(cq_fid, buf, count, NULL, cond, timeout);
}

static int xlink_cq_signal(struct fid_cq *cq_fid)
{
	atomic_store(&to_cq(cq_fid)->signaled, true);
	return 0;
}

static const char *xlink_cq_strerror(struct fid_cq *cq_fid, int prov_errno,
				     const void *err_data, char *buf, size_t len)
{
	const char *str = fi_strerror(prov_errno < 0 ? -prov_errno : prov_errno);

	if (!buf || !len)
		return str;
	snprintf(buf, len, "%s", str);
	return buf;
}

static struct fi_ops_cq xlink_cq_ops = {
	.size = sizeof(struct fi_ops_cq),
	.read = xlink_cq_read,
	.readfrom = xlink_cq_readfrom,
	.readerr = xlink_cq_readerr,
	.sread = xlink_cq_sread,
	.sreadfrom = xlink_cq_sreadfrom,
	.signal = xlink_cq_signal,
	.strerror = xlink_cq_strerror,
};

static void free_cq(struct xlink_cq *cq)
{
	for (size_t i = 0; i < cq->count; i++)
		free(cq->slots[(cq->head + i) % cq->cap].err);
	free(cq->slots);
	free(cq);
}

static int xlink_cq_close(struct fid *fid)
{
	struct xlink_cq *cq = xlink_container_of(fid, struct xlink_cq, cq_fid.fid);
	struct xlink_domain *domain = cq->domain;
	int ret = 0;

	if (atomic_load(&cq->ref) > 0)
		return -FI_EBUSY;
	if (cq->peer_shadow) {
		xlink_domain_lock(domain);
		ret = fi_close(&cq->peer_shadow->fid);
		xlink_domain_unlock(domain);
		if (ret)
			return ret;
	}
	free_cq(cq);
	atomic_fetch_sub(&domain->ref, 1);
	return 0;
}

static struct fi_ops xlink_cq_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xlink_cq_close,
	.bind = xlink_no_bind,
	.control = xlink_no_control,
	.ops_open = xlink_no_ops_open,
};

struct xlink_cq *xlink_cq_of(struct fid *fid, struct xlink_domain *domain)
{
	struct xlink_cq *cq;

	if (!fid || fid->fclass != FI_CLASS_CQ || fid->ops != &xlink_cq_fi_ops)
		return NULL;
	cq = xlink_container_of(fid, struct xlink_cq, cq_fid.fid);
	return cq->domain == domain ? cq : NULL;
}

void xlink_cq_add_piece(struct xlink_cq *cq, struct xlink_rx *piece)
{
	piece->next = cq->pieces;
	cq->pieces = piece;
}

/* Unlinks the piece whose context is context; NULL if none is. */
static struct xlink_rx *take_piece(struct xlink_cq *cq, const void *context)
{
	for (struct xlink_rx **p = &cq->pieces; *p; p = &(*p)->next) {
		struct xlink_rx *piece = *p;

		if (piece != context)
			continue;
		*p = piece->next;
		piece->next = NULL;
		return piece;
	}
	return NULL;
}

void xlink_cq_drop_piece(struct xlink_cq *cq, struct xlink_rx *piece)
{
	take_piece(cq, piece);
}

/*
 * The peer's writes land in this CQ.  A context that is a listed piece is
 * xlink's own (live pieces are xlink's allocations: no application context
 * can be one), so the list is searched only while the peer holds pieces.
 */
static ssize_t peer_write(struct fid_peer_cq *peer_cq, void *context, uint64_t flags,
			  size_t len, void *buf, uint64_t data, uint64_t tag,
			  fi_addr_t src)
{
	struct xlink_cq *cq = xlink_container_of(peer_cq, struct xlink_cq, peer_cq);
	struct xlink_rx *piece;

	cq->domain->peer_events++;
	if (cq->pieces && (piece = take_piece(cq, context))) {
		xlink_srx_piece_reported(cq, piece, flags, len, data, tag, src, NULL);
		return 0;
	}
	return xlink_cq_write(cq, context, flags, len, buf, data, tag, src);
}

static ssize_t peer_writeerr(struct fid_peer_cq *peer_cq,
			     const struct fi_cq_err_entry *err)
{
	struct xlink_cq *cq = xlink_container_of(peer_cq, struct xlink_cq, peer_cq);
	struct fi_cq_err_entry positive = *err;
	struct xlink_rx *piece;

	cq->domain->peer_events++;
	/* libfabric 1.22's shm passes -FI_ETRUNC where fi_cq(3) wants FI_ETRUNC. */
	if (err->err < 0)
		positive.err = -err->err;
	if (cq->pieces && (piece = take_piece(cq, err->op_context))) {
		xlink_srx_piece_reported(cq, piece, 0, 0, 0, 0, FI_ADDR_NOTAVAIL, &positive);
		return 0;
	}
	return xlink_cq_write_error(cq, &positive);
}

/* The peer keeps the fid_peer_cq pointer, not the context that carries it. */
static int open_peer_shadow(struct xlink_cq *cq)
{
	struct fi_cq_attr attr = {
		.format = FI_CQ_FORMAT_TAGGED,	/* unused: the peer writes through peer_cq */
		.wait_obj = FI_WAIT_NONE,
		.flags = FI_PEER,
	};
	struct fi_peer_cq_context peer_context = { sizeof(peer_context), &cq->peer_cq };
	int ret;

	cq->peer_ops = (struct fi_ops_cq_owner){
		.size = sizeof(struct fi_ops_cq_owner),
		.write = peer_write,
		.writeerr = peer_writeerr,
	};
	cq->peer_cq.fid.fclass = FI_CLASS_PEER_CQ;
	cq->peer_cq.fid.context = cq;
	cq->peer_cq.owner_ops = &cq->peer_ops;
	if (!cq->domain->peer)
		return 0;
	xlink_domain_lock(cq->domain);
	ret = fi_cq_open(cq->domain->peer, &attr, &cq->peer_shadow, &peer_context);
	xlink_domain_unlock(cq->domain);
	return ret;
}

static int check_attr(const struct fi_cq_attr *attr)
{
	/* FI_AFFINITY only places a wait object's interrupt: xlink has none. */
	if (attr->flags & ~FI_AFFINITY)
		return -FI_EINVAL;
	if ((unsigned) attr->format > FI_CQ_FORMAT_TAGGED)
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

static size_t first_cap(size_t hint)
{
	if (hint < XLINK_CQ_MIN_CAP)
		return XLINK_CQ_MIN_CAP;
	return hint > XLINK_CQ_MAX_FIRST_CAP ? XLINK_CQ_MAX_FIRST_CAP : hint;
}

int xlink_cq_open(struct fid_domain *domain_fid, struct fi_cq_attr *attr,
		  struct fid_cq **cq_out, void *context)
{
	struct xlink_domain *domain = xlink_domain_of(domain_fid);
	struct xlink_cq *cq;
	int ret;

	if (!domain || !attr || !cq_out)
		return -FI_EINVAL;
	ret = check_attr(attr);
	if (ret)
		return ret;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -FI_ENOMEM;
	cq->cap = first_cap(attr->size);
	cq->slots = calloc(cq->cap, sizeof(*cq->slots));
	if (!cq->slots) {
		free(cq);
		return -FI_ENOMEM;
	}
	cq->cq_fid.fid.fclass = FI_CLASS_CQ;
	cq->cq_fid.fid.context = context;
	cq->cq_fid.fid.ops = &xlink_cq_fi_ops;
	cq->cq_fid.ops = &xlink_cq_ops;
	cq->domain = domain;
	cq->format = attr->format == FI_CQ_FORMAT_UNSPEC ? FI_CQ_FORMAT_CONTEXT
							 : attr->format;
	cq->wait_obj = attr->wait_obj;
	ret = open_peer_shadow(cq);
	if (ret) {
		free_cq(cq);
		return ret;
	}
	atomic_fetch_add(&domain->ref, 1);
	*cq_out = &cq->cq_fid;
	return 0;
}
