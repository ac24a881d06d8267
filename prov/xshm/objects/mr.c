/*
 * Memory registration: each region goes into its domain's table
 * (mr/mr_table.c) with its buffers, access and the address its first byte
 * is named by, for RMA targets to check commands against; fi_close takes
 * it out.
 */
#include <stdlib.h>

#include "base/fid.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/provider.h"
#include "mr/mr_table.h"
#include "objects/cntr.h"
#include "objects/domain.h"
#include "objects/mr_pub.h"

#define XSHM_MR_ACCESS	(FI_SEND | FI_RECV | FI_READ | FI_WRITE | \
			 FI_REMOTE_READ | FI_REMOTE_WRITE)

static int xshm_mr_close(struct fid *fid)
{
	struct xshm_mr *mr = xshm_container_of(fid, struct xshm_mr, mr_fid.fid);
	struct xshm_domain *domain = mr->domain;

	xshm_lock_acquire(&domain->lock);
	/* First: no initiator copies once this returns (shm/mr_pub.h). */
	xshm_mr_unpublish(domain, &mr->entry);
	xshm_mr_table_remove(&domain->mr_table, &mr->entry);
	for (int i = 0; i < XSHM_MR_CNTRS; i++)
		if (mr->entry.cntr[i])
			xshm_cntr_release(mr->entry.cntr[i]);
	xshm_lock_release(&domain->lock);
	atomic_fetch_sub(&domain->ref, 1);
	free(mr);
	return 0;
}

static const uint64_t cntr_event[XSHM_MR_CNTRS] = {
	[XSHM_MR_CNTR_WRITE] = FI_REMOTE_WRITE,
	[XSHM_MR_CNTR_READ] = FI_REMOTE_READ,
};

/* Under the domain lock: one counter per event, each held once per event. */
static int bind_cntr(struct xshm_mr *mr, struct fid *cntr_fid, uint64_t flags)
{
	for (int i = 0; i < XSHM_MR_CNTRS; i++)
		if ((flags & cntr_event[i]) && mr->entry.cntr[i])
			return -FI_EINVAL;
	for (int i = 0; i < XSHM_MR_CNTRS; i++) {
		if (!(flags & cntr_event[i]))
			continue;
		mr->entry.cntr[i] = xshm_cntr_hold(cntr_fid, mr->domain);
		if (!mr->entry.cntr[i])
			return -FI_EINVAL;
	}
	return 0;
}

/*
 * A counter counts the remote writes or reads of the registration
 * (FI_RMA_EVENT).  Binding an endpoint, as FI_MR_ENDPOINT asks, is taken
 * and changes nothing: every endpoint of the domain serves its
 * registrations.
 */
static int xshm_mr_bind(struct fid *fid, struct fid *bfid, uint64_t flags)
{
	struct xshm_mr *mr = xshm_container_of(fid, struct xshm_mr, mr_fid.fid);
	int ret;

	if (!bfid)
		return -FI_EINVAL;
	if (bfid->fclass == FI_CLASS_EP)
		return 0;
	if (bfid->fclass != FI_CLASS_CNTR || !flags ||
	    (flags & ~(FI_REMOTE_WRITE | FI_REMOTE_READ)))
		return -FI_EINVAL;
	xshm_lock_acquire(&mr->domain->lock);
	ret = bind_cntr(mr, bfid, flags);
	/* Initiators then leave its operations to the target, which counts. */
	xshm_mr_publish_events(mr->domain, &mr->entry);
	xshm_lock_release(&mr->domain->lock);
	return ret;
}

/* FI_ENABLE, after binding: registrations are enabled from the start. */
static int xshm_mr_control(struct fid *fid, int command, void *arg)
{
	return command == FI_ENABLE ? 0 : -FI_ENOSYS;
}

static struct fi_ops xshm_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_mr_close,
	.bind = xshm_mr_bind,
	.control = xshm_mr_control,
	.ops_open = xshm_fid_no_ops_open,
};

/* The entry attr describes; no access flags at all grant every access. */
static void fill_entry(struct xshm_mr_entry *entry, const struct fi_mr_attr *attr,
		       bool virt_addr)
{
	entry->key = attr->requested_key;
	entry->access = attr->access ? attr->access : XSHM_MR_ACCESS;
	entry->iov_count = attr->iov_count;
	entry->len = 0;
	for (size_t i = 0; i < attr->iov_count; i++) {
		entry->iov[i] = attr->mr_iov[i];
		entry->len += attr->mr_iov[i].iov_len;
	}
	if (virt_addr)
		entry->base = attr->iov_count ?
			      (uintptr_t) attr->mr_iov[0].iov_base : 0;
	else
		entry->base = attr->offset;
}

static int xshm_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			   uint64_t flags, struct fid_mr **mr_out)
{
	struct xshm_domain *domain =
		xshm_container_of(fid, struct xshm_domain, domain_fid.fid);
	struct xshm_mr *mr;
	int ret;

	if (fid->fclass != FI_CLASS_DOMAIN || !attr || !mr_out)
		return -FI_EINVAL;
	if (attr->iov_count > XSHM_IOV_LIMIT ||
	    xshm_check_iov(attr->mr_iov, attr->iov_count, XSHM_IOV_LIMIT) ||
	    (attr->access & ~XSHM_MR_ACCESS))
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	fill_entry(&mr->entry, attr, domain->mr_virt_addr);
	xshm_lock_acquire(&domain->lock);
	ret = xshm_mr_table_insert(&domain->mr_table, &mr->entry,
				   domain->mr_user_keys);
	if (!ret)
		xshm_mr_publish(domain, &mr->entry);
	xshm_lock_release(&domain->lock);
	if (ret) {
		free(mr);
		return ret;
	}
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &xshm_mr_fi_ops;
	mr->mr_fid.mem_desc = NULL;
	mr->mr_fid.key = mr->entry.key;
	atomic_fetch_add(&domain->ref, 1);
	*mr_out = &mr->mr_fid;
	return 0;
}

static int xshm_mr_regv(struct fid *fid, const struct iovec *iov, size_t count,
			uint64_t access, uint64_t offset, uint64_t requested_key,
			uint64_t flags, struct fid_mr **mr, void *context)
{
	struct fi_mr_attr attr = {
		.mr_iov = iov,
		.iov_count = count,
		.access = access,
		.offset = offset,
		.requested_key = requested_key,
		.context = context,
	};

	return xshm_mr_regattr(fid, &attr, flags, mr);
}

static int xshm_mr_reg(struct fid *fid, const void *buf, size_t len,
		       uint64_t access, uint64_t offset, uint64_t requested_key,
		       uint64_t flags, struct fid_mr **mr, void *context)
{
	struct iovec iov = { .iov_base = (void *) buf, .iov_len = len };

	return xshm_mr_regv(fid, &iov, 1, access, offset, requested_key, flags,
			    mr, context);
}

struct fi_ops_mr xshm_mr_ops = {
	.size = sizeof(struct fi_ops_mr),
	.reg = xshm_mr_reg,
	.regv = xshm_mr_regv,
	.regattr = xshm_mr_regattr,
};
