/*
 * Memory registration.  xshm copies through shared memory and needs no
 * registration, so a region is only a key the application may pass around.
 */
#include <stdlib.h>

#include "base/fid.h"
#include "base/iov.h"
#include "base/list.h"
#include "base/lock.h"
#include "base/provider.h"
#include "objects/domain.h"

static int xshm_mr_close(struct fid *fid)
{
	struct xshm_mr *mr = xshm_container_of(fid, struct xshm_mr, mr_fid.fid);

	atomic_fetch_sub(&mr->domain->ref, 1);
	free(mr);
	return 0;
}

static struct fi_ops xshm_mr_fi_ops = {
	.size = sizeof(struct fi_ops),
	.close = xshm_mr_close,
	.bind = xshm_fid_no_bind,
	.control = xshm_fid_no_control,
	.ops_open = xshm_fid_no_ops_open,
};

static int xshm_mr_regattr(struct fid *fid, const struct fi_mr_attr *attr,
			   uint64_t flags, struct fid_mr **mr_out)
{
	struct xshm_domain *domain =
		xshm_container_of(fid, struct xshm_domain, domain_fid.fid);
	struct xshm_mr *mr;

	if (fid->fclass != FI_CLASS_DOMAIN || !attr || !mr_out)
		return -FI_EINVAL;
	if (attr->iov_count > XSHM_IOV_LIMIT ||
	    xshm_check_iov(attr->mr_iov, attr->iov_count, XSHM_IOV_LIMIT))
		return -FI_EINVAL;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -FI_ENOMEM;
	mr->domain = domain;
	mr->mr_fid.fid.fclass = FI_CLASS_MR;
	mr->mr_fid.fid.context = attr->context;
	mr->mr_fid.fid.ops = &xshm_mr_fi_ops;
	mr->mr_fid.mem_desc = NULL;
	xshm_lock_acquire(&domain->lock);
	mr->mr_fid.key = ++domain->next_mr_key;
	xshm_lock_release(&domain->lock);
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
